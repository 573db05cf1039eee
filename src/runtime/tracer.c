/* Tracer control: the state word, thread registry, start and stop.
 *
 * Start and stop run under ctl_mu, one at a time. Neither stops the world:
 * start publishes a new state word (generation + enabled) and announces the
 * live Gs; each thread notices the new word at its next event and opens
 * its part of the trace (begin_slow). Stop clears "enabled", makes every
 * thread's view of that store certain (membarrier), waits until no thread is
 * inside a write section it began before, and only then touches their
 * buffers. Locks a thread may need inside a write section (buffer pool,
 * reader queue, intern tables, G registry) are never held by stop while it
 * waits; threads_mu, which stop holds, is only taken outside write sections.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reader.h"
#include "runtime/env.h"
#include "unwind/unwind.h"

__thread ctrace__thread ctrace__tls __attribute__((tls_model("initial-exec")));
/* Generation 1, off. Not 0: a thread's zeroed TLS holds state 0, and the
 * word must differ so that its first event takes the slow path. */
_Atomic uint64_t ctrace__state = 2;
bool ctrace__light_fence;
ctrace__config ctrace__cfg = {true, CTRACE_DEFAULT_STACK_DEPTH, CTRACE_DEFAULT_BUFFER_SIZE, 0,
                              CTRACE_UNWIND_AUTO, 256u << 20, CTRACE_FORMAT_GO122};
ctrace__counters ctrace__stats;

static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static ctrace__thread *threads; /* registered threads, under threads_mu */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static uint64_t ticks_start;
static ctrace__sink *trace_writer; /* joined by stop */

ctrace__buf *ctrace__nop_buf;
static pthread_mutex_t nop_mu = PTHREAD_MUTEX_INITIALIZER;
void ctrace__nop_lock(void) { pthread_mutex_lock(&nop_mu); }
void ctrace__nop_unlock(void) { pthread_mutex_unlock(&nop_mu); }

/* The state of a trace that ended early, until its stop; 0 for none. */
static _Atomic uint64_t capped_state;

/* capped_state while tracing is off at it: a writer that found the state
 * moved on as it capped (ctrace__trace_capped) holds it there for a
 * moment, and a gap begun then would take the generation after it back
 * to one ended already. */
static uint64_t capped(void) {
  uint64_t cs = atomic_load(&capped_state);
  return cs && atomic_load(&ctrace__state) == (cs & ~(uint64_t)1) ? cs : 0;
}
/* Generation format, under ctl_mu: the generation a gap follows (it
 * ended at the cap, sealed), while the gap lasts; the gaps of this trace
 * (its stop says CTRACE_ECAPPED for any). */
static uint64_t gap_gen, trace_gaps;
/* Generations of the trace handed to the reader, under ctl_mu. */
static uint64_t gens_out;
/* When tracing last went off at the cap: a gap's start. */
static _Atomic uint64_t capped_ns;
/* The threads were closed for the gap (close_all): set under threads_mu. */
static _Atomic bool gap_closed;

/* Before a gap, every thread of the trace stops what it shows, as the
 * classic format's stop does: its G (GoStop) and P (ProcStop), written
 * as the thread at the end of generation s (brought to it first, if the
 * thread wrote nothing in it), and a G it shows in a system call
 * returns from it. Then the trace after the gap shows no G running, in a
 * call or holding a P, so it cannot contradict what threads did
 * meanwhile, nor name a G ended and freed meanwhile: each thread states
 * and bridges from there, as at a new generation. With threads_mu held
 * and t in no write section: by the thread that seals s (close_all), or
 * by t before that, as it exits or ends its G (ctrace__gap_g_end). */
static void close_for_gap(ctrace__thread *t, uint64_t s) {
  if (!(t->state & 1) || t->state >> 1 < ctrace__gen0) return; /* not in this trace */
  uint64_t old = t->state;
  if (old != s) t->state = s;
  /* A dozen events at most: statuses, GoStop, ProcStop, a sweep, the
   * end of a call. */
  if (!ctrace__room_as(t, 16 * CTRACE__MAX_EVENT)) return;
  if (old != s) ctrace__gen_resume(t);
  ctrace__close_thread(t, true);
  if (t->sys_g) {
    ctrace__w w = {t, ctrace__tbuf(t), CTRACE__NO_P};
    ctrace__sysexit_event(&w, t->sys_g);
  }
}

void ctrace__gap_g_end(ctrace__thread *t, ctrace_g *g) {
  if (!atomic_load(&capped_state) || !ctrace__genfmt()) return;
  /* t's trace fields are close_all's too, under threads_mu. A stop and
   * the next start may have come between the tests above and the lock:
   * both are read again. */
  pthread_mutex_lock(&threads_mu);
  uint64_t cs = capped();
  if (cs && ctrace__genfmt() && !atomic_load(&gap_closed) && (t->tcurg == g || t->sys_g == g)) close_for_gap(t, cs | 1);
  pthread_mutex_unlock(&threads_mu);
}

static void thread_exit(void *arg);

static void init_once(void) {
  ctrace__clock_init();
#ifndef CTRACE_TSAN
  /* With expedited private membarrier, stop pays for the StoreLoad fence
   * (an IPI to the process's running CPUs), so writers need none. TSan
   * does not model membarrier, so its builds fence on every write. */
  ctrace__light_fence =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
  pthread_key_create(&exit_key, thread_exit);
  ctrace__fork_init();
}

/* Between stop's store of the state word and its loads of the threads'
 * seq (see ctrace__enter_seq). */
static void heavy_barrier(void) {
#ifndef CTRACE_TSAN
  if (ctrace__light_fence) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

void ctrace__thread_stack(ctrace__thread *t) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      t->stack_lo = (uintptr_t)addr;
      t->stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
  }
}

/* Outside any write section: threads_mu is held by stop while it waits. */
static void thread_register(ctrace__thread *t) {
  t->tid = (pid_t)syscall(SYS_gettid);
  t->pthread = pthread_self();
  t->tp = -1;
  if (!t->stack_hi) ctrace__thread_stack(t);
  pthread_mutex_lock(&threads_mu);
  t->prev = NULL;
  t->next = threads;
  if (threads) threads->prev = t;
  threads = t;
  t->registered = true;
  /* A thread new to this trace: the starter armed those it knew. */
  if (ctrace__cfg.cpu_hz && ctrace__on()) ctrace__prof_arm(t, t->pthread);
  pthread_mutex_unlock(&threads_mu);
  ctrace__thread_known(t);
}

/* The thread saw a state word other than the one its trace fields are for:
 * tracing is off, or a new trace began. Called inside the write section. */
bool ctrace__begin_slow(ctrace__thread *t, uint64_t s) {
  if (!(s & 1) || t->exiting) return false;
  if (!t->registered) {
    /* Registration takes threads_mu, which stop holds while it waits for
     * write sections to end: leave ours for the duration. */
    atomic_store_explicit(&t->seq, atomic_load_explicit(&t->seq, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_once(&once, init_once);
    thread_register(t);
    s = ctrace__enter_seq(t, atomic_load_explicit(&t->seq, memory_order_relaxed) + 1);
    if (!(s & 1)) return false;
  }
  uint64_t old = t->state;
  t->state = s;
  if (ctrace__genfmt() && old & 1 && old >> 1 >= ctrace__gen0) {
    /* A new generation of the same trace: the thread goes on holding
     * what it held, and says so first. */
    ctrace__gen_resume(t);
    return true;
  }
  /* The thread's first event in this trace: its system name, which it may
   * have been given before the trace or before the tracer knew it (by
   * code the shim does not see), names its G. After registration, so
   * that a rename made by another thread is read here or finds it. */
  ctrace__os_name(t, false);
  /* The buffers of the previous trace, if any, were taken by its stop
   * (both are NULL: the generation format's ends, reading them, may run
   * meanwhile). */
  t->tcurg = NULL;
  t->sys_g = NULL;
  t->sweep_p = -1;
  t->tp = -1; /* the P, if any, opens at the first write (sync_p) */
  return true;
}

void ctrace__set_home(ctrace__thread *t, ctrace_g *g) {
  if (!t->registered) {
    t->home = g;
    return;
  }
  pthread_mutex_lock(&threads_mu);
  __atomic_store_n(&t->home, g, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&threads_mu);
}

void ctrace__thread_renamed_other(pthread_t th, pid_t tid, const char *name) {
  char comm[16];
  if (!name) {
    if (!ctrace__read_comm(tid, comm)) return;
    name = comm;
  }
  uint64_t id = 0;
  pthread_mutex_lock(&threads_mu);
  for (ctrace__thread *t = threads; t; t = t->next) {
    if (tid ? t->tid != tid : !pthread_equal(t->pthread, th)) continue;
    /* Under threads_mu: the thread's G stays while it is its home
     * (ctrace__set_home). Its comm is its own to read and write. */
    ctrace_g *g = __atomic_load_n(&t->home, __ATOMIC_RELAXED);
    if (g && ctrace__g_set_name(g, name, strnlen(name, 15))) id = g->id;
    break;
  }
  pthread_mutex_unlock(&threads_mu);
  /* The G shows its name at its next start, which may never come (a
   * thread named while it waits for the rest of the trace, as
   * memcached's logger is): the renaming thread says it now, in a log
   * the analyses read (ctrace__an_thread_name). */
  if (id) ctrace_logf(0, "ctrace.thread", "g=%llu name=%.15s", (unsigned long long)id, name);
}

/* Makes sure thread_exit runs for t: a thread that owns a registered G
 * must unregister it before its TLS goes away. */
void ctrace__thread_known(ctrace__thread *t) {
  if (t->keyed) return;
  pthread_once(&once, init_once);
  pthread_setspecific(exit_key, t);
  t->keyed = true;
}

static void thread_exit(void *arg) {
  ctrace__thread *t = arg;
  if (t->mode == CTRACE__MODE_PLAIN) ctrace_thread_end();
  ctrace__thread *w = ctrace__begin();
  if (w) {
    ctrace__close_thread(w, false); /* a runtime thread that still shows a G or P */
    ctrace__end(w);
  }
  if (!t->registered) {
    t->exiting = true;
    return;
  }
  /* Stop reads state and buf under threads_mu: change them only under it. */
  pthread_mutex_lock(&threads_mu);
  t->exiting = true;
  /* Tracing went off at the cap and the threads are not closed for the
   * gap yet: close_all will not find this one. */
  uint64_t cs = capped();
  if (cs && ctrace__genfmt() && !atomic_load(&gap_closed)) close_for_gap(t, cs | 1);
  /* The buffers are ours unless stop (or the end of a generation) took
   * them (it clears them under this lock): hand them over, closed as stop
   * would have closed them if tracing went off after our last write.
   * Before the state is cleared: it says which of the two is the trace's
   * (ctrace__tbuf), and in every other trace the G stayed running to its
   * end, which Go's viewers before Go 1.23 cannot draw. */
  if (*ctrace__tbuf(t) && !ctrace__genfmt()) ctrace__close_thread(t, true);
  t->state = 0; /* never equal to an enabled state: begin goes slow */
  for (int i = 0; i < 2; i++) {
    if (t->bufs[i]) ctrace__queue_full(t->bufs[i]);
    if (t->sbufs[i]) ctrace__queue_full(t->sbufs[i]);
    t->bufs[i] = t->sbufs[i] = NULL;
  }
  if (t->prof) {
    ctrace__prof_drain(t);
    ctrace__prof_free(t);
  }
  if (t->g0) { /* the trace shows it waiting: it says no more */
    ctrace__g_unregister(t->g0);
    munmap(t->g0, sizeof *t->g0);
    t->g0 = NULL;
  }
  if (t->prev)
    t->prev->next = t->next;
  else
    threads = t->next;
  if (t->next) t->next->prev = t->prev;
  t->registered = false;
  atomic_fetch_add(&ctrace__stats.events, atomic_load_explicit(&t->events, memory_order_relaxed));
  atomic_store_explicit(&t->events, 0, memory_order_relaxed);
  pthread_mutex_unlock(&threads_mu);
}

int ctrace_enabled(void) { return ctrace__on(); }

int ctrace_start(const ctrace_options *opts) { return ctrace__start(opts, NULL); }

int ctrace__start(const ctrace_options *opts, ctrace__sink *writer) {
  ctrace_options o = {0};
  if (opts) o = *opts;
  if (o.stack_depth < 0 || o.stack_depth > CTRACE_MAX_STACK_DEPTH) return CTRACE_EINVAL;
  if (o.buffer_size && (o.buffer_size < 8192 || o.buffer_size > (16u << 20))) return CTRACE_EINVAL;
  if (o.unwind < CTRACE_UNWIND_AUTO || o.unwind > CTRACE_UNWIND_TABLES) return CTRACE_EINVAL;
  if (!o.max_pending) {
    const char *mb = ctrace__getenv("CTRACE_MAX_PENDING_MB");
    o.max_pending = (mb ? strtoull(mb, NULL, 10) : 256) << 20;
  }
  if (o.max_pending < (1u << 20)) return CTRACE_EINVAL;
  if (!o.format) {
    const char *f = ctrace__getenv("CTRACE_FORMAT");
    o.format = !f || !*f || !strcmp(f, "go1.22") ? CTRACE_FORMAT_GO122
               : !strcmp(f, "go1.11")            ? CTRACE_FORMAT_GO111
                                                 : -1;
  }
  if (o.format != CTRACE_FORMAT_GO111 && o.format != CTRACE_FORMAT_GO122) return CTRACE_EINVAL;
  /* A batch of Go's current format is at most 64 KiB. */
  if (o.format == CTRACE_FORMAT_GO122 && o.buffer_size > CTRACE_DEFAULT_BUFFER_SIZE) return CTRACE_EINVAL;
  pthread_once(&once, init_once);
  pthread_mutex_lock(&ctl_mu);
  uint64_t s = atomic_load_explicit(&ctrace__state, memory_order_relaxed);
  if (s & 1 || atomic_load(&capped_state)) { /* a trace ended early, not yet stopped */
    pthread_mutex_unlock(&ctl_mu);
    return CTRACE_EBUSY;
  }
  /* Only here, with tracing off and every thread out of its write
   * section since the last stop, may the configuration change. */
  __atomic_store_n(&ctrace__cfg.stacks, !o.no_stacks, __ATOMIC_RELAXED); /* ctrace__thread_start_pc */
  ctrace__cfg.depth = o.stack_depth ? o.stack_depth : CTRACE_DEFAULT_STACK_DEPTH;
  ctrace__cfg.buffer_size = o.buffer_size ? o.buffer_size : CTRACE_DEFAULT_BUFFER_SIZE;
  if (!o.cpu_hz) {
    const char *hz = ctrace__getenv("CTRACE_CPU_HZ");
    o.cpu_hz = hz ? atoi(hz) : 0;
  }
  if (o.cpu_hz < 0 || o.cpu_hz > 10000 || !ctrace__prof_init(o.cpu_hz)) {
    pthread_mutex_unlock(&ctl_mu);
    return CTRACE_EINVAL;
  }
  /* A thread registering now (begin_slow of the last trace, outside its
   * write section) reads cpu_hz under threads_mu. */
  pthread_mutex_lock(&threads_mu);
  ctrace__cfg.cpu_hz = o.cpu_hz;
  ctrace__prof_reset((s >> 1) + 1);
  pthread_mutex_unlock(&threads_mu);
  __atomic_store_n(&ctrace__cfg.unwind, o.unwind, __ATOMIC_RELAXED);
  ctrace__cfg.max_pending = o.max_pending;
  __atomic_store_n(&ctrace__cfg.format, o.format, __ATOMIC_RELAXED); /* ctrace__genfmt */
  uint64_t gen = (s >> 1) + 1;
  /* The loader's list now, not in the first event that needs it. */
  if (ctrace__cfg.stacks && o.unwind != CTRACE_UNWIND_FP) ctrace__unwind_prepare();
  ctrace__pool_trim(ctrace__cfg.buffer_size);
  ctrace__events_reset(ctrace__procs());
  ctrace__reader_open(gen, writer ? writer->gen_bytes : 0, writer && writer->holds);
  trace_gaps = 0;
  gens_out = 0;
  atomic_store(&gap_closed, false);
  trace_writer = writer;
  ticks_start = ctrace__ticks();
  ctrace__identity_init();
  if (ctrace__genfmt())
    ctrace__gen_reset(gen);
  else
    ctrace__first_events(ctrace__procs(), ticks_start);
  atomic_store_explicit(&ctrace__state, gen << 1 | 1, memory_order_seq_cst);
  ctrace__announce_all();
  if (ctrace__cfg.cpu_hz) {
    pthread_mutex_lock(&threads_mu);
    for (ctrace__thread *t = threads; t; t = t->next) ctrace__prof_arm(t, t->pthread);
    pthread_mutex_unlock(&threads_mu);
  }
  pthread_mutex_unlock(&ctl_mu);
  return 0;
}

static void wait_quiescent(ctrace__thread *t) {
  uint32_t seq = atomic_load_explicit(&t->seq, memory_order_seq_cst);
  if (!(seq & 1)) return;
  for (int spins = 0; atomic_load_explicit(&t->seq, memory_order_acquire) == seq; spins++) {
    if (spins < 100)
      __builtin_ia32_pause();
    else
      sched_yield();
  }
}

/* capped_state is set before tracing goes off, for a stop that finds it
 * off; where a stop turned it off first, that stop ends the trace as any
 * other and capped_state is taken back. Where a generation's end moved
 * the state on first, the next generation is the one capped: the
 * reader, told of the cap already, would otherwise never be told again,
 * and the queue would have no bound (the likeliest cause of 10 MiB held
 * under test_flight's 2 MiB cap, in 2 runs of 5). */
void ctrace__trace_capped(void) {
  uint64_t s = atomic_load(&ctrace__state);
  while (s & 1) { /* else stopped meanwhile */
    atomic_store(&capped_ns, ctrace__mono_ns());
    atomic_store(&capped_state, s);
    uint64_t cur = s;
    if (atomic_compare_exchange_strong(&ctrace__state, &cur, s & ~(uint64_t)1)) {
      atomic_fetch_add(&ctrace__stats.capped, 1);
      return;
    }
    uint64_t mine = s;
    atomic_compare_exchange_strong(&capped_state, &mine, 0);
    s = cur;
  }
}

/* Waits until no thread writes under a state word before the one just
 * published; returns with threads_mu held. */
static void quiesce_wait(void) {
  heavy_barrier();
  pthread_mutex_lock(&threads_mu);
  for (ctrace__thread *t = threads; t; t = t->next) wait_quiescent(t);
}

void (*_Atomic ctrace__off_hook)(void);

static void quiesce(uint64_t ns) {
  atomic_store_explicit(&ctrace__state, ns, memory_order_seq_cst);
  void (*hook)(void) = atomic_load_explicit(&ctrace__off_hook, memory_order_acquire);
  if (hook) hook();
  quiesce_wait();
}

static void close_all(uint64_t s) {
  for (ctrace__thread *t = threads; t; t = t->next) close_for_gap(t, s);
  atomic_store(&gap_closed, true);
}

void (*_Atomic ctrace__seal_hook)(uint64_t gen);

/* The generation format's end of generation s >> 1, with next state
 * ns: as at a stop, no thread writes into it once quiesce returns, and
 * its buffers are taken; then the statuses no thread gave, the tables
 * and the frequency go in, and the generation is handed to the reader
 * whole. Threads go on in the next generation meanwhile.
 *
 * A generation with no event at all (it ended before any thread wrote,
 * and no P or G was there to state) is left out: Go's reader refuses one
 * ("frontier is empty"). Generation numbers skip it, as they skip a gap.
 *
 * With tracing going on into ns, cut_mu is held (ctrace__cut_lock) and
 * let go once the state word moved on.
 *
 * Tracing goes off at the cap without ctl_mu (ctrace__trace_capped): a
 * generation that was to go on into the next then ends in a gap, as
 * ctrace__gap_begin would end it, rather than turn tracing back on. */
static void end_generation(uint64_t s, uint64_t ns, bool gap) {
  uint64_t gen = s >> 1;
  if (ns & 1) ctrace__reader_began(ns >> 1, ctrace__mono_ns(), ctrace__ticks());
  ctrace__statuses_begin(gen);
  uint64_t cur = s | 1;
  if (!atomic_compare_exchange_strong(&ctrace__state, &cur, ns) && (ns & 1)) gap = true;
  if (ns & 1) ctrace__cut_unlock();
  quiesce_wait();
  uint64_t quiet_ns = ctrace__mono_ns(); /* no thread writes into gen from here */
  if (gap) {
    close_all(s);
    gap_gen = gen;
    trace_gaps++;
  }
  if (ctrace__cfg.cpu_hz) {
    /* Every sample taken in gen goes into it, before its tables. */
    for (ctrace__thread *t = threads; t; t = t->next) ctrace__prof_drain(t);
    ctrace__prof_seal(gen);
  }
  ctrace__buf *strings = NULL; /* the threads' strings, for their events */
  for (ctrace__thread *t = threads; t; t = t->next) {
    if (t->bufs[gen & 1]) ctrace__queue_full(t->bufs[gen & 1]);
    if (t->sbufs[gen & 1]) {
      t->sbufs[gen & 1]->link = strings;
      strings = t->sbufs[gen & 1];
    }
    t->bufs[gen & 1] = t->sbufs[gen & 1] = NULL;
  }
  pthread_mutex_unlock(&threads_mu);
  void (*hook)(uint64_t) = atomic_load_explicit(&ctrace__seal_hook, memory_order_acquire);
  if (hook) hook(gen);
  uint64_t ticks = ctrace__ticks();
  ctrace__gen_seal(gen, ticks);
  bool events = ctrace__reader_has_events(gen);
  if (!events && !(ns & 1) && !gap && !gens_out) {
    /* The last generation of a trace that has none (a stop's): Go's
     * reader refuses a trace without one ("no frequency event found"). */
    ctrace__gen_idle(gen, ticks);
    events = true;
  }
  gens_out += events;
  while (strings) {
    ctrace__buf *next = strings->link;
    if (events)
      ctrace__queue_full(strings);
    else
      ctrace__buf_put(strings); /* their events were lost */
    strings = next;
  }
  if (!events) {
    ctrace__tables_reset(gen);
  } else {
    ctrace__tables_dump2(gen, ticks);
    ctrace__buf *b = ctrace__buf_get();
    if (b) {
      ctrace__open_batch2(b, gen, UINT64_MAX, ticks);
      *b->pos++ = CTRACE_EV122_Frequency;
      b->pos = ctrace__put_uvarint(b->pos, ctrace__frequency());
      ctrace__queue_full(b);
    }
  }
  ctrace__reader_seal(gen, ctrace__gc_seal(gen), quiet_ns);
}

/* Generation format, past the cap (reader.c): tracing went off at once
 * (ctrace__trace_capped); the generation it went off in is now closed
 * and sealed, so that the reader hands out whole generations only, and
 * a gap begins. True if a gap is on. */
bool ctrace__gap_begin(void) {
  if (pthread_mutex_trylock(&ctl_mu)) return false;
  uint64_t s = capped();
  if (s && !gap_gen && ctrace__genfmt()) end_generation(s | 1, s & ~(uint64_t)1, true);
  bool begun = gap_gen; /* here, or by the generation's end the cap met */
  pthread_mutex_unlock(&ctl_mu);
  return begun;
}

/* The gap ends; a log tells of it where tracing goes on. */
static void gap_count(bool goes_on) {
  uint64_t ns = ctrace__mono_ns() - atomic_load(&capped_ns);
  atomic_fetch_add(&ctrace__stats.gap_ns, ns);
  if (goes_on) ctrace__gap_note(ns);
  gap_gen = 0;
}

/* The reader has handed out the generation before the gap: tracing goes
 * on in the next generation of the same trace. True if it did (false if
 * a start or stop holds ctl_mu: the reader tries again). */
bool ctrace__gap_end(void) {
  if (pthread_mutex_trylock(&ctl_mu)) return false;
  if (gap_gen && atomic_load(&capped_state)) {
    uint64_t gen = gap_gen + 1;
    gap_count(true);
    atomic_store(&gap_closed, false);
    atomic_store(&capped_state, 0);
    ctrace__reader_began(gen, ctrace__mono_ns(), ctrace__ticks());
    atomic_store_explicit(&ctrace__state, gen << 1 | 1, memory_order_seq_cst);
  }
  pthread_mutex_unlock(&ctl_mu);
  return true;
}

bool ctrace__try_advance(bool force) {
  if (pthread_mutex_trylock(&ctl_mu)) return false;
  uint64_t s = atomic_load_explicit(&ctrace__state, memory_order_relaxed);
  bool done = true;
  if (s & 1 && ctrace__genfmt()) {
    done = ctrace__cut_lock(force);
    if (done) end_generation(s, ((s >> 1) + 1) << 1 | 1, false);
  }
  pthread_mutex_unlock(&ctl_mu);
  return done;
}

/* Once a stop turned tracing off: whether the cap turned it off first,
 * after the stop read the state (what was written since is not in the
 * trace). capped_state is taken back: the next start would refuse it. */
static bool capped_meanwhile(void) {
  if (!atomic_exchange(&capped_state, 0)) return false;
  if (ctrace__genfmt()) gap_count(false);
  return true;
}

/* 0, CTRACE_ECAPPED for a trace that ended early, or CTRACE_ENOTRACE. */
static int stop_locked(void) {
  uint64_t s = atomic_load_explicit(&ctrace__state, memory_order_relaxed);
  int rc = 0;
  if (!(s & 1)) {
    s = atomic_exchange(&capped_state, 0);
    if (!s) return CTRACE_ENOTRACE;
    rc = CTRACE_ECAPPED;
  }
  if (ctrace__genfmt()) {
    /* Nothing to close: the trace ends with its last generation, which,
     * in a gap, is sealed already. Since the cap, if any, nothing was
     * traced: a gap at the end. */
    bool sealed = gap_gen;
    if (rc) gap_count(false);
    pthread_mutex_lock(&threads_mu);
    for (ctrace__thread *t = threads; t; t = t->next) ctrace__prof_disarm(t);
    pthread_mutex_unlock(&threads_mu);
    if (!sealed) end_generation(s | 1, s & ~(uint64_t)1, false);
    /* Under CTRACE_VERBOSE, where unwind tables came from, as at a
     * classic stop (where symbols came from is said as each generation's
     * tables let the symbolizer go: ctrace__symbolize_release). What the
     * symbolizer learnt is kept for the next trace, as between
     * generations. */
    ctrace__unwind_report();
    if (capped_meanwhile()) rc = CTRACE_ECAPPED;
    ctrace__reader_close_and_wait(0);
    return rc || trace_gaps ? CTRACE_ECAPPED : 0;
  }
  quiesce(s & ~(uint64_t)1);
  if (capped_meanwhile()) rc = CTRACE_ECAPPED;
  /* The last samples go in before the no-P buffer is flushed below. */
  for (ctrace__thread *t = threads; t; t = t->next) {
    ctrace__prof_disarm(t);
    ctrace__prof_drain(t);
  }
  /* Nobody writes into this trace any more. Close what each thread shows
   * and take its buffer. */
  for (ctrace__thread *t = threads; t; t = t->next) {
    if (t->state != s) continue;
    ctrace__close_thread(t, true);
    ctrace__buf **bp = ctrace__tbuf(t);
    if (*bp) ctrace__queue_full(*bp);
    *bp = NULL;
  }
  pthread_mutex_unlock(&threads_mu);

  pthread_mutex_lock(&nop_mu);
  /* Written by no thread of the trace: stop's own count of events. */
  ctrace__thread closer = {.state = s, .tid = (pid_t)syscall(SYS_gettid)};
  ctrace__w w = {&closer, &ctrace__nop_buf, CTRACE__NO_P};
  ctrace__close_phases(&w);
  atomic_fetch_add(&ctrace__stats.events,
                   atomic_load_explicit(&closer.events, memory_order_relaxed));
  if (ctrace__nop_buf) ctrace__queue_full(ctrace__nop_buf);
  ctrace__nop_buf = NULL;
  pthread_mutex_unlock(&nop_mu);

  ctrace__buf *dump = NULL;
  ctrace__tables_dump(&dump, s >> 1);
  if (dump) ctrace__queue_full(dump);
  ctrace__tables_reset(s >> 1);
  ctrace__reader_close_and_wait(ctrace__frequency());
  return rc;
}

int ctrace_stop(void) {
  pthread_mutex_lock(&ctl_mu);
  int err = stop_locked();
  if ((!err || err == CTRACE_ECAPPED) && trace_writer) {
    int werr = trace_writer->join(trace_writer);
    if (werr) err = werr; /* the writer's error first: the trace is not whole */
  }
  trace_writer = NULL;
  pthread_mutex_unlock(&ctl_mu);
  return err;
}

int ctrace__pause(void) {
  pthread_mutex_lock(&ctl_mu);
  ctrace__sink *w = trace_writer;
  int err = !w ? CTRACE_ENOTRACE : !w->pause ? CTRACE_EINVAL : w->pause(w);
  if (err) pthread_mutex_unlock(&ctl_mu);
  return err;
}

int ctrace__resume(void) {
  int err = trace_writer->resume(trace_writer);
  pthread_mutex_unlock(&ctl_mu);
  return err;
}

void ctrace__prof_drain_all(void) {
  pthread_mutex_lock(&threads_mu);
  for (ctrace__thread *t = threads; t; t = t->next) ctrace__prof_drain(t);
  pthread_mutex_unlock(&threads_mu);
}

/* A fork waits for a generation's end under way (fork.c): the reader's
 * thread allocates there (tables, symbols), under ctl_mu, and an
 * allocator that takes no lock of its own across a fork (ASan's, where
 * `ctrace run -f` hung a forked bash at its first malloc, two runs in
 * four) would leave the child a lock held for good, and the child of
 * `ctrace run -f` starts a trace of its own, which allocates. glibc's
 * allocator waits for the same allocations, a call at a time. */
void ctrace__tracer_fork_prepare(void) { pthread_mutex_lock(&ctl_mu); }
void ctrace__tracer_fork_parent(void) { pthread_mutex_unlock(&ctl_mu); }

/* In the child of a fork (fork.c): tracing off, the calling thread the only
 * one registered, and no buffer: the parent's belong to its trace. The
 * parent's writer thread is not here, nor, in the child's descriptor table,
 * its file descriptor (ctrace__writer_fork_child). */
void ctrace__tracer_fork_child(void) {
  pthread_mutex_init(&ctl_mu, NULL);
  pthread_mutex_init(&threads_mu, NULL);
  pthread_mutex_init(&nop_mu, NULL);
  atomic_store(&ctrace__state, atomic_load(&ctrace__state) & ~(uint64_t)1);
  atomic_store(&capped_state, 0); /* the parent's trace, which it stops */
  gap_gen = 0;
  if (trace_writer && trace_writer->fork_child) trace_writer->fork_child(trace_writer);
  trace_writer = NULL;
  ctrace__nop_buf = NULL;
  ctrace__thread *t = &ctrace__tls;
  threads = NULL;
  if (t->registered) {
    t->next = t->prev = NULL;
    t->tid = (pid_t)syscall(SYS_gettid);
    threads = t;
  }
  t->bufs[0] = t->bufs[1] = t->sbufs[0] = t->sbufs[1] = NULL;
  t->tp = -1;
  t->tcurg = NULL;
  t->sys_g = NULL;
  /* Timers are not inherited by a child; its samples are the parent's. */
  if (t->prof) {
    t->prof = NULL; /* the parent's memory, left as the rest of its trace is */
  }
}

void ctrace_stats_get(ctrace_stats *out) {
  pthread_mutex_lock(&threads_mu);
  out->events = atomic_load(&ctrace__stats.events);
  for (ctrace__thread *t = threads; t; t = t->next)
    out->events += atomic_load_explicit(&t->events, memory_order_relaxed);
  pthread_mutex_unlock(&threads_mu);
  out->lost = atomic_load(&ctrace__stats.lost);
  out->truncated = atomic_load(&ctrace__stats.truncated);
  out->buffers = atomic_load(&ctrace__stats.buffers);
  out->bytes = atomic_load(&ctrace__stats.bytes);
  out->unwritten = atomic_load(&ctrace__stats.unwritten);
  out->capped = atomic_load(&ctrace__stats.capped);
  out->gap_ns = atomic_load(&ctrace__stats.gap_ns);
}
