/* The event stream of a Go 1.22+ trace, as Go's trace.Reader produces
 * it (internal/trace/reader.go): per generation, a frontier of per-thread
 * cursors kept as a min-heap on time; the head is tried first, and when
 * its event cannot happen yet the others are tried in time order. CPU
 * samples come in by time; times are made strictly increasing, and every
 * stack and string id an event names must be in its generation's tables.
 *
 * Sync events: for the headers go 1.22 and 1.23, as Go 1.23 gives them,
 * one closing each generation; for go 1.25 and 1.26, as Go 1.27 gives
 * them, one opening each generation (at its earliest batch's time, with
 * its clock snapshot), one at the end, and one before an error found
 * between generations.
 *
 * Go 1.23 builds the frontier by walking a map of threads, so its order
 * of events of equal time on different threads changes from run to run
 * (`go tool trace -d=1` twice on Go's own gc-stress test gives two
 * outputs); here threads enter the frontier in the order of their first
 * batch in the file, which gives one of Go's orders, always the same, and
 * is Go 1.27's (its generation keeps the threads in that order). */
#include <stdlib.h>
#include <string.h>

#include "go122.h"

int ctrace__perr(ctrace_parse_error *err, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

g2reader *ctrace__g2_new(const uint8_t *data, uint64_t len, bool mapped, int ver) {
  g2reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->data = data;
  r->len = len;
  r->mapped = mapped;
  r->ver = ver;
  ctrace__g2_rewind(r);
  return r;
}

static void reset(g2reader *r) {
  ctrace__g2_gen_free(&r->gen);
  ctrace__g2_order_free(&r->order);
  ctrace__set_free(&r->seen_g);
  ctrace__set_free(&r->seen_p);
  ctrace__set_free(&r->seen_m);
}

void ctrace__g2_free(g2reader *r) {
  if (!r) return;
  reset(r);
  free(r->front);
  free(r);
}

void ctrace__g2_rewind(g2reader *r) {
  reset(r);
  r->off = 16;
  r->have_spill = r->spill_err = r->spill_eof = r->spill_err_sync = r->have_gen = r->done = r->failed = false;
  r->syncs = 0;
  r->emitted_sync = true; /* no Sync before the first generation */
  r->nfront = 0;
  r->last_ts = 0;
  r->out_seq = 0;
  r->ngens = 0;
  r->have_first = false;
  memset(&r->noted_m, 0, sizeof r->noted_m);
  memset(&r->noted_p, 0, sizeof r->noted_p);
  memset(&r->noted_g, 0, sizeof r->noted_g);
  ctrace__cache_put(&r->noted_m, (uint64_t)G2_NONE, 1);
  ctrace__cache_put(&r->noted_p, (uint64_t)G2_NONE, 1);
  ctrace__cache_put(&r->noted_g, (uint64_t)G2_NONE, 1);
}

/* ---- the frontier: Go's heap, step for step ------------------------------------ */

static int64_t ftime(const g2reader *r, uint32_t i) { return r->front[i].time; }

static void swap(g2reader *r, uint32_t a, uint32_t b) {
  struct g2front t = r->front[a];
  r->front[a] = r->front[b];
  r->front[b] = t;
}

static uint32_t sift_up(g2reader *r, uint32_t i) {
  while (i > 0 && ftime(r, (i - 1) / 2) > ftime(r, i)) {
    swap(r, (i - 1) / 2, i);
    i = (i - 1) / 2;
  }
  return i;
}

/* Go's down: the earliest of the parent and its two children goes up;
 * on equal times the parent stays, and the first child goes before the
 * second. */
static inline __attribute__((always_inline)) void sift_down(g2reader *r, uint32_t i) {
  struct g2front *f = r->front;
  uint32_t n = r->nfront;
  for (;;) {
    uint32_t c = 2 * i + 1, m = i;
    if (c >= n) return;
    int64_t mt = f[i].time;
    if (f[c].time < mt) {
      m = c;
      mt = f[c].time;
    }
    if (c + 1 < n && f[c + 1].time < mt) m = c + 1;
    if (m == i) return;
    swap(r, i, m);
    i = m;
  }
}

static void heap_remove(g2reader *r, uint32_t i) {
  while (i > 0) {
    swap(r, (i - 1) / 2, i);
    i = (i - 1) / 2;
  }
  swap(r, 0, r->nfront - 1);
  r->nfront--;
  sift_down(r, 0);
}

/* ---- events out ------------------------------------------------------------------ */

/* Counts id among the distinct ones of its kind. The cache holds
 * G2_NONE as if counted (rewind puts it there), so that the common case,
 * an id met lately or none, is one probe and one branch that seldom
 * goes the other way; an id of the events before (a comparison more)
 * was cheaper in instructions but a branch mispredicted about every
 * other event. */
static inline void note(u64set *m, u64cache *c, int64_t id) {
  if (ctrace__cache_get(c, (uint64_t)id)) return;
  if (id == G2_NONE) { /* its entry was taken by another id */
    ctrace__cache_put(c, (uint64_t)G2_NONE, 1);
    return;
  }
  /* Not cached when out of memory: the next event tries again. */
  if (ctrace__set_add(m, (uint64_t)id)) ctrace__cache_put(c, (uint64_t)id, 1);
}

/* ctrace__g2_stack through the generation's cache. */
static inline bool stack_of(g2gen *g, uint64_t id, const ctrace_frame **f, uint32_t *n) {
  uint64_t ix = id ? ctrace__cache_get(&g->stk_cache, id) : 0;
  if (ix) {
    const g2stack *s = &g->stk[ix - 1];
    *n = s->n;
    *f = g->frames ? g->frames + s->first : NULL;
    return true;
  }
  if (!ctrace__g2_stack(g, id, f, n)) return false;
  const uint64_t *i = id ? ctrace__map_get(&g->stacks, id) : NULL;
  if (i) ctrace__cache_put(&g->stk_cache, id, *i);
  return true;
}

/* What finish needs of an event type, in 7 bytes, not the 24 of
 * ctrace_event122_descs (whose Sync entry is empty: Sync is no event on
 * the wire). The stack and string positions are left out for Sync and
 * CPUSample, whose arguments Go checks against no table; fix marks the
 * types finish has more to do for (its switch). */
typedef struct fdesc {
  uint8_t kind, any; /* any: a stack or string to look up */
  uint8_t stack, stack2, str, str2;
  uint8_t fix;
} fdesc;
#define FIX(t)                                                                                       \
  ((t) == CTRACE_EV122_CPUSample || (t) == CTRACE_EV122_GoCreate || (t) == CTRACE_EV122_GoCreateBlocked || \
   (t) == CTRACE_EV122_GoStatusStack || (t) == CTRACE_EV122_GoStop || (t) == CTRACE_EV122_GoBlock ||       \
   (t) == CTRACE_EV122_GoSyscallBegin || (t) == CTRACE_EV122_STWEnd || (t) == CTRACE_EV122_UserTaskEnd)
#define NS(num, v) ((num) == CTRACE_EV122_CPUSample ? 0 : (v))
#define FDESC(name, num, kind, fl, n, a, s1, s2, t1, t2)                                             \
  [num] = {CTRACE_KIND_##kind, NS(num, (s1 | s2 | t1 | t2) != 0), NS(num, s1), NS(num, s2), NS(num, t1), \
           NS(num, t2), FIX(num)},
static const fdesc fdescs[256] = {CTRACE_GO122_EVENTS(FDESC)[CTRACE_EV122_Sync] = {CTRACE_KIND_Sync, 0, 0, 0, 0, 0, 0}};
#undef FDESC
#undef NS
#undef FIX

/* The time fix-up (times made strictly increasing) and the counts of
 * ctrace_trace_info, for an event let through: its time. */
static inline int64_t count(g2reader *r, const g2ev *e) {
  int64_t t = e->time;
  if (t <= r->last_ts) t = (int64_t)((uint64_t)r->last_ts + 1);
  r->last_ts = t;
  if (!r->have_first) {
    r->have_first = true;
    r->first_ts = t;
  }
  note(&r->seen_m, &r->noted_m, e->m);
  note(&r->seen_p, &r->noted_p, e->p);
  note(&r->seen_g, &r->noted_g, e->g);
  return t;
}

static int bad_id(const g2ev *e, const char *what, uint64_t id, ctrace_parse_error *err) {
  return ctrace__perr(err, e->off, "found invalid %s ID %llu for event %s", what, (unsigned long long)id,
                      ctrace_event122_descs[e->typ].name);
}

/* finish for a pass that only checks (ev NULL): Go's validateTableIDs
 * and count, without the public event (check's CPU 294 ms with it, 275
 * without, on the 46.8 MB trace of BENCHMARKS.md). */
static int check_only(g2reader *r, const g2ev *e, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  const fdesc d = fdescs[e->typ];
  if (d.any) { /* in Go's order: the stacks, then the strings */
    const ctrace_frame *f;
    uint32_t n;
    uint64_t len;
    if (d.stack && !stack_of(g, e->args[d.stack - 1], &f, &n)) return bad_id(e, "stack", e->args[d.stack - 1], err);
    if (d.stack2 && !stack_of(g, e->args[d.stack2 - 1], &f, &n))
      return bad_id(e, "stack", e->args[d.stack2 - 1], err);
    if (d.str && !ctrace__g2_string(g, e->args[d.str - 1], &len)) return bad_id(e, "string", e->args[d.str - 1], err);
    if (d.str2 && !ctrace__g2_string(g, e->args[d.str2 - 1], &len))
      return bad_id(e, "string", e->args[d.str2 - 1], err);
  }
  count(r, e);
  r->out_seq++;
  return 1;
}

/* Go's validateTableIDs, the time fix-up, and the public event (ev NULL:
 * none, check_only). */
static int finish(g2reader *r, const g2ev *e, ctrace_event *ev, ctrace_parse_error *err) {
  if (!ev) return check_only(r, e, err);
  g2gen *g = &r->gen;
  const fdesc d = fdescs[e->typ]; /* a copy: the stores to ev below might alias it */
  /* Field by field, not memset: this runs for every event, and a memset
   * of the whole struct compiles to a rep stosq that took half of this
   * function's time. Every field is set here or below. */
  ev->format = 1;
  ev->type = e->typ;
  ev->kind = d.kind;
  ev->off = e->off;
  ev->m = e->m;
  ev->p = e->p;
  ev->g = (uint64_t)e->g;
  memcpy(ev->args, e->args, sizeof e->args);
  ev->args[5] = 0;
  ev->link = CTRACE_NO_LINK;
  ev->stack = ev->tstack = 0;
  ev->has_stack = ev->has_tstack = 0;
  ev->frames = ev->tframes = NULL;
  ev->nframes = ev->ntframes = 0;
  ev->sargs[0] = ev->sargs[1] = NULL;
  ev->sargs_len[0] = ev->sargs_len[1] = 0;
  if (d.any) { /* in Go's order: the stacks, then the strings */
    if (d.stack) {
      uint64_t id = e->args[d.stack - 1];
      if (!stack_of(g, id, &ev->frames, &ev->nframes)) goto bad_stack;
      ev->stack = id;
      ev->has_stack = id != 0;
    }
    if (d.stack2) {
      uint64_t id = e->args[d.stack2 - 1];
      if (!stack_of(g, id, &ev->tframes, &ev->ntframes)) goto bad_stack2;
      ev->tstack = id;
    }
    if (d.str) {
      uint64_t id = e->args[d.str - 1];
      const char *s = ctrace__g2_string(g, id, &ev->sargs_len[0]);
      if (!s) goto bad_str;
      ev->sargs[0] = s;
    }
    if (d.str2) {
      uint64_t id = e->args[d.str2 - 1];
      const char *s = ctrace__g2_string(g, id, &ev->sargs_len[1]);
      if (!s) goto bad_str2;
      ev->sargs[1] = s;
    }
  }
  if (d.fix) {
    switch (e->typ) {
    case CTRACE_EV122_CPUSample:
      /* Go gives a sample its stack whatever the id (Stack() is never
       * NoStack for it), and checks no id; an unknown one has no frames. */
      ev->stack = e->args[0];
      ev->has_stack = 1;
      ctrace__g2_stack(g, ev->stack, &ev->frames, &ev->nframes);
      break;
    case CTRACE_EV122_GoCreate: case CTRACE_EV122_GoCreateBlocked:
      ev->has_tstack = 1; /* the new goroutine's, even if empty */
      break;
    case CTRACE_EV122_GoStatusStack:
      /* Go 1.27 gives a status its stack as the transition's too (Go 1.23
       * did not): its summary names a goroutine from it. */
      if (r->ver < 1025) break;
      /* fall through */
    case CTRACE_EV122_GoStop: case CTRACE_EV122_GoBlock: case CTRACE_EV122_GoSyscallBegin:
      ev->tstack = ev->stack;
      ev->has_tstack = ev->has_stack;
      ev->tframes = ev->frames;
      ev->ntframes = ev->nframes;
      break;
    case CTRACE_EV122_STWEnd: {
      /* The kind Go smuggled from the begin, in this generation's table. */
      const char *s = ctrace__g2_string(g, e->args[0], &ev->sargs_len[0]);
      ev->sargs[0] = s ? s : "";
      if (!s) ev->sargs_len[0] = 0;
      break;
    }
    case CTRACE_EV122_UserTaskEnd:
      ev->sargs[0] = e->xstr ? e->xstr : "";
      ev->sargs_len[0] = e->xlen;
      break;
    }
  }
  ev->ts = count(r, e);
  ev->seq = r->out_seq++;
  return 1;
bad_stack:
  return bad_id(e, "stack", e->args[d.stack - 1], err);
bad_stack2:
  return bad_id(e, "stack", e->args[d.stack2 - 1], err);
bad_str:
  return bad_id(e, "string", e->args[d.str - 1], err);
bad_str2:
  return bad_id(e, "string", e->args[d.str2 - 1], err);
}

static int fail(g2reader *r, ctrace_parse_error *err) {
  r->failed = true;
  r->error = *err;
  return -1;
}

static int install(g2reader *r, ctrace_parse_error *err);

/* The generation at offset at did not read as one (err): if it is the
 * last one begun of a trace that may be cut short, that is where it was
 * cut, and the trace ends cleanly before it. */
static bool cut_here(g2reader *r, uint64_t at, const ctrace_parse_error *err) {
  if (!r->cut_at || at != r->cut_at) return false;
  r->cut_hit = true;
  r->cut_error = *err;
  r->have_gen = false;
  r->nfront = 0;
  return true;
}

/* Reads the next generation (ctrace__g2_read_gen's answer), where it
 * begins in *at, and lets go of the pages of the one before. */
static int read_next_gen(g2reader *r, uint64_t *at, ctrace_parse_error *err) {
  uint64_t from = r->gen.start, to = r->gen.end;
  *at = r->have_spill ? r->spill_off : r->off;
  bool had = r->have_gen;
  if (r->before_gen) r->before_gen(r->before_gen_arg);
  int rc = ctrace__g2_read_gen(r, err);
  if (had) ctrace__g2_release_read(r, from, to);
  return rc;
}

/* A generation an index pass (g2reader.gens) has read and installed,
 * as any pass does (what fails there fails the index too, where any pass
 * would fail): its place noted, and none of its events or its Sync given. */
static int index_gen(g2reader *r, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  r->nfront = 0;
  g->isample = g->nsamples;
  if (!ctrace__grow(r->gens, &r->capgens, r->ngens_index + 1, sizeof **r->gens))
    return fail(r, (ctrace__perr(err, g->start, "out of memory"), err));
  (*r->gens)[r->ngens_index++] = (g2genpos){g->start, g->start_ns};
  return 1;
}

static int new_gen(g2reader *r, ctrace_parse_error *err) {
  uint64_t at;
  int rc = read_next_gen(r, &at, err);
  if (rc == -2) { /* Go's io.EOF from inside a section: the end, cleanly */
    r->done = true;
    r->eof_inside = true;
    return 0;
  }
  bool pass = r->gens != NULL;
  if (rc >= 0) rc = install(r, err);
  if (rc >= 0 && pass) rc = index_gen(r, err);
  if (rc < 0) {
    if (!cut_here(r, at, err)) return fail(r, err);
    r->failed = false;
    r->done = true;
    return 0;
  }
  r->emitted_sync = pass; /* no Sync closes a generation indexed */
  return 1;
}

/* A Sync event (Go's syncEvent), the syncs-th: at the generation's start,
 * with its table's clock snapshot (go 1.25+), or (table false) after the
 * last event, with none. */
static int sync_event(g2reader *r, ctrace_event *ev, bool table, ctrace_parse_error *err) {
  const g2gen *g = &r->gen;
  g2ev s = {{++r->syncs, 0, 0, 0, 0}, table ? g->start_ns : r->last_ts, G2_NONE, G2_NONE, G2_NONE,
            table ? g->start : r->off, CTRACE_EV122_Sync, NULL, 0};
  if (finish(r, &s, ev, err) < 0) return fail(r, err);
  if (ev && table && g->have_snap) {
    ev->args[1] = (uint64_t)g->snap_ns;
    ev->args[2] = g->snap_mono;
    ev->args[3] = g->snap_sec;
    ev->args[4] = g->snap_nsec;
    ev->args[5] = 1;
  }
  return 1;
}

/* The frontier of a generation just read, in the order of its threads'
 * first batches (Go 1.27's installGen, but for its Sync). */
static int install(g2reader *r, ctrace_parse_error *err) {
  r->have_gen = true;
  r->nfront = 0;
  if (r->gen.nmq > 0) {
    struct g2front *f = realloc(r->front, r->gen.nmq * sizeof *f);
    if (!f) return fail(r, (ctrace__perr(err, r->gen.start, "out of memory"), err));
    r->front = f;
  }
  for (uint32_t i = 0; i < r->gen.nmq; i++) {
    g2mq *q = &r->gen.mq[i];
    q->ev.m = q->m;
    int rc = ctrace__g2_cursor_next(r, q, err);
    if (rc < 0) return fail(r, err);
    if (rc == 0) continue;
    r->front[r->nfront++] = (struct g2front){q->ev.time, i};
    sift_up(r, r->nfront - 1);
  }
  /* Counted once it reads: one that fails here may be where a trace was
   * cut (cut_here), and then it is no generation of the trace's. */
  r->ngens++;
  return 1;
}

/* Go 1.27's way to the next generation (go 1.25+), when the last one's
 * events are out: nextGenWithSpill for go 1.25, its ReadEvent's own for
 * go 1.26. Each turn gives a Sync: the new generation's, or the one at the
 * end, or the one before an error (which the next call returns; an io.EOF
 * of Go's ends the trace cleanly there). */
static int next_gen127(g2reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
again:
  if (r->spill_err) {
    if (r->ver >= 1026 || r->spill_err_sync) {
      if (r->spill_eof) {
        r->done = true;
        return 0;
      }
      *err = r->spill_error;
      return fail(r, err);
    }
    r->spill_err_sync = true;
    return sync_event(r, ev, false, err);
  }
  if (r->ver < 1026 && r->have_gen && !r->have_spill) {
    ctrace__g2_release(r, g->start, g->end);
    r->done = true;
    return sync_event(r, ev, false, err);
  }
  uint64_t at;
  int rc = read_next_gen(r, &at, err);
  if (rc == 0) { /* go 1.26: no generation follows */
    r->have_gen = false;
    r->done = true;
    return sync_event(r, ev, false, err);
  }
  if (rc > 0 && install(r, err) < 0) {
    if (!cut_here(r, at, err)) return -1;
    r->failed = false;
    rc = -2; /* ends as below, cleanly */
  }
  if (rc > 0 && r->gens) {
    if (index_gen(r, err) < 0) return -1;
    goto again;
  }
  if (rc < 0) {
    /* A cut there ends the trace as Go's io.EOF does: its Sync, then
     * nothing. */
    bool cut = rc != -2 && cut_here(r, at, err);
    r->have_gen = false;
    r->spill_err = r->spill_err_sync = true;
    r->spill_eof = rc == -2 || cut;
    if (rc == -2) r->eof_inside = true;
    r->spill_error = *err;
    return sync_event(r, ev, false, err);
  }
  return sync_event(r, ev, true, err);
}

/* Go's tryAdvance(i): 1 advanced, 0 not, -1 error. Inline, with
 * sift_down, in next: most events come through here, and the calls
 * were as many instructions as the heap's work. */
static inline __attribute__((always_inline)) int try_advance(g2reader *r, uint32_t i,
                                                             ctrace_parse_error *err) {
  g2mq *q = &r->gen.mq[r->front[i].i];
  q->ev.m = q->m;
  int rc = ctrace__g2_advance(r, &q->ev, err);
  if (rc <= 0) return rc;
  rc = ctrace__g2_cursor_next(r, q, err);
  if (rc < 0) return -1;
  if (rc) {
    r->front[i].time = q->ev.time;
    if (sift_up(r, i) == i) sift_down(r, i);
  } else {
    heap_remove(r, i);
  }
  return 1;
}

static void frontier_sort(g2reader *r) {
  /* Stable: Go's slices.SortFunc is an insertion sort for up to 12. */
  for (uint32_t i = 1; i < r->nfront; i++)
    for (uint32_t j = i; j > 0 && ftime(r, j) < ftime(r, j - 1); j--) swap(r, j, j - 1);
}

static int pop(g2reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  g2order *o = &r->order;
  /* From the queue itself, not a copy: finish does not touch the queue. */
  const g2ev *e = &o->queue[o->qhead];
  o->qhead = (o->qhead + 1) % 4;
  o->qlen--;
  if (finish(r, e, ev, err) < 0) return fail(r, err);
  return 1;
}

static int next(g2reader *r, ctrace_event *ev, ctrace_parse_error *err);

int ctrace__g2_next(g2reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  int rc = next(r, ev, err);
  if (rc == 1 || !r->first_cut || (rc == 0 && r->ngens > 0)) return rc;
  *err = r->first_cut_error;
  return fail(r, err);
}

static int next(g2reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  if (r->failed) {
    *err = r->error;
    return -1;
  }
  if (r->done) return 0;
  if (r->order.qlen) return pop(r, ev, err);
  g2gen *g = &r->gen;
again:
  if (r->nfront == 0 && (!r->have_gen || g->isample == g->nsamples)) {
    if (r->ver >= 1025) return next_gen127(r, ev, err);
    if (!r->emitted_sync) {
      r->emitted_sync = true;
      /* Not in the file: its offset is its generation's first batch. */
      g2ev s = {{++r->syncs}, r->last_ts, G2_NONE, G2_NONE, G2_NONE, g->start, CTRACE_EV122_Sync, NULL, 0};
      return finish(r, &s, ev, err);
    }
    if (r->spill_err) {
      *err = r->spill_error;
      return fail(r, err);
    }
    if (r->have_gen && !r->have_spill) {
      ctrace__g2_release(r, g->start, g->end);
      r->done = true;
      return 0;
    }
    int rc = new_gen(r, err);
    if (rc <= 0) return rc;
    if (r->gens) goto again; /* indexed */
  }
  if (g->isample < g->nsamples) {
    if (r->nfront == 0 || g->samples[g->isample].time < ftime(r, 0)) {
      const g2sample *s = &g->samples[g->isample++];
      g2ev e = {{s->stack, 0, 0, 0, 0}, s->time, s->m, s->p, s->g, s->off, CTRACE_EV122_CPUSample, NULL, 0};
      if (finish(r, &e, ev, err) < 0) return fail(r, err);
      return 1;
    }
  }
  if (r->nfront == 0)
    return fail(r, (ctrace__perr(err, g->start, "broken trace: frontier is empty: [gen=%llu]",
                                 (unsigned long long)g->gen),
                    err));
  int rc = try_advance(r, 0, err);
  if (rc < 0) return fail(r, err);
  if (rc == 0) {
    frontier_sort(r);
    bool ok = false;
    for (uint32_t i = 1; i < r->nfront; i++) {
      rc = try_advance(r, i, err);
      if (rc < 0) return fail(r, err);
      if (rc) {
        ok = true;
        break;
      }
    }
    if (!ok) {
      /* Go lists the frontier and the ordering's state after this line. */
      const g2mq *q = &g->mq[r->front[0].i];
      return fail(r, (ctrace__perr(err, q->ev.off,
                                   "broken trace: failed to advance: frontier: [gen=%llu] M %lld [%s time=%lld]",
                                   (unsigned long long)g->gen, (long long)q->m,
                                   ctrace_event122_descs[q->ev.typ].name, (long long)q->ev.time),
                      err));
    }
  }
  return pop(r, ev, err);
}

void ctrace__g2_info(const g2reader *r, uint64_t events, double freq, ctrace_trace_info *info) {
  info->events = events;
  info->frequency = freq > 0 ? (uint64_t)(1e9 / freq + 0.5) : 0;
  info->goroutines = r->seen_g.len;
  info->procs = r->seen_p.len;
  info->threads = r->seen_m.len;
  info->generations = r->ngens;
  info->duration_ns = events ? (int64_t)((uint64_t)r->last_ts - (uint64_t)r->first_ts) : 0;
}

int ctrace__g2_gen_starts(g2reader *r, g2genpos **gens, uint64_t *n, ctrace_parse_error *err) {
  ctrace__g2_rewind(r);
  *gens = NULL;
  r->gens = gens;
  r->ngens_index = r->capgens = 0;
  int rc;
  while ((rc = ctrace__g2_next(r, NULL, err)) == 1) {
  }
  *n = r->ngens_index;
  r->gens = NULL;
  ctrace__g2_rewind(r);
  if (rc < 0) {
    free(*gens);
    *gens = NULL;
    *n = 0;
  }
  return rc;
}

void ctrace__g2_seek(g2reader *r, uint64_t k, const g2genpos *pos) {
  ctrace__g2_rewind(r);
  r->off = pos->off;
  r->syncs = k;
}
