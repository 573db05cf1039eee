/* gen_trace.c: writes one large, valid trace for bench_dump.sh.
 *
 *   bench_gen_trace OUT.trace [MB]      (default 40 MB)
 *
 * A small server: a producer thread queues requests (user tasks) into a
 * bounded queue, four worker threads take them out and handle them, until
 * the trace holds MB megabytes. Every thread is a plain thread traced the
 * ordinary way, so the trace has the mix a real program gives Go's tools:
 *
 *   - tasks, nested regions and log messages for every request;
 *   - stacks of varying depth (a recursive handler, 1 to 12 frames more),
 *     so a few hundred distinct stacks;
 *   - workers wait on their own condition variable when the queue is empty
 *     and the producer unblocks them (GoBlockCond, GoUnblock across Ps);
 *     the producer waits when it is full (GoBlockSend);
 *   - a contended lock (GoBlockSync), system calls, some of which block
 *     (GoSysCall, GoSysBlock, GoSysExit), yields (GoSched);
 *   - short-lived helper threads, one after another, so thousands of
 *     goroutines come and go (GoCreate, GoEnd);
 *   - GC cycles with stop-the-world phases, sweeps, mark assists and heap
 *     counters from every thread.
 *
 * Events are spaced by a little work (tens to hundreds of ns), so tick
 * diffs take one or two bytes as in a real program. */
#include "help.h"
#include <ctrace/ctrace.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WORKERS = 4, QCAP = 8, HELPER_EVERY = 512, GC_EVERY = 4096 };

static atomic_int stop;

typedef struct item {
  uint64_t task;
  uint32_t id;
} item;

/* A worker waiting for work, on its own condition variable, so the
 * producer knows whose G it unblocks. */
typedef struct waiter {
  pthread_cond_t cv;
  int woken;
  ctrace_g *g;
  struct waiter *next;
} waiter;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t not_full;
  item ring[QCAP];
  int head, count, closed;
  waiter *waiters;
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .not_full = PTHREAD_COND_INITIALIZER};

/* Shared counters behind a lock that workers contend for. */
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t handled, checksum;

static const char *const categories[] = {"http", "db", "cache", "auth"};
static const char *const regions[] = {"parse", "lookup", "render", "encode"};

/* A little work between events: n rounds of an xorshift. */
static uint64_t work(uint64_t x, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

static void lock_traced(pthread_mutex_t *mu) {
  if (pthread_mutex_trylock(mu) == 0) return;
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  pthread_mutex_lock(mu);
  ctrace_thread_resume();
}

/* The request's leaf: one region, a log message, maybe a system call. */
__attribute__((noinline)) static uint64_t leaf(const item *it, uint64_t x) {
  const char *region = regions[it->id % 4];
  int in_region = it->id % 2 == 0;
  if (in_region) ctrace_region_begin(it->task, region);
  x = work(x, 20 + it->id % 64);
  if (it->id % 3 == 0)
    ctrace_logf(it->task, categories[it->id % 4], "item %u step %llu", it->id,
                (unsigned long long)(x & 1023));
  else
    ctrace_log(it->task, categories[it->id % 4], "ok");
  if (it->id % 2 == 1) {
    ctrace_go_syscall();
    x ^= (uint64_t)getppid();
  }
  if (it->id % 97 == 5) {
    /* A system call that blocks. */
    ctrace_go_syscall();
    ctrace_go_sysblock();
    struct timespec ts = {0, 1000};
    nanosleep(&ts, NULL);
    ctrace_go_sysexit();
    ctrace_thread_resume();
  }
  if (it->id % 50 == 7) ctrace_heap_alloc((x & 0xffffff) + (64u << 20));
  if (it->id % 211 == 3) {
    ctrace_gc_mark_assist_start();
    x = work(x, 100);
    ctrace_gc_mark_assist_done();
  }
  x = work(x, 10 + it->id % 32);
  if (in_region) ctrace_region_end(it->task, region);
  return x;
}

/* Recursion of the item's depth, so stacks differ. */
__attribute__((noinline)) static uint64_t handle(const item *it, unsigned depth, uint64_t x) {
  if (depth == 0) return leaf(it, x);
  x = handle(it, depth - 1, work(x, 2));
  __asm__ volatile("" : "+r"(x));
  return x;
}

static void worker_fn(void) {}

static void *worker(void *arg) {
  ctrace_thread_begin(arg);
  waiter w = {.cv = PTHREAD_COND_INITIALIZER, .g = ctrace_thread_g()};
  uint64_t x = (uint64_t)(uintptr_t)&w | 1;
  for (;;) {
    pthread_mutex_lock(&q.mu);
    while (q.count == 0 && !q.closed) {
      w.woken = 0;
      w.next = q.waiters;
      q.waiters = &w;
      ctrace_go_block(CTRACE_BLOCK_COND);
      while (!w.woken) pthread_cond_wait(&w.cv, &q.mu);
      ctrace_thread_resume();
    }
    if (q.count == 0) {
      pthread_mutex_unlock(&q.mu);
      break;
    }
    item it = q.ring[q.head];
    q.head = (q.head + 1) % QCAP;
    q.count--;
    pthread_cond_signal(&q.not_full);
    pthread_mutex_unlock(&q.mu);

    ctrace_region_begin(it.task, "handle");
    x = handle(&it, 1 + it.id % 12, x);
    ctrace_region_end(it.task, "handle");
    ctrace_task_end(it.task);

    if (it.id % 8 == 0) {
      lock_traced(&stats_mu);
      handled++;
      checksum ^= x;
      pthread_mutex_unlock(&stats_mu);
    }
    if (it.id % 300 == 11) {
      ctrace_go_sched();
      sched_yield();
      ctrace_thread_resume();
    }
  }
  return NULL;
}

/* A helper: a short-lived thread that does a little and exits. */
static void helper_fn(void) {}

static void *helper(void *arg) {
  ctrace_thread_begin(arg);
  uint64_t t = ctrace_task_create(0, "maintenance");
  ctrace_region_begin(t, "flush");
  ctrace_go_syscall();
  ctrace_log(t, "cache", "flushed");
  ctrace_region_end(t, "flush");
  ctrace_task_end(t);
  return NULL;
}

static void gc_cycle(uint64_t n) {
  ctrace_gc_start();
  ctrace_gc_stw_start(1);
  ctrace_gc_stw_done();
  ctrace_heap_goal((128u << 20) + (n & 0xfffff));
  work(n, 200);
  ctrace_gc_stw_start(0);
  ctrace_gc_stw_done();
  ctrace_gc_done();
  ctrace_gc_sweep_start();
  work(n, 50);
  ctrace_gc_sweep_done(1u << 20, 1u << 18);
  ctrace_heap_alloc(64u << 20);
}

static void producer_fn(void) {}

static void *producer(void *arg) {
  ctrace_thread_begin(arg);
  uint64_t parent = 0, x = 88172645463325252ull;
  pthread_t h;
  int have_helper = 0;
  for (uint32_t id = 1; !atomic_load_explicit(&stop, memory_order_relaxed); id++) {
    if (id % 1000 == 1) {
      if (parent) ctrace_task_end(parent);
      parent = ctrace_task_create(0, "batch");
    }
    uint64_t task = ctrace_task_create(parent, "request");
    if (id % 5 == 0) ctrace_log(task, "queue", "enqueued");
    x = work(x, 30 + id % 50);

    pthread_mutex_lock(&q.mu);
    while (q.count == QCAP) {
      ctrace_go_block(CTRACE_BLOCK_SEND);
      pthread_cond_wait(&q.not_full, &q.mu);
      ctrace_thread_resume();
    }
    q.ring[(q.head + q.count) % QCAP] = (item){task, id};
    q.count++;
    waiter *w = q.waiters;
    if (w) {
      q.waiters = w->next;
      w->woken = 1;
      ctrace_go_unblock(w->g);
      pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&q.mu);

    if (id % HELPER_EVERY == 0) {
      if (have_helper) {
        ctrace_go_block(CTRACE_BLOCK_SYNC);
        pthread_join(h, NULL);
        ctrace_thread_resume();
      }
      ctrace_g *g = ctrace_thread_create(helper_fn);
      have_helper = pthread_create(&h, NULL, helper, g) == 0;
    }
    if (id % GC_EVERY == 0) gc_cycle(x);
  }
  if (parent) ctrace_task_end(parent);
  if (have_helper) pthread_join(h, NULL);

  pthread_mutex_lock(&q.mu);
  q.closed = 1;
  while (q.waiters) {
    waiter *w = q.waiters;
    q.waiters = w->next;
    w->woken = 1;
    ctrace_go_unblock(w->g);
    pthread_cond_signal(&w->cv);
  }
  pthread_mutex_unlock(&q.mu);
  return NULL;
}

int main(int argc, char **argv) {
  bench_help(argc, argv,
             "usage: bench_gen_trace OUT.trace [MB]      (default 40)\n"
             "Writes a trace of about MB megabytes from a program of workers and a producer.\n");
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: bench_gen_trace OUT.trace [MB]\n");
    return 2;
  }
  double mb = argc == 3 ? atof(argv[2]) : 40;
  uint64_t target = (uint64_t)(mb * 1e6);
  int rc = ctrace_start_file(argv[1], NULL);
  if (rc != 0) {
    fprintf(stderr, "bench_gen_trace: %s: %s\n", argv[1], ctrace_strerror(rc));
    return 1;
  }
  ctrace_stats s0, s;
  ctrace_stats_get(&s0);

  pthread_t prod, work_th[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    pthread_create(&work_th[i], NULL, worker, ctrace_thread_create(worker_fn));
  pthread_create(&prod, NULL, producer, ctrace_thread_create(producer_fn));

  /* The bytes count what the writer thread has taken; the end adds the
   * buffers still being filled and the stack table. */
  struct timespec tick = {0, 2 * 1000 * 1000};
  do {
    nanosleep(&tick, NULL);
    ctrace_stats_get(&s);
  } while (s.bytes - s0.bytes < target);
  atomic_store(&stop, 1);

  ctrace_go_block(CTRACE_BLOCK_SYNC);
  pthread_join(prod, NULL);
  for (int i = 0; i < WORKERS; i++) pthread_join(work_th[i], NULL);
  ctrace_thread_resume();
  rc = ctrace_stop();
  if (rc != 0) {
    fprintf(stderr, "bench_gen_trace: stop: %s\n", ctrace_strerror(rc));
    return 1;
  }
  ctrace_stats_get(&s);
  fprintf(stderr, "bench_gen_trace: %s: %llu events, %llu bytes, %llu lost, %llu requests sampled\n",
          argv[1], (unsigned long long)(s.events - s0.events),
          (unsigned long long)(s.bytes - s0.bytes), (unsigned long long)(s.lost - s0.lost),
          (unsigned long long)handled);
  return s.lost != s0.lost;
}
