/* Profile tables and their encoding as gzip-compressed profile.proto.
 *
 * Field numbers are those of pprof's proto/profile.proto (github.com/
 * google/pprof). The encoder is ours, a few dozen lines: a profile is only
 * varints, packed varints and length-delimited submessages, and a protobuf
 * library would bring a code generator and a runtime for that. zlib writes
 * the gzip framing (deflateInit2 with 16 added to windowBits). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pb.h"
#include "profile.h"

/* ---- growable arrays -------------------------------------------------------- */

static bool reserve(void **a, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need) n *= 2;
  void *b = realloc(*a, n * elem);
  if (!b) return false;
  *a = b;
  *cap = n;
  return true;
}
#define RESERVE(p, arr, cap, need) reserve((void **)&(p)->arr, &(p)->cap, (need), sizeof *(p)->arr)

/* ---- tables -------------------------------------------------------------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static bool rehash(ctrace_profile *p, size_t cap) {
  uint32_t *t = calloc(cap, sizeof *t);
  if (!t) return false;
  for (size_t i = 0; i < p->nstrs; i++) {
    size_t j = hash_str(p->strs[i]) & (cap - 1);
    while (t[j]) j = (j + 1) & (cap - 1);
    t[j] = (uint32_t)i + 1;
  }
  free(p->strhash);
  p->strhash = t;
  p->caphash = cap;
  return true;
}

uint64_t ctrace__prof_string(ctrace_profile *p, const char *s) {
  if (!s) s = "";
  if ((p->nstrs + 1) * 2 > p->caphash && !rehash(p, p->caphash ? p->caphash * 2 : 256)) goto oom;
  size_t j = hash_str(s) & (p->caphash - 1);
  for (; p->strhash[j]; j = (j + 1) & (p->caphash - 1))
    if (strcmp(p->strs[p->strhash[j] - 1], s) == 0) return p->strhash[j] - 1;
  if (!RESERVE(p, strs, capstrs, p->nstrs + 1)) goto oom;
  char *c = strdup(s);
  if (!c) goto oom;
  p->strs[p->nstrs] = c;
  p->strhash[j] = (uint32_t)++p->nstrs;
  return p->nstrs - 1;
oom:
  p->oom = true;
  return 0;
}

ctrace_profile *ctrace__prof_new(const char *t0, const char *u0, const char *t1, const char *u1) {
  ctrace_profile *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  ctrace__prof_string(p, "");
  p->sample_type[0][0] = ctrace__prof_string(p, t0);
  p->sample_type[0][1] = ctrace__prof_string(p, u0);
  p->sample_type[1][0] = ctrace__prof_string(p, t1);
  p->sample_type[1][1] = ctrace__prof_string(p, u1);
  /* What Go's buildProfile declares. */
  p->period_type[0] = ctrace__prof_string(p, "trace");
  p->period_type[1] = ctrace__prof_string(p, "count");
  p->period = 1;
  if (p->oom) {
    ctrace_profile_free(p);
    return NULL;
  }
  return p;
}

static uint64_t func_id(ctrace_profile *p, uint64_t name, uint64_t file) {
  bool fresh;
  uint64_t *id = ctrace__map_put(&p->func_ids, name << 32 | file, &fresh);
  if (!id) goto oom;
  if (!fresh) return *id;
  if (!RESERVE(p, funcs, capfuncs, p->nfuncs + 1)) {
    ctrace__map_del(&p->func_ids, name << 32 | file);
    goto oom;
  }
  p->funcs[p->nfuncs++] = (prof_func){name, file};
  return *id = p->nfuncs;
oom:
  p->oom = true;
  return 0;
}

static uint64_t new_loc(ctrace_profile *p, u64map *m, uint64_t key, uint64_t addr, uint64_t fn,
                        uint64_t line) {
  if (!fn) return 0;
  bool fresh;
  uint64_t *id = ctrace__map_put(m, key, &fresh);
  if (!id) goto oom;
  if (!fresh) return *id;
  if (!RESERVE(p, locs, caplocs, p->nlocs + 1)) {
    ctrace__map_del(m, key);
    goto oom;
  }
  p->locs[p->nlocs++] = (prof_loc){addr, fn, line};
  return *id = p->nlocs;
oom:
  p->oom = true;
  return 0;
}

uint64_t ctrace__prof_frame(ctrace_profile *p, uint64_t pc, const char *func, const char *file,
                            uint64_t line) {
  uint64_t *id = ctrace__map_get(&p->loc_ids, pc);
  if (id) return *id;
  uint64_t fn = func_id(p, ctrace__prof_string(p, func), ctrace__prof_string(p, file));
  return new_loc(p, &p->loc_ids, pc, pc, fn, line);
}

bool ctrace__prof_frames(ctrace_profile *p, const ctrace_frame *fr, size_t n, size_t at, uint64_t **locs,
                         size_t *cap) {
  if (at + n > *cap || *cap == 0) {
    size_t room = at + n ? at + n : 1;
    uint64_t *m = realloc(*locs, room * sizeof *m);
    if (!m) return false;
    *locs = m;
    *cap = room;
  }
  for (size_t i = 0; i < n; i++)
    (*locs)[at + i] = ctrace__prof_frame(p, fr[i].pc, fr[i].func, fr[i].file, fr[i].line);
  return true;
}

uint64_t ctrace__prof_synthetic(ctrace_profile *p, const char *name) {
  uint64_t s = ctrace__prof_string(p, name);
  uint64_t *id = ctrace__map_get(&p->synth_ids, s);
  if (id) return *id;
  return new_loc(p, &p->synth_ids, s, 0, func_id(p, s, 0), 0);
}

prof_sample *ctrace__prof_sample_run(ctrace_profile *p, uint64_t key, size_t run, size_t n) {
  bool fresh;
  prof_sample *s = ctrace__map_slot(&p->sample_ids, &p->free_samples, key, &p->samples, &p->nsamples,
                                    &p->capsamples, sizeof *p->samples, &fresh);
  if (!s) {
    p->oom = true;
    return NULL;
  }
  if (fresh) *s = (prof_sample){.locs = run, .nlocs = n, .key = key, .live = true};
  return s;
}

prof_sample *ctrace__prof_sample(ctrace_profile *p, uint64_t key, const uint64_t *locs, size_t n) {
  const uint64_t *ix = ctrace__map_get(&p->sample_ids, key);
  if (ix) return &p->samples[*ix - 1];
  if (!RESERVE(p, locpool, cappool, p->npool + n)) {
    p->oom = true;
    return NULL;
  }
  prof_sample *s = ctrace__prof_sample_run(p, key, p->npool, n);
  if (s) {
    if (n) memcpy(p->locpool + p->npool, locs, n * sizeof *locs);
    p->npool += n;
  }
  return s;
}

bool ctrace__prof_relocate(ctrace_profile *p, prof_sample *s, const uint64_t *locs, size_t n) {
  size_t at = (size_t)(s - p->samples);
  if (!RESERVE(p, locpool, cappool, p->npool + n)) {
    p->oom = true;
    return false;
  }
  s = &p->samples[at];
  if (n) memcpy(p->locpool + p->npool, locs, n * sizeof *locs);
  s->locs = p->npool;
  s->nlocs = n;
  p->npool += n;
  return true;
}

size_t ctrace_profile_samples(const ctrace_profile *p) { return p->nsamples - p->free_samples.n; }

void ctrace_profile_free(ctrace_profile *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nstrs; i++) free(p->strs[i]);
  free(p->strs);
  free(p->strhash);
  free(p->funcs);
  free(p->locs);
  free(p->locpool);
  free(p->samples);
  ctrace__map_free(&p->func_ids);
  ctrace__map_free(&p->loc_ids);
  ctrace__map_free(&p->synth_ids);
  ctrace__map_free(&p->sample_ids);
  ctrace__free_free(&p->free_samples);
  if (p->z) deflateEnd(p->z);
  free(p->z);
  free(p->pending.b);
  free(p->scratch.sub.b);
  free(p->scratch.sub2.b);
  free(p->scratch.packed.b);
  free(p);
}

/* ---- protobuf ------------------------------------------------------------------ */

/* zlib's level 3, not its default 6 (Go's): -t wall of a trace of 0.9
 * million goroutines is 11.8 MB at 3 against 11.0 MB at 6, and takes 1.0 s
 * against 1.9 s, most of that deflate's (level 1: 13.2 MB, 0.96 s). */
enum { GZIP_LEVEL = 3 };

/* profile.proto field numbers. */
enum {
  PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5,
  PROFILE_STRING_TABLE = 6, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11,
  PROFILE_PERIOD = 12, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
  VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
  SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
  LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
  LOCATION_ID = 1, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
  LINE_FUNCTION_ID = 1, LINE_LINE = 2,
  FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

static void encode_types(const ctrace_profile *p, pbuf *w, prof_scratch *x) {
  for (int i = 0; i < 2; i++) {
    pb_uint_nz(&x->sub, VALUETYPE_TYPE, p->sample_type[i][0]);
    pb_uint_nz(&x->sub, VALUETYPE_UNIT, p->sample_type[i][1]);
    pb_msg(w, PROFILE_SAMPLE_TYPE, &x->sub);
  }
}

static void encode_sample(const ctrace_profile *p, const prof_sample *s, pbuf *w, prof_scratch *x) {
  for (size_t j = 0; j < s->nlocs; j++) pb_varint(&x->packed, p->locpool[s->locs + j]);
  if (x->packed.len) pb_msg(&x->sub, SAMPLE_LOCATION_ID, &x->packed);
  for (int j = 0; j < 2; j++) pb_varint(&x->packed, (uint64_t)s->value[j]);
  pb_msg(&x->sub, SAMPLE_VALUE, &x->packed);
  for (int j = 0; j < 2; j++) {
    if (!s->label_key[j]) continue;
    pb_uint_nz(&x->sub2, LABEL_KEY, s->label_key[j]);
    pb_uint_nz(&x->sub2, LABEL_STR, s->label_str[j]);
    pb_msg(&x->sub, SAMPLE_LABEL, &x->sub2);
  }
  if (s->num_key) {
    pb_uint_nz(&x->sub2, LABEL_KEY, s->num_key);
    pb_uint(&x->sub2, LABEL_NUM, (uint64_t)s->num); /* 0 is a value here */
    pb_msg(&x->sub, SAMPLE_LABEL, &x->sub2);
  }
  pb_msg(w, PROFILE_SAMPLE, &x->sub);
}

/* The profile, but its sample types when a stream has them already. */
static void encode(const ctrace_profile *p, pbuf *w, bool types) {
  prof_scratch x = {0};
  pbuf *sub = &x.sub, *sub2 = &x.sub2;
  if (types) encode_types(p, w, &x);
  for (size_t i = 0; i < p->nsamples; i++)
    if (p->samples[i].live) encode_sample(p, &p->samples[i], w, &x);
  for (size_t i = 0; i < p->nlocs; i++) {
    const prof_loc *l = &p->locs[i];
    pb_uint_nz(sub, LOCATION_ID, i + 1);
    pb_uint_nz(sub, LOCATION_ADDRESS, l->addr);
    pb_uint_nz(sub2, LINE_FUNCTION_ID, l->func);
    pb_uint_nz(sub2, LINE_LINE, l->line);
    pb_msg(sub, LOCATION_LINE, sub2);
    pb_msg(w, PROFILE_LOCATION, sub);
  }
  for (size_t i = 0; i < p->nfuncs; i++) {
    const prof_func *f = &p->funcs[i];
    pb_uint_nz(sub, FUNCTION_ID, i + 1);
    pb_uint_nz(sub, FUNCTION_NAME, f->name);
    pb_uint_nz(sub, FUNCTION_SYSTEM_NAME, f->name);
    pb_uint_nz(sub, FUNCTION_FILENAME, f->file);
    pb_msg(w, PROFILE_FUNCTION, sub);
  }
  for (size_t i = 0; i < p->nstrs; i++) pb_bytes(w, PROFILE_STRING_TABLE, p->strs[i], strlen(p->strs[i]));
  pb_uint_nz(w, PROFILE_DURATION_NANOS, (uint64_t)p->duration_ns);
  pb_uint_nz(sub, VALUETYPE_TYPE, p->period_type[0]);
  pb_uint_nz(sub, VALUETYPE_UNIT, p->period_type[1]);
  pb_msg(w, PROFILE_PERIOD_TYPE, sub);
  pb_uint_nz(w, PROFILE_PERIOD, (uint64_t)p->period);
  pb_uint_nz(w, PROFILE_DEFAULT_SAMPLE_TYPE, p->default_type);
  if (x.sub.oom || x.sub2.oom || x.packed.oom) w->oom = true;
  free(x.sub.b);
  free(x.sub2.b);
  free(x.packed.b);
}

/* ---- gzip ------------------------------------------------------------------- */

static bool gzip_init(z_stream *z) {
  memset(z, 0, sizeof *z);
  return deflateInit2(z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

/* in's n bytes through z to out (Z_FINISH: and the stream's end); *ioerr
 * keeps the errno of the first write that failed. */
static void gzip_write(z_stream *z, const unsigned char *in, size_t n, int flush, FILE *out, int *ioerr) {
  unsigned char buf[64 << 10];
  z->next_in = n ? (unsigned char *)in : (unsigned char *)"";
  z->avail_in = (uInt)n;
  int rc;
  do {
    z->next_out = buf;
    z->avail_out = sizeof buf;
    rc = deflate(z, flush);
    size_t k = sizeof buf - z->avail_out;
    if (k && fwrite(buf, 1, k, out) != k && !*ioerr) *ioerr = errno ? errno : EIO;
  } while (z->avail_out == 0 || (flush == Z_FINISH && rc == Z_OK));
}

int ctrace_profile_encode(const ctrace_profile *p, unsigned char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  if (p->oom) return CTRACE_ENOMEM;
  pbuf raw = {0};
  encode(p, &raw, true);
  z_stream z;
  char *mem = NULL;
  size_t size = 0;
  FILE *out = raw.oom ? NULL : open_memstream(&mem, &size);
  int rc = CTRACE_ENOMEM;
  if (out && gzip_init(&z)) {
    int ioerr = 0;
    gzip_write(&z, raw.b, raw.len, Z_FINISH, out, &ioerr);
    deflateEnd(&z);
    if (!ioerr) rc = 0;
  }
  /* The stream's buffer is final once it is closed. */
  if (out && fclose(out) != 0) rc = CTRACE_ENOMEM;
  free(raw.b);
  if (rc) {
    free(mem);
    return rc;
  }
  *data = (unsigned char *)mem;
  *len = size;
  return 0;
}

/* ---- written as built ------------------------------------------------------- */

/* What was encoded goes through deflate to out once there is this much. */
enum { PENDING_MAX = 256 << 10 };

static void deflate_out(ctrace_profile *p, int flush) {
  gzip_write(p->z, p->pending.b, p->pending.len, flush, p->out, &p->ioerr);
  p->pending.len = 0;
}

bool ctrace__prof_stream(ctrace_profile *p, FILE *out) {
  if (!(p->z = calloc(1, sizeof *p->z))) return false;
  if (!gzip_init(p->z)) {
    free(p->z);
    p->z = NULL;
    return false;
  }
  p->out = out;
  prof_scratch x = {0};
  encode_types(p, &p->pending, &x);
  free(x.sub.b);
  return !x.sub.oom && !p->pending.oom;
}

void ctrace__prof_retire(ctrace_profile *p, size_t ix) {
  prof_sample *s = &p->samples[ix];
  if (p->z) {
    prof_scratch *x = &p->scratch;
    encode_sample(p, s, &p->pending, x);
    if (x->sub.oom || x->sub2.oom || x->packed.oom || p->pending.oom) p->oom = true;
    if (p->pending.len >= PENDING_MAX) deflate_out(p, Z_NO_FLUSH);
  }
  ctrace__map_slot_drop(&p->sample_ids, NULL, &p->free_samples, s->key, p->samples, sizeof *p->samples);
}

int ctrace__prof_finish(ctrace_profile *p) {
  if (p->oom) return CTRACE_ENOMEM;
  encode(p, &p->pending, false);
  if (p->pending.oom) return CTRACE_ENOMEM;
  deflate_out(p, Z_FINISH);
  if (fflush(p->out) != 0 && !p->ioerr) p->ioerr = errno ? errno : EIO;
  return p->ioerr ? CTRACE_EIO : 0;
}
