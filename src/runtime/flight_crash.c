/* The flight recorder's crash snapshot (ctrace_flight_options.crash_path):
 * on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT the window is written to a
 * file, and the signal then goes on to the disposition it had before the
 * recorder started (the program's handler, or the default action: the
 * same exit status and core dump as without ctrace).
 *
 * A snapshot takes locks, ends a generation (waiting for every thread's
 * write section) and symbolizes stacks, none of which a signal handler may
 * do. So a helper thread, started with the recorder and asleep on a futex
 * until then, writes it; the handler only wakes it and waits for it to
 * finish, with futex calls (async-signal-safe), for at most CRASH_WAIT_MS.
 * The wait is bounded because the crash may have left the tracer unable
 * to finish: a crash inside a write section (the generation's end waits
 * for it for good), or memory the snapshot needs corrupted. The signal
 * then goes on without the file. A second thread crashing meanwhile waits
 * for the same snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "sysfutex.h"

#define CRASH_WAIT_MS 10000

static const int crash_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static char crash_path[PATH_MAX];
static struct sigaction prev[NSIG];
static volatile sig_atomic_t installed[NSIG];
/* The helper's futex words: req 1 asks for the snapshot, 2 for the
 * helper to end; done is 1 once the snapshot is written (or failed),
 * exited once the helper is about to return. The helper is detached:
 * after a crash the process may end while it is still there. */
static _Atomic int req, done, exited;
static bool helper_on;

static long futex(_Atomic int *word, int op, int val, const struct timespec *timeout) {
  return ctrace__futex(word, op, val, timeout);
}

static void *helper_main(void *arg) {
  (void)arg;
  int r;
  while ((r = atomic_load(&req)) == 0) futex(&req, FUTEX_WAIT_PRIVATE, 0, NULL);
  if (r == 1) {
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      int err = ctrace__flight_write(fd, true);
      close(fd);
      if (err == CTRACE_EEMPTY) unlink(crash_path);
    }
    atomic_store(&done, 1);
    futex(&done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
  }
  atomic_store(&exited, 1);
  futex(&exited, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
  return NULL;
}

static void handler(int sig, siginfo_t *info, void *uc) {
  int e = errno;
  int expect = 0;
  if (atomic_compare_exchange_strong(&req, &expect, 1)) futex(&req, FUTEX_WAKE_PRIVATE, 1, NULL);
  if (atomic_load(&req) == 1) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!atomic_load(&done)) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
      if (ms >= CRASH_WAIT_MS) break;
      struct timespec slice = {0, 100 * 1000000};
      futex(&done, FUTEX_WAIT_PRIVATE, 0, &slice);
    }
  }
  /* The disposition from before takes over for good. */
  installed[sig] = 0;
  errno = e;
  ctrace__sig_hand_back(sig, prev[sig], info, uc, sigaction);
}

bool ctrace__flight_crash_armed(void) { return helper_on; }

int ctrace__flight_crash_arm(const char *path) {
  if (strlen(path) >= sizeof crash_path) return CTRACE_EINVAL;
  strcpy(crash_path, path);
  atomic_store(&req, 0);
  atomic_store(&done, 0);
  atomic_store(&exited, 0);
  pthread_t helper;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&helper, &attr, helper_main, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) return CTRACE_ENOMEM;
  helper_on = true;
  for (size_t i = 0; i < sizeof crash_sigs / sizeof *crash_sigs; i++) {
    int sig = crash_sigs[i];
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = handler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (sigaction(sig, &ours, &prev[sig]) == 0) installed[sig] = 1;
  }
  return 0;
}

void ctrace__flight_crash_disarm(void) {
  for (size_t i = 0; i < sizeof crash_sigs / sizeof *crash_sigs; i++) {
    int sig = crash_sigs[i];
    struct sigaction cur;
    /* Only where ours is still there: a handler the program installed
     * since stays. */
    if (installed[sig] && sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == handler)
      sigaction(sig, &prev[sig], NULL);
    installed[sig] = 0;
  }
  if (!helper_on) return;
  int expect = 0;
  if (atomic_compare_exchange_strong(&req, &expect, 2)) futex(&req, FUTEX_WAKE_PRIVATE, 1, NULL);
  while (!atomic_load(&exited)) futex(&exited, FUTEX_WAIT_PRIVATE, 0, NULL);
  helper_on = false;
}
