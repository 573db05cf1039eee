/* Sleeps: sleep, usleep, nanosleep, clock_nanosleep are GoSleep, then the
 * thread goes on (ctrace_thread_resume) when the sleep ends. A sleep of
 * zero is passed on unrecorded: it does not wait. glibc's sleep and usleep
 * call its nanosleep internally, not through the PLT, so each sleep is
 * recorded once. */
#include <time.h>
#include <unistd.h>

#include "preload.h"

CTRACE__PL_REAL(unsigned, sleep, (unsigned))
CTRACE__PL_REAL(int, usleep, (useconds_t))
CTRACE__PL_REAL(int, nanosleep, (const struct timespec *, struct timespec *))
CTRACE__PL_REAL(int, clock_nanosleep,
                (clockid_t, int, const struct timespec *, struct timespec *))

/* A zero sleep, or one at a pointer to nowhere (the call's EFAULT),
 * made as it stands. */
static bool zero(const struct timespec *t) { return !t || ctrace__pl_time_zero(t); }

CTRACE__PL_EXPORT unsigned sleep(unsigned s) {
  if (s == 0 || ctrace__pl_off()) return real_sleep()(s);
  CTRACE__PL_BLOCK(CTRACE_BLOCK_SLEEP);
  unsigned r = real_sleep()(s);
  CTRACE__PL_RESUME();
  return r;
}

CTRACE__PL_EXPORT int usleep(useconds_t us) {
  if (us == 0 || ctrace__pl_off()) return real_usleep()(us);
  CTRACE__PL_BLOCK(CTRACE_BLOCK_SLEEP);
  int r = real_usleep()(us);
  CTRACE__PL_RESUME();
  return r;
}

CTRACE__PL_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
  if (ctrace__pl_off() || zero(req)) return real_nanosleep()(req, rem);
  CTRACE__PL_BLOCK(CTRACE_BLOCK_SLEEP);
  int r = real_nanosleep()(req, rem);
  CTRACE__PL_RESUME();
  return r;
}

/* An absolute time in the past does not wait either, but telling costs a
 * clock read; it shows as a sleep of (nearly) nothing. */
CTRACE__PL_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
                                      struct timespec *rem) {
  if (ctrace__pl_off() || (!(flags & TIMER_ABSTIME) && zero(req)))
    return real_clock_nanosleep()(clk, flags, req, rem);
  CTRACE__PL_BLOCK(CTRACE_BLOCK_SLEEP);
  int r = real_clock_nanosleep()(clk, flags, req, rem);
  CTRACE__PL_RESUME();
  return r;
}
