/* test_sequences.c - API call sequences the header allows, each into a
 * trace that every Go version must open (tests/sequences_check.sh).
 *
 *   test_sequences DIR
 *
 * Writes DIR/NAME.trace for each scenario below. A scenario is a script:
 * main tells actors (threads) to make calls one step at a time and waits
 * for each step, so the interleaving across threads is exactly the one
 * written, whatever the machine's load. The scenarios go after the corners
 * where Go's readers disagree with one another or with Go's own runtime
 * habits: system calls that block with and without a P, or without the
 * GoSysCall that should come first; every block reason with and without
 * CTRACE_BLOCK_FUTILE; a runtime moving Gs between Ps and threads; GC,
 * sweep and assist events, some left open at stop (a stop-the-world with
 * no G running to end it); tasks, regions and logs
 * across trace boundaries; and goroutines running, runnable, blocked and
 * in system calls when a trace stops and when the next one starts.
 * With CTRACE_FORMAT=go1.22, also a gap at the cap in the middle of a
 * trace, with each of those things happening in it.
 *
 * The program checks only that each call sequence runs and each trace is
 * written; what Go makes of the traces is the script's to check.
 */
#include <ctrace/ctrace.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "test_sequences: %s:%d: ", __FILE__, __LINE__);       \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

/* ---- actors: threads that run one step at a time, when told ------------- */

typedef void (*step_fn)(void *arg);

typedef struct actor {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  step_fn fn; /* the step to run; NULL when done */
  void *arg;
  bool quit;
} actor;

static void *actor_main(void *p) {
  actor *a = p;
  pthread_mutex_lock(&a->mu);
  for (;;) {
    while (!a->fn && !a->quit) pthread_cond_wait(&a->cv, &a->mu);
    if (!a->fn) break;
    step_fn fn = a->fn;
    void *arg = a->arg;
    pthread_mutex_unlock(&a->mu);
    fn(arg);
    pthread_mutex_lock(&a->mu);
    a->fn = NULL;
    pthread_cond_broadcast(&a->cv);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

static void actor_start(actor *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  CHECK(pthread_create(&a->th, NULL, actor_main, a) == 0, "pthread_create");
}

/* Runs fn(arg) on a and waits until it returns. */
static void on(actor *a, step_fn fn, void *arg) {
  pthread_mutex_lock(&a->mu);
  a->fn = fn;
  a->arg = arg;
  pthread_cond_broadcast(&a->cv);
  while (a->fn) pthread_cond_wait(&a->cv, &a->mu);
  pthread_mutex_unlock(&a->mu);
}

/* Ends a's thread (its G ends with it, if it has one). */
static void actor_join(actor *a) {
  pthread_mutex_lock(&a->mu);
  a->quit = true;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  pthread_join(a->th, NULL);
}

/* ---- steps: one or more API calls, by the actor's thread ---------------- */

static ctrace_g ga, gb, gc, gd;
static void fn_a(void) {}
static void fn_b(void) {}
static void fn_c(void) {}
static void fn_d(void) {}

#define STEP(name, body) \
  static void name(void *arg) { (void)arg; body; }

STEP(s_syscall, ctrace_go_syscall())
STEP(s_sysblock, ctrace_go_sysblock())
STEP(s_sysexit, ctrace_go_sysexit())
STEP(s_resume, ctrace_thread_resume())
STEP(s_sys_roundtrip, {
  ctrace_go_syscall();
  ctrace_go_sysblock();
  ctrace_go_sysexit();
  ctrace_thread_resume();
})
STEP(s_sys_nonblocking, ctrace_go_syscall(); ctrace_log(0, "sys", "did not block"))
STEP(s_sysblock_alone, {
  /* No GoSysCall first: ctrace writes one. */
  ctrace_go_sysblock();
  ctrace_go_sysexit();
  ctrace_thread_resume();
})
STEP(s_sys_interrupted, {
  /* Something of the G between the system call and its block. */
  ctrace_go_syscall();
  ctrace_log(0, "sys", "between syscall and sysblock");
  ctrace_heap_alloc(4096);
  ctrace_go_sysblock();
  ctrace_go_sysexit();
  ctrace_thread_resume();
})
STEP(s_sys_twice, {
  ctrace_go_syscall();
  ctrace_go_syscall();
  ctrace_go_sysblock();
  ctrace_go_sysexit();
  ctrace_go_syscall();
  ctrace_go_sysblock();
  ctrace_go_sysexit();
  ctrace_thread_resume();
})
STEP(s_log, ctrace_log(0, "step", "plain thread event"))
STEP(s_maxprocs, ctrace_gomaxprocs(4))
STEP(s_p0, ctrace_proc_start(0))
STEP(s_p1, ctrace_proc_start(1))
STEP(s_p2, ctrace_proc_start(2))
STEP(s_pstop, ctrace_proc_stop())
STEP(s_p4097, ctrace_proc_start(4097))
STEP(s_create_a, ctrace_go_create(&ga, fn_a))
STEP(s_create_b, ctrace_go_create(&gb, fn_b))
STEP(s_create_c, ctrace_go_create(&gc, fn_c))
STEP(s_create_d, ctrace_go_create(&gd, fn_d))
STEP(s_start_a, ctrace_go_start(&ga))
STEP(s_start_b, ctrace_go_start(&gb))
STEP(s_start_c, ctrace_go_start(&gc))
STEP(s_start_d, ctrace_go_start(&gd))
STEP(s_label_a, ctrace_go_start_label(&ga, "GC (dedicated)"))
STEP(s_unblock_a, ctrace_go_unblock(&ga))
STEP(s_unblock_c, ctrace_go_unblock(&gc))
STEP(s_end, ctrace_go_end())
STEP(s_sched, ctrace_go_sched())
STEP(s_preempt, ctrace_go_preempt())
STEP(s_stop_g, ctrace_go_stop())
static void s_block(void *reason) { ctrace_go_block((int)(intptr_t)reason); }
STEP(s_sys_rt, ctrace_go_syscall(); ctrace_go_sysblock(); ctrace_go_sysexit())
STEP(s_sysblock_alone_rt, ctrace_go_sysblock(); ctrace_go_sysexit())
STEP(s_block_recv, ctrace_go_block(CTRACE_BLOCK_RECV))
STEP(s_block_futile, ctrace_go_block(CTRACE_BLOCK_SYNC | CTRACE_BLOCK_FUTILE))
STEP(s_block_net, ctrace_go_block(CTRACE_BLOCK_NET))
STEP(s_block_gc, ctrace_go_block(CTRACE_BLOCK_GC))
STEP(s_gc_start, ctrace_gc_start())
STEP(s_gc_done, ctrace_gc_done())
STEP(s_stw0, ctrace_gc_stw_start(0))
STEP(s_stw1, ctrace_gc_stw_start(1))
STEP(s_stw_done, ctrace_gc_stw_done())
STEP(s_sweep, ctrace_gc_sweep_start())
STEP(s_sweep_done, ctrace_gc_sweep_done(1 << 20, 1 << 19))
STEP(s_assist, ctrace_gc_mark_assist_start())
STEP(s_assist_done, ctrace_gc_mark_assist_done())
STEP(s_assist_sys, {
  /* A mark assist across a blocking system call. */
  ctrace_gc_mark_assist_start();
  ctrace_go_syscall();
  ctrace_go_sysblock();
  ctrace_go_sysexit();
  ctrace_thread_resume();
  ctrace_gc_mark_assist_done();
})
STEP(s_heap, ctrace_heap_alloc(1 << 20); ctrace_heap_goal(4 << 20))
STEP(s_timer_a, ctrace_timer_goroutine(ga.id))

static uint64_t task_outer, task_inner, task_span;
STEP(s_task_span, task_span = ctrace_task_create(0, "spanning"))
STEP(s_task_span_end, ctrace_task_end(task_span))
STEP(s_region_span, ctrace_region_begin(task_span, "across traces"))
STEP(s_region_span_end, ctrace_region_end(task_span, "across traces"))
STEP(s_annotate, {
  task_outer = ctrace_task_create(0, "outer");
  task_inner = ctrace_task_create(task_outer, "inner");
  ctrace_region_begin(task_outer, "outer region");
  ctrace_region_begin(task_inner, "inner region");
  ctrace_log(task_inner, "cat", "in the inner region");
  ctrace_log(task_inner, NULL, "no category");
  ctrace_log(0, "", "");
  ctrace_logf(task_outer, "fmt", "%d %s", 42, "formatted");
  ctrace_region_end(task_inner, "inner region");
  ctrace_region_begin(0, "no task");
  ctrace_region_end(0, "no task");
  ctrace_region_end(task_outer, "outer region");
  ctrace_task_end(task_inner);
  ctrace_task_end(task_outer);
  ctrace_task_end(12345678); /* a task this process never made */
})
STEP(s_region_open, ctrace_region_begin(0, "open at stop"))
STEP(s_region_close, ctrace_region_end(0, "open at stop"))
STEP(s_region_unmatched_end, ctrace_region_end(0, "begun before the trace"))
STEP(s_region_before, ctrace_region_begin(0, "begun before the trace"))
STEP(s_big_log, {
  static char msg[100000];
  memset(msg, 'x', sizeof msg - 1);
  ctrace_log(0, "big", msg);
})

STEP(s_region_gap_before, ctrace_region_begin(0, "before the gap"))
STEP(s_region_gap_before_end, ctrace_region_end(0, "before the gap"))
STEP(s_region_gap_in, ctrace_region_begin(0, "in the gap"))
STEP(s_region_gap_in_end, ctrace_region_end(0, "in the gap"))
/* Logs until tracing goes off at the cap (the reader is held). */
STEP(s_fill, {
  static char msg[4000];
  memset(msg, 'f', sizeof msg - 1);
  for (int i = 0; ctrace_enabled(); i++) {
    CHECK(i < 100000, "the trace never met its cap");
    ctrace_log(0, "fill", msg);
  }
})

/* ---- traces -------------------------------------------------------------- */

static const char *dir;
static char path[4096];

static void begin(const char *name) {
  snprintf(path, sizeof path, "%s/%s.trace", dir, name);
  int err = ctrace_start_file(path, NULL);
  CHECK(err == 0, "start %s: %s", name, ctrace_strerror(err));
}

static void end(void) {
  int err = ctrace_stop();
  CHECK(err == 0, "stop %s: %s", path, ctrace_strerror(err));
  printf("test_sequences: wrote %s\n", path);
}

/* A reader of ctrace_start's trace that waits for reader_go first. */
static atomic_bool reader_go;
static void *held_reader(void *arg) {
  FILE *f = arg;
  while (!atomic_load(&reader_go)) usleep(1000);
  size_t len;
  for (const void *b; (b = ctrace_read(&len));) CHECK(fwrite(b, 1, len, f) == len, "write");
  return NULL;
}

/* 7. A gap at the cap (Go's current format): the reader is held until
 *    tracing goes off, then, in the gap, a region begun before ends and
 *    another begins, a mark assist and a GC begun before end, a blocked
 *    G wakes, a G on a runtime's P ends and another starts there, a thread
 *    exits and another starts; after it, the region begun in the gap ends
 *    (which the trace must not show: it never showed its start), and each
 *    goes on, over 60 ms (tests/CMakeLists.txt holds the trace to them). */
static void gap(actor *r1) {
  actor a1, a2, a3, a4;
  actor_start(&a1);
  actor_start(&a2);
  actor_start(&a3);
  snprintf(path, sizeof path, "%s/gap.trace", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f, "open %s", path);
  ctrace_options o = {0};
  o.max_pending = 1 << 20;
  int err = ctrace_start(&o);
  CHECK(err == 0, "start gap: %s", ctrace_strerror(err));
  pthread_t rd;
  atomic_store(&reader_go, false);
  CHECK(pthread_create(&rd, NULL, held_reader, f) == 0, "pthread_create");
  on(&a1, s_region_gap_before, NULL);
  on(&a1, s_gc_start, NULL);
  on(&a1, s_assist, NULL);
  on(&a2, s_block_recv, NULL);
  on(&a3, s_log, NULL);
  on(r1, s_p0, NULL);
  on(r1, s_create_a, NULL);
  on(r1, s_start_a, NULL);
  on(&a1, s_fill, NULL);
  /* The gap. */
  on(&a1, s_region_gap_before_end, NULL);
  on(&a1, s_region_gap_in, NULL);
  on(&a1, s_assist_done, NULL);
  on(&a1, s_gc_done, NULL);
  on(&a2, s_resume, NULL);
  actor_join(&a3);
  on(r1, s_end, NULL);
  on(r1, s_create_b, NULL);
  on(r1, s_start_b, NULL);
  actor_start(&a4);
  on(&a4, s_log, NULL);
  atomic_store(&reader_go, true);
  for (int i = 0; !ctrace_enabled(); i++) {
    CHECK(i < 10000, "tracing did not go on after the gap");
    usleep(1000);
  }
  on(&a1, s_region_gap_in_end, NULL);
  on(&a1, s_log, NULL);
  /* The trace must span these 60 ms: the generation after the gap states
   * its own frequency, which must put its events after the first's. */
  usleep(60000);
  on(&a1, s_log, NULL);
  on(&a1, s_gc_start, NULL);
  on(&a1, s_assist, NULL);
  on(&a1, s_assist_done, NULL);
  on(&a1, s_gc_done, NULL);
  on(&a2, s_log, NULL);
  on(&a4, s_log, NULL);
  on(r1, s_log, NULL);
  on(r1, s_end, NULL);
  on(r1, s_pstop, NULL);
  err = ctrace_stop();
  CHECK(err == CTRACE_ECAPPED, "stop gap: %s, want CTRACE_ECAPPED", ctrace_strerror(err));
  pthread_join(rd, NULL);
  CHECK(fclose(f) == 0, "close %s", path);
  printf("test_sequences: wrote %s\n", path);
  actor_join(&a1);
  actor_join(&a2);
  actor_join(&a4);
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: test_sequences DIR");
  dir = argv[1];
  actor m, p, r1, r2, r3; /* m, p: plain threads; r*: a runtime's threads */
  actor_start(&m);
  actor_start(&p);
  actor_start(&r1);
  actor_start(&r2);
  actor_start(&r3);
  on(&r1, s_maxprocs, NULL); /* the runtime's Ps are 0..3; plain threads' 4 and up */

  /* 1. System calls on plain threads: a thread blocked in one when the
   *    trace starts (GoInSyscall) and another in one when it stops. */
  on(&p, s_syscall, NULL);
  on(&p, s_sysblock, NULL);
  begin("sys_plain");
  on(&m, s_sys_roundtrip, NULL);
  on(&m, s_sys_nonblocking, NULL);
  on(&m, s_sysblock_alone, NULL);
  on(&m, s_sys_interrupted, NULL);
  on(&m, s_sys_twice, NULL);
  on(&p, s_sysexit, NULL);
  on(&p, s_resume, NULL);
  on(&p, s_sys_roundtrip, NULL);
  on(&m, s_syscall, NULL);
  on(&m, s_sysblock, NULL);
  end();
  begin("sys_plain_2");
  on(&m, s_sysexit, NULL);
  on(&m, s_resume, NULL);
  on(&m, s_syscall, NULL);
  on(&m, s_sysblock, NULL);
  on(&p, s_log, NULL);
  end();
  on(&m, s_sysexit, NULL);
  on(&m, s_resume, NULL);

  /* 2. System calls in a runtime: a G blocks in one on P 0, its thread
   *    gives up the P, another thread takes the P and runs another G; the
   *    call returns on a thread without a P (GoSysExit there), and the G
   *    runs again on P 1, on yet another thread. A thread without a P makes
   *    system calls of its own, blocking and not. */
  begin("sys_runtime");
  on(&r1, s_p0, NULL);
  on(&r1, s_create_a, NULL);
  on(&r1, s_create_b, NULL);
  on(&r1, s_start_a, NULL);
  on(&r1, s_syscall, NULL);
  on(&r1, s_sysblock, NULL);
  on(&r1, s_pstop, NULL);
  on(&r2, s_p0, NULL);
  on(&r2, s_start_b, NULL);
  on(&r2, s_sys_nonblocking, NULL);
  on(&r1, s_sysexit, NULL);
  on(&r3, s_p1, NULL);
  on(&r3, s_start_a, NULL);
  on(&r3, s_sys_rt, NULL);
  on(&r3, s_start_a, NULL);
  on(&r3, s_sysblock_alone_rt, NULL);
  on(&r3, s_start_a, NULL);
  on(&r3, s_end, NULL);
  on(&r2, s_syscall, NULL);
  on(&r2, s_sysblock, NULL); /* b stays in its system call past the stop */
  on(&r3, s_pstop, NULL);
  end();
  begin("sys_runtime_2");
  on(&r2, s_sysexit, NULL);
  on(&r2, s_start_b, NULL);
  on(&r2, s_end, NULL);
  on(&r2, s_pstop, NULL);
  end();

  /* 3. Blocks of every kind, futile or not, unblocked by another G, by a
   *    P between Gs, or by no one (the G resumes itself); yields,
   *    preemption, GoStop and a start again, a labelled start. */
  begin("block");
  on(&r1, s_p0, NULL);
  on(&r2, s_p1, NULL);
  on(&r1, s_create_a, NULL);
  on(&r1, s_create_b, NULL);
  on(&r1, s_start_a, NULL);
  for (int reason = CTRACE_BLOCK; reason <= CTRACE_BLOCK_SLEEP; reason++) {
    for (int futile = 0; futile <= CTRACE_BLOCK_FUTILE; futile += CTRACE_BLOCK_FUTILE) {
      int r = reason | futile;
      on(&r1, s_block, (void *)(intptr_t)r);
      on(&r2, s_start_b, NULL);
      on(&r2, s_unblock_a, NULL); /* by G b on P 1 */
      on(&r2, s_sched, NULL);
      on(&r1, s_start_a, NULL);
    }
  }
  on(&r1, s_block_futile, NULL);
  on(&r2, s_unblock_a, NULL); /* by P 1 between Gs (G0) */
  on(&r2, s_start_a, NULL);   /* a moves to P 1 */
  on(&r2, s_block_net, NULL);
  on(&r1, s_start_a, NULL);   /* no one unblocked it: ctrace bridges */
  on(&r1, s_preempt, NULL);
  on(&r1, s_label_a, NULL);
  on(&r1, s_timer_a, NULL);
  on(&r1, s_stop_g, NULL);    /* GoStop: a is done for Go ... */
  on(&r2, s_start_a, NULL);   /* ... and shows as a new G if run again */
  on(&r2, s_end, NULL);
  on(&r2, s_start_b, NULL);
  on(&r2, s_end, NULL);
  on(&m, s_block_futile, NULL);
  on(&p, s_log, NULL);
  on(&m, s_resume, NULL);
  on(&r1, s_pstop, NULL);
  on(&r2, s_pstop, NULL);
  end();

  /* 4. GC: a cycle with both STW kinds, sweeps and a mark assist across a
   *    block; then everything left open when the trace stops. */
  begin("gc");
  on(&r1, s_p0, NULL);
  on(&r1, s_create_c, NULL);
  on(&r1, s_start_c, NULL);
  on(&r1, s_heap, NULL);
  on(&r1, s_gc_start, NULL);
  on(&r1, s_stw1, NULL);
  on(&r1, s_stw_done, NULL);
  on(&r1, s_sweep, NULL);
  on(&r1, s_sweep_done, NULL);
  on(&r1, s_assist, NULL);
  on(&r1, s_block_gc, NULL);
  on(&r2, s_p1, NULL);
  on(&r2, s_unblock_c, NULL);
  on(&r2, s_start_c, NULL);
  on(&r2, s_assist_done, NULL);
  on(&r2, s_stw0, NULL);
  on(&r2, s_stw_done, NULL);
  on(&r2, s_gc_done, NULL);
  on(&m, s_assist_sys, NULL);
  on(&m, s_heap, NULL);
  on(&m, s_gc_start, NULL);
  on(&m, s_stw0, NULL);
  on(&m, s_sweep, NULL);
  on(&r2, s_assist, NULL);
  end();
  begin("gc_2");
  on(&r2, s_assist_done, NULL);
  on(&r2, s_sweep, NULL);
  on(&r2, s_sweep_done, NULL);
  on(&m, s_sweep_done, NULL);
  on(&m, s_stw_done, NULL);
  on(&m, s_gc_done, NULL);
  on(&r2, s_end, NULL);
  on(&r1, s_pstop, NULL);
  on(&r2, s_pstop, NULL);
  end();

  /* 4b. A stop-the-world open when the trace stops, with no G running:
   *     the G that began it blocked and its P stopped. */
  begin("stw_open");
  on(&r1, s_p0, NULL);
  on(&r1, s_create_a, NULL);
  on(&r1, s_start_a, NULL);
  on(&r1, s_stw0, NULL);
  on(&r1, s_block_recv, NULL);
  on(&r1, s_pstop, NULL);
  end();
  begin("stw_open_2");
  on(&r1, s_p0, NULL);
  on(&r1, s_unblock_a, NULL);
  on(&r1, s_start_a, NULL);
  on(&r1, s_stw_done, NULL);
  on(&r1, s_end, NULL);
  on(&r1, s_pstop, NULL);
  end();

  /* 5. Tasks, regions and logs: nested, without a task, across trace
   *    boundaries, open at stop, on plain threads and in a runtime's G. */
  on(&m, s_task_span, NULL);
  on(&m, s_region_span, NULL);
  on(&p, s_region_before, NULL);
  begin("annotations");
  on(&m, s_annotate, NULL);
  on(&p, s_region_unmatched_end, NULL);
  on(&m, s_region_open, NULL);
  on(&p, s_big_log, NULL);
  on(&r1, s_p0, NULL);
  on(&r1, s_create_d, NULL);
  on(&r1, s_start_d, NULL);
  on(&r1, s_annotate, NULL);
  on(&r1, s_region_open, NULL);
  on(&r1, s_sched, NULL); /* d is runnable, its region open, at stop */
  end();
  begin("annotations_2");
  on(&m, s_region_close, NULL);
  on(&m, s_region_span_end, NULL);
  on(&m, s_task_span_end, NULL);
  on(&r1, s_start_d, NULL);
  on(&r1, s_region_close, NULL);
  on(&r1, s_end, NULL);
  on(&r1, s_pstop, NULL);
  end();

  /* 6. What runs when a trace stops: plain threads mid-run, a G running
   *    on a runtime's P, one runnable that never ran, one blocked; threads
   *    that end during the trace. */
  begin("running");
  on(&r1, s_p0, NULL);
  on(&r1, s_create_a, NULL);
  on(&r1, s_create_b, NULL);
  on(&r1, s_start_a, NULL);
  on(&r2, s_p1, NULL);
  on(&r2, s_create_c, NULL);
  on(&r2, s_start_c, NULL);
  on(&r2, s_block_recv, NULL);
  on(&r3, s_p2, NULL);
  on(&r3, s_create_d, NULL);
  on(&r3, s_start_d, NULL);
  on(&m, s_log, NULL);
  on(&p, s_log, NULL);
  actor_join(&p);
  end();
  begin("running_2");
  on(&r1, s_log, NULL);
  on(&r1, s_end, NULL);
  on(&r2, s_unblock_c, NULL);
  on(&r2, s_start_c, NULL);
  on(&r2, s_end, NULL);
  on(&r2, s_start_b, NULL);
  on(&r2, s_end, NULL);
  actor_join(&r3); /* its thread ends with d running on P 2 */
  actor_join(&m);
  end();

  const char *fmt = getenv("CTRACE_FORMAT");
  if (fmt && !strcmp(fmt, "go1.22")) {
    gap(&r1);
    /* 8. P numbers 4096 apart, each held by a thread of its own: each
     *    states its own status. */
    begin("procs_4096_apart");
    on(&r1, s_p1, NULL);
    on(&r2, s_p4097, NULL);
    on(&r1, s_create_a, NULL);
    on(&r1, s_start_a, NULL);
    on(&r2, s_create_b, NULL);
    on(&r2, s_start_b, NULL);
    on(&r2, s_log, NULL);
    on(&r1, s_end, NULL);
    on(&r2, s_end, NULL);
    on(&r1, s_pstop, NULL);
    on(&r2, s_pstop, NULL);
    end();
  }
  actor_join(&r1);
  actor_join(&r2);
  return 0;
}
