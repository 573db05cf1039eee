/* What the loader will make of a program: whether LD_PRELOAD applies to it
 * and which sanitizer runtime it needs. Shared by the preload shim (for
 * the program an exec starts) and `ctrace run` (for the program it runs),
 * so that both decide the same way. No libelf: a few preads of the ELF
 * headers, async-signal-safe and allocation-free, as exec wrappers want. */
#ifndef CTRACE_PRELOAD_ELFINFO_H
#define CTRACE_PRELOAD_ELFINFO_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ctrace__elf_info {
  bool elf;      /* an ELF file of this machine's class */
  bool dynamic;  /* has a program interpreter: LD_PRELOAD applies */
  bool tsan;     /* needs libtsan */
  bool no_libc_start; /* imports no __libc_start_main (a Go program, say):
                         the shim would never start tracing */
  char asan[64]; /* DT_NEEDED name of libasan ("libasan.so.8"), or "" */
} ctrace__elf_info;

/* Fills *out for the file at path; a script ("#!interpreter") is described
 * by its interpreter, which is what runs. Returns false if the file cannot
 * be read (out then says "not ELF"). */
bool ctrace__elf_info_read(const char *path, ctrace__elf_info *out);

/* The file execvp would run for file: file itself if it has a '/', else
 * the first executable regular file of that name in $PATH, searched as
 * glibc does (no PATH: /bin:/usr/bin; an empty entry: the current
 * directory). Sets errno (ENOENT, EACCES) and returns false if there is
 * none. */
bool ctrace__elf_find_program(const char *file, char *out, size_t size);

#endif
