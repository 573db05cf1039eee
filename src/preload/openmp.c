/* OpenMP's waits in GCC's runtime, libgomp, which makes its futex calls
 * with its own system call instruction: neither libc's pthreads (sync.c)
 * nor syscall() (futex.c) see them. Its public entry points are wrapped
 * instead, the waits told as sync.c tells its own:
 *
 * - critical sections (GOMP_critical_start/_end, and named ones): one that
 *   a thread holds, as the wrappers saw it, will wait; its end wakes the
 *   oldest waiter. A section taken between the look and the call is a
 *   wait not shown.
 * - locks (omp_set_lock, omp_set_nest_lock): tried with omp_test_lock
 *   (omp_test_nest_lock), which is the acquisition when it succeeds; the
 *   unset wakes the oldest waiter.
 * - barriers (GOMP_barrier, and those that end a worksharing loop or
 *   sections: GOMP_loop_end, GOMP_sections_end): every thread of the team
 *   but the last to arrive waits, and the last ends their waits, as a
 *   pthread barrier's (the arrivals are counted per nesting level: one
 *   team at a time at each level).
 * - a parallel region's end (GOMP_parallel): the thread that began it
 *   waits there for the others; the last to finish ends its wait.
 *
 * Not told: a worker thread between parallel regions (in libgomp's pool)
 * shows running; teams at one nesting level running at once (parallel
 * regions begun by several threads) share a barrier's count; tasks and
 * taskwait, ordered, atomic, and other OpenMP runtimes (LLVM's libomp,
 * Intel's) are not wrapped.
 */
#include <stdatomic.h>

#include "wake.h"

#pragma GCC diagnostic ignored "-Wclobbered" /* CTRACE__PL_LINKED_WAIT: see io.c */

CTRACE__PL_REAL(void, GOMP_critical_start, (void))
CTRACE__PL_REAL(void, GOMP_critical_end, (void))
CTRACE__PL_REAL(void, GOMP_critical_name_start, (void **))
CTRACE__PL_REAL(void, GOMP_critical_name_end, (void **))
CTRACE__PL_REAL(void, omp_set_lock, (void *))
CTRACE__PL_REAL(int, omp_test_lock, (void *))
CTRACE__PL_REAL(void, omp_unset_lock, (void *))
CTRACE__PL_REAL(void, omp_set_nest_lock, (void *))
CTRACE__PL_REAL(int, omp_test_nest_lock, (void *))
CTRACE__PL_REAL(void, omp_unset_nest_lock, (void *))
CTRACE__PL_REAL(void, GOMP_barrier, (void))
CTRACE__PL_REAL(void, GOMP_loop_end, (void))
CTRACE__PL_REAL(void, GOMP_sections_end, (void))
CTRACE__PL_REAL(void, GOMP_parallel, (void (*)(void *), void *, unsigned, unsigned))
CTRACE__PL_REAL(int, omp_get_num_threads, (void))
CTRACE__PL_REAL(int, omp_get_thread_num, (void))
CTRACE__PL_REAL(int, omp_get_level, (void))

/* ---- critical sections -------------------------------------------------------- */

/* Held critical sections, as the wrappers saw them: the unnamed one's
 * key is held[0]'s address; a named one's, its name's (pptr), which takes
 * a slot by hash (two names in one slot: a short wait may show where none
 * was). */
#define NAMES 256
static _Atomic(void *) held[NAMES];

static _Atomic(void *) *slot_of(void **name) {
  return name ? &held[1 + ((uintptr_t)name >> 3) * 0x9E3779B97F4A7C15u % (NAMES - 1)] : &held[0];
}

/* Only the unnamed section's key is a slot: a named one is keyed by its
 * name, never another's. */
#define CRITICAL_KEY(name) ((name) ? (const void *)(name) : (const void *)&held[0])

CTRACE__PL_EXPORT void GOMP_critical_start(void) {
  if (ctrace__pl_off()) return real_GOMP_critical_start()();
  if (atomic_load_explicit(&held[0], memory_order_relaxed))
    CTRACE__PL_LINKED_WAIT(CRITICAL_KEY(NULL), CTRACE_BLOCK_SYNC, (real_GOMP_critical_start()(), 0));
  else
    real_GOMP_critical_start()();
  atomic_store_explicit(&held[0], (void *)&held[0], memory_order_relaxed);
}

CTRACE__PL_EXPORT void GOMP_critical_end(void) {
  atomic_store_explicit(&held[0], NULL, memory_order_relaxed);
  CTRACE__PL_WAKE(CRITICAL_KEY(NULL), 1);
  real_GOMP_critical_end()();
}

CTRACE__PL_EXPORT void GOMP_critical_name_start(void **name) {
  if (ctrace__pl_off()) return real_GOMP_critical_name_start()(name);
  if (atomic_load_explicit(slot_of(name), memory_order_relaxed))
    CTRACE__PL_LINKED_WAIT(CRITICAL_KEY(name), CTRACE_BLOCK_SYNC,
                           (real_GOMP_critical_name_start()(name), 0));
  else
    real_GOMP_critical_name_start()(name);
  atomic_store_explicit(slot_of(name), (void *)name, memory_order_relaxed);
}

CTRACE__PL_EXPORT void GOMP_critical_name_end(void **name) {
  atomic_store_explicit(slot_of(name), NULL, memory_order_relaxed);
  CTRACE__PL_WAKE(CRITICAL_KEY(name), 1);
  real_GOMP_critical_name_end()(name);
}

/* ---- locks ------------------------------------------------------------------------ */

CTRACE__PL_EXPORT void omp_set_lock(void *l) {
  if (ctrace__pl_off()) return real_omp_set_lock()(l);
  if (real_omp_test_lock()(l)) return;
  CTRACE__PL_LINKED_WAIT(l, CTRACE_BLOCK_SYNC, (real_omp_set_lock()(l), 0));
}

CTRACE__PL_EXPORT void omp_unset_lock(void *l) {
  CTRACE__PL_WAKE(l, 1);
  real_omp_unset_lock()(l);
}

CTRACE__PL_EXPORT void omp_set_nest_lock(void *l) {
  if (ctrace__pl_off()) return real_omp_set_nest_lock()(l);
  if (real_omp_test_nest_lock()(l)) return;
  CTRACE__PL_LINKED_WAIT(l, CTRACE_BLOCK_SYNC, (real_omp_set_nest_lock()(l), 0));
}

/* A nested lock's inner unset frees nothing: the waiter it names then
 * shows runnable until the outer one, as a recursive mutex's (sync.c). */
CTRACE__PL_EXPORT void omp_unset_nest_lock(void *l) {
  CTRACE__PL_WAKE(l, 1);
  real_omp_unset_nest_lock()(l);
}

/* ---- barriers and the end of a parallel region -------------------------------------- */

#define LEVELS 8
static struct {
  _Atomic unsigned arrived; /* at the team's barriers, since the region began */
  _Atomic unsigned done;    /* threads that finished the region's body */
} levels[LEVELS];

static unsigned level(void) { return (unsigned)real_omp_get_level()() % LEVELS; }

/* A barrier of the team: every thread but the last to arrive waits. */
#define BARRIER(real_call)                                                         \
  do {                                                                             \
    unsigned n_ = (unsigned)real_omp_get_num_threads()();                          \
    if (ctrace__pl_off() || n_ <= 1) {                                             \
      real_call;                                                                   \
      break;                                                                       \
    }                                                                              \
    unsigned l_ = level();                                                         \
    const void *key_ = &levels[l_].arrived;                                        \
    if ((atomic_fetch_add(&levels[l_].arrived, 1) + 1) % n_ == 0) {                \
      CTRACE__PL_WAKE(key_, CTRACE__PL_WAKE_ALL);                                  \
      real_call;                                                                   \
    } else {                                                                       \
      CTRACE__PL_LINKED_WAIT(key_, CTRACE_BLOCK_SYNC, (real_call, 0));             \
    }                                                                              \
  } while (0)

CTRACE__PL_EXPORT void GOMP_barrier(void) { BARRIER(real_GOMP_barrier()()); }
CTRACE__PL_EXPORT void GOMP_loop_end(void) { BARRIER(real_GOMP_loop_end()()); }
CTRACE__PL_EXPORT void GOMP_sections_end(void) { BARRIER(real_GOMP_sections_end()()); }

/* The region's body as each thread of the team runs it: the thread that
 * began the region, done before the others, blocks (linked by the level's
 * count); the last to finish ends its wait. A last one that counts between
 * its count and its link finds nobody: its wait then ends by itself. */
struct region {
  void (*fn)(void *);
  void *data;
  ctrace__pl_waiter *w; /* the beginner's */
  bool blocked;
};

static void region_body(void *arg) {
  struct region *r = arg;
  r->fn(r->data);
  unsigned n = (unsigned)real_omp_get_num_threads()();
  if (n <= 1) return;
  unsigned l = level();
  bool last = atomic_fetch_add(&levels[l].done, 1) + 1 == n;
  if (real_omp_get_thread_num()() != 0) {
    if (last) CTRACE__PL_WAKE(&levels[l].done, 1);
  } else if (!last) {
    CTRACE__PL_BLOCK(CTRACE_BLOCK_SYNC);
    ctrace__pl_wait_enter(r->w, &levels[l].done);
    r->blocked = true;
  }
}

CTRACE__PL_EXPORT void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                                     unsigned flags) {
  if (ctrace__pl_off()) return real_GOMP_parallel()(fn, data, threads, flags);
  /* The team's level is one below ours: its counts start afresh. */
  unsigned l = ((unsigned)real_omp_get_level()() + 1) % LEVELS;
  atomic_store(&levels[l].arrived, 0);
  atomic_store(&levels[l].done, 0);
  ctrace__pl_waiter w;
  CTRACE__PL_CALL(w.g = ctrace_thread_g());
  struct region r = {fn, data, &w, false};
  real_GOMP_parallel()(region_body, &r, threads, flags);
  if (r.blocked) {
    ctrace__pl_wait_leave(&w);
    CTRACE__PL_RESUME();
  }
}
