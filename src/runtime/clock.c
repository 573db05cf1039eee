/* Trace clock: the TSC where it is trustworthy, else CLOCK_MONOTONIC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "runtime/env.h"

bool ctrace__use_tsc;

uint64_t ctrace__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC is usable across cores only if it ticks at a constant rate and
 * does not stop in deep C-states (constant_tsc, nonstop_tsc); otherwise
 * ticks on two cores cannot be compared and Go's reader rejects the trace
 * with "time stamps out of order". CTRACE_CLOCK=monotonic forces the
 * fallback. Called once, before any trace starts. */
void ctrace__clock_init(void) {
  ctrace__use_tsc = false;
#if defined(__x86_64__) || defined(__i386__)
  const char *force = ctrace__getenv("CTRACE_CLOCK");
  if (force && strcmp(force, "monotonic") == 0) return;
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f) return;
  char line[4096];
  bool constant = false, nonstop = false;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    constant = strstr(line, " constant_tsc") != NULL;
    nonstop = strstr(line, " nonstop_tsc") != NULL;
    break;
  }
  fclose(f);
  ctrace__use_tsc = constant && nonstop;
#endif
}
