/* A window of the export: the records of model.h between two times, as a
 * filter in front of an encoder, so that either format (perfetto.c,
 * json.c) gets a trace too long for a browser in pieces that fit.
 *
 * What the window shows is what the whole would show between its times:
 * a slice open at the window's start (a goroutine running, a region, a
 * task) begins there, one open at its end ends there, and the counters
 * start at the window's start with their values of that moment. Before
 * the window, records only move that state: the open slices of each
 * track (copied, as a record's strings are valid only during the call),
 * the last description of each track and the counters' values. A track is
 * described only if something of it is in the window. Flows into the
 * window from before it are left out; those out of it stay, unended, as
 * Perfetto and Chrome show them. Once past the window's end the walk is
 * stopped; so is it once the output has passed a budget of bytes, for
 * the caller to say where the trace should be cut. */
#include <stdlib.h>
#include <string.h>

#include "export/model.h"
#include "parse/map.h"

typedef struct wslice {
  char *name, *cat;
  uint64_t stack;
} wslice;

/* A track seen before the window or in it. */
typedef struct wtrack {
  uint8_t kind;
  uint64_t id;
  bool shown;       /* described in the window */
  bool has_desc;    /* desc holds its last description */
  ex_rec desc;      /* its strings and values owned here */
  wslice *open;     /* its open slices, outermost first (before the window) */
  int nopen, capopen;
  int depth;        /* its open slices in the window */
  char *task_type;  /* an EX_TASK's, owned */
} wtrack;

typedef struct win {
  ex_enc e; /* first: the walk holds a pointer to it */
  ex_enc *in;
  int64_t from, to;
  int64_t from0, to0; /* as asked: a generation range moves from and to */
  const ex_source *s;
  u64map ix; /* track key -> index + 1 */
  wtrack *t;
  size_t n, cap;
  u64free freed; /* slots of released tracks */
  u64map flows; /* flows begun in the window */
  /* The counter groups' last values (before the window) and series. */
  int64_t cv[EX_C_COUNT][8];
  int cn[EX_C_COUNT];
  const char *const *cseries[EX_C_COUNT];
  const char *cname[EX_C_COUNT];
  bool opened, closed;
  uint64_t max_bytes; /* 0: none */
  bool over;          /* the output passed max_bytes at time reached */
  int64_t reached, last;
} win;

static void pass(win *w, const ex_rec *r) {
  w->in->rec(w->in, r);
  if (w->in->oom) w->e.oom = true;
  if (w->in->werr) w->e.werr = true;
  w->e.bytes = w->in->bytes;
  /* A track's description has no time of its own (0): the time reached
   * is the last record's that has one. */
  if (r->type != EX_TRACK && r->ts > w->last) w->last = r->ts;
  if (w->max_bytes && w->e.bytes > w->max_bytes && !w->over) {
    /* Past the budget: the walk stops, and the caller is told where. */
    w->over = true;
    w->reached = w->last > w->from ? w->last : w->from;
    w->closed = true;
    w->e.stop = true;
  }
}

static char *dup0(win *w, const char *s) {
  char *c = strdup(s ? s : "");
  if (!c) w->e.oom = true;
  return c;
}

/* The track of a record, made on first sight; NULL when out of memory.
 * Slots of released tracks are used again. */
static wtrack *tget(win *w, int kind, uint64_t id) {
  bool fresh;
  wtrack *t = ctrace__map_slot(&w->ix, &w->freed, id << 4 | (uint64_t)kind, &w->t, &w->n, &w->cap, sizeof *w->t,
                               &fresh);
  if (!t) {
    w->e.oom = true;
    return NULL;
  }
  if (fresh) {
    t->kind = (uint8_t)kind;
    t->id = id;
  }
  return t;
}

static void desc_free(wtrack *t);

/* A task ended before the window is forgotten, as a goroutine gone: a
 * trace may have millions. Its track, if a log after its end names it, is
 * described anew (the walk does the same). */
static void release(win *w, wtrack *t) {
  free(t->open);
  free(t->task_type);
  desc_free(t);
  /* Zeroed, kind 0: no track. */
  ctrace__map_slot_drop(&w->ix, NULL, &w->freed, t->id << 4 | (uint64_t)t->kind, w->t, sizeof *w->t);
}

static void desc_free(wtrack *t) {
  free((char *)t->desc.name);
  free((char *)t->desc.task_type);
  t->desc.name = t->desc.task_type = NULL;
  t->has_desc = false;
}

/* Keeps a track's description for when it first shows in the window. */
static void keep_desc(win *w, wtrack *t, const ex_rec *r) {
  desc_free(t);
  t->desc = *r;
  t->desc.name = dup0(w, r->name);
  t->desc.task_type = dup0(w, r->task_type);
  t->has_desc = true;
  if (r->kind == EX_COUNTER && r->id < EX_C_COUNT) {
    w->cseries[r->id] = r->series; /* the walk's own, static */
    w->cname[r->id] = r->name ? r->name : "";
    w->cn[r->id] = r->nseries < 8 ? r->nseries : 8;
  }
}

static wtrack *tget(win *w, int kind, uint64_t id);

/* Describes the track in the window, once, after its parent: the
 * process's first (else the window names no process: its description
 * came before the window, and nothing is on its own track), a goroutine's
 * before its region track. */
static void show(win *w, wtrack *t) {
  if (t->shown) return;
  t->shown = true;
  if (t->kind != EX_PROCESS) {
    uint64_t id = t->id;
    int kind = t->kind;
    size_t i = (size_t)(t - w->t);
    wtrack *parent = kind == EX_REGIONS ? tget(w, EX_GOROUTINE, id) : tget(w, EX_PROCESS, 0); /* may move w->t */
    if (parent) show(w, parent); /* a goroutine shows the process first */
    t = &w->t[i];
  }
  if (t->has_desc) pass(w, &t->desc);
}

/* The window begins: what is open begins at its start, the counters
 * start with their values. */
static void open_window(win *w) {
  w->opened = true;
  for (size_t i = 0; i < w->n; i++) {
    wtrack *t = &w->t[i];
    if (!t->nopen) continue;
    show(w, t);
    for (int k = 0; k < t->nopen; k++) {
      pass(w, &(ex_rec){.type = EX_BEGIN, .kind = t->kind, .id = t->id, .ts = w->from,
                        .name = t->open[k].name, .cat = t->open[k].cat, .stack = t->open[k].stack,
                        .task_type = t->task_type ? t->task_type : ""});
      free(t->open[k].name);
      free(t->open[k].cat);
    }
    t->depth = t->nopen;
    t->nopen = 0;
  }
  for (int c = 0; c < EX_C_COUNT; c++) {
    if (!w->cn[c]) continue;
    wtrack *t = tget(w, EX_COUNTER, (uint64_t)c);
    if (!t) return;
    show(w, t);
    pass(w, &(ex_rec){.type = EX_COUNTER_VALUES, .kind = EX_COUNTER, .id = (uint64_t)c, .ts = w->from,
                      .name = w->cname[c], .series = w->cseries[c], .values = w->cv[c],
                      .nseries = w->cn[c], .changed = (1u << w->cn[c]) - 1});
  }
}

/* The window ends: what is open ends at its end; the walk stops. */
static void close_window(win *w) {
  if (!w->opened) open_window(w);
  w->closed = true;
  w->e.stop = true;
  for (size_t i = 0; i < w->n; i++) {
    wtrack *t = &w->t[i];
    for (; t->depth > 0; t->depth--)
      pass(w, &(ex_rec){.type = EX_END, .kind = t->kind, .id = t->id, .ts = w->to,
                        .task_type = t->task_type ? t->task_type : ""});
  }
}

/* Before the window: the record moves the state only. */
static void before(win *w, wtrack *t, const ex_rec *r) {
  switch (r->type) {
  case EX_BEGIN:
    if (t->nopen == t->capopen) {
      int cap = t->capopen ? t->capopen * 2 : 2;
      wslice *o = realloc(t->open, (size_t)cap * sizeof *o);
      if (!o) {
        w->e.oom = true;
        return;
      }
      t->open = o;
      t->capopen = cap;
    }
    t->open[t->nopen++] = (wslice){dup0(w, r->name), dup0(w, r->cat), r->stack};
    break;
  case EX_END:
    if (t->nopen > 0) {
      t->nopen--;
      free(t->open[t->nopen].name);
      free(t->open[t->nopen].cat);
    }
    if (t->kind == EX_TASK && !t->nopen) release(w, t);
    break;
  case EX_COUNTER_VALUES:
    if (r->id < EX_C_COUNT)
      for (int i = 0; i < r->nseries && i < 8; i++) w->cv[r->id][i] = r->values[i];
    break;
  }
}

/* A goroutine gone (EX_GONE): its tracks forgotten here (it has no slice
 * open), and by the encoder. */
static void gone(win *w, const ex_rec *r) {
  for (int kind = EX_GOROUTINE; kind <= EX_REGIONS; kind++) {
    const uint64_t *v = ctrace__map_get(&w->ix, r->id << 4 | (uint64_t)kind);
    if (!v) continue;
    wtrack *t = &w->t[*v - 1];
    for (int k = 0; k < t->nopen; k++) free(t->open[k].name), free(t->open[k].cat);
    release(w, t);
  }
  w->in->rec(w->in, r);
}

static void wn_rec(ex_enc *e, const ex_rec *r) {
  win *w = (win *)e;
  if (w->closed) return;
  if (r->type == EX_GONE) {
    gone(w, r);
    return;
  }
  if (r->type != EX_TRACK && w->to >= 0 && r->ts > w->to) {
    close_window(w);
    return;
  }
  wtrack *t = tget(w, r->kind, r->id);
  if (!t) return;
  if (r->kind == EX_TASK && r->task_type && (!t->task_type || strcmp(t->task_type, r->task_type) != 0)) {
    free(t->task_type);
    t->task_type = dup0(w, r->task_type);
  }
  if (r->type == EX_TRACK) {
    /* Described again (a thread renamed): in the window, at once. A
     * window from the trace's start has nothing before it: its tracks are
     * described as they come, and the whole passes unchanged. */
    if (t->shown || w->from <= 0) {
      if (!t->shown && t->kind != EX_PROCESS) {
        /* A generation's window from the trace's start opens after the
         * process's description came: it goes first all the same. */
        size_t i = (size_t)(t - w->t);
        wtrack *p = tget(w, EX_PROCESS, 0); /* may move w->t */
        if (p) show(w, p);
        t = &w->t[i];
      }
      t->shown = true;
      pass(w, r);
    } else {
      keep_desc(w, t, r);
    }
    return;
  }
  if (r->ts < w->from && !w->opened) {
    before(w, t, r);
    return;
  }
  size_t ti = (size_t)(t - w->t);
  if (!w->opened) open_window(w);
  t = &w->t[ti]; /* opening may have made tracks */
  show(w, t);
  t = &w->t[ti];
  ex_rec c = *r;
  if (c.ts < w->from) c.ts = w->from; /* out of order by little: at the start */
  if (r->type == EX_BEGIN) t->depth++;
  if (r->type == EX_END) {
    if (t->depth == 0) return; /* its begin was before the window and ended with it */
    t->depth--;
  }
  if (c.flow_out && !ctrace__map_put(&w->flows, c.flow_out, NULL)) {
    w->e.oom = true;
    return;
  }
  if (c.flow_in && !ctrace__map_get(&w->flows, c.flow_in)) c.flow_in = 0;
  pass(w, &c);
}

static void wn_free_tracks(win *w) {
  for (size_t i = 0; i < w->n; i++) {
    wtrack *t = &w->t[i];
    for (int k = 0; k < t->nopen; k++) free(t->open[k].name), free(t->open[k].cat);
    free(t->open);
    free(t->task_type);
    desc_free(t);
  }
  free(w->t);
  ctrace__free_free(&w->freed);
  w->t = NULL;
  w->n = w->cap = 0;
  ctrace__map_free(&w->ix);
  ctrace__map_free(&w->flows);
  memset(w->cn, 0, sizeof w->cn);
}

static void wn_begin(ex_enc *e, const ex_source *s) {
  win *w = (win *)e;
  wn_free_tracks(w);
  w->s = s;
  w->opened = w->closed = w->e.stop = false;
  w->last = 0;
  w->from = w->from0;
  w->to = w->to0;
  w->in->begin(w->in, s);
}

static void wn_finish(ex_enc *e) {
  win *w = (win *)e;
  w->in->finish(w->in);
  if (w->in->oom) w->e.oom = true;
  if (w->in->werr) w->e.werr = true;
  w->e.bytes = w->in->bytes;
  w->e.written = w->in->written;
}

static void wn_free(ex_enc *e) {
  win *w = (win *)e;
  wn_free_tracks(w);
  w->in->free(w->in);
  free(w);
}

/* A generation range's times, found by the walk as it goes: the start
 * before any record of the range, the end before any after it. */
static void wn_window(ex_enc *e, int64_t from, int64_t to) {
  win *w = (win *)e;
  if (from >= 0) w->from = from;
  if (to >= 0) w->to = to;
}

bool ctrace__ex_window_over(const ex_enc *e, int64_t *reached) {
  const win *w = (const win *)e;
  if (w->over) *reached = w->reached;
  return w->over;
}

ex_enc *ctrace__ex_window(ex_enc *in, int64_t from, int64_t to, uint64_t max_bytes) {
  win *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->max_bytes = max_bytes;
  w->e = (ex_enc){.begin = wn_begin, .rec = wn_rec, .finish = wn_finish, .free = wn_free, .window = wn_window,
                  .out = in->out};
  w->in = in;
  w->from = w->from0 = from;
  w->to = w->to0 = to;
  return &w->e;
}
