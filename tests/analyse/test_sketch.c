/* The quantile sketch of ctrace stats (src/analyse/sketch.h): every
 * nearest-rank quantile within the stated bound (1%, then rounding to the
 * nanosecond) on several distributions, max exact, small values exact,
 * merging the same as adding, and memory that does not grow with the
 * number of values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyse/sketch.h"
#include "lib/check.h"

static uint64_t rng = 88172645463325252u;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static const double qs[] = {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0};

/* Every quantile of s against the sorted values d[0..n). */
static void within(const char *what, const an_sketch *s, int64_t *d, size_t n) {
  qsort(d, n, sizeof *d, cmp);
  CHECK(s->n == n, "%s: n %llu, want %zu", what, (unsigned long long)s->n, n);
  CHECK(s->max == d[n - 1], "%s: max %lld, want %lld", what, (long long)s->max, (long long)d[n - 1]);
  for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
    size_t k = (size_t)ceil(qs[i] * (double)n);
    if (k < 1) k = 1;
    int64_t want = d[k - 1] < 0 ? 0 : d[k - 1], got = ctrace__an_sketch_quantile(s, qs[i]);
    double bound = AN_SKETCH_ALPHA * (double)want + 0.5;
    CHECK(fabs((double)(got - want)) <= bound, "%s: q %.3f: %lld, want %lld within %.1f", what, qs[i],
          (long long)got, (long long)want, bound);
    if (want < 50)
      CHECK(got == want, "%s: q %.3f: %lld, want exactly %lld", what, qs[i], (long long)got, (long long)want);
    if (qs[i] == 1.0) CHECK(got == want, "%s: q 1: %lld, want the max %lld", what, (long long)got, (long long)want);
  }
}

static void dist(const char *what, int64_t (*gen)(void), size_t n) {
  an_sketch s = {0}, a = {0}, b = {0};
  int64_t *d = malloc(n * sizeof *d);
  for (size_t i = 0; i < n; i++) {
    d[i] = gen();
    CHECK(ctrace__an_sketch_add(&s, d[i]), "%s: add", what);
    CHECK(ctrace__an_sketch_add(i & 1 ? &a : &b, d[i]), "%s: add", what);
  }
  within(what, &s, d, n);
  /* Merged halves give what adding all gave. */
  CHECK(ctrace__an_sketch_merge(&a, &b), "%s: merge", what);
  for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
    CHECK(ctrace__an_sketch_quantile(&a, qs[i]) == ctrace__an_sketch_quantile(&s, qs[i]),
          "%s: merged q %.3f differs", what, qs[i]);
  CHECK(a.min == s.min && a.max == s.max && a.n == s.n, "%s: merged min/max/n differ", what);
  ctrace__an_sketch_free(&s);
  ctrace__an_sketch_free(&a);
  ctrace__an_sketch_free(&b);
  free(d);
}

static int64_t lognormal(void) { return (int64_t)exp(9 + 3 * sqrt(-2 * log(unit() + 1e-300)) * cos(6.283185307 * unit())); }
static int64_t uniform_small(void) { return (int64_t)(next() % 60); }
static int64_t uniform_wide(void) { return (int64_t)(next() % 1000000000u); }
static int64_t with_zeros(void) { return next() % 3 ? 0 : (int64_t)(next() % 100000); }
static int64_t heavy(void) { return (int64_t)(1000 / pow(unit() + 1e-12, 1.5)); }
static int64_t constant(void) { return 123456789; }

int main(void) {
  dist("lognormal", lognormal, 200000);
  dist("uniform below 60 ns", uniform_small, 50000);
  dist("uniform to 1 s", uniform_wide, 200000);
  dist("two thirds zero", with_zeros, 100000);
  dist("heavy tail", heavy, 200000);
  dist("constant", constant, 1000);

  /* Memory: the range of magnitudes, not the number of values. A million
   * values between 1 us and 1 s take no more than a hundred thousand do. */
  an_sketch s = {0};
  uint64_t at_100k = 0;
  ctrace__an_sketch_add(&s, 1000); /* the range, from the start */
  ctrace__an_sketch_add(&s, 1000 + 999999999);
  for (int i = 0; i < 1000000; i++) {
    ctrace__an_sketch_add(&s, 1000 + (int64_t)(next() % 1000000000u));
    if (i == 99999) at_100k = ctrace__an_sketch_bytes(&s);
  }
  CHECK(ctrace__an_sketch_bytes(&s) == at_100k, "%llu bytes after 1e6 values, %llu after 1e5",
        (unsigned long long)ctrace__an_sketch_bytes(&s), (unsigned long long)at_100k);
  CHECK(ctrace__an_sketch_bytes(&s) <= 8 * 2200, "%llu bytes", (unsigned long long)ctrace__an_sketch_bytes(&s));
  /* Every magnitude of int64 at once stays within 2,200 buckets and more slack. */
  an_sketch w = {0};
  for (int64_t v = 1; v > 0 && v < INT64_MAX / 3; v *= 3) ctrace__an_sketch_add(&w, v);
  ctrace__an_sketch_add(&w, INT64_MAX);
  CHECK(w.nb <= 2200 + 2 * 116, "%u buckets", w.nb);
  CHECK(ctrace__an_sketch_quantile(&w, 1.0) == INT64_MAX, "max");
  ctrace__an_sketch_free(&s);
  ctrace__an_sketch_free(&w);
  an_sketch e = {0};
  CHECK(ctrace__an_sketch_quantile(&e, 0.5) == 0, "empty");

  if (failures) fprintf(stderr, "test_sketch: %d failures\n", failures);
  else printf("test_sketch: ok\n");
  return failures != 0;
}
