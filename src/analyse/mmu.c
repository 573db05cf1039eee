/* Minimum mutator utilization, as Go 1.23's `go tool trace` computes it
 * for its /mmu page (internal/trace/gc.go: MutatorUtilizationV2, then
 * MMUCurve.MMU), with the page's default choices: the system view (one
 * utilization for the whole program, not per P), counting stop-the-world,
 * background mark workers and mark assists (AN_MMU_DEFAULT; sweeping is
 * a box the page leaves unticked).
 *
 * The utilization is a step function of time: 1 - (Ps doing GC work) /
 * GOMAXPROCS, or 0 while the world is stopped for the GC. A P does GC
 * work while it sweeps, or runs a goroutine that assists the marking or
 * is a background mark worker (a goroutine labelled "GC (dedicated)" or
 * "GC (fractional)"). Go's rules, read off its source, which decide the
 * numbers:
 *   - Go never forgets a worker's label, and at each of the worker's
 *     starts but the first counts it twice (as a marked goroutine that
 *     starts, and for its label), at each stop once: a P that ran a worker
 *     twice does GC work from then on, and a program's MMU after a few GC
 *     cycles is often 0 at small windows;
 *   - nothing counts before the first GOMAXPROCS Go sees: in a 1.22+
 *     trace the first ProcsChange; in a classic one, whose first
 *     Gomaxprocs Go 1.23 takes as the end of the state dump and drops,
 *     the second (ctrace writes two; Go 1.19's runtime one, so
 *     unless the program changed GOMAXPROCS there is no utilization and
 *     Go's page shows none);
 *   - only a stop-the-world whose reason names the GC counts ("GC mark
 *     termination", "GC sweep termination"; before Go 1.21 every kind 0
 *     and 1), not one for a heap dump or ReadMemStats;
 *   - a GC range is counted on the P of its event, a goroutine's running
 *     on the P of its transition; a P past GOMAXPROCS is left out (Go
 *     would stop on it: index out of range);
 *   - a mark assist or sweep already under way when the trace began (a
 *     1.22+ trace's first generation) counts from then, and an assist of a
 *     goroutine running then also takes 1/GOMAXPROCS off every point
 *     before; later generations' repeats of them change nothing;
 *   - the function ends with a 0 at the last event (Go's Sync after the
 *     last generation in a 1.22+ trace).
 * Go records the utilization after each of its events, the lowest where
 * two share a time; its events never do (each is moved 1 ns past the one
 * before), but the classic events the adapter makes of one Go event do
 * (GoSysExit and GoStart of a GoSyscallEnd), so a point is recorded once
 * per time, after its last event. On a classic trace ctrace keeps the
 * trace's tied times where Go moves them apart, and the test bounds what
 * that moves.
 *
 * MMU over windows of w: the least mean of that function over any window
 * [t, t+w] inside it; a window longer than the function is the whole of it
 * (Go clamps it so). The mean is piecewise linear in t, so its minimum is
 * where an edge of the window meets a step: each step's time as the left
 * edge, and as the right one. Go's banded search finds the same minimum;
 * the integrals are taken as Go takes them (float64 running sums from the
 * first point). */
#include <stdlib.h>
#include <string.h>

#include "analyse.h"

typedef struct mu_point {
  int64_t t;
  double u;
} mu_point;

typedef struct procs_at {
  int64_t t;
  int n;
} procs_at;

/* Per goroutine, bits of an_mmu.gs: */
enum {
  G_EXEC = 1,    /* executing (running or in a syscall), by its last transition */
  G_STATE = 2,   /* executing in Go's states map, kept only once there are Ps */
  G_IN_GC = 4,   /* in a mark assist (Go's inGC) */
  G_BG_MARK = 8, /* labelled a background mark worker once (Go's bgMark) */
};

struct an_mmu {
  unsigned flags;
  bool v122;          /* a Go 1.22+ trace through the adapter */
  int version;        /* the trace's, for the names of stop-the-world kinds */
  bool dump_done;     /* classic: the first Gomaxprocs has passed */
  bool seen_sync;
  int syncs_to_see;   /* Syncs before the first generation is whole: 1, 2 for go 1.25+ */
  int stw;            /* GC stops under way (Go: stw) */
  bool last_stw_gc;   /* the last stop began for the GC */
  int *pgc;           /* per P below GOMAXPROCS: GC work on it (Go: perP.gc) */
  size_t nps, capps;
  /* Ps below GOMAXPROCS with GC work (pgc > 0), counted as pgc changes:
   * a commit follows every event. */
  size_t gc_ps;
  procs_at *procs;
  size_t nprocs, capprocs;
  u64map gs;
  mu_point *pts;
  double *sums; /* sums[j]: the integral from pts[0] to pts[j] (Go's newMMUSeries) */
  size_t npts, cappts;
  bool pending; /* a point to record at pending_ts, after its last event */
  int64_t pending_ts;
  bool oom;
};

an_mmu *ctrace__an_mmu_new(const ctrace_trace_info *info, unsigned flags) {
  an_mmu *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->flags = flags;
  m->version = info->version;
  m->v122 = info->version >= 1022;
  /* Go 1.27 (gc.go) counts ranges under way until a whole generation was
   * read: until its second Sync, the first beginning the first generation
   * (Go 1.23's only Sync of the first generation ends it). */
  m->syncs_to_see = info->version >= 1025 ? 2 : 1;
  return m;
}

void ctrace__an_mmu_free(an_mmu *m) {
  if (!m) return;
  free(m->pgc);
  free(m->procs);
  free(m->pts);
  free(m->sums);
  ctrace__map_free(&m->gs);
  free(m);
}

/* Go's addUtil: a point only where the utilization changes, the lowest
 * where two share a time. */
static void add_util(an_mmu *m, int64_t t, double u) {
  if (m->npts) {
    mu_point *last = &m->pts[m->npts - 1];
    if (u == last->u) return;
    if (t == last->t) {
      if (u < last->u) *last = (mu_point){t, u};
      return;
    }
  }
  if (m->npts == m->cappts) {
    size_t cap = m->cappts ? m->cappts * 2 : 256;
    void *p = realloc(m->pts, cap * sizeof *m->pts);
    if (!p) {
      m->oom = true;
      return;
    }
    m->pts = p;
    m->cappts = cap;
  }
  m->pts[m->npts++] = (mu_point){t, u};
}

static void commit(an_mmu *m) {
  if (!m->pending) return;
  m->pending = false;
  if (!m->nps) return;
  size_t gc = m->stw > 0 ? m->nps : m->gc_ps;
  add_util(m, m->pending_ts, 1 - (double)gc / (double)m->nps);
}

static int *on_p(an_mmu *m, int64_t p) { return p >= 0 && (uint64_t)p < m->nps ? &m->pgc[p] : NULL; }

static void gc_work(an_mmu *m, int64_t p, int d) {
  int *c = on_p(m, p);
  if (!c) return;
  bool was = *c > 0;
  *c += d;
  m->gc_ps += (size_t)(*c > 0) - (size_t)was;
}

static void gomaxprocs(an_mmu *m, int64_t ts, uint64_t n) {
  if (n > 1u << 20) n = 1u << 20; /* Go's runtime allows at most 2^20 */
  if (n > m->capps) {
    void *p = realloc(m->pgc, n * sizeof *m->pgc);
    if (!p) {
      m->oom = true;
      return;
    }
    m->pgc = p;
    m->capps = n;
  }
  /* Ps past the new count are dropped, new ones start with no GC work. */
  for (size_t i = m->nps; i < n; i++) m->pgc[i] = 0;
  if (n > m->nps && !m->npts) add_util(m, ts, 1); /* the function begins */
  m->nps = n;
  m->gc_ps = 0;
  for (size_t i = 0; i < n; i++) m->gc_ps += m->pgc[i] > 0;
  if (!m->nprocs || m->procs[m->nprocs - 1].n != (int)n) {
    if (m->nprocs == m->capprocs) {
      size_t cap = m->capprocs ? m->capprocs * 2 : 16;
      void *p = realloc(m->procs, cap * sizeof *m->procs);
      if (!p) {
        m->oom = true;
        return;
      }
      m->procs = p;
      m->capprocs = cap;
    }
    m->procs[m->nprocs++] = (procs_at){ts, (int)n};
  }
}

static uint64_t *gbits(an_mmu *m, uint64_t g) {
  bool fresh;
  uint64_t *b = ctrace__map_put(&m->gs, g, &fresh);
  if (!b) m->oom = true;
  return b;
}

/* Goroutine g's transition to executing or not at P p: a P running a
 * goroutine that does GC work gains or loses it. */
static void transition(an_mmu *m, uint64_t g, int64_t p, bool exec) {
  if (!g) return;
  uint64_t *b = gbits(m, g);
  if (!b) return;
  bool was = *b & G_EXEC;
  *b = exec ? *b | G_EXEC : *b & ~(uint64_t)G_EXEC;
  if (!m->nps) return; /* Go reads nothing before it knows GOMAXPROCS */
  *b = exec ? *b | G_STATE : *b & ~(uint64_t)G_STATE;
  if ((*b & (G_IN_GC | G_BG_MARK)) && was != exec) gc_work(m, p, exec ? 1 : -1);
}

/* Go's gc.go isGCSTW: "stop-the-world (REASON)" with GC in the reason. */
static bool stw_for_gc(const an_mmu *m, const ctrace_event *ev) {
  if (m->v122) return ev->sargs[0] && memmem(ev->sargs[0], ev->sargs_len[0], "GC", 2);
  if (m->version < 1021) return ev->args[0] <= 1; /* mark or sweep termination */
  return ev->args[0] == 1 || ev->args[0] == 2;
}

static void label(an_mmu *m, const ctrace_event *ev, const char *l) {
  if (!(m->flags & AN_MMU_BACKGROUND) || !l || strncmp(l, "GC ", 3) != 0 || strcmp(l, "GC (idle)") == 0)
    return;
  uint64_t *b = ev->g ? gbits(m, ev->g) : NULL;
  if (b) *b |= G_BG_MARK;
  gc_work(m, ev->p, 1);
}

/* A range under way when its generation began: in the first generation
 * only (before the first Sync), as a begin, and an assist of a goroutine
 * executing then also counts back to the start. */
static void range_active(an_mmu *m, const ctrace_event *ev) {
  if (m->seen_sync) return;
  bool assist = ev->args[1] == CTRACE_EV122_GCMarkAssistActive && (m->flags & AN_MMU_ASSIST);
  bool sweep = ev->args[1] == CTRACE_EV122_GCSweepActive && (m->flags & AN_MMU_SWEEP);
  if (!assist && !sweep) return;
  uint64_t *cur = assist ? ctrace__map_get(&m->gs, ev->g) : NULL;
  if (sweep || (cur && (*cur & G_STATE))) {
    /* 1/GOMAXPROCS off every point so far, at the count of its time. */
    size_t pi = 0;
    for (size_t mi = 0; mi < m->npts;) {
      if (pi + 1 < m->nprocs && m->procs[pi + 1].t < m->pts[mi].t) {
        pi++;
        continue;
      }
      m->pts[mi].u -= 1.0 / (double)m->procs[pi].n;
      if (m->pts[mi].u < 0) m->pts[mi].u = 0;
      mi++;
    }
  }
  gc_work(m, ev->p, 1);
  if (assist && ev->args[0]) {
    uint64_t *b = gbits(m, ev->args[0]);
    if (b) *b |= G_IN_GC;
  }
}

bool ctrace__an_mmu_event(an_mmu *m, const ctrace_event *ev) {
  if (m->pending && ev->ts != m->pending_ts) commit(m);
  if (ev->format == 1 && ev->type == CTRACE_EV122_Sync && --m->syncs_to_see <= 0) m->seen_sync = true;
  if (ev->type == CTRACE_EV_GCSTWStart) m->last_stw_gc = stw_for_gc(m, ev);
  /* The goroutines' states are followed from the start; GC work counts
   * once there are Ps. */
  switch (ctrace__an_class(ev->type)) {
  case CTRACE_EV_Gomaxprocs:
    /* Not the adapter's own, at a 1.22+ trace's start (procs 0), nor a
     * classic trace's first. */
    if (m->v122 ? ev->args[0] != 0 : m->dump_done) gomaxprocs(m, ev->ts, ev->args[0]);
    m->dump_done = true;
    break;
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoStartLabel:
    transition(m, ev->args[0], ev->p, true);
    if (ev->type == CTRACE_EV_GoStartLabel && m->nps) label(m, ev, ev->sargs[0]);
    break;
  case CTRACE_EV_GoSysCall:
  case CTRACE_EV_GoInSyscall:
    transition(m, ev->g, ev->p, true);
    break;
  case CTRACE_EV_GoCreate:
  case CTRACE_EV_GoUnblock:
    transition(m, ev->args[0], ev->p, false);
    break;
  case CTRACE_EV_GoEnd:
  case CTRACE_EV_GoStop:
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
  case CTRACE_EV_GoSysExit:
  case CTRACE_EV_GoWaiting:
  case CTRACE_EV_GoBlock: /* and every other block */
    transition(m, ev->g, ev->p, false);
    /* Gone for good, its id not met again (model.h): forgotten, so that
     * memory follows the goroutines alive. */
    if (ev->type == CTRACE_EV_GoEnd && ev->args[0] != 1 && ev->g) ctrace__map_del(&m->gs, ev->g);
    break;
  }
  if (m->nps) {
    switch (ev->type) {
    case CTRACE_EV_GCSTWStart:
    case CTRACE_EV_GCSTWDone:
      if ((m->flags & AN_MMU_STW) && m->last_stw_gc) m->stw += ev->type == CTRACE_EV_GCSTWStart ? 1 : -1;
      break;
    case CTRACE_EV_GCSweepStart:
    case CTRACE_EV_GCSweepDone:
      if (m->flags & AN_MMU_SWEEP) gc_work(m, ev->p, ev->type == CTRACE_EV_GCSweepStart ? 1 : -1);
      break;
    case CTRACE_EV_GCMarkAssistStart:
    case CTRACE_EV_GCMarkAssistDone:
      if (m->flags & AN_MMU_ASSIST) {
        bool begin = ev->type == CTRACE_EV_GCMarkAssistStart;
        gc_work(m, ev->p, begin ? 1 : -1);
        uint64_t *b = ev->g ? gbits(m, ev->g) : NULL;
        if (b) *b = begin ? *b | G_IN_GC : *b & ~(uint64_t)G_IN_GC;
      }
      break;
    case CTRACE__MODEL_GoLabel:
      label(m, ev, ev->sargs[0]);
      break;
    case CTRACE__MODEL_RangeActive:
      commit(m); /* it rewrites the points so far */
      range_active(m, ev);
      break;
    }
    m->pending = true;
    m->pending_ts = ev->ts;
  }
  return !m->oom;
}

bool ctrace__an_mmu_end(an_mmu *m, int64_t last) {
  commit(m);
  if (m->npts && m->nps) add_util(m, last, 0);
  if (m->oom) return false;
  m->sums = malloc((m->npts ? m->npts : 1) * sizeof *m->sums);
  if (!m->sums) return false;
  double sum = 0;
  mu_point prev = {0, 0};
  for (size_t j = 0; j < m->npts; j++) {
    sum += prev.u * (double)(m->pts[j].t - prev.t);
    m->sums[j] = sum;
    prev = m->pts[j];
  }
  return true;
}

/* The integral of the function from its start to t (Go's
 * integrator.advance), t inside it. */
static double integral(const an_mmu *m, int64_t t) {
  size_t lo = 0, hi = m->npts; /* the last point at or before t */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->pts[mid].t <= t) lo = mid; else hi = mid;
  }
  double partial = t != m->pts[lo].t ? m->pts[lo].u * (double)(t - m->pts[lo].t) : 0;
  return m->sums[lo] + partial;
}

double ctrace__an_mmu(const an_mmu *m, int64_t w, int64_t *span) {
  *span = m->npts ? m->pts[m->npts - 1].t - m->pts[0].t : 0;
  if (*span <= 0 || w <= 0) return -1;
  if (w > *span) w = *span;
  int64_t t0 = m->pts[0].t, tmax = m->pts[m->npts - 1].t - w;
  double best = 1;
  for (size_t i = 0; i < 2 * m->npts; i++) {
    int64_t t = i < m->npts ? m->pts[i].t : m->pts[i - m->npts].t - w;
    if (t < t0) t = t0;
    if (t > tmax) t = tmax;
    double mu = (integral(m, t + w) - integral(m, t)) / (double)w;
    if (mu < best) best = mu;
  }
  return best;
}
