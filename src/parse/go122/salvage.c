/* Salvage (ctrace_reader_salvage, include/ctrace/parse.h): the longest
 * prefix of a trace cut short that still reads, made of whole generations.
 *
 * Go's writer, like ctrace's, streams every batch of generation N before
 * any batch of N+1 (Go's reader rejects anything else: "generations out of
 * order"), and nothing marks a generation's end: a generation is known to
 * be whole only once a batch of the next one begins after it. So:
 *
 *   1. The walk reads only the batches' framing (Go's readBatch: type,
 *      generation, size) from the header on: where each generation begins
 *      and where the whole batches end (the trace's size, or a torn batch,
 *      or bytes that are no batch). Every generation begun but the last is
 *      whole; the last is too if the torn batch's header already names the
 *      next generation.
 *   2. The reader streams those generations as check does (stream.c), and
 *      each Sync it emits closes a generation that is valid: the reader
 *      reads a generation's batches whole before ordering any of its
 *      events, and emits its Sync before it reads the next generation, so
 *      the prefix that ends where the next generation begins reads exactly
 *      as far. What it counted at that Sync is the prefix's summary.
 *
 * When the batches fill the file and the stream reads to its end, the
 * trace is valid as it is (check accepts it) and is kept whole, its last
 * generation included. Otherwise the last generation begun is dropped, and
 * with it everything from the first generation that does not read.
 *
 * One pass over the events at most (the walk touches only batch headers);
 * memory is the reader's, one generation's, plus 16 bytes per generation. */
#include <stdlib.h>
#include <string.h>

#include "../reader.h"

int ctrace__perr(ctrace_parse_error *err, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What the walk found. For go 1.26, whose generations end in an
 * EndOfGeneration batch, a generation is whole once that batch is read
 * (open says the last one has not ended yet); the rule of a next
 * generation's batch applies to the others. */
typedef struct walk {
  bool eog;  /* go 1.26: generations end at their EndOfGeneration */
  bool open; /* ... and the last one has not */
  uint64_t *start; /* the offset of each generation's first batch */
  uint64_t *gen;   /* its number, as the batches give it */
  uint64_t n, cap;
  uint64_t end;    /* where the whole batches end */
  bool torn;       /* the file ends inside the batch at end */
  bool torn_new;   /* whose header names a generation not begun before */
  ctrace_parse_error why; /* if end is not the file's size: what is there */
} walk;

/* Go's binary.ReadUvarint on d[*off, len): 1 with *v, 0 if the bytes run
 * out first, -1 if it overflows 64 bits. */
static int uvarint(const uint8_t *d, uint64_t len, uint64_t *off, uint64_t *v) {
  uint64_t x = 0;
  unsigned s = 0;
  for (int i = 0; i < 10; i++) {
    if (*off >= len) return 0;
    uint8_t b = d[(*off)++];
    if (b < 0x80) {
      if (i == 9 && b > 1) return -1;
      *v = x | (uint64_t)b << s;
      return 1;
    }
    x |= (uint64_t)(b & 0x7f) << s;
    s += 7;
  }
  return -1;
}

static bool add_gen(walk *w, uint64_t off, uint64_t gen) {
  if (w->n == w->cap) {
    uint64_t cap = w->cap ? w->cap * 2 : 16;
    uint64_t *s = realloc(w->start, cap * sizeof *s);
    if (!s) return false;
    w->start = s;
    uint64_t *g = realloc(w->gen, cap * sizeof *g);
    if (!g) return false;
    w->gen = g;
    w->cap = cap;
  }
  w->start[w->n] = off;
  w->gen[w->n++] = gen;
  return true;
}

/* A batch header that names generation gen began at w->end and the file
 * ends inside that batch. */
static void torn_gen(walk *w, uint64_t gen) {
  if (w->eog) w->torn_new = !w->open;
  else w->torn_new = w->n == 0 ? gen != 0 : gen == w->gen[w->n - 1] + 1;
}

/* Step 1: 0, or -1 out of memory. g is the reader over the whole trace,
 * whose pages are given back as the walk goes (each header read faults in
 * its neighbourhood; gen.c does the same). */
static int do_walk(const g2reader *g, walk *w) {
  static const char *const what[4] = {"generation", "thread", "time", "size"};
  const uint8_t *d = g->data;
  const uint64_t len = g->len;
  uint64_t off = 16, from = 16, nread = 0;
  for (;;) {
    w->end = off;
    if ((++nread & 15) == 0) {
      ctrace__g2_release_read(g, from, off);
      from = off;
    }
    if (off >= len) return 0;
    uint64_t p = off;
    uint8_t t = d[p++];
    if (w->eog && t == CTRACE_EV122_EndOfGeneration) {
      /* A generation of no batch still begins here (Go reads it, and
       * finds no frequency). */
      if (!w->open && !add_gen(w, off, 0)) return -1;
      w->open = false;
      off = p;
      continue;
    }
    if (t != CTRACE_EV122_EventBatch && t != CTRACE_EV122_ExperimentalBatch) {
      ctrace__perr(&w->why, off, "expected batch event, got %u", t);
      return 0;
    }
    if (t == CTRACE_EV122_ExperimentalBatch && p++ >= len) {
      w->torn = true;
      ctrace__perr(&w->why, off, "the file ends inside the header of the batch there");
      return 0;
    }
    uint64_t v[4];
    for (int k = 0; k < 4; k++) {
      int rc = uvarint(d, len, &p, &v[k]);
      if (rc == 0) {
        w->torn = true;
        if (k > 0) torn_gen(w, v[0]);
        ctrace__perr(&w->why, off, "the file ends inside the header of the batch there");
        return 0;
      }
      if (rc < 0) {
        ctrace__perr(&w->why, off, "the %s of the batch there overflows a 64-bit integer", what[k]);
        return 0;
      }
    }
    uint64_t gen = v[0], size = v[3];
    uint64_t last = w->n ? w->gen[w->n - 1] : 0;
    if (gen == 0) {
      ctrace__perr(&w->why, off, "invalid generation number 0");
      return 0;
    }
    if (w->eog && w->open && gen != last) {
      ctrace__perr(&w->why, off,
                   "missing end-of-generation event: a batch of generation %llu in generation %llu",
                   (unsigned long long)gen, (unsigned long long)last);
      return 0;
    }
    if (!w->eog && w->n && gen != last && gen != last + 1) {
      ctrace__perr(&w->why, off, "generations out of order: a batch of generation %llu after generation %llu",
                   (unsigned long long)gen, (unsigned long long)last);
      return 0;
    }
    if (size > CTRACE_GO122_MAX_BATCH) {
      ctrace__perr(&w->why, off, "invalid batch size %llu, maximum is %u", (unsigned long long)size,
                   CTRACE_GO122_MAX_BATCH);
      return 0;
    }
    if (size > len - p) {
      w->torn = true;
      torn_gen(w, gen);
      ctrace__perr(&w->why, off, "the file ends %llu bytes into the batch there, of %llu bytes",
                   (unsigned long long)(len - p), (unsigned long long)size);
      return 0;
    }
    if (w->eog ? !w->open : !w->n || gen != last) {
      if (!add_gen(w, off, gen)) return -1;
      w->open = true;
    }
    off = p + size;
  }
}

/* The older formats: no generations, and the frequency (Go's, and the
 * classic writer's, src/runtime/reader.c) is written when tracing stops,
 * Go's stacks too: a trace cut short lacks what every reader needs. */
static int salvage_classic(ctrace_reader *r, ctrace_salvage_info *s, ctrace_parse_error *err) {
  /* A reader of its own: r may have been checked already, or be read. */
  ctrace_reader *q;
  ctrace_parse_error e;
  if (ctrace_reader_open_mem(r->data, r->len, &q, &e) != 0) return (*err = e, -1);
  int rc = ctrace_reader_check(q, &s->info, &e);
  ctrace_reader_close(q);
  if (rc == 0) {
    s->whole = 1;
    s->keep = r->len;
    return 0;
  }
  s->error = e;
  return ctrace__perr(err, e.offset,
                      "nothing to salvage: %.240s. A go 1.%d trace has no generations, and its "
                      "frequency, which every reader needs, is written when tracing stops: one cut "
                      "short cannot be read (Go 1.22's format, with generations, can)",
                      e.message, r->ver % 1000);
}

/* The summary of the trace's first keep bytes, as check gives it: for go
 * 1.25+, whose last Sync (after the last event) has a time and a number
 * only a read of the prefix alone gives. */
static void prefix_info(ctrace_reader *r, uint64_t keep, ctrace_trace_info *info) {
  ctrace_reader *q;
  ctrace_parse_error e;
  if (ctrace_reader_open_mem(r->data, keep, &q, &e) != 0) return;
  ctrace_reader_check(q, info, &e);
  ctrace_reader_close(q);
}

/* Step 1 on r's trace: 0, or -1 out of memory (w freed). */
static int walk_trace(ctrace_reader *r, walk *w) {
  memset(w, 0, sizeof *w);
  w->eog = r->ver >= 1026;
  g2reader *all = ctrace__g2_new(r->data, r->len, r->mapped, r->ver);
  int rc = all ? do_walk(all, w) : -1;
  if (all) ctrace__g2_release(all, 16, r->len); /* what the walk left */
  ctrace__g2_free(all);
  if (rc) {
    free(w->start);
    free(w->gen);
  }
  return rc;
}

/* Generations the rule keeps: every one a batch of the next follows (or,
 * go 1.26, that ended), and those begun, the torn batch's included. */
static uint64_t whole_of(const walk *w) {
  return w->n == 0 ? 0 : w->n - 1 + (w->eog ? !w->open : w->torn && w->torn_new);
}
static uint64_t begun_of(const walk *w) { return w->n + (w->torn && w->torn_new); }

int ctrace__cut_plan(ctrace_reader *r, ctrace_parse_error *err) {
  r->cut_planned = true;
  if (!r->g2) return 0;
  walk w;
  if (walk_trace(r, &w)) return ctrace__perr(err, 0, "out of memory");
  const bool fills = w.end == r->len;
  const uint64_t whole = whole_of(&w);
  ctrace_salvage_info *c = &r->cut;
  memset(c, 0, sizeof *c);
  c->info.version = r->ver;
  c->cut.offset = r->len;
  int ret = 0;
  if (!fills && !w.torn) {
    /* Bytes that are no batch: not a cut, an error where the reader
     * meets them. */
  } else if (fills && !(w.eog && w.open)) {
    /* Between two batches: the last generation begun is left out only if
     * it does not read (stream.c, cut_here). One generation has nothing
     * before it to keep. */
    if (w.n >= 2) {
      r->g2->cut_at = w.start[w.n - 1];
      c->keep = w.start[w.n - 1];
      c->generations = w.n - 1;
      c->dropped = 1;
    }
  } else if (whole == 0) {
    /* The error, unless Go's reading finds whole generations all the
     * same (stream.c, ctrace__g2_next): a header torn before its
     * generation's number may be the next one's. */
    r->g2->first_cut = true;
    ctrace__perr(&r->g2->first_cut_error, w.end,
                 "cut short inside its first generation (begun at byte %llu; the file has %zu bytes): "
                 "%s; no whole generation to read (a generation is whole once %s)",
                 (unsigned long long)(w.n ? w.start[0] : 16), r->len,
                 fills ? "it has no end of generation" : w.why.message,
                 w.eog ? "its end is read" : "a batch of the next one begins after it");
  } else {
    /* Torn, or (go 1.26) without its end: read up to where the generation
     * left out begins. */
    c->keep = whole < w.n ? w.start[whole] : w.end;
    c->generations = whole;
    c->dropped = begun_of(&w) - whole;
    if (!fills) c->cut = w.why;
    c->torn = w.torn;
    g2reader *g = ctrace__g2_new(r->data, c->keep, r->mapped, r->ver);
    if (!g) {
      ret = ctrace__perr(err, 0, "out of memory");
    } else {
      ctrace__g2_free(r->g2);
      r->g2 = g;
      r->cut_known = true;
    }
  }
  free(w.start);
  free(w.gen);
  return ret;
}

static int salvage(ctrace_reader *r, ctrace_salvage_info *s, ctrace_parse_error *err);

int ctrace_reader_salvage(ctrace_reader *r, ctrace_salvage_info *s, ctrace_parse_error *err) {
  return ctrace__pfail(salvage(r, s, err), err);
}

static int salvage(ctrace_reader *r, ctrace_salvage_info *s, ctrace_parse_error *err) {
  memset(s, 0, sizeof *s);
  s->info.version = r->ver;
  s->cut.offset = r->len;
  if (r->ver < 1022) return salvage_classic(r, s, err);

  walk w;
  if (walk_trace(r, &w)) return ctrace__perr(err, 0, "out of memory");
  const bool fills = w.end == r->len;
  uint64_t whole_gens = whole_of(&w);
  if (!fills) {
    s->cut = w.why;
    s->torn = w.torn;
  }

  /* Step 2: the generations the rule keeps; all of it if the batches fill
   * the file, in case it reads whole. */
  uint64_t upto = fills ? r->len : whole_gens < w.n ? w.start[whole_gens] : w.end;
  g2reader *g = ctrace__g2_new(r->data, upto, r->mapped, r->ver);
  if (!g) {
    free(w.start);
    free(w.gen);
    return ctrace__perr(err, 0, "out of memory");
  }
  ctrace_event ev;
  ctrace_parse_error e;
  uint64_t events = 0, syncs = 0, begun_syncs = 0;
  int rc;
  double freq = 0;
  bool to_end = false;
  for (;;) {
    rc = ctrace__g2_next(g, &ev, &e);
    if (rc < 0) {
      s->error = e;
      break;
    }
    if (rc == 0) {
      to_end = true;
      break;
    }
    events++;
    if (g->gen.have_freq) freq = g->gen.freq;
    if (ev.type == CTRACE_EV122_Sync && g->ver >= 1025) {
      /* Go 1.27's Syncs: one begins each generation (with its clock
       * snapshot), so that each after the first tells the generation
       * before it read whole; the summary is taken from the prefix. */
      if (ev.args[5]) {
        if (begun_syncs >= w.n || ev.off != w.start[begun_syncs]) break;
        begun_syncs++;
      }
      syncs = ev.args[5] ? begun_syncs - 1 : begun_syncs;
    } else if (ev.type == CTRACE_EV122_Sync) {
      /* The reader's generations are the walk's, or this is no prefix to
       * cut at: stop trusting the stream here. */
      if (syncs >= w.n || ev.off != w.start[syncs]) break;
      syncs++;
      if (syncs <= whole_gens) ctrace__g2_info(g, events, freq, &s->info);
    }
    if ((events & 0xfffff) == 0 && r->progress) r->progress(r->progress_arg, g->off, r->len);
  }
  if (r->progress) r->progress(r->progress_arg, r->len, r->len);

  int ret = 0;
  if (fills && to_end) {
    s->whole = 1;
    s->keep = r->len;
    s->generations = g->ver >= 1025 ? begun_syncs : syncs;
    ctrace__g2_info(g, events, freq, &s->info);
  } else {
    uint64_t kept = syncs < whole_gens ? syncs : whole_gens;
    uint64_t begun = begun_of(&w);
    s->generations = kept;
    s->dropped = begun - kept;
    s->keep = kept == 0 ? 0 : kept < w.n ? w.start[kept] : w.end;
    if (kept == 0) {
      memset(&s->info, 0, sizeof s->info);
      if (whole_gens == 0 && !fills)
        ret = ctrace__perr(err, w.end,
                           "nothing to salvage: %s at byte %llu, inside its first generation (%.200s); a "
                           "generation is kept once a batch of the next one begins after it",
                           w.torn ? "the trace is cut" : "its batches end", (unsigned long long)w.end,
                           w.why.message);
      else if (w.n == 0)
        ret = ctrace__perr(err, 16, "nothing to salvage: no batch follows the header");
      else if (whole_gens == 0)
        ret = ctrace__perr(err, s->error.message[0] ? s->error.offset : 16,
                           "nothing to salvage: its first generation does not read (%.200s), and no "
                           "generation begins after it",
                           s->error.message[0] ? s->error.message : "it ends early");
      else
        ret = ctrace__perr(err, s->error.message[0] ? s->error.offset : 16,
                           "nothing to salvage: its first generation does not read: %.240s",
                           s->error.message[0] ? s->error.message : "it ends early");
    }
    if (kept && g->ver >= 1025) prefix_info(r, s->keep, &s->info);
    s->info.version = r->ver;
  }
  s->info.bytes = s->keep;
  ctrace__g2_free(g);
  free(w.start);
  free(w.gen);
  return ret;
}
