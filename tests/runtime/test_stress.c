/* test_stress.c - start/stop cycles while many threads emit events.
 *
 *   test_stress DIR
 *
 * NUM_SLOTS worker threads emit a mix of events without pause (logs with a
 * category, nested regions, tasks, GoBlockSync + resume cycles, system
 * calls, heap sizes). Each worker lives a few milliseconds and then exits
 * (its thread's exit hands its buffer over); a spawner thread joins it and
 * starts a new one in its slot, so threads come and go during the traces.
 * Meanwhile the main thread runs NUM_CYCLES start/stop cycles: start, a
 * reader thread writing DIR/trace-NNN.trace, 1-2.5 ms of tracing, stop.
 *
 * For each cycle it records ctrace_stats_get().events before start and
 * after stop; the difference is the number of events in that trace, which
 * goes to DIR/counts.txt as "NNN COUNT" (tests/runtime/stress_check.sh compares it
 * with what `go tool trace -d` prints). The program fails if any event was
 * lost or a string truncated, if events are counted while tracing is off,
 * if a trace file's size differs from the bytes handed to its reader, or if
 * any control call fails.
 *
 * The mix avoids what Go's reader drops from its -d output: futile wakeups
 * (no CTRACE_BLOCK_FUTILE) and timer goroutines.
 *
 * The work scales itself: cycles and worker lives are measured in time,
 * so a slower (sanitized) build simply writes fewer events per trace and
 * still runs all 100 cycles. CTRACE_TSAN (defined by the TSan build) only
 * lengthens worker lives, because thread creation is expensive there.
 * While tracing is off the workers yield after each operation: they still
 * run the mix, exit and start, but no longer starve ctrace_stop's own work
 * (symbolizing the stacks) of the CPU: on two cores, eight spinning
 * workers made a cycle take 200 ms, not 50. A cycle traces for 1-2.5 ms:
 * what it races is its start and its stop, and Go's readers, three of
 * them on every trace, take their time by the event.
 * STRESS_CYCLES overrides the cycle count (for debugging; the test uses
 * the default).
 *
 * STRESS_GAPS=1 (with CTRACE_FORMAT=go1.22) holds the reader to 64 KiB
 * every 4 ms under a max_pending of 1 MiB, and traces 150 ms a cycle:
 * each trace pauses at the cap and goes on, again and again, in the
 * middle of the mix (tests/runtime/stress_go122.sh). ctrace_stop may then say
 * CTRACE_ECAPPED, and the run fails if no trace had a gap.
 */
#include <ctrace/ctrace.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
  NUM_SLOTS = 8,    /* workers alive at any time */
  NUM_CYCLES = 100, /* start/stop cycles */
  CYCLE_MIN_US = 1000,
  CYCLE_MAX_US = 2500,
  SPIN = 400,       /* xorshift rounds of work after each operation */
};

#ifdef CTRACE_TSAN
enum { LIFE_MIN_US = 3000, LIFE_MAX_US = 20000 };
#else
enum { LIFE_MIN_US = 1000, LIFE_MAX_US = 8000 };
#endif

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "test_stress: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      exit(1);                                            \
    }                                                     \
  } while (0)

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* ---- workers ---------------------------------------------------------- */

typedef struct slot {
  pthread_t thread;
  ctrace_g *g;        /* from ctrace_thread_create, adopted by the worker */
  int running;        /* a thread occupies the slot (spawner only) */
  atomic_int done;    /* the worker has returned and may be joined */
  uint64_t seed;
  uint64_t ops;       /* operations the last worker did (read after join) */
} slot;

static slot slots[NUM_SLOTS];
static atomic_int quit;             /* workers and spawner: stop now */
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_counter;     /* under shared_mu */
static const char *const categories[] = {"alpha", "beta", "gamma", "delta"};

/* One operation of the mix. Every region opened here is closed here, so
 * regions nest properly on each G. */
static void one_op(uint64_t *seed, uint64_t n) {
  uint64_t r = xorshift(seed);
  const char *cat = categories[(r >> 8) & 3];
  switch (r % 8) {
  case 0:
    ctrace_log(0, cat, "plain log message");
    break;
  case 1:
    ctrace_logf(0, cat, "formatted log %llu", (unsigned long long)n);
    break;
  case 2:
    ctrace_region_begin(0, "outer");
    ctrace_log(0, cat, "inside outer");
    ctrace_region_begin(0, "inner");
    ctrace_heap_alloc(r & 0xffffff);
    ctrace_region_end(0, "inner");
    ctrace_region_end(0, "outer");
    break;
  case 3: {
    uint64_t parent = ctrace_task_create(0, "stress-task");
    uint64_t child = ctrace_task_create(parent, "stress-subtask");
    ctrace_region_begin(child, "in-task");
    ctrace_logf(child, cat, "task %llu", (unsigned long long)child);
    ctrace_region_end(child, "in-task");
    ctrace_task_end(child);
    ctrace_task_end(parent);
    break;
  }
  case 4:
    /* A (possibly real) wait on a lock: the G blocks, then resumes. */
    ctrace_go_block(CTRACE_BLOCK_SYNC);
    pthread_mutex_lock(&shared_mu);
    shared_counter++;
    pthread_mutex_unlock(&shared_mu);
    ctrace_thread_resume();
    break;
  case 5:
    ctrace_go_syscall();
    (void)getppid();
    break;
  case 6:
    ctrace_heap_alloc((r >> 16) & 0xfffffff);
    break;
  default:
    ctrace_region_begin(0, "busy");
    for (int i = 0; i < 50; i++) (void)xorshift(seed);
    ctrace_region_end(0, "busy");
    break;
  }
}

static void *worker_main(void *arg) {
  slot *s = arg;
  if (s->g) ctrace_thread_begin(s->g);
  uint64_t seed = s->seed | 1;
  uint64_t life = LIFE_MIN_US + xorshift(&seed) % (LIFE_MAX_US - LIFE_MIN_US);
  uint64_t end = now_us() + life;
  uint64_t n = 0;
  while (!atomic_load_explicit(&quit, memory_order_relaxed)) {
    one_op(&seed, n++);
    /* Some work between operations keeps the traces at a size that
     * `go tool trace -d` reads quickly (about ten thousand events). */
    for (int i = 0; i < SPIN; i++) (void)xorshift(&seed);
    if (!ctrace_enabled()) sched_yield();
    if ((n & 15) == 0 && now_us() >= end) break;
  }
  s->ops = n;
  atomic_store_explicit(&s->done, 1, memory_order_release);
  return NULL; /* thread exit: the G ends, the buffer is handed over */
}

/* Spawner statistics, read by main after joining the spawner. */
static uint64_t spawned, joined, total_ops;

static void spawn(slot *s) {
  atomic_store_explicit(&s->done, 0, memory_order_relaxed);
  s->seed = 0x9E3779B97F4A7C15u * (spawned + 1);
  s->g = ctrace_thread_create((void (*)(void))worker_main);
  int err = pthread_create(&s->thread, NULL, worker_main, s);
  CHECK(err == 0, "pthread_create: %s", strerror(err));
  s->running = 1;
  spawned++;
}

static void join_slot(slot *s) {
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  int err = pthread_join(s->thread, NULL);
  ctrace_thread_resume();
  CHECK(err == 0, "pthread_join: %s", strerror(err));
  s->running = 0;
  total_ops += s->ops;
  joined++;
}

/* Keeps NUM_SLOTS workers alive until quit. */
static void *spawner_main(void *arg) {
  (void)arg;
  for (int i = 0; i < NUM_SLOTS; i++) spawn(&slots[i]);
  while (!atomic_load(&quit)) {
    for (int i = 0; i < NUM_SLOTS; i++) {
      slot *s = &slots[i];
      if (atomic_load_explicit(&s->done, memory_order_acquire) && !atomic_load(&quit)) {
        join_slot(s);
        spawn(s);
      }
    }
    ctrace_go_block(CTRACE_BLOCK_SLEEP);
    sleep_us(200);
    ctrace_thread_resume();
  }
  for (int i = 0; i < NUM_SLOTS; i++)
    if (slots[i].running) join_slot(&slots[i]);
  return NULL;
}

/* ---- the reader --------------------------------------------------------- */

typedef struct reader {
  pthread_t thread;
  char path[4096];
  uint64_t bytes;
  int err; /* 0 or an errno value */
} reader;

static bool gaps; /* STRESS_GAPS */

static void *reader_main(void *arg) {
  reader *r = arg;
  FILE *f = fopen(r->path, "wb");
  if (!f) r->err = errno;
  for (;;) {
    size_t len;
    const void *p = ctrace_read(&len);
    if (!p) break;
    if (f && fwrite(p, 1, len, f) != len && !r->err) r->err = errno ? errno : EIO;
    r->bytes += len;
    if (gaps) sleep_us(len * 4000 / 65536);
  }
  if (f && fclose(f) != 0 && !r->err) r->err = errno;
  return NULL;
}

/* ---- main ----------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  int cycles = NUM_CYCLES;
  const char *env = getenv("STRESS_CYCLES");
  if (env && atoi(env) > 0) cycles = atoi(env);
  gaps = getenv("STRESS_GAPS") && atoi(getenv("STRESS_GAPS"));
  ctrace_options opts = {0};
  if (gaps) opts.max_pending = 1 << 20;

  if (mkdir(dir, 0777) != 0) CHECK(errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
  char path[4096];
  snprintf(path, sizeof path, "%s/counts.txt", dir);
  FILE *counts = fopen(path, "w");
  CHECK(counts, "cannot create %s: %s", path, strerror(errno));

  pthread_t spawner;
  CHECK(pthread_create(&spawner, NULL, spawner_main, NULL) == 0, "pthread_create spawner");
  sleep_us(2000); /* let the workers get going */

  uint64_t seed = 0xC0FFEE;
  uint64_t t0 = now_us(), total_events = 0, total_bytes = 0, prev_after = 0;
  for (int c = 0; c < cycles; c++) {
    ctrace_stats before, after;
    ctrace_stats_get(&before);
    CHECK(c == 0 || before.events == prev_after,
          "cycle %03d: %llu events counted while tracing was off", c,
          (unsigned long long)(before.events - prev_after));

    int rc = ctrace_start(&opts);
    CHECK(rc == 0, "cycle %03d: ctrace_start: %s", c, ctrace_strerror(rc));
    CHECK(ctrace_enabled(), "cycle %03d: not enabled after start", c);
    /* A second start must be refused while tracing is on. */
    rc = ctrace_start(NULL);
    CHECK(rc == CTRACE_EBUSY, "cycle %03d: second ctrace_start gave %d", c, rc);

    static reader rd;
    memset(&rd, 0, sizeof rd);
    snprintf(rd.path, sizeof rd.path, "%s/trace-%03d.trace", dir, c);
    CHECK(pthread_create(&rd.thread, NULL, reader_main, &rd) == 0, "pthread_create reader");

    ctrace_logf(0, "cycle", "cycle %d", c);
    sleep_us(gaps ? 150000 : CYCLE_MIN_US + xorshift(&seed) % (CYCLE_MAX_US - CYCLE_MIN_US + 1));

    rc = ctrace_stop();
    CHECK(rc == 0 || (gaps && rc == CTRACE_ECAPPED), "cycle %03d: ctrace_stop: %s", c,
          ctrace_strerror(rc));
    CHECK(!ctrace_enabled(), "cycle %03d: enabled after stop", c);
    CHECK(pthread_join(rd.thread, NULL) == 0, "pthread_join reader");
    CHECK(rd.err == 0, "cycle %03d: writing %s: %s", c, rd.path, strerror(rd.err));
    ctrace_stats_get(&after);

    uint64_t n = after.events - before.events;
    CHECK(n > 0, "cycle %03d: no events", c);
    CHECK(after.bytes - before.bytes == rd.bytes,
          "cycle %03d: %llu bytes handed out, reader got %llu", c,
          (unsigned long long)(after.bytes - before.bytes), (unsigned long long)rd.bytes);
    struct stat st;
    CHECK(stat(rd.path, &st) == 0 && (uint64_t)st.st_size == rd.bytes,
          "cycle %03d: %s has the wrong size", c, rd.path);
    fprintf(counts, "%03d %llu\n", c, (unsigned long long)n);
    total_events += n;
    total_bytes += rd.bytes;
    prev_after = after.events;

    /* A little time with tracing off: threads exit and start meanwhile. */
    sleep_us(xorshift(&seed) % 1000);
  }
  uint64_t elapsed = now_us() - t0;

  atomic_store(&quit, 1);
  CHECK(pthread_join(spawner, NULL) == 0, "pthread_join spawner");
  CHECK(fclose(counts) == 0, "closing counts.txt: %s", strerror(errno));

  ctrace_stats st;
  ctrace_stats_get(&st);
  printf("test_stress: %d cycles in %.2f s: %llu events, %llu bytes, %llu buffers; "
         "%llu worker threads started, %llu joined, %llu operations\n",
         cycles, (double)elapsed / 1e6, (unsigned long long)total_events,
         (unsigned long long)total_bytes, (unsigned long long)st.buffers,
         (unsigned long long)spawned, (unsigned long long)joined,
         (unsigned long long)total_ops);
  CHECK(st.events == prev_after, "%llu events counted after the last stop",
        (unsigned long long)(st.events - prev_after));
  CHECK(st.lost == 0, "%llu events lost", (unsigned long long)st.lost);
  CHECK(st.truncated == 0, "%llu strings truncated", (unsigned long long)st.truncated);
  CHECK(joined == spawned, "spawned %llu threads, joined %llu", (unsigned long long)spawned,
        (unsigned long long)joined);
  CHECK(spawned > NUM_SLOTS, "no worker thread was replaced (%llu started)",
        (unsigned long long)spawned);
  if (gaps) {
    CHECK(st.capped > 0, "no trace met the cap");
    printf("test_stress: %llu gaps, %.2f s not traced\n", (unsigned long long)st.capped,
           (double)st.gap_ns / 1e9);
  }
  return 0;
}
