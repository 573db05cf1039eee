/* Who a trace is of and when (ctrace/analyse.h: ctrace_process_read):
 * the log ctrace writes as a trace starts, and Go's clock snapshot. The
 * exporters, ctrace stats and the tools' naming and placing of several
 * traces read it here, so that every user of the library gets the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyse/analyse.h"

/* The log is written as the trace (or, in Go's current format, each
 * generation) starts: among its first events (AN_LOG_WITHIN). Further
 * than that, a trace without one is not read through for it. */

/* "pid=N ppid=N host=NAME mono_ns=N real_ns=N name=NAME exe=PATH
 * cmdline=ARGS" (src/runtime/identity.c) into p: false if it is not
 * that. cmdline comes last, for its arguments may hold anything. The
 * program is name, the file the process was run as, or, in a trace
 * written before name was, exe's file name. */
static bool parse_log(const char *m, int64_t at, ctrace_process_info *p) {
  unsigned pid, ppid = 0;
  unsigned long long mono, real = 0;
  const char *mo = strstr(m, " mono_ns="), *re = strstr(m, " real_ns="), *exe = strstr(m, " exe=");
  if (sscanf(m, "pid=%u ppid=%u", &pid, &ppid) < 1 || !mo || sscanf(mo, " mono_ns=%llu", &mono) != 1)
    return false;
  if (re) sscanf(re, " real_ns=%llu", &real);
  p->known = 1;
  p->pid = pid;
  p->ppid = ppid;
  const char *host = strstr(m, " host="), *args = strstr(m, " cmdline=");
  if (host) snprintf(p->host, sizeof p->host, "%.*s", (int)strcspn(host + 6, " "), host + 6);
  if (args) snprintf(p->cmdline, sizeof p->cmdline, "%s", args + 9);
  const char *name = strstr(m, " name=");
  if (name && exe && name < exe) {
    snprintf(p->program, sizeof p->program, "%.*s", (int)(exe - name - 6), name + 6);
  } else if (exe) {
    exe += 5;
    const char *base = exe;
    size_t len = args && args > exe ? (size_t)(args - exe) : strlen(exe);
    for (size_t i = 0; i < len; i++)
      if (exe[i] == '/') base = exe + i + 1;
    len -= (size_t)(base - exe);
    snprintf(p->program, sizeof p->program, "%.*s", (int)len, base);
  }
  p->clock = CTRACE_CLOCK_PROCESS_LOG;
  p->clock_ts = at;
  p->mono_ns = mono;
  p->real_ns = (int64_t)real;
  return true;
}

/* Go's snapshot dates the trace on Go's clock: the analyses' times count
 * from the first event of the reader's stream (src/parse/model.c), whose
 * time is read here. */
static bool go_clock(ctrace_reader *r, ctrace_process_info *p) {
  ctrace_clock_snapshot c;
  if (!ctrace_reader_clock(r, &c)) return false;
  ctrace_event ev;
  ctrace_reader_rewind(r);
  int any = ctrace_reader_next(r, &ev);
  ctrace__model_rewind(r);
  if (!any) return false;
  p->clock = CTRACE_CLOCK_GO;
  p->clock_ts = c.trace_ns - ev.ts;
  p->mono_ns = c.mono_ns;
  p->real_ns = c.wall_sec * 1000000000 + c.wall_nsec;
  return true;
}

static bool is_log(const ctrace_event *ev) {
  return ev->format == 0 && ev->type == CTRACE_EV_UserLog && ev->sargs[0] && ev->sargs[1] &&
         strcmp(ev->sargs[0], "ctrace.process") == 0;
}

bool ctrace__an_title_note(an_title *t, const ctrace_event *ev) {
  const char *m = is_log(ev) ? ev->sargs[1] : NULL, *a = m ? strstr(m, " cmdline=") : NULL;
  if (!a) return false;
  a += 9;
  const char *name = strstr(m, " name="), *ex = strstr(m, " exit=1");
  bool at_exit = ex && name && ex < name;
  if (!t->seen) {
    t->seen = true;
    snprintf(t->first, sizeof t->first, "%s", a);
    snprintf(t->now, sizeof t->now, "%s", a);
    return false;
  }
  if ((at_exit && t->retitled) || strncmp(t->now, a, sizeof t->now - 1) == 0) return false;
  snprintf(t->now, sizeof t->now, "%s", a);
  if (!at_exit) t->retitled = strcmp(t->now, t->first) != 0;
  return true;
}

int ctrace_process_read(ctrace_reader *r, ctrace_process_info *p) {
  *p = (ctrace_process_info){0};
  ctrace_event ev;
  ctrace__model_rewind(r);
  for (int k = 0; k < AN_LOG_WITHIN && ctrace__model_next(r, &ev); k++) {
    if (is_log(&ev) && parse_log(ev.sargs[1], ev.ts, p)) break;
  }
  ctrace__model_rewind(r);
  ctrace_process_info go = *p;
  if (go_clock(r, &go)) *p = go; /* taken with the trace's time in one step */
  if (p->clock) p->start_real_ns = p->real_ns ? p->real_ns - p->clock_ts : 0;
  return p->known || p->clock;
}

size_t ctrace_process_place(const ctrace_process_info *p, size_t n, int64_t *offsets) {
  size_t without = 0;
  bool by_wall = false;
  const char *host = NULL;
  for (size_t i = 0; i < n; i++) {
    offsets[i] = 0;
    without += !p[i].clock;
    if (p[i].known && p[i].host[0]) {
      if (host && strcmp(host, p[i].host) != 0) by_wall = true;
      host = p[i].host;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (by_wall && p[i].clock && !p[i].real_ns) without++;
  if (without || !n) return without;
  int64_t first = INT64_MAX;
  for (size_t i = 0; i < n; i++) {
    offsets[i] = (by_wall ? p[i].real_ns : (int64_t)p[i].mono_ns) - p[i].clock_ts;
    if (offsets[i] < first) first = offsets[i];
  }
  for (size_t i = 0; i < n; i++) offsets[i] -= first;
  return 0;
}

char *ctrace_format_utc(int64_t real_ns, char *buf, size_t size) {
  int64_t sec = real_ns / 1000000000, ns = real_ns % 1000000000;
  if (ns < 0) sec--, ns += 1000000000;
  time_t t = (time_t)sec;
  struct tm tm;
  char day[32] = "?";
  if (gmtime_r(&t, &tm)) strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, size, "%s.%09lldZ", day, (long long)ns);
  return buf;
}
