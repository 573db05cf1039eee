/* The program's memory, read as the kernel reads it.
 *
 * A wrapper that looks at what the program passed before the real call
 * (a timeout, to tell a zero one; select's sets, kept for the retry; an
 * offset to probe at) must not fault where the call would say EFAULT.
 * What is on the calling thread's stack is mapped, and is read at once:
 * programs keep their timeouts, sets and offsets there (CPython, nginx,
 * libuv). Anything else is read by process_vm_readv, which fails
 * instead of faulting (350 ns on the machine of BENCHMARKS.md), errno
 * kept.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload.h"
#include "runtime/internal.h"

bool ctrace__pl_copy_in(void *dst, const void *p, size_t n) {
  const ctrace__thread *t = &ctrace__tls;
  uintptr_t a = (uintptr_t)p;
  if (a >= t->stack_lo && a + n <= t->stack_hi && a + n >= a) {
    memcpy(dst, p, n);
    return true;
  }
  struct iovec local = {dst, n}, remote = {(void *)p, n};
  int e = errno; /* the program's: clock_nanosleep, for one, sets none */
  bool ok = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
  errno = e;
  return ok;
}
