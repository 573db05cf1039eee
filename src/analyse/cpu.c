/* ctrace pprof -t cpu: the trace's CPU samples (EvCPUSample, written by
 * ctrace's cpu_hz and by Go's runtime when a CPU profile runs beside the
 * trace) as a CPU profile: sample types samples/count and cpu/nanoseconds,
 * one sample per stack.
 *
 * Go's format does not record the sampling rate. Unless the caller gives it,
 * it is estimated as a profiler's clock would show it: the typical gap
 * between a goroutine's consecutive samples while it runs. A thread busy on
 * the CPU is sampled once per period of CPU time, so the shortest common
 * gap (the 10th percentile of the gaps, which waits and a shared CPU only
 * lengthen) is the period. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "profile.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The sampling period in ns, from the gaps between one goroutine's
 * samples; 10 ms (Go's default rate) when there are too few to tell. */
static int64_t estimate_period(ctrace_reader *r) {
  u64map last = {0};
  int64_t *gaps = NULL;
  size_t n = 0, cap = 0;
  ctrace_event ev;
  ctrace__model_rewind(r);
  while (ctrace__model_next(r, &ev)) {
    if (ev.type != CTRACE_EV_CPUSample || ev.g == 0) continue;
    bool fresh;
    uint64_t *t = ctrace__map_put(&last, ev.g, &fresh);
    if (!t) break;
    if (!fresh && ev.ts > (int64_t)*t) {
      if (n == cap) {
        cap = cap ? 2 * cap : 1024;
        int64_t *m = realloc(gaps, cap * sizeof *gaps);
        if (!m) break;
        gaps = m;
      }
      gaps[n++] = ev.ts - (int64_t)*t;
    }
    *t = (uint64_t)ev.ts;
  }
  int64_t period = 10000000;
  if (n >= 10) {
    qsort(gaps, n, sizeof *gaps, cmp_i64);
    period = gaps[n / 10];
  }
  free(gaps);
  ctrace__map_free(&last);
  return period;
}

int ctrace__an_cpu(ctrace_reader *r, const an_filter *f, int hz, ctrace_profile *p, char *err,
                   size_t errlen) {
  int64_t period = hz > 0 ? 1000000000 / hz : estimate_period(r);
  p->period = period;
  p->period_type[0] = ctrace__prof_string(p, "cpu");
  p->period_type[1] = ctrace__prof_string(p, "nanoseconds");
  uint64_t *locs = NULL;
  size_t caplocs = 0;
  ctrace_event ev;
  ctrace__model_rewind(r);
  while (ctrace__model_next(r, &ev)) {
    if (ev.type != CTRACE_EV_CPUSample || ev.stack == 0) continue;
    if (ctrace__an_overlap(f, ev.g, ev.ts, ev.ts + 1) <= 0) continue;
    const ctrace_frame *fr;
    size_t n = ctrace__model_stack(r, ev.stack, &fr);
    if (n == 0) continue;
    prof_sample *s;
    uint64_t *ix = ctrace__map_get(&p->sample_ids, ev.stack);
    if (ix) {
      s = &p->samples[*ix - 1];
    } else {
      if (n > caplocs) {
        uint64_t *m = realloc(locs, n * sizeof *locs);
        if (!m) {
          p->oom = true;
          break;
        }
        locs = m;
        caplocs = n;
      }
      for (size_t i = 0; i < n; i++)
        locs[i] = ctrace__prof_frame(p, fr[i].pc, fr[i].func, fr[i].file, fr[i].line);
      if (p->oom || !(s = ctrace__prof_sample(p, ev.stack, locs, n))) break;
    }
    s->value[0]++;
    s->value[1] += period;
  }
  free(locs);
  if (p->oom) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}
