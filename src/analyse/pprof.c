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

typedef struct ctx {
  ctrace_reader *r;
  ctrace_profile_kind kind;
  const an_filter *f;
  an_lives *online; /* lifetimes learned in the pass, instead of f (lives.c) */
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
    int k = ctrace__an_lives_clip(c->online, pe->g, pe->ts, ts, pe->in_region, pe, &d);
    if (k) return k < 0 ? -1 : 0; /* kept aside: count_kept */
  } else {
    d = ctrace__an_overlap(c->f, pe->g, pe->ts, ts);
  }
  return count(c, pe, fr, n, d);
}

/* An interval kept aside (ctrace__an_lives_clip), once its goroutine's
 * lifetime is known: d ns. */
static int count_kept(void *arg, const void *item, int64_t d) {
  ctx *c = arg;
  const pending *pe = item;
  const ctrace_frame *fr = NULL;
  size_t n = pe->stack ? ctrace__model_stack(c->r, pe->stack, &fr) : 0;
  return count(c, pe, fr, n, d);
}

/* Goroutine g has ended for good (Go never gives its id again): what is
 * kept of it goes, so that memory follows the goroutines alive, not all
 * those a trace ever had. Its lifetime is known: the intervals kept aside
 * count now. Its pending interval, if any, no transition of its ends. */
static int gone(ctx *c, pstate *s, uint64_t g) {
  ctrace__map_slot_drop(&s->index, &s->recent, &s->freed, g, s->pend, sizeof *s->pend);
  return ctrace__an_lives_gone(c->online, g);
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
    if (!ctrace__prof_frames(c->p, fr, n, 0, &c->locs, &c->caplocs)) return -1;
    if (c->p->oom || !ctrace__prof_relocate(c->p, s, c->locs, n)) return -1;
  } else if (ix) {
    s = &c->p->samples[*ix - 1];
  } else {
    if (!ctrace__prof_frames(c->p, fr, n, 0, &c->locs, &c->caplocs)) return -1;
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
    if (c->online && !ctrace__an_lives_observe(c->online, ev)) {
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
        *pe = (pending){ev->type, true, ev->ts, t.stack, t.g, ctrace__an_lives_region_at(c->online, t.g, ev->ts)};
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
      *pe = (pending){ev->type, true, ev->ts, ev->stack, t.g, ctrace__an_lives_region_at(c->online, t.g, ev->ts)};
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
 * lifetimes are learned from them too (ctrace__an_lives_transition). */
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
    if (c->online && !ctrace__an_lives_transition(c->online, ev)) {
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
  bool v122 = ctrace_reader_version(r) >= 1022;
  bool go123 = v122 && opt->kind <= CTRACE_PROFILE_SCHED;
  /* On a Go 1.22+ trace, whose times only grow (a classic trace's may
   * wrap), those lifetimes and the time in --region's regions are learned
   * in the profile's pass (lives.c; -t wall's own way, close_at): the
   * filter's pass gives no intervals then, only the goroutines --goroutine
   * keeps, by id, and those in a region begun before the trace, so that
   * memory follows the goroutines alive. */
  int frc = ctrace__an_filter_build(r, opt, v122, &f, err, errlen);
  if (frc) return frc;
  an_lives lv;
  ctrace__an_lives_init(&lv, &f);
  an_lives *online = go123 || (f.ids_only && opt->kind != CTRACE_PROFILE_WALL) ? &lv : NULL;
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
    rc = ctrace__an_cpu(r, &f, online, opt->cpu_hz, p, err, errlen);
  } else if (opt->kind == CTRACE_PROFILE_WAKER) {
    rc = ctrace__an_waker(r, &f, online, p, err, errlen);
  } else {
    ctx c = {.r = r, .kind = opt->kind, .f = &f, .online = online, .p = p, .go123 = go123,
             .go127 = go123 && ctrace_reader_version(r) >= 1025};
    ctrace__an_lives_keep(&lv, sizeof(pending), count_kept, &c);
    rc = c.go127 ? go127_profile(&c) : go123 ? go123_profile(&c) : go_profile(&c);
    if (rc == 0) rc = ctrace__an_lives_end(online);
    free(c.locs);
    ctrace__map_free(&c.last);
    if (rc || p->oom) {
      rc = -1;
      snprintf(err, errlen, "out of memory");
    }
  }
  if (rc == 0 && online && !lv.region && lv.members == 0 && !p->oom) {
    /* filter.c's words, for a trace with no goroutine to keep. */
    snprintf(err, errlen, "failed to find matching goroutines for name: %s", opt->goroutine ? opt->goroutine : "");
    ctrace_profile_free(p);
    rc = CTRACE_EINVAL;
    goto out;
  }
  if (rc) {
    /* What the analyses can still fail on, the trace read and checked. */
    rc = CTRACE_ENOMEM;
    ctrace_profile_free(p);
    goto out;
  }
  *out = p;
out:
  ctrace__an_lives_free(&lv);
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
