/* bench_flight: what a flight recorder's snapshot of a full 64 MiB window
 * costs (BENCHMARKS.md).
 *
 * Two threads log at full speed into a recorder of the default cap (64
 * MiB) with a min_age no run reaches, until what it keeps has stopped
 * growing (the cap trims it); then they stop, and the recorder's window
 * is written to a file in $TMPDIR (default /tmp) five times. Prints
 *   BENCH name=flight-snapshot ms=<median> ms_min=<a> ms_max=<b> bytes=<file size>
 *         generations=<kept> window_s=<what they span> reps=5
 * where ms is the time ctrace_flight_write takes: ending the generation
 * being written (which is empty: no thread writes), then writing the
 * header and every kept buffer. */
#include "help.h"
#include <ctrace/ctrace.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REPS 5

static _Atomic int stop;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *logger(void *arg) {
  (void)arg;
  for (unsigned i = 0; !atomic_load(&stop); i++) ctrace_logf(0, "bench", "message %u", i);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  bench_help(argc, argv,
             "usage: bench_flight\n"
             "What a flight recorder's snapshot of a full 64 MiB window costs (BENCH lines).\n");
  ctrace_flight_options fo = {.min_age_ms = 3600 * 1000};
  int err = ctrace_flight_start(&fo);
  if (err) {
    fprintf(stderr, "bench_flight: %s\n", ctrace_strerror(err));
    return 1;
  }
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, logger, NULL);
  /* Full: what is kept stopped growing for half a second, or 30 s. */
  ctrace_flight_stats st;
  uint64_t last = 0;
  double t0 = now_ms(), still = t0;
  while (now_ms() - t0 < 30000 && now_ms() - still < 500) {
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    ctrace_flight_stats_get(&st);
    if (st.bytes > last + (1u << 20)) {
      last = st.bytes;
      still = now_ms();
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  const char *tmp = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/bench_flight.%d.trace", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  double ms[REPS];
  off_t bytes = 0;
  for (int r = 0; r < REPS; r++) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      perror(path);
      return 1;
    }
    double a = now_ms();
    err = ctrace_flight_write(fd);
    ms[r] = now_ms() - a;
    struct stat sb;
    if (fstat(fd, &sb) == 0) bytes = sb.st_size;
    close(fd);
    if (err) {
      fprintf(stderr, "bench_flight: ctrace_flight_write: %s\n", ctrace_strerror(err));
      return 1;
    }
  }
  ctrace_flight_stats_get(&st);
  unlink(path);
  ctrace_flight_stop();
  qsort(ms, REPS, sizeof *ms, cmp);
  printf("BENCH name=flight-snapshot ms=%.1f ms_min=%.1f ms_max=%.1f bytes=%lld generations=%llu "
         "window_s=%.2f reps=%d\n",
         ms[REPS / 2], ms[0], ms[REPS - 1], (long long)bytes, (unsigned long long)st.generations,
         st.window_ns / 1e9, REPS);
  return 0;
}
