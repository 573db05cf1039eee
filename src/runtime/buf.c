/* Buffers: a pool of empty ones and a FIFO of full ones for the reader.
 *
 * Both lists sit under one mutex: they are touched once per 64 KiB of
 * events, never per event. Buffers come from mmap, not malloc, so that a
 * traced program's allocator (which the preload shim traces) is never
 * re-entered from inside the tracer.
 */
#include <sys/mman.h>

#include "internal.h"
#include "reader.h"

static ctrace__buf *pool;       /* empty buffers, any size */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

ctrace__buf *ctrace__buf_get(void) {
  size_t size = ctrace__cfg.buffer_size;
  pthread_mutex_lock(&pool_mu);
  ctrace__buf *b = pool;
  if (b) pool = b->link;
  pthread_mutex_unlock(&pool_mu);
  if (b && b->size != size) { /* left over from a trace with another size */
    munmap(b, b->size);
    b = NULL;
  }
  if (!b) {
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    b = m;
    b->size = size;
    atomic_fetch_add_explicit(&ctrace__stats.buffers, 1, memory_order_relaxed);
  }
  b->link = NULL;
  b->pos = b->data;
  b->end = (uint8_t *)b + size;
  return b;
}

void ctrace__buf_put(ctrace__buf *b) {
  pthread_mutex_lock(&pool_mu);
  b->link = pool;
  pool = b;
  pthread_mutex_unlock(&pool_mu);
}

void ctrace__pool_trim(size_t keep_size) {
  pthread_mutex_lock(&pool_mu);
  ctrace__buf **pp = &pool;
  while (*pp) {
    ctrace__buf *b = *pp;
    if (b->size != keep_size) {
      *pp = b->link;
      munmap(b, b->size);
    } else {
      pp = &b->link;
    }
  }
  pthread_mutex_unlock(&pool_mu);
}

/* Fork child: the pool may have been mid-update; its buffers are left to
 * the parent's copy of memory. */
void ctrace__buf_fork_child(void) {
  pthread_mutex_init(&pool_mu, NULL);
  pool = NULL;
}

/* Room a batch header takes: EvEventBatch [gen, M, ticks, length], the
 * length a varint padded to 4 bytes (Go's batches are at most 64 KiB), or
 * the classic EvBatch [p, ticks]. */
#define BATCH_HEADER (1 + 3 * CTRACE_MAX_VARINT + 4)

/* A batch of the generation format: one thread's (M's) events, or, with
 * m -1, a section of the generation's tables. */
void ctrace__open_batch2(ctrace__buf *b, uint64_t gen, uint64_t m, uint64_t now) {
  uint8_t *q = b->pos;
  *q++ = CTRACE_EV122_EventBatch;
  q = ctrace__put_uvarint(q, ctrace__file_gen(gen));
  q = ctrace__put_uvarint(q, m);
  q = ctrace__put_uvarint(q, now);
  b->lenpos = q;
  b->pos = q + 4;
  b->last_ticks = now;
  b->gen = gen;
  b->p = CTRACE__NO_P;
}

bool ctrace__close_batch2(ctrace__buf *b) {
  if (!b->lenpos) return false;
  uint8_t *body = b->lenpos + 4;
  size_t n = (size_t)(b->pos - body);
  for (int i = 0; i < 4; i++, n >>= 7) b->lenpos[i] = (uint8_t)((n & 0x7f) | (i < 3 ? 0x80 : 0));
  b->lenpos = NULL;
  /* Timed events are numbered after the sections (format_go122.h). */
  return b->pos > body + (*body == CTRACE_EV122_CPUSamples) &&
         (*body > CTRACE_EV122_Frequency || *body == CTRACE_EV122_CPUSamples);
}

bool ctrace__reserve2(ctrace__buf **bp, uint64_t gen, uint64_t ticks) {
  ctrace__buf *b = *bp;
  if (b && (size_t)(b->end - b->pos) >= CTRACE__MAX_EVENT) return true;
  if (b) ctrace__queue_full(b);
  *bp = b = ctrace__buf_get();
  if (!b) {
    atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    return false;
  }
  ctrace__open_batch2(b, gen, UINT64_MAX, ticks);
  return true;
}

/* A batch opened on the way of an event is the calling thread's (its
 * TLS names the generation and M). One thread writing as another (the
 * thread that closes the others before a gap) opens t's batch first. */
bool ctrace__room_as(ctrace__thread *t, size_t n) {
  ctrace__buf **bp = ctrace__tbuf(t);
  if (*bp && (size_t)((*bp)->end - (*bp)->pos) >= n) return true;
  if (*bp) ctrace__queue_full(*bp);
  *bp = ctrace__buf_get();
  if (!*bp) return false;
  ctrace__open_batch2(*bp, t->state >> 1, (uint64_t)t->tid, ctrace__ticks());
  return true;
}

static void open_batch_at(ctrace__buf *b, int64_t p, uint64_t now) {
  b->gen = ctrace__tls.state >> 1;
  b->lenpos = NULL;
  if (ctrace__genfmt()) {
    ctrace__open_batch2(b, b->gen, (uint64_t)ctrace__tls.tid, now);
    return;
  }
  uint8_t *q = b->pos;
  *q++ = CTRACE_EV_Batch | 1 << CTRACE_ARG_COUNT_SHIFT;
  q = ctrace__put_uvarint(q, (uint64_t)p);
  q = ctrace__put_uvarint(q, now);
  b->pos = q;
  b->last_ticks = now;
  b->p = p;
}

static void open_batch(ctrace__buf *b, int64_t p) { open_batch_at(b, p, ctrace__ticks()); }

uint8_t *ctrace__open_at(ctrace__buf **bp, int64_t p, uint64_t ticks) {
  if (*bp) ctrace__queue_full(*bp);
  *bp = ctrace__buf_get();
  if (!*bp) {
    atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    return NULL;
  }
  open_batch_at(*bp, p, ticks);
  return (*bp)->pos;
}

uint8_t *ctrace__reserve_slow(ctrace__buf **bp, int64_t p, size_t n) {
  /* A batch holds one P: a thread queues its buffer before it changes P
   * (ctrace__proc_close), so here the P is that of *bp, if any. */
  if (*bp) ctrace__queue_full(*bp);
  *bp = NULL;
  ctrace__buf *b = ctrace__buf_get();
  if (!b || (size_t)(b->end - b->data) < n + BATCH_HEADER) {
    if (b) ctrace__buf_put(b);
    atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    return NULL;
  }
  open_batch(b, p);
  *bp = b;
  return b->pos;
}
