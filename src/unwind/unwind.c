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

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

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

/* Fingerprint of an object's CFI: its .eh_frame_hdr, whose table holds
 * every function's offset and FDE's position relative to itself. */
static uint64_t fingerprint(const phdr_info *d) {
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
  uint64_t k = fnv(14695981039346656037ull, h, n);
  /* And where the text lies relative to it, and the size. */
  uintptr_t rel[2] = {d->hdr - d->lo, d->hi - d->lo};
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
  int state = d.hdr ? OBJ_UNBUILT : OBJ_NOTABLE;
  /* A table built for this very object (same fingerprint) is kept; the
   * fingerprint reads the object's memory, which is safe here, under the
   * loader's lock. */
  if (d.hdr && cache && (t = cached(fingerprint(&d)))) state = OBJ_BUILT;
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
  uintptr_t bias, hdr;    /* the object to build, or */
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

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  build_arg *b = arg;
  phdr_info d;
  if (!describe(info, &d) || !d.hdr) return 0;
  if (b->name ? !(info->dlpi_name && strstr(info->dlpi_name, b->name))
              : (info->dlpi_addr != b->bias || d.hdr != b->hdr))
    return 0;
  b->found = true;
  uint64_t key = fingerprint(&d);
  b->tab = cached(key);
  if (!b->tab) {
    double t0 = now_ms();
    b->tab = ctrace__unw_compile(info->dlpi_addr, (const uint8_t *)d.hdr, d.seg_lo, d.seg_hi, key);
    b->ms = now_ms() - t0;
    if (b->tab) {
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
    build_arg b = {LD(o->bias), LD(o->hdr), NULL, NULL, false, 0};
    dl_iterate_phdr(build_cb, &b);
    /* Publish the table before the state that says it is there. */
    atomic_store_explicit(&o->tab, b.tab, memory_order_release);
    atomic_store_explicit(&o->state, b.tab ? OBJ_BUILT : OBJ_NOTABLE, memory_order_release);
  }
  pthread_mutex_unlock(&reg_mu);
}

long ctrace__unwind_build(const char *name, bool *fp_all, double *ms) {
  pthread_mutex_lock(&reg_mu);
  build_arg b = {0, 0, name, NULL, false, 0};
  dl_iterate_phdr(build_cb, &b);
  pthread_mutex_unlock(&reg_mu);
  if (!b.tab) return -1;
  if (fp_all) *fp_all = b.tab->fp_all;
  if (ms) *ms = b.ms;
  return (long)b.tab->n;
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

/* Reads the word at a if [a, a + 8) lies in [lo, hi). */
#define READ(a, lo, hi, out) \
  ((a) >= (lo) && (a) <= (hi) - 8 && !((a) & 7) ? ((out) = *(const uintptr_t *)(a), true) : false)

/* ucontext_t's gregs on x86-64 Linux: uc_flags, uc_link, uc_stack (24),
 * then mcontext's gregs[23]: RBP is 10, RSP 15, RIP 16. */
#define UC_GREG(n) (40 + 8 * (n))

/* Stack reads may touch slots the compiler never marked as ours (saved
 * registers of other frames, a signal frame): not ASan's business.
 * Async-signal-safe unless flags has CTRACE__UNW_MAY_BUILD. */
__attribute__((no_sanitize("address", "thread"), always_inline)) static inline int
walk(objset *s, const ctrace__unw_regs *r, const ctrace__unw_bounds *b, int mode, unsigned flags,
     uintptr_t *pcs, int max, uint64_t *hash) {
  uintptr_t pc = r->pc, sp = r->sp, bp = r->bp, lo = b->lo, hi = b->hi;
  /* Must equal src/runtime/stack.c's hash_pcs. */
  uint64_t h = 0x9E3779B97F4A7C15u;
#define RECORD(x)                         \
  do {                                    \
    uintptr_t x_ = (x);                   \
    pcs[n++] = x_;                        \
    h = (h ^ x_) * 0xBF58476D1CE4E5B9u;   \
    h ^= h >> 31;                         \
  } while (0)
  bool exact = r->exact, switched = false;
  /* The object of the last frame: consecutive frames are mostly in one.
   * Empty at first, so the first frame searches. */
  uintptr_t olo = 0, ohi = 0, obias = 0;
  const ctrace__unw_table *otab = NULL;
  bool ofp = false;
  /* The last lookup: recursion returns to one pc frame after frame. */
  uintptr_t last_look = 0;
  uint32_t last_rule = RULE_NONE;
  int n = 0;
  if (max <= 0) goto out;
  RECORD(exact ? pc + 1 : pc);
  while (n < max) {
    uintptr_t look = exact ? pc : pc - 1;
    if (look - olo >= ohi - olo) {
      obj *o = find_obj(s, look);
      if (!o && (flags & CTRACE__UNW_MAY_BUILD) && refresh_if_changed(true)) {
        s = atomic_load_explicit(&cur, memory_order_acquire);
        o = find_obj(s, look);
      }
      otab = NULL;
      ofp = false;
      if (o) {
        olo = LD(o->lo);
        ohi = LD(o->hi);
        obias = LD(o->bias);
        int st = atomic_load_explicit(&o->state, memory_order_acquire);
        if (st == OBJ_UNBUILT && (flags & CTRACE__UNW_MAY_BUILD)) {
          build(o);
          st = atomic_load_explicit(&o->state, memory_order_acquire);
        }
        if (st == OBJ_BUILT) otab = atomic_load_explicit(&o->tab, memory_order_acquire);
        if (st == OBJ_UNBUILT) break; /* may not build here: stop cleanly */
        ofp = mode == CTRACE__UNW_AUTO && (otab ? otab->fp_all : true);
      } else {
        olo = ohi = 0;
        /* Code outside every object (JIT code): only a frame pointer can
         * help, and only in auto mode. */
        ofp = mode == CTRACE__UNW_AUTO;
      }
    }
    /* A frame pointer is valid at every return address of a function
     * that keeps one, but not at an interrupted pc (a prologue, say):
     * there the table decides. Frame-pointer frames are walked in a loop
     * of their own, as src/runtime/stack.c does, while they stay in the
     * object. */
    if (ofp && !(exact && otab)) {
      for (;;) {
        if (bp < sp || bp & 7 || bp + 16 > hi) goto out;
        const uintptr_t *f = (const uintptr_t *)bp;
        pc = f[1];
        bp = f[0];
        sp = (uintptr_t)(f + 2);
        exact = false;
        if (pc < 4096) goto out;
        RECORD(pc);
        if (n >= max || pc - 1 - olo >= ohi - olo) break;
      }
      continue;
    }
    uint32_t rule = last_rule;
    if (look != last_look) {
      rule = otab ? ctrace__unw_lookup(otab, look - obias) : RULE_NONE;
      last_look = look;
      last_rule = rule;
    }
    /* The common case in a loop of its own: CFA = RSP or RBP + n, frame
     * after frame in one object. sp only grows, from at least lo, and
     * stays 8-aligned, so cfa > sp, 8-aligned and at most hi puts the
     * return address at cfa - 8 inside [lo, hi); a saved RBP below it is
     * checked against lo. */
    while (RULE_KIND(rule) - 1u < 2u) {
      uintptr_t cfa = (RULE_KIND(rule) == RULE_RSP ? sp : bp) + RULE_OFF(rule);
      if (cfa <= sp || cfa > hi || (cfa & 7)) goto out;
      uintptr_t ra = ((const uintptr_t *)cfa)[-1];
      uint32_t slot = RULE_RBPSLOT(rule);
      if (slot == RBP_LOST) {
        bp = 0;
      } else if (slot) {
        if (cfa - 8 * slot < lo) goto out;
        bp = ((const uintptr_t *)cfa)[-(int)slot];
      }
      if (ra < 4096) goto out;
      pc = ra;
      sp = cfa;
      exact = false;
      RECORD(pc);
      if (n >= max) goto out;
      look = pc - 1;
      if (look - olo >= ohi - olo) goto next;
      if (look != last_look) {
        rule = ctrace__unw_lookup(otab, look - obias);
        last_look = look;
        last_rule = rule;
      }
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
  if (hash) *hash = h;
  return n;
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
      return walk(NULL, r, &none, mode, flags, pcs, max > 1 ? 1 : max, hash);
    }
    ctrace__unwind_prepare();
    s = atomic_load_explicit(&cur, memory_order_acquire);
  }
  int n = 0;
  for (int tries = 0; tries < 3; tries++) {
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    n = walk(s, r, b, mode, flags, pcs, max, hash);
    atomic_thread_fence(memory_order_acquire);
    if (!(seq & 1) && LD(s->seq) == seq) break;
    s = atomic_load_explicit(&cur, memory_order_acquire);
  }
  return n;
}
