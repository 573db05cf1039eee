/* The JSON encoder: the walk's records (model.h) as the Trace Event Format
 * of Chrome's trace viewer (one object, {"traceEvents": [...]}), which
 * Perfetto's UI, trace_processor, chrome://tracing and speedscope read.
 *
 * Each trace is a process (pid). A track that is a thread in the format is
 * a tid: a goroutine's states are tid g, its regions tid 1000000000 + g,
 * P p tid 2000000000 + p, GC 2100000000 and stop-the-world 2100000001 (the
 * viewers hold tids in 32 bits); "M" events name them. Slices are "B"/"E"
 * pairs (the walk does not know an end when it records a begin), instants
 * "i", counter groups "C" (one event with every series), tasks nestable
 * async events "b"/"e" with their logs as "n" (named by the task's track,
 * with the log's category and message in args; ids scoped to the process
 * with "id2"), flows "s"/"f" with the end bound to the enclosing slice.
 * Stacks are args: "stack", the function names, leaf first, as ctrace dump
 * and Go print them. Times are microseconds with three decimals: the
 * trace's nanoseconds, exactly. Where the traces are dated
 * (ctrace_process_read), a "metadata" member after the events says when on
 * the wall clock (UTC) the timeline's ts 0 was and each process's trace
 * began: the format has no clock of its own to tie. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace/analyse.h"
#include "analyse/pb.h"
#include "analyse/analyse.h"
#include "export/model.h"

enum { TID_REGIONS = 1000000000, TID_PROC = 2000000000, TID_GC = 2100000000, TID_STW = 2100000001 };

typedef struct js {
  ex_enc e; /* first: the walk holds a pointer to it */
  const ex_source *s;
  pbuf b; /* what is not yet written */
  bool any;
  /* The metadata written last: each process's pid and wall-clock time at
   * its first event (where known), and the timeline's at its 0. */
  pbuf meta;
  int64_t wall0;
} js;

/* A string literal, its length known at compile time. */
#define lit(j, s) pb_put(&(j)->b, "" s, sizeof(s) - 1)

static void num(js *j, uint64_t v) {
  char d[20];
  int n = 0;
  do d[sizeof d - 1 - n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  pb_put(&j->b, d + sizeof d - n, (size_t)n);
}

static void inum(js *j, int64_t v) {
  if (v < 0) {
    lit(j, "-");
    num(j, (uint64_t)0 - (uint64_t)v);
  } else {
    num(j, (uint64_t)v);
  }
}

/* The length of the valid UTF-8 sequence at s, or 0. The string's NUL is
 * no continuation byte: the check stops at it. */
static size_t utf8_len(const unsigned char *s) {
  size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
  if (!len) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  /* Overlong, surrogate and beyond-U+10FFFF forms are invalid too. */
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
      (s[0] == 0xf4 && s[1] >= 0x90))
    return 0;
  return len;
}

/* A JSON string: what JSON must escape is escaped, and a byte that is not
 * valid UTF-8 becomes U+FFFD (the trace's strings are the program's bytes). */
static void str_body(js *j, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  for (;;) {
    const unsigned char *run = p;
    while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
    pb_put(&j->b, run, (size_t)(p - run));
    if (!*p) break;
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p++};
      pb_put(&j->b, e, 2);
    } else if (*p < 0x20) {
      char e[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[*p >> 4], "0123456789abcdef"[*p & 15]};
      pb_put(&j->b, e, 6), p++;
    } else {
      size_t n = utf8_len(p);
      if (n) pb_put(&j->b, p, n), p += n;
      else lit(j, "\xef\xbf\xbd"), p++;
    }
  }
}

static void str(js *j, const char *s) {
  lit(j, "\"");
  str_body(j, s);
  lit(j, "\"");
}

/* Writes what is buffered once it is large, or at the end (all). */
static void drain(js *j, bool all) {
  if (j->b.len < (all ? 1 : 1u << 16)) return;
  if (j->b.oom) j->e.oom = true;
  else if (fwrite(j->b.b, 1, j->b.len, j->e.out) != j->b.len) j->e.werr = true;
  else j->e.bytes += j->b.len;
  j->b.len = 0;
}

/* The start of an event: {"ph":PH,"pid":..,"ts":.. */
static void head(js *j, const char *ph, int64_t ts) {
  if (j->any) lit(j, ",\n");
  j->any = true;
  lit(j, "{\"ph\":\"");
  pb_put(&j->b, ph, 1);
  lit(j, "\",\"pid\":");
  num(j, j->s->pid);
  if (ts >= 0) {
    lit(j, ",\"ts\":");
    num(j, (uint64_t)ts / 1000);
    char frac[4] = {'.', (char)('0' + ts / 100 % 10), (char)('0' + ts / 10 % 10), (char)('0' + ts % 10)};
    pb_put(&j->b, frac, 4);
  }
}

static uint64_t tid(const ex_rec *r) {
  switch (r->kind) {
  case EX_REGIONS: return TID_REGIONS + r->id;
  case EX_PROC: return TID_PROC + r->id;
  case EX_GC: return TID_GC;
  case EX_STW: return TID_STW;
  default: return r->id;
  }
}


static void stack(js *j, uint64_t id) {
  const ctrace_frame *fr;
  size_t n = ctrace__model_stack(j->s->r, id, &fr);
  lit(j, "\"stack\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) lit(j, ",");
    str(j, fr[i].func);
  }
  lit(j, "]");
}

static void track(js *j, const ex_rec *r) {
  if (r->kind == EX_TASK || r->kind == EX_COUNTER) return; /* named by their events */
  head(j, "M", -1);
  if (r->kind != EX_PROCESS) {
    lit(j, ",\"tid\":");
    num(j, tid(r));
  }
  if (r->kind == EX_PROCESS) lit(j, ",\"name\":\"process_name\",\"args\":{\"name\":");
  else lit(j, ",\"name\":\"thread_name\",\"args\":{\"name\":");
  str(j, r->name);
  lit(j, "}}");
}

/* A task's event: a nestable async event of the task's id, named by its
 * track, as the viewers group them. */
static void async(js *j, const char *ph, const ex_rec *r) {
  head(j, ph, r->ts);
  lit(j, ",\"cat\":\"task\"");
  lit(j, ",\"name\":\"");
  str_body(j, r->task_type[0] ? r->task_type : "task");
  lit(j, " ");
  num(j, r->id);
  lit(j, "\"");
  lit(j, ",\"id2\":{\"local\":\"0x");
  char id[16];
  int n = 0;
  for (uint64_t v = r->id; n == 0 || v; v >>= 4) id[sizeof id - 1 - n++] = "0123456789abcdef"[v & 15];
  pb_put(&j->b, id + sizeof id - n, (size_t)n);
  lit(j, "\"}");
  if (r->type == EX_BEGIN) {
    lit(j, ",\"args\":{\"type\":");
    str(j, r->name);
    lit(j, "}");
  } else if (r->type == EX_INSTANT) {
    lit(j, ",\"args\":{\"category\":");
    str(j, r->cat);
    lit(j, ",\"message\":");
    str(j, r->name);
    lit(j, "}");
  }
  lit(j, "}");
}

/* A flow's start or end, on the thread at ts. */
static void flow(js *j, const ex_rec *r, const char *ph, uint64_t id) {
  head(j, ph, r->ts);
  lit(j, ",\"tid\":");
  num(j, tid(r));
  lit(j, ",\"cat\":\"flow\",\"name\":\"flow\",\"id\":");
  num(j, id);
  if (ph[0] == 'f') lit(j, ",\"bp\":\"e\"");
  lit(j, "}");
}

static void slice(js *j, const char *ph, const ex_rec *r) {
  if (r->kind == EX_TASK) {
    async(j, r->type == EX_BEGIN ? "b" : r->type == EX_END ? "e" : "n", r);
    return;
  }
  head(j, ph, r->ts);
  lit(j, ",\"tid\":");
  num(j, tid(r));
  if (r->type != EX_END) {
    lit(j, ",\"cat\":");
    str(j, r->cat);
    lit(j, ",\"name\":");
    str(j, r->name);
  }
  if (r->type == EX_INSTANT) lit(j, ",\"s\":\"t\"");
  if (r->stack) {
    lit(j, ",\"args\":{");
    stack(j, r->stack);
    lit(j, "}");
  }
  lit(j, "}");
  if (r->flow_out) flow(j, r, "s", r->flow_out);
  if (r->flow_in) flow(j, r, "f", r->flow_in);
}

static void counter(js *j, const ex_rec *r) {
  head(j, "C", r->ts);
  lit(j, ",\"name\":");
  str(j, r->name);
  lit(j, ",\"args\":{");
  for (int i = 0; i < r->nseries; i++) {
    if (i) lit(j, ",");
    str(j, r->series[i]);
    lit(j, ":");
    inum(j, r->values[i]);
  }
  lit(j, "}}");
}

static void js_rec(ex_enc *e, const ex_rec *r) {
  js *j = (js *)e;
  switch (r->type) {
  case EX_TRACK: track(j, r); break;
  case EX_BEGIN: slice(j, "B", r); break;
  case EX_END: slice(j, "E", r); break;
  case EX_INSTANT: slice(j, "i", r); break;
  case EX_COUNTER_VALUES: counter(j, r); break;
  }
  drain(j, false);
}

/* A wall-clock time as "KEY_utc":"...","KEY_unix_ns":N into the metadata. */
static void wall(js *j, const char *key, int64_t real) {
  char utc[48], m[200];
  int n = snprintf(m, sizeof m, "\"%s_utc\":\"%s\",\"%s_unix_ns\":%lld", key,
                   ctrace_format_utc(real, utc, sizeof utc), key, (long long)real);
  pb_put(&j->meta, m, (size_t)n);
}

static void js_begin(ex_enc *e, const ex_source *s) {
  js *j = (js *)e;
  if (!j->s) lit(j, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  j->s = s;
  if (s->wall0_ns) j->wall0 = s->wall0_ns;
  if (!s->start_real_ns) return;
  char pid[32];
  int n = snprintf(pid, sizeof pid, "{\"pid\":%u,", s->pid);
  if (j->meta.len) pb_put(&j->meta, ",", 1);
  pb_put(&j->meta, pid, (size_t)n);
  wall(j, "start", s->start_real_ns);
  pb_put(&j->meta, "}", 1);
}

/* The metadata, after the events (an object's members have no order):
 * when the timeline's 0 was on the wall clock, and when each process's
 * trace began, for the viewers that show times of day and for readers. */
static void js_finish(ex_enc *e) {
  js *j = (js *)e;
  if (!j->s) lit(j, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  lit(j, "\n]");
  if (j->wall0) {
    lit(j, ",\"metadata\":{");
    pbuf procs = j->meta;
    j->meta = (pbuf){0};
    wall(j, "ts0", j->wall0);
    pb_put(&j->b, j->meta.b, j->meta.len);
    lit(j, ",\"processes\":[");
    pb_put(&j->b, procs.b, procs.len);
    lit(j, "]}");
    if (procs.oom || j->meta.oom) j->e.oom = true;
    free(procs.b);
  }
  lit(j, "}\n");
  drain(j, true);
  j->e.written = j->e.bytes;
}

static void js_free(ex_enc *e) {
  js *j = (js *)e;
  free(j->b.b);
  free(j->meta.b);
  free(j);
}

ex_enc *ctrace__ex_json(FILE *out) {
  js *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->e = (ex_enc){.begin = js_begin, .rec = js_rec, .finish = js_finish, .free = js_free, .out = out};
  return &j->e;
}
