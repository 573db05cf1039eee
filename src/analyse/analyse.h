/* What the analyses of src/analyse/ share: goroutine lifetimes and the
 * time intervals a --goroutine or --region filter keeps. Internal. */
#ifndef CTRACE_ANALYSE_ANALYSE_H
#define CTRACE_ANALYSE_ANALYSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctrace/analyse.h"
#include "parse/map.h"

typedef struct an_interval {
  int64_t begin, end;
} an_interval;

/* The filter: per goroutine, sorted non-overlapping intervals of time to
 * keep. all: no filter (every goroutine, all of its time). */
typedef struct an_filter {
  bool all;
  u64map index; /* g -> index + 1 into per */
  struct an_gintervals {
    an_interval *iv;
    size_t n, cap;
  } *per;
  size_t nper, capper;
  int64_t trace_end; /* the last event's time */
} an_filter;

/* Reads the trace through (from its start) if opt asks for a filter. 0, or
 * -1 with err set. */
int ctrace__an_filter_build(ctrace_reader *r, const ctrace_profile_options *opt, an_filter *f,
                            char *err, size_t errlen);
/* Nanoseconds of [begin, end) that goroutine g spends inside the filter's
 * intervals: Go's pprofOverlappingDuration. */
int64_t ctrace__an_overlap(const an_filter *f, uint64_t g, int64_t begin, int64_t end);
void ctrace__an_filter_free(an_filter *f);

/* Nearest-rank percentile q of sorted d[0..n), n > 0 (stats.c). */
int64_t ctrace__an_pct(const int64_t *d, size_t n, double q);

/* The start function of goroutine g as Go names it: the first frame of the
 * stack its creation gives it ("" if unknown). */
const char *ctrace__an_start_func(const ctrace_reader *r, uint64_t create_stack);

/* -t cpu (cpu.c): hz, the sampling rate, or 0 to estimate it. */
int ctrace__an_cpu(ctrace_reader *r, const an_filter *f, int hz, ctrace_profile *p, char *err,
                   size_t errlen);

/* -t wall (wall.c). */
int ctrace__an_wall(ctrace_reader *r, const an_filter *f, ctrace_profile *p, char *err,
                    size_t errlen);

/* Who kept them waiting (waker.c). */

/* The waker of the wait a GoUnblock ev ends: the goroutine that wrote it,
 * or 0 when none is known (written with no goroutine running, or by the
 * woken one itself). */
uint64_t ctrace__an_waker_of(const ctrace_event *ev);

/* One wait a GoUnblock ended, for ctrace stats: the goroutines (waker 0:
 * none known), then their start functions (waker_name NULL: none known),
 * and its time. */
typedef struct an_wait {
  uint64_t woken, waker;
  const char *woken_name, *waker_name;
  int64_t d;
} an_wait;

/* The table of ctrace stats from the named waits w (sorted in place):
 * a row per (woken_name, waker_name), by total time, largest first. 0, or
 * -1 when out of memory. */
int ctrace__an_waker_table(an_wait *w, size_t n, ctrace_waker_stats **out, size_t *nout);

/* -t waker. */
int ctrace__an_waker(ctrace_reader *r, const an_filter *f, ctrace_profile *p, char *err,
                     size_t errlen);

#endif
