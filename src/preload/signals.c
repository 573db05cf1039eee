/* Signals: the trace is finished before a signal ends the process, and the
 * process then ends the way it would have.
 *
 * At start, the shim installs its handler for the signals whose default
 * action ends the process:
 *   - terminating ones (HUP INT QUIT TERM PIPE ALRM USR1 USR2), only where
 *     the disposition is still the default: a program (or library) that
 *     handles or ignores one keeps doing so, and its handler decides;
 *   - crash ones (SEGV BUS FPE ILL ABRT TRAP SYS), unless ignored; a
 *     handler already there (a sanitizer's) is chained to.
 * The handler asks the finisher thread (shim.c) to finish the trace and
 * waits for it, bounded by a timeout, using async-signal-safe calls only;
 * then it restores the previous disposition and raises the signal again,
 * or calls the previous handler. A crash inside the shim or the tracer
 * itself (guard held) does not wait: the trace may be lost, the crash is
 * not hidden. But for one in libc's allocator, called by a malloc.c wrapper
 * for the program (the guard is then CTRACE__PL_GUARD_ALLOC): glibc's
 * abort on a free of a pointer malloc never gave is the program's crash,
 * and finishes the trace. glibc may hold that arena's lock; the finisher
 * allocates from its own arena (glibc gives each thread one, up to 8 per
 * core), and should it need that lock the timeout ends the wait. Finishing after a crash is best effort: the crashed thread's
 * last events may be missing, and a crash that corrupted the tracer's own
 * memory can keep the trace from being written (the timeout then lets the
 * process die anyway).
 *
 * A terminating signal that arrives while its thread is inside the shim
 * or the tracer (guard held) is deferred to the guard's release: finishing
 * then could wait for a lock that thread holds.
 *
 * The program sees what it would see without the shim: sigaction and
 * signal report the previous disposition where ours is installed, and a
 * handler the program installs replaces ours (setting SIG_DFL keeps ours,
 * which acts as the default). sigset(3) and calls made inside libc are not
 * seen; they simply replace ours.
 *
 * A flight recorder's snapshot signal (SIGUSR2 unless named) is the
 * exception: ours stays installed whatever the program installs, asks
 * for a snapshot, and then calls the program's handler, if it has one
 * (with the program's mask and flags not applied); its default action
 * (ending the process) is not taken.
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "preload.h"

/* libctrace: src/runtime/handback.c */
void ctrace__sig_hand_back(int sig, struct sigaction prev, siginfo_t *info, void *uc,
                           int (*install)(int, const struct sigaction *, struct sigaction *))
    CTRACE__PL_HIDDEN;

/* How long a signal handler waits for the trace to be finished. */
#define CTRACE__PL_SIGNAL_TIMEOUT_MS 10000

CTRACE__PL_REAL(int, sigaction, (int, const struct sigaction *, struct sigaction *))

static const int terminating[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2};
static const int crashing[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};

/* Per signal with our handler installed: the disposition it replaced, as
 * the program sees it. */
static struct sigaction prev[NSIG];
static volatile sig_atomic_t installed[NSIG], is_crash[NSIG];
static int snap_sig;
volatile sig_atomic_t ctrace__pl_crash_sig;

static bool is_default(const struct sigaction *a) {
  return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

static void handler(int sig, siginfo_t *info, void *uc);

static bool is_ours(const struct sigaction *a) {
  return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == handler;
}

/* The previous disposition takes over for good, and deals with sig. */
static void hand_back(int sig, siginfo_t *info, void *uc) {
  installed[sig] = 0;
  ctrace__sig_hand_back(sig, prev[sig], info, uc, real_sigaction());
}

static void finish_and_die(int sig) {
  ctrace__pl_finish(CTRACE__PL_SIGNAL_TIMEOUT_MS);
  hand_back(sig, NULL, NULL);
  /* Only a terminating signal that was default gets here alive if
   * raising failed; end as it would have. */
  ctrace__pl_real_exit(128 + sig);
}

void ctrace__pl_run_deferred(void) {
  int sig = ctrace__pl_deferred;
  ctrace__pl_deferred = 0;
  if (sig) finish_and_die(sig);
}

/* The snapshot signal: a snapshot, then the program's handler, if any. */
static void snap_handler(int sig, siginfo_t *info, void *uc) {
  ctrace__pl_snapshot_request();
  struct sigaction p = prev[sig];
  if (p.sa_flags & SA_SIGINFO) {
    if (p.sa_sigaction) p.sa_sigaction(sig, info, uc);
  } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
    p.sa_handler(sig);
  }
}

static void handler(int sig, siginfo_t *info, void *uc) {
  int e = errno;
  if (sig == snap_sig) {
    snap_handler(sig, info, uc);
  } else if (is_crash[sig]) {
    ctrace__pl_crash_sig = sig;
    if (ctrace__pl_guard == 0 || ctrace__pl_guard == CTRACE__PL_GUARD_ALLOC)
      ctrace__pl_finish(CTRACE__PL_SIGNAL_TIMEOUT_MS);
    hand_back(sig, info, uc);
  } else if (ctrace__pl_guard != 0) {
    ctrace__pl_deferred = sig;
  } else {
    finish_and_die(sig);
  }
  errno = e;
}

static void install(int sig, bool crash) {
  struct sigaction cur;
  if (real_sigaction()(sig, NULL, &cur) != 0) return;
  if (sig != snap_sig) {
    if (cur.sa_handler == SIG_IGN && !(cur.sa_flags & SA_SIGINFO)) return;
    if (!crash && !is_default(&cur)) return;
  }
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = handler;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  prev[sig] = cur;
  is_crash[sig] = crash;
  installed[sig] = 1;
  if (real_sigaction()(sig, &ours, NULL) != 0) installed[sig] = 0;
}

void ctrace__pl_signals_init(int snapshot_sig) {
  snap_sig = snapshot_sig;
  if (snap_sig) install(snap_sig, false);
  for (size_t i = 0; i < sizeof terminating / sizeof *terminating; i++)
    if (terminating[i] != snap_sig) install(terminating[i], false);
  for (size_t i = 0; i < sizeof crashing / sizeof *crashing; i++)
    if (crashing[i] != snap_sig) install(crashing[i], true);
}

/* ---- what the program sees --------------------------------------------------------- */

CTRACE__PL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig <= 0 || sig >= NSIG || !installed[sig]) return real_sigaction()(sig, act, old);
  struct sigaction cur;
  if (real_sigaction()(sig, NULL, &cur) != 0 || !is_ours(&cur)) {
    /* Replaced behind our back (by libc's own signal(), say). */
    installed[sig] = 0;
    return real_sigaction()(sig, act, old);
  }
  struct sigaction seen = prev[sig];
  if (act) {
    if (sig == snap_sig || (is_default(act) && is_default(&prev[sig]))) {
      prev[sig] = *act; /* ours stays: it is the default, plus the trace */
    } else {
      int r = real_sigaction()(sig, act, NULL);
      if (r != 0) return r;
      installed[sig] = 0;
    }
  }
  if (old) *old = seen;
  return 0;
}

CTRACE__PL_REAL(__sighandler_t, signal, (int, __sighandler_t))
CTRACE__PL_REAL(__sighandler_t, __sysv_signal, (int, __sighandler_t))

/* signal(3) as glibc builds it on sigaction: BSD semantics for signal,
 * System V ones (reset, no mask) for sysv_signal. */
static __sighandler_t simple_signal(int sig, __sighandler_t h, bool sysv) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = h;
  sigemptyset(&act.sa_mask);
  if (sysv) {
    act.sa_flags = SA_RESETHAND | SA_NODEFER;
  } else {
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
  }
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

CTRACE__PL_EXPORT __sighandler_t signal(int sig, __sighandler_t h) {
  if (sig <= 0 || sig >= NSIG || !installed[sig]) return real_signal()(sig, h);
  return simple_signal(sig, h, false);
}

CTRACE__PL_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h) { return signal(sig, h); }

CTRACE__PL_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h) {
  if (sig <= 0 || sig >= NSIG || !installed[sig]) return real___sysv_signal()(sig, h);
  return simple_signal(sig, h, true);
}

CTRACE__PL_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h) {
  return __sysv_signal(sig, h);
}
