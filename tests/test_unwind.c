/* Unwinding without frame pointers (src/unwind/): ctrace's table walk
 * against libunwind (unw_step, as unw_backtrace walks), pc for pc, on call chains built with
 * -O2 and -O3 -fomit-frame-pointer (tests/unwind/nofp.c) mixed with
 * frame-pointer code, inlining, tail calls, deep recursion, alloca and
 * VLAs, a signal frame, a thread's start, and a library loaded and
 * unloaded in a loop while another thread walks. Also: garbage stacks end
 * the walk without faulting, and a walk that may not build tables (as in
 * a signal handler) stops cleanly.
 *
 * Workers record what they saw; cmocka asserts only on the main thread.
 */
#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctrace/ctrace.h"
#include "unwind/scenarios.h"
#include "unwind/unwind.h"

#define NOINLINE __attribute__((noinline))
#define MAXF 160

typedef struct tally {
  long frames, matched, walks;
  int verbose;
} tally;

typedef struct probe_ctx {
  int mode;
  unsigned flags;
  uintptr_t lo, hi; /* this thread's stack */
  tally *t;
  const char *what;
  int ours_n; /* of the last probe */
} probe_ctx;

static void stack_bounds(uintptr_t *lo, uintptr_t *hi) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  *lo = *hi = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      *lo = (uintptr_t)addr;
      *hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
  }
}

/* glibc's __restore_rt (a local symbol, which dladdr does not name):
 * mov $15, %rax (rt_sigreturn); syscall. */
static bool in_restore_rt(uintptr_t pc) {
  static const unsigned char code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  return memcmp((const void *)pc, code, sizeof code) == 0;
}

static void show(const char *who, const uintptr_t *pcs, int n) {
  fprintf(stderr, "  %s:", who);
  for (int i = 0; i < n; i++) {
    Dl_info info;
    const char *s = dladdr((void *)(pcs[i] - 1), &info) && info.dli_sname ? info.dli_sname : "?";
    fprintf(stderr, " %s(%#lx)", s, (unsigned long)pcs[i]);
  }
  fprintf(stderr, "\n");
}

/* Walks from its own frame both ways and counts the frames that agree.
 * libunwind's first pc is the probe's own (after its call); ctrace starts
 * at the probe's return address. After a signal frame ctrace records the
 * interrupted pc plus one (see unwind.h), libunwind the pc itself. */
static NOINLINE int probe(void *arg) {
  probe_ctx *c = arg;
  uintptr_t theirs[MAXF + 1], ours[MAXF];
  int nt = 0;
  if (c->t) {
    /* What unw_backtrace gives, by unw_step: unw_backtrace's per-thread
     * cache has a destructor that crashes under TSan as a thread exits. */
    unw_context_t uc;
    unw_cursor_t cur;
    unw_getcontext(&uc);
    if (unw_init_local(&cur, &uc) == 0) {
      do {
        unw_word_t ip;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        theirs[nt++] = (uintptr_t)ip;
      } while (nt < MAXF + 1 && unw_step(&cur) > 0);
    }
  }
  uintptr_t *f = __builtin_frame_address(0);
  ctrace__unw_regs r = {f[1], (uintptr_t)f + 16, f[0], false};
  ctrace__unw_bounds b = {(uintptr_t)f, c->hi, 0, 0};
  int n = ctrace__unwind(&r, &b, c->mode, c->flags, ours, 128, NULL);
  c->ours_n = n;
  if (!c->t) return n;
  int m = nt - 1 < 128 ? nt - 1 : 128;
  int total = n > m ? n : m, ok = 0;
  for (int i = 0; i < n && i < m; i++) {
    uintptr_t want = theirs[i + 1];
    if (ours[i] == want || (i > 0 && in_restore_rt(ours[i - 1]) && ours[i] == want + 1)) ok++;
  }
  c->t->frames += total;
  c->t->matched += ok;
  c->t->walks++;
  if ((ok != total && c->t->verbose) || getenv("TEST_UNWIND_SHOW")) {
    fprintf(stderr, "%s (mode %d): %d of %d frames agree\n", c->what, c->mode, ok, total);
    show("ctrace", ours, n);
    show("libunwind", theirs + 1, m);
  }
  return n;
}

typedef int (*scn_fn)(const scn_env *);

static int run_deep_o2(const scn_env *e) { return o2_deep(e, 100); }
static int run_deep_o3(const scn_env *e) { return o3_deep(e, 40); }
static int run_fp_chain(const scn_env *e) { return fp_chain(e, 12); }

static const struct {
  const char *name;
  scn_fn fn;
} scenarios[] = {
    {"o2 chain9", o2_chain9},   {"o3 chain9", o3_chain9},   {"o2 deep", run_deep_o2},
    {"o3 deep", run_deep_o3},   {"o2 dynamic", o2_dynamic}, {"o3 dynamic", o3_dynamic},
    {"o2 tails", o2_tails},     {"o3 tails", o3_tails},     {"o2 mixed", o2_mixed},
    {"o3 mixed", o3_mixed},     {"o2 signal", o2_signal},   {"o3 signal", o3_signal},
    {"fp chain", run_fp_chain},
};
#define NSCN (sizeof scenarios / sizeof scenarios[0])

/* Each scenario twice: the second walk of a stack finds the rules the
 * first kept for its positions (unwind.c, last_walk), and must agree as
 * well. */
static void run_all(int mode, tally *t) {
  probe_ctx c = {mode, CTRACE__UNW_MAY_BUILD, 0, 0, t, NULL, 0};
  stack_bounds(&c.lo, &c.hi);
  scn_env e = {probe, &c};
  for (size_t i = 0; i < NSCN; i++) {
    c.what = scenarios[i].name;
    scenarios[i].fn(&e);
    scenarios[i].fn(&e);
  }
}

static void report(const char *what, const tally *t) {
  double pct = t->frames ? 100.0 * (double)t->matched / (double)t->frames : 0;
  fprintf(stderr, "test_unwind: %s: %ld of %ld frames match libunwind (%.2f%%) in %ld walks\n",
          what, t->matched, t->frames, pct, t->walks);
}

static void test_tables_match_libunwind(void **state) {
  tally t = {0, 0, 0, 1};
  run_all(CTRACE__UNW_TABLES, &t);
  report("tables", &t);
  assert_true(t.walks == 2 * (long)NSCN);
  assert_true(t.matched * 100 >= t.frames * 99);
}

static void test_auto_matches_libunwind(void **state) {
  tally t = {0, 0, 0, 1};
  run_all(CTRACE__UNW_AUTO, &t);
  report("auto", &t);
  assert_true(t.matched * 100 >= t.frames * 99);
}

/* ---- a thread: the walk reaches its start ---------------------------------------- */

typedef struct thread_result {
  tally t;
  int mode;
} thread_result;

static void *thread_main(void *arg) {
  thread_result *tr = arg;
  probe_ctx c = {tr->mode, CTRACE__UNW_MAY_BUILD, 0, 0, &tr->t, "thread o2 chain9", 0};
  stack_bounds(&c.lo, &c.hi);
  scn_env e = {probe, &c};
  o2_chain9(&e);
  c.what = "thread o3 signal";
  o3_signal(&e);
  return NULL;
}

static void test_thread_start(void **state) {
  thread_result tr = {{0, 0, 0, 1}, CTRACE__UNW_TABLES};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, thread_main, &tr), 0);
  pthread_join(th, NULL);
  report("thread", &tr.t);
  assert_true(tr.t.walks == 2);
  assert_true(tr.t.matched * 100 >= tr.t.frames * 99);
}

/* ---- without building (the async-signal-safe walk) --------------------------------- */

static void test_no_build_stops_cleanly(void **state) {
  /* Tables are built by now (earlier tests), so the walk without
   * building matches too. */
  tally t = {0, 0, 0, 1};
  probe_ctx c = {CTRACE__UNW_TABLES, 0, 0, 0, &t, "no build", 0};
  stack_bounds(&c.lo, &c.hi);
  scn_env e = {probe, &c};
  o2_chain9(&e);
  o3_signal(&e);
  report("no-build", &t);
  assert_true(t.matched * 100 >= t.frames * 99);
}

/* ---- garbage ------------------------------------------------------------------------ */

/* Random words with some code addresses among them, as a stack: the walk
 * must end inside the bounds, whatever it reads. */
static void test_garbage_never_faults(void **state) {
  static uintptr_t fake[4096];
  uintptr_t code[] = {(uintptr_t)printf + 5, (uintptr_t)o2_chain9 + 9, (uintptr_t)probe + 3,
                      (uintptr_t)memcpy + 17, (uintptr_t)pthread_create + 30};
  unsigned seed = 12345;
  long frames = 0;
  for (int round = 0; round < 2000; round++) {
    for (size_t i = 0; i < 4096; i++) {
      seed = seed * 1103515245u + 12345u;
      uintptr_t v = seed;
      switch (seed >> 28) {
      case 0: case 1: case 2: v = code[(seed >> 8) % 5]; break;
      case 3: case 4: v = (uintptr_t)&fake[(seed >> 4) % 4096]; break;
      default: v = (uintptr_t)seed << 16 | seed; break;
      }
      fake[i] = v;
    }
    ctrace__unw_regs r = {code[round % 5], (uintptr_t)&fake[round % 64],
                          (uintptr_t)&fake[(round * 7) % 4096], round & 1};
    ctrace__unw_bounds b = {(uintptr_t)fake, (uintptr_t)(fake + 4096), 0, 0};
    uintptr_t pcs[128];
    frames += ctrace__unwind(&r, &b, round % 3 == 0 ? CTRACE__UNW_AUTO : CTRACE__UNW_TABLES,
                             CTRACE__UNW_MAY_BUILD, pcs, 128, NULL);
  }
  assert_true(frames >= 2000);
}

/* ---- dlopen/dlclose while another thread walks --------------------------------------- */

static _Atomic int dl_done;

typedef struct walker_result {
  long walks, short_walks;
} walker_result;

static int count_probe(void *arg) {
  probe_ctx *c = arg;
  probe(c);
  return c->ours_n;
}

static void *walker(void *arg) {
  walker_result *w = arg;
  probe_ctx c = {CTRACE__UNW_AUTO, CTRACE__UNW_MAY_BUILD, 0, 0, NULL, "walker", 0};
  stack_bounds(&c.lo, &c.hi);
  scn_env e = {count_probe, &c};
  while (!atomic_load(&dl_done)) {
    int n = o2_chain9(&e);
    (void)n;
    /* chain9: probe's caller .. link1, chain9, walker, start_thread, clone3 */
    if (c.ours_n < 13) w->short_walks++;
    w->walks++;
  }
  return NULL;
}

static void test_dlopen_loop(void **state) {
  const char *lib = getenv("TEST_UNWIND_DSO");
  assert_non_null(lib);
  walker_result w = {0, 0};
  pthread_t th;
  atomic_store(&dl_done, 0);
  assert_int_equal(pthread_create(&th, NULL, walker, &w), 0);
  tally t = {0, 0, 0, 1};
  probe_ctx c = {CTRACE__UNW_AUTO, CTRACE__UNW_MAY_BUILD, 0, 0, &t, "dso", 0};
  stack_bounds(&c.lo, &c.hi);
  scn_env e = {probe, &c};
  int loaded = 0;
  for (int i = 0; i < 200; i++) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) break;
    int (*entry)(const scn_env *, int) = (int (*)(const scn_env *, int))dlsym(h, "dso_entry");
    if (entry) {
      entry(&e, i);
      loaded++;
    }
    dlclose(h);
  }
  atomic_store(&dl_done, 1);
  pthread_join(th, NULL);
  report("dlopen loop", &t);
  fprintf(stderr, "test_unwind: walker: %ld walks, %ld short\n", w.walks, w.short_walks);
  assert_int_equal(loaded, 200);
  assert_true(t.matched * 100 >= t.frames * 99);
  assert_int_equal(w.short_walks, 0);
}

/* ---- the same under a trace: events with stacks --------------------------------- */

/* While the main thread loads and unloads the library and emits events
 * from inside it (their stacks run through it), another thread emits
 * events with stacks from a chain without frame pointers. Stop then
 * symbolizes every stack, those with pcs of the unloaded library too. */
static int emit_probe(void *arg) {
  (void)arg;
  ctrace_go_syscall();
  return 0;
}

static void *emitter(void *arg) {
  long *events = arg;
  scn_env e = {emit_probe, NULL};
  while (!atomic_load(&dl_done)) {
    o2_chain9(&e);
    (*events)++;
  }
  return NULL;
}

static void test_dlopen_loop_traced(void **state) {
  const char *lib = getenv("TEST_UNWIND_DSO");
  assert_non_null(lib);
  char path[4096];
  snprintf(path, sizeof path, "%s.trace", lib);
  ctrace_options o = {.unwind = CTRACE_UNWIND_AUTO};
  assert_int_equal(ctrace_start_file(path, &o), 0);
  atomic_store(&dl_done, 0);
  long events = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, emitter, &events), 0);
  int loaded = 0;
  for (int i = 0; i < 200; i++) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) break;
    int (*emit)(int) = (int (*)(int))dlsym(h, "dso_emit");
    if (emit) {
      emit(i);
      loaded++;
    }
    dlclose(h);
  }
  atomic_store(&dl_done, 1);
  pthread_join(th, NULL);
  ctrace_stats st;
  assert_int_equal(ctrace_stop(), 0);
  ctrace_stats_get(&st);
  fprintf(stderr, "test_unwind: traced dlopen loop: %d loads, %ld events from the other thread, %llu lost\n",
          loaded, events, (unsigned long long)st.lost);
  assert_int_equal(loaded, 200);
  assert_true(events > 0);
  assert_int_equal(st.lost, 0);
  if (!getenv("TEST_UNWIND_KEEP")) remove(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_match_libunwind),
      cmocka_unit_test(test_auto_matches_libunwind),
      cmocka_unit_test(test_thread_start),
      cmocka_unit_test(test_no_build_stops_cleanly),
      cmocka_unit_test(test_garbage_never_faults),
      cmocka_unit_test(test_dlopen_loop),
      cmocka_unit_test(test_dlopen_loop_traced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
