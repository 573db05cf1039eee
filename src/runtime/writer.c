/* ctrace_start_fd / ctrace_start_file: a background thread that reads the
 * trace as it is produced and writes it out, as Go's runtime/trace.Start(w)
 * does with a goroutine. The thread never emits events, so it is never a
 * G of the trace it writes.
 *
 * The trace's descriptor lives in a descriptor table of the writer's own.
 * The program owns its descriptors: daemons close every one from 3 up,
 * others call close_range or closefrom, or dup2 over a number they think
 * free. A writer that kept writing to a number it opened earlier would
 * write into whatever the program opened there since, and the program's
 * data would be lost. So the writer thread unshares its descriptor table
 * (close_range with CLOSE_RANGE_UNSHARE, or unshare(CLONE_FILES)), closes
 * every copy of the program's descriptors in it (holding them would keep
 * the program's pipes and sockets open past its own close: a reader would
 * never see end of file), and only then opens the file, or keeps the one
 * descriptor ctrace_start_fd was given. Nothing the program does to its
 * table reaches the writer's, and the trace's descriptor is never in the
 * program's table: not seen in /proc/self/fd, not inherited by children.
 *
 * Where unsharing is refused (a seccomp policy), the descriptor is shared:
 * it is at a high number, close-on-exec, and its identity (device
 * and inode) is checked before every write. When it changed (the program
 * closed or replaced it), the writer stops writing, counts what it could
 * not write (ctrace_stats.unwritten) and ctrace_stop returns
 * CTRACE_EFDCHANGED. A change between the check and the write cannot be
 * seen in that mode: only the private table rules it out.
 *
 * A pause (ctrace__pause: the LD_PRELOAD shim's unshare and setns, which
 * want a process of one thread) ends the thread and starts another after
 * it. The descriptor would go with the thread's table: the one that
 * pauses opens the file again through /proc first, and the next writer
 * takes that one over (writer_pause).
 *
 * Where no thread can be started at all (after unshare(CLONE_NEWPID)),
 * the writer is not a thread: the trace waits in memory for the thread
 * that stops it (go_inline). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reader.h"

typedef struct writer {
  ctrace__sink sink; /* first: the tracer holds the writer as its sink */
  pthread_t thread;
  sem_t ready; /* the writer has set up its descriptor (or failed to) */
  sem_t gate;  /* opens once ctrace_start has answered */
  bool abort;
  const char *path; /* ctrace_start_file: the writer opens it; else NULL */
  int fd;           /* the trace's descriptor, in the writer's table */
  bool shared;      /* the table could not be unshared: check identity */
  dev_t dev;
  ino_t ino;
  int err;
  /* Pauses (ctrace__pause): the thread's id, for its table's entry in
   * /proc; whether it is to end for a pause, not at the trace's end; the
   * file's offset as it ended. */
  pid_t tid;
  _Atomic bool pausing;
  off_t offset;
  bool running;  /* a thread to join */
  bool paused;   /* its thread ended for a pause: resume starts one */
  bool reopened; /* fd was reopened for a pause: the writer's own copy */
  bool keep_fd;  /* a resumed writer in a shared table: fd is set up */
  bool inline_;  /* no thread: the one that stops writes (go_inline) */
  int setup_err; /* the last thread's set-up, told with ready */
} writer;

/* The lowest number the trace's descriptor takes: above what programs
 * open in practice, below glibc's and systemd's soft limit of 1024, so
 * no table grows past its default for it. In a shared table that keeps
 * it out of the way of the numbers the program reuses; in the writer's
 * own, it keeps tools that see one table per process (ThreadSanitizer,
 * a reader of strace's output) from taking it for the program's. */
enum { TRACE_FD_MIN = 900 };

static int sys_close_range(unsigned first, unsigned last, unsigned flags) {
  return (int)syscall(SYS_close_range, first, last, flags);
}

/* Closes every descriptor of the calling thread's private table but keep
 * (-1: every one). */
static void close_all_but(int keep) {
  if (keep < 0 ? sys_close_range(0, ~0U, 0) == 0
               : (keep == 0 || sys_close_range(0, (unsigned)keep - 1, 0) == 0) &&
                     sys_close_range((unsigned)keep + 1, ~0U, 0) == 0)
    return;
  /* No close_range (Linux < 5.9): the table's own listing. */
  DIR *d = opendir("/proc/thread-self/fd");
  if (!d) return;
  int self = dirfd(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd != keep && fd != self) close(fd);
  }
  closedir(d);
}

/* Gives the calling thread a descriptor table of its own holding only
 * keep (-1: nothing). False if the kernel or a policy refuses. */
static bool private_table(int keep) {
  /* One call where the kernel has it (5.9+); the copy it makes leaves
   * out the range it closes. */
  unsigned first = keep < 0 ? 0 : (unsigned)keep + 1;
  if (sys_close_range(first, ~0U, CLOSE_RANGE_UNSHARE) != 0 && unshare(CLONE_FILES) != 0) return false;
  close_all_but(keep);
  return true;
}

/* Moves fd to a number at least min, close-on-exec; closes the old one. */
static int move_fd(int fd, int min) {
  int nfd = fcntl(fd, F_DUPFD_CLOEXEC, min);
  if (nfd < 0) return fd;
  close(fd);
  return nfd;
}

/* The writer's descriptor: private where the kernel allows (and
 * may_unshare: the caller is the writer's own thread), at TRACE_FD_MIN or
 * above (never 0, 1 or 2: a stray write to stderr in this thread must not
 * land in the trace). Returns 0 or a negative code (ctrace/error.h): the
 * system's, as open or dup failed. */
static int setup_fd(writer *w, bool may_unshare) {
  struct rlimit rl;
  int min = TRACE_FD_MIN;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur <= (rlim_t)min) min = 3;
  w->shared = !may_unshare || !private_table(w->path ? -1 : w->fd);
  if (w->path) {
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) return -errno;
    if (w->fd < min) w->fd = move_fd(w->fd, min);
  } else if (w->shared) {
    /* The caller owns fd; ours is a duplicate the caller cannot close. */
    int fd = fcntl(w->fd, F_DUPFD_CLOEXEC, min);
    if (fd < 0) return -errno;
    w->fd = fd;
  } else if (w->fd < min) {
    w->fd = move_fd(w->fd, min);
  }
  if (w->shared) {
    struct stat st;
    if (fstat(w->fd, &st) != 0) return -errno;
    w->dev = st.st_dev;
    w->ino = st.st_ino;
  }
  return 0;
}

/* In a shared table: false once the descriptor is no longer the trace's. */
static bool still_ours(const writer *w) {
  struct stat st;
  return !w->shared || (fstat(w->fd, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino);
}

static void write_chunk(writer *w, const char *c, size_t n) {
  if (w->err == 0 && !still_ours(w)) w->err = CTRACE_EFDCHANGED;
  while (n > 0 && w->err == 0) {
    ssize_t k = write(w->fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      w->err = k < 0 ? -errno : CTRACE_EIO;
      break;
    }
    c += k;
    n -= (size_t)k;
  }
  if (n > 0) atomic_fetch_add_explicit(&ctrace__stats.unwritten, n, memory_order_relaxed);
}

static void *writer_main(void *arg) {
  writer *w = arg;
  w->tid = (pid_t)syscall(SYS_gettid);
  /* A write error before a pause stays w->err: this one is the set-up's. */
  int err = w->keep_fd ? 0 : setup_fd(w, true);
  if (err) w->err = err;
  w->setup_err = err;
  sem_post(&w->ready);
  if (err) return NULL;
  while (sem_wait(&w->gate) != 0) {
  }
  if (!w->abort) {
    const void *p;
    size_t n;
    /* Read to the end even after a write error: stop waits for the drain. */
    while ((p = ctrace_read(&n)) != NULL) {
      write_chunk(w, p, n);
      /* Off every write section, in a table of its own: the time to read
       * the process's title again. */
      ctrace__identity_refresh(atomic_load_explicit(&ctrace__state, memory_order_relaxed) >> 1);
    }
  }
  if (atomic_load(&w->pausing)) {
    /* The next writer's descriptor is another open of the file
     * (writer_pause): it goes on from here. */
    w->offset = lseek(w->fd, 0, SEEK_CUR);
    return NULL;
  }
  /* Our copy, never the caller's: in a private table it is the only one
   * there is, in a shared one a duplicate. Not when it stopped being ours. */
  if ((w->path || w->shared || w->reopened) && w->err != CTRACE_EFDCHANGED && close(w->fd) != 0 &&
      !w->err)
    w->err = -errno;
  return NULL;
}

/* The trace's descriptor lives in the writer's own table, which goes with
 * its thread. So the caller first opens the file again through that
 * table's entry in /proc (the file itself, wherever its name now leads:
 * the program may have moved it, or be about to enter another mount
 * namespace), into its own table, for the next writer to take over as
 * ctrace_start_fd's takes the caller's. That is another open file
 * description: the offset goes across by hand. In a shared table the
 * descriptor stays where it is. */
static int writer_pause(ctrace__sink *s) {
  writer *w = (writer *)s;
  if (!w->running) return 0; /* inline, or no reader left: no thread to end */
  int fd = -1;
  if (!w->shared) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/fd/%d", (int)w->tid, w->fd);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
  }
  atomic_store(&w->pausing, true);
  ctrace__reader_pause(true);
  pthread_join(w->thread, NULL);
  w->running = false;
  w->paused = true;
  atomic_store(&w->pausing, false);
  if (!w->shared) {
    if (w->offset > 0) lseek(fd, w->offset, SEEK_SET);
    w->fd = fd;
    w->path = NULL;
    w->reopened = true;
  }
  return 0;
}

static void write_inline(void *arg, const void *p, size_t n) { write_chunk(arg, p, n); }

/* A writer that is not a thread, where no thread can be started: a
 * process that called unshare(CLONE_NEWPID) may create none (it would be
 * in another pid namespace than the process), nor may an image it execs.
 * The descriptor is then in the caller's table, as where a policy refuses
 * the private one (a high number, close-on-exec, its identity checked
 * before each write), events queue in memory (up to max_pending), and the
 * thread that stops the trace writes them out (ctrace__reader_inline).
 * Called with w->fd the caller's (w->path NULL) or w->path to open. */
static int go_inline(writer *w) {
  int err = setup_fd(w, false);
  if (err) return err;
  w->inline_ = true;
  ctrace__reader_inline(write_inline, w);
  return 0;
}

/* A new writer takes the descriptor over, the caller's copy is closed; or,
 * if no thread can be started, the trace is written inline (go_inline).
 * If not even that, no one will read the trace: the reader drops what
 * comes, and the trace ends here, incomplete (stop says so). */
static int writer_resume(ctrace__sink *s) {
  writer *w = (writer *)s;
  if (!w->paused) return 0;
  w->paused = false;
  int caller_fd = w->shared ? -1 : w->fd;
  w->keep_fd = w->shared;
  ctrace__reader_pause(false);
  int err = -pthread_create(&w->thread, NULL, writer_main, w);
  if (!err) {
    w->running = true;
    while (sem_wait(&w->ready) != 0) {
    }
    /* A failed set-up returns before the gate. */
    if ((err = w->setup_err) != 0) {
      pthread_join(w->thread, NULL);
      w->running = false;
    }
    sem_post(&w->gate);
  } else {
    /* In a shared table fd is ready as it is. */
    if (w->shared) {
      w->inline_ = true;
      ctrace__reader_inline(write_inline, w);
      err = 0;
    } else {
      err = go_inline(w);
    }
  }
  if (err) {
    if (!w->err) w->err = err;
    ctrace__reader_abandon();
  }
  if (caller_fd >= 0) close(caller_fd);
  return err;
}

static void writer_free(writer *w) {
  sem_destroy(&w->ready);
  sem_destroy(&w->gate);
  free(w);
}

/* The writer and its memory stay the parent's (the child's copy of the
 * memory is dropped unfreed, as the rest of the parent's trace is). A
 * shared-table descriptor was inherited: closed here, if still ours,
 * so that no child holds the parent's trace open. */
static void writer_fork_child(ctrace__sink *s) {
  writer *w = (writer *)s;
  if (w->shared && still_ours(w)) close(w->fd);
}

static int writer_join(ctrace__sink *s) {
  writer *w = (writer *)s;
  if (w->running) pthread_join(w->thread, NULL);
  /* Written inline: the thread's end, here (writer_main). */
  if (w->inline_ && w->err != CTRACE_EFDCHANGED && still_ours(w) && close(w->fd) != 0 && !w->err)
    w->err = CTRACE_EIO;
  int err = w->err;
  writer_free(w);
  return err;
}

static int start_writer(int fd, const char *path, const ctrace_options *opts) {
  writer *w = calloc(1, sizeof *w);
  if (!w) return CTRACE_ENOMEM;
  w->sink.join = writer_join;
  w->sink.fork_child = writer_fork_child;
  w->sink.pause = writer_pause;
  w->sink.resume = writer_resume;
  w->fd = fd;
  w->path = path;
  sem_init(&w->ready, 0, 0);
  sem_init(&w->gate, 0, 0);
  /* The thread exists before tracing starts, so a started trace always
   * has its reader: itself, or, where none can be started, the stop. */
  if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
    int err = go_inline(w);
    if (!err && (err = ctrace__start(opts, &w->sink)) != 0) {
      ctrace__reader_inline(NULL, NULL);
      close(w->fd);
    }
    if (err) writer_free(w);
    return err;
  }
  w->running = true;
  while (sem_wait(&w->ready) != 0) {
  }
  int err = w->err ? w->err : ctrace__start(opts, &w->sink);
  w->abort = err != 0;
  sem_post(&w->gate);
  if (err) {
    pthread_join(w->thread, NULL);
    writer_free(w);
  }
  return err;
}

int ctrace_start_fd(int fd, const ctrace_options *opts) {
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) return CTRACE_EINVAL;
  return start_writer(fd, NULL, opts);
}

int ctrace_start_file(const char *path, const ctrace_options *opts) {
  if (!path) return CTRACE_EINVAL;
  return start_writer(-1, path, opts);
}

