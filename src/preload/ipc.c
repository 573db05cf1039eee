/* Waits on queues and semaphores shared between processes: POSIX message
 * queues (mq_receive, mq_timedreceive, mq_send, mq_timedsend) and System
 * V messages and semaphores (msgrcv, msgsnd, semop, semtimedop).
 *
 * Each is tried first without waiting, and the try's answer is the call's
 * where it has one: a POSIX queue with a deadline in the past (the epoch),
 * which takes or sends a message as the call would and says ETIMEDOUT
 * only where the call would wait (EAGAIN, the answer, on an O_NONBLOCK
 * queue); System V's IPC_NOWAIT, which says ENOMSG (msgrcv) or EAGAIN
 * (msgsnd, semop) only where the call would wait, and else does what the
 * call does (semop's operations all at once, or none). Then the real call
 * is the wait, shown as one in a system call (GoSysBlock): another
 * process ends it, which no trace of this one names.
 *
 * A timeout the kernel would refuse (EINVAL) or cannot read (EFAULT) is
 * refused before the kernel looks at the queue, where a try with a
 * timeout of ours would take a message: such a call is made as it stands.
 * So is a semop of more operations than the try's copy holds.
 */
#include <errno.h>
#include <mqueue.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <time.h>

#include "io.h"

CTRACE__PL_REAL(ssize_t, mq_receive, (mqd_t, char *, size_t, unsigned *))
CTRACE__PL_REAL(ssize_t, mq_timedreceive, (mqd_t, char *, size_t, unsigned *, const struct timespec *))
CTRACE__PL_REAL(int, mq_send, (mqd_t, const char *, size_t, unsigned))
CTRACE__PL_REAL(int, mq_timedsend, (mqd_t, const char *, size_t, unsigned, const struct timespec *))
CTRACE__PL_REAL(ssize_t, msgrcv, (int, void *, size_t, long, int))
CTRACE__PL_REAL(int, msgsnd, (int, const void *, size_t, int))
CTRACE__PL_REAL(int, semop, (int, struct sembuf *, size_t))
CTRACE__PL_REAL(int, semtimedop, (int, struct sembuf *, size_t, const struct timespec *))

/* A deadline that has passed: the try of a POSIX queue's call. */
static const struct timespec past = {0, 0};

/* Whether a timeout at t (NULL: none) is one the kernel takes: readable,
 * and its nanoseconds in range (and, relative, its seconds not negative). */
static bool timeout_ok(const struct timespec *t, bool relative) {
  struct timespec v;
  if (!t) return true;
  if (!ctrace__pl_copy_in(&v, t, sizeof v)) return false;
  return v.tv_nsec >= 0 && v.tv_nsec < 1000000000 && (!relative || v.tv_sec >= 0);
}

/* The wrapper of name: made as it stands when as_is, else tried first
 * (try_call), whose answer is the call's but where it fails with
 * waits_errno, the call's wait: the real call then, shown as a wait in a
 * system call, with errno as the program left it. decl: what as_is and
 * try_call need (semop's copy). */
#define TRIED_CALL(ret, name, params, args, decl, as_is, try_call, waits_errno) \
  CTRACE__PL_EXPORT ret name params {                                          \
    decl;                                                                      \
    if (ctrace__pl_off() || (as_is)) return real_##name() args;                \
    CTRACE__PL_SYSCALL();                                                      \
    ret r = (try_call);                                                        \
    if (r < 0 && errno == (waits_errno)) {                                     \
      errno = pl_errno0_;                                                      \
      CTRACE__PL_SYS_WAIT(r, real_##name() args);                              \
    }                                                                          \
    return r;                                                                  \
  }

TRIED_CALL(ssize_t, mq_timedreceive,
           (mqd_t q, char *buf, size_t len, unsigned *prio, const struct timespec *abs),
           (q, buf, len, prio, abs), , !timeout_ok(abs, false),
           real_mq_timedreceive()(q, buf, len, prio, &past), ETIMEDOUT)
TRIED_CALL(ssize_t, mq_receive, (mqd_t q, char *buf, size_t len, unsigned *prio), (q, buf, len, prio), ,
           false, real_mq_timedreceive()(q, buf, len, prio, &past), ETIMEDOUT)
TRIED_CALL(int, mq_timedsend,
           (mqd_t q, const char *buf, size_t len, unsigned prio, const struct timespec *abs),
           (q, buf, len, prio, abs), , !timeout_ok(abs, false),
           real_mq_timedsend()(q, buf, len, prio, &past), ETIMEDOUT)
TRIED_CALL(int, mq_send, (mqd_t q, const char *buf, size_t len, unsigned prio), (q, buf, len, prio), ,
           false, real_mq_timedsend()(q, buf, len, prio, &past), ETIMEDOUT)
TRIED_CALL(ssize_t, msgrcv, (int id, void *msg, size_t len, long type, int flags), (id, msg, len, type, flags),
           , flags & IPC_NOWAIT, real_msgrcv()(id, msg, len, type, flags | IPC_NOWAIT), ENOMSG)
TRIED_CALL(int, msgsnd, (int id, const void *msg, size_t len, int flags), (id, msg, len, flags), ,
           flags & IPC_NOWAIT, real_msgsnd()(id, msg, len, flags | IPC_NOWAIT), EAGAIN)

/* The operations with IPC_NOWAIT each, in try (n of them, at most
 * SEM_TRY); false if they cannot be read (the call's EFAULT), or are too
 * many, or one has IPC_NOWAIT already (its EAGAIN is then an answer). */
#define SEM_TRY 64
static bool sem_try_ops(struct sembuf *try, const struct sembuf *ops, size_t n) {
  if (n == 0 || n > SEM_TRY || !ctrace__pl_copy_in(try, ops, n * sizeof *ops)) return false;
  for (size_t i = 0; i < n; i++) {
    if (try[i].sem_flg & IPC_NOWAIT) return false;
    try[i].sem_flg |= IPC_NOWAIT;
  }
  return true;
}

TRIED_CALL(int, semtimedop, (int id, struct sembuf *ops, size_t n, const struct timespec *t), (id, ops, n, t),
           struct sembuf try[SEM_TRY], !timeout_ok(t, true) || !sem_try_ops(try, ops, n),
           real_semop()(id, try, n), EAGAIN)
TRIED_CALL(int, semop, (int id, struct sembuf *ops, size_t n), (id, ops, n), struct sembuf try[SEM_TRY],
           !sem_try_ops(try, ops, n), real_semop()(id, try, n), EAGAIN)
