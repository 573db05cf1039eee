/* The state machine Go's reader checks (postProcessTrace), applied to the
 * ordered stream one event at a time: goroutines, Ps, GC, STW, sweeps, mark
 * assists, tasks and regions. It also moves events to Go's fake Ps and links
 * each event to the earlier one it completes. Messages are Go's. */
#include <stdlib.h>
#include <string.h>

#include "../reader.h"

enum { G_DEAD, G_RUNNABLE, G_RUNNING, G_WAITING };

static gdesc *gd(state_state *s, uint64_t g) {
  bool fresh;
  uint64_t *i = ctrace__map_put(&s->gs, g, &fresh);
  if (!i) return NULL;
  if (fresh) {
    if (s->ng == s->capg) {
      uint64_t cap = s->capg ? s->capg * 2 : 256;
      gdesc *n = realloc(s->g, cap * sizeof *n);
      if (!n) return NULL;
      s->g = n;
      s->capg = cap;
    }
    memset(&s->g[s->ng], 0, sizeof s->g[0]);
    *i = s->ng++;
  }
  return &s->g[*i];
}

static pdesc *pd(state_state *s, int64_t p) {
  bool fresh;
  uint64_t *i = ctrace__map_put(&s->ps, (uint64_t)p, &fresh);
  if (!i) return NULL;
  if (fresh) {
    if (s->np == s->capp) {
      uint64_t cap = s->capp ? s->capp * 2 : 64;
      pdesc *n = realloc(s->p, cap * sizeof *n);
      if (!n) return NULL;
      s->p = n;
      s->capp = cap;
    }
    memset(&s->p[s->np], 0, sizeof s->p[0]);
    *i = s->np++;
  }
  return &s->p[*i];
}

static rstack *regions_of(state_state *s, gdesc *g) {
  if (!g->regions) {
    if (s->nrs == s->caprs) {
      uint32_t cap = s->caprs ? s->caprs * 2 : 64;
      rstack *n = realloc(s->rs, cap * sizeof *n);
      if (!n) return NULL;
      s->rs = n;
      s->caprs = cap;
    }
    s->rs[s->nrs] = (rstack){NULL, 0, 0};
    g->regions = ++s->nrs;
  }
  return &s->rs[g->regions - 1];
}

void ctrace__state_free(ctrace_reader *r) {
  state_state *s = &r->ss;
  ctrace__map_free(&s->gs);
  ctrace__map_free(&s->ps);
  ctrace__map_free(&s->tasks);
  ctrace__map_free(&s->futile_set);
  for (uint32_t i = 0; i < s->nrs; i++) free(s->rs[i].r);
  free(s->rs);
  free(s->task_ev);
  free(s->g);
  free(s->p);
  memset(s, 0, sizeof *s);
}

void ctrace__state_init(ctrace_reader *r) {
  u64map keep = r->ss.futile_set; /* computed by the check pass */
  r->ss.futile_set = (u64map){0};
  ctrace__state_free(r);
  r->ss.futile_set = keep;
  gdesc *g0 = gd(&r->ss, 0);
  if (g0) g0->state = G_RUNNING;
}

/* Go's %q of an event: its line, quoted. */
static const char *quoted(const ctrace_event *ev, char *buf, size_t n) {
  char line[400];
  ctrace_event_format(ev, line, sizeof line);
  size_t j = 0;
  buf[j++] = '"';
  for (const char *c = line; *c && j + 3 < n; c++) {
    if (*c == '"' || *c == '\\') buf[j++] = '\\';
    buf[j++] = *c;
  }
  buf[j++] = '"';
  buf[j] = 0;
  return buf;
}

#define FAIL(...) return ctrace__perr(err, ev->off, __VA_ARGS__)
#define AT (unsigned long long)ev->off, (long long)ev->ts
#define NAME ctrace_event_descs[ev->type].name
#define LINK(x) ((x) ? (x) - 1 : CTRACE_NO_LINK)

static int check_running(const pdesc *p, const gdesc *g, const ctrace_event *ev, bool allow_g0,
                         ctrace_parse_error *err) {
  if (g->state != G_RUNNING)
    FAIL("g %llu is not running while %s (offset %llu, time %lld)", (unsigned long long)ev->g, NAME, AT);
  if (p->g != ev->g)
    FAIL("p %lld is not running g %llu while %s (offset %llu, time %lld)", (long long)ev->p,
         (unsigned long long)ev->g, NAME, AT);
  if (!allow_g0 && ev->g == 0) FAIL("g 0 did %s (offset %llu, time %lld)", NAME, AT);
  return 0;
}

/* Ps: starts and stops. */
static int apply_proc(pdesc *p, const ctrace_event *ev, ctrace_parse_error *err) {
  if (ev->type == CTRACE_EV_ProcStart) {
    if (p->running) FAIL("p %lld is running before start (offset %llu, time %lld)", (long long)ev->p, AT);
    p->running = true;
    return 0;
  }
  if (!p->running)
    FAIL("p %lld is not running before stop (offset %llu, time %lld)", (long long)ev->p, AT);
  if (p->g != 0)
    FAIL("p %lld is running a goroutine %llu during stop (offset %llu, time %lld)", (long long)ev->p,
         (unsigned long long)p->g, AT);
  p->running = false;
  return 0;
}

/* The collector and the world's stops: GC, STW, sweeps and mark assists,
 * each end linked to its start. me: the event's seq + 1. */
static int apply_gc(ctrace_reader *r, state_state *s, gdesc *g, pdesc *p, ctrace_event *ev, uint64_t me,
                    ctrace_parse_error *err) {
  switch (ev->type) {
  case CTRACE_EV_GCStart:
    if (s->ev_gc) FAIL("previous GC is not ended before a new one (offset %llu, time %lld)", AT);
    s->ev_gc = me;
    ev->p = CTRACE_P_GC;
    break;
  case CTRACE_EV_GCDone:
    if (!s->ev_gc) FAIL("bogus GC end (offset %llu, time %lld)", AT);
    ev->link = LINK(s->ev_gc);
    s->ev_gc = 0;
    break;
  case CTRACE_EV_GCSTWStart:
  case CTRACE_EV_GCSTWDone: {
    /* Before 1.10 STW was per P. */
    uint64_t *stw = r->ver < 1010 ? &p->ev_stw : &s->ev_stw;
    if (ev->type == CTRACE_EV_GCSTWStart) {
      if (*stw) FAIL("previous STW is not ended before a new one (offset %llu, time %lld)", AT);
      *stw = me;
    } else {
      if (!*stw) FAIL("bogus STW end (offset %llu, time %lld)", AT);
      ev->link = LINK(*stw);
      *stw = 0;
    }
    break;
  }
  case CTRACE_EV_GCSweepStart:
    if (p->ev_sweep) FAIL("previous sweeping is not ended before a new one (offset %llu, time %lld)", AT);
    p->ev_sweep = me;
    break;
  case CTRACE_EV_GCSweepDone:
    if (!p->ev_sweep) FAIL("bogus sweeping end (offset %llu, time %lld)", AT);
    ev->link = LINK(p->ev_sweep);
    p->ev_sweep = 0;
    break;
  case CTRACE_EV_GCMarkAssistStart:
    if (g->ev_markassist)
      FAIL("previous mark assist is not ended before a new one (offset %llu, time %lld)", AT);
    g->ev_markassist = me;
    break;
  case CTRACE_EV_GCMarkAssistDone:
    /* May have begun before tracing did: no error. */
    ev->link = LINK(g->ev_markassist);
    g->ev_markassist = 0;
    break;
  }
  return 0;
}

/* A goroutine made: ev's goroutine must be running. gd may move s->g:
 * g is not to be used after. */
static int apply_create(state_state *s, gdesc *g, pdesc *p, ctrace_event *ev, uint64_t me,
                        ctrace_parse_error *err) {
  if (check_running(p, g, ev, true, err)) return -1;
  if (ctrace__map_get(&s->gs, ev->args[0]))
    FAIL("g %llu already exists (offset %llu, time %lld)", (unsigned long long)ev->args[0], AT);
  gdesc *n = gd(s, ev->args[0]);
  if (!n) FAIL("out of memory");
  n->state = G_RUNNABLE;
  n->ev = me;
  n->ev_type = ev->type;
  n->has_create = true;
  n->create_stack = ev->args[1];
  return 0;
}

/* Another goroutine (args[0]) made runnable by ev's, which runs. */
static int apply_unblock(state_state *s, gdesc *g, pdesc *p, ctrace_event *ev, uint64_t me,
                         ctrace_parse_error *err) {
  if (g->state != G_RUNNING)
    FAIL("g %llu is not running while unpark (offset %llu, time %lld)", (unsigned long long)ev->g, AT);
  if (ev->p != CTRACE_P_TIMER && p->g != ev->g)
    FAIL("p %lld is not running g %llu while unpark (offset %llu, time %lld)", (long long)ev->p,
         (unsigned long long)ev->g, AT);
  const uint64_t *i1 = ctrace__map_get(&s->gs, ev->args[0]);
  gdesc *g1 = i1 ? &s->g[*i1] : NULL;
  if (!g1 || g1->state != G_WAITING)
    FAIL("g %llu is not waiting before unpark (offset %llu, time %lld)", (unsigned long long)ev->args[0], AT);
  if (g1->ev && g1->ev_type == CTRACE_EV_GoBlockNet && ev->p != CTRACE_P_TIMER) ev->p = CTRACE_P_NETPOLL;
  ev->link = LINK(g1->ev);
  g1->state = G_RUNNABLE;
  g1->ev = me;
  g1->ev_type = ev->type;
  return 0;
}

/* The transitions of ev's own goroutine but system calls: statuses at the
 * trace's start, starts, ends, stops, yields and blocks, each linked to
 * the event that led to it. */
static int apply_goroutine(state_state *s, gdesc *g, pdesc *p, ctrace_event *ev, uint64_t me,
                           ctrace_parse_error *err) {
  switch (ev->type) {
  case CTRACE_EV_GoWaiting:
  case CTRACE_EV_GoInSyscall:
    if (g->state != G_RUNNABLE)
      FAIL("g %llu is not runnable before %s (offset %llu, time %lld)", (unsigned long long)ev->g,
           ev->type == CTRACE_EV_GoWaiting ? "EvGoWaiting" : "EvGoInSyscall", AT);
    g->state = G_WAITING;
    g->ev = me;
    g->ev_type = ev->type;
    break;
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoStartLabel:
    if (g->state != G_RUNNABLE)
      FAIL("g %llu is not runnable before start (offset %llu, time %lld)", (unsigned long long)ev->g, AT);
    if (p->g != 0)
      FAIL("p %lld is already running g %llu while start g %llu (offset %llu, time %lld)",
           (long long)ev->p, (unsigned long long)p->g, (unsigned long long)ev->g, AT);
    g->state = G_RUNNING;
    g->ev_start = me;
    p->g = ev->g;
    if (g->has_create) {
      ev->stack = g->create_stack;
      g->has_create = false;
    }
    ev->link = LINK(g->ev);
    g->ev = 0;
    break;
  case CTRACE_EV_GoEnd:
  case CTRACE_EV_GoStop:
    if (check_running(p, g, ev, false, err)) return -1;
    ev->link = LINK(g->ev_start);
    g->ev_start = 0;
    g->state = G_DEAD;
    p->g = 0;
    if (ev->type == CTRACE_EV_GoEnd && g->regions) s->rs[g->regions - 1].n = 0;
    break;
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
    if (check_running(p, g, ev, false, err)) return -1;
    g->state = G_RUNNABLE;
    ev->link = LINK(g->ev_start);
    g->ev_start = 0;
    p->g = 0;
    g->ev = me;
    g->ev_type = ev->type;
    break;
  default: /* the blocks (GoSleep, GoBlock*) */
    if (check_running(p, g, ev, false, err)) return -1;
    g->state = G_WAITING;
    g->ev = me;
    g->ev_type = ev->type;
    ev->link = LINK(g->ev_start);
    g->ev_start = 0;
    p->g = 0;
    break;
  }
  return 0;
}

/* System calls: the call, its block (its P let go), its exit. */
static int apply_syscall(gdesc *g, pdesc *p, ctrace_event *ev, uint64_t me, ctrace_parse_error *err) {
  switch (ev->type) {
  case CTRACE_EV_GoSysCall:
    if (check_running(p, g, ev, false, err)) return -1;
    g->ev = me;
    g->ev_type = ev->type;
    break;
  case CTRACE_EV_GoSysBlock:
    if (check_running(p, g, ev, false, err)) return -1;
    g->state = G_WAITING;
    ev->link = LINK(g->ev_start);
    g->ev_start = 0;
    p->g = 0;
    break;
  case CTRACE_EV_GoSysExit:
    if (g->state != G_WAITING)
      FAIL("g %llu is not waiting during syscall exit (offset %llu, time %lld)", (unsigned long long)ev->g, AT);
    if (g->ev && g->ev_type == CTRACE_EV_GoSysCall) ev->link = LINK(g->ev);
    g->state = G_RUNNABLE;
    g->ev = me;
    g->ev_type = ev->type;
    break;
  }
  return 0;
}

/* User tasks: a creation is kept while its task lives, for its end's link
 * and the message of a second creation with its id. */
static int apply_task(state_state *s, ctrace_event *ev, ctrace_parse_error *err) {
  if (ev->type == CTRACE_EV_UserTaskEnd) {
    uint64_t *t = ctrace__map_get(&s->tasks, ev->args[0]);
    if (t) {
      uint64_t i = *t - 1;
      ev->link = s->task_ev[i].seq;
      s->task_ev[i].seq = s->task_free;
      s->task_free = i + 1;
      ctrace__map_del(&s->tasks, ev->args[0]);
    }
    return 0;
  }
  bool fresh;
  uint64_t *t = ctrace__map_put(&s->tasks, ev->args[0], &fresh);
  if (!t) FAIL("out of memory");
  if (!fresh) {
    char a[512], b[512];
    FAIL("task id conflicts (id:%llu), %s vs %s", (unsigned long long)ev->args[0], quoted(ev, a, sizeof a),
         quoted(&s->task_ev[*t - 1], b, sizeof b));
  }
  /* Keep the creation while the task lives: a slot from the free list. */
  uint64_t i;
  if (s->task_free) {
    i = s->task_free - 1;
    s->task_free = s->task_ev[i].seq;
  } else {
    if (s->ntask == s->captask) {
      uint64_t cap = s->captask ? s->captask * 2 : 64;
      ctrace_event *n = realloc(s->task_ev, cap * sizeof *n);
      if (!n) FAIL("out of memory");
      s->task_ev = n;
      s->captask = cap;
    }
    i = s->ntask++;
  }
  s->task_ev[i] = *ev;
  *t = i + 1;
  return 0;
}

/* User regions: a stack per goroutine; an end must match the innermost
 * start, to which it is linked. */
static int apply_region(state_state *s, gdesc *g, ctrace_event *ev, ctrace_parse_error *err) {
  rstack *st = regions_of(s, g);
  if (!st) FAIL("out of memory");
  if (ev->args[1] == 0) {
    if (st->n == st->cap) {
      uint32_t cap = st->cap ? st->cap * 2 : 8;
      region *n = realloc(st->r, cap * sizeof *n);
      if (!n) FAIL("out of memory");
      st->r = n;
      st->cap = cap;
    }
    st->r[st->n++] = (region){*ev};
  } else if (ev->args[1] == 1) {
    if (st->n > 0) {
      const ctrace_event *top = &st->r[st->n - 1].start;
      if (top->args[0] != ev->args[0] || strcmp(top->sargs[0], ev->sargs[0]) != 0) {
        char a[512], b[512];
        FAIL("misuse of region in goroutine %llu: span end %s when the inner-most active span "
             "start event is %s",
             (unsigned long long)ev->g, quoted(ev, a, sizeof a), quoted(top, b, sizeof b));
      }
      ev->link = top->seq;
      st->n--;
    }
  } else {
    char a[512];
    FAIL("invalid user region mode: %s", quoted(ev, a, sizeof a));
  }
  return 0;
}

/* One event through the state machine: by family, each helper checking
 * and applying the events its caller's case names. */
int ctrace__state_apply(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  state_state *s = &r->ss;
  const uint64_t me = ev->seq + 1;
  ev->link = CTRACE_NO_LINK;
  gdesc *g = gd(s, ev->g);
  pdesc *p = pd(s, ev->p);
  if (!g || !p) FAIL("out of memory");
  switch (ev->type) {
  case CTRACE_EV_ProcStart:
  case CTRACE_EV_ProcStop:
    return apply_proc(p, ev, err);
  case CTRACE_EV_GCStart: case CTRACE_EV_GCDone: case CTRACE_EV_GCSTWStart: case CTRACE_EV_GCSTWDone:
  case CTRACE_EV_GCSweepStart: case CTRACE_EV_GCSweepDone: case CTRACE_EV_GCMarkAssistStart:
  case CTRACE_EV_GCMarkAssistDone:
    return apply_gc(r, s, g, p, ev, me, err);
  case CTRACE_EV_GoCreate:
    return apply_create(s, g, p, ev, me, err);
  case CTRACE_EV_GoUnblock:
    return apply_unblock(s, g, p, ev, me, err);
  case CTRACE_EV_GoWaiting: case CTRACE_EV_GoInSyscall: case CTRACE_EV_GoStart: case CTRACE_EV_GoStartLabel:
  case CTRACE_EV_GoEnd: case CTRACE_EV_GoStop: case CTRACE_EV_GoSched: case CTRACE_EV_GoPreempt:
  case CTRACE_EV_GoSleep: case CTRACE_EV_GoBlock: case CTRACE_EV_GoBlockSend:
  case CTRACE_EV_GoBlockRecv: case CTRACE_EV_GoBlockSelect: case CTRACE_EV_GoBlockSync:
  case CTRACE_EV_GoBlockCond: case CTRACE_EV_GoBlockNet: case CTRACE_EV_GoBlockGC:
    return apply_goroutine(s, g, p, ev, me, err);
  case CTRACE_EV_GoSysCall: case CTRACE_EV_GoSysBlock: case CTRACE_EV_GoSysExit:
    return apply_syscall(g, p, ev, me, err);
  case CTRACE_EV_UserTaskCreate:
  case CTRACE_EV_UserTaskEnd:
    return apply_task(s, ev, err);
  case CTRACE_EV_UserRegion:
    return apply_region(s, g, ev, err);
  }
  return 0;
}

/* ---- futile wakeups (Go's removeFutile) ---------------------------------
 *
 * A wakeup that found its resource taken (FutileWakeup) is removed with the
 * unblock, starts and preemptions since, and the block that follows. Go
 * decides on the whole ordered stream; here the check pass records the
 * offsets of the events to drop, and later passes skip them. */

typedef struct futile_g {
  bool futile;
  uint64_t *wakeup;
  uint32_t n, cap;
} futile_g;

typedef struct futile_state {
  u64map gs; /* g -> index + 1 */
  futile_g *g;
  uint64_t ng, capg;
} futile_state;

static futile_state fs_dummy;

void *ctrace__futile_begin(void) {
  futile_state *f = calloc(1, sizeof *f);
  return f ? f : &fs_dummy;
}

static futile_g *fg(futile_state *f, uint64_t g) {
  bool fresh;
  uint64_t *i = ctrace__map_put(&f->gs, g, &fresh);
  if (!i) return NULL;
  if (fresh) {
    if (f->ng == f->capg) {
      uint64_t cap = f->capg ? f->capg * 2 : 64;
      futile_g *n = realloc(f->g, cap * sizeof *n);
      if (!n) return NULL;
      f->g = n;
      f->capg = cap;
    }
    memset(&f->g[f->ng], 0, sizeof f->g[0]);
    *i = ++f->ng;
  }
  return &f->g[*i - 1];
}

static void push(futile_g *x, uint64_t off) {
  if (x->n == x->cap) {
    uint32_t cap = x->cap ? x->cap * 2 : 4;
    uint64_t *n = realloc(x->wakeup, cap * sizeof *n);
    if (!n) return;
    x->wakeup = n;
    x->cap = cap;
  }
  x->wakeup[x->n++] = off;
}

void ctrace__futile_observe(ctrace_reader *r, void *st, const pev *e) {
  futile_state *f = st;
  if (f == &fs_dummy) return;
  futile_g *x;
  switch (e->type) {
  case CTRACE_EV_GoUnblock:
    if ((x = fg(f, e->args[0]))) {
      x->n = 0;
      push(x, e->off);
    }
    break;
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoPreempt:
  case CTRACE_EV_FutileWakeup:
    if ((x = fg(f, e->g))) {
      push(x, e->off);
      if (e->type == CTRACE_EV_FutileWakeup) x->futile = true;
    }
    break;
  case CTRACE_EV_GoBlock: case CTRACE_EV_GoBlockSend: case CTRACE_EV_GoBlockRecv:
  case CTRACE_EV_GoBlockSelect: case CTRACE_EV_GoBlockSync: case CTRACE_EV_GoBlockCond:
    if ((x = fg(f, e->g))) {
      if (x->futile) {
        ctrace__map_put(&r->ss.futile_set, e->off, NULL);
        for (uint32_t i = 0; i < x->n; i++) ctrace__map_put(&r->ss.futile_set, x->wakeup[i], NULL);
      }
      x->futile = false; /* Go deletes the goroutine's entry */
      x->n = 0;
    }
    break;
  }
}

void ctrace__futile_end(void *st) {
  futile_state *f = st;
  if (f == &fs_dummy) return;
  for (uint64_t i = 0; i < f->ng; i++) free(f->g[i].wakeup);
  free(f->g);
  ctrace__map_free(&f->gs);
  free(f);
}
