/* A library test_unwind loads and unloads in a loop (-O2
 * -fomit-frame-pointer): its frames must unwind while it is loaded, and
 * its going away must not disturb walks in other threads. */
#include "unwind/scenarios.h"

static volatile int sink;

__attribute__((noinline)) static int dso_inner(const scn_env *e, int x) {
  int r = e->probe(e->arg);
  sink = x;
  return r + x;
}

__attribute__((noinline)) int dso_entry(const scn_env *e, int x) {
  int a = x * 7, r = dso_inner(e, a + sink);
  sink = a;
  return r + a;
}

/* For the traced loop: an event whose stack runs through this library. */
#include <ctrace/ctrace.h>

__attribute__((noinline)) static void dso_emit_inner(int x) {
  ctrace_go_syscall();
  sink = x;
}

__attribute__((noinline)) int dso_emit(int x) {
  int a = x * 5;
  dso_emit_inner(a + sink);
  sink = a;
  return a;
}
