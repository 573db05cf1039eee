/* Shared by the system-call wrappers (io.c, poll.c, process.c): how a call
 * is recorded, and how the shim tells whether it will really wait.
 *
 * Every wrapped call records GoSysCall with the program's stack. A call
 * that will wait records, before the real call, either GoBlockNet (a wait
 * on a socket, as Go's network poller shows it) or GoSysBlock (any other
 * wait: the P is free meanwhile), and after it GoSysExit (for GoSysBlock)
 * and the thread's start again (ctrace_thread_resume).
 *
 * "Will wait" is decided by trying first, without waiting, wherever the
 * kernel can: preadv2/pwritev2 with RWF_NOWAIT for the read and write
 * families (pipes, sockets, FIFOs, eventfds, and regular files whose data
 * is in the page cache), MSG_DONTWAIT for the socket calls, a zero timeout
 * for poll, select and epoll, WNOHANG for the wait family. When the try
 * answers as the real call would, its answer is the call's: the common,
 * non-waiting case costs no extra system call. It does not when
 * - it would wait (EAGAIN on a descriptor that is not O_NONBLOCK): the
 *   real call is made, shown as a wait;
 * - it is short on a file (ctrace__pl_short_is_answer): the real call
 *   reads or writes the rest, and the counts add up, as one blocking call
 *   that went to the disk would; a file's EAGAIN is never the answer;
 * - the kernel cannot try (EOPNOTSUPP: ttys, writes to most local file
 *   systems): reads ask poll(fd, 0) instead, and writes are taken not to
 *   wait;
 * - a socket of the process may have a receive low-water mark
 *   (SO_RCVLOWAT), below which the try answers and the real call waits:
 *   reads are probed instead (io.c).
 * docs/run.md, "Calls tried without waiting", says why none of this can
 * change what the program sees.
 */
#ifndef CTRACE_PRELOAD_IO_H
#define CTRACE_PRELOAD_IO_H

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include "preload.h"
#include "wake.h"

enum { CTRACE__PL_WAIT_NONE = 0, CTRACE__PL_WAIT_SYS, CTRACE__PL_WAIT_NET };

/* The real poll, for probes (our own poll would record the probe). */
int ctrace__pl_real_poll(struct pollfd *fds, nfds_t n, int timeout) CTRACE__PL_HIDDEN;

static inline bool ctrace__pl_is_socket(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

static inline bool ctrace__pl_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK);
}

/* How a call on fd that is known to wait waits: on a socket, a pipe or a
 * FIFO, as Go's network poller shows a goroutine waiting on either
 * (GoBlockNet); on anything else in a blocked system call. */
static inline int ctrace__pl_kind_of(const struct stat *st) {
  return S_ISSOCK(st->st_mode) || S_ISFIFO(st->st_mode) ? CTRACE__PL_WAIT_NET : CTRACE__PL_WAIT_SYS;
}

static inline int ctrace__pl_wait_kind(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? ctrace__pl_kind_of(&st) : CTRACE__PL_WAIT_SYS;
}

/* The inode of the other end of a socket (io.c): of a socketpair, or of a
 * TCP connection both of whose ends are the process's; 0 if not known. */
uint64_t ctrace__pl_socket_peer(uint64_t ino) CTRACE__PL_HIDDEN;
/* What an anonymous inode (st_mode without a type: eventfd, timerfd,
 * signalfd, epoll...) is (io.c; it reads /proc: for a call about to wait,
 * or an epoll_ctl). */
enum { CTRACE__PL_ANON_OTHER, CTRACE__PL_ANON_EVENTFD, CTRACE__PL_ANON_TIMERFD,
       CTRACE__PL_ANON_SIGNALFD };
int ctrace__pl_anon_kind(int fd) CTRACE__PL_HIDDEN;
static inline bool ctrace__pl_is_eventfd(int fd) {
  return ctrace__pl_anon_kind(fd) == CTRACE__PL_ANON_EVENTFD;
}

/* The key of the stream id (below), for its readers or its writers. */
static inline const void *ctrace__pl_key_of(uint64_t id, bool readers) {
  return (const void *)(uintptr_t)(1ull << 63 | (id << 1 & ~(1ull << 63)) | (readers ? 1 : 0));
}

/* The ids of a pipe or FIFO, of what a socket reads, of an eventfd. */
static inline uint64_t ctrace__pl_inode_id(uint64_t dev, uint64_t ino) { return dev << 40 ^ ino; }
static inline uint64_t ctrace__pl_eventfd_id(int fd) { return 1ull << 61 | (uint32_t)fd; }

/* The waits of a stream's readers and writers are linked to the thread
 * that ends them (wake.c) by the stream's identity, in a key no object's
 * address can be (the top bit set), with the waiters' direction in the low
 * bit: readers wait for a writer, writers for a reader. A stream is what a
 * call on fd reads (reading) or writes:
 * - a pipe or FIFO: itself, by device and inode, whichever end;
 * - an eventfd: its descriptor number, as every eventfd (every anonymous
 *   inode) shares one inode; of those, only an eventfd is both read and
 *   written, so only its writes wake;
 * - a socket whose peer the shim knows (ctrace__pl_socket_peer: made with
 *   socketpair, or connected within the process): what it reads is its
 *   own inode's, what it writes its peer's;
 * NULL for any other descriptor: a socket's peer is not known. */
static inline const void *ctrace__pl_stream_key(int fd, const struct stat *st, bool reading,
                                                bool readers) {
  uint64_t id;
  switch (st->st_mode & S_IFMT) {
  case S_IFIFO:
    id = ctrace__pl_inode_id(st->st_dev, st->st_ino);
    break;
  case S_IFSOCK: {
    /* Only a socket whose peer is known: others' waits stay out of the
     * table, and out of the count that makes every write look. */
    uint64_t peer = ctrace__pl_socket_peer(st->st_ino);
    if (!peer) return NULL;
    id = ctrace__pl_inode_id(st->st_dev, reading ? (uint64_t)st->st_ino : peer);
    break;
  }
  case 0:
    id = ctrace__pl_eventfd_id(fd);
    break;
  default:
    return NULL;
  }
  return ctrace__pl_key_of(id, readers);
}

/* The stream key of a call's descriptor, looked up by its first wake and
 * kept for its second (CTRACE__PL_WAKE_STREAM): not yet looked up. */
#define CTRACE__PL_STREAM_UNKNOWN ((const void *)1)

/* A wait of a read or write: how it shows, and its key if a stream's. */
typedef struct ctrace__pl_io_wait {
  int kind;
  const void *key;
  ctrace__pl_waiter w;
} ctrace__pl_io_wait;

/* For a call on fd the try said will wait. A stream's wait shows as one
 * on the network (GoBlockNet), an eventfd's too: it is a block, which
 * another thread's GoUnblock can end, where a system call's is not. */
static inline void ctrace__pl_io_wait_known(ctrace__pl_io_wait *iw, int fd, bool reading) {
  struct stat st;
  iw->kind = CTRACE__PL_WAIT_SYS;
  iw->key = NULL;
  if (fstat(fd, &st) != 0) return;
  iw->kind = ctrace__pl_kind_of(&st);
  iw->key = ctrace__pl_stream_key(fd, &st, reading, reading);
  if (iw->key && (st.st_mode & S_IFMT) == 0) {
    if (ctrace__pl_is_eventfd(fd))
      iw->kind = CTRACE__PL_WAIT_NET;
    else
      iw->key = NULL;
  }
}

/* Before a read (reading) or write on fd: the thread ends the wait of one
 * thread blocked on the other side of the stream. Before, as for an unlock:
 * the kernel wakes that thread during the call, which could then return
 * before a claim made after it. A writer blocked means the stream is full,
 * so a read finds data and makes room; a reader blocked means it is
 * empty, so a write goes in. Then it reads the streams' sequence number
 * (pl_sb_), just before the call. And after a read or write that moved
 * data (CTRACE__PL_WAKE_STREAM_AFTER): a waiter that came between the
 * check before and the call itself (it tried just before the call, linked
 * itself, tried again just before the call) was ended by the call, and
 * the claim after it usually comes before that waiter, woken by the
 * kernel, gets a CPU; only a waiter linked before the call (its ticket
 * below pl_sb_, wake.h): one that took the data and waits again is not
 * this call's. The key is looked up (an fstat) once per call, and only
 * when a thread waits on the other side. */
#define CTRACE__PL_STREAM_KEY(fd, reading)                                                   \
  do {                                                                                       \
    if (pl_sk_ == CTRACE__PL_STREAM_UNKNOWN) {                                               \
      int pl_pe_ = errno;                                                                    \
      struct stat pl_st_;                                                                    \
      pl_sk_ = fstat((fd), &pl_st_) == 0                                                     \
                   ? ctrace__pl_stream_key((fd), &pl_st_, (reading), !(reading))             \
                   : NULL;                                                                   \
      errno = pl_pe_;                                                                        \
    }                                                                                        \
  } while (0)

#define CTRACE__PL_WAKE_STREAM(fd, reading)                                                  \
  do {                                                                                       \
    if (!ctrace__pl_likely(atomic_load_explicit(&ctrace__pl_streams.waiters[!(reading)],     \
                                                memory_order_relaxed) == 0)) {               \
      CTRACE__PL_STREAM_KEY(fd, reading);                                                    \
      if (pl_sk_) CTRACE__PL_WAKE(pl_sk_, 1);                                                \
    }                                                                                        \
    CTRACE__PL_STREAM_SEQ();                                                                 \
  } while (0)

/* The sequence number again, just before a call made after the try (the
 * real call where the kernel cannot try, as for an eventfd's write): a
 * wait linked meanwhile, before the call, is the call's to end. */
#define CTRACE__PL_STREAM_SEQ() \
  (pl_sb_ = atomic_load_explicit(&ctrace__pl_streams.seq, memory_order_seq_cst))

#define CTRACE__PL_WAKE_STREAM_AFTER(fd, reading)                                            \
  do {                                                                                       \
    if (ctrace__pl_likely(atomic_load_explicit(&ctrace__pl_streams.waiters[!(reading)],      \
                                               memory_order_relaxed) == 0))                  \
      break;                                                                                 \
    CTRACE__PL_STREAM_KEY(fd, reading);                                                      \
    if (pl_sk_) CTRACE__PL_WAKE_BEFORE(pl_sk_, 1, pl_sb_);                                   \
  } while (0)

/* Would a call on fd wait for events (POLLIN/POLLOUT)? For descriptors the
 * kernel cannot try. An error or hang-up does not wait. */
static inline int ctrace__pl_probe(int fd, short events) {
  struct pollfd p = {fd, events, 0};
  if (ctrace__pl_real_poll(&p, 1, 0) != 0) return CTRACE__PL_WAIT_NONE;
  if (ctrace__pl_nonblocking(fd)) return CTRACE__PL_WAIT_NONE;
  return ctrace__pl_wait_kind(fd);
}

/* What a try without waiting tells about the real call. */
enum { CTRACE__PL_TRY_DONE, CTRACE__PL_TRY_WAITS, CTRACE__PL_TRY_CANNOT };

/* A try's short answer (fewer bytes than asked for, or EAGAIN on an
 * O_NONBLOCK descriptor) is the real call's answer on a stream: a pipe,
 * FIFO, socket, eventfd or other device returns what it has. Not on a
 * file (a regular file, a block device, or a memory device such as
 * /dev/zero and /dev/urandom): untraced, those answer short only at the
 * end of the file and never say EAGAIN, but under RWF_NOWAIT they stop
 * where the page cache ends, or at a reschedule (io.c). fl: fd's status
 * flags. Keeps errno. */
bool ctrace__pl_short_is_answer(int fd, int fl) CTRACE__PL_HIDDEN;

/* r and errno: the try's result. DONE: r is the call's answer (data, or
 * an error the real call would give too; EAGAIN on an O_NONBLOCK stream
 * is one). WAITS: the real call would wait (for a file: for its disk).
 * CANNOT: the kernel cannot try this descriptor this way (or a filter
 * forbids the call); make the real call. A short count is left to the
 * caller (io.c). errno is left as the program's call would leave it: the
 * try's error when that is the answer, else saved, the value before the
 * try (a call that succeeds leaves errno alone, and programs that set
 * errno to 0 before a call and read it after rely on that). */
static inline int ctrace__pl_tried(ssize_t r, int fd, int saved) {
  if (r >= 0) {
    errno = saved;
    return CTRACE__PL_TRY_DONE;
  }
  int e = errno;
  if (e == EAGAIN || e == EWOULDBLOCK) {
    int fl = fcntl(fd, F_GETFL);
    bool answer = fl >= 0 && (fl & O_NONBLOCK) && ctrace__pl_short_is_answer(fd, fl);
    errno = answer ? e : saved;
    return answer ? CTRACE__PL_TRY_DONE : CTRACE__PL_TRY_WAITS;
  }
  if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS || e == EPERM) {
    errno = saved;
    return CTRACE__PL_TRY_CANNOT;
  }
  return CTRACE__PL_TRY_DONE;
}

/* Records GoSysCall. Declares pl_errno0_, errno as the program left it
 * before the call, for ctrace__pl_tried; the event leaves errno as it was.
 * Always inline: the stack of the events must begin at the wrapper. */
#define CTRACE__PL_SYSCALL() \
  int pl_errno0_ __attribute__((unused)) = errno; \
  const void *pl_sk_ __attribute__((unused)) = CTRACE__PL_STREAM_UNKNOWN; \
  uint64_t pl_sb_ __attribute__((unused)) = 0; \
  CTRACE__PL_CALL_KEEP_ERRNO(ctrace_go_syscall())

/* Both keep errno (CTRACE__PL_CALL_KEEP_ERRNO). */
CTRACE__PL_INLINE void ctrace__pl_wait_begin(int kind) {
  if (kind == CTRACE__PL_WAIT_NET)
    CTRACE__PL_BLOCK(CTRACE_BLOCK_NET);
  else if (kind == CTRACE__PL_WAIT_SYS)
    CTRACE__PL_CALL_KEEP_ERRNO(ctrace_go_sysblock());
}

CTRACE__PL_INLINE void ctrace__pl_wait_end(int kind) {
  if (kind == CTRACE__PL_WAIT_NONE) return;
  if (kind == CTRACE__PL_WAIT_SYS) CTRACE__PL_CALL_KEEP_ERRNO(ctrace_go_sysexit());
  CTRACE__PL_RESUME();
}

/* A stream's wait is linked in two steps (wake.c): prepare links the waiter
 * before the call is tried once more (io.c), then the retry's answer
 * (ctrace__pl_io_withdraw: no wait) or the block and the commit
 * (ctrace__pl_io_wait_begin). The guard is held from prepare to either,
 * so that a handler of a signal on this thread (a self-pipe's write) does
 * not wake, and so wait for this thread's own commit. */
CTRACE__PL_INLINE void ctrace__pl_io_prepare(ctrace__pl_io_wait *iw) {
  CTRACE__PL_CALL(iw->w.g = ctrace_thread_g()); /* before the block */
  ctrace__pl_guard++;
  ctrace__pl_wait_prepare(&iw->w, iw->key);
}

CTRACE__PL_INLINE void ctrace__pl_io_withdraw(ctrace__pl_io_wait *iw) {
  ctrace__pl_wait_leave(&iw->w);
  ctrace__pl_unguard();
}

/* Around the real call, a stream's waiter prepared. Both keep errno. */
CTRACE__PL_INLINE void ctrace__pl_io_wait_begin(ctrace__pl_io_wait *iw) {
  ctrace__pl_wait_begin(iw->kind);
  if (!iw->key) return;
  ctrace__pl_wait_commit(&iw->w);
  ctrace__pl_unguard();
}

CTRACE__PL_INLINE void ctrace__pl_io_wait_end(ctrace__pl_io_wait *iw) {
  if (iw->key) {
    int e = errno;
    ctrace__pl_wait_leave(&iw->w);
    errno = e;
  }
  ctrace__pl_wait_end(iw->kind);
}

/* r = call, shown as a wait of kind (CTRACE__PL_WAIT_*; NONE: as no
 * wait): for calls with no stream to link. */
#define CTRACE__PL_WAIT_AS(kind, r, call)                \
  do {                                                   \
    int pl_kind_ = (kind);                               \
    ctrace__pl_wait_begin(pl_kind_);                     \
    r = (call);                                          \
    ctrace__pl_wait_end(pl_kind_);                       \
  } while (0)

/* r = call, shown as a wait in a system call (GoSysBlock, GoSysExit):
 * for calls with no stream to link and no try (or after one). */
#define CTRACE__PL_SYS_WAIT(r, call) CTRACE__PL_WAIT_AS(CTRACE__PL_WAIT_SYS, r, call)

/* The wrapper of name (its real_##name from CTRACE__PL_REAL), every call
 * of which is shown as a wait in a system call: calls no try can tell in
 * advance (a flush to the disk, a wait for a signal's handler). */
#define CTRACE__PL_WAITING_CALL(ret, name, params, args) \
  CTRACE__PL_EXPORT ret name params {                    \
    if (ctrace__pl_off()) return real_##name() args;     \
    CTRACE__PL_SYSCALL();                                \
    ret r;                                               \
    CTRACE__PL_SYS_WAIT(r, real_##name() args);          \
    return r;                                            \
  }

/* r = call, a read or write that may wait, as one wait. Its claim after
 * (CTRACE__PL_WAKE_STREAM_AFTER) takes waits linked before the call, and
 * for a call that waited, until it returned: such a call moved its data
 * while it waited, and the other side may have waited again meanwhile,
 * for what came next. */
#define CTRACE__PL_IO_WAIT(iw, r, call)                          \
  do {                                                           \
    ctrace__pl_io_wait_begin(iw);                                \
    CTRACE__PL_STREAM_SEQ();                                     \
    pthread_cleanup_push(ctrace__pl_wait_cancelled, (iw)->key ? &(iw)->w : NULL); \
    r = (call);                                                  \
    pthread_cleanup_pop(0);                                      \
    if ((iw)->kind != CTRACE__PL_WAIT_NONE) CTRACE__PL_STREAM_SEQ(); \
    ctrace__pl_io_wait_end(iw);                                  \
  } while (0)

#endif
