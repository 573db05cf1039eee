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
#include <stdlib.h>
#include <string.h>

#include "startname.h"
#include "symbolize.h"
#include "tab.h"
#include "unwind/unwind.h"

/* By generation parity: a generation's tables are dumped and reset while
 * threads of the next write into the others (the generation format; a
 * classic trace is one generation). */
static ctrace__tab stack_tabs[2] = {CTRACE__TAB_INIT, CTRACE__TAB_INIT};
static ctrace__tab string_tabs[2] = {CTRACE__TAB_INIT, CTRACE__TAB_INIT};
#define STACKS(t) (&stack_tabs[((t)->state >> 1) & 1])
#define STRINGS(t) (&string_tabs[((t)->state >> 1) & 1])

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

uint64_t ctrace__string_id_n(ctrace__w *w, const char *s, size_t len) {
  if (!len) return 0;
  /* Go's current format takes strings up to 1 KiB. */
  size_t max = ctrace__genfmt() ? CTRACE_GO122_MAX_STRING : max_string();
  if (len > max) {
    len = max;
    atomic_fetch_add_explicit(&ctrace__stats.truncated, 1, memory_order_relaxed);
  }
  ctrace__tab *tab = STRINGS(w->t);
  uint64_t h = ctrace__hash(s, len);
  uint64_t id = ctrace__tab_find(tab, s, len, h);
  if (id) return id;
  bool fresh;
  id = ctrace__tab_put(tab, s, len, h, &fresh);
  /* The thread that inserted writes the entry; Go's reader gathers strings
   * from the whole file before it resolves any. The generation format's
   * go into the generation's string section instead (tables_dump2). */
  if (fresh && !ctrace__genfmt()) ctrace__put_string(w->bp, w->p, id, s, len);
  return id;
}

uint64_t ctrace__string_id(ctrace__w *w, const char *s) {
  return s ? ctrace__string_id_n(w, s, strlen(s)) : 0;
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

static uint64_t stack_put(ctrace__tab *tab, const uintptr_t *pcs, int n, uint64_t h) {
  size_t len = (size_t)n * sizeof pcs[0];
  uint64_t id = ctrace__tab_find(tab, pcs, len, h);
  if (id) return id;
  bool fresh;
  return ctrace__tab_put(tab, pcs, len, h, &fresh);
}

/* Unwind tables (src/unwind/) for code without frame pointers: out of
 * line, so that the frame-pointer walk's inlined path stays as it was.
 * The walk starts from the same place: the public function's frame gives
 * its caller's pc, stack pointer (just above the return address) and RBP. */
static int unwind_pcs(ctrace__thread *t, void *fp, int mode, uintptr_t *pcs, int depth, uint64_t *h) {
  uintptr_t *f = fp, lo = (uintptr_t)fp, hi = 0;
  ctrace_g *g = t->curg;
  if (g && g->ctrace__stack_hi && lo >= g->ctrace__stack_lo && lo < g->ctrace__stack_hi)
    hi = g->ctrace__stack_hi;
  else if (lo >= t->stack_lo && lo < t->stack_hi)
    hi = t->stack_hi;
  ctrace__unw_regs r = {f[1], lo + 16, f[0], false};
  ctrace__unw_bounds b = {lo, hi, t->stack_lo, t->stack_hi};
  return ctrace__unwind(&r, &b, mode, CTRACE__UNW_MAY_BUILD, pcs, depth, h);
}

static CTRACE__NOINLINE uint64_t stack_id_unwind(ctrace__thread *t, void *fp) {
  uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
  uint64_t h;
  int n = unwind_pcs(t, fp, ctrace__cfg.unwind, pcs, ctrace__cfg.depth, &h);
  uint64_t id = ctrace__tab_find(STACKS(t), pcs, (size_t)n * sizeof pcs[0], h);
  if (id) return id;
  /* New stack: if an object was unloaded since the registry was read,
   * its rules may have been used for whatever is mapped there now. */
  if (ctrace__unwind_loader_changed()) n = unwind_pcs(t, fp, ctrace__cfg.unwind, pcs, ctrace__cfg.depth, &h);
  int good = code_prefix(pcs, n);
  if (good < n) {
    if (good == 0) return 0;
    n = good;
    h = hash_pcs(pcs, n);
  }
  return stack_put(STACKS(t), pcs, n, h);
}

CTRACE__INLINE uint64_t stack_id(ctrace__thread *t, void *fp) {
  if (!ctrace__cfg.stacks) return 0;
  if (ctrace__cfg.unwind != CTRACE_UNWIND_FP) return stack_id_unwind(t, fp);
  uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
  uint64_t h;
  int n = capture(t, fp, pcs, ctrace__cfg.depth, &h);
  uint64_t id = ctrace__tab_find(STACKS(t), pcs, (size_t)n * sizeof pcs[0], h);
  if (id) return id;
  int good = code_prefix(pcs, n);
  if (good < n) {
    if (good == 0) return 0;
    n = good;
    h = hash_pcs(pcs, n);
  }
  return stack_put(STACKS(t), pcs, n, h);
}

uint64_t ctrace__stack_id(ctrace__thread *t, void *fp) {
  uint64_t id = stack_id(t, fp);
  if (__builtin_expect(t->naming_left != 0, 0)) ctrace__start_note(t, id);
  return id;
}

/* libc's code: [lo, hi) of its executable segment, found once. */
static _Atomic uintptr_t libc_lo, libc_hi;

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg) {
  uintptr_t in = (uintptr_t)arg;
  for (int j = 0; j < info->dlpi_phnum; j++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[j];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || in < lo || in >= lo + ph->p_memsz) continue;
    atomic_store_explicit(&libc_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&libc_hi, lo + ph->p_memsz, memory_order_relaxed);
    return 1;
  }
  return 0;
}

static bool in_libc(uintptr_t pc) {
  if (!atomic_load_explicit(&libc_hi, memory_order_relaxed))
    dl_iterate_phdr(find_libc, (void *)(uintptr_t)&pthread_getattr_np);
  return pc >= atomic_load_explicit(&libc_lo, memory_order_relaxed) &&
         pc < atomic_load_explicit(&libc_hi, memory_order_relaxed);
}

uintptr_t ctrace__thread_start_pc(ctrace__thread *t, uintptr_t pc) {
  /* Outside any write section (and perhaps between traces): the
   * configuration is read as start writes it, atomically, and the walk
   * is only worth its cost while a trace is on. */
  if (!ctrace__on() || !__atomic_load_n(&ctrace__cfg.stacks, __ATOMIC_RELAXED)) return pc;
  int mode = __atomic_load_n(&ctrace__cfg.unwind, __ATOMIC_RELAXED);
  if (!t->stack_hi) ctrace__thread_stack(t); /* before the thread registers */
  uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
  uint64_t h;
  void *fp = __builtin_frame_address(0);
  int n = mode == CTRACE_UNWIND_FP ? capture(t, fp, pcs, CTRACE_MAX_STACK_DEPTH, &h)
                                   : unwind_pcs(t, fp, mode, pcs, CTRACE_MAX_STACK_DEPTH, &h);
  /* A walk cut short (no frame pointers, a stack too deep) ends
   * somewhere in the middle, whose frame is no start: only one that
   * reached libc's thread start says. */
  if (n < 2 || n == CTRACE_MAX_STACK_DEPTH || !in_libc(pcs[n - 1] - 1)) return pc;
  for (int i = n - 1; i >= 0; i--)
    if (!in_libc(pcs[i] - 1)) return pcs[i] - 1;
  return pc;
}

uint64_t ctrace__pcs_stack_id(ctrace__thread *t, const uintptr_t *pcs, int n) {
  uint64_t h = hash_pcs(pcs, n);
  uint64_t id = ctrace__tab_find(STACKS(t), pcs, (size_t)n * sizeof pcs[0], h);
  if (id) return id;
  int good = code_prefix(pcs, n);
  if (good == 0) return 0;
  return stack_put(STACKS(t), pcs, good, good < n ? hash_pcs(pcs, good) : h);
}

uint64_t ctrace__pc_stack_id(ctrace__thread *t, uintptr_t pc) {
  /* +1: frames hold return addresses, and the symbolizer looks at pc-1. */
  uintptr_t pcs[1] = {pc + 1};
  return stack_put(STACKS(t), pcs, 1, hash_pcs(pcs, 1));
}

/* ---- a thread's start stack ------------------------------------------------ */

/* The creation of a thread's G gets a start stack of its own: an entry
 * keyed by the start pc and, as a second word no walk makes (no address
 * has the top bit), the G's id. The thread notes its first stacks of the
 * generation (START_NOTES of them), and when the table is written, the
 * entry is the frame they show the start routine calls, by
 * ctrace__start_frame's rule; or the start pc's, where none says. By
 * generation parity, as the tables: a generation's notes are read when
 * its table is written, while the next one's threads note into the
 * others. Past START_CAP notes in a generation, a thread's creation keeps
 * its start routine. */
#define START_MARK ((uintptr_t)1 << 63)
#define START_NOTES 6
#define START_CAP 8192
static struct {
  uint64_t g, stack;
} start_notes[2][START_CAP];
static _Atomic uint32_t start_count[2];

uint64_t ctrace__start_stack_id(ctrace__thread *t, ctrace_g *g) {
  if (!(ctrace__gflags(g) & CTRACE__GF_THREAD) || !ctrace__cfg.stacks)
    return ctrace__pc_stack_id(t, g->ctrace__start_pc);
  uintptr_t key[2] = {g->ctrace__start_pc + 1, START_MARK | g->id};
  return stack_put(STACKS(t), key, 2, hash_pcs(key, 2));
}

void ctrace__start_naming(ctrace__thread *t, ctrace_g *g) {
  bool thread = g && (ctrace__gflags(g) & CTRACE__GF_THREAD);
  t->naming_g = thread ? g->id : 0;
  t->naming_left = thread ? START_NOTES : 0;
}

/* Inside a write section of t's generation, whose table stack is in:
 * the generation's end, which writes the table, waits for it. */
void ctrace__start_note(ctrace__thread *t, uint64_t stack) {
  t->naming_left--;
  if (!stack) return;
  unsigned par = (unsigned)(t->state >> 1) & 1;
  uint32_t i = atomic_fetch_add_explicit(&start_count[par], 1, memory_order_relaxed);
  if (i >= START_CAP) {
    t->naming_left = 0;
    return;
  }
  start_notes[par][i].g = t->naming_g;
  start_notes[par][i].stack = stack;
}

/* The table's entries by id (ids are dense from 1), built for the first
 * start stack a table writes. */
typedef struct start_index {
  ctrace__tab *tab;
  ctrace__entry **by_id;
  uint64_t n;
  bool built;
} start_index;

static const ctrace__entry *entry_by_id(start_index *x, uint64_t id) {
  if (!x->built) {
    x->built = true;
    x->n = x->tab->next_id + 1;
    x->by_id = calloc(x->n, sizeof *x->by_id);
    if (x->by_id)
      for (ctrace__entry *e = x->tab->all; e; e = e->all)
        if (e->id < x->n) x->by_id[e->id] = e;
  }
  return x->by_id && id < x->n ? x->by_id[id] : NULL;
}

static size_t visible_pcs(const ctrace__entry *e, uintptr_t *pcs);

static const char *symbol_name(const void *frames, size_t i) {
  ctrace__frame fr;
  ctrace__symbolize(((const uintptr_t *)frames)[i], &fr);
  return fr.func;
}

/* The frame of thread g's start, where its noted stacks (par's) name
 * one past its start routine, routine's name: *pc and *fr. */
static void start_frame(start_index *x, unsigned par, uint64_t g, const char *routine, uintptr_t *pc,
                        ctrace__frame *fr) {
  uint32_t n = atomic_load_explicit(&start_count[par], memory_order_relaxed);
  if (n > START_CAP) n = START_CAP;
  for (uint32_t k = 0; k < n; k++) {
    if (start_notes[par][k].g != g) continue;
    const ctrace__entry *e = entry_by_id(x, start_notes[par][k].stack);
    if (!e) continue;
    uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
    size_t npcs = visible_pcs(e, pcs);
    bool settled = false;
    ptrdiff_t i = ctrace__start_frame(routine, pcs, npcs, symbol_name, &settled);
    if (i >= 0) {
      *pc = pcs[i];
      ctrace__symbolize(*pc, fr);
    }
    if (settled) return;
  }
}

static _Atomic uintptr_t hidden_lo, hidden_hi;

void ctrace__stack_hide(uintptr_t lo, uintptr_t hi) {
  atomic_store_explicit(&hidden_lo, lo, memory_order_relaxed);
  atomic_store_explicit(&hidden_hi, hi, memory_order_relaxed);
}

/* e's pcs, leaving out frames in hidden code (ctrace__stack_hide): when
 * the table is written, off the hot path. */
static size_t visible_pcs(const ctrace__entry *e, uintptr_t *pcs) {
  uintptr_t lo = atomic_load_explicit(&hidden_lo, memory_order_relaxed),
            hi = atomic_load_explicit(&hidden_hi, memory_order_relaxed);
  size_t n = 0;
  for (size_t i = 0; i < e->len / sizeof(uintptr_t) && n < CTRACE_MAX_STACK_DEPTH; i++) {
    memcpy(&pcs[n], e->key + i * sizeof pcs[0], sizeof pcs[0]);
    if (pcs[n] - 1 < lo || pcs[n] - 1 >= hi) n++;
  }
  return n;
}

static uint8_t *put_frame(ctrace__w *w, uint8_t *q, uintptr_t pc, const ctrace__frame *fr) {
  q = ctrace__put_uvarint(q, pc);
  q = ctrace__put_uvarint(q, ctrace__string_id(w, fr->func));
  q = ctrace__put_uvarint(q, ctrace__string_id(w, fr->file));
  return ctrace__put_uvarint(q, fr->line);
}

/* An entry of the stack table, [id, n, {pc, func, file, line}...], into
 * body; the frames' strings go into w's generation's table; a thread's
 * start stack is one frame, named from its notes (x). Returns the
 * entry's length. */
static size_t stack_entry(ctrace__w *w, const ctrace__entry *e, start_index *x, uint8_t *body) {
  uint8_t *q = ctrace__put_uvarint(body, e->id);
  uintptr_t key[2];
  if (e->len == sizeof key && (memcpy(key, e->key, sizeof key), key[1] & START_MARK)) {
    uintptr_t pc = key[0];
    ctrace__frame fr;
    ctrace__symbolize(pc, &fr);
    start_frame(x, (unsigned)(w->t->state >> 1) & 1, key[1] & ~START_MARK, fr.func, &pc, &fr);
    q = ctrace__put_uvarint(q, 1);
    return (size_t)(put_frame(w, q, pc, &fr) - body);
  }
  uintptr_t pcs[CTRACE_MAX_STACK_DEPTH];
  size_t n = visible_pcs(e, pcs);
  q = ctrace__put_uvarint(q, n);
  for (size_t i = 0; i < n; i++) {
    ctrace__frame fr;
    ctrace__symbolize(pcs[i], &fr);
    q = put_frame(w, q, pcs[i], &fr);
  }
  return (size_t)(q - body);
}

#define STACK_ENTRY_MAX (2 * CTRACE_MAX_VARINT + 4 * CTRACE_MAX_STACK_DEPTH * CTRACE_MAX_VARINT)

void ctrace__tables_dump(ctrace__buf **bp, uint64_t gen) {
  ctrace__thread tables = {.state = gen << 1};
  ctrace__w w = {&tables, bp, CTRACE__NO_P};
  start_index x = {.tab = STACKS(&tables)};
  for (ctrace__entry *e = STACKS(&tables)->all; e; e = e->all) {
    uint8_t body[STACK_ENTRY_MAX];
    size_t len = stack_entry(&w, e, &x, body);
    uint8_t *out = ctrace__reserve(bp, CTRACE__NO_P, 1 + CTRACE_MAX_VARINT + len);
    if (!out) continue;
    *out++ = CTRACE_EV_Stack | 3 << CTRACE_ARG_COUNT_SHIFT;
    out = ctrace__put_uvarint(out, len);
    memcpy(out, body, len);
    (*bp)->pos = out + len;
  }
  free(x.by_id);
  /* The symbolizer's files are open in the program's descriptor table
   * (libdw opens them without close-on-exec): none may outlive the stop,
   * where the program could close the numbers and reuse them (libdw would
   * then read, and at last close, the program's files) or exec with them
   * open. So each stop symbolizes afresh; the strings are copied above. */
  ctrace__symbolize_close();
  ctrace__unwind_report();
}

/* A section of gen's tables: batches of no thread, each starting with
 * the section's byte (EvStacks, EvStrings), none past 64 KiB; a new one
 * stamped ticks (0: now). */
static uint8_t *section(ctrace__buf **bp, uint64_t gen, uint64_t ticks, uint8_t kind, size_t n) {
  ctrace__buf *b = *bp;
  if (b && (size_t)(b->end - b->pos) >= n) return b->pos;
  if (b) ctrace__queue_full(b);
  *bp = b = ctrace__buf_get();
  if (!b || (size_t)(b->end - b->pos) < n + 64) {
    atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    return NULL;
  }
  ctrace__open_batch2(b, gen, UINT64_MAX, ticks ? ticks : ctrace__ticks());
  *b->pos++ = kind;
  return b->pos;
}

/* Unique strings (the generation format's log messages), as Go's
 * uniqueString writes them: never looked up, each under an id of its own
 * into a strings batch of the writing thread's, which the generation's end
 * takes with its other buffers. Ids come in blocks per thread, taken from
 * the generation's string table's own count (so they stay short varints
 * and never meet an id of the table's). */
#define UNIQUE_BLOCK 1024

/* The varint of v < 2^28 as a little-endian word, *n bytes of it. */
static uint32_t varint_word(uint64_t v, unsigned *n) {
  uint8_t b[CTRACE_MAX_VARINT] = {0};
  uint32_t w;
  *n = (unsigned)(ctrace__put_uvarint(b, v) - b);
  memcpy(&w, b, 4);
  return w;
}

ctrace__ustr ctrace__unique_id_slow(ctrace__w *w, size_t len) {
  ctrace__thread *t = w->t;
  uint64_t gen = ctrace__gen(t);
  if (t->uid_gen != gen || (!t->uid_run && t->uid_next == t->uid_end)) {
    t->uid_next = ctrace__tab_ids(STRINGS(t), UNIQUE_BLOCK);
    t->uid_end = t->uid_next + UNIQUE_BLOCK;
    t->uid_gen = gen;
    t->uid_run = 0;
  }
  if (!t->uid_run) {
    /* The next run: up to the id whose varint's first byte wraps. */
    uint64_t id = t->uid_next, run = 128 - (id & 127);
    if (run > t->uid_end - id) run = t->uid_end - id;
    t->uid_bytes = 0;
    t->uid_word = id < (1u << 28) ? varint_word(id, &t->uid_bytes) : 0;
    t->uid_run = (uint32_t)run;
    t->uid_next = id + run;
  }
  if (!section(&t->sbufs[gen & 1], gen, 0, CTRACE_EV122_Strings, 1 + 2 * CTRACE_MAX_VARINT + len))
    return (ctrace__ustr){0};
  return ctrace__uid_take(t, t->sbufs[gen & 1]);
}

void ctrace__tables_dump2(uint64_t gen, uint64_t ticks) {
  ctrace__thread tables = {.state = gen << 1};
  ctrace__buf *b = NULL;
  ctrace__w w = {&tables, &b, CTRACE__NO_P};
  start_index x = {.tab = STACKS(&tables)};
  for (ctrace__entry *e = STACKS(&tables)->all; e; e = e->all) {
    uint8_t body[STACK_ENTRY_MAX];
    size_t len = stack_entry(&w, e, &x, body);
    uint8_t *q = section(&b, gen, ticks, CTRACE_EV122_Stacks, 1 + len);
    if (!q) break;
    *q++ = CTRACE_EV122_Stack;
    memcpy(q, body, len);
    b->pos = q + len;
  }
  free(x.by_id);
  if (b) ctrace__queue_full(b);
  b = NULL;
  for (ctrace__entry *e = STRINGS(&tables)->all; e; e = e->all) {
    uint8_t *q = section(&b, gen, ticks, CTRACE_EV122_Strings, 1 + 2 * CTRACE_MAX_VARINT + e->len);
    if (!q) break;
    *q++ = CTRACE_EV122_String;
    q = ctrace__put_uvarint(q, e->id);
    q = ctrace__put_uvarint(q, e->len);
    memcpy(q, e->key, e->len);
    b->pos = q + e->len;
  }
  if (b) ctrace__queue_full(b);
  ctrace__tables_reset(gen);
  /* As at a stop (see tables_dump), no file stays open; what the
   * symbolizer learnt serves the next generations, and traces: reading
   * DWARF afresh would take the writer thread up to a second each time,
   * while the program runs on. */
  ctrace__symbolize_release();
}

void ctrace__tables_fork_child(void) {
  for (int i = 0; i < 2; i++) {
    pthread_mutex_init(&stack_tabs[i].mu, NULL);
    pthread_mutex_init(&string_tabs[i].mu, NULL);
  }
  ctrace__unwind_fork_child();
  ctrace__symbolize_fork_child();
  ctrace__tables_reset(0);
  ctrace__tables_reset(1);
}

void ctrace__tables_reset(uint64_t gen) {
  atomic_store_explicit(&start_count[gen & 1], 0, memory_order_relaxed);
  ctrace__tab_reset(&stack_tabs[gen & 1]);
  ctrace__tab_reset(&string_tabs[gen & 1]);
}
