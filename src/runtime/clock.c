/* Trace clock: the TSC where it is trustworthy, else CLOCK_MONOTONIC,
 * counted in ticks of a whole number of nanoseconds.
 *
 * Why whole: Go's reader (and ctrace's, which reads as Go does) turns
 * each event's tick difference into nanoseconds on its own and drops the
 * fraction, then adds them up along the batch. Ticks of 24.65 ns (rdtsc /
 * 64 at 2.6 GHz) lost half a nanosecond an event: 8192 events into a
 * batch, a thread's times lagged another's by microseconds, and an event
 * caused by another thread's (a task one thread begins and another
 * ends) read as before it. Ticks of CTRACE__TICK_NS, a power of two,
 * convert exactly: a trace's frequency is 10^9 / CTRACE__TICK_NS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "runtime/clock.h"
#include "runtime/env.h"

bool ctrace__use_tsc;
uint64_t ctrace__tsc_mult;

uint64_t ctrace__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* The TSC read between two readings of CLOCK_MONOTONIC, against their
 * middle: the closest of a few tries, so a preemption between the reads
 * does not count. */
static void tsc_at(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; i++) {
    uint64_t a = ctrace__mono_ns(), c = ctrace__rdtsc(), b = ctrace__mono_ns();
    if (b - a < best) best = b - a, *tsc = c, *ns = a + (b - a) / 2;
  }
}

static double measure(unsigned ms) {
  uint64_t c0, n0, c1, n1;
  tsc_at(&c0, &n0);
  struct timespec d = {0, (long)ms * 1000000};
  while (nanosleep(&d, &d) != 0) {}
  tsc_at(&c1, &n1);
  return n1 > n0 && c1 > c0 ? (double)(c1 - c0) * 1e9 / (double)(n1 - n0) : 0;
}

/* Whether the TSC can be the trace's clock: only if it ticks at a
 * constant rate and does not stop in deep C-states (constant_tsc,
 * nonstop_tsc); otherwise ticks on two cores cannot be compared. */
static bool tsc_usable(void) {
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    constant = strstr(line, " constant_tsc") != NULL;
    nonstop = strstr(line, " nonstop_tsc") != NULL;
    break;
  }
  fclose(f);
  return constant && nonstop;
}

/* Whether the trace's clock is to be the TSC: CTRACE_CLOCK=monotonic
 * forces the fallback. */
static bool tsc_wanted(void) {
  const char *force = ctrace__getenv("CTRACE_CLOCK");
  return !(force && strcmp(force, "monotonic") == 0) && tsc_usable();
}
#endif

double ctrace__tsc_hz(unsigned ms) {
#if defined(__x86_64__)
  if (tsc_wanted()) return measure(ms);
#endif
  (void)ms;
  return 0;
}

/* The TSC's rate is
 * CTRACE_TSC_HZ where set (`ctrace run` measures it once, over longer,
 * for every process it starts, which then share one rate), else measured
 * here over 10 ms against CLOCK_MONOTONIC, within a part in 10^5 as the
 * trace's frequency was before. Called once, before any trace starts. */
void ctrace__clock_init(void) {
  ctrace__use_tsc = false;
#if defined(__x86_64__)
  if (!tsc_wanted()) return;
  const char *given = ctrace__getenv("CTRACE_TSC_HZ");
  double hz = given ? strtod(given, NULL) : 0;
  if (!(hz > 1e6 && hz < 1e11)) hz = measure(10);
  if (!(hz > 1e6 && hz < 1e11)) return;
  /* Ticks per TSC cycle, in 32.32 fixed point. */
  ctrace__tsc_mult = (uint64_t)(4294967296.0 * 1e9 / CTRACE__TICK_NS / hz + 0.5);
  ctrace__use_tsc = true;
#endif
}

uint64_t ctrace__frequency(void) { return 1000000000u / (ctrace__use_tsc ? CTRACE__TICK_NS : 1); }
