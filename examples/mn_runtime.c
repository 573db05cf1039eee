/* mn_runtime.c: tracing a small M:N runtime with ctrace.  Usage:
 *   ex_mn_runtime OUT.trace
 * 20 coroutines (ucontext, own mmap'ed stacks) run on 2 worker threads (the
 * trace's Ps 0 and 1) fed by a global run queue; every state change is told
 * to ctrace, so `go tool trace` shows the coroutines as goroutines. A root
 * spawns 4 producers that send 300 messages (user tasks) over unbuffered
 * channels through 14 stages to a sink.
 *
 * Hand-off rule: a coroutine never queues itself. It sets a pending action
 * and switches to its worker's scheduler context, which performs it
 * (requeue, park, arm a timer, free) once the coroutine is fully switched
 * out, so a coroutine runs on one worker at a time and the calls about one
 * G are ordered by the run queue and channel locks. */
#include <ctrace/ctrace.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum { NUM_WORKERS = 2, GUARD = 4096, STACK_SIZE = 64 * 1024 };
enum { NUM_PRODUCERS = 4, PER_PRODUCER = 75, NUM_STAGES = 14 };

typedef struct msg { int id; uint64_t task, value; } msg;

/* What the scheduler does once a coroutine has switched out. */
typedef enum { ACT_REQUEUE, ACT_PARK, ACT_SLEEP, ACT_END } action;

typedef struct coro {
  ctrace_g g;               /* the coroutine's G in the trace */
  ucontext_t ctx;
  char *map;                /* its stack: a guard page, then STACK_SIZE */
  void (*fn)(struct coro *, void *);
  void *arg;
  ucontext_t *sched;        /* its worker's context (set by the worker) */
  action act;               /* pending action, set before switching out */
  pthread_mutex_t *unlock;  /* ACT_PARK: lock to release once out */
  uint64_t wake_ns;         /* ACT_SLEEP: when to wake */
  struct coro *next;        /* run queue, timer list or channel queue */
  msg slot;                 /* channel rendezvous buffer */
  int ok;                   /* received (1) or channel closed (0) */
} coro;

/* The run queue and the timer list, under one lock. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;        /* work, a timer or shutdown */
  coro *head, *tail;        /* runnable, FIFO */
  coro *timers;             /* sleeping, sorted by wake_ns */
  int live;                 /* coroutines not yet ended */
} rt = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "ex_mn_runtime: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* Appends c to the run queue; rt.mu held. */
static void ready_locked(coro *c) {
  c->next = NULL;
  if (rt.tail) rt.tail->next = c; else rt.head = c;
  rt.tail = c;
  pthread_cond_signal(&rt.cv);
}

static void ready(coro *c) {
  pthread_mutex_lock(&rt.mu);
  ready_locked(c);
  pthread_mutex_unlock(&rt.mu);
}

/* ---- coroutines ---------------------------------------------------------- */

static void trampoline(unsigned hi, unsigned lo) {
  coro *c = (coro *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
  c->fn(c, c->arg);
  c->act = ACT_END;
  ctrace_go_end();
  setcontext(c->sched); /* never returns; the scheduler frees this stack */
  abort();
}

/* Spawns a runnable coroutine fn(self, arg); GoCreate comes from the
 * calling coroutine (or main, before the workers start). */
static void spawn(void (*fn)(coro *, void *), void *arg) {
  coro *c = calloc(1, sizeof *c);
  if (!c) die("calloc");
  c->map = mmap(NULL, GUARD + STACK_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (c->map == MAP_FAILED) die("mmap");
  mprotect(c->map, GUARD, PROT_NONE);
  c->fn = fn;
  c->arg = arg;
  getcontext(&c->ctx);
  c->ctx.uc_stack.ss_sp = c->map + GUARD;
  c->ctx.uc_stack.ss_size = STACK_SIZE;
  uintptr_t p = (uintptr_t)c;
  makecontext(&c->ctx, (void (*)(void))trampoline, 2, (unsigned)(p >> 32),
              (unsigned)p);
  ctrace_go_create(&c->g, (void (*)(void))fn);
  ctrace_g_set_stack(&c->g, c->map + GUARD, c->map + GUARD + STACK_SIZE);
  pthread_mutex_lock(&rt.mu);
  rt.live++;
  ready_locked(c);
  pthread_mutex_unlock(&rt.mu);
}

/* Switches back to the scheduler, which then performs act. The caller has
 * told ctrace why it stops. Returns when a worker runs self again. */
static void switch_out(coro *self, action act, pthread_mutex_t *unlock) {
  self->act = act;
  self->unlock = unlock;
  swapcontext(&self->ctx, self->sched);
}

/* Yields, or is preempted: stays runnable, at the end of the queue. */
static void co_yield(coro *self) {
  ctrace_go_sched();
  switch_out(self, ACT_REQUEUE, NULL);
}
static void co_preempt(coro *self) {
  ctrace_go_preempt();
  switch_out(self, ACT_REQUEUE, NULL);
}

/* Blocks for ns; a worker's timer check unblocks it. */
static void co_sleep(coro *self, uint64_t ns) {
  self->wake_ns = now_ns() + ns;
  ctrace_go_block(CTRACE_BLOCK_SLEEP);
  switch_out(self, ACT_SLEEP, NULL);
}

/* A system call that blocks: the coroutine keeps the thread while it runs
 * (its P is given up in the trace), then queues up to be started again. */
static void co_blocking_syscall(coro *self, useconds_t us) {
  ctrace_go_syscall();
  ctrace_go_sysblock();
  usleep(us);
  ctrace_go_sysexit();
  switch_out(self, ACT_REQUEUE, NULL);
}

/* ---- unbuffered channels ------------------------------------------------- */

/* Parked senders and receivers (LIFO), under mu. */
typedef struct chan {
  pthread_mutex_t mu;
  coro *sendq, *recvq;
  int closed;
} chan;

/* Sends (send != 0) *m, or receives into *m. Meets a parked peer, or parks
 * until one comes. Returns 0 for a receive on a closed channel. */
static int chan_op(coro *self, chan *ch, int send, msg *m) {
  pthread_mutex_lock(&ch->mu);
  coro **peers = send ? &ch->recvq : &ch->sendq, *peer = *peers;
  if (peer) { /* rendezvous: swap the value and wake the peer */
    *peers = peer->next;
    if (send) {
      peer->slot = *m;
      peer->ok = 1;
    } else {
      *m = peer->slot;
    }
    ctrace_go_unblock(&peer->g);
    pthread_mutex_unlock(&ch->mu);
    ready(peer);
    return 1;
  }
  if (ch->closed) {
    if (send) abort(); /* no sends after close */
    pthread_mutex_unlock(&ch->mu);
    return 0;
  }
  coro **q = send ? &ch->sendq : &ch->recvq;
  if (send) self->slot = *m;
  self->next = *q;
  *q = self;
  ctrace_go_block(send ? CTRACE_BLOCK_SEND : CTRACE_BLOCK_RECV);
  switch_out(self, ACT_PARK, &ch->mu); /* ch->mu is released once out */
  if (!send) *m = self->slot;
  return send || self->ok;
}

/* Closes ch (no sender may be parked) and wakes every receiver. */
static void chan_close(chan *ch) {
  pthread_mutex_lock(&ch->mu);
  ch->closed = 1;
  for (coro *r; (r = ch->recvq) != NULL;) {
    ch->recvq = r->next;
    r->ok = 0;
    ctrace_go_unblock(&r->g);
    ready(r);
  }
  pthread_mutex_unlock(&ch->mu);
}

/* ---- the workers --------------------------------------------------------- */

/* The next coroutine to run, or NULL when all have ended. Wakes sleepers
 * that are due on the way: from the scheduler, between coroutines. */
static coro *next_coro(void) {
  coro *c;
  pthread_mutex_lock(&rt.mu);
  for (;;) {
    for (uint64_t now = now_ns(); rt.timers && rt.timers->wake_ns <= now;) {
      c = rt.timers;
      rt.timers = c->next;
      ctrace_go_unblock(&c->g);
      ready_locked(c);
    }
    if ((c = rt.head) != NULL) {
      if ((rt.head = c->next) == NULL) rt.tail = NULL;
      break;
    }
    if (rt.live == 0) break;
    if (rt.timers) { /* idle until the first timer is due */
      uint64_t t = rt.timers->wake_ns;
      struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
      pthread_cond_timedwait(&rt.cv, &rt.mu, &ts);
    } else {
      pthread_cond_wait(&rt.cv, &rt.mu);
    }
  }
  pthread_mutex_unlock(&rt.mu);
  return c;
}

/* c has switched out: do what it asked for. */
static void after_switch(coro *c) {
  if (c->act == ACT_REQUEUE) {
    ready(c);
  } else if (c->act == ACT_PARK) { /* from now on a peer may wake it */
    pthread_mutex_unlock(c->unlock);
  } else if (c->act == ACT_SLEEP) {
    pthread_mutex_lock(&rt.mu);
    coro **p = &rt.timers;
    while (*p && (*p)->wake_ns <= c->wake_ns) p = &(*p)->next;
    c->next = *p;
    *p = c;
    pthread_cond_broadcast(&rt.cv); /* idle workers: recompute the wait */
    pthread_mutex_unlock(&rt.mu);
  } else { /* ACT_END */
    munmap(c->map, GUARD + STACK_SIZE);
    free(c);
    pthread_mutex_lock(&rt.mu);
    if (--rt.live == 0) pthread_cond_broadcast(&rt.cv);
    pthread_mutex_unlock(&rt.mu);
  }
}

static void *worker_main(void *arg) {
  ucontext_t sched;
  ctrace_proc_start((intptr_t)arg); /* this thread holds P number arg */
  for (coro *c; (c = next_coro()) != NULL;) {
    c->sched = &sched;
    ctrace_go_start(&c->g);
    swapcontext(&sched, &c->ctx);
    after_switch(c);
  }
  ctrace_proc_stop();
  return NULL;
}

/* ---- the program --------------------------------------------------------- */

#define CHAN_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}
static chan raw = CHAN_INIT, cooked = CHAN_INIT, done = CHAN_INIT;
static atomic_int producers_left = NUM_PRODUCERS, stages_left = NUM_STAGES;
static uint64_t pipeline; /* the root's task, parent of every message */
static int devnull = -1, messages_seen;

static void producer(coro *self, void *arg) {
  int p = (int)(intptr_t)arg;
  for (int i = 0; i < PER_PRODUCER; i++) {
    msg m = {.id = p * PER_PRODUCER + i};
    m.task = ctrace_task_create(pipeline, "message");
    m.value = (uint64_t)m.id * 2654435761u + 1;
    ctrace_logf(m.task, "produce", "message %d from producer %d", m.id, p);
    chan_op(self, &raw, 1, &m);
    if (i % 10 == 9) co_yield(self); /* be nice now and then */
  }
  if (atomic_fetch_sub(&producers_left, 1) == 1) chan_close(&raw);
}

/* A compute loop that gives up the worker every 1000 steps (preempted). */
static uint64_t transform(coro *self, const msg *m) {
  uint64_t x = m->value;
  int steps = 1000 * (1 + m->id % 4);
  for (int i = 1; i <= steps; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    if (i % 1000 == 0 && i < steps) co_preempt(self);
  }
  return x;
}

static void stage(coro *self, void *arg) {
  msg m;
  while (chan_op(self, &raw, 0, &m)) {
    ctrace_region_begin(m.task, "stage");
    ctrace_logf(m.task, "stage", "stage %d: message %d", (int)(intptr_t)arg,
                m.id);
    ctrace_region_begin(m.task, "transform");
    m.value = transform(self, &m);
    ctrace_region_end(m.task, "transform");
    if (m.id % 10 == 0) { /* a back-off: a short sleep */
      ctrace_region_begin(m.task, "backoff");
      co_sleep(self, 200 * 1000);
      ctrace_region_end(m.task, "backoff");
    }
    if (m.id % 25 == 0) { /* a system call that blocks */
      ctrace_region_begin(m.task, "flush");
      co_blocking_syscall(self, 2000);
      ctrace_region_end(m.task, "flush");
    } else if (m.id % 5 == 0) { /* one that does not */
      ctrace_go_syscall();
      if (write(devnull, &m, sizeof m) < 0)
        ctrace_log(m.task, "error", "write to /dev/null failed");
    }
    ctrace_region_end(m.task, "stage");
    chan_op(self, &cooked, 1, &m);
  }
  if (atomic_fetch_sub(&stages_left, 1) == 1) chan_close(&cooked);
}

static void sink(coro *self, void *arg) {
  msg m, total = {0};
  (void)arg;
  while (chan_op(self, &cooked, 0, &m)) {
    total.id++;
    total.value ^= m.value;
    ctrace_log(m.task, "sink", "delivered");
    ctrace_task_end(m.task);
  }
  ctrace_logf(pipeline, "sink", "%d messages, xor %016llx", total.id,
              (unsigned long long)total.value);
  chan_op(self, &done, 1, &total);
}

static void root(coro *self, void *arg) {
  msg total;
  (void)arg;
  pipeline = ctrace_task_create(0, "pipeline");
  ctrace_region_begin(pipeline, "spawn");
  spawn(sink, NULL);
  for (int i = 0; i < NUM_STAGES; i++) spawn(stage, (void *)(intptr_t)i);
  for (int i = 0; i < NUM_PRODUCERS; i++) spawn(producer, (void *)(intptr_t)i);
  ctrace_region_end(pipeline, "spawn");
  ctrace_region_begin(pipeline, "wait");
  if (chan_op(self, &done, 0, &total)) messages_seen = total.id;
  ctrace_region_end(pipeline, "wait");
  ctrace_logf(pipeline, "root", "done: %d messages", messages_seen);
  ctrace_task_end(pipeline);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.trace\n", argv[0]);
    return 1;
  }
  int rc = ctrace_start_file(argv[1], NULL);
  if (rc < 0) {
    fprintf(stderr, "ex_mn_runtime: %s: %s\n", argv[1], ctrace_strerror(rc));
    return 1;
  }
  if ((devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) die("open");
  pthread_condattr_t ca; /* timed waits on the monotonic clock */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&rt.cv, &ca);

  ctrace_gomaxprocs(NUM_WORKERS);
  spawn(root, NULL);
  pthread_t workers[NUM_WORKERS];
  for (int i = 0; i < NUM_WORKERS; i++)
    if ((errno = pthread_create(&workers[i], NULL, worker_main,
                                (void *)(intptr_t)i)) != 0)
      die("pthread_create");
  for (int i = 0; i < NUM_WORKERS; i++) pthread_join(workers[i], NULL);

  if ((rc = ctrace_stop()) < 0) {
    fprintf(stderr, "ex_mn_runtime: %s: %s\n", argv[1], ctrace_strerror(rc));
    return 1;
  }
  if (messages_seen != NUM_PRODUCERS * PER_PRODUCER) {
    fprintf(stderr, "ex_mn_runtime: only %d messages arrived\n", messages_seen);
    return 1;
  }
  ctrace_stats st;
  ctrace_stats_get(&st);
  printf("ex_mn_runtime: %d messages; %llu events (%llu lost) in %s\n",
         messages_seen, (unsigned long long)st.events,
         (unsigned long long)st.lost, argv[1]);
  return 0;
}
