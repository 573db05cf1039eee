/* prestart: a library whose constructor starts a thread when the program's
 * first argument is "prestart". Library constructors run before the shim
 * starts tracing (in __libc_start_main), so the thread exists before the
 * trace, and it ends by returning from its start routine, which the shim
 * does not see. run_signals links it (its "prestart" case).
 *
 * glibc passes argc, argv and envp to constructors. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static int started;

/* 1 once the constructor started its thread. */
int run_prestart_started(void) { return started; }

static void *nap(void *arg) {
  usleep(30000);
  return arg;
}

__attribute__((constructor)) static void start_early(int argc, char **argv, char **envp) {
  (void)envp;
  pthread_t th;
  if (argc > 1 && strcmp(argv[1], "prestart") == 0 && pthread_create(&th, NULL, nap, NULL) == 0) {
    pthread_detach(th);
    started = 1;
  }
}
