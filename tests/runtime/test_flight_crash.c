/* test_flight_crash.c - a program that crashes while a flight recorder
 * runs (tests/runtime/flight_crash.sh).
 *
 *   test_flight_crash MODE HOW [CRASH_FILE]
 *
 * Logs "seq 0" to "seq 999" from the main thread (a second thread logs
 * too, so the snapshot has to end a generation other threads write in),
 * then crashes: HOW is segv (a store through a null pointer), abort,
 * handler (a SIGSEGV handler of the program's own, installed before the
 * recorder, prints "own handler" and exits 42), or stw (segv inside a
 * stop-the-world begun after "seq 0", which no generation may end but
 * the crash's). MODE is flight (recording,
 * the crash snapshot into CRASH_FILE) or plain (no tracing: the exit
 * status to compare with). */
#include <ctrace/ctrace.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void own_handler(int sig) {
  (void)sig;
  static const char msg[] = "own handler\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(42);
}

static _Atomic int stop;

static void *other(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    ctrace_log(0, "other", "tick");
    nanosleep(&(struct timespec){0, 200000}, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "flight") == 0 && argc < 4)) {
    fprintf(stderr, "usage: test_flight_crash flight|plain segv|abort|handler|stw [CRASH_FILE]\n");
    return 2;
  }
  if (strcmp(argv[2], "handler") == 0) signal(SIGSEGV, own_handler);
  if (strcmp(argv[1], "flight") == 0) {
    ctrace_flight_options fo = {.min_age_ms = 2000, .crash_path = argv[3]};
    int err = ctrace_flight_start(&fo);
    if (err) {
      fprintf(stderr, "ctrace_flight_start: %s\n", ctrace_strerror(err));
      return 3;
    }
  }
  pthread_t th;
  pthread_create(&th, NULL, other, NULL);
  for (int i = 0; i < 1000; i++) {
    ctrace_logf(0, "crash", "seq %d", i);
    if (i == 0 && strcmp(argv[2], "stw") == 0) ctrace_gc_stw_start(0);
    if (i % 100 == 0) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  if (strcmp(argv[2], "abort") == 0) abort();
  *(volatile int *)(uintptr_t)(argc * 4096) = 0; /* argc is small: an unmapped page */
  return 0;
}
