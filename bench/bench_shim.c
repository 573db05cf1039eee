/* bench_shim: the cost of one interposed call that does not wait, the
 * common case the shim's try-first rule makes cheap.
 *
 *   bench_shim [ITERATIONS]      (default 2000000)
 *
 * One thread, nothing contended, nothing waits:
 *   mutex      pthread_mutex_lock + unlock (the wrapper tries trylock)
 *   rwlock     pthread_rwlock_rdlock + unlock, then wrlock + unlock (the
 *              wrappers try; each unlock reads the lock word)
 *   sem        sem_post + sem_wait (sem_trywait succeeds)
 *   malloc     malloc(64) + free (two usable-size reads, a thread-local add)
 *   pipe-rw    write + read of 1 byte on a pipe (two GoSysCall with their
 *              stacks, RWF_NOWAIT tries that succeed)
 *   pipe-short write of 1 byte + read of up to 64 on a pipe: the read's
 *              answer is short, which on a stream is the answer (one
 *              fcntl tells a stream from a file)
 *   file-pread pread of 4 KiB from a file in the page cache (whole)
 *   sendfile   sendfile of those 4 KiB, at an offset, to an O_NONBLOCK
 *              socket (a server's), and a read of them at the other end:
 *              the probes (an fstat, a 1-byte RWF_NOWAIT read of the file,
 *              an fcntl of the socket) and two GoSysCall
 *   fcntl-getfl fcntl(F_GETFL): a command the wrapper passes on unrecorded
 *   fcntl-lock fcntl(F_SETLKW) of a free record lock, then its unlock: the
 *              F_SETLK try takes it, one GoSysCall; the unlock's F_SETLKW
 *              the same
 *   futex-wake FUTEX_WAKE through syscall() with nobody waiting (Rust's
 *              and libstdc++'s unlock and notify): one look-up
 *   futex-eagain FUTEX_WAIT through syscall() on a word that no longer
 *              holds the value: the kernel's EAGAIN, no block
 *   epoll-ready epoll_wait on an instance whose eventfd is readable: the
 *              try answers (an event loop that has work)
 *   eventfd-write write of 1 to an eventfd nobody waits on (uv_async_send,
 *              a thread pool posting to its loop while the loop runs)
 *   eventfd-write-loop the same while another thread waits in epoll_wait
 *              on a pipe nobody writes: the writer looks for a loop to
 *              wake (an fstat), the case of a loop that waits for work
 * Prints one line per case: "shim case=<c> ns_per_op=<x>". bench_run.sh
 * runs it untraced and under ctrace run.
 */
#include "help.h"
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Keeps the compiler from dropping the malloc/free pairs. */
static void *volatile sink;

/* Waits in epoll_wait on a pipe nobody writes: the process exits with it
 * waiting. */
static void *loop_waiting(void *arg) {
  int ep = *(int *)arg;
  struct epoll_event ev;
  for (;;) epoll_wait(ep, &ev, 1, -1);
  return NULL;
}

int main(int argc, char **argv) {
  bench_help(argc, argv,
             "usage: bench_shim [ITERATIONS]      (default 2000000)\n"
             "The cost of one interposed call that does not wait (run under ctrace run).\n");
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  sem_t sem;
  int fds[2];
  char c = 'x';
  if (sem_init(&sem, 0, 0) != 0 || pipe(fds) != 0) return 1;

  long long t0 = now_ns();
  for (long i = 0; i < n; i++) {
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
  }
  long long t1 = now_ns();
  printf("shim case=mutex ns_per_op=%.1f\n", (double)(t1 - t0) / (double)n);

  t0 = now_ns();
  for (long i = 0; i < n; i++) {
    pthread_rwlock_rdlock(&rw);
    pthread_rwlock_unlock(&rw);
    pthread_rwlock_wrlock(&rw);
    pthread_rwlock_unlock(&rw);
  }
  t1 = now_ns();
  printf("shim case=rwlock ns_per_op=%.1f\n", (double)(t1 - t0) / (double)n);

  t0 = now_ns();
  for (long i = 0; i < n; i++) {
    sem_post(&sem);
    sem_wait(&sem);
  }
  t1 = now_ns();
  printf("shim case=sem ns_per_op=%.1f\n", (double)(t1 - t0) / (double)n);

  t0 = now_ns();
  for (long i = 0; i < n; i++) {
    sink = malloc(64);
    free(sink);
  }
  t1 = now_ns();
  printf("shim case=malloc ns_per_op=%.1f\n", (double)(t1 - t0) / (double)n);

  long m = n / 10;
  t0 = now_ns();
  for (long i = 0; i < m; i++) {
    if (write(fds[1], &c, 1) != 1 || read(fds[0], &c, 1) != 1) return 1;
  }
  t1 = now_ns();
  printf("shim case=pipe-rw ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  char buf[4096];
  t0 = now_ns();
  for (long i = 0; i < m; i++) {
    if (write(fds[1], &c, 1) != 1 || read(fds[0], buf, 64) != 1) return 1;
  }
  t1 = now_ns();
  printf("shim case=pipe-short ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  FILE *f = tmpfile();
  if (!f || fwrite(buf, 1, sizeof buf, f) != sizeof buf || fflush(f) != 0) return 1;
  int fd = fileno(f);
  t0 = now_ns();
  for (long i = 0; i < m; i++) {
    if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return 1;
  }
  t1 = now_ns();
  printf("shim case=file-pread ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0 || fcntl(sp[0], F_SETFL, O_NONBLOCK) != 0) return 1;
  t0 = now_ns();
  for (long i = 0; i < m; i++) {
    off_t at = 0;
    if (sendfile(sp[0], fd, &at, sizeof buf) != (ssize_t)sizeof buf ||
        read(sp[1], buf, sizeof buf) != (ssize_t)sizeof buf)
      return 1;
  }
  t1 = now_ns();
  printf("shim case=sendfile ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  t0 = now_ns();
  for (long i = 0; i < m; i++)
    if (fcntl(fd, F_GETFL) < 0) return 1;
  t1 = now_ns();
  printf("shim case=fcntl-getfl ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);
  struct flock lk = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = 1}, un = lk;
  un.l_type = F_UNLCK;
  t0 = now_ns();
  for (long i = 0; i < m; i++)
    if (fcntl(fd, F_SETLKW, &lk) != 0 || fcntl(fd, F_SETLKW, &un) != 0) return 1;
  t1 = now_ns();
  printf("shim case=fcntl-lock ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);
  fclose(f);

  static uint32_t word = 1;
  t0 = now_ns();
  for (long i = 0; i < m; i++) syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  t1 = now_ns();
  printf("shim case=futex-wake ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);
  t0 = now_ns();
  for (long i = 0; i < m; i++) syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
  t1 = now_ns();
  printf("shim case=futex-eagain ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  int efd = eventfd(0, EFD_CLOEXEC), ep = epoll_create1(EPOLL_CLOEXEC);
  uint64_t one = 1;
  struct epoll_event ev = {.events = EPOLLIN};
  if (efd < 0 || ep < 0 || write(efd, &one, sizeof one) != sizeof one ||
      epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) != 0)
    return 1;
  t0 = now_ns();
  for (long i = 0; i < m; i++)
    if (epoll_wait(ep, &ev, 1, -1) != 1) return 1;
  t1 = now_ns();
  printf("shim case=epoll-ready ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  t0 = now_ns();
  for (long i = 0; i < m; i++)
    if (write(efd, &one, sizeof one) != sizeof one) return 1;
  t1 = now_ns();
  printf("shim case=eventfd-write ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);

  /* Last: the waiting thread stays until the process exits. */
  int idle[2], lep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN};
  pthread_t th;
  if (pipe(idle) != 0 || lep < 0 || epoll_ctl(lep, EPOLL_CTL_ADD, idle[0], &lev) != 0 ||
      pthread_create(&th, NULL, loop_waiting, &lep) != 0)
    return 1;
  usleep(20000); /* until it waits */
  t0 = now_ns();
  for (long i = 0; i < m; i++)
    if (write(efd, &one, sizeof one) != sizeof one) return 1;
  t1 = now_ns();
  printf("shim case=eventfd-write-loop ns_per_op=%.1f\n", (double)(t1 - t0) / (double)m);
  return 0;
}
