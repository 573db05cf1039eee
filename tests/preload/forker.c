/* forker: forks while other threads keep the tracer busy.
 *
 *   run_forker [FORKS]      (default 20)
 *
 * Two threads lock a mutex, allocate and sleep in a loop, so that the
 * tracer's locks and buffers are in use when main forks. Each child
 * creates and joins a thread (which locks a mutex of the child's own),
 * sleeps, and exits with status 0 through exit() (even children) or
 * _exit() (odd ones): it must never touch the parent's trace, and never
 * hang on a lock the parent's threads held. Then system("exit 3"), a fork
 * that execs /bin/sh -c 'exit 4', and posix_spawn of /bin/sh -c 'exit 5'.
 * Main waits for each child (waitpid: a blocked system call) and checks
 * its status. Prints "forker forks=N ok=K" and exits 0 if every child
 * ended as expected (K = N + 3).
 */
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop, running;
static long counter;

/* GCC 12's AddressSanitizer allocator is not fork-safe: a child forked
 * while another thread is inside malloc or free can deadlock on the
 * allocator's lock, traced or not. Under ASan the busy threads do not
 * allocate, and main forks only once they run (a thread allocates while it
 * starts). */
#ifdef __SANITIZE_ADDRESS__
#define BUSY_ALLOCATES 0
#else
#define BUSY_ALLOCATES 1
#endif

static void *busy(void *arg) {
  (void)arg;
  atomic_fetch_add(&running, 1);
  while (!atomic_load(&stop)) {
    pthread_mutex_lock(&mu);
    counter++;
    void *p = BUSY_ALLOCATES ? malloc(100 + (size_t)(counter % 5000)) : NULL;
    pthread_mutex_unlock(&mu);
    free(p);
    usleep(100);
  }
  return NULL;
}

/* The child's own lock: the parent's mu may have been held by one of its
 * threads at the fork, and would stay locked in the child for good. */
static pthread_mutex_t child_mu = PTHREAD_MUTEX_INITIALIZER;

static void *child_thread(void *arg) {
  pthread_mutex_lock(&child_mu);
  counter++;
  pthread_mutex_unlock(&child_mu);
  return arg;
}

static int child(int i) {
  pthread_t th;
  if (pthread_create(&th, NULL, child_thread, NULL) != 0) return 10;
  void *ret;
  if (pthread_join(th, &ret) != 0) return 11;
  free(malloc(1 << 20));
  usleep(1000);
  if (i % 2) _exit(0);
  exit(0);
}

static int wait_for(pid_t pid, int want) {
  int st;
  if (waitpid(pid, &st, 0) != pid) return 0;
  return WIFEXITED(st) && WEXITSTATUS(st) == want;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 20;
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&th[i], NULL, busy, NULL) != 0) return 1;
  while (atomic_load(&running) < 2) usleep(1000);
  usleep(1000);
  int ok = 0;
  for (int i = 0; i < forks; i++) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) child(i);
    ok += wait_for(pid, 0);
  }
  ok += system("exit 3") != -1;
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", "exit 4", (char *)NULL);
    _exit(127);
  }
  ok += wait_for(pid, 4);
  extern char **environ;
  char *sh_argv[] = {"sh", "-c", "exit 5", NULL};
  if (posix_spawn(&pid, "/bin/sh", NULL, NULL, sh_argv, environ) == 0) ok += wait_for(pid, 5);
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  printf("forker forks=%d ok=%d\n", forks, ok);
  return ok == forks + 3 ? 0 : 1;
}
