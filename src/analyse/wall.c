/* -t wall: every goroutine's time, by state, as one profile.
 *
 * Each goroutine's lifetime (from its creation, or the trace's start if it
 * was there before, to its end or the trace's end) is cut at every change
 * of state into intervals, and each interval is added to the sample of its
 * (stack, state, goroutine): value one interval and its nanoseconds. The
 * leaf of each sample is a frame that names the state ("[running]",
 * "[runnable]", "[syscall]", "[waiting: sync]"...), so a flame graph shows
 * where time goes and in which state; labels "state" and "goroutine" (the
 * goroutine's id) let pprof split by either (-tagfocus, -tagshow).
 *
 * The stack of an interval is the one known at its edge: for waiting,
 * runnable and syscall, the stack at entry (the block, the yield or
 * preemption, the system call); a runnable goroutine woken from a wait keeps
 * its wait's stack (where it will resume); a new one has its start function.
 * A start carries no stack, so a running interval takes the stack where it
 * stopped running (the block, yield or call), or else the one it resumed at. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "profile.h"

enum {
  S_RUNNING, S_RUNNABLE, S_SYSCALL,
  S_SEND, S_RECV, S_SELECT, S_SYNC, S_COND, S_NET, S_SLEEP, S_GC, S_BLOCK, S_UNKNOWN,
  S_COUNT,
  /* Past S_COUNT: "waiting: REASON" for the reasons of a Go 1.22+ trace's
   * blocks that no classic kind names (the model keeps Go's reason), one
   * state each, as Go 1.23's goroutine pages count them. */
  S_MAX = 256
};

/* The reasons are those Go 1.23's goroutine pages use for these events. */
static const char *const state_names[S_COUNT] = {
    "running",           "runnable",           "syscall",
    "waiting: chan send", "waiting: chan receive", "waiting: select",
    "waiting: sync",     "waiting: sync.Cond", "waiting: network",
    "waiting: sleep",    "waiting: GC assist wait", "waiting: forever",
    "waiting: unknown",
};

typedef struct gwall {
  uint64_t g;
  uint8_t state;
  bool dead;
  int64_t since;
  uint64_t stack;     /* stack of the current state (see above) */
  uint64_t sys_stack; /* the last GoSysCall's, for a call that blocks */
  size_t samples;     /* its samples: index + 1 of the first, chained by next */
  bool started;       /* it has started (GoStart) */
  an_inregion reg;    /* --region, learned in the pass (close_at) */
  int64_t since_reg;  /* reg's time at since */
  struct wdeferred {  /* intervals kept aside before its first start (defer_iv) */
    uint64_t stack;
    uint8_t state;
    int64_t d;
  } *def;
  size_t ndef, capdef;
} gwall;
typedef struct wdeferred wdeferred;

/* A (stack, state)'s locations in the profile's pool, which the samples of
 * every goroutine with that pair share. */
typedef struct wrun {
  size_t off, n;
} wrun;

typedef struct wctx {
  ctrace_reader *r;
  const an_filter *f;
  ctrace_profile *p;
  u64map gix; /* g -> index + 1 into gs */
  gwall *gs;
  size_t ngs, capgs;
  u64free freed; /* the slots of goroutines gone (streaming) */
  bool stream;   /* the profile is written as built: forget what has ended */
  u64map combo; /* stack << 8 | state -> its number (ctrace__an_number) */
  wrun *runs;   /* by combo number - 1 */
  size_t capruns;
  uint64_t state_loc[S_MAX];
  uint64_t key_state, key_g, state_str[S_MAX];
  const char *reason[S_MAX]; /* a state past S_COUNT: its reason (the adapter's string) */
  int nstates;
  uint64_t *locs;
  size_t caplocs;
  bool oom;
} wctx;

static gwall *get(wctx *c, uint64_t g, int64_t since, uint64_t stack) {
  bool fresh;
  gwall *gw = ctrace__map_slot(&c->gix, &c->freed, g, &c->gs, &c->ngs, &c->capgs, sizeof *c->gs, &fresh);
  if (!gw) {
    c->oom = true;
    return NULL;
  }
  /* First seen other than at its creation: there since the trace began. */
  if (fresh) {
    *gw = (gwall){.g = g, .state = S_RUNNABLE, .since = since, .stack = stack};
    if (c->f->ids_only && c->f->region) {
      gw->reg.depth = ctrace__an_inregion_before(c->f, g); /* open since the trace's start */
      gw->since_reg = ctrace__an_inregion_at(&gw->reg, since);
    }
  }
  return gw;
}

/* Adds an interval of d ns in state under stack to gw's sample. */
static void add(wctx *c, gwall *gw, uint64_t stack, uint8_t state, int64_t d) {
  uint64_t combo = ctrace__an_number(&c->combo, stack << 8 | state);
  if (!combo) goto oom;
  uint64_t key = combo << 32 | (uint64_t)(gw - c->gs);
  uint64_t *ix = ctrace__map_get(&c->p->sample_ids, key);
  prof_sample *s;
  if (ix) {
    s = &c->p->samples[*ix - 1];
  } else {
    if (combo > c->capruns) {
      size_t cap = c->capruns ? c->capruns * 2 : 256;
      while (cap < combo) cap *= 2;
      wrun *m = realloc(c->runs, cap * sizeof *m);
      if (!m) goto oom;
      memset(m + c->capruns, 0, (cap - c->capruns) * sizeof *m);
      c->runs = m;
      c->capruns = cap;
    }
    wrun *run = &c->runs[combo - 1];
    if (run->n) { /* the state's frame, at least */
      s = ctrace__prof_sample_run(c->p, key, run->off, run->n);
    } else {
      const ctrace_frame *fr;
      size_t n = ctrace__model_stack(c->r, stack, &fr);
      /* The state's frame first, as the leaf. */
      if (!ctrace__prof_frames(c->p, fr, n, 1, &c->locs, &c->caplocs)) goto oom;
      c->locs[0] = c->state_loc[state];
      if (c->p->oom) goto oom;
      if ((s = ctrace__prof_sample(c->p, key, c->locs, n + 1))) *run = (wrun){s->locs, s->nlocs};
    }
    if (!s) goto oom;
    s->label_key[0] = c->key_state;
    s->label_str[0] = c->state_str[state];
    s->num_key = c->key_g;
    s->num = (int64_t)gw->g;
    s->next = gw->samples;
    gw->samples = (size_t)(s - c->p->samples) + 1;
  }
  s->value[0]++;
  s->value[1] += d;
  return;
oom:
  c->oom = true;
}

/* Where the filter's pass gave no intervals (an_filter.ids_only), the
 * pass answers ctrace__an_overlap itself: with --region, by gw's time in
 * regions of the type; else, for a goroutine --goroutine keeps, Go clips
 * to its lifetime, from its first start (the trace's start if it never
 * starts) to its end or the trace's. An interval here ends at each start:
 * one after the first start counts whole; one before it is kept aside
 * (defer_iv), to count nothing if the goroutine starts, whole if it never
 * does (a few at most: a goroutine changes state without running only by
 * being woken). */
static void defer_iv(wctx *c, gwall *gw, uint64_t stack, int64_t d) {
  if (!ctrace__room(&gw->def, gw->ndef, &gw->capdef, sizeof *gw->def, 2)) {
    c->oom = true;
    return;
  }
  gw->def[gw->ndef++] = (wdeferred){stack, gw->state, d};
}

/* Ends gw's current interval at ts; end_stack is the stack of the event
 * that ends it, 0 if it has none. */
static void close_at(wctx *c, gwall *gw, int64_t ts, uint64_t end_stack) {
  if (gw->dead) return;
  uint64_t stack = gw->stack;
  if (gw->state == S_RUNNING && end_stack) stack = end_stack;
  const an_filter *f = c->f;
  int64_t d;
  if (!f->ids_only) {
    d = ctrace__an_overlap(f, gw->g, gw->since, ts);
  } else if (f->by_name && !ctrace__set_has(&f->members, gw->g)) {
    d = 0;
  } else if (f->region) {
    d = ctrace__an_inregion_at(&gw->reg, ts) - gw->since_reg;
    gw->since_reg = ctrace__an_inregion_at(&gw->reg, ts);
  } else if (!gw->started) {
    if (ts > gw->since) defer_iv(c, gw, stack, ts - gw->since);
    d = 0;
  } else {
    d = ts - gw->since;
  }
  gw->since = ts;
  if (d > 0) add(c, gw, stack, gw->state, d);
}

/* gw starts: what was kept aside counts nothing (above). */
static void start(gwall *gw) {
  gw->started = true;
  free(gw->def);
  gw->def = NULL;
  gw->ndef = gw->capdef = 0;
}

/* gw has ended for good (its id never comes back): when the profile is
 * written as built, its samples are final; they go out, and it is
 * forgotten, so that memory follows the goroutines alive. */
static void gone(wctx *c, gwall *gw) {
  if (!c->stream) return;
  for (size_t i = gw->samples; i;) {
    size_t next = c->p->samples[i - 1].next;
    ctrace__prof_retire(c->p, i - 1);
    i = next;
  }
  free(gw->def);
  size_t at = (size_t)(gw - c->gs);
  ctrace__map_slot_drop(&c->gix, NULL, &c->freed, gw->g, c->gs, sizeof *c->gs);
  c->gs[at].dead = true; /* zeroed: not closed again at the end */
}

static void enter(gwall *gw, uint8_t state, uint64_t stack) {
  gw->state = state;
  if (stack) gw->stack = stack;
}

/* A state for a label name ("running", "waiting: sync"...): its frame
 * "[NAME]" and its label string. */
static void name_state(wctx *c, int state, const char *name) {
  char frame[CTRACE_GO122_MAX_STRING + 32];
  snprintf(frame, sizeof frame, "[%s]", name);
  c->state_loc[state] = ctrace__prof_synthetic(c->p, frame);
  c->state_str[state] = ctrace__prof_string(c->p, name);
}

/* The state of a wait that Go names by reason: its own, made on first
 * sight (the adapter's strings are interned: one pointer a reason);
 * S_BLOCK if there are too many. */
static int reason_state(wctx *c, const char *reason) {
  for (int i = S_COUNT; i < c->nstates; i++)
    if (c->reason[i] == reason) return i;
  if (c->nstates == S_MAX) return S_BLOCK;
  char name[CTRACE_GO122_MAX_STRING + 16];
  snprintf(name, sizeof name, "waiting: %s", reason);
  c->reason[c->nstates] = reason;
  name_state(c, c->nstates, name);
  return c->nstates++;
}

static int wait_state(wctx *c, const ctrace_event *ev) {
  if (ev->type == CTRACE_EV_GoBlock && ev->sargs[0] && ev->sargs[0][0]) return reason_state(c, ev->sargs[0]);
  switch (ev->type) {
  case CTRACE_EV_GoBlockSend: return S_SEND;
  case CTRACE_EV_GoBlockRecv: return S_RECV;
  case CTRACE_EV_GoBlockSelect: return S_SELECT;
  case CTRACE_EV_GoBlockSync: return S_SYNC;
  case CTRACE_EV_GoBlockCond: return S_COND;
  case CTRACE_EV_GoBlockNet: return S_NET;
  case CTRACE_EV_GoSleep: return S_SLEEP;
  case CTRACE_EV_GoBlockGC: return S_GC;
  case CTRACE_EV_GoBlock: return S_BLOCK;
  default: return -1;
  }
}

int ctrace__an_wall(ctrace_reader *r, const an_filter *f, ctrace_profile *p, char *err,
                    size_t errlen) {
  wctx c = {.r = r, .f = f, .p = p, .stream = p->z != NULL};
  p->default_type = p->sample_type[1][0];
  c.key_state = ctrace__prof_string(p, "state");
  c.key_g = ctrace__prof_string(p, "goroutine");
  for (int i = 0; i < S_COUNT; i++) name_state(&c, i, state_names[i]);
  c.nstates = S_COUNT;
  ctrace__model_rewind(r);
  ctrace_event ev;
  int64_t last = 0;
  while (!c.oom && !p->oom && ctrace__model_next(r, &ev)) {
    last = ev.ts;
    gwall *gw;
    int w;
    switch (ev.type) {
    case CTRACE_EV_GoCreate:
      /* A new goroutine waits to run, at its start function. */
      if ((gw = get(&c, ev.args[0], ev.ts, ev.args[1]))) {
        gw->since = ev.ts;
        gw->since_reg = ctrace__an_inregion_at(&gw->reg, ev.ts);
        gw->dead = false;
        enter(gw, S_RUNNABLE, ev.args[1]);
      }
      break;
    case CTRACE_EV_GoStart:
    case CTRACE_EV_GoStartLabel:
      if ((gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, 0);
        enter(gw, S_RUNNING, 0);
        start(gw);
      }
      break;
    case CTRACE_EV_UserRegion: /* --region: the pass learns the regions (live_overlap) */
      if (f->ids_only && f->region && ctrace__an_inregion_event(&ev, f->region) && (gw = get(&c, ev.g, 0, 0)))
        ctrace__an_inregion_observe(&gw->reg, &ev, f->region);
      break;
    case CTRACE_EV_GoEnd:
    case CTRACE_EV_GoStop:
      if ((gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, ev.stack);
        gw->dead = true;
        /* args[0] 1: a C thread's goroutine, whose id comes back (model.h). */
        if (ev.type == CTRACE_EV_GoEnd && ev.args[0] != 1) gone(&c, gw);
      }
      break;
    case CTRACE_EV_GoSched:
    case CTRACE_EV_GoPreempt:
      if ((gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, ev.stack);
        enter(gw, S_RUNNABLE, ev.stack);
      }
      break;
    case CTRACE_EV_GoUnblock:
      if ((gw = get(&c, ev.args[0], 0, 0))) {
        close_at(&c, gw, ev.ts, 0);
        enter(gw, S_RUNNABLE, 0);
      }
      break;
    case CTRACE_EV_GoSysCall:
      if ((gw = get(&c, ev.g, 0, 0))) gw->sys_stack = ev.stack;
      break;
    case CTRACE_EV_GoSysBlock:
      if ((gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, gw->sys_stack);
        enter(gw, S_SYSCALL, gw->sys_stack);
      }
      break;
    case CTRACE_EV_GoSysExit:
      if ((gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, 0);
        enter(gw, S_RUNNABLE, 0);
      }
      break;
    case CTRACE_EV_GoWaiting:
    case CTRACE_EV_GoInSyscall:
      if ((gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, 0);
        enter(gw, ev.type == CTRACE_EV_GoWaiting ? S_UNKNOWN : S_SYSCALL, 0);
      }
      break;
    default:
      if ((w = wait_state(&c, &ev)) >= 0 && (gw = get(&c, ev.g, 0, 0))) {
        close_at(&c, gw, ev.ts, ev.stack);
        enter(gw, (uint8_t)w, ev.stack);
      }
      break;
    }
  }
  for (size_t i = 0; i < c.ngs && !c.oom; i++) {
    gwall *gw = &c.gs[i];
    close_at(&c, gw, last, 0);
    /* Never started: its lifetime is the trace's, all it was kept aside. */
    for (size_t k = 0; k < gw->ndef && !c.oom; k++) add(&c, gw, gw->def[k].stack, gw->def[k].state, gw->def[k].d);
    free(gw->def);
  }
  p->duration_ns = last;
  int rc = 0;
  if (c.oom || p->oom) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  ctrace__map_free(&c.gix);
  ctrace__map_free(&c.combo);
  ctrace__free_free(&c.freed);
  free(c.runs);
  free(c.gs);
  free(c.locs);
  return rc;
}
