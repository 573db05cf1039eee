/* threadpool: a fixed pool of workers takes tasks from a bounded queue.
 *
 *   run_threadpool [TASKS [WORKERS]]      (default 2000 tasks, 4 workers)
 *
 * The queue is a ring under one mutex with two condition variables (not
 * empty, not full); main submits every task, closes the queue and joins
 * the workers. A task allocates a buffer, fills and sums it, frees it, and
 * adds its sum to a total under a second mutex. Prints
 * "threadpool tasks=N workers=W sum=S ns=T cpu_ns=C" and exits 0 if the sum is
 * right. Each task also keeps a 1 KiB result until main frees them all at
 * the end, so the live heap grows by about 2 MiB and shrinks again. Under
 * `ctrace run` the trace has WORKERS GoCreate with the worker as start
 * function, WORKERS GoEnd, waits on the condition variables, and HeapAlloc
 * events going up and down.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

enum { QUEUE_CAP = 8 };

static struct {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  long ring[QUEUE_CAP];
  int head, count, closed;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0};

static pthread_mutex_t total_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t total;
static void **results; /* one per task, freed by main at the end */

static uint64_t task(long id) {
  size_t n = 1024 + (size_t)(id % 16) * 1024;
  unsigned char *buf = malloc(n);
  if (!buf) abort();
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(id + (long)i);
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s += buf[i];
  free(buf);
  return s;
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&q.mu);
    while (q.count == 0 && !q.closed) pthread_cond_wait(&q.not_empty, &q.mu);
    if (q.count == 0) {
      pthread_mutex_unlock(&q.mu);
      return NULL;
    }
    long id = q.ring[q.head];
    q.head = (q.head + 1) % QUEUE_CAP;
    q.count--;
    pthread_cond_signal(&q.not_full);
    pthread_mutex_unlock(&q.mu);
    uint64_t s = task(id);
    results[id] = malloc(1024);
    pthread_mutex_lock(&total_mu);
    total += s;
    pthread_mutex_unlock(&total_mu);
  }
}

int main(int argc, char **argv) {
  long tasks = argc > 1 ? atol(argv[1]) : 2000;
  int workers = argc > 2 ? atoi(argv[2]) : 4;
  pthread_t th[64];
  if (workers < 1 || workers > 64 || tasks < 0) return 2;
  results = calloc((size_t)tasks + 1, sizeof *results);
  if (!results) return 1;
  long long t0 = now_ns(), c0 = cpu_ns();
  for (int i = 0; i < workers; i++)
    if (pthread_create(&th[i], NULL, worker, NULL) != 0) return 1;
  for (long id = 0; id < tasks; id++) {
    pthread_mutex_lock(&q.mu);
    while (q.count == QUEUE_CAP) pthread_cond_wait(&q.not_full, &q.mu);
    q.ring[(q.head + q.count) % QUEUE_CAP] = id;
    q.count++;
    pthread_cond_signal(&q.not_empty);
    pthread_mutex_unlock(&q.mu);
  }
  pthread_mutex_lock(&q.mu);
  q.closed = 1;
  pthread_cond_broadcast(&q.not_empty);
  pthread_mutex_unlock(&q.mu);
  for (int i = 0; i < workers; i++) pthread_join(th[i], NULL);
  long long t1 = now_ns(), c1 = cpu_ns();
  uint64_t want = 0;
  for (long id = 0; id < tasks; id++) {
    want += task(id);
    free(results[id]);
  }
  free(results);
  printf("threadpool tasks=%ld workers=%d sum=%llu ns=%lld cpu_ns=%lld\n", tasks, workers,
         (unsigned long long)total, t1 - t0, c1 - c0);
  return total == want ? 0 : 1;
}
