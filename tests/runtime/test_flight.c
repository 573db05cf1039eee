/* test_flight.c - the flight recorder keeps the last min_age of events,
 * nothing much older, in bounded memory (tests/runtime/flight_check.sh).
 *
 *   test_flight DIR
 *
 * window: four threads log "seq N" (N from one counter, each log's time
 * noted before it and its completion after) while the main thread takes
 * a snapshot every 150 ms from 0.7 s on, 200 ms of min_age, 20 ms
 * generations (CTRACE_GEN_MS), and the default cap, which the window's
 * bytes never meet (its buffers, cut short, would). For each snapshot
 * DIR/snap.K.trace it writes
 * DIR/snap.K.req, the numbers of the logs completed before the call and
 * begun at least 1 ms inside min_age of its return, which the snapshot
 * must hold, and
 * DIR/snap.K.old, those begun more than min_age plus two generations
 * and 30 ms of slack before it, which it must not. Two more threads take
 * snapshots at once meanwhile: each gets 0 or CTRACE_EBUSY, never
 * anything else.
 *
 * The API's edges: a second start (flight or trace) while recording is
 * CTRACE_EBUSY, a snapshot or stop without a recorder CTRACE_ENOTRACE, a
 * classic format or a cap under 1 MiB CTRACE_EINVAL.
 *
 * cap: four threads log at full speed for FLIGHT_CAP_S seconds (default
 * 1.5; 30 in the plain build's test) under a 2 MiB cap: the
 * buffers the library maps (ctrace_stats.buffers, never given back
 * during a trace) never pass the cap, plus a generation's cut (a quarter
 * of it), plus what may queue for the recorder's thread (1 MiB here),
 * plus five buffers per thread (two generations' events and strings,
 * one queued past the queue's cap) and twelve for the tables of an
 * ending generation and a gap; generations younger than min_age (10 s)
 * are dropped and counted; and a snapshot then still opens
 * (DIR/cap.trace).
 *
 * cycles: eight threads log, walk 16-frame stacks into system calls, and
 * come and go (each ends after a few hundred events and another starts),
 * while the main thread starts a recorder, takes snapshots, stops it,
 * five times over, and another thread takes snapshots all along (0, or
 * CTRACE_EBUSY, or CTRACE_ENOTRACE between recorders, or CTRACE_EEMPTY
 * at a recorder's start). The last
 * snapshot of each recorder must be there (DIR/cycle.K.trace).
 *
 * gc: a thread runs GC cycles of 25 ms, each with a mark assist and a
 * stop-the-world inside, across 5 ms generations, with 20 ms of min_age:
 * snapshots (DIR/gc.K.trace) begin inside a GC or an assist, which must
 * be said there (GCActive, GCMarkAssistActive) for Go to read them.
 *
 * quiet: a streamed trace and a recorder that see nothing for their
 * first generations (5 ms each, 30 ms of silence), then one log: their
 * silent generations are left out, or Go refuses the trace ("frontier
 * is empty"): DIR/quiet.stream.trace, DIR/quiet.trace (a snapshot after
 * the log; one before it is CTRACE_EEMPTY, and writes nothing). A
 * streamed trace with no event at all is one generation stating an idle
 * P, for Go reads no trace without one: DIR/quiet.none.trace.
 *
 * sparse: one log a millisecond over 1 ms generations, 600 ms of them
 * under an 8 MiB cap with 400 ms of min_age: every generation ends its
 * few events' buffers short, and the recorder keeps their bytes, not
 * the buffers (a few KiB a generation, not 128), so the cap drops none
 * younger than min_age, and a snapshot (DIR/sparse.trace) holds every
 * log begun at least 1 ms inside min_age of its return (DIR/sparse.req).
 *
 * late: a snapshot taken by a thread the scheduler keeps waiting (one
 * CPU, SCHED_IDLE, beside a thread that spins there) over 1 ms
 * generations: while it waits for the generation it ended, the next
 * ones begin and are kept, after the time of its call. Its log, made
 * just before the call, is in DIR/late.trace.
 *
 * fork (with FLIGHT_FORK=1; the plain build's test: ASan's allocator is
 * not fork-safe with threads): the child of a recording process has no
 * recorder (a snapshot is CTRACE_ENOTRACE) and can start its own, whose
 * snapshot (DIR/fork.trace) holds the child's log. */
#include <ctrace/ctrace.h>

#include <errno.h>
#include <sched.h>
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

#define MAX_SEQ (1u << 22)
#define MIN_AGE_MS 200
#define GEN_MS 20

static uint64_t *began, *done; /* by seq: ns, 0 until then */
static _Atomic uint32_t seq;
static _Atomic uint32_t logged; /* logs returned */
static _Atomic bool stop_logging;
static int fails;

#define CHECK(c, ...)                     \
  do {                                    \
    if (!(c)) {                           \
      fprintf(stderr, "test_flight: ");   \
      fprintf(stderr, __VA_ARGS__);       \
      fprintf(stderr, "\n");              \
      fails++;                            \
    }                                     \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits (10 s at most) until an event was written since a count of
 * events0: on a loaded machine the threads a case has just made may not
 * have run yet when its first snapshot is due, and a snapshot of no
 * event is CTRACE_EEMPTY. */
static void await_events(uint64_t events0) {
  for (int i = 0; i < 10000; i++) {
    ctrace_stats st;
    ctrace_stats_get(&st);
    if (st.events > events0) return;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
}

static uint64_t events_now(void) {
  ctrace_stats st;
  ctrace_stats_get(&st);
  return st.events;
}

static void *logger(void *arg) {
  long pause_ns = (long)(intptr_t)arg;
  while (!atomic_load(&stop_logging)) {
    uint32_t i = atomic_fetch_add(&seq, 1);
    if (i < MAX_SEQ) __atomic_store_n(&began[i], now_ns(), __ATOMIC_RELEASE);
    ctrace_logf(0, "seq", "seq %u", i);
    atomic_fetch_add(&logged, 1);
    if (i < MAX_SEQ) __atomic_store_n(&done[i], now_ns(), __ATOMIC_RELEASE);
    if (pause_ns) nanosleep(&(struct timespec){0, pause_ns}, NULL);
  }
  return NULL;
}

static _Atomic int busy_count, racer_ok, early_empty;

static void *racer(void *arg) {
  const char *dir = arg;
  char path[4096];
  snprintf(path, sizeof path, "%s/race.%lu.trace", dir, (unsigned long)pthread_self() % 1000);
  while (!atomic_load(&stop_logging)) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) break;
    /* A snapshot before any log is of nothing (CTRACE_EEMPTY). */
    bool before_any = atomic_load(&logged) == 0;
    int err = ctrace_flight_write(fd);
    close(fd);
    if (err == CTRACE_EBUSY)
      atomic_fetch_add(&busy_count, 1);
    else if (err == CTRACE_EEMPTY && before_any)
      atomic_fetch_add(&early_empty, 1);
    else if (err == 0)
      atomic_fetch_add(&racer_ok, 1);
    else
      CHECK(0, "a racing snapshot: %s", ctrace_strerror(err));
    nanosleep(&(struct timespec){0, 3000000}, NULL);
  }
  unlink(path);
  return NULL;
}

/* The logs of the window of a snapshot taken between t and t_end: how
 * many it must hold (completed before t, begun inside min_age of t_end),
 * and, with req and old open, their numbers and those it must not hold
 * (older than min_age, and more, before t). */
static int window_logs(uint64_t t, uint64_t t_end, FILE *req, FILE *old) {
  uint32_t n = atomic_load(&seq);
  if (n > MAX_SEQ) n = MAX_SEQ;
  uint64_t need_from = t_end - (MIN_AGE_MS - 1) * 1000000ull;
  uint64_t too_old = t - (MIN_AGE_MS + 2 * GEN_MS + 30) * 1000000ull;
  int nreq = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t b = __atomic_load_n(&began[i], __ATOMIC_ACQUIRE);
    uint64_t d = __atomic_load_n(&done[i], __ATOMIC_ACQUIRE);
    if (d && d < t && b >= need_from) {
      nreq++;
      if (req) fprintf(req, "%u\n", i);
    }
    if (old && d && d < too_old) fprintf(old, "%u\n", i);
  }
  return nreq;
}

static void snapshot(const char *dir, int k) {
  char path[4096];
  snprintf(path, sizeof path, "%s/snap.%d.trace", dir, k);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    CHECK(0, "%s: %s", path, strerror(errno));
    return;
  }
  /* The window is the successful call's: a racer's snapshot in between
   * may drop what an earlier time would still need. The call takes its
   * time somewhere between t and t_end, which a loaded machine may set
   * milliseconds apart. A call that took more than 50 ms, or whose window
   * holds 50 logs or fewer (the loggers starved by a loaded machine),
   * leaves too little to check: it is made again. */
  uint64_t t, t_end;
  int err, nreq = 0;
  for (int tries = 0;; tries++) {
    while (t = now_ns(), (err = ctrace_flight_write(fd)) == CTRACE_EBUSY)
      nanosleep(&(struct timespec){0, 100000}, NULL);
    t_end = now_ns();
    if (err || tries == 100) break;
    if (t_end - t < 50000000u && (nreq = window_logs(t, t_end, NULL, NULL)) > 50) break;
    if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET)) break;
    nanosleep(&(struct timespec){0, 20000000}, NULL);
  }
  close(fd);
  CHECK(err == 0, "snapshot %d: %s", k, ctrace_strerror(err));
  snprintf(path, sizeof path, "%s/snap.%d.req", dir, k);
  FILE *req = fopen(path, "w");
  snprintf(path, sizeof path, "%s/snap.%d.old", dir, k);
  FILE *old = fopen(path, "w");
  if (!req || !old) {
    CHECK(0, "%s: %s", path, strerror(errno));
    return;
  }
  nreq = window_logs(t, t_end, req, old);
  fclose(req);
  fclose(old);
  CHECK(nreq > 50, "snapshot %d: only %d logs in the window after 100 tries", k, nreq);
}

static void api_edges(void) {
  ctrace_flight_options bad = {.max_bytes = 1000};
  CHECK(ctrace_flight_start(&bad) == CTRACE_EINVAL, "a cap under 1 MiB is refused");
  ctrace_options classic = {.format = CTRACE_FORMAT_GO111};
  CHECK(ctrace_flight_start(&(ctrace_flight_options){.trace = &classic}) == CTRACE_EINVAL,
        "the classic format is refused");
  CHECK(ctrace_flight_write(1) == CTRACE_ENOTRACE, "a snapshot without a recorder");
  CHECK(ctrace_flight_stop() == CTRACE_ENOTRACE, "a stop without a recorder");
}

static int window(const char *dir) {
  setenv("CTRACE_GEN_MS", "20", 1);
  atomic_store(&stop_logging, false);
  atomic_store(&seq, 0);
  atomic_store(&logged, 0);
  /* The racers end a generation every few milliseconds, which cuts the
   * loggers' buffers short: kept whole (64 KiB each, four threads' and
   * their strings'), they would pass the default 64 MiB cap in 200 ms on
   * a quick machine; their bytes take 0.4 MiB. The cap has its own case
   * (cap): here min_age is what decides. */
  ctrace_flight_options fo = {.min_age_ms = MIN_AGE_MS};
  int err = ctrace_flight_start(&fo);
  CHECK(err == 0, "ctrace_flight_start: %s", ctrace_strerror(err));
  if (err) return 1;
  CHECK(ctrace_flight_start(&fo) == CTRACE_EBUSY, "a second recorder is refused");
  CHECK(ctrace_start(NULL) == CTRACE_EBUSY, "a trace while recording is refused");
  pthread_t th[6];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, logger, (void *)(intptr_t)(50000 * (i + 1)));
  for (int i = 4; i < 6; i++) pthread_create(&th[i], NULL, racer, (void *)dir);
  /* The first generations run long (the reader symbolizes the first's
   * stacks meanwhile): the first snapshot comes once they are past
   * min_age and a generation. */
  nanosleep(&(struct timespec){0, 700000000}, NULL);
  for (int k = 0; k < 4; k++) {
    snapshot(dir, k);
    nanosleep(&(struct timespec){0, 150000000}, NULL);
  }
  atomic_store(&stop_logging, true);
  for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
  ctrace_flight_stats st;
  ctrace_flight_stats_get(&st);
  printf("window: %u logs, %llu generations kept spanning %.0f ms in %.1f MiB, %llu snapshots (%d by racers, "
         "%d busy, %d of nothing before the first log)\n",
         atomic_load(&seq), (unsigned long long)st.generations, st.window_ns / 1e6, st.bytes / 1048576.0,
         (unsigned long long)st.snapshots, atomic_load(&racer_ok), atomic_load(&busy_count),
         atomic_load(&early_empty));
  CHECK(st.snapshots >= 4, "snapshots counted: %llu", (unsigned long long)st.snapshots);
  CHECK(st.dropped_young == 0, "window: %llu generations dropped young at the cap",
        (unsigned long long)st.dropped_young);
  err = ctrace_flight_stop();
  CHECK(err == 0, "ctrace_flight_stop: %s", ctrace_strerror(err));
  ctrace_flight_stats_get(&st);
  CHECK(st.bytes == 0 && st.generations == 0, "stats after the stop are zeros");
  return 0;
}

static int cap(const char *dir) {
  size_t max = 2u << 20;
  ctrace_flight_options fo = {.max_bytes = max};
  ctrace_stats s0, s1;
  ctrace_stats_get(&s0);
  int err = ctrace_flight_start(&fo);
  CHECK(err == 0, "ctrace_flight_start (cap): %s", ctrace_strerror(err));
  if (err) return 1;
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, logger, NULL);
  const char *secs = getenv("FLIGHT_CAP_S");
  double cap_s = secs ? atof(secs) : 1.5;
  uint64_t peak = 0, end = now_ns() + (uint64_t)(cap_s * 1e9);
  ctrace_flight_stats st;
  while (now_ns() < end) {
    ctrace_flight_stats_get(&st);
    if (st.bytes > peak) peak = st.bytes;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  atomic_store(&stop_logging, true);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  ctrace_flight_stats_get(&st);
  ctrace_stats_get(&s1);
  uint64_t mapped = (s1.buffers - s0.buffers) * CTRACE_DEFAULT_BUFFER_SIZE;
  /* The kept generations (the cap), the one being handed out (tracing
   * pauses at four times its cut, a quarter of the cap: its end runs
   * late while four loggers keep the reader's thread from the CPU, and
   * it reached 2.4 MiB before that pause), the queue (max_pending,
   * 1 MiB). Each thread writes into two generations' buffers and
   * strings batches at once, and may queue one more as the queue passes
   * its cap; an ending generation and a gap take a few more (tables,
   * statuses, the frequency). */
  uint64_t allowed = max + max + (1u << 20) + (5 * 5 + 12) * CTRACE_DEFAULT_BUFFER_SIZE;
  char path[4096];
  snprintf(path, sizeof path, "%s/cap.trace", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  err = fd < 0 ? CTRACE_EIO : ctrace_flight_write(fd);
  if (fd >= 0) close(fd);
  CHECK(err == 0, "snapshot under the cap: %s", ctrace_strerror(err));
  printf("cap: %u logs, %.2f MiB of buffers mapped (%.2f MiB allowed), peak %.2f MiB held by the "
         "recorder under a %zu MiB cap, %llu generations dropped young, %llu gaps\n",
         atomic_load(&seq), mapped / 1048576.0, allowed / 1048576.0, peak / 1048576.0, max >> 20,
         (unsigned long long)st.dropped_young, (unsigned long long)(s1.capped - s0.capped));
  CHECK(mapped <= allowed, "%llu bytes of buffers mapped, over the cap and its allowance",
        (unsigned long long)mapped);
  CHECK(st.dropped_young > 0, "the cap dropped no generation younger than min_age");
  ctrace_flight_stop();
  return 0;
}

/* 16 frames down, then a system call (a stack of 16 to record). */
__attribute__((noinline)) static void deep(int n) {
  if (n > 0) {
    deep(n - 1);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return;
  }
  ctrace_go_syscall();
}

static void *churner(void *arg) {
  (void)arg;
  for (int i = 0; i < 300 && !atomic_load(&stop_logging); i++) {
    ctrace_logf(0, "cycle", "event %d", i);
    deep(16);
  }
  return NULL;
}

static void *churn_slot(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_logging)) {
    pthread_t t;
    if (pthread_create(&t, NULL, churner, NULL) == 0) pthread_join(t, NULL);
  }
  return NULL;
}

static void *snapper(void *arg) {
  (void)arg;
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  while (!atomic_load(&stop_logging)) {
    int err = ctrace_flight_write(fd);
    /* CTRACE_EEMPTY: a recorder just started, before any event. */
    CHECK(err == 0 || err == CTRACE_EBUSY || err == CTRACE_ENOTRACE || err == CTRACE_EEMPTY,
          "a snapshot between cycles: %s",
          ctrace_strerror(err));
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  close(fd);
  return NULL;
}

static void cycles(const char *dir) {
  setenv("CTRACE_GEN_MS", "30", 1);
  atomic_store(&stop_logging, false);
  pthread_t th[9];
  for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, churn_slot, NULL);
  pthread_create(&th[8], NULL, snapper, NULL);
  for (int k = 0; k < 5; k++) {
    ctrace_flight_options fo = {.min_age_ms = 100, .max_bytes = 8u << 20};
    uint64_t e0 = events_now();
    int err = ctrace_flight_start(&fo);
    CHECK(err == 0, "cycle %d: ctrace_flight_start: %s", k, ctrace_strerror(err));
    for (int s = 0; s < 4; s++) {
      nanosleep(&(struct timespec){0, 40000000}, NULL);
      if (!s) await_events(e0);
      char path[4096];
      snprintf(path, sizeof path, "%s/cycle.%d.trace", dir, k);
      int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      while ((err = ctrace_flight_write(fd)) == CTRACE_EBUSY) nanosleep(&(struct timespec){0, 100000}, NULL);
      close(fd);
      CHECK(err == 0, "cycle %d: snapshot: %s", k, ctrace_strerror(err));
    }
    err = ctrace_flight_stop();
    CHECK(err == 0, "cycle %d: ctrace_flight_stop: %s", k, ctrace_strerror(err));
  }
  atomic_store(&stop_logging, true);
  for (int i = 0; i < 9; i++) pthread_join(th[i], NULL);
  printf("cycles: 5 recorders started and stopped, 4 snapshots each, while 8 threads came and went\n");
}

static void *collector(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_logging)) {
    ctrace_gc_start();
    nanosleep(&(struct timespec){0, 7000000}, NULL);
    ctrace_gc_mark_assist_start();
    nanosleep(&(struct timespec){0, 7000000}, NULL);
    ctrace_gc_mark_assist_done();
    ctrace_gc_stw_start(0);
    nanosleep(&(struct timespec){0, 1000000}, NULL);
    ctrace_gc_stw_done();
    nanosleep(&(struct timespec){0, 10000000}, NULL);
    ctrace_gc_done();
    ctrace_log(0, "gc", "cycle");
  }
  return NULL;
}

static void gc(const char *dir) {
  setenv("CTRACE_GEN_MS", "5", 1);
  atomic_store(&stop_logging, false);
  ctrace_flight_options fo = {.min_age_ms = 20};
  uint64_t e0 = events_now();
  int err = ctrace_flight_start(&fo);
  CHECK(err == 0, "gc: ctrace_flight_start: %s", ctrace_strerror(err));
  if (err) return;
  pthread_t th;
  pthread_create(&th, NULL, collector, NULL);
  for (int k = 0; k < 12; k++) {
    /* 13 ms apart: the snapshots fall all over the GC's 25 ms. */
    nanosleep(&(struct timespec){0, 13000000}, NULL);
    if (!k) await_events(e0);
    char path[4096];
    snprintf(path, sizeof path, "%s/gc.%d.trace", dir, k);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    err = ctrace_flight_write(fd);
    close(fd);
    CHECK(err == 0, "gc: snapshot %d: %s", k, ctrace_strerror(err));
  }
  atomic_store(&stop_logging, true);
  pthread_join(th, NULL);
  ctrace_flight_stop();
  printf("gc: 12 snapshots amid GC cycles across 5 ms generations\n");
}

/* Stops the world for 20 ms, four 5 ms generations, three times, while
 * another thread logs. */
static void *stopper(void *arg) {
  (void)arg;
  for (int k = 0; k < 3; k++) {
    ctrace_gc_stw_start(k & 1);
    nanosleep(&(struct timespec){0, 20000000}, NULL);
    ctrace_gc_stw_done();
    nanosleep(&(struct timespec){0, 7000000}, NULL);
  }
  return NULL;
}

static void *ticker(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_logging)) {
    ctrace_log(0, "stw", "tick");
    nanosleep(&(struct timespec){0, 200000}, NULL);
  }
  return NULL;
}

static int create(const char *dir, const char *name);

/* Stop-the-worlds longer than a generation: none is cut by one (Go has
 * no event to say one goes on), streamed or in a recorder whose window
 * is shorter than they are, so that a snapshot taken in one begins
 * after it began unless the generation waits. stw.stream.trace holds the
 * three whole (flight_check.sh counts them), and nothing was lost. */
static void stw(const char *dir) {
  setenv("CTRACE_GEN_MS", "5", 1);
  for (int rec = 0; rec < 2; rec++) {
    atomic_store(&stop_logging, false);
    ctrace_stats before;
    ctrace_stats_get(&before);
    int fd = -1, err;
    if (rec) {
      ctrace_flight_options fo = {.min_age_ms = 1};
      err = ctrace_flight_start(&fo);
    } else {
      ctrace_options o = {.format = CTRACE_FORMAT_GO122};
      fd = create(dir, "stw.stream.trace");
      err = ctrace_start_fd(fd, &o);
    }
    CHECK(err == 0, "stw: start: %s", ctrace_strerror(err));
    if (err) return;
    pthread_t th[2];
    pthread_create(&th[0], NULL, ticker, NULL);
    pthread_create(&th[1], NULL, stopper, NULL);
    for (int k = 0; rec && k < 3; k++) {
      /* 12 ms into each: the window is the last generation, which began
       * after the stop-the-world did had it been cut on time. */
      nanosleep(&(struct timespec){0, k ? 27000000 : 12000000}, NULL);
      if (!k) await_events(before.events);
      char name[64];
      snprintf(name, sizeof name, "stw.%d.trace", k);
      int sfd = create(dir, name);
      err = ctrace_flight_write(sfd);
      close(sfd);
      CHECK(err == 0, "stw: snapshot %d: %s", k, ctrace_strerror(err));
    }
    pthread_join(th[1], NULL);
    atomic_store(&stop_logging, true);
    pthread_join(th[0], NULL);
    err = rec ? ctrace_flight_stop() : ctrace_stop();
    if (fd >= 0) close(fd);
    CHECK(err == 0, "stw: stop: %s", ctrace_strerror(err));
    ctrace_stats after;
    ctrace_stats_get(&after);
    CHECK(after.lost == before.lost, "stw: %llu events lost",
          (unsigned long long)(after.lost - before.lost));
  }
  printf("stw: 20 ms stop-the-worlds over 5 ms generations, streamed and in 3 snapshots\n");
}

static int create(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "%s: %s", path, strerror(errno));
  return fd;
}

/* A thread of its own, whose G ends with it: the next case's first
 * generation has no G to state. */
static void *hear(void *arg) {
  (void)arg;
  ctrace_log(0, "quiet", "heard");
  return NULL;
}

static void heard(void) {
  pthread_t th;
  pthread_create(&th, NULL, hear, NULL);
  pthread_join(th, NULL);
}

static void quiet(const char *dir) {
  setenv("CTRACE_GEN_MS", "5", 1);
  const struct timespec silence = {0, 30000000};
  ctrace_options o = {.format = CTRACE_FORMAT_GO122};
  int fd = create(dir, "quiet.stream.trace");
  int err = ctrace_start_fd(fd, &o);
  CHECK(err == 0, "quiet: ctrace_start_fd: %s", ctrace_strerror(err));
  if (err) return;
  nanosleep(&silence, NULL);
  heard();
  err = ctrace_stop();
  close(fd);
  CHECK(err == 0, "quiet: ctrace_stop: %s", ctrace_strerror(err));
  /* Not one event, over generations cut meanwhile: still a trace Go
   * reads (flight_check.sh), which needs a generation. */
  fd = create(dir, "quiet.none.trace");
  err = ctrace_start_fd(fd, &o);
  if (!err) {
    nanosleep(&silence, NULL);
    err = ctrace_stop();
  }
  close(fd);
  CHECK(err == 0, "quiet: the trace of nothing: %s", ctrace_strerror(err));
  err = ctrace_flight_start(NULL);
  CHECK(err == 0, "quiet: ctrace_flight_start: %s", ctrace_strerror(err));
  if (err) return;
  nanosleep(&silence, NULL);
  for (int k = 0; k < 2; k++) {
    if (k) heard();
    fd = create(dir, "quiet.trace");
    err = ctrace_flight_write(fd);
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    /* Not one event in a snapshot of nothing, which Go would not read. */
    int want = k ? 0 : CTRACE_EEMPTY;
    CHECK(err == want, "quiet: snapshot %d: %s, not %s", k, ctrace_strerror(err), ctrace_strerror(want));
    CHECK(k || size == 0, "quiet: the snapshot of nothing wrote %lld bytes", (long long)size);
  }
  ctrace_flight_stop();
  printf("quiet: a trace and a snapshot of a log after 30 ms of silence, a trace and a snapshot of nothing\n");
}

static void sparse(const char *dir) {
  setenv("CTRACE_GEN_MS", "1", 1);
  ctrace_flight_options fo = {.min_age_ms = 400, .max_bytes = 8u << 20};
  int err = ctrace_flight_start(&fo);
  CHECK(err == 0, "sparse: ctrace_flight_start: %s", ctrace_strerror(err));
  if (err) return;
  int logs = 0;
  for (uint64_t end = now_ns() + 600000000; now_ns() < end && logs < (int)MAX_SEQ; logs++) {
    began[logs] = now_ns();
    ctrace_logf(0, "sparse", "seq %d", logs);
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  ctrace_flight_stats st;
  ctrace_flight_stats_get(&st);
  int fd = create(dir, "sparse.trace");
  err = ctrace_flight_write(fd);
  uint64_t ret = now_ns();
  close(fd);
  CHECK(err == 0, "sparse: the snapshot: %s", ctrace_strerror(err));
  /* The logs begun at least 1 ms inside min_age of the return, which the
   * snapshot holds (flight_check.sh): their generations ended after them,
   * and the call trimmed for its own time, before the return (a loaded
   * machine may make it much later than the moment before the call). */
  fd = create(dir, "sparse.req");
  FILE *req = fd < 0 ? NULL : fdopen(fd, "w");
  for (int k = 0; req && k < logs; k++)
    if (began[k] > ret - fo.min_age_ms * 1000000 + 1000000) fprintf(req, "%d\n", k);
  if (req) fclose(req);
  printf("sparse: %d logs, %llu generations kept in %.2f MiB (%.1f KiB each), %llu dropped young\n", logs,
         (unsigned long long)st.generations, st.bytes / 1048576.0,
         st.generations ? st.bytes / 1024.0 / (double)st.generations : 0.0, (unsigned long long)st.dropped_young);
  CHECK(st.dropped_young == 0, "sparse: the cap dropped %llu generations younger than min_age",
        (unsigned long long)st.dropped_young);
  ctrace_flight_stop();
}

static _Atomic bool late_done;

static void *late_spin(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&late_done, memory_order_relaxed)) {
  }
  return NULL;
}

static void *late_snapshot(void *arg) {
  const char *dir = arg;
  struct sched_param sp = {0};
  CHECK(pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0, "late: SCHED_IDLE");
  ctrace_log(0, "late", "asked");
  int fd = create(dir, "late.trace");
  int err = ctrace_flight_write(fd);
  close(fd);
  CHECK(err == 0, "late: the snapshot: %s", ctrace_strerror(err));
  return NULL;
}

static void late(const char *dir) {
  setenv("CTRACE_GEN_MS", "1", 1);
  cpu_set_t all, one;
  CHECK(sched_getaffinity(0, sizeof all, &all) == 0, "late: sched_getaffinity");
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  /* The threads made from here on, the recorder's too, share one CPU. */
  sched_setaffinity(0, sizeof one, &one);
  int err = ctrace_flight_start(NULL);
  CHECK(err == 0, "late: ctrace_flight_start: %s", ctrace_strerror(err));
  if (!err) {
    atomic_store(&late_done, false);
    pthread_t spinner, snapper;
    pthread_create(&spinner, NULL, late_spin, NULL);
    pthread_create(&snapper, NULL, late_snapshot, (void *)dir);
    pthread_join(snapper, NULL);
    atomic_store(&late_done, true);
    pthread_join(spinner, NULL);
    ctrace_flight_stop();
  }
  sched_setaffinity(0, sizeof all, &all);
  printf("late: a snapshot the scheduler kept waiting over 1 ms generations\n");
}

static void fork_case(const char *dir) {
  ctrace_flight_start(NULL);
  ctrace_log(0, "fork", "parent");
  pid_t pid = fork();
  if (pid == 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fork.trace", dir);
    int bad = ctrace_flight_write(1) != CTRACE_ENOTRACE;
    bad |= (ctrace_flight_start(NULL) != 0) << 1;
    ctrace_log(0, "fork", "child");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    bad |= (ctrace_flight_write(fd) != 0) << 2;
    close(fd);
    bad |= (ctrace_flight_stop() != 0) << 3;
    _exit(bad);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "fork: the child's recorder (status %#x: 1 no ENOTRACE, 2 start, 4 snapshot, 8 stop)", status);
  CHECK(ctrace_flight_stop() == 0, "fork: the parent's stop");
  printf("fork: the child started a recorder of its own\n");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_flight DIR\n");
    return 2;
  }
  began = calloc(MAX_SEQ, sizeof *began);
  done = calloc(MAX_SEQ, sizeof *done);
  if (!began || !done) return 1;
  api_edges();
  cap(argv[1]); /* first: no buffer of an earlier trace in the pool */
  memset(began, 0, MAX_SEQ * sizeof *began);
  memset(done, 0, MAX_SEQ * sizeof *done);
  window(argv[1]);
  cycles(argv[1]);
  gc(argv[1]);
  stw(argv[1]);
  quiet(argv[1]);
  sparse(argv[1]);
  late(argv[1]);
  if (getenv("FLIGHT_FORK")) fork_case(argv[1]);
  if (fails) fprintf(stderr, "test_flight: %d failures\n", fails);
  return fails ? 1 : 0;
}
