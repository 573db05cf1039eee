/* Copies the kernel makes between two descriptors: sendfile, splice, tee
 * and copy_file_range (Python's shutil.copyfile and socket.sendfile, cp,
 * servers sending files), and the socket calls that move several
 * messages at once, recvmmsg and sendmmsg (DNS and QUIC servers).
 *
 * None can be tried without waiting as read and write are (io.h): there
 * is no RWF_NOWAIT for them, SPLICE_F_NONBLOCK spares only the pipe's
 * side, and a try of recvmmsg with MSG_DONTWAIT would take messages the
 * real call would then wait past. So the descriptors are probed, and the
 * call is shown as a wait if
 * - the one it writes to is a blocking stream with no room (poll POLLOUT),
 * - the one it reads from is a blocking stream with nothing to read
 *   (POLLIN),
 * - or a file whose next byte is not in the page cache: a 1-byte
 *   preadv2(RWF_NOWAIT) at the call's offset (read as the kernel reads
 *   it, ctrace__pl_copy_in: a bad pointer is the call's EFAULT), or at
 *   the file position (read with lseek: the probe moves no position),
 *   into a byte of our own.
 * A wait on a stream is GoBlockNet, on the disk GoSysBlock, as for read
 * and write. A probe reads nothing the call does not, and changes
 * nothing. What it cannot see: a call that starts with room or data and
 * then waits (a sendfile larger than the socket's buffer, a recvmmsg
 * without MSG_WAITFORONE that waits for its vlen-th message) shows as
 * running; docs/run.md says so. The waits are not linked to the thread
 * that ends them (as a pipe's read and write are): no waker is known.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io.h"

/* sendfile's off_t is sendfile64's off64_t (a 64-bit system). */
_Static_assert(sizeof(off_t) == sizeof(off64_t), "off_t is 64 bits");

CTRACE__PL_REAL(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))
CTRACE__PL_REAL(ssize_t, sendfile, (int, int, off_t *, size_t))
CTRACE__PL_REAL(ssize_t, sendfile64, (int, int, off64_t *, size_t))
CTRACE__PL_REAL(ssize_t, splice, (int, off64_t *, int, off64_t *, size_t, unsigned int))
CTRACE__PL_REAL(ssize_t, tee, (int, int, size_t, unsigned int))
CTRACE__PL_REAL(ssize_t, copy_file_range, (int, off64_t *, int, off64_t *, size_t, unsigned int))
CTRACE__PL_REAL(int, recvmmsg, (int, struct mmsghdr *, unsigned int, int, struct timespec *))
CTRACE__PL_REAL(int, sendmmsg, (int, struct mmsghdr *, unsigned int, int))

/* Whether a call on fd, without O_NONBLOCK, waits for events (POLLIN,
 * POLLOUT) on it: NONE but for a socket or pipe (or FIFO), and a pipe
 * under SPLICE_F_NONBLOCK (pipe_nb). *st: fd's. */
static int stream_waits(int fd, const struct stat *st, short events, bool pipe_nb) {
  if (!(S_ISSOCK(st->st_mode) || S_ISFIFO(st->st_mode)) || (pipe_nb && S_ISFIFO(st->st_mode)))
    return CTRACE__PL_WAIT_NONE;
  struct pollfd p = {fd, events, 0};
  return ctrace__pl_real_poll(&p, 1, 0) == 0 ? CTRACE__PL_WAIT_NET : CTRACE__PL_WAIT_NONE;
}

/* How a call that reads from fd (off: the offset it reads at, NULL for the
 * file position) waits: on a blocking stream with nothing to read, or on
 * the disk for a file's first byte not cached; CTRACE__PL_WAIT_NONE if it
 * does not. */
static int reads_wait(int fd, const off64_t *off, bool pipe_nb) {
  struct stat st;
  if (fstat(fd, &st) != 0) return CTRACE__PL_WAIT_NONE; /* the call fails */
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return ctrace__pl_nonblocking(fd) ? CTRACE__PL_WAIT_NONE : stream_waits(fd, &st, POLLIN, pipe_nb);
  off64_t at;
  if (off ? !ctrace__pl_copy_in(&at, off, sizeof at) : (at = lseek64(fd, 0, SEEK_CUR)) < 0)
    return CTRACE__PL_WAIT_NONE; /* an offset to nowhere: the call's EFAULT */
  char byte;
  struct iovec one = {&byte, 1};
  ssize_t r = real_preadv2()(fd, &one, 1, at, RWF_NOWAIT);
  return r < 0 && errno == EAGAIN ? CTRACE__PL_WAIT_SYS : CTRACE__PL_WAIT_NONE;
}

/* The same for a call that writes to fd: a blocking stream with no room.
 * Writes to files are taken not to wait, as write's are where the kernel
 * cannot try (io.h). The flags first: a server's O_NONBLOCK socket (nginx
 * sends its files so) costs one fcntl. */
static int writes_wait(int fd, bool pipe_nb) {
  struct stat st;
  if (ctrace__pl_nonblocking(fd) || fstat(fd, &st) != 0) return CTRACE__PL_WAIT_NONE;
  return stream_waits(fd, &st, POLLOUT, pipe_nb);
}

/* A copy from in (at *off, or its position) to out: the wait it makes,
 * the reading side's first (a disk wait is the longer). Keeps errno. */
static int copy_waits(int in, const off64_t *off, int out, bool pipe_nb, int saved) {
  int kind = reads_wait(in, off, pipe_nb);
  if (kind == CTRACE__PL_WAIT_NONE) kind = writes_wait(out, pipe_nb);
  errno = saved;
  return kind;
}

/* The wrapper of a copy from in (at *off, or its position) to out. */
#define COPY_CALL(name, params, args, in, off, out, pipe_nb)             \
  CTRACE__PL_EXPORT ssize_t name params {                                \
    if (ctrace__pl_off()) return real_##name() args;                     \
    CTRACE__PL_SYSCALL();                                                \
    int kind = copy_waits(in, off, out, pipe_nb, pl_errno0_);            \
    ssize_t r;                                                           \
    CTRACE__PL_WAIT_AS(kind, r, real_##name() args);                     \
    return r;                                                            \
  }

COPY_CALL(sendfile, (int out, int in, off_t *off, size_t n), (out, in, off, n), in, (off64_t *)off, out,
          false)
COPY_CALL(sendfile64, (int out, int in, off64_t *off, size_t n), (out, in, off, n), in, off, out, false)
COPY_CALL(splice, (int in, off64_t *in_off, int out, off64_t *out_off, size_t n, unsigned int flags),
          (in, in_off, out, out_off, n, flags), in, in_off, out, flags & SPLICE_F_NONBLOCK)
COPY_CALL(tee, (int in, int out, size_t n, unsigned int flags), (in, out, n, flags), in, NULL, out,
          flags & SPLICE_F_NONBLOCK)
COPY_CALL(copy_file_range,
          (int in, off64_t *in_off, int out, off64_t *out_off, size_t n, unsigned int flags),
          (in, in_off, out, out_off, n, flags), in, in_off, out, false)

/* Several messages: waits, as probed, unless MSG_DONTWAIT says it never
 * does. Both are cancellation points, as recv and send are: a wait
 * cancelled leaves the thread's G blocked, as theirs do. */
CTRACE__PL_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags,
                               struct timespec *timeout) {
  if (ctrace__pl_off()) return real_recvmmsg()(fd, vec, vlen, flags, timeout);
  CTRACE__PL_SYSCALL();
  int kind = flags & MSG_DONTWAIT ? CTRACE__PL_WAIT_NONE : ctrace__pl_probe(fd, POLLIN);
  errno = pl_errno0_;
  int r;
  CTRACE__PL_WAIT_AS(kind, r, real_recvmmsg()(fd, vec, vlen, flags, timeout));
  return r;
}

CTRACE__PL_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags) {
  if (ctrace__pl_off()) return real_sendmmsg()(fd, vec, vlen, flags);
  CTRACE__PL_SYSCALL();
  int kind = flags & MSG_DONTWAIT ? CTRACE__PL_WAIT_NONE : ctrace__pl_probe(fd, POLLOUT);
  errno = pl_errno0_;
  int r;
  CTRACE__PL_WAIT_AS(kind, r, real_sendmmsg()(fd, vec, vlen, flags));
  return r;
}
