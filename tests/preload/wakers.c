/* wakers MODE: waits that another thread of the process ends, for the
 * trace to show who ended each (tests/preload/run_check.sh, case wakers).
 *
 *   chain      main holds a mutex; 4 threads block on it, each started
 *              once the one before waits on it; each holder keeps
 *              it 5 ms, then unlocks: main wakes the first, each the next
 *   barrier    4 threads arrive at a barrier, each once the one before
 *              waits there: the last ends the 3 others' waits
 *   join       main joins a thread that sleeps 20 ms first
 *   sem        main waits on a semaphore a (detached) thread posts after
 *              20 ms
 *   broadcast  8 threads wait on a condition variable; main broadcasts
 *   race       a waiter's 200 timed waits against a thread that signals
 *              at about the timeout; then a thread that signals and exits
 *              at once
 *   c11        chain's hand-off with mtx_t and a cnd_t signal, in C11
 *   cancel     a thread cancelled in a condition variable's wait, one in
 *              sem_wait, one in a pipe's read; after each, a thread that
 *              reuses the stack, then a new waiter on the same object
 *              that main wakes
 *   jump       a thread blocked in a pipe's read leaves it with siglongjmp
 *              from a signal handler, writes over its stack, and reads
 *              again: main's write wakes it
 *   rwlock     main holds a read-write lock to write; 2 readers block on
 *              it: main's unlock wakes both; then a writer blocks while
 *              they read: the second reader to leave wakes it (each
 *              reader leaves when told, through a pipe, not after a time:
 *              on a loaded machine the order is still that one)
 *   eventfd    a thread blocks reading an eventfd; main's write wakes it
 *   socketpair a thread blocks reading one end of a socketpair, another
 *              writing a full other end: main writes to the first's peer
 *              and reads from the second's
 *
 * Prints what it did; the events are checked in the trace. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t bar;

static _Atomic int tids[8];

/* Until thread i (which stored its tid) sleeps in the kernel. */
static void wait_asleep(int i) {
  while (!tids[i]) sched_yield();
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tids[i]);
  for (int tries = 0; tries < 5000; tries++) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (p && p[1] == ' ' && p[2] == 'S') return;
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
  }
}

/* Until thread i (which stored its tid) waits in futex(2) on a word of the
 * SIZE bytes at OBJ, as /proc/self/task/TID/syscall shows: a sleep in the
 * kernel (wait_asleep) may be another wait first, glibc's malloc arena
 * lock say, and a loaded machine may not run the thread for long. chain's
 * counts of whose unlock ended each wait (tests/analyse/waker_check.sh)
 * hold only if every link waits before main unlocks. */
static void wait_futex(int i, const void *obj, size_t size) {
  while (!tids[i]) sched_yield();
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tids[i]);
  uintptr_t lo = (uintptr_t)obj;
  for (long tries = 0;; tries++) {
    FILE *f = fopen(path, "r");
    if (!f) {
      perror(path);
      abort();
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    long nr;
    unsigned long arg0;
    if (sscanf(buf, "%ld 0x%lx", &nr, &arg0) == 2 && nr == SYS_futex && arg0 >= lo &&
        arg0 < lo + size)
      return;
    if (tries == 120000) { /* 2 minutes or more */
      fprintf(stderr, "wakers: thread %d is not waiting on its lock: %s", i, buf);
      abort();
    }
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
  }
}

static void pause_ms(int ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
}

static void *chain_link(void *arg) {
  tids[(long)arg] = gettid();
  pthread_mutex_lock(&mu);
  pause_ms(5);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void *barrier_arrive(void *arg) {
  tids[(long)arg] = gettid();
  pthread_barrier_wait(&bar);
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  pause_ms(20);
  return NULL;
}

static sem_t sem;

static void *poster(void *arg) {
  (void)arg;
  pause_ms(20);
  sem_post(&sem);
  return NULL;
}

static int ready, woken, turn;

static void *cond_waiter(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  ready++;
  while (!woken) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* Signals about every 1 ms, at about the waiter's timeout. */
static volatile int racing = 1;
static void *racer(void *arg) {
  (void)arg;
  while (racing) {
    pause_ms(1);
    pthread_mutex_lock(&mu);
    turn++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

static void *signal_and_exit(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  woken = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static mtx_t cmu;
static cnd_t ccv;
static int cturn;

static int c11_link(void *arg) {
  tids[(long)arg] = gettid();
  mtx_lock(&cmu);
  pause_ms(5);
  mtx_unlock(&cmu);
  return 0;
}

static int c11_signaller(void *arg) {
  (void)arg;
  pause_ms(20);
  mtx_lock(&cmu);
  cturn = 1;
  cnd_signal(&ccv);
  mtx_unlock(&cmu);
  return 0;
}

static int pfd[2];

static void unlock_mu(void *unused) {
  (void)unused;
  pthread_mutex_unlock(&mu);
}

/* Waits on the object of kind arg (0 condition variable, 1 semaphore, 2
 * pipe) until woken or cancelled. */
static void *cancel_waiter(void *arg) {
  tids[0] = gettid();
  char c;
  switch ((long)arg) {
  case 0:
    pthread_mutex_lock(&mu);
    pthread_cleanup_push(unlock_mu, NULL);
    while (!woken) pthread_cond_wait(&cv, &mu);
    pthread_cleanup_pop(1);
    break;
  case 1:
    sem_wait(&sem);
    break;
  default:
    if (read(pfd[0], &c, 1) != 1) abort();
  }
  return NULL;
}

/* Writes over the stack glibc hands on from the thread that ended. */
static void *scribble(void *arg) {
  (void)arg;
  volatile char buf[256 * 1024];
  memset((char *)buf, 0x5a, sizeof buf);
  return NULL;
}

static sigjmp_buf jump_env;

static void jump_out(int sig) {
  (void)sig;
  siglongjmp(jump_env, 1);
}

static void *jumper(void *arg) {
  (void)arg;
  char c;
  if (sigsetjmp(jump_env, 1) == 0) {
    tids[0] = gettid();
    if (read(pfd[0], &c, 1) >= 0) abort(); /* the signal comes first */
  }
  scribble(NULL);
  tids[1] = gettid();
  if (read(pfd[0], &c, 1) != 1) abort();
  return NULL;
}

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

/* rw_go[i]: reader i may leave; rw_in: a reader holds the lock. */
static int rw_go[2][2], rw_in[2];

static void *rw_reader(void *arg) {
  long i = (long)arg;
  char c = 'x';
  tids[i] = gettid();
  pthread_rwlock_rdlock(&rw);
  if (write(rw_in[1], &c, 1) != 1 || read(rw_go[i][0], &c, 1) != 1) abort();
  pthread_rwlock_unlock(&rw);
  if (i == 0 && write(rw_go[1][1], &c, 1) != 1) abort(); /* the other leaves last */
  return NULL;
}

static void *rw_writer(void *arg) {
  tids[(long)arg] = gettid();
  pthread_rwlock_wrlock(&rw);
  pthread_rwlock_unlock(&rw);
  return NULL;
}

static int efd, sv[2];

static void *efd_reader(void *arg) {
  (void)arg;
  tids[0] = gettid();
  uint64_t v;
  if (read(efd, &v, sizeof v) != sizeof v) abort();
  return NULL;
}

static void *sock_reader(void *arg) {
  (void)arg;
  tids[0] = gettid();
  char c;
  if (recv(sv[1], &c, 1, 0) != 1) abort();
  return NULL;
}

/* Fills its end (sv[1]) without waiting, then writes once more. */
static void *sock_writer(void *arg) {
  (void)arg;
  static char buf[4096];
  while (send(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  tids[1] = gettid();
  if (write(sv[1], buf, sizeof buf) != (ssize_t)sizeof buf) abort();
  return NULL;
}

static void start(pthread_t *t, void *(*fn)(void *), long arg) {
  if (pthread_create(t, NULL, fn, (void *)arg) != 0) abort();
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  pthread_t t[8];
  if (strcmp(mode, "chain") == 0) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 4; i++) {
      start(&t[i], chain_link, i);
      wait_futex(i, &mu, sizeof mu);
    }
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  } else if (strcmp(mode, "barrier") == 0) {
    pthread_barrier_init(&bar, NULL, 4);
    for (int i = 0; i < 4; i++) {
      start(&t[i], barrier_arrive, i);
      if (i < 3) wait_futex(i, &bar, sizeof bar);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
  } else if (strcmp(mode, "join") == 0) {
    start(&t[0], sleeper, 0);
    pthread_join(t[0], NULL);
  } else if (strcmp(mode, "sem") == 0) {
    sem_init(&sem, 0, 0);
    start(&t[0], poster, 0);
    pthread_detach(t[0]);
    sem_wait(&sem);
  } else if (strcmp(mode, "broadcast") == 0) {
    for (int i = 0; i < 8; i++) start(&t[i], cond_waiter, i);
    for (;;) {
      pthread_mutex_lock(&mu);
      int r = ready;
      pthread_mutex_unlock(&mu);
      if (r == 8) break;
      pause_ms(1);
    }
    pause_ms(20); /* all 8 are in pthread_cond_wait */
    pthread_mutex_lock(&mu);
    woken = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  } else if (strcmp(mode, "race") == 0) {
    start(&t[0], racer, 0);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 200; i++) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 1000000;
      if (until.tv_nsec >= 1000000000) until.tv_nsec -= 1000000000, until.tv_sec++;
      pthread_cond_timedwait(&cv, &mu, &until);
    }
    pthread_mutex_unlock(&mu);
    racing = 0;
    pthread_join(t[0], NULL);
    woken = 0;
    start(&t[1], signal_and_exit, 0);
    pthread_mutex_lock(&mu);
    while (!woken) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    pthread_join(t[1], NULL);
  } else if (strcmp(mode, "c11") == 0) {
    mtx_init(&cmu, mtx_plain);
    cnd_init(&ccv);
    thrd_t ct[4];
    mtx_lock(&cmu);
    for (int i = 0; i < 4; i++) {
      thrd_create(&ct[i], c11_link, (void *)(long)i);
      wait_futex(i, &cmu, sizeof cmu);
    }
    mtx_unlock(&cmu);
    for (int i = 0; i < 4; i++) thrd_join(ct[i], NULL);
    thrd_create(&ct[0], c11_signaller, NULL);
    mtx_lock(&cmu);
    while (!cturn) cnd_wait(&ccv, &cmu);
    mtx_unlock(&cmu);
    thrd_join(ct[0], NULL);
  } else if (strcmp(mode, "cancel") == 0) {
    sem_init(&sem, 0, 0);
    if (pipe(pfd) != 0) abort();
    for (long kind = 0; kind < 3; kind++) {
      void *ret;
      tids[0] = 0;
      start(&t[0], cancel_waiter, kind);
      wait_asleep(0);
      pthread_cancel(t[0]);
      pthread_join(t[0], &ret);
      if (ret != PTHREAD_CANCELED) abort();
      start(&t[1], scribble, 0);
      pthread_join(t[1], NULL);
      tids[0] = 0;
      start(&t[2], cancel_waiter, kind);
      wait_asleep(0);
      if (kind == 0) {
        pthread_mutex_lock(&mu);
        woken = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
      } else if (kind == 1) {
        sem_post(&sem);
      } else if (write(pfd[1], "x", 1) != 1) {
        abort();
      }
      pthread_join(t[2], NULL);
    }
  } else if (strcmp(mode, "jump") == 0) {
    if (pipe(pfd) != 0) abort();
    struct sigaction sa = {.sa_handler = jump_out};
    sigaction(SIGUSR1, &sa, NULL);
    start(&t[0], jumper, 0);
    wait_asleep(0);
    pthread_kill(t[0], SIGUSR1);
    wait_asleep(1);
    if (write(pfd[1], "x", 1) != 1) abort();
    pthread_join(t[0], NULL);
  } else if (strcmp(mode, "rwlock") == 0) {
    if (pipe(rw_go[0]) || pipe(rw_go[1]) || pipe(rw_in)) abort();
    pthread_rwlock_wrlock(&rw);
    for (int i = 0; i < 2; i++) {
      start(&t[i], rw_reader, i);
      wait_futex(i, &rw, sizeof rw);
    }
    pthread_rwlock_unlock(&rw);
    char c;
    for (int i = 0; i < 2; i++) /* both read */
      if (read(rw_in[0], &c, 1) != 1) abort();
    start(&t[2], rw_writer, 2);
    wait_futex(2, &rw, sizeof rw);
    if (write(rw_go[0][1], "x", 1) != 1) abort();
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  } else if (strcmp(mode, "eventfd") == 0) {
    efd = eventfd(0, EFD_CLOEXEC);
    if (efd < 0) abort();
    start(&t[0], efd_reader, 0);
    wait_asleep(0);
    uint64_t one = 1;
    if (write(efd, &one, sizeof one) != sizeof one) abort();
    pthread_join(t[0], NULL);
  } else if (strcmp(mode, "socketpair") == 0) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) abort();
    start(&t[0], sock_reader, 0);
    wait_asleep(0);
    if (send(sv[0], "x", 1, 0) != 1) abort();
    pthread_join(t[0], NULL);
    start(&t[1], sock_writer, 0);
    wait_asleep(1);
    static char buf[1 << 16];
    while (recv(sv[0], buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    pthread_join(t[1], NULL);
  } else {
    fprintf(stderr, "usage: wakers chain|barrier|join|sem|broadcast|race|c11|cancel|jump|"
                    "rwlock|eventfd|socketpair\n");
    return 2;
  }
  printf("wakers %s\n", mode);
  return 0;
}
