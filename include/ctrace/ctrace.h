/* ctrace: Go's execution tracer for C programs.
 *
 * The tracer writes Go's own formats (by default Go's current one, `go
 * 1.22 trace`; or the classic `go 1.11 trace`), so `go tool trace` and
 * `go tool pprof` open what it produces. Its model is Go's:
 *   G  a goroutine: a task, coroutine or plain thread,
 *   P  a processor: a worker that runs one G at a time,
 *   M  an OS thread, which holds at most one P.
 * A thread that never says otherwise is its own G on its own P, so plain
 * threaded programs need no setup: they call the annotation functions
 * (tasks, regions, logs) and ctrace does the rest. Runtimes that schedule
 * their own tasks describe them with the scheduling functions below.
 *
 * Event functions never fail visibly and never block on the reader: while
 * tracing is off they cost one load; what cannot be recorded is counted
 * (ctrace_stats). Control functions return 0 or a negative code
 * (ctrace/error.h): a CTRACE_E* condition, or the system's -errno.
 */
#ifndef CTRACE_CTRACE_H
#define CTRACE_CTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTRACE_VERSION_STRING "0.1.0"

/* ---- errors: ctrace/error.h ------------------------------------------ */

/* ---- control ----------------------------------------------------------- */

#define CTRACE_MAX_STACK_DEPTH 128
#define CTRACE_DEFAULT_STACK_DEPTH 32
#define CTRACE_DEFAULT_BUFFER_SIZE (64u * 1024u)

/* How stacks are walked (ctrace_options.unwind). */
#define CTRACE_UNWIND_AUTO 0   /* frame pointers where objects keep them, else unwind tables */
#define CTRACE_UNWIND_FP 1     /* frame pointers only: fastest, short stacks in code without */
#define CTRACE_UNWIND_TABLES 2 /* unwind tables (.eh_frame, .debug_frame; compiled once per object) for every frame */

/* The trace format (ctrace_options.format). */
#define CTRACE_FORMAT_DEFAULT 0 /* the CTRACE_FORMAT environment variable, else GO122 */
#define CTRACE_FORMAT_GO111 1   /* Go's classic format ("go 1.11 trace"): every Go reads it */
#define CTRACE_FORMAT_GO122 2   /* Go's current format ("go 1.22 trace"): batches per thread,
                                   cut into self-contained generations; Go 1.22 and later */

typedef struct ctrace_options {
  int no_stacks;      /* nonzero: record no call stacks (stack id 0) */
  int stack_depth;    /* frames per stack, 1..128; 0 means 32 */
  size_t buffer_size; /* bytes per buffer, 8 KiB..16 MiB; 0 means 64 KiB */
  int cpu_hz;         /* CPU samples per second of each thread's CPU time
                         (classic format: the `go 1.19 trace` header; the
                         current format: Go's CPU sample batches),
                         1..10000; 0: the CTRACE_CPU_HZ environment
                         variable, else off */
  int unwind;         /* CTRACE_UNWIND_*; 0 is AUTO */
  size_t max_pending; /* bytes of full buffers held for a reader that falls
                         behind; past them a classic trace ends early, and
                         one of CTRACE_FORMAT_GO122 pauses until the reader
                         has caught up, whole generations on either side
                         of the gap (ctrace_stop returns CTRACE_ECAPPED for
                         either; see ctrace_stats). 0: the
                         CTRACE_MAX_PENDING_MB environment variable, else
                         256 MiB. At least 1 MiB. */
  int format;         /* CTRACE_FORMAT_*; GO122 takes buffer_size up to 64 KiB
                         (Go's largest batch) */
} ctrace_options;

/* Starts tracing (opts may be NULL for defaults). Fails with CTRACE_EBUSY
 * while tracing is on or the previous trace has not been read out. Every
 * live G is announced in the new trace. Safe while other threads emit. */
int ctrace_start(const ctrace_options *opts);

/* Stops tracing: closes every running G, flushes every buffer, appends the
 * stack table and the frequency, and returns once a reader has drained it
 * all (start a reader first, or use ctrace_start_fd). For a trace started
 * with ctrace_start_fd/_file it returns the writer's error, if any. */
int ctrace_stop(void);

/* Returns the next chunk of the trace and sets *len: the header first,
 * then buffers as they fill; blocks until one is ready or tracing stopped.
 * Returns NULL with *len 0 after the end of the trace, and NULL with
 * *len 0 if another reader is active. The chunk stays valid until the
 * next call. One reader at a time. */
const void *ctrace_read(size_t *len);

/* ctrace_start, plus a background thread that writes the trace to fd as
 * it is produced (Go's runtime/trace.Start(w)). The caller owns fd: ctrace
 * never closes it, and takes a reference of its own to the open file at
 * start, in a descriptor table only the writer thread uses. Once
 * ctrace_start_fd has returned, the caller may close fd, or reuse its
 * number: the trace goes on to the file fd named at start until
 * ctrace_stop, and never to another. Where the kernel refuses the writer
 * a table of its own (a seccomp policy), the reference is a close-on-exec
 * duplicate in the process's table, checked before every write: when the
 * program closed or replaced it, writing stops, ctrace_stop returns
 * CTRACE_EFDCHANGED and ctrace_stats.unwritten counts what was not
 * written. */
int ctrace_start_fd(int fd, const ctrace_options *opts);
/* Same, writing to a new file at path (created or truncated), with the
 * same protection: its descriptor is the writer's alone. */
int ctrace_start_file(const char *path, const ctrace_options *opts);

/* ---- flight recorder --------------------------------------------------- */

/* A trace in Go's current format kept in memory, its last generations
 * only, written out on demand (Go's runtime/trace.FlightRecorder). */
#define CTRACE_FLIGHT_DEFAULT_MIN_AGE_MS 10000
#define CTRACE_FLIGHT_DEFAULT_MAX_BYTES (64u << 20)

typedef struct ctrace_flight_options {
  uint64_t min_age_ms;         /* keep at least the last this many ms of
                                  events; 0: 10 s */
  size_t max_bytes;            /* memory for them, at least 1 MiB; 0: 64 MiB:
                                  their bytes, in whole pages, not the
                                  buffers they were written in. It wins
                                  over min_age_ms (see
                                  ctrace_flight_stats.dropped_young) */
  const ctrace_options *trace; /* NULL: defaults; format 0 or GO122 */
  const char *crash_path;      /* if set: on SIGSEGV, SIGBUS, SIGILL, SIGFPE
                                  or SIGABRT a snapshot is written there
                                  (waited for up to 10 s), then the signal
                                  goes on to the handler or default action
                                  it had before the start */
} ctrace_flight_options;

/* Starts recording (opts may be NULL). CTRACE_EBUSY while tracing or
 * recording is on: a flight recorder and a trace never run at once. */
int ctrace_flight_start(const ctrace_flight_options *opts);

/* Writes a trace of what is kept to fd, from any thread, while recording
 * goes on: the header and the kept generations, the one being written
 * ended first, so it holds at least the last min_age_ms before the call
 * (less if max_bytes is too small) and nothing older than min_age_ms plus
 * one generation. CTRACE_EBUSY while another thread's snapshot is under
 * way (call again), CTRACE_ENOTRACE when not recording, CTRACE_EEMPTY
 * when not one event was recorded (nothing is written: Go reads no trace
 * without an event), CTRACE_EIO when a write fails. A stop-the-world
 * open at the call (ctrace_gc_stw_start) is waited for, up to 2 s: no
 * generation ends inside one. Else the call waits for the recorder's
 * thread to end the generation, however long a loaded machine makes it,
 * up to 30 s (a thread stopped in the middle of an event, by a debugger,
 * holds it open): the snapshot then lacks the generation. */
int ctrace_flight_write(int fd);

/* Stops recording and frees what was kept; CTRACE_ENOTRACE if not on.
 * Events coming faster than the recorder's thread takes them pause
 * tracing as a reader falling behind does (gaps, see max_pending; here a
 * quarter of max_bytes, at least 1 MiB): ctrace_stats counts them. */
int ctrace_flight_stop(void);

typedef struct ctrace_flight_stats {
  uint64_t bytes;         /* buffer memory held: the kept generations and
                             the one being written */
  uint64_t generations;   /* kept */
  uint64_t window_ns;     /* time the kept generations span, up to now */
  uint64_t dropped_young; /* generations dropped at max_bytes before
                             they were min_age_ms old */
  uint64_t snapshots;     /* written */
} ctrace_flight_stats;
/* Zeros when not recording. */
void ctrace_flight_stats_get(ctrace_flight_stats *out);

typedef struct ctrace_stats {
  uint64_t events;         /* events written, all traces of this process */
  uint64_t lost;           /* events dropped: no memory for a buffer */
  uint64_t truncated;      /* strings shortened to fit a buffer */
  uint64_t buffers;        /* buffers allocated */
  uint64_t bytes;          /* trace bytes handed to readers */
  uint64_t unwritten;      /* of those, bytes the writer of ctrace_start_fd/_file
                              could not write (a write error, or its descriptor
                              taken away: see ctrace_start_fd) */
  uint64_t capped;         /* times a reader fell max_pending bytes behind
                              (ctrace_options): a classic trace ended early,
                              a CTRACE_FORMAT_GO122 trace paused (a gap) */
  uint64_t gap_ns;         /* nanoseconds of those gaps: time not traced */
} ctrace_stats;
void ctrace_stats_get(ctrace_stats *out);

/* Nonzero while tracing is on. */
int ctrace_enabled(void);

/* ---- user annotations (Go's runtime/trace) ----------------------------- */

/* Creates a task, child of parent (0: none), and returns its id (never 0;
 * ids are unique for the process, so tasks may span traces). Returns an id
 * whether or not tracing is on. */
uint64_t ctrace_task_create(uint64_t parent, const char *name);
void ctrace_task_end(uint64_t task);

/* A region is a span of time within one G; regions nest and must end in
 * reverse order of their start with the same task and name. */
void ctrace_region_begin(uint64_t task, const char *name);
void ctrace_region_end(uint64_t task, const char *name);

/* A log message with a category (may be NULL or ""), in a task (0: none). */
void ctrace_log(uint64_t task, const char *category, const char *message);
void ctrace_logf(uint64_t task, const char *category, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- scheduling: for runtimes that run their own tasks ------------------
 *
 * Embed a ctrace_g in each task. Calls about one G must be ordered by the
 * runtime's own synchronization, as a scheduler orders them anyway (a G is
 * unblocked after it blocked and before it starts again). Every call acts
 * on the calling thread's P and on the G it is running (its "current G").
 * If the trace's view of a G disagrees with a call (the G was, say, blocked
 * before tracing started), ctrace emits the events that bridge the two, so
 * the trace stays valid.
 */
typedef struct ctrace_g {
  uint64_t id; /* goroutine id, unique for the process; read-only */
  /* (a G started again after ctrace_go_stop gets a new one) */
  /* The rest is private to ctrace. */
  uint64_t ctrace__gen;
  uint64_t ctrace__seq;
  int64_t ctrace__lastp;
  uint64_t ctrace__ticks;
  uintptr_t ctrace__start_pc;
  uintptr_t ctrace__stack_lo, ctrace__stack_hi;
  struct ctrace_g *ctrace__next, *ctrace__prev;
  uint32_t ctrace__status, ctrace__tstatus;
  uint32_t ctrace__lock, ctrace__flags;
  uint32_t ctrace__regions[8], ctrace__nregions;
  uint64_t ctrace__gen_prev;   /* the generation stated before ctrace__gen */
  uint32_t ctrace__gen_status; /* the status stated in ctrace__gen, and if an assist was open */
  /* The thread's name (ctrace_thread_name, or the system's), the label of
   * the G's starts: written under a sequence count (odd while written, 0
   * never named), and the string id it was last written under (for the
   * count ctrace__name_seen, in the trace state ctrace__name_state). */
  uint32_t ctrace__name_seq, ctrace__name_seen;
  uint64_t ctrace__name_state, ctrace__name_id;
  char ctrace__name[32];
} ctrace_g;

/* Why a G blocks. */
typedef enum ctrace_block_reason {
  CTRACE_BLOCK = 0,    /* GoBlock: other */
  CTRACE_BLOCK_SEND,   /* channel send */
  CTRACE_BLOCK_RECV,   /* channel receive */
  CTRACE_BLOCK_SELECT, /* select */
  CTRACE_BLOCK_SYNC,   /* mutex, rwlock, semaphore, barrier, join */
  CTRACE_BLOCK_COND,   /* condition variable */
  CTRACE_BLOCK_NET,    /* network */
  CTRACE_BLOCK_GC,     /* GC assist */
  CTRACE_BLOCK_SLEEP,  /* timed sleep (GoSleep) */
  CTRACE_BLOCK_FUTILE = 0x100 /* or-ed in: the last wakeup was futile (not
                                 written: Go 1.23 rejects FutileWakeup) */
} ctrace_block_reason;

/* Creates G (not running, runnable) whose code starts at start_fn, from
 * the current G (or the scheduler if none). Registers g until ctrace_go_end
 * or ctrace_go_destroy. stack_lo/hi, if set afterwards with
 * ctrace_g_set_stack, bound stack walks while g runs. */
void ctrace_go_create(ctrace_g *g, void (*start_fn)(void));
/* Forgets g without an event (a runtime freeing a G that never ran). */
void ctrace_go_destroy(ctrace_g *g);
/* The memory range of g's own stack (coroutine stacks). */
void ctrace_g_set_stack(ctrace_g *g, const void *lo, const void *hi);

/* g starts running on this thread's P and becomes its current G. */
void ctrace_go_start(ctrace_g *g);
/* Same, labelled (Go labels GC workers this way). */
void ctrace_go_start_label(ctrace_g *g, const char *label);
/* The current G ends (GoEnd); it is forgotten and its memory may be reused. */
void ctrace_go_end(void);
/* The current G stops running and stays runnable: it yields (GoSched) or
 * is preempted (GoPreempt). ctrace_go_stop: it stops for good without
 * ending (Go's select{}); Go's tools show it ended, and if it is started
 * again it shows as a new goroutine with a new id. */
void ctrace_go_sched(void);
void ctrace_go_preempt(void);
void ctrace_go_stop(void);
/* The current G blocks (reason may carry CTRACE_BLOCK_FUTILE). */
void ctrace_go_block(int reason);
/* The current G (or the scheduler, between Gs) makes g runnable. */
void ctrace_go_unblock(ctrace_g *g);
/* The current G enters a system call; it keeps running until ... */
void ctrace_go_syscall(void);
/* ... the call blocks and it gives up the P (GoSysBlock); the thread keeps
 * the G as its current G and ... */
void ctrace_go_sysblock(void);
/* ... returns: the G is runnable again (GoSysExit), to be started with
 * ctrace_go_start. */
void ctrace_go_sysexit(void);

/* The calling thread takes P number p (0 and up), or gives up its P. A P
 * is held by one thread at a time. Thread ids in the trace are Linux tids. */
void ctrace_proc_start(int64_t p);
void ctrace_proc_stop(void);
void ctrace_gomaxprocs(int64_t procs);

/* Garbage collection, for runtimes that collect. In Go's current format
 * a stop-the-world, as in Go, holds the generation open until it ends:
 * keep it as short as the real one. */
void ctrace_gc_start(void);
void ctrace_gc_done(void);
void ctrace_gc_stw_start(int kind); /* 0 mark termination, 1 sweep termination */
void ctrace_gc_stw_done(void);
void ctrace_gc_sweep_start(void);
void ctrace_gc_sweep_done(uint64_t swept, uint64_t reclaimed);
void ctrace_gc_mark_assist_start(void);
void ctrace_gc_mark_assist_done(void);
void ctrace_heap_alloc(uint64_t live_bytes);
void ctrace_heap_goal(uint64_t goal_bytes);
/* Marks goroutine id as a timer goroutine (hidden by the viewer). */
void ctrace_timer_goroutine(uint64_t gid);

/* ---- plain threads ------------------------------------------------------
 *
 * A thread is its own G on its own P from its first call. These calls let
 * it say more: who created it, and when it blocks and goes on.
 */

/* The calling thread's own G (created on first use). */
ctrace_g *ctrace_thread_g(void);
/* Called by a creator before pthread_create: returns a G for the new
 * thread (GoCreate with the creator's stack, start_fn as its first frame),
 * which the new thread passes to ctrace_thread_begin. NULL if out of memory. */
ctrace_g *ctrace_thread_create(void (*start_fn)(void));
/* The new thread adopts g (from ctrace_thread_create) as its own G. */
void ctrace_thread_begin(ctrace_g *g);
/* The thread is done: its G ends and its buffer is handed over. Runs by
 * itself at thread exit for threads that have traced anything. */
void ctrace_thread_end(void);
/* Names the calling thread in traces, this one and those to come: Go's
 * viewer shows the name beside its goroutine, ctrace's tools group and
 * label threads by it. At most 31 bytes are kept; NULL or "" unnames it.
 * The system's name of the thread (pthread_setname_np, prctl's
 * PR_SET_NAME) is taken as the name when the thread is first traced and
 * when a trace starts, where it differs from the process's; this call does
 * not change it. */
void ctrace_thread_name(const char *name);
/* The thread goes on after ctrace_go_block or ctrace_go_sysblock: if no one
 * unblocked its G, it unblocks itself (from its P, between Gs), then its G
 * starts again. */
void ctrace_thread_resume(void);

#ifdef __cplusplus
}
#endif

#endif
