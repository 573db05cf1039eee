/* compute: threads hash numbers and now and then add to a shared total
 * under a mutex.
 *
 *   run_compute [ITERATIONS [THREADS]]   (default 20000000 per thread,
 *                                         one thread per CPU)
 *
 * Every 100000 hash rounds a thread locks the total's mutex (sometimes
 * contended) and adds its partial sum: compute-bound work with occasional
 * locking, where tracing should cost next to nothing. Prints
 * "compute threads=T iterations=N sum=S ns=T cpu_ns=C" (wall and
 * process CPU time) and exits 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

enum { CHUNK = 100000, MAX_THREADS = 64 };

static long iterations;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t total;

static void *work(void *arg) {
  uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15u + 1;
  for (long done = 0; done < iterations; done += CHUNK) {
    uint64_t part = 0;
    for (long i = 0; i < CHUNK; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      part += x >> 60;
    }
    pthread_mutex_lock(&mu);
    total += part;
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

int main(int argc, char **argv) {
  iterations = argc > 1 ? atol(argv[1]) : 20000000;
  long n = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  pthread_t th[MAX_THREADS];
  long long t0 = now_ns(), c0 = cpu_ns();
  for (long i = 0; i < n; i++)
    if (pthread_create(&th[i], NULL, work, (void *)(uintptr_t)(i + 1)) != 0) return 1;
  for (long i = 0; i < n; i++) pthread_join(th[i], NULL);
  long long t1 = now_ns(), c1 = cpu_ns();
  printf("compute threads=%ld iterations=%ld sum=%llu ns=%lld cpu_ns=%lld\n", n, iterations,
         (unsigned long long)total, t1 - t0, c1 - c0);
  return 0;
}
