/* Stacks and strings of the current trace.
 *
 * Stacks are captured by walking frame pointers. Measured side by side on
 * this project's bench (make bench: stack16-unwind vs event-stack16), a
 * 16-frame walk takes about 22 ns, libunwind's unw_backtrace about 130 ns
 * (11x the clock-read floor) before any table lookup: more than a whole
 * event with its stack. The price is that code built without frame pointers
 * ends the walk early; every read is bounds-checked against the running
 * stack, so a broken chain ends the walk but never faults, and a stack new
 * to the table is cut at its first pc outside executable code (the chain
 * may run through frames of code without frame pointers into data).
 *
 * That walk is CTRACE_UNWIND_FP. The default (AUTO) and TABLES go through
 * src/unwind/, which follows frame pointers only in objects whose every
 * function keeps them and compiled .eh_frame tables elsewhere; see
 * stack_id_unwind below.
 */
#include <link.h>
#include <string.h>

#include "symbolize.h"
#include "tab.h"
#include "unwind/unwind.h"

static ctrace__tab stacks = CTRACE__TAB_INIT;
static ctrace__tab strings = CTRACE__TAB_INIT;

/* Longest string the trace holds: Go's reader refuses more than 1e6
 * bytes, and a string must fit a buffer with its header. */
static size_t max_string(void) {
  size_t cap = ctrace__buf_capacity() - 1 - 2 * CTRACE_MAX_VARINT - CTRACE__MAX_EVENT;
  return cap < 1000000 ? cap : 1000000;
}

void ctrace__put_string(ctrace__buf **bp, int64_t p, uint64_t id, const char *s, size_t len) {
  uint8_t *q = ctrace__reserve(bp, p, 1 + 2 * CTRACE_MAX_VARINT + len);
  if (!q) return;
  *q++ = CTRACE_EV_String;
  q = ctrace__put_uvarint(q, id);
  q = ctrace__put_uvarint(q, len);
  memcpy(q, s, len);
  (*bp)->pos = q + len;
}

uint64_t ctrace__string_id(ctrace__w *w, const char *s) {
  if (!s || !*s) return 0;
  size_t len = strlen(s), max = max_string();
  if (len > max) {
    len = max;
    atomic_fetch_add_explicit(&ctrace__stats.truncated, 1, memory_order_relaxed);
  }
  uint64_t h = ctrace__hash(s, len);
  uint64_t id = ctrace__tab_find(&strings, s, len, h);
  if (id) return id;
  bool fresh;
  id = ctrace__tab_put(&strings, s, len, h, &fresh);
  /* The thread that inserted writes the entry; Go's reader gathers strings
   * from the whole file before it resolves any. */
  if (fresh) ctrace__put_string(w->bp, w->p, id, s, len);
  return id;
}

/* The stack table's hash, folded into the walk so that its multiplies
 * overlap the walk's loads instead of following them. */
CTRACE__INLINE uint64_t hash_step(uint64_t h, uintptr_t pc) {
  h = (h ^ pc) * 0xBF58476D1CE4E5B9u;
  return h ^ (h >> 31);
}

static uint64_t hash_pcs(const uintptr_t *pcs, int n) {
  uint64_t h = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < n; i++) h = hash_step(h, pcs[i]);
  return h;
}

/* Walks frame pointers from fp, the frame of the public function that was
 * called, so the first pc recorded is the return address into its caller
 * and none of the tracer's frames appear. */
CTRACE__INLINE int capture(ctrace__thread *t, void *fp, uintptr_t *pcs, int depth, uint64_t *hash) {
  uintptr_t lo = (uintptr_t)fp, hi = 0;
  ctrace_g *g = t->curg;
  if (g && g->ctrace__stack_hi && lo >= g->ctrace__stack_lo && lo < g->ctrace__stack_hi)
    hi = g->ctrace__stack_hi;
  else if (lo >= t->stack_lo && lo < t->stack_hi)
    hi = t->stack_hi;
  uintptr_t *f = fp;
  uint64_t h = 0x9E3779B97F4A7C15u;
  int n = 0;
  /* Our own frame is always readable; callers' frames only inside the
   * stack we know we are on. */
  pcs[n++] = f[1];
  h = hash_step(h, f[1]);
  while (n < depth) {
    uintptr_t next = f[0];
    if (next <= (uintptr_t)f || next & 7 || next + 16 > hi) break;
    f = (uintptr_t *)next;
    if (f[1] < 4096) break;
    pcs[n++] = f[1];
    h = hash_step(h, f[1]);
  }
  *hash = h;
  return n;
}

typedef struct exec_check {
  const uintptr_t *pcs;
  int n;
  uint64_t ok[CTRACE_MAX_STACK_DEPTH / 64]; /* bit i: pcs[i] is in code */
} exec_check;

static int exec_check_object(struct dl_phdr_info *info, size_t size, void *arg) {
  exec_check *c = arg;
  for (int j = 0; j < info->dlpi_phnum; j++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[j];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    for (int i = 0; i < c->n; i++)
      if (c->pcs[i] > lo && c->pcs[i] <= hi) c->ok[i / 64] |= 1ull << (i % 64);
  }
  return 0;
}

/* How many leading pcs lie in executable segments of loaded objects. Only
 * for stacks new to the table, so its cost (a walk of the loaded objects)
 * is paid once per distinct stack. */
static int code_prefix(const uintptr_t *pcs, int n) {
  exec_check c = {pcs, n, {0}};
  dl_iterate_phdr(exec_check_object, &c);
  int i = 0;
  while (i < n && (c.ok[i / 64] >> (i % 64) & 1)) i++;
  return i;
}

static uint64_t stack_put(const uintptr_t *pcs, int n, uint64_t h) {
  size_t len = (size_t)n * sizeof pcs[0];
  uint64_t id = ctrace__tab_find(&stacks, pcs, len, h);
  if (id) return id;
  bool fresh;
  return ctrace__tab_put(&stacks, pcs, len, h, &fresh);
}

/* Unwind tables (src/unwind/) for code without frame pointers: out of
 * line, so that the frame-pointer walk's inlined path stays as it was.
 * The walk starts from the same place: the public function's frame gives
 * its caller's pc, stack pointer (just above the return address) and RBP. */
static CTRACE__NOINLINE uint64_t stack_id_unwind(ctrace__thread *t, void *fp) {
  uintptr_t *f = fp, lo = (uintptr_t)fp, hi = 0;
  ctrace_g *g = t->curg;
  if (g && g->ctrace__stack_hi && lo >= g->ctrace__stack_lo && lo < g->ctrace__stack_hi)
    hi = g->ctrace__stack_hi;
  else if (lo >= t->stack_lo && lo < t->stack_hi)
    hi = t->stack_hi;
  ctrace__unw_regs r = {f[1], lo + 16, f[0], false};
  ctrace__unw_bounds b = {lo, hi, t->stack_lo, t->stack_hi};
  uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
  uint64_t h;
  int n = ctrace__unwind(&r, &b, ctrace__cfg.unwind, CTRACE__UNW_MAY_BUILD, pcs, ctrace__cfg.depth, &h);
  uint64_t id = ctrace__tab_find(&stacks, pcs, (size_t)n * sizeof pcs[0], h);
  if (id) return id;
  /* New stack: if an object was unloaded since the registry was read,
   * its rules may have been used for whatever is mapped there now. */
  if (ctrace__unwind_loader_changed()) {
    n = ctrace__unwind(&r, &b, ctrace__cfg.unwind, CTRACE__UNW_MAY_BUILD, pcs, ctrace__cfg.depth, &h);
  }
  int good = code_prefix(pcs, n);
  if (good < n) {
    if (good == 0) return 0;
    n = good;
    h = hash_pcs(pcs, n);
  }
  return stack_put(pcs, n, h);
}

uint64_t ctrace__stack_id(ctrace__thread *t, void *fp) {
  if (!ctrace__cfg.stacks) return 0;
  if (ctrace__cfg.unwind != CTRACE_UNWIND_FP) return stack_id_unwind(t, fp);
  uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
  uint64_t h;
  int n = capture(t, fp, pcs, ctrace__cfg.depth, &h);
  uint64_t id = ctrace__tab_find(&stacks, pcs, (size_t)n * sizeof pcs[0], h);
  if (id) return id;
  int good = code_prefix(pcs, n);
  if (good < n) {
    if (good == 0) return 0;
    n = good;
    h = hash_pcs(pcs, n);
  }
  return stack_put(pcs, n, h);
}

uint64_t ctrace__pcs_stack_id(const uintptr_t *pcs, int n) {
  uint64_t h = hash_pcs(pcs, n);
  uint64_t id = ctrace__tab_find(&stacks, pcs, (size_t)n * sizeof pcs[0], h);
  if (id) return id;
  int good = code_prefix(pcs, n);
  if (good == 0) return 0;
  return stack_put(pcs, good, good < n ? hash_pcs(pcs, good) : h);
}

uint64_t ctrace__pc_stack_id(uintptr_t pc) {
  /* +1: frames hold return addresses, and the symbolizer looks at pc-1. */
  uintptr_t pcs[1] = {pc + 1};
  return stack_put(pcs, 1, hash_pcs(pcs, 1));
}

void ctrace__tables_dump(ctrace__buf **bp) {
  ctrace__w w = {NULL, bp, CTRACE__NO_P};
  for (ctrace__entry *e = stacks.all; e; e = e->all) {
    size_t n = e->len / sizeof(uintptr_t);
    uint64_t v[4 * CTRACE_MAX_STACK_DEPTH];
    for (size_t i = 0; i < n; i++) {
      uintptr_t pc;
      memcpy(&pc, e->key + i * sizeof pc, sizeof pc);
      ctrace__frame fr;
      ctrace__symbolize(pc, &fr);
      v[4 * i] = pc;
      v[4 * i + 1] = ctrace__string_id(&w, fr.func);
      v[4 * i + 2] = ctrace__string_id(&w, fr.file);
      v[4 * i + 3] = fr.line;
    }
    /* [id, n, {pc, func, file, line}...], length first */
    uint8_t body[2 * CTRACE_MAX_VARINT + 4 * CTRACE_MAX_STACK_DEPTH * CTRACE_MAX_VARINT];
    uint8_t *q = ctrace__put_uvarint(body, e->id);
    q = ctrace__put_uvarint(q, n);
    for (size_t i = 0; i < 4 * n; i++) q = ctrace__put_uvarint(q, v[i]);
    size_t len = (size_t)(q - body);
    uint8_t *out = ctrace__reserve(bp, CTRACE__NO_P, 1 + CTRACE_MAX_VARINT + len);
    if (!out) continue;
    *out++ = CTRACE_EV_Stack | 3 << CTRACE_ARG_COUNT_SHIFT;
    out = ctrace__put_uvarint(out, len);
    memcpy(out, body, len);
    (*bp)->pos = out + len;
  }
  /* The symbolizer's files are open in the program's descriptor table
   * (libdw opens them without close-on-exec): none may outlive the stop,
   * where the program could close the numbers and reuse them (libdw would
   * then read, and at last close, the program's files) or exec with them
   * open. So each stop symbolizes afresh; the strings are copied above. */
  ctrace__symbolize_close();
}

/* Fork child: the tables hold the parent's trace; an insert may have been
 * under way. */
void ctrace__tables_fork_child(void) {
  pthread_mutex_init(&stacks.mu, NULL);
  pthread_mutex_init(&strings.mu, NULL);
  ctrace__unwind_fork_child();
  ctrace__tables_reset();
}

void ctrace__tables_reset(void) {
  ctrace__tab_reset(&stacks);
  ctrace__tab_reset(&strings);
}
