/* Clocks the ctrace run workloads report (bench/bench_run.sh reads them). */
#ifndef CTRACE_TESTS_RUN_CLOCK_H
#define CTRACE_TESTS_RUN_CLOCK_H

#include <time.h>

static inline long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CPU time of the whole process (every thread, a tracer's included). */
static inline long long cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
