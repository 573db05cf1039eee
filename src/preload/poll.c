/* Readiness waits, the waits of event loops: poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait, epoll_pwait2 (libuv, libevent, redis's ae,
 * nginx, glib, Boost.Asio all wait in one of them).
 *
 * Each is first made with a zero timeout (the same signal mask for the
 * p-variants): if something is ready, or the program asked for no wait,
 * that is the call, and only GoSysCall is recorded. Otherwise the thread
 * waits: GoBlockNet, as Go shows a goroutine waiting in its network
 * poller and as a read of a pipe or socket shows here (io.h), for any
 * descriptors; a call that watches none (poll(NULL, 0, t), select(0, ...))
 * is a sleep, GoSleep. The timeout restarts after the try, which takes a
 * few microseconds.
 *
 * Who ended the wait (docs/run.md, "Who woke whom"). A wait watches many
 * descriptors: it is linked in the waiter table (wake.c) under the stream
 * key (io.h) of each descriptor that another thread of the process can
 * make ready (a pipe or FIFO, an eventfd, a socket whose peer is the
 * process's: for input, by a write; for output, but for an eventfd, by a
 * read that makes room), several entries that share one state, so that
 * the first thread to do so claims the wait and writes its GoUnblock,
 * with its stack; a second finds it claimed and moves on. As for
 * a stream's read, the wait is linked before its block is written and the
 * call tried once more in between (prepare, try, commit): what came
 * meanwhile is taken with no wait recorded. poll and select name their
 * descriptors; epoll keeps its interest list in the kernel, so epoll_ctl
 * keeps a copy of what matters here, per epoll descriptor (below).
 *
 * A wait that nobody in the process ended ends by itself, and says why:
 * its GoUnblock, written by the thread itself, has one frame, a function
 * named for the reason (ctrace_wait_timeout and the others below), which
 * Go's viewers show as the unblock's stack and ctrace's analyses read
 * (src/analyse/waker.c).
 */
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>

#include "io.h"

/* glibc's pthread_cleanup_push keeps the handler in locals set before its
 * setjmp and never changed after it: GCC cannot tell, and warns that a
 * longjmp could clobber them. */
#pragma GCC diagnostic ignored "-Wclobbered"

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

/* ---- why a wait ended by itself ------------------------------------------------------
 *
 * Never called: each names a reason by its address, the one frame of the
 * GoUnblock a waiting thread writes for itself. Different bodies, so that
 * no pass folds them into one. */

/* Its timeout passed. */
__attribute__((noinline, used)) int ctrace_wait_timeout(void) { return 1; }
/* A signal: the call was interrupted (EINTR), or a signalfd became ready. */
__attribute__((noinline, used)) int ctrace_wait_signal(void) { return 2; }
/* A timerfd expired. */
__attribute__((noinline, used)) int ctrace_wait_timer(void) { return 3; }
/* A descriptor became ready and no thread of the process was seen making
 * it so: another process or a remote peer wrote, a connection came, the
 * kernel had something (a child's end, inotify), or a thread wrote through
 * a descriptor the shim does not link (docs/run.md). */
__attribute__((noinline, used)) int ctrace_wait_outside(void) { return 4; }

/* What a watched descriptor says of why a wait ended, if it is the first
 * ready. */
enum { WHY_OUTSIDE, WHY_TIMER, WHY_SIGNAL };

static uintptr_t why_fn(int why) {
  return why == WHY_TIMER    ? (uintptr_t)ctrace_wait_timer
         : why == WHY_SIGNAL ? (uintptr_t)ctrace_wait_signal
                             : (uintptr_t)ctrace_wait_outside;
}

/* ---- a wait linked under several keys ---------------------------------------------- */

/* Streams linked per wait; a wait on more links the first ones only. */
#define LINK_MAX 16
/* Descriptors looked at per poll or select. */
#define SCAN_MAX 64
/* Timerfds and signalfds a poll or select remembers, for the reason. */
#define SPECIAL_MAX 4

typedef struct loop_wait {
  unsigned n;
  const void *keys[LINK_MAX];
  ctrace__pl_waiter w[LINK_MAX];
  unsigned nspecial;
  int special_fd[SPECIAL_MAX];
  int special_why[SPECIAL_MAX];
} loop_wait;

static void add_key(loop_wait *lw, const void *key) {
  if (!key || lw->n == LINK_MAX) return;
  for (unsigned i = 0; i < lw->n; i++)
    if (lw->keys[i] == key) return;
  lw->keys[lw->n++] = key;
}

/* A descriptor poll or select watches: its stream keys, for input (in:
 * a write ends the wait) and for output (out: a read that makes room in a
 * pipe or socket), or whether it is a timerfd or a signalfd. On the
 * waiting path only (an fstat, and a readlink for an anonymous inode). */
static void scan_fd(loop_wait *lw, int fd, bool in, bool out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  if ((st.st_mode & S_IFMT) != 0) {
    if (in) add_key(lw, ctrace__pl_stream_key(fd, &st, true, true));
    if (out) add_key(lw, ctrace__pl_stream_key(fd, &st, false, false));
    return;
  }
  if (!in) return;
  int k = ctrace__pl_anon_kind(fd);
  if (k == CTRACE__PL_ANON_EVENTFD) {
    add_key(lw, ctrace__pl_key_of(ctrace__pl_eventfd_id(fd), true));
  } else if ((k == CTRACE__PL_ANON_TIMERFD || k == CTRACE__PL_ANON_SIGNALFD) &&
             lw->nspecial < SPECIAL_MAX) {
    lw->special_fd[lw->nspecial] = fd;
    lw->special_why[lw->nspecial++] = k == CTRACE__PL_ANON_TIMERFD ? WHY_TIMER : WHY_SIGNAL;
  }
}

static int special_why(const loop_wait *lw, int fd) {
  for (unsigned i = 0; i < lw->nspecial; i++)
    if (lw->special_fd[i] == fd) return lw->special_why[i];
  return WHY_OUTSIDE;
}

/* Links the wait before the retry (the guard held until the commit or the
 * withdrawal, as for a stream's read: io.h). */
CTRACE__PL_INLINE void loop_prepare(loop_wait *lw) {
  if (!lw->n) return;
  CTRACE__PL_CALL(lw->w[0].g = ctrace_thread_g());
  ctrace__pl_guard++;
  ctrace__pl_wait_prepare_n(lw->w, lw->keys, lw->n);
}

CTRACE__PL_INLINE void loop_withdraw(loop_wait *lw) {
  if (!lw->n) return;
  int e = errno;
  ctrace__pl_wait_leave(lw->w);
  ctrace__pl_unguard();
  errno = e;
}

/* The block, then the commit: a waker from then on writes the unblock. */
CTRACE__PL_INLINE void loop_begin(loop_wait *lw) {
  CTRACE__PL_BLOCK(CTRACE_BLOCK_NET);
  if (!lw->n) return;
  ctrace__pl_wait_commit(lw->w);
  ctrace__pl_unguard();
}

/* After the real call: true if a waker ended the wait. The guard is held
 * while the entries are unlinked, so that a handler of a signal on this
 * thread (a self-pipe's write) does not wait for a bucket's lock this
 * thread holds. Keeps errno. */
CTRACE__PL_INLINE bool loop_leave(loop_wait *lw) {
  if (!lw->n) return false;
  int e = errno;
  ctrace__pl_guard++;
  ctrace__pl_wait_leave(lw->w);
  bool woken = atomic_load_explicit(&lw->w[0].state, memory_order_relaxed) == CTRACE__PL_W_WOKEN;
  ctrace__pl_unguard();
  errno = e;
  return woken;
}

/* The thread goes on: a wait nobody ended says why (why: 0 for no reason
 * told, as for an error). Keeps errno. */
CTRACE__PL_INLINE void loop_end(bool woken, uintptr_t why) {
  if (woken || !why)
    CTRACE__PL_RESUME();
  else
    CTRACE__PL_CALL_KEEP_ERRNO(ctrace__thread_resume_why(why));
}

/* The reason of a wait that returned r (errno e) and ended by itself, but
 * for r > 0, which the caller tells from the descriptors ready. */
static uintptr_t why_of(int r, int e) {
  if (r == 0) return (uintptr_t)ctrace_wait_timeout;
  if (r < 0 && e == EINTR) return (uintptr_t)ctrace_wait_signal;
  return 0;
}

/* r = call, a wait of lw (linked when lw->n), tried again first with
 * retry; ends the wrapper with retry's answer if that does not wait. The
 * reason of r > 0 is ready_why. */
#define LOOP_WAIT(lw, r, retry, call, ready_why)                                 \
  do {                                                                           \
    loop_prepare(lw);                                                            \
    if ((lw)->n) {                                                               \
      r = (retry);                                                               \
      if (r != 0) {                                                              \
        loop_withdraw(lw);                                                       \
        return r;                                                                \
      }                                                                          \
    }                                                                            \
    loop_begin(lw);                                                              \
    pthread_cleanup_push(ctrace__pl_wait_cancelled, (lw)->n ? (lw)->w : NULL);   \
    r = (call);                                                                  \
    pthread_cleanup_pop(0);                                                      \
    bool pl_woken_ = loop_leave(lw);                                             \
    uintptr_t pl_why_ = 0;                                                       \
    if (!pl_woken_) pl_why_ = r > 0 ? (ready_why) : why_of(r, errno);            \
    loop_end(pl_woken_, pl_why_);                                                \
  } while (0)

/* A call that watches no descriptor waits for its timeout alone. */
#define LOOP_SLEEP(r, call)                  \
  do {                                       \
    CTRACE__PL_BLOCK(CTRACE_BLOCK_SLEEP);    \
    r = (call);                              \
    CTRACE__PL_RESUME();                     \
  } while (0)

/* ---- poll ------------------------------------------------------------------------- */

/* Fills lw from fds; false if no descriptor is watched (a sleep). */
static bool pollfds_scan(loop_wait *lw, const struct pollfd *fds, nfds_t n) {
  bool any = false;
  lw->n = lw->nspecial = 0;
  for (nfds_t i = 0; i < n; i++) {
    if (fds[i].fd < 0) continue;
    any = true;
    if (i < SCAN_MAX && (fds[i].events & (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM)))
      scan_fd(lw, fds[i].fd, fds[i].events & (POLLIN | POLLRDNORM),
              fds[i].events & (POLLOUT | POLLWRNORM));
  }
  return any;
}

static uintptr_t pollfds_why(const loop_wait *lw, const struct pollfd *fds, nfds_t n) {
  for (nfds_t i = 0; i < n; i++)
    if (fds[i].fd >= 0 && fds[i].revents) return why_fn(special_why(lw, fds[i].fd));
  return (uintptr_t)ctrace_wait_outside;
}

CTRACE__PL_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
  if (ctrace__pl_off()) return real_poll()(fds, n, timeout);
  CTRACE__PL_SYSCALL();
  if (timeout == 0) return real_poll()(fds, n, 0);
  int r = real_poll()(fds, n, 0);
  if (r != 0) return r;
  loop_wait lw;
  if (!pollfds_scan(&lw, fds, n)) {
    LOOP_SLEEP(r, real_poll()(fds, n, timeout));
    return r;
  }
  LOOP_WAIT(&lw, r, real_poll()(fds, n, 0), real_poll()(fds, n, timeout),
            pollfds_why(&lw, fds, n));
  return r;
}

CTRACE__PL_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                            const sigset_t *mask) {
  if (ctrace__pl_off()) return real_ppoll()(fds, n, tmo, mask);
  CTRACE__PL_SYSCALL();
  static const struct timespec zero = {0, 0};
  if (tmo && ctrace__pl_time_zero(tmo)) return real_ppoll()(fds, n, tmo, mask);
  int r = real_ppoll()(fds, n, &zero, mask);
  if (r != 0) return r;
  loop_wait lw;
  if (!pollfds_scan(&lw, fds, n)) {
    LOOP_SLEEP(r, real_ppoll()(fds, n, tmo, mask));
    return r;
  }
  LOOP_WAIT(&lw, r, real_ppoll()(fds, n, &zero, mask), real_ppoll()(fds, n, tmo, mask),
            pollfds_why(&lw, fds, n));
  return r;
}

/* ---- select ------------------------------------------------------------------------
 *
 * select overwrites its sets: the try works on copies of the first nfds
 * bits, put back before each call. Sets larger than fd_set (nfds >
 * FD_SETSIZE) are passed on untried. */

typedef struct fdsets {
  fd_set r, w, e;
} fdsets;

/* Keeps the sets for the retry; false if one is at a pointer to nowhere
 * (the call's EFAULT). */
static bool sets_save(fdsets *s, int nfds, fd_set *r, fd_set *w, fd_set *e) {
  size_t bytes = ((size_t)nfds + 7) / 8;
  return (!r || ctrace__pl_copy_in(&s->r, r, bytes)) && (!w || ctrace__pl_copy_in(&s->w, w, bytes)) &&
         (!e || ctrace__pl_copy_in(&s->e, e, bytes));
}

/* Puts the sets back; returns 0, for the retry's expression. */
static int sets_restore(const fdsets *s, int nfds, fd_set *r, fd_set *w, fd_set *e) {
  size_t bytes = ((size_t)nfds + 7) / 8;
  if (r) memcpy(r, &s->r, bytes);
  if (w) memcpy(w, &s->w, bytes);
  if (e) memcpy(e, &s->e, bytes);
  return 0;
}

static bool in(const fd_set *s, int fd) { return s && FD_ISSET(fd, s); }

static bool fdsets_scan(loop_wait *lw, int nfds, const fd_set *r, const fd_set *w, const fd_set *e) {
  bool any = false;
  int seen = 0;
  lw->n = lw->nspecial = 0;
  for (int fd = 0; fd < nfds; fd++) {
    if (!in(r, fd) && !in(w, fd) && !in(e, fd)) continue;
    any = true;
    if ((in(r, fd) || in(w, fd)) && seen++ < SCAN_MAX) scan_fd(lw, fd, in(r, fd), in(w, fd));
  }
  return any;
}

static uintptr_t fdsets_why(const loop_wait *lw, int nfds, const fd_set *r, const fd_set *w,
                            const fd_set *e) {
  for (int fd = 0; fd < nfds; fd++)
    if (in(r, fd) || in(w, fd) || in(e, fd)) return why_fn(special_why(lw, fd));
  return (uintptr_t)ctrace_wait_outside;
}

CTRACE__PL_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
  if (ctrace__pl_off()) return real_select()(nfds, r, w, e, tv);
  CTRACE__PL_SYSCALL();
  struct timeval t;
  fdsets saved;
  if ((tv && (!ctrace__pl_copy_in(&t, tv, sizeof t) || (t.tv_sec == 0 && t.tv_usec == 0))) || nfds < 0 ||
      nfds > FD_SETSIZE || !sets_save(&saved, nfds, r, w, e))
    return real_select()(nfds, r, w, e, tv);
  struct timeval zero = {0, 0};
  int n = real_select()(nfds, r, w, e, &zero);
  if (n != 0) return n;
  sets_restore(&saved, nfds, r, w, e);
  loop_wait lw;
  if (!fdsets_scan(&lw, nfds, r, w, e)) {
    LOOP_SLEEP(n, real_select()(nfds, r, w, e, tv));
    return n;
  }
  LOOP_WAIT(&lw, n, (zero = (struct timeval){0, 0}, real_select()(nfds, r, w, e, &zero)),
            (sets_restore(&saved, nfds, r, w, e), real_select()(nfds, r, w, e, tv)),
            fdsets_why(&lw, nfds, r, w, e));
  return n;
}

CTRACE__PL_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
                              const struct timespec *tmo, const sigset_t *mask) {
  if (ctrace__pl_off()) return real_pselect()(nfds, r, w, e, tmo, mask);
  CTRACE__PL_SYSCALL();
  fdsets saved;
  if ((tmo && ctrace__pl_time_zero(tmo)) || nfds < 0 || nfds > FD_SETSIZE ||
      !sets_save(&saved, nfds, r, w, e))
    return real_pselect()(nfds, r, w, e, tmo, mask);
  static const struct timespec zero = {0, 0};
  int n = real_pselect()(nfds, r, w, e, &zero, mask);
  if (n != 0) return n;
  sets_restore(&saved, nfds, r, w, e);
  loop_wait lw;
  if (!fdsets_scan(&lw, nfds, r, w, e)) {
    LOOP_SLEEP(n, real_pselect()(nfds, r, w, e, tmo, mask));
    return n;
  }
  LOOP_WAIT(&lw, n, real_pselect()(nfds, r, w, e, &zero, mask),
            (sets_restore(&saved, nfds, r, w, e), real_pselect()(nfds, r, w, e, tmo, mask)),
            fdsets_why(&lw, nfds, r, w, e));
  return n;
}

/* ---- epoll's interest lists -------------------------------------------------------------
 *
 * What each epoll instance watches is in the kernel; epoll_ctl keeps here,
 * per epoll descriptor, the registrations a wait may link or explain:
 * pipes and FIFOs, eventfds, sockets (linked at the wait when their peer
 * is then known: a connection may be paired after it was added), timerfds
 * and signalfds. Each is classified once, when added (an fstat, and a
 * readlink for an anonymous inode); a change (EPOLL_CTL_MOD) of one kept
 * only updates it, of any other costs nothing: the kernel knows a
 * registration by its open file, so a MOD that succeeds names the same
 * file as the ADD before it. At most EP_MAX per instance: when full, a
 * socket not paired makes room for another kind. A descriptor closed
 * without EPOLL_CTL_DEL leaves its entry until an ADD of the same number
 * replaces it; a wait linked under such an entry's key can only be ended
 * by a writer to that stream, which never comes, or be linked to the wrong
 * writer of a stream since reused, while waiting all the same: never an
 * unblock of a thread that does not wait. An epoll descriptor number made
 * again by epoll_create forgets what the old one watched. Registrations
 * made before the trace starts, or through another process's descriptor,
 * are not seen: their waits end by themselves. */

#define EPOLL_FDS 65536
#define EP_MAX 64

enum { EK_PIPE = 1, EK_EVENTFD, EK_SOCKET, EK_TIMER, EK_SIGNAL };

typedef struct ep_ent {
  int fd;
  uint32_t events;
  uint64_t data;
  uint64_t dev, ino;
  uint8_t kind;
  bool armed; /* not an EPOLLONESHOT one that fired since its ADD or MOD */
} ep_ent;

typedef struct ep_set {
  _Atomic int lock;
  unsigned n;
  ep_ent e[EP_MAX];
} ep_set;

/* One page each, mapped on the first ADD of its number, never unmapped. */
static ep_set *_Atomic ep_sets[EPOLL_FDS];
/* Set once a registration asks for EPOLLONESHOT: from then on a wait's
 * answer disarms what fired. */
static _Atomic int ep_oneshot_seen;

static ep_set *ep_get(int epfd, bool make) {
  if (epfd < 0 || epfd >= EPOLL_FDS) return NULL;
  ep_set *s = atomic_load_explicit(&ep_sets[epfd], memory_order_acquire);
  if (s || !make) return s;
  s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) return NULL;
  ep_set *none = NULL;
  if (!atomic_compare_exchange_strong_explicit(&ep_sets[epfd], &none, s, memory_order_acq_rel,
                                               memory_order_acquire)) {
    munmap(s, sizeof *s);
    s = none;
  }
  return s;
}

static void ep_lock(ep_set *s) {
  for (int spins = 0; atomic_exchange_explicit(&s->lock, 1, memory_order_acquire); spins++)
    if (spins > 100) sched_yield();
}

static void ep_unlock(ep_set *s) { atomic_store_explicit(&s->lock, 0, memory_order_release); }

static ep_ent *ep_find(ep_set *s, int fd) {
  for (unsigned i = 0; i < s->n; i++)
    if (s->e[i].fd == fd) return &s->e[i];
  return NULL;
}

static bool ep_unpaired_socket(const ep_ent *e) {
  return e->kind == EK_SOCKET && !ctrace__pl_socket_peer(e->ino);
}

/* What fd is, for an entry: 0 if nothing worth keeping. */
static int ep_classify(int fd, ep_ent *e) {
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  e->dev = st.st_dev;
  e->ino = st.st_ino;
  switch (st.st_mode & S_IFMT) {
  case S_IFIFO: return EK_PIPE;
  case S_IFSOCK: return EK_SOCKET;
  case 0:
    switch (ctrace__pl_anon_kind(fd)) {
    case CTRACE__PL_ANON_EVENTFD: return EK_EVENTFD;
    case CTRACE__PL_ANON_TIMERFD: return EK_TIMER;
    case CTRACE__PL_ANON_SIGNALFD: return EK_SIGNAL;
    default: return 0;
    }
  default: return 0;
  }
}

static void ep_add(int epfd, int fd, const struct epoll_event *ev) {
  ep_ent n = {.fd = fd, .events = ev->events, .data = ev->data.u64, .armed = true};
  n.kind = (uint8_t)ep_classify(fd, &n);
  ep_set *s = ep_get(epfd, n.kind != 0);
  if (!s) return;
  if (ev->events & EPOLLONESHOT) atomic_store_explicit(&ep_oneshot_seen, 1, memory_order_relaxed);
  ep_lock(s);
  ep_ent *e = ep_find(s, fd); /* a number closed without a DEL, and added again */
  if (!n.kind) {
    if (e) *e = s->e[--s->n];
  } else {
    if (!e && s->n < EP_MAX) e = &s->e[s->n++];
    for (unsigned i = 0; !e && i < s->n && !ep_unpaired_socket(&n); i++)
      if (ep_unpaired_socket(&s->e[i])) e = &s->e[i];
    if (e) *e = n;
  }
  ep_unlock(s);
}

static void ep_change(int epfd, int op, int fd, const struct epoll_event *ev) {
  ep_set *s = ep_get(epfd, false);
  if (!s) return;
  ep_lock(s);
  ep_ent *e = ep_find(s, fd);
  if (e && op == EPOLL_CTL_DEL) {
    *e = s->e[--s->n];
  } else if (e && ev) {
    e->events = ev->events;
    e->data = ev->data.u64;
    e->armed = true;
    if (ev->events & EPOLLONESHOT) atomic_store_explicit(&ep_oneshot_seen, 1, memory_order_relaxed);
  }
  ep_unlock(s);
}

/* A wait's answer: EPOLLONESHOT registrations that fired wait for a MOD. */
static void ep_fired(int epfd, const struct epoll_event *ev, int n) {
  ep_set *s = ep_get(epfd, false);
  if (!s) return;
  ep_lock(s);
  for (int i = 0; i < n; i++)
    for (unsigned j = 0; j < s->n; j++)
      if ((s->e[j].events & EPOLLONESHOT) && s->e[j].data == ev[i].data.u64) s->e[j].armed = false;
  ep_unlock(s);
}

static void ep_scan(loop_wait *lw, int epfd) {
  lw->n = lw->nspecial = 0;
  ep_set *s = ep_get(epfd, false);
  if (!s) return;
  ep_lock(s);
  for (unsigned i = 0; i < s->n && lw->n < LINK_MAX; i++) {
    const ep_ent *e = &s->e[i];
    if (!e->armed) continue;
    bool in = e->events & (EPOLLIN | EPOLLRDNORM);
    /* Output only level-triggered: an edge-triggered registration for
     * both (nginx's, Asio's) asks for output whether or not it waits for
     * room, and a read of the other end ends no wait then. */
    bool out = (e->events & (EPOLLOUT | EPOLLWRNORM)) && !(e->events & EPOLLET);
    uint64_t peer;
    switch (e->kind) {
    case EK_PIPE:
      if (in) add_key(lw, ctrace__pl_key_of(ctrace__pl_inode_id(e->dev, e->ino), true));
      if (out) add_key(lw, ctrace__pl_key_of(ctrace__pl_inode_id(e->dev, e->ino), false));
      break;
    case EK_EVENTFD:
      if (in) add_key(lw, ctrace__pl_key_of(ctrace__pl_eventfd_id(e->fd), true));
      break;
    case EK_SOCKET:
      /* What it reads is its own inode's, what it writes its peer's. */
      if (!(peer = ctrace__pl_socket_peer(e->ino))) break;
      if (in) add_key(lw, ctrace__pl_key_of(ctrace__pl_inode_id(e->dev, e->ino), true));
      if (out) add_key(lw, ctrace__pl_key_of(ctrace__pl_inode_id(e->dev, peer), false));
      break;
    }
  }
  ep_unlock(s);
}

/* The reason of a wait that returned ev[0..]: the first event's. */
static uintptr_t ep_why(int epfd, const struct epoll_event *ev) {
  int why = WHY_OUTSIDE;
  ep_set *s = ep_get(epfd, false);
  if (s) {
    ep_lock(s);
    for (unsigned j = 0; j < s->n; j++)
      if (s->e[j].data == ev[0].data.u64 && s->e[j].kind >= EK_TIMER) {
        why = s->e[j].kind == EK_TIMER ? WHY_TIMER : WHY_SIGNAL;
        break;
      }
    ep_unlock(s);
  }
  return why_fn(why);
}

static void ep_forget(int epfd) {
  ep_set *s = ep_get(epfd, false);
  if (!s) return;
  ep_lock(s);
  s->n = 0;
  ep_unlock(s);
}

/* ---- epoll ---------------------------------------------------------------------------- */

CTRACE__PL_EXPORT int epoll_create(int size) {
  int fd = real_epoll_create()(size);
  if (fd >= 0 && ctrace__pl_guard == 0) ep_forget(fd);
  return fd;
}

CTRACE__PL_EXPORT int epoll_create1(int flags) {
  int fd = real_epoll_create1()(flags);
  if (fd >= 0 && ctrace__pl_guard == 0) ep_forget(fd);
  return fd;
}

/* Keeps the copy only while tracing: a process that does not trace never
 * waits traced. */
CTRACE__PL_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
  int r = real_epoll_ctl()(epfd, op, fd, ev);
  if (r != 0 || ctrace__pl_off()) return r;
  int e = errno;
  if (op == EPOLL_CTL_ADD)
    ep_add(epfd, fd, ev);
  else
    ep_change(epfd, op, fd, ev);
  errno = e;
  return r;
}

/* An answer with events, from a try or a wait. */
CTRACE__PL_INLINE int ep_answer(int epfd, const struct epoll_event *ev, int r) {
  if (r > 0 && ctrace__pl_unlikely(atomic_load_explicit(&ep_oneshot_seen, memory_order_relaxed)))
    ep_fired(epfd, ev, r);
  return r;
}

#define EPOLL_BODY(epfd, ev, try_call, call)                                     \
  CTRACE__PL_SYSCALL();                                                          \
  int r = (try_call);                                                            \
  if (r != 0) return ep_answer(epfd, ev, r);                                     \
  loop_wait lw;                                                                  \
  ep_scan(&lw, epfd);                                                            \
  LOOP_WAIT(&lw, r, ep_answer(epfd, ev, (try_call)), call, ep_why(epfd, ev));    \
  return ep_answer(epfd, ev, r)

CTRACE__PL_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout) {
  if (ctrace__pl_off()) return real_epoll_wait()(epfd, ev, max, timeout);
  if (timeout == 0) {
    CTRACE__PL_SYSCALL();
    return ep_answer(epfd, ev, real_epoll_wait()(epfd, ev, max, 0));
  }
  EPOLL_BODY(epfd, ev, real_epoll_wait()(epfd, ev, max, 0),
             real_epoll_wait()(epfd, ev, max, timeout));
}

CTRACE__PL_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
                                  const sigset_t *mask) {
  if (ctrace__pl_off()) return real_epoll_pwait()(epfd, ev, max, timeout, mask);
  if (timeout == 0) {
    CTRACE__PL_SYSCALL();
    return ep_answer(epfd, ev, real_epoll_pwait()(epfd, ev, max, 0, mask));
  }
  EPOLL_BODY(epfd, ev, real_epoll_pwait()(epfd, ev, max, 0, mask),
             real_epoll_pwait()(epfd, ev, max, timeout, mask));
}

CTRACE__PL_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
                                   const struct timespec *tmo, const sigset_t *mask) {
  if (ctrace__pl_off()) return real_epoll_pwait2()(epfd, ev, max, tmo, mask);
  static const struct timespec zero = {0, 0};
  if (tmo && ctrace__pl_time_zero(tmo)) {
    CTRACE__PL_SYSCALL();
    return ep_answer(epfd, ev, real_epoll_pwait2()(epfd, ev, max, tmo, mask));
  }
  EPOLL_BODY(epfd, ev, real_epoll_pwait2()(epfd, ev, max, &zero, mask),
             real_epoll_pwait2()(epfd, ev, max, tmo, mask));
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
