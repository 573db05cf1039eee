/* fidelity.c - calls whose answers the shim's tries without waiting
 * could change (src/preload/io.h); each prints what it got, and
 * fidelity_check.sh compares the output traced and untraced.
 *
 * Usage: run_fidelity DIR [CASE...]   (DIR: a scratch directory on a disk
 * file system; CASE: cold zero direct lowat eintr, all by default)
 *
 * - cold: a file evicted from the page cache but its first page, read
 *   whole by pread, read, readv, preadv, and opened O_NONBLOCK: the whole
 *   file each time (a try under RWF_NOWAIT stops where the cache does);
 * - zero: 32 reads of 16 MiB from /dev/zero: 32 whole reads;
 * - direct: O_DIRECT|O_NONBLOCK writes that allocate blocks: all written
 *   (a file never says EAGAIN);
 * - lowat: a TCP receiver with SO_RCVLOWAT 1000 whose sender sends 10
 *   bytes, then 990: recv and read return 1000, not 10 (see lowat_port);
 * - eintr: a 1 MiB write into a pipe nobody reads, interrupted by a signal
 *   without SA_RESTART: the pipe's size, and errno as it was.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define COLD_SIZE (256 * 1024)

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* A file of COLD_SIZE bytes on disk, out of the page cache but its first
 * page; returns its descriptor, opened with flags. */
static int cold_file(const char *path, int flags) {
  int fd = open(path, O_RDONLY | flags);
  if (fd < 0) die("open");
  if (fdatasync(fd) != 0 && errno != EINVAL) die("fdatasync");
  if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) die("fadvise");
  char page[4096];
  if (pread(fd, page, sizeof page, 0) != (ssize_t)sizeof page) die("pread page 0");
  return fd;
}

static void cold(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/cold.bin", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *buf = malloc(COLD_SIZE);
  for (size_t i = 0; i < COLD_SIZE; i++) buf[i] = (char)(i * 7 + i / 4096);
  if (fd < 0 || write(fd, buf, COLD_SIZE) != COLD_SIZE || fsync(fd) != 0) die("cold file");
  close(fd);
  char *got = malloc(COLD_SIZE);
  const char *how[] = {"pread", "read", "readv", "preadv", "read-nonblock"};
  for (int m = 0; m < 5; m++) {
    fd = cold_file(path, m == 4 ? O_NONBLOCK : 0);
    memset(got, 0, COLD_SIZE);
    struct iovec v[2] = {{got, 1000}, {got + 1000, COLD_SIZE - 1000}};
    errno = 0;
    ssize_t r = m == 0 ? pread(fd, got, COLD_SIZE, 0)
              : m == 2 ? readv(fd, v, 2)
              : m == 3 ? preadv(fd, v, 2, 0)
                       : read(fd, got, COLD_SIZE);
    int e = errno;
    printf("cold %s: %zd errno=%d same=%d\n", how[m], r, e, memcmp(got, buf, COLD_SIZE) == 0);
    close(fd);
  }
  free(got);
  free(buf);
}

/* Spinners keep both cores wanted, so that the kernel reschedules within
 * a read of /dev/zero, where RWF_NOWAIT stops it. */
static _Atomic int spinning;

static void *spin(void *arg) {
  (void)arg;
  while (spinning) {
  }
  return NULL;
}

static void zero(void) {
  pthread_t spinner[2];
  spinning = 1;
  for (int i = 0; i < 2; i++) pthread_create(&spinner[i], NULL, spin, NULL);
  int fd = open("/dev/zero", O_RDONLY);
  if (fd < 0) die("/dev/zero");
  size_t n = 16 << 20, whole = 0, total = 0;
  char *buf = malloc(n);
  for (int i = 0; i < 32; i++) {
    ssize_t r = read(fd, buf, n);
    if (r < 0) die("read /dev/zero");
    whole += (size_t)r == n;
    total += (size_t)r;
  }
  spinning = 0;
  for (int i = 0; i < 2; i++) pthread_join(spinner[i], NULL);
  printf("zero: %zu whole reads, %zu bytes\n", whole, total);
  free(buf);
  close(fd);
}

static void direct(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/direct.bin", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_NONBLOCK, 0644);
  if (fd < 0) {
    printf("direct: no O_DIRECT here\n");
    return;
  }
  void *buf;
  if (posix_memalign(&buf, 4096, 65536) != 0) die("memalign");
  memset(buf, 'd', 65536);
  int ok = 0, eagain = 0, other = 0;
  for (int i = 0; i < 64; i++) {
    ssize_t r = write(fd, buf, 65536);
    if (r == 65536)
      ok++;
    else if (r < 0 && errno == EAGAIN)
      eagain++;
    else
      other++;
  }
  printf("direct: %d written, %d EAGAIN, %d other\n", ok, eagain, other);
  free(buf);
  close(fd);
}

/* The sender's first 10 bytes are in the receiver's queue before it
 * reads (loopback delivers them within send): a try answers with them.
 * The real call takes them and waits for the mark, which the kernel
 * counts in what is queued: the 990 bytes that follow do not end it, the
 * sender's close does, and it returns 1000, whenever the 990 came. */
static int lowat_port;
static int lowat_sent;
static pthread_mutex_t lowat_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lowat_cv = PTHREAD_COND_INITIALIZER;

static void *lowat_sender(void *arg) {
  (void)arg;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)lowat_port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int one = 1; /* the 990 bytes go at once, not when the 10 are acked */
  if (s < 0 || setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
      connect(s, (struct sockaddr *)&a, sizeof a) != 0)
    die("connect");
  char data[990];
  memset(data, 'x', sizeof data);
  if (send(s, data, 10, 0) != 10) die("send 10");
  pthread_mutex_lock(&lowat_mu);
  lowat_sent = 1;
  pthread_cond_signal(&lowat_cv);
  pthread_mutex_unlock(&lowat_mu);
  struct timespec pause = {0, 50 * 1000 * 1000};
  nanosleep(&pause, NULL);
  if (send(s, data, 990, 0) != 990) die("send 990");
  close(s);
  return NULL;
}

static ssize_t lowat_read(bool use_recv) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &alen) != 0)
    die("listen");
  lowat_port = ntohs(a.sin_port);
  lowat_sent = 0;
  pthread_t t;
  pthread_create(&t, NULL, lowat_sender, NULL);
  int c = accept(l, NULL, NULL);
  int mark = 1000;
  if (c < 0 || setsockopt(c, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof mark) != 0) die("accept");
  pthread_mutex_lock(&lowat_mu);
  while (!lowat_sent) pthread_cond_wait(&lowat_cv, &lowat_mu);
  pthread_mutex_unlock(&lowat_mu);
  char buf[4096];
  ssize_t r = use_recv ? recv(c, buf, sizeof buf, 0) : read(c, buf, sizeof buf);
  pthread_join(t, NULL);
  close(c);
  close(l);
  return r;
}

static void lowat(void) {
  ssize_t r1 = lowat_read(true);
  ssize_t r2 = lowat_read(false);
  printf("lowat: recv %zd, read %zd\n", r1, r2);
}

static void on_alarm(int sig) { (void)sig; }

static void eintr(void) {
  struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
  sigaction(SIGALRM, &sa, NULL);
  int p[2];
  if (pipe(p) != 0) die("pipe");
  size_t n = 1 << 20;
  char *buf = calloc(1, n);
  long cap = fcntl(p[1], F_GETPIPE_SZ);
  alarm(1);
  errno = 0;
  ssize_t r = write(p[1], buf, n);
  int e = errno;
  printf("eintr: wrote the pipe's size %d, errno=%d\n", r == cap, e);
  free(buf);
  close(p[0]);
  close(p[1]);
}

static bool wanted(int argc, char **argv, const char *name) {
  if (argc == 2) return true;
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return true;
  return false;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: %s DIR [cold|zero|direct|lowat|eintr]...\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (wanted(argc, argv, "cold")) cold(argv[1]);
  if (wanted(argc, argv, "zero")) zero();
  if (wanted(argc, argv, "direct")) direct(argv[1]);
  if (wanted(argc, argv, "lowat")) lowat();
  if (wanted(argc, argv, "eintr")) eintr();
  return 0;
}
