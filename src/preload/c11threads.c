/* C11 threads: thrd_join, thrd_exit, thrd_sleep, mtx_*, cnd_* (thrd_create
 * is with pthread_create, in threads.c).
 *
 * glibc implements them on its internal pthread functions, which it calls
 * directly, not through the PLT: the pthread wrappers never see a C11
 * program. They are thin mappings (the C11 types are the pthread ones
 * under other names), so the shim makes the same mapping onto its own
 * wrappers, with glibc's error mapping (thrd_err_map), the releasing calls
 * (mtx_unlock, cnd_signal, cnd_broadcast) included, which end a waiter's
 * wait (wake.c). Calls that neither wait nor release (mtx_trylock,
 * thrd_yield, ...) are left to libc.
 */
#include <stdint.h>
#include <threads.h>
#include <time.h>

#include "preload.h"

int ctrace__pl_thrd_err(int err) {
  switch (err) {
  case 0:
    return thrd_success;
  case ENOMEM:
    return thrd_nomem;
  case ETIMEDOUT:
    return thrd_timedout;
  case EBUSY:
    return thrd_busy;
  default:
    return thrd_error;
  }
}

CTRACE__PL_EXPORT int thrd_join(thrd_t thr, int *res) {
  void *ret;
  int err = pthread_join((pthread_t)thr, &ret);
  if (err == 0 && res) *res = (int)(intptr_t)ret;
  return ctrace__pl_thrd_err(err);
}

CTRACE__PL_EXPORT _Noreturn void thrd_exit(int res) { pthread_exit((void *)(intptr_t)res); }

/* C11: 0, -1 if a signal interrupted the sleep, another negative value if
 * it failed. */
CTRACE__PL_EXPORT int thrd_sleep(const struct timespec *dur, struct timespec *rem) {
  int err = clock_nanosleep(CLOCK_REALTIME, 0, dur, rem);
  return err == 0 ? 0 : err == EINTR ? -1 : -2;
}

CTRACE__PL_EXPORT int mtx_lock(mtx_t *m) { return ctrace__pl_thrd_err(pthread_mutex_lock((pthread_mutex_t *)m)); }

CTRACE__PL_EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict ts) {
  return ctrace__pl_thrd_err(pthread_mutex_timedlock((pthread_mutex_t *)m, ts));
}

CTRACE__PL_EXPORT int cnd_wait(cnd_t *c, mtx_t *m) {
  return ctrace__pl_thrd_err(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

CTRACE__PL_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                                    const struct timespec *restrict ts) {
  return ctrace__pl_thrd_err(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts));
}

CTRACE__PL_EXPORT int mtx_unlock(mtx_t *m) { return ctrace__pl_thrd_err(pthread_mutex_unlock((pthread_mutex_t *)m)); }

CTRACE__PL_EXPORT int cnd_signal(cnd_t *c) { return ctrace__pl_thrd_err(pthread_cond_signal((pthread_cond_t *)c)); }

CTRACE__PL_EXPORT int cnd_broadcast(cnd_t *c) {
  return ctrace__pl_thrd_err(pthread_cond_broadcast((pthread_cond_t *)c));
}
