/* CPU samples in the trace (ctrace_options.cpu_hz): what each thread was
 * running, next to why it waited, as Go 1.19's tracer records them
 * (EvCPUSample, the `go 1.19 trace` header).
 *
 * Mechanism. Each traced thread has a POSIX timer on its own CPU-time clock
 * (timer_create on pthread_getcpuclockid, SIGEV_THREAD_ID), so a thread is
 * sampled in proportion to the CPU it uses and a thread that sleeps is
 * never interrupted. Such timers expire on the kernel's tick: the kernel's
 * HZ (250 on most distributions) caps the rate per thread, as it caps
 * Go's own per-thread profiling timers. The timer raises a real-time signal that the program
 * left at its default disposition when sampling first started: never
 * SIGPROF, which a program that profiles itself (setitimer(ITIMER_PROF))
 * keeps for its own. The handler is installed with SA_RESTART, so a
 * system call it lands in is restarted where the kernel can. Chosen over
 * perf_event_open, which needs no signal but is refused outright where
 * kernel.perf_event_paranoid is 3 (Debian's default): a profiler that works
 * only on some machines is not one users can rely on.
 *
 * The handler (async-signal-safe: no lock, no allocation, no libc call but
 * errno's save) reads the interrupted RIP, RBP and RSP, walks the stack
 * (the unwind tables where the code has no frame pointer, as a leaf
 * function has none; frame pointers otherwise) bounds-checked against the
 * stack the thread is on, and stores
 * the sample in the thread's ring: one producer (the handler, on its own
 * thread), one consumer. The trace's reader drains the rings every few
 * milliseconds into CPUSample events in the no-P buffer (the sample keeps
 * its own time, which Go's reader orders it by), so the event path gains
 * nothing. A full ring drops the sample and counts it lost.
 *
 * Each sample names the G and P the trace shows running on the thread,
 * or none (G 0, P -1) where the thread has not written since the trace
 * began or is writing an event, so a sample never contradicts the trace's
 * own state.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "reader.h"
#include "unwind/unwind.h"

#define PROF_SLOTS 64   /* per thread; the reader drains every 10 ms or sooner */
#define PROF_DEPTH 64   /* frames per sample */

typedef struct prof_sample {
  uint64_t ticks;
  uint64_t g;
  int64_t p;
  uint64_t gen; /* the generation tracing was in (state >> 1) */
  int n;
  uintptr_t pcs[PROF_DEPTH];
} prof_sample;

struct ctrace__prof {
  _Atomic uint64_t head, tail; /* head: the handler's; tail: the drainer's */
  timer_t timer;
  bool armed;
  prof_sample slot[PROF_SLOTS];
};

static int prof_sig;          /* the signal taken, 0 before the first start */
static long prof_period_ns;   /* 0: sampling off */

/* ---- the handler ----------------------------------------------------------- */

static int walk(const ucontext_t *uc, const ctrace__thread *t, uintptr_t *pcs, int depth) {
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  uintptr_t lo = sp, hi = 0;
  ctrace_g *g = t->curg;
  if (g && g->ctrace__stack_hi && sp >= g->ctrace__stack_lo && sp < g->ctrace__stack_hi)
    hi = g->ctrace__stack_hi;
  else if (sp >= t->stack_lo && sp < t->stack_hi)
    hi = t->stack_hi;
  if (ctrace__cfg.unwind != CTRACE_UNWIND_FP) {
    /* The unwind tables (src/unwind/) where the code has no frame pointer,
     * a leaf's included: without building any (not async-signal-safe), so
     * an object no event's stack has reached yet ends the walk there. */
    ctrace__unw_regs r = {pc, sp, fp, true};
    ctrace__unw_bounds b = {sp, hi, 0, 0};
    int n = hi ? ctrace__unwind(&r, &b, ctrace__cfg.unwind, 0, pcs, depth, NULL) : 0;
    if (n > 0) {
      pcs[0] = pc + 1; /* see below */
      return n;
    }
  }
  int n = 0;
  /* +1: a frame holds a return address, looked up at pc-1; this is the
   * interrupted instruction itself. */
  pcs[n++] = pc + 1;
  /* RBP may hold anything in code without frame pointers: a frame is
   * followed only while it lies inside the stack, above the last. */
  while (n < depth && fp >= lo && fp + 16 <= hi && !(fp & 7)) {
    const uintptr_t *f = (const uintptr_t *)fp;
    if (f[1] < 4096) break;
    pcs[n++] = f[1];
    if (f[0] <= fp) break;
    lo = fp;
    fp = f[0];
  }
  return n;
}

static void on_sample(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  int saved = errno;
  ctrace__thread *t = &ctrace__tls;
  struct ctrace__prof *pr = t->prof;
  if (pr && ctrace__on()) {
    uint64_t head = atomic_load_explicit(&pr->head, memory_order_relaxed);
    if (head - atomic_load_explicit(&pr->tail, memory_order_acquire) >= PROF_SLOTS) {
      atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    } else {
      prof_sample *s = &pr->slot[head % PROF_SLOTS];
      s->ticks = ctrace__ticks();
      s->gen = atomic_load_explicit(&ctrace__state, memory_order_relaxed) >> 1;
      /* The trace's view, if this thread has written in this trace and is
       * not writing now: inside a write section (seq odd) the event may be
       * written and the G's trace state not yet changed to match. */
      bool current = t->state == atomic_load_explicit(&ctrace__state, memory_order_relaxed) &&
                     !(atomic_load_explicit(&t->seq, memory_order_relaxed) & 1);
      ctrace_g *g = current ? t->tcurg : NULL;
      s->g = g ? g->id : 0;
      s->p = current && g ? t->tp : -1;
      s->n = walk(uc, t, s->pcs, ctrace__cfg.depth < PROF_DEPTH ? ctrace__cfg.depth : PROF_DEPTH);
      atomic_store_explicit(&pr->head, head + 1, memory_order_release);
    }
  }
  errno = saved;
}

/* ---- timers ------------------------------------------------------------------ */

/* The highest real-time signal the program has left alone. */
static int pick_signal(void) {
  for (int s = SIGRTMAX; s > SIGRTMIN + 2; s--) {
    struct sigaction old;
    if (sigaction(s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
      return s;
  }
  return 0;
}

bool ctrace__prof_init(int hz) {
  prof_period_ns = hz > 0 ? 1000000000L / hz : 0;
  if (!prof_period_ns || prof_sig) return prof_period_ns == 0 || prof_sig != 0;
  int s = pick_signal();
  if (!s) return false;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  if (sigaction(s, &sa, NULL) != 0) return false;
  prof_sig = s;
  return true;
}

/* Arms t's timer for this trace, under the threads lock. t's ring is
 * allocated once and kept. */
void ctrace__prof_arm(ctrace__thread *t, pthread_t th) {
  if (!prof_period_ns || !prof_sig) return;
  struct ctrace__prof *pr = t->prof;
  if (!pr) {
    pr = calloc(1, sizeof *pr);
    if (!pr) return;
    t->prof = pr;
  }
  if (pr->armed) return;
  clockid_t clk;
  if (pthread_getcpuclockid(th, &clk) != 0) return;
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = prof_sig;
  ev._sigev_un._tid = t->tid;
  if (timer_create(clk, &ev, &pr->timer) != 0) return;
  struct itimerspec it = {{prof_period_ns / 1000000000L, prof_period_ns % 1000000000L},
                          {prof_period_ns / 1000000000L, prof_period_ns % 1000000000L}};
  if (timer_settime(pr->timer, 0, &it, NULL) != 0) {
    timer_delete(pr->timer);
    return;
  }
  pr->armed = true;
}

void ctrace__prof_disarm(ctrace__thread *t) {
  struct ctrace__prof *pr = t->prof;
  if (pr && pr->armed) {
    timer_delete(pr->timer);
    pr->armed = false;
  }
}

/* ---- draining ----------------------------------------------------------------- */

/* ---- Go's current format ------------------------------------------------------
 *
 * As Go's runtime writes them (runtime/tracecpu.go): each generation's
 * samples in batches of their own, of no thread (M is Go's "no M",
 * 2^64-1), each batch beginning with EvCPUSamples, then CPUSample
 * [time, M, P, G, stack] with the sample's own absolute time (Go's reader
 * sorts a generation's samples by it and merges them with its events).
 * A sample goes into the generation it was taken in, whose stack table
 * holds its stack: the end of a generation drains every ring into it
 * before its batch and tables go out (ctrace__prof_seal). One taken in a
 * generation already sealed (its handler ran as the generation ended)
 * goes into the one being written, no earlier than its batch opened.
 * Under the threads lock, as the drains are. */
static ctrace__buf *cpu_bufs[2]; /* by generation parity */
static uint64_t cpu_sealed;      /* the last generation sealed */

/* At start. The batches are NULL but in the child of a fork, where they
 * are the parent's trace's: left to it. */
void ctrace__prof_reset(uint64_t gen0) {
  cpu_sealed = gen0 - 1;
  cpu_bufs[0] = cpu_bufs[1] = NULL;
}

/* Writes s into gen's batch of samples, as thread t's. */
static bool put_sample2(const ctrace__thread *t, const prof_sample *s, uint64_t gen) {
  ctrace__buf **bp = &cpu_bufs[gen & 1];
  if (*bp && (*bp)->gen != gen) { /* a generation that ended unsealed (a gap) */
    ctrace__buf_put(*bp);
    *bp = NULL;
  }
  if (!*bp || (size_t)((*bp)->end - (*bp)->pos) < 1 + 5 * CTRACE_MAX_VARINT) {
    if (*bp) ctrace__queue_full(*bp);
    *bp = ctrace__buf_get();
    if (!*bp) return false;
    ctrace__open_batch2(*bp, gen, UINT64_MAX, ctrace__ticks());
    *(*bp)->pos++ = CTRACE_EV122_CPUSamples;
  }
  ctrace__buf *b = *bp;
  /* The stack goes into gen's table. */
  ctrace__thread as = {.state = gen << 1 | 1};
  uint64_t ticks = s->gen == gen || s->ticks >= b->last_ticks ? s->ticks : b->last_ticks;
  uint8_t *q = b->pos;
  *q++ = CTRACE_EV122_CPUSample;
  q = ctrace__put_uvarint(q, ticks);
  q = ctrace__put_uvarint(q, (uint64_t)t->tid);
  q = ctrace__put_uvarint(q, (uint64_t)s->p); /* -1, no P: Go's 2^64-1 */
  q = ctrace__put_uvarint(q, s->g);
  b->pos = ctrace__put_uvarint(q, ctrace__cfg.stacks ? ctrace__pcs_stack_id(&as, s->pcs, s->n) : 0);
  return true;
}

/* t's samples into the generations they were taken in. */
static void drain2(ctrace__thread *t, struct ctrace__prof *pr, uint64_t tail, uint64_t head) {
  uint64_t s = atomic_load_explicit(&ctrace__state, memory_order_acquire);
  for (; tail != head; tail++) {
    const prof_sample *smp = &pr->slot[tail % PROF_SLOTS];
    uint64_t gen = smp->gen > cpu_sealed ? smp->gen : cpu_sealed + 1;
    /* A sealed generation's sample with tracing off (a stop, a gap) has
     * no generation to go in. */
    bool ok = (gen != smp->gen ? (s & 1) && gen == s >> 1 : true) && put_sample2(t, smp, gen);
    atomic_fetch_add_explicit(ok ? &ctrace__stats.events : &ctrace__stats.lost, 1, memory_order_relaxed);
  }
  atomic_store_explicit(&pr->tail, tail, memory_order_release);
}

void ctrace__prof_seal(uint64_t gen) {
  ctrace__buf **bp = &cpu_bufs[gen & 1];
  if (*bp) {
    if ((*bp)->gen == gen)
      ctrace__queue_full(*bp);
    else
      ctrace__buf_put(*bp);
    *bp = NULL;
  }
  if (gen > cpu_sealed) cpu_sealed = gen;
}

/* Writes t's samples: as CPUSample events [ts, p, g, stack] into the no-P
 * buffer in the classic format. Under the threads lock, so t cannot go
 * away meanwhile. */
void ctrace__prof_drain(ctrace__thread *t) {
  struct ctrace__prof *pr = t->prof;
  if (!pr) return;
  uint64_t tail = atomic_load_explicit(&pr->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&pr->head, memory_order_acquire);
  if (tail == head) return;
  if (ctrace__genfmt()) {
    drain2(t, pr, tail, head);
    return;
  }
  ctrace__nop_lock();
  /* The stacks go into the table of the trace's generation. */
  ctrace__thread gen = {.state = atomic_load_explicit(&ctrace__state, memory_order_relaxed)};
  for (; tail != head; tail++) {
    const prof_sample *s = &pr->slot[tail % PROF_SLOTS];
    uint64_t v[4] = {s->ticks, (uint64_t)s->p, s->g,
                     ctrace__cfg.stacks ? ctrace__pcs_stack_id(&gen, s->pcs, s->n) : 0};
    uint8_t *p = ctrace__reserve(&ctrace__nop_buf, CTRACE__NO_P, CTRACE__MAX_EVENT);
    if (!p) {
      atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
      continue;
    }
    ctrace__buf *b = ctrace__nop_buf;
    uint64_t now = ctrace__ticks();
    if (now < b->last_ticks) now = b->last_ticks;
    uint8_t *start = p + 2;
    uint8_t *q = ctrace__put_uvarint(start, now - b->last_ticks);
    for (int i = 0; i < 4; i++) q = ctrace__put_uvarint(q, v[i]);
    p[0] = (uint8_t)(CTRACE_EV_CPUSample | 3 << CTRACE_ARG_COUNT_SHIFT);
    p[1] = (uint8_t)(q - start);
    b->pos = q;
    b->last_ticks = now;
    atomic_fetch_add_explicit(&ctrace__stats.events, 1, memory_order_relaxed);
  }
  ctrace__nop_unlock();
  atomic_store_explicit(&pr->tail, tail, memory_order_release);
}

long ctrace__prof_drain_ms(void) {
  if (!prof_period_ns) return 0;
  /* A quarter of a ring's worth of samples, at most 10 ms apart. */
  long ms = (long)(prof_period_ns * (PROF_SLOTS / 4) / 1000000L);
  return ms < 1 ? 1 : ms > 10 ? 10 : ms;
}

void ctrace__prof_free(ctrace__thread *t) {
  ctrace__prof_disarm(t);
  free(t->prof);
  t->prof = NULL;
}
