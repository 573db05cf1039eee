/* What the analyses of src/analyse/ share: goroutine lifetimes and the
 * time intervals a --goroutine or --region filter keeps. Internal. */
#ifndef CTRACE_ANALYSE_ANALYSE_H
#define CTRACE_ANALYSE_ANALYSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctrace/analyse.h"
#include "parse/map.h"
#include "parse/model.h"
#include "sketch.h"

/* A goroutine stops running to wait: GoSleep, GoBlock and its kinds
 * (send, receive, select, sync, cond, network, GC). Not GoStop, which Go
 * 1.23 reads as the goroutine's end. */
static inline bool ctrace__an_is_block(uint8_t type) {
  switch (type) {
  case CTRACE_EV_GoSleep:
  case CTRACE_EV_GoBlock:
  case CTRACE_EV_GoBlockSend:
  case CTRACE_EV_GoBlockRecv:
  case CTRACE_EV_GoBlockSelect:
  case CTRACE_EV_GoBlockSync:
  case CTRACE_EV_GoBlockCond:
  case CTRACE_EV_GoBlockNet:
  case CTRACE_EV_GoBlockGC:
    return true;
  default:
    return false;
  }
}

/* type, every block read as GoBlock: for a switch over the classic events
 * that treats all blocks alike (case CTRACE_EV_GoBlock). */
static inline uint8_t ctrace__an_class(uint8_t type) {
  return ctrace__an_is_block(type) ? CTRACE_EV_GoBlock : type;
}

/* The number of key in m: 1, 2, ... in the order keys first come (m keeps
 * them); 0 if out of memory. What a profile's samples are keyed by, when a
 * key is too wide to share a uint64_t with another. */
static inline uint64_t ctrace__an_number(u64map *m, uint64_t key) {
  bool fresh;
  uint64_t *v = ctrace__map_put(m, key, &fresh);
  if (!v) return 0;
  if (fresh) *v = m->len;
  return *v;
}

typedef struct an_interval {
  int64_t begin, end;
} an_interval;

/* The filter: per goroutine, sorted non-overlapping intervals of time to
 * keep. all: no filter (every goroutine, all of its time). ids_only: for
 * a profile that learns the goroutines' lifetimes and regions in its own
 * pass, no intervals: the goroutines a --goroutine filter keeps, by id
 * (members), and for --region the goroutines in a region begun before the
 * trace (before: g -> how many of its ends have no begin). */
typedef struct an_filter {
  bool all, ids_only;
  bool by_name;       /* --goroutine */
  const char *region; /* --region's type, or NULL */
  uint64_t regions; /* of --region's type, begun or ended */
  u64map before;
  u64map index; /* g -> index + 1 into per */
  struct an_gintervals {
    an_interval *iv;
    size_t n, cap;
  } *per;
  size_t nper, capper;
  u64set members;
  int64_t trace_end; /* the last event's time */
} an_filter;

/* Reads the trace through (from its start) if opt asks for a filter;
 * ids_only: no intervals (above). 0, or -1 with err set. */
int ctrace__an_filter_build(ctrace_reader *r, const ctrace_profile_options *opt, bool ids_only, an_filter *f,
                            char *err, size_t errlen);
/* --region in a profile's own pass (an_filter.ids_only): Go's filter
 * (pprofMatchingRegions) keeps the outermost regions of the type, from
 * their begins (the trace's start for one begun before it) to their ends
 * (or their goroutine's, or the trace's), and counts an interval's overlap
 * with them. A goroutine's regions nest, so that is the time it spends
 * with one open at least: an_inregion_at gives it from the trace's start
 * to ts, and an interval counts its difference between its two ends. */
typedef struct an_inregion {
  int64_t depth; /* regions of the type open (from before: those begun before the trace) */
  int64_t in, mark; /* time in them up to mark */
} an_inregion;

static inline int64_t ctrace__an_inregion_at(const an_inregion *x, int64_t ts) {
  return x->in + (x->depth > 0 ? ts - x->mark : 0);
}

/* x's regions open become depth at ts. */
static inline void ctrace__an_inregion_to(an_inregion *x, int64_t ts, int64_t depth) {
  x->in = ctrace__an_inregion_at(x, ts);
  x->mark = ts;
  x->depth = depth < 0 ? 0 : depth; /* an end after its goroutine's ended them */
}

/* What ev changes of its goroutine's regions of type region, if x is its
 * record: a begin or an end of one, or the goroutine's end (GoEnd, GoStop),
 * which ends those still open. */
void ctrace__an_inregion_observe(an_inregion *x, const ctrace_event *ev, const char *region);
/* Whether ev is an event ctrace__an_inregion_observe reads. */
bool ctrace__an_inregion_event(const ctrace_event *ev, const char *region);
/* The regions of goroutine g begun before the trace (filter.c's before). */
int64_t ctrace__an_inregion_before(const an_filter *f, uint64_t g);

/* Nanoseconds of [begin, end) that goroutine g spends inside the filter's
 * intervals: Go's pprofOverlappingDuration. */
int64_t ctrace__an_overlap(const an_filter *f, uint64_t g, int64_t begin, int64_t end);
void ctrace__an_filter_free(an_filter *f);

/* ctrace__an_overlap in a profile's own pass, on a Go 1.22+ trace (lives.c):
 * the goroutines' lifetimes (filter.c's rules: from the first GoStart, 0
 * if none, to the last GoEnd or GoStop, or the trace's end) and their time
 * in --region's regions, learned as the pass goes and forgotten once a
 * goroutine has ended for good, with the filter's pass in ids_only mode
 * (an_filter). An interval whose goroutine's lifetime is not known yet is
 * kept aside with an item of the caller's and counted later
 * (an_lives_count), so that the values are ctrace__an_overlap's to the
 * nanosecond. */

/* Counts an item kept aside, d ns (> 0) of its interval kept, once its
 * goroutine's lifetime is known. -1 if out of memory. It may not call the
 * an_lives functions. */
typedef int (*an_lives_count)(void *ctx, const void *item, int64_t d);

typedef struct an_life {
  int64_t start, end; /* first GoStart (0 if none yet), GoEnd/GoStop (-1 if none yet) */
  bool member;        /* one filter.c keeps: seen as it sees goroutines */
  char *d;            /* intervals kept aside, each with the caller's item */
  size_t nd, capd;
  an_inregion reg; /* --region */
} an_life;

typedef struct an_lives {
  u64map index; /* g -> index + 1 into l */
  u64cache recent; /* index's last keys */
  an_life *l;
  size_t n, cap;
  u64free freed; /* the slots of goroutines that ended */
  const u64set *only; /* a --goroutine filter's goroutines (filter.c), or NULL: all */
  const char *region; /* --region's type, or NULL */
  const an_filter *f; /* filter.c's pass, for the regions begun before the trace */
  size_t members;     /* goroutines seen that the filter keeps */
  int64_t last;       /* the time the pass has reached */
  size_t item;        /* what is kept aside with an interval: its size, ... */
  an_lives_count count; /* ... how it counts, ... */
  void *ctx;            /* ... and with what */
} an_lives;

/* l for filter f (an ids_only one, or none: every goroutine's lifetime). */
void ctrace__an_lives_init(an_lives *l, const an_filter *f);
/* What the caller keeps aside with an interval (item bytes) and counts
 * with count(ctx, ...). */
void ctrace__an_lives_keep(an_lives *l, size_t item, an_lives_count count, void *ctx);
/* What filter.c's pass learns of goroutines from ev, every event of the
 * pass in turn (its rules, the same events). False if out of memory. */
bool ctrace__an_lives_observe(an_lives *l, const ctrace_event *ev);
/* The same for a go 1.25+ trace read as transitions
 * (ctrace__model_transitions, Go 1.27's summary): a goroutine is one from
 * its first transition that changes its state, starts at its first into
 * running, and ends at one to not existing or to waiting "forever". */
bool ctrace__an_lives_transition(an_lives *l, const ctrace_event *ev);
/* --region: g's time in regions up to ts (an_inregion), for an interval
 * that begins there (clip's in_region); 0 without --region or l. */
int64_t ctrace__an_lives_region_at(an_lives *l, uint64_t g, int64_t ts);
/* Goroutine g's interval [begin, end], end no later than the pass has
 * reached (last), and in_region its region_at at begin: 0 with *d its
 * time kept (Go's overlap, 0 for none), or 1 with *d 0 when it is kept
 * aside with the item to count later; -1 if out of memory. */
int ctrace__an_lives_clip(an_lives *l, uint64_t g, int64_t begin, int64_t end, int64_t in_region,
                          const void *item, int64_t *d);
/* g has ended for good (Go never gives its id again): what is kept aside
 * of it counts, and it is forgotten. 0 for l NULL; -1 if out of memory. */
int ctrace__an_lives_gone(an_lives *l, uint64_t g);
/* The pass has ended: what is kept aside counts. */
int ctrace__an_lives_end(an_lives *l);
void ctrace__an_lives_free(an_lives *l);

/* The start function of goroutine g as Go names it: the first frame of the
 * stack its creation gives it ("" if unknown). */
const char *ctrace__an_start_func(const ctrace_reader *r, uint64_t create_stack);
/* The outermost frame's function of a stack ("" if none): a goroutine's
 * name in Go 1.23's summary, from the first stack a change of its state
 * carries. */
const char *ctrace__an_root_func(const ctrace_reader *r, uint64_t stack);
/* Names a goroutine (*name, "" until named) from a stack of its own, as
 * Go 1.23's summary does from the first one, but for a thread whose start
 * function is a language runtime's start routine (Rust's std::thread,
 * C++'s std::thread): its name is then the user's function the routine
 * calls, from the first stack that goes past the routines (filter.c).
 * *settled (false to begin) is set once no later stack can change it. */
void ctrace__an_name_from(const ctrace_reader *r, uint64_t stack, const char **name, bool *settled);
/* Strings an analysis keeps past the event that gave them (a log's
 * message lives until the next event), until ctrace__an_kept_free. */
typedef struct an_kept {
  char **s;
  size_t n, cap;
} an_kept;
void ctrace__an_kept_free(an_kept *k);

/* The thread name an event gives goroutine *g: the label of a
 * GoStartLabel or CTRACE__MODEL_GoLabel ("" for a name taken away), which is
 * how ctrace writes a thread's name at its G's starts (*g: the event's);
 * or a "ctrace.thread" log, "g=N name=NAME", which ctrace writes when a
 * thread names another, whose G may not start again (*g: N; the name
 * kept in k). NULL for any other event (or out of memory), and for the
 * labels Go's runtime gives its GC workers ("GC (dedicated)", ...), which
 * name no thread. Valid while the reader is open. */
const char *ctrace__an_thread_name(const ctrace_event *ev, uint64_t *g, an_kept *k);

/* The command line a trace's process goes by, from its ctrace.process
 * logs (src/runtime/identity.c): one a generation, where the process may
 * have retitled itself since the first (nginx's workers write their role
 * over their arguments, as ps then shows), and one as it exits, whose
 * title (nginx's "worker process is shutting down") counts only where no
 * generation's gave another than the first. */
typedef struct an_title {
  char first[256], now[256]; /* now: the one it goes by */
  bool seen, retitled;       /* a log met; a generation's gave another */
} an_title;
/* Takes ev if it is such a log: true if now changed (not at the first). */
bool ctrace__an_title_note(an_title *t, const ctrace_event *ev);
/* A trace ctrace wrote has its process's log among its first this many
 * events (the threads' and goroutines' states come before it). */
enum { AN_LOG_WITHIN = 100000 };

/* -t cpu (cpu.c): hz, the sampling rate, or 0 to estimate it. The
 * filter is f's, or where l is not NULL l's (an ids_only f). */
int ctrace__an_cpu(ctrace_reader *r, const an_filter *f, an_lives *l, int hz, ctrace_profile *p, char *err,
                   size_t errlen);

/* -t wall (wall.c). */
int ctrace__an_wall(ctrace_reader *r, const an_filter *f, ctrace_profile *p, char *err,
                    size_t errlen);

/* Who kept them waiting (waker.c). */

/* The waker of the wait a GoUnblock ev ends: the goroutine that wrote it,
 * or 0 when none is known (written with no goroutine running, or by the
 * woken one itself). */
uint64_t ctrace__an_waker_of(const ctrace_event *ev);

/* Why the wait a GoUnblock ev ends ended by itself, when the trace says:
 * `ctrace run` ends a wait in poll, select or epoll that no thread of the
 * process ended with a GoUnblock of the thread's own whose one frame is a
 * function of the shim named for the reason, ctrace_wait_REASON
 * (src/preload/poll.c): REASON ("timeout", "signal", "timer", "outside"),
 * a string of the reader's. NULL for a wait with a waker, or none told. */
const char *ctrace__an_why(const ctrace_reader *r, const ctrace_event *ev);

/* The waits GoUnblocks ended, for ctrace stats, gathered as the trace is
 * read: one record per (woken goroutine, waker goroutine, why), with the
 * count, total and a sketch of their times (sketch.h), not every wait, so
 * that memory does not grow with the trace's length. The goroutines
 * (waker 0: none known), why it ended by itself (ctrace__an_why), then,
 * once the pass has named every goroutine, their start functions
 * (waker_name NULL: none known) and their threads' names ("" none). */
typedef struct an_wait {
  /* Each a goroutine's id, or (named & 1 for woken, & 2 for waker) a
   * pointer to its start function, its names being final (stats.c's side). */
  uint64_t woken, waker;
  unsigned named;
  const char *woken_name, *waker_name, *why;
  const char *woken_thread, *waker_thread;
  int64_t total;
  an_sketch d; /* the times: count d.n, max d.max */
} an_wait;

typedef struct an_waits {
  u64map ix; /* a hash of the three keys (then + 1, + 2 ... where taken) -> index + 1 */
  an_wait *w;
  size_t n, cap;
} an_waits;

/* Adds a wait of d ns. False when out of memory. */
bool ctrace__an_wait_add(an_waits *t, uint64_t woken, uint64_t waker, unsigned named, const char *why,
                         int64_t d);
void ctrace__an_waits_free(an_waits *t);

/* The table of ctrace stats from the named records of t (sorted in
 * place): a row per (woken_name, woken_thread, waker_name, waker_thread,
 * why), by total time, largest first; p50 and p99 within the sketch's
 * bound. 0, or -1 when out of memory. */
int ctrace__an_waker_table(an_waits *t, ctrace_waker_stats **out, size_t *nout);

/* -t waker; the filter as ctrace__an_cpu's. */
int ctrace__an_waker(ctrace_reader *r, const an_filter *f, an_lives *l, ctrace_profile *p, char *err,
                     size_t errlen);

/* Minimum mutator utilization as Go 1.23's /mmu page computes it (mmu.c):
 * fed every event of a pass, then ended at the last event's time. Flags
 * as Go's UtilFlags (its system view only); the page's default counts
 * stop-the-world, background mark workers and mark assists. */
enum { AN_MMU_STW = 1, AN_MMU_BACKGROUND = 2, AN_MMU_ASSIST = 4, AN_MMU_SWEEP = 8 };
#define AN_MMU_DEFAULT (AN_MMU_STW | AN_MMU_BACKGROUND | AN_MMU_ASSIST)
typedef struct an_mmu an_mmu;
an_mmu *ctrace__an_mmu_new(const ctrace_trace_info *info, unsigned flags); /* NULL: out of memory */
bool ctrace__an_mmu_event(an_mmu *m, const ctrace_event *ev);            /* false: out of memory */
bool ctrace__an_mmu_end(an_mmu *m, int64_t last);
/* The MMU over windows of w, or -1 if there is no utilization (Go shows
 * none); *span: the utilization's length, which a longer window is cut to. */
double ctrace__an_mmu(const an_mmu *m, int64_t w, int64_t *span);
void ctrace__an_mmu_free(an_mmu *m);

#endif
