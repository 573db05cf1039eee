/* Who kept them waiting: the waits a GoUnblock ended, by who ended them.
 *
 * The blocking profiles say where goroutines waited; the end of a wait
 * says who made them wait. Go's runtime writes a wait's GoUnblock on the
 * goroutine that readied the waiter (a channel's sender, a mutex's
 * unlocker), with that goroutine's stack, on its P; `ctrace run` does the
 * same where it knows the releasing thread (docs/run.md, "Who woke whom").
 * Where no one is known, the unblock is written with no goroutine running
 * (G0: Go's network poller and timers, a ctrace thread that unblocks
 * itself), so no waker is known. A sleep is not counted: the clock ends
 * it, no one kept the sleeper waiting.
 *
 * A wait is any block (GoBlock*, but GoSleep) or a goroutine waiting when
 * the trace began (GoWaiting), up to the GoUnblock that ends it; a wait
 * still open at the trace's end has no waker yet and is left out.
 *
 * -t waker: per stack of the waker at the GoUnblock (where the delay was
 * caused), one contention and the wait's time, as Go's sync profile counts
 * the same wait under the waiter's stack (its time within --goroutine and
 * --region, which apply to the woken goroutine; only waits with time). Two
 * labels split the samples: "woken" and "waker", the start functions of
 * the goroutine that waited and of the one that ended the wait, "none"
 * when no waker is known; those samples have the one frame
 * "[no waker known]", or the one frame of their unblock that says why the
 * wait ended by itself (ctrace run's waits in poll, select and epoll:
 * ctrace_wait_timeout and its kin, ctrace__an_why).
 *
 * ctrace stats groups the same waits (stats.c collects them, with its own
 * names) by the two start functions and that reason: count, total, p50,
 * p99, max. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "profile.h"

uint64_t ctrace__an_waker_of(const ctrace_event *ev) {
  return ev->g == ev->args[0] ? 0 : ev->g;
}

#define WHY_PREFIX "ctrace_wait_"

const char *ctrace__an_why(const ctrace_reader *r, const ctrace_event *ev) {
  const ctrace_frame *fr;
  if (ctrace__an_waker_of(ev) || !ev->stack || ctrace__model_stack(r, ev->stack, &fr) != 1 ||
      !fr[0].func || strncmp(fr[0].func, WHY_PREFIX, sizeof WHY_PREFIX - 1) != 0 ||
      !fr[0].func[sizeof WHY_PREFIX - 1])
    return NULL;
  return fr[0].func + sizeof WHY_PREFIX - 1;
}

typedef struct wgo {
  const char *name; /* start function, "" until known */
  bool named;       /* settled (ctrace__an_name_from) */
  bool waiting;
  bool byid; /* a wait counted at the end names it: kept to the end */
  int64_t since;
  int64_t since_reg; /* with lives and --region: its time in regions at since */
} wgo;

/* A wait that ended before its goroutines' start functions were settled:
 * counted at the end, under the names they have then. */
typedef struct wlater {
  uint64_t woken, waker, stack;
  const char *waker_name; /* the waker's, settled, where its record may be gone (wkept) */
  int64_t d;
  bool why;
} wlater;

/* A wait kept aside until the lifetime of the goroutine it woke is known
 * (ctrace__an_lives_clip): wait_ended's arguments but the time. The
 * waker's record may be gone by then: its name if settled, else the
 * record is kept to the end (byid). */
typedef struct wkept {
  uint64_t woken, waker, stack;
  const char *waker_name;
  bool why;
} wkept;

typedef struct wctx {
  ctrace_reader *r;
  const an_filter *f;
  an_lives *l; /* the filter learned in the pass, instead of f (lives.c) */
  ctrace_profile *p;
  u64map gix; /* g -> index + 1 into gs */
  wgo *gs;
  size_t ngs, capgs;
  u64free gfree; /* the slots of goroutines gone */
  wlater *later;
  size_t nlater, caplater;
  bool preinit; /* before the trace's first Gomaxprocs */
  u64map stacks; /* waker's stack + 1, 0 for none known -> its number + 1 */
  u64map pairs;  /* woken << 32 | waker label strings -> their number + 1 */
  uint64_t key_woken, key_waker, none, unknown;
  uint64_t no_waker_loc, no_stack_loc;
  uint64_t *locs;
  size_t caplocs;
  bool oom;
} wctx;

static wgo *go_of(wctx *c, uint64_t g) {
  bool fresh;
  wgo *w = ctrace__map_slot(&c->gix, &c->gfree, g, &c->gs, &c->ngs, &c->capgs, sizeof *c->gs, &fresh);
  if (!w) {
    c->oom = true;
    return NULL;
  }
  if (fresh) w->name = "";
  return w;
}

static void name_from(wctx *c, uint64_t g, uint64_t stack) {
  wgo *w = go_of(c, g);
  if (w) ctrace__an_name_from(c->r, stack, &w->name, &w->named);
}

/* Every goroutine's start function as ctrace stats names it (stats.c), so
 * that the labels name the rows of its tables: the outermost frame of its
 * creation's stack or, for one there before the trace (created before the
 * first Gomaxprocs, which Go 1.23 gives a status instead), of the first
 * stack a change of its own state gives it; a thread started by a
 * runtime's start routine, by the user's function the routine calls
 * (ctrace__an_name_from). Learned as the pass goes: a name once settled
 * does not change. */
static void name_event(wctx *c, const ctrace_event *ev) {
  switch (ctrace__an_class(ev->type)) {
  case CTRACE_EV_Gomaxprocs:
    c->preinit = false;
    break;
  case CTRACE_EV_GoCreate:
    if (!c->preinit) name_from(c, ev->args[0], ev->args[1]);
    break;
  case CTRACE_EV_GoEnd:
  case CTRACE_EV_GoStop:
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
  case CTRACE_EV_GoSysCall:
  case CTRACE_EV_GoSysExit:
  case CTRACE_EV_GoBlock: /* and every other block */
    if (ev->g) name_from(c, ev->g, ev->stack);
    break;
  default:
    /* A start routine's thread, named by any stack of its own. */
    if (ev->g && ev->stack) {
      wgo *w = go_of(c, ev->g);
      if (w && w->name[0]) name_from(c, ev->g, ev->stack);
    }
    break;
  }
}

static uint64_t label(wctx *c, const char *name) {
  return name[0] ? ctrace__prof_string(c->p, name) : c->unknown;
}

/* Adds a wait of d ns of the goroutine named woken, ended by the one named
 * waker (NULL: none known) at stack (the unblock's); why: with no waker,
 * the unblock says why it ended by itself, and keeps its frame. */
static void add(wctx *c, uint64_t stack, bool why, const char *woken, const char *waker, int64_t d) {
  const bool wk = waker != NULL;
  uint64_t ls[2] = {label(c, woken), wk ? label(c, waker) : c->none};
  uint64_t sn = ctrace__an_number(&c->stacks, wk || why ? stack + 1 : 0);
  uint64_t pn = ctrace__an_number(&c->pairs, ls[0] << 32 | ls[1]);
  if (!sn || !pn) {
    c->oom = true;
    return;
  }
  uint64_t key = sn << 32 | pn;
  uint64_t *ix = ctrace__map_get(&c->p->sample_ids, key);
  prof_sample *s;
  if (ix) {
    s = &c->p->samples[*ix - 1];
  } else {
    const ctrace_frame *fr = NULL;
    size_t n = wk || why ? ctrace__model_stack(c->r, stack, &fr) : 0;
    if (!ctrace__prof_frames(c->p, fr, n, 0, &c->locs, &c->caplocs)) goto oom;
    if (n == 0) { /* a frame that says why there is no stack */
      c->locs[0] = wk ? c->no_stack_loc : c->no_waker_loc;
      n = 1;
    }
    if (c->p->oom || !(s = ctrace__prof_sample(c->p, key, c->locs, n))) goto oom;
    s->label_key[0] = c->key_woken;
    s->label_str[0] = ls[0];
    s->label_key[1] = c->key_waker;
    s->label_str[1] = ls[1];
  }
  s->value[0]++;
  s->value[1] += d;
  return;
oom:
  c->oom = true;
}

/* The wait of goroutine woken that goroutine waker (0: none known; its
 * settled name waker_name, if not NULL) ended at stack (why: with no
 * waker, it says why the wait ended by itself): time d. Counted now
 * where both start functions are settled, else at the end (later). */
static void wait_ended(wctx *c, uint64_t woken, uint64_t waker, const char *waker_name, uint64_t stack,
                       bool why, int64_t d) {
  /* wk first: go_of may move gs (woken's record is there: no go_of adds it) */
  wgo *wk = waker && !waker_name ? go_of(c, waker) : NULL, *w = go_of(c, woken);
  if (!w || (waker && !waker_name && !wk)) return;
  if (wk && wk->named) waker_name = wk->name;
  if (w->named && (!waker || waker_name)) {
    add(c, stack, why, w->name, waker ? waker_name : NULL, d);
    return;
  }
  w->byid = true;
  if (wk) wk->byid = true;
  if (!ctrace__room(&c->later, c->nlater, &c->caplater, sizeof *c->later, 64)) {
    c->oom = true;
    return;
  }
  c->later[c->nlater++] = (wlater){woken, waker, stack, waker_name, d, why};
}

/* A wait kept aside, its woken goroutine's lifetime known: d ns kept. */
static int wait_kept(void *arg, const void *item, int64_t d) {
  wctx *c = arg;
  wkept k;
  memcpy(&k, item, sizeof k);
  wait_ended(c, k.woken, k.waker, k.waker_name, k.stack, k.why, d);
  return c->oom ? -1 : 0;
}

/* The GoUnblock ev ends goroutine woken's wait, begun at since (its
 * time in regions then: since_reg): counted, or kept aside. */
static void unblocked(wctx *c, const ctrace_event *ev, uint64_t woken, int64_t since, int64_t since_reg) {
  uint64_t waker = ctrace__an_waker_of(ev);
  bool why = ctrace__an_why(c->r, ev) != NULL;
  int64_t d;
  if (!c->l) {
    d = ctrace__an_overlap(c->f, woken, since, ev->ts);
  } else {
    wgo *wk = waker ? go_of(c, waker) : NULL;
    if (waker && !wk) return;
    wkept k = {woken, waker, ev->stack, wk && wk->named ? wk->name : NULL, why};
    int rc = ctrace__an_lives_clip(c->l, woken, since, ev->ts, since_reg, &k, &d);
    if (rc < 0) c->oom = true;
    if (rc == 1 && wk && !wk->named) wk->byid = true;
    if (rc) return;
  }
  if (d > 0) wait_ended(c, woken, waker, NULL, ev->stack, why, d);
}

int ctrace__an_waker(ctrace_reader *r, const an_filter *f, an_lives *l, ctrace_profile *p, char *err,
                     size_t errlen) {
  wctx c = {.r = r, .f = f, .l = l, .p = p, .preinit = true};
  if (l) ctrace__an_lives_keep(l, sizeof(wkept), wait_kept, &c);
  c.key_woken = ctrace__prof_string(p, "woken");
  c.key_waker = ctrace__prof_string(p, "waker");
  c.none = ctrace__prof_string(p, "none");
  c.unknown = ctrace__prof_string(p, "(unknown)");
  c.no_waker_loc = ctrace__prof_synthetic(p, "[no waker known]");
  c.no_stack_loc = ctrace__prof_synthetic(p, "[no stack]");
  ctrace__model_rewind(r);
  ctrace_event ev;
  wgo *w;
  int64_t last = 0;
  while (!c.oom && !p->oom && ctrace__model_next(r, &ev)) {
    last = ev.ts;
    if (l && !ctrace__an_lives_observe(l, &ev)) c.oom = true;
    name_event(&c, &ev);
    switch (ctrace__an_class(ev.type)) {
    case CTRACE_EV_GoBlock: /* and every other block, sleeps too */
    case CTRACE_EV_GoWaiting:
      if ((w = go_of(&c, ev.g))) {
        w->waiting = ev.type != CTRACE_EV_GoSleep;
        w->since = ev.ts;
        w->since_reg = ctrace__an_lives_region_at(l, ev.g, ev.ts);
      }
      break;
    case CTRACE_EV_GoUnblock:
      if ((w = go_of(&c, ev.args[0])) && w->waiting) {
        w->waiting = false;
        unblocked(&c, &ev, ev.args[0], w->since, w->since_reg);
      }
      break;
    default:
      break;
    }
    /* Gone for good, its id not met again (model.h): its waits kept
     * aside count, then it is forgotten, unless a wait counted at the end
     * names it. */
    if (ev.type != CTRACE_EV_GoEnd || ev.args[0] == 1) continue;
    if (ctrace__an_lives_gone(l, ev.g) < 0) c.oom = true;
    if ((w = go_of(&c, ev.g)) && !w->byid) ctrace__map_slot_drop(&c.gix, NULL, &c.gfree, ev.g, c.gs, sizeof *c.gs);
  }
  if (!c.oom && !p->oom && ctrace__an_lives_end(l) < 0) c.oom = true;
  for (size_t i = 0; i < c.nlater && !c.oom && !p->oom; i++) {
    const wlater *lt = &c.later[i];
    const char *waker = lt->waker_name; /* else both kept (byid): no go_of moves gs here */
    if (lt->waker && !waker && (w = go_of(&c, lt->waker))) waker = w->name;
    if ((lt->waker && !waker) || !(w = go_of(&c, lt->woken))) continue;
    add(&c, lt->stack, lt->why, w->name, waker, lt->d);
  }
  p->duration_ns = last;
  int rc = 0;
  if (c.oom || p->oom) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  ctrace__map_free(&c.gix);
  ctrace__map_free(&c.stacks);
  ctrace__map_free(&c.pairs);
  ctrace__free_free(&c.gfree);
  free(c.gs);
  free(c.later);
  free(c.locs);
  return rc;
}

/* ---- ctrace stats: the table ------------------------------------------------- */

/* NULL (no waker known) sorts before any name. */
static int cmp_name(const char *a, const char *b) {
  if (!a || !b) return (a != NULL) - (b != NULL);
  return strcmp(a, b);
}

/* The row's key: names, threads, why. */
static int cmp_key(const char *wo, const char *wot, const char *wk, const char *wkt, const char *why,
                   const char *wo2, const char *wot2, const char *wk2, const char *wkt2,
                   const char *why2) {
  int k = strcmp(wo, wo2);
  if (!k) k = strcmp(wot, wot2);
  if (!k) k = cmp_name(wk, wk2);
  if (!k) k = strcmp(wkt, wkt2);
  return k ? k : cmp_name(why, why2);
}

static int cmp_wait(const void *a, const void *b) {
  const an_wait *x = a, *y = b;
  return cmp_key(x->woken_name, x->woken_thread, x->waker_name, x->waker_thread, x->why,
                 y->woken_name, y->woken_thread, y->waker_name, y->waker_thread, y->why);
}

static int cmp_row(const void *a, const void *b) {
  const ctrace_waker_stats *x = a, *y = b;
  if (x->total != y->total) return x->total > y->total ? -1 : 1;
  return cmp_key(x->woken, x->woken_thread, x->waker, x->waker_thread, x->why, y->woken,
                 y->woken_thread, y->waker, y->waker_thread, y->why);
}

static uint64_t wait_hash(uint64_t woken, uint64_t waker, unsigned named, const char *why) {
  uint64_t h = (woken + named) * 0x9e3779b97f4a7c15u;
  h ^= (waker + 0x632be59bd9b4e019u) * 0xc2b2ae3d27d4eb4fu;
  h ^= (uint64_t)(uintptr_t)why * 0x165667b19e3779f9u;
  return h ^ h >> 29;
}

bool ctrace__an_wait_add(an_waits *t, uint64_t woken, uint64_t waker, unsigned named, const char *why,
                         int64_t d) {
  /* Open addressing over the hashes: a hash taken by another record tries
   * the next one. */
  for (uint64_t h = wait_hash(woken, waker, named, why);; h++) {
    bool fresh;
    uint64_t *ix = ctrace__map_put(&t->ix, h, &fresh);
    if (!ix) return false;
    if (!fresh) {
      an_wait *w = &t->w[*ix - 1];
      if (w->woken != woken || w->waker != waker || w->named != named || w->why != why) continue;
      if (!ctrace__an_sketch_add(&w->d, d)) return false;
      w->total += d;
      return true;
    }
    if (t->n == t->cap) {
      size_t cap = t->cap ? t->cap * 2 : 64;
      void *m = realloc(t->w, cap * sizeof *t->w);
      if (!m) {
        ctrace__map_del(&t->ix, h);
        return false;
      }
      t->w = m;
      t->cap = cap;
    }
    an_wait *w = &t->w[t->n];
    *w = (an_wait){.woken = woken, .waker = waker, .named = named, .why = why, .woken_name = "",
                   .woken_thread = "", .waker_thread = ""};
    if (!ctrace__an_sketch_add(&w->d, d)) {
      ctrace__map_del(&t->ix, h);
      return false;
    }
    w->total = d;
    *ix = ++t->n;
    return true;
  }
}

void ctrace__an_waits_free(an_waits *t) {
  for (size_t i = 0; i < t->n; i++) ctrace__an_sketch_free(&t->w[i].d);
  free(t->w);
  ctrace__map_free(&t->ix);
  memset(t, 0, sizeof *t);
}

int ctrace__an_waker_table(an_waits *t, ctrace_waker_stats **out, size_t *nout) {
  an_wait *w = t->w;
  size_t n = t->n;
  *nout = 0;
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return -1;
  /* Sorted by names: the records of a row are a run. */
  if (n) qsort(w, n, sizeof *w, cmp_wait);
  an_sketch d = {0};
  for (size_t i = 0, j; i < n; i = j) {
    ctrace_waker_stats *row = &(*out)[(*nout)++];
    *row = (ctrace_waker_stats){.woken = w[i].woken_name, .waker = w[i].waker_name,
                                .why = w[i].why, .woken_thread = w[i].woken_thread,
                                .waker_thread = w[i].waker_thread};
    for (j = i; j < n && !cmp_key(w[j].woken_name, w[j].woken_thread, w[j].waker_name,
                                  w[j].waker_thread, w[j].why, row->woken, row->woken_thread,
                                  row->waker, row->waker_thread, row->why);
         j++) {
      if (!ctrace__an_sketch_merge(&d, &w[j].d)) {
        ctrace__an_sketch_free(&d);
        free(*out);
        *out = NULL;
        return -1;
      }
      row->total += w[j].total;
    }
    row->count = d.n;
    row->p50 = ctrace__an_sketch_quantile(&d, 0.50);
    row->p99 = ctrace__an_sketch_quantile(&d, 0.99);
    row->max = d.max;
    ctrace__an_sketch_free(&d);
  }
  qsort(*out, *nout, sizeof **out, cmp_row);
  return 0;
}
