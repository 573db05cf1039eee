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
 * not once an event. The reading thread calls nothing of the caller's:
 * the caller shows the progress each chunk carries. Used where the
 * process may run on two CPUs (reader.c's ahead_wanted). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

#define AHEAD_CHUNK 256
#define AHEAD_NCHUNKS 8

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
  _Alignas(LINE) pthread_mutex_t mu;
  pthread_cond_t more, room; /* the caller waits for more, the reader for room */
  /* Under mu: chunks handed over and not given back (the one the caller
   * reads included), and whether the caller asked the reader to stop. */
  uint32_t ready;
  bool stop;
  /* Under mu: the reading thread handed over all it will before the
   * caller gives chunks back (the end, or a generation to come). */
  bool flush;
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

/* The reading thread: c (the chunk wi, n events) to the caller; then
 * waits for room for the next. False if the caller asked to stop. */
static bool hand_over(struct ctrace__ahead *a, bool flush) {
  a->chunks[a->wi].off = a->r->g2->off;
  pthread_mutex_lock(&a->mu);
  a->ready++;
  a->flush = flush;
  /* What the caller waits for: half the chunks ready, or all there will
   * be for now. */
  if (a->ready == AHEAD_NCHUNKS / 2 || flush) pthread_cond_signal(&a->more);
  /* Once full, until half is free: a reader faster than its caller then
   * sleeps once every AHEAD_NCHUNKS / 2 chunks, not after each. */
  if (a->ready == AHEAD_NCHUNKS)
    while (a->ready > AHEAD_NCHUNKS / 2 && !a->stop) pthread_cond_wait(&a->room, &a->mu);
  bool go = !a->stop;
  pthread_mutex_unlock(&a->mu);
  a->wi = (a->wi + 1) % AHEAD_NCHUNKS;
  a->chunks[a->wi].n = 0;
  a->chunks[a->wi].end = false;
  return go;
}

/* Before the reader reads a generation (it frees the last one's tables):
 * what was read goes to the caller, and the reading thread waits until
 * the caller has given every chunk back. */
static void before_gen(void *arg) {
  struct ctrace__ahead *a = arg;
  if (a->chunks[a->wi].n > 0) {
    a->moved = true; /* the event being read is written into the old chunk */
    if (!hand_over(a, true)) return;
  }
  pthread_mutex_lock(&a->mu);
  a->flush = true;
  pthread_cond_signal(&a->more);
  while (a->ready > 0 && !a->stop) pthread_cond_wait(&a->room, &a->mu);
  a->flush = false;
  pthread_mutex_unlock(&a->mu);
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
    if (!hand_over(a, c->end) || c->end) return NULL;
  }
}

struct ctrace__ahead *ctrace__ahead_start(ctrace_reader *r) {
  struct ctrace__ahead *a = aligned_alloc(LINE, sizeof *a);
  if (!a) return NULL;
  memset(a, 0, sizeof *a);
  a->r = r;
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
    a->stop = true;
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

const ctrace_event *ctrace__ahead_next(struct ctrace__ahead *a) {
  if (a->done) return NULL;
  chunk *c = &a->chunks[a->ri];
  if (!a->held || a->pos == c->n) {
    if (a->held && c->end) return end(a);
    pthread_mutex_lock(&a->mu);
    if (a->held) { /* given back: the caller is past its last event */
      a->ready--;
      a->ri = (a->ri + 1) % AHEAD_NCHUNKS;
      /* What the reading thread waits for: half the chunks free, or
       * (before_gen) all of them. */
      if (a->ready == AHEAD_NCHUNKS / 2 || a->ready == 0) pthread_cond_signal(&a->room);
    }
    /* Once empty, until half is ready (or all there will be): a caller
     * faster than the reader then sleeps once every AHEAD_NCHUNKS / 2
     * chunks. */
    if (a->ready == 0)
      while (a->ready == 0 || (a->ready < AHEAD_NCHUNKS / 2 && !a->flush)) pthread_cond_wait(&a->more, &a->mu);
    pthread_mutex_unlock(&a->mu);
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
