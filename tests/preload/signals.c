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
 *                         main calls pthread_exit while a thread waits for
 *                         main's end, then returns: the process exits 0
 *                         when that last thread ends (the tracer's own
 *                         threads must not keep it alive), after the
 *                         cleanup handler and thread-specific data
 *                         destructors of both and the atexit handler ran,
 *                         in that order (printed)
 *   run_signals pthread_exit_last
 *                         the same, the last thread ending with
 *                         pthread_exit and a cleanup handler of its own
 *   run_signals pthread_exit_alone
 *                         main, the only thread, calls pthread_exit: its
 *                         cleanup handler, its destructors (one that sets
 *                         another key, whose destructor runs in the next
 *                         round) and the atexit handler run, exit 0
 *   run_signals prestart  the same, the sleeping thread being one a library
 *                         constructor started before the trace (prestart.c)
 *   run_signals free_stack
 *                         frees a misaligned address on its stack: glibc
 *                         says "free(): invalid pointer" and aborts
 *   run_signals free_inside
 *                         frees a pointer 16 bytes into a block of its
 *                         own: glibc says why and aborts
 *   run_signals realloc_inside
 *                         the same with realloc
 *
 * In every case the trace must be complete (or, for the crashes, as
 * complete as the shim could make it) and valid.
 */
#include <pthread.h>
#include <semaphore.h>
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

/* ---- pthread_exit: what runs after it ---- */

static pthread_key_t key, key2;
static sem_t main_gone;

static void say(void *what) { printf("%s\n", (const char *)what); }

static void at_exit(void) { printf("atexit\n"); }

/* The last of main's destructors lets the other thread end. */
static void main_destructor(void *what) {
  say(what);
  sem_post(&main_gone);
}

/* Sets key2 in the first round of destructors: its own runs in the next. */
static void first_round(void *what) {
  say(what);
  pthread_setspecific(key2, "destructor, second round");
}

static void *nap(void *arg) {
  const char *how = arg;
  sem_wait(&main_gone);
  pthread_setspecific(key2, "destructor of the last thread");
  pthread_cleanup_push(say, "cleanup of the last thread");
  if (strcmp(how, "pthread_exit_last") == 0) pthread_exit(NULL);
  pthread_cleanup_pop(0);
  return NULL;
}

/* main ends with pthread_exit: alone, or before the thread nap. */
static void main_exits(const char *how) {
  pthread_t th;
  if (sem_init(&main_gone, 0, 0) != 0 || atexit(at_exit) != 0) exit(1);
  if (strcmp(how, "pthread_exit_alone") == 0) {
    if (pthread_key_create(&key, first_round) != 0 || pthread_key_create(&key2, say) != 0) exit(1);
    pthread_setspecific(key, "destructor of main");
  } else {
    if (pthread_key_create(&key, main_destructor) != 0 || pthread_key_create(&key2, say) != 0) exit(1);
    pthread_setspecific(key, "destructor of main");
    if (pthread_create(&th, NULL, nap, (void *)how) != 0) exit(1);
  }
  pthread_cleanup_push(say, "cleanup of main");
  pthread_exit(NULL);
  pthread_cleanup_pop(0);
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

/* Pointers malloc never gave: glibc's free and realloc abort with their
 * message, after reading the word before the pointer (0x55 bytes, a block
 * of 'A's: a header no chunk has). */
static void bad_free(const char *how) {
  unsigned char stack[64];
  memset(stack, 0x55, sizeof stack);
  char *p = malloc(64);
  if (!p) exit(1);
  memset(p, 'A', 64);
  /* Through volatiles: the compiler sees what is wrong and warns. */
  unsigned char *volatile on_stack = stack + 17;
  char *volatile inside = p + 16;
  if (strcmp(how, "free_stack") == 0) free(on_stack);
  if (strcmp(how, "free_inside") == 0) free(inside);
  if (strcmp(how, "realloc_inside") == 0) p = realloc(inside, 128);
  printf("signals: %s returned\n", how);
  exit(0);
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "term";
  pthread_t th, sp;
  if (strstr(how, "_stack") || strstr(how, "_inside")) bad_free(how);
  if (strncmp(how, "pthread_exit", 12) == 0) main_exits(how);
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
