/* asan: a program built with -fsanitize=address (and run that way under
 * `ctrace run`, which must preload the ASan runtime before its shim).
 *
 *   run_asan
 *
 * Four threads lock a mutex, wait on a condition variable, allocate and
 * free; main joins them. Prints "asan ok" and exits 0; ASan reports any
 * error it sees (and fails the test by exit status).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static void *worker(void *arg) {
  pthread_mutex_lock(&mu);
  while (!ready) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < 1000; i++) {
    char *p = malloc(64 + (size_t)i);
    memset(p, i, 64 + (size_t)i);
    pthread_mutex_lock(&mu);
    ready += p[0] & 1;
    pthread_mutex_unlock(&mu);
    free(p);
  }
  return arg;
}

int main(void) {
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    if (pthread_create(&th[i], NULL, worker, NULL) != 0) return 1;
  pthread_mutex_lock(&mu);
  ready = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  printf("asan ok\n");
  return 0;
}
