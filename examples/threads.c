/* threads.c: tracing a plain multithreaded C program with ctrace.
 *
 *   ex_threads OUT.trace
 *
 * The main thread queues 200 "orders" into a small bounded queue guarded
 * by a mutex and two condition variables; four worker threads take them
 * out and process them. Each order is a user task (child of the "batch"
 * task) with nested regions and log messages, so `go tool trace OUT.trace`
 * shows them under "User-defined tasks" and "User-defined regions".
 *
 * Plain threads need no scheduling calls: each thread is its own G on its
 * own P. The calls used here only add detail:
 *   - ctrace_thread_create / ctrace_thread_begin tie each worker to the
 *     thread that created it (a GoCreate event with the creator's stack);
 *   - ctrace_go_block(reason) ... ctrace_thread_resume() bracket every
 *     place a thread really waits (condvar, contended mutex, sleep, join),
 *     so the waits show up in the blocking profiles;
 *   - ctrace_go_syscall() marks a system call that does not block.
 */
#include <ctrace/ctrace.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  NUM_WORKERS = 4,
  NUM_ORDERS = 200,
  BURST = 25,       /* orders main queues between pauses */
  QUEUE_CAP = 16    /* a small queue, so main sometimes waits too */
};

typedef struct order {
  int id;
  int items;
  uint64_t task; /* the order's user task, created when it is queued */
} order;

/* The shared queue: a ring buffer; `closed` once main has queued all. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  order ring[QUEUE_CAP];
  int head, count, closed;
} queue = {
  .mu = PTHREAD_MUTEX_INITIALIZER,
  .not_empty = PTHREAD_COND_INITIALIZER,
  .not_full = PTHREAD_COND_INITIALIZER,
};

/* Totals every worker updates: a second, often contended, lock. */
static struct {
  pthread_mutex_t mu;
  long orders, items;
  uint64_t checksum;
} ledger = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int devnull = -1;

typedef struct worker {
  int id;
  pthread_t thread;
  ctrace_g *g; /* from ctrace_thread_create; NULL if it ran out of memory */
  int done;    /* orders this worker processed */
} worker;

/* ---- traced waits -------------------------------------------------------- */

/* Locks m; only if the lock is taken already does the thread record that
 * it blocks (an uncontended lock is not worth an event). */
static void lock_traced(pthread_mutex_t *m) {
  if (pthread_mutex_trylock(m) == 0)
    return;
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  pthread_mutex_lock(m);
  ctrace_thread_resume();
}

/* One wait on a condition variable, recorded as a block. */
static void cond_wait_traced(pthread_cond_t *cv, pthread_mutex_t *m) {
  ctrace_go_block(CTRACE_BLOCK_COND);
  pthread_cond_wait(cv, m);
  ctrace_thread_resume();
}

/* Sleeps for usec microseconds, recorded as a sleep. */
static void sleep_traced(long usec) {
  struct timespec ts = {usec / 1000000, (usec % 1000000) * 1000};
  ctrace_go_block(CTRACE_BLOCK_SLEEP);
  while (nanosleep(&ts, &ts) != 0) {
  }
  ctrace_thread_resume();
}

/* ---- the work ------------------------------------------------------------ */

/* Some arithmetic standing in for real work; n sets how long it takes. */
static uint64_t churn(uint64_t x, int n) {
  for (int i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static void process_order(worker *w, const order *o) {
  uint64_t t = o->task;
  char text[64];

  ctrace_region_begin(t, "process");

  /* "parse": render and checksum the order's text. */
  ctrace_region_begin(t, "parse");
  int len = snprintf(text, sizeof text, "order=%d items=%d", o->id, o->items);
  uint64_t sum = 0;
  for (int i = 0; i < len; i++)
    sum = sum * 31 + (unsigned char)text[i];
  ctrace_region_end(t, "parse");
  ctrace_logf(t, "order", "worker %d took order %d (%d items)", w->id, o->id,
              o->items);

  /* "price": the main computation, nested in "process". */
  ctrace_region_begin(t, "price");
  sum = churn(sum | 1, 2000 + 200 * o->items);
  ctrace_region_end(t, "price");

  /* Every tenth order waits for stock: a short sleep. */
  if (o->id % 10 == 0) {
    ctrace_region_begin(t, "wait_stock");
    ctrace_log(t, "stock", "out of stock, waiting");
    sleep_traced(200);
    ctrace_region_end(t, "wait_stock");
  }

  /* "book": update the shared ledger under its (contended) lock. */
  ctrace_region_begin(t, "book");
  lock_traced(&ledger.mu);
  ledger.orders++;
  ledger.items += o->items;
  ledger.checksum = churn(ledger.checksum ^ sum, 300); /* held a while */
  pthread_mutex_unlock(&ledger.mu);
  ctrace_region_end(t, "book");

  /* "receipt": a system call that does not block. */
  ctrace_region_begin(t, "receipt");
  len = snprintf(text, sizeof text, "receipt %d %016llx\n", o->id,
                 (unsigned long long)sum);
  ctrace_go_syscall();
  if (write(devnull, text, (size_t)len) < 0)
    ctrace_log(t, "error", "write to /dev/null failed");
  ctrace_region_end(t, "receipt");

  ctrace_region_end(t, "process");
  if (o->items > 45)
    ctrace_log(t, "warn", "large order");
  ctrace_task_end(t);
}

/* A worker's thread. It adopts the G its creator announced before doing
 * anything else, so the trace links it to its creator. */
static void *worker_main(void *arg) {
  worker *w = arg;
  if (w->g != NULL)
    ctrace_thread_begin(w->g);

  for (;;) {
    order o;
    lock_traced(&queue.mu);
    while (queue.count == 0 && !queue.closed)
      cond_wait_traced(&queue.not_empty, &queue.mu);
    if (queue.count == 0) { /* closed and drained */
      pthread_mutex_unlock(&queue.mu);
      break;
    }
    o = queue.ring[queue.head];
    queue.head = (queue.head + 1) % QUEUE_CAP;
    queue.count--;
    pthread_cond_signal(&queue.not_full);
    pthread_mutex_unlock(&queue.mu);

    process_order(w, &o);
    w->done++;
  }
  return NULL;
}

/* ---- main ---------------------------------------------------------------- */

/* Queues one order, waiting while the queue is full. */
static void enqueue(const order *o) {
  lock_traced(&queue.mu);
  while (queue.count == QUEUE_CAP)
    cond_wait_traced(&queue.not_full, &queue.mu);
  queue.ring[(queue.head + queue.count) % QUEUE_CAP] = *o;
  queue.count++;
  pthread_cond_signal(&queue.not_empty);
  pthread_mutex_unlock(&queue.mu);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.trace\n", argv[0]);
    return 1;
  }
  int rc = ctrace_start_file(argv[1], NULL);
  if (rc < 0) {
    fprintf(stderr, "ex_threads: cannot trace to %s: %s\n", argv[1],
            ctrace_strerror(rc));
    return 1;
  }
  devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) {
    perror("ex_threads: /dev/null");
    ctrace_stop();
    return 1;
  }

  uint64_t batch = ctrace_task_create(0, "batch");
  ctrace_log(batch, "main", "starting workers");

  /* Announce each worker before creating its thread. */
  static worker workers[NUM_WORKERS];
  int started = 0;
  for (int i = 0; i < NUM_WORKERS; i++) {
    worker *w = &workers[i];
    w->id = i;
    w->g = ctrace_thread_create((void (*)(void))worker_main);
    int err = pthread_create(&w->thread, NULL, worker_main, w);
    if (err != 0) {
      fprintf(stderr, "ex_threads: pthread_create: %s\n", strerror(err));
      if (w->g != NULL)
        ctrace_go_destroy(w->g); /* announced, but it will never run */
      break;
    }
    started++;
  }

  /* Produce the orders in bursts, pausing between bursts so the workers
   * run dry and wait on the condition variable. */
  ctrace_region_begin(batch, "produce");
  unsigned seed = 12345;
  for (int id = 0; id < NUM_ORDERS && started > 0; id++) {
    seed = seed * 1103515245u + 12345u;
    order o = {.id = id, .items = 1 + (int)((seed >> 16) % 50)};
    o.task = ctrace_task_create(batch, "order");
    enqueue(&o);
    if ((id + 1) % BURST == 0) {
      ctrace_logf(batch, "main", "queued %d orders", id + 1);
      sleep_traced(1000);
    }
  }
  ctrace_region_end(batch, "produce");

  /* No more orders: wake every worker so it can see the queue is closed. */
  lock_traced(&queue.mu);
  queue.closed = 1;
  pthread_cond_broadcast(&queue.not_empty);
  pthread_mutex_unlock(&queue.mu);

  ctrace_region_begin(batch, "join");
  for (int i = 0; i < started; i++) {
    ctrace_go_block(CTRACE_BLOCK_SYNC);
    pthread_join(workers[i].thread, NULL);
    ctrace_thread_resume();
    ctrace_logf(batch, "main", "worker %d processed %d orders", i,
                workers[i].done);
  }
  ctrace_region_end(batch, "join");
  ctrace_logf(batch, "main", "%ld orders, %ld items", ledger.orders,
              ledger.items);
  ctrace_task_end(batch);
  close(devnull);

  rc = ctrace_stop();
  if (rc < 0) {
    fprintf(stderr, "ex_threads: writing %s failed: %s\n", argv[1],
            ctrace_strerror(rc));
    return 1;
  }
  if (started < NUM_WORKERS || ledger.orders != NUM_ORDERS) {
    fprintf(stderr, "ex_threads: processed %ld of %d orders\n", ledger.orders,
            NUM_ORDERS);
    return 1;
  }

  ctrace_stats st;
  ctrace_stats_get(&st);
  printf("ex_threads: %ld orders, %d workers; %llu events (%llu lost) in %s\n",
         ledger.orders, started, (unsigned long long)st.events,
         (unsigned long long)st.lost, argv[1]);
  return 0;
}
