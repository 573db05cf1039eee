/* names_pre: a library whose constructor starts a thread named
 * "pre-start" before the trace begins (library constructors run before
 * the shim starts tracing, in __libc_start_main), so the shim never sees
 * the name given: the tracer reads it at the thread's first traced call.
 * The thread waits, untraced, until names_pre_join lets it go on; then it
 * sleeps (traced) and ends. run_names links it. */
#include <pthread.h>
#include <unistd.h>

static pthread_t th;
static int go[2], started;

static void *pre(void *arg) {
  char c;
  if (read(go[0], &c, 1) != 1) return arg;
  usleep(2000);
  return NULL;
}

__attribute__((constructor)) static void start_early(void) {
  if (pipe(go) != 0 || pthread_create(&th, NULL, pre, NULL) != 0) return;
  started = pthread_setname_np(th, "pre-start") == 0;
}

/* 0 once the thread ran, named, and ended. */
int names_pre_join(void) {
  char c = 1;
  if (!started || write(go[1], &c, 1) != 1) return -1;
  return pthread_join(th, NULL);
}
