/* tcp: an echo server and its client on 127.0.0.1, in one process.
 *
 *   run_tcp [ROUNDS [SIZE]]      (default 1000 rounds of 512 bytes)
 *
 * The server thread listens on an ephemeral port and accepts before the
 * client (started 20 ms later) connects, so accept waits (GoBlockNet).
 * The server then echoes: poll for input, recv, send. The client sends a
 * message and reads the echo, ROUNDS times; its reads mostly find nothing
 * yet and wait (GoBlockNet). Every socket has a 10 s receive timeout and
 * the process an alarm, so a hang ends the test instead of blocking it.
 * Prints "tcp rounds=N bytes=B ns=T cpu_ns=C" and exits 0 if every echo
 * matched.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

static long rounds;
static size_t size;
static int listener;
static struct sockaddr_in addr;

static void timeouts(int fd) {
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void *server(void *arg) {
  (void)arg;
  int c = accept(listener, NULL, NULL);
  if (c < 0) abort();
  timeouts(c);
  char *buf = malloc(size);
  if (!buf) abort();
  for (;;) {
    struct pollfd p = {c, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) abort();
    ssize_t n = recv(c, buf, size, 0);
    if (n < 0) abort();
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t k = send(c, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
      if (k <= 0) abort();
      off += k;
    }
  }
  free(buf);
  close(c);
  return NULL;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atol(argv[1]) : 1000;
  size = argc > 2 ? (size_t)atol(argv[2]) : 512;
  alarm(60);
  listener = socket(AF_INET, SOCK_STREAM, 0);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(listener, 1) != 0 || getsockname(listener, (struct sockaddr *)&addr, &alen) != 0)
    return 1;
  pthread_t th;
  if (pthread_create(&th, NULL, server, NULL) != 0) return 1;
  usleep(20000);
  long long t0 = now_ns(), c0 = cpu_ns();
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) return 1;
  timeouts(s);
  char *out = malloc(size), *in = malloc(size);
  if (!out || !in) return 1;
  long bad = 0;
  long long bytes = 0;
  for (long i = 0; i < rounds; i++) {
    memset(out, (int)(i & 0xff), size);
    if (send(s, out, size, MSG_NOSIGNAL) != (ssize_t)size) return 1;
    for (size_t got = 0; got < size;) {
      ssize_t n = recv(s, in + got, size - got, 0);
      if (n <= 0) return 1;
      got += (size_t)n;
    }
    bad += memcmp(in, out, size) != 0;
    bytes += (long long)size;
  }
  long long t1 = now_ns(), c1 = cpu_ns();
  shutdown(s, SHUT_WR);
  pthread_join(th, NULL);
  close(s);
  close(listener);
  printf("tcp rounds=%ld bytes=%lld ns=%lld cpu_ns=%lld\n", rounds, bytes, t1 - t0, c1 - c0);
  free(out);
  free(in);
  return bad == 0 ? 0 : 1;
}
