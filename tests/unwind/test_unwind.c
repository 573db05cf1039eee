/* Unwinding without frame pointers (src/unwind/): ctrace's table walk
 * against libunwind (unw_step, as unw_backtrace walks), pc for pc, on call chains built with
 * -O2 and -O3 -fomit-frame-pointer (tests/unwind/nofp.c) mixed with
 * frame-pointer code, inlining, tail calls, deep recursion, alloca and
 * VLAs, a signal frame, a thread's start, and a library loaded and
 * unloaded in a loop while another thread walks. Also: garbage stacks end
 * the walk without faulting, a walk that may not build tables (as in a
 * signal handler) stops cleanly, and .debug_frame compiles to the rules it
 * says, damaged without a read outside it. (Stacks through .debug_frame
 * code are held to gdb's in tests/preload/dbgframe_check.sh: libunwind does
 * not read .debug_frame on x86-64.)
 *
 * Workers record what they saw; cmocka asserts only on the main thread.
 */
#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctrace/ctrace.h"
#include "ctrace/format.h"
#include "ctrace/parse.h"
#include "unwind/scenarios.h"
#include "unwind/table.h"
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

/* ---- the same, as the trace records them -------------------------------------------- */

/* Each scenario ends in traced_probe, which takes libunwind's walk and
 * then writes an event with its stack (GoSysCall); after the stop, the
 * i-th GoSysCall's stack in the trace is held to the i-th walk, frame for
 * frame, above the probe's own (the event's first pc is the return from
 * ctrace_go_syscall, libunwind's the return from unw_getcontext). This is
 * the path of stacks.c (the walk as the tracer runs it, the cut at the
 * first pc outside code, the stack table), not only the walk. */
#define MAX_TRACED (4 * NSCN_MAX)
#define NSCN_MAX 16

typedef struct traced_walk {
  uintptr_t pcs[MAXF + 1];
  int n;
} traced_walk;

static traced_walk traced[MAX_TRACED];
static int ntraced;

static NOINLINE int traced_probe(void *arg) {
  (void)arg;
  if (ntraced == MAX_TRACED) return 0;
  traced_walk *w = &traced[ntraced++];
  unw_context_t uc;
  unw_cursor_t cur;
  w->n = 0;
  unw_getcontext(&uc);
  if (unw_init_local(&cur, &uc) == 0) {
    do {
      unw_word_t ip;
      unw_get_reg(&cur, UNW_REG_IP, &ip);
      w->pcs[w->n++] = (uintptr_t)ip;
    } while (w->n < MAXF + 1 && unw_step(&cur) > 0);
  }
  ctrace_go_syscall();
  return w->n;
}

/* Frames of the trace's stacks that agree with libunwind's walks. */
static void compare_traced(const char *path, tally *t) {
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  assert_int_equal(ctrace_reader_open(path, &r, &err), 0);
  assert_int_equal(ctrace_reader_check(r, &info, &err), 0);
  ctrace_event ev;
  int i = 0;
  while (ctrace_reader_next(r, &ev) == 1) {
    if (ev.type != CTRACE_EV_GoSysCall || i >= ntraced) continue;
    const ctrace_frame *f;
    int n = (int)ctrace_reader_stack(r, ev.stack, &f);
    const traced_walk *w = &traced[i++];
    int total = (n > w->n ? n : w->n) - 1, ok = 0;
    for (int k = 1; k < n && k < w->n; k++) {
      uintptr_t want = w->pcs[k];
      if (f[k].pc == want || (in_restore_rt(f[k - 1].pc) && f[k].pc == want + 1)) ok++;
    }
    t->frames += total;
    t->matched += ok;
    t->walks++;
    if (ok != total) {
      fprintf(stderr, "traced walk %d: %d of %d frames agree\n", i - 1, ok, total);
      uintptr_t ours[MAXF];
      for (int k = 0; k < n && k < MAXF; k++) ours[k] = (uintptr_t)f[k].pc;
      show("trace", ours + 1, n - 1);
      show("libunwind", w->pcs + 1, w->n - 1);
    }
  }
  assert_int_equal(i, ntraced);
  ctrace_reader_close(r);
}

static void test_traced_stacks_match_libunwind(void **state) {
  assert_true(NSCN <= NSCN_MAX);
  const char *dir = getenv("TMPDIR");
  for (int mode = CTRACE_UNWIND_AUTO; mode <= CTRACE_UNWIND_TABLES; mode += 2) {
    char path[4096];
    snprintf(path, sizeof path, "%s/test_unwind_traced.%d.%d", dir && *dir ? dir : "/tmp",
             (int)getpid(), mode);
    ctrace_options o = {.unwind = mode, .stack_depth = CTRACE_MAX_STACK_DEPTH};
    assert_int_equal(ctrace_start_file(path, &o), 0);
    ntraced = 0;
    scn_env e = {traced_probe, NULL};
    for (size_t i = 0; i < NSCN; i++) {
      scenarios[i].fn(&e);
      scenarios[i].fn(&e);
    }
    assert_int_equal(ctrace_stop(), 0);
    tally t = {0, 0, 0, 1};
    compare_traced(path, &t);
    report(mode == CTRACE_UNWIND_AUTO ? "traced, auto" : "traced, tables", &t);
    remove(path);
    assert_int_equal(t.walks, 2 * (long)NSCN);
    assert_true(t.matched * 100 >= t.frames * 99);
  }
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

/* ---- .debug_frame ------------------------------------------------------------------ */

/* A .debug_frame by hand: two CIEs (the second version 4), then an FDE
 * whose CIE pointer names the second by its offset from the section's
 * start (where .eh_frame would count back from the field), for a function
 * at 0x1000..0x1040 (link time) that pushes RBP after one byte and pops it
 * after five more. 32-bit DWARF: CIE id 0xffffffff. */
static const uint8_t debug_frame[] = {
    /* CIE at 0: length 20, id, version 1, "", code 1, data -8, ra 16,
     * def_cfa rsp+8, offset(ra) 1, nops */
    20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0, 0, 0,
    /* CIE at 24: length 20, id, version 4, "", address 8, segment 0, code 1,
     * data -8, ra 16 (uleb), def_cfa rsp+8, offset(ra) 1, nop */
    20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 4, 0, 8, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0,
    /* FDE at 48: length 32, CIE 24, start 0x1000, range 0x40, advance 1,
     * def_cfa_offset 16, offset(rbp) 2, advance 5, def_cfa_offset 8,
     * restore(rbp), nops */
    32, 0, 0, 0, 24, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0,
    0x41, 0x0e, 16, 0x86, 2, 0x45, 0x0e, 8, 0xc6, 0, 0, 0,
};

/* Compiles bytes as an object's .debug_frame, the text at 0x1000..0x2000,
 * from memory that ends at a page the process cannot read: a read past
 * the section faults, with or without ASan. */
static ctrace__unw_table *compile_debug_frame(const uint8_t *bytes, size_t n) {
  static uint8_t *mem;
  long page = sysconf(_SC_PAGESIZE);
  if (!mem) {
    mem = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    assert_int_equal(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
  }
  assert_true(n <= (size_t)page);
  uint8_t *at = mem + page - n;
  memcpy(at, bytes, n);
  ctrace__unw_src src = {0, 0x1000, 0x2000, NULL, 0, 0, at, n};
  return ctrace__unw_compile(&src, 0);
}

static void test_debug_frame_rules(void **state) {
  ctrace__unw_table *t = compile_debug_frame(debug_frame, sizeof debug_frame);
  assert_non_null(t);
  assert_int_equal(t->lo, 0x1000);
  assert_int_equal(t->hi, 0x1040);
  assert_true(!t->fp_all); /* a frame, RSP-based */
  assert_int_equal(ctrace__unw_rule(t, 0), RULE(RULE_RSP, 0, 8));
  assert_int_equal(ctrace__unw_rule(t, 1), RULE(RULE_RSP, 2, 16));
  assert_int_equal(ctrace__unw_rule(t, 5), RULE(RULE_RSP, 2, 16));
  assert_int_equal(ctrace__unw_rule(t, 6), RULE(RULE_RSP, 0, 8));
  assert_int_equal(ctrace__unw_rule(t, 0x3f), RULE(RULE_RSP, 0, 8));
  assert_int_equal(t->debug_fdes, 1);
  munmap(t, t->mapped);
}

/* With .eh_frame as well: .debug_frame's FDE for a function .eh_frame
 * describes is left out, its FDE for another function is used. In one
 * mapping: .eh_frame_hdr (a sorted table of one FDE), .eh_frame (a "zR"
 * CIE with pc-relative addresses and an FDE for 0x1000..0x1040 that only
 * moves the CFA after one byte), the text at 0x1000 from the load bias
 * (the mapping's start). */
static void test_debug_frame_with_eh_frame(void **state) {
  static uint8_t mem[4096] __attribute__((aligned(64)));
  memset(mem, 0, sizeof mem);
  uintptr_t bias = (uintptr_t)mem;
  uint8_t *hdr = mem, *eh = mem + 32, *cie = eh, *fde = eh + 24;
  int32_t v;
  /* .eh_frame_hdr: version, eh_frame_ptr pcrel|sdata4, count udata4,
   * table datarel|sdata4; then the pointer, the count, one entry. */
  hdr[0] = 1, hdr[1] = 0x1b, hdr[2] = 0x03, hdr[3] = 0x3b;
  v = (int32_t)(eh - (hdr + 4));
  memcpy(hdr + 4, &v, 4);
  v = 1;
  memcpy(hdr + 8, &v, 4);
  v = (int32_t)(bias + 0x1000 - (uintptr_t)hdr);
  memcpy(hdr + 12, &v, 4);
  v = (int32_t)(fde - hdr);
  memcpy(hdr + 16, &v, 4);
  /* CIE: length 20, id 0, version 1, "zR", code 1, data -8, ra 16,
   * augmentation 1 byte: pcrel|sdata4; def_cfa rsp+8, offset(ra) 1. */
  static const uint8_t cie_bytes[] = {20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78,
                                      16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0};
  memcpy(cie, cie_bytes, sizeof cie_bytes);
  /* FDE: length 16, CIE pointer back from the field, start, range 0x40,
   * no augmentation, advance 1, def_cfa_offset 16 (RBP not saved). */
  v = 16;
  memcpy(fde, &v, 4);
  v = (int32_t)(fde + 4 - cie);
  memcpy(fde + 4, &v, 4);
  v = (int32_t)(bias + 0x1000 - (uintptr_t)(fde + 8));
  memcpy(fde + 8, &v, 4);
  v = 0x40;
  memcpy(fde + 12, &v, 4);
  static const uint8_t fde_insns[] = {0, 0x41, 0x0e, 16};
  memcpy(fde + 16, fde_insns, sizeof fde_insns);
  /* .debug_frame: the bytes above, and a second FDE like the first for
   * 0x1100..0x1140. */
  uint8_t dbg[sizeof debug_frame + 36];
  memcpy(dbg, debug_frame, sizeof debug_frame);
  memcpy(dbg + sizeof debug_frame, debug_frame + 48, 36);
  dbg[sizeof debug_frame + 9] = 0x11;
  ctrace__unw_src src = {bias, 0x1000, 0x2000, hdr, bias, bias + sizeof mem, dbg, sizeof dbg};
  ctrace__unw_table *t = ctrace__unw_compile(&src, 0);
  assert_non_null(t);
  assert_int_equal(t->debug_fdes, 1);
  assert_int_equal(ctrace__unw_rule(t, 0), RULE(RULE_RSP, 0, 8));
  assert_int_equal(ctrace__unw_rule(t, 1), RULE(RULE_RSP, 0, 16)); /* .eh_frame's */
  assert_int_equal(ctrace__unw_rule(t, 0x3f), RULE(RULE_RSP, 0, 16));
  assert_int_equal(ctrace__unw_rule(t, 0x40), RULE_NONE);
  assert_int_equal(ctrace__unw_rule(t, 0x101), RULE(RULE_RSP, 2, 16)); /* .debug_frame's */
  assert_int_equal(ctrace__unw_rule(t, 0x106), RULE(RULE_RSP, 0, 8));
  munmap(t, t->mapped);
}

/* The same bytes with random ones changed: never a read outside them. */
static void test_debug_frame_garbage(void **state) {
  uint8_t buf[sizeof debug_frame];
  unsigned seed = 777;
  long built = 0;
  for (int round = 0; round < 20000; round++) {
    memcpy(buf, debug_frame, sizeof buf);
    seed = seed * 1103515245u + 12345u;
    int flips = 1 + (int)(seed >> 28) % 4;
    for (int k = 0; k < flips; k++) {
      seed = seed * 1103515245u + 12345u;
      buf[(seed >> 8) % sizeof buf] = (uint8_t)(seed >> 20);
    }
    seed = seed * 1103515245u + 12345u;
    size_t n = sizeof buf - ((seed >> 16) % 4 ? 0 : (seed >> 20) % 8); /* sometimes cut short */
    ctrace__unw_table *t = compile_debug_frame(buf, n);
    if (t) {
      built++;
      munmap(t, t->mapped);
    }
  }
  fprintf(stderr, "test_unwind: %ld of 20000 damaged .debug_frames still compiled\n", built);
  assert_true(built > 0);
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
  _Atomic long *events = arg;
  scn_env e = {emit_probe, NULL};
  while (!atomic_load(&dl_done)) {
    o2_chain9(&e);
    atomic_fetch_add(events, 1);
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
  _Atomic long events = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, emitter, &events), 0);
  /* The loads begin once the other thread emits: on a loaded machine it
   * may not have run at all by the last one. */
  while (atomic_load(&events) == 0) sched_yield();
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
          loaded, atomic_load(&events), (unsigned long long)st.lost);
  assert_int_equal(loaded, 200);
  assert_true(atomic_load(&events) > 0);
  assert_int_equal(st.lost, 0);
  if (!getenv("TEST_UNWIND_KEEP")) remove(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_match_libunwind),
      cmocka_unit_test(test_auto_matches_libunwind),
      cmocka_unit_test(test_traced_stacks_match_libunwind),
      cmocka_unit_test(test_thread_start),
      cmocka_unit_test(test_no_build_stops_cleanly),
      cmocka_unit_test(test_garbage_never_faults),
      cmocka_unit_test(test_debug_frame_rules),
      cmocka_unit_test(test_debug_frame_with_eh_frame),
      cmocka_unit_test(test_debug_frame_garbage),
      cmocka_unit_test(test_dlopen_loop),
      cmocka_unit_test(test_dlopen_loop_traced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
