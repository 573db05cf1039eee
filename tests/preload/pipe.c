/* pipe: a writer thread sends messages through a pipe to the main thread.
 *
 *   run_pipe [MESSAGES [SIZE]]      (default 2000 messages of 4096 bytes)
 *
 * The writer sleeps 20 ms first (GoSleep), so main's first read finds the
 * pipe empty and waits (GoSysBlock); main then sleeps 20 ms after its
 * first message, so the writer fills the pipe and waits too. Every read
 * and write is a GoSysCall. Prints "pipe messages=N bytes=B ns=T cpu_ns=C" and
 * exits 0 if every byte arrived intact.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

static int fds[2];
static long messages;
static size_t size;

static void *writer(void *arg) {
  (void)arg;
  usleep(20000);
  char *buf = malloc(size);
  if (!buf) abort();
  for (long i = 0; i < messages; i++) {
    memset(buf, (int)(i & 0xff), size);
    for (size_t off = 0; off < size;) {
      ssize_t n = write(fds[1], buf + off, size - off);
      if (n <= 0) abort();
      off += (size_t)n;
    }
  }
  free(buf);
  close(fds[1]);
  return NULL;
}

int main(int argc, char **argv) {
  messages = argc > 1 ? atol(argv[1]) : 2000;
  size = argc > 2 ? (size_t)atol(argv[2]) : 4096;
  if (pipe(fds) != 0) return 1;
  pthread_t th;
  long long t0 = now_ns(), c0 = cpu_ns();
  if (pthread_create(&th, NULL, writer, NULL) != 0) return 1;
  char *buf = malloc(size);
  if (!buf) return 1;
  long got = 0, bad = 0;
  long long bytes = 0;
  size_t fill = 0;
  for (;;) {
    ssize_t n = read(fds[0], buf + fill, size - fill);
    if (n < 0) return 1;
    if (n == 0) break;
    fill += (size_t)n;
    bytes += n;
    if (fill < size) continue;
    for (size_t i = 0; i < size; i++) bad += buf[i] != (char)(got & 0xff);
    if (got++ == 0) usleep(20000);
    fill = 0;
  }
  pthread_join(th, NULL);
  long long t1 = now_ns(), c1 = cpu_ns();
  free(buf);
  printf("pipe messages=%ld bytes=%lld ns=%lld cpu_ns=%lld\n", got, bytes, t1 - t0, c1 - c0);
  return got == messages && bad == 0 && fill == 0 ? 0 : 1;
}
