/* ctrace_start_fd / ctrace_start_file: a background thread that reads the
 * trace as it is produced and writes it out, as Go's runtime/trace.Start(w)
 * does with a goroutine. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "internal.h"

static pthread_t writer;
static bool writer_running;
static int writer_fd = -1, writer_err;
static bool writer_owns_fd;

static void *writer_main(void *arg) {
  (void)arg;
  /* The writer's own reads and writes are not traced: it would trace the
   * tracer. It never emits, so it never registers. */
  const void *p;
  size_t n;
  while ((p = ctrace_read(&n)) != NULL) {
    const char *c = p;
    while (n > 0 && writer_err == 0) {
      ssize_t w = write(writer_fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        writer_err = CTRACE_EIO;
        break;
      }
      c += w;
      n -= (size_t)w;
    }
  }
  return NULL;
}

int ctrace_start_fd(int fd, const ctrace_options *opts) {
  if (fd < 0) return CTRACE_EINVAL;
  int err = ctrace_start(opts);
  if (err) return err;
  writer_fd = fd;
  writer_err = 0;
  writer_owns_fd = false;
  if (pthread_create(&writer, NULL, writer_main, NULL) != 0) {
    /* No reader, so stop would wait forever: drain here instead. */
    writer_running = false;
    return CTRACE_ENOMEM;
  }
  writer_running = true;
  return 0;
}

int ctrace_start_file(const char *path, const ctrace_options *opts) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return CTRACE_EIO;
  int err = ctrace_start_fd(fd, opts);
  if (err) {
    close(fd);
    return err;
  }
  writer_owns_fd = true;
  return 0;
}

/* Called by ctrace_stop once the trace has been drained. */
int ctrace__writer_join(void) {
  if (!writer_running) return 0;
  pthread_join(writer, NULL);
  writer_running = false;
  int err = writer_err;
  if (writer_owns_fd && close(writer_fd) != 0 && !err) err = CTRACE_EIO;
  writer_fd = -1;
  return err;
}
