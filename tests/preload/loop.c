/* loop: an event loop thread and the threads that feed it, for the trace
 * to show the loop's waits and who ended each (tests/preload/run_check.sh,
 * case loop; bench/bench_run.sh, run-loop-pingpong).
 *
 *   run_loop CALL KINDS N     a loop thread waits in CALL (epoll_wait,
 *                             epoll_pwait, epoll_pwait2, poll, ppoll,
 *                             select, pselect) on one descriptor per kind
 *                             of KINDS (a comma-separated list of eventfd,
 *                             pipe, socketpair, tcp: a loopback TCP
 *                             connection), each fed by a producer thread
 *                             of its own N times, in turn: a producer
 *                             writes once the loop has taken the write
 *                             before and sleeps in CALL, so that each of
 *                             the loop's 2N... waits ends by one write
 *   run_loop race KINDS N     the same with epoll_wait, but the producers
 *                             write when they like (each after a pause of
 *                             0 to 100 us): several make the loop's
 *                             descriptors ready at once, and the first
 *                             ends its wait
 *   run_loop et KINDS N       the same with epoll_wait, edge-triggered
 *                             (EPOLLET), every descriptor O_NONBLOCK and
 *                             read until EAGAIN
 *   run_loop timeout N        epoll_wait with a 20 ms timeout on an
 *                             eventfd, which a producer writes in every
 *                             other round: the other rounds' waits time
 *                             out
 *   run_loop timerfd N        epoll_wait without a timeout on a timerfd
 *                             armed 2 ms on each round, until N calls
 *                             began before it expired
 *   run_loop signalfd N       epoll_wait on a signalfd of SIGUSR1, which
 *                             a thread sends to the process N times
 *   run_loop out N            the loop waits for room in a full pipe, N
 *                             times in epoll_wait (level-triggered
 *                             EPOLLOUT), N in poll (POLLOUT); a reader
 *                             thread reads a page once it sleeps there
 *   run_loop many N           N streams open at once, socketpairs and
 *                             loopback TCP connections in turn, each made
 *                             after 0 to 1023 pipes opened and closed
 *                             (each takes an inode number, as other
 *                             processes' pipes and sockets do on a busy
 *                             machine: the streams' inodes fall anywhere
 *                             in the shim's table of pairs); the loop
 *                             polls each in turn, alone, and a producer
 *                             thread writes it once the loop sleeps there
 *   run_loop sleep N          poll(NULL, 0, 1) and select(0, ..., 1 ms),
 *                             N times each: sleeps
 *   run_loop pingpong N       main and a loop thread bounce a counter
 *                             through two eventfds, each waiting in
 *                             epoll_wait: N round trips (for the bench;
 *                             prints ns= and cpu_ns=)
 *
 * Prints what it did on stdout ("loop CALL KINDS rounds=N events=E"), the
 * same traced and untraced, and on stderr how many of the loop's waits
 * ended by their timeout ("timeouts T"). Every wait has a 10 s bound, the
 * process an alarm: a hang ends the test.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "task_state.h"

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

enum { EVENTFD, PIPE, SOCKETPAIR, TCP, NKINDS };
static const char *const kind_names[NKINDS] = {"eventfd", "pipe", "socketpair", "tcp"};

#define MAXSRC 8
static struct src {
  int kind;
  int rfd, wfd; /* the loop reads rfd, its producer writes wfd */
} srcs[MAXSRC];
static int nsrc;
static long rounds;
static const char *call;
static bool edge, racing;

static _Atomic long turn;      /* writes the loop has taken */
static _Atomic int loop_tid;
static int loop_nr = -1;        /* the system call the loop sleeps in */

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* The loop thread sleeps in its waiting call: the kernel says so in
 * /proc (a zero-timeout try runs, and never sleeps). */
static bool loop_asleep(void) {
  if (task_state(loop_tid) != 'S') return false;
  /* glibc may make one call with another's system call (select with
   * pselect6, epoll_wait with epoll_pwait). */
  long nr = task_syscall(loop_tid);
  return nr == loop_nr || (loop_nr == SYS_select && nr == SYS_pselect6) ||
         (loop_nr == SYS_epoll_wait && nr == SYS_epoll_pwait) || (loop_nr == SYS_poll && nr == SYS_ppoll);
}

static void wait_asleep(void) {
  for (long spins = 0; !loop_asleep(); spins++) {
    if (spins > 10000000) die("the loop never slept");
    sched_yield();
  }
}

static void put(int fd, int kind) {
  if (kind == EVENTFD) {
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != sizeof one) die("write eventfd");
  } else {
    char c = 'x';
    if (write(fd, &c, 1) != 1) die("write");
  }
}

/* Reads what fd holds (until EAGAIN for an edge-triggered loop); returns
 * the writes it held. */
static long take(int fd, int kind) {
  long got = 0;
  for (;;) {
    if (kind == EVENTFD) {
      uint64_t v;
      ssize_t n = read(fd, &v, sizeof v);
      if (n < 0 && errno == EAGAIN) return got;
      if (n != sizeof v) die("read eventfd");
      got += (long)v;
    } else {
      char buf[64];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EAGAIN) return got;
      if (n <= 0) die("read");
      got += n;
    }
    if (!edge) return got;
  }
}

static void *producer(void *arg) {
  struct src *s = arg;
  long me = s - srcs;
  unsigned seed = (unsigned)me;
  for (long k = 0; racing && k < rounds; k++) {
    struct timespec d = {0, rand_r(&seed) % 100 * 1000};
    nanosleep(&d, NULL);
    put(s->wfd, s->kind);
  }
  for (long k = 0; !racing && k < rounds; k++) {
    long want = k * nsrc + me;
    while (atomic_load(&turn) != want) sched_yield();
    wait_asleep();
    put(s->wfd, s->kind);
  }
  return NULL;
}

static void nonblock(int fd) {
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) die("fcntl");
}

static void open_src(struct src *s, int kind) {
  s->kind = kind;
  int fds[2];
  switch (kind) {
  case EVENTFD:
    if ((s->rfd = s->wfd = eventfd(0, EFD_CLOEXEC)) < 0) die("eventfd");
    break;
  case PIPE:
    if (pipe(fds) != 0) die("pipe");
    s->rfd = fds[0], s->wfd = fds[1];
    break;
  case SOCKETPAIR:
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) die("socketpair");
    s->rfd = fds[0], s->wfd = fds[1];
    break;
  case TCP: {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) != 0)
      die("listen");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
    int srv = accept(l, NULL, NULL);
    if (srv < 0) die("accept");
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    close(l);
    s->rfd = srv, s->wfd = c;
    break;
  }
  }
  if (edge) nonblock(s->rfd);
}

/* ---- the loop's one wait, in each call ----------------------------------- */

static int epfd;
static const sigset_t *no_mask;

/* Waits (at most timeout_ms, -1: 10 s) for srcs; returns the indexes of
 * those ready in ready[], their count, 0 on a timeout. */
static int wait_once(int *ready, int timeout_ms) {
  int tmo = timeout_ms < 0 ? 10000 : timeout_ms;
  int n = 0;
  if (strncmp(call, "epoll", 5) == 0 || strcmp(call, "et") == 0 || strcmp(call, "race") == 0) {
    struct epoll_event ev[MAXSRC];
    int r;
    if (strcmp(call, "epoll_pwait") == 0) {
      sigset_t m;
      sigemptyset(&m);
      r = epoll_pwait(epfd, ev, MAXSRC, tmo, &m);
    } else if (strcmp(call, "epoll_pwait2") == 0) {
      struct timespec ts = {tmo / 1000, tmo % 1000 * 1000000L};
      r = epoll_pwait2(epfd, ev, MAXSRC, &ts, no_mask);
    } else {
      r = epoll_wait(epfd, ev, MAXSRC, tmo);
    }
    if (r < 0) die(call);
    for (int i = 0; i < r; i++) ready[n++] = (int)ev[i].data.u64;
  } else if (strcmp(call, "poll") == 0 || strcmp(call, "ppoll") == 0) {
    struct pollfd p[MAXSRC];
    for (int i = 0; i < nsrc; i++) p[i] = (struct pollfd){srcs[i].rfd, POLLIN, 0};
    int r;
    if (call[0] == 'p' && call[1] == 'p') {
      struct timespec ts = {tmo / 1000, tmo % 1000 * 1000000L};
      r = ppoll(p, (nfds_t)nsrc, &ts, NULL);
    } else {
      r = poll(p, (nfds_t)nsrc, tmo);
    }
    if (r < 0) die(call);
    for (int i = 0; i < nsrc; i++)
      if (p[i].revents & POLLIN) ready[n++] = i;
  } else {
    fd_set rs;
    FD_ZERO(&rs);
    int max = 0;
    for (int i = 0; i < nsrc; i++) {
      FD_SET(srcs[i].rfd, &rs);
      if (srcs[i].rfd >= max) max = srcs[i].rfd + 1;
    }
    int r;
    if (strcmp(call, "pselect") == 0) {
      struct timespec ts = {tmo / 1000, tmo % 1000 * 1000000L};
      r = pselect(max, &rs, NULL, NULL, &ts, NULL);
    } else {
      struct timeval tv = {tmo / 1000, tmo % 1000 * 1000};
      r = select(max, &rs, NULL, NULL, &tv);
    }
    if (r < 0) die(call);
    for (int i = 0; i < nsrc; i++)
      if (FD_ISSET(srcs[i].rfd, &rs)) ready[n++] = i;
  }
  return n;
}

static int nr_of(const char *c) {
  if (!strcmp(c, "epoll_wait") || !strcmp(c, "et") || !strcmp(c, "race") || !strcmp(c, "timeout") ||
      !strcmp(c, "timerfd") || !strcmp(c, "signalfd"))
    return SYS_epoll_wait;
  if (!strcmp(c, "epoll_pwait")) return SYS_epoll_pwait;
  if (!strcmp(c, "epoll_pwait2")) return SYS_epoll_pwait2;
  if (!strcmp(c, "poll")) return SYS_poll;
  if (!strcmp(c, "ppoll")) return SYS_ppoll;
  if (!strcmp(c, "select")) return SYS_select;
  if (!strcmp(c, "pselect")) return SYS_pselect6;
  return -1;
}

static void epoll_add(int fd, uint64_t data, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u64 = data};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
}

static int loop_kinds(const char *kinds) {
  char *list = strdup(kinds), *save = NULL;
  for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
    int i = 0;
    while (i < NKINDS && strcmp(k, kind_names[i]) != 0) i++;
    if (i == NKINDS || nsrc == MAXSRC) return 2;
    open_src(&srcs[nsrc++], i);
  }
  free(list);
  if (nsrc == 0) return 2;
  epfd = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < nsrc; i++) epoll_add(srcs[i].rfd, (uint64_t)i, EPOLLIN | (edge ? EPOLLET : 0));
  loop_nr = nr_of(call);
  loop_tid = gettid();
  pthread_t th[MAXSRC];
  for (int i = 0; i < nsrc; i++)
    if (pthread_create(&th[i], NULL, producer, &srcs[i]) != 0) die("pthread_create");
  long events = 0, want = rounds * nsrc;
  while (atomic_load(&turn) < want) {
    int ready[MAXSRC], n = wait_once(ready, -1);
    if (n == 0) die("a wait timed out");
    for (int i = 0; i < n; i++) {
      long got = take(srcs[ready[i]].rfd, srcs[ready[i]].kind);
      events += got;
      atomic_fetch_add(&turn, got);
    }
  }
  for (int i = 0; i < nsrc; i++) pthread_join(th[i], NULL);
  printf("loop %s %s rounds=%ld events=%ld\n", call, kinds, rounds, events);
  return events == want ? 0 : 1;
}

/* ---- many streams at once ---------------------------------------------------- */

#define MANY_MAX 256
static struct src many[MANY_MAX];

static void *many_writer(void *arg) {
  (void)arg;
  for (long k = 0; k < rounds; k++) {
    while (atomic_load(&turn) != k) sched_yield();
    wait_asleep();
    put(many[k].wfd, many[k].kind);
  }
  return NULL;
}

/* A fixed seed: the same gaps every run, from wherever the kernel's inode
 * numbers stand. */
static int loop_many(void) {
  if (rounds > MANY_MAX) return 2;
  unsigned seed = 1;
  for (long k = 0; k < rounds; k++) {
    for (int n = rand_r(&seed) % 1024; n > 0; n--) {
      int p[2];
      if (pipe(p) != 0) die("pipe");
      close(p[0]);
      close(p[1]);
    }
    open_src(&many[k], k % 2 ? TCP : SOCKETPAIR);
  }
  loop_nr = SYS_poll;
  loop_tid = gettid();
  pthread_t th;
  if (pthread_create(&th, NULL, many_writer, NULL) != 0) die("pthread_create");
  long events = 0;
  for (long k = 0; k < rounds; k++) {
    struct pollfd p = {many[k].rfd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) die("poll");
    long got = take(many[k].rfd, many[k].kind);
    events += got;
    atomic_fetch_add(&turn, got);
  }
  pthread_join(th, NULL);
  printf("loop many rounds=%ld events=%ld\n", rounds, events);
  return events == rounds ? 0 : 1;
}

/* ---- timeouts, timers and signals ------------------------------------------ */

static void *alternate(void *arg) {
  (void)arg;
  for (long k = 1; k < rounds; k += 2) {
    while (atomic_load(&turn) != k) sched_yield();
    wait_asleep();
    put(srcs[0].wfd, EVENTFD);
  }
  return NULL;
}

/* Rounds 0, 2, 4...: nobody writes, the wait times out; odd rounds: the
 * producer writes (a timeout before it does is counted, and waited again). */
static int loop_timeout(void) {
  call = "epoll_wait";
  open_src(&srcs[0], EVENTFD);
  nsrc = 1;
  epfd = epoll_create1(0);
  epoll_add(srcs[0].rfd, 0, EPOLLIN);
  loop_nr = SYS_epoll_wait;
  loop_tid = gettid();
  pthread_t th;
  if (pthread_create(&th, NULL, alternate, NULL) != 0) die("pthread_create");
  long timeouts = 0, events = 0;
  while (atomic_load(&turn) < rounds) {
    int ready[1];
    if (wait_once(ready, 20) == 0) {
      timeouts++;
      if (atomic_load(&turn) % 2 == 0) atomic_fetch_add(&turn, 1);
      continue;
    }
    events += take(srcs[0].rfd, EVENTFD);
    atomic_fetch_add(&turn, 1);
  }
  pthread_join(th, NULL);
  printf("loop timeout rounds=%ld events=%ld\n", rounds, events);
  fprintf(stderr, "timeouts %ld\n", timeouts);
  return events == rounds / 2 ? 0 : 1;
}

/* A timer that expired before the call is no wait: on a loaded machine a
 * round may take longer than the timer's period. So each round arms the
 * timer anew, 2 ms on, and rounds go on until ROUNDS calls began before
 * their expiry (waited; 100 times as many rounds at most). */
static int loop_timerfd(void) {
  int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (t < 0) die("timerfd");
  epfd = epoll_create1(0);
  epoll_add(t, 0, EPOLLIN);
  long waited = 0;
  for (long r = 0; waited < rounds && r < 100 * rounds; r++) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct itimerspec its = {{0, 0}, {now.tv_sec, now.tv_nsec + 2000000}};
    if (its.it_value.tv_nsec >= 1000000000) its.it_value.tv_sec++, its.it_value.tv_nsec -= 1000000000;
    if (timerfd_settime(t, TFD_TIMER_ABSTIME, &its, NULL) != 0) die("timerfd_settime");
    clock_gettime(CLOCK_MONOTONIC, &now);
    bool early = now.tv_sec < its.it_value.tv_sec ||
                 (now.tv_sec == its.it_value.tv_sec && now.tv_nsec < its.it_value.tv_nsec);
    struct epoll_event ev;
    if (epoll_wait(epfd, &ev, 1, 10000) != 1) die("epoll_wait timerfd");
    uint64_t n;
    if (read(t, &n, sizeof n) != sizeof n) die("read timerfd");
    waited += early;
  }
  printf("loop timerfd rounds=%ld\n", rounds);
  return 0;
}

static void *signaller(void *arg) {
  (void)arg;
  for (long k = 0; k < rounds; k++) {
    while (atomic_load(&turn) != k) sched_yield();
    wait_asleep();
    kill(getpid(), SIGUSR1);
  }
  return NULL;
}

static int loop_signalfd(void) {
  sigset_t m;
  sigemptyset(&m);
  sigaddset(&m, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &m, NULL); /* before the thread: it inherits it */
  int s = signalfd(-1, &m, SFD_CLOEXEC);
  if (s < 0) die("signalfd");
  epfd = epoll_create1(0);
  epoll_add(s, 0, EPOLLIN);
  loop_nr = SYS_epoll_wait;
  loop_tid = gettid();
  pthread_t th;
  if (pthread_create(&th, NULL, signaller, NULL) != 0) die("pthread_create");
  while (atomic_load(&turn) < rounds) {
    struct epoll_event ev;
    if (epoll_wait(epfd, &ev, 1, 10000) != 1) die("epoll_wait signalfd");
    struct signalfd_siginfo si;
    if (read(s, &si, sizeof si) != sizeof si || si.ssi_signo != SIGUSR1) die("read signalfd");
    atomic_fetch_add(&turn, 1);
  }
  pthread_join(th, NULL);
  printf("loop signalfd rounds=%ld\n", rounds);
  return 0;
}

static int room[2];

static void *page_reader(void *arg) {
  (void)arg;
  char page[4096];
  for (long k = 0; k < 2 * rounds; k++) {
    while (atomic_load(&turn) != k) sched_yield();
    loop_nr = k < rounds ? SYS_epoll_wait : SYS_poll;
    wait_asleep();
    if (read(room[0], page, sizeof page) != sizeof page) die("read");
  }
  return NULL;
}

/* Fills the pipe a page at a time (the reader's read of a page frees a
 * slot of the pipe: room for a writer). */
static void fill(void) {
  static char page[4096];
  while (write(room[1], page, sizeof page) == sizeof page) {
  }
  if (errno != EAGAIN) die("write");
}

static int loop_out(void) {
  if (pipe(room) != 0) die("pipe");
  nonblock(room[1]);
  epfd = epoll_create1(0);
  epoll_add(room[1], 0, EPOLLOUT);
  loop_tid = gettid();
  pthread_t th;
  if (pthread_create(&th, NULL, page_reader, NULL) != 0) die("pthread_create");
  for (long k = 0; k < 2 * rounds; k++) {
    fill();
    atomic_store(&turn, k);
    struct epoll_event ev;
    struct pollfd p = {room[1], POLLOUT, 0};
    if (k < rounds ? epoll_wait(epfd, &ev, 1, 10000) != 1 : poll(&p, 1, 10000) != 1) die("wait for room");
  }
  atomic_store(&turn, 2 * rounds);
  pthread_join(th, NULL);
  printf("loop out rounds=%ld\n", rounds);
  return 0;
}

static int loop_sleep(void) {
  for (long k = 0; k < rounds; k++) {
    poll(NULL, 0, 1);
    struct timeval tv = {0, 1000};
    select(0, NULL, NULL, NULL, &tv);
  }
  printf("loop sleep rounds=%ld\n", rounds);
  return 0;
}

/* ---- ping-pong through two eventfds and epoll --------------------------------- */

static int ping[2], ping_ep[2];

static void bounce(int me, long n) {
  for (long k = 0; k < n; k++) {
    struct epoll_event ev;
    uint64_t v = 1;
    if (me == 0 && write(ping[1], &v, sizeof v) != sizeof v) die("write");
    if (epoll_wait(ping_ep[me], &ev, 1, 10000) != 1) die("epoll_wait");
    if (read(ping[me], &v, sizeof v) != sizeof v) die("read");
    if (me == 1 && write(ping[0], &v, sizeof v) != sizeof v) die("write");
  }
}

static void *ponger(void *arg) {
  bounce(1, *(long *)arg);
  return NULL;
}

static int loop_pingpong(void) {
  for (int i = 0; i < 2; i++) {
    ping[i] = eventfd(0, EFD_CLOEXEC);
    ping_ep[i] = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ping[i] < 0 || epoll_ctl(ping_ep[i], EPOLL_CTL_ADD, ping[i], &ev) != 0) die("setup");
  }
  pthread_t th;
  long long t0 = now_ns(), c0 = cpu_ns();
  if (pthread_create(&th, NULL, ponger, &rounds) != 0) die("pthread_create");
  bounce(0, rounds);
  pthread_join(th, NULL);
  printf("loop pingpong rounds=%ld ns=%lld cpu_ns=%lld\n", rounds, now_ns() - t0, cpu_ns() - c0);
  return 0;
}

int main(int argc, char **argv) {
  alarm(120);
  if (argc < 3) goto usage;
  call = argv[1];
  rounds = atol(argv[argc - 1]);
  if (rounds <= 0) goto usage;
  if (argc == 3) {
    if (!strcmp(call, "timeout")) return loop_timeout();
    if (!strcmp(call, "timerfd")) return loop_timerfd();
    if (!strcmp(call, "signalfd")) return loop_signalfd();
    if (!strcmp(call, "sleep")) return loop_sleep();
    if (!strcmp(call, "many")) {
      int r = loop_many();
      if (r != 2) return r;
    }
    if (!strcmp(call, "out")) return loop_out();
    if (!strcmp(call, "pingpong")) return loop_pingpong();
  } else if (argc == 4 && nr_of(call) >= 0 && strcmp(call, "timeout") && strcmp(call, "timerfd") &&
             strcmp(call, "signalfd")) {
    edge = !strcmp(call, "et");
    racing = !strcmp(call, "race");
    int r = loop_kinds(argv[2]);
    if (r != 2) return r;
  }
usage:
  fprintf(stderr, "usage: run_loop epoll_wait|epoll_pwait|epoll_pwait2|poll|ppoll|select|pselect|et|"
                  "race KINDS N\n       run_loop timeout|timerfd|signalfd|out|many|sleep|pingpong N\n");
  return 2;
}
