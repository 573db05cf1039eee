/* A thread created behind the shim's back: with libc's own pthread_create,
 * found in libc itself, as jemalloc and other libraries loaded after the
 * shim create theirs (dlsym(RTLD_NEXT) from them skips it). Its first
 * call the tracer sees is pthread_setname_np; its start function must
 * still be behind_worker, where its stack begins above libc's.
 * Built without the sanitizers: ASan does not know a thread its own
 * pthread_create did not make. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *behind_worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "behind");
  for (int i = 0; i < 3; i++) usleep(1000);
  return NULL;
}

int main(void) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  typedef int create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  create_fn *create = libc ? (create_fn *)dlsym(libc, "pthread_create") : NULL;
  pthread_t t;
  if (!create || create(&t, NULL, behind_worker, NULL) != 0) {
    fprintf(stderr, "behind: no libc pthread_create\n");
    return 1;
  }
  pthread_join(t, NULL);
  puts("done");
  return 0;
}
