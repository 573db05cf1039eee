/* Synchronization: mutexes, read-write locks, condition variables,
 * semaphores and barriers.
 *
 * Each wait is first tried without waiting (trylock, tryrdlock, trywrlock,
 * sem_trywait): an uncontended call costs the try and nothing else, and
 * records nothing. Only a wait that cannot be satisfied at once records
 * GoBlockSync, then the real call, then ctrace_thread_resume. The thread
 * that ends the wait (unlock, signal, broadcast, post, the last arrival
 * at a barrier) writes the waiter's GoUnblock (wake.c); a read-write
 * lock's unlock reads glibc's lock word to tell whom it hands the lock to.
 * A condition variable wait always waits: GoBlockCond. A barrier wait
 * blocks unless the thread is the last to arrive, which the shim counts
 * itself (pthread_barrier_init tells it how many threads to expect).
 *
 * "Blocked" therefore means "had to wait for another thread", not "slept
 * in the kernel": a contended mutex that glibc acquires after a short spin
 * still shows as a (short) block.
 *
 * A timed wait given a clock or time glibc refuses is not tried: glibc
 * checks them before it takes what is free (the read-write locks, the
 * semaphores, a mutex's clock), and the try would take it where glibc
 * returns EINVAL. Such a call goes to glibc as it is (preload.h).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "wake.h"

/* ---- mutexes ---------------------------------------------------------------- */

CTRACE__PL_REAL(int, pthread_mutex_lock, (pthread_mutex_t *))
CTRACE__PL_REAL(int, pthread_mutex_trylock, (pthread_mutex_t *))
CTRACE__PL_REAL(int, pthread_mutex_unlock, (pthread_mutex_t *))
CTRACE__PL_REAL(int, pthread_mutex_timedlock, (pthread_mutex_t *, const struct timespec *))
CTRACE__PL_REAL(int, pthread_mutex_clocklock,
                (pthread_mutex_t *, clockid_t, const struct timespec *))

/* The lock is free (or the try says why not to wait: an error, or a robust
 * mutex whose owner died, which trylock acquires as well). */
#define TRY_OR_RETURN(call)          \
  do {                               \
    int r_ = (call);                 \
    if (r_ != EBUSY) return r_;      \
  } while (0)

CTRACE__PL_EXPORT int pthread_mutex_lock(pthread_mutex_t *m) {
  if (ctrace__pl_off()) return real_pthread_mutex_lock()(m);
  TRY_OR_RETURN(real_pthread_mutex_trylock()(m));
  return CTRACE__PL_LINKED_WAIT(m, CTRACE_BLOCK_SYNC, real_pthread_mutex_lock()(m));
}

/* glibc 2.36 refuses a clock first, whatever the mutex's state; a tv_nsec
 * out of range only once it would wait (a free mutex is taken, a held
 * one refused at once): either way glibc's answer is the call's, and it
 * does not wait. A NULL time is a wait without end, tried as lock's. */
#define MUTEX_REFUSED(clk, t) \
  (ctrace__pl_bad_clock(clk) || (!ctrace__pl_no_time(t) && ctrace__pl_bad_nsec(t)))

CTRACE__PL_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
  if (ctrace__pl_off() || MUTEX_REFUSED(CLOCK_REALTIME, abstime))
    return real_pthread_mutex_timedlock()(m, abstime);
  TRY_OR_RETURN(real_pthread_mutex_trylock()(m));
  return CTRACE__PL_LINKED_WAIT(m, CTRACE_BLOCK_SYNC, real_pthread_mutex_timedlock()(m, abstime));
}

CTRACE__PL_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk,
                                              const struct timespec *abstime) {
  if (ctrace__pl_off() || MUTEX_REFUSED(clk, abstime))
    return real_pthread_mutex_clocklock()(m, clk, abstime);
  TRY_OR_RETURN(real_pthread_mutex_trylock()(m));
  return CTRACE__PL_LINKED_WAIT(m, CTRACE_BLOCK_SYNC, real_pthread_mutex_clocklock()(m, clk, abstime));
}

/* An unlock with a thread blocked on m ends the wait of the oldest one
 * (wake.c). A recursive mutex's inner unlock frees nothing: the waiter
 * it names then shows runnable until the outer one. */
CTRACE__PL_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) {
  CTRACE__PL_WAKE(m, 1);
  return real_pthread_mutex_unlock()(m);
}

/* ---- read-write locks ---------------------------------------------------------- */

CTRACE__PL_REAL(int, pthread_rwlock_rdlock, (pthread_rwlock_t *))
CTRACE__PL_REAL(int, pthread_rwlock_wrlock, (pthread_rwlock_t *))
CTRACE__PL_REAL(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *))
CTRACE__PL_REAL(int, pthread_rwlock_trywrlock, (pthread_rwlock_t *))
CTRACE__PL_REAL(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t *, const struct timespec *))
CTRACE__PL_REAL(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t *, const struct timespec *))
CTRACE__PL_REAL(int, pthread_rwlock_clockrdlock,
                (pthread_rwlock_t *, clockid_t, const struct timespec *))
CTRACE__PL_REAL(int, pthread_rwlock_clockwrlock,
                (pthread_rwlock_t *, clockid_t, const struct timespec *))

CTRACE__PL_REAL(int, pthread_rwlock_unlock, (pthread_rwlock_t *))

/* Readers wait on the lock's address, writers on the byte after it, so
 * that an unlock ends the waits of those glibc hands the lock to. */
#define WRITERS(l) ((const char *)(l) + 1)

/* refused: the arguments glibc refuses before anything else (below). */
#define RDLOCK(l, refused, call)                       \
  if (ctrace__pl_off() || (refused)) return (call);    \
  TRY_OR_RETURN(real_pthread_rwlock_tryrdlock()(l));   \
  return CTRACE__PL_LINKED_WAIT(l, CTRACE_BLOCK_SYNC, call)

#define WRLOCK(l, refused, call)                       \
  if (ctrace__pl_off() || (refused)) return (call);    \
  TRY_OR_RETURN(real_pthread_rwlock_trywrlock()(l));   \
  return CTRACE__PL_LINKED_WAIT(WRITERS(l), CTRACE_BLOCK_SYNC, call)

/* glibc 2.36 checks a time's clock and tv_nsec before it looks at the
 * lock; a NULL time is a wait without end, whatever the clock. */
#define RW_REFUSED(clk, t) \
  (!ctrace__pl_no_time(t) && (ctrace__pl_bad_clock(clk) || ctrace__pl_bad_nsec(t)))

CTRACE__PL_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
  RDLOCK(l, false, real_pthread_rwlock_rdlock()(l));
}

CTRACE__PL_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  WRLOCK(l, false, real_pthread_rwlock_wrlock()(l));
}

CTRACE__PL_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t) {
  RDLOCK(l, RW_REFUSED(CLOCK_REALTIME, t), real_pthread_rwlock_timedrdlock()(l, t));
}

CTRACE__PL_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t) {
  WRLOCK(l, RW_REFUSED(CLOCK_REALTIME, t), real_pthread_rwlock_timedwrlock()(l, t));
}

CTRACE__PL_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk,
                                                 const struct timespec *t) {
  RDLOCK(l, RW_REFUSED(clk, t), real_pthread_rwlock_clockrdlock()(l, clk, t));
}

CTRACE__PL_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk,
                                                 const struct timespec *t) {
  WRLOCK(l, RW_REFUSED(clk, t), real_pthread_rwlock_clockwrlock()(l, clk, t));
}

/* Whom an unlock hands the lock to, from glibc's lock word read before it
 * (__readers, laid out so since glibc 2.25): bit 0 set in a write phase;
 * bit 1 set when a writer holds the lock (write phase) or waits for the
 * readers to leave (read phase); from bit 3, the readers that hold it or
 * wait for it. A writer's unlock hands it to the readers waiting, if any,
 * else to one writer (a lock that prefers writers: the other way round);
 * the last reader's, to the writer waiting. The word may change between
 * the read and the unlock (a reader joins): the waiter named then shows
 * runnable until it gets the lock. */
enum { RW_WRPHASE = 1, RW_WRLOCKED = 2, RW_READER_SHIFT = 3 };

CTRACE__PL_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l) {
  unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
  if ((r & (RW_WRPHASE | RW_WRLOCKED)) == (RW_WRPHASE | RW_WRLOCKED)) {
    if (l->__data.__flags == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) {
      if (!CTRACE__PL_WAKE(WRITERS(l), 1)) CTRACE__PL_WAKE(l, CTRACE__PL_WAKE_ALL);
    } else if (!CTRACE__PL_WAKE(l, CTRACE__PL_WAKE_ALL)) {
      CTRACE__PL_WAKE(WRITERS(l), 1);
    }
  } else if ((r & RW_WRLOCKED) && r >> RW_READER_SHIFT == 1) {
    CTRACE__PL_WAKE(WRITERS(l), 1);
  }
  return real_pthread_rwlock_unlock()(l);
}

/* ---- condition variables ------------------------------------------------------ */

/* GLIBC_2.3.2 is the current version on x86-64 (2.2.5 is the old layout);
 * elsewhere the lookup falls back to the default version. */
CTRACE__PL_REAL_V(int, pthread_cond_wait, (pthread_cond_t *, pthread_mutex_t *), "GLIBC_2.3.2")
CTRACE__PL_REAL_V(int, pthread_cond_timedwait,
                  (pthread_cond_t *, pthread_mutex_t *, const struct timespec *), "GLIBC_2.3.2")
CTRACE__PL_REAL(int, pthread_cond_clockwait,
                (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))
CTRACE__PL_REAL_V(int, pthread_cond_signal, (pthread_cond_t *), "GLIBC_2.3.2")
CTRACE__PL_REAL_V(int, pthread_cond_broadcast, (pthread_cond_t *), "GLIBC_2.3.2")

/* A signal ends the wait of the oldest waiter, a broadcast every wait. */
CTRACE__PL_EXPORT int pthread_cond_signal(pthread_cond_t *c) {
  CTRACE__PL_WAKE(c, 1);
  return real_pthread_cond_signal()(c);
}

CTRACE__PL_EXPORT int pthread_cond_broadcast(pthread_cond_t *c) {
  CTRACE__PL_WAKE(c, CTRACE__PL_WAKE_ALL);
  return real_pthread_cond_broadcast()(c);
}

CTRACE__PL_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  if (ctrace__pl_off()) return real_pthread_cond_wait()(c, m);
  return CTRACE__PL_LINKED_WAIT(c, CTRACE_BLOCK_COND, real_pthread_cond_wait()(c, m));
}

/* glibc 2.36 reads the time first (a NULL one is a crash) and refuses a
 * bad clock or tv_nsec at once, the mutex still held: no wait to record. */
#define COND_REFUSED(clk, t) \
  (ctrace__pl_no_time(t) || ctrace__pl_bad_clock(clk) || ctrace__pl_bad_nsec(t))

CTRACE__PL_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                             const struct timespec *abstime) {
  if (ctrace__pl_off() || COND_REFUSED(CLOCK_REALTIME, abstime))
    return real_pthread_cond_timedwait()(c, m, abstime);
  return CTRACE__PL_LINKED_WAIT(c, CTRACE_BLOCK_COND, real_pthread_cond_timedwait()(c, m, abstime));
}

CTRACE__PL_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                             const struct timespec *abstime) {
  if (ctrace__pl_off() || COND_REFUSED(clk, abstime))
    return real_pthread_cond_clockwait()(c, m, clk, abstime);
  return CTRACE__PL_LINKED_WAIT(c, CTRACE_BLOCK_COND, real_pthread_cond_clockwait()(c, m, clk, abstime));
}

/* ---- semaphores ------------------------------------------------------------------ */

CTRACE__PL_REAL(int, sem_wait, (sem_t *))
CTRACE__PL_REAL(int, sem_trywait, (sem_t *))
CTRACE__PL_REAL(int, sem_timedwait, (sem_t *, const struct timespec *))
CTRACE__PL_REAL(int, sem_clockwait, (sem_t *, clockid_t, const struct timespec *))
CTRACE__PL_REAL(int, sem_post, (sem_t *))

CTRACE__PL_EXPORT int sem_post(sem_t *s) {
  CTRACE__PL_WAKE(s, 1);
  return real_sem_post()(s);
}

/* sem_trywait: 0, or -1 with errno; EAGAIN means "would wait". The
 * caller's errno is kept when the real call follows. */
#define SEM_TRY_OR_RETURN(s)                                   \
  do {                                                         \
    int e_ = errno;                                            \
    if (real_sem_trywait()(s) == 0) return 0;                  \
    if (errno != EAGAIN) return -1;                            \
    errno = e_;                                                \
  } while (0)

/* sem_wait and sem_timedwait act on a pending cancellation before they
 * take a free unit, as glibc 2.36 does (sem_clockwait does not): a try
 * made first would take it, and the thread would go on uncancelled. Only
 * once the program has cancelled a thread (preload.h). */

CTRACE__PL_EXPORT int sem_wait(sem_t *s) {
  if (ctrace__pl_off()) return real_sem_wait()(s);
  ctrace__pl_testcancel();
  SEM_TRY_OR_RETURN(s);
  return CTRACE__PL_LINKED_WAIT(s, CTRACE_BLOCK_SYNC, real_sem_wait()(s));
}

/* glibc 2.36 checks the clock, then reads the time (a NULL one is a
 * crash): it refuses either before it takes a unit the semaphore has. */
#define SEM_REFUSED(clk, t) \
  (ctrace__pl_no_time(t) || ctrace__pl_bad_clock(clk) || ctrace__pl_bad_nsec(t))

CTRACE__PL_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime) {
  if (ctrace__pl_off() || SEM_REFUSED(CLOCK_REALTIME, abstime)) return real_sem_timedwait()(s, abstime);
  ctrace__pl_testcancel();
  SEM_TRY_OR_RETURN(s);
  return CTRACE__PL_LINKED_WAIT(s, CTRACE_BLOCK_SYNC, real_sem_timedwait()(s, abstime));
}

CTRACE__PL_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abstime) {
  if (ctrace__pl_off() || SEM_REFUSED(clk, abstime)) return real_sem_clockwait()(s, clk, abstime);
  SEM_TRY_OR_RETURN(s);
  return CTRACE__PL_LINKED_WAIT(s, CTRACE_BLOCK_SYNC, real_sem_clockwait()(s, clk, abstime));
}

/* ---- barriers ---------------------------------------------------------------------
 *
 * A barrier cannot be tried. The shim counts arrivals per barrier: of
 * every `count` arrivals the last does not wait. A thread can only arrive
 * for round k+1 after round k is complete, so the count modulo `count`
 * is exact; which thread the kernel lets through last may differ by a hair
 * from the one counted last, which only moves a near-zero block from one
 * thread to another. Barriers are few: a small open-addressed table, with
 * lock-free lookups; a barrier the table does not know (full, or set up
 * before the shim was there) shows every wait as a block.
 */

CTRACE__PL_REAL(int, pthread_barrier_init,
                (pthread_barrier_t *, const pthread_barrierattr_t *, unsigned))
CTRACE__PL_REAL(int, pthread_barrier_destroy, (pthread_barrier_t *))
CTRACE__PL_REAL(int, pthread_barrier_wait, (pthread_barrier_t *))

#define BARRIERS 256
#define TOMBSTONE ((pthread_barrier_t *)1) /* a forgotten barrier's slot */
#define CLAIMED ((pthread_barrier_t *)2)   /* a slot being filled */

typedef struct barrier_entry {
  _Atomic(pthread_barrier_t *) key;
  unsigned count;
  _Atomic unsigned arrived;
} barrier_entry;

static barrier_entry barriers[BARRIERS];

static size_t barrier_slot(const pthread_barrier_t *b) {
  return ((uintptr_t)b >> 4) * 0x9E3779B97F4A7C15u >> 56;
}

static barrier_entry *barrier_find(pthread_barrier_t *b) {
  size_t i = barrier_slot(b);
  for (size_t n = 0; n < BARRIERS; n++, i = (i + 1) % BARRIERS) {
    pthread_barrier_t *k = atomic_load_explicit(&barriers[i].key, memory_order_acquire);
    if (k == b) return &barriers[i];
    if (k == NULL) return NULL;
  }
  return NULL;
}

static void barrier_forget(pthread_barrier_t *b) {
  barrier_entry *e = barrier_find(b);
  if (e) atomic_store_explicit(&e->key, TOMBSTONE, memory_order_release);
}

static void barrier_remember(pthread_barrier_t *b, unsigned count) {
  barrier_forget(b); /* initialized again without destroy */
  size_t i = barrier_slot(b);
  for (size_t n = 0; n < BARRIERS; n++, i = (i + 1) % BARRIERS) {
    pthread_barrier_t *k = atomic_load_explicit(&barriers[i].key, memory_order_relaxed);
    if (k != NULL && k != TOMBSTONE) continue;
    /* Claim the slot with a placeholder, fill it, then publish b. */
    if (!atomic_compare_exchange_strong(&barriers[i].key, &k, CLAIMED)) continue;
    barriers[i].count = count;
    atomic_store_explicit(&barriers[i].arrived, 0, memory_order_relaxed);
    atomic_store_explicit(&barriers[i].key, b, memory_order_release);
    return;
  }
}

CTRACE__PL_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr,
                                           unsigned count) {
  int r = real_pthread_barrier_init()(b, attr, count);
  if (r == 0) barrier_remember(b, count);
  return r;
}

CTRACE__PL_EXPORT int pthread_barrier_destroy(pthread_barrier_t *b) {
  barrier_forget(b);
  return real_pthread_barrier_destroy()(b);
}

CTRACE__PL_EXPORT int pthread_barrier_wait(pthread_barrier_t *b) {
  /* Counted whether or not tracing is on, so the count stays in step. */
  barrier_entry *e = barrier_find(b);
  bool waits = true;
  if (e && e->count)
    waits = (atomic_fetch_add_explicit(&e->arrived, 1, memory_order_relaxed) + 1) % e->count != 0;
  if (!waits) {
    /* The last arrival ends every other's wait. */
    CTRACE__PL_WAKE(b, CTRACE__PL_WAKE_ALL);
    return real_pthread_barrier_wait()(b);
  }
  if (ctrace__pl_off()) return real_pthread_barrier_wait()(b);
  return CTRACE__PL_LINKED_WAIT(b, CTRACE_BLOCK_SYNC, real_pthread_barrier_wait()(b));
}
