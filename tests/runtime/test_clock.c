/* test_clock.c - the trace clock orders what threads do to each other.
 *
 *   test_clock DIR
 *
 * One thread begins tasks and hands each to a second thread, which ends
 * it: in real time every end follows its begin. Read back (in each
 * format, DIR/go122.trace and DIR/classic.trace), no end may come more
 * than SKEW_NS before its begin (two cores' TSCs may disagree by a few
 * tens of ns), and every task must end. With ticks of a fraction of a
 * nanosecond more or less, Go's reader, which converts each tick
 * difference on its own and drops the fraction, put the threads'
 * batches microseconds apart and half the ends before their begins
 * (src/runtime/clock.c). The trace's frequency must be a whole number of
 * nanoseconds a tick for that. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace/ctrace.h"
#include "ctrace/parse.h"
#include "lib/check.h"

enum { TASKS = 100000, SKEW_NS = 1000 };

static _Atomic uint64_t slot; /* a task handed over, 0 for none */

static void *ender(void *arg) {
  (void)arg;
  for (int i = 0; i < TASKS; i++) {
    uint64_t t;
    while (!(t = atomic_exchange(&slot, 0))) {}
    ctrace_task_end(t);
  }
  return NULL;
}

static void run(const char *path, int format) {
  ctrace_options o = {.format = format, .no_stacks = 1};
  CHECK(ctrace_start_file(path, &o) == 0, "%s: start", path);
  pthread_t b;
  CHECK(pthread_create(&b, NULL, ender, NULL) == 0, "pthread_create");
  for (int i = 0; i < TASKS; i++) {
    uint64_t t = ctrace_task_create(0, "handed over");
    while (atomic_load(&slot)) {}
    atomic_store(&slot, t);
  }
  pthread_join(b, NULL);
  CHECK(ctrace_stop() == 0, "%s: stop", path);
}

static void check(const char *path) {
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open(path, &r, &err) != 0 || ctrace_reader_check(r, &info, &err) != 0) {
    CHECK(false, "%s: %s at offset %llu", path, err.message, (unsigned long long)err.offset);
    return;
  }
  CHECK(1000000000 % info.frequency == 0, "%s: %llu ticks a second, not a whole number of ns a tick", path,
        (unsigned long long)info.frequency);
  /* By task id (from the first one met), the time of its begin, and of
   * its end when that is read first (its time within the skew). */
  int64_t *begun = calloc(2 * TASKS + 2, sizeof *begun), *ended = calloc(2 * TASKS + 2, sizeof *ended);
  if (!begun || !ended) abort();
  uint64_t first = 0;
  int ends = 0, early = 0;
  int64_t worst = 0;
  ctrace_event ev;
  while (ctrace_reader_next(r, &ev)) {
    bool begin = ev.type == CTRACE_EV122_UserTaskBegin, end = ev.type == CTRACE_EV122_UserTaskEnd;
    if (ctrace_reader_version(r) < 1022)
      begin = ev.type == CTRACE_EV_UserTaskCreate, end = ev.type == CTRACE_EV_UserTaskEnd;
    if (!begin && !end) continue;
    uint64_t id = ev.args[0];
    if (!first) first = id;
    if (id < first || id - first > 2 * TASKS) continue;
    int64_t by = INT64_MIN; /* how much earlier than its begin a task ends */
    if (begin) {
      begun[id - first] = ev.ts + 1;
      if (ended[id - first]) by = ev.ts - (ended[id - first] - 1);
    } else {
      ends++;
      if (begun[id - first]) by = begun[id - first] - 1 - ev.ts;
      else ended[id - first] = ev.ts + 1;
    }
    if (by > SKEW_NS) early++;
    if (by > worst) worst = by;
  }
  for (size_t i = 0; i < 2 * TASKS + 2; i++) early += ended[i] && !begun[i]; /* never begun */
  free(ended);
  free(begun);
  ctrace_reader_close(r);
  CHECK(ends == TASKS, "%s: %d task ends, want %d", path, ends, TASKS);
  CHECK(early == 0, "%s: %d of %d tasks end more than %d ns before they begin (worst by %lld ns)", path, early,
        TASKS, SKEW_NS, (long long)worst);
  printf("%s: %d tasks, %d ending more than %d ns before they begin (at most %lld ns before), %llu ticks a second\n",
         path, ends, early, SKEW_NS, (long long)worst, (unsigned long long)info.frequency);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_clock DIR\n");
    return 2;
  }
  char go122[4096], classic[4096];
  snprintf(go122, sizeof go122, "%s/go122.trace", argv[1]);
  snprintf(classic, sizeof classic, "%s/classic.trace", argv[1]);
  run(go122, CTRACE_FORMAT_GO122);
  check(go122);
  run(classic, CTRACE_FORMAT_GO111);
  check(classic);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
