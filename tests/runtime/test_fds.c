/* test_fds.c - the trace's descriptor is never the program's to take.
 *
 *   test_fds DIR [shared]
 *
 * Library mode (ctrace_start_file, ctrace_start_fd) while the program does
 * to its descriptors what daemons do. Each case: the program's own file
 * holds exactly its own lines, and the trace parses (libctrace-parse) with
 * every event the program emitted after the descriptors were taken.
 *   file_close_range   start_file; close_range(3, ~0U); open own file
 *   fd_dup2_over       start_fd(fd); the caller dup2s its own file onto fd
 *                      (the caller owns fd) and closes the rest
 *   fork_no_fd         a child forked while tracing holds no trace descriptor
 *   shared_fallback    (test_fds DIR shared) unsharing refused by a seccomp
 *                      filter: the descriptor is shared; dup2 over every
 *                      number makes the writer stop, ctrace_stop returns
 *                      CTRACE_EFDCHANGED and stats count what was unwritten;
 *                      the program's file holds none of the trace
 */
#include <ctrace/ctrace.h>
#include <ctrace/parse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

enum { LINES = 100, EMITS = 50 };
static const char *dir;

static char *path_of(const char *name) {
  static char buf[4][4096];
  static int i;
  char *p = buf[i++ % 4];
  snprintf(p, sizeof buf[0], "%s/%s", dir, name);
  return p;
}

/* The program's work after the descriptors were taken: its own lines, and
 * logs the trace must hold. */
static void work(int fd, const char *tag) {
  for (int i = 0; i < LINES; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "%s line %d\n", tag, i);
    assert_int_equal(write(fd, line, (size_t)n), n);
    if (i < EMITS) ctrace_log(0, "after", tag);
  }
}

static void expect_lines(const char *path, const char *tag) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[128], want[64];
  int i = 0;
  while (fgets(line, sizeof line, f)) {
    snprintf(want, sizeof want, "%s line %d\n", tag, i++);
    assert_string_equal(line, want);
  }
  fclose(f);
  assert_int_equal(i, LINES);
}

/* The trace parses, and holds the EMITS logs made after the descriptors
 * were taken. */
static void expect_trace(const char *path) {
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open(path, &r, &err) != 0 || ctrace_reader_check(r, &info, &err) != 0)
    fail_msg("%s: %s at offset %llu", path, err.message, (unsigned long long)err.offset);
  ctrace_event ev;
  int logs = 0;
  /* In either format; not the process's own log (ctrace.process), which
   * Go's current format holds in every generation. */
  while (ctrace_reader_next(r, &ev) > 0)
    if (ev.type == (ev.format ? CTRACE_EV122_UserLog : CTRACE_EV_UserLog) &&
        !(ev.sargs[0] && strcmp(ev.sargs[0], "ctrace.process") == 0))
      logs++;
  ctrace_reader_close(r);
  assert_int_equal(logs, EMITS);
}

static int open_data(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  return fd;
}

static void file_close_range(void **state) {
  (void)state;
  assert_int_equal(ctrace_start_file(path_of("close_range.trace"), NULL), 0);
  assert_int_equal(syscall(SYS_close_range, 3, ~0U, 0), 0);
  int fd = open_data(path_of("close_range.data"));
  work(fd, "close_range");
  assert_int_equal(ctrace_stop(), 0);
  close(fd);
  expect_lines(path_of("close_range.data"), "close_range");
  expect_trace(path_of("close_range.trace"));
}

static void fd_dup2_over(void **state) {
  (void)state;
  int tfd = open(path_of("dup2.trace"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(tfd >= 0);
  assert_int_equal(ctrace_start_fd(tfd, NULL), 0);
  /* The caller owns tfd: it may close it, or reuse its number. */
  int fd = open_data(path_of("dup2.data"));
  assert_int_equal(dup2(fd, tfd), tfd);
  close(fd);
  work(tfd, "dup2");
  assert_int_equal(ctrace_stop(), 0);
  close(tfd);
  expect_lines(path_of("dup2.data"), "dup2");
  expect_trace(path_of("dup2.trace"));
}

/* Descriptors of this process that are open on path. */
static int open_on(const char *path) {
  char real[4096], link[300], target[4096];
  assert_non_null(realpath(path, real));
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) continue;
    target[k] = 0;
    n += strcmp(target, real) == 0;
  }
  if (d) closedir(d);
  return n;
}

static void fork_no_fd(void **state) {
  (void)state;
  const char *trace = path_of("fork.trace");
  assert_int_equal(ctrace_start_file(trace, NULL), 0);
  assert_int_equal(open_on(trace), 0);
  pid_t c = fork();
  if (c == 0) _exit(open_on(trace));
  int st;
  assert_int_equal(waitpid(c, &st, 0), c);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(ctrace_stop(), 0);
}

/* Makes close_range and unshare fail with EPERM for this thread and the
 * threads it starts, as a container's policy might. */
static int refuse_unshare(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Run as its own process (`test_fds DIR shared`), the filter installed
 * before anything else: the process never had a private table to lose. */
static void shared_fallback(void **state) {
  (void)state;
  assert_int_equal(syscall(SYS_close_range, 1000000, 1000000, 0), -1);
  assert_int_equal(errno, EPERM);
  const char *trace = path_of("shared.trace"), *data = path_of("shared.data");
  assert_int_equal(ctrace_start_file(trace, NULL), 0);
  ctrace_log(0, "before", "x");
  /* In the shared table: one close-on-exec descriptor at a high number. */
  assert_int_equal(open_on(trace), 1);
  int fd = open_data(data);
  for (int n = 3; n < 1024; n++)
    if (n != fd) dup2(fd, n);
  for (int i = 0; i < LINES; i++) {
    char line[64];
    int k = snprintf(line, sizeof line, "shared line %d\n", i);
    assert_int_equal(write(fd, line, (size_t)k), k);
    /* Enough to fill buffers the writer must then refuse to write. */
    for (int j = 0; j < 1000; j++) ctrace_log(0, "after", "a message long enough to fill buffers");
  }
  ctrace_stats st;
  assert_int_equal(ctrace_stop(), CTRACE_EFDCHANGED);
  ctrace_stats_get(&st);
  assert_true(st.unwritten > 0);
  for (int n = 3; n < 1024; n++) close(n);
  expect_lines(data, "shared");
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "shared") != 0)) {
    fprintf(stderr, "usage: test_fds DIR [shared]\n");
    return 2;
  }
  dir = argv[1];
  if (argc == 3) {
    if (refuse_unshare() != 0) {
      perror("test_fds: seccomp");
      return 1;
    }
    const struct CMUnitTest shared[] = {cmocka_unit_test(shared_fallback)};
    return cmocka_run_group_tests(shared, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(file_close_range),
      cmocka_unit_test(fd_dup2_over),
      cmocka_unit_test(fork_no_fd),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
