/* pingpong: two threads hand a turn back and forth over a mutex and a
 * condition variable.
 *
 *   run_pingpong [ROUNDS]      (default 1000)
 *
 * Each round, main gives the turn to the partner and waits on the
 * condition variable until it comes back; the partner does the same the
 * other way. Each side must wait once per round (it holds the mutex from
 * giving the turn until it waits), so under `ctrace run` the trace has at
 * least 2 * (ROUNDS - 1) GoBlockCond. Prints "pingpong rounds=N ns=T cpu_ns=C"
 * (the rounds' wall and process CPU time) and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn; /* 0: main's, 1: the partner's; under mu */
static long rounds;

static void *partner(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (long i = 0; i < rounds; i++) {
    while (turn != 1) pthread_cond_wait(&cv, &mu);
    turn = 0;
    pthread_cond_signal(&cv);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atol(argv[1]) : 1000;
  pthread_t th;
  if (pthread_create(&th, NULL, partner, NULL) != 0) return 1;
  long long t0 = now_ns(), c0 = cpu_ns();
  pthread_mutex_lock(&mu);
  for (long i = 0; i < rounds; i++) {
    turn = 1;
    pthread_cond_signal(&cv);
    while (turn != 0) pthread_cond_wait(&cv, &mu);
  }
  pthread_mutex_unlock(&mu);
  long long t1 = now_ns(), c1 = cpu_ns();
  pthread_join(th, NULL);
  printf("pingpong rounds=%ld ns=%lld cpu_ns=%lld\n", rounds, t1 - t0, c1 - c0);
  return 0;
}
