/* Go's four trace profiles (cmd/trace/pprof.go of Go 1.19) and the entry
 * point of every profile.
 *
 * Go pairs each event with the later one that ends the state it began
 * (internal/trace's postProcessTrace sets Event.Link): a block with the
 * unblock, a syscall with its exit, an unblock or a creation with the
 * start that follows. A profile then sums, per stack id of the first
 * event, the pairs of its kind: one contention and the time between the
 * two, if that time is positive. We keep Go's pairing rule itself: per
 * goroutine, the last event that may still be linked (Go's gdesc.ev), and
 * which later events link it. The reader's own links (ctrace_event.link)
 * carry the same pairs, but point back from the later event; the pending
 * event per goroutine is what this pass needs anyway to have the earlier
 * event's time, stack and goroutine at hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "ctrace/format_go122.h"
#include "profile.h"

typedef struct pending {
  uint8_t type;
  bool valid;
  int64_t ts;
  uint64_t stack, g; /* g: the goroutine the event is on (Go's ev.G) */
  int64_t in_region; /* --region: its goroutine's time in regions up to ts (an_inregion) */
} pending;

typedef struct pstate {
  u64map index; /* g -> index + 1 into pend */
  u64cache recent; /* index's last keys */
  pending *pend;
  size_t n, cap;
  u64free freed; /* the slots of goroutines that ended */
} pstate;

static pending *pend_of(pstate *s, uint64_t g) {
  bool fresh;
  return ctrace__map_slot_cached(&s->recent, &s->index, &s->freed, g, &s->pend, &s->n, &s->cap, sizeof *s->pend, &fresh);
}

static void pstate_free(pstate *s) {
  ctrace__map_free(&s->index);
  ctrace__free_free(&s->freed);
  free(s->pend);
}

/* The event kinds whose pairs a profile counts (computePprof*). */
static bool counted(ctrace_profile_kind k, uint8_t t) {
  switch (k) {
  case CTRACE_PROFILE_NET:
    return t == CTRACE_EV_GoBlockNet;
  case CTRACE_PROFILE_SYNC:
    return t == CTRACE_EV_GoBlockSend || t == CTRACE_EV_GoBlockRecv ||
           t == CTRACE_EV_GoBlockSelect || t == CTRACE_EV_GoBlockSync ||
           t == CTRACE_EV_GoBlockCond || t == CTRACE_EV_GoBlockGC;
  case CTRACE_PROFILE_SYSCALL:
    return t == CTRACE_EV_GoSysCall;
  case CTRACE_PROFILE_SCHED:
    return t == CTRACE_EV_GoUnblock || t == CTRACE_EV_GoCreate;
  default:
    return false;
  }
}

/* Go 1.23's command line clips even an unfiltered profile to each
 * goroutine's lifetime (pprofMatchingGoroutines with no name): from its
 * first start (0 if it never runs) to its end (or the trace's). Where
 * filter.c learns the lifetimes in a pass of their own, the profile's own
 * pass learns them as it goes, which saves a pass of the trace: an
 * interval of a goroutine that has started is clipped at once (its start
 * no longer changes; its end, if any, comes after). One of a goroutine
 * not started yet (waiting when the trace began, or in Go 1.27's rules a
 * creation up to the start) is kept aside: it counts nothing if the
 * goroutine starts later, which drops it then, and is counted at the end
 * of the pass if it never does. So is one that ends after an end of its
 * goroutine already seen (a later GoStop would move the end). The values
 * are filter.c's to the nanosecond; only such a rare sample kept aside
 * to the end comes after the others in the profile, if its stack had no
 * sample yet. */
typedef struct deferred {
  pending pe;
  int64_t ts;
} deferred;

typedef struct life {
  int64_t start, end; /* first GoStart (0 if none yet), GoEnd/GoStop (-1 if none yet) */
  bool member;        /* one filter.c keeps: seen as it sees goroutines */
  deferred *d;        /* intervals kept aside */
  size_t nd, capd;
  an_inregion reg; /* --region */
} life;

typedef struct lives {
  u64map index; /* g -> index + 1 into l */
  u64cache recent; /* index's last keys */
  life *l;
  size_t n, cap;
  u64free freed; /* the slots of goroutines that ended */
  const u64set *only; /* a --goroutine filter's goroutines (filter.c), or NULL: all */
  const char *region; /* --region's type, or NULL */
  const an_filter *f; /* filter.c's pass, for the regions begun before the trace */
  size_t members;
  int64_t last; /* the last event's time */
} lives;

typedef struct ctx {
  ctrace_reader *r;
  ctrace_profile_kind kind;
  const an_filter *f;
  lives *online; /* lifetimes learned in the pass, instead of f */
  ctrace_profile *p;
  uint64_t *locs;
  size_t caplocs;
  bool go123; /* a Go 1.22+ trace: Go 1.23's rules, every pair counted */
  bool go127; /* a go 1.25+ trace: Go 1.27's (go127_profile) */
  u64map last; /* go127: sample key -> the stack id that last gave it */
  /* go127: the key of the stack ids met last, a slot by id: a stack id
   * names one list of frames, and most pairs repeat a few stacks. */
  struct {
    uint64_t stack, key;
  } keys[1024];
} ctx;

/* Go's stackMap keys a record by its stack's PCs (the first 128, the rest
 * zero), and gives it the frames of the newest stack of those PCs: the
 * empty stack and one of a zero PC are one record. The key: a hash of the
 * PCs up to the last that is not zero, 0 for none. */
static uint64_t pcs_key(const ctrace_frame *fr, size_t n) {
  if (n > 128) n = 128;
  while (n > 0 && fr[n - 1].pc == 0) n--;
  if (n == 0) return 0;
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h = (h ^ fr[i].pc) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return h | 1; /* never 0 */
}

/* The key of stack id stack (frames fr), through c->keys. */
static uint64_t stack_key(ctx *c, uint64_t stack, const ctrace_frame *fr, size_t n) {
  size_t slot = stack % (sizeof c->keys / sizeof c->keys[0]);
  if (stack && c->keys[slot].stack == stack) return c->keys[slot].key;
  uint64_t key = pcs_key(fr, n);
  c->keys[slot].stack = stack;
  c->keys[slot].key = key;
  return key;
}

/* c->locs: the profile's locations of the n frames fr. False when out of
 * memory. */
static bool frame_locs(ctx *c, const ctrace_frame *fr, size_t n) {
  if (n > c->caplocs) {
    void *m = realloc(c->locs, n * sizeof *c->locs);
    if (!m) return false;
    c->locs = m;
    c->caplocs = n;
  }
  for (size_t i = 0; i < n; i++)
    c->locs[i] = ctrace__prof_frame(c->p, fr[i].pc, fr[i].func, fr[i].file, fr[i].line);
  return true;
}

static life *life_of(lives *l, uint64_t g) {
  bool fresh;
  life *x = ctrace__map_slot_cached(&l->recent, &l->index, &l->freed, g, &l->l, &l->n, &l->cap, sizeof *l->l, &fresh);
  if (x && fresh) {
    x->end = -1;
    if (l->region) x->reg.depth = ctrace__an_inregion_before(l->f, g); /* open since the trace's start */
  }
  return x;
}

/* --region (an_inregion): a region's begin or end, or a goroutine's end.
 * False if out of memory. */
static bool region_observe(lives *l, const ctrace_event *ev) {
  if (!ctrace__an_inregion_event(ev, l->region)) return true;
  life *x = life_of(l, ev->g);
  if (!x) return false;
  ctrace__an_inregion_observe(&x->reg, ev, l->region);
  return true;
}

/* The time pe's goroutine has spent in regions up to ts, for an interval
 * that begins there; 0 without --region. */
static int64_t region_mark(ctx *c, uint64_t g, int64_t ts) {
  if (!c->online || !c->online->region) return 0;
  life *x = life_of(c->online, g);
  return x ? ctrace__an_inregion_at(&x->reg, ts) : 0;
}

static life *life_member(lives *l, uint64_t g) {
  life *x = life_of(l, g);
  if (x && !x->member && (!l->only || ctrace__set_has(l->only, g))) {
    l->members++;
    x->member = true;
  }
  return x;
}

/* x's first start, if it had none; the intervals kept aside of a
 * goroutine that starts count nothing (they end before its start, and
 * filter.c clips them to it). */
static void life_start(life *x, int64_t ts) {
  if (x->start != 0) return;
  x->start = ts;
  if (x->start != 0) {
    free(x->d);
    x->d = NULL;
    x->nd = x->capd = 0;
  }
}

/* What filter.c's pass learns of goroutines from ev (its rules, the same
 * events). */
static bool life_observe(lives *l, const ctrace_event *ev) {
  l->last = ev->ts;
  if (l->region && !region_observe(l, ev)) return false;
  uint64_t g = ev->g;
  if (ev->type == CTRACE_EV_GoCreate || ev->type == CTRACE__MODEL_GoStatusStack) g = ev->args[0];
  if (!g || !(ev->type == CTRACE_EV_GoCreate || ev->type == CTRACE_EV_GoStart ||
              ev->type == CTRACE_EV_GoStartLabel || ev->type == CTRACE_EV_GoEnd ||
              ev->type == CTRACE_EV_GoStop || ev->tstack))
    return true;
  life *x = life_member(l, g);
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

/* The same for a go 1.25+ trace, from its transitions alone (Go 1.27's
 * summary): a goroutine is one from its first transition that changes its
 * state, starts at its first into running, and ends at one to not
 * existing or to waiting "forever". */
static bool life_transition(lives *l, const ctrace_event *ev) {
  enum { NOTEXIST = 1, RUNNING = 3, WAITING = 4 }; /* Go's GoState (model.h) */
  l->last = ev->ts;
  if (l->region && ev->type == CTRACE_EV_UserRegion) return region_observe(l, ev);
  uint64_t g = ev->args[0], to = ev->args[2];
  if (ev->type != CTRACE__MODEL_Transition || !g || ev->args[1] == to) return true;
  life *x = life_member(l, g);
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
static int64_t life_overlap(const life *x, int64_t last, int64_t begin, int64_t end) {
  if (!x || !x->member) return 0;
  int64_t lb = x->start, le = x->end >= 0 ? x->end : last;
  if (!(lb <= end && begin <= le)) return 0;
  int64_t b = lb > begin ? lb : begin, e = le < end ? le : end;
  return e > b ? e - b : 0;
}

static void lives_free(lives *l) {
  for (size_t i = 0; i < l->n; i++) free(l->l[i].d);
  free(l->l);
  ctrace__map_free(&l->index);
  ctrace__free_free(&l->freed);
}

static int count(ctx *c, const pending *pe, const ctrace_frame *fr, size_t n, int64_t d);

/* pe is linked to an event at time ts: count the pair if it is of the
 * profile's kind (Go's buildProfile: one sample per stack id, its
 * locations the stack's frames, leaf first). */
static int linked(ctx *c, const pending *pe, int64_t ts) {
  if ((!c->go123 && !counted(c->kind, pe->type)) || (pe->stack == 0 && !c->go127)) return 0;
  const ctrace_frame *fr = NULL;
  size_t n = pe->stack ? ctrace__model_stack(c->r, pe->stack, &fr) : 0;
  if (n == 0 && !c->go127) return 0; /* Go 1.27 counts it under the empty stack */
  int64_t d;
  if (c->online) {
    if (c->online->only && !ctrace__set_has(c->online->only, pe->g)) return 0;
    if (c->online->region) { /* regions alone: no lifetime clips the interval */
      life *x = life_of(c->online, pe->g);
      if (!x) return -1;
      return count(c, pe, fr, n, ctrace__an_inregion_at(&x->reg, ts) - pe->in_region);
    }
    uint64_t *ix = ctrace__map_get(&c->online->index, pe->g);
    life *x = ix ? &c->online->l[*ix - 1] : NULL;
    if (!x || x->start == 0 || (x->end >= 0 && ts > x->end)) {
      /* Not started yet, or after an end: to the end of the pass. */
      if (!x && !(x = life_of(c->online, pe->g))) return -1;
      if (x->nd == x->capd) {
        size_t cap = x->capd ? x->capd * 2 : 2;
        void *m = realloc(x->d, cap * sizeof *x->d);
        if (!m) return -1;
        x->d = m;
        x->capd = cap;
      }
      x->d[x->nd++] = (deferred){*pe, ts};
      return 0;
    }
    d = life_overlap(x, c->online->last, pe->ts, ts);
  } else {
    d = ctrace__an_overlap(c->f, pe->g, pe->ts, ts);
  }
  return count(c, pe, fr, n, d);
}

/* The intervals kept aside of x, once its lifetime is known. */
static int count_deferred(ctx *c, const life *x) {
  for (size_t k = 0; k < x->nd; k++) {
    const pending *pe = &x->d[k].pe;
    const ctrace_frame *fr = NULL;
    size_t n = pe->stack ? ctrace__model_stack(c->r, pe->stack, &fr) : 0;
    if (count(c, pe, fr, n, life_overlap(x, c->online->last, pe->ts, x->d[k].ts)) < 0) return -1;
  }
  return 0;
}

/* The intervals kept aside, once the pass knows every lifetime. */
static int linked_deferred(ctx *c) {
  for (size_t i = 0; i < c->online->n; i++)
    if (count_deferred(c, &c->online->l[i]) < 0) return -1;
  return 0;
}

/* Goroutine g has ended for good (Go never gives its id again): what is
 * kept of it goes, so that memory follows the goroutines alive, not all
 * those a trace ever had. Its lifetime is known: the intervals kept aside
 * count now. Its pending interval, if any, no transition of its ends. */
static int gone(ctx *c, pstate *s, uint64_t g) {
  ctrace__map_slot_drop(&s->index, &s->recent, &s->freed, g, s->pend, sizeof *s->pend);
  lives *l = c->online;
  const uint64_t *ix = l ? ctrace__map_get(&l->index, g) : NULL;
  if (!ix) return 0;
  life *x = &l->l[*ix - 1];
  int rc = count_deferred(c, x);
  free(x->d);
  ctrace__map_slot_drop(&l->index, &l->recent, &l->freed, g, l->l, sizeof *l->l);
  return rc;
}

/* Adds a pair of d ns under pe's stack (frames fr), if d > 0. */
static int count(ctx *c, const pending *pe, const ctrace_frame *fr, size_t n, int64_t d) {
  if (d <= 0) return 0;
  prof_sample *s;
  uint64_t key = c->go127 ? stack_key(c, pe->stack, fr, n) : pe->stack;
  uint64_t *ix = ctrace__map_get(&c->p->sample_ids, key);
  bool fresh = true;
  uint64_t *last = c->go127 ? ctrace__map_put(&c->last, key, &fresh) : NULL;
  if (c->go127 && !last) return -1;
  if (ix && c->go127 && !fresh && *last != pe->stack) {
    /* The same PCs from another stack: the newest stack's frames. */
    s = &c->p->samples[*ix - 1];
    if (!frame_locs(c, fr, n)) return -1;
    if (c->p->oom || !ctrace__prof_relocate(c->p, s, c->locs, n)) return -1;
  } else if (ix) {
    s = &c->p->samples[*ix - 1];
  } else {
    if (!frame_locs(c, fr, n)) return -1;
    if (c->p->oom || !(s = ctrace__prof_sample(c->p, key, c->locs, n))) return -1;
  }
  if (last) *last = pe->stack;
  s->value[0]++;
  s->value[1] += d;
  return 0;
}

static int go_profile(ctx *c) {
  pstate s = {0};
  int rc = 0;
  ctrace_event ev;
  ctrace__model_rewind(c->r);
  while (rc == 0 && ctrace__model_next(c->r, &ev)) {
    pending *pe;
    switch (ctrace__an_class(ev.type)) {
    case CTRACE_EV_GoCreate:
    case CTRACE_EV_GoUnblock: /* the goroutine made runnable waits to start */
      if (!(pe = pend_of(&s, ev.args[0]))) goto oom;
      if (ev.type == CTRACE_EV_GoUnblock && pe->valid) rc = linked(c, pe, ev.ts);
      *pe = (pending){ev.type, true, ev.ts, ev.stack, ev.g, 0};
      break;
    case CTRACE_EV_GoStart:
    case CTRACE_EV_GoStartLabel:
      if (!(pe = pend_of(&s, ev.g))) goto oom;
      if (pe->valid) rc = linked(c, pe, ev.ts);
      pe->valid = false;
      break;
    case CTRACE_EV_GoSysExit:
      if (!(pe = pend_of(&s, ev.g))) goto oom;
      if (pe->valid && pe->type == CTRACE_EV_GoSysCall) rc = linked(c, pe, ev.ts);
      *pe = (pending){ev.type, true, ev.ts, ev.stack, ev.g, 0};
      break;
    case CTRACE_EV_GoSched:
    case CTRACE_EV_GoPreempt:
    case CTRACE_EV_GoSysCall:
    case CTRACE_EV_GoBlock: /* and every other block */
    case CTRACE_EV_GoWaiting:
    case CTRACE_EV_GoInSyscall:
      if (!(pe = pend_of(&s, ev.g))) goto oom;
      *pe = (pending){ev.type, true, ev.ts, ev.stack, ev.g, 0};
      break;
    case CTRACE_EV_GoEnd:
      if (ev.args[0] != 1 && gone(c, &s, ev.g) < 0) goto oom; /* 1: its id comes back (model.h) */
      break;
    default:
      break;
    }
  }
  goto out;
oom:
  rc = -1;
out:
  pstate_free(&s);
  return rc;
}

/* ---- Go 1.22+ traces: Go 1.23's rules ------------------------------------------- */

/* Go 1.23 (cmd/trace/pprof.go, makeComputePprofFunc) computes these four
 * profiles on its new model by other rules than Go 1.19's pairs: per
 * goroutine, an interval runs from a state transition that carries a stack
 * into the profile's state (for one of its reasons) to that goroutine's
 * next transition with a stack into any other state. Transitions without a
 * stack (GoStart, GoSyscallEnd, GoDestroy, GoStatus) neither begin nor end
 * one, so a syscall lasts to the next block or preemption, and sched's
 * "runnable" time runs on into running. The stack is the event's own: for
 * an unblock or a creation, the waker's or creator's. */

enum { TS_RUNNABLE, TS_WAITING, TS_SYSCALL, TS_OTHER };

typedef struct transition {
  uint64_t g, stack;
  int state;
  const char *reason;
} transition;

/* Go's reason for the classic kind the adapter gave a GoBlock (src/parse/model.c's
 * block_kind, the other way round). */
static const char *block_reason(const ctrace_event *ev) {
  switch (ev->type) {
  case CTRACE_EV_GoSleep: return "sleep";
  case CTRACE_EV_GoBlockSend: return "chan send";
  case CTRACE_EV_GoBlockRecv: return "chan receive";
  case CTRACE_EV_GoBlockSelect: return "select";
  case CTRACE_EV_GoBlockSync: return "sync";
  case CTRACE_EV_GoBlockCond: return "sync.(*Cond).Wait";
  case CTRACE_EV_GoBlockNet: return "network";
  case CTRACE_EV_GoBlockGC: return "GC mark assist wait for work";
  case CTRACE_EV_GoStop: return "forever";
  default: return ev->sargs[0] ? ev->sargs[0] : "";
  }
}

/* The goroutine transition with a stack the adapter's ev stands for, as
 * Go's Event.StateTransition and Event.Stack give it; false for any other
 * event (Go's loop skips those). */
static bool transition_of(const ctrace_event *ev, transition *t) {
  if (ev->stack == 0) return false;
  *t = (transition){ev->g, ev->stack, TS_OTHER, ""};
  switch (ctrace__an_class(ev->type)) {
  case CTRACE_EV_GoCreate:
    if (ev->args[2] == 1) return false; /* there before: no creation */
    t->g = ev->args[0];
    t->state = ev->args[2] == 2 ? TS_WAITING : TS_RUNNABLE;
    return true;
  case CTRACE_EV_GoUnblock:
    t->g = ev->args[0];
    /* fall through */
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
    t->state = TS_RUNNABLE;
    return true;
  case CTRACE_EV_GoSysCall:
    t->state = TS_SYSCALL;
    return true;
  case CTRACE_EV_GoBlock: /* and every other block */
  case CTRACE_EV_GoStop:
    t->state = TS_WAITING;
    t->reason = block_reason(ev);
    return true;
  case CTRACE__MODEL_GoStatusStack:
    if (ev->format != 1) return false;
    t->g = ev->args[0];
    t->state = ev->args[2] == CTRACE_GS_RUNNABLE ? TS_RUNNABLE
               : ev->args[2] == CTRACE_GS_WAITING ? TS_WAITING
               : ev->args[2] == CTRACE_GS_SYSCALL ? TS_SYSCALL
                                                  : TS_OTHER;
    return true;
  default:
    return false;
  }
}

/* The state and reasons a profile tracks (computePprof* of Go 1.23). */
static bool tracked(ctrace_profile_kind k, const transition *t) {
  switch (k) {
  case CTRACE_PROFILE_NET:
    return t->state == TS_WAITING && strcmp(t->reason, "network") == 0;
  case CTRACE_PROFILE_SYNC:
    return t->state == TS_WAITING && (strstr(t->reason, "chan") || strstr(t->reason, "sync") ||
                                      strstr(t->reason, "select"));
  case CTRACE_PROFILE_SYSCALL:
    return t->state == TS_SYSCALL;
  case CTRACE_PROFILE_SCHED:
    return t->state == TS_RUNNABLE;
  default:
    return false;
  }
}

static int go123_profile(ctx *c) {
  static const int state_of[] = {[CTRACE_PROFILE_NET] = TS_WAITING,
                                 [CTRACE_PROFILE_SYNC] = TS_WAITING,
                                 [CTRACE_PROFILE_SYSCALL] = TS_SYSCALL,
                                 [CTRACE_PROFILE_SCHED] = TS_RUNNABLE};
  int state = state_of[c->kind];
  pstate s = {0};
  int rc = 0;
  ctrace_event buf;
  const ctrace_event *ev;
  transition t;
  ctrace__model_rewind(c->r);
  while (rc == 0 && (ev = ctrace__model_next_ref(c->r, &buf))) {
    if (c->online && !life_observe(c->online, ev)) {
      rc = -1;
      break;
    }
    if (ev->type == CTRACE_EV_GoEnd) { /* no transition of transition_of's */
      if (ev->args[0] != 1) rc = gone(c, &s, ev->g); /* 1: its id comes back (model.h) */
      continue;
    }
    if (!transition_of(ev, &t)) continue;
    pending *pe = pend_of(&s, t.g);
    if (!pe) {
      rc = -1;
      break;
    }
    if (!pe->valid) { /* not tracked: begin if this is the state we want */
      if (tracked(c->kind, &t))
        *pe = (pending){ev->type, true, ev->ts, t.stack, t.g, region_mark(c, t.g, ev->ts)};
      continue;
    }
    if (t.state == state) continue; /* the same state again: nothing ends */
    pe->valid = false;
    rc = linked(c, pe, ev->ts);
  }
  pstate_free(&s);
  return rc;
}

/* ---- go 1.25+ traces: Go 1.27's rules ------------------------------------------- */

/* One transition of go127_profile's. */
static int transition127(ctx *c, pstate *s, const ctrace_event *ev, uint64_t state) {
  static const int ts_of[] = {[2] = TS_RUNNABLE, [4] = TS_WAITING, [5] = TS_SYSCALL};
  pending *pe = pend_of(s, ev->args[0]);
  if (!pe) return -1;
  if (!pe->valid) {
    transition t = {ev->args[0], ev->stack, ev->args[2] == state ? ts_of[state] : TS_OTHER,
                    ev->sargs[0] ? ev->sargs[0] : ""};
    if (t.state != TS_OTHER && tracked(c->kind, &t))
      *pe = (pending){ev->type, true, ev->ts, ev->stack, t.g, region_mark(c, t.g, ev->ts)};
    return 0;
  }
  if (ev->args[2] == state) return 0;
  pe->valid = false;
  return linked(c, pe, ev->ts);
}

/* Go 1.27's makeComputePprofFunc no longer skips the transitions without a
 * stack: every goroutine transition into the profile's state (for one of
 * its reasons) begins an interval, the goroutine's next transition into
 * another state ends it (a start ends a sched interval, a syscall's end a
 * syscall one), and an interval whose first transition had no stack is
 * counted under the empty stack. The adapter passes the transitions on as
 * CTRACE__MODEL_Transition, and nothing else but the Syncs: the
 * lifetimes are learned from them too (life_transition). */
static int go127_profile(ctx *c) {
  static const int state_of[] = {[CTRACE_PROFILE_NET] = 4, /* Go's GoState: waiting */
                                 [CTRACE_PROFILE_SYNC] = 4,
                                 [CTRACE_PROFILE_SYSCALL] = 5,
                                 [CTRACE_PROFILE_SCHED] = 2};
  uint64_t state = (uint64_t)state_of[c->kind];
  pstate s = {0};
  int rc = 0;
  ctrace_event buf;
  const ctrace_event *ev;
  ctrace__model_rewind(c->r);
  ctrace__model_transitions(c->r, true);
  while (rc == 0 && (ev = ctrace__model_next_ref(c->r, &buf))) {
    if (c->online && !life_transition(c->online, ev)) {
      rc = -1;
      break;
    }
    if (ev->type != CTRACE__MODEL_Transition || ev->format != 1) continue;
    rc = transition127(c, &s, ev, state);
    /* Running to not existing: GoDestroy (a C thread's goroutine leaves a
     * syscall for it, and its id comes back). */
    if (rc == 0 && ev->args[1] == 3 && ev->args[2] == 1) rc = gone(c, &s, ev->args[0]);
  }
  ctrace__model_transitions(c->r, false);
  pstate_free(&s);
  return rc;
}

/* The profile, kept in *out, or written to stream as it is built. */
static int build(ctrace_reader *r, const ctrace_profile_options *opt, FILE *stream, ctrace_profile **out,
                 char *err, size_t errlen) {
  *out = NULL;
  an_filter f;
  /* Go 1.23's command line clips even an unfiltered profile to each
   * goroutine's lifetime (its pprofMatchingGoroutines with no name). */
  bool go123 = ctrace_reader_version(r) >= 1022 && opt->kind <= CTRACE_PROFILE_SCHED;
  /* Those lifetimes, and the time in --region's regions, are learned in
   * the profile's pass (lives, above); the filter's pass gives no
   * intervals then, only the goroutines --goroutine keeps, by id, and
   * those in a region begun before the trace, so that its memory follows
   * the goroutines alive. */
  lives lv = {0};
  /* -t wall learns them in its pass too (close_at), on a Go 1.22+ trace,
   * whose times only grow (a classic trace's may wrap). */
  bool v122 = ctrace_reader_version(r) >= 1022;
  int frc = ctrace__an_filter_build(r, opt, go123 || (v122 && opt->kind == CTRACE_PROFILE_WALL), &f, err, errlen);
  if (frc) return frc;
  if (f.ids_only && opt->goroutine) lv.only = &f.members;
  if (f.ids_only && opt->region) {
    lv.region = opt->region;
    lv.f = &f;
  }
  ctrace_profile *p = opt->kind == CTRACE_PROFILE_WALL
                          ? ctrace__prof_new("intervals", "count", "time", "nanoseconds")
                      : opt->kind == CTRACE_PROFILE_CPU
                          ? ctrace__prof_new("samples", "count", "cpu", "nanoseconds")
                          : ctrace__prof_new("contentions", "count", "delay", "nanoseconds");
  int rc = CTRACE_ENOMEM;
  if (!p || (stream && !ctrace__prof_stream(p, stream))) {
    ctrace_profile_free(p);
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  if (opt->kind == CTRACE_PROFILE_WALL) {
    rc = ctrace__an_wall(r, &f, p, err, errlen);
  } else if (opt->kind == CTRACE_PROFILE_CPU) {
    rc = ctrace__an_cpu(r, &f, opt->cpu_hz, p, err, errlen);
  } else if (opt->kind == CTRACE_PROFILE_WAKER) {
    rc = ctrace__an_waker(r, &f, p, err, errlen);
  } else {
    ctx c = {.r = r, .kind = opt->kind, .f = &f, .online = go123 ? &lv : NULL, .p = p, .go123 = go123,
             .go127 = go123 && ctrace_reader_version(r) >= 1025};
    rc = c.go127 ? go127_profile(&c) : go123 ? go123_profile(&c) : go_profile(&c);
    if (rc == 0 && go123) rc = linked_deferred(&c);
    if (rc == 0 && go123 && !lv.region && lv.members == 0 && !p->oom) {
      /* filter.c's words, for a trace with no goroutine to keep. */
      snprintf(err, errlen, "failed to find matching goroutines for name: %s", opt->goroutine ? opt->goroutine : "");
      free(c.locs);
      ctrace__map_free(&c.last);
      ctrace_profile_free(p);
      rc = CTRACE_EINVAL;
      goto out;
    }
    free(c.locs);
    ctrace__map_free(&c.last);
    if (rc || p->oom) {
      rc = -1;
      snprintf(err, errlen, "out of memory");
    }
  }
  if (rc) {
    /* What the analyses can still fail on, the trace read and checked. */
    rc = CTRACE_ENOMEM;
    ctrace_profile_free(p);
    goto out;
  }
  *out = p;
out:
  lives_free(&lv);
  ctrace__an_filter_free(&f);
  return rc;
}

int ctrace_profile_build(ctrace_reader *r, const ctrace_profile_options *opt, ctrace_profile **out,
                         char *err, size_t errlen) {
  return build(r, opt, NULL, out, err, errlen);
}

int ctrace_profile_write(ctrace_reader *r, const ctrace_profile_options *opt, FILE *out, char *err,
                         size_t errlen) {
  ctrace_profile *p;
  int rc = build(r, opt, out, &p, err, errlen);
  if (rc) return rc;
  if ((rc = ctrace__prof_finish(p)) != 0)
    snprintf(err, errlen, "%s", rc == CTRACE_EIO ? strerror(p->ioerr) : "out of memory");
  ctrace_profile_free(p);
  return rc;
}
