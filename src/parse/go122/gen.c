/* One generation of a Go 1.22+ trace (Go 1.23's readGeneration,
 * readBatch, addStrings, addStacks, addCPUSamples, parseFreq; for the
 * headers go 1.25 and 1.26 Go 1.27's readGenerationWithSpill and
 * readGeneration, and its setSyncBatch): batch framing, the generation's
 * tables, and its event batches indexed per thread. Nothing is copied but
 * strings; event batches stay in the mapped file. Nothing is allocated by
 * a count read from the file before the bytes it describes are known to
 * be there.
 *
 * A generation ends where a batch of the next begins (up to go 1.25: that
 * batch is "spilled" into the next read), or (go 1.26) at the one-byte
 * EndOfGeneration batch, which lets a reader hand out a generation
 * without waiting for the next.
 *
 * Go returns io.EOF itself for a few truncations (a batch cut after its
 * experiment byte; a strings, stacks, samples or frequency section cut
 * where a new record's first value would start), and `go tool trace`
 * takes io.EOF for the trace's clean end: those return G2_EOF here, and
 * the stream ends there without an error, as Go's does. */
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "go122.h"

int ctrace__perr(ctrace_parse_error *err, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define G2_EOF (-2)
#define G2_EOG (-3) /* an EndOfGeneration batch (go 1.25+ framing) */

static const char *const ERR_OVERFLOW = "binary: varint overflows a 64-bit integer";

/* Go's binary.ReadUvarint over data[*off, end): 0 with *v, or -1 with
 * *why: "EOF" (no byte), "unexpected EOF", or the overflow. */
static int read_uvarint(const uint8_t *data, uint64_t end, uint64_t *off, uint64_t *v,
                        const char **why) {
  uint64_t x = 0;
  unsigned s = 0;
  for (int i = 0; i < 10; i++) {
    if (*off >= end) {
      *why = i > 0 ? "unexpected EOF" : "EOF";
      return -1;
    }
    uint8_t b = data[(*off)++];
    if (b < 0x80) {
      if (i == 9 && b > 1) {
        *why = ERR_OVERFLOW;
        return -1;
      }
      *v = x | (uint64_t)b << s;
      return 0;
    }
    x |= (uint64_t)(b & 0x7f) << s;
    s += 7;
  }
  *why = ERR_OVERFLOW;
  return -1;
}

/* Go's binary.Uvarint on data[off, end): bytes used, or <= 0. */
static inline int uvarint(const uint8_t *data, uint64_t off, uint64_t end, uint64_t *v) {
  if (off < end && data[off] < 0x80) { /* most arguments: one byte */
    *v = data[off];
    return 1;
  }
  uint64_t x = 0;
  unsigned s = 0;
  for (int i = 0; off + (uint64_t)i < end; i++) {
    if (i == 10) return -(i + 1);
    uint8_t b = data[off + (uint64_t)i];
    if (b < 0x80) {
      if (i == 9 && b > 1) return -(i + 1);
      *v = x | (uint64_t)b << s;
      return i + 1;
    }
    x |= (uint64_t)(b & 0x7f) << s;
    s += 7;
  }
  return 0;
}

/* Go's int64(float64) on amd64: out of range or NaN gives INT64_MIN. */
static int64_t go_int64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)x;
}

/* Go's frequency.mul: ticks to ns. */
static int64_t mul(double freq, uint64_t t) { return go_int64((double)t * freq); }

static const char *ev_name(uint8_t t, char *buf, size_t n) {
  if (t > CTRACE_EV122_GoroutineStackFree) {
    snprintf(buf, n, "Invalid(%u)", t);
    return buf;
  }
  const char *s = ctrace_event122_descs[t].name;
  return s ? s : "";
}

#define GROW(arr, capv, need) ctrace__grow(&(arr), &(capv), (need), sizeof *(arr))

static int oom(ctrace_parse_error *err, uint64_t off) { return ctrace__perr(err, off, "out of memory"); }

void ctrace__g2_gen_free(g2gen *g) {
  free(g->arena);
  ctrace__map_free(&g->strings);
  free(g->str);
  free(g->str_by_id);
  ctrace__map_free(&g->stacks);
  free(g->stk);
  free(g->pcs);
  ctrace__map_free(&g->pcmap);
  free(g->pcf);
  free(g->frames);
  for (uint32_t i = 0; i < g->nmq; i++) free(g->mq[i].b);
  free(g->mq);
  ctrace__map_free(&g->mq_of);
  free(g->samples);
  for (uint64_t i = 0; i < g->nextras; i++) free(g->extras[i]);
  free(g->extras);
  memset(g, 0, sizeof *g);
}

const char *ctrace__g2_string(const g2gen *g, uint64_t id, uint64_t *len) {
  if (id == 0) {
    *len = 0;
    return "";
  }
  if (g->nstr_by_id) {
    if (id >= g->nstr_by_id || !g->str_by_id[id]) return NULL;
    const g2str *s = &g->str[g->str_by_id[id] - 1];
    *len = s->len;
    return g->arena + s->at;
  }
  const uint64_t *i = ctrace__map_get(&g->strings, id);
  if (!i) return NULL;
  *len = g->str[*i - 1].len;
  return g->arena + g->str[*i - 1].at;
}

/* The strings' indices by id (str_by_id), where at least a quarter of
 * the ids up to the largest are used: a lookup is then one load where the
 * map's probe took three lines of memory (its used, key and value
 * arrays), and 4 bytes an id where the map took 17 a slot. Go numbers a
 * generation's strings from 1; ctrace's writer keeps its ids across
 * generations, so a generation of its traces uses some of them (61,000
 * of 165,000 in bench_scale's). A trace whose ids are sparse, or a table
 * that cannot be had, keeps the map. */
static bool dense(uint64_t max_id, uint64_t n) { return n > 0 && n < UINT32_MAX && max_id <= 4 * n + 1024; }

static void strings_by_id(g2gen *g) {
  if (!g->strings.cap) return; /* indexed by id from the start (index_string) */
  uint64_t max = 0;
  for (size_t k = 0; k < g->strings.cap; k++)
    if (g->strings.used[k] && g->strings.keys[k] > max) max = g->strings.keys[k];
  if (!dense(max, g->nstr)) return;
  uint32_t *t = calloc(max + 1, sizeof *t);
  if (!t) return;
  for (size_t k = 0; k < g->strings.cap; k++)
    if (g->strings.used[k]) t[g->strings.keys[k]] = (uint32_t)g->strings.vals[k];
  g->str_by_id = t;
  g->nstr_by_id = max + 1;
  ctrace__map_free(&g->strings); /* every lookup from here on is by id */
}

/* Indexes the ix-th string (from 1) under id: by id from a generation's
 * first string while the ids are as dense as strings_by_id asks (Go
 * numbers them from 1, in order), or within the ids the generation
 * before took by id (ctrace's writer keeps its ids across generations),
 * so that neither builds the map: one of 17,700 strings took 1.1 MB,
 * 1.6 MB while it doubled, the peak of `ctrace check`. Else in the map,
 * the ids so far moved into it. False when out of memory. */
static bool index_string(g2gen *g, uint64_t id, uint64_t ix) {
  if (!g->strings.cap && (dense(id, ix) || (id < g->str_ids_hint && ix < UINT32_MAX))) {
    if (id >= g->nstr_by_id) {
      uint64_t cap = g->nstr_by_id, was = cap;
      if (!ctrace__grow(&g->str_by_id, &cap, id + 1, sizeof *g->str_by_id)) return false;
      memset(g->str_by_id + was, 0, (cap - was) * sizeof *g->str_by_id);
      g->nstr_by_id = cap;
    }
    g->str_by_id[id] = (uint32_t)ix;
    return true;
  }
  for (uint64_t k = 0; k < g->nstr_by_id; k++) {
    if (!g->str_by_id[k]) continue;
    uint64_t *v = ctrace__map_put(&g->strings, k, NULL);
    if (!v) return false;
    *v = g->str_by_id[k];
  }
  free(g->str_by_id);
  g->str_by_id = NULL;
  g->nstr_by_id = 0;
  uint64_t *v = ctrace__map_put(&g->strings, id, NULL);
  if (!v) return false;
  *v = ix;
  return true;
}

bool ctrace__g2_stack(const g2gen *g, uint64_t id, const ctrace_frame **f, uint32_t *n) {
  *f = NULL;
  *n = 0;
  if (id == 0) return true;
  const uint64_t *i = ctrace__map_get(&g->stacks, id);
  if (!i) return false;
  const g2stack *s = &g->stk[*i - 1];
  *n = s->n;
  *f = g->frames ? g->frames + s->first : NULL;
  return true;
}

/* ---- sections ------------------------------------------------------------ */

/* A Go %v of a string table entry for the duplicate-id message. */
static int dup_string(ctrace_parse_error *err, uint64_t off, uint64_t id, const uint8_t *s,
                      uint64_t n, const char *old, uint64_t oldn) {
  return ctrace__perr(err, off, "multiple strings with the same ID: id=%llu, new=%.*s, existing=%.*s",
                      (unsigned long long)id, (int)n, (const char *)s, (int)oldn, old);
}

static int add_strings(g2reader *r, const g2batch *b, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  const uint8_t *d = r->data;
  uint64_t off = b->off + 1; /* past EvStrings */
  const char *why;
  while (off < b->end) {
    uint64_t off0 = off;
    uint8_t t = d[off++];
    if (t != CTRACE_EV122_String) return ctrace__perr(err, off0, "expected string event, got %u", t);
    uint64_t id, len;
    if (read_uvarint(d, b->end, &off, &id, &why) || read_uvarint(d, b->end, &off, &len, &why)) {
      ctrace__perr(err, off0, "%s", why);
      return strcmp(why, "EOF") == 0 ? G2_EOF : -1;
    }
    if (len > CTRACE_GO122_MAX_STRING)
      return ctrace__perr(err, off0, "invalid string size %llu, maximum is %d", (unsigned long long)len,
                          CTRACE_GO122_MAX_STRING);
    if (len > b->end - off)
      return ctrace__perr(err, off0, "failed to read full string: read %llu but wanted %llu",
                          (unsigned long long)(b->end - off), (unsigned long long)len);
    uint64_t old;
    const char *os = ctrace__g2_string(g, id, &old);
    if (os) return dup_string(err, off0, id, d + off, len, os, old);
    if (!GROW(g->arena, g->arena_cap, g->arena_len + len + 1) || !GROW(g->str, g->capstr, g->nstr + 1))
      return oom(err, off0);
    if (!index_string(g, id, g->nstr + 1)) return oom(err, off0);
    memcpy(g->arena + g->arena_len, d + off, len);
    g->arena[g->arena_len + len] = 0;
    g->str[g->nstr++] = (g2str){g->arena_len, len};
    g->arena_len += len + 1;
    off += len;
  }
  return 0;
}

static int add_stacks(g2reader *r, const g2batch *b, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  const uint8_t *d = r->data;
  uint64_t off = b->off + 1; /* past EvStacks */
  const char *why;
  while (off < b->end) {
    uint64_t off0 = off;
    uint8_t t = d[off++];
    if (t != CTRACE_EV122_Stack) return ctrace__perr(err, off0, "expected stack event, got %u", t);
    uint64_t id, n;
    if (read_uvarint(d, b->end, &off, &id, &why) || read_uvarint(d, b->end, &off, &n, &why)) {
      ctrace__perr(err, off0, "%s", why);
      return strcmp(why, "EOF") == 0 ? G2_EOF : -1;
    }
    if (n > CTRACE_GO122_MAX_FRAMES)
      return ctrace__perr(err, off0, "invalid stack size %llu, maximum is %d", (unsigned long long)n,
                          CTRACE_GO122_MAX_FRAMES);
    uint64_t first = g->npcs;
    for (uint64_t i = 0; i < n; i++) {
      static const char *const what[4] = {"PC", "funcID", "fileID", "line"};
      uint64_t v[4];
      for (int k = 0; k < 4; k++)
        if (read_uvarint(d, b->end, &off, &v[k], &why))
          return ctrace__perr(err, off0, "reading frame %llu's %s for stack %llu: %s",
                              (unsigned long long)(i + 1), what[k], (unsigned long long)id, why);
      if (!GROW(g->pcs, g->cappcs, g->npcs + 1)) return oom(err, off0);
      g->pcs[g->npcs++] = v[0];
      bool fresh;
      uint64_t *slot = ctrace__map_put(&g->pcmap, v[0], &fresh);
      if (!slot) return oom(err, off0);
      if (fresh) {
        if (!GROW(g->pcf, g->cappcf, g->npcf + 1)) {
          ctrace__map_del(&g->pcmap, v[0]);
          return oom(err, off0);
        }
        g->pcf[g->npcf] = (g2pcframe){v[1], v[2], v[3]};
        *slot = ++g->npcf;
      }
    }
    /* Id 0 always exists (the empty stack), so it is a duplicate too. */
    const uint64_t *dup = id ? ctrace__map_get(&g->stacks, id) : NULL;
    if (id == 0 || dup) {
      char nw[160] = "", ex[160] = "";
      size_t at = 0;
      for (uint64_t i = first; i < g->npcs && at + 24 < sizeof nw; i++)
        at += (size_t)snprintf(nw + at, sizeof nw - at, "\t%#llx\n", (unsigned long long)g->pcs[i]);
      if (dup) {
        const g2stack *s = &g->stk[*dup - 1];
        at = 0;
        for (uint32_t i = 0; i < s->n && at + 24 < sizeof ex; i++)
          at += (size_t)snprintf(ex + at, sizeof ex - at, "\t%#llx\n",
                                 (unsigned long long)g->pcs[s->first + i]);
      }
      return ctrace__perr(err, off0, "multiple trace.stacks with the same ID: id=%llu, new=%s, existing=%s",
                          (unsigned long long)id, nw, ex);
    }
    if (!GROW(g->stk, g->capstk, g->nstk + 1)) return oom(err, off0);
    bool fresh;
    uint64_t *slot = ctrace__map_put(&g->stacks, id, &fresh);
    if (!slot) return oom(err, off0);
    g->stk[g->nstk] = (g2stack){first, (uint32_t)n};
    *slot = ++g->nstk;
  }
  return 0;
}

static int add_samples(g2reader *r, const g2batch *b, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  const uint8_t *d = r->data;
  uint64_t off = b->off + 1;
  const char *why;
  while (off < b->end) {
    uint64_t off0 = off;
    uint8_t t = d[off++];
    if (t != CTRACE_EV122_CPUSample)
      return ctrace__perr(err, off0, "expected CPU sample event, got %u", t);
    uint64_t v[5];
    for (int k = 0; k < 5; k++)
      if (read_uvarint(d, b->end, &off, &v[k], &why)) {
        ctrace__perr(err, off0, "%s", why);
        return strcmp(why, "EOF") == 0 ? G2_EOF : -1;
      }
    if (!GROW(g->samples, g->capsamples, g->nsamples + 1)) return oom(err, off0);
    g->samples[g->nsamples++] =
        (g2sample){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2], v[3] ? (int64_t)v[3] : G2_NONE, v[4], off0};
  }
  return 0;
}

static int parse_freq(g2reader *r, const g2batch *b, ctrace_parse_error *err) {
  uint64_t off = b->off + 1, f;
  const char *why;
  if (read_uvarint(r->data, b->end, &off, &f, &why)) {
    ctrace__perr(err, b->off, "%s", why);
    return strcmp(why, "EOF") == 0 ? G2_EOF : -1;
  }
  if (r->gen.have_freq) return ctrace__perr(err, b->off, "found multiple frequency events");
  r->gen.freq = 1.0 / ((double)f / 1e9);
  r->gen.have_freq = true;
  return 0;
}

/* Go 1.27's setSyncBatch for go 1.25+: after the SyncBatch byte, a
 * Frequency and a ClockSnapshot, each at most once, in any order. */
static int parse_sync(g2reader *r, const g2batch *b, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  const uint8_t *d = r->data;
  uint64_t off = b->off + 1, last = b->time;
  const char *why;
  while (off < b->end) {
    uint64_t off0 = off;
    uint8_t t = d[off++];
    if (t == CTRACE_EV122_Frequency) {
      if (g->have_freq) return ctrace__perr(err, off0, "found multiple frequency events");
      uint64_t f;
      if (read_uvarint(d, b->end, &off, &f, &why)) goto bad;
      g->freq = 1.0 / ((double)f / 1e9);
      g->have_freq = true;
    } else if (t == CTRACE_EV122_ClockSnapshot) {
      if (g->have_snap) return ctrace__perr(err, off0, "found multiple clock snapshot events");
      g->have_snap = true;
      uint64_t dt;
      if (read_uvarint(d, b->end, &off, &dt, &why)) goto bad;
      last += dt;
      g->snap_time = last;
      if (read_uvarint(d, b->end, &off, &g->snap_mono, &why) || read_uvarint(d, b->end, &off, &g->snap_sec, &why) ||
          read_uvarint(d, b->end, &off, &g->snap_nsec, &why))
        goto bad;
    } else {
      return ctrace__perr(err, off0, "expected frequency or clock snapshot event, got %u", t);
    }
    continue;
  bad:
    ctrace__perr(err, off0, "%s", why);
    return strcmp(why, "EOF") == 0 ? G2_EOF : -1;
  }
  return 0;
}

static int add_events(g2reader *r, int64_t m, const g2batch *b, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  bool fresh;
  uint64_t *slot = ctrace__map_put(&g->mq_of, (uint64_t)m, &fresh);
  if (!slot) return oom(err, b->off);
  if (fresh) {
    uint64_t cap = g->capmq;
    if (!ctrace__grow(&g->mq, &cap, (uint64_t)g->nmq + 1, sizeof *g->mq)) {
      ctrace__map_del(&g->mq_of, (uint64_t)m);
      return oom(err, b->off);
    }
    g->capmq = (uint32_t)cap;
    memset(&g->mq[g->nmq], 0, sizeof g->mq[0]);
    g->mq[g->nmq].m = m;
    *slot = ++g->nmq;
  }
  g2mq *q = &g->mq[*slot - 1];
  uint64_t cap = q->capb;
  if (!ctrace__grow(&q->b, &cap, (uint64_t)q->nb + 1, sizeof *q->b)) return oom(err, b->off);
  q->capb = (uint32_t)cap;
  q->b[q->nb++] = *b;
  return 0;
}

/* Go's processBatch. The frequency's batch is a lone Frequency up to go
 * 1.23, a sync batch from go 1.25 on, where a batch that begins with a
 * Frequency is a batch of events (that cannot be read: Go 1.27's
 * isSyncBatch). */
static int process(g2reader *r, int64_t m, bool exp, const g2batch *b, ctrace_parse_error *err) {
  uint8_t first = b->end > b->off ? r->data[b->off] : 0;
  g2gen *g = &r->gen;
  if (!g->min_ts || b->time < g->min_ts) g->min_ts = b->time;
  if (!exp && b->end > b->off) {
    switch (first) {
    case CTRACE_EV122_Strings: return add_strings(r, b, err);
    case CTRACE_EV122_Stacks: return add_stacks(r, b, err);
    case CTRACE_EV122_CPUSamples: return add_samples(r, b, err);
    case CTRACE_EV122_Frequency:
      if (r->ver < 1025) return parse_freq(r, b, err);
      break;
    case CTRACE_EV122_SyncBatch:
      if (r->ver >= 1025) return parse_sync(r, b, err);
      break;
    }
  }
  if (exp) return 0; /* experimental side data: nothing of it is printed */
  return add_events(r, m, b, err);
}

/* Go's readBatch at r->off: 0 with the batch, G2_EOF at a clean end, -1. */
static int read_batch(g2reader *r, uint64_t *gen, int64_t *m, bool *exp, g2batch *b,
                      ctrace_parse_error *err) {
  const uint8_t *d = r->data;
  uint64_t off = r->off, off0 = off;
  if (off >= r->len) return G2_EOF;
  uint8_t t = d[off++];
  char nb[32];
  if (r->ver >= 1025 && t == CTRACE_EV122_EndOfGeneration) { /* Go 1.27 takes it in every version */
    *gen = 0;
    *m = G2_NONE;
    *exp = false;
    *b = (g2batch){off, off, 0};
    r->off = off;
    return G2_EOG;
  }
  if (t != CTRACE_EV122_EventBatch && t != CTRACE_EV122_ExperimentalBatch) {
    if (r->ver >= 1025) return ctrace__perr(err, off0, "expected batch event, got event %u", t);
    return ctrace__perr(err, off0, "expected batch event, got %s", ev_name(t, nb, sizeof nb));
  }
  *exp = false;
  if (t == CTRACE_EV122_ExperimentalBatch) {
    if (off >= r->len) return G2_EOF; /* Go returns ReadByte's io.EOF as is */
    *exp = d[off++] != 0;
  }
  static const char *const what[4] = {"gen", "M ID", "timestamp", "size"};
  uint64_t v[4];
  const char *why;
  *gen = 0;
  for (int k = 0; k < 4; k++) {
    if (read_uvarint(d, r->len, &off, &v[k], &why))
      return ctrace__perr(err, off0, "error reading batch %s: %s", what[k], why);
    if (k == 0) *gen = v[0];
  }
  if (v[3] > CTRACE_GO122_MAX_BATCH)
    return ctrace__perr(err, off0, "invalid batch size %llu, maximum is %u", (unsigned long long)v[3],
                        CTRACE_GO122_MAX_BATCH);
  if (v[3] > r->len - off)
    return ctrace__perr(err, off0, "failed to read full batch: read %llu but wanted %llu",
                        (unsigned long long)(r->len - off), (unsigned long long)v[3]);
  *m = (int64_t)v[1];
  *b = (g2batch){off, off + v[3], v[2]};
  r->off = off + v[3];
  return 0;
}

static int by_id(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Frames for every stack, now that every string of the generation is in;
 * and Go's validateStackStrings, which walks the stacks by id (its table
 * is dense for the ids runtimes write) and reports the first bad one. */
static int resolve(g2reader *r, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  if (g->npcs) {
    g->frames = malloc(g->npcs * sizeof *g->frames);
    if (!g->frames) return oom(err, g->start);
  }
  uint64_t (*ids)[2] = g->nstk ? malloc(g->nstk * sizeof *ids) : NULL;
  if (g->nstk && !ids) return oom(err, g->start);
  uint64_t n = 0;
  for (size_t k = 0; k < g->stacks.cap; k++)
    if (g->stacks.used[k]) ids[n][0] = g->stacks.keys[k], ids[n++][1] = g->stacks.vals[k] - 1;
  if (n > 1) qsort(ids, n, sizeof *ids, by_id);
  for (uint64_t k = 0; k < n; k++) {
    const g2stack *st = &g->stk[ids[k][1]];
    for (uint32_t i = 0; i < st->n; i++) {
      uint64_t pc = g->pcs[st->first + i];
      const g2pcframe *f = &g->pcf[*ctrace__map_get(&g->pcmap, pc) - 1];
      uint64_t fnl = 0, filel = 0;
      const char *fn = ctrace__g2_string(g, f->func, &fnl), *file = ctrace__g2_string(g, f->file, &filel);
      if (!fn || !file) {
        uint64_t sid = ids[k][0];
        free(ids);
        return ctrace__perr(err, g->start, "found invalid %s string ID %llu for stack %llu",
                            fn ? "file" : "func", (unsigned long long)(fn ? f->file : f->func),
                            (unsigned long long)sid);
      }
      g->frames[st->first + i] = (ctrace_frame){pc, fn, file, f->line, (uint32_t)fnl, (uint32_t)filel};
    }
  }
  free(ids);
  return 0;
}

/* Stable, by time: Go sorts samples with slices.SortFunc, which keeps the
 * order of equal times for the short runs traces have. */
static void sort_samples(g2sample *s, uint64_t n) {
  if (n < 2) return;
  g2sample *tmp = malloc(n * sizeof *tmp);
  if (!tmp) { /* insertion sort, in place */
    for (uint64_t i = 1; i < n; i++)
      for (uint64_t j = i; j > 0 && s[j].time < s[j - 1].time; j--) {
        g2sample t = s[j];
        s[j] = s[j - 1];
        s[j - 1] = t;
      }
    return;
  }
  for (uint64_t w = 1; w < n; w *= 2) {
    for (uint64_t lo = 0; lo < n; lo += 2 * w) {
      uint64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      uint64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = s[j].time < s[i].time ? s[j++] : s[i++];
      while (i < mid) tmp[k++] = s[i++];
      while (j < hi) tmp[k++] = s[j++];
    }
    memcpy(s, tmp, n * sizeof *s);
  }
  free(tmp);
}

/* What every generation needs once its batches are in: its frequency,
 * (go 1.25+) its clock snapshot, valid stacks; then the CPU samples' times
 * in ns, in order. */
static int complete(g2reader *r, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  if (!g->have_freq) return ctrace__perr(err, g->start, "no frequency event found");
  if (r->ver >= 1025 && !g->have_snap) return ctrace__perr(err, g->start, "no clock snapshot event found");
  strings_by_id(g);
  if (resolve(r, err)) return -1;
  /* Reading every batch header faulted in the pages around each (the
   * kernel maps neighbours on a fault): nearly the whole generation. Give
   * them back; the events are read a batch at a time from here on. */
  ctrace__g2_release(r, g->start, g->end);
  for (uint64_t i = 0; i < g->nsamples; i++)
    g->samples[i].time = mul(g->freq, (uint64_t)g->samples[i].time);
  sort_samples(g->samples, g->nsamples);
  g->start_ns = mul(g->freq, g->min_ts);
  g->snap_ns = mul(g->freq, g->snap_time);
  if (g->have_snap && !r->have_clock) {
    r->have_clock = true;
    r->clock = (ctrace_clock_snapshot){g->snap_ns, g->snap_mono, (int64_t)g->snap_sec, (int64_t)g->snap_nsec};
  }
  return 1;
}

/* Go 1.27's readGeneration, for go 1.26: batches up to the generation's
 * EndOfGeneration. 1 with the generation, 0 at the trace's end, -1 or
 * G2_EOF (Go's io.EOF from inside a section) with *err. */
static int read_gen126(g2reader *r, ctrace_parse_error *err) {
  g2gen *g = &r->gen;
  g->start = r->off;
  uint64_t nread = 0;
  int rc;
  for (;;) {
    uint64_t gen, at = r->off;
    int64_t m;
    bool exp;
    g2batch b;
    if ((++nread & 3) == 0) ctrace__g2_release(r, g->start, at); /* as in ctrace__g2_read_gen */
    rc = read_batch(r, &gen, &m, &exp, &b, err);
    if (rc == G2_EOF) {
      /* Go counts the batches of events only: a generation of nothing
       * but tables, cut before its end, ends the trace as if absent. */
      if (g->nmq) return ctrace__perr(err, at, "incomplete generation found; trace likely truncated");
      g->end = r->off;
      return 0;
    }
    if (rc == -1) return -1;
    if (g->gen == 0) g->gen = gen;
    if (rc == G2_EOG) break;
    if (gen == 0) return ctrace__perr(err, at, "invalid generation number %llu", (unsigned long long)gen);
    if (gen != g->gen)
      return ctrace__perr(err, at, "broken trace: missing end-of-generation event, or generations are interleaved");
    if ((rc = process(r, m, exp, &b, err)) != 0) return rc;
  }
  g->end = r->off;
  return complete(r, err);
}

int ctrace__g2_read_gen(g2reader *r, ctrace_parse_error *err) {
  if (!ctrace__g2_order_adopt(&r->order)) return oom(err, r->have_spill ? r->spill_off : r->off);
  uint64_t ids = r->gen.nstr_by_id;
  ctrace__g2_gen_free(&r->gen);
  r->gen.str_ids_hint = ids;
#ifdef __GLIBC__
  /* The last generation's tables are free, but glibc keeps their pages
   * where a smaller block still in use lies above them: the heap's
   * resident size grew with every generation (8.9 MB for 2 generations,
   * 12 MB for 4, with 4 MB in use). Handing free pages back once per
   * generation keeps memory flat in the trace's length. */
  malloc_trim(0);
#endif
  g2gen *g = &r->gen;
  if (r->ver >= 1026) return read_gen126(r, err);
  g->start = r->have_spill ? r->spill_off : r->off;
  int rc;
  if (r->have_spill) {
    /* The first batch of this generation was read with the last one. */
    r->have_spill = false;
    g->gen = r->spill_gen;
    uint64_t save = r->off, gen;
    int64_t m;
    bool exp;
    g2batch b;
    r->off = r->spill_off;
    if (read_batch(r, &gen, &m, &exp, &b, err) != 0) return -1; /* read fine before */
    r->off = save;
    if ((rc = process(r, m, exp, &b, err)) != 0) return rc;
  }
  uint64_t nread = 0;
  for (;;) {
    uint64_t gen, at = r->off;
    int64_t m;
    bool exp;
    g2batch b;
    /* Each header read faults in its neighbourhood (64 KiB, the kernel's
     * fault-around): give the pages back as the scan goes, or the whole
     * generation would be resident. Every 4 headers, not 16: 16 left up
     * to 1 MB resident at a generation's start, a peak that a trace of
     * more generations met more often (peak RSS of pprof -t waker
     * --goroutine 1.2 times as high on a Go 1.27 trace 4 times longer). */
    if ((++nread & 3) == 0) ctrace__g2_release(r, g->start, at);
    rc = read_batch(r, &gen, &m, &exp, &b, err);
    if (rc == G2_EOF) break;
    if (rc == G2_EOG) rc = 0; /* generation 0: refused below */
    if (rc) {
      if (g->gen != 0) {
        /* An error in a later batch: this generation is read first, as
         * Go does, and the error reported after it. */
        r->spill_err = true;
        r->spill_error = *err;
        break;
      }
      return -1;
    }
    if (gen == 0) return ctrace__perr(err, at, "invalid generation number %llu", (unsigned long long)gen);
    if (g->gen == 0) g->gen = gen;
    if (gen == g->gen + 1) {
      r->have_spill = true;
      r->spill_off = at;
      r->spill_gen = gen;
      break;
    }
    if (gen != g->gen) return ctrace__perr(err, at, "generations out of order");
    if ((rc = process(r, m, exp, &b, err)) != 0) return rc;
  }
  g->end = r->have_spill ? r->spill_off : r->off;
  return complete(r, err);
}

/* Hands pages of the mapped file that were read back to the kernel: the
 * file stays mapped, but what stays resident is the batches being read,
 * not the trace. A page shared with a batch still to be read is read
 * again from the page cache when touched, so this is always safe. The
 * page where from falls goes too: what precedes from was read (the
 * callers go forward). Rounded up instead, the page between two
 * releases stayed for good, one in every 16 batches of the walk over
 * the whole trace (salvage.c): 43 MB resident for a 1 GB trace, against
 * 14 MB for 40 MB. The page where to falls stays: it is read next. */
void ctrace__g2_release(const g2reader *r, uint64_t from, uint64_t to) {
  if (!r->mapped) return;
  static uint64_t pg;
  if (!pg) pg = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t a = from & ~(pg - 1), b = to & ~(pg - 1);
  if (b > a) madvise((void *)(r->data + a), b - a, MADV_DONTNEED);
}

/* A fault maps the pages of its 64 KiB window (the kernel's
 * fault-around), some of them before it and released already, which
 * would stay for good: 28 MB of the walk over a 1 GB trace (salvage.c),
 * 64 KiB a generation. So a release of what was read goes that far back. */
enum { FAULT_AROUND = 64 << 10 };

void ctrace__g2_release_read(const g2reader *r, uint64_t from, uint64_t to) {
  ctrace__g2_release(r, from > FAULT_AROUND ? from - FAULT_AROUND : 0, to);
}

/* ---- cursors ----------------------------------------------------------------- */

/* Gives back every page of the generation but those of the batches being
 * read. Needed beside the release of each batch read: a fault maps the
 * neighbouring pages too (the kernel's fault-around), pages of batches
 * read long ago among them, which then stay until the generation ends. */
static void trim(g2reader *r) {
  g2gen *g = &r->gen;
  uint64_t at = g->start;
  for (;;) { /* the active batches in file order, and the gaps between */
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < g->nmq; i++) {
      const g2mq *q = &g->mq[i];
      if (q->bi < q->nb && q->b[q->bi].off >= at && q->b[q->bi].off < lo) {
        lo = q->b[q->bi].off;
        hi = q->b[q->bi].end;
      }
    }
    if (lo == UINT64_MAX) break;
    ctrace__g2_release(r, at, lo);
    /* Past the batch even when it is empty (a header alone, end == off):
     * at = end would pick it again for good. */
    at = hi > lo ? hi : lo + 1;
  }
  ctrace__g2_release(r, at, g->end);
}

/* Per event type, for the cursor: whether a batch of events may hold it
 * (ok & 1 in Go 1.27's table, ok & 2 in Go 1.23's, which ends its
 * structural events at ExperimentalBatch), and how many arguments follow
 * its time:
 * one load for the checks that would otherwise read the 24-byte
 * ctrace_event122_descs entry and the reader's version. */
#define EV_OK(num, fl)                                                                               \
  ((num) > CTRACE_EV122_GoroutineStackFree || !((fl) & CTRACE_G_TIMED)                            \
       ? 0                                                                                           \
       : 1 | ((num) > CTRACE_EV122_ExperimentalBatch && (num) < 128 ? 0 : 2))
#define EV_INFO(name, num, kind, fl, n, a, s1, s2, t1, t2) [num] = {EV_OK(num, fl), n},
static const struct {
  uint8_t ok, nargs;
} evinfo[256] = {CTRACE_GO122_EVENTS(EV_INFO)};
#undef EV_INFO
#undef EV_OK

/* uvarint, for a value that may take more than one byte: while ten bytes
 * are left, without a bound check per byte. */
static inline int uvarint_long(const uint8_t *data, uint64_t off, uint64_t end, uint64_t *v) {
  if (end - off < 10) return uvarint(data, off, end, v);
  if (data[off] < 0x80) {
    *v = data[off];
    return 1;
  }
  const uint8_t *p = data + off;
  uint64_t x = 0;
  for (int i = 0; i < 10; i++) {
    uint8_t b = p[i];
    if (b < 0x80) {
      if (i == 9 && b > 1) return -(i + 1);
      *v = x | (uint64_t)b << (7 * i);
      return i + 1;
    }
    x |= (uint64_t)(b & 0x7f) << (7 * i);
  }
  return -11;
}

/* The cursor's next batch with an event in it (fresh, or at the end of
 * one): false when there is none. */
static bool next_batch(g2reader *r, g2mq *q) {
  if (q->bi == 0 && q->off == 0 && q->nb) q->off = q->b[0].off; /* a fresh cursor */
  while (q->bi < q->nb && q->off >= q->b[q->bi].end) {
    ctrace__g2_release(r, q->b[q->bi].off, q->b[q->bi].end);
    if (++q->bi < q->nb) q->off = q->b[q->bi].off;
    q->last_ts = 0;
    if ((++r->batches_done & 15) == 0) trim(r); /* about every MB */
  }
  q->end = q->bi < q->nb ? q->b[q->bi].end : 0;
  return q->bi < q->nb;
}

/* Why a type is not one a batch of events may hold, in Go's words. */
static int bad_type(uint8_t t, uint64_t off, ctrace_parse_error *err) {
  if (t > CTRACE_EV122_GoroutineStackFree) return ctrace__perr(err, off, "found invalid event type: %u", t);
  return ctrace__perr(err, off, "found event without a timestamp: type=%u", t);
}

int ctrace__g2_cursor_next(g2reader *r, g2mq *q, ctrace_parse_error *err) {
  const uint8_t *d = r->data;
  /* q->end is 0 for a fresh cursor (its off is 0 too), so one comparison
   * covers both that and a batch read to its end. */
  if (q->off >= q->end && !next_batch(r, q)) return 0;
  if (q->last_ts == 0) q->last_ts = mul(r->gen.freq, q->b[q->bi].time);
  uint64_t off = q->off, off0 = off, end = q->end;
  uint8_t t = d[off++];
  if (!(evinfo[t].ok & (r->ver < 1025 ? 2 : 1))) return bad_type(t, off0, err);
  uint64_t dt;
  int n = uvarint_long(d, off, end, &dt);
  if (n <= 0) return ctrace__perr(err, off0, "found invalid uvarint for timestamp");
  off += (uint64_t)n;
  g2ev *e = &q->ev;
  memset(e->args, 0, sizeof e->args);
  for (int i = 0, na = evinfo[t].nargs; i < na; i++) {
    n = uvarint_long(d, off, end, &e->args[i]);
    if (n <= 0) return ctrace__perr(err, off0, "found invalid uvarint");
    off += (uint64_t)n;
  }
  e->typ = t;
  e->off = off0;
  e->xstr = NULL;
  e->xlen = 0;
  e->time = (int64_t)((uint64_t)mul(r->gen.freq, dt) + (uint64_t)q->last_ts);
  q->last_ts = e->time;
  q->off = off;
  return 1;
}
