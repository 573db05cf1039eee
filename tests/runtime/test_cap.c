/* test_cap.c - a reader that falls behind does not make the traced
 * program's memory grow (tests/runtime/cap_check.sh).
 *
 *   test_cap DIR
 *
 * Two threads log at full speed (a third stops the world, one
 * millisecond in two) into a trace written with ctrace_start_fd
 * to a pipe, which a consumer thread drains at about 5 MB/s into
 * DIR/cap.trace, far slower than the events come (even under a sanitizer),
 * until tracing goes off (at most 30 s). With
 * max_pending at 8 MiB the trace must end early: ctrace_stop returns
 * CTRACE_ECAPPED, ctrace_stats.capped counts it, and the process's
 * resident memory grows by less than the cap plus a fixed allowance
 * (without the cap it grows by hundreds of MB). Prints "events=N", the
 * events the library counted for the trace, for the script to hold the
 * trace to.
 *
 * With CTRACE_FORMAT=go1.22 the trace pauses at the cap instead, and goes
 * on once the consumer has caught up: the loggers run for 4 s, or until
 * the second gap, up to 30 s, over which the cap must be met at least
 * twice (a gap each time, ctrace_stats.capped
 * and gap_ns count them), tracing must be on again after each, and memory
 * is held as above. Prints "gaps=N" too. */
#include <ctrace/ctrace.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      fprintf(stderr, "test_cap: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                             \
      fprintf(stderr, "\n");                                    \
      exit(1);                                                  \
    }                                                           \
  } while (0)

/* A sanitizer keeps shadow memory for what the buffers hold: several
 * times their size (ThreadSanitizer's is the largest). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
enum { CAP = 8 << 20, ALLOWANCE = (24 << 20) + 6 * CAP };
#else
enum { CAP = 8 << 20, ALLOWANCE = 24 << 20 };
#endif

static int pipe_r, out_fd;
static atomic_bool logging = true;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Resident bytes, from /proc/self/statm. */
static long rss(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * sysconf(_SC_PAGESIZE);
}

/* 64 KiB every 12 ms: about 5 MB/s. */
static void *consumer(void *arg) {
  (void)arg;
  static char buf[64 << 10];
  for (;;) {
    ssize_t n = read(pipe_r, buf, sizeof buf);
    if (n <= 0) break;
    CHECK(write(out_fd, buf, (size_t)n) == n, "write the trace");
    struct timespec d = {0, 12000000};
    nanosleep(&d, NULL);
  }
  return NULL;
}

static void *logger(void *arg) {
  (void)arg;
  while (atomic_load_explicit(&logging, memory_order_relaxed))
    ctrace_log(0, "cap", "a message of about sixty-four bytes, logged at full speed.....");
  return NULL;
}

/* Stops the world for a millisecond in every two: gaps begin inside its
 * stop-the-worlds, which must then end there, not go on unwritten
 * (counted lost) for the rest of the trace. */
static void *stopper(void *arg) {
  (void)arg;
  const struct timespec ms = {0, 1000000};
  while (atomic_load_explicit(&logging, memory_order_relaxed)) {
    ctrace_gc_stw_start(0);
    nanosleep(&ms, NULL);
    ctrace_gc_stw_done();
    nanosleep(&ms, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: test_cap DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/cap.trace", argv[1]);
  out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(out_fd >= 0, "open %s", path);
  int p[2];
  CHECK(pipe(p) == 0, "pipe");
  pipe_r = p[0];
  pthread_t c, l[3];
  CHECK(pthread_create(&c, NULL, consumer, NULL) == 0, "consumer");

  ctrace_stats before;
  ctrace_stats_get(&before);
  long rss0 = rss(), peak = rss0;
  ctrace_options o = {0};
  o.max_pending = CAP;
  int err = ctrace_start_fd(p[1], &o);
  CHECK(err == 0, "start: %s", ctrace_strerror(err));
  for (int i = 0; i < 3; i++) CHECK(pthread_create(&l[i], NULL, i < 2 ? logger : stopper, NULL) == 0, "logger");
  const char *f = getenv("CTRACE_FORMAT");
  bool gaps = f && !strcmp(f, "go1.22");
  int resumed = 0;
  /* With gaps: 4 s, or longer, up to 30 s, until two gaps (a sanitizer's
   * build on a loaded machine takes longer to fill the cap). */
  for (double t0 = now_s(); now_s() - t0 < 30;) {
    if (gaps) {
      ctrace_stats st;
      ctrace_stats_get(&st);
      if (now_s() - t0 >= 4 && st.capped - before.capped >= 2) break;
    } else if (!ctrace_enabled()) {
      break;
    }
    bool was = ctrace_enabled();
    long r = rss();
    if (r > peak) peak = r;
    struct timespec d = {0, 2000000};
    nanosleep(&d, NULL);
    resumed += !was && ctrace_enabled();
  }
  atomic_store(&logging, false);
  for (int i = 0; i < 3; i++) pthread_join(l[i], NULL);
  CHECK(ctrace_start(NULL) == CTRACE_EBUSY, "a new trace started before the capped one stopped");
  /* A child forked meanwhile is not bound by its parent's trace.
   * ThreadSanitizer cannot start threads in the child of a threaded
   * process (the writer's), so not under it. */
#ifndef __SANITIZE_THREAD__
  pid_t child = fork();
  CHECK(child >= 0, "fork");
  if (child == 0) {
    int fd = open("/dev/null", O_WRONLY);
    int e = ctrace_start_fd(fd, NULL);
    if (e == 0) e = ctrace_stop();
    _exit(e == 0 ? 0 : 1);
  }
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "a child forked from a capped trace could not trace");
#endif
  err = ctrace_stop();
  CHECK(err == CTRACE_ECAPPED, "stop: %d (%s), want CTRACE_ECAPPED", err, ctrace_strerror(err));
  close(p[1]);
  pthread_join(c, NULL);
  close(out_fd);

  ctrace_stats after;
  ctrace_stats_get(&after);
  if (gaps) {
    uint64_t n = after.capped - before.capped;
    CHECK(n >= 2, "ctrace_stats.capped: %llu gaps in 4 s, want 2 or more", (unsigned long long)n);
    CHECK(resumed >= 1, "tracing never went on again after a gap");
    CHECK(after.gap_ns > before.gap_ns, "ctrace_stats.gap_ns did not grow");
    printf("gaps=%llu\n", (unsigned long long)n);
    printf("test_cap: %llu gaps, %.2f s not traced\n", (unsigned long long)n,
           (double)(after.gap_ns - before.gap_ns) / 1e9);
  } else {
    CHECK(after.capped == before.capped + 1, "ctrace_stats.capped: %llu, want %llu",
          (unsigned long long)after.capped, (unsigned long long)before.capped + 1);
  }
  CHECK(after.lost == before.lost, "events lost");
  /* The library's own count, which a sanitizer's shadow memory does not
   * blur: buffers are pooled, so a gap's refill reuses them. */
  uint64_t bufs = after.buffers - before.buffers;
  printf("test_cap: %llu buffers of 64 KiB allocated\n", (unsigned long long)bufs);
  CHECK(bufs * 65536 <= CAP + (2 << 20), "%llu buffers allocated for a cap of %d MiB",
        (unsigned long long)bufs, CAP >> 20);
  long grown = peak - rss0;
  printf("test_cap: peak resident growth %.1f MiB (cap %d MiB, allowance %d MiB)\n", grown / 1048576.0,
         CAP >> 20, ALLOWANCE >> 20);
  /* Under a sanitizer, the generation format's symbolizing at each
   * generation's end (libdw's DWARF, read in the first) takes shadow
   * memory beyond any fixed allowance: the buffer count above holds the
   * bound there. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  if (!gaps)
#endif
    CHECK(grown < CAP + ALLOWANCE, "resident memory grew by %ld bytes", grown);
  printf("events=%llu\n", (unsigned long long)(after.events - before.events));

  /* Tracing works again once the capped trace is stopped. */
  int null_fd = open("/dev/null", O_WRONLY);
  err = ctrace_start_fd(null_fd, NULL);
  CHECK(err == 0, "start after a capped trace: %s", ctrace_strerror(err));
  ctrace_log(0, "cap", "again");
  err = ctrace_stop();
  CHECK(err == 0, "stop after a capped trace: %s", ctrace_strerror(err));
  return 0;
}
