/* ctrace_start_fd / ctrace_start_file: a background thread that reads the
 * trace as it is produced and writes it out, as Go's runtime/trace.Start(w)
 * does with a goroutine. The thread never emits events, so it is never a
 * G of the trace it writes. */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

typedef struct writer {
  pthread_t thread;
  sem_t gate; /* opens once ctrace_start has answered */
  bool abort, owns_fd;
  int fd, err;
} writer;

static void *writer_main(void *arg) {
  writer *w = arg;
  while (sem_wait(&w->gate) != 0) {
  }
  if (w->abort) return NULL;
  const void *p;
  size_t n;
  /* Read to the end even after a write error: stop waits for the drain. */
  while ((p = ctrace_read(&n)) != NULL) {
    const char *c = p;
    while (n > 0 && w->err == 0) {
      ssize_t k = write(w->fd, c, n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        w->err = CTRACE_EIO;
        break;
      }
      c += k;
      n -= (size_t)k;
    }
  }
  return NULL;
}

static int start_writer(int fd, bool owns_fd, const ctrace_options *opts) {
  writer *w = calloc(1, sizeof *w);
  if (!w) return CTRACE_ENOMEM;
  w->fd = fd;
  w->owns_fd = owns_fd;
  sem_init(&w->gate, 0, 0);
  /* The thread exists before tracing starts, so a started trace always
   * has its reader. */
  if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
    sem_destroy(&w->gate);
    free(w);
    return CTRACE_ENOMEM;
  }
  int err = ctrace__start(opts, w);
  w->abort = err != 0;
  sem_post(&w->gate);
  if (err) {
    pthread_join(w->thread, NULL);
    sem_destroy(&w->gate);
    free(w);
  }
  return err;
}

int ctrace_start_fd(int fd, const ctrace_options *opts) {
  if (fd < 0) return CTRACE_EINVAL;
  return start_writer(fd, false, opts);
}

int ctrace_start_file(const char *path, const ctrace_options *opts) {
  if (!path) return CTRACE_EINVAL;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return CTRACE_EIO;
  int err = start_writer(fd, true, opts);
  if (err) close(fd);
  return err;
}

int ctrace__writer_join(void *arg) {
  writer *w = arg;
  pthread_join(w->thread, NULL);
  int err = w->err;
  if (w->owns_fd && close(w->fd) != 0 && !err) err = CTRACE_EIO;
  sem_destroy(&w->gate);
  free(w);
  return err;
}
