/* The call chain of bench_events' event-stack16-nofp case, built like
 * most distribution code: -O2 -fomit-frame-pointer (bench/CMakeLists.txt).
 * A library of its own, so that bench_events itself keeps frame pointers
 * throughout and its other cases walk them as before (auto mode follows
 * frame pointers in objects whose every function keeps them). */
#include <stdint.h>

typedef void (*body_fn)(uint64_t n);

static volatile int sink;

/* The store after the call keeps it from being a tail call: every level
 * is a frame. */
__attribute__((noinline, noclone)) void bench_nofp_chain(int n, body_fn leaf, uint64_t iters) {
  if (n > 0)
    bench_nofp_chain(n - 1, leaf, iters);
  else
    leaf(iters);
  sink = n;
}
