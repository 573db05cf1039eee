/* waits DIR: the waits for the disk, for file locks and for signals
 * (src/preload/disk.c, sigwait.c), each made to wait by a thread that
 * sees it asleep in its system call (task_state.h: never sooner) and
 * then lets it go 30 ms later, and each also made where it does not wait
 * (a lock free, a signal pending) and with a bad argument. One line per
 * call: its result, errno and what it took; tests/preload/run_check.sh
 * (case waits) compares the lines traced with the untraced ones, and
 * finds in the trace each function's system call, those made to wait
 * lasting 30 ms.
 *
 *   fsync, fdatasync, syncfs of a file written in DIR; fsync(-1)
 *   flock: LOCK_EX on a file another open of it holds; LOCK_EX|LOCK_NB
 *     on it held; LOCK_EX on it free
 *   lockf: F_LOCK on a range a child holds; F_TEST; F_LOCK free
 *   fcntl: F_SETLKW on a range a child holds, F_SETLK on it, F_GETLK;
 *     fcntl64: F_OFD_SETLKW on a range another open of the file holds;
 *     both where free, and with a lock at a bad address (EFAULT)
 *   sigwait, sigwaitinfo: SIGUSR1 / SIGUSR2; sigwait with SIGUSR1 pending
 *   sigtimedwait: 30 ms with nothing sent (EAGAIN); SIGUSR1 pending; a
 *     timeout of nsec = -1 with SIGUSR1 pending (EINVAL, the signal left
 *     pending, then taken)
 *   sigsuspend: SIGRTMIN, to its handler
 *   pause: SIGRTMIN+1, to its handler
 *   sendfile into a full pipe, drained; splice and tee from an empty
 *     pipe, fed; recvmmsg on an empty datagram socket, sent to; sendmmsg
 *     on a full one, emptied (src/preload/transfer.c); each also where
 *     it does not wait, and copy_file_range, which does not; offsets at
 *     a bad address (EFAULT), and writev's vector and sendmsg's header
 *   mq_receive, msgrcv and semop on an empty queue or a semaphore at 0,
 *     given something 30 ms later; mq_send and msgsnd on a full queue,
 *     emptied by one (src/preload/ipc.c); each also where it does not
 *     wait, and with a bad timeout
 *   timeouts and select's sets at a bad address: EFAULT, as untraced
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mqueue.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "task_state.h"

static void ms(int n) { nanosleep(&(struct timespec){0, n * 1000000L}, NULL); }

/* errno by name: 0 where the call left it as it was (0). */
static void say(const char *what, long r, int e) {
  const char *name = e ? strerrorname_np(e) : "0";
  printf("%s r=%ld errno=%s\n", what, r, name ? name : "?");
  fflush(stdout);
}

/* The call with errno 0 before it, then its line. */
#define SAY(what, call)        \
  do {                         \
    errno = 0;                 \
    long r_ = (call);          \
    say(what, r_, errno);      \
  } while (0)

static const char *signame(int sig) {
  const char *s = sig > 0 ? sigabbrev_np(sig) : NULL;
  return s ? s : "none";
}

/* Once thread tid sleeps in system call nr, 30 ms later: let_go(arg). */
typedef struct release {
  pid_t tid;
  long nr;
  void (*let_go)(long);
  long arg;
  pthread_t thread;
} release;

static void *release_main(void *arg) {
  release *r = arg;
  while (!task_asleep_in(r->tid, r->nr)) ms(1);
  ms(30);
  r->let_go(r->arg);
  return NULL;
}

static void release_start(release *r, long nr, void (*let_go)(long), long arg) {
  *r = (release){gettid(), nr, let_go, arg, 0};
  pthread_create(&r->thread, NULL, release_main, r);
}

/* ---- the disk ------------------------------------------------------------- */

static void disk(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/waits.data", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "data\n", 5) != 5) exit(1);
  SAY("fsync", fsync(fd));
  SAY("fdatasync", fdatasync(fd));
  SAY("syncfs", syncfs(fd));
  SAY("fsync(-1)", fsync(-1));
  close(fd);
}

/* ---- flock ----------------------------------------------------------------- */

static int held_fd, child_go;

static void unlock_held(long arg) {
  (void)arg;
  flock(held_fd, LOCK_UN);
}

static void child_let_go(long arg) {
  (void)arg;
  if (write(child_go, "", 1) != 1) exit(1);
}

static int ofd_fd;

static void ofd_unlock(long arg) {
  (void)arg;
  struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_len = 10};
  fcntl64(ofd_fd, F_OFD_SETLK, &l);
}

static void locks(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/waits.lock", dir);
  held_fd = open(path, O_RDWR | O_CREAT, 0644);
  int fd = open(path, O_RDWR);
  if (held_fd < 0 || fd < 0 || flock(held_fd, LOCK_EX) != 0) exit(1);
  SAY("flock(EX|NB) held", flock(fd, LOCK_EX | LOCK_NB));
  release rel;
  release_start(&rel, SYS_flock, unlock_held, 0);
  SAY("flock(EX) held 30 ms", flock(fd, LOCK_EX));
  pthread_join(rel.thread, NULL);
  SAY("flock(UN)", flock(fd, LOCK_UN));
  SAY("flock(EX) free", flock(fd, LOCK_EX));
  close(fd);

  /* lockf: a record lock is a process's; a child holds it until told. */
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) exit(1);
  pid_t child = fork();
  if (child == 0) {
    char c = 1;
    if (lockf(held_fd, F_LOCK, 10) != 0 || write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  child_go = go[1];
  char c;
  if (read(ready[0], &c, 1) != 1) exit(1);
  errno = 0;
  long r = lockf(held_fd, F_TEST, 10);
  say("lockf(F_TEST) held", r, errno);
  release_start(&rel, SYS_fcntl, child_let_go, 0);
  SAY("lockf(F_LOCK) held 30 ms", lockf(held_fd, F_LOCK, 10));
  pthread_join(rel.thread, NULL);
  waitpid(child, NULL, 0);
  SAY("lockf(F_ULOCK)", lockf(held_fd, F_ULOCK, 10));
  SAY("lockf(F_LOCK) free", lockf(held_fd, F_LOCK, 10));
  SAY("lockf(F_ULOCK) again", lockf(held_fd, F_ULOCK, 10));

  /* fcntl's record locks: a child holds bytes 0 to 9 again. */
  child = fork();
  if (child == 0) {
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10};
    if (fcntl(held_fd, F_SETLK, &l) != 0 || write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  if (read(ready[0], &c, 1) != 1) exit(1);
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10};
  SAY("fcntl(F_SETLK) held", fcntl(held_fd, F_SETLK, &l));
  struct flock q = l;
  SAY("fcntl(F_GETLK) held", fcntl(held_fd, F_GETLK, &q));
  say("fcntl(F_GETLK) held: the holder's type", q.l_type, 0);
  release_start(&rel, SYS_fcntl, child_let_go, 0);
  SAY("fcntl(F_SETLKW) held 30 ms", fcntl(held_fd, F_SETLKW, &l));
  pthread_join(rel.thread, NULL);
  waitpid(child, NULL, 0);
  l.l_type = F_UNLCK;
  SAY("fcntl(F_SETLKW) unlock", fcntl(held_fd, F_SETLKW, &l));
  l.l_type = F_RDLCK;
  SAY("fcntl(F_SETLKW) free", fcntl(held_fd, F_SETLKW, &l));
  SAY("fcntl(F_SETLKW) bad lock", fcntl(held_fd, F_SETLKW, (struct flock *)16));
  SAY("fcntl(F_SETLKW) bad fd", fcntl(-1, F_SETLKW, &l));
  SAY("fcntl(F_GETFL)", fcntl(held_fd, F_GETFL) & O_ACCMODE);
  l.l_type = F_UNLCK; /* a process's record locks and OFD locks conflict */
  SAY("fcntl(F_SETLK) unlock", fcntl(held_fd, F_SETLK, &l));

  /* Open file description locks: another open of the file holds them,
   * in this process. */
  int other = open(path, O_RDWR);
  if (other < 0) exit(1);
  struct flock o = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10};
  if (fcntl64(other, F_OFD_SETLK, &o) != 0) exit(1);
  struct flock w = o;
  SAY("fcntl64(F_OFD_SETLK) held", fcntl64(held_fd, F_OFD_SETLK, &w));
  ofd_fd = other;
  release_start(&rel, SYS_fcntl, ofd_unlock, 0);
  SAY("fcntl64(F_OFD_SETLKW) held 30 ms", fcntl64(held_fd, F_OFD_SETLKW, &w));
  pthread_join(rel.thread, NULL);
  SAY("fcntl64(F_OFD_SETLKW) bad lock", fcntl64(held_fd, F_OFD_SETLKW, (struct flock *)16));
  close(other);
  close(held_fd);
}

/* ---- copies between descriptors, and several messages at once ------------ */

static int pipe_fd; /* what the release reads from or writes to */

static void drain_pipe(long arg) { /* a full pipe holds at most 64 KiB */
  (void)arg;
  char buf[1 << 16];
  if (read(pipe_fd, buf, sizeof buf) <= 0) exit(1);
}

static void feed_pipe(long arg) {
  if (write(pipe_fd, "0123456789", (size_t)arg) != arg) exit(1);
}

static void send_one(long arg) {
  if (send((int)arg, "dgram", 5, 0) != 5) exit(1);
}

/* Writes to (or reads from) fd, a blocking pipe or datagram socket,
 * until it would wait. */
static void until_it_waits(int fd, bool writing) {
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  char buf[64] = {0};
  while (writing ? write(fd, buf, sizeof buf) > 0 : read(fd, buf, sizeof buf) > 0) {
  }
  fcntl(fd, F_SETFL, fl);
}

static void *volatile nowhere = (void *)8;

/* A datagram socket's sender waits until its queue is down to a quarter
 * (unix_writable): all of it is read. */
static void recv_all(long arg) { until_it_waits((int)arg, false); }

static void transfers(const char *dir) {
  char path[4096], copy[4096];
  snprintf(path, sizeof path, "%s/waits.src", dir);
  snprintf(copy, sizeof copy, "%s/waits.dst", dir);
  int src = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  int dst = open(copy, O_RDWR | O_CREAT | O_TRUNC, 0644);
  char data[4096];
  memset(data, 'x', sizeof data);
  if (src < 0 || dst < 0 || write(src, data, sizeof data) != (ssize_t)sizeof data) exit(1);
  int p[2], q[2];
  if (pipe(p) != 0 || pipe(q) != 0) exit(1);
  release rel;

  /* sendfile: into a pipe with room; into a full one, drained 30 ms later. */
  off_t off = 0;
  SAY("sendfile room", sendfile(p[1], src, &off, 100));
  printf("  off=%lld\n", (long long)off);
  SAY("sendfile position", sendfile(p[1], src, NULL, 100)); /* from the file's end */
  until_it_waits(p[1], true);
  pipe_fd = p[0];
  release_start(&rel, SYS_sendfile, drain_pipe, 0);
  SAY("sendfile full 30 ms", sendfile(p[1], src, &off, 100));
  pthread_join(rel.thread, NULL);
  until_it_waits(p[0], false);
  SAY("sendfile(-1)", sendfile(p[1], -1, NULL, 100));

  /* splice: from an empty pipe into a file, fed 30 ms later; tee: from
   * an empty pipe into another. */
  pipe_fd = p[1];
  release_start(&rel, SYS_splice, feed_pipe, 10);
  SAY("splice empty 30 ms", splice(p[0], NULL, dst, NULL, 100, 0));
  pthread_join(rel.thread, NULL);
  SAY("splice nonblock empty", splice(p[0], NULL, dst, NULL, 100, SPLICE_F_NONBLOCK));
  SAY("splice file to file", splice(src, NULL, dst, NULL, 100, 0));
  release_start(&rel, SYS_tee, feed_pipe, 7);
  SAY("tee empty 30 ms", tee(p[0], q[1], 100, 0));
  pthread_join(rel.thread, NULL);
  SAY("tee again", tee(p[0], q[1], 100, 0));

  /* copy_file_range: file to file, from an offset; a bad descriptor. */
  off64_t in = 10;
  SAY("copy_file_range", copy_file_range(src, &in, dst, NULL, 50, 0));
  printf("  in=%lld\n", (long long)in);
  SAY("copy_file_range(-1)", copy_file_range(-1, NULL, dst, NULL, 50, 0));
  /* Offsets at a bad address (through a volatile, which the compiler
   * cannot see through): the kernel says EFAULT (the shim reads them for
   * its probe, and must not fault where the call does not). */
  SAY("sendfile bad offset", sendfile(q[1], src, nowhere, 10));
  off_t *heap_off = malloc(sizeof *heap_off); /* not on the stack: read by process_vm_readv */
  *heap_off = 4090;
  SAY("sendfile heap offset", sendfile(q[1], src, heap_off, 10));
  printf("  off=%lld\n", (long long)*heap_off);
  free(heap_off);
  SAY("splice bad offset", splice(src, nowhere, q[1], NULL, 10, 0));
  SAY("copy_file_range bad offset", copy_file_range(src, nowhere, dst, NULL, 10, 0));
  /* The same for writev's vector and sendmsg's header (io.c), which the
   * shim read before the call. */
  SAY("writev bad vector", writev(q[1], nowhere, 2));
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) exit(1);
  SAY("sendmsg bad header", sendmsg(sp[0], nowhere, 0));
  SAY("sendmsg no header", sendmsg(sp[0], NULL, 0));
  close(sp[0]), close(sp[1]);
  close(src);
  close(dst);
  close(p[0]), close(p[1]), close(q[0]), close(q[1]);

  /* recvmmsg on an empty datagram socket (MSG_WAITFORONE: the first
   * message ends it), sent to 30 ms later; sendmmsg on a full one, read
   * from 30 ms later. */
  int s[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, s) != 0) exit(1);
  char b0[16], b1[16];
  struct iovec v[2] = {{b0, sizeof b0}, {b1, sizeof b1}};
  struct mmsghdr m[2] = {{.msg_hdr = {.msg_iov = &v[0], .msg_iovlen = 1}},
                         {.msg_hdr = {.msg_iov = &v[1], .msg_iovlen = 1}}};
  SAY("recvmmsg dontwait empty", recvmmsg(s[0], m, 2, MSG_DONTWAIT, NULL));
  release_start(&rel, SYS_recvmmsg, send_one, s[1]);
  SAY("recvmmsg empty 30 ms", recvmmsg(s[0], m, 2, MSG_WAITFORONE, NULL));
  pthread_join(rel.thread, NULL);
  printf("  len=%u\n", m[0].msg_len);
  struct iovec out = {"mmsg", 4};
  struct mmsghdr sm = {.msg_hdr = {.msg_iov = &out, .msg_iovlen = 1}};
  SAY("sendmmsg room", sendmmsg(s[1], &sm, 1, 0));
  until_it_waits(s[1], true);
  release_start(&rel, SYS_sendmmsg, recv_all, s[0]);
  SAY("sendmmsg full 30 ms", sendmmsg(s[1], &sm, 1, 0));
  pthread_join(rel.thread, NULL);
  until_it_waits(s[0], false);
  SAY("sendmmsg(-1)", sendmmsg(-1, &sm, 1, 0));
  close(s[0]), close(s[1]);
}

/* ---- queues and semaphores between processes (src/preload/ipc.c) --------- */

static mqd_t ipc_mq;
static int ipc_msq, ipc_sem;

static void mq_put(long arg) {
  (void)arg;
  if (mq_send(ipc_mq, "posted", 6, 1) != 0) exit(1);
}

static void mq_take(long arg) {
  char buf[16];
  (void)arg;
  if (mq_receive(ipc_mq, buf, sizeof buf, NULL) < 0) exit(1);
}

struct ipc_msg {
  long type;
  char text[8];
};

static void msg_put(long arg) {
  (void)arg;
  struct ipc_msg m = {1, "posted"};
  if (msgsnd(ipc_msq, &m, sizeof m.text, 0) != 0) exit(1);
}

static void msg_take(long arg) {
  (void)arg;
  struct ipc_msg m;
  if (msgrcv(ipc_msq, &m, sizeof m.text, 0, 0) < 0) exit(1);
}

static void sem_up(long arg) {
  (void)arg;
  struct sembuf op = {0, 1, 0};
  if (semop(ipc_sem, &op, 1) != 0) exit(1);
}

static void ipc(void) {
  release rel;
  char buf[16];
  unsigned prio = 0;
  char name[64];
  snprintf(name, sizeof name, "/ctrace-waits-%d", (int)getpid());
  struct mq_attr attr = {.mq_maxmsg = 2, .mq_msgsize = sizeof buf};
  ipc_mq = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
  if (ipc_mq == (mqd_t)-1) exit(1);
  mq_unlink(name);
  release_start(&rel, SYS_mq_timedreceive, mq_put, 0);
  SAY("mq_receive empty 30 ms", mq_receive(ipc_mq, buf, sizeof buf, &prio));
  pthread_join(rel.thread, NULL);
  printf("  prio=%u\n", prio);
  struct timespec bad = {0, -1}, past = {1, 0};
  SAY("mq_send room", mq_send(ipc_mq, "one", 3, 2));
  SAY("mq_send room", mq_send(ipc_mq, "two", 3, 3));
  SAY("mq_timedsend full, past", mq_timedsend(ipc_mq, "three", 5, 1, &past));
  release_start(&rel, SYS_mq_timedsend, mq_take, 0);
  SAY("mq_send full 30 ms", mq_send(ipc_mq, "three", 5, 1));
  pthread_join(rel.thread, NULL);
  SAY("mq_timedreceive bad timeout", mq_timedreceive(ipc_mq, buf, sizeof buf, &prio, &bad));
  SAY("mq_timedreceive there", mq_timedreceive(ipc_mq, buf, sizeof buf, &prio, &past));
  printf("  prio=%u\n", prio);
  SAY("mq_receive small buffer", mq_receive(ipc_mq, buf, 4, &prio));
  mq_close(ipc_mq);

  ipc_msq = msgget(IPC_PRIVATE, 0600);
  if (ipc_msq < 0) exit(1);
  struct ipc_msg m;
  SAY("msgrcv nowait empty", msgrcv(ipc_msq, &m, sizeof m.text, 0, IPC_NOWAIT));
  release_start(&rel, SYS_msgrcv, msg_put, 0);
  SAY("msgrcv empty 30 ms", msgrcv(ipc_msq, &m, sizeof m.text, 0, 0));
  pthread_join(rel.thread, NULL);
  m.type = 1;
  while (msgsnd(ipc_msq, &m, sizeof m.text, IPC_NOWAIT) == 0) {
  }
  SAY("msgsnd nowait full", msgsnd(ipc_msq, &m, sizeof m.text, IPC_NOWAIT));
  release_start(&rel, SYS_msgsnd, msg_take, 0);
  SAY("msgsnd full 30 ms", msgsnd(ipc_msq, &m, sizeof m.text, 0));
  pthread_join(rel.thread, NULL);
  SAY("msgrcv type 7 nowait", msgrcv(ipc_msq, &m, sizeof m.text, 7, IPC_NOWAIT));
  msgctl(ipc_msq, IPC_RMID, NULL);
  SAY("msgrcv removed", msgrcv(ipc_msq, &m, sizeof m.text, 0, 0));

  ipc_sem = semget(IPC_PRIVATE, 1, 0600);
  if (ipc_sem < 0) exit(1);
  struct sembuf down = {0, -1, 0}, down_nowait = {0, -1, IPC_NOWAIT};
  SAY("semop nowait at 0", semop(ipc_sem, &down_nowait, 1));
  release_start(&rel, SYS_semtimedop, sem_up, 0); /* glibc's semop */
  SAY("semop at 0 30 ms", semop(ipc_sem, &down, 1));
  pthread_join(rel.thread, NULL);
  sem_up(0);
  SAY("semop at 1", semop(ipc_sem, &down, 1));
  struct timespec ten = {0, 10000000};
  SAY("semtimedop at 0, 10 ms", semtimedop(ipc_sem, &down, 1, &ten));
  SAY("semtimedop bad timeout", semtimedop(ipc_sem, &down, 1, &bad));
  SAY("semop no operations", semop(ipc_sem, &down, 0));
  semctl(ipc_sem, 0, IPC_RMID);
}

/* ---- pointers to nowhere (src/preload/user.c) ------------------------------ */

/* Timeouts and select's sets at a bad address: the kernel says EFAULT,
 * where the wrappers, which read them first, must not fault. (glibc's
 * own ppoll, select and pselect read their timeout first, and fault
 * untraced as well: those are left out.) */
static void nowhere_pointers(void) {
  int p[2], ep = epoll_create1(0);
  if (pipe(p) != 0 || ep < 0) exit(1);
  struct timeval tv = {0, 1000};
  struct timespec ts = {0, 1000000};
  struct epoll_event ev;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  SAY("select bad set", select(p[0] + 1, nowhere, NULL, NULL, &tv));
  SAY("pselect bad set", pselect(p[0] + 1, nowhere, NULL, NULL, &ts, NULL));
  SAY("epoll_pwait2 bad timeout", epoll_pwait2(ep, &ev, 1, nowhere, NULL));
  SAY("sigtimedwait bad timeout", sigtimedwait(&set, NULL, nowhere));
  SAY("nanosleep bad time", nanosleep(nowhere, NULL));
  SAY("clock_nanosleep bad time", clock_nanosleep(CLOCK_MONOTONIC, 0, nowhere, NULL));
  close(p[0]), close(p[1]), close(ep);
}

/* ---- signals --------------------------------------------------------------- */

static pthread_t waiter;

static void send_signal(long sig) { pthread_kill(waiter, (int)sig); }

static _Atomic int handled;
static void on_signal(int sig) {
  (void)sig;
  handled++;
}

static void signals(void) {
  sigset_t set, one;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, SIGRTMIN);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  waiter = pthread_self();
  release rel;
  int sig = 0;

  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  release_start(&rel, SYS_rt_sigtimedwait, send_signal, SIGUSR1);
  int r = sigwait(&one, &sig);
  printf("sigwait 30 ms r=%d sig=%s\n", r, signame(sig));
  pthread_join(rel.thread, NULL);
  pthread_kill(waiter, SIGUSR1);
  sig = 0;
  r = sigwait(&one, &sig);
  printf("sigwait pending r=%d sig=%s\n", r, signame(sig));

  sigset_t two;
  sigemptyset(&two);
  sigaddset(&two, SIGUSR2);
  siginfo_t si;
  release_start(&rel, SYS_rt_sigtimedwait, send_signal, SIGUSR2);
  errno = 0;
  r = sigwaitinfo(&two, &si);
  printf("sigwaitinfo 30 ms r=%s si_signo=%s errno=%d\n", signame(r), signame(si.si_signo), errno);
  pthread_join(rel.thread, NULL);

  errno = 0;
  r = sigtimedwait(&one, &si, &(struct timespec){0, 30000000});
  say("sigtimedwait 30 ms nothing", r, errno);
  pthread_kill(waiter, SIGUSR1);
  errno = 0;
  r = sigtimedwait(&one, &si, &(struct timespec){1, 0});
  printf("sigtimedwait pending r=%s errno=%d\n", signame(r), errno);
  pthread_kill(waiter, SIGUSR1);
  SAY("sigtimedwait nsec=-1 pending", sigtimedwait(&one, &si, &(struct timespec){0, -1}));
  r = sigtimedwait(&one, &si, &(struct timespec){0, 0});
  printf("then r=%s\n", signame(r));

  /* sigsuspend: SIGRTMIN stays pending until the mask lets it in. */
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGRTMIN, &sa, NULL);
  sigaction(SIGRTMIN + 1, &sa, NULL);
  sigset_t all_but;
  pthread_sigmask(SIG_BLOCK, NULL, &all_but);
  sigdelset(&all_but, SIGRTMIN);
  release_start(&rel, SYS_rt_sigsuspend, send_signal, SIGRTMIN);
  SAY("sigsuspend 30 ms", sigsuspend(&all_but));
  pthread_join(rel.thread, NULL);

  /* pause: SIGRTMIN+1 is not blocked, and sent once pause sleeps. */
  release_start(&rel, SYS_pause, send_signal, SIGRTMIN + 1);
  SAY("pause 30 ms", pause());
  pthread_join(rel.thread, NULL);
  printf("handled %d\n", (int)handled);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: waits DIR\n");
    return 2;
  }
  disk(argv[1]);
  locks(argv[1]);
  transfers(argv[1]);
  ipc();
  nowhere_pointers();
  signals();
  return 0;
}
