/* Waits for a signal: sigwait, sigwaitinfo and sigtimedwait (a daemon's
 * thread that handles its signals), sigsuspend and pause.
 *
 * The sigwait family is tried first without waiting (sigtimedwait with a
 * zero timeout): a signal of the set already pending is taken by the try,
 * as the call would take it, and is the call's answer; else the real call
 * is the wait, shown as one in a system call (GoSysBlock). glibc's three
 * call its internal sigtimedwait, not through the PLT, so each call is
 * recorded once. sigsuspend and pause return only once a handler has run,
 * and are shown as a wait whenever made.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "io.h"

CTRACE__PL_REAL(int, sigwait, (const sigset_t *, int *))
CTRACE__PL_REAL(int, sigwaitinfo, (const sigset_t *, siginfo_t *))
CTRACE__PL_REAL(int, sigtimedwait, (const sigset_t *, siginfo_t *, const struct timespec *))
CTRACE__PL_REAL(int, sigsuspend, (const sigset_t *))
CTRACE__PL_REAL(int, pause, (void))

/* A signal of set pending, taken (its number, info filled as the call
 * fills it); 0 if none is (or a handler ran: the call would go on to
 * wait); -1 and errno for an error the call would give too. */
static int take_pending(const sigset_t *set, siginfo_t *info) {
  static const struct timespec zero = {0, 0};
  int s = real_sigtimedwait()(set, info, &zero);
  if (s > 0) return s;
  return errno == EAGAIN || errno == EINTR ? 0 : -1;
}

/* sigwait answers an error as its number, not in errno. */
CTRACE__PL_EXPORT int sigwait(const sigset_t *set, int *sig) {
  if (ctrace__pl_off()) return real_sigwait()(set, sig);
  CTRACE__PL_SYSCALL();
  siginfo_t si;
  int s = take_pending(set, &si);
  errno = pl_errno0_;
  if (s > 0) {
    *sig = s;
    return 0;
  }
  if (s < 0) return real_sigwait()(set, sig); /* its error, as it gives it */
  int r;
  CTRACE__PL_SYS_WAIT(r, real_sigwait()(set, sig));
  return r;
}

/* sigtimedwait (timed) or sigwaitinfo, its GoSysCall recorded (errno0:
 * errno before it): a pending signal taken, or the call shown as a wait.
 * Inline: the wait's stack begins at the wrapper. */
CTRACE__PL_INLINE int wait_info(const sigset_t *set, siginfo_t *info, bool timed, const struct timespec *t,
                                int errno0) {
  int s = take_pending(set, info);
  if (s != 0) {
    if (s > 0) errno = errno0;
    return s;
  }
  errno = errno0;
  int r;
  CTRACE__PL_SYS_WAIT(r, timed ? real_sigtimedwait()(set, info, t) : real_sigwaitinfo()(set, info));
  return r;
}

CTRACE__PL_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  if (ctrace__pl_off()) return real_sigwaitinfo()(set, info);
  CTRACE__PL_SYSCALL();
  return wait_info(set, info, false, NULL, pl_errno0_);
}

/* A zero timeout does not wait. An invalid one is the real call's to
 * refuse: the kernel checks it before it looks for a pending signal, which
 * a try would take; so is one at a pointer to nowhere (EFAULT). */
CTRACE__PL_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *t) {
  if (ctrace__pl_off()) return real_sigtimedwait()(set, info, t);
  struct timespec v = {1, 0};
  bool bad = t && !ctrace__pl_copy_in(&v, t, sizeof v);
  bool now = t && v.tv_sec == 0 && v.tv_nsec == 0;
  bool invalid = t && (v.tv_sec < 0 || v.tv_nsec < 0 || v.tv_nsec >= 1000000000);
  if (bad || now || invalid) return real_sigtimedwait()(set, info, t);
  CTRACE__PL_SYSCALL();
  return wait_info(set, info, true, t, pl_errno0_);
}

CTRACE__PL_WAITING_CALL(int, sigsuspend, (const sigset_t *mask), (mask))
CTRACE__PL_WAITING_CALL(int, pause, (void), ())
