/* ctrace stats: a trace's numbers at a glance.
 *
 * Goroutine times follow Go 1.23's summarizer (internal/trace/summary.go)
 * on a classic trace as Go 1.23 converts one (internal/trace/oldtrace.go),
 * so that they can be held against its goroutine pages:
 *   - goroutines there when the trace began (created before the first
 *     Gomaxprocs) exist from the trace's start; their first state is the
 *     one their status event gives (GoStart running, GoWaiting waiting for
 *     no reason, GoInSyscall in a call), or runnable at that Gomaxprocs;
 *   - a system call that does not block (no GoSysBlock next on its
 *     goroutine) lasts 1 ns, taken from the running time around it; one
 *     that blocks is syscall time from the call until its P stops, and
 *     blocked-in-syscall time from there to the exit;
 *   - GoStop ends the goroutine as GoEnd does (Go: waiting "forever");
 *   - the start function is the outermost frame of the first stack a
 *     state change gives the goroutine (its creation's, usually); but a
 *     thread's that is Rust's or C++'s std::thread start routine is the
 *     user's function it calls, from a later stack (filter.c).
 * One difference, which the test allows for: Go 1.23 moves events that
 * share a timestamp 1 ns apart; we keep the trace's times.
 * The minimum mutator utilization is that of Go 1.23's /mmu page (mmu.c),
 * fed the same pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"

const char *const ctrace_block_reason_names[CTRACE_BLOCK_COUNT] = {
#define CTRACE__BR(name, s) s,
    CTRACE_BLOCK_REASONS(CTRACE__BR)
#undef CTRACE__BR
};

enum { G_NONE, G_RUNNABLE, G_RUNNING, G_WAITING, G_SYSCALL, G_DEAD };

typedef struct gst {
  ctrace_goroutine_stats s;
  uint8_t state;
  bool preinit; /* created before the first Gomaxprocs, no status yet */
  int reason;
  int64_t last_start, last_runnable, last_block, last_syscall, last_syscall_block;
  bool started;
  bool named; /* no later stack names it otherwise (ctrace__an_name_from) */
  bool byid;  /* a wait names it by id (side): kept to the end, to be named */
  /* A GoSysCall whose kind (blocking or not) the goroutine's next event
   * decides. */
  bool sys_pending;
  int64_t sys_ts;
  int64_t sys_p;
} gst;

/* A task's or region's type: its latencies as a sketch (sketch.h), not
 * kept one by one. */
typedef struct lat {
  const char *name;
  an_sketch d;
  uint64_t open;
} lat;

typedef struct sctx {
  ctrace_reader *r;
  ctrace_stats *st;
  u64map gix;
  gst *gs;
  size_t ngs, capgs;
  u64free gfree; /* the slots of goroutines retired */
  /* Goroutines that ended for good, retired (retire): their rows (none
   * with groups_only) and the groups they were added to. */
  bool groups_only;
  const ctrace_stats_options *opt;
  ctrace_goroutine_stats *rows;
  size_t nrows, caprows;
  ctrace_group_stats *groups;
  size_t ngroups, capgroups;
  uint64_t nev; /* events of the pass so far */
  /* gix's last keys: an event looks its goroutine up several times, and
   * the map's probe, at every look, was a tenth of stats' time. */
  u64cache gcache;
  u64map syscalling_p; /* p + 1 -> g + 1 */
  an_title title;         /* the process's, for st->cmdline */
  an_kept *kept;          /* thread names from logs: the result's (stats_box) */
  an_waits waits; /* who kept them waiting (waker.c) */
  lat *tasks, *regions; /* by type, in the order met */
  size_t ntasks, captasks, nregions, capregions;
  u64map threads, open_regions, open_tasks; /* seq/task -> ts+1 */
  int64_t gc_start, stw_start, last;
  /* Go 1.23 skips the creations of goroutines there before the trace (it
   * gives them a status instead) and GoSysBlock: its first event, which
   * goroutines there before the trace date from, is the first other one
   * (t0). Goroutines met in a status date from the last generation's end
   * (Go's summary's syncTs): t0 until a 1.22+ trace's first Sync. */
  int64_t t0, sync_ts;
  bool preinit; /* before the trace's first Gomaxprocs */
  bool go127;   /* a go 1.25+ trace, summarized as Go 1.27 does */
  bool oom;
} sctx;

/* gfind of a goroutine not in its slot: the map, and a new goroutine (in
 * the slot of one retired, if any). A slot retired is zeroed: a goroutine
 * that never existed for Go 1.23, which every walk over gs passes by. */
static __attribute__((noinline)) gst *gfind_slow(sctx *c, uint64_t g, bool create) {
  gst *x;
  if (create) {
    bool fresh;
    if (!(x = ctrace__map_slot(&c->gix, &c->gfree, g, &c->gs, &c->ngs, &c->capgs, sizeof *c->gs, &fresh))) {
      c->oom = true;
      return NULL;
    }
    if (fresh) {
      x->s.id = g;
      x->s.name = "";
      x->s.thread = "";
      x->s.end = -1;
    }
  } else {
    const uint64_t *ix = ctrace__map_get(&c->gix, g);
    if (!ix) return NULL;
    x = &c->gs[*ix - 1];
  }
  ctrace__cache_put(&c->gcache, g, (uint64_t)(x - c->gs) + 1);
  return x;
}

static inline gst *gfind(sctx *c, uint64_t g, bool create) {
  uint64_t ix = ctrace__cache_get(&c->gcache, g);
  return ix ? &c->gs[ix - 1] : gfind_slow(c, g, create);
}

static void name_from(sctx *c, gst *g, uint64_t stack) {
  ctrace__an_name_from(c->r, stack, &g->s.name, &g->named);
}

/* Leaves the current state at ts (summary.go's "old" half). */
static void leave(sctx *c, gst *g, int64_t ts) {
  ctrace_gtimes *t = &g->s.t;
  switch (g->state) {
  case G_RUNNING:
    t->exec += ts - g->last_start;
    break;
  case G_WAITING:
    if (g->last_block >= 0) t->block[g->reason] += ts - g->last_block;
    break;
  case G_RUNNABLE:
    t->sched_wait += ts - g->last_runnable;
    break;
  case G_SYSCALL:
    if (g->last_syscall_block >= 0) {
      t->syscall_block += ts - g->last_syscall_block;
      t->syscall += g->last_syscall_block - g->last_syscall;
    } else {
      t->syscall += ts - g->last_syscall;
    }
    g->last_syscall_block = -1;
    break;
  }
}

/* Go 1.27's summary (go 1.25+ traces) counts a goroutine first met in a
 * status as in that state since the Sync that began the generation: the
 * time up to the status, which Go 1.23 left out. A syscall with no P is
 * blocked in it. */
static void since_sync(gst *g, uint8_t state, int64_t sync, int64_t ts, bool has_p) {
  ctrace_gtimes *t = &g->s.t;
  int64_t d = ts - sync;
  if (d <= 0) return;
  switch (state) {
  case G_RUNNING: t->exec += d; break;
  case G_RUNNABLE: t->sched_wait += d; break;
  case G_WAITING: t->block[CTRACE_BLOCK_OTHER] += d; break;
  case G_SYSCALL:
    if (has_p) t->syscall += d;
    else t->syscall_block += d;
    break;
  }
}

static void enter(sctx *c, gst *g, uint8_t state, int64_t ts, int reason) {
  g->state = state;
  switch (state) {
  case G_RUNNING:
    g->last_start = ts;
    break;
  case G_RUNNABLE:
    g->last_runnable = ts;
    break;
  case G_WAITING:
    g->last_block = ts;
    g->reason = reason;
    break;
  case G_SYSCALL:
    g->last_syscall = ts;
    g->last_syscall_block = -1;
    break;
  case G_DEAD:
    g->s.end = ts;
    break;
  }
}

static void to(sctx *c, gst *g, uint8_t state, int64_t ts, int reason, uint64_t stack) {
  if (g->state == G_DEAD) return;
  leave(c, g, ts);
  name_from(c, g, stack);
  enter(c, g, state, ts, reason);
}

static int block_reason(uint8_t type) {
  switch (type) {
  case CTRACE_EV_GoSleep: return CTRACE_BLOCK_SLEEP;
  case CTRACE_EV_GoBlockSend: return CTRACE_BLOCK_CHAN_SEND;
  case CTRACE_EV_GoBlockRecv: return CTRACE_BLOCK_CHAN_RECV;
  case CTRACE_EV_GoBlockSelect: return CTRACE_BLOCK_SELECT;
  case CTRACE_EV_GoBlockSync: return CTRACE_BLOCK_SYNC;
  case CTRACE_EV_GoBlockCond: return CTRACE_BLOCK_COND;
  case CTRACE_EV_GoBlockNet: return CTRACE_BLOCK_NET;
  case CTRACE_EV_GoBlockGC: return CTRACE_BLOCK_GC;
  case CTRACE_EV_GoBlock: return CTRACE_BLOCK_OTHER;
  default: return -1;
  }
}

/* A block's reason: its kind's, or for a GoBlock of a 1.22+ trace the
 * reason Go wrote (the model, src/parse/model.c), by name. */
static int block_reason_of(const ctrace_event *ev) {
  int br = block_reason(ev->type);
  if (br == CTRACE_BLOCK_OTHER && ev->sargs[0])
    for (int k = 0; k < CTRACE_BLOCK_OTHER; k++)
      if (strcmp(ev->sargs[0], ctrace_block_reason_names[k]) == 0) return k;
  return br;
}

/* The goroutine's earlier GoSysCall did not block: as Go 1.23 converts it,
 * 1 ns of system call at its time. */
static void sys_nonblocking(gst *g) {
  g->sys_pending = false;
  g->s.t.syscall += 1;
  g->s.t.exec -= 1;
}

static lat *lat_of(lat **arr, size_t *n, size_t *cap, const char *name, bool *oom) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*arr)[i].name, name) == 0) return &(*arr)[i];
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    void *m = realloc(*arr, c * sizeof **arr);
    if (!m) {
      *oom = true;
      return NULL;
    }
    *arr = m;
    *cap = c;
  }
  memset(&(*arr)[*n], 0, sizeof **arr);
  (*arr)[*n].name = name;
  return &(*arr)[(*n)++];
}

static bool lat_add(lat *l, int64_t d) { return ctrace__an_sketch_add(&l->d, d); }

static int finish_lat(lat *ls, size_t n, ctrace_latency_stats **out, size_t *nout) {
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return -1;
  for (size_t i = 0; i < n; i++) {
    lat *l = &ls[i];
    ctrace_latency_stats *o = &(*out)[i];
    o->name = l->name;
    o->count = l->d.n;
    o->open = l->open;
    if (l->d.n) {
      o->p50 = ctrace__an_sketch_quantile(&l->d, 0.50);
      o->p90 = ctrace__an_sketch_quantile(&l->d, 0.90);
      o->p99 = ctrace__an_sketch_quantile(&l->d, 0.99);
      o->max = l->d.max;
    }
  }
  *nout = n;
  return 0;
}

static int cmp_lat_name(const void *a, const void *b) {
  return strcmp(((const ctrace_latency_stats *)a)->name, ((const ctrace_latency_stats *)b)->name);
}

static int cmp_gid(const void *a, const void *b) {
  uint64_t x = ((const ctrace_goroutine_stats *)a)->id, y = ((const ctrace_goroutine_stats *)b)->id;
  return (x > y) - (x < y);
}

static int cmp_group(const void *a, const void *b) {
  const ctrace_group_stats *x = a, *y = b;
  if (x->t.exec != y->t.exec) return x->t.exec > y->t.exec ? -1 : 1;
  int d = strcmp(x->name, y->name);
  return d ? d : strcmp(x->thread, y->thread);
}

static void add_times(ctrace_gtimes *a, const ctrace_gtimes *b) {
  a->total += b->total;
  a->exec += b->exec;
  a->sched_wait += b->sched_wait;
  a->syscall += b->syscall;
  a->syscall_block += b->syscall_block;
  for (int i = 0; i < CTRACE_BLOCK_COUNT; i++) a->block[i] += b->block[i];
  a->unknown += b->unknown;
}

/* Before an event's own: a goroutine named from the first stack a change
 * of its state gives, and a pending GoSysCall decided by its next event.
 * False when out of memory. */
static bool before_event(sctx *c, const ctrace_event *ev) {
  gst *g;
  /* Go 1.23 names a goroutine from the first stack a change of its
   * state gives (1.22+ traces: tstack, src/parse/model.c). */
  if (ev->tstack && ev->type != CTRACE_EV_GoCreate &&
      (g = gfind(c, ev->type == CTRACE__MODEL_GoStatusStack ? ev->args[0] : ev->g, false)))
    name_from(c, g, ev->tstack);
  /* A thread named by its runtime's start routine is named by the user's
   * function the routine calls from any stack of its own (filter.c). */
  if (ev->g && ev->stack && (g = gfind(c, ev->g, false)) && g->s.name[0] && !g->named)
    name_from(c, g, ev->stack);
  /* A pending GoSysCall is decided by the goroutine's next event. */
  if (ev->g && (g = gfind(c, ev->g, false)) && g->sys_pending) {
    if (ev->type == CTRACE_EV_GoSysBlock) {
      g->sys_pending = false;
      /* The call blocked: running ended at the call. */
      leave(c, g, g->sys_ts);
      enter(c, g, G_SYSCALL, g->sys_ts, 0);
      bool fresh;
      uint64_t *v = ctrace__map_put(&c->syscalling_p, (uint64_t)g->sys_p + 1, &fresh);
      if (!v) return false;
      *v = g->s.id + 1;
    } else {
      sys_nonblocking(g);
    }
  }
  return true;
}

/* A goroutine's times, final: what is still pending counts to last (Go's
 * snapshotStat at the trace's end). */
static void settle(gst *g, int64_t last) {
  if (g->sys_pending) sys_nonblocking(g);
  if (g->state != G_DEAD && g->state != G_NONE) {
    if (g->state == G_SYSCALL && g->last_syscall_block >= 0) {
      /* Go counts both: the call up to the end, and the time since its
       * P stopped as scheduling wait. */
      g->s.t.syscall += last - g->last_syscall;
      g->s.t.sched_wait += last - g->last_syscall_block;
    } else {
      leave(NULL, g, last);
    }
  }
  ctrace_gtimes *t = &g->s.t;
  t->total = (g->s.end >= 0 ? g->s.end : last) - g->s.creation;
  int64_t known = t->exec + t->sched_wait + t->syscall + t->syscall_block;
  for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) known += t->block[k];
  /* As Go's UnknownTime: never below 0, for Go counts a call blocked at
   * the end twice (above), and so may the sum. */
  t->unknown = t->total > known ? t->total - known : 0;
}

/* A settled goroutine into the table: its row (but with groups_only; to
 * the row callback at once, unless at the end, where they are sorted
 * first) and its group's sums; none for one that never existed for Go
 * 1.23. */
static bool tabulate(sctx *c, const gst *g, bool end) {
  if (g->state == G_NONE && !g->started) return true;
  const ctrace_goroutine_stats *x = &g->s;
  if (c->opt->row && !end) {
    c->opt->row(x, c->opt->row_arg);
  } else if (!c->groups_only || c->opt->row) { /* the row callback's, sorted at the end */
    if (!ctrace__room(&c->rows, c->nrows, &c->caprows, sizeof *c->rows, 256)) return false;
    c->rows[c->nrows++] = *x;
  }
  size_t k = 0;
  while (k < c->ngroups && (strcmp(c->groups[k].name, x->name) != 0 || strcmp(c->groups[k].thread, x->thread) != 0))
    k++;
  if (k == c->ngroups) {
    if (!ctrace__room(&c->groups, c->ngroups, &c->capgroups, sizeof *c->groups, 16)) return false;
    c->groups[k] = (ctrace_group_stats){.name = x->name, .thread = x->thread};
    c->ngroups++;
  }
  c->groups[k].count++;
  add_times(&c->groups[k].t, &x->t);
  return true;
}

/* A goroutine that ended for good: settled and tabulated now, and its
 * slot given to the next (gfind_slow), so that memory follows the
 * goroutines alive, not all those a trace ever had. */
static bool retire(sctx *c, gst *g) {
  settle(g, c->last);
  if (!tabulate(c, g, false)) return false;
  ctrace__map_slot_drop(&c->gix, &c->gcache, &c->gfree, g->s.id, c->gs, sizeof *c->gs);
  return true;
}

/* A goroutine as a side of a wait (ctrace__an_wait_add): its start
 * function where its names are final (it is named for good, in a trace
 * without thread names: one ctrace did not write, which the lack of its
 * process's log among the first events tells), so that the waits of
 * goroutines that come and go are a record per pair of names, not per
 * pair of goroutines; else its id, named at the end (and then it is kept
 * to the end). bit: the side's bit in *named. */
static uint64_t side(sctx *c, gst *g, unsigned *named, unsigned bit) {
  if (c->nev > AN_LOG_WITHIN && !c->title.seen && g->named && !g->s.thread[0]) {
    *named |= bit;
    return (uint64_t)(uintptr_t)g->s.name;
  }
  g->byid = true;
  return g->s.id;
}

/* The goroutines' states and times, the Ps' starts and stops: an event
 * of no other kind. False when out of memory. */
static bool goroutine_event(sctx *c, const ctrace_event *ev) {
  gst *g;
  int br;
  switch (ev->type) {
  case CTRACE_EV_Gomaxprocs:
    if (c->preinit) {
      c->preinit = false;
      for (size_t i = 0; i < c->ngs; i++)
        if (c->gs[i].preinit) {
          c->gs[i].preinit = false;
          c->gs[i].s.creation = c->t0;
          enter(c, &c->gs[i], G_RUNNABLE, ev->ts, 0);
        }
    }
    break;
  case CTRACE_EV_ProcStart: {
    bool fresh;
    if (!ctrace__map_put(&c->threads, ev->args[0], &fresh)) return false;
    break;
  }
  case CTRACE_EV_ProcStop: {
    uint64_t *v = ctrace__map_get(&c->syscalling_p, (uint64_t)ev->p + 1);
    if (v) {
      if ((g = gfind(c, *v - 1, false)) && g->state == G_SYSCALL) g->last_syscall_block = ev->ts;
      ctrace__map_del(&c->syscalling_p, (uint64_t)ev->p + 1);
    }
    break;
  }
  case CTRACE_EV_GoCreate:
    if (!(g = gfind(c, ev->args[0], true))) return false;
    if (c->preinit) {
      g->preinit = true; /* there before the trace: its status comes later */
      break;
    }
    g->s.creation = ev->args[2] ? c->sync_ts : ev->ts; /* args[2]: there before (the model, src/parse/model.c) */
    g->state = G_NONE;
    name_from(c, g, ev->args[1]);
    if (c->go127 && ev->args[2] == 1) { /* a status: in its state since the Sync */
      static const uint8_t st_of[5] = {G_NONE, G_RUNNABLE, G_RUNNING, G_SYSCALL, G_WAITING};
      since_sync(g, ev->args[3] < 5 ? st_of[ev->args[3]] : G_NONE, c->sync_ts, ev->ts, ev->p >= 0);
    }
    enter(c, g, G_RUNNABLE, ev->ts, 0);
    break;
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoStartLabel:
    if (!(g = gfind(c, ev->g, true))) return false;
    if (c->preinit || g->state == G_NONE) { /* a status: running since the trace began */
      g->preinit = false;
      g->s.creation = c->sync_ts;
      g->state = G_NONE;
      enter(c, g, G_RUNNING, ev->ts, 0);
    } else {
      to(c, g, G_RUNNING, ev->ts, 0, 0);
    }
    if (!g->started) g->started = true;
    break;
  case CTRACE_EV_GoWaiting:
  case CTRACE_EV_GoInSyscall:
    if (!(g = gfind(c, ev->g, true))) return false;
    g->preinit = false;
    g->s.creation = c->sync_ts;
    g->state = G_NONE;
    if (ev->type == CTRACE_EV_GoWaiting) {
      enter(c, g, G_WAITING, ev->ts, CTRACE_BLOCK_OTHER);
    } else {
      enter(c, g, G_SYSCALL, ev->ts, 0);
      bool fresh;
      uint64_t *v = ctrace__map_put(&c->syscalling_p, (uint64_t)ev->p + 1, &fresh);
      if (!v) return false;
      *v = g->s.id + 1;
    }
    break;
  case CTRACE_EV_GoEnd:
  case CTRACE_EV_GoStop:
    if (!(g = gfind(c, ev->g, false))) break;
    to(c, g, G_DEAD, ev->ts, 0, ev->stack);
    /* Gone for good, its id not met again (model.h): retired, unless a
     * wait names it by its id. */
    if (ev->type == CTRACE_EV_GoEnd && ev->args[0] != 1 && !g->byid && !retire(c, g)) return false;
    break;
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
    if ((g = gfind(c, ev->g, false))) to(c, g, G_RUNNABLE, ev->ts, 0, ev->stack);
    break;
  case CTRACE_EV_GoUnblock:
    if (!(g = gfind(c, ev->args[0], false))) break;
    if (g->state == G_WAITING && g->reason != CTRACE_BLOCK_SLEEP) {
      uint64_t waker = ctrace__an_waker_of(ev);
      gst *w = waker ? gfind(c, waker, false) : NULL;
      unsigned named = 0;
      uint64_t woken = side(c, g, &named, 1);
      if (w) waker = side(c, w, &named, 2);
      if (!ctrace__an_wait_add(&c->waits, woken, waker, named, ctrace__an_why(c->r, ev), ev->ts - g->last_block))
        return false;
    }
    to(c, g, G_RUNNABLE, ev->ts, 0, 0);
    break;
  case CTRACE_EV_GoSysCall:
    if ((g = gfind(c, ev->g, false))) {
      g->sys_pending = true;
      g->sys_ts = ev->ts;
      g->sys_p = ev->p;
      name_from(c, g, ev->stack);
    }
    break;
  case CTRACE_EV_GoSysExit:
    if ((g = gfind(c, ev->g, false)) && g->state == G_SYSCALL) {
      for (size_t i = 0; i < c->syscalling_p.cap; i++) /* the call is over */
        if (c->syscalling_p.used[i] && c->syscalling_p.vals[i] == g->s.id + 1) {
          ctrace__map_del(&c->syscalling_p, c->syscalling_p.keys[i]);
          break;
        }
      to(c, g, G_RUNNABLE, ev->ts, 0, ev->stack);
    }
    break;
  default:
    if ((br = block_reason_of(ev)) >= 0 && (g = gfind(c, ev->g, false)))
      to(c, g, G_WAITING, ev->ts, br, ev->stack);
    break;
  }
  return true;
}

/* The GC's cycles and stop-the-worlds. */
static void gc_event(sctx *c, const ctrace_event *ev) {
  ctrace_stats *st = c->st;
  switch (ev->type) {
  case CTRACE_EV_GCStart:
    c->gc_start = ev->ts;
    st->gc_cycles++;
    break;
  case CTRACE_EV_GCDone:
    if (c->gc_start >= 0) st->gc_ns += ev->ts - c->gc_start;
    c->gc_start = -1;
    break;
  case CTRACE_EV_GCSTWStart:
    c->stw_start = ev->ts;
    break;
  case CTRACE_EV_GCSTWDone:
    if (c->stw_start >= 0) {
      int64_t d = ev->ts - c->stw_start;
      st->stw_count++;
      st->stw_ns += d;
      if (d > st->stw_max_ns) st->stw_max_ns = d;
    }
    c->stw_start = -1;
    break;
  }
}

/* The latencies of tasks and regions. False when out of memory. */
static bool user_event(sctx *c, const ctrace_event *ev) {
  switch (ev->type) {
  case CTRACE_EV_UserTaskCreate: {
    bool fresh;
    uint64_t *v = ctrace__map_put(&c->open_tasks, ev->args[0], &fresh);
    if (!v) return false;
    lat *l = lat_of(&c->tasks, &c->ntasks, &c->captasks, ev->sargs[0] ? ev->sargs[0] : "", &c->oom);
    if (!l) return false;
    *v = (uint64_t)ev->ts << 20 | (uint64_t)(l - c->tasks); /* start and type */
    l->open++;
    break;
  }
  case CTRACE_EV_UserTaskEnd: {
    uint64_t *v = ctrace__map_get(&c->open_tasks, ev->args[0]);
    if (v) {
      lat *l = &c->tasks[*v & ((1u << 20) - 1)];
      l->open--;
      if (!lat_add(l, ev->ts - (int64_t)(*v >> 20))) return false;
      ctrace__map_del(&c->open_tasks, ev->args[0]);
    }
    break;
  }
  case CTRACE_EV_UserRegion: {
    lat *l = lat_of(&c->regions, &c->nregions, &c->capregions, ev->sargs[0] ? ev->sargs[0] : "", &c->oom);
    if (!l) return false;
    if (ev->args[1] == 0) {
      bool fresh;
      uint64_t *v = ctrace__map_put(&c->open_regions, ev->seq, &fresh);
      if (!v) return false;
      *v = (uint64_t)ev->ts + 1;
      l->open++;
    } else {
      uint64_t *v = ev->link != CTRACE_NO_LINK ? ctrace__map_get(&c->open_regions, ev->link) : NULL;
      if (v) {
        l->open--;
        if (!lat_add(l, ev->ts - (int64_t)(*v - 1))) return false;
        ctrace__map_del(&c->open_regions, ev->link);
      } else {
        l->open++; /* begun before the trace */
      }
    }
    break;
  }
  }
  return true;
}

/* One event of the pass: the goroutines' states and times, the GC's and
 * stop-the-worlds' times, the tasks' and regions' latencies. False when
 * out of memory. */
static bool observe(sctx *c, const ctrace_event *ev, an_mmu *mmu) {
  c->last = ev->ts;
  c->nev++;
  if (!ctrace__an_mmu_event(mmu, ev)) return false;
  if (c->t0 < 0 && !(c->preinit && ev->type == CTRACE_EV_GoCreate) && ev->type != CTRACE_EV_GoSysBlock)
    c->t0 = ev->ts;
  if (c->sync_ts < 0) c->sync_ts = c->t0;
  if (ev->format == 1 && ev->type == CTRACE_EV122_Sync) c->sync_ts = ev->ts;
  if (!before_event(c, ev)) return false;
  if (ev->type == CTRACE_EV_UserLog) ctrace__an_title_note(&c->title, ev);
  switch (ev->type) {
  case CTRACE_EV_GCStart:
  case CTRACE_EV_GCDone:
  case CTRACE_EV_GCSTWStart:
  case CTRACE_EV_GCSTWDone:
    gc_event(c, ev);
    break;
  case CTRACE_EV_UserTaskCreate:
  case CTRACE_EV_UserTaskEnd:
  case CTRACE_EV_UserRegion:
    if (!user_event(c, ev)) return false;
    break;
  default:
    if (!goroutine_event(c, ev)) return false;
    break;
  }
  /* A thread's name: the last one given (names.c writes it at each start,
   * and says when another thread names it). */
  uint64_t tg = 0;
  const char *tn = ctrace__an_thread_name(ev, &tg, c->kept);
  gst *g;
  if (tn && tg && (g = gfind(c, tg, false))) g->s.thread = tn;
  return !c->oom;
}

/* A side of a wait (side) named: its start function and thread. */
static void name_side(sctx *c, uint64_t v, bool named, const char **name, const char **thread) {
  if (named) {
    *name = (const char *)(uintptr_t)v;
    *thread = "";
    return;
  }
  gst *g = gfind(c, v, false);
  *name = g ? g->s.name : "";
  *thread = g ? g->s.thread : "";
}

/* The end: the goroutines still kept settled and tabulated with those
 * retired; goroutines by id, groups by start function, and the waits'
 * names. */
static bool collect_goroutines(sctx *c) {
  ctrace_stats *st = c->st;
  for (size_t i = 0; i < c->ngs; i++) {
    settle(&c->gs[i], c->last);
    if (!tabulate(c, &c->gs[i], true)) return false;
  }
  if (c->nrows) qsort(c->rows, c->nrows, sizeof *c->rows, cmp_gid);
  if (c->opt->row)
    for (size_t i = 0; i < c->nrows; i++) c->opt->row(&c->rows[i], c->opt->row_arg);
  if (!c->groups_only) {
    st->goroutines = c->rows;
    st->ngoroutines = c->nrows;
    c->rows = NULL;
  }
  st->groups = c->groups;
  st->ngroups = c->ngroups;
  c->groups = NULL;
  if (st->ngroups) qsort(st->groups, st->ngroups, sizeof *st->groups, cmp_group);

  for (size_t i = 0; i < c->waits.n; i++) {
    an_wait *w = &c->waits.w[i];
    name_side(c, w->woken, w->named & 1, &w->woken_name, &w->woken_thread);
    if (w->waker) name_side(c, w->waker, w->named & 2, &w->waker_name, &w->waker_thread);
  }
  return ctrace__an_waker_table(&c->waits, &st->wakers, &st->nwakers) == 0;
}

int ctrace_stats_build(ctrace_reader *r, const ctrace_trace_info *info, ctrace_stats **out,
                       char *err, size_t errlen) {
  ctrace_stats_options opt = {0};
  return ctrace_stats_build_ex(r, info, &opt, out, err, errlen);
}

/* A result and the strings it names that the reader does not hold (the
 * names of threads named by another: a log's message, kept). */
typedef struct stats_box {
  ctrace_stats st; /* first: ctrace_stats_free takes it */
  an_kept kept;
} stats_box;

int ctrace_stats_build_ex(ctrace_reader *r, const ctrace_trace_info *info, const ctrace_stats_options *opt,
                          ctrace_stats **out, char *err, size_t errlen) {
  *out = NULL;
  sctx c = {.r = r, .gc_start = -1, .stw_start = -1, .t0 = -1, .sync_ts = -1, .preinit = true,
            .go127 = info->version >= 1025, .groups_only = opt->groups_only != 0, .opt = opt};
  stats_box *box = calloc(1, sizeof *box);
  ctrace_stats *st = c.st = box ? &box->st : NULL;
  c.kept = box ? &box->kept : NULL;
  an_mmu *mmu = ctrace__an_mmu_new(info, AN_MMU_DEFAULT);
  int rc = -1;
  if (!st || !mmu) goto oom;
  st->info = *info;

  ctrace__model_rewind(r);
  ctrace_event buf;
  const ctrace_event *ev;
  while ((ev = ctrace__model_next_ref(r, &buf)))
    if (!observe(&c, ev, mmu)) goto oom;
  snprintf(st->cmdline, sizeof st->cmdline, "%s", c.title.now);
  if (!collect_goroutines(&c)) goto oom;
  if (finish_lat(c.tasks, c.ntasks, &st->tasks, &st->ntasks) ||
      finish_lat(c.regions, c.nregions, &st->regions, &st->nregions))
    goto oom;
  qsort(st->tasks, st->ntasks, sizeof *st->tasks, cmp_lat_name);
  qsort(st->regions, st->nregions, sizeof *st->regions, cmp_lat_name);

  /* The reader's counts: a Go 1.22+ trace may come unchecked, as the
   * pass above checks it (ctrace_reader_check answers from that pass, or
   * says why the trace does not read). */
  ctrace_parse_error perr;
  if (ctrace_reader_check(r, &st->info, &perr)) {
    snprintf(err, errlen, "%s", perr.message);
    rc = -1;
    goto out;
  }
  /* A 1.22+ trace names the thread of every event: the reader's count of
   * them, as ctrace check gives it, not only those that started a P. */
  st->threads = info->version >= 1022 ? st->info.threads : c.threads.len;
  if (!ctrace__an_mmu_end(mmu, c.last)) goto oom;
  for (int k = 0; k < CTRACE_MMU_WINDOWS; k++) {
    st->mmu_window_ns[k] = k == 0 ? 1000000 : k == 1 ? 10000000 : 100000000;
    st->mmu[k] = ctrace__an_mmu(mmu, st->mmu_window_ns[k], &st->mmu_span_ns);
  }
  rc = 0;
  *out = st;
  st = NULL;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = CTRACE_ENOMEM;
out:
  ctrace_stats_free(st);
  for (size_t i = 0; i < c.ntasks; i++) ctrace__an_sketch_free(&c.tasks[i].d);
  for (size_t i = 0; i < c.nregions; i++) ctrace__an_sketch_free(&c.regions[i].d);
  free(c.tasks);
  free(c.regions);
  ctrace__an_mmu_free(mmu);
  free(c.gs);
  free(c.rows);
  free(c.groups);
  ctrace__free_free(&c.gfree);
  ctrace__an_waits_free(&c.waits);
  ctrace__map_free(&c.gix);
  ctrace__map_free(&c.syscalling_p);
  ctrace__map_free(&c.threads);
  ctrace__map_free(&c.open_regions);
  ctrace__map_free(&c.open_tasks);
  return rc;
}

void ctrace_stats_free(ctrace_stats *s) {
  if (!s) return;
  free(s->goroutines);
  free(s->groups);
  free(s->tasks);
  free(s->regions);
  free(s->wakers);
  ctrace__an_kept_free(&((stats_box *)s)->kept);
  free(s);
}
