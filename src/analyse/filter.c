/* The --goroutine and --region filters of the profiles, as Go's cmd/trace
 * computes them (pprofMatchingGoroutines, pprofMatchingRegions): a
 * goroutine is kept from its first start to its end (or the trace's end);
 * a region from its start to its end, where a region with no end in the
 * trace ends with its goroutine or the trace, and one begun before the
 * trace begins with it. Overlapping regions of one goroutine are merged by
 * dropping those that start inside an earlier one, as Go does.
 *
 * A goroutine's name: on a classic trace, the function its creation's
 * stack starts (Go 1.19's pages filter by that function's PC); on a Go
 * 1.22+ trace, the name Go 1.23's summary gives it and its pages filter
 * by (/block?name=...): the outermost frame of the first stack one of its
 * state changes carries, as ctrace stats names it, so that goroutines
 * there before the trace, which have no creation, have their names too. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "runtime/startname.h"

const char *ctrace__an_start_func(const ctrace_reader *r, uint64_t create_stack) {
  const ctrace_frame *fr;
  if (ctrace__model_stack(r, create_stack, &fr) == 0) return "";
  return fr[0].func ? fr[0].func : "";
}

const char *ctrace__an_root_func(const ctrace_reader *r, uint64_t stack) {
  const ctrace_frame *fr;
  size_t n = ctrace__model_stack(r, stack, &fr);
  return n && fr[n - 1].func ? fr[n - 1].func : "";
}

static const char *frame_func(const void *frames, size_t i) {
  const ctrace_frame *fr = frames;
  return fr[i].func ? fr[i].func : "";
}

/* A thread's start function (src/runtime/startname.c), for traces whose
 * creation left it at a start routine: by the first stack of its own
 * past the routines. */
void ctrace__an_name_from(const ctrace_reader *r, uint64_t stack, const char **name, bool *settled) {
  const ctrace_frame *fr;
  size_t n;
  if (*settled || !stack || !(n = ctrace__model_stack(r, stack, &fr))) return;
  if (!(*name)[0]) *name = frame_func(fr, n - 1);
  if (!(*name)[0]) return;
  ptrdiff_t i = ctrace__start_frame(*name, fr, n, frame_func, settled);
  if (i >= 0) *name = frame_func(fr, (size_t)i);
}

void ctrace__an_kept_free(an_kept *k) {
  for (size_t i = 0; i < k->n; i++) free(k->s[i]);
  free(k->s);
  *k = (an_kept){0};
}

static const char *keep_str(an_kept *k, const char *s) {
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 8;
    char **n = realloc(k->s, cap * sizeof *n);
    if (!n) return NULL;
    k->s = n;
    k->cap = cap;
  }
  char *c = strdup(s);
  if (c) k->s[k->n++] = c;
  return c;
}

const char *ctrace__an_thread_name(const ctrace_event *ev, uint64_t *g, an_kept *k) {
  if (ev->type == CTRACE_EV_UserLog) {
    const char *m = ev->sargs[1];
    if (!ev->sargs[0] || strcmp(ev->sargs[0], "ctrace.thread") != 0 || !m || strncmp(m, "g=", 2) != 0)
      return NULL;
    char *end;
    unsigned long long id = strtoull(m + 2, &end, 10);
    if (end == m + 2 || !id || strncmp(end, " name=", 6) != 0) return NULL;
    *g = id;
    return keep_str(k, end + 6);
  }
  if (ev->type != CTRACE_EV_GoStartLabel && ev->type != CTRACE__MODEL_GoLabel) return NULL;
  *g = ev->g;
  const char *l = ev->sargs[0] ? ev->sargs[0] : "";
  /* Go's gcMarkWorkerModeStrings. */
  if (strcmp(l, "GC (dedicated)") == 0 || strcmp(l, "GC (fractional)") == 0 ||
      strcmp(l, "GC (idle)") == 0 || strcmp(l, "Not worker") == 0)
    return NULL;
  return l;
}

static struct an_gintervals *per_g(an_filter *f, uint64_t g) {
  bool fresh;
  uint64_t *ix = ctrace__map_put(&f->index, g, &fresh);
  if (!ix) return NULL;
  if (fresh) {
    if (f->nper == f->capper) {
      size_t cap = f->capper ? f->capper * 2 : 64;
      void *n = realloc(f->per, cap * sizeof *f->per);
      if (!n) {
        ctrace__map_del(&f->index, g);
        return NULL;
      }
      f->per = n;
      f->capper = cap;
    }
    memset(&f->per[f->nper], 0, sizeof f->per[0]);
    *ix = ++f->nper;
  }
  return &f->per[*ix - 1];
}

static bool add(an_filter *f, uint64_t g, int64_t begin, int64_t end) {
  struct an_gintervals *gi = per_g(f, g);
  if (!gi) return false;
  if (gi->n == gi->cap) {
    size_t cap = gi->cap ? gi->cap * 2 : 4;
    void *n = realloc(gi->iv, cap * sizeof *gi->iv);
    if (!n) return false;
    gi->iv = n;
    gi->cap = cap;
  }
  gi->iv[gi->n++] = (an_interval){begin, end};
  return true;
}

static int cmp_iv(const void *a, const void *b) {
  const an_interval *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

/* What pass one learns of each goroutine. */
typedef struct gdesc {
  const char *name;
  bool named; /* settled (ctrace__an_name_from) */
  int64_t start, end; /* first GoStart (0 if none), GoEnd/GoStop (-1 if none) */
} gdesc;

typedef struct open_region {
  uint64_t seq, g;
  int64_t begin;
  bool open;
} open_region;

/* A goroutine's whole lifetime into f, if its name is the one kept: its
 * id alone where the profile learns lifetimes itself (ids_only). */
static bool keep(an_filter *f, uint64_t g, const gdesc *d, const char *gname, int64_t last) {
  if (!gname || strcmp(d->name, gname) != 0) return true;
  if (f->ids_only) return ctrace__set_add(&f->members, g);
  return add(f, g, d->start, d->end >= 0 ? d->end : last);
}

static int build(ctrace_reader *r, const char *gname, const char *rname, bool ids_only, an_filter *f,
                 char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  if (!gname && !rname) {
    f->all = true;
    return 0;
  }
  f->ids_only = ids_only;
  f->by_name = gname != NULL;
  f->region = rname;
  u64map gix = {0};
  u64free gfree = {0};
  gdesc *gs = NULL;
  size_t ngs = 0, capgs = 0;
  open_region *regs = NULL;
  size_t nregs = 0, capregs = 0;
  int rc = -1;
  bool oom = false;

  bool v122 = ctrace_reader_version(r) >= 1022;
  ctrace__model_rewind(r);
  ctrace_event ev;
  int64_t last = 0;
  while (ctrace__model_next(r, &ev) && !oom) {
    last = ev.ts;
    uint64_t g = ev.g;
    if (ev.type == CTRACE_EV_GoCreate) g = ev.args[0];
    /* Go 1.27 names a goroutine from a status' stack too (go 1.25+: the
     * adapter gives it as tstack). */
    if (ev.type == CTRACE__MODEL_GoStatusStack) g = ev.args[0];
    gdesc *d = NULL;
    if (g && (ev.type == CTRACE_EV_GoCreate || ev.type == CTRACE_EV_GoStart ||
              ev.type == CTRACE_EV_GoStartLabel || ev.type == CTRACE_EV_GoEnd ||
              ev.type == CTRACE_EV_GoStop || (v122 && ev.tstack))) {
      bool fresh;
      if (!(d = ctrace__map_slot(&gix, &gfree, g, &gs, &ngs, &capgs, sizeof *gs, &fresh))) {
        oom = true;
        break;
      }
      if (fresh) *d = (gdesc){"", false, 0, -1};
    }
    if (d && v122) /* a creation's tstack is args[1] (the model, src/parse/model.c) */
      ctrace__an_name_from(r, ev.type == CTRACE_EV_GoCreate ? ev.args[1] : ev.tstack, &d->name, &d->named);
    /* A start routine's thread, named by any stack of its own (as ctrace
     * stats names it). */
    uint64_t *own;
    if (ev.g && ev.stack && ev.type != CTRACE_EV_GoCreate && (own = ctrace__map_get(&gix, ev.g)) &&
        gs[*own - 1].name[0])
      ctrace__an_name_from(r, ev.stack, &gs[*own - 1].name, &gs[*own - 1].named);
    switch (ev.type) {
    case CTRACE_EV_GoCreate:
      if (!v122) d->name = ctrace__an_start_func(r, ev.args[1]);
      break;
    case CTRACE_EV_GoStart:
    case CTRACE_EV_GoStartLabel:
      if (d->start == 0) d->start = ev.ts;
      break;
    case CTRACE_EV_GoEnd:
    case CTRACE_EV_GoStop:
      d->end = ev.ts;
      /* Regions still open end with their goroutine (Go's parser links
       * them to its GoEnd). */
      for (size_t i = 0; i < nregs; i++)
        if (regs[i].open && regs[i].g == ev.g) {
          regs[i].open = false;
          if (!f->ids_only && !add(f, ev.g, regs[i].begin, ev.ts)) oom = true;
        }
      /* Gone for good (args[0] 1: a C thread's goroutine, whose id comes
       * back, model.h): all the filter needs of it is known; it is
       * forgotten, so that memory follows the goroutines alive. Where
       * both filters apply with intervals, the end sorts the regions by
       * name. */
      if (ev.type == CTRACE_EV_GoEnd && ev.args[0] != 1 && (f->ids_only || !(gname && rname))) {
        if ((f->ids_only || !rname) && !keep(f, ev.g, d, gname, last)) oom = true;
        ctrace__map_slot_drop(&gix, NULL, &gfree, ev.g, gs, sizeof *gs);
      }
      break;
    case CTRACE_EV_UserRegion: {
      if (!rname || strcmp(ev.sargs[0] ? ev.sargs[0] : "", rname) != 0) break;
      f->regions++;
      if (ev.args[1] == 0) { /* start */
        if (nregs == capregs) {
          capregs = capregs ? capregs * 2 : 16;
          void *n = realloc(regs, capregs * sizeof *regs);
          if (!n) {
            oom = true;
            break;
          }
          regs = n;
        }
        regs[nregs++] = (open_region){ev.seq, ev.g, ev.ts, true};
      } else {
        int64_t begin = 0; /* begun before the trace */
        bool found = false;
        for (size_t i = nregs; ev.link != CTRACE_NO_LINK && i-- > 0;)
          if (regs[i].seq == ev.link) {
            begin = regs[i].begin;
            regs[i].open = false;
            found = true;
            break;
          }
        if (!f->ids_only) {
          if (!add(f, ev.g, begin, ev.ts)) oom = true;
        } else if (!found) { /* the profile counts g in a region from the trace's start */
          bool fresh;
          uint64_t *n = ctrace__map_put(&f->before, ev.g, &fresh);
          if (!n) oom = true;
          else *n = fresh ? 1 : *n + 1;
        }
      }
      /* Keep the list of open regions short. */
      while (nregs && !regs[nregs - 1].open) nregs--;
      break;
    }
    default:
      break;
    }
  }
  if (oom) goto oom;
  f->trace_end = last;
  for (size_t i = 0; i < nregs && !f->ids_only; i++)
    if (regs[i].open) {
      uint64_t *ix = ctrace__map_get(&gix, regs[i].g);
      int64_t end = ix && gs[*ix - 1].end >= 0 ? gs[*ix - 1].end : last;
      if (!add(f, regs[i].g, regs[i].begin, end)) goto oom;
    }

  if (!rname || f->ids_only) /* goroutines only: each whole lifetime, or their ids */
    for (size_t i = 0; i < gix.cap; i++)
      if (gix.used[i] && !keep(f, gix.keys[i], &gs[gix.vals[i] - 1], gname, last)) goto oom;
  if (f->ids_only ? (rname ? f->regions == 0 : f->members.len == 0) : f->nper == 0) {
    if (rname && !gname)
      snprintf(err, errlen, "no region of type %s in the trace", rname);
    else
      snprintf(err, errlen, "failed to find matching goroutines for name: %s", gname);
    rc = CTRACE_EINVAL;
    goto out;
  }
  for (size_t i = 0; i < f->index.cap; i++) {
    if (!f->index.used[i]) continue;
    struct an_gintervals *gi = &f->per[f->index.vals[i] - 1];
    if (gname && rname) { /* both: a region's time, in goroutines of that name */
      uint64_t *ix = ctrace__map_get(&gix, f->index.keys[i]);
      if (!ix || strcmp(gs[*ix - 1].name, gname) != 0) {
        gi->n = 0;
        continue;
      }
    }
    qsort(gi->iv, gi->n, sizeof *gi->iv, cmp_iv);
    size_t n = 0;
    int64_t lastend = 0;
    for (size_t j = 0; j < gi->n; j++)
      if (lastend <= gi->iv[j].begin) {
        gi->iv[n++] = gi->iv[j];
        lastend = gi->iv[j].end;
      }
    gi->n = n;
  }
  rc = 0;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = CTRACE_ENOMEM;
out:
  ctrace__map_free(&gix);
  ctrace__free_free(&gfree);
  free(gs);
  free(regs);
  if (rc) ctrace__an_filter_free(f);
  return rc;
}

int64_t ctrace__an_overlap(const an_filter *f, uint64_t g, int64_t begin, int64_t end) {
  if (f->all) return end - begin;
  uint64_t *ix = ctrace__map_get(&f->index, g);
  if (!ix) return 0;
  const struct an_gintervals *gi = &f->per[*ix - 1];
  int64_t sum = 0;
  for (size_t i = 0; i < gi->n; i++) {
    const an_interval *iv = &gi->iv[i];
    /* Go's overlappingDuration: closed intervals that touch overlap by 0. */
    if (!(iv->begin <= end && begin <= iv->end)) continue;
    int64_t b = iv->begin > begin ? iv->begin : begin;
    int64_t e = iv->end < end ? iv->end : end;
    if (e > b) sum += e - b;
  }
  return sum;
}

void ctrace__an_filter_free(an_filter *f) {
  for (size_t i = 0; i < f->nper; i++) free(f->per[i].iv);
  free(f->per);
  ctrace__map_free(&f->index);
  ctrace__map_free(&f->before);
  ctrace__set_free(&f->members);
  memset(f, 0, sizeof *f);
}

int ctrace__an_filter_build(ctrace_reader *r, const ctrace_profile_options *opt, bool ids_only, an_filter *f,
                            char *err, size_t errlen) {
  return build(r, opt->goroutine, opt->region, ids_only, f, err, errlen);
}

bool ctrace__an_inregion_event(const ctrace_event *ev, const char *region) {
  if (!ev->g) return false;
  if (ev->type == CTRACE_EV_UserRegion) return strcmp(ev->sargs[0] ? ev->sargs[0] : "", region) == 0;
  return ev->type == CTRACE_EV_GoEnd || ev->type == CTRACE_EV_GoStop;
}

void ctrace__an_inregion_observe(an_inregion *x, const ctrace_event *ev, const char *region) {
  if (!ctrace__an_inregion_event(ev, region)) return;
  int64_t depth = ev->type != CTRACE_EV_UserRegion ? 0 : x->depth + (ev->args[1] == 0 ? 1 : -1);
  ctrace__an_inregion_to(x, ev->ts, depth);
}

int64_t ctrace__an_inregion_before(const an_filter *f, uint64_t g) {
  const uint64_t *n = ctrace__map_get(&f->before, g);
  return n ? (int64_t)*n : 0;
}
