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
#include <stdatomic.h>

#include "wake.h"

ctrace__pl_bucket ctrace__pl_buckets[CTRACE__PL_BUCKETS];
_Atomic int ctrace__pl_pipe_waiters;

static void lock(ctrace__pl_bucket *b) {
  for (int spins = 0; atomic_exchange_explicit(&b->lock, 1, memory_order_acquire); spins++)
    if (spins > 100) sched_yield();
}

static void unlock(ctrace__pl_bucket *b) { atomic_store_explicit(&b->lock, 0, memory_order_release); }

static void unlink_waiter(ctrace__pl_bucket *b, ctrace__pl_waiter *w) {
  *w->pprev = w->next;
  if (w->next) w->next->pprev = w->pprev;
  else b->tail = w->pprev;
  atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_relaxed);
}

void ctrace__pl_wait_enter(ctrace__pl_waiter *w, const void *key) {
  w->key = key;
  atomic_store_explicit(&w->state, w->g ? CTRACE__PL_W_WAITING : CTRACE__PL_W_SELF,
                        memory_order_relaxed);
  if (!w->g) return;
  ctrace__pl_bucket *b = ctrace__pl_bucket_of(key);
  lock(b);
  /* Oldest first: appended at the tail. */
  w->next = NULL;
  if (!b->tail) b->tail = &b->head;
  w->pprev = b->tail;
  *b->tail = w;
  b->tail = &w->next;
  atomic_fetch_add_explicit(&b->waiters, 1, memory_order_relaxed);
  unlock(b);
}

void ctrace__pl_wait_leave(ctrace__pl_waiter *w) {
  int s = CTRACE__PL_W_WAITING;
  if (atomic_compare_exchange_strong_explicit(&w->state, &s, CTRACE__PL_W_SELF, memory_order_acq_rel,
                                              memory_order_acquire)) {
    ctrace__pl_bucket *b = ctrace__pl_bucket_of(w->key);
    lock(b);
    unlink_waiter(b, w);
    unlock(b);
    return;
  }
  if (s == CTRACE__PL_W_SELF) return; /* never entered */
  /* Claimed: the waker unlinked the entry and is writing the GoUnblock. */
  for (int spins = 0; atomic_load_explicit(&w->state, memory_order_acquire) != CTRACE__PL_W_WOKEN;
       spins++)
    if (spins > 100) sched_yield();
}

size_t ctrace__pl_claim(const void *key, ctrace__pl_waiter **out, size_t max) {
  ctrace__pl_bucket *b = ctrace__pl_bucket_of(key);
  size_t n = 0;
  lock(b);
  for (ctrace__pl_waiter *w = b->head, *next; w && n < max; w = next) {
    next = w->next;
    int s = CTRACE__PL_W_WAITING;
    if (w->key == key &&
        atomic_compare_exchange_strong_explicit(&w->state, &s, CTRACE__PL_W_CLAIMED,
                                                memory_order_acq_rel, memory_order_relaxed)) {
      unlink_waiter(b, w);
      out[n++] = w;
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
  atomic_store(&ctrace__pl_pipe_waiters, 0);
}
