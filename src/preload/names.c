/* Thread names: pthread_setname_np, prctl(PR_SET_NAME) and writes to a
 * thread's comm file (/proc/self/task/TID/comm, /proc/thread-self/comm,
 * /proc/PID/comm) rename a thread; the tracer names its G by the result
 * (src/runtime/names.c). Each wrapper makes the real call, then reads the
 * name back as the kernel keeps it (cut to 15 bytes).
 *
 * A name given before the shim saw it (before the trace, by code that
 * calls libc from inside, by a thread created behind the shim) is read by
 * the tracer at the thread's first event of each trace.
 *
 * Comm files: an open for writing of such a path, below descriptor 1024, (the only cost on every
 * open: a test of the flags, then of the path's first bytes) marks the
 * descriptor with the thread it names; a write through the shim that
 * the kernel cannot try (procfs takes no RWF_NOWAIT: the path io.c
 * already has for ttys and eventfds) looks the mark up. So an ordinary
 * write pays nothing. A mark outlives a close: a later descriptor of that
 * number, written on that path, makes the tracer read a name that has
 * not changed, which writes nothing. Not seen: comm files opened
 * relative to a directory descriptor, or written through stdio (glibc's
 * internal calls).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "preload.h"

CTRACE__PL_REAL(int, pthread_setname_np, (pthread_t, const char *))
CTRACE__PL_REAL(int, prctl, (int, unsigned long, unsigned long, unsigned long, unsigned long))
CTRACE__PL_REAL(int, open, (const char *, int, ...))
CTRACE__PL_REAL(int, open64, (const char *, int, ...))
CTRACE__PL_REAL(int, openat, (int, const char *, int, ...))
CTRACE__PL_REAL(int, openat64, (int, const char *, int, ...))

_Atomic pid_t ctrace__pl_comm_tid[CTRACE__PL_COMM_FDS];

/* The thread whose comm file path is (this process's), 0 if none. */
static pid_t comm_of(const char *path) {
  if (strncmp(path, "/proc/", 6) != 0) return 0;
  const char *p = path + 6;
  size_t n = strlen(p);
  if (n < 5 || strcmp(p + n - 5, "/comm") != 0) return 0;
  if (strcmp(p, "thread-self/comm") == 0) return gettid();
  pid_t pid;
  if (strncmp(p, "self/", 5) == 0) {
    pid = getpid();
    p += 5;
  } else {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || *end != '/' || v <= 0) return 0;
    /* /proc/N/comm of a thread of ours (N its tid) names it too. */
    pid = (pid_t)v;
    p = end + 1;
  }
  if (strcmp(p, "comm") == 0) return pid;
  if (strncmp(p, "task/", 5) != 0) return 0;
  char *end;
  long tid = strtol(p + 5, &end, 10);
  return end != p + 5 && strcmp(end, "/comm") == 0 && tid > 0 ? (pid_t)tid : 0;
}

/* After an open of path with flags gave fd: marks fd, or clears the mark
 * of an earlier descriptor of that number. A path relative to a
 * directory descriptor (at) is no comm file it can tell. */
static void comm_note(int fd, const char *path, int flags, bool at) {
  if (fd < 0 || fd >= CTRACE__PL_COMM_FDS) return;
  pid_t tid = (flags & O_ACCMODE) != O_RDONLY && (!at || path[0] == '/') ? comm_of(path) : 0;
  if (tid || atomic_load_explicit(&ctrace__pl_comm_tid[fd], memory_order_relaxed))
    atomic_store_explicit(&ctrace__pl_comm_tid[fd], tid, memory_order_relaxed);
}

void ctrace__pl_comm_written(pid_t tid) {
  if (ctrace__pl_off()) return;
  int e = errno;
  if (tid == gettid())
    CTRACE__PL_CALL(ctrace__thread_renamed());
  else
    CTRACE__PL_CALL(ctrace__thread_renamed_other(pthread_self(), tid, NULL));
  errno = e;
}

/* The mode is there only where glibc reads it (its __OPEN_NEEDS_MODE). */
#define OPEN_MODE(flags, last)                                        \
  mode_t mode = 0;                                                    \
  if (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE) {    \
    va_list ap;                                                       \
    va_start(ap, last);                                               \
    mode = va_arg(ap, mode_t);                                        \
    va_end(ap);                                                       \
  }

CTRACE__PL_EXPORT int open(const char *path, int flags, ...) {
  OPEN_MODE(flags, flags);
  int fd = real_open()(path, flags, mode);
  comm_note(fd, path, flags, false);
  return fd;
}

CTRACE__PL_EXPORT int open64(const char *path, int flags, ...) {
  OPEN_MODE(flags, flags);
  int fd = real_open64()(path, flags, mode);
  comm_note(fd, path, flags, false);
  return fd;
}

CTRACE__PL_EXPORT int openat(int dir, const char *path, int flags, ...) {
  OPEN_MODE(flags, flags);
  int fd = real_openat()(dir, path, flags, mode);
  comm_note(fd, path, flags, true);
  return fd;
}

CTRACE__PL_EXPORT int openat64(int dir, const char *path, int flags, ...) {
  OPEN_MODE(flags, flags);
  int fd = real_openat64()(dir, path, flags, mode);
  comm_note(fd, path, flags, true);
  return fd;
}

CTRACE__PL_EXPORT int pthread_setname_np(pthread_t th, const char *name) {
  int r = real_pthread_setname_np()(th, name);
  if (r != 0 || ctrace__pl_off()) return r;
  int e = errno;
  if (pthread_equal(th, pthread_self()))
    CTRACE__PL_CALL(ctrace__thread_renamed());
  else
    CTRACE__PL_CALL(ctrace__thread_renamed_other(th, 0, name));
  errno = e;
  return r;
}

/* glibc's prctl reads four more arguments whatever the option, as here. */
CTRACE__PL_EXPORT int prctl(int op, ...) {
  va_list ap;
  va_start(ap, op);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  int r = real_prctl()(op, a2, a3, a4, a5);
  if (op != PR_SET_NAME || r != 0 || ctrace__pl_off()) return r;
  int e = errno;
  CTRACE__PL_CALL(ctrace__thread_renamed());
  errno = e;
  return r;
}
