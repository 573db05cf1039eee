/* cancel.c - threads cancelled while they wait in calls the shim wraps
 * (src/preload/): each case's thread is cancelled once it sleeps in the
 * kernel, and must end as untraced: pthread_join says PTHREAD_CANCELED, its
 * cleanup handler ran, the mutex a condition wait reacquired is free
 * again. Then the process goes on (a contended mutex, a condition
 * variable, a pipe between threads), and main ends by pthread_exit: the
 * process exits 0 when the last thread does. programs_check.sh compares
 * the output traced and untraced.
 *
 * Usage: run_cancel
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "task_state.h"

static void die(const char *what) {
  perror(what);
  exit(1);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static int pipe_r, full_w, sock_r, listen_fd, epfd;
static pid_t child;
static pthread_t never_ends;
static _Atomic pid_t tid;
static _Atomic int cleaned;

static void cleanup(void *arg) {
  (void)arg;
  cleaned = 1;
}

static void cleanup_unlock(void *arg) {
  pthread_mutex_unlock(arg);
  cleaned = 1;
}

static struct timespec in_a_minute(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  t.tv_sec += 60;
  return t;
}

/* Each case waits in one call; cancellation ends it there. */
static void wait_in(const char *name) {
  char buf[64];
  if (strcmp(name, "cond_wait") == 0 || strcmp(name, "cond_timedwait") == 0) {
    pthread_mutex_lock(&mu);
    pthread_cleanup_push(cleanup_unlock, &mu);
    struct timespec t = in_a_minute(CLOCK_REALTIME);
    for (;;)
      name[5] == 'w' ? pthread_cond_wait(&cv, &mu) : pthread_cond_timedwait(&cv, &mu, &t);
    pthread_cleanup_pop(1);
  }
  if (strcmp(name, "read") == 0) read(pipe_r, buf, sizeof buf);
  if (strcmp(name, "write") == 0) {
    static char big[1 << 20];
    write(full_w, big, sizeof big); /* into a pipe nobody reads */
  }
  if (strcmp(name, "recv") == 0) recv(sock_r, buf, sizeof buf, 0);
  if (strcmp(name, "recvmsg") == 0) {
    struct iovec v = {buf, sizeof buf};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    recvmsg(sock_r, &m, 0);
  }
  if (strcmp(name, "accept") == 0) accept(listen_fd, NULL, NULL);
  if (strcmp(name, "poll") == 0) {
    struct pollfd p = {pipe_r, POLLIN, 0};
    poll(&p, 1, 60000);
  }
  if (strcmp(name, "select") == 0) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(sock_r, &r);
    struct timeval t = {60, 0};
    select(sock_r + 1, &r, NULL, NULL, &t);
  }
  if (strcmp(name, "epoll_wait") == 0) {
    struct epoll_event e;
    epoll_wait(epfd, &e, 1, 60000);
  }
  if (strcmp(name, "nanosleep") == 0) {
    struct timespec t = {60, 0};
    nanosleep(&t, NULL);
  }
  if (strcmp(name, "sleep") == 0) sleep(60);
  if (strcmp(name, "sem_wait") == 0) sem_wait(&sem);
  if (strcmp(name, "sem_timedwait") == 0) {
    struct timespec t = in_a_minute(CLOCK_REALTIME);
    sem_timedwait(&sem, &t);
  }
  if (strcmp(name, "join") == 0) pthread_join(never_ends, NULL);
  if (strcmp(name, "waitpid") == 0) waitpid(child, NULL, 0);
  if (strcmp(name, "testcancel") == 0)
    for (;;) {
      pthread_testcancel();
      sched_yield();
    }
  if (strcmp(name, "async") == 0) {
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    for (volatile unsigned long i = 0;; i++) {
    }
  }
}

static void *waiter(void *arg) {
  const char *name = arg;
  pthread_cleanup_push(cleanup, NULL);
  tid = gettid();
  wait_in(name);
  pthread_cleanup_pop(0);
  return NULL; /* only if the call returned */
}

static void *forever(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static void run_case(const char *name) {
  cleaned = 0;
  tid = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, waiter, (void *)name) != 0) die("pthread_create");
  /* Cancel once the thread is asleep in its call (the busy cases: once
   * it runs), so that the cancellation finds it inside the wrapper. */
  int busy = strcmp(name, "testcancel") == 0 || strcmp(name, "async") == 0;
  for (int i = 0; i < 20000; i++) {
    pid_t id = tid;
    if (id && (busy || task_state(id) == 'S')) break;
    struct timespec ms = {0, 1000 * 1000};
    nanosleep(&ms, NULL);
  }
  pthread_cancel(t);
  void *ret = NULL;
  pthread_join(t, &ret);
  int mutex_free = pthread_mutex_trylock(&mu) == 0;
  if (mutex_free) pthread_mutex_unlock(&mu);
  printf("%s: %s, cleanup %s, mutex %s\n", name, ret == PTHREAD_CANCELED ? "cancelled" : "returned",
         cleaned ? "ran" : "did not run", mutex_free ? "free" : "held");
}

/* ---- after the cancellations: the process goes on -------------------------------- */

static int counter;

static void *contend(void *arg) {
  (void)arg;
  for (int i = 0; i < 100000; i++) {
    pthread_mutex_lock(&mu);
    counter++;
    if (counter == 150000) pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

static int last_w;

static void *last(void *arg) {
  (void)arg;
  struct timespec t = {0, 20 * 1000 * 1000};
  nanosleep(&t, NULL); /* main has called pthread_exit by now, or soon */
  if (write(last_w, "x", 1) != 1) die("write");
  printf("last thread: done\n");
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  sem_init(&sem, 0, 0);
  int p[2], f[2], sv[2];
  if (pipe(p) != 0 || pipe(f) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("pipe");
  pipe_r = p[0];
  full_w = f[1];
  fcntl(full_w, F_SETPIPE_SZ, 4096);
  sock_r = sv[0];
  listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 1) != 0)
    die("listen");
  epfd = epoll_create1(0);
  struct epoll_event e = {.events = EPOLLIN};
  if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, sock_r, &e) != 0) die("epoll");
  child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    close(p[1]); /* a read of p[0] ends this child when main exits */
    char c;
    read(p[0], &c, 1);
    _exit(0);
  }
  pthread_create(&never_ends, NULL, forever, NULL);

  const char *cases[] = {"cond_wait", "cond_timedwait", "read", "write", "recv", "recvmsg",
                         "accept", "poll", "select", "epoll_wait", "nanosleep", "sleep",
                         "sem_wait", "sem_timedwait", "join", "waitpid", "testcancel", "async"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(cases[i]);

  /* The process goes on: two threads contend for mu while main waits on
   * cv for both to be well under way. */
  pthread_t c[2];
  for (int i = 0; i < 2; i++) pthread_create(&c[i], NULL, contend, NULL);
  pthread_mutex_lock(&mu);
  while (counter < 150000) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < 2; i++) pthread_join(c[i], NULL);
  printf("after: counter %d\n", counter);

  /* The child is still waiting for main's end; the last thread's write
   * lets it go before the process ends. */
  pthread_cancel(never_ends);
  pthread_join(never_ends, NULL);
  last_w = p[1];
  pthread_t l;
  pthread_create(&l, NULL, last, NULL);
  pthread_detach(l);
  pthread_exit(NULL);
}
