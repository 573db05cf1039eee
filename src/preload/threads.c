/* Threads: creation (pthread_create, and C11's thrd_create), exit, join.
 *
 * A thread is a goroutine. Its creator records GoCreate (its own stack, the
 * start routine as the new G's first frame) with ctrace_thread_create; the
 * new thread adopts that G in a trampoline before the start routine runs,
 * and ends it (GoEnd) when the routine returns, calls pthread_exit or is
 * cancelled (a cleanup handler). From then on the thread is guarded for
 * good and blocks every signal: what it still runs (the program's
 * thread-specific-data destructors) is not traced, and a terminating signal
 * for the process goes to a thread that can still finish the trace.
 *
 * Threads the tracer or the shim create for themselves (the trace writer,
 * the finisher) are created while the guard is held: they run guarded for
 * life, with every signal blocked, and never appear in the trace.
 *
 * Those two keep glibc from ending the process when the program's last
 * thread exits (main called pthread_exit, and its other threads are done):
 * glibc calls exit(0) only when no thread at all is left. So the shim
 * counts the program's threads (those alive at start, then each one it
 * creates). The G of the last one ends in its pthread_exit or at the
 * return of its start routine, before glibc runs the thread's cleanup
 * handlers and thread-specific-data destructors, which untraced run before
 * glibc's exit(0): so the finisher (shim.c) watches the process's tasks in
 * /proc until none is left alive but the tracer's and the shim's own (an
 * ended main is a zombie until the process ends), and then calls exit(0).
 * The same watch serves a thread that existed before the trace started (a
 * library constructor's) and ends by returning from its start routine,
 * which is not seen to end: once main has ended and only such threads may
 * be left, the finisher watches.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif
#include "runtime/internal.h"
#include "wake.h"

CTRACE__PL_REAL(int, pthread_create,
                (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
CTRACE__PL_REAL(int, thrd_create, (thrd_t *, thrd_start_t, void *))
CTRACE__PL_REAL(void, pthread_exit, (void *))
CTRACE__PL_REAL(int, pthread_cancel, (pthread_t))
CTRACE__PL_REAL(int, pthread_join, (pthread_t, void **))
CTRACE__PL_REAL(int, pthread_tryjoin_np, (pthread_t, void **))
CTRACE__PL_REAL(int, pthread_timedjoin_np, (pthread_t, void **, const struct timespec *))
CTRACE__PL_REAL(int, pthread_clockjoin_np,
                (pthread_t, void **, clockid_t, const struct timespec *))

typedef struct start {
  void *(*fn)(void *);
  void *arg;
  ctrace_g *g;
  bool c11; /* fn is a C11 thrd_start_t, int (*)(void *) */
} start;

static __thread bool ended __attribute__((tls_model("initial-exec")));

/* Threads of the program alive, the tracer's and shim's own not counted. */
static _Atomic long program_threads;
/* Of those, the ones alive when the trace began, main excepted: they may
 * end unseen. */
static long prestart;
/* The tracer's and the shim's own threads (the writer, the finisher). */
static _Atomic long internal_threads;
static _Atomic bool main_ended;

/* Threads of the process from /proc/self/stat (field 20), 0 if unknown.
 * pread, not read: should a program thread close the number and open a
 * pipe or socket there meanwhile, pread fails on it (ESPIPE) rather than
 * take the program's data. */
static long threads_now(void) {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command name may hold anything */
  if (!p) return 0;
  /* After ") ": state (field 3), then fields 4.. up to num_threads (20). */
  for (int field = 2; field < 20 && p; field++) p = strchr(p + 1, ' ');
  long t = p ? strtol(p + 1, NULL, 10) : 0;
  return t > 0 ? t : 0;
}

/* The linker defines these; hidden, so that the shim exports no more names. */
extern const char __start_ctrace_hidden_text[] CTRACE__HIDDEN, __stop_ctrace_hidden_text[] CTRACE__HIDDEN;

void ctrace__pl_threads_init(void) {
  ctrace__stack_hide((uintptr_t)__start_ctrace_hidden_text, (uintptr_t)__stop_ctrace_hidden_text);
  long n = threads_now();
  prestart = n > 1 ? n - 1 : 0;
  atomic_store(&program_threads, n > 1 ? n : 1);
}

/* The start block of an internal thread not yet started, which a fork
 * child, where that thread never runs, frees (LeakSanitizer counts it). */
static _Atomic(start *) internal_pending;

void ctrace__pl_threads_fork_child(void) {
  free(atomic_exchange(&internal_pending, NULL));
  prestart = 0;
  atomic_store(&program_threads, 1);
  atomic_store(&internal_threads, 0);
  atomic_store(&main_ended, false);
}

/* Whether task tid of the process (a name in /proc/self/task, open as
 * dir) has ended: gone, or a zombie (main, once it has ended while other
 * threads run). One that runs its destructors is alive. */
static bool task_ended(int dir, const char *tid) {
  char path[sizeof(((struct dirent64 *)0)->d_name) + 8], buf[512];
  snprintf(path, sizeof path, "%s/stat", tid);
  int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  if (n <= 0) return true;
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* then " S" */
  return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Tasks of the process that have not ended, from /proc/self/task; -1 if
 * unknown. getdents64 into the stack: no allocation. */
static long tasks_alive(void) {
  int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  char buf[4096] __attribute__((aligned(8)));
  long alive = 0;
  for (;;) {
    ssize_t n = getdents64(dir, buf, sizeof buf);
    if (n < 0) alive = -1;
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      const struct dirent64 *d = (const struct dirent64 *)(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] >= '0' && d->d_name[0] <= '9' && !task_ended(dir, d->d_name)) alive++;
    }
  }
  close(dir);
  return alive;
}

bool ctrace__pl_only_internal_left(void) {
  long n = tasks_alive();
  /* Without /proc: once every thread the shim counts has ended (the last
   * one's destructors may still run). */
  if (n < 0) return atomic_load(&program_threads) <= 0;
  return n <= atomic_load(&internal_threads);
}

bool ctrace__pl_thread_ended(void) { return ended; }

long ctrace__pl_threads_now(void) { return threads_now(); }

bool ctrace__pl_alone(void) {
  if (atomic_load(&main_ended)) return false; /* its zombie is in the process still */
  long n = tasks_alive();
  if (n < 0) return atomic_load(&program_threads) == 1;
  return n <= atomic_load(&internal_threads) + 1;
}

/* The thread's G ends; the thread stays guarded and deaf to signals until
 * it is gone. Idempotent: pthread_exit reaches it twice (our wrapper, then
 * the trampoline's cleanup handler). Its frame stays in the stacks of
 * the events it writes: a joiner's waker reads "thread_end". */
static void thread_end(void *unused) {
  (void)unused;
#ifdef __SANITIZE_ADDRESS__
  /* Reached by pthread_exit's or a cancellation's unwinding, which ASan
   * does not see: the frames it skipped leave their poison where this
   * one's are. */
  __asan_handle_no_return();
#endif
  if (ended) return;
  ended = true;
  ctrace__pl_wait_abandon(); /* pthread_exit in a handler that interrupted a wait */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  /* The thread's end ends its joiner's wait. */
  CTRACE__PL_WAKE((const void *)pthread_self(), CTRACE__PL_WAKE_ALL);
  ctrace__pl_guard++;
  ctrace__pl_heap_flush();
  ctrace_thread_end();
  if (getpid() == gettid()) atomic_store(&main_ended, true);
  long left = atomic_fetch_sub(&program_threads, 1) - 1;
  if (!ctrace__pl_tracing()) return;
  /* The last thread: its cleanup handlers and destructors are still to
   * run, then glibc's exit(0) would: the finisher makes that exit once
   * the thread is gone (see top). */
  if (left == 0 || (left <= prestart && atomic_load(&main_ended))) ctrace__pl_watch_last();
}

/* In a section of the shim's own (with the main thread's start,
 * shim.c), whose bounds the linker gives: the tracer leaves its frame out
 * of every stack (ctrace__stack_hide). */
__attribute__((section("ctrace_hidden_text"), noinline)) static void *trampoline(void *p) {
  start s = *(start *)p;
  /* Begin before the free: the free's heap event must come from this G. */
  CTRACE__PL_CALL(ctrace_thread_begin(s.g));
  free(p);
  void *ret;
  pthread_cleanup_push(thread_end, NULL);
  /* A C11 thread's result travels as a pointer, as glibc's own does. */
  if (s.c11)
    ret = (void *)(intptr_t)((int (*)(void *))(void (*)(void))s.fn)(s.arg);
  else
    ret = s.fn(s.arg);
  pthread_cleanup_pop(1);
  return ret;
}

static void *internal_main(void *p) {
  ctrace__pl_guard = 1;
  start s = *(start *)p;
  start *expect = p;
  atomic_compare_exchange_strong(&internal_pending, &expect, NULL);
  free(p);
  void *r = s.fn(s.arg);
  atomic_fetch_sub(&internal_threads, 1); /* a pause ends and starts them again (ns.c) */
  return r;
}

/* A thread of the tracer or the shim. The signal mask is inherited. */
static int create_internal(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg) {
  start *s = malloc(sizeof *s);
  if (!s) return EAGAIN;
  s->fn = fn;
  s->arg = arg;
  s->g = NULL;
  s->c11 = false;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  atomic_store(&internal_pending, s);
  int r = real_pthread_create()(th, attr, internal_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r) {
    start *expect = s;
    atomic_compare_exchange_strong(&internal_pending, &expect, NULL);
    free(s);
  }
  else atomic_fetch_add(&internal_threads, 1);
  return r;
}

int ctrace__pl_internal_thread(void *(*fn)(void *), void *arg) {
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  ctrace__pl_guard++;
  int r = create_internal(&th, &attr, fn, arg);
  ctrace__pl_unguard();
  pthread_attr_destroy(&attr);
  return r;
}

/* std::thread (libstdc++) starts every thread at one routine of its own,
 * from std::thread::_M_start_thread, with the thread's state as argument:
 * an object whose _M_run (the third slot of its vtable, after the two
 * destructors) runs what the program gave std::thread. That is the start
 * function people look for, not libstdc++'s routine. The caller's range
 * is looked up until libstdc++ is found (a dlsym each time in a process
 * without it), then compared. */
static const char cxx_start_thread[] = "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE";
static _Atomic uintptr_t cxx_lo, cxx_hi;

static void (*start_function(void *(*fn)(void *), void *arg, const void *caller))(void) {
  uintptr_t lo = atomic_load_explicit(&cxx_lo, memory_order_relaxed),
            hi = atomic_load_explicit(&cxx_hi, memory_order_relaxed);
  if (!hi) {
    void *sym = dlsym(RTLD_DEFAULT, cxx_start_thread);
    Dl_info info;
    const ElfW(Sym) *entry = NULL;
    if (!sym || !dladdr1(sym, &info, (void **)&entry, RTLD_DL_SYMENT) || !entry || !entry->st_size)
      return (void (*)(void))fn;
    lo = (uintptr_t)info.dli_saddr;
    hi = lo + entry->st_size;
    atomic_store_explicit(&cxx_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&cxx_hi, hi, memory_order_relaxed);
  }
  if ((uintptr_t)caller <= lo || (uintptr_t)caller > hi || !arg) return (void (*)(void))fn;
  void *const *vtable = *(void *const *const *)arg;
  return vtable && vtable[2] ? (void (*)(void))vtable[2] : (void (*)(void))fn;
}

/* A traced thread: GoCreate here, the trampoline in it. Inline, so that
 * the creation stack begins at the wrapper the program called (and
 * caller is that wrapper's caller). Returns an errno value. */
CTRACE__PL_INLINE int create_traced(pthread_t *th, const pthread_attr_t *attr,
                                    void *(*fn)(void *), void *arg, bool c11, const void *caller) {
  start *s = malloc(sizeof *s);
  if (!s) return EAGAIN;
  s->fn = fn;
  s->arg = arg;
  s->c11 = c11;
  CTRACE__PL_CALL(s->g = ctrace_thread_create(c11 ? (void (*)(void))fn : start_function(fn, arg, caller)));
  atomic_fetch_add(&program_threads, 1);
  int r = real_pthread_create()(th, attr, trampoline, s);
  if (r) {
    atomic_fetch_sub(&program_threads, 1);
    /* The GoCreate stands; the G never runs. */
    if (s->g) CTRACE__PL_CALL((ctrace_go_destroy(s->g), free(s->g)));
    free(s);
  }
  return r;
}

CTRACE__PL_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                                     void *(*fn)(void *), void *arg) {
  if (ctrace__pl_guard) return create_internal(th, attr, fn, arg);
  if (!ctrace_enabled()) return real_pthread_create()(th, attr, fn, arg);
  return create_traced(th, attr, fn, arg, false, __builtin_return_address(0));
}

/* C11 (glibc creates these with its internal pthread_create, unseen): the
 * start function returns int, which the trampoline calls as such. */
CTRACE__PL_EXPORT int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg) {
  if (ctrace__pl_off()) return real_thrd_create()(thr, fn, arg);
  int err = create_traced((pthread_t *)thr, NULL, (void *(*)(void *))(void (*)(void))fn, arg, true, NULL);
  return ctrace__pl_thrd_err(err);
}

CTRACE__PL_EXPORT void pthread_exit(void *ret) {
  if (!ctrace__pl_guard) thread_end(NULL);
  real_pthread_exit()(ret);
  __builtin_unreachable();
}

/* Only noted (ctrace__pl_testcancel): a wait that acts on a pending
 * cancellation before its try calls pthread_testcancel once any could be
 * pending, not on every call. */
bool ctrace__pl_cancel_asked;

CTRACE__PL_EXPORT int pthread_cancel(pthread_t th) {
  __atomic_store_n(&ctrace__pl_cancel_asked, true, __ATOMIC_RELAXED);
  return real_pthread_cancel()(th);
}

/* join: GoBlockSync only if the thread has not ended yet (tryjoin). */
CTRACE__PL_EXPORT int pthread_join(pthread_t th, void **ret) {
  if (ctrace__pl_off()) return real_pthread_join()(th, ret);
  int r = real_pthread_tryjoin_np()(th, ret);
  if (r != EBUSY) return r;
  return CTRACE__PL_LINKED_WAIT((const void *)th, CTRACE_BLOCK_SYNC, real_pthread_join()(th, ret));
}

CTRACE__PL_EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abstime) {
  if (ctrace__pl_off()) return real_pthread_timedjoin_np()(th, ret, abstime);
  int r = real_pthread_tryjoin_np()(th, ret);
  if (r != EBUSY) return r;
  return CTRACE__PL_LINKED_WAIT((const void *)th, CTRACE_BLOCK_SYNC, real_pthread_timedjoin_np()(th, ret, abstime));
}

CTRACE__PL_EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clk,
                                           const struct timespec *abstime) {
  /* glibc 2.36 refuses a bad clock before it looks at the thread: tried
   * first, an ended thread would be joined. A tv_nsec out of range it
   * does not check: it waits until the thread ends, as with no time. */
  if (ctrace__pl_off() || ctrace__pl_bad_clock(clk))
    return real_pthread_clockjoin_np()(th, ret, clk, abstime);
  int r = real_pthread_tryjoin_np()(th, ret);
  if (r != EBUSY) return r;
  return CTRACE__PL_LINKED_WAIT((const void *)th, CTRACE_BLOCK_SYNC, real_pthread_clockjoin_np()(th, ret, clk, abstime));
}
