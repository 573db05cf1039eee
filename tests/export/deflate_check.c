/* deflate_check: the Perfetto export's bundles (src/export/deflate.c)
 * inflate to exactly the packets given, in order, with the compressing
 * threads and without:
 *   - packets that compress, over many bundles (more than its ring's
 *     slots, so bundles are written while others are compressed);
 *   - packets that do not (random bytes): a run too big for one bundle is
 *     cut in two, and a write that no bundle holds is left as it is;
 *   - every bundle framed under 512 KiB, holding only compressed_packets;
 *   - nothing written at all for no packets;
 *   - a write that fails is said (EX_DEFLATE_WERR), not lost.
 * Its own inflater reads them as Perfetto's trace processor does. Run
 * under TSan too (label concurrent). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../lib/check.h"
#include "export/deflate.h"

typedef struct blob {
  unsigned char *b;
  size_t len, cap;
} blob;

static void put(blob *o, const void *d, size_t n) {
  if (!n) return;
  if (o->len + n > o->cap) {
    o->cap = (o->len + n) * 2;
    o->b = realloc(o->b, o->cap);
  }
  memcpy(o->b + o->len, d, n);
  o->len += n;
}

static size_t varint(const unsigned char *p, size_t n, uint64_t *v) {
  *v = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    *v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) return i + 1;
  }
  return 0;
}

/* A framed packet of n bytes (a Trace.packet field), random bytes or a
 * repeating text. */
static void packet(blob *o, size_t n, int random, uint64_t *rng) {
  unsigned char h[6] = {0x0a};
  size_t hn = 1;
  for (size_t v = n; ; v >>= 7) {
    h[hn++] = (unsigned char)(v > 0x7f ? (v & 0x7f) | 0x80 : v);
    if (v <= 0x7f) break;
  }
  put(o, h, hn);
  for (size_t i = 0; i < n; i++) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    unsigned char c = random ? (unsigned char)(*rng >> 56) : (unsigned char)("goroutine running"[i % 17]);
    put(o, &c, 1);
  }
}

/* Reads what deflate wrote as Perfetto does: each bundle inflated, plain
 * packets as they are. Counts bundles and plain packets. */
static blob inflate_all(const blob *f, int *bundles, int *plain) {
  blob o = {0};
  size_t at = 0;
  *bundles = *plain = 0;
  while (at < f->len) {
    uint64_t t, n, ft, zn;
    size_t k = varint(f->b + at, f->len - at, &t), k2;
    CHECK(k && t == 0x0a, "offset %zu: a Trace.packet", at);
    if (!k || t != 0x0a) break;
    k2 = varint(f->b + at + k, f->len - at - k, &n);
    size_t body = at + k + k2, end = body + n;
    CHECK(k2 && end <= f->len, "offset %zu: a packet's size", at);
    if (!k2 || end > f->len) break;
    size_t fk = varint(f->b + body, n, &ft);
    if (ft != (50 << 3 | 2)) {
      put(&o, f->b + at, end - at);
      (*plain)++;
      at = end;
      continue;
    }
    size_t zk = varint(f->b + body + fk, n - fk, &zn);
    CHECK(fk + zk + zn == n, "offset %zu: a bundle holds compressed_packets alone", at);
    CHECK(end - at < 512 << 10, "offset %zu: a bundle of %zu bytes framed", at, end - at);
    unsigned char *out = malloc(4 << 20);
    uLongf olen = 4 << 20;
    int rc = uncompress(out, &olen, f->b + body + fk + zk, (uLong)zn);
    CHECK(rc == Z_OK, "offset %zu: the bundle inflates (%d)", at, rc);
    if (rc == Z_OK) put(&o, out, olen);
    free(out);
    (*bundles)++;
    at = end;
  }
  return o;
}

/* Writes the packets of in through deflate on `threads` threads, cut into
 * writes of about `write` bytes at packet boundaries; what it wrote. */
static blob through(const blob *in, size_t write, unsigned threads, int *rc) {
  blob f = {0};
  char *mem = NULL;
  size_t memlen = 0;
  FILE *out = open_memstream(&mem, &memlen);
  ex_deflate *d = ctrace__ex_deflate_new(out, threads);
  size_t from = 0, at = 0;
  *rc = EX_DEFLATE_OK;
  while (at < in->len) {
    uint64_t n;
    size_t k = varint(in->b + at + 1, in->len - at - 1, &n);
    at += 1 + k + n;
    if (at - from >= write || at == in->len) {
      if (*rc == EX_DEFLATE_OK) *rc = ctrace__ex_deflate_write(d, in->b + from, at - from);
      from = at;
    }
  }
  uint64_t written = 0;
  int frc = ctrace__ex_deflate_finish(d, &written);
  if (*rc == EX_DEFLATE_OK) *rc = frc;
  ctrace__ex_deflate_free(d);
  fclose(out);
  CHECK(written == memlen, "written %llu, the file %zu", (unsigned long long)written, memlen);
  put(&f, mem, memlen);
  free(mem);
  return f;
}

static void round_trip(const char *what, const blob *in, size_t write, unsigned threads, int want_bundles,
                       int want_plain) {
  int rc, bundles, plain;
  blob f = through(in, write, threads, &rc);
  CHECK(rc == EX_DEFLATE_OK, "%s, %u threads: rc %d", what, threads, rc);
  blob back = inflate_all(&f, &bundles, &plain);
  CHECK(back.len == in->len && (!in->len || memcmp(back.b, in->b, in->len) == 0),
        "%s, %u threads: %zu bytes inflated for %zu given, or not the same", what, threads, back.len, in->len);
  if (want_bundles >= 0)
    CHECK(bundles == want_bundles, "%s, %u threads: %d bundles, not %d", what, threads, bundles, want_bundles);
  else
    CHECK(bundles >= -want_bundles, "%s, %u threads: %d bundles, fewer than %d", what, threads, bundles,
          -want_bundles);
  CHECK(plain == want_plain, "%s, %u threads: %d packets as they are, not %d", what, threads, plain, want_plain);
  free(f.b);
  free(back.b);
}

int main(void) {
  uint64_t rng = 1;
  for (unsigned threads = 0; threads <= 2; threads++) {
    /* Nothing: no bundle at all. */
    blob none = {0};
    round_trip("no packets", &none, 1 << 16, threads, 0, 0);

    /* 24 MB of packets of 100 to 5000 bytes that compress: more than 20
     * bundles of about 1 MB, through a ring of 4. */
    blob text = {0};
    for (size_t i = 0; text.len < (24u << 20); i++) packet(&text, 100 + (i * 7919) % 4900, 0, &rng);
    round_trip("compressible", &text, 1 << 16, threads, -20, 0);
    free(text.b);

    /* 2 MB of random packets in writes of 200 KB: a megabyte's bundle
     * does not fit in 512 KiB, so each is cut until its halves do. */
    blob noise = {0};
    while (noise.len < (2u << 20)) packet(&noise, 20000, 1, &rng);
    round_trip("random, cut in two", &noise, 200 << 10, threads, -4, 0);

    /* One random write of 600 KB: no bundle holds it; left as it is. */
    blob big = {0};
    packet(&big, 600 << 10, 1, &rng);
    round_trip("one random write too big", &big, 1 << 20, threads, 0, 1);
    free(noise.b);
    free(big.b);
  }

  /* A write error is said. */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    setvbuf(full, NULL, _IONBF, 0);
    blob text = {0};
    for (int i = 0; text.len < (3u << 20); i++) packet(&text, 1000, 0, &rng);
    ex_deflate *d = ctrace__ex_deflate_new(full, 2);
    int rc = ctrace__ex_deflate_write(d, text.b, text.len);
    uint64_t written = 0;
    int frc = ctrace__ex_deflate_finish(d, &written);
    CHECK(rc == EX_DEFLATE_WERR || frc == EX_DEFLATE_WERR, "a full disk: rc %d, finish %d", rc, frc);
    ctrace__ex_deflate_free(d);
    fclose(full);
    free(text.b);
  }
  if (!failures) printf("deflate_check: bundles inflate to the packets given, 0 to 2 threads\n");
  return failures != 0;
}
