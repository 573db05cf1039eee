/* test_set: the reader's count of distinct ids (u64set, src/parse/map.h),
 * which counts a trace's goroutines, Ps and threads, against a count by
 * sorting, and its membership (ctrace__set_has, which the profiles'
 * --goroutine filter asks) against a search of the ids added: ids dense from 1 as Go numbers goroutines, each added several
 * times and out of order; ids spread over all 64 bits (a chunk each);
 * and the ids at the ends, 0 and 2^64 - 2, and around a chunk's bounds.
 * A chunk whose 4096 ids all came gives its bits up: of the dense ids,
 * two chunks keep theirs. Exit status 0 if every count agrees. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "parse/map.h"

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static size_t distinct(uint64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp);
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || v[i] != v[i - 1]) d++;
  return d;
}

static uint64_t rng = 88172645463325252u;
static uint64_t next(void) { /* xorshift64 */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  return rng ^= rng << 17;
}

/* max_live: chunks that may still hold their bits once all are added. */
static int check(const char *what, uint64_t *v, size_t n, size_t max_live) {
  u64set s = {0};
  for (size_t i = 0; i < n; i++)
    if (!ctrace__set_add(&s, v[i])) {
      fprintf(stderr, "test_set: %s: out of memory\n", what);
      return 1;
    }
  size_t want = distinct(v, n), got = s.len;
  size_t chunks = s.nchunks, live = s.nchunks - s.freed.n;
  /* Membership: each id added is in; its neighbours are in only if added
   * too (v is sorted now). */
  for (size_t i = 0; i < n; i++)
    for (uint64_t d = 0; d < 3; d++) {
      uint64_t x = v[i] + d - 1;
      bool added = bsearch(&x, v, n, sizeof *v, cmp) != NULL;
      if (ctrace__set_has(&s, x) != added) {
        fprintf(stderr, "test_set: %s: id %llu %s, but the set says otherwise\n", what, (unsigned long long)x,
                added ? "added" : "not added");
        ctrace__set_free(&s);
        return 1;
      }
    }
  ctrace__set_free(&s);
  if (live > max_live) {
    fprintf(stderr, "test_set: %s: %zu chunks keep their bits, want %zu at most\n", what, live, max_live);
    return 1;
  }
  if (got != want) {
    fprintf(stderr, "test_set: %s: %zu distinct ids counted, %zu added\n", what, got, want);
    return 1;
  }
  printf("test_set: %s: %zu ids, %zu distinct, %zu chunks, %zu with their bits\n", what, n, want, chunks, live);
  return 0;
}

int main(void) {
  enum { N = 300000 };
  uint64_t *v = malloc(N * sizeof *v);
  if (!v) return 1;
  int bad = 0;
  /* Dense from 1, each three times, in an order mixed by the generator. */
  for (size_t i = 0; i < N; i++) v[i] = 1 + i / 3;
  for (size_t i = N - 1; i > 0; i--) {
    size_t j = next() % (i + 1);
    uint64_t t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
  /* Chunk 0 lacks id 0, and the last is partly used: the others filled
   * and gave their bits up. */
  bad |= check("dense", v, N, 2);
  /* Spread: every id in a chunk of its own (512 bytes), some added twice. */
  for (size_t i = 0; i < N / 5; i++) v[i] = i % 5 == 4 ? v[i - 1] : next();
  bad |= check("spread", v, N / 5, SIZE_MAX);
  /* The ends, and ids that share a chunk with them. */
  uint64_t ends[] = {0, 0, 1, 4095, 4096, 4097, UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX - 4095, 63, 64, 4096};
  bad |= check("ends", ends, sizeof ends / sizeof *ends, SIZE_MAX);
  free(v);
  return bad;
}
