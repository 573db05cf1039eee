/* Internals of the reader of Go's current trace format (headers go 1.22,
 * 1.23, 1.25 and 1.26; include/ctrace/format_go122.h). It streams, one
 * generation at a time, as Go's trace.Reader does: Go 1.23's for the
 * headers 1.22 and 1.23, Go 1.27's for 1.25 and 1.26 (which puts a Sync
 * before each generation and one at the end, where Go 1.23 put one after
 * each generation):
 *
 *   gen.c     a generation: batch framing (Go's readBatch), the strings,
 *             stacks, frequency (or sync) and CPU samples sections, and
 *             the event batches indexed per thread (M) as ranges of the
 *             file; a generation ends where the next one's first batch
 *             begins, or (go 1.26) at its EndOfGeneration.
 *   order.c   Go's ordering: the goroutine/P/M/GC/task/region state that
 *             decides whether an event can happen next, and rejects what
 *             cannot happen at all; it queues the events it lets through.
 *   stream.c  the frontier of per-M cursors (a min-heap on time, as Go
 *             keeps it), CPU samples merged in, a Sync after each
 *             generation, Go's time fix-ups, and the public events.
 *   format.c  Event.String, which `go tool trace -d=1` (Go 1.23) and
 *             `-d=parsed` (Go 1.27) print, in either's words.
 *   salvage.c what of a trace cut short still reads: whole generations
 *             (ctrace_reader_salvage).
 *
 * Memory is one generation's tables and batch index plus the state of live
 * goroutines, Ps, threads and tasks; the file itself is mapped, and the
 * pages of each batch read are handed back (MADV_DONTNEED), so peak
 * memory does not grow with the number of generations.
 */
#ifndef CTRACE_PARSE_GO122_H
#define CTRACE_PARSE_GO122_H

#include <stdbool.h>
#include <stdint.h>

#include "ctrace/parse.h"
#include "../map.h"

#define G2_NONE INT64_C(-1) /* Go's NoThread, NoProc, NoGoroutine */
#define G2_NO_TASK UINT64_MAX

/* An event as Go's ordering sees it: type, time (ns), the arguments after
 * the time diff (and room for what the ordering adds), the context it was
 * ordered in, and its offset in the file. */
typedef struct g2ev {
  uint64_t args[5];
  int64_t time;
  int64_t m, p, g;
  uint64_t off;
  uint8_t typ;
  const char *xstr; /* a task end's type, kept by the ordering */
  uint64_t xlen;
} g2ev;

/* One batch of events of one thread: its bytes in the file. */
typedef struct g2batch {
  uint64_t off, end; /* data, after the header */
  uint64_t time;     /* the header's base time, in ticks */
} g2batch;

/* One thread's batches in a generation, and the cursor over them (Go's
 * batchCursor). */
typedef struct g2mq {
  int64_t m;
  g2batch *b;
  uint32_t nb, capb;
  uint32_t bi;     /* next batch */
  uint64_t off;    /* next byte in batch bi */
  uint64_t end;    /* batch bi's end; 0 before the first batch and after the last */
  int64_t last_ts; /* ns; 0 means "take the batch's base", as in Go */
  g2ev ev;         /* the cursor's event */
} g2mq;

typedef struct g2sample {
  int64_t time;
  int64_t m, p, g;
  uint64_t stack;
  uint64_t off;
} g2sample;

/* A string of the generation: where its bytes are in the arena. */
typedef struct g2str {
  uint64_t at, len;
} g2str;

typedef struct g2pcframe {
  uint64_t func, file, line; /* string ids */
} g2pcframe;

typedef struct g2stack {
  uint64_t first; /* index of its first pc in pcs, then of its first frame */
  uint32_t n;
} g2stack;

/* A range in flight on a G or a P (Go's rangeType). */
typedef struct g2range {
  uint8_t typ;
  uint64_t desc;
} g2range;

typedef struct g2ranges {
  g2range *r;
  uint32_t n, cap;
} g2ranges;

/* A region's or task's name: in its generation's string arena while that
 * generation is read (no copy per event), its own copy (owned) once the
 * generation is let go of (ctrace__g2_order_adopt). */
typedef struct g2name {
  const char *s;
  uint64_t len;
  bool owned;
} g2name;

typedef struct g2region {
  uint64_t task;
  g2name name;
} g2region;

typedef struct g2g {
  uint8_t status;
  uint64_t gen, seq;
  g2region *regions;
  uint32_t nregions, capregions;
  g2ranges ranges;
} g2g;

typedef struct g2p {
  uint8_t status;
  uint64_t gen, seq;
  g2ranges ranges;
} g2p;

typedef struct g2m {
  int64_t g, p;
} g2m;

typedef struct g2task {
  g2name name;
  uint64_t parent;
} g2task;

/* Go's ordering (order.go): persistent across generations. */
typedef struct g2order {
  u64map gs, ps, ms, tasks; /* id -> index + 1 into the pools */
  u64cache gc, pc, mc;      /* the same, for ids met lately */
  g2g *g;
  uint64_t ng, capg, gfree; /* a free list through .seq */
  g2p *p;
  uint64_t np, capp;
  g2m *m;
  uint64_t nm, capm;
  g2task *t;
  uint64_t nt, capt, tfree;
  uint64_t gc_seq;
  uint8_t gc_state; /* 0 undetermined, 1 not running, 2 running */
  uint64_t initial_gen;
  g2ev queue[4]; /* what one Advance lets through: at most 3 events */
  uint32_t qhead, qlen;
} g2order;

/* A generation's tables and batches (Go's generation and evTable). */
typedef struct g2gen {
  uint64_t gen;
  uint64_t start, end; /* its batches' span in the file */
  double freq;         /* ns per tick; 0 until the frequency batch */
  bool have_freq;
  uint64_t min_ts;     /* the earliest batch's time, in ticks (Go's minTs) */
  /* The sync batch's clock snapshot (go 1.25+): the trace's clock in
   * ticks, the monotonic clock and the wall clock at one moment. */
  bool have_snap;
  uint64_t snap_time, snap_mono, snap_sec, snap_nsec;
  int64_t start_ns, snap_ns; /* min_ts and snap_time in ns, once complete */
  char *arena; /* string bytes, each NUL-terminated */
  uint64_t arena_len, arena_cap;
  u64map strings; /* id -> index + 1 into str */
  g2str *str;
  uint64_t nstr, capstr;
  /* The same by id (index + 1 into str, 0 absent), of nstr_by_id
   * entries: from the first string while the ids are dense
   * (gen.c's index_string), or once the generation is complete if they
   * are dense enough then (strings_by_id); nstr_by_id 0: look ids up in
   * strings. */
  uint32_t *str_by_id;
  uint64_t nstr_by_id;
  uint64_t str_ids_hint; /* the last generation's nstr_by_id */
  u64map stacks; /* id -> index + 1 into stk */
  u64cache stk_cache; /* the same, for stacks met lately */
  g2stack *stk;
  uint64_t nstk, capstk;
  uint64_t *pcs; /* every stack's pcs, in order */
  uint64_t npcs, cappcs;
  u64map pcmap; /* pc -> index + 1 into pcf: the first frame seen for it */
  g2pcframe *pcf;
  uint64_t npcf, cappcf;
  ctrace_frame *frames; /* npcs frames, resolved once the generation is in */
  g2mq *mq;
  uint32_t nmq, capmq;
  u64map mq_of; /* m -> index + 1 into mq */
  g2sample *samples;
  uint64_t nsamples, capsamples, isample;
  char **extras; /* strings the ordering handed over (task types) */
  uint64_t nextras, capextras;
} g2gen;

/* Where a generation begins: its first batch in the file, and the time
 * (ns, as events') of its earliest batch. */
typedef struct g2genpos {
  uint64_t off;
  int64_t start_ns;
} g2genpos;

typedef struct g2reader {
  const uint8_t *data;
  uint64_t len;
  bool mapped;
  int ver;              /* 1022, 1023, 1025 or 1026 */
  uint64_t off;         /* next batch to read */
  bool have_spill;      /* a batch of the next generation was read */
  uint64_t spill_off;   /* its offset */
  uint64_t spill_gen;
  bool spill_err;       /* an error after the last generation's batches */
  bool spill_eof;       /* ... that Go returns as io.EOF: a clean end */
  bool spill_err_sync;  /* go 1.25+: the Sync before it was given */
  ctrace_parse_error spill_error;
  uint64_t syncs;       /* Sync events given (Go's Sync.N) */
  /* The first clock snapshot read (go 1.25+), for ctrace_reader_clock. */
  bool have_clock;
  ctrace_clock_snapshot clock;
  bool have_gen, emitted_sync, done, failed;
  ctrace_parse_error error; /* once failed, every read returns it */
  g2gen gen;
  g2order order;
  /* The frontier: a heap of cursors (indices into gen.mq) on the time of
   * their events, kept beside each index so that a comparison reads the
   * heap's own array, not a cursor elsewhere; set wherever a cursor's
   * event changes (install, try_advance). */
  struct g2front {
    int64_t time;
    uint32_t i;
  } *front;
  uint32_t nfront, capfront;
  int64_t last_ts;
  uint64_t out_seq;
  /* counts for ctrace_trace_info */
  uint64_t ngens;
  u64set seen_g, seen_p, seen_m;
  /* Ids already in the seen_ maps (value 1): most events' M, P and G
   * were seen lately, and then need no insertion. G2_NONE is in them
   * too, though never in the maps (note, in stream.c). */
  u64cache noted_m, noted_p, noted_g;
  int64_t first_ts;
  bool have_first;
  uint64_t batches_done; /* batches read to their end, for trimming */
  /* A trace that may be cut short (ctrace_reader_allow_cut): the offset
   * of the last generation begun, which ends the trace cleanly, and is
   * left out, if it does not read as a generation (0: no such rule).
   * cut_hit says it did not (kept across rewinds: the file is the same),
   * cut_error why. */
  uint64_t cut_at;
  bool cut_hit;
  /* The stream ended at an io.EOF of Go's from inside a section (gen.c):
   * a clean end that any longer file reads the same way, so a cut after
   * it changes nothing (ctrace_reader_cut). Kept across rewinds, as
   * cut_hit: the file is the same. */
  bool eof_inside;
  ctrace_parse_error cut_error;
  /* A trace that may be cut short, and seems cut inside its first
   * generation (first_cut_error says where): read as Go reads it, which
   * may still give whole generations (a torn header Go takes for the
   * end); if it gives none, or fails, that is the error. */
  bool first_cut;
  ctrace_parse_error first_cut_error;
  /* An index pass (ctrace__g2_gen_starts): each generation read and
   * installed, as by any pass, for its place alone (where its batches
   * begin in the file, and when), added to *gens; none of its events is
   * ordered. */
  g2genpos **gens;
  uint64_t ngens_index, capgens;
  /* Called before a generation is read, which frees the last one's
   * tables: a reader ahead of its caller (ahead.c) waits there until the
   * caller is done with them. NULL: none. */
  void (*before_gen)(void *arg);
  void *before_gen_arg;
} g2reader;

/* gen.c */
/* Reads the next generation (Go's readGeneration): 1 with r->gen set, 0
 * at the end of the trace, -1 with *err. */
int ctrace__g2_read_gen(g2reader *r, ctrace_parse_error *err);
void ctrace__g2_gen_free(g2gen *g);
/* The string of an id in the generation: NULL if absent; id 0 is "". */
const char *ctrace__g2_string(const g2gen *g, uint64_t id, uint64_t *len);
/* The frames of a stack id: false if absent; id 0 has none. */
bool ctrace__g2_stack(const g2gen *g, uint64_t id, const ctrace_frame **f, uint32_t *n);
/* Decodes the event at the cursor of mq (Go's batchCursor.nextEvent):
 * 1, 0 when its batches are done, -1 with *err. */
int ctrace__g2_cursor_next(g2reader *r, g2mq *q, ctrace_parse_error *err);
/* Gives the pages of a mapped trace from the one where from falls up to
 * the one where to falls (kept: it is read next) back to the kernel
 * (MADV_DONTNEED): they are read again from the file if touched. */
void ctrace__g2_release(const g2reader *r, uint64_t from, uint64_t to);
/* The same for a reader that goes forward, done with [from, to): also the
 * pages faults since mapped again before from (gen.c). */
void ctrace__g2_release_read(const g2reader *r, uint64_t from, uint64_t to);

/* order.c */
void ctrace__g2_order_init(g2order *o);
void ctrace__g2_order_free(g2order *o);
/* Copies the names live regions and tasks borrow from the generation
 * about to be freed: false when out of memory. */
bool ctrace__g2_order_adopt(g2order *o);
/* Go's ordering.Advance: 1 if ev happened (its events queued), 0 if it
 * cannot happen yet (ev left as it was), -1 with *err if it cannot happen
 * at all. What the ordering adds (old states, a task's parent and type)
 * is written into ev. */
int ctrace__g2_advance(g2reader *r, g2ev *ev, ctrace_parse_error *err);

/* stream.c */
g2reader *ctrace__g2_new(const uint8_t *data, uint64_t len, bool mapped, int ver);
void ctrace__g2_free(g2reader *r);
void ctrace__g2_rewind(g2reader *r);
/* The next event: 1 with *ev (ev NULL: checked and counted, not made), 0 at
 * the end, -1 with *err. */
int ctrace__g2_next(g2reader *r, ctrace_event *ev, ctrace_parse_error *err);
/* Where each generation begins, in order, into *gens (malloc'd, *n of
 * them): a pass of its own that reads each generation as any pass does
 * but orders no event, rewound after. 0, or -1 with *err (a generation
 * that does not read). */
int ctrace__g2_gen_starts(g2reader *r, g2genpos **gens, uint64_t *n, ctrace_parse_error *err);
/* Rewinds to begin at generation k (from 0) of an index pass's, at pos:
 * as a trace that begins there reads (its first generation's statuses
 * set the state; the Syncs still count from the trace's first). */
void ctrace__g2_seek(g2reader *r, uint64_t k, const g2genpos *pos);
/* The counts of ctrace_trace_info after events events, the last of a
 * generation of freq ns per tick (version and bytes are left as they are). */
void ctrace__g2_info(const g2reader *r, uint64_t events, double freq, ctrace_trace_info *info);

#endif
