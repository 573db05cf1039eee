/* ctrace's analyses of a trace (src/analyse/): pprof profiles built from
 * the ordered, validated stream of libctrace-parse, with no Go installed.
 *
 * A profile is built in memory as pprof's own encoder builds one
 * (profile/encode.go): deduplicated tables of strings, functions and
 * locations, and samples keyed by stack; it is then encoded as
 * profile.proto in one pass and written gzip-compressed, the form
 * `go tool pprof` reads.
 */
#ifndef CTRACE_ANALYSE_H
#define CTRACE_ANALYSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctrace/parse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ctrace_profile_kind {
  /* Go's four trace profiles (`go tool trace -pprof=TYPE`): the stack at
   * entry to the state, values contentions/count and delay/nanoseconds. */
  CTRACE_PROFILE_NET,     /* blocked on the network (GoBlockNet) */
  CTRACE_PROFILE_SYNC,    /* blocked on channels, select, mutexes, conds, GC */
  CTRACE_PROFILE_SYSCALL, /* in a system call, to its exit */
  CTRACE_PROFILE_SCHED,   /* runnable (woken or created) to running */
  /* Every goroutine's time, by state (docs/analyse.md). */
  CTRACE_PROFILE_WALL,
  /* The trace's CPU samples: samples/count and cpu/nanoseconds. */
  CTRACE_PROFILE_CPU,
  /* Who kept them waiting: the waits a GoUnblock ended (all but sleeps),
   * per stack of the waker at the unblock; contentions/count and
   * delay/nanoseconds; labels "woken" and "waker" (docs/analyse.md). */
  CTRACE_PROFILE_WAKER,
} ctrace_profile_kind;

typedef struct ctrace_profile_options {
  ctrace_profile_kind kind;
  /* Only goroutines whose start function is this (NULL: all). */
  const char *goroutine;
  /* Only time inside user regions of this type (NULL: all). */
  const char *region;
  /* CTRACE_PROFILE_CPU: the samples' rate per second, which Go's format
   * does not record; 0: estimated from the samples (docs/analyse.md). */
  int cpu_hz;
} ctrace_profile_options;

typedef struct ctrace_profile ctrace_profile;

/* Builds the profile from a checked reader (ctrace_reader_check done); the
 * reader is rewound and read through, twice where a filter needs the
 * goroutines' lifetimes first. 0, or a negative code (ctrace/error.h) with
 * a message in err: CTRACE_EINVAL when no goroutine or region matches the
 * options, CTRACE_ENOMEM. */
int ctrace_profile_build(ctrace_reader *r, const ctrace_profile_options *opt,
                         ctrace_profile **out, char *err, size_t errlen);

/* Samples in the profile. */
size_t ctrace_profile_samples(const ctrace_profile *p);

/* The profile as gzip-compressed profile.proto, in a malloc'ed buffer the
 * caller frees. 0, or CTRACE_ENOMEM. */
int ctrace_profile_encode(const ctrace_profile *p, unsigned char **data, size_t *len);

void ctrace_profile_free(ctrace_profile *p);

/* Builds the profile as ctrace_profile_build does and writes it to out as
 * ctrace_profile_encode would, but as it goes: a sample that can no longer
 * change is written then and forgotten (-t wall: a goroutine's samples,
 * once it has ended for good), so that memory follows the goroutines alive
 * at once, not all those the trace ever had. Samples may come in another
 * order than ctrace_profile_encode's (pprof reads them in any). Whatever
 * the return, out may hold part of a profile. 0, or a negative code as
 * ctrace_profile_build's, or CTRACE_EIO when writing to out failed. */
int ctrace_profile_write(ctrace_reader *r, const ctrace_profile_options *opt, FILE *out, char *err,
                         size_t errlen);

/* ---- statistics (ctrace stats) ------------------------------------------- */

/* Why a goroutine waited: Go 1.23's reasons for the classic events and
 * those its runtime writes in Go 1.22+ traces (the reason strings of its
 * goroutine pages), index and name. OTHER: GoBlock, a goroutine waiting
 * when the trace began, and a reason not listed. */
#define CTRACE_BLOCK_REASONS(X)                 \
  X(SLEEP, "sleep")                             \
  X(CHAN_SEND, "chan send")                     \
  X(CHAN_RECV, "chan receive")                  \
  X(SELECT, "select")                           \
  X(SYNC, "sync")                               \
  X(COND, "sync.(*Cond).Wait")                  \
  X(NET, "network")                             \
  X(GC, "GC mark assist wait for work")         \
  /* Go 1.22+ runtimes name these too */        \
  X(UNSPECIFIED, "unspecified")                 \
  X(GC_SWEEP, "GC background sweeper wait")     \
  X(SYSTEM, "system goroutine wait")            \
  X(PREEMPTED, "preempted")                     \
  X(DEBUG_CALL, "wait for debug call")          \
  X(UNTIL_GC_ENDS, "wait until GC ends")        \
  X(GC_WEAK, "GC weak to strong wait")          \
  X(OTHER, "")

enum ctrace_block_reason {
#define CTRACE__BR(name, s) CTRACE_BLOCK_##name,
  CTRACE_BLOCK_REASONS(CTRACE__BR)
#undef CTRACE__BR
  CTRACE_BLOCK_COUNT
};
extern const char *const ctrace_block_reason_names[CTRACE_BLOCK_COUNT];

/* Where a goroutine's time went, in nanoseconds, as Go 1.23's goroutine
 * pages split it (docs/analyse.md). unknown is the rest of total. */
typedef struct ctrace_gtimes {
  int64_t total, exec, sched_wait, syscall, syscall_block, block[CTRACE_BLOCK_COUNT], unknown;
} ctrace_gtimes;

typedef struct ctrace_goroutine_stats {
  uint64_t id;
  const char *name; /* start function; valid while the reader is open */
  /* its thread's name, the last the trace gives it ("" for none: a
   * thread never named, or Go's goroutines); valid as name */
  const char *thread;
  int64_t creation, end; /* end -1: alive at the trace's end */
  ctrace_gtimes t;
} ctrace_goroutine_stats;

/* Goroutines of one thread name and start function. */
typedef struct ctrace_group_stats {
  const char *name;   /* start function */
  const char *thread; /* thread name, "" for none */
  uint64_t count;
  ctrace_gtimes t; /* sums over the group */
} ctrace_group_stats;

/* The percentiles of ctrace_stats are read from a sketch, not from every
 * value kept, so that memory does not grow with the trace: each is within
 * this relative error of the nearest-rank percentile, then rounded to the
 * nanosecond (exact below 50 ns); max and count are exact. */
#define CTRACE_STATS_QUANTILE_ERROR 0.01

typedef struct ctrace_latency_stats {
  const char *name; /* task or region type */
  uint64_t count;   /* with both ends in the trace */
  uint64_t open;    /* begun or ended outside the trace: not in the latencies */
  int64_t p50, p90, p99, max; /* percentiles within CTRACE_STATS_QUANTILE_ERROR */
} ctrace_latency_stats;

/* Who kept them waiting: the waits a GoUnblock ended (every block but
 * sleeps, as CTRACE_PROFILE_WAKER counts them, with those of no time too),
 * per pair of start functions: the goroutines that waited, and the
 * goroutine that ended each wait; for waits with no waker, per reason. */
typedef struct ctrace_waker_stats {
  const char *woken;
  const char *waker; /* NULL: no waker known (the wait ended by itself) */
  uint64_t count;
  int64_t total, p50, p99, max; /* wait times; percentiles within CTRACE_STATS_QUANTILE_ERROR */
  /* With no waker, why the waits ended by themselves where the trace says
   * (ctrace run's waits in poll, select and epoll, docs/run.md): "timeout",
   * "signal", "timer" (a timerfd), "outside" (a descriptor made ready by
   * no thread of the process seen); NULL: not told. */
  const char *why;
  /* The threads' names ("" none; waker_thread "" with no waker), which
   * the rows are split by too. */
  const char *woken_thread, *waker_thread;
} ctrace_waker_stats;

#define CTRACE_MMU_WINDOWS 3 /* 1 ms, 10 ms, 100 ms */

typedef struct ctrace_stats {
  ctrace_trace_info info;
  uint64_t threads, gc_cycles, stw_count;
  int64_t gc_ns, stw_ns, stw_max_ns;
  ctrace_goroutine_stats *goroutines; /* by id */
  size_t ngoroutines;
  ctrace_group_stats *groups; /* by total execution time, largest first */
  size_t ngroups;
  ctrace_latency_stats *tasks, *regions; /* by name */
  size_t ntasks, nregions;
  /* Minimum mutator utilization as Go 1.23's /mmu page has it by default
   * (stop-the-world for the GC, background mark workers, mark assists;
   * docs/analyse.md). A window longer than the utilization's span is cut
   * to it, as Go does. */
  int64_t mmu_window_ns[CTRACE_MMU_WINDOWS];
  double mmu[CTRACE_MMU_WINDOWS]; /* -1: no utilization (Go shows none) */
  int64_t mmu_span_ns;            /* the span of the utilization */
  ctrace_waker_stats *wakers; /* by total wait time, largest first */
  size_t nwakers;
  /* The command line the process goes by, from the trace's
   * ctrace.process logs, "" for none: a process may retitle itself after
   * its start (nginx's and PostgreSQL's workers), which
   * ctrace_process_read, reading the first log, does not see. The title
   * of its last generation's log; the one it ended with only where no
   * generation's gave another than the first (docs/analyse.md). */
  char cmdline[256];
} ctrace_stats;

/* Computes the statistics of a reader: a checked one (info from its
 * check), or a Go 1.22+ one not checked yet (info with its version), which
 * its pass checks. 0; or CTRACE_ENOMEM, or -1 when the trace does not
 * read (ctrace_reader_check then says why), with a message in err. */
int ctrace_stats_build(ctrace_reader *r, const ctrace_trace_info *info, ctrace_stats **out,
                       char *err, size_t errlen);
/* The same, without the rows of goroutines when groups_only is not 0
 * (ngoroutines 0): then memory follows the goroutines alive at once, not
 * all those a trace ever had (a Go program may start a million a second).
 * Those rows can still be had, one at a time: row, when not NULL, is
 * called with each goroutine's as it is settled, while the statistics are
 * built: a goroutine that has ended for good at once, in the order they
 * end; the others at the end of the trace, by id. The row and its strings
 * are valid during the call. ctrace_stats_build is this with all 0. */
typedef struct ctrace_stats_options {
  int groups_only;
  void (*row)(const ctrace_goroutine_stats *g, void *arg);
  void *row_arg;
} ctrace_stats_options;
int ctrace_stats_build_ex(ctrace_reader *r, const ctrace_trace_info *info, const ctrace_stats_options *opt,
                          ctrace_stats **out, char *err, size_t errlen);
void ctrace_stats_free(ctrace_stats *s);

/* ---- the process and its clock ------------------------------------------- */

/* Where a trace's anchor (below) comes from. */
typedef enum ctrace_clock_source {
  CTRACE_CLOCK_NONE,        /* none: the trace cannot be dated or placed */
  CTRACE_CLOCK_PROCESS_LOG, /* ctrace's log "ctrace.process" */
  CTRACE_CLOCK_GO,          /* Go's clock snapshot (go 1.25+ traces: ctrace_reader_clock) */
} ctrace_clock_source;

/* Who a trace is of, and when. ctrace writes a log of category
 * "ctrace.process" (src/runtime/identity.c): the process's pid, parent,
 * host, executable and command line, and CLOCK_MONOTONIC and
 * CLOCK_REALTIME read with it; in every generation of Go's current format
 * (a flight recorder's snapshot holds it too), and in the classic format
 * as a trace of `ctrace run` starts. Go
 * 1.25 and later write a clock snapshot in each generation's sync batch.
 * Either is the anchor that ties the trace's clock to the machine's; Go's
 * snapshot, taken with the trace's time in one step, wins where both are. */
typedef struct ctrace_process_info {
  int known;          /* 1: the log names the process (pid to cmdline) */
  uint32_t pid, ppid;
  char program[64];   /* the file it was run as (a link's own name, as ps says) */
  char host[64];
  char cmdline[256];  /* its arguments joined by spaces, cut to fit */
  ctrace_clock_source clock; /* the anchor's source; NONE: none, and the rest is 0 */
  /* The anchor: the trace's time then, in ns since its first event (the
   * time the exporters and the analyses count in), and what CLOCK_MONOTONIC
   * and CLOCK_REALTIME (ns since 1970-01-01 UTC) read at that time. */
  int64_t clock_ts;
  uint64_t mono_ns;
  int64_t real_ns;
  /* CLOCK_REALTIME at the trace's first event: real_ns - clock_ts. */
  int64_t start_real_ns;
} ctrace_process_info;

/* Reads what a checked reader's trace says of its process and clock (the
 * log among its first 100000 events; the reader is rewound, and left so).
 * 1 if it says either, 0 if neither (*p zeroed). */
int ctrace_process_read(ctrace_reader *r, ctrace_process_info *p);

/* Several traces on one timeline: offsets[i] is where trace i's first
 * event falls, in ns after the earliest trace's first event, by their
 * anchors: by CLOCK_MONOTONIC, or by CLOCK_REALTIME where the logs name
 * different hosts (a monotonic clock is the machine's own). Returns how
 * many traces have no anchor; unless none, every offset is 0 (each trace
 * from 0, as with no offsets at all). */
size_t ctrace_process_place(const ctrace_process_info *p, size_t n, int64_t *offsets);

/* A wall-clock time (ns since 1970-01-01 UTC) as "2026-11-26T13:15:02.123456789Z"
 * into buf (32 bytes suffice). Returns buf. */
char *ctrace_format_utc(int64_t real_ns, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
