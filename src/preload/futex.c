/* Futexes the program waits on itself, through libc's syscall(): Rust's
 * std (Mutex, Condvar, RwLock, Once, thread parking, channels), C++20's
 * std::atomic::wait and what libstdc++ builds on it (latch, barrier,
 * counting_semaphore), abseil, folly. glibc's own futexes (pthreads) are
 * inline system calls, never seen here; sync.c traces those.
 *
 * A wait (FUTEX_WAIT, FUTEX_WAIT_BITSET, private or not, with or without a
 * timeout; futex_waitv) whose word still holds the value it expects will
 * wait: it is a GoBlockSync, linked in the waiter table (wake.c) by the
 * word's address, as the kernel keys a private futex. A word that has
 * changed already is the kernel's EAGAIN, no block at all: the real call
 * is made, nothing is recorded. A wake (FUTEX_WAKE, FUTEX_WAKE_BITSET, the
 * wakes of FUTEX_REQUEUE, FUTEX_CMP_REQUEUE and FUTEX_WAKE_OP) first ends
 * the waits of as many of the word's waiters as it may wake, writing their
 * GoUnblock with its own stack, as an unlock does (sync.c); with nobody
 * waiting that is one load of the table's bucket.
 *
 * Not linked (a wait there ends by itself, with no waker): waiters a
 * requeue moves to another word, the second word of FUTEX_WAKE_OP, every
 * word of a futex_waitv but the first, and wakes whose bitset leaves out
 * the waiter's (the count is taken as is). Priority-inheritance futexes
 * and every other call pass through unrecorded.
 */
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wake.h"

/* glibc's pthread_cleanup_push (CTRACE__PL_LINKED_WAIT) keeps the handler
 * in locals set before its setjmp and never changed after it: GCC cannot
 * tell, and warns that a longjmp could clobber them. */
#pragma GCC diagnostic ignored "-Wclobbered"

CTRACE__PL_REAL(long, syscall, (long, ...))

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

/* futex_waitv's entry (linux/futex.h has it from 5.16). */
struct waitv {
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};

/* A futex's key in the waiter table: its word's address, one byte on, so
 * that it is never the key of the pthread object the word may begin
 * (sync.c keys those by their address, a read-write lock's writers by the
 * byte after it). */
static inline const void *key_of(uintptr_t uaddr) { return (const char *)uaddr + 2; }

/* A wait on the futex at uaddr that is to wait: its word still holds val.
 * The kernel compares it with val too, atomically: one found changed
 * since is a block of no time. */
static inline bool holds(uintptr_t uaddr, uint32_t val) {
  return uaddr && __atomic_load_n((const uint32_t *)uaddr, __ATOMIC_RELAXED) == val;
}

/* Whether futex_waitv(waiters, n, ...) is to wait: every word holds its
 * value. Only 32-bit futexes exist (FUTEX2_SIZE_U32): any other is the
 * kernel's EINVAL, no wait. */
static bool waitv_waits(const struct waitv *w, unsigned n) {
  if (!w || n == 0 || n > 128) return false;
  for (unsigned i = 0; i < n; i++)
    if ((w[i].flags & 3) != 2 || !holds((uintptr_t)w[i].uaddr, (uint32_t)w[i].val)) return false;
  return true;
}

/* The wake of op, before it is made: the waiters it may end. */
static void wake(long op, uintptr_t uaddr, int val, uint32_t val3) {
  switch (op & FUTEX_CMD_MASK) {
  case FUTEX_WAKE:
  case FUTEX_WAKE_BITSET:
  case FUTEX_REQUEUE:
  case FUTEX_WAKE_OP:
    if (val > 0) CTRACE__PL_WAKE(key_of(uaddr), (size_t)val);
    break;
  case FUTEX_CMP_REQUEUE: /* only if the word holds val3; else EAGAIN */
    if (val > 0 && holds(uaddr, val3)) CTRACE__PL_WAKE(key_of(uaddr), (size_t)val);
    break;
  }
}

/* libc's syscall(number, ...) takes six arguments whatever the call
 * needs, as the kernel does: reading six here is what it does (the sixth
 * is on the caller's stack, past what a call with fewer passed: glibc
 * reads it anyway, which ASan would report here). The waits are made
 * here, not in a function of their own: the stack of their events begins
 * at the function the program called, and a wait's cleanup handler (a
 * setjmp) keeps GCC from inlining one. */
__attribute__((no_sanitize("address"))) CTRACE__PL_EXPORT long syscall(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  long (*real)(long, ...) = real_syscall();
  if ((nr != SYS_futex && nr != SYS_futex_waitv) || ctrace__pl_off()) {
    /* The namespace calls that want a process of one thread go to their
     * wrappers (ns.c), which return as syscall() does. */
    if (nr == SYS_unshare) return ctrace__pl_unshare((int)a[0]);
    if (nr == SYS_setns) return ctrace__pl_setns((int)a[0], (int)a[1]);
    return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
  }
  if (nr == SYS_futex_waitv) {
    const struct waitv *w = (const struct waitv *)a[0];
    if (!waitv_waits(w, (unsigned)a[1])) return real(nr, a[0], a[1], a[2], a[3], a[4]);
    return CTRACE__PL_LINKED_WAIT(key_of((uintptr_t)w[0].uaddr), CTRACE_BLOCK_SYNC,
                                  real(nr, a[0], a[1], a[2], a[3], a[4]));
  }
  long op = a[1] & FUTEX_CMD_MASK;
  if ((op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET) && holds((uintptr_t)a[0], (uint32_t)a[2]))
    return CTRACE__PL_LINKED_WAIT(key_of((uintptr_t)a[0]), CTRACE_BLOCK_SYNC,
                                  real(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
  wake(a[1], (uintptr_t)a[0], (int)a[2], (uint32_t)a[5]);
  return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
