/* Quantiles of durations within 1% (sketch.h). */
#include "sketch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GAMMA ((1 + AN_SKETCH_ALPHA) / (1 - AN_SKETCH_ALPHA))

static double inv_log_gamma(void) {
  static double v;
  if (v == 0) v = 1 / log(GAMMA);
  return v;
}

static int32_t index_of(int64_t v) {
  /* v >= 1, so the index is >= 0; a value on a boundary that the
   * rounding of log puts one bucket up is still within the bound there
   * (2 g / (g + 1) - 1 = a). */
  return (int32_t)ceil(log((double)v) * inv_log_gamma());
}

/* Makes room for bucket i. */
static bool cover(an_sketch *s, int32_t i) {
  if (s->nb && i >= s->lo && i < s->lo + (int32_t)s->nb) return true;
  int32_t lo = s->nb ? (i < s->lo ? i : s->lo) : i;
  int32_t hi = s->nb ? (i >= s->lo + (int32_t)s->nb ? i + 1 : s->lo + (int32_t)s->nb) : i + 1;
  /* Room for a decade more each way: a few reallocations per sketch, not
   * one per new magnitude. But the first bucket alone: most sketches of
   * waits between two goroutines hold a value or two, and a program that
   * starts goroutines without end has millions of them (1.9 KB each with
   * the room, 2.3 GB of ctrace stats for a second of such a program). */
  int32_t slack = s->nb ? 116 : 0; /* buckets in a factor of 10 */
  lo = lo - slack < 0 ? 0 : lo - slack;
  hi += slack;
  uint64_t *c = calloc((size_t)(hi - lo), sizeof *c);
  if (!c) return false;
  if (s->nb) memcpy(c + (s->lo - lo), s->counts, s->nb * sizeof *c);
  free(s->counts);
  s->counts = c;
  s->lo = lo;
  s->nb = (uint32_t)(hi - lo);
  return true;
}

static void minmax(an_sketch *s, int64_t v) {
  if (s->n == 0 || v < s->min) s->min = v;
  if (s->n == 0 || v > s->max) s->max = v;
}

bool ctrace__an_sketch_add(an_sketch *s, int64_t v) {
  if (v <= 0) {
    minmax(s, 0);
    s->zeros++;
    s->n++;
    return true;
  }
  int32_t i = index_of(v);
  if (!cover(s, i)) return false;
  minmax(s, v);
  s->counts[i - s->lo]++;
  s->n++;
  return true;
}

bool ctrace__an_sketch_merge(an_sketch *dst, const an_sketch *src) {
  if (!src->n) return true;
  for (uint32_t k = 0; k < src->nb; k++) {
    if (!src->counts[k]) continue;
    if (!cover(dst, src->lo + (int32_t)k)) return false;
  }
  for (uint32_t k = 0; k < src->nb; k++)
    if (src->counts[k]) dst->counts[src->lo + (int32_t)k - dst->lo] += src->counts[k];
  if (dst->n == 0 || src->min < dst->min) dst->min = src->min;
  if (dst->n == 0 || src->max > dst->max) dst->max = src->max;
  dst->zeros += src->zeros;
  dst->n += src->n;
  return true;
}

int64_t ctrace__an_sketch_quantile(const an_sketch *s, double q) {
  if (!s->n) return 0;
  uint64_t k = (uint64_t)ceil(q * (double)s->n);
  if (k < 1) k = 1;
  if (k >= s->n) return s->max;
  if (k <= s->zeros) return 0;
  uint64_t seen = s->zeros;
  for (uint32_t b = 0; b < s->nb; b++) {
    seen += s->counts[b];
    if (seen < k) continue;
    double v = 2 * pow(GAMMA, s->lo + (int32_t)b) / (GAMMA + 1);
    int64_t r = (int64_t)llround(v);
    /* Every value lies in [min, max]: clamping only comes closer. */
    if (r < s->min) r = s->min;
    if (r > s->max) r = s->max;
    return r;
  }
  return s->max;
}

uint64_t ctrace__an_sketch_bytes(const an_sketch *s) { return (uint64_t)s->nb * sizeof *s->counts; }

void ctrace__an_sketch_free(an_sketch *s) {
  free(s->counts);
  memset(s, 0, sizeof *s);
}
