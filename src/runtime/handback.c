/* A signal handler of ours hands its signal back to the disposition it
 * replaced (the flight recorder's crash handler, flight_crash.c; the
 * shim's, src/preload/signals.c). */
#include <signal.h>

#include "internal.h"

void ctrace__sig_hand_back(int sig, struct sigaction prev, siginfo_t *info, void *uc,
                           int (*install)(int, const struct sigaction *, struct sigaction *)) {
  install(sig, &prev, NULL); /* for good: a fault that recurs meets it */
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, uc);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler != SIG_DFL) {
    prev.sa_handler(sig);
    return;
  }
  /* The default action, now: unblocked, the signal ends the process. For
   * a fault, returning would fault again; raising is the same and also
   * covers a signal sent by kill or raise, and traps, after which
   * execution would go on. */
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  pthread_sigmask(SIG_UNBLOCK, &s, NULL);
  raise(sig);
}
