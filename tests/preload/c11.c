/* c11: the ping-pong of pingpong.c in C11 threads (thrd_*, mtx_*, cnd_*),
 * which glibc builds on its internal pthread functions, out of the
 * wrappers' sight unless the shim maps them itself.
 *
 *   run_c11 [ROUNDS]      (default 200)
 *
 * main creates the partner with thrd_create, sleeps 10 ms (thrd_sleep),
 * plays ROUNDS rounds over mtx_lock/cnd_wait, and joins the partner
 * (thrd_join), whose int result (7) must come back. Prints "c11 rounds=N
 * result=7" and exits 0. Under `ctrace run`: one goroutine created, at
 * least 2 * (ROUNDS - 1) GoBlockCond, a GoSleep, the partner's GoEnd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>

static mtx_t mu;
static cnd_t cv;
static int turn; /* 0: main's, 1: the partner's; under mu */
static long rounds;

static int partner(void *arg) {
  (void)arg;
  mtx_lock(&mu);
  for (long i = 0; i < rounds; i++) {
    while (turn != 1) cnd_wait(&cv, &mu);
    turn = 0;
    cnd_signal(&cv);
  }
  mtx_unlock(&mu);
  return 7;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atol(argv[1]) : 200;
  if (mtx_init(&mu, mtx_plain) != thrd_success || cnd_init(&cv) != thrd_success) return 1;
  thrd_t th;
  if (thrd_create(&th, partner, NULL) != thrd_success) return 1;
  struct timespec nap = {0, 10000000};
  if (thrd_sleep(&nap, NULL) != 0) return 1;
  mtx_lock(&mu);
  for (long i = 0; i < rounds; i++) {
    turn = 1;
    cnd_signal(&cv);
    while (turn != 0) cnd_wait(&cv, &mu);
  }
  mtx_unlock(&mu);
  int result = 0;
  if (thrd_join(th, &result) != thrd_success) return 1;
  printf("c11 rounds=%ld result=%d\n", rounds, result);
  return result == 7 ? 0 : 1;
}
