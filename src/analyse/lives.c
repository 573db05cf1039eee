/* Goroutine lifetimes learned in a profile's own pass (an_lives,
 * analyse.h), for the profiles of a Go 1.22+ trace that clip intervals to
 * them or to --region's regions: pprof.c's four, waker.c and cpu.c.
 *
 * filter.c learns the lifetimes in a pass of its own and keeps an interval
 * per matching goroutine or region, which grows with the goroutines a
 * trace ever had. Here the profile's own pass learns them as it goes: an
 * interval of a goroutine that has started is clipped at once (its start
 * no longer changes; its end, if any, comes after). One of a goroutine not
 * started yet (waiting when the trace began, or in Go 1.27's rules a
 * creation up to the start) is kept aside with the caller's item: it
 * counts nothing if the goroutine starts later, which drops it then, and
 * is counted (an_lives_count) once the goroutine has ended for good or the
 * pass has ended, if it never does. So is one that ends after an end of
 * its goroutine already seen (a later GoStop would move the end). The
 * values are filter.c's to the nanosecond; only an item kept aside is
 * counted later than the others. Only a Go 1.22+ trace's times only grow
 * (a classic trace's may wrap), so only there is "started" final. */
#include <stdlib.h>
#include <string.h>

#include "analyse.h"

/* What is kept aside: the interval, then the caller's item. */
typedef struct kept {
  int64_t begin, end;
} kept;

static size_t kept_size(const an_lives *l) {
  return sizeof(kept) + (l->item + 7) / 8 * 8;
}

void ctrace__an_lives_init(an_lives *l, const an_filter *f) {
  memset(l, 0, sizeof *l);
  if (!f->ids_only) return;
  if (f->by_name) l->only = &f->members;
  if (f->region) {
    l->region = f->region;
    l->f = f;
  }
}

void ctrace__an_lives_keep(an_lives *l, size_t item, an_lives_count count, void *ctx) {
  l->item = item;
  l->count = count;
  l->ctx = ctx;
}

static an_life *life_of(an_lives *l, uint64_t g) {
  bool fresh;
  an_life *x = ctrace__map_slot_cached(&l->recent, &l->index, &l->freed, g, &l->l, &l->n, &l->cap, sizeof *l->l, &fresh);
  if (x && fresh) {
    x->end = -1;
    if (l->region) x->reg.depth = ctrace__an_inregion_before(l->f, g); /* open since the trace's start */
  }
  return x;
}

/* --region (an_inregion): a region's begin or end, or a goroutine's end.
 * False if out of memory. */
static bool region_observe(an_lives *l, const ctrace_event *ev) {
  if (!ctrace__an_inregion_event(ev, l->region)) return true;
  an_life *x = life_of(l, ev->g);
  if (!x) return false;
  ctrace__an_inregion_observe(&x->reg, ev, l->region);
  return true;
}

int64_t ctrace__an_lives_region_at(an_lives *l, uint64_t g, int64_t ts) {
  if (!l || !l->region) return 0;
  an_life *x = life_of(l, g);
  return x ? ctrace__an_inregion_at(&x->reg, ts) : 0;
}

static an_life *life_member(an_lives *l, uint64_t g) {
  an_life *x = life_of(l, g);
  if (x && !x->member && (!l->only || ctrace__set_has(l->only, g))) {
    l->members++;
    x->member = true;
  }
  return x;
}

/* x's first start, if it had none; what is kept aside of a goroutine
 * that starts counts nothing (it ends before the start, and filter.c
 * clips it to the start). */
static void life_start(an_life *x, int64_t ts) {
  if (x->start != 0) return;
  x->start = ts;
  if (x->start != 0) {
    free(x->d);
    x->d = NULL;
    x->nd = x->capd = 0;
  }
}

bool ctrace__an_lives_observe(an_lives *l, const ctrace_event *ev) {
  l->last = ev->ts;
  if (l->region && !region_observe(l, ev)) return false;
  uint64_t g = ev->g;
  if (ev->type == CTRACE_EV_GoCreate || ev->type == CTRACE__MODEL_GoStatusStack) g = ev->args[0];
  if (!g || !(ev->type == CTRACE_EV_GoCreate || ev->type == CTRACE_EV_GoStart ||
              ev->type == CTRACE_EV_GoStartLabel || ev->type == CTRACE_EV_GoEnd ||
              ev->type == CTRACE_EV_GoStop || ev->tstack))
    return true;
  an_life *x = life_member(l, g);
  if (!x) return false;
  switch (ev->type) {
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoStartLabel:
    life_start(x, ev->ts);
    break;
  case CTRACE_EV_GoEnd:
  case CTRACE_EV_GoStop:
    x->end = ev->ts;
    break;
  default:
    break;
  }
  return true;
}

bool ctrace__an_lives_transition(an_lives *l, const ctrace_event *ev) {
  enum { NOTEXIST = 1, RUNNING = 3, WAITING = 4 }; /* Go's GoState (model.h) */
  l->last = ev->ts;
  if (l->region && ev->type == CTRACE_EV_UserRegion) return region_observe(l, ev);
  uint64_t g = ev->args[0], to = ev->args[2];
  if (ev->type != CTRACE__MODEL_Transition || !g || ev->args[1] == to) return true;
  an_life *x = life_member(l, g);
  if (!x) return false;
  if (to == RUNNING) {
    life_start(x, ev->ts);
  } else if (to == NOTEXIST || (to == WAITING && ev->sargs_len[0] == 7 && memcmp(ev->sargs[0], "forever", 7) == 0)) {
    x->end = ev->ts;
    if (l->region) ctrace__an_inregion_to(&x->reg, ev->ts, 0); /* its regions end with it (GoEnd, GoStop) */
  }
  return true;
}

/* Go's pprofOverlappingDuration of [begin, end] with the lifetime of a
 * member goroutine x: closed intervals, those that touch overlap by 0. */
static int64_t life_overlap(const an_life *x, int64_t last, int64_t begin, int64_t end) {
  if (!x || !x->member) return 0;
  int64_t lb = x->start, le = x->end >= 0 ? x->end : last;
  if (!(lb <= end && begin <= le)) return 0;
  int64_t b = lb > begin ? lb : begin, e = le < end ? le : end;
  return e > b ? e - b : 0;
}

int ctrace__an_lives_clip(an_lives *l, uint64_t g, int64_t begin, int64_t end, int64_t in_region,
                          const void *item, int64_t *d) {
  *d = 0;
  if (l->only && !ctrace__set_has(l->only, g)) return 0;
  if (l->region) { /* regions alone: no lifetime clips the interval */
    an_life *x = life_of(l, g);
    if (!x) return -1;
    *d = ctrace__an_inregion_at(&x->reg, end) - in_region;
    return 0;
  }
  uint64_t *ix = ctrace__map_get(&l->index, g);
  an_life *x = ix ? &l->l[*ix - 1] : NULL;
  if (x && x->start != 0 && (x->end < 0 || end <= x->end)) {
    *d = life_overlap(x, l->last, begin, end);
    return 0;
  }
  /* Not started yet, or past an end: until the lifetime is known. */
  if (!x && !(x = life_of(l, g))) return -1;
  size_t size = kept_size(l);
  if (!ctrace__room(&x->d, x->nd, &x->capd, size, 2)) return -1;
  char *k = x->d + x->nd++ * size;
  memcpy(k, &(kept){begin, end}, sizeof(kept));
  if (l->item) memcpy(k + sizeof(kept), item, l->item);
  return 1;
}

/* What is kept aside of x, its lifetime known. */
static int count_kept(an_lives *l, const an_life *x) {
  size_t size = kept_size(l);
  for (size_t i = 0; i < x->nd; i++) {
    const char *k = x->d + i * size;
    kept iv;
    memcpy(&iv, k, sizeof iv);
    int64_t d = life_overlap(x, l->last, iv.begin, iv.end);
    if (d > 0 && l->count(l->ctx, k + sizeof(kept), d) < 0) return -1;
  }
  return 0;
}

int ctrace__an_lives_gone(an_lives *l, uint64_t g) {
  const uint64_t *ix = l ? ctrace__map_get(&l->index, g) : NULL;
  if (!ix) return 0;
  an_life *x = &l->l[*ix - 1];
  int rc = count_kept(l, x);
  free(x->d);
  ctrace__map_slot_drop(&l->index, &l->recent, &l->freed, g, l->l, sizeof *l->l);
  return rc;
}

int ctrace__an_lives_end(an_lives *l) {
  for (size_t i = 0; l && i < l->n; i++)
    if (count_kept(l, &l->l[i]) < 0) return -1;
  return 0;
}

void ctrace__an_lives_free(an_lives *l) {
  for (size_t i = 0; i < l->n; i++) free(l->l[i].d);
  free(l->l);
  ctrace__map_free(&l->index);
  ctrace__free_free(&l->freed);
  memset(l, 0, sizeof *l);
}
