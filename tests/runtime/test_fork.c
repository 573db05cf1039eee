/* test_fork.c - fork while tracing: the child starts with a clean tracer.
 *
 *   test_fork DIR
 *
 * Three threads emit events without pause (blocks and resumes, logs,
 * system calls, heap sizes, thread creation) into the trace main started
 * (DIR/parent.trace, ctrace_start_file), while main forks NUM_FORKS times.
 * Each child must find tracing off and the parent's threads and goroutines
 * gone, then start a trace of its own (DIR/child-NN.trace), run a thread
 * that emits events, stop, and exit 0, all before an alarm: a lock that one
 * of the parent's threads held at the fork shows as a failure, not a hang.
 * Then the parent stops its trace. tests/runtime/fork_check.sh runs this and checks
 * every trace with `go tool trace -d`.
 *
 * The emitters emit from just before each fork until it returned and wait
 * while main waits for the child: the parent's trace holds what the forks
 * raced (tens of thousands of events), not the children's lifetimes (which
 * made it millions, that Go's tools took minutes to read). Its buffers
 * are the smallest (8 KiB), so that the writer thread is handed one around
 * every fork.
 *
 * The libasan of GCC 12 takes none of its allocator's locks around fork,
 * so under AddressSanitizer a child forked while another thread is inside
 * malloc or free hangs on its first allocation (glibc's malloc is
 * fork-safe). So main forks only once every thread it started runs (a
 * thread allocates as it starts, under ASan), and under ASan forks and the
 * emitters' thread creations take turns (alloc_turn). The tracer's own
 * locks stay under test: the events between creations, and the writer
 * thread, still race every fork.
 */
#include <ctrace/ctrace.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NUM_THREADS = 3, NUM_FORKS = 20, CHILD_SECONDS = 20 };

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "test_fork: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      _exit(1);                                            \
    }                                                      \
  } while (0)

static atomic_int stop, running;

/* The emitters emit while burst is set and wait on burst_cv otherwise. */
static pthread_mutex_t burst_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t burst_cv = PTHREAD_COND_INITIALIZER;
static atomic_int burst;

static void set_burst(int on) {
  pthread_mutex_lock(&burst_mu);
  atomic_store(&burst, on);
  pthread_cond_broadcast(&burst_cv);
  pthread_mutex_unlock(&burst_mu);
}

static void wait_burst(void) {
  if (atomic_load(&burst)) return;
  pthread_mutex_lock(&burst_mu);
  while (!atomic_load(&burst) && !atomic_load(&stop)) pthread_cond_wait(&burst_cv, &burst_mu);
  pthread_mutex_unlock(&burst_mu);
}

#ifdef __SANITIZE_ADDRESS__
static pthread_rwlock_t alloc_turn = PTHREAD_RWLOCK_INITIALIZER;
#define ALLOC_BEGIN() pthread_rwlock_rdlock(&alloc_turn)
#define ALLOC_END() pthread_rwlock_unlock(&alloc_turn)
#define FORK_BEGIN() pthread_rwlock_wrlock(&alloc_turn)
#define FORK_END() pthread_rwlock_unlock(&alloc_turn)
#else
#define ALLOC_BEGIN() ((void)0)
#define ALLOC_END() ((void)0)
#define FORK_BEGIN() ((void)0)
#define FORK_END() ((void)0)
#endif

static void *noop(void *arg) { return arg; }

/* Events of every kind a plain thread writes, and a short-lived thread
 * now and then (thread registry, G registry, P numbers). */
static void *emitter(void *arg) {
  long i = 0;
  while (!atomic_load(&stop)) {
    wait_burst();
    ctrace_go_block(CTRACE_BLOCK_SYNC);
    ctrace_thread_resume();
    ctrace_logf(0, "emitter", "%ld", i);
    ctrace_go_syscall();
    ctrace_heap_alloc((uint64_t)i * 64);
    /* A pause now and then keeps the trace small enough for Go's viewer
     * while the tracer stays busy at every fork. */
    if (i % 10 == 0) usleep(200);
    if (i++ % 500 == 0) {
      ALLOC_BEGIN();
      ctrace_g *g = ctrace_thread_create((void (*)(void))noop);
      pthread_t th;
      if (pthread_create(&th, NULL, noop, g) == 0) pthread_join(th, NULL);
      ALLOC_END();
    }
    if (i == 1) atomic_fetch_add(&running, 1);
  }
  return arg;
}

static void *child_worker(void *arg) {
  ctrace_thread_begin(arg);
  for (int i = 0; i < 1000; i++) {
    ctrace_log(0, "child", "event");
    ctrace_go_block(CTRACE_BLOCK_COND);
    ctrace_thread_resume();
  }
  return NULL;
}

static void child(const char *dir, int n) {
  alarm(CHILD_SECONDS);
  CHECK(!ctrace_enabled(), "tracing is on in the child");
  ctrace_stats st;
  ctrace_stats_get(&st); /* the registry lock must be usable */
  char path[4096];
  snprintf(path, sizeof path, "%s/child-%02d.trace", dir, n);
  int err = ctrace_start_file(path, NULL);
  CHECK(err == 0, "child start: %s", ctrace_strerror(err));
  ctrace_g *g = ctrace_thread_create((void (*)(void))child_worker);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, child_worker, g) == 0, "child pthread_create");
  pthread_join(th, NULL);
  err = ctrace_stop();
  CHECK(err == 0, "child stop: %s", ctrace_strerror(err));
  _exit(0);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_fork DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/parent.trace", argv[1]);
  ctrace_options o = {0};
  o.buffer_size = 8 << 10;
  int err = ctrace_start_file(path, &o);
  CHECK(err == 0, "start: %s", ctrace_strerror(err));
  pthread_t th[NUM_THREADS];
  set_burst(1);
  for (int i = 0; i < NUM_THREADS; i++) {
    ctrace_g *g = ctrace_thread_create((void (*)(void))emitter);
    CHECK(pthread_create(&th[i], NULL, emitter, g) == 0, "pthread_create");
  }
  /* Every emitter through its first round, and the writer thread through
   * its first read (the header): none of them is starting any more. */
  for (ctrace_stats st = {0}; atomic_load(&running) < NUM_THREADS || st.bytes == 0;
       ctrace_stats_get(&st))
    usleep(1000);
  for (int n = 0; n < NUM_FORKS; n++) {
    set_burst(1);
    usleep(2000);
    FORK_BEGIN();
    pid_t pid = fork();
    FORK_END();
    CHECK(pid >= 0, "fork");
    if (pid == 0) child(argv[1], n);
    set_burst(0);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(!(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM), "child %d hung (%d s alarm)", n,
          CHILD_SECONDS);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d failed (status %#x)", n, status);
  }
  atomic_store(&stop, 1);
  set_burst(1);
  for (int i = 0; i < NUM_THREADS; i++) pthread_join(th[i], NULL);
  err = ctrace_stop();
  CHECK(err == 0, "stop: %s", ctrace_strerror(err));
  ctrace_stats st;
  ctrace_stats_get(&st);
  printf("test_fork: %d children traced on their own; the parent's trace: %llu events, %llu bytes\n",
         NUM_FORKS, (unsigned long long)st.events, (unsigned long long)st.bytes);
  return 0;
}
