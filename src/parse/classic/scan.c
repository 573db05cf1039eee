/* Pass 1, in file order: Go's readTrace (framing) and the file-order part
 * of its parseEvents (argument counts, stacks, frequency, STW kinds).
 *
 * Framing errors end the scan at once, as in Go; the first semantic error
 * is kept and reported only if the framing of the whole file is good,
 * because Go checks all framing before any meaning. Nothing is allocated by
 * a count or length read from the file: values are read one at a time from
 * bytes that exist, and strings are copied only once their bytes are known
 * to be in the file. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../reader.h"

int ctrace__perr(ctrace_parse_error *err, uint64_t off, const char *fmt, ...) {
  if (err) {
    err->offset = off;
    /* The one message of an allocation that failed, wherever it did. */
    err->code = strcmp(fmt, "out of memory") == 0 ? CTRACE_ENOMEM : CTRACE_EFORMAT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Go's readVal: LEB128, at most 10 bytes. */
static int read_val(const ctrace_reader *r, uint64_t *off, uint64_t *v, ctrace_parse_error *err) {
  uint64_t off0 = *off, x = 0;
  for (int i = 0; i < 10; i++) {
    if (*off >= r->len)
      return ctrace__perr(err, off0, "failed to read trace at offset %llu: read 0, error %s",
                          (unsigned long long)off0, "EOF");
    uint8_t b = r->data[(*off)++];
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return ctrace__perr(err, off0, "bad value at offset 0x%llx", (unsigned long long)off0);
}

static int arg_err(uint8_t typ, uint64_t off, ctrace_parse_error *err) {
  char inner[sizeof err->message];
  snprintf(inner, sizeof inner, "%s", err->message);
  return ctrace__perr(err, err->offset, "failed to read event %u argument at offset %llu (%s)", typ,
                      (unsigned long long)off, inner);
}

uint32_t ctrace__argnum(uint8_t t, int ver) {
  const ctrace_event_desc *d = &ctrace_event_descs[t];
  uint32_t n = d->nargs + ((d->flags & CTRACE_F_STACK) ? 1 : 0);
  if (t == CTRACE_EV_Batch || t == CTRACE_EV_Frequency || t == CTRACE_EV_TimerGoroutine)
    return n + (ver < 1007);
  n++; /* timestamp */
  if (ver < 1007) n++; /* sequence */
  switch (t) {
  case CTRACE_EV_GCSweepDone:
    if (ver < 1009) n -= 2;
    break;
  case CTRACE_EV_GCStart:
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoUnblock:
    if (ver < 1007) n--;
    break;
  case CTRACE_EV_GCSTWStart:
    if (ver < 1010) n--;
    break;
  }
  return n;
}

static int parse_header(const ctrace_reader *r, int *ver, ctrace_parse_error *err) {
  if (r->len < 16) {
    size_t n = r->len;
    return ctrace__perr(err, 0, "failed to read header: read %zu, err %s", n,
                        n == 0 ? "EOF" : "unexpected EOF");
  }
  const uint8_t *b = r->data;
  if (b[0] != 'g' || b[1] != 'o' || b[2] != ' ' || b[3] < '1' || b[3] > '9' || b[4] != '.' ||
      b[5] < '1' || b[5] > '9')
    return ctrace__perr(err, 0, "not a trace file");
  int v = b[5] - '0', i = 0;
  for (; i < 2 && b[6 + i] >= '0' && b[6 + i] <= '9'; i++) v = v * 10 + (b[6 + i] - '0');
  v += (b[3] - '0') * 1000;
  if (memcmp(b + 6 + i, " trace\0\0\0\0", 10 - i) != 0)
    return ctrace__perr(err, 0, "not a trace file");
  switch (v) {
  case 1005: case 1007: case 1008: case 1009: case 1010: case 1011: case 1019: case 1021:
    break;
  case 1022: case 1023: case 1025: case 1026: /* Go's current format: src/parse/go122/ */
    break;
  default:
    return ctrace__perr(err, 0, "unsupported trace file version %d.%d (update Go toolchain) %d",
                        v / 1000, v % 1000, v);
  }
  *ver = v;
  return 0;
}

static char *arena_add(ctrace_reader *r, const uint8_t *s, size_t n, uint64_t *at) {
  if (r->arena_len + n + 5 > r->arena_cap) {
    size_t cap = r->arena_cap ? r->arena_cap * 2 : 4096;
    while (cap < r->arena_len + n + 5) cap *= 2;
    char *a = realloc(r->arena, cap);
    if (!a) return NULL;
    r->arena = a;
    r->arena_cap = cap;
  }
  char *p = r->arena + r->arena_len;
  uint32_t len = (uint32_t)n; /* at most 1e6 */
  memcpy(p, &len, 4);
  memcpy(p + 4, s, n);
  p[4 + n] = 0;
  *at = r->arena_len + 4;
  r->arena_len += n + 5;
  return p + 4;
}

/* Strings sit in the arena as a 4-byte length, the bytes, and a NUL: C
 * strings for the API, with the length for those that hold a NUL. */
const char *ctrace__string_n(const ctrace_reader *r, uint64_t id, uint64_t *len) {
  const uint64_t *at = ctrace__map_get(&r->strings, id);
  if (!at) {
    if (len) *len = 0;
    return "";
  }
  const char *s = r->arena + (*at - 1);
  if (len) {
    uint32_t n;
    memcpy(&n, s - 4, 4);
    *len = n;
  }
  return s;
}

const char *ctrace__string(const ctrace_reader *r, uint64_t id) { return ctrace__string_n(r, id, NULL); }

static pqueue *queue_for(ctrace_reader *r, int64_t p) {
  bool fresh;
  uint64_t *i = ctrace__map_put(&r->ps, (uint64_t)p, &fresh);
  if (!i) return NULL;
  if (fresh) {
    if (r->npq == r->cappq) {
      uint32_t cap = r->cappq ? r->cappq * 2 : 16;
      pqueue *q = realloc(r->pq, cap * sizeof *q);
      if (!q) return NULL;
      r->pq = q;
      r->cappq = cap;
    }
    memset(&r->pq[r->npq], 0, sizeof r->pq[0]);
    r->pq[r->npq].p = p;
    *i = r->npq++;
  }
  return &r->pq[*i];
}

static int add_batch(ctrace_reader *r, int64_t p, uint64_t start, int64_t ticks, int64_t seq) {
  if (r->nbatches == r->capbatches) {
    uint32_t cap = r->capbatches ? r->capbatches * 2 : 64;
    batch *b = realloc(r->batches, cap * sizeof *b);
    if (!b) return -1;
    r->batches = b;
    r->capbatches = cap;
  }
  pqueue *q = queue_for(r, p);
  if (!q) return -1;
  if (q->nbatches == q->cap) {
    uint32_t cap = q->cap ? q->cap * 2 : 8;
    uint32_t *b = realloc(q->batches, cap * sizeof *b);
    if (!b) return -1;
    q->batches = b;
    q->cap = cap;
  }
  q->batches[q->nbatches++] = r->nbatches;
  r->batches[r->nbatches++] = (batch){start, r->len, ticks, seq};
  return 0;
}

/* The values of a Stack record, decoded into frames later (its strings
 * may follow it in the file). */
typedef struct raw_frame {
  uint64_t pc, fn, file, line;
} raw_frame;

static int add_stack(ctrace_reader *r, uint64_t id, const uint64_t *v, uint64_t size) {
  bool fresh;
  uint64_t *slot = ctrace__map_put(&r->stack_ids, id, &fresh);
  if (!slot) return -1;
  if (fresh) {
    if (r->nstacks == r->capstacks) {
      size_t cap = r->capstacks ? r->capstacks * 2 : 64;
      stack_rec *s = realloc(r->stacks, cap * sizeof *s);
      if (!s) return -1;
      r->stacks = s;
      r->capstacks = cap;
    }
    *slot = r->nstacks;
    r->stacks[r->nstacks++] = (stack_rec){NULL, 0};
  }
  stack_rec *s = &r->stacks[*slot];
  free(s->frames);
  s->frames = malloc(size * sizeof *s->frames);
  if (!s->frames) return -1;
  s->n = (uint32_t)size;
  for (uint64_t i = 0; i < size; i++) {
    /* Names are ids here; resolved once all strings are known. */
    if (r->ver < 1007)
      s->frames[i] = (ctrace_frame){v[i], (const char *)0, (const char *)0, 0, 0, 0};
    else
      s->frames[i] = (ctrace_frame){v[4 * i], (const char *)(uintptr_t)v[4 * i + 1],
                                    (const char *)(uintptr_t)v[4 * i + 2], v[4 * i + 3], 0, 0};
  }
  return 0;
}

static int add_sample(ctrace_reader *r, const pev *e) {
  if (r->nsamples == r->capsamples) {
    uint64_t cap = r->capsamples ? r->capsamples * 2 : 64;
    pev *s = realloc(r->samples, cap * sizeof *s);
    if (!s) return -1;
    r->samples = s;
    r->capsamples = cap;
  }
  r->samples[r->nsamples++] = *e;
  return 0;
}

/* Reads the values of the event whose type byte is at *off: up to max of
 * them into v, all of them counted in *n. */
static int read_values(const ctrace_reader *r, uint64_t *off, uint8_t b, uint64_t *v, uint32_t max,
                       uint32_t *n, ctrace_parse_error *err) {
  uint64_t off0 = *off - 1;
  uint8_t typ = b & 0x3f;
  uint32_t narg = (b >> 6) + 1, inl = 4;
  if (r->ver < 1007) narg++, inl++;
  *n = 0;
  if (narg < inl) {
    for (uint32_t i = 0; i < narg; i++) {
      uint64_t x;
      if (read_val(r, off, &x, err)) return arg_err(typ, *off, err);
      if (*n < max) v[*n] = x;
      (*n)++;
    }
    return 0;
  }
  uint64_t len;
  if (read_val(r, off, &len, err)) return arg_err(typ, *off, err);
  uint64_t start = *off;
  while (len > *off - start) {
    uint64_t x;
    if (read_val(r, off, &x, err)) return arg_err(typ, *off, err);
    if (*n < max) v[*n] = x;
    (*n)++;
  }
  if (len != *off - start)
    return ctrace__perr(err, off0, "event has wrong length at offset 0x%llx: want %llu, got %llu",
                        (unsigned long long)off0, (unsigned long long)len,
                        (unsigned long long)(*off - start));
  return 0;
}

/* A UserLog's trailing string (Go's readStr). */
static int read_str(const ctrace_reader *r, uint64_t *off, const uint8_t **s, uint64_t *n,
                    ctrace_parse_error *err) {
  uint64_t sz;
  if (read_val(r, off, &sz, err)) return -1;
  *s = r->data + *off;
  *n = sz;
  if (sz == 0) return 0;
  if (sz > 1000000)
    return ctrace__perr(err, *off, "string at offset %llu is too large (len=%llu)",
                        (unsigned long long)*off, (unsigned long long)sz);
  if (sz > r->len - *off)
    return ctrace__perr(err, *off,
                        "failed to read trace at offset %llu: read %llu, want %llu, error %s",
                        (unsigned long long)*off, (unsigned long long)(r->len - *off),
                        (unsigned long long)sz, r->len == *off ? "EOF" : "unexpected EOF");
  *off += sz;
  return 0;
}

/* A varint the scan has already framed: no bounds to check. */
static inline uint64_t framed_val(const uint8_t *d, uint64_t *off) {
  uint64_t x = 0;
  uint8_t b;
  int shift = 0;
  do {
    b = d[(*off)++];
    x |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  return x;
}

/* Later passes decode only what the scan framed, so they trust it. */
uint8_t ctrace__decode(const ctrace_reader *r, uint64_t *off, uint64_t *v, uint32_t *n,
                       const uint8_t **str, uint64_t *slen) {
  const uint8_t *d = r->data;
  uint8_t b = d[(*off)++], typ = b & 0x3f;
  *str = NULL;
  *slen = 0;
  *n = 0;
  if (typ == CTRACE_EV_String) {
    framed_val(d, off);
    *off += framed_val(d, off);
    return typ;
  }
  uint32_t narg = (b >> 6) + 1, inl = 4;
  if (r->ver < 1007) narg++, inl++;
  if (narg < inl) {
    for (uint32_t i = 0; i < narg; i++) {
      uint64_t x = framed_val(d, off);
      if (i < CTRACE__MAX_ARGS) v[i] = x;
    }
    *n = narg;
  } else {
    uint64_t end = framed_val(d, off);
    end += *off;
    while (*off < end) {
      uint64_t x = framed_val(d, off);
      if (*n < CTRACE__MAX_ARGS) v[*n] = x;
      (*n)++;
    }
  }
  if (typ == CTRACE_EV_UserLog) {
    *slen = framed_val(d, off);
    *str = d + *off;
    *off += *slen;
  }
  return typ;
}

static void progress(ctrace_reader *r, uint64_t done) {
  if (r->progress && done >= r->progress_next) {
    r->progress(r->progress_arg, done / 2, r->len);
    r->progress_next = done + (16u << 20);
  }
}

int ctrace__header(ctrace_reader *r, ctrace_parse_error *err) { return parse_header(r, &r->ver, err); }

int ctrace__scan(ctrace_reader *r, ctrace_parse_error *err) {
  const int ver = r->ver;
  ctrace_parse_error sem = {0};
  bool have_sem = false;
#define SEMANTIC(off, ...)                                 \
  do {                                                     \
    if (!have_sem) ctrace__perr(&sem, off, __VA_ARGS__);   \
    have_sem = true;                                       \
  } while (0)
  /* Values of the largest record, an EvStack of 1000 frames, as Go allows;
   * longer ones are counted, not kept, and rejected. */
  enum { VMAX = 2 + 4 * 1000 };
  uint64_t *v = malloc(VMAX * sizeof *v);
  if (!v) return ctrace__perr(err, 0, "out of memory");
  int64_t last_p = 0, last_ts = 0;
  bool in_batch = false;
  uint64_t off = 16;
  int rc = -1;
  while (off < r->len) {
    progress(r, off);
    uint64_t off0 = off;
    uint8_t b = r->data[off++], typ = b & 0x3f;
    if (typ == CTRACE_EV_None || typ >= CTRACE_EV_COUNT ||
        ctrace_event_descs[typ].min_version > ver) {
      ctrace__perr(err, off0, "unknown event type %u at offset 0x%llx", typ,
                   (unsigned long long)off0);
      goto bad;
    }
    if (typ == CTRACE_EV_String) {
      uint64_t id, len;
      if (read_val(r, &off, &id, err)) goto bad;
      if (id == 0) {
        ctrace__perr(err, off0, "string at offset %llu has invalid id 0", (unsigned long long)off);
        goto bad;
      }
      if (ctrace__map_get(&r->strings, id)) {
        ctrace__perr(err, off0, "string at offset %llu has duplicate id %llu",
                     (unsigned long long)off, (unsigned long long)id);
        goto bad;
      }
      if (read_val(r, &off, &len, err)) goto bad;
      if (len == 0) {
        ctrace__perr(err, off0, "string at offset %llu has invalid length 0", (unsigned long long)off);
        goto bad;
      }
      if (len > 1000000) {
        ctrace__perr(err, off0, "string at offset %llu has too large length %llu",
                     (unsigned long long)off, (unsigned long long)len);
        goto bad;
      }
      if (len > r->len - off) {
        ctrace__perr(err, off, "failed to read trace at offset %llu: read %llu, want %llu, error %s",
                     (unsigned long long)off, (unsigned long long)(r->len - off),
                     (unsigned long long)len, r->len == off ? "EOF" : "unexpected EOF");
        goto bad;
      }
      uint64_t at;
      uint64_t *slot = ctrace__map_put(&r->strings, id, NULL);
      if (!slot || !arena_add(r, r->data + off, len, &at)) {
        ctrace__perr(err, off0, "out of memory");
        goto bad;
      }
      *slot = at + 1;
      off += len;
      continue;
    }
    uint32_t n;
    if (read_values(r, &off, b, v, VMAX, &n, err)) goto bad;
    if (typ == CTRACE_EV_UserLog) {
      const uint8_t *s;
      uint64_t sl;
      if (read_str(r, &off, &s, &sl, err)) goto bad;
    }
    if (have_sem) continue; /* only framing matters now */

    if (typ == CTRACE_EV_Stack) {
      if (n < 2) {
        SEMANTIC(off0, "EvStack has wrong number of arguments at offset 0x%llx: want at least 2, got %u",
                 (unsigned long long)off0, n);
        continue;
      }
      uint64_t size = v[1];
      if (size > 1000) {
        SEMANTIC(off0, "EvStack has bad number of frames at offset 0x%llx: %llu",
                 (unsigned long long)off0, (unsigned long long)size);
        continue;
      }
      uint64_t want = ver < 1007 ? 2 + size : 2 + 4 * size;
      if (n != want) {
        SEMANTIC(off0, "EvStack has wrong number of arguments at offset 0x%llx: want %llu, got %u",
                 (unsigned long long)off0, (unsigned long long)want, n);
        continue;
      }
      if (v[0] != 0 && size > 0 && add_stack(r, v[0], v + 2, size)) {
        ctrace__perr(err, off0, "out of memory");
        goto bad;
      }
      continue;
    }
    uint32_t want = ctrace__argnum(typ, ver);
    if (n != want) {
      SEMANTIC(off0, "%s has wrong number of arguments at offset 0x%llx: want %u, got %u",
               ctrace_event_descs[typ].name, (unsigned long long)off0, want, n);
      continue;
    }
    switch (typ) {
    case CTRACE_EV_Batch:
      last_p = (int64_t)v[0];
      last_ts = (int64_t)(ver < 1007 ? v[2] : v[1]);
      if (r->nbatches) r->batches[r->nbatches - 1].end = off0;
      if (add_batch(r, last_p, off, last_ts, ver < 1007 ? (int64_t)v[1] : 0)) {
        ctrace__perr(err, off0, "out of memory");
        goto bad;
      }
      in_batch = true;
      continue;
    case CTRACE_EV_Frequency:
      r->ticks_per_sec = (int64_t)v[0];
      if (r->ticks_per_sec <= 0) SEMANTIC(off0, "time stamps out of order");
      continue;
    case CTRACE_EV_TimerGoroutine:
      ctrace__map_put(&r->timer_gs, v[0], NULL);
      continue;
    }
    /* An event: it belongs to the batch it is in (P 0 from time 0 before
     * any batch, as in Go). */
    if (!in_batch) {
      if (add_batch(r, 0, off0, 0, 0)) {
        ctrace__perr(err, off0, "out of memory");
        goto bad;
      }
      in_batch = true;
    }
    uint32_t a = ver < 1007 ? 2 : 1; /* first named argument */
    /* Go 1.21 names 17 kinds (ctrace__stw_kind); an unknown one is "unknown". */
    if (typ == CTRACE_EV_GCSTWStart && ver >= 1010 && ver < 1021 && v[a] > 1)
      SEMANTIC(off0, "unknown STW kind %llu", (unsigned long long)v[a]);
    if (typ == CTRACE_EV_CPUSample) {
      /* Go keeps p and g among the arguments and zeroes ts there. */
      pev e = {.off = off0, .ts = (int64_t)v[a], .type = typ, .p = (int64_t)v[a + 1], .g = v[a + 2],
               .args = {0, v[a + 1], v[a + 2]}, .stk = v[a + 3]};
      if (add_sample(r, &e)) {
        ctrace__perr(err, off0, "out of memory");
        goto bad;
      }
      continue;
    }
    if (typ == CTRACE_EV_GoSysExit && v[a + 2] != 0) {
      uint64_t *c = ctrace__map_put(&r->exits_with_ts, v[a], NULL);
      if (c) ++*c;
    }
    if (typ == CTRACE_EV_FutileWakeup) r->nfutile++;
    r->pq[*ctrace__map_get(&r->ps, (uint64_t)last_p)].remaining++;
    r->nevents++;
      continue;
  bad:
    /* The message keeps the offsets Go names; the error points at the
     * record that is broken, or, for an endless varint, at the varint. */
    if (err && !strstr(err->message, "bad value at offset")) err->offset = off0;
    goto out;
  }
  if (r->nbatches) r->batches[r->nbatches - 1].end = r->len;
  if (have_sem) {
    *err = sem;
    goto out;
  }
  if (r->nevents == 0 && r->nsamples == 0) {
    /* Whole-trace errors point at the last byte: the trace ended without. */
    ctrace__perr(err, r->len - 1, "trace is empty");
    goto out;
  }
  if (r->ticks_per_sec == 0) {
    ctrace__perr(err, r->len - 1, "no EvFrequency event");
    goto out;
  }
  /* Frames' names, now that every string is known. */
  for (size_t i = 0; i < r->nstacks; i++)
    for (uint32_t j = 0; j < r->stacks[i].n; j++) {
      ctrace_frame *f = &r->stacks[i].frames[j];
      f->func = ctrace__string(r, (uint64_t)(uintptr_t)f->func);
      f->file = ctrace__string(r, (uint64_t)(uintptr_t)f->file);
    }
  rc = 0;
out:
  free(v);
  return rc;
#undef SEMANTIC
}
