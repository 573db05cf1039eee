/* The walk: one pass over a checked reader's ordered stream, turning its
 * events into the records of model.h for an encoder, as they come. Memory
 * is the state of live goroutines, Ps and tasks, not the events.
 *
 * What it makes (docs/analyse.md): per goroutine, its states as back-to-back
 * slices (running, runnable, syscall, waiting with its reason) and a child
 * track of its user regions; per P, the goroutine it runs; GC and
 * stop-the-world slices; per user task, an async track spanning creation to
 * end with its logs as instants; counters of goroutines by state, of threads
 * (holding a P, in a syscall) and of the heap; flows from a creator to the
 * goroutine's first run and from a waker to the woken goroutine's next run.
 * Creations, blocks and system calls carry their stacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse/analyse.h"
#include "export/model.h"
#include "parse/map.h"
#include "runtime/startname.h"

/* Goroutine states, as counted; G_NONE: not yet seen or ended. */
enum { G_RUNNING, G_RUNNABLE, G_WAITING, G_SYSCALL, G_NSTATES, G_NONE = -1 };

typedef struct gstate {
  uint64_t id;
  bool described, in_slice, regions_described;
  int8_t state;
  int regions_open;
  uint64_t flow_in; /* a flow to end at its next run, 0 none */
  /* Its start function and its thread's name ("" none), which name its
   * track: the reader's strings. */
  const char *fn, *thread;
  bool named; /* fn settled (ctrace__an_name_from) */
  /* "G<id>", the name of its slices on a P's track: made once, and kept
   * to the walk's end, so that an encoder knows it by its address
   * (ex_rec.lasting) at each of its starts. */
  char *pname;
} gstate;

/* A task's value in walk.tasks: its type's string id, shifted, and flags. */
enum { T_DESCRIBED = 1, T_OPEN = 2, T_SHIFT = 2 };

typedef struct walk {
  const ex_source *s;
  ex_enc *e;
  u64map gix; /* g -> index + 1 */
  u64cache glast; /* gix's last keys */
  gstate *gs;
  size_t ngs, capgs;
  u64free gfree; /* the slots of goroutines gone (EX_GONE) */
  u64map prun;  /* p + 1 -> g + 1 running there */
  u64map pdesc; /* Ps described */
  u64map tasks; /* task id -> type << T_SHIFT | T_*, while the task lives */
  uint64_t flow_base, next_flow;
  int64_t gcount[G_NSTATES], procs;
  bool moved; /* gcount or procs changed by this event: counters to record */
  an_title title; /* the process's (retitle) */
  an_kept kept;   /* thread names from logs */
  int64_t shown[EX_C_COUNT][G_NSTATES]; /* the values last recorded */
  bool described[EX_C_COUNT];
  bool gc_described, gc_open, stw_open, oom;
  bool sought; /* the pass began after the trace's start (ctrace__model_seek) */
  /* "waiting: REASON" for a reason of a Go 1.22+ trace, composed here:
   * the encoders copy or write a name before put returns. */
  char reason_name[CTRACE_GO122_MAX_STRING + 16];
} walk;

static const char *const goroutine_series[] = {"running", "runnable", "waiting", "syscall"};
static const char *const thread_series[] = {"running", "in syscall"};
static const char *const heap_series[] = {"bytes"};
static const char *const counter_names[] = {"goroutines", "threads", "heap"};

/* Every record goes out here, on the timeline of the traces exported
 * together (the trace's offset). */
static void put(walk *w, ex_rec *r) {
  if (r->type != EX_TRACK) r->ts += w->s->offset;
  w->e->rec(w->e, r);
}

static void track(walk *w, int kind, uint64_t id, const char *name) {
  put(w, &(ex_rec){.type = EX_TRACK, .kind = (uint8_t)kind, .id = id, .name = name});
}

static void end(walk *w, int64_t ts, int kind, uint64_t id) {
  put(w, &(ex_rec){.type = EX_END, .kind = (uint8_t)kind, .id = id, .ts = ts});
}

/* The type of a task of value v. */
static const char *task_type(walk *w, uint64_t v) {
  return v >> T_SHIFT ? ctrace__model_string(w->s->r, v >> T_SHIFT) : "";
}

/* The task's value, its track described on first sight. NULL if out of
 * memory. */
static uint64_t *task(walk *w, uint64_t id, uint64_t type) {
  uint64_t *v = ctrace__map_put(&w->tasks, id, NULL);
  if (!v) {
    w->oom = true;
    return NULL;
  }
  if (!(*v & T_DESCRIBED)) {
    *v = type << T_SHIFT | T_DESCRIBED;
    put(w, &(ex_rec){.type = EX_TRACK, .kind = EX_TASK, .id = id, .task_type = task_type(w, *v)});
  }
  return v;
}

/* A goroutine's track is named by its thread's name, where the trace
 * gives one, else by its start function, as Go's viewer names goroutines;
 * then its id. Described again when the thread is renamed: the last
 * description names the thread (Perfetto's and Chrome's viewers). */
static void describe_g(walk *w, uint64_t g, gstate *gs) {
  const char *n = gs->thread[0] ? gs->thread : gs->fn;
  char name[512];
  snprintf(name, sizeof name, "%s%sG%llu", n, n[0] ? " " : "", (unsigned long long)g);
  track(w, EX_GOROUTINE, g, name);
  gs->described = true;
}

static gstate *gget(walk *w, uint64_t g, uint64_t create_stack) {
  bool fresh;
  gstate *gs = ctrace__map_slot_cached(&w->glast, &w->gix, &w->gfree, g, &w->gs, &w->ngs, &w->capgs, sizeof *w->gs, &fresh);
  if (!gs) {
    w->oom = true;
    return NULL;
  }
  if (fresh) {
    gs->id = g;
    gs->state = G_NONE;
    gs->fn = gs->thread = "";
  }
  if (!gs->described) {
    const ctrace_frame *fr;
    if (create_stack && ctrace__model_stack(w->s->r, create_stack, &fr)) gs->fn = fr[0].func ? fr[0].func : "";
    describe_g(w, g, gs);
  }
  return gs;
}

/* Ends the goroutine's current state slice and begins the next (NULL:
 * none), in state. next is a string literal, or w->reason_name. */
static void gslice(walk *w, uint64_t g, gstate *gs, int64_t ts, const char *next, int state,
                   uint64_t stack, uint64_t flow_in) {
  if (gs->in_slice) end(w, ts, EX_GOROUTINE, g);
  gs->in_slice = next != NULL;
  if (next)
    put(w, &(ex_rec){.type = EX_BEGIN, .kind = EX_GOROUTINE, .id = g, .ts = ts, .cat = "goroutine",
                     .name = next, .lasting = EX_CAT_LASTS | (next != w->reason_name ? EX_NAME_LASTS : 0), .stack = stack, .flow_in = flow_in});
  if (gs->state != G_NONE) w->gcount[gs->state]--;
  if (state != G_NONE) w->gcount[state]++;
  w->moved |= gs->state != state;
  gs->state = (int8_t)state;
}

static const char *wait_name(uint8_t type) {
  switch (type) {
  case CTRACE_EV_GoBlockSend: return "waiting: chan send";
  case CTRACE_EV_GoBlockRecv: return "waiting: chan receive";
  case CTRACE_EV_GoBlockSelect: return "waiting: select";
  case CTRACE_EV_GoBlockSync: return "waiting: sync";
  case CTRACE_EV_GoBlockCond: return "waiting: sync.Cond";
  case CTRACE_EV_GoBlockNet: return "waiting: network";
  case CTRACE_EV_GoSleep: return "waiting: sleep";
  case CTRACE_EV_GoBlockGC: return "waiting: GC assist";
  case CTRACE_EV_GoBlock: return "waiting: forever";
  default: return NULL;
  }
}

/* The goroutine on P p stops running there. */
static void p_stop(walk *w, int64_t p, int64_t ts) {
  uint64_t *v = ctrace__map_get(&w->prun, (uint64_t)p + 1);
  if (!v || !*v) return;
  end(w, ts, EX_PROC, (uint64_t)p);
  *v = 0;
}

static void p_start(walk *w, int64_t p, uint64_t g, gstate *gs, int64_t ts) {
  if (p < 0 || p >= CTRACE_P_TIMER) return;
  bool fresh;
  if (!ctrace__map_put(&w->pdesc, (uint64_t)p, &fresh)) {
    w->oom = true;
    return;
  }
  if (fresh) {
    char name[32];
    snprintf(name, sizeof name, "P%lld", (long long)p);
    track(w, EX_PROC, (uint64_t)p, name);
  }
  p_stop(w, p, ts);
  if (!gs->pname) {
    char name[24];
    snprintf(name, sizeof name, "G%llu", (unsigned long long)g);
    gs->pname = strdup(name);
  }
  uint64_t *v = ctrace__map_put(&w->prun, (uint64_t)p + 1, NULL);
  if (!v || !gs->pname) {
    w->oom = true;
    return;
  }
  *v = g + 1;
  put(w, &(ex_rec){.type = EX_BEGIN, .kind = EX_PROC, .id = (uint64_t)p, .ts = ts, .cat = "proc",
                   .name = gs->pname, .lasting = EX_NAME_LASTS | EX_CAT_LASTS});
}

/* Records the counter group c if a value moved since its last record, or
 * always. */
static void counter(walk *w, int c, int64_t ts, const int64_t *v, int n, const char *const *series,
                    bool always) {
  unsigned changed = 0;
  for (int i = 0; i < n; i++)
    if (always || v[i] != w->shown[c][i]) changed |= 1u << i;
  if (!changed) return;
  if (!w->described[c]) {
    put(w, &(ex_rec){.type = EX_TRACK, .kind = EX_COUNTER, .id = (uint64_t)c,
                     .name = counter_names[c], .series = series, .nseries = n});
    w->described[c] = true;
  }
  memcpy(w->shown[c], v, (size_t)n * sizeof *v);
  put(w, &(ex_rec){.type = EX_COUNTER_VALUES, .kind = EX_COUNTER, .id = (uint64_t)c, .ts = ts,
                   .name = counter_names[c], .series = series, .values = w->shown[c], .nseries = n,
                   .changed = changed});
}

/* A process that retitles itself (nginx's and PostgreSQL's workers write
 * their role over their arguments) is renamed by its title, as ps names
 * it (ctrace__an_title_note). */
static void retitle(walk *w, const ctrace_event *ev) {
  if (!ctrace__an_title_note(&w->title, ev) || !w->title.now[0]) return;
  char name[sizeof w->title.now + 32];
  int n = (int)strlen(w->title.now);
  while (n > 0 && w->title.now[n - 1] == ' ') n--; /* PostgreSQL's titles end in one */
  snprintf(name, sizeof name, "%.*s (pid %u)", n, w->title.now, (unsigned)w->s->pid);
  track(w, EX_PROCESS, 0, name);
}

static const char *frame_name(const void *frames, size_t i) {
  const char *f = ((const ctrace_frame *)frames)[i].func;
  return f ? f : "";
}

static void event(walk *w, const ctrace_event *ev) {
  gstate *gs;
  const char *wname;
  uint64_t *t;
  uint64_t tg = 0, *ix;
  const char *tn = ctrace__an_thread_name(ev, &tg, &w->kept);
  /* A log names a goroutine met before, or none (gone, or out of a
   * window's reach); a label names the event's own. */
  if (tn && tg && (tg == ev->g ? (gs = gget(w, tg, 0)) != NULL
                               : (ix = ctrace__map_get(&w->gix, tg)) && (gs = &w->gs[*ix - 1])) &&
      strcmp(tn, gs->thread) != 0) {
    gs->thread = tn;
    describe_g(w, tg, gs);
  }
  /* In a pass begun after the trace's start (a window's, read from near
   * it), a goroutine whose creation is in a generation not read is named
   * from the first stack a change of its state gives, by its outermost
   * frame past libc's start: the function its creation would have named. */
  uint64_t sg = ev->type == CTRACE__MODEL_GoStatusStack ? ev->args[0] : ev->g;
  if (w->sought && ev->tstack && ev->type != CTRACE_EV_GoCreate && sg && (ix = ctrace__map_get(&w->gix, sg)) &&
      !(gs = &w->gs[*ix - 1])->fn[0]) {
    const ctrace_frame *fr;
    size_t n = ctrace__model_stack(w->s->r, ev->tstack, &fr);
    ptrdiff_t i = n ? ctrace__root_frame(fr, n, frame_name) : -1;
    if (i >= 0 && fr[i].func) {
      gs->fn = fr[i].func;
      if (gs->described && !gs->thread[0]) describe_g(w, sg, gs);
    }
  }
  /* A thread started by Rust's or C++'s std::thread is named by the
   * program's function its runtime's start routine calls, once a stack of
   * its own shows it (as ctrace stats names it): described again. */
  if (ev->g && ev->stack && ev->type != CTRACE_EV_GoCreate && (ix = ctrace__map_get(&w->gix, ev->g)) &&
      !(gs = &w->gs[*ix - 1])->named && gs->fn[0]) {
    const char *was = gs->fn;
    ctrace__an_name_from(w->s->r, ev->stack, &gs->fn, &gs->named);
    if (gs->fn != was && gs->described && !gs->thread[0]) describe_g(w, ev->g, gs);
  }
  switch (ev->type) {
  case CTRACE_EV_GoCreate: {
    /* The creation's stack is the creator's: it goes on the creator's
     * "create" instant. With no creator (the goroutines that were there
     * when the trace began) it is the stack of whoever began the trace:
     * left out. */
    uint64_t flow = 0;
    if (ev->g && gget(w, ev->g, 0)) {
      flow = w->flow_base + ++w->next_flow;
      put(w, &(ex_rec){.type = EX_INSTANT, .kind = EX_GOROUTINE, .id = ev->g, .ts = ev->ts,
                       .cat = "goroutine", .name = "create", .lasting = EX_NAME_LASTS | EX_CAT_LASTS, .stack = ev->stack,
                       .flow_out = flow});
    }
    if (!(gs = gget(w, ev->args[0], ev->args[1]))) return;
    gs->flow_in = flow;
    gslice(w, ev->args[0], gs, ev->ts, "runnable", G_RUNNABLE, 0, 0);
    break;
  }
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoStartLabel:
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, "running", G_RUNNING, 0, gs->flow_in);
    gs->flow_in = 0;
    p_start(w, ev->p, ev->g, gs, ev->ts);
    break;
  case CTRACE_EV_GoEnd:
  case CTRACE_EV_GoStop: /* as GoEnd, as stats and pprof read it */
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, NULL, G_NONE, 0, 0);
    p_stop(w, ev->p, ev->ts);
    /* Gone for good, its id not met again (model.h): its tracks and
     * state are forgotten, so that memory follows the goroutines alive.
     * Not with regions still open, which end with the trace. */
    if (ev->type == CTRACE_EV_GoEnd && ev->args[0] != 1 && !gs->regions_open) {
      put(w, &(ex_rec){.type = EX_GONE, .kind = EX_GOROUTINE, .id = ev->g, .ts = ev->ts, .name = gs->pname});
      free(gs->pname);
      ctrace__map_slot_drop(&w->gix, &w->glast, &w->gfree, ev->g, w->gs, sizeof *w->gs);
    }
    break;
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, "runnable", G_RUNNABLE, 0, 0);
    p_stop(w, ev->p, ev->ts);
    break;
  case CTRACE_EV_GoSysCall:
    /* A call that did not block, or had not yet: an instant with its
     * stack (GoSysBlock has none). */
    if (!ev->g || !gget(w, ev->g, 0)) return;
    put(w, &(ex_rec){.type = EX_INSTANT, .kind = EX_GOROUTINE, .id = ev->g, .ts = ev->ts,
                     .cat = "goroutine", .name = "syscall", .lasting = EX_NAME_LASTS | EX_CAT_LASTS, .stack = ev->stack});
    break;
  case CTRACE_EV_GoSysBlock:
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, "syscall", G_SYSCALL, 0, 0);
    p_stop(w, ev->p, ev->ts);
    break;
  case CTRACE_EV_GoSysExit:
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, "runnable", G_RUNNABLE, 0, 0);
    break;
  case CTRACE_EV_GoWaiting:
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, "waiting: unknown", G_WAITING, 0, 0);
    break;
  case CTRACE_EV_GoInSyscall:
    if (!(gs = gget(w, ev->g, 0))) return;
    gslice(w, ev->g, gs, ev->ts, "syscall", G_SYSCALL, 0, 0);
    break;
  case CTRACE_EV_GoUnblock: {
    uint64_t flow = 0;
    if (ev->g && gget(w, ev->g, 0)) {
      flow = w->flow_base + ++w->next_flow;
      put(w, &(ex_rec){.type = EX_INSTANT, .kind = EX_GOROUTINE, .id = ev->g, .ts = ev->ts,
                       .cat = "goroutine", .name = "unblock", .lasting = EX_NAME_LASTS | EX_CAT_LASTS, .flow_out = flow});
    }
    if (!(gs = gget(w, ev->args[0], 0))) return;
    gs->flow_in = flow;
    gslice(w, ev->args[0], gs, ev->ts, "runnable", G_RUNNABLE, 0, 0);
    break;
  }
  case CTRACE_EV_ProcStart:
    w->procs++;
    w->moved = true;
    break;
  case CTRACE_EV_ProcStop:
    w->procs--;
    w->moved = true;
    break;
  case CTRACE_EV_UserTaskCreate:
    if (!(t = task(w, ev->args[0], ev->args[2]))) break;
    *t |= T_OPEN;
    put(w, &(ex_rec){.type = EX_BEGIN, .kind = EX_TASK, .id = ev->args[0], .ts = ev->ts, .cat = "task",
                     .name = ev->sargs[0] && ev->sargs[0][0] ? ev->sargs[0] : "task", .lasting = EX_CAT_LASTS,
                     .task_type = task_type(w, *t)});
    break;
  case CTRACE_EV_UserTaskEnd:
    /* The task's state goes with its end: a log after it describes the
     * track again, as of a task created before the trace. */
    if ((t = ctrace__map_get(&w->tasks, ev->args[0])) && (*t & T_OPEN)) {
      put(w, &(ex_rec){.type = EX_END, .kind = EX_TASK, .id = ev->args[0], .ts = ev->ts,
                       .task_type = task_type(w, *t)});
      ctrace__map_del(&w->tasks, ev->args[0]);
    }
    break;
  case CTRACE_EV_UserLog: {
    const char *cat = ev->sargs[0] ? ev->sargs[0] : "", *msg = ev->sargs[1] ? ev->sargs[1] : "";
    retitle(w, ev);
    if (ev->args[0]) {
      if (!(t = task(w, ev->args[0], 0))) break;
      put(w, &(ex_rec){.type = EX_INSTANT, .kind = EX_TASK, .id = ev->args[0], .ts = ev->ts, .cat = cat,
                       .name = msg, .task_type = task_type(w, *t)});
    } else if (ev->g && gget(w, ev->g, 0)) { /* a log of no task: on its goroutine */
      put(w, &(ex_rec){.type = EX_INSTANT, .kind = EX_GOROUTINE, .id = ev->g, .ts = ev->ts, .cat = cat,
                       .name = msg});
    }
    break;
  }
  case CTRACE_EV_UserRegion: {
    if (!ev->g || !(gs = gget(w, ev->g, 0))) break;
    if (!gs->regions_described) {
      char name[64];
      snprintf(name, sizeof name, "G%llu regions", (unsigned long long)ev->g);
      track(w, EX_REGIONS, ev->g, name);
      gs->regions_described = true;
    }
    if (ev->args[1] == 0) {
      put(w, &(ex_rec){.type = EX_BEGIN, .kind = EX_REGIONS, .id = ev->g, .ts = ev->ts, .cat = "region",
                       .name = ev->sargs[0] ? ev->sargs[0] : "", .lasting = EX_CAT_LASTS});
      gs->regions_open++;
    } else if (gs->regions_open > 0) { /* an end whose start is in the trace */
      end(w, ev->ts, EX_REGIONS, ev->g);
      gs->regions_open--;
    }
    break;
  }
  case CTRACE_EV_GCStart:
  case CTRACE_EV_GCDone:
  case CTRACE_EV_GCSTWStart:
  case CTRACE_EV_GCSTWDone: {
    if (!w->gc_described) {
      track(w, EX_GC, 0, "GC");
      track(w, EX_STW, 0, "stop-the-world");
      w->gc_described = true;
    }
    bool stw = ev->type == CTRACE_EV_GCSTWStart || ev->type == CTRACE_EV_GCSTWDone;
    bool begin = ev->type == CTRACE_EV_GCStart || ev->type == CTRACE_EV_GCSTWStart;
    bool *open = stw ? &w->stw_open : &w->gc_open;
    int kind = stw ? EX_STW : EX_GC;
    if (begin) {
      put(w, &(ex_rec){.type = EX_BEGIN, .kind = (uint8_t)kind, .ts = ev->ts, .cat = "gc",
                       .name = stw ? "STW" : "GC", .lasting = EX_NAME_LASTS | EX_CAT_LASTS});
      *open = true;
    } else if (*open) {
      end(w, ev->ts, kind, 0);
      *open = false;
    }
    break;
  }
  case CTRACE_EV_HeapAlloc: {
    /* At every HeapAlloc, as the trace has it, even unchanged. */
    int64_t v = (int64_t)ev->args[0];
    counter(w, EX_C_HEAP, ev->ts, &v, 1, heap_series, true);
    break;
  }
  default:
    if ((wname = wait_name(ev->type))) {
      /* A Go 1.22+ block whose reason no classic kind names carries Go's
       * reason (the model, src/parse/model.c), as Go 1.23's pages name the wait. */
      if (ev->type == CTRACE_EV_GoBlock && ev->sargs[0] && ev->sargs[0][0]) {
        snprintf(w->reason_name, sizeof w->reason_name, "waiting: %s", ev->sargs[0]);
        wname = w->reason_name;
      }
      if (!(gs = gget(w, ev->g, 0))) return;
      gslice(w, ev->g, gs, ev->ts, wname, G_WAITING, ev->stack, 0);
      p_stop(w, ev->p, ev->ts);
    }
    break;
  }
  if (!w->moved) return;
  w->moved = false;
  counter(w, EX_C_GOROUTINES, ev->ts, w->gcount, G_NSTATES, goroutine_series, false);
  int64_t threads[2] = {w->procs, w->gcount[G_SYSCALL]};
  counter(w, EX_C_THREADS, ev->ts, threads, 2, thread_series, false);
}

int ctrace__ex_walk(const ex_source *s, ex_enc *e, char *err, size_t errlen) {
  walk w = {.s = s, .e = e, .flow_base = (uint64_t)(s->index + 1) << 40};
  e->begin(e, s);
  track(&w, EX_PROCESS, 0, s->name);
  ctrace_event buf; /* the event in place (the model's queue) where it can */
  const ctrace_event *ev;
  int64_t last = 0;
  uint64_t nev = 0;
  /* The generation the events are in, raised at each Sync
   * (ctrace__model_gen_at_start), after those the pass passes over. */
  bool ranged = s->gen_from && e->window;
  int64_t sought = ctrace__model_seek(s->r, s->seek_ns);
  w.sought = sought > 0;
  uint64_t gen = ctrace__model_gen_at_start(s->r) + (uint64_t)sought;
  if (ranged && gen >= s->gen_from) e->window(e, s->offset, -1);
  while (!w.oom && !e->oom && !e->werr && !e->stop && (ev = ctrace__model_next_ref(s->r, &buf))) {
    if (ranged && ev->format == 1 && ev->type == CTRACE_EV122_Sync) {
      gen++;
      if (gen == s->gen_from) e->window(e, ev->ts + s->offset, -1);
      if (gen == s->gen_to + 1) e->window(e, -1, ev->ts + s->offset);
    }
    last = ev->ts;
    event(&w, ev);
    if (s->progress && (++nev & 0x3fff) == 0) s->progress(s->progress_arg, ev->ts, s->duration);
  }
  /* What is still open ends with the trace, goroutine by goroutine in the
   * order of their slots. */
  for (size_t i = 0; i < w.ngs; i++) {
    gstate *gs = &w.gs[i];
    if (gs->in_slice) end(&w, last, EX_GOROUTINE, gs->id);
    for (; gs->regions_open > 0; gs->regions_open--) end(&w, last, EX_REGIONS, gs->id);
  }
  for (size_t i = 0; i < w.prun.cap; i++)
    if (w.prun.used[i]) p_stop(&w, (int64_t)w.prun.keys[i] - 1, last);
  if (w.gc_open) end(&w, last, EX_GC, 0);
  if (w.stw_open) end(&w, last, EX_STW, 0);
  for (size_t i = 0; i < w.tasks.cap; i++)
    if (w.tasks.used[i] && (w.tasks.vals[i] & T_OPEN))
      put(&w, &(ex_rec){.type = EX_END, .kind = EX_TASK, .id = w.tasks.keys[i], .ts = last,
                        .task_type = task_type(&w, w.tasks.vals[i])});
  int rc = 0;
  if (w.oom || e->oom) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  for (size_t i = 0; i < w.ngs; i++) free(w.gs[i].pname);
  free(w.gs);
  ctrace__free_free(&w.gfree);
  ctrace__map_free(&w.gix);
  ctrace__map_free(&w.prun);
  ctrace__map_free(&w.pdesc);
  ctrace__map_free(&w.tasks);
  ctrace__an_kept_free(&w.kept);
  return rc;
}
