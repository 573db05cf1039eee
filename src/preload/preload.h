/* Internals of libctrace-preload.so, the LD_PRELOAD shim behind
 * `ctrace run`: it traces an unmodified, dynamically linked program by
 * interposing libc's thread, synchronization, sleep, I/O, process and
 * allocation functions, and calling libctrace (linked in, its symbols
 * hidden) around them.
 *
 * The model is that of plain threads in libctrace: every thread is its own
 * G on its own P. A wrapper first tries the call without waiting (trylock,
 * sem_trywait, a non-waiting read, a zero timeout): when that succeeds, it
 * is the call, and nothing but (for system calls) GoSysCall is recorded.
 * Only when the thread would really wait does the wrapper record that it
 * blocks, make the real call, and record that it goes on (docs/run.md).
 *
 * Two rules every wrapper follows:
 *   - ctrace__pl_guard > 0 means "inside the shim or the tracer": the call
 *     is passed straight to libc. libctrace's own objects call the same
 *     interposed functions (its mutexes, its writer's write(2), libdw's
 *     malloc at stop), and its helper threads run guarded for life.
 *   - Every call into libctrace goes through CTRACE__PL_CALL, which holds
 *     the guard; a terminating signal that arrives meanwhile is deferred
 *     to the guard's release (signals.c), so the trace is never finished
 *     while this thread holds one of the tracer's locks.
 */
#ifndef CTRACE_PRELOAD_H
#define CTRACE_PRELOAD_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ctrace/ctrace.h"

#define CTRACE__PL_EXPORT __attribute__((visibility("default")))
#define CTRACE__PL_HIDDEN __attribute__((visibility("hidden")))
#define CTRACE__PL_INLINE static inline __attribute__((always_inline))
#define ctrace__pl_likely(x) __builtin_expect(!!(x), 1)
#define ctrace__pl_unlikely(x) __builtin_expect(!!(x), 0)

/* Initial-exec TLS: a preloaded object's TLS is static, and the access is
 * one instruction. Volatile because a signal handler on the same thread
 * reads them (signals.c). */
extern __thread volatile int ctrace__pl_guard __attribute__((tls_model("initial-exec")))
    CTRACE__PL_HIDDEN;
extern __thread volatile int ctrace__pl_deferred __attribute__((tls_model("initial-exec")))
    CTRACE__PL_HIDDEN;

/* Nonzero while ctrace__pl_sym is in dlsym, which may allocate: malloc.c
 * then serves allocations from its bootstrap arena. */
extern __thread volatile int ctrace__pl_in_dlsym __attribute__((tls_model("initial-exec")))
    CTRACE__PL_HIDDEN;

/* Runs the terminating signal a handler deferred while the guard was held. */
void ctrace__pl_run_deferred(void) CTRACE__PL_HIDDEN;

/* Releases the guard; the last release runs a deferred signal. */
CTRACE__PL_INLINE void ctrace__pl_unguard(void) {
  if (--ctrace__pl_guard == 0 && ctrace__pl_unlikely(ctrace__pl_deferred)) ctrace__pl_run_deferred();
}

#define CTRACE__PL_CALL(expr) \
  do {                        \
    ctrace__pl_guard++;       \
    expr;                     \
    ctrace__pl_unguard();     \
  } while (0)

/* The guard a malloc.c wrapper holds around libc's allocator: a count of
 * its own, so that a crash handler can tell the program's call into libc's
 * allocator (ctrace__pl_guard == CTRACE__PL_GUARD_ALLOC: glibc's abort on a
 * pointer malloc never gave, which finishes the trace) from the shim's and
 * the tracer's own code (signals.c). */
#define CTRACE__PL_GUARD_ALLOC 0x10000

/* True when the wrapper should only pass the call on: inside the shim or
 * the tracer, or tracing is off (not started, finished, a forked child). */
CTRACE__PL_INLINE bool ctrace__pl_off(void) {
  return ctrace__pl_guard != 0 || !ctrace_enabled();
}

/* ---- real functions (shim.c) ---------------------------------------------
 *
 * The next definition of a symbol after ours (libc's, or a sanitizer's),
 * found with dlsym(RTLD_NEXT) on first use. dlsym may allocate; malloc.c
 * serves those allocations from its bootstrap arena. */
void *ctrace__pl_sym(const char *name, const char *version) CTRACE__PL_HIDDEN;

/* Declares the pointer to the real `name` and a function real_name()
 * that returns it, resolving it on first use (racing threads store the
 * same value). */
#define CTRACE__PL_REAL(ret, name, params) CTRACE__PL_REAL_V(ret, name, params, NULL)
#define CTRACE__PL_REAL_V(ret, name, params, version)                              \
  typedef ret(*name##_fn) params;                                                  \
  static name##_fn real_##name##_p;                                                \
  static inline name##_fn real_##name(void) {                                      \
    name##_fn f = __atomic_load_n(&real_##name##_p, __ATOMIC_RELAXED);             \
    if (ctrace__pl_unlikely(!f)) {                                                 \
      f = (name##_fn)ctrace__pl_sym(#name, version);                               \
      __atomic_store_n(&real_##name##_p, f, __ATOMIC_RELAXED);                     \
    }                                                                              \
    return f;                                                                      \
  }

/* ---- process state (shim.c) ------------------------------------------------ */

/* The pid that writes the trace (0 if this process does not trace). A
 * vfork child shares our memory but not our pid: exec and _exit compare. */
extern pid_t ctrace__pl_pid CTRACE__PL_HIDDEN;
/* True in the process that writes the trace, after start and before the
 * trace is finished or the process forked. */
bool ctrace__pl_tracing(void) CTRACE__PL_HIDDEN;
/* Finishes the trace (ctrace_stop), once, on the finisher thread; waits
 * for it, at most timeout_ms if > 0. Safe from a signal handler. */
void ctrace__pl_finish(int timeout_ms) CTRACE__PL_HIDDEN;
/* Finishes the trace before an exec of prog, and returns the environment
 * to exec it with: envp plus what traces the new image (or envp itself,
 * when this process is not the tracing one or prog cannot be traced).
 * ctrace__pl_spawn_env: the same for a child posix_spawn starts, which
 * with -f traces into FILE.pid<PID>; the trace goes on. ctrace__pl_env_free
 * frees what they allocated once the exec failed or the spawn returned;
 * errno is kept. */
char **ctrace__pl_exec_env(const char *prog, char *const envp[]) CTRACE__PL_HIDDEN;
char **ctrace__pl_spawn_env(const char *prog, char *const envp[]) CTRACE__PL_HIDDEN;
void ctrace__pl_env_free(char **env, char *const envp[]) CTRACE__PL_HIDDEN;
/* In a forked child: starts the child's own trace if forks are followed. */
void ctrace__pl_follow_fork(void) CTRACE__PL_HIDDEN;
/* The finisher ends, for a pause (ns.c); false, and nothing done, if the
 * trace is being finished. Then ctrace__pl_finisher_resume starts one
 * again, which takes up what was asked of it meanwhile. */
bool ctrace__pl_finisher_pause(void) CTRACE__PL_HIDDEN;
void ctrace__pl_finisher_resume(void) CTRACE__PL_HIDDEN;

/* The real _exit, for the signal code's last resort. */
void ctrace__pl_real_exit(int status) __attribute__((noreturn)) CTRACE__PL_HIDDEN;

/* ---- threads (threads.c) ---------------------------------------------------- */

/* Creates a thread of the shim itself (the finisher): never traced, all
 * signals blocked. */
int ctrace__pl_internal_thread(void *(*fn)(void *), void *arg) CTRACE__PL_HIDDEN;
/* Set once the program has asked for a thread's cancellation (threads.c):
 * until then none can be pending. */
extern bool ctrace__pl_cancel_asked CTRACE__PL_HIDDEN;
/* Acts on a pending cancellation, as pthread_testcancel, at the cost of a
 * load in a program that never cancels. Relaxed: a cancellation asked for
 * before the caller's call (happens-before) is seen; one asked for
 * meanwhile may be acted on at the next cancellation point, as untraced. */
CTRACE__PL_INLINE void ctrace__pl_testcancel(void) {
  if (ctrace__pl_unlikely(__atomic_load_n(&ctrace__pl_cancel_asked, __ATOMIC_RELAXED)))
    pthread_testcancel();
}
/* glibc's mapping of an errno value to a C11 thrd_* result (c11threads.c). */
int ctrace__pl_thrd_err(int err) CTRACE__PL_HIDDEN;
/* Counts the program's threads alive now; before the tracer's exist. */
void ctrace__pl_threads_init(void) CTRACE__PL_HIDDEN;
/* In a forked child: the caller is the only thread, and main's now. */
void ctrace__pl_threads_fork_child(void) CTRACE__PL_HIDDEN;
/* True when the process has no thread alive but the tracer's and the
 * shim's own (an ended main is a zombie: not alive; a thread that runs its
 * destructors after its G ended is). Reads /proc. */
bool ctrace__pl_only_internal_left(void) CTRACE__PL_HIDDEN;
/* The kernel's count of the process's threads (/proc/self/stat), 0 if
 * unknown. */
long ctrace__pl_threads_now(void) CTRACE__PL_HIDDEN;
/* True when the caller is the program's only thread: the process has no
 * other alive but the tracer's and the shim's own (ns.c). Reads /proc. */
bool ctrace__pl_alone(void) CTRACE__PL_HIDDEN;
/* The unshare and setns wrappers (ns.c), for syscall()'s (futex.c). */
int ctrace__pl_unshare(int flags) CTRACE__PL_HIDDEN;
int ctrace__pl_setns(int fd, int nstype) CTRACE__PL_HIDDEN;
/* Has the finisher poll ctrace__pl_only_internal_left() and call exit(0)
 * when it holds (shim.c): the program's last thread has ended its G (its
 * cleanup handlers and destructors may still run), or main has, and only
 * threads older than the trace, which may end unseen, are left. */
void ctrace__pl_watch_last(void) CTRACE__PL_HIDDEN;
/* True once the calling thread's goroutine has ended (the guard is then
 * held for good, which is not "inside the tracer"). */
bool ctrace__pl_thread_ended(void) CTRACE__PL_HIDDEN;

/* ---- the program's memory (user.c) ------------------------------------------- */

/* Copies n bytes the program passed at p into dst, as the kernel would
 * read them for the call: false where p points nowhere, which is the
 * call's EFAULT to say, not a fault of the wrapper's. At once where p is
 * on the calling thread's stack (mapped); else by process_vm_readv. */
bool ctrace__pl_copy_in(void *dst, const void *p, size_t n) CTRACE__PL_HIDDEN;

/* Whether the time at t (not NULL) is zero, or at a pointer to nowhere:
 * a call given it does not wait (it returns, or says EFAULT), and is
 * made as it stands. */
static inline bool ctrace__pl_time_zero(const struct timespec *t) {
  struct timespec v;
  return !ctrace__pl_copy_in(&v, t, sizeof v) || (v.tv_sec == 0 && v.tv_nsec == 0);
}

/* ---- heap (malloc.c) ------------------------------------------------------- */

/* Adds the calling thread's uncounted heap change to the total (thread end). */
void ctrace__pl_heap_flush(void) CTRACE__PL_HIDDEN;

/* ---- signals (signals.c) ----------------------------------------------------- */

/* Installs the handlers that finish the trace before the process dies,
 * and, for a flight recorder, the one of snap_sig (0: none), which asks
 * for a snapshot (ctrace__pl_snapshot_request) and leaves the rest to the
 * program's own handler, if it installs one. */
void ctrace__pl_signals_init(int snap_sig) CTRACE__PL_HIDDEN;
/* Flight recorder: a snapshot is wanted (the finisher writes it), or the
 * trace is finished because of a crash (set before ctrace__pl_finish).
 * Both safe from a signal handler. */
void ctrace__pl_snapshot_request(void) CTRACE__PL_HIDDEN;
extern volatile sig_atomic_t ctrace__pl_crash_sig CTRACE__PL_HIDDEN;

/* ---- thread names (names.c) -------------------------------------------------- */

/* libctrace (src/runtime/names.c): the calling thread's system name
 * changed; another's did (th, or tid if not 0), to name (NULL: read it). */
void ctrace__thread_renamed(void) CTRACE__PL_HIDDEN;
void ctrace__thread_renamed_other(pthread_t th, pid_t tid, const char *name) CTRACE__PL_HIDDEN;

/* Descriptors below this number opened for writing on a thread's comm
 * file hold that thread's tid here (0: none). */
#define CTRACE__PL_COMM_FDS 1024
extern _Atomic pid_t ctrace__pl_comm_tid[CTRACE__PL_COMM_FDS] CTRACE__PL_HIDDEN;
void ctrace__pl_comm_written(pid_t tid) CTRACE__PL_HIDDEN;

/* After a write to fd that the kernel could not try (procfs cannot): if
 * fd is a comm file, its thread was renamed. One load. */
CTRACE__PL_INLINE void ctrace__pl_comm_check(int fd) {
  if ((unsigned)fd >= CTRACE__PL_COMM_FDS) return;
  pid_t tid = __atomic_load_n(&ctrace__pl_comm_tid[fd], __ATOMIC_RELAXED);
  if (ctrace__pl_unlikely(tid != 0)) ctrace__pl_comm_written(tid);
}

/* ---- helpers for blocking wrappers ------------------------------------------ */

/* libctrace (src/runtime/events.c): ctrace_thread_resume, but a G nobody
 * unblocked unblocks itself with the one frame why, a function named for
 * the reason (poll.c). */
void ctrace__thread_resume_why(uintptr_t why) CTRACE__PL_HIDDEN;

/* Records expr (a call into libctrace) leaving errno as it was: the
 * events are written around the real call, and the program reads errno
 * as that call left it (or as it was, when the call succeeds). */
#define CTRACE__PL_CALL_KEEP_ERRNO(expr) \
  do {                                   \
    int pl_errno_ = errno;               \
    CTRACE__PL_CALL(expr);               \
    errno = pl_errno_;                   \
  } while (0)

/* The thread blocks for reason (a CTRACE_BLOCK_*) / goes on. Inline, so
 * that the stack recorded starts at the wrapper, which bears the name of
 * the libc function the program called. */
#define CTRACE__PL_BLOCK(reason) CTRACE__PL_CALL_KEEP_ERRNO(ctrace_go_block(reason))
#define CTRACE__PL_RESUME() CTRACE__PL_CALL_KEEP_ERRNO(ctrace_thread_resume())

/* Arguments of a timed wait that glibc refuses: a clock its futexes do
 * not take (any but CLOCK_REALTIME and CLOCK_MONOTONIC), a tv_nsec out of
 * [0, 1e9). Each family checks them at its own point (before it takes a
 * free lock, or only once it would wait; NULL is a crash in some, a wait
 * without end in others): each wrapper that meets them passes the call to
 * glibc untried and unrecorded, so that what it takes and returns is
 * glibc's own. A try made first would take what glibc refuses (issue 31). */
CTRACE__PL_INLINE bool ctrace__pl_bad_clock(clockid_t clk) {
  return clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC;
}
CTRACE__PL_INLINE bool ctrace__pl_bad_nsec(const struct timespec *t) {
  return (unsigned long)t->tv_nsec >= 1000000000ul;
}
/* A NULL time. The headers declare the time nonnull, so the compiler would
 * drop a plain test (and read the NULL one): the empty asm hides what it
 * believes of the pointer. */
CTRACE__PL_INLINE bool ctrace__pl_no_time(const struct timespec *t) {
  __asm__("" : "+r"(t));
  return t == NULL;
}

#endif
