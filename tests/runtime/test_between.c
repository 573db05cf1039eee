/* test_between.c - events a runtime writes between its goroutines.
 *
 *   test_between DIR
 *
 * The main thread is a runtime's scheduler: it takes P 0, runs a G of its
 * own now and then, and between them (no G running), and again with its P
 * given up, writes what Go's reader takes only from a G on a P: a log,
 * a task and a region, a GC cycle, GOMAXPROCS, and (a P is enough) a heap
 * figure. It does so in each format:
 *   DIR/classic.trace  the classic format: the thread's own G stands in
 *                      for the log, task and region (Go's viewers panic on
 *                      a region of G0), on a P taken for the instant
 *                      where it has none; the rest is G0's, as Go's
 *                      runtime writes it;
 *   DIR/go122.trace    Go's current format: the thread's own G stands in;
 *   DIR/flight.1.trace, DIR/flight.2.trace  a flight recorder's snapshots,
 *                      the second after more rounds, each ending a
 *                      generation (the stand-in's statuses across them);
 *   DIR/classic-threads.trace, DIR/go122-threads.trace  THREADS runtime
 *                      threads at once, each with its own P and G,
 *                      writing the log, task and region between its Gs
 *                      with its P and without: the P taken for the
 *                      instant goes from thread to thread (its batches
 *                      must stay in file order), or two are taken at
 *                      once.
 * For each, no event is counted lost (ctrace_stats.lost), and the
 * traces, read back with libctrace-parse, hold every log, task and
 * region written, each on a G and a P, and in the current format every
 * GC cycle and heap figure too, and a GOMAXPROCS of 8. What Go makes of
 * the traces is tests/runtime/between_check.sh's to check.
 */
#include <ctrace/ctrace.h>
#include <ctrace/parse.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "test_between: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fprintf(stderr, "\n");                                        \
      exit(1);                                                      \
    }                                                               \
  } while (0)

enum { ROUNDS = 5 };

static void worker(void) {}

static ctrace_g work;

static void annotations(void) {
  uint64_t task = ctrace_task_create(0, "between");
  ctrace_region_begin(task, "sched");
  ctrace_log(task, "sched", "between goroutines");
  ctrace_region_end(task, "sched");
  ctrace_task_end(task);
}

/* What one round writes between Gs, twice: on P 0, then with no P. Of
 * each kind, 2 per round. */
static void between(void) {
  annotations();
  ctrace_gc_start();
  ctrace_heap_alloc(1 << 20);
  ctrace_gc_done();
  ctrace_gomaxprocs(8);
}

static void round_(void) {
  ctrace_go_start(&work);
  ctrace_log(0, "work", "in a goroutine");
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  between();
  ctrace_proc_stop();
  between();
  ctrace_proc_start(0);
  ctrace_go_unblock(&work);
}

/* THREADS runtime threads at once, each with a P and a G of its own,
 * each round writing annotations between its Gs on its P, then with
 * none: each takes a P for the instant, the lowest free, so one number
 * goes from thread to thread, or two are held at once. (GC phases are
 * the whole runtime's: not written here.) */
enum { THREADS = 4, THREAD_ROUNDS = 50 };
static ctrace_g works[THREADS];

static void *runtime_thread(void *arg) {
  int k = (int)(intptr_t)arg;
  ctrace_proc_start(1 + k);
  for (int r = 0; r < THREAD_ROUNDS; r++) {
    ctrace_go_start(&works[k]);
    ctrace_log(0, "work", "in a goroutine");
    ctrace_go_block(CTRACE_BLOCK_SYNC);
    annotations();
    ctrace_proc_stop();
    annotations();
    ctrace_proc_start(1 + k);
    ctrace_go_unblock(&works[k]);
  }
  ctrace_proc_stop();
  return NULL;
}

static void threads_(void) {
  pthread_t th[THREADS];
  for (int k = 0; k < THREADS; k++)
    CHECK(pthread_create(&th[k], NULL, runtime_thread, (void *)(intptr_t)k) == 0, "pthread_create");
  for (int k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
}

static uint64_t lost(void) {
  ctrace_stats st;
  ctrace_stats_get(&st);
  return st.lost;
}

/* Counts, in a trace of the current format, the events between() writes
 * (with gc, else those annotations() writes): each must be on a G and a
 * P. */
static void check_current(const char *path, int rounds, bool gc) {
  ctrace_reader *r;
  ctrace_parse_error err;
  CHECK(ctrace_reader_open(path, &r, &err) == 0, "%s: %s", path, err.message);
  CHECK(ctrace_reader_version(r) == 1022, "%s: version %d", path, ctrace_reader_version(r));
  int logs = 0, tasks = 0, task_ends = 0, regions = 0, region_ends = 0, gcs = 0, gc_ends = 0, heaps = 0,
      procs8 = 0;
  ctrace_event ev;
  int rc;
  while ((rc = ctrace_reader_read(r, &ev, &err)) > 0) {
    bool on_g = (int64_t)ev.g != -1 && ev.p != -1;
    switch (ev.type) {
    case CTRACE_EV122_UserLog:
      if (ev.sargs[1] && strcmp(ev.sargs[1], "between goroutines") == 0) {
        CHECK(on_g, "%s: a log at offset %llu on no G or P", path, (unsigned long long)ev.off);
        logs++;
      }
      break;
    case CTRACE_EV122_UserTaskBegin: tasks += on_g; break;
    case CTRACE_EV122_UserTaskEnd: task_ends += on_g; break;
    case CTRACE_EV122_UserRegionBegin: regions += on_g; break;
    case CTRACE_EV122_UserRegionEnd: region_ends += on_g; break;
    case CTRACE_EV122_GCBegin: gcs += on_g; break;
    case CTRACE_EV122_GCEnd: gc_ends += on_g; break;
    case CTRACE_EV122_HeapAlloc: heaps += ev.p != -1 && ev.args[0] == 1 << 20; break;
    case CTRACE_EV122_ProcsChange: procs8 += on_g && ev.args[0] == 8; break;
    default: break;
    }
  }
  CHECK(rc == 0, "%s: %s at offset %llu", path, err.message, (unsigned long long)err.offset);
  ctrace_reader_close(r);
  int want = 2 * rounds;
  if (!gc) gcs = gc_ends = heaps = want, procs8 = 1;
  CHECK(logs == want && tasks == want && task_ends == want && regions == want && region_ends == want &&
            gcs == want && gc_ends == want && heaps == want && procs8 >= 1,
        "%s: %d logs, %d/%d tasks, %d/%d regions, %d/%d GCs, %d heap figures, %d GOMAXPROCS 8; want %d "
        "of each, and a GOMAXPROCS 8",
        path, logs, tasks, task_ends, regions, region_ends, gcs, gc_ends, heaps, procs8, want);
  printf("test_between: %s: %d of each kind between goroutines, on a G and a P\n", path, want);
}

/* Counts, in a trace of the classic format, the logs, tasks and regions
 * between() writes: each must be on a G (not G0) and a P. */
static void check_classic(const char *path, int rounds) {
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  CHECK(ctrace_reader_open(path, &r, &err) == 0 && ctrace_reader_check(r, &info, &err) == 0,
        "%s: %s at offset %llu", path, err.message, (unsigned long long)err.offset);
  int logs = 0, tasks = 0, task_ends = 0, regions = 0, region_ends = 0, on_g0 = 0;
  ctrace_event ev;
  int rc;
  while ((rc = ctrace_reader_read(r, &ev, &err)) > 0) {
    bool on_g = ev.g != 0 && ev.p >= 0;
    switch (ev.type) {
    case CTRACE_EV_UserLog:
      if (!ev.sargs[1] || strcmp(ev.sargs[1], "between goroutines") != 0) continue;
      logs += on_g;
      break;
    case CTRACE_EV_UserTaskCreate: tasks += on_g; break;
    case CTRACE_EV_UserTaskEnd: task_ends += on_g; break;
    case CTRACE_EV_UserRegion:
      if (ev.args[1])
        region_ends += on_g;
      else
        regions += on_g;
      break;
    default: continue;
    }
    if (!on_g && on_g0++ == 0)
      fprintf(stderr, "test_between: %s: %s at offset %llu on G %llu, P %lld\n", path,
              ev.type == CTRACE_EV_UserRegion ? "a region" : "an annotation", (unsigned long long)ev.off,
              (unsigned long long)ev.g, (long long)ev.p);
  }
  CHECK(rc == 0, "%s: %s at offset %llu", path, err.message, (unsigned long long)err.offset);
  ctrace_reader_close(r);
  int want = 2 * rounds;
  CHECK(on_g0 == 0 && logs == want && tasks == want && task_ends == want && regions == want &&
            region_ends == want,
        "%s: %d annotations on no G or no P; %d logs, %d/%d tasks, %d/%d regions on a G; want %d of each",
        path, on_g0, logs, tasks, task_ends, regions, region_ends, want);
  printf("test_between: %s: %d logs, tasks and regions between goroutines, on a G and a P\n", path, want);
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: test_between DIR");
  char path[4096];
  ctrace_proc_start(0);
  ctrace_go_create(&work, worker);

  const int formats[2] = {CTRACE_FORMAT_GO111, CTRACE_FORMAT_GO122};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s.trace", argv[1], i ? "go122" : "classic");
    ctrace_options o = {.format = formats[i]};
    uint64_t lost0 = lost();
    CHECK(ctrace_start_file(path, &o) == 0, "start %s", path);
    for (int k = 0; k < ROUNDS; k++) round_();
    CHECK(ctrace_stop() == 0, "stop %s", path);
    CHECK(lost() == lost0, "%s: %llu events lost", path, (unsigned long long)(lost() - lost0));
    if (formats[i] == CTRACE_FORMAT_GO122)
      check_current(path, ROUNDS, true);
    else
      check_classic(path, ROUNDS);
  }

  /* The flight recorder: each snapshot ends a generation. */
  uint64_t lost0 = lost();
  CHECK(ctrace_flight_start(NULL) == 0, "flight start");
  for (int n = 1; n <= 2; n++) {
    for (int k = 0; k < ROUNDS; k++) round_();
    snprintf(path, sizeof path, "%s/flight.%d.trace", argv[1], n);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open %s", path);
    CHECK(ctrace_flight_write(fd) == 0, "flight write %s", path);
    close(fd);
  }
  CHECK(ctrace_flight_stop() == 0, "flight stop");
  CHECK(lost() == lost0, "flight: %llu events lost", (unsigned long long)(lost() - lost0));
  for (int n = 1; n <= 2; n++) {
    snprintf(path, sizeof path, "%s/flight.%d.trace", argv[1], n);
    check_current(path, n * ROUNDS, true);
  }

  /* Runtime threads at once, each on its own P, in each format. */
  for (int k = 0; k < THREADS; k++) ctrace_go_create(&works[k], worker);
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s-threads.trace", argv[1], i ? "go122" : "classic");
    ctrace_options o = {.format = formats[i]};
    lost0 = lost();
    CHECK(ctrace_start_file(path, &o) == 0, "start %s", path);
    threads_();
    CHECK(ctrace_stop() == 0, "stop %s", path);
    CHECK(lost() == lost0, "%s: %llu events lost", path, (unsigned long long)(lost() - lost0));
    if (formats[i] == CTRACE_FORMAT_GO122)
      check_current(path, THREADS * THREAD_ROUNDS, false);
    else
      check_classic(path, THREADS * THREAD_ROUNDS);
  }
  return 0;
}
