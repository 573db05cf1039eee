/* What ctrace export and ctrace view share beyond opening traces: a window
 * of the traces (--from, --to; --gen; --task, --goroutine), the budget of
 * what a browser opens, the windows proposed past it, and progress on a
 * terminal. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../parse/map.h"
#include "../parse/model.h"
#include "tools.h"

int ctrace__tool_duration(const char *s, int64_t *ns) {
  static const struct { const char *unit; double ns; } units[] = {
      {"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0)) return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(end, units[i].unit) != 0) continue;
    double x = v * units[i].ns;
    if (x > 9.2e18) return -1;
    *ns = (int64_t)llround(x);
    return 0;
  }
  /* A bare 0 needs no unit; any other number does: "5" could be seconds
   * or nanoseconds. */
  if (!*end && v == 0) {
    *ns = 0;
    return 0;
  }
  return -1;
}

int ctrace__tool_size(const char *s, uint64_t *bytes) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v > 0)) return -1;
  double m = 1;
  if (strcmp(end, "K") == 0 || strcmp(end, "KiB") == 0) m = 1024.0;
  else if (strcmp(end, "M") == 0 || strcmp(end, "MiB") == 0) m = 1024.0 * 1024;
  else if (strcmp(end, "G") == 0 || strcmp(end, "GiB") == 0) m = 1024.0 * 1024 * 1024;
  else if (*end) return -1;
  if (v * m > 1.8e19 || v * m < 1) return -1;
  *bytes = (uint64_t)(v * m);
  return 0;
}

void ctrace__tool_fmt_duration(char *b, size_t n, int64_t ns) {
  if (ns == 0) snprintf(b, n, "0s");
  else if (ns % 1000000000 == 0 || ns >= 10000000000) snprintf(b, n, "%.9gs", (double)ns / 1e9);
  else if (ns % 1000000 == 0 || ns >= 10000000) snprintf(b, n, "%.9gms", (double)ns / 1e6);
  else if (ns % 1000 == 0 || ns >= 10000) snprintf(b, n, "%.9gus", (double)ns / 1e3);
  else snprintf(b, n, "%lldns", (long long)ns);
}

void ctrace__tool_fmt_size(char *b, size_t n, uint64_t bytes) {
  if (bytes >= 1ull << 30) snprintf(b, n, "%.1f GiB", (double)bytes / (1ull << 30));
  else if (bytes >= 1ull << 20) snprintf(b, n, "%.0f MiB", (double)bytes / (1ull << 20));
  else snprintf(b, n, "%.0f KiB", (double)bytes / 1024);
}

int ctrace__tool_window_arg(const char *cmd, int argc, char **argv, int *i, ctrace__tool_window *w) {
  const char *a = argv[*i], *v = NULL;
  if (strcmp(a, "--exact") == 0) {
    w->exact = true;
    return 1;
  }
  int which = 0; /* 1 from, 2 to, 3 budget, 4 gen, 5 task, 6 goroutine */
  static const char *const names[] = {NULL, "--from", "--to", "--budget", "--gen", "--task", "--goroutine"};
  for (int k = 1; k <= 6; k++) {
    size_t len = strlen(names[k]);
    if (strncmp(a, names[k], len) != 0) continue;
    if (a[len] == '=') v = a + len + 1;
    else if (a[len] == 0 && *i + 1 < argc) v = argv[++*i];
    else if (a[len] == 0) {
      fprintf(stderr, "ctrace %s: %s needs a value\n", cmd, names[k]);
      return -1;
    } else continue;
    which = k;
    break;
  }
  if (!which) return 0;
  if (which >= 4) {
    /* A or A-B, from 1. */
    static const char *const what[] = {"generations", "tasks", "goroutines"};
    char *end;
    errno = 0;
    unsigned long long a = strtoull(v, &end, 10), b = a;
    if (end != v && *end == '-') {
      const char *bv = end + 1;
      b = strtoull(bv, &end, 10);
      if (end == bv) a = 0;
    }
    if (v[0] < '0' || v[0] > '9' || *end || errno || a == 0 || b < a) {
      fprintf(stderr, "ctrace %s: bad %s %s (%s A-B or A, from 1, A at most B)\n", cmd, names[which], v,
              what[which - 4]);
      return -1;
    }
    if (which == 4) w->gen_from = a, w->gen_to = b;
    else if (which == 5) w->task = a, w->task_to = b;
    else w->goroutine = a, w->goroutine_to = b;
    return 1;
  }
  if (which == 3) {
    if (ctrace__tool_size(v, &w->budget) != 0) {
      fprintf(stderr, "ctrace %s: bad --budget %s (a size such as 512M or 2G)\n", cmd, v);
      return -1;
    }
    return 1;
  }
  int64_t ns;
  if (ctrace__tool_duration(v, &ns) != 0) {
    fprintf(stderr,
            "ctrace %s: bad %s %s (a time since the trace's start with its unit, such as 1.5s, 250ms, "
            "100us)\n", cmd, names[which], v);
    return -1;
  }
  if (which == 1) w->from = ns, w->has_from = true;
  else w->to = ns, w->has_to = true;
  return 1;
}

int ctrace__tool_gen_check(const char *cmd, const ctrace__tool_window *w, const char **files,
                           const uint64_t *gens, size_t n) {
  if (!w->gen_from) return 0;
  if (w->has_from || w->has_to) {
    fprintf(stderr, "ctrace %s: --gen is a window of its own: not with --from or --to\n", cmd);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (!gens[i]) {
      fprintf(stderr, "ctrace %s: --gen: %s is not a Go 1.22+ trace: it has no generations (use --from, --to)\n",
              cmd, files[i]);
      return -1;
    }
    if (w->gen_to > gens[i]) {
      fprintf(stderr, "ctrace %s: --gen %llu-%llu: %s has %llu generation%s\n", cmd,
              (unsigned long long)w->gen_from, (unsigned long long)w->gen_to, files[i],
              (unsigned long long)gens[i], gens[i] == 1 ? "" : "s");
      return -1;
    }
  }
  return 0;
}

int ctrace__tool_window_check(const char *cmd, const ctrace__tool_window *w, int64_t duration) {
  char a[32], b[32];
  if (w->has_to && w->to <= w->from) {
    ctrace__tool_fmt_duration(a, sizeof a, w->from);
    ctrace__tool_fmt_duration(b, sizeof b, w->to);
    fprintf(stderr, "ctrace %s: the window ends (--to %s) where it does not begin yet (--from %s)\n", cmd, b, a);
    return -1;
  }
  if (w->has_from && w->from > duration) {
    ctrace__tool_fmt_duration(a, sizeof a, w->from);
    ctrace__tool_fmt_duration(b, sizeof b, duration);
    fprintf(stderr, "ctrace %s: the window begins (--from %s) after the trace ends (at %s)\n", cmd, a, b);
    return -1;
  }
  return 0;
}

/* A window length a person would type: 1, 2 or 5 times a power of ten
 * nanoseconds, at most max. */
static int64_t round_len(double max) {
  if (max < 1000) return 1000;
  double p = pow(10, floor(log10(max)));
  double m = max / p >= 5 ? 5 : max / p >= 2 ? 2 : 1;
  return (int64_t)(m * p);
}

int64_t ctrace__tool_windows(const ctrace__tool_window *w, int64_t from, int64_t to, uint64_t bytes,
                             int64_t span, int64_t *len) {
  /* The output grows about evenly with time: windows whose share of it
   * fits the budget, with room to spare (a busier stretch). */
  double per_ns = span > 0 ? (double)bytes / (double)span : 0;
  *len = per_ns > 0 ? round_len(0.8 * (double)w->budget / per_ns) : to - from;
  if (*len <= 0) *len = 1000;
  int64_t count = (to - from + *len - 1) / *len;
  /* A last window a quarter as long or less joins the one before it. */
  if (count > 1 && (to - from) - (count - 1) * *len <= *len / 4) count--;
  return count;
}

void ctrace__tool_propose(const char *cmd, const ctrace__tool_window *w, int64_t from, int64_t to,
                          uint64_t bytes, int64_t span, const char *files, const char *out) {
  int64_t len, count = ctrace__tool_windows(w, from, to, bytes, span, &len);
  char a[32], b[32], l[32];
  ctrace__tool_fmt_duration(l, sizeof l, len);
  /* cmd may carry options the windows need ("export -f json"). */
  fprintf(stderr, "ctrace %.*s: open it in %lld window%s of %s, each a smaller export:\n",
          (int)strcspn(cmd, " "), cmd, (long long)count, count == 1 ? "" : "s", l);
  int64_t shown = 0;
  /* With -o FILE, each window its own file: FILE's name with -1, -2, ...
   * before its extension. */
  const char *slash = out ? strrchr(out, '/') : NULL, *dot = out ? strrchr(slash ? slash : out, '.') : NULL;
  int stem = out ? (int)(dot && dot != (slash ? slash + 1 : out) ? dot - out : (long)strlen(out)) : 0;
  for (int64_t t = from; shown < count && shown < 8; t += len, shown++) {
    int64_t end = shown + 1 < count ? t + len : to;
    ctrace__tool_fmt_duration(a, sizeof a, t);
    ctrace__tool_fmt_duration(b, sizeof b, end);
    fprintf(stderr, "  ctrace %s", cmd);
    if (out) fprintf(stderr, " -o %.*s-%lld%s", stem, out, (long long)shown + 1, out + stem);
    fprintf(stderr, " --from %s", a);
    if (end < to || w->has_to) fprintf(stderr, " --to %s", b); /* else the last, to the end */
    fprintf(stderr, " %s\n", files);
  }
  if (shown < count) fprintf(stderr, "  ... and %lld more, every %s up to the end\n", (long long)(count - shown), l);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ctrace__tool_progress_begin(ctrace__tool_progress *p, const char *cmd, const char **files) {
  *p = (ctrace__tool_progress){.cmd = cmd, .files = files, .start = now(), .tty = isatty(2) != 0, .after = 1.0};
  /* CTRACE_PROGRESS_AFTER=SECONDS: another wait before progress shows (0
   * for the tests, which cannot make an export last a second). */
  const char *a = getenv("CTRACE_PROGRESS_AFTER");
  char *end;
  double v = a ? strtod(a, &end) : 0;
  if (a && end != a && !*end && v >= 0) p->after = v;
}

void ctrace__tool_progress_show(void *arg, size_t trace, int64_t ts, int64_t duration) {
  ctrace__tool_progress *p = arg;
  /* Only on a terminal, and only for an export that has taken more than a
   * second: a short one would flicker. */
  if (!p->tty || (!p->shown && now() - p->start < p->after)) return;
  p->shown = true;
  int pct = duration > 0 ? (int)(ts * 100 / duration) : p->total ? (int)(p->done * 100 / p->total) : 0;
  if (pct > 100) pct = 100;
  fprintf(stderr, "\rctrace %s: %s: %s %3d%%", p->cmd, p->files[trace], p->doing ? p->doing : "exporting", pct);
}

void ctrace__tool_progress_bytes(void *arg, uint64_t done, uint64_t total) {
  ctrace__tool_progress *p = arg;
  p->done = done;
  p->total = total;
}

void ctrace__tool_progress_end(ctrace__tool_progress *p) {
  if (p->shown) fprintf(stderr, "\r\033[K");
  p->shown = false;
}

/* The lives of tasks or goroutines: ids [lo, hi]. */
typedef struct lives {
  bool task;
  uint64_t lo, hi;
  u64set seen;
  uint64_t begun, ended; /* lives begun (a first sighting, or a birth), ended */
  int64_t from, last_end;
} lives;

/* One sighting of id: born (a creation; else there before it if first
 * met), or dies (for_good: its id does not come back). */
static void sight(lives *l, uint64_t id, int64_t ts, bool born, bool dies) {
  if (id < l->lo || id > l->hi) return;
  bool first = !ctrace__set_has(&l->seen, id);
  if (first) {
    ctrace__set_add(&l->seen, id); /* out of memory: met again as first */
    if (!born) ts = 0;
    if (ts < l->from) l->from = ts;
  }
  if (first || born) l->begun++;
  if (dies) l->ended++, l->last_end = ts;
}

/* Where tasks (l->task) or goroutines [l->lo, l->hi] live in a checked
 * trace: 1 with [*from, *to] on the trace's times, 0 if the trace names
 * none. A task lives from its creation to its end, a goroutine from its
 * creation to its end; what began before the trace begins at its start,
 * what has not ended by its end ends there. One id's pass stops at its
 * end for good (not a C thread's goroutine handed back, whose id comes
 * back: model.h). */
static int life(ctrace_reader *r, lives *l, int64_t duration, int64_t *from, int64_t *to, ctrace__tool_progress *p,
                size_t trace) {
  ctrace_event buf;
  const ctrace_event *ev;
  uint64_t nev = 0;
  l->seen = (u64set){0};
  l->begun = l->ended = 0;
  l->from = INT64_MAX;
  ctrace__model_rewind(r);
  while ((ev = ctrace__model_next_ref(r, &buf))) {
    if ((++nev & 0xffff) == 0) ctrace__tool_progress_show(p, trace, ev->ts, duration);
    uint8_t t = ev->type;
    bool for_good = false;
    if (l->task) {
      if (t == CTRACE_EV_UserTaskCreate || t == CTRACE_EV_UserTaskEnd || t == CTRACE_EV_UserLog ||
          t == CTRACE_EV_UserRegion) {
        sight(l, ev->args[0], ev->ts, t == CTRACE_EV_UserTaskCreate, t == CTRACE_EV_UserTaskEnd);
        for_good = t == CTRACE_EV_UserTaskEnd && ev->args[0] == l->lo;
      }
    } else {
      /* A creation with no creator: there when the trace began (walk.c). */
      if (t == CTRACE_EV_GoCreate) sight(l, ev->args[0], ev->ts, ev->g != 0, false);
      if (t == CTRACE_EV_GoUnblock) sight(l, ev->args[0], ev->ts, false, false);
      if (ev->g) sight(l, ev->g, ev->ts, false, t == CTRACE_EV_GoEnd);
      for_good = t == CTRACE_EV_GoEnd && ev->args[0] != 1 && ev->g == l->lo;
    }
    if (for_good && l->lo == l->hi) break;
  }
  bool any = l->seen.len > 0;
  ctrace__set_free(&l->seen);
  if (!any) return 0;
  *from = l->from;
  *to = l->ended >= l->begun ? l->last_end : duration;
  /* Created and ended at one time: a window needs an end after its start. */
  if (*to <= *from) *to = *from + 1;
  return 1;
}

/* --task A-B, --goroutine A-B: the window of their lives (life above) in
 * the one trace that names them, on the traces' timeline. 0, or the
 * command's exit status, said. */
static int find_life(const char *cmd, ctrace__tool_window *w, const char **files, ctrace_export_trace *t, size_t n,
                     const int64_t *durations, const int64_t *offsets) {
  lives l = {.task = w->task != 0, .lo = w->task ? w->task : w->goroutine,
             .hi = w->task ? w->task_to : w->goroutine_to};
  const char *what = l.task ? "task" : "goroutine";
  char ids[48];
  if (l.lo == l.hi) snprintf(ids, sizeof ids, "%llu", (unsigned long long)l.lo);
  else snprintf(ids, sizeof ids, "%llu-%llu", (unsigned long long)l.lo, (unsigned long long)l.hi);
  ctrace__tool_progress p;
  ctrace__tool_progress_begin(&p, cmd, files);
  char doing[80];
  snprintf(doing, sizeof doing, "finding %s %s", what, ids);
  p.doing = doing;
  size_t found = n;
  for (size_t i = 0; i < n; i++) {
    int64_t from = 0, to = 0;
    if (!life(t[i].reader, &l, durations[i], &from, &to, &p, i)) continue;
    if (found < n) {
      ctrace__tool_progress_end(&p);
      fprintf(stderr, "ctrace %s: --%s %s: both %s and %s have %s: export them apart\n", cmd, what, ids,
              files[found], files[i], l.lo == l.hi ? "it" : "some");
      return 2;
    }
    found = i;
    w->from = from + offsets[i];
    w->to = to + offsets[i];
    w->has_from = w->has_to = true;
  }
  ctrace__tool_progress_end(&p);
  if (found < n) return 0;
  if (n == 1) fprintf(stderr, "ctrace %s: --%s %s: %s has no %s %s\n", cmd, what, ids, files[0], what, ids);
  else fprintf(stderr, "ctrace %s: --%s %s: none of the traces has %s\n", cmd, what, ids, l.lo == l.hi ? "it" : "any");
  return 2;
}

/* A generation range of one trace as the times it spans, found as the
 * walk finds them (src/export/walk.c), so that windows past the budget
 * are cut in it, not in the whole trace. w's generations become that time
 * window. Read from the generation before the range's first (its Sync
 * dates the range's start: the one that ends it, go 1.22 and 1.23), not
 * from the trace's start, but with --exact. */
static void gen_times(ctrace_reader *r, ctrace__tool_window *w, int64_t duration) {
  uint64_t before = !w->exact && w->gen_from > 1 ? w->gen_from - 1 : 1;
  uint64_t gen = ctrace__model_gen_at_start(r) + (uint64_t)ctrace__model_seek_gen(r, before);
  int64_t from = gen >= w->gen_from ? 0 : -1, to = duration;
  ctrace_event buf;
  const ctrace_event *ev;
  while ((ev = ctrace__model_next_ref(r, &buf))) {
    if (ev->format != 1 || ev->type != CTRACE_EV122_Sync) continue;
    gen++;
    if (gen == w->gen_from) from = ev->ts;
    if (gen == w->gen_to + 1) {
      to = ev->ts;
      break;
    }
  }
  if (from < 0) return; /* not met: left to the walk */
  w->from = from;
  w->to = to > from ? to : from + 1;
  w->has_from = w->has_to = true;
  w->gen_from = w->gen_to = 0;
}

int ctrace__tool_export_prepare(const char *cmd, const char **files, size_t n, ctrace_export_trace *t,
                                int64_t *durations, int64_t *offsets, ctrace__tool_window *w,
                                int64_t *longest, bool unchecked) {
  if ((w->task || w->goroutine) && (w->has_from || w->has_to || w->gen_from || (w->task && w->goroutine))) {
    fprintf(stderr, "ctrace %s: --%s is a window of its own: not with --from, --to, --gen or --%s\n", cmd,
            w->task ? "task" : "goroutine", w->task ? "goroutine" : "task");
    return 2;
  }
  uint64_t *gens = calloc(n, sizeof *gens);
  if (!gens) {
    fprintf(stderr, "ctrace %s: out of memory\n", cmd);
    return 1;
  }
  bool opened = ctrace__tool_export_open(cmd, files, n, t, durations, gens, offsets, unchecked);
  /* A window of a trace not read through first (a Go 1.22+ one, read
   * from the generation before the window): its duration from its last
   * generation, or, where that does not read, from the check, which says
   * why. */
  for (size_t i = 0; opened && unchecked && (w->has_from || w->has_to) && i < n; i++) {
    if (ctrace_reader_version(t[i].reader) < 1022) continue;
    ctrace_trace_info info;
    if ((durations[i] = ctrace__model_duration(t[i].reader)) >= 0) continue;
    if (ctrace__tool_checked(files[i], t[i].reader, &info, false)) durations[i] = info.duration_ns;
    else opened = false;
  }
  int gc = opened ? ctrace__tool_gen_check(cmd, w, files, gens, n) : 0;
  free(gens);
  if (!opened) return 1;
  if (gc != 0) return 2;
  /* Several traces keep their generations, each its own times. */
  if (w->gen_from && n == 1) gen_times(t[0].reader, w, durations[0]);
  int found = w->task || w->goroutine ? find_life(cmd, w, files, t, n, durations, offsets) : 0;
  if (found != 0) return found;
  *longest = 0;
  for (size_t i = 0; i < n; i++)
    if (offsets[i] + durations[i] > *longest) *longest = offsets[i] + durations[i];
  return ctrace__tool_window_check(cmd, w, *longest) != 0 ? 2 : 0;
}
