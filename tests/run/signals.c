/* signals: ways a traced process ends, and a program's own handlers.
 *
 *   run_signals term      a thread sends SIGTERM to the process while main
 *                         waits in pthread_join: dies of SIGTERM
 *   run_signals handler   installs its own SIGINT handler (after checking
 *                         that sigaction reports SIG_DFL, as without the
 *                         shim), raises SIGINT, sees its handler run,
 *                         exits 0 normally
 *   run_signals segv      a thread writes through a null pointer: dies of
 *                         SIGSEGV
 *   run_signals abort     calls abort() from a thread: dies of SIGABRT
 *   run_signals _exit     a thread calls _exit(7) while main waits: exit 7
 *   run_signals exit      main calls exit(5) while two threads still run,
 *                         one of them locking and sleeping: exit 5
 *   run_signals pthread_exit
 *                         main calls pthread_exit while a thread sleeps
 *                         20 ms and returns: the process exits 0 when that
 *                         last thread ends (the tracer's own threads must
 *                         not keep it alive)
 *   run_signals prestart  the same, the sleeping thread being one a library
 *                         constructor started before the trace (prestart.c)
 *
 * In every case the trace must be complete (or, for the crashes, as
 * complete as the shim could make it) and valid.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int run_prestart_started(void); /* prestart.c */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t handled;

static void on_int(int sig) { handled = sig; }

static void *spin(void *arg) {
  for (;;) {
    pthread_mutex_lock(&mu);
    usleep(100);
    pthread_mutex_unlock(&mu);
    usleep(100);
  }
  return arg;
}

static void *nap(void *arg) {
  usleep(20000);
  return arg;
}

static void *terminate(void *arg) {
  const char *how = arg;
  usleep(20000);
  if (strcmp(how, "term") == 0) kill(getpid(), SIGTERM);
  if (strcmp(how, "segv") == 0) *(volatile int *)(uintptr_t)0 = 1;
  if (strcmp(how, "abort") == 0) abort();
  if (strcmp(how, "_exit") == 0) _exit(7);
  pause();
  return NULL;
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "term";
  pthread_t th, sp;
  if (strcmp(how, "pthread_exit") == 0) {
    if (pthread_create(&th, NULL, nap, NULL) != 0) return 1;
    pthread_exit(NULL);
  }
  if (strcmp(how, "prestart") == 0) {
    if (!run_prestart_started()) return 1;
    pthread_exit(NULL);
  }
  if (pthread_create(&sp, NULL, spin, NULL) != 0) return 1;
  if (strcmp(how, "handler") == 0) {
    struct sigaction old, act;
    if (sigaction(SIGINT, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO)) {
      fprintf(stderr, "signals: SIGINT's disposition is not SIG_DFL\n");
      return 1;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = on_int;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGINT, &act, NULL) != 0) return 1;
    raise(SIGINT);
    if (handled != SIGINT) return 1;
    if (signal(SIGINT, SIG_DFL) != on_int) return 1;
    printf("signals: handled SIGINT\n");
    return 0;
  }
  if (strcmp(how, "exit") == 0) {
    usleep(20000);
    exit(5);
  }
  if (pthread_create(&th, NULL, terminate, (void *)how) != 0) return 1;
  pthread_join(th, NULL);
  return 1;
}
