/* pf_inflate: a Perfetto trace with its compressed_packets inflated, as
 * Perfetto's trace processor reads them (each TracePacket that holds field
 * 50 is replaced by the framed packets of its zlib stream), for the tests
 * to decode with protoc. Checks, as it goes, what Perfetto asks of a
 * bundle: that it holds nothing else, that framed it is under 512 KiB,
 * that it inflates whole to framed Trace.packet fields; and counts them.
 *
 *   pf_inflate [-s] < TRACE > PLAIN
 *   -s: print "bundles=N packets=N plain=N" (the packets left as they
 *       are) on stderr
 *
 * Exit status 0, or 1 with the byte offset of what is wrong. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static unsigned char *buf;
static size_t len;

static int bad(size_t off, const char *what) {
  fprintf(stderr, "pf_inflate: offset %zu: %s\n", off, what);
  return 1;
}

/* A varint at *p (before end): false if it runs past. */
static bool varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  *v = 0;
  for (int s = 0; *p < end && s < 64; s += 7) {
    unsigned char b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/* Skips the field of tag t at *p; false if it runs past. */
static bool skip(const unsigned char **p, const unsigned char *end, uint64_t t) {
  uint64_t v;
  switch (t & 7) {
  case 0: return varint(p, end, &v);
  case 1: if (end - *p < 8) return false; *p += 8; return true;
  case 5: if (end - *p < 4) return false; *p += 4; return true;
  case 2:
    if (!varint(p, end, &v) || v > (uint64_t)(end - *p)) return false;
    *p += v;
    return true;
  default: return false;
  }
}

/* The packets framed in d[0..n): each a Trace.packet field. */
static bool framed(const unsigned char *d, size_t n, size_t *count) {
  const unsigned char *p = d, *end = d + n;
  while (p < end) {
    uint64_t t;
    if (!varint(&p, end, &t) || t != (1 << 3 | 2) || !skip(&p, end, t)) return false;
    (*count)++;
  }
  return true;
}

int main(int argc, char **argv) {
  bool stats = argc == 2 && strcmp(argv[1], "-s") == 0;
  if (argc > 2 || (argc == 2 && !stats)) {
    fprintf(stderr, "usage: pf_inflate [-s] < TRACE > PLAIN\n");
    return 2;
  }
  size_t cap = 1 << 20, got;
  buf = malloc(cap);
  while (buf && (got = fread(buf + len, 1, cap - len, stdin)) > 0)
    if ((len += got) == cap) buf = realloc(buf, cap *= 2);
  if (!buf) return bad(0, "out of memory");
  size_t bundles = 0, packets = 0, plain = 0, outcap = 8 << 20;
  unsigned char *out = malloc(outcap);
  const unsigned char *p = buf, *end = buf + len;
  while (p < end) {
    const unsigned char *start = p, *body;
    uint64_t t, n;
    if (!varint(&p, end, &t) || t != (1 << 3 | 2) || !varint(&p, end, &n) || n > (uint64_t)(end - p))
      return bad((size_t)(start - buf), "not a framed Trace.packet");
    body = p;
    p += n;
    /* Its fields: a bundle is field 50 and nothing else. */
    const unsigned char *q = body, *zb = NULL;
    uint64_t zn = 0;
    size_t fields = 0;
    while (q < p) {
      uint64_t ft;
      if (!varint(&q, p, &ft)) return bad((size_t)(q - buf), "a bad field tag");
      fields++;
      if (ft == (50 << 3 | 2)) {
        if (!varint(&q, p, &zn) || zn > (uint64_t)(p - q)) return bad((size_t)(q - buf), "a bad bundle size");
        zb = q;
        q += zn;
      } else if (!skip(&q, p, ft)) {
        return bad((size_t)(q - buf), "a field past its packet");
      }
    }
    if (!zb) {
      fwrite(start, 1, (size_t)(p - start), stdout);
      plain++;
      continue;
    }
    if (fields != 1) return bad((size_t)(start - buf), "a bundle with other fields");
    if (p - start >= 512 << 10) return bad((size_t)(start - buf), "a bundle of 512 KiB or more");
    z_stream z = {0};
    if (inflateInit2(&z, 32 + MAX_WBITS) != Z_OK) return bad((size_t)(start - buf), "inflateInit2");
    z.next_in = (unsigned char *)zb;
    z.avail_in = (uInt)zn;
    size_t olen = 0;
    int rc;
    do {
      if (olen == outcap && !(out = realloc(out, outcap *= 2))) return bad(0, "out of memory");
      z.next_out = out + olen;
      z.avail_out = (uInt)(outcap - olen);
      rc = inflate(&z, Z_NO_FLUSH);
      olen = outcap - z.avail_out;
    } while (rc == Z_OK);
    inflateEnd(&z);
    if (rc != Z_STREAM_END || z.avail_in) return bad((size_t)(zb - buf), "a bundle that does not inflate whole");
    size_t k = 0;
    if (!framed(out, olen, &k) || !k) return bad((size_t)(zb - buf), "a bundle not of framed packets");
    fwrite(out, 1, olen, stdout);
    bundles++;
    packets += k;
  }
  if (stats) fprintf(stderr, "bundles=%zu packets=%zu plain=%zu\n", bundles, packets, plain);
  free(out);
  free(buf);
  return fflush(stdout) ? 1 : 0;
}
