/* ctrace pprof -t cpu: the trace's CPU samples (EvCPUSample, written by
 * ctrace's cpu_hz and by Go's runtime when a CPU profile runs beside the
 * trace) as a CPU profile: sample types samples/count and cpu/nanoseconds,
 * one sample per stack.
 *
 * Go's format does not record the sampling rate. Unless the caller gives it,
 * it is estimated as a profiler's clock would show it: the typical gap
 * between a goroutine's consecutive samples while it runs. A thread busy on
 * the CPU is sampled once per period of CPU time, so the shortest common
 * gap (the 10th percentile of the gaps, which waits and a shared CPU only
 * lengthen) is the period. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "profile.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The 10th percentile of the gaps (the nearest rank below, gaps[n / 10]
 * of them sorted), exactly, in memory that does not grow with the trace:
 * every gap while there are at most FEW; past that, their count by bucket
 * (BUCKETS of them: one a value below 2^SUB, then 2^SUB an octave, in the
 * order of their values), and then passes that count the gaps within the
 * bucket of the percentile in at most FINE buckets, a power of two wide
 * each, until one value is left. Each pass sees the same gaps (gaps()):
 * a period below 2^24 ns (16.8 ms; Go's default is 10) takes one such
 * pass, and only a trace of more than FEW gaps. */
enum { FEW = 1 << 14, SUB = 8, BUCKETS = (65 - SUB) << SUB, FINE = 1 << 15 };

typedef struct gapq {
  size_t n;        /* gaps seen */
  int64_t *few;    /* all of them while there are at most FEW */
  size_t nfew, capfew;
  uint64_t *count; /* by bucket: BUCKETS, or FINE in a pass within [lo, lo + width) */
  uint64_t lo, width;
  bool oom;
} gapq;

/* v's bucket (v > 0): v itself below 2^SUB, else its octave and its
 * next SUB bits (estimate_period inverts it). */
static size_t bucket_of(uint64_t v) {
  if (v < (1u << SUB)) return v;
  int shift = 63 - __builtin_clzll(v) - SUB;
  return ((size_t)(shift + 1) << SUB) + (size_t)(v >> shift) - (1u << SUB);
}

/* A gap of the first pass. */
static void gap_first(void *arg, int64_t d) {
  gapq *q = arg;
  if (q->oom) return;
  q->n++;
  if (!q->count && q->nfew < FEW) {
    if (ctrace__room(&q->few, q->nfew, &q->capfew, sizeof *q->few, 1024)) q->few[q->nfew++] = d;
    else q->oom = true;
    return;
  }
  if (!q->count) { /* too many to keep: counted from now on */
    if (!(q->count = calloc(FINE > BUCKETS ? FINE : BUCKETS, sizeof *q->count))) {
      q->oom = true;
      return;
    }
    for (size_t i = 0; i < q->nfew; i++) q->count[bucket_of((uint64_t)q->few[i])]++;
    free(q->few);
    q->few = NULL;
  }
  q->count[bucket_of((uint64_t)d)]++;
}

/* A gap of a later pass, within [lo, lo + width). */
static void gap_within(void *arg, int64_t d) {
  gapq *q = arg;
  uint64_t v = (uint64_t)d;
  if (v >= q->lo && v - q->lo < q->width) q->count[(v - q->lo) / (q->width > FINE ? q->width / FINE : 1)]++;
}

/* Calls gap for each gap between one goroutine's consecutive samples,
 * in the trace's order. A goroutine's last sample is forgotten once it
 * has ended for good (its id never comes back, model.h), so that memory
 * follows the goroutines alive. False if out of memory (gap has seen
 * those up to then). */
static bool gaps(ctrace_reader *r, void (*gap)(void *, int64_t), void *arg) {
  u64map last = {0};
  bool ok = true;
  ctrace_event ev;
  ctrace__model_rewind(r);
  while (ctrace__model_next(r, &ev)) {
    if (ev.type == CTRACE_EV_GoEnd && ev.args[0] != 1) ctrace__map_del(&last, ev.g);
    if (ev.type != CTRACE_EV_CPUSample || ev.g == 0) continue;
    bool fresh;
    uint64_t *t = ctrace__map_put(&last, ev.g, &fresh);
    if (!t) {
      ok = false;
      break;
    }
    if (!fresh && ev.ts > (int64_t)*t) gap(arg, ev.ts - (int64_t)*t);
    *t = (uint64_t)ev.ts;
  }
  ctrace__map_free(&last);
  return ok;
}

/* The sampling period in ns, from the gaps between one goroutine's
 * samples; 10 ms (Go's default rate) when there are too few to tell. */
static int64_t estimate_period(ctrace_reader *r) {
  gapq q = {0};
  bool ok = gaps(r, gap_first, &q) && !q.oom;
  int64_t period = 10000000;
  if (!q.count) { /* all kept (those up to memory's end, if it ran out) */
    if (q.nfew >= 10) {
      qsort(q.few, q.nfew, sizeof *q.few, cmp_i64);
      period = q.few[q.nfew / 10];
    }
    free(q.few);
    return period;
  }
  if (!ok || q.n < 10) {
    free(q.count);
    return period;
  }
  /* The bucket of the rank, then finer within it. */
  uint64_t k = q.n / 10, seen = 0;
  size_t i = 0;
  while (seen + q.count[i] <= k) seen += q.count[i++];
  if (i < (1u << SUB)) {
    q.lo = i;
    q.width = 1;
  } else {
    int shift = (int)(i >> SUB) - 1;
    q.lo = (((uint64_t)1 << SUB) + (i & ((1u << SUB) - 1))) << shift;
    q.width = (uint64_t)1 << shift;
  }
  k -= seen;
  while (ok && q.width > 1) {
    size_t nb = q.width > FINE ? FINE : (size_t)q.width;
    uint64_t w = q.width / nb;
    memset(q.count, 0, nb * sizeof *q.count);
    if (!(ok = gaps(r, gap_within, &q))) break;
    for (i = 0, seen = 0; seen + q.count[i] <= k; i++) seen += q.count[i];
    q.lo += i * w;
    q.width = w;
    k -= seen;
  }
  free(q.count);
  return ok ? (int64_t)q.lo : period;
}

/* -t cpu's pass. */
typedef struct cctx {
  ctrace_reader *r;
  ctrace_profile *p;
  int64_t period;
  uint64_t *locs;
  size_t caplocs;
  an_lives *l;
  /* With lives: the samples at the time the pass is at (held_ts), until
   * the pass goes past it (flush). */
  struct held {
    uint64_t g, stack;
  } *held;
  size_t nheld, capheld;
  int64_t held_ts;
} cctx;

/* Adds a sample at stack (one the model has frames for): one count and
 * the period. False when out of memory. */
static bool add(cctx *c, uint64_t stack) {
  prof_sample *s;
  uint64_t *ix = ctrace__map_get(&c->p->sample_ids, stack);
  if (ix) {
    s = &c->p->samples[*ix - 1];
  } else {
    const ctrace_frame *fr;
    size_t n = ctrace__model_stack(c->r, stack, &fr);
    if (!ctrace__prof_frames(c->p, fr, n, 0, &c->locs, &c->caplocs) || c->p->oom ||
        !(s = ctrace__prof_sample(c->p, stack, c->locs, n)))
      return false;
  }
  s->value[0]++;
  s->value[1] += c->period;
  return true;
}

/* A sample kept aside (ctrace__an_lives_clip) whose goroutine's lifetime
 * came to hold it. */
static int add_kept(void *arg, const void *item, int64_t d) {
  (void)d;
  uint64_t stack;
  memcpy(&stack, item, sizeof stack);
  return add(arg, stack) ? 0 : -1;
}

/* The filter keeps a sample of g at ts if Go's overlap of [ts, ts + 1]
 * with g's time kept is positive: if g is kept just after ts. The pass
 * knows that once it has gone past ts (each event of a Go 1.22+ trace has
 * a time of its own, stream.c): the held samples, with l->last already
 * the later time. A sample at the trace's last time counts nothing, as a
 * lifetime or region ends there at the latest. False when out of memory. */
static bool flush(cctx *c) {
  for (size_t i = 0; i < c->nheld; i++) {
    const struct held *h = &c->held[i];
    int64_t d, in = ctrace__an_lives_region_at(c->l, h->g, c->held_ts);
    int k = ctrace__an_lives_clip(c->l, h->g, c->held_ts, c->held_ts + 1, in, &h->stack, &d);
    if (k < 0 || (k == 0 && d > 0 && !add(c, h->stack))) return false;
  }
  c->nheld = 0;
  return true;
}

int ctrace__an_cpu(ctrace_reader *r, const an_filter *f, an_lives *l, int hz, ctrace_profile *p, char *err,
                   size_t errlen) {
  cctx c = {.r = r, .p = p, .l = l, .period = hz > 0 ? 1000000000 / hz : estimate_period(r)};
  p->period = c.period;
  p->period_type[0] = ctrace__prof_string(p, "cpu");
  p->period_type[1] = ctrace__prof_string(p, "nanoseconds");
  if (l) ctrace__an_lives_keep(l, sizeof(uint64_t), add_kept, &c);
  bool oom = false;
  ctrace_event ev;
  const ctrace_frame *fr;
  ctrace__model_rewind(r);
  while (!oom && !p->oom && ctrace__model_next(r, &ev)) {
    if (l) {
      if (c.nheld && ev.ts > c.held_ts) {
        l->last = ev.ts;
        oom = !flush(&c);
      }
      oom = oom || !ctrace__an_lives_observe(l, &ev);
      /* args[0] 1: a C thread's goroutine, whose id comes back (model.h). */
      if (ev.type == CTRACE_EV_GoEnd && ev.args[0] != 1 && ctrace__an_lives_gone(l, ev.g) < 0) oom = true;
    }
    if (ev.type != CTRACE_EV_CPUSample || ev.stack == 0 || ctrace__model_stack(r, ev.stack, &fr) == 0) continue;
    if (l) {
      if (!ctrace__room(&c.held, c.nheld, &c.capheld, sizeof *c.held, 4)) oom = true;
      else c.held[c.nheld++] = (struct held){ev.g, ev.stack};
      c.held_ts = ev.ts;
    } else if (ctrace__an_overlap(f, ev.g, ev.ts, ev.ts + 1) > 0 && !add(&c, ev.stack)) {
      oom = true;
    }
  }
  if (!oom && !p->oom && ctrace__an_lives_end(l) < 0) oom = true;
  free(c.held);
  free(c.locs);
  if (oom || p->oom) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}
