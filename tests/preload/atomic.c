/* atomic.c - writes that are whole untraced must stay whole traced, where
 * the shim could write one in two parts (a try under RWF_NOWAIT, then the
 * real call for the rest: src/preload/io.c); programs_check.sh compares
 * the output traced and untraced.
 *
 * Usage: run_atomic DIR [CASE...]   (DIR: a scratch directory on a disk
 * file system; CASE: append pipe; both by default)
 *
 * - append: 3 processes of 3 threads each open DIR/append.log with
 *   O_APPEND (each its own open) and append 24 records each, of 100 bytes
 *   to 1 MiB; a write to a file holds the inode's lock, so each record
 *   lands whole (Linux, for a local file system; not a POSIX promise), as
 *   one run of its own bytes. The file is then read back record by record.
 * - pipe: 3 processes of 3 threads each write 300 records of 1 to PIPE_BUF
 *   bytes into one pipe, each with one write (or writev of 2 pieces); a
 *   reader reads it in pieces of 1000 bytes, slowly at first so the pipe
 *   fills and writers wait. A write of at most PIPE_BUF bytes to a pipe is
 *   atomic (POSIX): every record comes whole.
 *
 * A record: "<writer> <seq> <len> " then len-14 bytes of the writer's
 * letter, then "\n"; the reader checks each and counts them per writer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCS 3
#define THREADS 3
#define WRITERS (PROCS * THREADS)
#define HEAD 14 /* "w sss lllllll " */

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* Record seq of writer w, len bytes in all (len > HEAD). */
static void record(char *buf, int w, int seq, size_t len) {
  snprintf(buf, HEAD + 1, "%d %03d %07zu ", w, seq, len);
  memset(buf + HEAD, 'a' + w, len - HEAD - 1);
  buf[len - 1] = '\n';
}

/* Checks the records in data[0..n): each whole; counts them per writer,
 * in order. Returns the number of bad records (reported on stdout). */
static int check_records(const char *what, const char *data, size_t n, int per_writer) {
  int seen[WRITERS] = {0}, bad = 0;
  size_t off = 0;
  while (off < n) {
    int w, seq;
    size_t len;
    if (n - off < HEAD || sscanf(data + off, "%d %d %zu ", &w, &seq, &len) != 3 || w < 0 ||
        w >= WRITERS || len <= HEAD || len > n - off || seq != seen[w]) {
      printf("%s: broken record at byte %zu: \"%.20s\"\n", what, off, data + off);
      return bad + 1;
    }
    for (size_t i = HEAD; i + 1 < len; i++)
      if (data[off + i] != 'a' + w) {
        printf("%s: record %d of writer %d (%zu bytes at %zu) has '%c' at %zu\n", what, seq, w, len,
               off, data[off + i], i);
        bad++;
        break;
      }
    if (data[off + len - 1] != '\n') {
      printf("%s: record %d of writer %d does not end its line\n", what, seq, w);
      bad++;
    }
    seen[w]++;
    off += len;
  }
  int whole = 1;
  for (int w = 0; w < WRITERS; w++) whole &= seen[w] == per_writer;
  printf("%s: %zu bytes, %s, %s\n", what, n, bad ? "records broken" : "every record whole",
         whole ? "every writer's records in order" : "records missing");
  return bad;
}

/* ---- append ---------------------------------------------------------------- */

#define APPENDS 24

static const char *append_path;

static size_t append_len(int w, int seq) {
  static const size_t sizes[] = {100, 4096, 70000, 1 << 20, 333, 200000};
  return sizes[(w + seq) % 6];
}

static void *appender(void *arg) {
  int w = (int)(long)arg;
  int fd = open(append_path, O_WRONLY | O_APPEND);
  if (fd < 0) die("open append");
  char *buf = malloc(1 << 20);
  for (int seq = 0; seq < APPENDS; seq++) {
    size_t len = append_len(w, seq);
    record(buf, w, seq, len);
    ssize_t r = write(fd, buf, len);
    if (r != (ssize_t)len) die("append write");
  }
  free(buf);
  close(fd);
  return NULL;
}

static void run_writers(void *(*fn)(void *)) {
  pid_t kids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    kids[p] = fork();
    if (kids[p] < 0) die("fork");
    if (kids[p] == 0) {
      pthread_t t[THREADS];
      for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, fn, (void *)(long)(p * THREADS + i));
      for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
      exit(0);
    }
  }
  for (int p = 0; p < PROCS; p++) {
    int st;
    if (waitpid(kids[p], &st, 0) != kids[p] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      die("writer process");
  }
}

static void append(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/append.log", dir);
  append_path = path;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("create append.log");
  run_writers(appender);
  struct stat st;
  if (fstat(fd, &st) != 0) die("fstat");
  char *data = malloc((size_t)st.st_size + 1);
  if (pread(fd, data, (size_t)st.st_size, 0) != st.st_size) die("read back");
  check_records("append", data, (size_t)st.st_size, APPENDS);
  free(data);
  close(fd);
}

/* ---- pipe -------------------------------------------------------------------- */

#define PIPE_RECORDS 300

static int pipe_w;

static void *pipe_writer(void *arg) {
  int w = (int)(long)arg;
  char buf[PIPE_BUF];
  for (int seq = 0; seq < PIPE_RECORDS; seq++) {
    size_t len = seq % 3 == 0 ? PIPE_BUF : HEAD + 1 + (size_t)(seq * 997 + w * 131) % (PIPE_BUF - HEAD);
    record(buf, w, seq, len);
    ssize_t r;
    if (seq % 2) {
      struct iovec v[2] = {{buf, len / 2}, {buf + len / 2, len - len / 2}};
      r = writev(pipe_w, v, 2);
    } else {
      r = write(pipe_w, buf, len);
    }
    if (r != (ssize_t)len) die("pipe write");
  }
  return NULL;
}

static void pipes(void) {
  int p[2];
  if (pipe(p) != 0) die("pipe");
  pipe_w = p[1];
  pid_t writers = fork();
  if (writers < 0) die("fork");
  if (writers == 0) {
    close(p[0]);
    run_writers(pipe_writer);
    exit(0);
  }
  close(p[1]);
  size_t cap = (size_t)WRITERS * PIPE_RECORDS * PIPE_BUF, n = 0;
  char *data = malloc(cap);
  for (int reads = 0;; reads++) {
    /* Slow for the first 50 reads: the pipe fills, writers wait. */
    if (reads < 50) {
      struct timespec t = {0, 2 * 1000 * 1000};
      nanosleep(&t, NULL);
    }
    ssize_t r = read(p[0], data + n, cap - n < 1000 ? cap - n : 1000);
    if (r < 0) die("pipe read");
    if (r == 0) break;
    n += (size_t)r;
  }
  int st;
  if (waitpid(writers, &st, 0) != writers || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    die("writers");
  check_records("pipe", data, n, PIPE_RECORDS);
  free(data);
  close(p[0]);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: run_atomic DIR [append|pipe...]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *all[] = {"append", "pipe"};
  int n = argc > 2 ? argc - 2 : 2;
  for (int i = 0; i < n; i++) {
    const char *c = argc > 2 ? argv[i + 2] : all[i];
    if (strcmp(c, "append") == 0) {
      append(argv[1]);
    } else if (strcmp(c, "pipe") == 0) {
      pipes();
    } else {
      fprintf(stderr, "run_atomic: no case %s\n", c);
      return 2;
    }
  }
  return 0;
}
