/* Call chains for test_unwind, built without frame pointers (the test's
 * CMake builds this file twice: -O2 and -O3, both -fomit-frame-pointer).
 * Each scenario ends by calling back into the test (probe), which walks
 * its stack with ctrace's tables and with libunwind. SCN names the
 * variant so both builds link into one program. */
#include <alloca.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "unwind/scenarios.h"

#define NOINLINE __attribute__((noinline))
#define FN(name) SCN##_##name
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(SCN, name)

static volatile int sink;

/* A chain of nine, each with work after the call so it is not a tail call,
 * and locals enough to need stack adjustments and saved registers. */
#define LINK(i, next)                                         \
  static NOINLINE int F(link##i)(const scn_env *e, int x) {   \
    unsigned a = (unsigned)x * 3 + i, b = (unsigned)x ^ (i << 4); \
    unsigned c = (unsigned)sink;                              \
    int r = next(e, (int)((a + c) & 0xffff));                 \
    sink = (int)b;                                            \
    return (int)((unsigned)r + a * b + c);                    \
  }

static NOINLINE int F(link9)(const scn_env *e, int x) {
  int r = e->probe(e->arg);
  sink = x;
  return r + x;
}
LINK(8, F(link9))
LINK(7, F(link8))
LINK(6, F(link7))
LINK(5, F(link6))
LINK(4, F(link5))
LINK(3, F(link4))
LINK(2, F(link3))
LINK(1, F(link2))

int F(chain9)(const scn_env *e) { return F(link1)(e, 1) + 1; }

/* Deep recursion, with a frame of varying shape on the way down. */
static NOINLINE int F(recurse)(const scn_env *e, int n) {
  if (n == 0) return e->probe(e->arg);
  volatile char pad[24];
  pad[n % 24] = (char)n;
  int r = F(recurse)(e, n - 1);
  return r + pad[n % 24];
}

int F(deep)(const scn_env *e, int n) { return F(recurse)(e, n) + 1; }

/* alloca and a VLA: the compiler keeps RBP as the frame's base here even
 * without frame pointers (CFA = RBP + 16), mixed with RSP-based frames. */
static NOINLINE int F(vla)(const scn_env *e, int n) {
  char v[n];
  memset(v, n, (size_t)n);
  int r = e->probe(e->arg);
  return r + v[n / 2];
}

static NOINLINE int F(with_alloca)(const scn_env *e, int n) {
  char *p = alloca((size_t)n);
  memset(p, 1, (size_t)n);
  int r = F(vla)(e, n + 7);
  return r + p[n - 1];
}

int F(dynamic)(const scn_env *e) { return F(with_alloca)(e, 100 + sink % 3) + 1; }

/* Inlining: two static helpers folded into their caller; and a tail
 * call, whose caller's frame is gone before the probe (both unwinders
 * must skip it alike). */
static inline int F(inl2)(const scn_env *e, int x) { return e->probe(e->arg) + x; }
static inline int F(inl1)(const scn_env *e, int x) { return F(inl2)(e, x * 2) + 3; }
static NOINLINE int F(inlined)(const scn_env *e, int x) {
  int r = F(inl1)(e, x);
  sink = r;
  return r + 1;
}

static NOINLINE int F(tail_target)(const scn_env *e, int x) {
  int r = F(inlined)(e, x + 1);
  return r * 2;
}

static NOINLINE int F(tail)(const scn_env *e, int x) {
  sink = x;
  return F(tail_target)(e, x + sink); /* a sibling call at -O2 */
}

int F(tails)(const scn_env *e) { return F(tail)(e, 5) + 1; }

/* Mixed with frame-pointer code: calls through the fp file and back. */
static NOINLINE int F(mixed_inner)(const scn_env *e, int x) {
  int r = e->probe(e->arg);
  sink = x;
  return r + x;
}

static NOINLINE int F(mixed_cb)(const scn_env *e, int x) { return F(mixed_inner)(e, x + 1) + 2; }

int F(mixed)(const scn_env *e) { return fp_call(e, F(mixed_cb), 3) + 1; }

/* A signal raised nine calls deep: the probe runs in the handler, and the
 * walk crosses the kernel's signal frame (__restore_rt). */
static const scn_env *sig_env;
static NOINLINE void F(handler)(int sig) {
  int r = sig_env->probe(sig_env->arg);
  sink = r + sig;
}

static NOINLINE int F(raise_it)(const scn_env *e, int x) {
  (void)e;
  raise(SIGUSR1);
  sink = x;
  return x + 1;
}

int F(signal)(const scn_env *e) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = F(handler);
  sig_env = e;
  sigaction(SIGUSR1, &sa, &old);
  int r = fp_call(e, F(raise_it), 1);
  sigaction(SIGUSR1, &old, NULL);
  return r + 1;
}
