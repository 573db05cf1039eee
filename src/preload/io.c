/* Reads and writes: the read/write families on any descriptor and the
 * socket calls (io.h says how waiting is told apart).
 *
 * Writes can be partial without waiting: a try that wrote part of the data
 * to a blocking descriptor would, in the real call, have waited to write
 * the rest. The rest is then written by the real (waiting) call, shown as a
 * wait, and the two counts are added; if the second call fails, the first
 * count is returned, as a blocking write interrupted after some data does.
 * A send's ancillary data goes with the first part only.
 *
 * Only calls through the PLT are seen: libc's own stdio calls its internal
 * read and write, so printf and fread are not recorded.
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io.h"

/* glibc's pthread_cleanup_push (CTRACE__PL_IO_WAIT) keeps the handler in
 * locals set before its setjmp and never changed after it: GCC cannot
 * tell, and warns that a longjmp could clobber them. */
#pragma GCC diagnostic ignored "-Wclobbered"

CTRACE__PL_REAL(ssize_t, read, (int, void *, size_t))
CTRACE__PL_REAL(ssize_t, write, (int, const void *, size_t))
CTRACE__PL_REAL(ssize_t, pread, (int, void *, size_t, off_t))
CTRACE__PL_REAL(ssize_t, pwrite, (int, const void *, size_t, off_t))
CTRACE__PL_REAL(ssize_t, readv, (int, const struct iovec *, int))
CTRACE__PL_REAL(ssize_t, writev, (int, const struct iovec *, int))
CTRACE__PL_REAL(ssize_t, preadv, (int, const struct iovec *, int, off_t))
CTRACE__PL_REAL(ssize_t, pwritev, (int, const struct iovec *, int, off_t))
CTRACE__PL_REAL(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))
CTRACE__PL_REAL(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int))
CTRACE__PL_REAL(ssize_t, recv, (int, void *, size_t, int))
CTRACE__PL_REAL(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *, socklen_t *))
CTRACE__PL_REAL(ssize_t, recvmsg, (int, struct msghdr *, int))
CTRACE__PL_REAL(ssize_t, send, (int, const void *, size_t, int))
CTRACE__PL_REAL(ssize_t, sendto, (int, const void *, size_t, int, const struct sockaddr *, socklen_t))
CTRACE__PL_REAL(ssize_t, sendmsg, (int, const struct msghdr *, int))
CTRACE__PL_REAL(int, accept, (int, struct sockaddr *, socklen_t *))
CTRACE__PL_REAL(int, accept4, (int, struct sockaddr *, socklen_t *, int))
CTRACE__PL_REAL(int, connect, (int, const struct sockaddr *, socklen_t))

/* ---- helpers ------------------------------------------------------------------ */

static size_t iov_total(const struct iovec *iov, int cnt) {
  size_t n = 0;
  for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
  return n;
}

/* iov without its first skip bytes, into out (room for cnt); returns the
 * new count. */
static int iov_skip(const struct iovec *iov, int cnt, size_t skip, struct iovec *out) {
  int i = 0, n = 0;
  while (i < cnt && skip >= iov[i].iov_len) skip -= iov[i++].iov_len;
  for (; i < cnt; i++, n++) {
    out[n] = iov[i];
    out[n].iov_base = (char *)out[n].iov_base + skip;
    out[n].iov_len -= skip;
    skip = 0;
  }
  return n;
}

/* The kernel's O_LARGEFILE, which F_GETFL reports (glibc's O_LARGEFILE is
 * 0 on 64-bit targets). 0 where it is not known here: fstat then decides. */
#if defined(__x86_64__) || defined(__riscv) || defined(__loongarch__)
#define KERNEL_O_LARGEFILE 0100000
#elif defined(__aarch64__)
#define KERNEL_O_LARGEFILE 0400000
#else
#define KERNEL_O_LARGEFILE 0
#endif

/* A file (io.h, ctrace__pl_short_is_answer): a regular file, a block
 * device, or a memory device (character major 1: /dev/zero, /dev/urandom...),
 * which never returns short untraced but at the end of a file. Another
 * character device (a tun device, a serial line) returns what it has, as
 * a stream does. */
static bool is_file(const struct stat *st) {
  return S_ISREG(st->st_mode) || S_ISBLK(st->st_mode) ||
         (S_ISCHR(st->st_mode) && major(st->st_rdev) == 1);
}

/* fd, whose status flags are fl, is a file; *st is its status then. */
static bool file_of(int fd, int fl, struct stat *st) {
  /* Only what was opened by a path can be a file, and the kernel sets
   * O_LARGEFILE on everything open(2), openat2 and memfd_create open, on
   * none of what pipe, socket, accept or eventfd make: the common case,
   * a stream's short answer, costs no fstat. */
  if (KERNEL_O_LARGEFILE && !(fl & KERNEL_O_LARGEFILE)) return false;
  return fstat(fd, st) == 0 && is_file(st);
}

bool ctrace__pl_short_is_answer(int fd, int fl) {
  int e = errno;
  struct stat st;
  bool file = file_of(fd, fl, &st);
  errno = e;
  return !file;
}

/* After a try that read r > 0 bytes of n at off (-1: the file position,
 * which the try moved): true if the rest is to be read by the real call,
 * a file's short answer but at its end. Keeps errno. */
static bool read_short(int fd, size_t r, size_t n, off_t off) {
  if (r >= n) return false;
  int e = errno;
  int fl = fcntl(fd, F_GETFL);
  struct stat st;
  bool rest = fl >= 0 && file_of(fd, fl, &st);
  if (rest && S_ISREG(st.st_mode)) {
    off_t at = off >= 0 ? off + (off_t)r : lseek(fd, 0, SEEK_CUR);
    rest = at >= 0 && at < st.st_size;
  }
  errno = e;
  return rest;
}

/* After a try of a write of n bytes that returned r: true if the call is
 * complete (all written, an error, or a stream opened O_NONBLOCK, where a
 * short count is the answer). */
static bool write_complete(ssize_t r, size_t n, int fd) {
  if (r < 0 || (size_t)r >= n) return true;
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK) && ctrace__pl_short_is_answer(fd, fl);
}

/* The count of a call done in two parts. A second part that failed after
 * the first moved data leaves the first's count, and errno as the program
 * left it (saved): a blocking call interrupted after some data returns
 * that count and sets no errno. */
static ssize_t sum_parts(size_t first, ssize_t second, int saved) {
  if (first == 0) return second;
  if (second >= 0) return (ssize_t)(first + (size_t)second);
  errno = saved;
  return (ssize_t)first;
}

/* A socket of the process has had a receive low-water mark above 1 set
 * (setsockopt below): a try of a read answers with less than the mark,
 * where the real call waits for it, so reads are probed instead. Set for
 * good: a descriptor number says nothing of the socket behind it later. */
static _Atomic int lowat_seen;

/* ---- a stream's retry ------------------------------------------------------------
 *
 * A stream's waiter is linked before its block is written (io.h), and the
 * call is tried once more in between: the other side may have read or
 * written since the first try, when its wake found nobody waiting. What
 * the retry answers is then no wait at all, and a wake from then on finds
 * the waiter. Streams have no offset: the retries use the file position. */

/* Returns true, the waiter withdrawn and *r the answer, if the read does
 * not wait. */
static bool stream_read_retry(ctrace__pl_io_wait *iw, int fd, const struct iovec *iov, int cnt,
                            ssize_t *r, int saved) {
  ctrace__pl_io_prepare(iw);
  *r = real_preadv2()(fd, iov, cnt, -1, RWF_NOWAIT);
  if (ctrace__pl_tried(*r, fd, saved) != CTRACE__PL_TRY_DONE) return false;
  ctrace__pl_io_withdraw(iw);
  return true;
}

/* The same for a write of n bytes of which *done went in: adds what the
 * retry wrote to *done. */
static bool stream_write_retry(ctrace__pl_io_wait *iw, int fd, const struct iovec *iov, int cnt,
                             size_t n, size_t *done, ssize_t *r, int saved) {
  ctrace__pl_io_prepare(iw);
  struct iovec rest[cnt > 0 ? cnt : 1];
  int rcnt = iov_skip(iov, cnt, *done, rest);
  ssize_t r2 = real_pwritev2()(fd, rest, rcnt, -1, RWF_NOWAIT);
  if (ctrace__pl_tried(r2, fd, saved) != CTRACE__PL_TRY_DONE) return false;
  if (r2 >= 0) *done += (size_t)r2;
  if (r2 >= 0 && *done < n) return false;
  ctrace__pl_io_withdraw(iw);
  *r = sum_parts(*done, r2 < 0 ? r2 : 0, saved);
  return true;
}

/* ---- reads ---------------------------------------------------------------------- */

/* The rest of a file's read whose try read done bytes: the real call,
 * at the file position or at off + done. Out of line for its array; the
 * wrapper records the wait, so that its stack starts at the wrapper. */
static ssize_t read_rest(int fd, const struct iovec *iov, int cnt, off_t off, size_t done) {
  struct iovec rest[cnt > 0 ? cnt : 1];
  int rcnt = iov_skip(iov, cnt, done, rest);
  return off < 0 ? real_readv()(fd, rest, rcnt) : real_preadv()(fd, rest, rcnt, off + (off_t)done);
}

/* Reads: try with RWF_NOWAIT (off -1: the file position, as read does),
 * unless a low-water mark may make the try answer early (lowat_seen). A
 * file's short answer is finished by the real call, shown as a wait on
 * the disk. */
#define READ_BODY(fd, iov, cnt, off, real_call)                       \
  CTRACE__PL_SYSCALL();                                               \
  CTRACE__PL_WAKE_STREAM(fd, true);                                     \
  ssize_t r = -1;                                                     \
  int t = CTRACE__PL_TRY_CANNOT;                                      \
  if (ctrace__pl_likely(!atomic_load_explicit(&lowat_seen, memory_order_relaxed))) { \
    r = real_preadv2()(fd, iov, cnt, off, RWF_NOWAIT);                \
    t = ctrace__pl_tried(r, fd, pl_errno0_);                          \
  }                                                                   \
  ctrace__pl_io_wait iw = {.kind = CTRACE__PL_WAIT_NONE};             \
  if (t == CTRACE__PL_TRY_DONE && r > 0 &&                            \
      read_short(fd, (size_t)r, iov_total(iov, cnt), off)) {          \
    ctrace__pl_wait_begin(CTRACE__PL_WAIT_SYS);                       \
    ssize_t r2 = read_rest(fd, iov, cnt, off, (size_t)r);             \
    ctrace__pl_wait_end(CTRACE__PL_WAIT_SYS);                         \
    r = sum_parts((size_t)r, r2, pl_errno0_);                         \
  } else if (t == CTRACE__PL_TRY_WAITS) {                             \
    ctrace__pl_io_wait_known(&iw, fd, true);                          \
    if (iw.key && stream_read_retry(&iw, fd, iov, cnt, &r, pl_errno0_)) \
      t = CTRACE__PL_TRY_DONE;                                        \
  } else if (t == CTRACE__PL_TRY_CANNOT) {                            \
    iw.kind = ctrace__pl_probe(fd, POLLIN);                           \
  }                                                                   \
  if (t != CTRACE__PL_TRY_DONE) CTRACE__PL_IO_WAIT(&iw, r, real_call); \
  if (r > 0) CTRACE__PL_WAKE_STREAM_AFTER(fd, true);                          \
  return r

CTRACE__PL_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  if (ctrace__pl_off()) return real_read()(fd, buf, n);
  struct iovec v = {buf, n};
  READ_BODY(fd, &v, 1, -1, real_read()(fd, buf, n));
}

CTRACE__PL_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  if (ctrace__pl_off() || off < 0) return real_pread()(fd, buf, n, off);
  struct iovec v = {buf, n};
  READ_BODY(fd, &v, 1, off, real_pread()(fd, buf, n, off));
}

CTRACE__PL_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
    __attribute__((alias("pread")));

CTRACE__PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  if (ctrace__pl_off()) return real_readv()(fd, iov, cnt);
  READ_BODY(fd, iov, cnt, -1, real_readv()(fd, iov, cnt));
}

CTRACE__PL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
  if (ctrace__pl_off() || off < 0) return real_preadv()(fd, iov, cnt, off);
  READ_BODY(fd, iov, cnt, off, real_preadv()(fd, iov, cnt, off));
}

CTRACE__PL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
    __attribute__((alias("preadv")));

/* ---- writes ----------------------------------------------------------------------- */

/* Writes: try with RWF_NOWAIT; a short count on a blocking descriptor
 * means the rest waits. rest_call writes what is left: iov r_iov of r_cnt
 * entries at offset r_off (-1: the file position). */
/* A write of nothing is made as it stands: pwritev2 answers 0 for 0 bytes
 * without calling the file, where write sends an empty record on a
 * datagram or SOCK_SEQPACKET socket. */
CTRACE__PL_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  if (ctrace__pl_off() || n == 0) return real_write()(fd, buf, n);
  CTRACE__PL_SYSCALL();
  CTRACE__PL_WAKE_STREAM(fd, false);
  struct iovec v = {(void *)buf, n};
  ssize_t r = real_pwritev2()(fd, &v, 1, -1, RWF_NOWAIT);
  int t = ctrace__pl_tried(r, fd, pl_errno0_);
  if (t == CTRACE__PL_TRY_CANNOT) { /* an eventfd, a tty: taken not to wait */
    CTRACE__PL_STREAM_SEQ();
    r = real_write()(fd, buf, n);
    if (r > 0) ctrace__pl_comm_check(fd); /* procfs cannot try: a comm file? (names.c) */
  } else if (t != CTRACE__PL_TRY_DONE || !write_complete(r, n, fd)) {
    size_t done = t == CTRACE__PL_TRY_DONE ? (size_t)r : 0;
    ctrace__pl_io_wait iw;
    ctrace__pl_io_wait_known(&iw, fd, false);
    if (!iw.key || !stream_write_retry(&iw, fd, &v, 1, n, &done, &r, pl_errno0_)) {
      CTRACE__PL_IO_WAIT(&iw, r, real_write()(fd, (const char *)buf + done, n - done));
      r = sum_parts(done, r, pl_errno0_);
    }
  }
  if (r > 0) CTRACE__PL_WAKE_STREAM_AFTER(fd, false);
  return r;
}

CTRACE__PL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  if (ctrace__pl_off() || off < 0) return real_pwrite()(fd, buf, n, off);
  CTRACE__PL_SYSCALL();
  struct iovec v = {(void *)buf, n};
  ssize_t r = real_pwritev2()(fd, &v, 1, off, RWF_NOWAIT);
  int t = ctrace__pl_tried(r, fd, pl_errno0_);
  if (t == CTRACE__PL_TRY_CANNOT) return real_pwrite()(fd, buf, n, off);
  if (t == CTRACE__PL_TRY_DONE && write_complete(r, n, fd)) return r;
  size_t done = t == CTRACE__PL_TRY_DONE ? (size_t)r : 0;
  CTRACE__PL_WAIT_AS(ctrace__pl_wait_kind(fd), r,
                     real_pwrite()(fd, (const char *)buf + done, n - done, off + (off_t)done));
  return sum_parts(done, r, pl_errno0_);
}

CTRACE__PL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
    __attribute__((alias("pwrite")));

static ssize_t writev_at(int fd, const struct iovec *iov, int cnt, off_t off) {
  CTRACE__PL_SYSCALL();
  CTRACE__PL_WAKE_STREAM(fd, false);
  ssize_t r = real_pwritev2()(fd, iov, cnt, off, RWF_NOWAIT);
  int t = ctrace__pl_tried(r, fd, pl_errno0_);
  /* r 0: nothing to write (write's comment), or a call best made as is. */
  bool as_is = t == CTRACE__PL_TRY_CANNOT || r == 0 || cnt < 0 || cnt > IOV_MAX;
  /* Not after an error that is the answer: iov may point nowhere (EFAULT). */
  size_t n = as_is || (t == CTRACE__PL_TRY_DONE && r < 0) ? 0 : iov_total(iov, cnt);
  if (as_is) {
    CTRACE__PL_STREAM_SEQ();
    r = off < 0 ? real_writev()(fd, iov, cnt) : real_pwritev()(fd, iov, cnt, off);
    if (r > 0 && t == CTRACE__PL_TRY_CANNOT) ctrace__pl_comm_check(fd); /* names.c */
  } else if (t != CTRACE__PL_TRY_DONE || !write_complete(r, n, fd)) {
    size_t done = t == CTRACE__PL_TRY_DONE ? (size_t)r : 0;
    ctrace__pl_io_wait iw;
    ctrace__pl_io_wait_known(&iw, fd, false);
    if (!iw.key || !stream_write_retry(&iw, fd, iov, cnt, n, &done, &r, pl_errno0_)) {
      struct iovec rest[cnt > 0 ? cnt : 1];
      int rcnt = iov_skip(iov, cnt, done, rest);
      CTRACE__PL_IO_WAIT(&iw, r,
                         off < 0 ? real_writev()(fd, rest, rcnt)
                                 : real_pwritev()(fd, rest, rcnt, off + (off_t)done));
      r = sum_parts(done, r, pl_errno0_);
    }
  }
  if (r > 0) CTRACE__PL_WAKE_STREAM_AFTER(fd, false);
  return r;
}

/* writev_at stays out of line (GCC does not inline a function with a
 * variable-length array), so its frame shows above the wrapper's. */
CTRACE__PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  if (ctrace__pl_off()) return real_writev()(fd, iov, cnt);
  return writev_at(fd, iov, cnt, -1);
}

CTRACE__PL_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  if (ctrace__pl_off() || off < 0) return real_pwritev()(fd, iov, cnt, off);
  return writev_at(fd, iov, cnt, off);
}

CTRACE__PL_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
    __attribute__((alias("pwritev")));

/* ---- sockets: receiving ----------------------------------------------------------------
 *
 * Tried with MSG_DONTWAIT, which returns what a waiting call would return
 * once data is there. MSG_WAITALL may still wait after some data, and so
 * may a socket with a low-water mark (lowat_seen): those are probed
 * instead; a call with MSG_DONTWAIT of its own never waits. */

#define RECV_BODY(fd, flags, call_with_flags)                              \
  CTRACE__PL_SYSCALL();                                                    \
  CTRACE__PL_WAKE_STREAM(fd, true);                                        \
  ctrace__pl_io_wait iw = {.kind = CTRACE__PL_WAIT_NONE};                  \
  int t = CTRACE__PL_TRY_DONE;                                             \
  ssize_t r = 0;                                                           \
  if ((flags) & MSG_DONTWAIT) {                                            \
    r = call_with_flags(flags);                                            \
  } else if (((flags) & MSG_WAITALL) ||                                    \
             atomic_load_explicit(&lowat_seen, memory_order_relaxed)) {     \
    t = CTRACE__PL_TRY_CANNOT;                                             \
    iw.kind = ctrace__pl_probe(fd, POLLIN);                                \
  } else {                                                                 \
    r = call_with_flags((flags) | MSG_DONTWAIT);                           \
    t = ctrace__pl_tried(r, fd, pl_errno0_);                               \
    if (t == CTRACE__PL_TRY_WAITS) {                                       \
      ctrace__pl_io_wait_known(&iw, fd, true);                             \
      if (iw.key) { /* a stream's retry (above) */                         \
        ctrace__pl_io_prepare(&iw);                                        \
        r = call_with_flags((flags) | MSG_DONTWAIT);                       \
        t = ctrace__pl_tried(r, fd, pl_errno0_);                           \
        if (t == CTRACE__PL_TRY_DONE) ctrace__pl_io_withdraw(&iw);         \
      }                                                                    \
    } else if (t == CTRACE__PL_TRY_CANNOT) {                               \
      iw.kind = ctrace__pl_probe(fd, POLLIN);                              \
    }                                                                      \
  }                                                                        \
  if (t != CTRACE__PL_TRY_DONE) CTRACE__PL_IO_WAIT(&iw, r, call_with_flags(flags)); \
  if (r > 0) CTRACE__PL_WAKE_STREAM_AFTER(fd, true);                             \
  return r

CTRACE__PL_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
  if (ctrace__pl_off()) return real_recv()(fd, buf, n, flags);
#define CALL(f) real_recv()(fd, buf, n, f)
  RECV_BODY(fd, flags, CALL);
#undef CALL
}

CTRACE__PL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
                                   socklen_t *alen) {
  if (ctrace__pl_off()) return real_recvfrom()(fd, buf, n, flags, addr, alen);
#define CALL(f) real_recvfrom()(fd, buf, n, f, addr, alen)
  RECV_BODY(fd, flags, CALL);
#undef CALL
}

CTRACE__PL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  if (ctrace__pl_off()) return real_recvmsg()(fd, msg, flags);
#define CALL(f) real_recvmsg()(fd, msg, f)
  RECV_BODY(fd, flags, CALL);
#undef CALL
}

CTRACE__PL_REAL(int, setsockopt, (int, int, int, const void *, socklen_t))

/* Only notes a low-water mark (lowat_seen), traced or not: it outlives
 * the call. */
CTRACE__PL_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
  int r = real_setsockopt()(fd, level, name, val, len);
  if (r == 0 && level == SOL_SOCKET && name == SO_RCVLOWAT && len >= sizeof(int) &&
      *(const int *)val > 1)
    atomic_store_explicit(&lowat_seen, 1, memory_order_relaxed);
  return r;
}

/* ---- sockets: sending ------------------------------------------------------------------ */

/* n, the bytes asked for, is evaluated only after a try that did not fail
 * (sendmsg's msg may point nowhere: the call's EFAULT). */
#define SEND_BODY(fd, n, flags, call_with)                                       \
  CTRACE__PL_SYSCALL();                                                          \
  CTRACE__PL_WAKE_STREAM(fd, false);                                             \
  ssize_t r;                                                                     \
  int t = CTRACE__PL_TRY_CANNOT;                                                 \
  if (!((flags) & MSG_DONTWAIT)) {                                               \
    r = call_with(0, (flags) | MSG_DONTWAIT);                                    \
    t = ctrace__pl_tried(r, fd, pl_errno0_);                                     \
  }                                                                              \
  if (t == CTRACE__PL_TRY_CANNOT) {                                              \
    CTRACE__PL_STREAM_SEQ();                                                     \
    r = call_with(0, flags);                                                     \
  } else if (t != CTRACE__PL_TRY_DONE || (r >= 0 && !write_complete(r, n, fd))) { \
    size_t done = t == CTRACE__PL_TRY_DONE ? (size_t)r : 0;                      \
    ctrace__pl_io_wait iw;                                                       \
    ctrace__pl_io_wait_known(&iw, fd, false);                                    \
    bool waits = true;                                                           \
    if (iw.key) { /* a stream's retry (above) */                                 \
      ctrace__pl_io_prepare(&iw);                                                \
      ssize_t r2 = call_with(done, (flags) | MSG_DONTWAIT);                      \
      if (ctrace__pl_tried(r2, fd, pl_errno0_) == CTRACE__PL_TRY_DONE) {          \
        if (r2 >= 0) done += (size_t)r2;                                         \
        if (r2 < 0 || done >= (n)) {                                             \
          ctrace__pl_io_withdraw(&iw);                                           \
          r = sum_parts(done, r2 < 0 ? r2 : 0, pl_errno0_);                      \
          waits = false;                                                         \
        }                                                                        \
      }                                                                          \
    }                                                                            \
    if (waits) {                                                                 \
      CTRACE__PL_IO_WAIT(&iw, r, call_with(done, flags));                        \
      r = sum_parts(done, r, pl_errno0_);                                        \
    }                                                                            \
  }                                                                              \
  if (r > 0) CTRACE__PL_WAKE_STREAM_AFTER(fd, false);                                  \
  return r

CTRACE__PL_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
  if (ctrace__pl_off()) return real_send()(fd, buf, n, flags);
#define CALL(skip, f) real_send()(fd, (const char *)buf + (skip), n - (skip), f)
  SEND_BODY(fd, n, flags, CALL);
#undef CALL
}

CTRACE__PL_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                                 const struct sockaddr *addr, socklen_t alen) {
  if (ctrace__pl_off()) return real_sendto()(fd, buf, n, flags, addr, alen);
#define CALL(skip, f) real_sendto()(fd, (const char *)buf + (skip), n - (skip), f, addr, alen)
  SEND_BODY(fd, n, flags, CALL);
#undef CALL
}

/* msg without its first skip bytes (and without the ancillary data, which
 * went with them). */
static ssize_t sendmsg_rest(int fd, const struct msghdr *msg, size_t skip, int flags) {
  if (skip == 0) return real_sendmsg()(fd, msg, flags);
  int cnt = (int)msg->msg_iovlen;
  struct iovec rest[cnt > 0 ? cnt : 1];
  struct msghdr m = *msg;
  m.msg_iov = rest;
  m.msg_iovlen = (size_t)iov_skip(msg->msg_iov, cnt, skip, rest);
  m.msg_control = NULL;
  m.msg_controllen = 0;
  return real_sendmsg()(fd, &m, flags);
}

/* msg is read only once the try has answered without an error: it may
 * point nowhere, which is the call's EFAULT to say. */
CTRACE__PL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  if (ctrace__pl_off()) return real_sendmsg()(fd, msg, flags);
#define CALL(skip, f) sendmsg_rest(fd, msg, skip, f)
  SEND_BODY(fd, iov_total(msg->msg_iov, (int)msg->msg_iovlen), flags, CALL);
#undef CALL
}

/* ---- streams: socketpairs and eventfds -------------------------------------------------
 *
 * The two ends of each socketpair the program made (and of each TCP
 * connection within it, below), by inode, so that a write on one end
 * wakes a reader of the other (io.h). A table of PAIR_SETS sets of
 * PAIR_WAYS slots, the set by a hash of the inode: each end goes into a
 * free slot of its set, else over the one filled longest ago (no close is
 * seen, so slots are never freed; the oldest is the likeliest closed),
 * and keeps it until PAIR_WAYS later sockets land in its set. Not one
 * slot per hash: the kernel numbers inodes in batches per CPU, so two
 * sockets made in turn (a connection's socket, then accept's) are a small
 * gap apart, which the hash spreads, only while the thread stays on its
 * CPU and no other process makes pipes or sockets there; any other gap
 * put both in one slot of 1024 once in about 1250, and the later pair took
 * it for good. A pair that lost its slot is no longer linked (its waits
 * end themselves), never linked wrongly, as a lookup checks the inode.
 * Lock-free lookups, of one set (two cache lines); inserts, as rare as
 * socketpair, connect and accept calls, under a lock, each slot's inode
 * cleared while its peer is written. */

CTRACE__PL_REAL(int, socketpair, (int, int, int, int[2]))

#define PAIR_SETS 256
#define PAIR_WAYS 8
static struct {
  struct {
    _Atomic uint64_t ino, peer;
  } slot[PAIR_WAYS];
} pairs[PAIR_SETS];
static uint8_t pairs_next[PAIR_SETS]; /* a full set's slot to give up next, under pairs_lock */
static _Atomic int pairs_lock;

static size_t pair_set_of(uint64_t ino) { return ino * 0x9E3779B97F4A7C15u >> 56; }

/* Under pairs_lock: the slot of ino in its set, else a free one, else the
 * one filled longest ago (slots fill in order, so the next in turn). */
static void pair_put(uint64_t ino, uint64_t peer) {
  size_t s = pair_set_of(ino);
  unsigned i, free_slot = PAIR_WAYS;
  for (i = 0; i < PAIR_WAYS; i++) {
    uint64_t at = atomic_load_explicit(&pairs[s].slot[i].ino, memory_order_relaxed);
    if (at == ino) break;
    if (at == 0 && free_slot == PAIR_WAYS) free_slot = i;
  }
  if (i == PAIR_WAYS) i = free_slot;
  if (i == PAIR_WAYS) {
    i = pairs_next[s];
    pairs_next[s] = (uint8_t)((i + 1) % PAIR_WAYS);
  }
  atomic_store_explicit(&pairs[s].slot[i].ino, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&pairs[s].slot[i].peer, peer, memory_order_relaxed);
  atomic_store_explicit(&pairs[s].slot[i].ino, ino, memory_order_release);
}

uint64_t ctrace__pl_socket_peer(uint64_t ino) {
  if (!ino) return 0; /* a free slot's */
  size_t s = pair_set_of(ino);
  for (unsigned i = 0; i < PAIR_WAYS; i++) {
    if (atomic_load_explicit(&pairs[s].slot[i].ino, memory_order_acquire) != ino) continue;
    uint64_t peer = atomic_load_explicit(&pairs[s].slot[i].peer, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&pairs[s].slot[i].ino, memory_order_relaxed) == ino) return peer;
  }
  return 0;
}

CTRACE__PL_EXPORT int socketpair(int domain, int type, int proto, int sv[2]) {
  int r = real_socketpair()(domain, type, proto, sv);
  struct stat a, b;
  if (r != 0 || fstat(sv[0], &a) != 0 || fstat(sv[1], &b) != 0) return r;
  while (atomic_exchange_explicit(&pairs_lock, 1, memory_order_acquire)) sched_yield();
  pair_put(a.st_ino, b.st_ino);
  pair_put(b.st_ino, a.st_ino);
  atomic_store_explicit(&pairs_lock, 0, memory_order_release);
  return r;
}

/* A TCP connection both of whose ends are the process's: connect's socket
 * and accept's are paired by the client's address (connect's own, accept's
 * peer's), whichever of the two calls returns first, as a pair from
 * socketpair. A connection to or from another process leaves an entry
 * that a later one takes over; one that matched an old, closed socket
 * whose port came round again names a peer nobody waits on. Costs two
 * system calls per connection made or accepted. */
#define CONNS 64
static struct conn {
  uint64_t addr; /* a hash of the client's address; 0: free */
  uint64_t ino;
  bool client;
} conns[CONNS];
static unsigned conns_next;

static uint64_t addr_hash(const struct sockaddr_storage *a, socklen_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (socklen_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)a)[i]) * 0x100000001b3u;
  return h | 1;
}

static void conn_link(int fd, bool client) {
  int e = errno;
  struct sockaddr_storage a;
  socklen_t n = sizeof a;
  struct stat st;
  if ((client ? getsockname(fd, (struct sockaddr *)&a, &n) : getpeername(fd, (struct sockaddr *)&a, &n)) != 0 ||
      (a.ss_family != AF_INET && a.ss_family != AF_INET6) || n > sizeof a || fstat(fd, &st) != 0) {
    errno = e;
    return;
  }
  uint64_t h = addr_hash(&a, n);
  while (atomic_exchange_explicit(&pairs_lock, 1, memory_order_acquire)) sched_yield();
  struct conn *c = NULL;
  for (size_t i = 0; i < CONNS && !c; i++)
    if (conns[i].addr == h && conns[i].client != client) c = &conns[i];
  if (c) {
    pair_put(st.st_ino, c->ino);
    pair_put(c->ino, st.st_ino);
    c->addr = 0;
  } else {
    c = &conns[conns_next++ % CONNS];
    *c = (struct conn){h, st.st_ino, client};
  }
  atomic_store_explicit(&pairs_lock, 0, memory_order_release);
  errno = e;
}

int ctrace__pl_anon_kind(int fd) {
  char path[32], link[32];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n < 0) return CTRACE__PL_ANON_OTHER;
  link[n] = 0;
  if (strcmp(link, "anon_inode:[eventfd]") == 0) return CTRACE__PL_ANON_EVENTFD;
  if (strcmp(link, "anon_inode:[timerfd]") == 0) return CTRACE__PL_ANON_TIMERFD;
  if (strcmp(link, "anon_inode:[signalfd]") == 0) return CTRACE__PL_ANON_SIGNALFD;
  return CTRACE__PL_ANON_OTHER;
}

/* ---- sockets: connections --------------------------------------------------------------- */

/* accept cannot be tried per call: a readiness probe tells. */
CTRACE__PL_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *alen) {
  if (ctrace__pl_off()) return real_accept()(fd, addr, alen);
  CTRACE__PL_SYSCALL();
  int k = ctrace__pl_probe(fd, POLLIN);
  ctrace__pl_wait_begin(k);
  int r = real_accept()(fd, addr, alen);
  ctrace__pl_wait_end(k);
  if (r >= 0) conn_link(r, false);
  return r;
}

CTRACE__PL_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags) {
  if (ctrace__pl_off()) return real_accept4()(fd, addr, alen, flags);
  CTRACE__PL_SYSCALL();
  int k = ctrace__pl_probe(fd, POLLIN);
  ctrace__pl_wait_begin(k);
  int r = real_accept4()(fd, addr, alen, flags);
  ctrace__pl_wait_end(k);
  if (r >= 0) conn_link(r, false);
  return r;
}

/* connect on a blocking socket waits for the peer (the handshake, for
 * TCP): GoBlockNet for the length of the call. */
CTRACE__PL_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t alen) {
  if (ctrace__pl_off()) return real_connect()(fd, addr, alen);
  CTRACE__PL_SYSCALL();
  int k = ctrace__pl_nonblocking(fd) ? CTRACE__PL_WAIT_NONE : CTRACE__PL_WAIT_NET;
  ctrace__pl_wait_begin(k);
  int r = real_connect()(fd, addr, alen);
  ctrace__pl_wait_end(k);
  if (r == 0 || errno == EINPROGRESS) conn_link(fd, true);
  return r;
}

/* ---- _FORTIFY_SOURCE entry points ----------------------------------------------------------
 *
 * A program built with _FORTIFY_SOURCE calls these instead; each checks its
 * buffer as libc's does (libc's own version reports the overflow) and goes
 * on as the plain call. */

CTRACE__PL_REAL(ssize_t, __read_chk, (int, void *, size_t, size_t))
CTRACE__PL_REAL(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t))
CTRACE__PL_REAL(ssize_t, __recv_chk, (int, void *, size_t, size_t, int))
CTRACE__PL_REAL(ssize_t, __recvfrom_chk,
                (int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *))

CTRACE__PL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  if (n > buflen) return real___read_chk()(fd, buf, n, buflen);
  return read(fd, buf, n);
}

CTRACE__PL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
  if (n > buflen) return real___pread_chk()(fd, buf, n, off, buflen);
  return pread(fd, buf, n, off);
}

CTRACE__PL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
    __attribute__((alias("__pread_chk")));

CTRACE__PL_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
  if (n > buflen) return real___recv_chk()(fd, buf, n, buflen, flags);
  return recv(fd, buf, n, flags);
}

CTRACE__PL_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                         struct sockaddr *addr, socklen_t *alen) {
  if (n > buflen) return real___recvfrom_chk()(fd, buf, n, buflen, flags, addr, alen);
  return recvfrom(fd, buf, n, flags, addr, alen);
}
