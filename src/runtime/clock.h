/* What the trace clock offers outside the runtime (clock.c). */
#ifndef CTRACE_RUNTIME_CLOCK_H
#define CTRACE_RUNTIME_CLOCK_H

/* The TSC's cycles per second, measured against CLOCK_MONOTONIC over ms
 * milliseconds; 0, at once, where the trace's clock is not the TSC (none,
 * one not constant_tsc and nonstop_tsc, CTRACE_CLOCK=monotonic).
 * `ctrace run` measures it once and passes it on to every process it
 * traces (CTRACE_TSC_HZ), so that their clocks run at one rate. */
double ctrace__tsc_hz(unsigned ms) __attribute__((visibility("hidden")));

#endif
