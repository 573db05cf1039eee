/* seed_gen.c: writes the small ctrace traces of the fuzzer's seed corpus.
 *   seed_gen DIR      writes DIR/ctrace_threads, DIR/ctrace_runtime,
 *                     DIR/ctrace_nostacks, DIR/ctrace_restart
 * Each is a few KB and uses a different part of the API, so the fuzzer
 * starts from every event kind ctrace writes. `make fuzz-seeds` rebuilds
 * and reruns it (the traces in fuzz/corpus/ are its output, checked with
 * `go tool trace -d`). */
#include <ctrace/ctrace.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "seed_gen: %s: %s\n", what, ctrace_strerror(rc));
    exit(1);
  }
}

/* ---- plain threads: annotations, blocking, system calls ---------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;

static void worker_fn(void) {}

static void *worker(void *arg) {
  ctrace_thread_begin(arg);
  uint64_t task = ctrace_task_create(0, "request");
  ctrace_region_begin(task, "handle");
  ctrace_log(task, "http", "GET /index.html");
  ctrace_logf(task, "", "%d bytes", 512);
  ctrace_go_syscall();
  (void)getpid();
  ctrace_go_syscall();
  ctrace_go_sysblock();
  usleep(100);
  ctrace_go_sysexit();
  ctrace_thread_resume();
  pthread_mutex_lock(&mu);
  while (!turn) {
    ctrace_go_block(CTRACE_BLOCK_COND);
    pthread_cond_wait(&cv, &mu);
    ctrace_thread_resume();
  }
  pthread_mutex_unlock(&mu);
  ctrace_region_begin(task, "inner");
  ctrace_log(0, "no task", "x");
  ctrace_region_end(task, "inner");
  ctrace_region_end(task, "handle");
  ctrace_task_end(task);
  return NULL;
}

static void threads_trace(const char *path, const ctrace_options *opts) {
  turn = 0;
  check(ctrace_start_file(path, opts), path);
  uint64_t parent = ctrace_task_create(0, "main");
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    ctrace_g *g = ctrace_thread_create(worker_fn);
    pthread_create(&th[i], NULL, worker, g);
  }
  usleep(2000);
  pthread_mutex_lock(&mu);
  turn = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  ctrace_thread_resume();
  ctrace_heap_alloc(1 << 20);
  ctrace_task_end(parent);
  check(ctrace_stop(), "stop");
}

/* ---- a runtime: Ps, Gs it schedules itself, GC ------------------------- */

static void g_fn(void) {}

/* On a thread of its own, which holds P 0 as a runtime's worker would. */
static void *runtime_worker(void *arg) {
  (void)arg;
  ctrace_proc_start(0);
  ctrace_g a, b, gc;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&gc, 0, sizeof gc);
  ctrace_go_create(&a, g_fn);
  ctrace_go_create(&b, g_fn);
  ctrace_go_create(&gc, g_fn);
  ctrace_timer_goroutine(gc.id);

  ctrace_go_start(&a);
  ctrace_go_block(CTRACE_BLOCK_RECV);
  ctrace_go_start(&b);
  ctrace_go_unblock(&a);
  ctrace_go_block(CTRACE_BLOCK_SEND);
  ctrace_go_start(&a);
  ctrace_go_unblock(&b);
  ctrace_go_sched();
  ctrace_go_start(&b);
  ctrace_go_preempt();
  ctrace_go_start_label(&gc, "GC (dedicated)");
  ctrace_gc_start();
  ctrace_gc_stw_start(1);
  ctrace_gc_stw_done();
  ctrace_heap_goal(8 << 20);
  ctrace_gc_mark_assist_start();
  ctrace_gc_mark_assist_done();
  ctrace_gc_stw_start(0);
  ctrace_gc_stw_done();
  ctrace_gc_done();
  ctrace_gc_sweep_start();
  ctrace_gc_sweep_done(4096, 1024);
  ctrace_heap_alloc(3 << 20);
  ctrace_go_block(CTRACE_BLOCK_GC);
  ctrace_go_start(&a);
  ctrace_go_block(CTRACE_BLOCK_SELECT);
  ctrace_go_unblock(&gc);
  ctrace_go_start(&b);
  ctrace_go_unblock(&a);
  ctrace_go_block(CTRACE_BLOCK_SLEEP);
  ctrace_go_start(&gc);
  ctrace_go_block(CTRACE_BLOCK_NET);
  ctrace_go_start(&a);
  ctrace_go_unblock(&b);
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  ctrace_go_start(&b);
  ctrace_go_unblock(&a);
  ctrace_go_stop();
  ctrace_go_start(&a);
  ctrace_go_block(CTRACE_BLOCK_SYNC);
  ctrace_go_unblock(&a); /* woken for nothing: it blocks again at once */
  ctrace_go_start(&a);
  ctrace_go_block(CTRACE_BLOCK_SYNC | CTRACE_BLOCK_FUTILE);
  ctrace_go_unblock(&a);
  ctrace_go_start(&a);
  ctrace_go_end();
  ctrace_proc_stop();
  ctrace_go_destroy(&b);
  ctrace_go_destroy(&gc);
  return NULL;
}

static void runtime_trace(const char *path) {
  check(ctrace_start_file(path, NULL), path);
  ctrace_gomaxprocs(2);
  pthread_t th;
  pthread_create(&th, NULL, runtime_worker, NULL);
  pthread_join(th, NULL);
  check(ctrace_stop(), "stop");
}

/* ---- a restart: Gs that were blocked or in a system call before the
 * trace began (GoWaiting, GoInSyscall) ------------------------------------ */

static void restart_trace(const char *path) {
  ctrace_g c, d;
  memset(&c, 0, sizeof c);
  memset(&d, 0, sizeof d);
  check(ctrace_start_file("/dev/null", NULL), "/dev/null");
  ctrace_proc_start(1);
  ctrace_go_create(&c, g_fn);
  ctrace_go_create(&d, g_fn);
  ctrace_go_start(&c);
  ctrace_go_block(CTRACE_BLOCK_RECV);
  ctrace_go_start(&d);
  ctrace_go_syscall();
  ctrace_go_sysblock();
  check(ctrace_stop(), "stop");

  check(ctrace_start_file(path, NULL), path);
  ctrace_go_sysexit();
  ctrace_go_unblock(&c);
  ctrace_go_start(&c);
  ctrace_go_end();
  ctrace_go_start(&d);
  ctrace_go_end();
  ctrace_proc_stop();
  check(ctrace_stop(), "stop");
}

static void *restart_thread(void *arg) {
  restart_trace(arg);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: seed_gen DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/ctrace_threads", argv[1]);
  ctrace_options opts = {.stack_depth = 8};
  threads_trace(path, &opts);
  snprintf(path, sizeof path, "%s/ctrace_nostacks", argv[1]);
  opts.no_stacks = 1;
  threads_trace(path, &opts);
  snprintf(path, sizeof path, "%s/ctrace_runtime", argv[1]);
  runtime_trace(path);
  snprintf(path, sizeof path, "%s/ctrace_restart", argv[1]);
  pthread_t th;
  pthread_create(&th, NULL, restart_thread, path);
  pthread_join(th, NULL);
  return 0;
}
