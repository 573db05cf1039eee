/* In-process symbolizer: return addresses -> {function, file, line}.
 *
 * Stacks are captured while tracing as bare PCs (a frame-pointer walk);
 * names are only needed when the trace is written out, so the tracer
 * symbolizes when tracing stops, off the hot path. The symbolizer reads the
 * process's own ELF files and DWARF through elfutils' libdwfl, falling back
 * to symbol tables and dladdr when there is no debug information.
 *
 * Threads: none of these functions is thread-safe. The caller serializes
 * every call (the tracer calls them under its control lock). They may be
 * called from any thread, but not from a signal handler: they allocate and
 * open files.
 */
#ifndef CTRACE_RUNTIME_SYMBOLIZE_H
#define CTRACE_RUNTIME_SYMBOLIZE_H

#include <stdint.h>

typedef struct ctrace__frame {
  const char *func; /* function name, "?" if unknown */
  const char *file; /* source file path, "?" if unknown */
  uint64_t line;    /* 0 if unknown */
} ctrace__frame;

/* pc is a return address: the call instruction is looked up at pc-1.
   Never fails. Strings stay valid until ctrace__symbolize_close().
   Not thread-safe: the caller serializes (the tracer calls it under its control lock).

   For a call made from code inlined into its caller, the frame names the
   function that owns the stack frame (the outermost non-inlined function)
   and the line in it where the inlined code was called, so func, file and
   line always agree with each other.

   The first call reads /proc/self/maps; libraries loaded later are picked
   up when a PC falls outside every known module. Results are cached per
   PC until ctrace__symbolize_close(). */
void ctrace__symbolize(uintptr_t pc, ctrace__frame *out);

/* The program's main begins at entry (glibc's __libc_start_main is handed
   it): code of a stripped program in the function there is named "main",
   and in the one at its entry point "_start", as their symbols would name
   them, not by their addresses. */
void ctrace__symbolize_main(uintptr_t entry);

/* Closes the files the symbolizer holds open (the libdwfl session) and
   keeps what it learnt (frames by pc, strings): for the end of each
   generation, which must not leave descriptors in the program's table
   yet should not read the same DWARF again each time. */
void ctrace__symbolize_release(void);

/* Frees everything the symbolizer holds: the libdwfl session, the cache
   and every string handed out. Safe to call when nothing was symbolized
   and more than once; a later ctrace__symbolize() starts afresh. */
void ctrace__symbolize_close(void);

/* Fork child: forgets the parent's session, cache and strings unread
   (another thread of the parent may have been inside them); the child
   symbolizes afresh. The parent's copy is left as the rest of its trace. */
void ctrace__symbolize_fork_child(void);

/* name demangled (C++ by the process's own __cxa_demangle, Rust's legacy
   and v0 manglings by their rules: demangle.c, demangle_v0.c) into out
   (cap bytes), or name itself when it is no mangled name, cannot be read,
   or does not fit. */
#include <stdbool.h>
#include <stddef.h>
const char *ctrace__demangle(const char *name, char *out, size_t cap);
/* A Rust v0 name (_R...) demangled into out (demangle_v0.c): false, and
 * out not to be used, if it is not one this reads or does not fit. */
bool ctrace__demangle_rust_v0(const char *name, char *out, size_t cap);

/* Dwfl find_debuginfo callback (debugfile.c): build id, then
   .gnu_debuglink in local directories; never the network. */
#include <elfutils/libdwfl.h>
int ctrace__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                           Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                           GElf_Word debuglink_crc, char **debuginfo_file_name);

#endif /* CTRACE_RUNTIME_SYMBOLIZE_H */
