/* state: prints what the process can see of its own state, for a run
 * under `ctrace run` to be compared with one without, line for line:
 *   - errno after each wrapped call, made both to succeed (errno set to a
 *     sentinel first: a call that succeeds leaves errno alone, and so must
 *     its wrapper, even when its non-waiting try failed first) and to fail
 *     (the wrapper must leave the real call's errno);
 *   - the umask, the working directory, the signal mask and every signal's
 *     disposition (as sigaction reports it), the environment, the
 *     descriptors open from 3 up;
 *   - RLIMIT_NOFILE, and how many files it lets the program open (the
 *     tracer must not take one of the program's numbers).
 * Output is sorted where the order is the system's (environment). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SENTINEL 4242

/* Sets errno to the sentinel, evaluates expr, prints what it returned
 * (or only whether it was nonzero, for pointers) and errno. */
#define SHOW(name, expr)                                                  \
  do {                                                                    \
    errno = SENTINEL;                                                     \
    long r_ = (long)(expr);                                               \
    int e_ = errno;                                                       \
    printf("%-28s ret=%ld errno=%d\n", name, r_, e_);                     \
  } while (0)
#define SHOW_PTR(name, expr) SHOW(name, (expr) != NULL)

static int pipe_r, pipe_w, sock_a, sock_b;
static sem_t sem;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void pause_ms(int ms) {
  struct timespec d = {0, ms * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
}

/* Later, from another thread: makes the main thread's waits end. */
static void *feeder(void *arg) {
  (void)arg;
  pause_ms(30);
  if (write(pipe_w, "x", 1) != 1) abort();
  pause_ms(30);
  if (send(sock_b, "y", 1, 0) != 1) abort();
  pause_ms(30);
  sem_post(&sem);
  return NULL;
}

static void *holder(void *arg) {
  pthread_mutex_lock(&mu);
  sem_post(arg);
  pause_ms(30);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void calls(void) {
  char buf[64];
  int p[2], sv[2];
  if (pipe(p) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) abort();
  pipe_r = p[0], pipe_w = p[1], sock_a = sv[0], sock_b = sv[1];
  sem_init(&sem, 0, 0);

  /* Waits that end in another thread: the wrapper's try fails first. */
  pthread_t th;
  pthread_create(&th, NULL, feeder, NULL);
  SHOW("read (waits)", read(pipe_r, buf, 1));
  SHOW("recv (waits)", recv(sock_a, buf, 1, 0));
  SHOW("sem_wait (waits)", sem_wait(&sem));
  SHOW("pthread_join", pthread_join(th, NULL));
  sem_t held;
  sem_init(&held, 0, 0);
  pthread_create(&th, NULL, holder, &held);
  sem_wait(&held);
  SHOW("pthread_mutex_lock (waits)", pthread_mutex_lock(&mu));
  pthread_mutex_unlock(&mu);
  pthread_join(th, NULL);

  /* Calls that do not wait. */
  SHOW("write", write(pipe_w, "abcd", 4));
  SHOW("read", read(pipe_r, buf, 2));
  struct iovec iov = {buf, 2};
  SHOW("readv", readv(pipe_r, &iov, 1));
  SHOW("writev", writev(pipe_w, &iov, 1));
  SHOW("send", send(sock_a, "ab", 2, 0));
  SHOW("recv", recv(sock_b, buf, 2, 0));
  SHOW("sendto", sendto(sock_a, "ab", 2, 0, NULL, 0));
  SHOW("recvfrom", recvfrom(sock_b, buf, 2, 0, NULL, NULL));
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  SHOW("sendmsg", sendmsg(sock_a, &mh, 0));
  SHOW("recvmsg", recvmsg(sock_b, &mh, 0));
  char path[] = "/tmp/ctrace-state-XXXXXX";
  int fd = mkstemp(path);
  unlink(path);
  SHOW("pwrite", pwrite(fd, "abcdef", 6, 0));
  SHOW("pread", pread(fd, buf, 6, 0));
  SHOW("pwritev", pwritev(fd, &iov, 1, 2));
  SHOW("preadv", preadv(fd, &iov, 1, 2));
  SHOW("read (file end)", read(fd, buf, 8));
  close(fd);
  struct pollfd pfd = {pipe_r, POLLIN, 0};
  SHOW("poll (ready)", poll(&pfd, 1, 1000));
  SHOW("read", read(pipe_r, buf, 8));
  SHOW("poll (times out)", poll(&pfd, 1, 20));
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(pipe_r, &rs);
  struct timeval tv = {0, 20000};
  SHOW("select (times out)", select(pipe_r + 1, &rs, NULL, NULL, &tv));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  SHOW("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, pipe_r, &ev));
  SHOW("epoll_wait (times out)", epoll_wait(ep, &ev, 1, 20));
  close(ep);
  struct timespec ms = {0, 1000000};
  SHOW("nanosleep", nanosleep(&ms, NULL));
  SHOW("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, 0, &ms, NULL));
  SHOW("usleep", usleep(1000));
  SHOW("sleep", sleep(0));
  struct timespec past;
  clock_gettime(CLOCK_REALTIME, &past);
  past.tv_nsec = (past.tv_nsec + 20000000) % 1000000000;
  if (past.tv_nsec < 20000000) past.tv_sec++;
  SHOW("sem_timedwait (times out)", sem_timedwait(&sem, &past));
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&mu);
  clock_gettime(CLOCK_REALTIME, &past);
  SHOW("pthread_cond_timedwait", pthread_cond_timedwait(&cv, &mu, &past));
  pthread_mutex_unlock(&mu);
  void *m[5] = {NULL};
  SHOW_PTR("malloc", m[0] = malloc(100));
  SHOW_PTR("calloc", m[1] = calloc(10, 10));
  SHOW_PTR("realloc", m[2] = realloc(NULL, 100));
  SHOW("posix_memalign", posix_memalign(&m[3], 64, 100));
  SHOW_PTR("aligned_alloc", m[4] = aligned_alloc(64, 128));
  for (int i = 0; i < 5; i++) SHOW("free", (free(m[i]), 0));
  /* A megabyte moves the heap past the shim's reporting step both ways. */
  void *big;
  SHOW_PTR("malloc (1 MiB)", big = malloc(1 << 20));
  SHOW("free (1 MiB)", (free(big), 0));

  /* Calls that fail. */
  SHOW("read (bad fd)", read(-1, buf, 1));
  SHOW("write (bad fd)", write(12345, buf, 1));
  SHOW("recv (not a socket)", recv(pipe_r, buf, 1, 0));
  SHOW("accept (not a socket)", accept(pipe_r, NULL, NULL));
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = "/nonexistent/ctrace-state"};
  SHOW("connect (no such path)", connect(s, (struct sockaddr *)&sa, sizeof sa));
  close(s);
  SHOW("waitpid (no child)", waitpid(-1, NULL, 0));
  SHOW("wait (no child)", wait(NULL));
  close(pipe_r);
  signal(SIGPIPE, SIG_IGN);
  SHOW("write (broken pipe)", write(pipe_w, "x", 1));
  SHOW("select (bad count)", select(-1, NULL, NULL, NULL, NULL));
  SHOW("nanosleep (bad time)", nanosleep(&(struct timespec){0, -1}, NULL));
  pid_t c = fork();
  if (c == 0) _exit(3);
  int st = 0;
  SHOW("waitpid (child)", waitpid(c, &st, 0) == c);
  printf("child status %d\n", st);
  close(pipe_w);
  close(sock_a);
  close(sock_b);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

extern char **environ;

static void process(void) {
  mode_t um = umask(022);
  umask(um);
  printf("umask %03o\n", (unsigned)um);
  char cwd[4096];
  printf("cwd %s\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, NULL, &mask);
  for (int s = 1; s < NSIG; s++) {
    struct sigaction sa;
    if (sigaction(s, NULL, &sa) != 0) continue;
    printf("signal %d blocked=%d handler=%s flags=%#x\n", s, sigismember(&mask, s),
           sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignore" : "set",
           (unsigned)sa.sa_flags);
  }
  size_t n = 0;
  while (environ[n]) n++;
  char **env = malloc(n * sizeof *env);
  memcpy(env, environ, n * sizeof *env);
  qsort(env, n, sizeof *env, cmp_str);
  for (size_t i = 0; i < n; i++) printf("env %s\n", env[i]);
  free(env);
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd >= 3 && fd != dirfd(d)) printf("fd %d open\n", fd);
  }
  if (d) closedir(d);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  printf("RLIMIT_NOFILE %llu %llu\n", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  /* With the soft limit at 64, every number up to 63 is the program's. */
  struct rlimit low = {64, rl.rlim_max};
  setrlimit(RLIMIT_NOFILE, &low);
  int opened = 0, last = -1;
  for (int fd; (fd = open("/dev/null", O_RDONLY)) >= 0; opened++) last = fd;
  printf("opened %d, the last at %d, then errno=%d\n", opened, last, errno);
  for (int fd = 3; fd <= last; fd++) close(fd);
  setrlimit(RLIMIT_NOFILE, &rl);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    process();
    return 0;
  }
  process();
  calls();
  fflush(stdout);
  /* What a child the program starts sees. */
  printf("--- exec'd child\n");
  fflush(stdout);
  pid_t c = fork();
  if (c == 0) {
    execl("/proc/self/exe", argv[0], "child", (char *)NULL);
    _exit(127);
  }
  waitpid(c, NULL, 0);
  printf("--- system()\n");
  fflush(stdout);
  return system("umask; pwd; env | grep -c . >/dev/null; echo sh done") == 0 ? 0 : 1;
}
