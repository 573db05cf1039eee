/* Frame-pointer half of test_unwind's mixed chains (-O2
 * -fno-omit-frame-pointer -fno-optimize-sibling-calls). */
#include "unwind/scenarios.h"

static volatile int sink;

__attribute__((noinline)) int fp_call(const scn_env *e, int (*f)(const scn_env *, int), int x) {
  int r = f(e, x + sink);
  sink = r;
  return r + 1;
}

__attribute__((noinline)) int fp_chain(const scn_env *e, int n) {
  if (n == 0) return e->probe(e->arg);
  int r = fp_chain(e, n - 1);
  sink = r;
  return r + 1;
}
