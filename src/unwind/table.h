/* Compiled unwind tables: one per object, immutable once built. Private
 * to src/unwind/. */
#ifndef CTRACE_UNWIND_TABLE_H
#define CTRACE_UNWIND_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A rule, 32 bits:
 *   bits 0..2  kind (RULE_*)
 *   bits 3..7  RBP: 0 unchanged; k in 1..30 saved at CFA - 8k; 31 lost
 *              (PLT: the threshold of pc & 15 past which CFA is 8 higher)
 *   bits 8..31 CFA offset in bytes
 * The return address is always at CFA - 8 (rows where DWARF says
 * otherwise compile to RULE_NONE). For RULE_RSP and RULE_RBP the offset
 * is a multiple of 8 (else RULE_NONE) and a saved RBP lies inside the
 * frame, 8k <= offset (else RBP was popped already: unchanged, 0, as
 * after `leave`, where GCC leaves the rule saying "saved"): so from an
 * 8-aligned stack
 * pointer the CFA stays 8-aligned, and every word a frame's rule reads
 * lies between the stack pointer and the CFA, which the walk's fast loop
 * checks once per frame instead of once per read. */
enum {
  RULE_NONE = 0,   /* no rule known here: the walk stops */
  RULE_RSP = 1,    /* CFA = RSP + off */
  RULE_RBP = 2,    /* CFA = RBP + off */
  RULE_SIGNAL = 3, /* a signal trampoline: the caller's registers are in the ucontext at RSP */
  RULE_PLT = 4,    /* CFA = RSP + off, + 8 where (pc & 15) >= threshold */
  RULE_END = 5,    /* the return address is undefined: outermost frame */
};
#define RULE(kind, rbp, off) ((uint32_t)(kind) | (uint32_t)(rbp) << 3 | (uint32_t)(off) << 8)
#define RULE_KIND(r) ((r) & 7u)
#define RULE_RBPSLOT(r) ((r) >> 3 & 31u)
#define RULE_OFF(r) ((r) >> 8)
#define RBP_LOST 31u
#define RULE_MAX_OFF ((1u << 24) - 1)

/* Rows are link-time addresses (pc - load bias), as 32-bit offsets from
 * lo; page[i] is the row in effect at lo + i * 4096 (npages + 1 entries),
 * so a lookup is one index load and a binary search among the few rows of
 * one page. */
#define TABLE_PAGE_SHIFT 12

typedef struct ctrace__unw_table {
  uint64_t key;      /* fingerprint of the object's CFI: loads of the same file share it */
  uintptr_t lo, hi;  /* link-time range covered */
  uint32_t n, npages;
  bool fp_all;       /* every function with a frame keeps RBP as frame pointer */
  const uint32_t *page;
  const uint32_t *pc; /* n offsets from lo, ascending */
  const uint32_t *rule;
  /* Rules of pcs looked up lately, by hash of the offset: ~offset << 32 |
   * rule in one word, so that a reader never sees half of an entry (any
   * thread may fill one; a signal handler may read one). Return addresses
   * repeat from walk to walk; the search costs branch mispredictions. */
  _Atomic uint64_t *cache;
  uint32_t cache_mask; /* slots - 1 */
  size_t mapped;     /* bytes mmapped for this table, header included */
  uint32_t debug_fdes; /* FDEs taken from .debug_frame */
  int debug_frame;   /* CTRACE__UNW_DF_* (elf.h): where .debug_frame was read from */
  const char *name;  /* the object's path, "(program)" for the program */
  struct ctrace__unw_table *next; /* cache of every table built */
} ctrace__unw_table;

/* The rule at offset o from t->lo, which the caller has checked is below
 * t->hi - t->lo (the walk keeps that range at hand per object, and one
 * comparison tells both that a pc is still in the object and that the
 * table covers it). Async-signal-safe: reads only the table. Outside
 * ThreadSanitizer's view like its caller, walk() (unwind.c), whose
 * acquire of the table it relies on: GCC does not inline across the
 * attribute, and TSan, not seeing that acquire, took the table's first
 * reads after another thread built it for a race. */
__attribute__((no_sanitize("thread"))) static inline uint32_t ctrace__unw_rule(const ctrace__unw_table *t, uint32_t o) {
  /* Shifts, not a multiply: this is on the walk's critical path (the next
   * frame's address waits for the rule). */
  _Atomic uint64_t *slot = &t->cache[(o ^ o >> 7 ^ o >> 15) & t->cache_mask];
  uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
  if ((uint32_t)(e >> 32) == ~o) return (uint32_t)e;
  /* Last row in [base, page[p + 1]] starting at or below o; row base
   * always does. Branch-free halving: the compiler makes it a cmov. */
  const uint32_t *pc = t->pc;
  uint32_t base = t->page[o >> TABLE_PAGE_SHIFT];
  uint32_t len = t->page[(o >> TABLE_PAGE_SHIFT) + 1] - base + 1;
  while (len > 1) {
    uint32_t half = len / 2;
    base = pc[base + half] <= o ? base + half : base;
    len -= half;
  }
  uint32_t rule = t->rule[base];
  atomic_store_explicit(slot, (uint64_t)~o << 32 | rule, memory_order_relaxed);
  return rule;
}

/* What an object's table is compiled from. */
typedef struct ctrace__unw_src {
  uintptr_t bias;             /* load bias (dlpi_addr) */
  uintptr_t text_lo, text_hi; /* its text, link-time: rows outside are left out */
  /* .eh_frame_hdr (run-time address) and the segment holding it, [seg_lo,
   * seg_hi) (what of .eh_frame may be read); hdr NULL if none. */
  const uint8_t *hdr;
  uintptr_t seg_lo, seg_hi;
  /* .debug_frame's bytes, read from a file (elf.c); NULL if none. */
  const uint8_t *debug_frame;
  size_t debug_frame_len;
} ctrace__unw_src;

/* Compiles an object's CFI: .eh_frame, then the FDEs of .debug_frame for
 * functions .eh_frame leaves out. key is its fingerprint. Returns NULL if
 * there is none usable or memory ran out. The caller holds the loader's
 * lock (dl_iterate_phdr callback), so the object stays mapped. Uses mmap
 * only, never malloc: it may run inside an interposed malloc's caller. */
ctrace__unw_table *ctrace__unw_compile(const ctrace__unw_src *src, uint64_t key);

#endif
