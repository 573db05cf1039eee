/* bench_events: what one traced event costs, next to a floor loop.
 *
 *   bench_events [-p PASSES] [-r ROUNDS] [-m MS_PER_ROUND] [-c CASE[,CASE...]] [-f go1.11|go1.22]
 *
 * Every case runs in one process, side by side with the floor: a round of
 * the floor, a round of the case, a round of the floor, ..., each round a
 * fixed number of iterations sized to about 20 ms. The machine this runs on
 * is shared and noisy, so a run's figure is the median of its rounds and
 * the case is reported as the ratio of its median to the median of the
 * floor rounds interleaved with it. Rounds are timed with the thread's CPU
 * clock (CLOCK_THREAD_CPUTIME_ID), so time a round spends descheduled by
 * other load does not count; stderr repeats the ratios by wall clock.
 *
 * Other load also slows code down while it runs (a neighbour on the same
 * physical core, we guess: the rdtsc-bound floor barely moves, the event
 * paths slow by up to 2x, for a second or so at a time), and the CPU
 * clock cannot see that. So the whole set of cases runs in several passes
 * (9 by default, 3 rounds of the floor and of the case per run, each run
 * with a trace of its own), and each case is reported from its best pass:
 * the pass with the lowest ratio of medians, with that pass's ns per event
 * and floor. Such noise only ever adds time, so the best of 9 passes is the
 * cost undisturbed; stderr gives every pass and the median over passes,
 * which is what a noisier view would report.
 *
 * The floor is the least a tracer could do per event: read the TSC and
 * store 8 bytes into a thread-local 64 KiB ring, in a function of its own
 * (the traced cases call a library function, so the floor calls one too).
 *
 * While a traced case runs, the trace goes to /dev/null through
 * ctrace_start_fd, whose background thread reads it as it is produced.
 * Bytes per event are the reader's byte total (ctrace_stats.bytes, counted
 * as the reader consumes) over the events written (ctrace_stats.events),
 * both summed over the case's traces (one per run, whole, so headers,
 * stack tables and footers are included).
 *
 * Output: one line per case on stdout,
 *   BENCH name=<case> ns_per_event=<x> ratio_to_floor=<r> bytes_per_event=<b>
 *         threads=<n> [scaling=<s>] floor_ns=<f>
 * (one line), where floor_ns is the floor's median per iteration in the
 * pass reported, and
 * threads=2 lines give per-thread figures with both threads running the
 * same loop at once (the floor too). scaling is the 2-thread per-event cost
 * over the 1-thread one, each in units of its own floor (ratio_to_floor
 * at 2 threads over ratio_to_floor at 1), so that a neighbour's load on
 * this shared machine between the two runs does not pass for contention;
 * the floor is core-local, so real contention in the tracer still shows.
 * A case compared with another (the unwind tables' with the frame-pointer
 * walk's) has one more line,
 *   BENCH name=<case> vs=<other> threads=<n> ratio=<r> ratio_min=<a>
 *         ratio_max=<b> passes=<p>
 * where ratio is the median over passes of the case's ratio to the floor
 * over the other's in the same pass (both cases must run: -c a,b).
 * With -f go1.22, the cases run in Go's current format, their names end
 * in -go122, and each run follows one of the same case in the classic
 * format, so the line above compares the two formats pass by pass
 * (vs=<case>); the classic runs have no lines of their own there.
 * Without -f the cases run in the library's default format, Go's current
 * one; -f go1.11 runs them in the classic format alone, named -go111.
 * stderr has progress and, per run, interquartile ranges, the median of
 * per-round ratios, the wall-clock ratio, the bytes per event and the
 * reader's CPU time per event. See BENCHMARKS.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "help.h"
#include <ctrace/ctrace.h>

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define NOIPA __attribute__((noipa))
/* Keeps calls where they are (and out of tail position). */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

enum { MAX_ROUNDS = 101, MAX_PASSES = 25, MAX_THREADS = 2, STACK_FRAMES = 16 };

static int passes = 9, rounds = 3;
static double round_ms = 20;

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* ---- the floor ---------------------------------------------------------- */

static __thread uint64_t floor_ring[65536 / sizeof(uint64_t)];
static __thread unsigned floor_pos;

static NOIPA void floor_op(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  floor_ring[floor_pos] = (uint64_t)hi << 32 | lo;
  floor_pos = (floor_pos + 1) & (65536 / sizeof(uint64_t) - 1);
}

/* ---- loop bodies: each runs n iterations of one thing -------------------- */

typedef void (*body_fn)(uint64_t n);

/* Frames above the loop that last ran in this thread, as the library's
 * stack walk would record them for an event written from the loop. */
static __thread int loop_frames;
static int count_frames(void);

static uint64_t log_task;
static volatile uintptr_t sink;

static NOIPA void body_floor(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) floor_op();
}

static NOIPA void body_heap_alloc(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) ctrace_heap_alloc(i);
}

static NOIPA void body_syscall(uint64_t n) {
  loop_frames = count_frames();
  for (uint64_t i = 0; i < n; i++) {
    ctrace_go_syscall();
    BARRIER();
  }
}

/* The same event from two call sites a frame apart, in turn: each stack
 * differs at every position from the one before it, so the unwind walk
 * finds no rule it kept for a position (src/unwind/unwind.c, last_walk)
 * and looks every new return address up. */
static NOIPA void syscall_one_deeper(void) {
  ctrace_go_syscall();
  BARRIER();
}

static NOIPA void body_syscall_alt(uint64_t n) {
  loop_frames = count_frames();
  for (uint64_t i = 0; i < n; i++) {
    if (i & 1)
      syscall_one_deeper();
    else
      ctrace_go_syscall();
    BARRIER();
  }
}

static NOIPA void body_log(uint64_t n) {
  loop_frames = count_frames();
  for (uint64_t i = 0; i < n; i++) {
    ctrace_log(log_task, "cat", "message");
    BARRIER();
  }
}

/* A message of 32 bytes, as a log's usually is: its copy, not its
 * record's header, is what the bytes cost. */
static NOIPA void body_log_long(uint64_t n) {
  loop_frames = count_frames();
  for (uint64_t i = 0; i < n; i++) {
    ctrace_log(log_task, "cat", "message of thirty-two bytes, ok!");
    BARRIER();
  }
}

/* A scheduler-like mix on a plain thread: the thread blocks on a lock and
 * goes on (GoBlockSync, GoUnblockLocal, GoStartLocal) and makes a system
 * call (GoSysCall): four events per iteration. */
static NOIPA void body_mix(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    ctrace_go_block(CTRACE_BLOCK_SYNC);
    ctrace_thread_resume();
    ctrace_go_syscall();
    BARRIER();
  }
}

/* The same with a user log per iteration (UserLog is 10 bytes in Go's
 * encoding with a 3-byte message): five events per iteration. */
static NOIPA void body_mix_log(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    ctrace_go_block(CTRACE_BLOCK_SYNC);
    ctrace_thread_resume();
    ctrace_go_syscall();
    ctrace_log(log_task, "cat", "msg");
    BARRIER();
  }
}

#ifdef BENCH_HAVE_LIBUNWIND
static int unwound; /* frames the last unw_backtrace returned */
static NOIPA void body_unwind(uint64_t n) {
  void *pcs[STACK_FRAMES];
  loop_frames = count_frames();
  int got = 0;
  for (uint64_t i = 0; i < n; i++) {
    got = unw_backtrace(pcs, STACK_FRAMES);
    sink += (uintptr_t)got;
    BARRIER();
  }
  unwound = got;
}
#endif

/* ---- call sites STACK_FRAMES deep ----------------------------------------- */

/* Extra frames between the worker and the loop, so that the stack the
 * library walks from its public function holds STACK_FRAMES frames. */
static int chain_depth;

/* bench_nofp.c: the same chain built without frame pointers. */
void bench_nofp_chain(int n, body_fn leaf, uint64_t iters);

static NOIPA void chain(int n, body_fn leaf, uint64_t iters) {
  if (n > 0)
    chain(n - 1, leaf, iters);
  else
    leaf(iters);
  BARRIER();
}

/* The library's frame-pointer walk (src/runtime/stack.c, capture), started
 * from a function the leaf calls, as ctrace_go_syscall would be: counts the
 * frames it would record. */
static __thread uintptr_t my_stack_lo, my_stack_hi;

static NOIPA int count_frames(void) {
  uintptr_t *f = __builtin_frame_address(0);
  uintptr_t hi = (uintptr_t)f >= my_stack_lo && (uintptr_t)f < my_stack_hi ? my_stack_hi : 0;
  int n = 1;
  while (n < CTRACE_MAX_STACK_DEPTH) {
    uintptr_t next = f[0];
    if (next <= (uintptr_t)f || next & 7 || next + 16 > hi) break;
    f = (uintptr_t *)next;
    if (f[1] < 4096) break;
    n++;
  }
  return n;
}

static NOIPA void body_probe(uint64_t n) { loop_frames = count_frames(); }

/* ---- one run: a case at a thread count, interleaved with the floor -------- */

typedef struct bench_case {
  const char *name;
  body_fn body;
  int deep;    /* call from STACK_FRAMES deep; DEEP_NOFP: through bench_nofp_chain */
  int trace;   /* 0: tracing off; 1: no stacks; 2: stacks, depth 32 (DEEP_NOFP: 16) */
  int threads; /* 1, or 1 and 2 */
  int unwind;  /* ctrace_options.unwind */
  const char *vs; /* also reported as a ratio to this case, pass by pass */
  bool flight;    /* into a flight recorder (Go's current format: run with
                     -f go1.22 only, named without its suffix) */
} bench_case;

typedef struct run {
  const bench_case *c;
  int nthreads;
  uint64_t iters_floor, iters_case;
  double floor_ns[MAX_ROUNDS][MAX_THREADS]; /* per iteration, thread CPU time */
  double case_ns[MAX_ROUNDS][MAX_THREADS];
  double floor_wall[MAX_ROUNDS][MAX_THREADS]; /* per iteration, wall clock */
  double case_wall[MAX_ROUNDS][MAX_THREADS];
  _Atomic uint64_t case_iters; /* every case iteration run, for events/iter */
  int frames[MAX_THREADS];     /* loop_frames after the last timed round */
  uint64_t cpu[MAX_THREADS];   /* each worker's whole CPU time */
  pthread_barrier_t bar;
} run;

typedef struct worker_arg {
  run *r;
  int id;
} worker_arg;

#define DEEP_NOFP 2

static void run_body(body_fn f, int deep, uint64_t n) {
  /* Past STACK_FRAMES: the walk is cut at 16 frames, all but the loop's
   * own in code without frame pointers. */
  if (deep == DEEP_NOFP)
    bench_nofp_chain(chain_depth + 4, f, n);
  else if (deep)
    chain(chain_depth, f, n);
  else
    f(n);
}

/* Runs n iterations; returns the thread's CPU time per iteration and sets
 * *wall to the wall-clock time per iteration. CPU time is what the figures
 * use: on this shared machine a round is often descheduled for a while,
 * which the wall clock counts and the thread's CPU clock does not. Not
 * inlined, so that the runs and the probe below call the loops from the
 * same depth. */
static NOIPA double per_iter(body_fn f, int deep, uint64_t n, double *wall) {
  uint64_t w0 = now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  run_body(f, deep, n);
  uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w1 = now_ns();
  if (wall) *wall = (double)(w1 - w0) / (double)n;
  return (double)(c1 - c0) / (double)n;
}

/* Iterations for a round of about round_ms. */
static uint64_t calibrate(body_fn f, int deep) {
  per_iter(f, deep, 1000, NULL);
  double best = 1e30;
  for (int i = 0; i < 3; i++) {
    double ns = per_iter(f, deep, 20000, NULL);
    if (ns < best) best = ns;
  }
  double n = round_ms * 1e6 / best;
  return n < 1000 ? 1000 : (uint64_t)n;
}

static void set_stack_bounds(void) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      my_stack_lo = (uintptr_t)addr;
      my_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
  }
}

static void *worker(void *arg) {
  worker_arg *wa = arg;
  run *r = wa->r;
  const bench_case *c = r->c;
  int id = wa->id;
  set_stack_bounds();
  /* A plain thread: its own G on its own P (without this, events that do
   * not name the current G would go to the shared no-P buffer). */
  ctrace_thread_g();
  if (id == 0) {
    /* The logs' task, created in each trace (ids are valid without one). */
    if (c->trace || !log_task) log_task = ctrace_task_create(0, "bench");
    r->iters_floor = calibrate(body_floor, 0);
    r->iters_case = calibrate(c->body, c->deep);
    atomic_fetch_add(&r->case_iters, 1000 + 3 * 20000);
  }
  pthread_barrier_wait(&r->bar);
  /* Warm up together: caches, buffers, the stack and string tables. */
  body_floor(r->iters_floor / 10);
  run_body(c->body, c->deep, r->iters_case / 10);
  atomic_fetch_add(&r->case_iters, r->iters_case / 10);
  for (int i = 0; i < rounds; i++) {
    pthread_barrier_wait(&r->bar);
    r->floor_ns[i][id] = per_iter(body_floor, 0, r->iters_floor, &r->floor_wall[i][id]);
    pthread_barrier_wait(&r->bar);
    r->case_ns[i][id] = per_iter(c->body, c->deep, r->iters_case, &r->case_wall[i][id]);
    atomic_fetch_add(&r->case_iters, r->iters_case);
  }
  r->frames[id] = loop_frames;
  r->cpu[id] = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct summary {
  double med, lo, hi; /* median, 25th and 75th percentile */
} summary;

static double round_mean(double v[][MAX_THREADS], int i, int nthreads) {
  double s = 0;
  for (int t = 0; t < nthreads; t++) s += v[i][t];
  return s / nthreads;
}

static summary sorted_summary(double *a) {
  qsort(a, (size_t)rounds, sizeof a[0], cmp_double);
  summary s = {a[rounds / 2], a[rounds / 4], a[(3 * rounds) / 4]};
  if (rounds % 2 == 0) s.med = (a[rounds / 2 - 1] + a[rounds / 2]) / 2;
  return s;
}

/* Per round, the mean over threads; then the median over rounds. */
static summary summarize(double v[][MAX_THREADS], int nthreads) {
  double a[MAX_ROUNDS];
  for (int i = 0; i < rounds; i++) a[i] = round_mean(v, i, nthreads);
  return sorted_summary(a);
}

/* The median of case/floor per pair of neighbouring rounds: a check on the
 * ratio of medians (stderr only). */
static double pair_ratio(run *r) {
  double a[MAX_ROUNDS];
  for (int i = 0; i < rounds; i++)
    a[i] = round_mean(r->case_ns, i, r->nthreads) / round_mean(r->floor_ns, i, r->nthreads);
  return sorted_summary(a).med;
}

typedef struct result {
  double ns, ratio, floor_ns; /* per event (CPU clock), its ratio, the floor */
  double events, bytes;       /* written and read in this run's trace */
  int ok;
} result;

static int devnull = -1;
/* The format of the traced runs (ctrace_options.format; 0: the default). */
static int run_format;

/* One run: a trace of its own (if the case traces), nthreads workers that
 * each run `rounds` rounds of the floor and of the case, interleaved. */
static result do_run(const bench_case *c, int nthreads) {
  result res = {0};
  run *r = calloc(1, sizeof *r);
  if (!r) return res;
  r->c = c;
  r->nthreads = nthreads;
  pthread_barrier_init(&r->bar, NULL, (unsigned)nthreads);

  ctrace_stats s0, s1;
  if (c->trace) {
    ctrace_options o = {0};
    o.no_stacks = c->trace == 1;
    o.stack_depth = c->deep == DEEP_NOFP ? STACK_FRAMES : 32;
    o.unwind = c->unwind;
    o.format = run_format;
    int err = c->flight ? ctrace_flight_start(&(ctrace_flight_options){.trace = &o})
                        : ctrace_start_fd(devnull, &o);
    if (err) {
      fprintf(stderr, "bench: starting a trace: %s\n", ctrace_strerror(err));
      free(r);
      return res;
    }
  }
  ctrace_stats_get(&s0);
  /* The reader's CPU time: the process's, less the workers' and ours. */
  uint64_t proc0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), self0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

  pthread_t th[MAX_THREADS];
  worker_arg wa[MAX_THREADS];
  for (int t = 0; t < nthreads; t++) {
    wa[t] = (worker_arg){r, t};
    if (pthread_create(&th[t], NULL, worker, &wa[t]) != 0) {
      fprintf(stderr, "bench: pthread_create failed\n");
      exit(1);
    }
  }
  for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);

  uint64_t stop0 = now_ns();
  if (c->trace) {
    int err = c->flight ? ctrace_flight_stop() : ctrace_stop();
    if (err) fprintf(stderr, "bench: stopping a trace: %s\n", ctrace_strerror(err));
  }
  uint64_t stop_ns = now_ns() - stop0;
  uint64_t self1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), proc1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  ctrace_stats_get(&s1);
  double reader_cpu = (double)(proc1 - proc0) - (double)(self1 - self0);
  for (int t = 0; t < nthreads; t++) reader_cpu -= (double)r->cpu[t];

  summary fl = summarize(r->floor_ns, nthreads), cs = summarize(r->case_ns, nthreads);
  summary flw = summarize(r->floor_wall, nthreads), csw = summarize(r->case_wall, nthreads);
  double events = (double)(s1.events - s0.events);
  double iters = (double)atomic_load(&r->case_iters);
  /* Events per iteration: one, or five for the mix, plus a handful per
   * trace (ProcStart, GoStart, ...). */
  double measured_epi = c->trace && events > 0 ? events / iters : 1;
  double epi = fmax(1, round(measured_epi));
  if (fabs(measured_epi - epi) > 0.01 * epi)
    fprintf(stderr, "bench: warning: %s wrote %.3f events per iteration\n", c->name, measured_epi);
  res.ns = cs.med / epi;
  res.floor_ns = fl.med;
  res.ratio = cs.med / epi / fl.med;
  res.events = c->trace ? events : 0;
  res.bytes = c->trace ? (double)(s1.bytes - s0.bytes) : 0;
  res.ok = 1;
  fprintf(stderr,
          "  %-16s t=%d  case %7.2f ns [IQR %.2f..%.2f] x%-7llu floor %5.2f ns [%.2f..%.2f]  "
          "ratio %5.2f (per-round %5.2f, wall %5.2f)",
          c->name, nthreads, cs.med / epi, cs.lo / epi, cs.hi / epi,
          (unsigned long long)r->iters_case, fl.med, fl.lo, fl.hi, res.ratio,
          pair_ratio(r) / epi, csw.med / epi / flw.med);
  if (c->trace && events > 0)
    fprintf(stderr, "  %.2f B/ev, %.2f ev/iter, lost %llu, reader %.2f ns/ev, stop %.1f ms",
            res.bytes / events, measured_epi, (unsigned long long)(s1.lost - s0.lost),
            reader_cpu / events, (double)stop_ns / 1e6);
  fprintf(stderr, "\n");
#ifdef BENCH_HAVE_LIBUNWIND
  if (c->body == body_unwind && unwound != STACK_FRAMES)
    fprintf(stderr, "bench: warning: unw_backtrace returned %d frames, not %d\n", unwound,
            STACK_FRAMES);
#endif
  for (int t = 0; c->deep && c->deep != DEEP_NOFP && t < nthreads; t++)
    if (r->frames[t] != STACK_FRAMES)
      fprintf(stderr, "bench: warning: %s ran %d frames deep, not %d\n", c->name, r->frames[t],
              STACK_FRAMES);
  pthread_barrier_destroy(&r->bar);
  free(r);
  return res;
}

static double median(double *a, int n) {
  double b[MAX_PASSES];
  memcpy(b, a, (size_t)n * sizeof *a);
  qsort(b, (size_t)n, sizeof b[0], cmp_double);
  return n % 2 ? b[n / 2] : (b[n / 2 - 1] + b[n / 2]) / 2;
}

/* The call chain depth that puts the loops STACK_FRAMES frames deep, as
 * the library's walk counts them, in a worker thread like the runs'. */
static int probed_frames;
static void *probe_main(void *arg) {
  (void)arg;
  set_stack_bounds();
  chain_depth = 0;
  per_iter(body_probe, 1, 1, NULL);
  int base = loop_frames; /* chain(0) is one of them */
  chain_depth = base < STACK_FRAMES ? STACK_FRAMES - base : 0;
  per_iter(body_probe, 1, 1, NULL);
  probed_frames = loop_frames;
  return NULL;
}

static const bench_case cases[] = {
    {"event-nostack", body_heap_alloc, 0, 1, 2, 0, NULL, false},
    /* Frame pointers, as before unwind tables: the walk to beat. */
    {"event-stack16", body_syscall, 1, 2, 2, CTRACE_UNWIND_FP, NULL, false},
    /* The default (auto) on the same frame-pointer code, which also walks
     * on through libc's start_thread and clone3 by their tables. */
    {"event-stack16-auto", body_syscall, 1, 2, 1, CTRACE_UNWIND_AUTO, "event-stack16", false},
    /* 16 frames, 15 of them without frame pointers: through the tables. */
    {"event-stack16-nofp", body_syscall, DEEP_NOFP, 2, 2, CTRACE_UNWIND_AUTO, "event-stack16", false},
    /* The same, from two places in turn: the walk's per-thread rules by
     * position never apply. */
    {"event-stack16-nofp-alt", body_syscall_alt, DEEP_NOFP, 2, 1, CTRACE_UNWIND_AUTO,
     "event-stack16", false},
    {"user-log", body_log, 0, 1, 2, 0, NULL, false},
    {"user-log-long", body_log_long, 0, 1, 2, 0, NULL, false},
    /* The same events into a flight recorder: the same hot path, with no
     * writer to feed. */
    {"flight-nostack", body_heap_alloc, 0, 1, 2, 0, "event-nostack", true},
    {"flight-stack16", body_syscall, 1, 2, 2, CTRACE_UNWIND_FP, "event-stack16", true},
    {"user-log-stack16", body_log, 1, 2, 2, CTRACE_UNWIND_FP, NULL, false},
    {"sched-mix", body_mix, 0, 2, 1, 0, NULL, false},
    {"sched-log-mix", body_mix_log, 0, 2, 1, 0, NULL, false},
#ifdef BENCH_HAVE_LIBUNWIND
    {"stack16-unwind", body_unwind, 1, 0, 1, 0, "event-stack16", false},
#endif
    {"disabled", body_log, 0, 0, 1, 0, NULL, false},
};

#define NCASES (sizeof cases / sizeof cases[0])

/* Whether case name is in the comma-separated list only (NULL: all). */
static bool selected(const char *only, const char *name) {
  if (!only) return true;
  size_t n = strlen(name);
  for (const char *p = only; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0)) return true;
  return false;
}

static int case_index(const char *name) {
  for (size_t i = 0; i < NCASES; i++)
    if (strcmp(cases[i].name, name) == 0) return (int)i;
  return -1;
}

typedef result results[NCASES][MAX_THREADS][MAX_PASSES];

/* A case against its reference vs (bench_case.vs, or itself in the other
 * format), whose results are in ref: in each pass, the ratio of their
 * ratios to the floor, both measured in that pass, minutes apart at most,
 * so that the machine's load drifting between passes cancels; the median
 * over passes, and the least and greatest. */
static void report_vs(const bench_case *c, const char *vs, int n, results res, results ref,
                      const char *suffix, const char *ref_suffix) {
  int i = (int)(c - cases), j = case_index(vs);
  if (j < 0 || n > cases[j].threads) return;
  double q[MAX_PASSES];
  int k = 0;
  for (int p = 0; p < passes; p++) {
    const result *a = &res[i][n - 1][p], *b = &ref[j][n - 1][p];
    if (a->ok && b->ok && b->ratio > 0) q[k++] = a->ratio / b->ratio;
  }
  if (k == 0) return;
  double lo = q[0], hi = q[0];
  for (int p = 1; p < k; p++) {
    if (q[p] < lo) lo = q[p];
    if (q[p] > hi) hi = q[p];
  }
  printf("BENCH name=%s%s vs=%s%s threads=%d ratio=%.2f ratio_min=%.2f ratio_max=%.2f passes=%d\n",
         c->name, suffix, vs, ref_suffix, n, median(q, k), lo, hi, k);
}

int main(int argc, char **argv) {
  const char *only = NULL, *suffix = "";
  bench_help(argc, argv,
             "usage: bench_events [-p PASSES] [-r ROUNDS] [-m MS_PER_ROUND] [-c CASE[,CASE...]] [-f go1.11|go1.22]\n"
             "What one traced event costs, next to a floor loop (BENCH lines; BENCHMARKS.md).\n");
  int opt;
  while ((opt = getopt(argc, argv, "p:r:m:c:f:")) != -1) {
    switch (opt) {
    case 'p':
      passes = atoi(optarg);
      break;
    case 'r':
      rounds = atoi(optarg);
      break;
    case 'm':
      round_ms = atof(optarg);
      break;
    case 'c':
      only = optarg;
      break;
    case 'f':
      /* The trace format; its cases' names get a suffix. */
      if (strcmp(optarg, "go1.22") == 0) {
        suffix = "-go122";
      } else if (strcmp(optarg, "go1.11") == 0) {
        /* The classic format alone, which the default no longer is. */
        run_format = CTRACE_FORMAT_GO111;
        suffix = "-go111";
      } else {
        fprintf(stderr, "bench: -f go1.11 or go1.22\n");
        return 2;
      }
      break;
    default:
      fprintf(stderr, "usage: %s [-p PASSES] [-r ROUNDS] [-m MS_PER_ROUND] [-c CASE[,CASE...]] [-f FORMAT]\n",
              argv[0]);
      return 2;
    }
  }
  if (passes < 1 || passes > MAX_PASSES || rounds < 1 || rounds > MAX_ROUNDS || round_ms <= 0) {
    fprintf(stderr, "bench: passes must be 1..%d, rounds 1..%d, ms > 0\n", MAX_PASSES,
            MAX_ROUNDS);
    return 2;
  }
  devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) {
    perror("/dev/null");
    return 1;
  }

  pthread_t pt;
  pthread_create(&pt, NULL, probe_main, NULL);
  pthread_join(pt, NULL);
  fprintf(stderr,
          "bench: %d passes over the cases, each run %d rounds of ~%.0f ms of the floor and of "
          "the case; stack16 call sites are %d frames deep\n",
          passes, rounds, round_ms, probed_frames);
  if (probed_frames != STACK_FRAMES)
    fprintf(stderr, "bench: warning: stack16 call sites are %d frames deep, not %d\n",
            probed_frames, STACK_FRAMES);

  /* Go's current format: each run after the classic format's (ref). */
  bool twin = strcmp(suffix, "-go122") == 0;
  static results res, ref;
  uint64_t t0 = now_ns();
  for (int p = 0; p < passes; p++) {
    fprintf(stderr, "bench: pass %d of %d\n", p + 1, passes);
    for (size_t i = 0; i < NCASES; i++) {
      if (!selected(only, cases[i].name) || (cases[i].flight && !twin)) continue;
      for (int n = 1; n <= cases[i].threads; n++) {
        if (twin && cases[i].trace && !cases[i].flight) {
          run_format = CTRACE_FORMAT_GO111;
          fprintf(stderr, "  (go1.11)");
          ref[i][n - 1][p] = do_run(&cases[i], n);
          run_format = CTRACE_FORMAT_GO122;
          fprintf(stderr, "  (go1.22)");
        }
        res[i][n - 1][p] = do_run(&cases[i], n);
      }
    }
  }

  /* Per case: its best pass (see the top of this file). */
  for (size_t i = 0; i < NCASES; i++) {
    const bench_case *c = &cases[i];
    if (!selected(only, c->name) || (c->flight && !twin)) continue;
    const char *name_sfx = c->flight ? "" : suffix;
    double ratio1 = 0, ns1 = 0, med_ratio1 = 0;
    for (int n = 1; n <= c->threads; n++) {
      double ns[MAX_PASSES], ratio[MAX_PASSES], fl[MAX_PASSES], events = 0, bytes = 0;
      int k = 0;
      for (int p = 0; p < passes; p++) {
        result *r = &res[i][n - 1][p];
        if (!r->ok) continue;
        ns[k] = r->ns;
        ratio[k] = r->ratio;
        fl[k] = r->floor_ns;
        events += r->events;
        bytes += r->bytes;
        k++;
      }
      if (k == 0) continue;
      int best = 0;
      for (int p = 1; p < k; p++)
        if (ratio[p] < ratio[best]) best = p;
      double mns = ns[best], mratio = ratio[best], mfl = fl[best];
      double med_ratio = median(ratio, k), med_ns = median(ns, k);
      printf("BENCH name=%s%s ns_per_event=%.2f ratio_to_floor=%.2f bytes_per_event=%.2f threads=%d",
             c->name, name_sfx, mns, mratio, events > 0 ? bytes / events : 0, n);
      if (n == 1) {
        ratio1 = mratio;
        ns1 = mns;
        med_ratio1 = med_ratio;
      } else if (ratio1 > 0) {
        printf(" scaling=%.2f", mratio / ratio1);
      }
      printf(" floor_ns=%.2f\n", mfl);
      fprintf(stderr, "  %-16s t=%d  ratio per pass:", c->name, n);
      for (int p = 0; p < k; p++) fprintf(stderr, " %.2f", ratio[p]);
      fprintf(stderr, "  best %.2f, median %.2f (%.2f ns)", mratio, med_ratio, med_ns);
      if (n > 1 && ratio1 > 0)
        fprintf(stderr, "; scaling %.2f (%.2f in ns, %.2f by medians)", mratio / ratio1,
                mns / ns1, med_ratio / med_ratio1);
      fprintf(stderr, "\n");
    }
  }
  for (size_t i = 0; i < NCASES; i++) {
    const bench_case *c = &cases[i];
    if (!selected(only, c->name) || (c->flight && !twin)) continue;
    for (int n = 1; n <= c->threads; n++) {
      if (c->vs && selected(only, c->vs))
        report_vs(c, c->vs, n, res, res, c->flight ? "" : suffix, suffix);
      if (twin && c->trace && !c->flight) report_vs(c, c->name, n, res, ref, suffix, "");
    }
  }
  fflush(stdout);
  fprintf(stderr, "bench: done in %.1f s\n", (double)(now_ns() - t0) / 1e9);
  close(devnull);
  return 0;
}
