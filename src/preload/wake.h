/* Who ends a wait (wake.c): the table of blocked waiters, and the
 * waker's side, inline in each releasing wrapper. The streams' side (pipes,
 * eventfds, socketpairs) is in
 * io.h. */
#ifndef CTRACE_PRELOAD_WAKE_H
#define CTRACE_PRELOAD_WAKE_H

#include <pthread.h>
#include <stdatomic.h>

#include "preload.h"

enum {
  CTRACE__PL_W_WAITING,
  CTRACE__PL_W_CLAIMED,
  CTRACE__PL_W_WOKEN,
  CTRACE__PL_W_SELF,
  CTRACE__PL_W_PREPARE, /* linked, its block not yet written */
  CTRACE__PL_W_MISSED,  /* a waker gave up waiting for its commit */
};

/* One blocking call of one thread, on that thread's stack: one entry, or
 * for a wait on any of several objects (poll, epoll: poll.c) an array of
 * entries, one per key, whose first (the head) holds the wait's G and
 * state for all: whichever entry a waker finds, it claims the head, so
 * one waker alone writes the wait's GoUnblock. */
typedef struct ctrace__pl_waiter {
  const void *key; /* the object waited on */
  ctrace_g *g;     /* the waiting thread's G (the head's) */
  _Atomic int state; /* (the head's) */
  struct ctrace__pl_waiter *next, **pprev; /* pprev NULL: not linked */
  struct ctrace__pl_waiter *outer; /* the thread's wait this one interrupts (the head's) */
  struct ctrace__pl_waiter *head;  /* the entry holding g and state: this one, or w[0] */
  unsigned n;                      /* the head's: entries in the wait, w[0..n-1] */
  uint64_t ticket; /* the head's: a stream wait's place in ctrace__pl_streams.seq, else 0 */
} ctrace__pl_waiter;

/* What the waits on streams share (io.h): waiters[1] counts the entries of
 * readers (a read's wait, a wait in poll or epoll for input), waiters[0]
 * of writers; a write looks for a reader to wake only when waiters[1] is
 * not 0, a read for a writer only when waiters[0] is not 0. seq orders a
 * stream wait's linking against a waker's call: each wait draws its
 * ticket once linked, before it tries its call once more; a waker reads
 * seq just before its call, and after it claims only waits whose ticket
 * is below: waits linked before the call, which its data or room may have
 * ended. A wait linked after the call began (the waiter took the data and
 * came back to wait again, while the waker was descheduled) is not its.
 * One cache line, which only waiters write. */
typedef struct ctrace__pl_streams_t {
  _Atomic int waiters[2];
  _Atomic uint64_t seq;
} __attribute__((aligned(64))) ctrace__pl_streams_t;
extern ctrace__pl_streams_t ctrace__pl_streams CTRACE__PL_HIDDEN;

/* The thread's innermost wait in progress (a signal handler that waits
 * while its thread is in a wait nests one in the other). */
extern __thread ctrace__pl_waiter *ctrace__pl_waiting CTRACE__PL_HIDDEN
    __attribute__((tls_model("initial-exec")));

/* A bucket of waiters, on a cache line of its own: only blocking threads
 * write it, so a release with nobody waiting reads a line that stays
 * shared in every cache. */
typedef struct ctrace__pl_bucket {
  _Atomic int waiters; /* entries linked here, of any key */
  _Atomic int lock;
  ctrace__pl_waiter *head, **tail;
} __attribute__((aligned(64))) ctrace__pl_bucket;

#define CTRACE__PL_BUCKETS 256
extern ctrace__pl_bucket ctrace__pl_buckets[CTRACE__PL_BUCKETS] CTRACE__PL_HIDDEN;

static inline ctrace__pl_bucket *ctrace__pl_bucket_of(const void *key) {
  return &ctrace__pl_buckets[((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15u >> 56];
}

/* The waiter's side, around the real blocking call (after the block event,
 * before the resume); w->g is set before the block (the thread has no
 * current G after it). A stream's waits are counted in
 * ctrace__pl_streams. */
void ctrace__pl_wait_enter(ctrace__pl_waiter *w, const void *key) CTRACE__PL_HIDDEN;
void ctrace__pl_wait_leave(ctrace__pl_waiter *w) CTRACE__PL_HIDDEN;

/* enter in two steps, for a call tried once more in between (a stream's,
 * io.h): prepare links w before the block is written, commit after it.
 * A call that then does not wait leaves. prepare_n links the wait w[0..n-1]
 * (w[0].g set) under keys[0..n-1], all different: a wait that any of
 * them ends (poll.c); commit and leave take w. */
void ctrace__pl_wait_prepare(ctrace__pl_waiter *w, const void *key) CTRACE__PL_HIDDEN;
void ctrace__pl_wait_prepare_n(ctrace__pl_waiter *w, const void *const *keys, unsigned n)
    CTRACE__PL_HIDDEN;
void ctrace__pl_wait_commit(ctrace__pl_waiter *w) CTRACE__PL_HIDDEN;

/* Claims up to max of the oldest waiters on key whose ticket is below
 * before (their state CLAIMED, the entry found unlinked) into out, the
 * heads of their waits; returns how many. An entry whose wait another
 * waker claimed (through another key) is passed over. */
size_t ctrace__pl_claim(const void *key, ctrace__pl_waiter **out, size_t max, uint64_t before)
    CTRACE__PL_HIDDEN;
void ctrace__pl_wake_fork_child(void) CTRACE__PL_HIDDEN;

/* Leaves every wait the thread is in: it leaves them other than by
 * returning, with siglongjmp out of a handler that interrupted one, or
 * pthread_exit in that handler (thread_end). */
void ctrace__pl_wait_abandon(void) CTRACE__PL_HIDDEN;

/* leave, as a cleanup handler: a thread cancelled in its wait (a
 * condition variable's, sem_wait, a join, a stream's read or write: they are
 * cancellation points) leaves the table before its stack is gone, or the
 * next wake on that bucket would follow a dangling entry. */
void ctrace__pl_wait_cancelled(void *w) CTRACE__PL_HIDDEN;

/* A wait around the real call `call` (an expression whose value the
 * caller keeps), for waits the table links to their waker. */
#define CTRACE__PL_LINKED_WAIT(key, reason, call)                \
  ({                                                             \
    ctrace__pl_waiter pl_w_;                                     \
    __typeof__(call) pl_r_;                                      \
    CTRACE__PL_CALL(pl_w_.g = ctrace_thread_g());                \
    CTRACE__PL_BLOCK(reason);                                    \
    ctrace__pl_wait_enter(&pl_w_, (key));                        \
    pthread_cleanup_push(ctrace__pl_wait_cancelled, &pl_w_);     \
    pl_r_ = (call);                                              \
    pthread_cleanup_pop(0);                                      \
    int pl_e_ = errno;                                           \
    ctrace__pl_wait_leave(&pl_w_);                               \
    errno = pl_e_;                                               \
    CTRACE__PL_RESUME();                                         \
    pl_r_;                                                       \
  })

#define CTRACE__PL_WAKE_ALL ((size_t)-1)

/* The calling thread ends the waits of up to max waiters on key: it writes
 * each one's GoUnblock, with its own stack (inline, so the stack begins at
 * the wrapper the program called). The guard is held throughout, so a
 * terminating signal cannot leave a claimed waiter waiting for WOKEN.
 * Its value is how many it woke. */
#define CTRACE__PL_WAKE(key, max) CTRACE__PL_WAKE_BEFORE(key, max, UINT64_MAX)

/* The same for the waiters whose ticket is below before (a stream's, after
 * the waker's call). */
#define CTRACE__PL_WAKE_BEFORE(key, max, before)                                                 \
  ({                                                                                             \
    const void *pl_k_ = (key);                                                                   \
    size_t pl_woke_ = 0;                                                                         \
    if (!ctrace__pl_likely(atomic_load_explicit(&ctrace__pl_bucket_of(pl_k_)->waiters,            \
                                                memory_order_relaxed) == 0) &&                   \
        !ctrace__pl_off()) {                                                                     \
      int pl_e_ = errno;                                                                         \
      ctrace__pl_guard++;                                                                        \
      size_t pl_max_ = (max);                                                                    \
      for (;;) {                                                                                 \
        ctrace__pl_waiter *pl_w_[8];                                                             \
        size_t pl_left_ = pl_max_ - pl_woke_;                                                    \
        size_t pl_n_ = ctrace__pl_claim(pl_k_, pl_w_, pl_left_ < 8 ? pl_left_ : 8, (before));    \
        for (size_t pl_i_ = 0; pl_i_ < pl_n_; pl_i_++) {                                         \
          ctrace_go_unblock(pl_w_[pl_i_]->g);                                                    \
          atomic_store_explicit(&pl_w_[pl_i_]->state, CTRACE__PL_W_WOKEN, memory_order_release); \
        }                                                                                        \
        pl_woke_ += pl_n_;                                                                       \
        if (pl_n_ < 8 || pl_woke_ == pl_max_) break;                                             \
      }                                                                                          \
      ctrace__pl_unguard();                                                                      \
      errno = pl_e_;                                                                             \
    }                                                                                            \
    pl_woke_;                                                                                    \
  })

#endif
