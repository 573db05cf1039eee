/* Namespaces: unshare and setns, which want a process of one thread.
 *
 * The kernel lets a process enter a new user namespace (unshare with
 * CLONE_NEWUSER, setns to a user namespace) only while it has a single
 * thread, and another mount or time namespace (setns) only while no other
 * thread shares its root and working directory, as every pthread does;
 * unshare with CLONE_THREAD, CLONE_SIGHAND or CLONE_VM the same. Otherwise
 * the call fails with EINVAL. The tracer's own threads (the writer of the
 * trace, or the flight recorder's, and the shim's finisher) would make
 * every traced program fail there, though it has one thread of its own:
 * `unshare -U`, `nsenter -m`, bubblewrap, the set-up of container runtimes.
 *
 * So where the program has no thread but the caller, the wrappers pause
 * the tracer's threads around the call: they end, what they hold kept
 * (the trace's descriptor, the queue of events, the flight recorder's
 * window), the real call runs in a process of one thread, and new threads
 * take over after it, whatever it returned. Tracing goes on meanwhile:
 * events queue for the writer. The caller holds the guard throughout, so
 * nothing of the program runs in between; a terminating signal waits for
 * the end (preload.h). Only these two calls pay, a few hundred
 * microseconds (two threads ended and started, a file opened through
 * /proc); no other wrapper changes.
 *
 * After unshare(CLONE_NEWPID) the process may start no thread at all
 * (one would be in another pid namespace than the process): the writer
 * then is not a thread (src/runtime/writer.c, go_inline), there is no
 * finisher (the thread that exits or execs finishes the trace itself),
 * and the flight recorder's window ends there.
 *
 * Where the program has threads of its own, the call fails as it does
 * untraced, and goes straight through. syscall(SYS_unshare, ...) and
 * SYS_setns come here too (futex.c). Not seen: the system calls made with
 * the instruction itself (Go's, a program's own assembly) and inside libc,
 * which fail as before; see docs/run.md, Limits.
 */
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

CTRACE__PL_REAL(int, unshare, (int))
CTRACE__PL_REAL(int, setns, (int, int))

int ctrace__pause(void) CTRACE__PL_HIDDEN;  /* libctrace: src/runtime/tracer.c */
int ctrace__resume(void) CTRACE__PL_HIDDEN;

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Says once why a pause could not be made: the call then fails as in a
 * process with threads, and the program's error should not be a mystery. */
static void pause_failed(const char *call, const char *why) {
  static _Atomic bool said;
  if (atomic_exchange(&said, true)) return;
  fprintf(stderr, "ctrace: cannot pause the tracer's threads for %s (%s): it sees a process of several threads\n",
          call, why);
}

/* Pauses the tracer's threads if the caller is the program's only thread.
 * True if it did: resume_threads after the call. Guarded. */
static bool pause_threads(const char *call) {
  /* Not in a vfork child: it shares our memory, not our threads. */
  if (!ctrace__pl_tracing() || ctrace__pl_pid != getpid() || !ctrace__pl_alone()) return false;
  if (!ctrace__pl_finisher_pause()) return false;
  int err = ctrace__pause();
  if (err) {
    ctrace__pl_finisher_resume();
    pause_failed(call, ctrace_strerror(err));
    return false;
  }
  /* A thread is gone from the process a moment after its joiner returns
   * (glibc's join waits for the kernel to clear its tid, which comes
   * first), and the call counts the threads: wait for that, 1 s at most. */
  for (int i = 0; i < 20000 && ctrace__pl_threads_now() > 1; i++) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  return true;
}

static void resume_threads(const char *call) {
  int err = ctrace__resume();
  ctrace__pl_finisher_resume();
  if (err)
    fprintf(stderr, "ctrace: no writer thread after %s: the trace ends there: %s\n", call,
            ctrace_strerror(err));
}

/* The flags that want a process of one thread (kernel/fork.c,
 * check_unshare_flags: CLONE_NEWUSER implies CLONE_THREAD). */
#define UNSHARE_ALONE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

/* Inline, so that the stack recorded starts at the function the program
 * called, unshare or setns (through syscall(): at ctrace__pl_unshare or
 * _setns, which syscall calls). */
CTRACE__PL_INLINE int do_unshare(int flags) {
  if (ctrace__pl_off() || !(flags & UNSHARE_ALONE)) return real_unshare()(flags);
  CTRACE__PL_SYSCALL();
  ctrace__pl_guard++;
  bool paused = pause_threads("unshare");
  int r = real_unshare()(flags);
  int e = errno;
  if (paused) resume_threads("unshare");
  ctrace__pl_unguard();
  errno = e;
  return r;
}

/* nstype 0 (any) or a pidfd's set of namespaces may hold one of them. */
#define SETNS_ALONE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWTIME)

CTRACE__PL_INLINE int do_setns(int fd, int nstype) {
  if (ctrace__pl_off() || (nstype && !(nstype & SETNS_ALONE))) return real_setns()(fd, nstype);
  CTRACE__PL_SYSCALL();
  ctrace__pl_guard++;
  bool paused = pause_threads("setns");
  int r = real_setns()(fd, nstype);
  int e = errno;
  if (paused) resume_threads("setns");
  ctrace__pl_unguard();
  errno = e;
  return r;
}

CTRACE__PL_EXPORT int unshare(int flags) { return do_unshare(flags); }
CTRACE__PL_EXPORT int setns(int fd, int nstype) { return do_setns(fd, nstype); }
int ctrace__pl_unshare(int flags) { return do_unshare(flags); }
int ctrace__pl_setns(int fd, int nstype) { return do_setns(fd, nstype); }
