/* Waits for the disk and for file locks.
 *
 * fsync, fdatasync and syncfs wait until the disk has what the file (or
 * its file system) holds: a database's log flush, an editor's save. They
 * are shown as a wait in a system call (GoSysBlock) whenever made: the
 * kernel cannot be asked beforehand whether anything is dirty, and a call
 * with nothing to write shows as a wait of microseconds.
 *
 * flock and lockf wait for a lock another open file (flock) or process
 * (lockf) holds. Each is tried first without waiting (LOCK_NB, F_TLOCK):
 * the try's answer is the call's (the lock taken, or an error the call
 * would give too) but where the lock is held, and then the real call is
 * the wait. A try that finds the lock held has changed nothing the call
 * would not: converting a lock one holds (shared to exclusive) lets the
 * old one go before it waits, in the try as in the call.
 *
 * fcntl's record locks the same: F_SETLKW and F_OFD_SETLKW are tried as
 * F_SETLK and F_OFD_SETLK, which differ from them only in not waiting
 * (the lock held: EACCES or EAGAIN). Every other command is passed on
 * untouched, with no event: fcntl is called for everything (F_GETFL,
 * F_SETFD ...), the shim's own calls among them. Its argument is read as
 * libc's fcntl reads it, one word whatever the command. fcntl64 is the
 * same function, the one a program built with _FILE_OFFSET_BITS=64 calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/file.h>
#include <unistd.h>

#include "io.h"

CTRACE__PL_REAL(int, fsync, (int))
CTRACE__PL_REAL(int, fdatasync, (int))
CTRACE__PL_REAL(int, syncfs, (int))
CTRACE__PL_REAL(int, flock, (int, int))
CTRACE__PL_REAL(int, lockf, (int, int, off_t))
CTRACE__PL_REAL(int, fcntl, (int, int, ...))
CTRACE__PL_REAL(int, fcntl64, (int, int, ...))

CTRACE__PL_WAITING_CALL(int, fsync, (int fd), (fd))
CTRACE__PL_WAITING_CALL(int, fdatasync, (int fd), (fd))
CTRACE__PL_WAITING_CALL(int, syncfs, (int fd), (fd))

CTRACE__PL_EXPORT int flock(int fd, int op) {
  if (ctrace__pl_off()) return real_flock()(fd, op);
  CTRACE__PL_SYSCALL();
  if ((op & LOCK_NB) || (op & ~LOCK_NB) == LOCK_UN) return real_flock()(fd, op);
  int r = real_flock()(fd, op | LOCK_NB);
  if (r == 0 || errno != EWOULDBLOCK) return r;
  errno = pl_errno0_;
  CTRACE__PL_SYS_WAIT(r, real_flock()(fd, op));
  return r;
}

/* F_TLOCK finds a lock of another process held with EACCES or EAGAIN
 * (POSIX allows either). */
CTRACE__PL_EXPORT int lockf(int fd, int cmd, off_t len) {
  if (ctrace__pl_off()) return real_lockf()(fd, cmd, len);
  CTRACE__PL_SYSCALL();
  if (cmd != F_LOCK) return real_lockf()(fd, cmd, len);
  int r = real_lockf()(fd, F_TLOCK, len);
  if (r == 0 || (errno != EACCES && errno != EAGAIN)) return r;
  errno = pl_errno0_;
  CTRACE__PL_SYS_WAIT(r, real_lockf()(fd, cmd, len));
  return r;
}

/* The body of fcntl and fcntl64 (the stack of the events begins at the
 * wrapper): real is libc's of the two. */
#define FCNTL_BODY(real)                                                                  \
  va_list ap;                                                                             \
  va_start(ap, cmd);                                                                      \
  void *arg = va_arg(ap, void *);                                                         \
  va_end(ap);                                                                             \
  if ((cmd != F_SETLKW && cmd != F_OFD_SETLKW) || ctrace__pl_off()) return real()(fd, cmd, arg); \
  CTRACE__PL_SYSCALL();                                                                   \
  int r = real()(fd, cmd == F_SETLKW ? F_SETLK : F_OFD_SETLK, arg);                       \
  if (r == 0 || (errno != EACCES && errno != EAGAIN)) return r;                           \
  errno = pl_errno0_;                                                                     \
  CTRACE__PL_SYS_WAIT(r, real()(fd, cmd, arg));                                           \
  return r

CTRACE__PL_EXPORT int fcntl(int fd, int cmd, ...) { FCNTL_BODY(real_fcntl); }
CTRACE__PL_EXPORT int fcntl64(int fd, int cmd, ...) { FCNTL_BODY(real_fcntl64); }
