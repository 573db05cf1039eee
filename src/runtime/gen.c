/* Go's current trace format (CTRACE_FORMAT_GO122): generations.
 *
 * A trace in this format is cut into generations, each self-contained:
 * its own string and stack tables, its own sequence numbers, and the
 * status of every P and G before that P's or G's first event in it. A
 * generation is the tracer's state word's own (state >> 1): ending one is
 * a stop that leaves tracing on (end_generation, tracer.c). Each thread
 * notices the new word at its next event, as at a start, and first states
 * what it holds (ctrace__gen_resume); the thread that ended the generation
 * states, for the generation just ended, every P and G that no thread
 * wrote about in it (ctrace__gen_seal), as Go's traceAdvance does, so
 * that a reader that starts at any generation knows them all.
 *
 * Go's reader demands a P and a G on most events (GO-COMPAT.md): user
 * annotations, GC phases and GOMAXPROCS need a G running on a P; heap
 * figures and sweeps a P. A thread between Gs, or without a P, that
 * writes one shows its own G (and a P) for the instant
 * (ctrace__stand_in, events.c).
 */
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

uint64_t ctrace__gen_base, ctrace__gen0;

/* Per P, under the runtime's own exclusion of P use (one thread holds a P
 * at a time, as in Go): the status the trace shows, the generation that
 * last stated it, and the P's sequence number there. The lock is for the
 * thread that seals a generation, which reads the status of Ps no thread
 * stated in it while threads of the next may be stating them. */
typedef struct pstate {
  /* Stored under the lock, read without by the P's holder: release and
   * acquire order the holder's later changes after the sealer's reads.
   * A cache line each: the holders of neighbouring Ps, on other cores,
   * write their seq at every system call (event-stack16-go122 at 2
   * threads: 49 ns a call sharing lines, 24 ns apart). */
  _Alignas(64) _Atomic uint64_t gen;
  uint64_t seq;
  uint8_t status; /* CTRACE_PS_*, 0 for a P never shown */
  _Atomic uint8_t lock;
  /* The generation stated before gen, and the status stated in gen,
   * for the sealer of the generation before gen (ctrace__gen_seal). */
  uint8_t gen_status;
  uint64_t gen_prev;
} pstate;
/* By P number, in chunks: the first static, the others mapped at a P's
 * first use (a thread per P makes thousands of Ps in a program of
 * thousands of threads). Above PCHUNKS chunks, and should a chunk's
 * mmap fail, numbers share the first chunk's states. */
#define PCHUNK 4096
#define PCHUNKS 256
static pstate chunk0[PCHUNK];
static pstate *_Atomic chunks[PCHUNKS] = {chunk0};

static pstate *chunk_new(uint64_t i) {
  void *m = mmap(NULL, PCHUNK * sizeof(pstate), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return chunk0;
  pstate *c = NULL;
  if (atomic_compare_exchange_strong(&chunks[i], &c, (pstate *)m)) return m;
  munmap(m, PCHUNK * sizeof(pstate)); /* another thread's came first */
  return c;
}

static pstate *pstate_of(int64_t p) {
  uint64_t i = (uint64_t)p / PCHUNK;
  if (ctrace__likely(i == 0)) return &chunk0[p];
  pstate *c = i < PCHUNKS ? atomic_load_explicit(&chunks[i], memory_order_acquire) : chunk0;
  if (ctrace__unlikely(!c)) c = chunk_new(i);
  return &c[(uint64_t)p % PCHUNK];
}

static void p_lock(pstate *s) {
  while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
    while (atomic_load_explicit(&s->lock, memory_order_relaxed)) __builtin_ia32_pause();
}
static void p_unlock(pstate *s) { atomic_store_explicit(&s->lock, 0, memory_order_release); }

void ctrace__gen_reset(uint64_t gen0) {
  ctrace__gen0 = gen0;
  ctrace__gen_base = gen0 - 1;
  for (int i = 0; i < PCHUNKS; i++) {
    pstate *c = atomic_load_explicit(&chunks[i], memory_order_acquire);
    if (c) memset(c, 0, PCHUNK * sizeof(pstate));
  }
}

/* Strings of Go's own block and stop reasons: its analyses classify
 * waits by them (a "network" wait is a net profile's). */
static const char *const reasons[CTRACE__R_COUNT] = {
    [CTRACE__R_UNSPECIFIED] = "unspecified", [CTRACE__R_NET] = "network",
    [CTRACE__R_SELECT] = "select",           [CTRACE__R_COND] = "sync.(*Cond).Wait",
    [CTRACE__R_SYNC] = "sync",               [CTRACE__R_SEND] = "chan send",
    [CTRACE__R_RECV] = "chan receive",       [CTRACE__R_GC] = "wait until GC ends",
    [CTRACE__R_SLEEP] = "sleep",             [CTRACE__R_PREEMPTED] = "preempted",
    [CTRACE__R_GOSCHED] = "runtime.Gosched", [CTRACE__R_STW_MARK] = "GC mark termination",
    [CTRACE__R_STW_SWEEP] = "GC sweep termination", [CTRACE__R_SYSTEM] = "system goroutine wait",
};

/* A reason's string id in w's generation: a table lookup the first time
 * per generation, then one load. Ids stay below 2^40 (a string table of
 * a generation is far smaller), so an id and its generation's low bits
 * share a word. */
static _Atomic uint64_t reason_ids[2][CTRACE__R_COUNT];

uint64_t ctrace__reason_id(ctrace__w *w, int r) {
  uint64_t gen = ctrace__gen(w->t), tag = (gen & 0xffffff) << 40;
  _Atomic uint64_t *slot = &reason_ids[gen & 1][r];
  uint64_t c = atomic_load_explicit(slot, memory_order_relaxed);
  if ((c & ~((1ull << 40) - 1)) == tag) return c & ((1ull << 40) - 1);
  uint64_t id = ctrace__string_id(w, reasons[r]);
  atomic_store_explicit(slot, tag | id, memory_order_relaxed);
  return id;
}

/* The P's status, once per generation, before the P's first event in it;
 * the P's sequence numbers restart there. */
static void proc_status(ctrace__w *w, int64_t p) {
  pstate *s = pstate_of(p);
  uint64_t gen = ctrace__gen(w->t);
  if (atomic_load_explicit(&s->gen, memory_order_acquire) == gen) return;
  p_lock(s);
  if (!s->status) s->status = CTRACE_PS_IDLE;
  uint64_t v[2] = {(uint64_t)p, s->status};
  ctrace__emit2(w, CTRACE_EV122_ProcStatus, 2, v, 0);
  s->seq = 0;
  s->gen_prev = atomic_load_explicit(&s->gen, memory_order_relaxed);
  s->gen_status = s->status;
  atomic_store_explicit(&s->gen, gen, memory_order_release);
  p_unlock(s);
}

uint64_t ctrace__gen_proc_start(ctrace__w *w, int64_t p) {
  proc_status(w, p);
  pstate *s = pstate_of(p);
  s->status = CTRACE_PS_RUNNING;
  uint64_t v[2] = {(uint64_t)p, ++s->seq};
  return ctrace__emit2(w, CTRACE_EV122_ProcStart, 2, v, 0);
}

void ctrace__gen_proc_stop(ctrace__w *w) {
  pstate_of(w->p)->status = CTRACE_PS_IDLE;
  uint64_t v[1];
  ctrace__emit2(w, CTRACE_EV122_ProcStop, 0, v, 0);
}

/* A system call on w's P: GoSyscallBegin takes a P sequence number. With
 * blocking, the thread then gives the P up as Go's entersyscallblock does,
 * by stealing it from itself; else the call ends at once (the API says
 * nothing more of a call that does not block). */
uint64_t ctrace__gen_syscall(ctrace__w *w, uint64_t stack, uint64_t min_ticks, bool blocking) {
  pstate *s = pstate_of(w->p);
  uint64_t v[3] = {++s->seq, stack, 0};
  uint64_t ticks = ctrace__emit2(w, CTRACE_EV122_GoSyscallBegin, 2, v, min_ticks);
  if (!blocking) {
    ctrace__emit2(w, CTRACE_EV122_GoSyscallEnd, 0, v, 0);
    return ticks;
  }
  v[0] = (uint64_t)w->p;
  v[1] = ++s->seq;
  v[2] = (uint64_t)w->t->tid;
  s->status = CTRACE_PS_IDLE;
  return ctrace__emit2(w, CTRACE_EV122_ProcSteal, 3, v, 0);
}

/* At a thread's first event in a generation after the first of its trace:
 * the P and G it holds, as the trace shows them, and the ranges open on
 * them. Inside the write section, before the event. */
void ctrace__gen_resume(ctrace__thread *t) {
  ctrace__w w = {t, ctrace__tbuf(t), t->tp};
  uint64_t v[3];
  if (t->tp >= 0) {
    proc_status(&w, t->tp);
    if (t->sweep_p == t->tp) {
      v[0] = (uint64_t)t->tp;
      ctrace__emit2(&w, CTRACE_EV122_GCSweepActive, 1, v, 0);
    }
  }
  ctrace_g *g = t->tcurg ? t->tcurg : t->sys_g;
  if (g) ctrace__ensure_announced(&w, g, g->ctrace__tstatus);
  if (t->tcurg && t->tp >= 0) {
    ctrace__gen_procs(&w);
    ctrace__gc_active(&w);
    /* Its G's name, in every generation (names.c): a trace that begins
     * here (a flight recorder's snapshot) names a G that does not start
     * again in it. */
    uint64_t label = ctrace__g_label(&w, t->tcurg);
    if (label) ctrace__emit2(&w, CTRACE_EV122_GoLabel, 1, &label, 0);
  }
}

/* Ends generation gen for what no thread wrote about in it: the statuses
 * of the Ps the trace shows and of every G it has shown, into a batch of
 * no thread. Called by the thread ending the generation once no thread
 * writes into it (end_generation, tracer.c). */
void ctrace__gen_seal(uint64_t gen, uint64_t ticks) {
  ctrace__thread closer = {.state = gen << 1 | 1, .tid = -1};
  ctrace__buf *b = NULL;
  ctrace__w w = {&closer, &b, CTRACE__NO_P};
  for (int64_t p = 0; p < PCHUNK * PCHUNKS; p++) {
    pstate *c = atomic_load_explicit(&chunks[p / PCHUNK], memory_order_acquire);
    if (!c) {
      p += PCHUNK - 1; /* no P of this chunk was ever used */
      continue;
    }
    pstate *s = &c[p % PCHUNK];
    p_lock(s);
    /* Unless stated in gen already. A thread of the next generation may
     * have stated it first: a trace that begins with gen (a flight
     * recorder's snapshot) needs it in gen too, as it stood, which is
     * how the next one stated it (as ctrace__statuses does for Gs). */
    uint64_t last = atomic_load_explicit(&s->gen, memory_order_relaxed);
    uint8_t status = last < gen                                                        ? s->status
                     : last == gen + 1 && s->gen_prev >= ctrace__gen0 && s->gen_prev < gen ? s->gen_status
                                                                                          : 0;
    if (status && ctrace__reserve2(&b, gen, ticks)) {
      uint64_t v[2] = {(uint64_t)p, status};
      ctrace__emit2(&w, CTRACE_EV122_ProcStatus, 2, v, 0);
    }
    p_unlock(s);
  }
  ctrace__statuses(&w, ticks);
  atomic_fetch_add(&ctrace__stats.events, atomic_load_explicit(&closer.events, memory_order_relaxed));
  if (b) ctrace__queue_full(b);
}

/* A generation with nothing in it but P 0, idle: for a trace with no
 * event at all, which would otherwise have no generation, and which Go's
 * reader refuses. Go's own traces never lack one: its runtime always
 * states its Ps. */
void ctrace__gen_idle(uint64_t gen, uint64_t ticks) {
  ctrace__thread closer = {.state = gen << 1 | 1, .tid = -1};
  ctrace__buf *b = NULL;
  ctrace__w w = {&closer, &b, CTRACE__NO_P};
  if (!ctrace__reserve2(&b, gen, ticks)) return;
  uint64_t v[2] = {0, CTRACE_PS_IDLE};
  ctrace__emit2(&w, CTRACE_EV122_ProcStatus, 2, v, 0);
  atomic_fetch_add(&ctrace__stats.events, atomic_load_explicit(&closer.events, memory_order_relaxed));
  ctrace__queue_full(b);
}
