/* Reading a Go 1.22+ trace ahead on a second thread.
 *
 * The analyses and exporters spend about half their time in the reader
 * (decoding, Go's ordering, the public event) and half in what they do
 * with each event; one after the other, a two-core machine leaves a core
 * idle. Here a thread runs the reader (g2_read in reader.c, with its
 * check accounting) into chunks of events, and ctrace_reader_next hands
 * them out on the caller's thread in the same order.
 *
 * An event points into its generation's tables (frames, strings), which
 * the reader frees when it reads the next generation; callers may also
 * look up the current generation's strings and stacks between reads
 * (ctrace_reader_string, _stack). So before a generation is read (the
 * g2 reader's before_gen hook) the reading thread waits until the caller
 * has given back every chunk: it has asked for the event after the last
 * one of the old generation, which is when a reader without this thread
 * reads the next generation too. Within a generation the reading thread
 * writes nothing the caller reads: its tables are complete once read
 * (only the stack cache changes, which lookups from outside do not use).
 *
 * Chunks of 256 events, 8 of them (400 KB): the threads meet once a chunk,
 * not once an event. They meet without a lock: two counters, chunks
 * handed over and chunks given back, each written by one thread alone.
 * A thread that finds the ring empty (the caller) or full (the reader)
 * spins a while before it sleeps on a condition variable. The two go at
 * about the same pace, so the wait is short; a sleep costs more than it
 * saves here: on the 2-vCPU guest of BENCHMARKS.md the reader woken
 * from one ran its next events 1.6 times slower (caches and predictors
 * cold), and the wake-ups (a futex, an IPI) took a tenth of stats' time.
 * The reading thread calls nothing of the caller's: the caller shows the
 * progress each chunk carries. Used where the process may run on two
 * CPUs (reader.c's ahead_wanted). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

#define AHEAD_CHUNK 256
#define AHEAD_NCHUNKS 8
/* A wait spins first: AHEAD_PAUSES pause instructions (tens of
 * microseconds, what a chunk takes either thread), then yields the CPU
 * up to AHEAD_SPINS times in all, then sleeps. The yields are for the
 * exporter, whose deflating threads share the two CPUs with these two:
 * pauses alone kept them off a CPU (the export took 1.6 times as long). */
#define AHEAD_PAUSES 256
#define AHEAD_SPINS 1000

/* Each part of what the two threads hold on a cache line of its own:
 * the caller writes pos on every event, and the reading thread reads its
 * own fields on every event; on one line, that line crossed between the
 * two cores twice an event (stats took 4 times the CPU, and twice the
 * wall time, of one thread alone). */
#define LINE 64

typedef struct chunk {
  ctrace_event ev[AHEAD_CHUNK];
  uint64_t off; /* how far the reader had read the file: the progress shown */
  uint32_t n;
  bool end; /* the last: the reader ended (0) or failed after ev[n - 1] */
} __attribute__((aligned(LINE))) chunk;

struct ctrace__ahead {
  ctrace_reader *r;
  pthread_t thread;
  chunk *chunks;
  /* Chunks handed over by the reading thread, and given back by the
   * caller: put - got are the caller's (the one it reads included). */
  _Alignas(LINE) _Atomic uint64_t put;
  _Alignas(LINE) _Atomic uint64_t got;
  /* The sleeps. A thread about to sleep says so under mu (caller_asleep;
   * reader_asleep_above, the most the reader waits to see put - got come
   * down to, -1 when awake), then checks the counters again; the other
   * writes its counter, then reads the flag, and wakes it under mu. Both
   * sequentially consistent: one of the two sees the other's store. */
  _Alignas(LINE) pthread_mutex_t mu;
  pthread_cond_t more, room; /* the caller waits for more, the reader for room */
  _Atomic bool caller_asleep, stop;
  _Atomic int64_t reader_asleep_above;
  int spins; /* AHEAD_SPINS, or 0 (CTRACE_READ_AHEAD=sleep: tests of the sleeps) */
  /* The reading thread's: the chunk it fills, and whether before_gen
   * handed it over with the event being read not in it yet. */
  _Alignas(LINE) uint32_t wi;
  bool moved;
  /* The caller's: the chunk it reads (ri, at pos, held or not), and
   * the chunks it took, for the progress it shows. */
  _Alignas(LINE) uint32_t ri, pos;
  bool held, done;
  uint64_t taken;
};

static void relax(int i) {
  if (i < AHEAD_PAUSES)
    __builtin_ia32_pause();
  else
    sched_yield();
}

static inline uint64_t load(_Atomic uint64_t *x) { return atomic_load_explicit(x, memory_order_acquire); }

/* The reading thread: until at most most chunks are the caller's (or the
 * caller asked it to stop: false). */
static bool wait_room(struct ctrace__ahead *a, uint64_t most) {
  uint64_t put = atomic_load_explicit(&a->put, memory_order_relaxed);
  for (int i = 0; i < a->spins && put - load(&a->got) > most; i++) relax(i);
  if (put - load(&a->got) > most) {
    pthread_mutex_lock(&a->mu);
    atomic_store(&a->reader_asleep_above, (int64_t)most);
    while (put - atomic_load(&a->got) > most && !atomic_load(&a->stop)) pthread_cond_wait(&a->room, &a->mu);
    atomic_store(&a->reader_asleep_above, -1);
    pthread_mutex_unlock(&a->mu);
  }
  return !atomic_load_explicit(&a->stop, memory_order_relaxed);
}

/* The reading thread: the chunk wi to the caller; then, unless it was
 * the last, waits for room for the next. False if the caller asked to
 * stop, or that was the last. */
static bool hand_over(struct ctrace__ahead *a) {
  chunk *c = &a->chunks[a->wi];
  c->off = a->r->g2->off;
  bool last = c->end;
  atomic_fetch_add(&a->put, 1);
  if (atomic_load(&a->caller_asleep)) {
    pthread_mutex_lock(&a->mu);
    pthread_cond_signal(&a->more);
    pthread_mutex_unlock(&a->mu);
  }
  if (last || !wait_room(a, AHEAD_NCHUNKS - 1)) return false;
  a->wi = (a->wi + 1) % AHEAD_NCHUNKS;
  a->chunks[a->wi].n = 0;
  a->chunks[a->wi].end = false;
  return true;
}

/* Before the reader reads a generation (it frees the last one's tables):
 * what was read goes to the caller, and the reading thread waits until
 * the caller has given every chunk back. */
static void before_gen(void *arg) {
  struct ctrace__ahead *a = arg;
  if (a->chunks[a->wi].n > 0) {
    a->moved = true; /* the event being read is written into the old chunk */
    if (!hand_over(a)) return;
  }
  wait_room(a, 0);
}

static void *reading(void *arg) {
  struct ctrace__ahead *a = arg;
  ctrace_parse_error err;
  for (;;) {
    chunk *c = &a->chunks[a->wi];
    ctrace_event *ev = &c->ev[c->n];
    int rc = ctrace__g2_read(a->r, ev, &err);
    if (a->moved) { /* before_gen handed c over: the event belongs to the next */
      a->moved = false;
      c = &a->chunks[a->wi];
      if (rc == 1) c->ev[c->n] = *ev;
    }
    if (rc == 1 && ++c->n < AHEAD_CHUNK) continue;
    c->end = rc != 1;
    if (!hand_over(a)) return NULL;
  }
}

struct ctrace__ahead *ctrace__ahead_start(ctrace_reader *r) {
  struct ctrace__ahead *a = aligned_alloc(LINE, sizeof *a);
  if (!a) return NULL;
  memset(a, 0, sizeof *a);
  a->r = r;
  atomic_init(&a->reader_asleep_above, -1);
  const char *e = getenv("CTRACE_READ_AHEAD");
  a->spins = e && strcmp(e, "sleep") == 0 ? 0 : AHEAD_SPINS;
  a->chunks = aligned_alloc(LINE, AHEAD_NCHUNKS * sizeof *a->chunks);
  if (!a->chunks) goto fail;
  a->chunks[0].n = 0;
  a->chunks[0].end = false;
  if (pthread_mutex_init(&a->mu, NULL)) goto fail;
  if (pthread_cond_init(&a->more, NULL)) goto fail_mu;
  if (pthread_cond_init(&a->room, NULL)) goto fail_more;
  r->g2->before_gen = before_gen;
  r->g2->before_gen_arg = a;
  if (pthread_create(&a->thread, NULL, reading, a) == 0) return a;
  r->g2->before_gen = NULL;
  r->g2->before_gen_arg = NULL;
  pthread_cond_destroy(&a->room);
fail_more:
  pthread_cond_destroy(&a->more);
fail_mu:
  pthread_mutex_destroy(&a->mu);
fail:
  free(a->chunks);
  free(a);
  return NULL;
}

void ctrace__ahead_stop(struct ctrace__ahead *a) {
  if (!a) return;
  if (!a->done) {
    pthread_mutex_lock(&a->mu);
    atomic_store(&a->stop, true);
    pthread_cond_signal(&a->room);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
  }
  a->r->g2->before_gen = NULL;
  a->r->g2->before_gen_arg = NULL;
  pthread_cond_destroy(&a->room);
  pthread_cond_destroy(&a->more);
  pthread_mutex_destroy(&a->mu);
  free(a->chunks);
  free(a);
}

/* The reading thread has returned: what it wrote (the check's counts,
 * the reader's state) is the caller's after the join. */
static const ctrace_event *end(struct ctrace__ahead *a) {
  pthread_join(a->thread, NULL);
  a->done = true;
  a->r->g2->before_gen = NULL;
  a->r->g2->before_gen_arg = NULL;
  return NULL;
}

/* The caller: until a chunk is handed over that it has not given back. */
static void wait_more(struct ctrace__ahead *a) {
  uint64_t got = atomic_load_explicit(&a->got, memory_order_relaxed);
  for (int i = 0; i < a->spins && load(&a->put) == got; i++) relax(i);
  if (load(&a->put) != got) return;
  pthread_mutex_lock(&a->mu);
  atomic_store(&a->caller_asleep, true);
  while (atomic_load(&a->put) == got) pthread_cond_wait(&a->more, &a->mu);
  atomic_store(&a->caller_asleep, false);
  pthread_mutex_unlock(&a->mu);
}

const ctrace_event *ctrace__ahead_next(struct ctrace__ahead *a) {
  if (a->done) return NULL;
  chunk *c = &a->chunks[a->ri];
  if (!a->held || a->pos == c->n) {
    if (a->held && c->end) return end(a);
    if (a->held) { /* given back: the caller is past its last event */
      uint64_t got = atomic_fetch_add(&a->got, 1) + 1;
      a->ri = (a->ri + 1) % AHEAD_NCHUNKS;
      int64_t above = atomic_load(&a->reader_asleep_above);
      if (above >= 0 && load(&a->put) - got <= (uint64_t)above) {
        pthread_mutex_lock(&a->mu);
        pthread_cond_signal(&a->room);
        pthread_mutex_unlock(&a->mu);
      }
    }
    wait_more(a);
    a->held = true;
    a->pos = 0;
    c = &a->chunks[a->ri];
    /* As often as g2_read shows it: every 2^20 events. */
    ctrace_reader *r = a->r;
    if ((++a->taken & ((1u << 20) / AHEAD_CHUNK - 1)) == 0 && r->progress)
      r->progress(r->progress_arg, c->off, r->len);
    if (c->n == 0) return end(a); /* only the end */
  }
  return &c->ev[a->pos++];
}
