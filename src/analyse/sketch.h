/* an_sketch: quantiles of durations from a log-bucketed histogram (the
 * DDSketch of Masson, Rim and Lee, VLDB 2019), in memory that does not grow
 * with the number of values, only with the range of their magnitudes.
 *
 * A value v >= 1 goes to bucket i = ceil(log_g v), g = (1 + a) / (1 - a),
 * which holds (g^(i-1), g^i]; a quantile is read as 2 g^i / (g + 1), within
 * a relative error a of every value of its bucket. With a = 1% (g about
 * 1.0202), nanoseconds from 1 to 2^63 take at most 2,200 buckets, and a
 * millisecond to a second 350.
 *
 * The bound, as `ctrace stats` states it: a quantile is the nearest-rank
 * one of the values added (the k-th smallest, k = ceil(q n)), to within
 * 1% of it, then rounded to the nanosecond (so within 1% + 0.5 ns); the
 * largest value (max, q = 1) is exact, and so are values below 50 ns,
 * where 1% is less than the rounding. Zero and negative values count as
 * 0, exactly. */
#ifndef CTRACE_ANALYSE_SKETCH_H
#define CTRACE_ANALYSE_SKETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ctrace/analyse.h"

#define AN_SKETCH_ALPHA CTRACE_STATS_QUANTILE_ERROR /* the relative error bound */

typedef struct an_sketch {
  uint64_t n, zeros; /* values added; those <= 0 */
  int64_t min, max;  /* of the values added, exact */
  int32_t lo;        /* bucket index of counts[0] */
  uint32_t nb;       /* buckets in counts */
  uint64_t *counts;
} an_sketch;

/* Adds v. False when out of memory (nothing is added). */
bool ctrace__an_sketch_add(an_sketch *s, int64_t v);
/* Adds every value of src to dst. False when out of memory. */
bool ctrace__an_sketch_merge(an_sketch *dst, const an_sketch *src);
/* The nearest-rank quantile q (0 < q <= 1) within the bound above; 0 if
 * no value was added. */
int64_t ctrace__an_sketch_quantile(const an_sketch *s, double q);
/* Bytes the sketch holds beside its struct. */
uint64_t ctrace__an_sketch_bytes(const an_sketch *s);
void ctrace__an_sketch_free(an_sketch *s);

#endif
