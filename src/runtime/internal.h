/* Internals of the tracer shared by src/runtime/. Everything here is
 * ctrace__ and hidden from the shared library's exports (libctrace.map).
 *
 * Concurrency in one paragraph. Each thread writes events only into its
 * own buffer, between two increments of its own sequence counter (odd while
 * writing), after checking the global state word. Stop clears "enabled" in
 * that word, forces a memory barrier on every thread (membarrier(2), or a
 * full fence on each writer where membarrier is missing), and then waits for
 * every registered thread's counter to leave the odd value it saw. After that
 * no thread writes into this trace again, and stop may take their buffers.
 * This is Go 1.22's scheme; C has no stop-the-world to lean on.
 */
#ifndef CTRACE_INTERNAL_H
#define CTRACE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include "ctrace/ctrace.h"
#include "ctrace/format.h"
#include "ctrace/format_go122.h"

#define ctrace__likely(x) __builtin_expect(!!(x), 1)
#define ctrace__unlikely(x) __builtin_expect(!!(x), 0)
#define CTRACE__HIDDEN __attribute__((visibility("hidden")))
#define CTRACE__NOINLINE __attribute__((noinline))
#define CTRACE__INLINE static inline __attribute__((always_inline))

/* ---- buffers (buf.c) ------------------------------------------------- */

/* Worst case of one event without a trailing string: type, length, tick
 * diff, up to four values (three arguments and the stack id), 10 bytes each,
 * plus a batch header the slow path may put first. */
#define CTRACE__MAX_EVENT (2 + 5 * CTRACE_MAX_VARINT)
#define CTRACE__NO_P ((int64_t)-1)

typedef struct ctrace__buf {
  struct ctrace__buf *link; /* pool or full queue */
  uint8_t *pos, *end;       /* write cursor; end of the data area */
  uint64_t last_ticks;      /* ticks of the last event, for diffs */
  int64_t p;                /* P of the open batch (classic format) */
  uint64_t gen;             /* generation of the batch (state >> 1) */
  uint8_t *lenpos;          /* the batch's length field (generation format) */
  size_t size;              /* bytes mapped, header included */
  uint8_t data[];
} ctrace__buf;

/* Slow path of ctrace__reserve: queues *bp if any, takes an empty buffer
 * and opens a batch for p in it. Returns NULL (and counts the event lost) when no
 * memory can be had. */
uint8_t *ctrace__reserve_slow(ctrace__buf **bp, int64_t p, size_t n) CTRACE__HIDDEN;
/* Queues *bp if any and opens a batch for p at the given ticks in a new
 * buffer (ctrace__first_events). NULL when no memory can be had. */
uint8_t *ctrace__open_at(ctrace__buf **bp, int64_t p, uint64_t ticks) CTRACE__HIDDEN;
/* Appends b to the queue of full buffers the reader drains. */
void ctrace__queue_full(ctrace__buf *b) CTRACE__HIDDEN;
void ctrace__pool_trim(size_t keep_size) CTRACE__HIDDEN;

CTRACE__INLINE uint8_t *ctrace__put_uvarint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* Room for n bytes in *bp, whose batch is for P p. */
CTRACE__INLINE uint8_t *ctrace__reserve(ctrace__buf **bp, int64_t p, size_t n) {
  ctrace__buf *b = *bp;
  if (ctrace__likely(b != NULL && (size_t)(b->end - b->pos) >= n)) return b->pos;
  return ctrace__reserve_slow(bp, p, n);
}

/* ---- clock (clock.c) --------------------------------------------------- */

/* A tick of the TSC clock, in ns: a power of two, so that Go's reader
 * turns ticks into ns exactly (clock.c). */
#define CTRACE__TICK_NS 16

extern bool ctrace__use_tsc CTRACE__HIDDEN;
extern uint64_t ctrace__tsc_mult CTRACE__HIDDEN; /* ticks per TSC cycle, 32.32 */
uint64_t ctrace__mono_ns(void) CTRACE__HIDDEN;
void ctrace__clock_init(void) CTRACE__HIDDEN;
/* The trace's ticks per second: 10^9 / CTRACE__TICK_NS, or 10^9. */
uint64_t ctrace__frequency(void) CTRACE__HIDDEN;

#if defined(__x86_64__)
CTRACE__INLINE uint64_t ctrace__rdtsc(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}
#endif

/* Trace ticks: the TSC's cycles scaled to CTRACE__TICK_NS where it is
 * constant and does not stop (a multiply beside rdtsc: 0.6 ns more an
 * event, event-nostack 12.1 against 11.5 ns with rdtsc / 64), else
 * CLOCK_MONOTONIC nanoseconds. */
CTRACE__INLINE uint64_t ctrace__ticks(void) {
#if defined(__x86_64__)
  if (ctrace__likely(ctrace__use_tsc))
    return (uint64_t)((unsigned __int128)ctrace__rdtsc() * ctrace__tsc_mult >> 32);
#endif
  return ctrace__mono_ns();
}

/* ---- goroutines -------------------------------------------------------- */

/* A G's real status, kept whether or not tracing is on (read when a trace
 * starts), and its status as the current trace has shown it (tstatus). */
enum {
  CTRACE__G_DEAD = 0,
  CTRACE__G_RUNNABLE,
  CTRACE__G_RUNNING,
  CTRACE__G_WAITING,
  CTRACE__G_SYSCALL, /* blocked in a system call, P given up */
};

/* ---- threads (tracer.c) ------------------------------------------------ */

/* What a thread has said it is. A thread that says nothing before its
 * first event is a plain thread: its own G on its own P. */
enum {
  CTRACE__MODE_NONE = 0,
  CTRACE__MODE_PLAIN,   /* own G (home) on own P */
  CTRACE__MODE_RUNTIME, /* runs Gs it is told of, on the P it is told of */
  CTRACE__MODE_ENDED,   /* ctrace_thread_end was called */
};

/* ctrace__flags of a ctrace_g */
#define CTRACE__GF_OWNED 1u  /* allocated by ctrace_thread_create */
#define CTRACE__GF_ASSIST 2u /* in a mark assist; its own thread's to change */
#define CTRACE__GF_THREAD 4u /* a thread's, created here: its creation names
                                it by its own stacks (ctrace__start_stack_id) */
/* Generation format: the trace that showed the assist begin (the low 15
 * bits of its mark, ctrace__gen0, with the 16th set: never 0), for its end
 * and the statuses of later generations: Go's current reader refuses an
 * end whose begin it has not seen. 0: none. */
#define CTRACE__GF_MARK 0xffff0000u
CTRACE__INLINE uint32_t ctrace__mark16(uint64_t mark) { return mark ? (uint32_t)(mark & 0x7fff) | 0x8000 : 0; }

/* The flags are changed by the G's own thread (and at its creation), and
 * read by others too (a generation's statuses): relaxed atomics. */
CTRACE__INLINE uint32_t ctrace__gflags(const ctrace_g *g) {
  return __atomic_load_n(&g->ctrace__flags, __ATOMIC_RELAXED);
}
CTRACE__INLINE void ctrace__gflags_set(ctrace_g *g, uint32_t keep, uint32_t add) {
  __atomic_store_n(&g->ctrace__flags, (ctrace__gflags(g) & keep) | add, __ATOMIC_RELAXED);
}

/* The G's last P (the older formats), or the thread of its system call
 * (the generation format): set by the G's own thread, and read by the
 * thread that seals a generation too (the status of a G in a system call
 * names its thread, ctrace__statuses): relaxed atomics, as the flags. */
CTRACE__INLINE int64_t ctrace__glastp(const ctrace_g *g) { return __atomic_load_n(&g->ctrace__lastp, __ATOMIC_RELAXED); }
CTRACE__INLINE void ctrace__glastp_set(ctrace_g *g, int64_t v) { __atomic_store_n(&g->ctrace__lastp, v, __ATOMIC_RELAXED); }

CTRACE__INLINE void ctrace__assist_mark(ctrace_g *g, uint64_t mark) {
  ctrace__gflags_set(g, ~CTRACE__GF_MARK, ctrace__mark16(mark) << 16);
}

typedef struct ctrace__thread {
  _Atomic uint32_t seq; /* odd while writing an event */
  /* Stacks this thread still notes for its creation's start stack
   * (ctrace__start_note): read by every stacked event, so in the line
   * every event touches, in what was padding before state. */
  uint8_t naming_left;
  /* The global state this thread's trace fields are for. Atomic (plain
   * loads are movs) for the one write by another thread: the closing of
   * a thread for a gap (tracer.c), while the thread may be reading it. */
  _Atomic uint64_t state;
  /* This thread's buffers, by generation parity: a thread writes only
   * into its generation's, so that the thread that ends a generation
   * (ctrace__advance) may take the other while this one writes. */
  ctrace__buf *bufs[2];
  int64_t tp;           /* P this thread has started in the trace, or -1 */
  ctrace_g *tcurg;      /* G running on that P as the trace shows it */
  int64_t sweep_p;      /* P of the sweep the trace shows open, or -1 */
  ctrace_g *sys_g;      /* G the trace shows in a system call on this thread
                           without a P (generation format), or NULL */
  ctrace_g *g0;         /* the thread's own G for events between Gs
                           (ctrace__stand_in), or NULL; live until the
                           thread exits */
  /* Generation format: the thread's strings batches (by generation
   * parity, as bufs) and its block of unique string ids. */
  ctrace__buf *sbufs[2];
  uint64_t uid_gen, uid_next, uid_end;
  /* The run of ids before uid_next whose varints differ only in their
   * first byte's low bits: uid_run of them left, the next one's varint
   * (uid_bytes long, 0 past 2^28) uid_word, so that a log adds 1 to it
   * rather than encode its id twice (unique_id_slow). */
  uint32_t uid_word, uid_run;
  unsigned uid_bytes;

  /* Real state, kept whether or not tracing is on; this thread only. */
  int64_t p;            /* P held, or -1 */
  ctrace_g *curg;       /* G being run, NULL between Gs */
  ctrace_g *home;       /* the thread's own G (plain threads) */
  ctrace_g self;        /* storage for home unless adopted */
  uintptr_t stack_lo, stack_hi;
  pid_t tid;
  uint8_t mode;         /* CTRACE__MODE_* */
  bool registered, keyed, exiting;
  pthread_t pthread;            /* the thread itself, for its CPU-time clock */
  char comm[16];                /* its system name as last read (names.c) */
  struct ctrace__prof *prof;    /* CPU sampling (cpuprof.c), NULL if never */
  _Atomic uint64_t events; /* events written, summed by ctrace_stats_get */
  uint64_t naming_g; /* the G whose start stack naming_left is for */
  struct ctrace__thread *next, *prev; /* registry, under threads lock */
} ctrace__thread;

extern __thread ctrace__thread ctrace__tls __attribute__((tls_model("initial-exec"))) CTRACE__HIDDEN;
/* gen << 1 | enabled */
extern _Atomic uint64_t ctrace__state CTRACE__HIDDEN;
extern bool ctrace__light_fence CTRACE__HIDDEN;

typedef struct ctrace__config {
  bool stacks;
  int depth;
  size_t buffer_size;
  int cpu_hz; /* 0: no CPU samples */
  int unwind; /* CTRACE_UNWIND_* */
  size_t max_pending; /* bytes queued for the reader past which the trace ends */
  int format;         /* CTRACE_FORMAT_GO111 or _GO122 */
} ctrace__config;
extern ctrace__config ctrace__cfg CTRACE__HIDDEN;

/* Whether this trace is in Go's current format (generations; gen.c).
 * Relaxed atomic: a thread ending a goroutine after a capped trace may
 * read it while the next start sets it (ctrace__gap_g_end rechecks
 * under threads_mu); a plain mov on every target. */
CTRACE__INLINE bool ctrace__genfmt(void) {
  return __atomic_load_n(&ctrace__cfg.format, __ATOMIC_RELAXED) == CTRACE_FORMAT_GO122;
}

/* Bytes of events a buffer holds. */
CTRACE__INLINE size_t ctrace__buf_capacity(void) {
  return ctrace__cfg.buffer_size - sizeof(ctrace__buf);
}

typedef struct ctrace__counters {
  _Atomic uint64_t events, lost, truncated, buffers, bytes, unwritten, capped, gap_ns;
} ctrace__counters;
extern ctrace__counters ctrace__stats CTRACE__HIDDEN;

bool ctrace__begin_slow(ctrace__thread *t, uint64_t s) CTRACE__HIDDEN;

/* The reader fell max_pending bytes behind (reader.c): tracing goes off
 * at once. In the classic format the next ctrace_stop ends the trace as
 * it would have; in the generation format a gap begins (ctrace__gap_begin). */
void ctrace__trace_capped(void) CTRACE__HIDDEN;
/* A gap of ns ended: the first G to run on a P in the generation after
 * it logs so (category "ctrace"), where readers see it. */
void ctrace__gap_note(uint64_t ns) CTRACE__HIDDEN;
/* g, which t shows running or in a system call, ends while tracing is
 * off at the cap: t is closed for the gap now, while g is still there. */
void ctrace__gap_g_end(ctrace__thread *t, ctrace_g *g) CTRACE__HIDDEN;

/* The trace's reader thread, started before the trace and joined by its
 * stop: the writer of ctrace_start_fd (writer.c) or the flight recorder
 * (flight.c). */
typedef struct ctrace__sink {
  /* After the trace is drained: waits for the thread, frees the sink and
   * returns its error. */
  int (*join)(struct ctrace__sink *s);
  /* In the child of a fork: drops what of the parent's sink the child
   * holds (a descriptor in a shared table); may be NULL. */
  void (*fork_child)(struct ctrace__sink *s);
  /* ctrace__pause: the thread ends, what it holds kept (0 or a CTRACE_E*
   * code: then it goes on); ctrace__resume: a new one takes over. NULL:
   * the sink cannot pause. Under ctl_mu, with tracing on. */
  int (*pause)(struct ctrace__sink *s);
  int (*resume)(struct ctrace__sink *s);
  /* Bytes a generation is cut at (0: GEN_BYTES, reader.c). */
  size_t gen_bytes;
  /* The sink holds each generation until it is out whole (the flight
   * recorder): past four times the cut, tracing pauses as past
   * max_pending, for the cut itself runs late when the writers keep the
   * reader's thread from the CPU. */
  bool holds;
} ctrace__sink;

/* The flight recorder's crash snapshot into path (flight_crash.c): its
 * helper thread and signal handlers, from the start to the stop. */
int ctrace__flight_crash_arm(const char *path) CTRACE__HIDDEN;
/* Installs prev for sig with install (the shim bypasses its own
 * sigaction), then gives it sig as the kernel would have: its handler,
 * or the default action now (handback.c). Async-signal-safe. */
void ctrace__sig_hand_back(int sig, struct sigaction prev, siginfo_t *info, void *uc,
                           int (*install)(int, const struct sigaction *, struct sigaction *)) CTRACE__HIDDEN;
/* ctrace_flight_write, whose generation's end, with force, goes through
 * an open stop-the-world (a crash's: it may never end). */
int ctrace__flight_write(int fd, bool force) CTRACE__HIDDEN;
void ctrace__flight_crash_disarm(void) CTRACE__HIDDEN;
/* Whether its helper thread is there (armed, not yet disarmed). */
bool ctrace__flight_crash_armed(void) CTRACE__HIDDEN;

/* ctrace_start, with sink (NULL: the program reads, ctrace_read). */
int ctrace__start(const ctrace_options *opts, ctrace__sink *sink) CTRACE__HIDDEN;

/* For a moment in which the process must have one thread (the shim's
 * unshare and setns wrappers, src/preload/ns.c): ctrace__pause ends the
 * sink's thread (the writer of ctrace_start_file or _fd, the flight
 * recorder's), keeping the trace and what the thread held, and returns
 * 0, or a negative code (ctrace/error.h) and changes nothing. Tracing
 * goes on: events queue for the reader meanwhile. Until ctrace__resume,
 * which starts the thread anew (0, or a negative code: no thread could be
 * started, and the rest of the trace is lost; stop then says so), ctl_mu
 * is held: no start, stop or end of a generation. The thread that paused
 * resumes. */
int ctrace__pause(void) CTRACE__HIDDEN;
int ctrace__resume(void) CTRACE__HIDDEN;

/* Stores the odd seq, then loads the state word: stop does the mirror
 * image, so one of the two sees the other. The StoreLoad order comes from
 * stop's membarrier() where the kernel has it, else from a full fence
 * here. TSan models neither fences nor membarrier, so its builds use
 * sequentially consistent accesses, which it understands. */
CTRACE__INLINE uint64_t ctrace__enter_seq(ctrace__thread *t, uint32_t odd) {
#ifdef CTRACE_TSAN
  atomic_store_explicit(&t->seq, odd, memory_order_seq_cst);
  return atomic_load_explicit(&ctrace__state, memory_order_seq_cst);
#else
  atomic_store_explicit(&t->seq, odd, memory_order_relaxed);
  if (ctrace__likely(ctrace__light_fence))
    atomic_signal_fence(memory_order_seq_cst);
  else
    atomic_thread_fence(memory_order_seq_cst);
  return atomic_load_explicit(&ctrace__state, memory_order_acquire);
#endif
}

/* Enters the write section: returns the thread, or NULL when tracing is
 * off (or this thread is already inside, as from a signal handler, where
 * writing would tear the event being written; that event is counted lost). */
CTRACE__INLINE ctrace__thread *ctrace__begin(void) {
  ctrace__thread *t = &ctrace__tls;
  uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
  if (ctrace__unlikely(seq & 1)) {
    atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    return NULL;
  }
  uint64_t s = ctrace__enter_seq(t, seq + 1);
  if (ctrace__unlikely(s != t->state) && !ctrace__begin_slow(t, s)) {
    atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
    return NULL;
  }
  return t;
}

CTRACE__INLINE void ctrace__end(ctrace__thread *t) {
  atomic_store_explicit(&t->seq, atomic_load_explicit(&t->seq, memory_order_relaxed) + 1,
                        memory_order_release);
}

CTRACE__INLINE bool ctrace__on(void) {
  return atomic_load_explicit(&ctrace__state, memory_order_relaxed) & 1;
}

/* ---- writing events (events.c) ----------------------------------------- */

/* The thread's buffer for the generation it writes. */
CTRACE__INLINE ctrace__buf **ctrace__tbuf(ctrace__thread *t) { return &t->bufs[(t->state >> 1) & 1]; }

/* Where an event goes: the thread's buffer for its P, or, for a thread
 * without a P, the shared no-P buffer under its lock. */
typedef struct ctrace__w {
  ctrace__thread *t;
  ctrace__buf **bp;
  int64_t p;
} ctrace__w;

void ctrace__nop_lock(void) CTRACE__HIDDEN;
void ctrace__nop_unlock(void) CTRACE__HIDDEN;
extern ctrace__buf *ctrace__nop_buf CTRACE__HIDDEN;

/* Brings the P the trace shows for t (tp) in line with the one it holds. */
void ctrace__sync_p(ctrace__thread *t) CTRACE__HIDDEN;

CTRACE__INLINE ctrace__w ctrace__writer(ctrace__thread *t) {
  if (ctrace__unlikely(t->tp != t->p) && t->mode != CTRACE__MODE_NONE) ctrace__sync_p(t);
  ctrace__w w = {t, ctrace__tbuf(t), t->tp};
  /* A batch of the generation format is a thread's, P or not. */
  if (ctrace__unlikely(t->tp < 0) && !ctrace__genfmt()) {
    ctrace__nop_lock();
    w.bp = &ctrace__nop_buf;
    w.p = CTRACE__NO_P;
  }
  return w;
}

CTRACE__INLINE void ctrace__writer_done(ctrace__w *w) {
  if (ctrace__unlikely(w->p == CTRACE__NO_P) && w->bp == &ctrace__nop_buf) ctrace__nop_unlock();
}

/* The ticks of an event going into b, counted as w's thread's: now, but
 * never back in time within a batch (cores' TSCs may disagree), nor
 * behind min_ticks, an event this one follows causally on another P. */
CTRACE__INLINE uint64_t ctrace__stamp(ctrace__w *w, ctrace__buf *b, uint64_t min_ticks) {
  uint64_t now = ctrace__ticks();
  if (now < b->last_ticks) now = b->last_ticks;
  if (now < min_ticks) now = min_ticks;
  /* Single writer: a plain increment, atomic only for readers' sake. */
  atomic_store_explicit(&w->t->events, atomic_load_explicit(&w->t->events, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  return now;
}

/* Writes one event of type ev with n values (arguments, then the stack id
 * for events that have one), at ticks at least min_ticks. Returns the ticks
 * used, or 0 if the event was lost. */
CTRACE__INLINE uint64_t ctrace__emit(ctrace__w *w, uint8_t ev, int n, const uint64_t *v,
                                     uint64_t min_ticks) {
  uint8_t *p = ctrace__reserve(w->bp, w->p, CTRACE__MAX_EVENT);
  if (ctrace__unlikely(p == NULL)) return 0;
  ctrace__buf *b = *w->bp;
  uint64_t now = ctrace__stamp(w, b, min_ticks), diff = now - b->last_ticks;
  b->last_ticks = now;
  if (n < 3) {
    *p++ = (uint8_t)(ev | n << CTRACE_ARG_COUNT_SHIFT);
    p = ctrace__put_uvarint(p, diff);
#pragma GCC unroll 8
    for (int i = 0; i < n; i++) p = ctrace__put_uvarint(p, v[i]);
  } else {
    *p = (uint8_t)(ev | 3 << CTRACE_ARG_COUNT_SHIFT);
    uint8_t *lenp = p + 1, *start = p + 2; /* < 128 bytes: one length byte */
    p = ctrace__put_uvarint(start, diff);
#pragma GCC unroll 8
    for (int i = 0; i < n; i++) p = ctrace__put_uvarint(p, v[i]);
    *lenp = (uint8_t)(p - start);
  }
  b->pos = p;
  return now;
}

/* The head of an event in the generation format, in room for a whole
 * one (CTRACE__MAX_EVENT): its type byte and tick diff, at ticks at least
 * min_ticks (*now). Returns where its arguments go, NULL if it is lost;
 * the caller sets (*w->bp)->pos past them. */
CTRACE__INLINE uint8_t *ctrace__emit2_head(ctrace__w *w, uint8_t ev, uint64_t min_ticks,
                                          uint64_t *now) {
  uint8_t *p = ctrace__reserve(w->bp, w->p, CTRACE__MAX_EVENT);
  if (ctrace__unlikely(p == NULL)) return NULL;
  ctrace__buf *b = *w->bp;
  *now = ctrace__stamp(w, b, min_ticks);
  *p++ = ev;
  p = ctrace__put_uvarint(p, *now - b->last_ticks);
  b->last_ticks = *now;
  return p;
}

/* ctrace__emit for the generation format: a type byte, the tick diff and
 * the arguments, whose count the event table gives (format_go122.h). */
CTRACE__INLINE uint64_t ctrace__emit2(ctrace__w *w, uint8_t ev, int n, const uint64_t *v,
                                      uint64_t min_ticks) {
  uint64_t now;
  uint8_t *p = ctrace__emit2_head(w, ev, min_ticks, &now);
  if (ctrace__unlikely(p == NULL)) return 0;
#pragma GCC unroll 8
  for (int i = 0; i < n; i++) p = ctrace__put_uvarint(p, v[i]);
  (*w->bp)->pos = p;
  return now;
}

/* An event whose arguments are the same in both formats: ev, or ev2 in
 * the generation format. */
CTRACE__INLINE uint64_t ctrace__emit_as(ctrace__w *w, uint8_t ev, uint8_t ev2, int n, const uint64_t *v,
                                        uint64_t min_ticks) {
  if (ctrace__genfmt()) return ctrace__emit2(w, ev2, n, v, min_ticks);
  return ctrace__emit(w, ev, n, v, min_ticks);
}

/* ---- strings and stacks (tab.c, stack.c) -------------------------------- */

/* Id of string s in the current trace, writing its EvString through w the
 * first time. 0 for NULL or "". */
uint64_t ctrace__string_id(ctrace__w *w, const char *s) CTRACE__HIDDEN;
uint64_t ctrace__string_id_n(ctrace__w *w, const char *s, size_t len) CTRACE__HIDDEN;
/* The generation format's unique strings (log messages): ctrace__unique_id
 * and ctrace__unique_put below. */
struct ctrace__ustr ctrace__unique_id_slow(ctrace__w *w, size_t len) CTRACE__HIDDEN;
/* Id of the calling thread's stack above frame fp (the public function's
 * own frame), 0 if stacks are off. */
uint64_t ctrace__stack_id(ctrace__thread *t, void *fp) CTRACE__HIDDEN;
/* What a thread first seen here (pc: the return address into its code)
 * was started at, where nothing said (a thread created behind the
 * tracer's back, as jemalloc creates its own with libc's pthread_create):
 * the deepest frame of its stack outside libc, when the walk reaches
 * libc's thread start beneath it; else pc. Once per thread. */
uintptr_t ctrace__thread_start_pc(ctrace__thread *t, uintptr_t pc) CTRACE__HIDDEN;
/* The calling thread's stack bounds into t (stack_lo, stack_hi). */
void ctrace__thread_stack(ctrace__thread *t) CTRACE__HIDDEN;
/* Id of the one-frame stack of a G's start function. */
uint64_t ctrace__pc_stack_id(ctrace__thread *t, uintptr_t pc) CTRACE__HIDDEN;
/* Id of the start stack of g's creation: for a thread's G
 * (CTRACE__GF_THREAD), one of its own, which the stack table names by
 * what the thread's first stacks show its start routine calls
 * (startname.c); else ctrace__pc_stack_id of its start function. */
uint64_t ctrace__start_stack_id(ctrace__thread *t, ctrace_g *g) CTRACE__HIDDEN;
/* A thread whose G is a thread's (CTRACE__GF_THREAD) notes its first
 * stacks for the start stack, from ctrace__stack_id. */
void ctrace__start_naming(ctrace__thread *t, ctrace_g *g) CTRACE__HIDDEN;
void ctrace__start_note(ctrace__thread *t, uint64_t stack) CTRACE__HIDDEN;
/* Id of the stack pcs[0..n) (return addresses), cut at the first pc
 * outside code, as a captured stack is. */
uint64_t ctrace__pcs_stack_id(ctrace__thread *t, const uintptr_t *pcs, int n) CTRACE__HIDDEN;
/* Code of the tracer's own that a program's stacks pass through (the
 * shim's thread trampoline, [lo, hi)): its frames are left out of the
 * stacks written; those beneath it (libc's start_thread) stay, as perf
 * and gdb show them. One range; set before tracing. */
void ctrace__stack_hide(uintptr_t lo, uintptr_t hi) CTRACE__HIDDEN;

/* ---- CPU samples (cpuprof.c) --------------------------------------------- */

/* Sets the rate for the next trace (0: off); takes a real-time signal and
 * installs its handler the first time. False if no signal is free. */
bool ctrace__prof_init(int hz) CTRACE__HIDDEN;
/* Starts / stops t's sampling timer (t's own thread is th). Under the
 * threads lock, which the reader drains t's samples under. */
void ctrace__prof_arm(ctrace__thread *t, pthread_t th) CTRACE__HIDDEN;
void ctrace__prof_disarm(ctrace__thread *t) CTRACE__HIDDEN;
/* Writes t's pending samples: into the no-P buffer (classic format), or
 * into their generation's batch of samples. Under the threads lock. */
void ctrace__prof_drain(ctrace__thread *t) CTRACE__HIDDEN;
/* Generation format, under the threads lock: a trace begins at gen0;
 * gen ends, its samples drained (every thread's), and its batch of
 * samples goes to the reader, before its tables. */
void ctrace__prof_reset(uint64_t gen0) CTRACE__HIDDEN;
void ctrace__prof_seal(uint64_t gen) CTRACE__HIDDEN;
/* Disarms, drains nothing more, frees: t is going away. */
void ctrace__prof_free(ctrace__thread *t) CTRACE__HIDDEN;
/* How often the reader drains every thread's samples, 0 if sampling is off. */
long ctrace__prof_drain_ms(void) CTRACE__HIDDEN;
/* Drains every registered thread's samples (tracer.c). Not under the
 * reader's lock: the threads lock comes first. */
void ctrace__prof_drain_all(void) CTRACE__HIDDEN;
/* At stop: writes every stack (symbolized) and resets both tables. */
void ctrace__tables_dump(ctrace__buf **bp, uint64_t gen) CTRACE__HIDDEN;
/* The generation format's: gen's stacks, then its strings, in batches of
 * their own (EvStacks, EvStrings), then the tables are reset. */
void ctrace__tables_dump2(uint64_t gen, uint64_t ticks) CTRACE__HIDDEN;
void ctrace__tables_reset(uint64_t gen) CTRACE__HIDDEN;

/* Writes EvString [id, len, bytes]. */
void ctrace__put_string(ctrace__buf **bp, int64_t p, uint64_t id, const char *s, size_t len) CTRACE__HIDDEN;

/* ---- goroutine bookkeeping (sched.c) ------------------------------------ */

void ctrace__g_register(ctrace_g *g, uintptr_t start_pc, uint32_t status) CTRACE__HIDDEN;
/* A G id never given before. */
uint64_t ctrace__new_gid(void) CTRACE__HIDDEN;
void ctrace__g_unregister(ctrace_g *g) CTRACE__HIDDEN;
ctrace_g *ctrace__alloc_g(void) CTRACE__HIDDEN;
void ctrace__free_g(ctrace_g *g) CTRACE__HIDDEN;
/* At start, before tracing is on: writes the trace's first events, stamped
 * before any other thread's (ticks: read before the state word changes). */
void ctrace__first_events(int64_t procs, uint64_t ticks) CTRACE__HIDDEN;
/* At start: announces every live G. */
void ctrace__announce_all(void) CTRACE__HIDDEN;
/* Stops the G the trace shows on w's P, unless it is g (GoPreempt). */
void ctrace__free_p(ctrace__w *w, ctrace_g *g) CTRACE__HIDDEN;
/* procs for Gomaxprocs at start: as declared, or the online CPUs. */
int64_t ctrace__procs(void) CTRACE__HIDDEN;
/* GoCreate of a new G, with the creator's stack. */
void ctrace__g_create_event(ctrace__w *w, ctrace_g *g, uint64_t stack) CTRACE__HIDDEN;
/* Announces g as status unless this trace has shown it already. */
void ctrace__ensure_announced(ctrace__w *w, ctrace_g *g, uint32_t status) CTRACE__HIDDEN;
/* Announces g, in a system call since before this trace, as its own
 * thread returns from it, unless this trace has shown it already. */
void ctrace__announce_syscall(ctrace__w *w, ctrace_g *g) CTRACE__HIDDEN;
/* Makes the trace show g running on w's P, emitting whatever bridges;
 * label, if not 0, is the string id of a GoStartLabel. */
void ctrace__ensure_running(ctrace__w *w, ctrace_g *g, uint64_t label) CTRACE__HIDDEN;
void ctrace__unblock_event(ctrace__w *w, ctrace_g *g, uint64_t stack) CTRACE__HIDDEN;
void ctrace__sysexit_event(ctrace__w *w, ctrace_g *g) CTRACE__HIDDEN;
/* Ends what the trace shows on t's P: its G stops, then the P. For t
 * itself, or, stopping, for a trace that is over (t quiescent). */
void ctrace__close_thread(ctrace__thread *t, bool stopping) CTRACE__HIDDEN;

/* ---- processors and threads (events.c) ----------------------------------- */

/* Opens a batch for t->p and writes ProcStart. */
void ctrace__proc_open(ctrace__thread *t) CTRACE__HIDDEN;
/* close_thread, then queues t's buffer. */
void ctrace__proc_close(ctrace__thread *t) CTRACE__HIDDEN;
void ctrace__make_plain(ctrace__thread *t, ctrace_g *g, uintptr_t pc) CTRACE__HIDDEN;
/* ctrace_thread_resume, for a wait of `ctrace run` that may end for a
 * reason worth telling (src/preload/wake.c): when nobody unblocked the G,
 * its own GoUnblock carries a stack of one frame, why, the address of a
 * function named for the reason (a timeout, a signal, a descriptor made
 * ready from outside the process), where a waker's carries the waker's
 * stack. The shim's, not in the public API. */
void ctrace__thread_resume_why(uintptr_t why) CTRACE__HIDDEN;
/* At start: a new trace, whose first Gomaxprocs is procs. */
void ctrace__events_reset(int64_t procs) CTRACE__HIDDEN;
/* Ends the sweep t shows open on w's P, if any (before the P stops). */
void ctrace__end_sweep(ctrace__w *w) CTRACE__HIDDEN;
/* At stop (before a gap, in the generation format), for a thread that
 * shows a G running: ends the stop-the-world the trace shows open, if
 * any, as that G (Go 1.23 needs a G to end it; the generation format,
 * the G that began it). */
void ctrace__end_stw(ctrace__w *w) CTRACE__HIDDEN;
/* At stop: ends the GC and STW phases the trace shows open, w being the
 * no-P buffer's writer, its thread the stopping one. */
void ctrace__close_phases(ctrace__w *w) CTRACE__HIDDEN;
void ctrace__thread_known(ctrace__thread *t) CTRACE__HIDDEN;

/* The thread's current G; a thread that has said nothing becomes a plain
 * thread here (pc: where it was first seen, the name of its G). */
CTRACE__INLINE ctrace_g *ctrace__current(ctrace__thread *t, uintptr_t pc) {
  if (ctrace__unlikely(t->mode == CTRACE__MODE_NONE)) ctrace__make_plain(t, NULL, pc);
  return t->curg;
}

/* ---- thread names (names.c) ----------------------------------------------
 *
 * A name is its G's label: every start of the G carries it (GoStartLabel;
 * GoStart then GoLabel in the generation format), as Go's runtime labels
 * its GC workers at each start. */

/* Sets g's name (len bytes of name, at most 31 kept); any thread may.
 * True if it changed. */
bool ctrace__g_set_name(ctrace_g *g, const char *name, size_t len) CTRACE__HIDDEN;
uint64_t ctrace__g_label_slow(ctrace__w *w, ctrace_g *g) CTRACE__HIDDEN;
/* The string id of g's name in w's trace (and generation), 0 for none:
 * one load for a G never named, two compares for one named. */
CTRACE__INLINE uint64_t ctrace__g_label(ctrace__w *w, ctrace_g *g) {
  uint32_t s = __atomic_load_n(&g->ctrace__name_seq, __ATOMIC_RELAXED);
  if (ctrace__likely(s == 0)) return 0;
  if (s == g->ctrace__name_seen && g->ctrace__name_state == w->t->state) return g->ctrace__name_id;
  return ctrace__g_label_slow(w, g);
}
/* The trace says now that g, which w's thread runs, has the name it has
 * (GoLabel; a classic trace starts it again, labelled). */
void ctrace__relabel(ctrace__w *w, ctrace_g *g) CTRACE__HIDDEN;
/* The classic format's relabel (sched.c): GoSched, GoStartLabel. */
void ctrace__restart_labelled(ctrace__w *w, ctrace_g *g, uint64_t label) CTRACE__HIDDEN;
/* Thread tid's system name, from /proc/self/task/TID/comm. */
bool ctrace__read_comm(pid_t tid, char out[16]) CTRACE__HIDDEN;
/* Reads t's system name (t the calling thread's) and, where it changed
 * since the last read, names t's own G by it; an inherited name (the
 * process's) only where explicit, a change the shim saw being made. */
void ctrace__os_name(ctrace__thread *t, bool explicit) CTRACE__HIDDEN;
/* The calling thread's system name changed (the shim's prctl,
 * pthread_setname_np and comm writes): its G takes it, and a trace shows
 * it now. */
void ctrace__thread_renamed(void) CTRACE__HIDDEN;
/* The system name of another thread of the process changed to name
 * (NULL: read it from /proc): by th (tid 0) or by tid. Its G takes it,
 * which a trace shows from its next start. Only a thread the tracer
 * knows (one that has written an event); any other reads its name when
 * it first writes. */
void ctrace__thread_renamed_other(pthread_t th, pid_t tid, const char *name) CTRACE__HIDDEN;
/* t's own G becomes g (NULL: none), under the lock that
 * ctrace__thread_renamed_other reads it under, so that it never names a
 * G that is gone. */
void ctrace__set_home(ctrace__thread *t, ctrace_g *g) CTRACE__HIDDEN;

/* ---- fork (fork.c) ------------------------------------------------------
 *
 * Registered once (init_once): the child of a fork starts with tracing off
 * and only its own thread's state. Each module resets what it owns. */
void ctrace__fork_init(void) CTRACE__HIDDEN;
void ctrace__fork_child(void) CTRACE__HIDDEN;
void ctrace__tracer_fork_prepare(void) CTRACE__HIDDEN;
void ctrace__tracer_fork_parent(void) CTRACE__HIDDEN;
void ctrace__tracer_fork_child(void) CTRACE__HIDDEN;
void ctrace__buf_fork_child(void) CTRACE__HIDDEN;
void ctrace__reader_fork_child(void) CTRACE__HIDDEN;
void ctrace__sched_fork_prepare(void) CTRACE__HIDDEN;
void ctrace__sched_fork_parent(void) CTRACE__HIDDEN;
void ctrace__sched_fork_child(void) CTRACE__HIDDEN;
void ctrace__events_fork_prepare(void) CTRACE__HIDDEN;
void ctrace__events_fork_parent(void) CTRACE__HIDDEN;
void ctrace__events_fork_child(void) CTRACE__HIDDEN;
void ctrace__tables_fork_child(void) CTRACE__HIDDEN;

/* ---- Go's current format: generations (gen.c) ---------------------------- */

/* Go's block and stop reasons (gen.c) */
enum {
  CTRACE__R_UNSPECIFIED, CTRACE__R_NET, CTRACE__R_SELECT, CTRACE__R_COND, CTRACE__R_SYNC,
  CTRACE__R_SEND, CTRACE__R_RECV, CTRACE__R_GC, CTRACE__R_SLEEP, CTRACE__R_PREEMPTED,
  CTRACE__R_GOSCHED, CTRACE__R_STW_MARK, CTRACE__R_STW_SWEEP, CTRACE__R_SYSTEM, CTRACE__R_COUNT
};

/* Generation numbers in the file count from 1 at the trace's first
 * (ctrace__gen0, a state generation). */
extern uint64_t ctrace__gen_base CTRACE__HIDDEN, ctrace__gen0 CTRACE__HIDDEN;
CTRACE__INLINE uint64_t ctrace__file_gen(uint64_t gen) { return gen - ctrace__gen_base; }

/* Whether g's open assist began in this trace, as the trace showed it (the
 * classic format takes an end without its begin). */
CTRACE__INLINE bool ctrace__assist_shown(const ctrace_g *g) {
  return !ctrace__genfmt() || (ctrace__gflags(g) >> 16) == ctrace__mark16(ctrace__gen0);
}

ctrace__buf *ctrace__buf_get(void) CTRACE__HIDDEN;
/* Opens a batch of gen for thread m (UINT64_MAX: none) in empty b. */
void ctrace__open_batch2(ctrace__buf *b, uint64_t gen, uint64_t m, uint64_t now) CTRACE__HIDDEN;
/* Fills in the length of b's batch (ctrace__queue_full); true if the
 * batch holds an event (timed, or a CPU sample) rather than a table. */
bool ctrace__close_batch2(ctrace__buf *b) CTRACE__HIDDEN;
/* Room for an event in *bp, a batch of gen of no thread, opening one at
 * ticks if needed. */
bool ctrace__reserve2(ctrace__buf **bp, uint64_t gen, uint64_t ticks) CTRACE__HIDDEN;
/* Room for n bytes in t's buffer of its generation, opened as t's batch
 * if need be: for writing as t from another thread (buf.c). */
bool ctrace__room_as(ctrace__thread *t, size_t n) CTRACE__HIDDEN;
void ctrace__gen_reset(uint64_t gen0) CTRACE__HIDDEN;
/* The log of ctrace__gap_note, if one is due: by the first G on a P of a
 * generation. */
void ctrace__gap_log(ctrace__w *w) CTRACE__HIDDEN;
/* The process's log (identity.c): what does not change, read as a trace
 * starts, outside any write section; the log through w, by the first G
 * on a P of each generation, or, in the classic format, of the trace
 * (ctrace__identity_classic, from the G's start). */
void ctrace__identity_init(void) CTRACE__HIDDEN;
/* The command line read again, for the logs after generation gen (the
 * process may have retitled itself): once a generation, by the writer's
 * thread, which the shim never traces. */
void ctrace__identity_refresh(uint64_t gen) CTRACE__HIDDEN;
/* At the process's end, on a thread of the program's (the shim's exit
 * paths, before the trace is finished): the command line read again and,
 * if no log has said it yet, a log of it, for a process that retitled
 * itself and ends within the generation. Safe in a signal handler that
 * did not interrupt the tracer. */
void ctrace__identity_final(void) CTRACE__HIDDEN;
/* The child of fork: the title's lock let go, which the parent's writer
 * thread, not in the child, may have held (ctrace__fork_child). */
void ctrace__identity_fork_child(void) CTRACE__HIDDEN;
void ctrace__identity_log(ctrace__w *w) CTRACE__HIDDEN;
void ctrace__identity_classic(ctrace__w *w) CTRACE__HIDDEN;
/* A classic UserLog [task, category, stack] v and its message through w
 * (annotate.c). */
void ctrace__classic_log(ctrace__w *w, const uint64_t v[3], const char *msg, size_t len) CTRACE__HIDDEN;
uint64_t ctrace__reason_id(ctrace__w *w, int reason) CTRACE__HIDDEN;
/* ProcStart of p through w (ProcStatus first, once per generation). */
uint64_t ctrace__gen_proc_start(ctrace__w *w, int64_t p) CTRACE__HIDDEN;
void ctrace__gen_proc_stop(ctrace__w *w) CTRACE__HIDDEN;
uint64_t ctrace__gen_syscall(ctrace__w *w, uint64_t stack, uint64_t min_ticks, bool blocking) CTRACE__HIDDEN;
void ctrace__gen_resume(ctrace__thread *t) CTRACE__HIDDEN;
/* GCActive through w (a G on a P) if a GC open since an earlier
 * generation has not been said in w's yet (events.c). */
void ctrace__gc_active(ctrace__w *w) CTRACE__HIDDEN;
/* At gen's end, once no thread writes into it: the number a GCActive
 * must have in a trace that begins with gen, if a GC was open through
 * it unsaid; else 0 (events.c). */
uint64_t ctrace__gc_seal(uint64_t gen) CTRACE__HIDDEN;
/* Whether the trace shows a stop-the-world open (events.c). */
bool ctrace__stw_shown(void) CTRACE__HIDDEN;
/* Before a generation's end that tracing goes on from: excludes the
 * begin of a stop-the-world. False (and not held) while one is open,
 * unless force. */
bool ctrace__cut_lock(bool force) CTRACE__HIDDEN;
void ctrace__cut_unlock(void) CTRACE__HIDDEN;
/* GOMAXPROCS through w, if w's P is above what the trace has shown. */
void ctrace__gen_procs(ctrace__w *w) CTRACE__HIDDEN;
bool ctrace__gen_can(ctrace__w *w, bool need_g) CTRACE__HIDDEN;
/* Where w's thread shows no P (or, with need_g, no G running), what
 * ctrace__stand_in added to write an event there, for
 * ctrace__stand_in_done to take away after it. */
typedef struct ctrace__standin {
  bool on;     /* something was added */
  ctrace_g *g; /* the thread's own G, started for the event, or NULL */
  int64_t p;   /* the P taken for the event, or -1 */
} ctrace__standin;
/* Makes w's thread show a P and, with need_g, a G running, as Go's
 * reader wants (ctrace__gen_can): its own G (t->g0), started on its P
 * or on one taken for the instant. False, the event counted lost, where
 * it cannot: the thread shows a G in a system call. In the classic
 * format, for annotations only, always with a G: where the thread shows
 * one (P or not), true at once. Inside the write section, which for a
 * classic thread without a P holds the no-P buffer's lock. */
bool ctrace__stand_in(ctrace__w *w, bool need_g, ctrace__standin *s) CTRACE__HIDDEN;
void ctrace__stand_in_done(ctrace__w *w, ctrace__standin *s) CTRACE__HIDDEN;
/* The start function of every thread's own G (t->g0): the name Go's
 * goroutine views give them. */
void ctrace__between_goroutines(void) CTRACE__HIDDEN;
void ctrace__gen_seal(uint64_t gen, uint64_t ticks) CTRACE__HIDDEN;
void ctrace__gen_idle(uint64_t gen, uint64_t ticks) CTRACE__HIDDEN;
/* Statuses of every G shown in this trace but not in w's generation
 * (sched.c), into w's batch of no thread. Between
 * ctrace__statuses_begin(gen), before the state word leaves gen, and
 * that walk, a G that leaves the registry states itself in gen. */
void ctrace__statuses_begin(uint64_t gen) CTRACE__HIDDEN;
void ctrace__statuses(ctrace__w *w, uint64_t ticks) CTRACE__HIDDEN;
/* For tests: called by the end of a generation between the move of the
 * state word and the statuses, where a G may end unseen by them. */
extern void (*_Atomic ctrace__seal_hook)(uint64_t gen) CTRACE__HIDDEN;
/* For tests: called by a classic stop once tracing is off, before it
 * waits for the threads and closes them (test_unit: a thread that exits
 * meanwhile). */
extern void (*_Atomic ctrace__off_hook)(void) CTRACE__HIDDEN;

/* The generation (state >> 1) being written. */
CTRACE__INLINE uint64_t ctrace__gen(ctrace__thread *t) { return t->state >> 1; }

/* A unique string is written in two steps, its id and room first
 * (ctrace__unique_id), its record after the event that names it
 * (ctrace__unique_put). */
typedef struct ctrace__ustr {
  ctrace__buf *b; /* the thread's strings batch */
  uint8_t *q;     /* where the record goes in it */
  uint64_t id;    /* 0: lost */
  uint32_t word;  /* id's varint, little-endian, */
  unsigned n;     /* of n bytes; 0: id is 2^28 or more */
} ctrace__ustr;

/* The next id of t's run (ctrace__thread.uid_run is not 0), its record
 * to go at b's end. */
CTRACE__INLINE ctrace__ustr ctrace__uid_take(ctrace__thread *t, ctrace__buf *b) {
  uint32_t left = t->uid_run--;
  return (ctrace__ustr){b, b->pos, t->uid_next - left, t->uid_word++, t->uid_bytes};
}

/* An id for a unique string of len bytes, with room for its record in the
 * thread's strings batch. The fast path of ctrace__unique_id_slow
 * (stack.c). */
CTRACE__INLINE ctrace__ustr ctrace__unique_id(ctrace__w *w, size_t len) {
  ctrace__thread *t = w->t;
  uint64_t gen = ctrace__gen(t);
  ctrace__buf *b = t->sbufs[gen & 1];
  if (ctrace__likely(t->uid_gen == gen && t->uid_run && b &&
                     (size_t)(b->end - b->pos) >= 1 + 2 * CTRACE_MAX_VARINT + len))
    return ctrace__uid_take(t, b);
  return ctrace__unique_id_slow(w, len);
}

/* Puts u's id at p, which has room for a varint (CTRACE_MAX_VARINT). */
CTRACE__INLINE uint8_t *ctrace__put_ustr_id(uint8_t *p, ctrace__ustr u) {
  if (ctrace__unlikely(!u.n)) return ctrace__put_uvarint(p, u.id);
  memcpy(p, &u.word, 4);
  return p + u.n;
}

/* memcpy of a short string, by 16 or fewer bytes at a time, the last
 * move overlapping. GCC expands memcpy of a length it knows below 128 as
 * rep movsq, slow to start (a 32-byte log message cost 1.25x the classic
 * format's log, which calls memcpy); a call costs more than these moves
 * for a short one. */
CTRACE__INLINE void ctrace__copy_short(uint8_t *d, const char *s, size_t n) {
  uint64_t w, x;
  uint32_t a, b;
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16) memcpy(d + i, s + i, 16);
    memcpy(d + n - 16, s + n - 16, 16);
  } else if (n >= 8) {
    memcpy(&w, s, 8);
    memcpy(&x, s + n - 8, 8);
    memcpy(d, &w, 8);
    memcpy(d + n - 8, &x, 8);
  } else if (n >= 4) {
    memcpy(&a, s, 4);
    memcpy(&b, s + n - 4, 4);
    memcpy(d, &a, 4);
    memcpy(d + n - 4, &b, 4);
  } else if (n) {
    d[0] = (uint8_t)s[0];
    d[n / 2] = (uint8_t)s[n / 2];
    d[n - 1] = (uint8_t)s[n - 1];
  }
}

/* Writes the record of u, which ctrace__unique_id gave for len bytes. */
CTRACE__INLINE void ctrace__unique_put(ctrace__ustr u, const char *s, size_t len) {
  uint8_t *q = u.q;
  if (ctrace__likely(u.n && len < 0x80)) {
    /* The usual header, [type, id, len] in 3 to 6 bytes, in one store:
     * the room ctrace__unique_id found holds 8. */
    uint64_t h = CTRACE_EV122_String | (uint64_t)u.word << 8 | (uint64_t)len << (8 + 8 * u.n);
    memcpy(q, &h, 8);
    q += 2 + u.n;
  } else {
    *q++ = CTRACE_EV122_String;
    q = ctrace__put_uvarint(q, u.id);
    q = ctrace__put_uvarint(q, len);
  }
  ctrace__copy_short(q, s, len);
  u.b->pos = q + len;
}

/* ctrace__emit2 of a UserLog [task, category, message, stack] whose message
 * is the unique string u: its id goes in as the varint u holds. */
CTRACE__INLINE uint64_t ctrace__emit2_log(ctrace__w *w, uint64_t task, uint64_t category,
                                          ctrace__ustr u, uint64_t stack) {
  uint64_t now;
  uint8_t *p = ctrace__emit2_head(w, CTRACE_EV122_UserLog, 0, &now);
  if (ctrace__unlikely(p == NULL)) return 0;
  p = ctrace__put_uvarint(p, task);
  p = ctrace__put_uvarint(p, category);
  p = ctrace__put_ustr_id(p, u);
  (*w->bp)->pos = ctrace__put_uvarint(p, stack);
  return now;
}

#endif
