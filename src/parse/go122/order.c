/* Go 1.23's ordering of a Go 1.22+ trace (internal/trace/order.go): the
 * state of goroutines, Ps, threads, GC, tasks and regions that decides
 * whether an event can happen now (its sequence number follows, its
 * goroutine or P is in the state it needs), must wait for another thread's
 * events, or can never happen (an error, in Go's words). Events that
 * happen are queued with the context (M, P, G) they happened in, and with
 * what Go's reader adds to them (old states, a task's parent and type).
 *
 * State persists across generations; sequence numbers are per generation,
 * so a number counts only against one of the same generation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "go122.h"

int ctrace__perr(ctrace_parse_error *err, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Go's GoState and ProcState, as Event.StateTransition reports them. */
enum { GS_UNDETERMINED, GS_NOTEXIST, GS_RUNNABLE, GS_RUNNING, GS_WAITING, GS_SYSCALL };
enum { PS_UNDETERMINED, PS_NOTEXIST, PS_RUNNING, PS_IDLE };
static const uint8_t go_state_of[5] = {GS_UNDETERMINED, GS_RUNNABLE, GS_RUNNING, GS_SYSCALL, GS_WAITING};
static const uint8_t proc_state_of[5] = {PS_UNDETERMINED, PS_RUNNING, PS_IDLE, PS_RUNNING, PS_IDLE};

enum { GC_UNDETERMINED, GC_NOT_RUNNING, GC_RUNNING };

static const char *gstatus_name(uint64_t s) {
  static const char *const n[] = {"Bad", "Runnable", "Running", "Syscall", "Waiting"};
  return s < 5 ? n[s] : "Bad";
}
static const char *pstatus_name(uint64_t s) {
  static const char *const n[] = {"Bad", "Running", "Idle", "Syscall", "Bad"};
  return s < 5 ? n[s] : "Bad";
}
static const char *name(uint8_t t) {
  const char *s = ctrace_event122_descs[t].name;
  return s ? s : "";
}

/* Go's reqs: must not have (0), may have (1), must have (2). */
enum { NOT = 0, MAY = 1, MUST = 2 };
typedef struct ctx {
  int64_t g, p, m;
} ctx;

static int validate(ctx c, int th, int pr, int go, uint64_t off, ctrace_parse_error *err) {
  if (th == MUST && c.m == G2_NONE) return ctrace__perr(err, off, "expected a thread but didn't have one");
  if (th == NOT && c.m != G2_NONE) return ctrace__perr(err, off, "expected no thread but had one");
  if (pr == MUST && c.p == G2_NONE) return ctrace__perr(err, off, "expected a proc but didn't have one");
  if (pr == NOT && c.p != G2_NONE) return ctrace__perr(err, off, "expected no proc but had one");
  if (go == MUST && c.g == G2_NONE) return ctrace__perr(err, off, "expected a goroutine but didn't have one");
  if (go == NOT && c.g != G2_NONE) return ctrace__perr(err, off, "expected no goroutine but had one");
  return 0;
}
#define USER_GO MUST, MUST, MUST

void ctrace__g2_order_init(g2order *o) {
  ctrace__g2_order_free(o);
}

static void free_ranges(g2ranges *r) {
  free(r->r);
  r->r = NULL;
  r->n = r->cap = 0;
}

static void free_name(g2name *n) {
  if (n->owned) free((char *)n->s);
  *n = (g2name){0};
}

static void free_g(g2g *g) {
  for (uint32_t i = 0; i < g->nregions; i++) free_name(&g->regions[i].name);
  free(g->regions);
  free_ranges(&g->ranges);
  memset(g, 0, sizeof *g);
}

void ctrace__g2_order_free(g2order *o) {
  for (size_t i = 0; i < o->gs.cap; i++)
    if (o->gs.used[i]) free_g(&o->g[o->gs.vals[i] - 1]);
  for (uint64_t i = 0; i < o->np; i++) free_ranges(&o->p[i].ranges);
  for (size_t i = 0; i < o->tasks.cap; i++)
    if (o->tasks.used[i]) free_name(&o->t[o->tasks.vals[i] - 1].name);
  ctrace__map_free(&o->gs);
  ctrace__map_free(&o->ps);
  ctrace__map_free(&o->ms);
  ctrace__map_free(&o->tasks);
  free(o->g);
  free(o->p);
  free(o->m);
  free(o->t);
  memset(o, 0, sizeof *o);
}

static bool adopt(g2name *n) {
  if (n->owned) return true;
  char *c = malloc(n->len + 1);
  if (!c) return false;
  memcpy(c, n->s, n->len + 1);
  n->s = c;
  n->owned = true;
  return true;
}

/* Once a generation, over the live goroutines and tasks: the names were
 * copied at every region and task begin before, a malloc and free an
 * event of a trace of regions, with the heap's top pages faulted in
 * again and again (a tenth of `ctrace check`'s time on such a trace). */
bool ctrace__g2_order_adopt(g2order *o) {
  for (size_t i = 0; i < o->gs.cap; i++) {
    if (!o->gs.used[i]) continue;
    g2g *g = &o->g[o->gs.vals[i] - 1];
    for (uint32_t j = 0; j < g->nregions; j++)
      if (!adopt(&g->regions[j].name)) return false;
  }
  for (size_t i = 0; i < o->tasks.cap; i++)
    if (o->tasks.used[i] && !adopt(&o->t[o->tasks.vals[i] - 1].name)) return false;
  return true;
}

/* ---- pools --------------------------------------------------------------- */

/* The pool index + 1 of id, through the cache: 0 if absent. */
static inline uint64_t lookup(u64map *m, u64cache *c, int64_t id) {
  uint64_t ix = ctrace__cache_get(c, (uint64_t)id);
  if (ix) return ix;
  const uint64_t *i = ctrace__map_get(m, (uint64_t)id);
  if (!i) return 0;
  ctrace__cache_put(c, (uint64_t)id, *i);
  return *i;
}

static g2g *get_g(g2order *o, int64_t id) {
  uint64_t i = lookup(&o->gs, &o->gc, id);
  return i ? &o->g[i - 1] : NULL;
}
static g2p *get_p(g2order *o, int64_t id) {
  uint64_t i = lookup(&o->ps, &o->pc, id);
  return i ? &o->p[i - 1] : NULL;
}
static g2m *get_m(g2order *o, int64_t id) {
  uint64_t i = lookup(&o->ms, &o->mc, id);
  return i ? &o->m[i - 1] : NULL;
}

static g2g *new_g(g2order *o, int64_t id) {
  uint64_t idx;
  if (o->gfree) {
    idx = o->gfree - 1;
    o->gfree = o->g[idx].seq;
  } else {
    if (!ctrace__grow(&o->g, &o->capg, o->ng + 1, sizeof *o->g)) return NULL;
    idx = o->ng++;
  }
  uint64_t *slot = ctrace__map_put(&o->gs, (uint64_t)id, NULL);
  if (!slot) { /* back on the free list */
    o->g[idx].seq = o->gfree;
    o->gfree = idx + 1;
    return NULL;
  }
  *slot = idx + 1;
  memset(&o->g[idx], 0, sizeof o->g[idx]);
  return &o->g[idx];
}

static void del_g(g2order *o, int64_t id) {
  const uint64_t *i = ctrace__map_get(&o->gs, (uint64_t)id);
  if (!i) return;
  uint64_t idx = *i - 1;
  ctrace__map_del(&o->gs, (uint64_t)id);
  ctrace__cache_del(&o->gc, (uint64_t)id);
  free_g(&o->g[idx]);
  o->g[idx].seq = o->gfree;
  o->gfree = idx + 1;
}

static g2p *new_p(g2order *o, int64_t id) {
  if (!ctrace__grow(&o->p, &o->capp, o->np + 1, sizeof *o->p)) return NULL;
  uint64_t *slot = ctrace__map_put(&o->ps, (uint64_t)id, NULL);
  if (!slot) return NULL;
  *slot = ++o->np;
  memset(&o->p[o->np - 1], 0, sizeof o->p[0]);
  return &o->p[o->np - 1];
}

static g2m *new_m(g2order *o, int64_t id) {
  if (!ctrace__grow(&o->m, &o->capm, o->nm + 1, sizeof *o->m)) return NULL;
  uint64_t *slot = ctrace__map_put(&o->ms, (uint64_t)id, NULL);
  if (!slot) return NULL;
  *slot = ++o->nm;
  o->m[o->nm - 1] = (g2m){G2_NONE, G2_NONE};
  return &o->m[o->nm - 1];
}

static bool succeeds(uint64_t gen, uint64_t seq, uint64_t bgen, uint64_t bseq) {
  return gen == bgen && seq == bseq + 1;
}

/* ---- ranges (Go's rangeState) ------------------------------------------------- */

static uint8_t start_of(uint8_t t) {
  switch (t) {
  case CTRACE_EV122_STWEnd: return CTRACE_EV122_STWBegin;
  case CTRACE_EV122_GCActive: case CTRACE_EV122_GCEnd: return CTRACE_EV122_GCBegin;
  case CTRACE_EV122_GCSweepActive: case CTRACE_EV122_GCSweepEnd: return CTRACE_EV122_GCSweepBegin;
  case CTRACE_EV122_GCMarkAssistActive: case CTRACE_EV122_GCMarkAssistEnd:
    return CTRACE_EV122_GCMarkAssistBegin;
  case CTRACE_EV122_GoSyscallEnd: case CTRACE_EV122_GoSyscallEndBlocked:
    return CTRACE_EV122_GoSyscallBegin;
  case CTRACE_EV122_UserRegionEnd: return CTRACE_EV122_UserRegionBegin;
  }
  return 0;
}

static g2range range_type(uint8_t t, uint64_t desc) {
  uint8_t s = start_of(t);
  return (g2range){s ? s : t, desc};
}

static bool has_range(const g2ranges *r, g2range t) {
  for (uint32_t i = 0; i < r->n; i++)
    if (r->r[i].typ == t.typ && r->r[i].desc == t.desc) return true;
  return false;
}

static int push_range(g2ranges *r, g2range t, uint64_t off, ctrace_parse_error *err) {
  uint64_t cap = r->cap;
  if (!ctrace__grow(&r->r, &cap, (uint64_t)r->n + 1, sizeof *r->r))
    return ctrace__perr(err, off, "out of memory");
  r->cap = (uint32_t)cap;
  r->r[r->n++] = t;
  return 0;
}

static int begin_range(g2ranges *r, g2range t, uint64_t off, ctrace_parse_error *err) {
  if (has_range(r, t))
    return ctrace__perr(err, off, "discovered event already in-flight for when starting event %s", name(t.typ));
  return push_range(r, t, off, err);
}

static int active_range(g2ranges *r, g2range t, bool initial, uint64_t off, ctrace_parse_error *err) {
  if (initial) {
    if (has_range(r, t))
      return ctrace__perr(err, off, "found named active range already in first gen: {%u %llu}", t.typ,
                          (unsigned long long)t.desc);
    return push_range(r, t, off, err);
  }
  if (!has_range(r, t)) {
    char list[256] = "";
    size_t at = 0;
    for (uint32_t i = 0; i < r->n && at + 48 < sizeof list; i++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s{%u %llu}", i ? " " : "", r->r[i].typ,
                             (unsigned long long)r->r[i].desc);
    return ctrace__perr(err, off, "resource is missing active range: %s [%s]", name(t.typ), list);
  }
  return 0;
}

static int end_range(g2ranges *r, uint8_t t, uint64_t *desc, uint64_t off, ctrace_parse_error *err) {
  uint8_t st = start_of(t);
  for (uint32_t i = 0; i < r->n; i++)
    if (r->r[i].typ == st) {
      *desc = r->r[i].desc;
      r->r[i] = r->r[--r->n]; /* swap remove, as Go does */
      return 0;
    }
  return ctrace__perr(err, off, "tried to end event %s, but not in-flight", name(st));
}

/* ---- the queue ----------------------------------------------------------------- */

static void push(g2order *o, const g2ev *e, ctx c) {
  g2ev *q = &o->queue[(o->qhead + o->qlen++) % 4];
  *q = *e;
  q->m = c.m;
  q->p = c.p;
  q->g = c.g;
}

static void push_made(g2order *o, const g2ev *from, ctx c, uint8_t typ, uint64_t a0, uint64_t a1) {
  g2ev e = {{a0, a1, 0, 0, 0}, from->time, 0, 0, 0, from->off, typ, NULL, 0};
  push(o, &e, c);
}

/* ---- Advance -------------------------------------------------------------------- */

#define OK 1
#define WAIT 0
#define FAIL (-1)
#define ERRF(...) (ctrace__perr(err, ev->off, __VA_ARGS__), FAIL)

static int proc_status(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  int64_t pid = (int64_t)ev->args[0];
  /* Go reads the status as a uint8 (go122.ProcStatus): larger values wrap. */
  uint64_t status = (uint8_t)ev->args[1];
  if (status >= 5) return ERRF("invalid status for proc %lld: %llu", (long long)pid, (unsigned long long)status);
  uint8_t old = proc_state_of[status];
  g2p *s = get_p(o, pid);
  if (s) {
    if (status == CTRACE_PS_SYSCALL_ABANDONED && s->status == CTRACE_PS_SYSCALL) {
      old = PS_RUNNING;
      ev->args[1] = CTRACE_PS_SYSCALL;
    } else if (status == CTRACE_PS_SYSCALL_ABANDONED && s->status == CTRACE_PS_SYSCALL_ABANDONED) {
      old = PS_IDLE;
      ev->args[1] = CTRACE_PS_SYSCALL_ABANDONED;
    } else if (s->status != status) {
      return ERRF("inconsistent status for proc %lld: old %s vs. new %s", (long long)pid,
                  pstatus_name(s->status), pstatus_name(status));
    }
    s->gen = gen;
    s->seq = 0;
  } else {
    if (!(s = new_p(o, pid))) return ERRF("out of memory");
    s->status = (uint8_t)status;
    s->gen = gen;
    s->seq = 0;
    old = gen == o->initial_gen ? PS_UNDETERMINED : PS_NOTEXIST;
  }
  ev->args[2] = old;
  *nw = cur;
  if (status == CTRACE_PS_RUNNING || status == CTRACE_PS_SYSCALL) nw->p = pid;
  if (status == CTRACE_PS_SYSCALL_ABANDONED && old == PS_RUNNING) {
    /* The P is about to be stolen: the event belongs to the thread it is
     * bound to. */
    bool found = false;
    for (uint64_t i = 0; i < o->nm; i++)
      if (o->m[i].p == pid) {
        for (size_t k = 0; k < o->ms.cap; k++)
          if (o->ms.used[k] && o->ms.vals[k] == i + 1) cur.m = (int64_t)o->ms.keys[k];
        cur.p = pid;
        cur.g = o->m[i].g;
        found = true;
      }
    if (!found)
      return ERRF("failed to find sched context for proc %lld that's about to be stolen", (long long)pid);
  }
  push(o, ev, cur);
  return OK;
}

static int proc_start(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  int64_t pid = (int64_t)ev->args[0];
  g2p *s = get_p(o, pid);
  if (!s || s->status != CTRACE_PS_IDLE || !succeeds(gen, ev->args[1], s->gen, s->seq) || cur.p != G2_NONE)
    return WAIT;
  if (validate(cur, MUST, NOT, MAY, ev->off, err)) return FAIL;
  s->status = CTRACE_PS_RUNNING;
  s->gen = gen;
  s->seq = ev->args[1];
  *nw = cur;
  nw->p = pid;
  push(o, ev, cur);
  return OK;
}

static int proc_stop(g2reader *r, g2ev *ev, ctx cur, ctx *nw, ctrace_parse_error *err) {
  g2order *o = &r->order;
  g2p *s = get_p(o, cur.p);
  if (!s) return ERRF("event %s for proc (%lld) that doesn't exist", name(ev->typ), (long long)cur.p);
  if (s->status != CTRACE_PS_RUNNING && s->status != CTRACE_PS_SYSCALL)
    return ERRF("%s event for proc that's not Running or Syscall", name(ev->typ));
  if (validate(cur, MUST, MUST, MAY, ev->off, err)) return FAIL;
  s->status = CTRACE_PS_IDLE;
  *nw = cur;
  nw->p = G2_NONE;
  push(o, ev, cur);
  return OK;
}

static int proc_steal(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  int64_t pid = (int64_t)ev->args[0];
  g2p *s = get_p(o, pid);
  if (!s || (s->status != CTRACE_PS_SYSCALL && s->status != CTRACE_PS_SYSCALL_ABANDONED) ||
      !succeeds(gen, ev->args[1], s->gen, s->seq))
    return WAIT;
  if (validate(cur, MUST, MAY, MAY, ev->off, err)) return FAIL;
  uint8_t old = s->status;
  ev->args[3] = old;
  s->status = CTRACE_PS_IDLE;
  s->gen = gen;
  s->seq = ev->args[1];
  *nw = cur;
  if (old == CTRACE_PS_SYSCALL_ABANDONED) {
    push(o, ev, cur);
    return OK;
  }
  int64_t mid = (int64_t)ev->args[2];
  if (mid == cur.m) {
    if (cur.p != pid)
      return ERRF("tried to self-steal proc %lld (thread %lld), but got proc %lld instead", (long long)pid,
                  (long long)mid, (long long)cur.p);
    nw->p = G2_NONE;
    push(o, ev, cur);
    return OK;
  }
  g2m *ms = get_m(o, mid);
  if (!ms) return ERRF("stole proc from non-existent thread %lld", (long long)mid);
  if (ms->p != pid)
    return ERRF("tried to steal proc %lld from thread %lld, but got proc %lld instead", (long long)pid,
                (long long)mid, (long long)ms->p);
  ms->p = G2_NONE;
  push(o, ev, cur);
  return OK;
}

static int go_status(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  int64_t gid = (int64_t)ev->args[0], mid = (int64_t)ev->args[1];
  /* Go reads the status as a uint8 (go122.GoStatus): larger values wrap. */
  uint64_t status = (uint8_t)ev->args[2];
  if (status >= 5) return ERRF("invalid status for goroutine %lld: %llu", (long long)gid, (unsigned long long)status);
  uint8_t old = go_state_of[status];
  g2g *s = get_g(o, gid);
  if (s) {
    if (s->status != status)
      return ERRF("inconsistent status for goroutine %lld: old %s vs. new %s", (long long)gid,
                  gstatus_name(s->status), gstatus_name(status));
    s->gen = gen;
    s->seq = 0;
  } else if (gen == o->initial_gen) {
    if (!(s = new_g(o, gid))) return ERRF("out of memory");
    s->status = (uint8_t)status;
    s->gen = gen;
    old = GS_UNDETERMINED;
  } else {
    return ERRF("found goroutine status for new goroutine after the first generation: id=%lld status=%s",
                (long long)gid, gstatus_name(status));
  }
  /* The old state goes after the arguments, as Go's extra() puts it. */
  ev->args[ev->typ == CTRACE_EV122_GoStatusStack ? 4 : 3] = old;
  *nw = cur;
  if (status == CTRACE_GS_RUNNING) {
    nw->g = gid;
  } else if (status == CTRACE_GS_SYSCALL) {
    if (mid == G2_NONE) return ERRF("found goroutine %lld in syscall without a thread", (long long)gid);
    if (mid == cur.m) {
      if (gen != o->initial_gen && cur.g != gid)
        return ERRF("inconsistent thread for syscalling goroutine %lld: thread has goroutine %lld",
                    (long long)gid, (long long)cur.g);
      nw->g = gid;
    } else {
      g2m *ms = get_m(o, mid);
      if (ms) {
        if (ms->g != gid)
          return ERRF("inconsistent thread for syscalling goroutine %lld: thread has goroutine %lld",
                      (long long)gid, (long long)ms->g);
        cur.g = ms->g;
      } else {
        if (!(ms = new_m(o, mid))) return ERRF("out of memory");
        ms->g = gid;
      }
      cur.m = mid;
    }
  }
  push(o, ev, cur);
  return OK;
}

static int go_create(g2reader *r, g2ev *ev, ctx cur, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, MUST, MUST, MAY, ev->off, err)) return FAIL;
  g2g *c = get_g(o, cur.g);
  if (c && c->status != CTRACE_GS_RUNNING)
    return ERRF("%s event for goroutine that's not Running", name(ev->typ));
  int64_t id = (int64_t)ev->args[0];
  if (get_g(o, id)) return ERRF("tried to create goroutine (%lld) that already exists", (long long)id);
  g2g *s = new_g(o, id);
  if (!s) return ERRF("out of memory");
  s->status = ev->typ == CTRACE_EV122_GoCreateBlocked ? CTRACE_GS_WAITING : CTRACE_GS_RUNNABLE;
  s->gen = gen;
  push(o, ev, cur);
  return OK;
}

/* GoDestroy, GoStop, GoBlock: the running goroutine stops. */
static int go_stop_exec(g2reader *r, g2ev *ev, ctx cur, ctx *nw, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  g2g *s = get_g(o, cur.g);
  if (!s) return ERRF("event %s for goroutine (%lld) that doesn't exist", name(ev->typ), (long long)cur.g);
  if (s->status != CTRACE_GS_RUNNING) return ERRF("%s event for goroutine that's not Running", name(ev->typ));
  *nw = cur;
  nw->g = G2_NONE;
  if (ev->typ == CTRACE_EV122_GoDestroy)
    del_g(o, cur.g);
  else
    s->status = ev->typ == CTRACE_EV122_GoStop ? CTRACE_GS_RUNNABLE : CTRACE_GS_WAITING;
  push(o, ev, cur);
  return OK;
}

static int go_start(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  int64_t gid = (int64_t)ev->args[0];
  g2g *s = get_g(o, gid);
  if (!s || s->status != CTRACE_GS_RUNNABLE || !succeeds(gen, ev->args[1], s->gen, s->seq)) return WAIT;
  if (validate(cur, MUST, MUST, NOT, ev->off, err)) return FAIL;
  s->status = CTRACE_GS_RUNNING;
  s->gen = gen;
  s->seq = ev->args[1];
  *nw = cur;
  nw->g = gid;
  push(o, ev, cur);
  return OK;
}

static int go_unblock(g2reader *r, g2ev *ev, ctx cur, uint64_t gen) {
  g2order *o = &r->order;
  g2g *s = get_g(o, (int64_t)ev->args[0]);
  if (!s || s->status != CTRACE_GS_WAITING || !succeeds(gen, ev->args[1], s->gen, s->seq)) return WAIT;
  s->status = CTRACE_GS_RUNNABLE;
  s->gen = gen;
  s->seq = ev->args[1];
  push(o, ev, cur);
  return OK;
}

static int go_switch(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  g2g *c = get_g(o, cur.g);
  if (!c) return ERRF("event %s for goroutine (%lld) that doesn't exist", name(ev->typ), (long long)cur.g);
  if (c->status != CTRACE_GS_RUNNING) return ERRF("%s event for goroutine that's not Running", name(ev->typ));
  int64_t next = (int64_t)ev->args[0];
  g2g *n = get_g(o, next);
  if (!n || n->status != CTRACE_GS_WAITING || !succeeds(gen, ev->args[1], n->gen, n->seq)) return WAIT;
  push(o, ev, cur);
  if (ev->typ == CTRACE_EV122_GoSwitch) {
    c->status = CTRACE_GS_WAITING;
    push_made(o, ev, cur, CTRACE_EV122_GoBlock, 0, 0);
  } else {
    push_made(o, ev, cur, CTRACE_EV122_GoDestroy, 0, 0);
    del_g(o, cur.g);
    n = get_g(o, next); /* the pool may have moved it: no, but the slot is reused */
  }
  n->status = CTRACE_GS_RUNNING;
  n->gen = gen;
  n->seq = ev->args[1];
  *nw = cur;
  nw->g = next;
  ctx start = cur;
  start.g = G2_NONE;
  push_made(o, ev, start, CTRACE_EV122_GoStart, (uint64_t)next, ev->args[1]);
  return OK;
}

static int syscall_begin(g2reader *r, g2ev *ev, ctx cur, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  g2g *s = get_g(o, cur.g);
  if (!s) return ERRF("event %s for goroutine (%lld) that doesn't exist", name(ev->typ), (long long)cur.g);
  if (s->status != CTRACE_GS_RUNNING) return ERRF("%s event for goroutine that's not Running", name(ev->typ));
  s->status = CTRACE_GS_SYSCALL;
  g2p *p = get_p(o, cur.p);
  if (!p) return ERRF("uninitialized proc %lld found during %s", (long long)cur.p, name(ev->typ));
  p->status = CTRACE_PS_SYSCALL;
  if (!succeeds(gen, ev->args[0], p->gen, p->seq))
    return ERRF("failed to advance %s: can't make sequence: %llu (gen=%llu) -> %llu (gen=%llu)", name(ev->typ),
                (unsigned long long)p->seq, (unsigned long long)p->gen, (unsigned long long)ev->args[0],
                (unsigned long long)gen);
  p->gen = gen;
  p->seq = ev->args[0];
  push(o, ev, cur);
  return OK;
}

static int syscall_end(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  g2g *s = get_g(o, cur.g);
  if (!s) return ERRF("event %s for goroutine (%lld) that doesn't exist", name(ev->typ), (long long)cur.g);
  if (s->status != CTRACE_GS_SYSCALL) return ERRF("%s event for goroutine that's not Running", name(ev->typ));
  s->status = CTRACE_GS_RUNNING;
  g2p *p = get_p(o, cur.p);
  if (!p) return ERRF("uninitialized proc %lld found during %s", (long long)cur.p, name(ev->typ));
  if (p->status != CTRACE_PS_SYSCALL)
    return ERRF("expected proc %lld in state Syscall, but got %s instead", (long long)cur.p, pstatus_name(p->status));
  p->status = CTRACE_PS_RUNNING;
  push(o, ev, cur);
  return OK;
}

static int syscall_end_blocked(g2reader *r, g2ev *ev, ctx cur, ctx *nw, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (cur.p != G2_NONE) {
    g2p *p = get_p(o, cur.p);
    if (!p) return ERRF("uninitialized proc %lld found during %s", (long long)cur.p, name(ev->typ));
    if (p->status == CTRACE_PS_SYSCALL) return WAIT;
  }
  if (validate(cur, MUST, MAY, MUST, ev->off, err)) return FAIL;
  g2g *s = get_g(o, cur.g);
  if (!s) return ERRF("event %s for goroutine (%lld) that doesn't exist", name(ev->typ), (long long)cur.g);
  if (s->status != CTRACE_GS_SYSCALL) return ERRF("%s event for goroutine that's not Running", name(ev->typ));
  *nw = cur;
  nw->g = G2_NONE;
  s->status = CTRACE_GS_RUNNABLE;
  push(o, ev, cur);
  return OK;
}

static int create_syscall(g2reader *r, g2ev *ev, ctx cur, ctx *nw, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, MUST, MAY, NOT, ev->off, err)) return FAIL;
  int64_t id = (int64_t)ev->args[0];
  if (get_g(o, id)) return ERRF("tried to create goroutine (%lld) in syscall that already exists", (long long)id);
  g2g *s = new_g(o, id);
  if (!s) return ERRF("out of memory");
  s->status = CTRACE_GS_SYSCALL;
  s->gen = gen;
  *nw = cur;
  nw->g = id;
  push(o, ev, cur);
  return OK;
}

static int destroy_syscall(g2reader *r, g2ev *ev, ctx cur, ctx *nw, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, MUST, MAY, MUST, ev->off, err)) return FAIL;
  g2g *s = get_g(o, cur.g);
  if (!s) return ERRF("event %s for goroutine (%lld) that doesn't exist", name(ev->typ), (long long)cur.g);
  if (s->status != CTRACE_GS_SYSCALL) return ERRF("%s event for goroutine that's not Syscall", name(ev->typ));
  *nw = cur;
  nw->g = G2_NONE;
  if (cur.p != G2_NONE) {
    g2p *p = get_p(o, cur.p);
    if (!p) return ERRF("found invalid proc %lld during %s", (long long)cur.p, name(ev->typ));
    if (p->status != CTRACE_PS_SYSCALL)
      return ERRF("proc %lld in unexpected state %s during %s", (long long)cur.p, pstatus_name(p->status),
                  name(ev->typ));
    /* The thread id may be reused: the P is let go of here, by a steal
     * of its own. */
    p->status = CTRACE_PS_SYSCALL_ABANDONED;
    nw->p = G2_NONE;
    g2ev steal = {{(uint64_t)cur.p, 0, 0, CTRACE_PS_SYSCALL, 0}, ev->time, 0, 0, 0, ev->off,
                  CTRACE_EV122_ProcSteal, NULL, 0};
    push(o, &steal, cur);
  }
  del_g(o, cur.g);
  push(o, ev, cur);
  return OK;
}

static int task_begin(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  g2order *o = &r->order;
  uint64_t id = ev->args[0];
  if (ctrace__map_get(&o->tasks, id)) return ERRF("task ID conflict: %llu", (unsigned long long)id);
  uint64_t parent = ev->args[1];
  if (parent == 0) {
    parent = G2_NO_TASK;
    ev->args[1] = G2_NO_TASK;
  }
  uint64_t len;
  const char *nm = ctrace__g2_string(&r->gen, ev->args[2], &len);
  if (!nm) return ERRF("invalid string ID %llu for %u event", (unsigned long long)ev->args[2], ev->typ);
  uint64_t idx;
  if (o->tfree) {
    idx = o->tfree - 1;
    o->tfree = o->t[idx].parent;
  } else {
    if (!ctrace__grow(&o->t, &o->capt, o->nt + 1, sizeof *o->t)) return ERRF("out of memory");
    idx = o->nt++;
  }
  uint64_t *slot = ctrace__map_put(&o->tasks, id, NULL);
  if (!slot) {
    o->t[idx].parent = o->tfree;
    o->tfree = idx + 1;
    return ERRF("out of memory");
  }
  *slot = idx + 1;
  o->t[idx] = (g2task){{nm, len, false}, parent};
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  push(o, ev, cur);
  return OK;
}

static int task_end(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  g2order *o = &r->order;
  uint64_t id = ev->args[0];
  const uint64_t *i = ctrace__map_get(&o->tasks, id);
  if (i) {
    uint64_t idx = *i - 1;
    g2task *t = &o->t[idx];
    ev->args[2] = t->parent;
    /* The type goes with the event, valid while this generation is: in
     * its arena, or a copy the generation frees. */
    g2gen *g = &r->gen;
    if (t->name.owned) {
      if (g->nextras == g->capextras) {
        uint64_t cap = g->capextras;
        if (!ctrace__grow(&g->extras, &cap, g->nextras + 1, sizeof *g->extras)) return ERRF("out of memory");
        g->capextras = cap;
      }
      g->extras[g->nextras++] = (char *)t->name.s;
    }
    ev->xstr = t->name.s;
    ev->xlen = t->name.len;
    ctrace__map_del(&o->tasks, id);
    t->name = (g2name){0};
    t->parent = o->tfree;
    o->tfree = idx + 1;
  } else {
    ev->args[2] = G2_NO_TASK;
    ev->xstr = "";
    ev->xlen = 0;
  }
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  push(o, ev, cur);
  return OK;
}

static int region(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  g2order *o = &r->order;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  uint64_t len;
  const char *nm = ctrace__g2_string(&r->gen, ev->args[1], &len);
  if (!nm) return ERRF("invalid string ID %llu for %u event", (unsigned long long)ev->args[1], ev->typ);
  g2g *s = get_g(o, cur.g);
  bool begin = ev->typ == CTRACE_EV122_UserRegionBegin;
  if (!s)
    return ERRF("encountered EvUserRegion%s without known state for current goroutine %lld", begin ? "Begin" : "End",
                (long long)cur.g);
  if (begin) {
    uint64_t cap = s->capregions;
    if (!ctrace__grow(&s->regions, &cap, (uint64_t)s->nregions + 1, sizeof *s->regions))
      return ERRF("out of memory");
    s->capregions = (uint32_t)cap;
    s->regions[s->nregions++] = (g2region){ev->args[0], {nm, len, false}};
  } else if (s->nregions) {
    /* A region begun before the trace is not known: its end is fine. */
    g2region *top = &s->regions[s->nregions - 1];
    if (top->task != ev->args[0] || top->name.len != len || memcmp(top->name.s, nm, len) != 0)
      return ERRF("misuse of region in goroutine %lld: region end {%llu %.*s} when the inner-most active region "
                  "start event is {%llu %.*s}",
                  (long long)cur.g, (unsigned long long)ev->args[0], (int)len, nm, (unsigned long long)top->task,
                  (int)top->name.len, top->name.s);
    free_name(&top->name);
    s->nregions--;
  }
  push(o, ev, cur);
  return OK;
}

static int gc_active(g2reader *r, g2ev *ev, ctx cur, uint64_t gen, ctrace_parse_error *err) {
  g2order *o = &r->order;
  uint64_t seq = ev->args[0];
  if (gen == o->initial_gen) {
    if (o->gc_state != GC_UNDETERMINED) return ERRF("GCActive in the first generation isn't first GC event");
    o->gc_seq = seq;
    o->gc_state = GC_RUNNING;
    push(o, ev, cur);
    return OK;
  }
  if (seq != o->gc_seq + 1) return WAIT;
  if (o->gc_state != GC_RUNNING) return ERRF("encountered GCActive while GC was not in progress");
  o->gc_seq = seq;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  push(o, ev, cur);
  return OK;
}

static int gc_begin(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  g2order *o = &r->order;
  uint64_t seq = ev->args[0];
  if (o->gc_state == GC_UNDETERMINED) {
    o->gc_seq = seq;
    o->gc_state = GC_RUNNING;
    push(o, ev, cur);
    return OK;
  }
  if (seq != o->gc_seq + 1) return WAIT;
  if (o->gc_state == GC_RUNNING) return ERRF("encountered GCBegin while GC was already in progress");
  o->gc_seq = seq;
  o->gc_state = GC_RUNNING;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  push(o, ev, cur);
  return OK;
}

static int gc_end(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  g2order *o = &r->order;
  uint64_t seq = ev->args[0];
  if (seq != o->gc_seq + 1) return WAIT;
  if (o->gc_state == GC_NOT_RUNNING) return ERRF("encountered GCEnd when GC was not in progress");
  if (o->gc_state == GC_UNDETERMINED) return ERRF("encountered GCEnd when GC was in an undetermined state");
  o->gc_seq = seq;
  o->gc_state = GC_NOT_RUNNING;
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  push(o, ev, cur);
  return OK;
}

static int simple(g2reader *r, g2ev *ev, ctx cur, int th, int pr, int go, ctrace_parse_error *err) {
  if (validate(cur, th, pr, go, ev->off, err)) return FAIL;
  push(&r->order, ev, cur);
  return OK;
}

static int sweep_begin(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  if (validate(cur, MUST, MUST, MAY, ev->off, err)) return FAIL;
  g2p *p = get_p(&r->order, cur.p);
  if (!p) return ERRF("uninitialized proc %lld found during %s", (long long)cur.p, name(ev->typ));
  if (begin_range(&p->ranges, range_type(ev->typ, 0), ev->off, err)) return FAIL;
  push(&r->order, ev, cur);
  return OK;
}

static int sweep_active(g2reader *r, g2ev *ev, ctx cur, uint64_t gen, ctrace_parse_error *err) {
  int64_t pid = (int64_t)ev->args[0];
  g2p *p = get_p(&r->order, pid);
  if (!p) return ERRF("encountered GCSweepActive for unknown proc %lld", (long long)pid);
  if (active_range(&p->ranges, range_type(ev->typ, 0), gen == r->order.initial_gen, ev->off, err)) return FAIL;
  push(&r->order, ev, cur);
  return OK;
}

static int sweep_end(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  if (validate(cur, MUST, MUST, MAY, ev->off, err)) return FAIL;
  g2p *p = get_p(&r->order, cur.p);
  if (!p) return ERRF("uninitialized proc %lld found during %s", (long long)cur.p, name(ev->typ));
  uint64_t desc;
  if (end_range(&p->ranges, ev->typ, &desc, ev->off, err)) return FAIL;
  push(&r->order, ev, cur);
  return OK;
}

static int go_range_begin(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  uint64_t desc = ev->typ == CTRACE_EV122_STWBegin ? ev->args[0] : 0;
  g2g *s = get_g(&r->order, cur.g);
  if (!s)
    return ERRF("encountered event of type %u without known state for current goroutine %lld", ev->typ,
                (long long)cur.g);
  if (begin_range(&s->ranges, range_type(ev->typ, desc), ev->off, err)) return FAIL;
  push(&r->order, ev, cur);
  return OK;
}

static int go_range_active(g2reader *r, g2ev *ev, ctx cur, uint64_t gen, ctrace_parse_error *err) {
  int64_t gid = (int64_t)ev->args[0];
  g2g *s = get_g(&r->order, gid);
  if (!s) return ERRF("uninitialized goroutine %lld found during %s", (long long)gid, name(ev->typ));
  if (active_range(&s->ranges, range_type(ev->typ, 0), gen == r->order.initial_gen, ev->off, err)) return FAIL;
  push(&r->order, ev, cur);
  return OK;
}

static int go_range_end(g2reader *r, g2ev *ev, ctx cur, ctrace_parse_error *err) {
  if (validate(cur, USER_GO, ev->off, err)) return FAIL;
  g2g *s = get_g(&r->order, cur.g);
  if (!s)
    return ERRF("encountered event of type %u without known state for current goroutine %lld", ev->typ,
                (long long)cur.g);
  uint64_t desc;
  if (end_range(&s->ranges, ev->typ, &desc, ev->off, err)) return FAIL;
  if (ev->typ == CTRACE_EV122_STWEnd) ev->args[0] = desc; /* the kind, for its name */
  push(&r->order, ev, cur);
  return OK;
}

int ctrace__g2_advance(g2reader *r, g2ev *ev, ctrace_parse_error *err) {
  g2order *o = &r->order;
  uint64_t gen = r->gen.gen;
  if (o->initial_gen == 0) o->initial_gen = gen;
  /* ev is changed in place (an old state, a task's parent) only where it
   * happens (or fails for good): one that must wait is tried again as
   * it was read. Not copied: a copy of every event was a tenth of the
   * reader's time. */
  int64_t m = ev->m;
  ctx cur = {G2_NONE, G2_NONE, m};
  g2m *ms = NULL;
  uint64_t mi = 0;
  if (m != G2_NONE) {
    /* A thread's state exists from its first event tried, happened or not. */
    ms = get_m(o, m);
    if (!ms && !(ms = new_m(o, m))) return ERRF("out of memory");
    mi = (uint64_t)(ms - o->m);
    cur.p = ms->p;
    cur.g = ms->g;
  }
  ctx nw = cur;
  int rc;
  switch (ev->typ) {
  case CTRACE_EV122_ProcsChange: case CTRACE_EV122_GoLabel: case CTRACE_EV122_UserLog:
    rc = simple(r, ev, cur, USER_GO, err);
    break;
  case CTRACE_EV122_ProcStart: rc = proc_start(r, ev, cur, &nw, gen, err); break;
  case CTRACE_EV122_ProcStop: rc = proc_stop(r, ev, cur, &nw, err); break;
  case CTRACE_EV122_ProcSteal: rc = proc_steal(r, ev, cur, &nw, gen, err); break;
  case CTRACE_EV122_ProcStatus: rc = proc_status(r, ev, cur, &nw, gen, err); break;
  case CTRACE_EV122_GoCreate: case CTRACE_EV122_GoCreateBlocked: rc = go_create(r, ev, cur, gen, err); break;
  case CTRACE_EV122_GoCreateSyscall: rc = create_syscall(r, ev, cur, &nw, gen, err); break;
  case CTRACE_EV122_GoStart: rc = go_start(r, ev, cur, &nw, gen, err); break;
  case CTRACE_EV122_GoDestroy: case CTRACE_EV122_GoStop: case CTRACE_EV122_GoBlock:
    rc = go_stop_exec(r, ev, cur, &nw, err);
    break;
  case CTRACE_EV122_GoDestroySyscall: rc = destroy_syscall(r, ev, cur, &nw, err); break;
  case CTRACE_EV122_GoUnblock: rc = go_unblock(r, ev, cur, gen); break;
  case CTRACE_EV122_GoSyscallBegin: rc = syscall_begin(r, ev, cur, gen, err); break;
  case CTRACE_EV122_GoSyscallEnd: rc = syscall_end(r, ev, cur, err); break;
  case CTRACE_EV122_GoSyscallEndBlocked: rc = syscall_end_blocked(r, ev, cur, &nw, err); break;
  case CTRACE_EV122_GoStatus: case CTRACE_EV122_GoStatusStack: rc = go_status(r, ev, cur, &nw, gen, err); break;
  case CTRACE_EV122_STWBegin: case CTRACE_EV122_GCMarkAssistBegin: rc = go_range_begin(r, ev, cur, err); break;
  case CTRACE_EV122_STWEnd: case CTRACE_EV122_GCMarkAssistEnd: rc = go_range_end(r, ev, cur, err); break;
  case CTRACE_EV122_GCMarkAssistActive: rc = go_range_active(r, ev, cur, gen, err); break;
  case CTRACE_EV122_GCActive: rc = gc_active(r, ev, cur, gen, err); break;
  case CTRACE_EV122_GCBegin: rc = gc_begin(r, ev, cur, err); break;
  case CTRACE_EV122_GCEnd: rc = gc_end(r, ev, cur, err); break;
  case CTRACE_EV122_GCSweepActive: rc = sweep_active(r, ev, cur, gen, err); break;
  case CTRACE_EV122_GCSweepBegin: rc = sweep_begin(r, ev, cur, err); break;
  case CTRACE_EV122_GCSweepEnd: rc = sweep_end(r, ev, cur, err); break;
  case CTRACE_EV122_HeapAlloc: case CTRACE_EV122_HeapGoal: rc = simple(r, ev, cur, MUST, MUST, MAY, err); break;
  case CTRACE_EV122_UserTaskBegin: rc = task_begin(r, ev, cur, err); break;
  case CTRACE_EV122_UserTaskEnd: rc = task_end(r, ev, cur, err); break;
  case CTRACE_EV122_UserRegionBegin: case CTRACE_EV122_UserRegionEnd: rc = region(r, ev, cur, err); break;
  case CTRACE_EV122_GoSwitch: case CTRACE_EV122_GoSwitchDestroy: rc = go_switch(r, ev, cur, &nw, gen, err); break;
  default:
    if (ctrace_event122_descs[ev->typ].flags & CTRACE_G_EXP) {
      rc = simple(r, ev, cur, MUST, MAY, MAY, err);
      break;
    }
    return ERRF("bad event type found while ordering: %u", ev->typ);
  }
  if (rc == OK && ms) {
    /* The pool may have moved (a GoStatus of another thread added one);
     * a thread's index in it stays. */
    ms = o->m + mi;
    ms->p = nw.p;
    ms->g = nw.g;
  }
  return rc;
}
