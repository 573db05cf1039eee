/* The classic event model for every trace: what the analyses and the
 * exporters read (model.h).
 *
 * The analyses interpret the events of the formats before Go 1.22
 * (GoCreate, GoStart, GoBlock*, GoSysCall ...). A Go 1.22+ trace has
 * another model: state transitions of goroutines and Ps, ranges, and
 * statuses at each generation's start. Rather than teach every analysis
 * both, this file turns each new-model event into the zero or more
 * classic events that Go 1.23's internal/trace/oldtrace.go would have
 * turned back into it, so that an analysis written after Go 1.23's
 * summarizer (internal/trace/summary.go) on converted classic traces
 * computes on a native trace what the summarizer computes on it.
 *
 * Stacks and strings: a 1.22+ trace's are per generation, and the reader's
 * tables are replaced at each generation, but the analyses resolve stack
 * ids and keep the frames' function names long after (at a block's end, at
 * the end of the pass, in the exporter's interning). The simplest correct
 * answer is to copy: each stack, by its frames, gets one id for the whole
 * trace, its frames and strings copied once into tables here, which live as
 * long as the reader (freed by ctrace_reader_close through r->model_free).
 * The same stack in two generations gets the same id, which is also what
 * Go's pprof does when it merges stacks by their PCs. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "reader.h"

/* Go's GoState and ProcState, as the reader puts the old state after a
 * status event's arguments (src/parse/go122/order.c). */
enum { GS_UNDETERMINED, GS_NOTEXIST, GS_RUNNABLE, GS_RUNNING, GS_WAITING, GS_SYSCALL };
enum { PS_UNDETERMINED, PS_NOTEXIST, PS_RUNNING, PS_IDLE };

#define QMAX 8 /* classic events one new-model event makes, at most */

typedef struct an_str {
  char *s;
  size_t len;
} an_str;

typedef struct an_stack {
  ctrace_frame *fr;
  uint32_t n;
} an_stack;

typedef struct an_regions { /* a goroutine's open regions: their starts' seq */
  uint64_t *seq;
  size_t n, cap;
} an_regions;

typedef struct model {
  /* For the whole trace: interned strings and stacks, by content hash. */
  u64map str_ix; /* hash -> id; collisions probe hash + 1 */
  an_str *strs;  /* id - 1 */
  size_t nstrs, capstrs;
  u64map stk_ix;
  an_stack *stks;
  size_t nstks, capstks;
  /* The trace's first event's time: the classic model's times count from
   * it (ctrace_event.ts), where the 1.22+ reader gives Go's own clock. */
  int64_t t0;
  bool have_t0;
  /* For the current generation: its stack ids to ours. */
  u64map gen_stk;
  /* For the current pass. */
  ctrace_event q[QMAX];
  int qhead, qlen;
  uint64_t seq;
  bool started;
  u64map reg_ix; /* g -> index + 1 into regs: goroutines with a region open */
  u64free reg_free; /* the slots of those with none open any more */
  an_regions *regs;
  size_t nregs, capregs;
  bool oom;
  bool transitions; /* only Go 1.27's transitions (ctrace__model_transitions) */
  /* The names set last, a slot by the reader's pointer: Go 1.27's
   * transitions name a reason each, a few strings over and over, which
   * hashing took a tenth of pprof's time. The pointer is the reader's and
   * may be reused for another string: a hit is checked by its bytes. */
  struct {
    const char *s;
    uint64_t id;
  } named[64];
} model;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The id (1-based) of string s of n bytes, copied on first sight; 0 if out
 * of memory. */
static uint64_t intern_str(model *a, const char *s, size_t n) {
  if (!s) s = "", n = 0;
  uint64_t h = fnv(14695981039346656037ull, s, n);
  for (;; h++) {
    bool fresh;
    uint64_t *v = ctrace__map_put(&a->str_ix, h, &fresh);
    if (!v) return 0;
    if (!fresh) {
      an_str *e = &a->strs[*v - 1];
      if (e->len == n && memcmp(e->s, s, n) == 0) return *v;
      continue;
    }
    if (a->nstrs == a->capstrs) {
      size_t cap = a->capstrs ? a->capstrs * 2 : 256;
      void *m = realloc(a->strs, cap * sizeof *a->strs);
      if (!m) goto oom;
      a->strs = m;
      a->capstrs = cap;
    }
    char *c = malloc(n + 1);
    if (!c) goto oom;
    memcpy(c, s, n);
    c[n] = 0;
    a->strs[a->nstrs] = (an_str){c, n};
    *v = ++a->nstrs;
    return *v;
  oom:
    ctrace__map_del(&a->str_ix, h);
    return 0;
  }
}

static size_t flen(const char *s, uint32_t len) { return len ? len : s ? strlen(s) : 0; }

/* Our id for the frames of one of the generation's stacks (0 for none). */
static uint64_t intern_stack(model *a, uint64_t gen_id, const ctrace_frame *fr, uint32_t n) {
  if (!gen_id || !n) return 0;
  uint64_t *known = ctrace__map_get(&a->gen_stk, gen_id);
  if (known) return *known;
  uint64_t h = 14695981039346656037ull;
  for (uint32_t i = 0; i < n; i++) {
    h = fnv(h, &fr[i].pc, sizeof fr[i].pc);
    h = fnv(h, &fr[i].line, sizeof fr[i].line);
    if (fr[i].func) h = fnv(h, fr[i].func, flen(fr[i].func, fr[i].func_len));
    h = fnv(h, "", 1);
    if (fr[i].file) h = fnv(h, fr[i].file, flen(fr[i].file, fr[i].file_len));
  }
  uint64_t id = 0;
  for (;; h++) {
    bool fresh;
    uint64_t *v = ctrace__map_put(&a->stk_ix, h, &fresh);
    if (!v) goto oom;
    if (!fresh) {
      an_stack *s = &a->stks[*v - 1];
      bool same = s->n == n;
      for (uint32_t i = 0; same && i < n; i++)
        same = s->fr[i].pc == fr[i].pc && s->fr[i].line == fr[i].line &&
               strcmp(s->fr[i].func, fr[i].func ? fr[i].func : "") == 0 &&
               strcmp(s->fr[i].file, fr[i].file ? fr[i].file : "") == 0;
      if (same) {
        id = *v;
        break;
      }
      continue;
    }
    if (a->nstks == a->capstks) {
      size_t cap = a->capstks ? a->capstks * 2 : 256;
      void *m = realloc(a->stks, cap * sizeof *a->stks);
      if (!m) goto oom_del;
      a->stks = m;
      a->capstks = cap;
    }
    ctrace_frame *c = malloc(n * sizeof *c);
    if (!c) goto oom_del;
    for (uint32_t i = 0; i < n; i++) {
      size_t fl = flen(fr[i].func, fr[i].func_len), il = flen(fr[i].file, fr[i].file_len);
      uint64_t fs = intern_str(a, fr[i].func, fl), is = intern_str(a, fr[i].file, il);
      if (!fs || !is) {
        free(c);
        goto oom_del;
      }
      c[i] = (ctrace_frame){fr[i].pc, a->strs[fs - 1].s, a->strs[is - 1].s, fr[i].line, fr[i].func_len,
                            fr[i].file_len};
    }
    a->stks[a->nstks] = (an_stack){c, n};
    *v = id = ++a->nstks;
    break;
  oom_del:
    ctrace__map_del(&a->stk_ix, h);
    goto oom;
  }
  bool fresh;
  uint64_t *g = ctrace__map_put(&a->gen_stk, gen_id, &fresh);
  if (!g) goto oom;
  *g = id;
  return id;
oom:
  a->oom = true;
  return 0;
}

static void model_free(void *p) {
  model *a = p;
  if (!a) return;
  for (size_t i = 0; i < a->nstrs; i++) free(a->strs[i].s);
  free(a->strs);
  for (size_t i = 0; i < a->nstks; i++) free(a->stks[i].fr);
  free(a->stks);
  ctrace__map_free(&a->str_ix);
  ctrace__map_free(&a->stk_ix);
  ctrace__map_free(&a->gen_stk);
  for (size_t i = 0; i < a->nregs; i++) free(a->regs[i].seq);
  free(a->regs);
  ctrace__map_free(&a->reg_ix);
  ctrace__free_free(&a->reg_free);
  free(a);
}

/* The adapter of a 1.22+ reader, made on first use; NULL for the older
 * formats (read as they are) or when out of memory. */
static model *adapter(ctrace_reader *r) {
  if (!r->g2) return NULL;
  if (!r->model) {
    r->model = calloc(1, sizeof(model));
    r->model_free = model_free;
  }
  return r->model;
}

/* Forgets the pass's state, keeps the tables (ids stay the same from one
 * pass to the next, which the filters' two passes rely on). */
static void pass_reset(model *a) {
  a->qhead = a->qlen = 0;
  a->seq = 0;
  a->started = false;
  ctrace__map_free(&a->gen_stk);
  for (size_t i = 0; i < a->nregs; i++) free(a->regs[i].seq);
  free(a->regs);
  a->regs = NULL;
  a->nregs = a->capregs = 0;
  ctrace__map_free(&a->reg_ix);
  ctrace__free_free(&a->reg_free);
}

void ctrace__model_transitions(ctrace_reader *r, bool on) {
  model *a = adapter(r);
  if (a) a->transitions = on && r->ver >= 1025; /* a go 1.25+ trace */
}

void ctrace__model_rewind(ctrace_reader *r) {
  model *a = adapter(r);
  if (a) pass_reset(a);
  ctrace_reader_rewind(r);
}

/* When the generations begin (ctrace_reader_generations) and the
 * trace's first event (a->t0): false if the trace does not read so far
 * (the pass that reads it says why). */
static bool gen_starts(ctrace_reader *r, model *a, const int64_t **starts, size_t *n) {
  if (!a->have_t0) { /* the trace's first event, which times count from */
    ctrace_event buf;
    ctrace__model_rewind(r);
    if (!ctrace__model_next_ref(r, &buf)) return false;
  }
  ctrace_parse_error err;
  return ctrace_reader_generations(r, starts, n, &err) == 0;
}

/* Rewinds for a pass from generation k (from 0). */
static void seek(ctrace_reader *r, model *a, size_t k) {
  ctrace_parse_error err;
  pass_reset(a);
  if (k == 0 || ctrace_reader_seek_generation(r, k + 1, &err) != 0) ctrace_reader_rewind(r);
}

int64_t ctrace__model_seek(ctrace_reader *r, int64_t from_ns) {
  model *a = adapter(r);
  const int64_t *starts;
  size_t n, k = 0;
  if (!a || from_ns <= 0 || !gen_starts(r, a, &starts, &n)) {
    ctrace__model_rewind(r);
    return 0;
  }
  while (k < n && starts[k] - a->t0 <= from_ns) k++;
  /* k: the generation from_ns falls in, from 1. The one before it is
   * read too: a generation's first events may come before the time its
   * batches begin at, and what it shows (names, regions begun) is the
   * window's start state. */
  size_t skip = k > 2 ? k - 2 : 0;
  seek(r, a, skip);
  return (int64_t)skip;
}

int64_t ctrace__model_seek_gen(ctrace_reader *r, uint64_t k) {
  model *a = adapter(r);
  const int64_t *starts;
  size_t n;
  if (!a || k <= 1 || !gen_starts(r, a, &starts, &n) || k > n) {
    ctrace__model_rewind(r);
    return 0;
  }
  seek(r, a, k - 1);
  return (int64_t)k - 1;
}

int64_t ctrace__model_duration(ctrace_reader *r) {
  model *a = adapter(r);
  const int64_t *starts;
  size_t n;
  if (!a || !gen_starts(r, a, &starts, &n) || n == 0) return -1;
  seek(r, a, n - 1); /* the last generation alone gives the last event */
  ctrace_event ev;
  int64_t last = a->t0;
  while (ctrace_reader_next(r, &ev) == 1) last = ev.ts;
  ctrace_parse_error err;
  bool failed = ctrace_reader_failed(r, &err);
  ctrace__model_rewind(r);
  return failed ? -1 : last - a->t0;
}

size_t ctrace__model_stack(const ctrace_reader *r, uint64_t id, const ctrace_frame **frames) {
  if (!r->g2) return ctrace_reader_stack(r, id, frames);
  const model *a = r->model;
  *frames = NULL;
  if (!a || id == 0 || id > a->nstks) return 0;
  *frames = a->stks[id - 1].fr;
  return a->stks[id - 1].n;
}

const char *ctrace__model_string(const ctrace_reader *r, uint64_t id) {
  if (!r->g2) return ctrace_reader_string(r, id);
  const model *a = r->model;
  if (!a || id == 0 || id > a->nstrs) return "";
  return a->strs[id - 1].s;
}

/* ---- the conversion -------------------------------------------------------------- */

static uint64_t gid(uint64_t g) { return (int64_t)g < 0 ? 0 : g; }

static ctrace_event *emit(model *a, const ctrace_event *src, uint8_t type, uint64_t g) {
  ctrace_event *e = &a->q[(a->qhead + a->qlen++) % QMAX];
  /* Every field but the ones set below, by hand: a memset of the whole
   * event is a rep stosq, a tenth of a profile's pass over 1.22+ trace. */
  memset(e->args, 0, sizeof e->args);
  e->stack = e->tstack = 0;
  e->sargs[0] = e->sargs[1] = NULL;
  e->sargs_len[0] = e->sargs_len[1] = 0;
  e->format = e->kind = e->has_stack = e->has_tstack = 0;
  e->frames = e->tframes = NULL;
  e->nframes = e->ntframes = 0;
  e->seq = a->seq++;
  e->ts = src->ts - a->t0;
  e->off = src->off;
  e->type = type;
  e->p = src->p;
  e->g = g;
  e->m = src->m;
  e->link = CTRACE_NO_LINK;
  return e;
}

static uint64_t stk(model *a, const ctrace_event *ev) {
  return ev->has_stack ? intern_stack(a, ev->stack, ev->frames, ev->nframes) : 0;
}

/* Go 1.23's transition stack (the one that names a goroutine in Go's
 * summary), in tstack of the classic event that changes its state. */
static uint64_t tstk(model *a, const ctrace_event *ev) {
  return ev->has_tstack ? intern_stack(a, ev->tstack, ev->tframes, ev->ntframes) : 0;
}

/* e's sargs[0]: the interned copy of s (which may be gone by the event's
 * use), or "" for none; its id, 0 for none. */
static uint64_t set_name(model *a, ctrace_event *e, const char *s, size_t len) {
  size_t slot = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) % (sizeof a->named / sizeof a->named[0]);
  uint64_t id = a->named[slot].id;
  if (!s || a->named[slot].s != s || a->strs[id - 1].len != len ||
      (len && memcmp(a->strs[id - 1].s, s, len) != 0)) {
    id = intern_str(a, s, len);
    if (s && id) a->named[slot].s = s, a->named[slot].id = id;
  }
  e->sargs[0] = id ? a->strs[id - 1].s : "";
  e->sargs_len[0] = id ? a->strs[id - 1].len : 0;
  return id;
}

/* A GoStatusStack, whose stack no classic event has room for, passed on
 * as CTRACE__MODEL_GoStatusStack (analyse.h): Go 1.23's pprof reads it as a
 * transition with a stack, which begins a syscall or sched interval. */
static void status_stack(model *a, const ctrace_event *ev) {
  if (ev->type != CTRACE_EV122_GoStatusStack) return;
  ctrace_event *e = emit(a, ev, CTRACE__MODEL_GoStatusStack, 0);
  e->format = 1;
  e->args[0] = ev->args[0];
  e->args[2] = ev->args[2];
  e->stack = stk(a, ev);
  e->tstack = tstk(a, ev); /* go 1.25+: Go 1.27 names a goroutine from it */
}

static an_regions *regions_of(model *a, uint64_t g) {
  bool fresh;
  an_regions *rs = ctrace__map_slot(&a->reg_ix, &a->reg_free, g, &a->regs, &a->nregs, &a->capregs, sizeof *a->regs, &fresh);
  if (!rs) a->oom = true;
  return rs;
}

/* The classic kind of a block for Go's reason; GoBlock (with the reason in
 * sargs[0]) for the reasons no classic kind names; GoStop for "forever",
 * which Go's summary reads as the goroutine's end, as it reads GoStop. */
static uint8_t block_kind(const char *s, size_t len) {
#define K(reason, type) {reason, sizeof reason - 1, type}
  static const struct {
    const char *reason;
    size_t len;
    uint8_t type;
  } k[] = {K("sleep", CTRACE_EV_GoSleep),     K("chan send", CTRACE_EV_GoBlockSend),
           K("chan receive", CTRACE_EV_GoBlockRecv), K("select", CTRACE_EV_GoBlockSelect),
           K("sync", CTRACE_EV_GoBlockSync),  K("sync.(*Cond).Wait", CTRACE_EV_GoBlockCond),
           K("network", CTRACE_EV_GoBlockNet), K("GC mark assist wait for work", CTRACE_EV_GoBlockGC),
           K("forever", CTRACE_EV_GoStop)};
#undef K
  /* By length first: a block each event, and the runtime's own reasons
   * ("system goroutine wait") matched none after nine calls of strcmp. */
  for (size_t i = 0; s && i < sizeof k / sizeof k[0]; i++)
    if (k[i].len == len && memcmp(s, k[i].reason, len) == 0) return k[i].type;
  return CTRACE_EV_GoBlock;
}

/* Go 1.27's Event.StateTransition of a goroutine (format.c's transition,
 * for goroutines): CTRACE__MODEL_Transition, for Go 1.27's profiles. */
static void transition(model *a, const ctrace_event *ev) {
  static const uint8_t state_of[5] = {GS_UNDETERMINED, GS_RUNNABLE, GS_RUNNING, GS_SYSCALL, GS_WAITING};
  const uint64_t *x = ev->args;
  uint64_t id = gid(ev->g), from, to;
  const char *reason = "";
  size_t rlen = 0;
  switch (ev->type) {
  case CTRACE_EV122_GoCreate: id = x[0], from = GS_NOTEXIST, to = GS_RUNNABLE; break;
  case CTRACE_EV122_GoCreateBlocked: id = x[0], from = GS_NOTEXIST, to = GS_WAITING; break;
  case CTRACE_EV122_GoCreateSyscall: id = x[0], from = GS_NOTEXIST, to = GS_SYSCALL; break;
  case CTRACE_EV122_GoStart: id = x[0], from = GS_RUNNABLE, to = GS_RUNNING; break;
  case CTRACE_EV122_GoDestroy: from = GS_RUNNING, to = GS_NOTEXIST; break;
  case CTRACE_EV122_GoDestroySyscall: from = GS_SYSCALL, to = GS_NOTEXIST; break;
  case CTRACE_EV122_GoStop: case CTRACE_EV122_GoBlock:
    from = GS_RUNNING, to = ev->type == CTRACE_EV122_GoStop ? GS_RUNNABLE : GS_WAITING;
    reason = ev->sargs[0], rlen = ev->sargs_len[0];
    break;
  case CTRACE_EV122_GoUnblock: case CTRACE_EV122_GoSwitch: case CTRACE_EV122_GoSwitchDestroy:
    id = x[0], from = GS_WAITING, to = GS_RUNNABLE;
    break;
  case CTRACE_EV122_GoSyscallBegin: from = GS_RUNNING, to = GS_SYSCALL; break;
  case CTRACE_EV122_GoSyscallEnd: from = GS_SYSCALL, to = GS_RUNNING; break;
  case CTRACE_EV122_GoSyscallEndBlocked: from = GS_SYSCALL, to = GS_RUNNABLE; break;
  case CTRACE_EV122_GoStatus: case CTRACE_EV122_GoStatusStack:
    id = x[0], from = x[ev->type == CTRACE_EV122_GoStatusStack ? 4 : 3];
    to = x[2] < 5 ? state_of[x[2]] : GS_UNDETERMINED;
    break;
  default: return;
  }
  ctrace_event *e = emit(a, ev, CTRACE__MODEL_Transition, id);
  e->format = 1;
  e->args[0] = id;
  e->args[1] = from;
  e->args[2] = to;
  set_name(a, e, reason, rlen);
  e->stack = stk(a, ev);
}

/* Ps: changes of GOMAXPROCS, starts, stops, steals and statuses. */
static void convert_proc(model *a, const ctrace_event *ev, uint64_t g) {
  ctrace_event *e;
  switch (ev->type) {
  case CTRACE_EV122_ProcsChange:
    e = emit(a, ev, CTRACE_EV_Gomaxprocs, g);
    e->args[0] = ev->args[0];
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_ProcStart:
    e = emit(a, ev, CTRACE_EV_ProcStart, g);
    e->p = (int64_t)ev->args[0];
    e->args[0] = (uint64_t)ev->m;
    break;
  case CTRACE_EV122_ProcStop:
    emit(a, ev, CTRACE_EV_ProcStop, g);
    break;
  case CTRACE_EV122_ProcSteal:
    /* The P of a goroutine in a syscall goes idle: its call now blocks
     * (Go's summary), unless the P was already abandoned (idle before). */
    if (ev->args[3] != CTRACE_PS_SYSCALL_ABANDONED) {
      e = emit(a, ev, CTRACE_EV_ProcStop, 0);
      e->p = (int64_t)ev->args[0];
    }
    break;
  case CTRACE_EV122_ProcStatus: {
    bool idle = ev->args[1] == CTRACE_PS_IDLE || ev->args[1] == CTRACE_PS_SYSCALL_ABANDONED;
    if (idle && ev->args[2] != PS_IDLE) {
      e = emit(a, ev, CTRACE_EV_ProcStop, 0);
      e->p = (int64_t)ev->args[0];
    }
    break;
  }
  }
}

/* A goroutine's status at a generation's start (GoStatus, GoStatusStack). */
static void convert_status(model *a, const ctrace_event *ev) {
  uint64_t old = ev->args[ev->type == CTRACE_EV122_GoStatusStack ? 4 : 3];
  if (old != GS_UNDETERMINED) { /* known already: nothing new but the stack */
    status_stack(a, ev);
    return;
  }
  /* First seen: announced as classic traces announce goroutines there
   * at their start, a creation (args[2] = 1: there before, no creation
   * in the trace) and the status. */
  uint64_t id = ev->args[0];
  ctrace_event *e = emit(a, ev, CTRACE_EV_GoCreate, 0);
  e->args[0] = id;
  e->args[2] = 1;
  e->args[3] = ev->args[2]; /* the status, CTRACE_GS_* */
  switch (ev->args[2]) {
  case CTRACE_GS_RUNNING:
    e = emit(a, ev, CTRACE_EV_GoStart, id);
    e->args[0] = id;
    break;
  case CTRACE_GS_WAITING:
    e = emit(a, ev, CTRACE_EV_GoWaiting, id);
    e->args[0] = id;
    break;
  case CTRACE_GS_SYSCALL:
    e = emit(a, ev, CTRACE_EV_GoInSyscall, id);
    e->args[0] = id;
    break;
  }
  status_stack(a, ev);
}

/* Goroutines' transitions but those of system calls: creations, starts,
 * ends, stops, blocks and wakeups. */
static void convert_goroutine(model *a, const ctrace_event *ev, uint64_t g) {
  ctrace_event *e;
  switch (ev->type) {
  case CTRACE_EV122_GoCreate:
  case CTRACE_EV122_GoCreateBlocked:
    e = emit(a, ev, CTRACE_EV_GoCreate, g);
    e->args[0] = ev->args[0];
    e->args[1] = e->tstack = tstk(a, ev);
    e->stack = stk(a, ev);
    if (ev->type == CTRACE_EV122_GoCreateBlocked) {
      e->args[2] = 2; /* Go 1.23's pprof must not read it as made runnable */
      e = emit(a, ev, CTRACE_EV_GoBlock, ev->args[0]);
      e->sargs[0] = "";
    }
    break;
  case CTRACE_EV122_GoStart:
    e = emit(a, ev, CTRACE_EV_GoStart, ev->args[0]);
    e->args[0] = ev->args[0];
    e->args[1] = ev->args[1];
    break;
  case CTRACE_EV122_GoDestroy:
    emit(a, ev, CTRACE_EV_GoEnd, g);
    break;
  case CTRACE_EV122_GoDestroySyscall:
    emit(a, ev, CTRACE_EV_GoEnd, g)->args[0] = 1; /* its id comes back (model.h) */
    break;
  case CTRACE_EV122_GoStop:
    e = emit(a, ev, ev->sargs[0] && strcmp(ev->sargs[0], "runtime.Gosched") == 0 ? CTRACE_EV_GoSched
                                                                                 : CTRACE_EV_GoPreempt,
             g);
    e->stack = stk(a, ev);
    e->tstack = tstk(a, ev);
    break;
  case CTRACE_EV122_GoBlock:
    e = emit(a, ev, block_kind(ev->sargs[0], flen(ev->sargs[0], ev->sargs_len[0])), g);
    e->stack = stk(a, ev);
    e->tstack = tstk(a, ev);
    if (e->type == CTRACE_EV_GoBlock) set_name(a, e, ev->sargs[0], ev->sargs_len[0]);
    break;
  case CTRACE_EV122_GoUnblock:
  case CTRACE_EV122_GoSwitch:
  case CTRACE_EV122_GoSwitchDestroy:
    /* The woken goroutine's transition, as Go's StateTransition gives it;
     * a switch's own goroutine changes state in events of its own. */
    e = emit(a, ev, CTRACE_EV_GoUnblock, g);
    e->args[0] = ev->args[0];
    e->args[1] = ev->args[1];
    e->stack = stk(a, ev);
    break;
  }
}

/* System calls, and goroutines that appear in one. */
static void convert_syscall(model *a, const ctrace_event *ev, uint64_t g) {
  ctrace_event *e;
  switch (ev->type) {
  case CTRACE_EV122_GoCreateSyscall:
    /* A goroutine that appears in a syscall (a C thread calling Go). */
    e = emit(a, ev, CTRACE_EV_GoCreate, 0);
    e->args[0] = ev->args[0];
    emit(a, ev, CTRACE_EV_GoSysCall, ev->args[0]);
    emit(a, ev, CTRACE_EV_GoSysBlock, ev->args[0]);
    break;
  case CTRACE_EV122_GoSyscallBegin:
    /* Every 1.22+ call is a state of its own, to its end, as a classic
     * call that blocked: GoSysBlock follows at once. */
    e = emit(a, ev, CTRACE_EV_GoSysCall, g);
    e->stack = stk(a, ev);
    e->tstack = tstk(a, ev);
    emit(a, ev, CTRACE_EV_GoSysBlock, g);
    break;
  case CTRACE_EV122_GoSyscallEnd:
  case CTRACE_EV122_GoSyscallEndBlocked:
    e = emit(a, ev, CTRACE_EV_GoSysExit, g);
    e->args[0] = g;
    if (ev->type == CTRACE_EV122_GoSyscallEnd) { /* back to running at once */
      e = emit(a, ev, CTRACE_EV_GoStart, g);
      e->args[0] = g;
    }
    break;
  }
}

/* The collector and the world's stops: STW, GC, sweeps, mark assists,
 * the heap's counters, and what only Go's MMU reads (labels, ranges under
 * way at a generation's start). */
static void convert_gc(model *a, const ctrace_event *ev, uint64_t g) {
  ctrace_event *e;
  switch (ev->type) {
  case CTRACE_EV122_STWBegin:
    e = emit(a, ev, CTRACE_EV_GCSTWStart, g);
    e->sargs[0] = ev->sargs[0];
    e->sargs_len[0] = ev->sargs_len[0];
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_STWEnd:
    emit(a, ev, CTRACE_EV_GCSTWDone, g);
    break;
  case CTRACE_EV122_GCBegin:
    e = emit(a, ev, CTRACE_EV_GCStart, g);
    e->args[0] = ev->args[0];
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_GCEnd:
    emit(a, ev, CTRACE_EV_GCDone, g);
    break;
  case CTRACE_EV122_GCSweepBegin:
    e = emit(a, ev, CTRACE_EV_GCSweepStart, g);
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_GCSweepEnd:
    e = emit(a, ev, CTRACE_EV_GCSweepDone, g);
    e->args[0] = ev->args[0];
    e->args[1] = ev->args[1];
    break;
  case CTRACE_EV122_GCMarkAssistBegin:
    e = emit(a, ev, CTRACE_EV_GCMarkAssistStart, g);
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_GCMarkAssistEnd:
    emit(a, ev, CTRACE_EV_GCMarkAssistDone, g);
    break;
  case CTRACE_EV122_HeapAlloc:
  case CTRACE_EV122_HeapGoal:
    e = emit(a, ev, ev->type == CTRACE_EV122_HeapAlloc ? CTRACE_EV_HeapAlloc : CTRACE_EV_HeapGoal, g);
    e->args[0] = ev->args[0];
    break;
  case CTRACE_EV122_GoLabel:
    /* No classic kind (a classic trace puts it in GoStartLabel): passed
     * on, for Go's MMU, which counts labelled mark workers. */
    e = emit(a, ev, CTRACE__MODEL_GoLabel, g);
    e->format = 1;
    set_name(a, e, ev->sargs[0], ev->sargs_len[0]);
    break;
  case CTRACE_EV122_GCMarkAssistActive:
  case CTRACE_EV122_GCSweepActive:
    /* Ranges under way at a generation's start: no classic kind, passed on
     * for Go's MMU, which counts those of the first generation. */
    e = emit(a, ev, CTRACE__MODEL_RangeActive, g);
    e->format = 1;
    e->args[0] = ev->args[0];
    e->args[1] = ev->type;
    break;
  }
}

/* Links a region's end to its start, as the classic reader does; Go's
 * reader has checked that they nest. */
static void region_link(model *a, ctrace_event *e, uint64_t g, bool begin) {
  an_regions *rs = regions_of(a, g);
  if (!rs) return;
  if (begin) {
    if (rs->n == rs->cap) {
      size_t cap = rs->cap ? rs->cap * 2 : 4;
      void *m = realloc(rs->seq, cap * sizeof *rs->seq);
      if (!m) {
        a->oom = true;
        return;
      }
      rs->seq = m;
      rs->cap = cap;
    }
    rs->seq[rs->n++] = e->seq;
  } else if (rs->n) {
    e->link = rs->seq[--rs->n];
    if (rs->n == 0) { /* none open: forgotten, as the goroutine may be gone soon for good */
      free(rs->seq);
      if (!ctrace__map_slot_drop(&a->reg_ix, NULL, &a->reg_free, g, a->regs, sizeof *a->regs)) a->oom = true;
    }
  }
}

/* The user's annotations: tasks, regions and logs. */
static void convert_user(model *a, const ctrace_event *ev, uint64_t g) {
  ctrace_event *e;
  switch (ev->type) {
  case CTRACE_EV122_UserTaskBegin:
    e = emit(a, ev, CTRACE_EV_UserTaskCreate, g);
    e->args[0] = ev->args[0];
    e->args[1] = ev->args[1];
    e->args[2] = set_name(a, e, ev->sargs[0], ev->sargs_len[0]);
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_UserTaskEnd:
    e = emit(a, ev, CTRACE_EV_UserTaskEnd, g);
    e->args[0] = ev->args[0];
    e->stack = stk(a, ev);
    break;
  case CTRACE_EV122_UserRegionBegin:
  case CTRACE_EV122_UserRegionEnd: {
    bool begin = ev->type == CTRACE_EV122_UserRegionBegin;
    e = emit(a, ev, CTRACE_EV_UserRegion, g);
    e->args[0] = ev->args[0];
    e->args[1] = !begin;
    e->args[2] = set_name(a, e, ev->sargs[0], ev->sargs_len[0]);
    e->stack = stk(a, ev);
    region_link(a, e, g, begin);
    break;
  }
  case CTRACE_EV122_UserLog:
    e = emit(a, ev, CTRACE_EV_UserLog, g);
    e->args[0] = ev->args[0];
    e->args[1] = set_name(a, e, ev->sargs[0], ev->sargs_len[0]);
    e->sargs[1] = ev->sargs[1]; /* valid until the next read, as a classic log's */
    e->sargs_len[1] = ev->sargs_len[1];
    e->stack = stk(a, ev);
    break;
  }
}

/* One new-model event into its classic events, queued (a->q): by family,
 * each helper handling the events its switch names. */
static void convert(model *a, const ctrace_event *ev) {
  uint64_t g = gid(ev->g);
  if (!a->started && !a->transitions) {
    /* Classic traces begin with Gomaxprocs: the analyses date goroutines
     * there before the trace from it. */
    a->started = true;
    emit(a, ev, CTRACE_EV_Gomaxprocs, 0);
  }
  if (a->transitions) {
    /* Nothing but the transitions, the Syncs and the regions (model.h). */
    transition(a, ev);
    if (ev->type != CTRACE_EV122_Sync && ev->type != CTRACE_EV122_UserRegionBegin &&
        ev->type != CTRACE_EV122_UserRegionEnd)
      return;
  }
  switch (ev->type) {
  case CTRACE_EV122_Sync: {
    /* Passed on as it is: no classic kind, but Go's summary dates the
     * goroutines it first meets in a later generation from it. */
    ctrace_event *e = emit(a, ev, CTRACE_EV122_Sync, 0);
    e->format = 1;
    e->kind = CTRACE_KIND_Sync;
    ctrace__map_free(&a->gen_stk); /* the next generation's ids are new */
    break;
  }
  case CTRACE_EV122_ProcsChange: case CTRACE_EV122_ProcStart: case CTRACE_EV122_ProcStop:
  case CTRACE_EV122_ProcSteal: case CTRACE_EV122_ProcStatus:
    convert_proc(a, ev, g);
    break;
  case CTRACE_EV122_GoStatus: case CTRACE_EV122_GoStatusStack:
    convert_status(a, ev);
    break;
  case CTRACE_EV122_GoCreate: case CTRACE_EV122_GoCreateBlocked: case CTRACE_EV122_GoStart:
  case CTRACE_EV122_GoDestroy: case CTRACE_EV122_GoDestroySyscall: case CTRACE_EV122_GoStop:
  case CTRACE_EV122_GoBlock: case CTRACE_EV122_GoUnblock: case CTRACE_EV122_GoSwitch:
  case CTRACE_EV122_GoSwitchDestroy:
    convert_goroutine(a, ev, g);
    break;
  case CTRACE_EV122_GoCreateSyscall: case CTRACE_EV122_GoSyscallBegin: case CTRACE_EV122_GoSyscallEnd:
  case CTRACE_EV122_GoSyscallEndBlocked:
    convert_syscall(a, ev, g);
    break;
  case CTRACE_EV122_STWBegin: case CTRACE_EV122_STWEnd: case CTRACE_EV122_GCBegin: case CTRACE_EV122_GCEnd:
  case CTRACE_EV122_GCSweepBegin: case CTRACE_EV122_GCSweepEnd: case CTRACE_EV122_GCMarkAssistBegin:
  case CTRACE_EV122_GCMarkAssistEnd: case CTRACE_EV122_HeapAlloc: case CTRACE_EV122_HeapGoal:
  case CTRACE_EV122_GoLabel: case CTRACE_EV122_GCMarkAssistActive: case CTRACE_EV122_GCSweepActive:
    convert_gc(a, ev, g);
    break;
  case CTRACE_EV122_UserTaskBegin: case CTRACE_EV122_UserTaskEnd: case CTRACE_EV122_UserRegionBegin:
  case CTRACE_EV122_UserRegionEnd: case CTRACE_EV122_UserLog:
    convert_user(a, ev, g);
    break;
  case CTRACE_EV122_CPUSample: {
    ctrace_event *e = emit(a, ev, CTRACE_EV_CPUSample, g);
    e->args[0] = (uint64_t)ev->ts;
    e->args[1] = (uint64_t)ev->p;
    e->args[2] = g;
    e->stack = intern_stack(a, ev->stack, ev->frames, ev->nframes);
    break;
  }
  default: /* GC actives, experimental events: no classic kind */
    break;
  }
}

int ctrace__model_next(ctrace_reader *r, ctrace_event *ev) {
  const ctrace_event *e = ctrace__model_next_ref(r, ev);
  if (e && e != ev) *ev = *e;
  return e != NULL;
}

const ctrace_event *ctrace__model_next_ref(ctrace_reader *r, ctrace_event *buf) {
  model *a = adapter(r);
  if (!r->g2) return ctrace_reader_next(r, buf) ? buf : NULL;
  if (!a) return NULL;
  while (a->qlen == 0) {
    ctrace_event nbuf;
    const ctrace_event *nev = ctrace_reader_next_ref(r, &nbuf);
    if (!nev) return NULL;
    if (!a->have_t0) { /* kept across passes: the same trace */
      a->t0 = nev->ts;
      a->have_t0 = true;
    }
    convert(a, nev);
    if (a->oom) return NULL;
  }
  /* The slot stays as it is until the next call: only convert writes the
   * queue, and only when it is empty. */
  const ctrace_event *e = &a->q[a->qhead];
  a->qhead = (a->qhead + 1) % QMAX;
  a->qlen--;
  return e;
}

bool ctrace__model_oom(const ctrace_reader *r) {
  const model *a = r->g2 ? r->model : NULL;
  return r->g2 && (!a || a->oom);
}
