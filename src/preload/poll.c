/* Readiness waits: poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * epoll_pwait2.
 *
 * Each is first made with a zero timeout (the same signal mask for the
 * p-variants): if something is ready, or the program asked for no wait,
 * that is the call, and only GoSysCall is recorded. Otherwise the real
 * call waits: GoBlockNet if a socket is among the descriptors watched (for
 * epoll: if a socket was ever added to that epoll instance), else
 * GoSysBlock. The timeout restarts after the try; the try takes a few
 * microseconds.
 */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "io.h"

CTRACE__PL_REAL(int, poll, (struct pollfd *, nfds_t, int))
CTRACE__PL_REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
CTRACE__PL_REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))
CTRACE__PL_REAL(int, pselect,
                (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))
CTRACE__PL_REAL(int, epoll_create, (int))
CTRACE__PL_REAL(int, epoll_create1, (int))
CTRACE__PL_REAL(int, epoll_ctl, (int, int, int, struct epoll_event *))
CTRACE__PL_REAL(int, epoll_wait, (int, struct epoll_event *, int, int))
CTRACE__PL_REAL(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))
CTRACE__PL_REAL(int, epoll_pwait2,
                (int, struct epoll_event *, int, const struct timespec *, const sigset_t *))

int ctrace__pl_real_poll(struct pollfd *fds, nfds_t n, int timeout) {
  return real_poll()(fds, n, timeout);
}

/* Looking at more descriptors than this only delays a wait. */
#define SCAN_MAX 64

static int pollfds_kind(const struct pollfd *fds, nfds_t n) {
  for (nfds_t i = 0; i < n && i < SCAN_MAX; i++)
    if (fds[i].fd >= 0 && ctrace__pl_is_socket(fds[i].fd)) return CTRACE__PL_WAIT_NET;
  return CTRACE__PL_WAIT_SYS;
}

static int fdsets_kind(int nfds, const fd_set *r, const fd_set *w, const fd_set *e) {
  int seen = 0;
  for (int fd = 0; fd < nfds && fd < FD_SETSIZE && seen < SCAN_MAX; fd++) {
    if (!((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e)))) continue;
    seen++;
    if (ctrace__pl_is_socket(fd)) return CTRACE__PL_WAIT_NET;
  }
  return CTRACE__PL_WAIT_SYS;
}

/* ---- poll ------------------------------------------------------------------------- */

CTRACE__PL_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
  if (ctrace__pl_off()) return real_poll()(fds, n, timeout);
  CTRACE__PL_SYSCALL();
  if (timeout == 0) return real_poll()(fds, n, 0);
  int r = real_poll()(fds, n, 0);
  if (r != 0) return r;
  int k = pollfds_kind(fds, n);
  ctrace__pl_wait_begin(k);
  r = real_poll()(fds, n, timeout);
  ctrace__pl_wait_end(k);
  return r;
}

CTRACE__PL_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                            const sigset_t *mask) {
  if (ctrace__pl_off()) return real_ppoll()(fds, n, tmo, mask);
  CTRACE__PL_SYSCALL();
  static const struct timespec zero = {0, 0};
  if (tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0) return real_ppoll()(fds, n, tmo, mask);
  int r = real_ppoll()(fds, n, &zero, mask);
  if (r != 0) return r;
  int k = pollfds_kind(fds, n);
  ctrace__pl_wait_begin(k);
  r = real_ppoll()(fds, n, tmo, mask);
  ctrace__pl_wait_end(k);
  return r;
}

/* ---- select ------------------------------------------------------------------------
 *
 * select overwrites its sets: the try works on copies of the first nfds
 * bits. Sets larger than fd_set (nfds > FD_SETSIZE) are passed on untried. */

typedef struct fdsets {
  fd_set r, w, e;
} fdsets;

static void sets_save(fdsets *s, int nfds, fd_set *r, fd_set *w, fd_set *e) {
  size_t bytes = ((size_t)nfds + 7) / 8;
  if (r) memcpy(&s->r, r, bytes);
  if (w) memcpy(&s->w, w, bytes);
  if (e) memcpy(&s->e, e, bytes);
}

static void sets_restore(const fdsets *s, int nfds, fd_set *r, fd_set *w, fd_set *e) {
  size_t bytes = ((size_t)nfds + 7) / 8;
  if (r) memcpy(r, &s->r, bytes);
  if (w) memcpy(w, &s->w, bytes);
  if (e) memcpy(e, &s->e, bytes);
}

CTRACE__PL_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
  if (ctrace__pl_off()) return real_select()(nfds, r, w, e, tv);
  CTRACE__PL_SYSCALL();
  if ((tv && tv->tv_sec == 0 && tv->tv_usec == 0) || nfds < 0 || nfds > FD_SETSIZE)
    return real_select()(nfds, r, w, e, tv);
  fdsets saved;
  sets_save(&saved, nfds, r, w, e);
  struct timeval zero = {0, 0};
  int n = real_select()(nfds, r, w, e, &zero);
  if (n != 0) return n;
  sets_restore(&saved, nfds, r, w, e);
  int k = fdsets_kind(nfds, r, w, e);
  ctrace__pl_wait_begin(k);
  n = real_select()(nfds, r, w, e, tv);
  ctrace__pl_wait_end(k);
  return n;
}

CTRACE__PL_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
                              const struct timespec *tmo, const sigset_t *mask) {
  if (ctrace__pl_off()) return real_pselect()(nfds, r, w, e, tmo, mask);
  CTRACE__PL_SYSCALL();
  if ((tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0) || nfds < 0 || nfds > FD_SETSIZE)
    return real_pselect()(nfds, r, w, e, tmo, mask);
  fdsets saved;
  sets_save(&saved, nfds, r, w, e);
  static const struct timespec zero = {0, 0};
  int n = real_pselect()(nfds, r, w, e, &zero, mask);
  if (n != 0) return n;
  sets_restore(&saved, nfds, r, w, e);
  int k = fdsets_kind(nfds, r, w, e);
  ctrace__pl_wait_begin(k);
  n = real_pselect()(nfds, r, w, e, tmo, mask);
  ctrace__pl_wait_end(k);
  return n;
}

/* ---- epoll ---------------------------------------------------------------------------
 *
 * Which epoll instances watch a socket: a bit per epoll descriptor, set
 * when a socket is added, cleared when the descriptor number is handed out
 * by epoll_create again. Descriptors past the bitmap count as sockets. */

#define EPOLL_FDS 65536
static _Atomic uint64_t epoll_net[EPOLL_FDS / 64];

static void epoll_mark(int epfd, bool net) {
  if (epfd < 0 || epfd >= EPOLL_FDS) return;
  uint64_t bit = 1ull << (epfd % 64);
  if (net)
    atomic_fetch_or_explicit(&epoll_net[epfd / 64], bit, memory_order_relaxed);
  else
    atomic_fetch_and_explicit(&epoll_net[epfd / 64], ~bit, memory_order_relaxed);
}

static int epoll_kind(int epfd) {
  if (epfd < 0 || epfd >= EPOLL_FDS) return CTRACE__PL_WAIT_NET;
  uint64_t w = atomic_load_explicit(&epoll_net[epfd / 64], memory_order_relaxed);
  return w >> (epfd % 64) & 1 ? CTRACE__PL_WAIT_NET : CTRACE__PL_WAIT_SYS;
}

CTRACE__PL_EXPORT int epoll_create(int size) {
  int fd = real_epoll_create()(size);
  epoll_mark(fd, false);
  return fd;
}

CTRACE__PL_EXPORT int epoll_create1(int flags) {
  int fd = real_epoll_create1()(flags);
  epoll_mark(fd, false);
  return fd;
}

CTRACE__PL_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
  int r = real_epoll_ctl()(epfd, op, fd, ev);
  if (r == 0 && op == EPOLL_CTL_ADD && epoll_kind(epfd) != CTRACE__PL_WAIT_NET) {
    int e = errno;
    if (ctrace__pl_is_socket(fd)) epoll_mark(epfd, true);
    errno = e;
  }
  return r;
}

CTRACE__PL_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout) {
  if (ctrace__pl_off()) return real_epoll_wait()(epfd, ev, max, timeout);
  CTRACE__PL_SYSCALL();
  if (timeout == 0) return real_epoll_wait()(epfd, ev, max, 0);
  int r = real_epoll_wait()(epfd, ev, max, 0);
  if (r != 0) return r;
  int k = epoll_kind(epfd);
  ctrace__pl_wait_begin(k);
  r = real_epoll_wait()(epfd, ev, max, timeout);
  ctrace__pl_wait_end(k);
  return r;
}

CTRACE__PL_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
                                  const sigset_t *mask) {
  if (ctrace__pl_off()) return real_epoll_pwait()(epfd, ev, max, timeout, mask);
  CTRACE__PL_SYSCALL();
  if (timeout == 0) return real_epoll_pwait()(epfd, ev, max, 0, mask);
  int r = real_epoll_pwait()(epfd, ev, max, 0, mask);
  if (r != 0) return r;
  int k = epoll_kind(epfd);
  ctrace__pl_wait_begin(k);
  r = real_epoll_pwait()(epfd, ev, max, timeout, mask);
  ctrace__pl_wait_end(k);
  return r;
}

CTRACE__PL_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
                                   const struct timespec *tmo, const sigset_t *mask) {
  if (ctrace__pl_off()) return real_epoll_pwait2()(epfd, ev, max, tmo, mask);
  CTRACE__PL_SYSCALL();
  static const struct timespec zero = {0, 0};
  if (tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0)
    return real_epoll_pwait2()(epfd, ev, max, tmo, mask);
  int r = real_epoll_pwait2()(epfd, ev, max, &zero, mask);
  if (r != 0) return r;
  int k = epoll_kind(epfd);
  ctrace__pl_wait_begin(k);
  r = real_epoll_pwait2()(epfd, ev, max, tmo, mask);
  ctrace__pl_wait_end(k);
  return r;
}

/* _FORTIFY_SOURCE entry points: check as libc does, then the plain call. */
CTRACE__PL_REAL(int, __poll_chk, (struct pollfd *, nfds_t, int, size_t))
CTRACE__PL_REAL(int, __ppoll_chk,
                (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t))

CTRACE__PL_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) return real___poll_chk()(fds, n, timeout, fdslen);
  return poll(fds, n, timeout);
}

CTRACE__PL_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                                  const sigset_t *mask, size_t fdslen) {
  if (fdslen / sizeof *fds < n) return real___ppoll_chk()(fds, n, tmo, mask, fdslen);
  return ppoll(fds, n, tmo, mask);
}
