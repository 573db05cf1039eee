/* flight: a program for ctrace run --flight (tests/preload/flight_check.sh).
 *
 *   run_flight snap SIG   installs its own handler for SIG (a number),
 *                         sends itself SIG three times, 150 ms apart,
 *                         while a thread locks and sleeps; prints how many
 *                         times its handler ran; exits 7
 *   run_flight bare SIG   the same without a handler of its own (under the
 *                         recorder the signal only takes snapshots)
 *   run_flight crash      a thread stores to an unmapped page after 200 ms:
 *                         dies of SIGSEGV
 *   run_flight exit       exits 0 after 200 ms
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void handler(int sig) {
  (void)sig;
  got++;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static void pause_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000}, NULL); }

static void *worker(void *arg) {
  const char *how = arg;
  for (int i = 0; !stop; i++) {
    pthread_mutex_lock(&mu);
    pause_ms(1);
    pthread_mutex_unlock(&mu);
    if (strcmp(how, "crash") == 0 && i == 150) *(volatile int *)(uintptr_t)4096 = 1;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *how = argv[1];
  pthread_t th;
  pthread_create(&th, NULL, worker, (void *)how);
  if (strcmp(how, "snap") == 0 || strcmp(how, "bare") == 0) {
    int sig = argc > 2 ? atoi(argv[2]) : SIGUSR2;
    if (strcmp(how, "snap") == 0) signal(sig, handler);
    for (int k = 0; k < 3; k++) {
      pause_ms(150);
      kill(getpid(), sig);
    }
    pause_ms(50);
    printf("own handler ran %d times\n", (int)got);
    stop = 1;
    pthread_join(th, NULL);
    return 7;
  }
  pause_ms(200);
  if (strcmp(how, "crash") == 0) pause_ms(2000); /* the worker crashes first */
  stop = 1;
  pthread_join(th, NULL);
  return 0;
}
