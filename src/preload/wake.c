/* Who ends a wait: a process-wide table of the threads blocked on a
 * synchronization object, so that the thread that releases it (unlock,
 * signal, broadcast, post, the last arrival at a barrier, a thread's end
 * for its joiner) writes the waiter's GoUnblock itself, with its own stack
 * on its own P, as Go's runtime does. Go's viewer then draws the arrow
 * from waker to woken, and a reader can follow a chain of waits back.
 *
 * A waiter is an entry on the waiting thread's stack, linked into the
 * bucket of the object's address for the length of its blocking call.
 * Exactly one side writes the GoUnblock, decided by a compare-and-swap on
 * the entry's state: the waker's WAITING -> CLAIMED (then WOKEN once its
 * events are written) or the waiter's own WAITING -> SELF when its call
 * returned for a reason of its own (a timeout, a signal, a wake the table
 * did not see); the waiter then unblocks itself, as before. A waiter that
 * finds itself claimed waits for WOKEN before it writes anything, so the
 * GoUnblock always precedes its GoStart, and the two threads never touch
 * the G's trace state at once.
 *
 * A stream's waiter (a pipe's, io.h) links itself before it knows it will wait (PREPARE),
 * tries the call once more, and only then writes its block and commits
 * (WAITING): data or room that came in between is taken with no wait
 * recorded, and a waker that comes while the block is being written
 * waits for the commit rather than miss the wait (settled()).
 *
 * Which waiter an unlock or a signal ends is the kernel's and glibc's
 * choice, which the table cannot see: it claims the oldest waiter on the
 * object, which is whom a FIFO futex queue wakes. When the kernel wakes
 * another, that one unblocks itself, and the claimed one shows runnable
 * until it gets the object: the trace stays valid, one GoUnblock per wait.
 *
 * Cost. The waker's side is inline in each releasing wrapper: one load of
 * the bucket's waiter count, a cache line only blocking threads write;
 * the rest is out of line and runs only when someone waits (docs/run.md).
 */
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>

#include "wake.h"

ctrace__pl_bucket ctrace__pl_buckets[CTRACE__PL_BUCKETS];
ctrace__pl_streams_t ctrace__pl_streams;

static void lock(ctrace__pl_bucket *b) {
  for (int spins = 0; atomic_exchange_explicit(&b->lock, 1, memory_order_acquire); spins++)
    if (spins > 100) sched_yield();
}

static void unlock(ctrace__pl_bucket *b) { atomic_store_explicit(&b->lock, 0, memory_order_release); }

static void link_waiter(ctrace__pl_bucket *b, ctrace__pl_waiter *w) {
  /* Oldest first: appended at the tail. */
  w->next = NULL;
  if (!b->tail) b->tail = &b->head;
  w->pprev = b->tail;
  *b->tail = w;
  b->tail = &w->next;
  atomic_fetch_add_explicit(&b->waiters, 1, memory_order_relaxed);
}

static void unlink_waiter(ctrace__pl_bucket *b, ctrace__pl_waiter *w) {
  *w->pprev = w->next;
  if (w->next) w->next->pprev = w->pprev;
  else b->tail = w->pprev;
  w->pprev = NULL;
  atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_relaxed);
}

__thread ctrace__pl_waiter *ctrace__pl_waiting;

/* A stream's key has its top bit set (io.h), and in its low bit whether
 * readers (1) or writers (0) wait on it: ctrace__pl_streams counts each
 * side's entries, which the other side's calls read. */
static bool is_stream(const void *key) { return (uintptr_t)key >> 63; }

static void count_stream(const void *key, int d) {
  if (is_stream(key))
    atomic_fetch_add_explicit(&ctrace__pl_streams.waiters[(uintptr_t)key & 1], d,
                              memory_order_relaxed);
}

void ctrace__pl_wait_prepare(ctrace__pl_waiter *w, const void *key) {
  w->key = key;
  w->head = w;
  w->n = 1;
  w->pprev = NULL;
  w->ticket = 0;
  atomic_store_explicit(&w->state, w->g ? CTRACE__PL_W_PREPARE : CTRACE__PL_W_SELF,
                        memory_order_relaxed);
  if (w->g) {
    count_stream(key, 1);
    ctrace__pl_bucket *b = ctrace__pl_bucket_of(key);
    lock(b);
    link_waiter(b, w);
    unlock(b);
    /* Linked, before the retry (ctrace__pl_streams_t). */
    if (is_stream(key)) w->ticket = atomic_fetch_add(&ctrace__pl_streams.seq, 1);
  }
  /* Once linked, not before: a handler on this thread that abandons it
   * must not take the bucket's lock while this frame holds it. */
  w->outer = ctrace__pl_waiting;
  ctrace__pl_waiting = w;
}

/* The entries are linked one bucket at a time, the head SELF meanwhile, so
 * that a waker passes over a wait not wholly linked; then the head turns
 * PREPARE, with a full fence before the caller tries its call once more.
 * A waker that found it SELF had made the descriptor ready before (its
 * call, then its bucket's lock, a full barrier, then the load): the try
 * after the fence sees what it did. So a waiter between prepare and commit
 * never needs a bucket's lock, which a waker holds while it waits for the
 * commit (settled()). */
void ctrace__pl_wait_prepare_n(ctrace__pl_waiter *w, const void *const *keys, unsigned n) {
  ctrace_g *g = w->g;
  atomic_store_explicit(&w->state, CTRACE__PL_W_SELF, memory_order_relaxed);
  w->n = n;
  for (unsigned i = 0; i < n; i++) {
    w[i].key = keys[i];
    w[i].head = w;
    w[i].pprev = NULL;
    if (!g) continue;
    count_stream(keys[i], 1);
    ctrace__pl_bucket *b = ctrace__pl_bucket_of(keys[i]);
    lock(b);
    link_waiter(b, &w[i]);
    unlock(b);
  }
  w->ticket = 0;
  if (g) {
    w->ticket = atomic_fetch_add(&ctrace__pl_streams.seq, 1);
    atomic_store_explicit(&w->state, CTRACE__PL_W_PREPARE, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
  }
  w->outer = ctrace__pl_waiting;
  ctrace__pl_waiting = w;
}

void ctrace__pl_wait_commit(ctrace__pl_waiter *w) {
  int s = CTRACE__PL_W_PREPARE;
  atomic_compare_exchange_strong_explicit(&w->state, &s, CTRACE__PL_W_WAITING, memory_order_release,
                                          memory_order_relaxed);
}

void ctrace__pl_wait_enter(ctrace__pl_waiter *w, const void *key) {
  ctrace__pl_wait_prepare(w, key);
  ctrace__pl_wait_commit(w);
}

/* A claim unlinks the entry it found, under its bucket's lock, before it
 * stores WOKEN; a MISSED one is unlinked after its state changed, under
 * that lock too. The waiter unlinks every other entry of its wait, or
 * checks it is unlinked, under the same locks: the waker may still hold
 * one, looking at the entry on this thread's stack. */
void ctrace__pl_wait_leave(ctrace__pl_waiter *w) {
  ctrace__pl_waiting = w->outer;
  int s = atomic_load_explicit(&w->state, memory_order_acquire);
  if (s == CTRACE__PL_W_SELF) return; /* never linked */
  bool claimed = false;
  for (;;) {
    if (s == CTRACE__PL_W_MISSED) break;
    if (s == CTRACE__PL_W_WAITING || s == CTRACE__PL_W_PREPARE) {
      if (!atomic_compare_exchange_strong_explicit(&w->state, &s, CTRACE__PL_W_SELF,
                                                   memory_order_acq_rel, memory_order_acquire))
        continue;
      break;
    }
    /* Claimed: the waker unlinked the entry it found and is writing the
     * GoUnblock. */
    claimed = true;
    for (int spins = 0; atomic_load_explicit(&w->state, memory_order_acquire) != CTRACE__PL_W_WOKEN;
         spins++)
      if (spins > 100) sched_yield();
    break;
  }
  for (unsigned i = 0; i < w->n; i++) {
    /* A lone entry a waker claimed was unlinked before WOKEN: no lock. */
    if (w->n > 1 || !claimed) {
      ctrace__pl_bucket *b = ctrace__pl_bucket_of(w[i].key);
      lock(b);
      if (w[i].pprev) unlink_waiter(b, &w[i]);
      unlock(b);
    }
    count_stream(w[i].key, -1);
  }
}

void ctrace__pl_wait_abandon(void) {
  while (ctrace__pl_waiting) ctrace__pl_wait_leave(ctrace__pl_waiting);
}

void ctrace__pl_wait_cancelled(void *w) {
  if (w) ctrace__pl_wait_leave(w);
}

/* A waiter between prepare and commit is writing its block event: the
 * claim waits for it (under the bucket's lock, so that the entry stays
 * alive), for a bounded time. Past that (its thread is descheduled, or
 * stopped in a debugger), it is MISSED: it unblocks itself, as when no
 * waker is seen. */
static int settled(ctrace__pl_waiter *w) {
  int s;
  for (int spins = 0;
       (s = atomic_load_explicit(&w->state, memory_order_acquire)) == CTRACE__PL_W_PREPARE; spins++) {
    if (spins < 100) continue;
    if (spins > 100 + 1000 &&
        atomic_compare_exchange_strong_explicit(&w->state, &s, CTRACE__PL_W_MISSED,
                                                memory_order_acq_rel, memory_order_acquire))
      return CTRACE__PL_W_MISSED;
    sched_yield();
  }
  return s;
}

size_t ctrace__pl_claim(const void *key, ctrace__pl_waiter **out, size_t max, uint64_t before) {
  ctrace__pl_bucket *b = ctrace__pl_bucket_of(key);
  size_t n = 0;
  lock(b);
  for (ctrace__pl_waiter *w = b->head, *next; w && n < max; w = next) {
    next = w->next;
    if (w->key != key) continue;
    ctrace__pl_waiter *h = w->head;
    int s = settled(h);
    /* The ticket was drawn before the commit, which WAITING shows. */
    if (s == CTRACE__PL_W_MISSED) {
      unlink_waiter(b, w);
    } else if (s == CTRACE__PL_W_WAITING && h->ticket < before &&
               atomic_compare_exchange_strong_explicit(&h->state, &s, CTRACE__PL_W_CLAIMED,
                                                       memory_order_acq_rel, memory_order_relaxed)) {
      unlink_waiter(b, w);
      out[n++] = h;
    }
  }
  unlock(b);
  return n;
}

/* Threads that were blocked at the fork are not in the child. */
void ctrace__pl_wake_fork_child(void) {
  for (size_t i = 0; i < CTRACE__PL_BUCKETS; i++) {
    ctrace__pl_bucket *b = &ctrace__pl_buckets[i];
    atomic_store(&b->lock, 0);
    atomic_store(&b->waiters, 0);
    b->head = NULL;
    b->tail = NULL;
  }
  atomic_store(&ctrace__pl_streams.waiters[0], 0);
  atomic_store(&ctrace__pl_streams.waiters[1], 0);
  ctrace__pl_waiting = NULL;
}

/* ---- jumps out of a wait ----------------------------------------------------
 *
 * A handler of a signal that interrupted a wait may jump out of it (the
 * alarm-and-siglongjmp timeout of older code): the wait's frame is gone,
 * its entry must go first, and its thread runs again (as the wait's end
 * would have said; else the thread, with no current G, would go
 * unrecorded from then on). A jump that stays inside the handler only
 * shows the wait over early, and unlinked. */


CTRACE__PL_REAL(void, siglongjmp, (struct __jmp_buf_tag[1], int))
CTRACE__PL_REAL(void, longjmp, (struct __jmp_buf_tag[1], int))
CTRACE__PL_REAL(void, _longjmp, (struct __jmp_buf_tag[1], int))
CTRACE__PL_REAL(void, __longjmp_chk, (struct __jmp_buf_tag[1], int))

#define JUMP(name)                                                     \
  CTRACE__PL_EXPORT void name(struct __jmp_buf_tag env[1], int val) {  \
    if (ctrace__pl_unlikely(ctrace__pl_waiting != NULL)) ctrace__pl_wait_abandon(); \
    if (!ctrace__pl_off()) CTRACE__PL_RESUME();                        \
    real_##name()(env, val);                                           \
    __builtin_unreachable();                                           \
  }

JUMP(siglongjmp)
JUMP(longjmp)
JUMP(_longjmp)
JUMP(__longjmp_chk)
