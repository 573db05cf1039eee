/* userns: a program of one thread that enters namespaces, as container
 * tools do (unshare -U, nsenter, bubblewrap).
 *
 *   run_userns [WRITES] [fork|pid|syscall]
 *
 * Writes WRITES (default 20000) bytes to /dev/null one at a time (a system
 * call each, so that the trace holds more than a buffer before and after),
 * then, still the only thread: setns to its own mount namespace (root
 * only: EPERM otherwise) and unshare(CLONE_NEWUSER), which the kernel
 * allows a process of a single thread only (EINVAL otherwise). Then the
 * same writes again, and a thread that waits on a pipe while main calls
 * unshare(CLONE_NEWUSER) once more: EINVAL, the program has two threads.
 * With `fork`, a child does all this and the parent waits for it. With
 * `pid`, the first unshare also makes a new pid namespace, after which
 * the process may start no thread: no second thread, and the writes,
 * traced, go to a writer that is not a thread. With `syscall`, the calls
 * are made through syscall(SYS_setns, ...), as Rust's and others' raw
 * bindings may.
 *
 * Prints each call's result and errno, which must be the same traced and
 * untraced (tests/preload/run_check.sh, case userns). Exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void writes(int fd, long n) {
  for (long i = 0; i < n; i++)
    if (write(fd, "x", 1) != 1) {
      perror("userns: write");
      exit(1);
    }
}

static void report(const char *what, int r) {
  printf("%s: %d %s\n", what, r, r ? strerror(errno) : "ok");
  fflush(stdout);
}

static bool raw; /* through syscall() */

static int do_setns(int fd, int nstype) {
  return raw ? (int)syscall(SYS_setns, fd, nstype) : setns(fd, nstype);
}

static int do_unshare(int flags) { return raw ? (int)syscall(SYS_unshare, flags) : unshare(flags); }

static int pipefd[2];

static void *waiter(void *arg) {
  (void)arg;
  char c;
  return read(pipefd[0], &c, 1) == 1 ? NULL : (void *)1;
}

static void run(long n, bool pid) {
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0) exit(1);
  writes(null, n);
  int mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  report("setns mnt", do_setns(mnt, CLONE_NEWNS));
  if (pid) {
    report("unshare user+pid", do_unshare(CLONE_NEWUSER | CLONE_NEWPID));
    writes(null, n);
    report("unshare user again", do_unshare(CLONE_NEWUSER));
    writes(null, n);
    close(mnt);
    close(null);
    return;
  }
  report("unshare user", do_unshare(CLONE_NEWUSER));
  writes(null, n);
  if (pipe(pipefd) != 0) exit(1);
  pthread_t th;
  if (pthread_create(&th, NULL, waiter, NULL) != 0) exit(1);
  report("unshare user, two threads", do_unshare(CLONE_NEWUSER));
  if (write(pipefd[1], "x", 1) != 1) exit(1);
  void *ret;
  pthread_join(th, &ret);
  printf("waiter: %s\n", ret ? "failed" : "ok");
  close(mnt);
  close(null);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  const char *mode = argc > 2 ? argv[2] : "";
  if (strcmp(mode, "fork") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      run(n, false);
      exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    printf("child: ok\n");
    return 0;
  }
  raw = strcmp(mode, "syscall") == 0;
  run(n, strcmp(mode, "pid") == 0);
  return 0;
}
