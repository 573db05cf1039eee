/* The registry of loaded objects and the walk. See unwind.h.
 *
 * Registry. A snapshot of the loader's list (text range, load bias, table)
 * sorted by address, in one of two static buffers; a refresh writes the
 * other buffer and publishes it. A walker that loaded the old pointer may
 * still be reading it when the refresh after next rewrites it, so every
 * field is an atomic (relaxed) load, each buffer carries a sequence number
 * (odd while written) and the walk is redone when it changed: a torn read
 * can only give a wrong rule, never a bad pointer, because every table ever
 * published stays mapped and the stack reads are bounds-checked.
 *
 * Tables are cached forever by a fingerprint of the object's
 * .eh_frame_hdr, so an object loaded again (a dlopen/dlclose loop) reuses
 * its table wherever it lands.
 */

#include "unwind/unwind.h"
#include "runtime/env.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "unwind/elf.h"
#include "unwind/table.h"

#define MAX_OBJS 1024

typedef struct obj {
  _Atomic uintptr_t lo, hi;  /* run-time range of executable segments */
  _Atomic uintptr_t bias;    /* dlpi_addr */
  _Atomic uintptr_t hdr;     /* run-time .eh_frame_hdr, 0 if none */
  _Atomic(const ctrace__unw_table *) tab; /* NULL until built */
  _Atomic int state;         /* OBJ_* */
} obj;

enum { OBJ_UNBUILT = 0, OBJ_BUILT, OBJ_NOTABLE };

typedef struct objset {
  _Atomic uint32_t seq; /* odd while being written */
  _Atomic int n;
  obj o[MAX_OBJS];
} objset;

static objset sets[2];
static _Atomic(objset *) cur;
/* Serializes refreshes and builds; never taken by a walk without
 * CTRACE__UNW_MAY_BUILD. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static ctrace__unw_table *cache; /* every table built, under reg_mu */
static uint64_t seen_adds, seen_subs; /* loader counters at the last refresh */
static bool seen_valid;

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* ---- the loader's list ------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

typedef struct phdr_info {
  uintptr_t lo, hi, hdr, seg_lo, seg_hi;
} phdr_info;

/* The text range and .eh_frame_hdr of one object, and the PT_LOAD holding
 * the latter (the only memory its CFI may be read from). */
static bool describe(const struct dl_phdr_info *info, phdr_info *d) {
  *d = (phdr_info){UINTPTR_MAX, 0, 0, 0, 0};
  for (int j = 0; j < info->dlpi_phnum; j++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[j];
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      if (a < d->lo) d->lo = a;
      if (a + ph->p_memsz > d->hi) d->hi = a + ph->p_memsz;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      d->hdr = a;
    }
  }
  if (d->hdr) {
    for (int j = 0; j < info->dlpi_phnum; j++) {
      const ElfW(Phdr) *ph = &info->dlpi_phdr[j];
      uintptr_t a = info->dlpi_addr + ph->p_vaddr;
      if (ph->p_type == PT_LOAD && d->hdr >= a && d->hdr < a + ph->p_filesz) {
        d->seg_lo = a;
        d->seg_hi = a + ph->p_filesz;
      }
    }
    if (!d->seg_hi) d->hdr = 0;
  }
  return d->hi > d->lo;
}

/* Whether an object without .eh_frame_hdr may have a file to read
 * .debug_frame from: the program (no name) or a path (the vDSO's name
 * has no slash). Objects with neither have no table at all. */
static bool may_have_file(const struct dl_phdr_info *info) {
  return !info->dlpi_name || !*info->dlpi_name || strchr(info->dlpi_name, '/');
}

/* Fingerprint of an object's CFI: its .eh_frame_hdr, whose table holds
 * every function's offset and FDE's position relative to itself; its
 * build id, or without either its name; and where its text lies relative
 * to the former, and the text's size. */
static uint64_t fingerprint(const struct dl_phdr_info *info, const phdr_info *d) {
  uint64_t k = 14695981039346656037ull;
  if (d->hdr) {
    const uint8_t *h = (const uint8_t *)d->hdr;
    size_t n = d->seg_hi - d->hdr;
    if (n > 12 && h[0] == 1 && h[2] == 0x03 && h[3] == 0x3b) {
      uint32_t count;
      memcpy(&count, h + 8, 4);
      size_t want = 12 + (size_t)count * 8;
      if (want <= n) n = want;
    } else if (n > 4096) {
      n = 4096;
    }
    k = fnv(k, h, n);
  }
  const uint8_t *id;
  size_t len;
  if (ctrace__unw_build_id(info, &id, &len))
    k = fnv(k, id, len);
  else if (!d->hdr && info->dlpi_name)
    k = fnv(k, (const uint8_t *)info->dlpi_name, strlen(info->dlpi_name));
  uintptr_t rel[2] = {d->hdr ? d->hdr - d->lo : 0, d->hi - d->lo};
  return fnv(k, (const uint8_t *)rel, sizeof rel);
}

static ctrace__unw_table *cached(uint64_t key) {
  for (ctrace__unw_table *t = cache; t; t = t->next)
    if (t->key == key) return t;
  return NULL;
}

typedef struct refresh_arg {
  objset *old, *next;
  int n;
  bool counted;
  uint64_t adds, subs;
} refresh_arg;

static int refresh_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  refresh_arg *a = arg;
  if (!a->counted && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    a->counted = true;
    a->adds = info->dlpi_adds;
    a->subs = info->dlpi_subs;
  }
  phdr_info d;
  if (!describe(info, &d) || a->n == MAX_OBJS) return 0;
  obj *o = &a->next->o[a->n++];
  ST(o->lo, d.lo);
  ST(o->hi, d.hi);
  ST(o->bias, (uintptr_t)info->dlpi_addr);
  ST(o->hdr, d.hdr);
  const ctrace__unw_table *t = NULL;
  /* Without .eh_frame_hdr there may still be .debug_frame in a file. */
  int state = d.hdr || may_have_file(info) ? OBJ_UNBUILT : OBJ_NOTABLE;
  /* A table built for this very object (same fingerprint) is kept; the
   * fingerprint reads the object's memory, which is safe here, under the
   * loader's lock. */
  if (state == OBJ_UNBUILT && cache && (t = cached(fingerprint(info, &d)))) state = OBJ_BUILT;
  ST(o->tab, t);
  ST(o->state, state);
  return 0;
}

static void sort_objs(objset *s, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && LD(s->o[j - 1].lo) > LD(s->o[j].lo); j--) {
      obj t, *x = &s->o[j - 1], *y = &s->o[j];
#define SWAP(f) ST(t.f, LD(x->f)); ST(x->f, LD(y->f)); ST(y->f, LD(t.f));
      SWAP(lo) SWAP(hi) SWAP(bias) SWAP(hdr) SWAP(tab) SWAP(state)
#undef SWAP
    }
}

/* Rereads the loader's list into the unused buffer and publishes it.
 * Caller holds reg_mu. */
static void refresh_locked(void) {
  objset *old = atomic_load_explicit(&cur, memory_order_relaxed);
  objset *next = old == &sets[0] ? &sets[1] : &sets[0];
  uint32_t seq = LD(next->seq);
  atomic_store_explicit(&next->seq, seq + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  refresh_arg a = {old, next, 0, false, 0, 0};
  dl_iterate_phdr(refresh_cb, &a);
  sort_objs(next, a.n);
  ST(next->n, a.n);
  atomic_store_explicit(&next->seq, seq + 2, memory_order_release);
  atomic_store_explicit(&cur, next, memory_order_release);
  seen_valid = a.counted;
  seen_adds = a.adds;
  seen_subs = a.subs;
}

typedef struct counters_arg {
  bool valid;
  uint64_t adds, subs;
} counters_arg;

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  counters_arg *c = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    c->valid = true;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;
}

/* Refreshes when never read, or when the loader's counters moved (any
 * change if adds, only unloads otherwise). Returns whether it did. */
static bool refresh_if_changed(bool adds) {
  counters_arg c = {false, 0, 0};
  dl_iterate_phdr(counters_cb, &c);
  pthread_mutex_lock(&reg_mu);
  bool stale = !atomic_load_explicit(&cur, memory_order_relaxed) || !seen_valid || !c.valid ||
               c.subs != seen_subs || (adds && c.adds != seen_adds);
  if (stale) refresh_locked();
  pthread_mutex_unlock(&reg_mu);
  return stale;
}

bool ctrace__unwind_loader_changed(void) {
  if (!atomic_load_explicit(&cur, memory_order_acquire)) return false;
  return refresh_if_changed(false);
}

void ctrace__unwind_fork_child(void) { pthread_mutex_init(&reg_mu, NULL); }

void ctrace__unwind_prepare(void) {
  pthread_mutex_lock(&reg_mu);
  if (!atomic_load_explicit(&cur, memory_order_relaxed)) refresh_locked();
  pthread_mutex_unlock(&reg_mu);
}

/* ---- building ------------------------------------------------------------------ */

typedef struct build_arg {
  uintptr_t bias, lo;     /* the object to build (load bias, text start), or */
  const char *name;       /* the first whose path contains name */
  ctrace__unw_table *tab;
  bool found;
  double ms;
} build_arg;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* this shared machine: CPU, not wall time */
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Strings kept with the tables (names, for ctrace__unwind_report): mmap'd
 * pages never freed, like the tables. Under reg_mu. */
static char *arena;
static size_t arena_left;

static const char *keep_string(const char *s) {
  size_t n = strlen(s) + 1;
  if (n > 4096) return "?";
  if (n > arena_left) {
    void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return "?";
    arena = p;
    arena_left = 65536;
  }
  char *r = arena;
  memcpy(r, s, n);
  arena += n;
  arena_left -= n;
  return r;
}

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  build_arg *b = arg;
  phdr_info d;
  if (!describe(info, &d)) return 0;
  if (b->name ? !(info->dlpi_name && strstr(info->dlpi_name, b->name))
              : (info->dlpi_addr != b->bias || d.lo != b->lo))
    return 0;
  b->found = true;
  if (!d.hdr && !may_have_file(info)) return 1;
  uint64_t key = fingerprint(info, &d);
  b->tab = cached(key);
  if (!b->tab) {
    double t0 = now_ms();
    ctrace__unw_blob df;
    int how = ctrace__unw_debug_frame(info, &df);
    ctrace__unw_src src = {info->dlpi_addr, d.lo - info->dlpi_addr, d.hi - info->dlpi_addr,
                           (const uint8_t *)d.hdr, d.seg_lo, d.seg_hi, df.data, df.len};
    b->tab = ctrace__unw_compile(&src, key);
    ctrace__unw_blob_free(&df);
    b->ms = now_ms() - t0;
    if (b->tab) {
      b->tab->debug_frame = how;
      char exe[4096];
      const char *name = info->dlpi_name;
      if (!name || !*name) {
        /* The program: its path as the kernel knows it. */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = n > 0 ? exe : "(program)";
      }
      b->tab->name = keep_string(name);
      b->tab->next = cache;
      cache = b->tab;
    }
  }
  return 1;
}

/* Builds (or finds) the table of object o of the current set. */
static void build(obj *o) {
  pthread_mutex_lock(&reg_mu);
  if (LD(o->state) == OBJ_UNBUILT) {
    build_arg b = {LD(o->bias), LD(o->lo), NULL, NULL, false, 0};
    dl_iterate_phdr(build_cb, &b);
    /* Publish the table before the state that says it is there. */
    atomic_store_explicit(&o->tab, b.tab, memory_order_release);
    atomic_store_explicit(&o->state, b.tab ? OBJ_BUILT : OBJ_NOTABLE, memory_order_release);
  }
  pthread_mutex_unlock(&reg_mu);
}

long ctrace__unwind_build(const char *name, ctrace__unw_build_info *info) {
  pthread_mutex_lock(&reg_mu);
  build_arg b = {0, 0, name, NULL, false, 0};
  dl_iterate_phdr(build_cb, &b);
  pthread_mutex_unlock(&reg_mu);
  if (!b.tab) return -1;
  if (info)
    *info = (ctrace__unw_build_info){b.tab->fp_all, b.ms,
                                     b.tab->debug_fdes ? b.tab->debug_frame : 0, b.tab->debug_fdes};
  return (long)b.tab->n;
}

static const char *const df_how[] = {
    [CTRACE__UNW_DF_FILE] = "the file",
    [CTRACE__UNW_DF_BUILD_ID] = "its debug file (build id)",
    [CTRACE__UNW_DF_DEBUGLINK] = "its debug file (.gnu_debuglink)",
};

void ctrace__unwind_report(void) {
  const char *v = ctrace__getenv("CTRACE_VERBOSE");
  if (!v || !*v || strcmp(v, "0") == 0) return;
  pthread_mutex_lock(&reg_mu);
  for (const ctrace__unw_table *t = cache; t; t = t->next)
    if (t->debug_fdes && t->debug_frame > CTRACE__UNW_DF_NONE &&
        t->debug_frame <= CTRACE__UNW_DF_DEBUGLINK)
      fprintf(stderr, "ctrace: unwind tables of %s: .debug_frame from %s (%u functions)\n",
              t->name, df_how[t->debug_frame], t->debug_fdes);
  pthread_mutex_unlock(&reg_mu);
}

int ctrace__unwind_mode(const char *name) {
  if (!name || !*name || strcmp(name, "auto") == 0) return CTRACE__UNW_AUTO;
  if (strcmp(name, "fp") == 0) return CTRACE__UNW_FP;
  if (strcmp(name, "tables") == 0) return CTRACE__UNW_TABLES;
  return -1;
}

const char *ctrace__unwind_name(int mode) {
  return mode == CTRACE__UNW_FP ? "fp" : mode == CTRACE__UNW_TABLES ? "tables" : "auto";
}

/* ---- the walk -------------------------------------------------------------------- */

/* The objects this thread's last walks found, by index: walks from one
 * place cross the same two or three objects each time. Any index is safe
 * to try (the range is checked), so a new set needs no reset. */
static __thread int hint[2] __attribute__((tls_model("initial-exec")));

static obj *find_obj(objset *s, uintptr_t pc) {
  int n = LD(s->n);
  for (int i = 0; i < 2; i++) {
    /* Entries past n may be an older list's: an unloaded object. */
    int k = hint[i];
    obj *o = &s->o[k & (MAX_OBJS - 1)];
    if (k < n && pc - LD(o->lo) < LD(o->hi) - LD(o->lo)) return o;
  }
  if (n > MAX_OBJS) n = MAX_OBJS;
  if (n == 0 || pc < LD(s->o[0].lo)) return NULL;
  /* Last object starting at or below pc; branch-free halving (cmov). */
  int base = 0;
  while (n > 1) {
    int half = n / 2;
    base = LD(s->o[base + half].lo) <= pc ? base + half : base;
    n -= half;
  }
  obj *o = &s->o[base];
  if (pc >= LD(o->hi)) return NULL;
  hint[1] = hint[0];
  hint[0] = base;
  return o;
}

/* The object the walk is in, as its loops want it: one subtraction and
 * one comparison tell whether a pc is still in it (len) and whether its
 * table covers the pc (tlen). */
typedef struct wobj {
  uintptr_t lo, len;     /* run-time text: pc is in it iff pc - lo < len */
  uintptr_t tbase, tlen; /* the table's range, run-time: bias + t->lo, t->hi - t->lo; tlen 0 without one */
  const ctrace__unw_table *tab;
  bool fp;               /* follow frame pointers here */
} wobj;

/* Finds the object holding look and describes it in *w (the registry *s
 * may be reread, when flags allow). Returns false when the walk must stop
 * cleanly: the object's table is not built and may not be built here.
 * Out of line: the walk's loops keep their registers. */
static __attribute__((noinline)) bool enter_obj(objset **s, uintptr_t look, int mode,
                                                unsigned flags, wobj *w) {
  obj *o = find_obj(*s, look);
  if (!o && (flags & CTRACE__UNW_MAY_BUILD) && refresh_if_changed(true)) {
    *s = atomic_load_explicit(&cur, memory_order_acquire);
    o = find_obj(*s, look);
  }
  *w = (wobj){0, 0, 0, 0, NULL, false};
  if (!o) {
    /* Code outside every object (JIT code): only a frame pointer can
     * help, and only in auto mode. */
    w->fp = mode == CTRACE__UNW_AUTO;
    return true;
  }
  w->lo = LD(o->lo);
  w->len = LD(o->hi) - w->lo;
  int st = atomic_load_explicit(&o->state, memory_order_acquire);
  if (st == OBJ_UNBUILT && (flags & CTRACE__UNW_MAY_BUILD)) {
    build(o);
    st = atomic_load_explicit(&o->state, memory_order_acquire);
  }
  if (st == OBJ_UNBUILT) return false; /* may not build here: stop cleanly */
  const ctrace__unw_table *t = NULL;
  if (st == OBJ_BUILT) t = atomic_load_explicit(&o->tab, memory_order_acquire);
  if (t) {
    w->tab = t;
    w->tbase = LD(o->bias) + t->lo;
    w->tlen = t->hi - t->lo;
  }
  w->fp = mode == CTRACE__UNW_AUTO && (t ? t->fp_all : true);
  return true;
}

/* What this thread's last walks learnt, for the next ones, with the
 * registry snapshot it holds for (the set and its sequence number, which
 * no other snapshot shares) and the mode: used only by a walk of the same
 * snapshot in the same mode.
 *
 * - The last two objects, as the walk wants them: what enter_obj would
 *   say, without its search and its chain of loads (object, table,
 *   table's range). Objects without a table built are not kept.
 * - The rule found for the pc at each of the first LAST_PCS positions of
 *   the stack. Events come again and again from the same places, and a
 *   return address seen at the same depth before has its rule at hand:
 *   comparing it is a branch the CPU predicts, where looking it up is a
 *   chain of loads the next frame's address waits on (the return
 *   address, the table's cache slot, then the CFA).
 *
 * A rule depends only on the pc, the snapshot and the mode, so an entry
 * stays right while the label does; the label changes (and the entries
 * are emptied) when a walk finds the registry reread or the mode changed.
 *
 * Written only by walks that may build (the tracer's event path, never a
 * signal handler's walk, which may read it), and not by one that
 * interrupted another's (busy). Each entry is emptied before it is
 * written (set or pc 0, both never matched), so a handler interrupting a
 * write sees it empty, never half written. About 350 bytes of
 * initial-exec TLS, like the tracer's own (src/runtime/internal.h). */
#define LAST_PCS 16

typedef struct recent_obj {
  const objset *set; /* NULL: empty */
  uint32_t seq;
  int mode;
  wobj w;
} recent_obj;

typedef struct last_walk {
  const objset *set; /* label; NULL: empty */
  uint32_t seq;
  int mode;
  int busy;          /* a walk that may write is under way */
  uintptr_t pc[LAST_PCS]; /* 0: empty */
  uint32_t rule[LAST_PCS];
  recent_obj obj[2];
} last_walk;

static __thread last_walk last __attribute__((tls_model("initial-exec")));

#define SIGNAL_FENCE() atomic_signal_fence(memory_order_seq_cst)

/* The entry for look, or NULL. */
static inline const recent_obj *recent_find(const objset *s, uint32_t seq, int mode,
                                            uintptr_t look) {
  for (int i = 0; i < 2; i++) {
    const recent_obj *e = &last.obj[i];
    if (e->set == s && e->seq == seq && e->mode == mode && look - e->w.lo < e->w.len) return e;
  }
  return NULL;
}

/* Caller may write (see above). */
static __attribute__((noinline)) void recent_put(const objset *s, uint32_t seq, int mode,
                                                 const wobj *w) {
  recent_obj *a = &last.obj[0], *b = &last.obj[1];
  b->set = NULL;
  SIGNAL_FENCE();
  b->seq = a->seq;
  b->mode = a->mode;
  b->w = a->w;
  SIGNAL_FENCE();
  b->set = a->set;
  a->set = NULL;
  SIGNAL_FENCE();
  a->seq = seq;
  a->mode = mode;
  a->w = *w;
  SIGNAL_FENCE();
  a->set = s;
}

/* Relabels the rules for snapshot (s, seq) and mode, emptied. Caller may
 * write. */
static __attribute__((noinline)) void last_relabel(const objset *s, uint32_t seq, int mode) {
  last.set = NULL;
  SIGNAL_FENCE();
  for (int i = 0; i < LAST_PCS; i++) last.pc[i] = 0;
  last.seq = seq;
  last.mode = mode;
  SIGNAL_FENCE();
  last.set = s;
}

/* The rule of the pc at position i, found by lookup: kept for the next
 * walks. Caller may write. */
static inline void last_put(size_t i, uintptr_t pc, uint32_t rule) {
  if (i >= LAST_PCS) return;
  last.pc[i] = 0;
  SIGNAL_FENCE();
  last.rule[i] = rule;
  SIGNAL_FENCE();
  last.pc[i] = pc;
}

/* lookup's answer for a return address outside w's table. */
#define RULE_OUTSIDE UINT32_MAX

/* The rule for return address ra in w, kept for the next walks at
 * position at if keep. Out of line, so that the walk's fast loop keeps
 * its own values (the hash above all, a chain of multiplies) in
 * registers: a stack slot between its steps costs more than this call,
 * which only frames new to their position in the stack pay. Outside
 * ThreadSanitizer's view for the reason ctrace__unw_rule is. */
static __attribute__((noinline, no_sanitize("thread"))) uint32_t lookup(const wobj *w, uintptr_t ra,
                                                                       size_t at, bool keep) {
  uintptr_t o = ra - 1 - w->tbase;
  if (o >= w->tlen) return RULE_OUTSIDE;
  uint32_t rule = ctrace__unw_rule(w->tab, (uint32_t)o);
  if (keep) last_put(at, ra, rule);
  return rule;
}

/* Reads the word at a if [a, a + 8) lies in [lo, hi). */
#define READ(a, lo, hi, out)                                                          \
  ((a) >= (lo) && (a) < (hi) && (hi) - (a) >= 8 && !((a) & 7) ? ((out) = *(const uintptr_t *)(a), true) \
                                                            : false)

/* ucontext_t's gregs on x86-64 Linux: uc_flags, uc_link, uc_stack (24),
 * then mcontext's gregs[23]: RBP is 10, RSP 15, RIP 16. */
#define UC_GREG(n) (40 + 8 * (n))

/* Stack reads may touch slots the compiler never marked as ours (saved
 * registers of other frames, a signal frame): not ASan's business.
 * Async-signal-safe unless flags has CTRACE__UNW_MAY_BUILD.
 *
 * Invariants the loops rely on: sp only grows, within [lo, hi] (checked
 * once at the start and after a signal frame), so a frame whose CFA is
 * above sp and at most hi has its return address and saved RBP, which its
 * rule puts between sp and the CFA (table.h), inside [lo, hi). No sum
 * overflows: sp and bp are checked against hi before an offset (< 2^24)
 * is added. */
__attribute__((no_sanitize("address", "thread"), always_inline)) static inline int
walk(objset *s, uint32_t seq, const ctrace__unw_regs *r, const ctrace__unw_bounds *b, int mode,
     unsigned flags, uintptr_t *pcs, int max, uint64_t *hash) {
  uintptr_t pc = r->pc, sp = r->sp, bp = r->bp, lo = b->lo, hi = b->hi;
  uintptr_t *out = pcs, *end = pcs + (max > 0 ? max : 0);
  /* Must equal src/runtime/stack.c's hash_pcs. */
  uint64_t h = 0x9E3779B97F4A7C15u;
#define RECORD(x)                         \
  do {                                    \
    uintptr_t x_ = (x);                   \
    *out++ = x_;                          \
    h = (h ^ x_) * 0xBF58476D1CE4E5B9u;   \
    h ^= h >> 31;                         \
  } while (0)
  bool exact = r->exact, switched = false;
  /* The object of the last frame: consecutive frames are mostly in one.
   * Empty at first, so the first frame searches. */
  wobj w = {0, 0, 0, 0, NULL, false};
  /* What the last walks learnt (last_walk): keep, this walk may write it;
   * use, its rules are for this snapshot and mode. Neither while the
   * snapshot is being written (seq odd: the walk will be redone). */
  bool keep = (flags & CTRACE__UNW_MAY_BUILD) && s && !(seq & 1) && !last.busy, busy = keep;
  if (keep) {
    last.busy = 1;
    SIGNAL_FENCE();
    if (last.set != s || last.seq != seq || last.mode != mode) last_relabel(s, seq, mode);
  }
  bool use = s && !(seq & 1) && last.set == s && last.seq == seq && last.mode == mode;
  if (out == end) goto out;
  RECORD(exact ? pc + 1 : pc);
  if (sp < lo || sp > hi) goto out;
  while (out < end) {
    uintptr_t look = exact ? pc : pc - 1;
    if (look - w.lo >= w.len) {
      const recent_obj *e = use ? recent_find(s, seq, mode, look) : NULL;
      if (e) {
        w = e->w;
      } else {
        objset *s0 = s;
        if (!enter_obj(&s, look, mode, flags, &w)) break;
        /* When enter_obj read the registry anew, what this walk learns is
         * not for the snapshot the label names. */
        if (s != s0) keep = use = false;
        if (keep && w.len) recent_put(s, seq, mode, &w);
      }
    }
    /* A frame pointer is valid at every return address of a function
     * that keeps one, but not at an interrupted pc (a prologue, say):
     * there the table decides. Frame-pointer frames are walked in a loop
     * of their own, as src/runtime/stack.c does, while they stay in the
     * object. */
    if (w.fp && !(exact && w.tab)) {
      for (;;) {
        if (bp < sp || bp & 7 || bp >= hi || hi - bp < 16) goto out;
        const uintptr_t *f = (const uintptr_t *)bp;
        pc = f[1];
        bp = f[0];
        sp = (uintptr_t)(f + 2);
        exact = false;
        if (pc < 4096) goto out;
        RECORD(pc);
        if (out == end || pc - 1 - w.lo >= w.len) break;
      }
      continue;
    }
    /* Position of pc in pcs, for last_walk's rules. */
    size_t at = (size_t)(out - pcs) - 1;
    uint32_t rule;
    if (!exact && use && at < LAST_PCS && last.pc[at] == pc) {
      rule = last.rule[at];
    } else {
      rule = look - w.tbase < w.tlen ? ctrace__unw_rule(w.tab, (uint32_t)(look - w.tbase))
                                     : RULE_NONE;
      if (!exact && keep && w.tlen) last_put(at, pc, rule);
    }
    /* The common case in a loop of its own: CFA = RSP or RBP + n at
     * return addresses, frame after frame in one object. Its rules keep
     * the CFA 8-aligned from an aligned sp, and what they read inside
     * [sp, CFA) (table.h): one comparison with hi per frame. A return
     * address equal to the last (recursion) has the last one's rule. */
    if (!exact && !(sp & 7)) {
      while (RULE_KIND(rule) - 1u < 2u) {
        uintptr_t cfa;
        if (RULE_KIND(rule) == RULE_RSP) {
          cfa = sp + RULE_OFF(rule);
        } else {
          if (bp < sp || bp >= hi || (bp & 7)) goto out;
          cfa = bp + RULE_OFF(rule);
        }
        if (cfa > hi) goto out;
        uintptr_t ra = ((const uintptr_t *)cfa)[-1];
        uint32_t slot = RULE_RBPSLOT(rule);
        if (slot == RBP_LOST)
          bp = 0;
        else if (slot)
          bp = ((const uintptr_t *)cfa)[-(int)slot];
        if (ra < 4096) goto out;
        sp = cfa;
        RECORD(ra);
        if (out == end) goto out;
        if (ra != pc) {
          pc = ra;
          at = (size_t)(out - pcs) - 1;
          if (use && at < LAST_PCS && last.pc[at] == ra) {
            /* Right whichever object ra is in: a later lookup that misses
             * w goes back to the outer loop, which finds ra's. */
            rule = last.rule[at];
          } else {
            rule = lookup(&w, ra, at, keep);
            if (rule == RULE_OUTSIDE) goto next; /* another object, or no rule known */
          }
        }
      }
      look = pc - 1;
    }
    uintptr_t cfa, ra;
    switch (RULE_KIND(rule)) {
    case RULE_RSP:
      cfa = sp + RULE_OFF(rule);
      break;
    case RULE_RBP:
      if (bp < sp || bp >= hi) goto out;
      cfa = bp + RULE_OFF(rule);
      break;
    case RULE_PLT:
      cfa = sp + RULE_OFF(rule) + ((look & 15) >= RULE_RBPSLOT(rule) ? 8 : 0);
      rule = RULE(RULE_PLT, 0, 0);
      break;
    case RULE_SIGNAL: {
      /* sp is just past the handler's return address: the ucontext. */
      uintptr_t nip, nsp, nbp;
      if (!READ(sp + UC_GREG(16), lo, hi, nip) || !READ(sp + UC_GREG(15), lo, hi, nsp) ||
          !READ(sp + UC_GREG(10), lo, hi, nbp))
        goto out;
      if (nsp < lo || nsp >= hi) {
        /* The handler ran on sigaltstack: the interrupted code is on the
         * thread's stack, once. */
        if (switched || nsp < b->lo2 || nsp >= b->hi2) goto out;
        lo = b->lo2;
        hi = b->hi2;
        switched = true;
      } else if (nsp <= sp) {
        goto out;
      }
      if (nip < 4096) goto out;
      pc = nip;
      sp = nsp;
      bp = nbp;
      exact = true;
      RECORD(pc + 1);
      continue;
    }
    default: /* RULE_NONE, RULE_END */
      goto out;
    }
    if (cfa <= sp || !READ(cfa - 8, lo, hi, ra)) goto out;
    uint32_t slot = RULE_RBPSLOT(rule);
    if (slot == RBP_LOST)
      bp = 0;
    else if (slot && !READ(cfa - 8 * slot, lo, hi, bp))
      goto out;
    if (ra < 4096) goto out;
    pc = ra;
    sp = cfa;
    exact = false;
    RECORD(pc);
  next:;
  }
#undef RECORD
out:
  if (busy) {
    SIGNAL_FENCE();
    last.busy = 0;
  }
  if (hash) *hash = h;
  return (int)(out - pcs);
}

/* Carries walk's attributes: it is inlined here. */
__attribute__((no_sanitize("address", "thread"))) int
ctrace__unwind(const ctrace__unw_regs *r, const ctrace__unw_bounds *b, int mode, unsigned flags,
               uintptr_t *pcs, int max, uint64_t *hash) {
  objset *s = atomic_load_explicit(&cur, memory_order_acquire);
  if (!s) {
    if (!(flags & CTRACE__UNW_MAY_BUILD)) {
      /* Nothing known yet: the first frame only. */
      static const ctrace__unw_bounds none = {0, 0, 0, 0};
      return walk(NULL, 0, r, &none, mode, flags, pcs, max > 1 ? 1 : max, hash);
    }
    ctrace__unwind_prepare();
    s = atomic_load_explicit(&cur, memory_order_acquire);
  }
  int n = 0;
  for (int tries = 0; tries < 3; tries++) {
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    n = walk(s, seq, r, b, mode, flags, pcs, max, hash);
    atomic_thread_fence(memory_order_acquire);
    if (!(seq & 1) && LD(s->seq) == seq) break;
    s = atomic_load_explicit(&cur, memory_order_acquire);
  }
  return n;
}
