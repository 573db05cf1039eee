/* Unwinding without frame pointers (x86-64).
 *
 * Code built with -fomit-frame-pointer (most of Debian: libc, Python, any
 * -O2 build) still carries .eh_frame, the DWARF call frame information
 * C++ exceptions use. Interpreting DWARF at every frame is slow (libunwind:
 * ~130 ns for 16 frames), so, as the eBPF profilers' "stack deltas" and
 * Linux's ORC do, each loaded object's CFI is compiled once, lazily, into a
 * sorted table of (start pc, rule) rows, where a rule is one of the few
 * shapes compilers emit on x86-64:
 *
 *   CFA = RSP + n  or  CFA = RBP + n     (canonical frame address)
 *   return address at CFA - 8
 *   saved RBP at CFA - 8k, or RBP unchanged
 *   plus: PLT stubs, signal frames (__restore_rt), outermost frames.
 *
 * The walk then only searches that table (a page index and a short binary
 * search) and reads two words of stack per frame.
 *
 * Concurrency and signals. The registry of loaded objects is read without
 * locks; tables, once published, are immutable and never freed (a table is
 * shared by every load of the same object, so a dlopen/dlclose loop does
 * not grow memory). A walk without CTRACE__UNW_MAY_BUILD never allocates,
 * locks or calls the loader: it is async-signal-safe, and objects whose
 * table is not built yet simply end the walk. With it (the tracer's event
 * path), a missing table is built on the spot (mmap, the registry's mutex,
 * dl_iterate_phdr, which holds the loader's lock so the object cannot be
 * unmapped while its CFI is read).
 *
 * Every stack read is bounds-checked against the stack being walked, so a
 * wrong rule or a corrupt stack ends the walk and never faults.
 */
#ifndef CTRACE_UNWIND_UNWIND_H
#define CTRACE_UNWIND_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Same values as the public CTRACE_UNWIND_* (ctrace.h). */
enum {
  CTRACE__UNW_AUTO = 0,   /* frame pointers in objects built with them, tables elsewhere */
  CTRACE__UNW_FP = 1,     /* frame pointers only (src/runtime/stack.c's walk) */
  CTRACE__UNW_TABLES = 2, /* tables for every frame */
};

/* Flags of ctrace__unwind. */
#define CTRACE__UNW_MAY_BUILD 1u /* may build tables and reread the loader's list */

/* Where the walk starts: the registers of a frame. pc is a return address
 * (the call is at pc - 1) unless exact is set, as for the pc a signal
 * interrupted. */
typedef struct ctrace__unw_regs {
  uintptr_t pc, sp, bp;
  bool exact;
} ctrace__unw_regs;

/* Stack memory the walk may read: [lo, hi), and, after a signal frame
 * whose interrupted stack lies elsewhere (a handler on sigaltstack), also
 * [lo2, hi2). */
typedef struct ctrace__unw_bounds {
  uintptr_t lo, hi, lo2, hi2;
} ctrace__unw_bounds;

/* Writes up to max pcs of the stack starting at r into pcs and returns
 * how many, and, if hash is not NULL, their hash for the tracer's stack
 * table (src/runtime/stack.c's, computed as the walk goes so that its
 * multiplies overlap the walk's loads). The first is r->pc. Frames after a signal frame hold the
 * interrupted pc plus one, so that, like return addresses, pc - 1 lies in
 * the instruction (the symbolizer looks there). */
int ctrace__unwind(const ctrace__unw_regs *r, const ctrace__unw_bounds *b, int mode,
                   unsigned flags, uintptr_t *pcs, int max, uint64_t *hash);

/* CTRACE_UNWIND_* for "auto", "fp" or "tables" (CTRACE_UNWIND, ctrace run
 * --unwind=); NULL or "" is auto; -1 for anything else. */
int ctrace__unwind_mode(const char *name);
/* The name of a CTRACE_UNWIND_* value. */
const char *ctrace__unwind_name(int mode);

/* Slow path, for a stack new to the tracer's table: true when the loader
 * unloaded an object since the registry was read (the registry is then
 * reread, and the caller should walk again). Not async-signal-safe. */
bool ctrace__unwind_loader_changed(void);

/* In the child of a fork: the registry's mutex may have been held by a
 * thread that does not exist here. The tables and the list stay valid
 * (the child has the parent's mappings). */
void ctrace__unwind_fork_child(void);

/* Reads the loader's list of objects now (no tables are built), so that
 * the first walks need not. Not async-signal-safe. */
void ctrace__unwind_prepare(void);

/* What ctrace__unwind_build tells of a table. */
typedef struct ctrace__unw_build_info {
  bool fp_all;     /* every function with a frame keeps RBP as a frame pointer */
  double ms;       /* CPU time taken to build it (0 when it was built before) */
  int debug_frame; /* where rows from .debug_frame came from: 0 none, 1 the
                    * object's file, 2 a debug file by build id, 3 by
                    * .gnu_debuglink (elf.h) */
  unsigned debug_fdes; /* functions whose rows came from .debug_frame */
} ctrace__unw_build_info;

/* Builds the table of the loaded object whose path contains name (the
 * first such), as a walk would; for the benchmark and tests. Returns the
 * rows of the table, or -1 if no such object is loaded or it has no CFI;
 * fills *info unless NULL. */
long ctrace__unwind_build(const char *name, ctrace__unw_build_info *info);

/* With CTRACE_VERBOSE set, one line on stderr per table that holds rows
 * from .debug_frame, saying where they came from. Not async-signal-safe. */
void ctrace__unwind_report(void);

#endif
