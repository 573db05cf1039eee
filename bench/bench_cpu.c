/* bench_cpu: what CPU sampling (ctrace_options.cpu_hz) costs.
 *
 *   bench_cpu [REPS]      (default 9)
 *
 * cpu-sampling: a compute loop of fixed length (about 300 ms), timed by
 * wall clock, inside a trace with CPU samples at 100 Hz and inside one
 * without, REPS times each, interleaved (alternating which goes first, so
 * a drift of this shared machine hits both alike); the ratio of the
 * medians. The loop emits no events: what it pays is the samples.
 *
 * cpu-sample: the cost of one sample to the thread it interrupts: the
 * sampling signal raised with pthread_kill (the kernel's delivery, the
 * handler's frame-pointer walk and store, the return), in bursts of 32 so
 * the trace's reader drains the ring between them; beside the same for an
 * empty handler on another real-time signal, whose cost is the kernel's
 * alone. Medians over REPS.
 *
 * Output:
 *   BENCH name=cpu-sampling ratio=<with/without> hz=100 with_ms=<m> without_ms=<m> samples=<n> reps=<r>
 *   BENCH name=cpu-sample ns=<x> empty_handler_ns=<y> handler_ns=<x-y> reps=<r>
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "help.h"
#include <ctrace/ctrace.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void compute(long n) {
  uint64_t x = sink | 1;
  for (long i = 0; i < n; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  sink = x;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* One traced run of the loop; returns its wall ms. */
static double run(int hz, long iters, uint64_t *events) {
  int fd = open("/dev/null", O_WRONLY);
  ctrace_options o = {.cpu_hz = hz};
  ctrace_stats s0, s1;
  ctrace_stats_get(&s0);
  if (ctrace_start_fd(fd, &o) != 0) {
    fprintf(stderr, "bench_cpu: cannot start a trace at %d Hz\n", hz);
    exit(1);
  }
  ctrace_log(0, "bench", "start"); /* this thread is traced, so sampled */
  double t0 = now_ms();
  compute(iters);
  double t = now_ms() - t0;
  ctrace_stop();
  ctrace_stats_get(&s1);
  *events += s1.events - s0.events;
  close(fd);
  return t;
}

static void empty(int sig) { (void)sig; }

/* The real-time signal ctrace's sampling took: the one with a handler this
 * program did not install. */
static int sampling_signal(int mine) {
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
    struct sigaction sa;
    if (s != mine && sigaction(s, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO)) return s;
  }
  return 0;
}

/* ns per raise of sig, in bursts of 32 with a pause for the reader. */
static double raise_ns(int sig) {
  double total = 0;
  for (int burst = 0; burst < 100; burst++) {
    double t0 = now_ms();
    for (int i = 0; i < 32; i++) pthread_kill(pthread_self(), sig);
    total += now_ms() - t0;
    struct timespec d = {0, 12000000};
    nanosleep(&d, NULL);
  }
  return total * 1e6 / (100 * 32);
}

int main(int argc, char **argv) {
  bench_help(argc, argv,
             "usage: bench_cpu [REPS]      (default 9)\n"
             "What CPU sampling costs a compute loop, and one sample (BENCH lines).\n");
  int reps = argc > 1 ? atoi(argv[1]) : 9;
  if (reps < 1) reps = 1;
  /* Size the loop to about 300 ms. */
  long iters = 1000000;
  for (;;) {
    double t0 = now_ms();
    compute(iters);
    if (now_ms() - t0 >= 30) break;
    iters *= 2;
  }
  iters *= 10;

  double with[64], without[64];
  uint64_t ev_with = 0, ev_without = 0;
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    fprintf(stderr, "bench_cpu: cpu-sampling rep %d/%d\n", r + 1, reps);
    if (r % 2) {
      without[r] = run(0, iters, &ev_without);
      with[r] = run(100, iters, &ev_with);
    } else {
      with[r] = run(100, iters, &ev_with);
      without[r] = run(0, iters, &ev_without);
    }
  }
  double mw = median(with, reps), mo = median(without, reps);
  printf("BENCH name=cpu-sampling ratio=%.4f hz=100 with_ms=%.1f without_ms=%.1f samples=%llu reps=%d\n",
         mw / mo, mw, mo, (unsigned long long)((ev_with - ev_without) / (uint64_t)reps), reps);

  /* One sample's cost, inside a trace with sampling on. */
  int mine = SIGRTMIN + 1;
  signal(mine, empty);
  int fd = open("/dev/null", O_WRONLY);
  ctrace_options o = {.cpu_hz = 100};
  if (ctrace_start_fd(fd, &o) != 0) return 1;
  ctrace_log(0, "bench", "start");
  int sig = sampling_signal(mine);
  if (!sig) {
    fprintf(stderr, "bench_cpu: no sampling signal found\n");
    return 1;
  }
  double xs[64], ys[64];
  for (int r = 0; r < reps; r++) {
    fprintf(stderr, "bench_cpu: cpu-sample rep %d/%d\n", r + 1, reps);
    xs[r] = raise_ns(sig);
    ys[r] = raise_ns(mine);
  }
  ctrace_stop();
  close(fd);
  double x = median(xs, reps), y = median(ys, reps);
  printf("BENCH name=cpu-sample ns=%.0f empty_handler_ns=%.0f handler_ns=%.0f reps=%d\n", x, y, x - y, reps);
  return 0;
}
