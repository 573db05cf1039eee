/* test_salvage: ctrace_reader_salvage on a Go 1.22+ trace cut at many
 * bytes, against what the rule keeps as worked out here from Go's own
 * framing of the batches (tests/parse/salvage.sh runs it and holds what
 * it reports to Go 1.23's reader).
 *
 * Usage: test_salvage TRACE BATCHES ACCEPTED TABLE [RANDOM|all [SEED]]
 *
 *   TRACE     a valid Go 1.22+ trace
 *   BATCHES   its batches as the oracle's -batches prints them (Go 1.23's
 *             readBatch): "OFFSET END GEN M" lines, then "end SIZE"
 *   ACCEPTED  the batch boundaries (one offset a line) whose prefix Go 1.23
 *             reads as it is
 *   TABLE     written: one line per cut, "CUT RC KEEP N WHOLE TORN_AT",
 *             what the rule expects (and the library gave); TORN_AT is
 *             where the torn batch begins, -1 if none is
 *   RANDOM    random cuts besides the fixed ones (default 2000), drawn with
 *             SEED (default 1) by xorshift64, the same on every machine;
 *             "all": every byte of the trace instead
 *
 * The cuts: every byte of the header and its first 16 past it, every batch
 * boundary and the 3 bytes on each side, the whole trace, and RANDOM more
 * (or every byte).
 * Each cut is a fresh allocation of exactly its size, so that ASan sees a
 * read past the cut. Per cut, the rule: on a batch boundary whose prefix
 * Go reads, the whole prefix; else every generation followed by a batch of
 * the next (or, inside a torn batch, by a header that has its generation
 * number), none if none is. Checked: the result (0, or -1 with an offset
 * and a terminated message), keep, whole, the generations kept, where the
 * batches end and whether torn, and, once per distinct kept prefix, that
 * ctrace_reader_check of that prefix gives the summary the salvage gave.
 * Prints "KEEP N WHOLE" for each distinct kept prefix, and a count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace/parse.h"

static int failures;

#define EXPECT_EQ(cut, what, got, want)                                                                  \
  do {                                                                                                   \
    unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want);                   \
    if (g_ != w_) {                                                                                      \
      fprintf(stderr, "test_salvage: cut %llu: %s is %llu, expected %llu\n", (unsigned long long)(cut), \
              what, g_, w_);                                                                             \
      failures++;                                                                                        \
    }                                                                                                    \
  } while (0)

typedef struct batch {
  uint64_t off, end, gen;
} batch;

static batch *b;
static size_t nb;
static uint64_t *gstart; /* each generation's first batch, then the size */
static size_t ng;
static uint8_t *accepted; /* by offset: Go reads that prefix */
static uint8_t *data;
static uint64_t size;

static void *xalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "test_salvage: out of memory\n");
    exit(2);
  }
  return p;
}

static unsigned uvlen(uint64_t v) {
  unsigned n = 1;
  while (v >= 128) v >>= 7, n++;
  return n;
}

/* What the rule keeps of data[0, c): *n generations, *keep bytes, *whole;
 * *torn_at is the offset of the torn batch, or UINT64_MAX. */
static void expect(uint64_t c, uint64_t *n, uint64_t *keep, int *whole, uint64_t *torn_at) {
  *n = *keep = 0;
  *whole = 0;
  *torn_at = UINT64_MAX;
  if (c < 16) return;
  size_t w = 0; /* batches whole before c */
  while (w < nb && b[w].end <= c) w++;
  uint64_t k = 0; /* generations among them */
  for (size_t i = 0; i < w; i++)
    if (i == 0 || b[i].gen != b[i - 1].gen) k++;
  int aligned = c == size || (w < nb && b[w].off == c) || (w == 0 && c == 16);
  if (aligned && accepted[c]) {
    *whole = 1;
    *n = k;
    *keep = c;
    return;
  }
  int next = 0;
  if (!aligned && w < nb) {
    *torn_at = b[w].off;
    uint64_t goff = b[w].off + 1 + (data[b[w].off] == 49); /* EvExperimentalBatch has a byte more */
    if (k > 0 && c >= goff + uvlen(b[w].gen) && b[w].gen == b[w - 1].gen + 1) next = 1;
  }
  if (k == 0) return;
  *n = k - 1 + (uint64_t)next;
  *keep = *n ? gstart[*n] : 0;
}

typedef struct kept {
  uint64_t keep, n;
  int whole;
  ctrace_trace_info info;
} kept;

static kept *seen;
static size_t nseen;

static void one(uint64_t c, FILE *table) {
  uint64_t n, keep, torn_at;
  int whole;
  expect(c, &n, &keep, &whole, &torn_at);
  uint8_t *p = xalloc(c);
  memcpy(p, data, c);
  ctrace_reader *r = NULL;
  ctrace_parse_error err;
  ctrace_salvage_info s;
  memset(&err, 0xAA, sizeof err);
  int rc = ctrace_reader_open_mem(p, c, &r, &err);
  if (rc == 0) rc = ctrace_reader_salvage(r, &s, &err);
  fprintf(table, "%llu %d %llu %llu %d %lld\n", (unsigned long long)c, n ? 0 : 1, (unsigned long long)keep,
          (unsigned long long)n, whole, torn_at == UINT64_MAX ? -1LL : (long long)torn_at);
  if (n == 0) {
    EXPECT_EQ(c, "the result", rc, CTRACE_EFORMAT);
    if (rc != 0 && !memchr(err.message, 0, sizeof err.message)) {
      fprintf(stderr, "test_salvage: cut %llu: message not terminated\n", (unsigned long long)c);
      failures++;
    }
    if (rc != 0 && err.offset > c) {
      fprintf(stderr, "test_salvage: cut %llu: error offset %llu past the cut\n", (unsigned long long)c,
              (unsigned long long)err.offset);
      failures++;
    }
  } else {
    EXPECT_EQ(c, "the result", rc, 0);
    if (rc != 0) fprintf(stderr, "test_salvage: cut %llu: offset %llu: %s\n", (unsigned long long)c,
                         (unsigned long long)err.offset, err.message);
  }
  if (rc == 0) {
    EXPECT_EQ(c, "keep", s.keep, keep);
    EXPECT_EQ(c, "whole", s.whole, whole);
    EXPECT_EQ(c, "generations", s.generations, n);
    EXPECT_EQ(c, "info.generations", s.info.generations, n);
    EXPECT_EQ(c, "info.bytes", s.info.bytes, keep);
    if (torn_at != UINT64_MAX) {
      EXPECT_EQ(c, "torn", s.torn, 1);
      EXPECT_EQ(c, "cut.offset", s.cut.offset, torn_at);
    } else if (c == size || whole) {
      EXPECT_EQ(c, "cut.offset", s.cut.offset, c);
    }
    size_t i = 0;
    while (i < nseen && seen[i].keep != s.keep) i++;
    if (i == nseen) {
      /* Once per prefix: the check of it is the summary salvage gave. */
      seen = realloc(seen, (nseen + 1) * sizeof *seen);
      if (!seen) exit(2);
      seen[nseen] = (kept){s.keep, s.generations, s.whole, s.info};
      nseen++;
      ctrace_reader *q = NULL;
      ctrace_trace_info in;
      if (ctrace_reader_open_mem(p, s.keep, &q, &err) != 0 || ctrace_reader_check(q, &in, &err) != 0) {
        fprintf(stderr, "test_salvage: cut %llu: the kept %llu bytes do not check: offset %llu: %s\n",
                (unsigned long long)c, (unsigned long long)s.keep, (unsigned long long)err.offset, err.message);
        failures++;
      } else {
        EXPECT_EQ(c, "the kept prefix's events", s.info.events, in.events);
        EXPECT_EQ(c, "the kept prefix's generations", s.info.generations, in.generations);
        EXPECT_EQ(c, "the kept prefix's goroutines", s.info.goroutines, in.goroutines);
        EXPECT_EQ(c, "the kept prefix's Ps", s.info.procs, in.procs);
        EXPECT_EQ(c, "the kept prefix's threads", s.info.threads, in.threads);
        EXPECT_EQ(c, "the kept prefix's frequency", s.info.frequency, in.frequency);
        EXPECT_EQ(c, "the kept prefix's duration", s.info.duration_ns, in.duration_ns);
        EXPECT_EQ(c, "the kept prefix's version", s.info.version, in.version);
      }
      ctrace_reader_close(q);
    } else {
      EXPECT_EQ(c, "events (as for an earlier cut that kept as much)", s.info.events, seen[i].info.events);
    }
  }
  ctrace_reader_close(r);
  free(p);
}

static uint8_t *slurp(const char *path, uint64_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *d = xalloc(cap);
  size_t k;
  while ((k = fread(d + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      d = realloc(d, cap *= 2);
      if (!d) exit(2);
    }
  }
  fclose(f);
  *len = n;
  return d;
}

int main(int argc, char **argv) {
  if (argc < 5 || argc > 7) {
    fprintf(stderr, "usage: test_salvage TRACE BATCHES ACCEPTED TABLE [RANDOM|all [SEED]]\n");
    return 2;
  }
  data = slurp(argv[1], &size);
  int all = argc > 5 && strcmp(argv[5], "all") == 0;
  unsigned long nrand = argc > 5 && !all ? strtoul(argv[5], NULL, 10) : 2000;
  uint64_t x = argc > 6 ? strtoull(argv[6], NULL, 10) : 1;
  if (!x) x = 1;

  FILE *f = fopen(argv[2], "r");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  b = xalloc(sizeof *b * (size / 8 + 1));
  gstart = xalloc(sizeof *gstart * (size / 8 + 2));
  char line[256];
  int ended = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long o, e, g, m, end;
    if (sscanf(line, "end %llu", &end) == 1) {
      if (end != size || strchr(line, ' ') != strrchr(line, ' ')) {
        fprintf(stderr, "test_salvage: Go's batches end at %s", line);
        return 2;
      }
      ended = 1;
      break;
    }
    if (sscanf(line, "%llu %llu %llu %llu", &o, &e, &g, &m) != 4) {
      fprintf(stderr, "test_salvage: bad line in %s: %s", argv[2], line);
      return 2;
    }
    if (nb == 0 || g != b[nb - 1].gen) gstart[ng++] = o;
    b[nb++] = (batch){o, e, g};
  }
  fclose(f);
  if (!ended || nb == 0) {
    fprintf(stderr, "test_salvage: %s does not end with \"end %llu\"\n", argv[2], (unsigned long long)size);
    return 2;
  }
  gstart[ng] = size;

  accepted = calloc(size + 1, 1);
  if (!accepted || !(f = fopen(argv[3], "r"))) {
    perror(argv[3]);
    return 2;
  }
  while (fgets(line, sizeof line, f)) {
    unsigned long long o = strtoull(line, NULL, 10);
    if (o <= size) accepted[o] = 1;
  }
  fclose(f);

  FILE *table = fopen(argv[4], "w");
  if (!table) {
    perror(argv[4]);
    return 2;
  }
  uint8_t *done = calloc(size + 1, 1);
  if (!done) return 2;
  uint64_t ncuts = 0;
#define CUT(c)                                                 \
  do {                                                         \
    uint64_t c_ = (c);                                         \
    if (c_ <= size && !done[c_]) done[c_] = 1, ncuts++, one(c_, table); \
  } while (0)
  for (uint64_t c = 0; c <= 32; c++) CUT(c);
  for (size_t i = 0; i < nb; i++)
    for (int d = -3; d <= 3; d++)
      if ((int64_t)b[i].off + d >= 0) CUT(b[i].off + (uint64_t)(int64_t)d);
  for (int d = -3; d <= 0; d++) CUT(size + (uint64_t)(int64_t)d);
  if (all)
    for (uint64_t c = 0; c <= size; c++) CUT(c);
  for (unsigned long i = 0; i < nrand && !all; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    CUT(16 + x % (size - 16));
  }
  fclose(table);
  for (size_t i = 0; i < nseen; i++)
    printf("%llu %llu %d\n", (unsigned long long)seen[i].keep, (unsigned long long)seen[i].n, seen[i].whole);
  fprintf(stderr,
          "test_salvage: %s: %llu cuts, %zu batches, %zu generations, %zu distinct prefixes kept, %d failure(s)\n",
          argv[1], (unsigned long long)ncuts, nb, ng, nseen, failures);
  free(done);
  free(accepted);
  free(seen);
  free(gstart);
  free(b);
  free(data);
  return failures ? 1 : 0;
}
