/* The tracer's own futex calls, made with the system call instruction
 * itself: under `ctrace run` libc's syscall() is the shim's
 * (src/preload/futex.c), which records a program's futex waits, and the
 * tracer's threads and the shim's waits for them are not the program's. */
#ifndef CTRACE_RUNTIME_SYSFUTEX_H
#define CTRACE_RUNTIME_SYSFUTEX_H

#include <errno.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long ctrace__futex(_Atomic int *word, int op, int val, const struct timespec *timeout) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = (long)timeout;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"((long)SYS_futex), "D"(word), "S"((long)op), "d"((long)val), "r"(r10)
                   : "rcx", "r11", "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
#else
  /* Elsewhere libc's, as the shim's wrapper passes a guarded thread's on. */
  return syscall(SYS_futex, (int *)word, op, val, timeout, NULL, 0);
#endif
}

#endif
