/* Goroutine bookkeeping: the registry of live Gs, their announcement when
 * a trace starts, and the bridging events that keep the trace valid.
 *
 * Go's reader checks a state machine (GO-COMPAT.md). A trace that starts
 * while a G is blocked, or an API call that skips a step, would break it.
 * So every G carries, per trace, the status the trace has shown so far
 * (tstatus); an event that needs another status first writes the events
 * that bridge the two, as Go 1.22 does lazily at a G's first event.
 *
 * Announcement (GoCreate, then GoWaiting or GoInSyscall) happens once per
 * trace and G, under the G's own spinlock: either by the thread starting the
 * trace, which walks the registry, or by the first thread that writes about
 * the G, whichever comes first. Everything else about a G is ordered by the
 * runtime's own synchronization, as in Go.
 */
#include "internal.h"

#include <stdlib.h>

static pthread_mutex_t gs_mu = PTHREAD_MUTEX_INITIALIZER;
static ctrace_g *gs_head; /* live Gs, under gs_mu */
static _Atomic uint64_t next_gid = 1;
/* Generation format, under gs_mu: the generation being ended, from
 * before the state word moves on until the walk that states its Gs
 * (ctrace__statuses_begin, ctrace__statuses); 0 for none. A G that
 * leaves the registry meanwhile would be stated by neither its thread nor
 * the walk, though its thread may have stated it in the next generation
 * first (a thread silent through this one, which then ends its G): a
 * trace that begins with this generation (a flight recorder's snapshot)
 * would then meet it first in the next, which Go's reader refuses. So it
 * states itself as it leaves, into late, a batch of no thread of that
 * generation, which the walk hands on. Go's traceAdvance avoids the race
 * by reading the statuses before it moves the generation on. */
static uint64_t sealing;
static ctrace__buf *late;

uint64_t ctrace__new_gid(void) { return atomic_fetch_add_explicit(&next_gid, 1, memory_order_relaxed); }

void ctrace__g_register(ctrace_g *g, uintptr_t start_pc, uint32_t status) {
  g->id = ctrace__new_gid();
  g->ctrace__gen = g->ctrace__gen_prev = 0;
  g->ctrace__seq = 0;
  ctrace__glastp_set(g, CTRACE__NO_P);
  g->ctrace__ticks = 0;
  g->ctrace__start_pc = start_pc;
  g->ctrace__stack_lo = g->ctrace__stack_hi = 0;
  g->ctrace__tstatus = CTRACE__G_DEAD;
  g->ctrace__lock = 0;
  ctrace__gflags_set(g, 0, 0);
  g->ctrace__nregions = 0;
  __atomic_store_n(&g->ctrace__status, status, __ATOMIC_RELAXED);
  pthread_mutex_lock(&gs_mu);
  g->ctrace__prev = NULL;
  g->ctrace__next = gs_head;
  if (gs_head) gs_head->ctrace__prev = g;
  gs_head = g;
  pthread_mutex_unlock(&gs_mu);
}

static void state_late(ctrace_g *g);

void ctrace__g_unregister(ctrace_g *g) {
  __atomic_store_n(&g->ctrace__status, CTRACE__G_DEAD, __ATOMIC_RELAXED);
  pthread_mutex_lock(&gs_mu);
  if (sealing) state_late(g);
  if (g->ctrace__prev)
    g->ctrace__prev->ctrace__next = g->ctrace__next;
  else if (gs_head == g)
    gs_head = g->ctrace__next;
  if (g->ctrace__next) g->ctrace__next->ctrace__prev = g->ctrace__prev;
  g->ctrace__next = g->ctrace__prev = NULL;
  pthread_mutex_unlock(&gs_mu);
}

/* Fork: the registry keeps only the calling thread's Gs in the child. Every
 * G is unlinked, so that a G of a thread that is gone, should the child
 * still end it, never writes into the new list. */
void ctrace__sched_fork_prepare(void) { pthread_mutex_lock(&gs_mu); }
void ctrace__sched_fork_parent(void) { pthread_mutex_unlock(&gs_mu); }

void ctrace__sched_fork_child(void) {
  for (ctrace_g *g = gs_head, *next; g; g = next) {
    next = g->ctrace__next;
    g->ctrace__next = g->ctrace__prev = NULL;
  }
  gs_head = NULL;
  sealing = 0;
  late = NULL; /* the parent's trace's */
  pthread_mutex_init(&gs_mu, NULL);
  ctrace__thread *t = &ctrace__tls;
  ctrace_g *keep[3] = {t->home, t->curg != t->home ? t->curg : NULL, t->g0};
  for (int i = 0; i < 3; i++) {
    ctrace_g *g = keep[i];
    if (!g || __atomic_load_n(&g->ctrace__status, __ATOMIC_RELAXED) == CTRACE__G_DEAD) continue;
    g->ctrace__lock = 0; /* another thread may have been announcing it */
    g->ctrace__next = gs_head;
    if (gs_head) gs_head->ctrace__prev = g;
    gs_head = g;
  }
}

ctrace_g *ctrace__alloc_g(void) { return calloc(1, sizeof(ctrace_g)); }
void ctrace__free_g(ctrace_g *g) { free(g); }

static void g_lock(ctrace_g *g) {
  while (__atomic_exchange_n(&g->ctrace__lock, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&g->ctrace__lock, __ATOMIC_RELAXED)) __builtin_ia32_pause();
}

static void g_unlock(ctrace_g *g) { __atomic_store_n(&g->ctrace__lock, 0, __ATOMIC_RELEASE); }

static bool announced(ctrace__w *w, ctrace_g *g) {
  return __atomic_load_n(&g->ctrace__gen, __ATOMIC_ACQUIRE) == ctrace__gen(w->t);
}

/* In ctrace__gen_status, beside the status: a mark assist was open. */
#define GEN_ASSIST 0x100u

static const uint8_t gstatus2[] = {
    [CTRACE__G_RUNNABLE] = CTRACE_GS_RUNNABLE, [CTRACE__G_RUNNING] = CTRACE_GS_RUNNING,
    [CTRACE__G_WAITING] = CTRACE_GS_WAITING, [CTRACE__G_SYSCALL] = CTRACE_GS_SYSCALL};

/* GoStatus of g as st says (the trace's status of it, tstatus, or one it
 * had, with assist saying whether a mark assist was open then); a G in a
 * system call names its thread (kept in lastp, which this format does not
 * use otherwise). */
static void go_status(ctrace__w *w, ctrace_g *g, uint32_t st, bool assist) {
  uint64_t m = st == CTRACE__G_RUNNING ? (uint64_t)w->t->tid
               : st == CTRACE__G_SYSCALL ? (uint64_t)ctrace__glastp(g) : UINT64_MAX;
  uint64_t v[3] = {g->id, m, gstatus2[st]};
  ctrace__emit2(w, CTRACE_EV122_GoStatus, 3, v, 0);
  /* An assist the trace shows open goes on in this generation, as Go
   * says it: a trace that begins here (a flight recorder's snapshot)
   * has its begin no longer. */
  if (assist) ctrace__emit2(w, CTRACE_EV122_GCMarkAssistActive, 1, v, 0);
}

/* announce for the generation format, once per generation and G. A G the
 * trace has shown before is stated as the trace showed it last; Go's
 * reader takes a G first seen through its status only in a trace's first
 * generation, so one new to the trace after that is created (GoCreate,
 * runnable; GoCreateSyscall for one in a system call, by its thread).
 * Only its own thread can say a G runs: another leaves it unannounced. */
static void announce2(ctrace__w *w, ctrace_g *g, uint32_t status, uint64_t creator_stack) {
  uint64_t gen = ctrace__gen(w->t);
  bool shown = g->ctrace__gen >= ctrace__gen0;
  uint32_t st = shown ? g->ctrace__tstatus : status;
  if (st == CTRACE__G_DEAD) st = CTRACE__G_RUNNABLE;
  bool own = w->t->tcurg == g || w->t->sys_g == g;
  if (st == CTRACE__G_RUNNING && !own) {
    if (shown) return;
    st = CTRACE__G_RUNNABLE;
  }
  g->ctrace__seq = 0;
  g->ctrace__tstatus = st;
  if (!shown) g->ctrace__nregions = 0; /* none open in this trace's eyes */
  /* One runnable when the trace first meets it is created, as in a later
   * generation, when its start is known, rather than stated: Go's tools
   * name a goroutine by its creation's start function, and one met in a
   * status by the outermost frame of its first stack (_start, clone3).
   * By its own thread only, on a P (the thread about to start it): Go's
   * reader takes GoCreate on a P alone. */
  bool stated = !(st == CTRACE__G_RUNNABLE && w->t->curg == g && w->p >= 0 && g->ctrace__start_pc);
  if (shown || (gen == ctrace__gen0 && !creator_stack && stated)) {
    if (st == CTRACE__G_SYSCALL && !shown) {
      ctrace__glastp_set(g, w->t->tid);
      w->t->sys_g = g;
    }
    go_status(w, g, g->ctrace__tstatus, ctrace__assist_shown(g));
  } else if (st == CTRACE__G_SYSCALL) {
    ctrace__glastp_set(g, w->t->tid);
    w->t->sys_g = g;
    uint64_t v[1] = {g->id};
    ctrace__emit2(w, CTRACE_EV122_GoCreateSyscall, 1, v, 0);
  } else {
    uint64_t v[3] = {g->id, ctrace__start_stack_id(w->t, g), creator_stack};
    g->ctrace__ticks = ctrace__emit2(w, CTRACE_EV122_GoCreate, 3, v, 0);
    g->ctrace__tstatus = CTRACE__G_RUNNABLE;
  }
  g->ctrace__gen_prev = g->ctrace__gen;
  g->ctrace__gen_status = g->ctrace__tstatus | (ctrace__assist_shown(g) ? GEN_ASSIST : 0);
  __atomic_store_n(&g->ctrace__gen, gen, __ATOMIC_RELEASE);
}

/* The status g is stated with at the end of generation gen by no thread
 * (CTRACE__G_DEAD for none), and whether an open assist goes with it.
 * Under g's lock. */
static uint32_t sealed_status(ctrace_g *g, uint64_t gen, bool *assist) {
  uint64_t last = __atomic_load_n(&g->ctrace__gen, __ATOMIC_ACQUIRE);
  uint64_t prev = g->ctrace__gen_prev;
  if (last >= ctrace__gen0 && last <= gen && g->ctrace__tstatus != CTRACE__G_DEAD) {
    /* Stated in gen by a thread too, as a rule: said again, as Go's
     * reader takes a status it knows. (Added for a G missing from a
     * snapshot that began with gen, before the race of sealing, above,
     * was found, which may have been its cause.) An open assist only
     * where no thread said it: Go refuses one said twice in a first
     * generation. */
    *assist = last < gen && ctrace__assist_shown(g);
    return g->ctrace__tstatus;
  }
  uint32_t st = g->ctrace__gen_status & ~GEN_ASSIST;
  if (last == gen + 1 && prev >= ctrace__gen0 && prev <= gen && st != CTRACE__G_DEAD) {
    /* Stated by a thread of the next generation first: a trace that
     * begins with gen (a flight recorder's snapshot) needs it in gen
     * too, as it stood then, which is how the next one stated it. */
    *assist = prev < gen && (g->ctrace__gen_status & GEN_ASSIST);
    return st;
  }
  return CTRACE__G_DEAD;
}

void ctrace__statuses_begin(uint64_t gen) {
  pthread_mutex_lock(&gs_mu);
  sealing = gen;
  pthread_mutex_unlock(&gs_mu);
}

/* Under gs_mu, g leaving the registry while its generation ends. */
static void state_late(ctrace_g *g) {
  ctrace__thread closer = {.state = sealing << 1 | 1, .tid = -1};
  ctrace__w w = {&closer, &late, CTRACE__NO_P};
  g_lock(g);
  bool assist;
  uint32_t st = sealed_status(g, sealing, &assist);
  if (st != CTRACE__G_DEAD && ctrace__reserve2(&late, sealing, ctrace__ticks())) go_status(&w, g, st, assist);
  g_unlock(g);
  atomic_fetch_add(&ctrace__stats.events, atomic_load_explicit(&closer.events, memory_order_relaxed));
}

void ctrace__statuses(ctrace__w *w, uint64_t ticks) {
  uint64_t gen = ctrace__gen(w->t);
  pthread_mutex_lock(&gs_mu);
  for (ctrace_g *g = gs_head; g; g = g->ctrace__next) {
    g_lock(g);
    bool assist;
    uint32_t st = sealed_status(g, gen, &assist);
    if (st != CTRACE__G_DEAD && ctrace__reserve2(w->bp, gen, ticks)) go_status(w, g, st, assist);
    g_unlock(g);
  }
  if (late) ctrace__queue_full(late);
  late = NULL;
  sealing = 0;
  pthread_mutex_unlock(&gs_mu);
}

/* Shows g in this trace as it stands (status), once. creator_stack is the
 * stack of the GoCreate: the creator's for a new G, 0 for one announced. */
static void announce(ctrace__w *w, ctrace_g *g, uint32_t status, uint64_t creator_stack) {
  g_lock(g);
  if (ctrace__genfmt()) {
    if (!announced(w, g)) announce2(w, g, status, creator_stack);
    g_unlock(g);
    return;
  }
  if (!announced(w, g)) {
    g->ctrace__seq = 0;
    ctrace__glastp_set(g, w->p);
    uint64_t v[3] = {g->id, ctrace__start_stack_id(w->t, g), creator_stack};
    uint64_t ticks = ctrace__emit(w, CTRACE_EV_GoCreate, 3, v, 0);
    g->ctrace__tstatus = CTRACE__G_RUNNABLE;
    if (status == CTRACE__G_WAITING || status == CTRACE__G_SYSCALL) {
      /* GoWaiting/GoInSyscall carry the implied seq 1. */
      g->ctrace__seq = 1;
      ticks = ctrace__emit(w, status == CTRACE__G_WAITING ? CTRACE_EV_GoWaiting : CTRACE_EV_GoInSyscall,
                           1, v, 0);
      g->ctrace__tstatus = status;
    }
    if (status == CTRACE__G_SYSCALL) {
      /* The P was handed off while g was in its system call (see
       * ctrace__announce_syscall). */
      ctrace__emit(w, CTRACE_EV_ProcStop, 0, v, 0);
      v[0] = (uint64_t)w->t->tid;
      ticks = ctrace__emit(w, CTRACE_EV_ProcStart, 1, v, 0);
    }
    g->ctrace__ticks = ticks;
    __atomic_store_n(&g->ctrace__gen, ctrace__gen(w->t), __ATOMIC_RELEASE);
  }
  g_unlock(g);
}

/* Gomaxprocs, twice, first in the trace: Go's runtime writes it as the
 * world restarts after StartTrace, and it keeps a trace with nothing else
 * in it valid (Go's reader refuses an empty one). Go 1.23 takes the first
 * Gomaxprocs as the end of the start-of-trace state dump and drops it; its
 * MMU page panics on a trace with no other (as on Go 1.11 traces with
 * one). Its viewer also counts time from the first event it keeps, and
 * takes a time of 0 there for "not running" (a G that runs from then on
 * panics it when it stops): so nothing may come before the dropped one or
 * at its time, and the kept one comes a tick later. Written into the no-P
 * buffer before tracing is on, at ticks read before that, so every other
 * thread's events come later. */
void ctrace__first_events(int64_t procs, uint64_t ticks) {
  ctrace__nop_lock();
  uint8_t *q = ctrace__open_at(&ctrace__nop_buf, CTRACE__NO_P, ticks - 1);
  if (q) {
    for (int i = 0; i < 2; i++) {
      *q++ = CTRACE_EV_Gomaxprocs | 2 << CTRACE_ARG_COUNT_SHIFT;
      q = ctrace__put_uvarint(q, (uint64_t)i); /* tick diff */
      q = ctrace__put_uvarint(q, (uint64_t)procs);
      *q++ = 0; /* stack */
    }
    ctrace__nop_buf->pos = q;
    ctrace__nop_buf->last_ticks = ticks;
    atomic_fetch_add_explicit(&ctrace__stats.events, 2, memory_order_relaxed);
  }
  ctrace__nop_unlock();
}

void ctrace__announce_all(void) {
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  /* Go's reader needs a G on GOMAXPROCS: this thread's own, if it has one. */
  if (ctrace__genfmt() && t->curg && t->p >= 0) {
    ctrace__ensure_running(&w, t->curg, 0);
    ctrace__gen_procs(&w);
  }
  pthread_mutex_lock(&gs_mu);
  for (ctrace_g *g = gs_head; g; g = g->ctrace__next) {
    /* A G in a system call is left to its own thread (see
     * ctrace__announce_syscall). */
    uint32_t st = __atomic_load_n(&g->ctrace__status, __ATOMIC_RELAXED);
    if (st != CTRACE__G_DEAD && st != CTRACE__G_SYSCALL) announce(&w, g, st, 0);
  }
  pthread_mutex_unlock(&gs_mu);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace__g_create_event(ctrace__w *w, ctrace_g *g, uint64_t stack) {
  announce(w, g, CTRACE__G_RUNNABLE, stack);
}

/* Takes the G the trace shows on w's P off it, if it is not g: the
 * runtime switched without saying so. GoPreempt is the honest name. */
void ctrace__free_p(ctrace__w *w, ctrace_g *g) {
  ctrace_g *cur = w->t->tcurg;
  if (!cur || cur == g) return;
  uint64_t v[2] = {0, 0};
  if (ctrace__genfmt()) {
    v[0] = ctrace__reason_id(w, CTRACE__R_PREEMPTED);
    cur->ctrace__ticks = ctrace__emit2(w, CTRACE_EV122_GoStop, 2, v, cur->ctrace__ticks);
  } else
    cur->ctrace__ticks = ctrace__emit(w, CTRACE_EV_GoPreempt, 1, v, cur->ctrace__ticks);
  cur->ctrace__tstatus = CTRACE__G_RUNNABLE;
  ctrace__glastp_set(cur, w->p);
  w->t->tcurg = NULL;
}

/* The Local variants say "same P as this G's last event", which lets the
 * reader order them without a sequence number (the seeds' tracelastp). */
static void start_event(ctrace__w *w, ctrace_g *g, uint64_t label) {
  /* A named G's every start carries its name (names.c). */
  if (!label) label = ctrace__g_label(w, g);
  ctrace__free_p(w, g);
  g->ctrace__seq++;
  uint64_t t;
  if (ctrace__genfmt()) {
    uint64_t v[2] = {g->id, g->ctrace__seq};
    t = ctrace__emit2(w, CTRACE_EV122_GoStart, 2, v, g->ctrace__ticks);
    if (label) ctrace__emit2(w, CTRACE_EV122_GoLabel, 1, &label, 0);
  } else if (label) {
    uint64_t v[3] = {g->id, g->ctrace__seq, label};
    ctrace__glastp_set(g, w->p);
    t = ctrace__emit(w, CTRACE_EV_GoStartLabel, 3, v, g->ctrace__ticks);
  } else if (ctrace__glastp(g) == w->p) {
    uint64_t v[1] = {g->id};
    t = ctrace__emit(w, CTRACE_EV_GoStartLocal, 1, v, g->ctrace__ticks);
  } else {
    uint64_t v[2] = {g->id, g->ctrace__seq};
    ctrace__glastp_set(g, w->p);
    t = ctrace__emit(w, CTRACE_EV_GoStart, 2, v, g->ctrace__ticks);
  }
  g->ctrace__ticks = t;
  g->ctrace__tstatus = CTRACE__G_RUNNING;
  w->t->tcurg = g;
  if (ctrace__genfmt())
    ctrace__gen_procs(w);
  else
    ctrace__identity_classic(w);
}

/* A classic trace names a G only at its start (GoStartLabel): g, which
 * w's thread runs, yields and starts again at once, labelled. */
void ctrace__restart_labelled(ctrace__w *w, ctrace_g *g, uint64_t label) {
  uint64_t v[1] = {0};
  g->ctrace__ticks = ctrace__emit(w, CTRACE_EV_GoSched, 1, v, g->ctrace__ticks);
  g->ctrace__tstatus = CTRACE__G_RUNNABLE;
  ctrace__glastp_set(g, w->p);
  w->t->tcurg = NULL;
  start_event(w, g, label);
}

void ctrace__unblock_event(ctrace__w *w, ctrace_g *g, uint64_t stack) {
  g->ctrace__seq++;
  uint64_t t;
  if (ctrace__genfmt()) {
    uint64_t v[3] = {g->id, g->ctrace__seq, stack};
    t = ctrace__emit2(w, CTRACE_EV122_GoUnblock, 3, v, g->ctrace__ticks);
  } else if (ctrace__glastp(g) == w->p) {
    uint64_t v[2] = {g->id, stack};
    t = ctrace__emit(w, CTRACE_EV_GoUnblockLocal, 2, v, g->ctrace__ticks);
  } else {
    uint64_t v[3] = {g->id, g->ctrace__seq, stack};
    ctrace__glastp_set(g, w->p);
    t = ctrace__emit(w, CTRACE_EV_GoUnblock, 3, v, g->ctrace__ticks);
  }
  g->ctrace__ticks = t;
  g->ctrace__tstatus = CTRACE__G_RUNNABLE;
}

/* Always GoSysExit, never GoSysExitLocal, as Go 1.11's runtime does:
 * Go 1.19's reader does not take the G of a GoSysExitLocal from its
 * argument, and so rejects it after a GoSysBlock. */
void ctrace__sysexit_event(ctrace__w *w, ctrace_g *g) {
  if (ctrace__genfmt()) {
    /* Only the G's own thread can end its call in this format. */
    if (w->t->sys_g != g) return;
    uint64_t v[1];
    g->ctrace__ticks = ctrace__emit2(w, CTRACE_EV122_GoSyscallEndBlocked, 0, v, g->ctrace__ticks);
    g->ctrace__tstatus = CTRACE__G_RUNNABLE;
    w->t->sys_g = NULL;
    return;
  }
  g->ctrace__seq++;
  ctrace__glastp_set(g, w->p);
  /* Real exit time 0: the event's own time stands. */
  uint64_t v[3] = {g->id, g->ctrace__seq, 0};
  g->ctrace__ticks = ctrace__emit(w, CTRACE_EV_GoSysExit, 3, v, g->ctrace__ticks);
  g->ctrace__tstatus = CTRACE__G_RUNNABLE;
}

void ctrace__ensure_announced(ctrace__w *w, ctrace_g *g, uint32_t status) {
  if (!announced(w, g)) announce(w, g, status, 0);
}

/* Announces g, in a system call since before this trace, as its own thread
 * returns from the call (t, on w's P). Go 1.23 reads GoInSyscall as a
 * system call begun on the event's P and thread: its thread view must know
 * the thread (a P's, so not the no-P buffer), and its P view ends the call
 * at that P's next ProcStop, panicking if the G is not running by then. So
 * the announcement is GoCreate, GoInSyscall, then ProcStop and ProcStart of
 * the P, as Go's runtime hands a P off while its G is in a system call:
 * this needs a P with no G shown running on it. Otherwise g is announced
 * waiting and woken from G0 (GoUnblock), which every Go reads. */
void ctrace__announce_syscall(ctrace__w *w, ctrace_g *g) {
  if (announced(w, g)) return;
  if (w->p != CTRACE__NO_P && !w->t->tcurg) {
    announce(w, g, CTRACE__G_SYSCALL, 0);
  } else {
    announce(w, g, CTRACE__G_WAITING, 0);
    if (g->ctrace__tstatus == CTRACE__G_WAITING) ctrace__unblock_event(w, g, 0);
  }
}

void ctrace__ensure_running(ctrace__w *w, ctrace_g *g, uint64_t label) {
  if (!announced(w, g)) announce(w, g, CTRACE__G_RUNNABLE, 0);
  switch (g->ctrace__tstatus) {
  case CTRACE__G_RUNNING:
    if (w->t->tcurg == g) return;
    /* Another thread's, in the trace: this format cannot move it. */
    if (ctrace__genfmt()) return;
    /* Shown running on another P: only a runtime that moved a G without
     * stopping it gets here. Stop it there in the trace's eyes. */
    g->ctrace__tstatus = CTRACE__G_RUNNABLE;
    break;
  case CTRACE__G_WAITING:
    /* Nobody told us who woke it: it wakes itself from this P, between
     * Gs, as Go's netpoller does from G0. */
    ctrace__free_p(w, g);
    ctrace__unblock_event(w, g, 0);
    break;
  case CTRACE__G_SYSCALL:
    ctrace__free_p(w, g);
    ctrace__sysexit_event(w, g);
    if (g->ctrace__tstatus == CTRACE__G_SYSCALL) return; /* another thread's */
    break;
  case CTRACE__G_DEAD:
    /* Go's reader takes GoStop (and GoEnd) as the end of a G and never
     * lets it run again: a G the runtime starts after that shows as a new
     * goroutine, under a new id. */
    g->id = ctrace__new_gid();
    __atomic_store_n(&g->ctrace__gen, 0, __ATOMIC_RELAXED);
    announce(w, g, CTRACE__G_RUNNABLE, 0);
    break;
  default:
    break;
  }
  start_event(w, g, label);
}

/* Ends what the trace shows on the thread's P: the G running there stops
 * (GoSched, Go's own recipe at trace stop), then the P. At stop the G is
 * not touched: its thread may have ended it and freed it since tracing went
 * off, and the next trace announces it afresh anyway. */
void ctrace__close_thread(ctrace__thread *t, bool stopping) {
  if (t->tp < 0) return;
  ctrace__w w = {t, ctrace__tbuf(t), t->tp};
  uint64_t v[2] = {0, 0};
  ctrace__end_sweep(&w);
  ctrace_g *g = t->tcurg;
  if (ctrace__genfmt()) {
    if (g) {
      if (stopping) ctrace__end_stw(&w); /* a gap's (close_for_gap) */
      v[0] = ctrace__reason_id(&w, CTRACE__R_GOSCHED);
      g->ctrace__ticks = ctrace__emit2(&w, CTRACE_EV122_GoStop, 2, v, g->ctrace__ticks);
      g->ctrace__tstatus = CTRACE__G_RUNNABLE;
      t->tcurg = NULL;
    }
    ctrace__gen_proc_stop(&w);
    t->tp = -1;
    return;
  }
  if (g) {
    if (stopping) ctrace__end_stw(&w);
    uint64_t ticks = ctrace__emit(&w, CTRACE_EV_GoSched, 1, v, stopping ? 0 : g->ctrace__ticks);
    if (!stopping) {
      g->ctrace__ticks = ticks;
      g->ctrace__tstatus = CTRACE__G_RUNNABLE;
      ctrace__glastp_set(g, t->tp);
    }
    t->tcurg = NULL;
  }
  ctrace__emit(&w, CTRACE_EV_ProcStop, 0, v, 0);
  t->tp = -1;
}
