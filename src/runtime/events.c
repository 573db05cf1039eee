/* The scheduling API: one function per thing a runtime tells the tracer.
 *
 * Each function first updates the real state (kept whether or not tracing
 * is on, and read when a trace starts), then, if tracing is on, writes its
 * events inside the thread's write section. Stack ids and string ids are
 * taken inside the section too: stop resets both tables, so an id taken
 * outside could belong to the previous trace.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static _Atomic uint64_t gc_seq;
/* GCActive (below). */
static _Atomic uint32_t gc_mu;
static _Atomic uint64_t gc_stated;
/* Under gc_mu: by generation parity, the last GC event written in
 * generation gc_tag (its number, and whether the GC is open after it);
 * and, by the thread that seals generations, the state at the end of
 * the last one sealed (ctrace__gc_seal). */
static uint64_t gc_tag[2], gc_last_seq[2], gc_sealed_seq;
static bool gc_last_open[2], gc_sealed_open;

/* Generation format: a generation does not end inside a stop-the-world,
 * as Go's does not (its advance takes worldsema): Go has no event to say
 * one goes on, so a trace beginning in the next generation (a flight
 * recorder's snapshot, the generation after a gap) would end one it
 * never began ("tried to end event STWBegin, but not in-flight"), and
 * the end's reason names a string of the generation before (Go 1.23
 * panics on it: "expected id 1 in string table"). cut_mu makes a begin
 * and a generation's end exclusive (ctrace__cut_lock): the begin holds
 * it from before its write section, so the state word stays put.
 * Where a cut is forced through one (the size bound, a crash's
 * snapshot; a gap that finds its G on no thread), its end, if it ever
 * comes, is not written, and its begin stays open in the trace: Go
 * would refuse that G's next begin, so its STWs are not written for the
 * rest of the trace (stw_dangling), each counted lost. A gap that finds
 * its G running ends it (ctrace__end_stw). */
static _Atomic uint32_t cut_mu;
static _Atomic uint64_t stw_gen;      /* the generation of the open STW's begin */
static _Atomic uint64_t stw_dangling; /* the id of the G whose begin stays open, or 0 */

/* P numbers. A runtime names its Ps (ctrace_proc_start); plain threads
 * take the lowest free numbers at or above every P a runtime has named or
 * declared (ctrace_gomaxprocs), and give them back when they end, so that
 * thread pools do not run the numbers up to Go's limit (its reader takes
 * 1000000 and up as fake Ps). A runtime P whose number a plain thread
 * took before the runtime said anything is shown under another number,
 * the same one every time: two threads must never write one P at once. */
#define P_MAX 4096
static pthread_mutex_t p_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t own_used[P_MAX / 64]; /* held by plain threads */
static int64_t runtime_map[P_MAX];    /* runtime P -> trace P + 1; 0: unmapped */
static int64_t own_floor, overflow = P_MAX;
static _Atomic int64_t declared_procs;

static bool used(int64_t p) { return own_used[p / 64] >> (p % 64) & 1; }

static int64_t lowest_free(int64_t from) {
  int64_t p = from;
  while (p < P_MAX && (used(p) || runtime_map[p])) p++;
  return p < P_MAX ? p : overflow++;
}

static void raise_floor(int64_t at_least) {
  if (at_least > own_floor) own_floor = at_least < P_MAX ? at_least : P_MAX;
}

static int64_t alloc_own_p(void) {
  pthread_mutex_lock(&p_mu);
  int64_t p = lowest_free(own_floor);
  if (p < P_MAX) own_used[p / 64] |= 1ull << (p % 64);
  pthread_mutex_unlock(&p_mu);
  return p;
}

static void free_own_p(int64_t p) {
  if (p < 0 || p >= P_MAX) return;
  pthread_mutex_lock(&p_mu);
  own_used[p / 64] &= ~(1ull << (p % 64));
  pthread_mutex_unlock(&p_mu);
}

/* The trace P of runtime P p. */
static int64_t runtime_p(int64_t p) {
  if (p >= P_MAX) return p;
  pthread_mutex_lock(&p_mu);
  if (!runtime_map[p]) runtime_map[p] = (used(p) ? lowest_free(own_floor) : p) + 1;
  int64_t tp = runtime_map[p] - 1;
  raise_floor(p + 1);
  raise_floor(tp + 1);
  pthread_mutex_unlock(&p_mu);
  return tp;
}

/* Fork: the child keeps the P number of the calling thread only. */
void ctrace__events_fork_prepare(void) { pthread_mutex_lock(&p_mu); }
void ctrace__events_fork_parent(void) { pthread_mutex_unlock(&p_mu); }

void ctrace__events_fork_child(void) {
  /* Spin locks a thread of the parent may have held (an end of
   * generation holds cut_mu for its compare-and-swap): the child's own
   * trace would wait for them for ever. */
  atomic_store_explicit(&gc_mu, 0, memory_order_relaxed);
  atomic_store_explicit(&cut_mu, 0, memory_order_relaxed);
  memset(own_used, 0, sizeof own_used);
  ctrace__thread *t = &ctrace__tls;
  if (t->mode == CTRACE__MODE_PLAIN && t->p >= 0 && t->p < P_MAX)
    own_used[t->p / 64] |= 1ull << (t->p % 64);
  pthread_mutex_init(&p_mu, NULL);
}

int64_t ctrace__procs(void) {
  int64_t n = atomic_load_explicit(&declared_procs, memory_order_relaxed);
  if (n > 0) return n;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 ? cpus : 1;
}

/* The Gomaxprocs the trace shows last, under procs_mu. Go 1.23 counts a
 * trace's Ps by it (its MMU page indexes them by P number, and panics on a
 * P at or above it), so it must stay above every P number the trace uses:
 * plain threads take numbers above what a runtime declares, and may
 * outnumber the CPUs. A P that would exceed it raises it first (proc_open),
 * under the lock, so that the values go up in the order they are written. */
static pthread_mutex_t procs_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t shown_procs;

void ctrace__events_reset(int64_t procs) {
  atomic_store_explicit(&gc_seq, 0, memory_order_relaxed);
  atomic_store_explicit(&gc_stated, 0, memory_order_relaxed);
  gc_tag[0] = gc_tag[1] = 0;
  gc_sealed_open = false;
  atomic_store_explicit(&stw_dangling, 0, memory_order_relaxed);
  __atomic_store_n(&shown_procs, procs, __ATOMIC_RELAXED);
}

/* Writes Gomaxprocs through w: procs, or the one shown if larger (at
 * least one more than P number above, if not -1). */
static void show_procs(ctrace__w *w, int64_t procs, int64_t above, uint64_t stack) {
  pthread_mutex_lock(&procs_mu);
  if (procs < shown_procs) procs = shown_procs;
  if (procs <= above) procs = above + 1;
  if (above < 0 || procs != shown_procs) {
    uint64_t v[2] = {(uint64_t)procs, stack};
    if (ctrace__genfmt())
      ctrace__emit2(w, CTRACE_EV122_ProcsChange, 2, v, 0);
    else
      ctrace__emit(w, CTRACE_EV_Gomaxprocs, 2, v, 0);
    /* Read without the lock by proc_open, to skip it. */
    __atomic_store_n(&shown_procs, procs, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&procs_mu);
}

/* Go's reader takes GOMAXPROCS only from a G on a P: in the generation
 * format it is written by the first G that runs in each generation (Go's
 * MMU page panics on a trace without one; Go writes it as each
 * generation starts), and raised as in proc_open. The process's log
 * (identity.c) goes with it: once a generation, off the hot path. */
static _Atomic uint64_t procs_gen;

void ctrace__gen_procs(ctrace__w *w) {
  uint64_t gen = ctrace__gen(w->t), seen = atomic_load_explicit(&procs_gen, memory_order_relaxed);
  if (seen != gen && atomic_compare_exchange_strong(&procs_gen, &seen, gen)) {
    show_procs(w, w->p + 1, -1, 0);
    ctrace__gap_log(w);
    ctrace__identity_log(w);
  } else if (w->p >= __atomic_load_n(&shown_procs, __ATOMIC_RELAXED))
    show_procs(w, 0, w->p, 0);
}

/* A thread's fields start zeroed (TLS); p becomes meaningful, -1 for
 * none, when the thread first says what it is. */
static void set_mode(ctrace__thread *t, uint8_t mode) {
  if (t->mode == CTRACE__MODE_NONE) t->p = -1;
  t->mode = mode;
}

void ctrace__make_plain(ctrace__thread *t, ctrace_g *g, uintptr_t pc) {
  ctrace__thread_known(t);
  set_mode(t, CTRACE__MODE_PLAIN);
  if (!g) {
    g = &t->self;
    /* The main thread's first call names it well (main, or what called
     * the tracer first); another's starts where its stack does. */
    bool main_thread = syscall(SYS_gettid) == getpid();
    ctrace__g_register(g, main_thread ? pc : ctrace__thread_start_pc(t, pc), CTRACE__G_RUNNING);
  }
  ctrace__set_home(t, g);
  t->curg = g;
  if (t->p < 0) t->p = alloc_own_p();
}

/* An event by the current G (or G0): makes the trace show it running, or,
 * for G0, shows none running (the runtime left a G without saying so, as
 * after a system call that did not block). */
CTRACE__INLINE void enter(ctrace__w *w, ctrace_g *g) {
  if (ctrace__likely(w->t->tcurg == g)) return;
  if (g)
    ctrace__ensure_running(w, g, 0);
  else
    ctrace__free_p(w, NULL);
}

/* Go's reason string for a classic stop or block event. */
static int reason2(uint8_t ev) {
  switch (ev) {
  case CTRACE_EV_GoSched: return CTRACE__R_GOSCHED;
  case CTRACE_EV_GoPreempt: return CTRACE__R_PREEMPTED;
  case CTRACE_EV_GoSleep: return CTRACE__R_SLEEP;
  case CTRACE_EV_GoBlockSend: return CTRACE__R_SEND;
  case CTRACE_EV_GoBlockRecv: return CTRACE__R_RECV;
  case CTRACE_EV_GoBlockSelect: return CTRACE__R_SELECT;
  case CTRACE_EV_GoBlockSync: return CTRACE__R_SYNC;
  case CTRACE_EV_GoBlockCond: return CTRACE__R_COND;
  case CTRACE_EV_GoBlockNet: return CTRACE__R_NET;
  case CTRACE_EV_GoBlockGC: return CTRACE__R_GC;
  default: return CTRACE__R_UNSPECIFIED;
  }
}

/* The current G stops running with event ev (block, sched, ...). */
static void leave(ctrace__thread *t, ctrace_g *g, uint8_t ev, uint32_t tstatus, void *fp) {
  /* GoStop ends a G for Go's reader, whatever the runtime does next. */
  if (ev == CTRACE_EV_GoStop) tstatus = CTRACE__G_DEAD;
  ctrace__w w = ctrace__writer(t);
  enter(&w, g);
  uint64_t v[2] = {ctrace__stack_id(t, fp), 0};
  if (ctrace__genfmt()) {
    if (tstatus == CTRACE__G_DEAD) tstatus = CTRACE__G_RUNNABLE; /* no such rule here */
    v[1] = v[0];
    v[0] = ctrace__reason_id(&w, reason2(ev));
    g->ctrace__ticks = ctrace__emit2(&w, tstatus == CTRACE__G_WAITING ? CTRACE_EV122_GoBlock
                                                                       : CTRACE_EV122_GoStop,
                                     2, v, g->ctrace__ticks);
  } else
    g->ctrace__ticks = ctrace__emit(&w, ev, 1, v, g->ctrace__ticks);
  g->ctrace__tstatus = tstatus;
  if (tstatus == CTRACE__G_RUNNABLE) ctrace__glastp_set(g, w.p);
  t->tcurg = NULL;
  ctrace__writer_done(&w);
}

/* GoCreate with the stack above fp, the frame of the public function the
 * program called (ctrace_go_create or ctrace_thread_create), so that
 * neither appears in the creator's stack. */
static void go_create(ctrace_g *g, void (*start_fn)(void), void *fp, uintptr_t ra, uint32_t flags) {
  ctrace__g_register(g, (uintptr_t)start_fn, CTRACE__G_RUNNABLE);
  ctrace__gflags_set(g, ~0u, flags);
  ctrace_g *cur = ctrace__current(&ctrace__tls, ra);
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  enter(&w, cur);
  ctrace__g_create_event(&w, g, ctrace__stack_id(t, fp));
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_go_create(ctrace_g *g, void (*start_fn)(void)) {
  go_create(g, start_fn, __builtin_frame_address(0), (uintptr_t)__builtin_return_address(0), 0);
}

void ctrace_go_destroy(ctrace_g *g) { ctrace__g_unregister(g); }

void ctrace_g_set_stack(ctrace_g *g, const void *lo, const void *hi) {
  g->ctrace__stack_lo = (uintptr_t)lo;
  g->ctrace__stack_hi = (uintptr_t)hi;
}

static void go_start(ctrace_g *g, const char *label) {
  ctrace__thread *t0 = &ctrace__tls;
  if (t0->mode == CTRACE__MODE_NONE) set_mode(t0, CTRACE__MODE_RUNTIME);
  t0->curg = g;
  __atomic_store_n(&g->ctrace__status, CTRACE__G_RUNNING, __ATOMIC_RELAXED);
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  if (t->tcurg != g) ctrace__ensure_running(&w, g, label ? ctrace__string_id(&w, label) : 0);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_go_start(ctrace_g *g) { go_start(g, NULL); }
void ctrace_go_start_label(ctrace_g *g, const char *label) { go_start(g, label); }

void ctrace_go_end(void) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace_g *g = t0->curg;
  if (!g) return;
  t0->curg = NULL;
  if (t0->home == g) ctrace__set_home(t0, NULL); /* before ctrace_thread_end frees it */
  __atomic_store_n(&g->ctrace__status, CTRACE__G_DEAD, __ATOMIC_RELAXED);
  ctrace__thread *t = ctrace__begin();
  if (t) {
    ctrace__w w = ctrace__writer(t);
    enter(&w, g);
    uint64_t v[1];
    ctrace__emit_as(&w, CTRACE_EV_GoEnd, CTRACE_EV122_GoDestroy, 0, v, g->ctrace__ticks);
    g->ctrace__tstatus = CTRACE__G_DEAD;
    t->tcurg = NULL;
    ctrace__writer_done(&w);
    ctrace__end(t);
  } else {
    ctrace__gap_g_end(t0, g);
  }
  ctrace__g_unregister(g);
}

static void stop_current(uint8_t ev, uint32_t status, void *fp) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace_g *g = ctrace__current(t0, 0);
  if (!g) return;
  __atomic_store_n(&g->ctrace__status, status, __ATOMIC_RELAXED);
  t0->curg = NULL;
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  leave(t, g, ev, status, fp);
  ctrace__end(t);
}

void ctrace_go_sched(void) {
  stop_current(CTRACE_EV_GoSched, CTRACE__G_RUNNABLE, __builtin_frame_address(0));
}
void ctrace_go_preempt(void) {
  stop_current(CTRACE_EV_GoPreempt, CTRACE__G_RUNNABLE, __builtin_frame_address(0));
}
void ctrace_go_stop(void) {
  stop_current(CTRACE_EV_GoStop, CTRACE__G_RUNNABLE, __builtin_frame_address(0));
}

void ctrace_go_block(int reason) {
  static const uint8_t evs[] = {
      [CTRACE_BLOCK] = CTRACE_EV_GoBlock,           [CTRACE_BLOCK_SEND] = CTRACE_EV_GoBlockSend,
      [CTRACE_BLOCK_RECV] = CTRACE_EV_GoBlockRecv,  [CTRACE_BLOCK_SELECT] = CTRACE_EV_GoBlockSelect,
      [CTRACE_BLOCK_SYNC] = CTRACE_EV_GoBlockSync,  [CTRACE_BLOCK_COND] = CTRACE_EV_GoBlockCond,
      [CTRACE_BLOCK_NET] = CTRACE_EV_GoBlockNet,    [CTRACE_BLOCK_GC] = CTRACE_EV_GoBlockGC,
      [CTRACE_BLOCK_SLEEP] = CTRACE_EV_GoSleep,
  };
  /* CTRACE_BLOCK_FUTILE is not written: Go 1.23 and later reject a trace
   * with EvFutileWakeup ("unexpected event type 36"), and Go 1.19 only
   * uses it to hide the wakeup (docs/design.md, "Every Go"). */
  unsigned r = (unsigned)reason & 0xff;
  uint8_t ev = r < sizeof evs ? evs[r] : CTRACE_EV_GoBlock;
  stop_current(ev, CTRACE__G_WAITING, __builtin_frame_address(0));
}

void ctrace_go_unblock(ctrace_g *g) {
  __atomic_store_n(&g->ctrace__status, CTRACE__G_RUNNABLE, __ATOMIC_RELAXED);
  ctrace_g *cur = ctrace__current(&ctrace__tls, (uintptr_t)__builtin_return_address(0));
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  enter(&w, cur);
  ctrace__ensure_announced(&w, g, CTRACE__G_WAITING);
  if (g->ctrace__tstatus == CTRACE__G_WAITING)
    ctrace__unblock_event(&w, g, ctrace__stack_id(t, __builtin_frame_address(0)));
  else if (g->ctrace__tstatus == CTRACE__G_SYSCALL)
    ctrace__sysexit_event(&w, g);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_go_syscall(void) {
  ctrace_g *g = ctrace__current(&ctrace__tls, (uintptr_t)__builtin_return_address(0));
  if (!g) return;
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  enter(&w, g);
  uint64_t v[1] = {ctrace__stack_id(t, __builtin_frame_address(0))};
  if (!ctrace__genfmt())
    g->ctrace__ticks = ctrace__emit(&w, CTRACE_EV_GoSysCall, 1, v, 0);
  else if (w.p >= 0 && t->tcurg == g)
    g->ctrace__ticks = ctrace__gen_syscall(&w, v[0], 0, false);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

/* Whether the last event in b is g's GoSysCall. Go 1.23 pairs a GoSysBlock
 * with the GoSysCall of its G only if nothing of that G comes between (its
 * converter looks at the G's next event), so sysblock bridges with a
 * GoSysCall of its own otherwise. Read backwards off the buffer rather than
 * noted by ctrace_go_syscall, whose cost the hot path would pay: the event
 * has g's ticks and is [type|1<<6, tick diff, stack id], two varints whose
 * bytes all have the top bit set but their last. */
static bool after_syscall(const ctrace__buf *b, const ctrace_g *g) {
  if (!b || b->last_ticks != g->ctrace__ticks) return false;
  const uint8_t *q = b->pos;
  for (int i = 0; i < 2; i++) {
    if (q == b->data || q[-1] & 0x80) return false;
    q--;
    while (q > b->data && q[-1] & 0x80) q--;
  }
  return q > b->data && q[-1] == (CTRACE_EV_GoSysCall | 1 << CTRACE_ARG_COUNT_SHIFT);
}

void ctrace_go_sysblock(void) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace_g *g = ctrace__current(t0, 0);
  if (!g) return;
  __atomic_store_n(&g->ctrace__status, CTRACE__G_SYSCALL, __ATOMIC_RELAXED);
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  enter(&w, g);
  uint64_t v[1] = {0};
  /* Go 1.23's MMU page counts an assisting G's time per P, and its
   * GoSysExit has none: the assist ends as the call blocks. */
  if (ctrace__gflags(g) & CTRACE__GF_ASSIST) {
    bool shown = ctrace__assist_shown(g);
    ctrace__gflags_set(g, ~(CTRACE__GF_ASSIST | CTRACE__GF_MARK), 0);
    if (shown) ctrace__emit_as(&w, CTRACE_EV_GCMarkAssistDone, CTRACE_EV122_GCMarkAssistEnd, 0, v, 0);
  }
  if (ctrace__genfmt()) {
    /* The thread keeps the G, in its call, and gives up the P. */
    if (w.p >= 0 && t->tcurg == g) {
      ctrace__end_sweep(&w);
      uint64_t stack = ctrace__stack_id(t, __builtin_frame_address(0));
      g->ctrace__ticks = ctrace__gen_syscall(&w, stack, g->ctrace__ticks, true);
      g->ctrace__tstatus = CTRACE__G_SYSCALL;
      ctrace__glastp_set(g, t->tid);
      t->sys_g = g;
      t->tcurg = NULL;
      t->tp = -1;
    }
    ctrace__writer_done(&w);
    ctrace__end(t);
    return;
  }
  if (!after_syscall(*w.bp, g)) {
    v[0] = ctrace__stack_id(t, __builtin_frame_address(0));
    g->ctrace__ticks = ctrace__emit(&w, CTRACE_EV_GoSysCall, 1, v, g->ctrace__ticks);
  }
  g->ctrace__ticks = ctrace__emit(&w, CTRACE_EV_GoSysBlock, 0, v, g->ctrace__ticks);
  g->ctrace__tstatus = CTRACE__G_SYSCALL;
  t->tcurg = NULL;
  /* Go's runtime hands the P off as the call blocks, and Go 1.23's viewer
   * counts on it: the ProcStop is what ends the G's time on the P there
   * (without it, a later ProcStop of that P panics the viewer). The thread
   * keeps the P; the trace starts it again, in this same batch, at the
   * thread's next event (proc_open), as Go's exitsyscall does. */
  if (w.p != CTRACE__NO_P) {
    ctrace__end_sweep(&w);
    ctrace__emit(&w, CTRACE_EV_ProcStop, 0, v, 0);
    t->tp = -1;
  }
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_go_sysexit(void) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace_g *g = t0->curg;
  if (!g) return;
  __atomic_store_n(&g->ctrace__status, CTRACE__G_RUNNABLE, __ATOMIC_RELAXED);
  t0->curg = NULL;
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  ctrace__announce_syscall(&w, g);
  if (g->ctrace__tstatus == CTRACE__G_SYSCALL) ctrace__sysexit_event(&w, g);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

/* ---- processors ---------------------------------------------------------- */

void ctrace__proc_open(ctrace__thread *t) {
  ctrace__w w = {t, ctrace__tbuf(t), t->p};
  if (ctrace__genfmt()) {
    /* One batch for all of a thread's Ps: the P's sequence number, not
     * the file's order, orders its holders. */
    if (ctrace__gen_proc_start(&w, t->p)) t->tp = t->p;
    return;
  }
  /* A P that only the trace stopped (ctrace_go_sysblock) goes on in the
   * batch that holds its ProcStop; any other opens a batch of its own. */
  ctrace__buf **bp = w.bp;
  if (*bp && (*bp)->p == t->p ? !ctrace__reserve(bp, t->p, CTRACE__MAX_EVENT)
                              : !ctrace__reserve_slow(bp, t->p, CTRACE__MAX_EVENT))
    return;
  uint64_t v[1] = {(uint64_t)t->tid};
  if (t->p >= __atomic_load_n(&shown_procs, __ATOMIC_RELAXED)) show_procs(&w, 0, t->p, 0);
  ctrace__emit(&w, CTRACE_EV_ProcStart, 1, v, 0);
  t->tp = t->p;
}

void ctrace__proc_close(ctrace__thread *t) {
  ctrace__close_thread(t, false);
  /* A P may move to another thread next: queue what this thread wrote for
   * it now, so that the P's batches stay in file order. */
  ctrace__buf **bp = ctrace__tbuf(t);
  if (*bp && !ctrace__genfmt()) {
    ctrace__queue_full(*bp);
    *bp = NULL;
  }
}

void ctrace__sync_p(ctrace__thread *t) {
  if (t->tp >= 0) ctrace__proc_close(t);
  if (t->p >= 0) ctrace__proc_open(t);
}

/* A P change shows in the trace at the thread's next write (sync_p). */
static void show_p(void) {
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  /* The batch of a P the trace stopped at a blocking system call is still
   * in this thread's buffer: hand it over before another thread may take
   * the P, so that the P's batches stay in file order. */
  ctrace__buf **bp = ctrace__tbuf(t);
  if (t->tp < 0 && *bp && (*bp)->p != t->p && !ctrace__genfmt()) {
    ctrace__queue_full(*bp);
    *bp = NULL;
  }
  ctrace__w w = ctrace__writer(t);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_proc_start(int64_t p) {
  if (p < 0) return;
  ctrace__thread *t0 = &ctrace__tls;
  if (t0->mode == CTRACE__MODE_NONE) set_mode(t0, CTRACE__MODE_RUNTIME);
  t0->p = runtime_p(p);
  show_p();
}

void ctrace_proc_stop(void) {
  ctrace__thread *t0 = &ctrace__tls;
  if (t0->mode == CTRACE__MODE_NONE) return;
  t0->p = -1;
  show_p();
}

void ctrace_gomaxprocs(int64_t procs) {
  if (procs > 0) {
    atomic_store_explicit(&declared_procs, procs, memory_order_relaxed);
    pthread_mutex_lock(&p_mu);
    raise_floor(procs);
    pthread_mutex_unlock(&p_mu);
  }
  ctrace_g *g = ctrace__tls.curg;
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  enter(&w, g);
  ctrace__standin si = {0};
  if (!ctrace__genfmt() || ctrace__stand_in(&w, true, &si))
    show_procs(&w, procs, -1, ctrace__stack_id(t, __builtin_frame_address(0)));
  if (si.on) ctrace__stand_in_done(&w, &si);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

/* ---- garbage collection ------------------------------------------------- */

/* An event of the current G (or G0) with n values; with_stack appends the
 * caller's stack id as the last one. */
static uint64_t trace_mark(ctrace__thread *t);

/* Returns the trace's mark (trace_mark) if the event was written, else 0. */
static uint64_t simple(uint8_t ev, uint8_t ev2, int n, uint64_t a, uint64_t b, void *fp) {
  ctrace_g *g = ctrace__current(&ctrace__tls, 0);
  ctrace__thread *t = ctrace__begin();
  if (!t) return 0;
  ctrace__w w = ctrace__writer(t);
  enter(&w, g);
  uint64_t v[3] = {a, b, 0}, mark = 0;
  /* Heap figures need only a P; a mark assist is its G's own (the
   * thread's, never a stand-in). */
  bool heap = ev2 == CTRACE_EV122_HeapAlloc || ev2 == CTRACE_EV122_HeapGoal;
  ctrace__standin si;
  si.on = false;
  if (!ctrace__genfmt() ||
      (heap ? ctrace__likely(w.p >= 0) || ctrace__stand_in(&w, false, &si) : ctrace__gen_can(&w, true))) {
    if (fp) v[n++] = ctrace__stack_id(t, fp);
    if (ctrace__emit_as(&w, ev, ev2, n, v, 0)) mark = trace_mark(t);
  }
  if (ctrace__unlikely(si.on)) ctrace__stand_in_done(&w, &si);
  ctrace__writer_done(&w);
  ctrace__end(t);
  return mark;
}

/* Whether w's thread shows a P (and, with need_g, a G on it), as Go's
 * reader wants for most events of the generation format; if not, the
 * event cannot be written there and is counted lost. */
bool ctrace__gen_can(ctrace__w *w, bool need_g) {
  if (w->p >= 0 && (!need_g || w->t->tcurg)) return true;
  atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
  return false;
}

/* Go's reader takes annotations, GC phases and GOMAXPROCS only from a G
 * running on a P, heap figures only from a P, and Go's runtime writes
 * them only so: its scheduler (g0) writes none of them. A runtime's
 * thread between its Gs is that scheduler; where it writes one, it shows
 * its own G for the instant, as Go's runtime shows its system goroutines
 * (its GC workers): created the first time, then started, the event, and
 * blocked again, for "system goroutine wait" (Go's reason for those
 * goroutines' waits, so that no view counts the time between two such
 * events as a wait for a P or on a lock). A thread without a P takes,
 * for the instant, a P no thread holds (ProcStart ... ProcStop), as
 * ctrace_stop does for a stop-the-world it ends. Not where the thread
 * shows a G in a system call: that G is still the thread's, and Go's
 * reader starts no other G on it. */
__attribute__((noinline)) void ctrace__between_goroutines(void) { __asm__ volatile(""); }

/* The classic format: a P no thread holds, taken by w's thread (which
 * shows none) for an instant, in a batch of its own in the thread's
 * buffer, queued again by give_p: the P may go to another thread next,
 * and its batches must stay in file order. The buffer holds no batch
 * here, or one of a P the thread no longer holds (show_p queues those
 * too). w then writes there; give_p puts it back on the no-P buffer,
 * whose lock w holds throughout. */
static bool take_p(ctrace__w *w, int64_t p) {
  ctrace__thread *t = w->t;
  ctrace__buf **bp = ctrace__tbuf(t);
  if (*bp) {
    ctrace__queue_full(*bp);
    *bp = NULL;
  }
  ctrace__w pw = {t, bp, p};
  if (p >= __atomic_load_n(&shown_procs, __ATOMIC_RELAXED)) show_procs(&pw, 0, p, 0);
  uint64_t v[1] = {(uint64_t)t->tid};
  if (!ctrace__emit(&pw, CTRACE_EV_ProcStart, 1, v, 0)) {
    if (*bp) ctrace__queue_full(*bp);
    *bp = NULL;
    return false;
  }
  w->bp = bp;
  return true;
}

static void give_p(ctrace__w *w) {
  uint64_t v[1] = {0};
  ctrace__emit(w, CTRACE_EV_ProcStop, 0, v, 0);
  if (*w->bp) ctrace__queue_full(*w->bp);
  *w->bp = NULL;
  w->bp = &ctrace__nop_buf;
}

/* The classic format has the same need for user annotations alone: Go's
 * runtime writes them only from a user G, and Go's viewers (1.19 to
 * 1.27) panic on a region of G0 (their goroutine summaries look the
 * region's G up and find none). GC phases, GOMAXPROCS and heap figures
 * stay G0's there, where Go's runtime writes them too. A G the thread
 * shows, P or not, writes its own as ever. */
CTRACE__NOINLINE bool ctrace__stand_in(ctrace__w *w, bool need_g, ctrace__standin *s) {
  ctrace__thread *t = w->t;
  bool gen = ctrace__genfmt();
  s->on = false;
  s->g = NULL;
  s->p = -1;
  if (!gen) {
    if (t->tcurg) return true;
    need_g = true;
  } else {
    if (w->p >= 0 && (!need_g || t->tcurg)) return true;
    if (t->sys_g || (w->p < 0 && t->tcurg)) return ctrace__gen_can(w, need_g);
  }
  if (w->p < 0) {
    int64_t p = alloc_own_p();
    bool ok;
    if (gen) {
      ctrace__w pw = {t, w->bp, p};
      ok = ctrace__gen_proc_start(&pw, p);
    } else
      ok = take_p(w, p);
    if (!ok) {
      free_own_p(p);
      return ctrace__gen_can(w, need_g);
    }
    s->on = true;
    s->p = p;
    t->tp = w->p = p;
  }
  if (need_g && !t->tcurg) {
    ctrace_g *g = t->g0;
    if (!g) {
      /* Not malloc: the program's allocator (which ctrace run traces) is
       * not re-entered from inside the write section. A page, once per
       * thread that ever needs it. */
      void *m = mmap(NULL, sizeof *g, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) {
        ctrace__stand_in_done(w, s);
        return ctrace__gen_can(w, need_g);
      }
      g = m;
      ctrace__g_register(g, (uintptr_t)ctrace__between_goroutines, CTRACE__G_WAITING);
      t->g0 = g;
    }
    ctrace__ensure_running(w, g, 0);
    if (t->tcurg != g) { /* not started (no memory for the events) */
      ctrace__stand_in_done(w, s);
      return ctrace__gen_can(w, need_g);
    }
    s->on = true;
    s->g = g;
  }
  return true;
}

CTRACE__NOINLINE void ctrace__stand_in_done(ctrace__w *w, ctrace__standin *s) {
  ctrace__thread *t = w->t;
  ctrace_g *g = s->g;
  bool gen = ctrace__genfmt();
  if (g && t->tcurg == g) {
    if (gen) {
      uint64_t v[2] = {ctrace__reason_id(w, CTRACE__R_SYSTEM), 0};
      g->ctrace__ticks = ctrace__emit2(w, CTRACE_EV122_GoBlock, 2, v, g->ctrace__ticks);
    } else {
      /* GoBlock, as Go's runtime parks its system goroutines in this
       * format (its GC workers, the sweeper). */
      uint64_t v[1] = {0};
      g->ctrace__ticks = ctrace__emit(w, CTRACE_EV_GoBlock, 1, v, g->ctrace__ticks);
    }
    g->ctrace__tstatus = CTRACE__G_WAITING;
    t->tcurg = NULL;
  }
  if (s->p >= 0) {
    ctrace__end_sweep(w);
    if (gen)
      ctrace__gen_proc_stop(w);
    else
      give_p(w);
    t->tp = w->p = -1;
    free_own_p(s->p);
  }
  s->on = false;
}

/* GC phases. Go's reader rejects an end whose start it has not seen
 * ("bogus GC end", "bogus STW end", "bogus sweeping end") and a second
 * start before the end; Go 1.19's viewer needs every start ended. A trace
 * starts and stops at any time, so each phase is written only whole or
 * ended by stop: an end whose start came before this trace is dropped, a
 * start while the trace shows one open is dropped, and stop ends what is
 * open (ctrace__close_phases). GC and STW are the process's: the
 * generation whose trace shows one open, 0 for none. A sweep is a P's: the
 * trace P of the thread's open sweep (thread fields are per trace), ended
 * before its P stops in the trace. */
static _Atomic uint64_t gc_open, stw_open;
static ctrace_g *_Atomic stw_g; /* generation format: the G whose STW is open */

/* What gc_open and stw_open hold for this trace: the generation, or, in
 * the generation format, the trace's first. */
static uint64_t trace_mark(ctrace__thread *t) { return ctrace__genfmt() ? ctrace__gen0 : ctrace__gen(t); }

/* Generation format: a GC open across a generation's start is said in
 * the new one (GCActive, numbered as the GC's events are), as Go does, so
 * that a trace beginning there (a flight recorder's snapshot) has it; by
 * the first thread to write there with a G on a P (ctrace__gc_active), or
 * else just before the GC ends. gc_mu orders GCActive among the GC's
 * own events by number; gc_stated is the generation it was said in (or
 * the GC began in; top of the file). */

/* gc_mu's and cut_mu's: held for a few stores, or one event's write. */
static void spin_lock(_Atomic uint32_t *mu) {
  while (atomic_exchange_explicit(mu, 1, memory_order_acquire))
    while (atomic_load_explicit(mu, memory_order_relaxed)) __builtin_ia32_pause();
}
static void spin_unlock(_Atomic uint32_t *mu) { atomic_store_explicit(mu, 0, memory_order_release); }
static void gc_lock(void) { spin_lock(&gc_mu); }
static void gc_unlock(void) { spin_unlock(&gc_mu); }

/* Under gc_mu: a GC event numbered seq was written in gen. */
static void gc_note(uint64_t gen, uint64_t seq, bool open) {
  gc_tag[gen & 1] = gen;
  gc_last_seq[gen & 1] = seq;
  gc_last_open[gen & 1] = open;
}

/* Under gc_mu, w's thread showing a G on a P. */
static void gc_active_locked(ctrace__w *w) {
  uint64_t gen = ctrace__gen(w->t);
  if (atomic_load_explicit(&gc_open, memory_order_relaxed) != ctrace__gen0 ||
      atomic_load_explicit(&gc_stated, memory_order_relaxed) == gen)
    return;
  uint64_t v[1] = {atomic_fetch_add_explicit(&gc_seq, 1, memory_order_relaxed) + 1};
  if (ctrace__emit2(w, CTRACE_EV122_GCActive, 1, v, 0)) {
    atomic_store_explicit(&gc_stated, gen, memory_order_relaxed);
    gc_note(gen, v[0], true);
  }
}

/* A GC open through all of gen with no thread to say so there (none
 * with a G on a P wrote in it): what a trace that begins with gen needs
 * is a GCActive in gen numbered as the GC's last event before it, which
 * a flight recorder's snapshot adds (Go takes it from no thread in a
 * trace's first generation only). */
uint64_t ctrace__gc_seal(uint64_t gen) {
  uint64_t unstated = 0;
  gc_lock();
  if (gc_tag[gen & 1] == gen) {
    gc_sealed_seq = gc_last_seq[gen & 1];
    gc_sealed_open = gc_last_open[gen & 1];
  } else if (gc_sealed_open) {
    unstated = gc_sealed_seq;
  }
  gc_unlock();
  return unstated;
}

bool ctrace__stw_shown(void) {
  return atomic_load_explicit(&stw_open, memory_order_relaxed) == ctrace__gen0;
}

bool ctrace__cut_lock(bool force) {
  spin_lock(&cut_mu);
  if (force || !ctrace__stw_shown()) return true;
  ctrace__cut_unlock();
  return false;
}

void ctrace__cut_unlock(void) { spin_unlock(&cut_mu); }

void ctrace__gc_active(ctrace__w *w) {
  if (atomic_load_explicit(&gc_open, memory_order_relaxed) != ctrace__gen0 ||
      atomic_load_explicit(&gc_stated, memory_order_relaxed) == ctrace__gen(w->t))
    return;
  gc_lock();
  gc_active_locked(w);
  gc_unlock();
}

/* A phase's start or end in the generation format: GC events number
 * themselves (GCBegin, GCEnd), each one more than the last; a
 * stop-the-world is its G's, ended by it. */
static bool phase2(ctrace__w *w, ctrace_g *g, _Atomic uint64_t *open, bool begin, uint8_t ev, uint64_t a,
                   void *fp) {
  bool gc = ev == CTRACE_EV_GCStart || ev == CTRACE_EV_GCDone;
  /* A stop-the-world is its G's, begun and ended by it: never a
   * stand-in's (phase writes none between Gs). */
  if (!gc && (!ctrace__gen_can(w, true) || (open == &stw_open && !begin && g != stw_g))) return false;
  uint64_t v[2] = {a, 0};
  int n = 0;
  ctrace__standin si = {0};
  switch (ev) {
  case CTRACE_EV_GCStart:
  case CTRACE_EV_GCDone:
    if (!ctrace__stand_in(w, true, &si)) return false;
    gc_lock();
    if (!begin) gc_active_locked(w);
    v[n++] = atomic_fetch_add_explicit(&gc_seq, 1, memory_order_relaxed) + 1;
    if (begin) v[n++] = ctrace__stack_id(w->t, fp);
    if (ctrace__emit2(w, begin ? CTRACE_EV122_GCBegin : CTRACE_EV122_GCEnd, n, v, 0))
      gc_note(ctrace__gen(w->t), v[0], begin);
    /* Here, not after: a thread of the next generation must not say
     * this GC active once its end is written. */
    atomic_store_explicit(open, begin ? ctrace__gen0 : 0, memory_order_relaxed);
    atomic_store_explicit(&gc_stated, ctrace__gen(w->t), memory_order_relaxed);
    gc_unlock();
    if (si.on) ctrace__stand_in_done(w, &si);
    break;
  default:
    if (atomic_load_explicit(&stw_dangling, memory_order_relaxed) == g->id) {
      atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
      return false; /* and its end finds none open */
    }
    if (begin) {
      v[0] = ctrace__reason_id(w, a ? CTRACE__R_STW_SWEEP : CTRACE__R_STW_MARK);
      stw_g = g;
      atomic_store_explicit(&stw_gen, ctrace__gen(w->t), memory_order_relaxed);
      ctrace__emit2(w, CTRACE_EV122_STWBegin, 2, v, 0);
    } else if (atomic_load_explicit(&stw_gen, memory_order_relaxed) != ctrace__gen(w->t)) {
      atomic_store_explicit(&stw_dangling, g->id, memory_order_relaxed);
      atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    } else {
      ctrace__emit2(w, CTRACE_EV122_STWEnd, 0, v, 0);
    }
  }
  return true;
}

/* Start (begin) or end of the global phase *open, ev with n values. The
 * runtime orders its own GC calls, as Go's does. */
static void phase(_Atomic uint64_t *open, bool begin, uint8_t ev, int n, uint64_t a, void *fp) {
  ctrace_g *g = ctrace__current(&ctrace__tls, 0);
  /* Go 1.23 scopes a stop-the-world to the G that writes it, and its viewer
   * crashes on one written between Gs (G0). */
  if (!g && open == &stw_open) return;
  bool cut_held = open == &stw_open && begin;
  if (cut_held) spin_lock(&cut_mu);
  ctrace__thread *t = ctrace__begin();
  if (!t) {
    if (cut_held) ctrace__cut_unlock();
    return;
  }
  uint64_t gen = trace_mark(t);
  if ((atomic_load_explicit(open, memory_order_relaxed) == gen) != begin) {
    ctrace__w w = ctrace__writer(t);
    enter(&w, g);
    if (ctrace__genfmt()) {
      if (phase2(&w, g, open, begin, ev, a, fp))
        atomic_store_explicit(open, begin ? gen : 0, memory_order_relaxed);
    } else {
      atomic_store_explicit(open, begin ? gen : 0, memory_order_relaxed);
      uint64_t v[2] = {a, 0};
      if (fp) v[n++] = ctrace__stack_id(t, fp);
      if (ev == CTRACE_EV_GCStart) v[0] = atomic_fetch_add_explicit(&gc_seq, 1, memory_order_relaxed);
      ctrace__emit(&w, ev, n, v, 0);
    }
    ctrace__writer_done(&w);
  }
  ctrace__end(t);
  if (cut_held) ctrace__cut_unlock();
}

void ctrace_gc_start(void) {
  phase(&gc_open, true, CTRACE_EV_GCStart, 1, 0, __builtin_frame_address(0));
}
void ctrace_gc_done(void) { phase(&gc_open, false, CTRACE_EV_GCDone, 0, 0, NULL); }
void ctrace_gc_stw_start(int kind) {
  phase(&stw_open, true, CTRACE_EV_GCSTWStart, 1, kind == 1, NULL);
}
void ctrace_gc_stw_done(void) { phase(&stw_open, false, CTRACE_EV_GCSTWDone, 0, 0, NULL); }

static void sweep(bool begin, uint64_t swept, uint64_t reclaimed, void *fp) {
  ctrace_g *g = ctrace__current(&ctrace__tls, 0);
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  if (w.p != CTRACE__NO_P && (t->sweep_p == w.p) != begin) {
    enter(&w, g);
    uint64_t v[2] = {swept, reclaimed};
    if (begin) v[0] = ctrace__stack_id(t, fp);
    if (begin)
      ctrace__emit_as(&w, CTRACE_EV_GCSweepStart, CTRACE_EV122_GCSweepBegin, 1, v, 0);
    else
      ctrace__emit_as(&w, CTRACE_EV_GCSweepDone, CTRACE_EV122_GCSweepEnd, 2, v, 0);
    t->sweep_p = begin ? w.p : -1;
  }
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_gc_sweep_start(void) { sweep(true, 0, 0, __builtin_frame_address(0)); }
void ctrace_gc_sweep_done(uint64_t swept, uint64_t reclaimed) {
  sweep(false, swept, reclaimed, NULL);
}

void ctrace__end_sweep(ctrace__w *w) {
  if (w->t->sweep_p < 0 || w->t->sweep_p != w->p) return;
  uint64_t v[2] = {0, 0};
  ctrace__emit_as(w, CTRACE_EV_GCSweepDone, CTRACE_EV122_GCSweepEnd, 2, v, 0);
  w->t->sweep_p = -1;
}

void ctrace__end_stw(ctrace__w *w) {
  uint64_t want = trace_mark(w->t), v[1] = {0};
  /* 0: a thread that is exiting (its state is cleared), no trace's. */
  if (!want || atomic_load_explicit(&stw_open, memory_order_relaxed) != want) return;
  /* The generation format's, before a gap: its G's, begun in this
   * generation (else its end is not written anyway). */
  if (ctrace__genfmt() && (w->t->tcurg != stw_g ||
                           atomic_load_explicit(&stw_gen, memory_order_relaxed) != ctrace__gen(w->t)))
    return;
  if (atomic_compare_exchange_strong(&stw_open, &want, 0))
    ctrace__emit_as(w, CTRACE_EV_GCSTWDone, CTRACE_EV122_STWEnd, 0, v, 0);
}

/* Stop's: the GC, and the STW when no thread showed a G to end it. Go
 * 1.23 scopes a stop-the-world to a G, and its viewer crashes on an end
 * written by none; Go 1.19's needs the end. So the stopping thread shows
 * itself for an instant as a G of its own, on a P no thread holds (all
 * are stopped in the trace by now), created by ctrace_stop. */
void ctrace__close_phases(ctrace__w *w) {
  uint64_t gen = ctrace__gen(w->t), v[3] = {0};
  uint64_t want = gen;
  if (atomic_compare_exchange_strong(&stw_open, &want, 0)) {
    ctrace__buf *b = NULL;
    ctrace__w pw = {w->t, &b, alloc_own_p()};
    if (pw.p >= __atomic_load_n(&shown_procs, __ATOMIC_RELAXED)) show_procs(&pw, 0, pw.p, 0);
    v[0] = (uint64_t)w->t->tid;
    ctrace__emit(&pw, CTRACE_EV_ProcStart, 1, v, 0);
    v[0] = ctrace__new_gid();
    v[1] = ctrace__pc_stack_id(w->t, (uintptr_t)ctrace_stop);
    ctrace__emit(&pw, CTRACE_EV_GoCreate, 3, v, 0);
    ctrace__emit(&pw, CTRACE_EV_GoStartLocal, 1, v, 0);
    ctrace__emit(&pw, CTRACE_EV_GCSTWDone, 0, v, 0);
    ctrace__emit(&pw, CTRACE_EV_GoEnd, 0, v, 0);
    ctrace__emit(&pw, CTRACE_EV_ProcStop, 0, v, 0);
    if (b) ctrace__queue_full(b);
    free_own_p(pw.p);
  }
  want = gen;
  if (atomic_compare_exchange_strong(&gc_open, &want, 0))
    ctrace__emit(w, CTRACE_EV_GCDone, 0, v, 0);
}

/* A mark assist is a G's (Go 1.23 scopes it to the G that writes it, and
 * its viewer crashes on one written between Gs): not written from G0. A
 * blocking system call ends it (ctrace_go_sysblock). */
/* In the generation format an assist whose end could not be written (in
 * a gap at the cap) stays open in the trace's eyes, and the next one
 * goes on in it: Go's reader rejects a begin while one is open. */
void ctrace_gc_mark_assist_start(void) {
  ctrace_g *g = ctrace__current(&ctrace__tls, 0);
  if (!g) return;
  ctrace__gflags_set(g, ~0u, CTRACE__GF_ASSIST);
  if (ctrace__genfmt() && ctrace__assist_shown(g)) return;
  uint64_t mark = simple(CTRACE_EV_GCMarkAssistStart, CTRACE_EV122_GCMarkAssistBegin, 0, 0, 0,
                         __builtin_frame_address(0));
  ctrace__assist_mark(g, mark);
}
void ctrace_gc_mark_assist_done(void) {
  ctrace_g *g = ctrace__current(&ctrace__tls, 0);
  if (!g || !(ctrace__gflags(g) & CTRACE__GF_ASSIST)) return;
  bool shown = ctrace__assist_shown(g);
  ctrace__gflags_set(g, ~CTRACE__GF_ASSIST, 0);
  if (!shown || simple(CTRACE_EV_GCMarkAssistDone, CTRACE_EV122_GCMarkAssistEnd, 0, 0, 0, NULL) ||
      !ctrace__genfmt())
    ctrace__gflags_set(g, ~CTRACE__GF_MARK, 0);
}
void ctrace_heap_alloc(uint64_t live) { simple(CTRACE_EV_HeapAlloc, CTRACE_EV122_HeapAlloc, 1, live, 0, NULL); }
void ctrace_heap_goal(uint64_t goal) { simple(CTRACE_EV_HeapGoal, CTRACE_EV122_HeapGoal, 1, goal, 0, NULL); }

void ctrace_timer_goroutine(uint64_t gid) {
  if (ctrace__genfmt()) return; /* no such event there */
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  /* [g], the one event with neither timestamp nor stack. */
  uint8_t *q = ctrace__reserve(w.bp, w.p, CTRACE__MAX_EVENT);
  if (q) {
    *q++ = CTRACE_EV_TimerGoroutine;
    (*w.bp)->pos = ctrace__put_uvarint(q, gid);
  }
  ctrace__writer_done(&w);
  ctrace__end(t);
}

/* ---- plain threads ------------------------------------------------------- */

ctrace_g *ctrace_thread_g(void) {
  return ctrace__current(&ctrace__tls, (uintptr_t)__builtin_return_address(0));
}

ctrace_g *ctrace_thread_create(void (*start_fn)(void)) {
  ctrace_g *g = ctrace__alloc_g();
  if (!g) return NULL;
  go_create(g, start_fn, __builtin_frame_address(0), (uintptr_t)__builtin_return_address(0),
            CTRACE__GF_OWNED | CTRACE__GF_THREAD);
  return g;
}

void ctrace_thread_begin(ctrace_g *g) {
  ctrace__thread *t0 = &ctrace__tls;
  if (t0->mode == CTRACE__MODE_PLAIN && t0->home == &t0->self) ctrace__g_unregister(&t0->self);
  if (g) __atomic_store_n(&g->ctrace__status, CTRACE__G_RUNNING, __ATOMIC_RELAXED);
  ctrace__make_plain(t0, g, (uintptr_t)__builtin_return_address(0));
  ctrace__start_naming(t0, g);
  ctrace_thread_resume();
}

/* Both resumes: ret is the public function's return address (for a G
 * seen first here), why, if not 0, the pc that names why a wait nobody
 * ended ended (ctrace__thread_resume_why). */
static void resume(uintptr_t ret, uintptr_t why) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace_g *g = ctrace__current(t0, ret);
  if (!g && t0->home) g = t0->home;
  if (!g) return;
  t0->curg = g;
  __atomic_store_n(&g->ctrace__status, CTRACE__G_RUNNING, __ATOMIC_RELAXED);
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  if (why && t->tcurg != g) {
    ctrace__ensure_announced(&w, g, CTRACE__G_WAITING);
    if (g->ctrace__tstatus == CTRACE__G_WAITING) {
      ctrace__free_p(&w, g);
      ctrace__unblock_event(&w, g, ctrace__pc_stack_id(t, why));
    }
  }
  enter(&w, g);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_thread_resume(void) { resume((uintptr_t)__builtin_return_address(0), 0); }

void ctrace__thread_resume_why(uintptr_t why) { resume((uintptr_t)__builtin_return_address(0), why); }

void ctrace_thread_end(void) {
  ctrace__thread *t0 = &ctrace__tls;
  if (t0->mode != CTRACE__MODE_PLAIN) return;
  ctrace_g *g = t0->home;
  if (g) {
    t0->curg = g;
    ctrace_go_end();
    if (ctrace__gflags(g) & CTRACE__GF_OWNED) ctrace__free_g(g);
  }
  t0->mode = CTRACE__MODE_ENDED;
  int64_t p = t0->p;
  ctrace_proc_stop(); /* queues the buffer: the P may now go to another thread */
  free_own_p(p);
}
