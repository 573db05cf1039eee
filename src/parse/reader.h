/* Internals of the reader (src/parse/). One folder per format family,
 * and what joins them:
 *
 *   classic/  Go's formats before 1.22 (go 1.5 to 1.21), in passes over
 *             the mapped file:
 *     scan.c    pass 1, in file order: framing of every event (Go's
 *               readTrace), argument counts and stacks (parseEvents), the
 *               string dictionary, the frequency, and the batch index.
 *     order.c   the ordered stream: per-P cursors decode events lazily
 *               from the mapped file and a frontier merge orders them on
 *               per-goroutine sequence numbers (1.7 and later), or a sort
 *               on global sequence numbers (1.5); syscall exit times
 *               applied.
 *     state.c   Go's postProcessTrace: the goroutine/P/GC/region state
 *               machine, the fake Ps and the links between events.
 *     format_event.c  an event as `go tool trace -d` prints it.
 *   go122/    Go's current format (go 1.22 and later), one generation at
 *             a time (go122.h).
 *   reader.c  the public API over both; check runs the ordering and state
 *             passes to the end once, then next() replays them.
 *   model.c   the one event model the analyses and exporters read, for
 *             every format (model.h).
 */
#ifndef CTRACE_PARSE_READER_H
#define CTRACE_PARSE_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctrace/parse.h"
#include "map.h"
#include "go122/go122.h"

#define CTRACE__MAX_ARGS 8 /* values kept per event; more only in EvStack */

/* One event as decoded from the file. */
typedef struct pev {
  uint64_t off;
  int64_t ts;  /* ticks until the conversion to ns */
  int64_t seq; /* 1.5: global sequence number */
  uint8_t type;
  int64_t p;
  uint64_t g;
  uint64_t args[3];
  uint64_t stk;
  const char *sargs[2];
  uint64_t slen[2];
  const uint8_t *msg; /* a UserLog's message, in the file */
  uint64_t msglen;
} pev;

/* A goroutine's place in Go's ordering: sequence number and status. */
typedef struct gstate {
  uint64_t seq;
  int status;
} gstate;

/* A run of one P's events: from start (just after the EvBatch header) up
 * to end (the next EvBatch, or the end of the file). */
typedef struct batch {
  uint64_t start, end;
  int64_t ticks, seq;
} batch;

typedef struct pqueue {
  int64_t p;
  uint32_t *batches; /* indices into r->batches, in file order */
  uint32_t nbatches, cap;
  /* cursor */
  uint32_t bi;
  uint64_t off;
  int64_t last_ts, last_seq;
  uint64_t last_g;
  bool has_head, in_frontier;
  pev head;
  uint64_t tg; /* the head's transition, taken before a Local is renamed */
  gstate tinit, tnext;
  uint64_t remaining; /* events left */
} pqueue;

typedef struct stack_rec {
  ctrace_frame *frames;
  uint32_t n;
} stack_rec;

/* Ordering state (order.c). */

typedef struct frontier_item {
  uint32_t q;     /* pqueue index */
  uint64_t order; /* rank among equal times (as int64_t) */
} frontier_item;

typedef struct order_state {
  u64map gs;          /* g -> gstate index */
  gstate *gstates;
  uint64_t ngstates, capgstates;
  frontier_item *front; /* sorted on (ticks, rank) */
  uint32_t nfront, capfront;
  int64_t rank_hi, rank_lo;
  uint32_t *due; /* scratch: queues to look at this round */
  u64map waiting;     /* g -> head of list of queues waiting on it */
  uint32_t *wait_next; /* per queue: next queue waiting on the same g */
  uint32_t ready_head; /* queues to look at, a stack through ready_next */
  uint32_t *ready_next;
  bool *queued;
  int64_t last_ts;    /* merged order, before syscall exit times */
  bool unsorted;      /* the merge went back in time */
  uint64_t unsorted_off;
  uint64_t pending;   /* events not yet merged */
  /* syscall exit times: a buffer of events sorted by final ts */
  pev *buf;
  uint64_t bhead, blen, bcap;
  u64map sysblock;    /* g -> last GoSysBlock/GoInSyscall ticks + 1 */
  u64map exits_left;  /* g -> exits with a real time still to come */
  bool sys_error;     /* "stray syscall exit" or time order at an exit */
  char sys_msg[128];
  uint64_t sys_off;
  /* min-heap of (block ticks, g) of goroutines whose exit may still move
   * an event back: see exit_floor() */
  uint64_t (*heap)[2];
  uint64_t nheap, capheap;
  /* 1.5: every event, sorted */
  pev *all;
  uint64_t nall, iall;
  uint32_t profile_q; /* index of the CPU samples' queue, or UINT32_MAX */
  uint64_t replay_at; /* replaying r->merge_log: next entry */
} order_state;

/* State machine (state.c). */
typedef struct gdesc {
  int state;
  uint64_t ev, ev_start, ev_markassist; /* seq + 1, 0 none */
  uint64_t create_stack;
  uint8_t ev_type; /* type of ev */
  bool has_create;
  uint32_t regions; /* index of the G's region stack in rstacks, +1 */
} gdesc;

typedef struct pdesc {
  bool running;
  uint64_t g;
  uint64_t ev_stw, ev_sweep; /* seq + 1 */
} pdesc;

/* An open region: its start event, for the link and Go's message. */
typedef struct region {
  ctrace_event start;
} region;

typedef struct rstack {
  region *r;
  uint32_t n, cap;
} rstack;

typedef struct state_state {
  u64map gs, ps;
  u64map tasks; /* task id -> index in task_ev + 1 */
  ctrace_event *task_ev; /* creations of live tasks, for links and Go's message */
  uint64_t ntask, captask, task_free; /* task_free: a free list through .seq */
  gdesc *g;
  uint64_t ng, capg;
  pdesc *p;
  uint64_t np, capp;
  rstack *rs;
  uint32_t nrs, caprs;
  uint64_t ev_gc, ev_stw;
  /* futile wakeups (Go's removeFutile): what to drop, by event offset */
  u64map futile_set;
} state_state;

struct ctrace_reader {
  const uint8_t *data;
  size_t len;
  bool mapped, owned; /* mmap'ed, or read into malloc'ed memory */
  int ver;
  int64_t ticks_per_sec;
  char *arena; /* strings: NUL-terminated copies */
  u64map strings; /* id -> offset in arena + 1 */
  size_t arena_len, arena_cap;
  u64map stack_ids; /* id -> index in stacks */
  stack_rec *stacks;
  size_t nstacks, capstacks;
  u64map ps; /* p -> index in pq */
  pqueue *pq;
  uint32_t npq, cappq;
  batch *batches;
  uint32_t nbatches, capbatches;
  pev *samples; /* CPU samples (1.19), ProfileP's own batch */
  uint64_t nsamples, capsamples;
  u64map timer_gs;
  u64map exits_with_ts; /* g -> GoSysExit events with a real time */
  uint64_t nfutile;
  uint64_t nevents; /* events in batches */
  /* after check */
  bool checked;
  /* Go 1.22+: the reader checks what it reads, so a read from a rewind to
   * the end is a check (ctrace__g2_read, reader.c): whole says the pass so far began
   * at a rewind, and pass_n and pass_freq are check_g2's counts. Its
   * failure is the check's, the file being the same: kept in check_err. */
  bool pass_whole, check_failed;
  uint64_t pass_n;
  double pass_freq;
  ctrace_parse_error check_err;
  int64_t min_ts; /* ticks of the first event of the final order */
  bool have_base;
  ctrace_trace_info info;
  order_state os;
  state_state ss;
  uint64_t out_seq;
  /* The merge's decisions, recorded by check: the queue each event came
   * from, in merge order. Replays then skip the frontier. 2 bytes an event;
   * NULL when there are too many Ps for that, or it could not be had. */
  uint16_t *merge_log;
  uint64_t nlog, caplog;
  bool recording, log_failed;
  char *msgbuf; /* the last UserLog message, NUL-terminated */
  size_t msgcap;
  void (*progress)(void *, uint64_t, uint64_t);
  void *progress_arg;
  uint64_t progress_next;
  g2reader *g2; /* Go 1.22+ traces: the streaming reader (go122/) */
  /* Go 1.22+: the thread reading g2 ahead of ctrace_reader_next's caller
   * (ahead.c), from a pass's first event to its end or the next rewind. */
  struct ctrace__ahead *ahead;
  /* A Go 1.22+ trace read cut short (ctrace_reader_allow_cut): planned
   * once, before the first check or read (ctrace__cut_plan, salvage.c).
   * cut_known: the plan alone found the cut (a torn batch, go 1.26's
   * missing end), g2 then reads the first cut.keep bytes; otherwise
   * g2->cut_at names the last generation begun, left out only if it does
   * not read (g2->cut_hit). */
  bool allow_cut, cut_planned, cut_known;
  ctrace_salvage_info cut;
  /* Go 1.22+: where each generation begins (ctrace_reader_generations),
   * found once: ngens of them; gen_starts their times, as handed out. */
  bool gens_found;
  g2genpos *gens;
  int64_t *gen_starts;
  size_t ngens;
  /* The event model's state kept with the reader (model.c: its classic
   * view of a Go 1.22+ trace, whose stacks must outlive the reader's
   * generations), freed by ctrace_reader_close. */
  void *model;
  void (*model_free)(void *);
};

/* Go 1.22+: the next event of r->g2, counting for the check while the
 * pass is whole (reader.c): 1, 0 at the end, -1 with *err. */
int ctrace__g2_read(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err);

/* ahead.c: r->g2 read by a thread of its own from where it is (nothing of
 * the pass read yet), handed out by ctrace__ahead_next: the next event,
 * held until the next call, or NULL at the end or where the reader failed
 * (r->g2 says which, once NULL was returned). Start returns NULL if no
 * thread could be had; stop (NULL allowed) ends the thread wherever it is. */
struct ctrace__ahead *ctrace__ahead_start(ctrace_reader *r);
const ctrace_event *ctrace__ahead_next(struct ctrace__ahead *a);

void ctrace__ahead_stop(struct ctrace__ahead *a);

/* Writes an error into err (printf-style), and its code: CTRACE_ENOMEM
 * for "out of memory", else CTRACE_EFORMAT; returns -1. */
int ctrace__perr(ctrace_parse_error *err, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a public function returns for rc, its inner function's result: a
 * failure (-1 inside the reader) becomes the code noted in err. */
static inline int ctrace__pfail(int rc, const ctrace_parse_error *err) {
  return rc >= 0 ? rc : err && err->code < 0 ? err->code : CTRACE_EFORMAT;
}

/* Decodes the event at *off (already framed by the scan); fills v with up
 * to CTRACE__MAX_ARGS values and *n with their count, *str and *slen with a
 * UserLog's trailing string. Returns the type; String, Stack and the like
 * are returned too, for the caller to skip. */
uint8_t ctrace__decode(const ctrace_reader *r, uint64_t *off, uint64_t *v, uint32_t *n,
                       const uint8_t **str, uint64_t *slen);
int ctrace__header(ctrace_reader *r, ctrace_parse_error *err);
int ctrace__scan(ctrace_reader *r, ctrace_parse_error *err);
const char *ctrace__string(const ctrace_reader *r, uint64_t id);
const char *ctrace__string_n(const ctrace_reader *r, uint64_t id, uint64_t *len);
/* Number of values an event of type t must have in version ver (Go's
 * argNum), counting the timestamp and sequence. */
uint32_t ctrace__argnum(uint8_t t, int ver);

void ctrace__order_init(ctrace_reader *r);
void ctrace__order_free(ctrace_reader *r);
/* The next event in final order: 1, 0 at the end, -1 with *err. */
int ctrace__order_next(ctrace_reader *r, pev *ev, ctrace_parse_error *err);

/* A Go 1.22+ event as `go tool trace -d=1` (Go 1.23, go 1023) or
 * `-d=parsed` (Go 1.27, go 1027) prints it. */
int ctrace__g2_format(const ctrace_event *ev, int go, char *buf, size_t size);

void ctrace__state_init(ctrace_reader *r);
void ctrace__state_free(ctrace_reader *r);
/* Applies ev (seq is its position) to the state machine: fake Ps, links.
 * 0, or -1 with *err. */
int ctrace__state_apply(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err);

/* Plans the reading of a trace that may be cut short (salvage.c): 0, or
 * -1 with *err if nothing whole is left to read. */
int ctrace__cut_plan(ctrace_reader *r, ctrace_parse_error *err);

/* Go's removeFutile, as a pass over the ordered stream that records in
 * r->ss.futile_set the offsets of the events later passes drop. */
void *ctrace__futile_begin(void);
void ctrace__futile_observe(ctrace_reader *r, void *st, const pev *e);
void ctrace__futile_end(void *st);

#endif
