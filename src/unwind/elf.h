/* Reading what of a loaded object is not mapped: its .debug_frame, from
 * its file or its separate debug file. Private to src/unwind/. */
#ifndef CTRACE_UNWIND_ELF_H
#define CTRACE_UNWIND_ELF_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes read from a file into memory of their own (mmap). */
typedef struct ctrace__unw_blob {
  uint8_t *data; /* NULL: none */
  size_t len;
  size_t mapped; /* bytes to munmap at data */
} ctrace__unw_blob;

/* Where a .debug_frame was found, for ctrace__unwind_build's callers. */
enum {
  CTRACE__UNW_DF_NONE = 0,
  CTRACE__UNW_DF_FILE,      /* the object's own file */
  CTRACE__UNW_DF_BUILD_ID,  /* /usr/lib/debug/.build-id/xx/yyyy.debug */
  CTRACE__UNW_DF_DEBUGLINK, /* a file named by .gnu_debuglink */
};

/* The .debug_frame of the object info describes, read from its file
 * (dlpi_name, /proc/self/exe for the program; checked to be the file
 * mapped: same program headers) or, where that has none, from its
 * separate debug file: by build id under /usr/lib/debug/.build-id, then
 * by .gnu_debuglink in the file's directory, its .debug/ and
 * /usr/lib/debug/ + the directory (GDB's places), checked against the
 * object's build id, or without one, the link's CRC. Compressed sections
 * (SHF_COMPRESSED, zlib, as Debian's -dbgsym files have them) are
 * inflated. Returns CTRACE__UNW_DF_* (NONE: *out empty).
 *
 * Local files only. System calls made directly (the preloaded shim wraps
 * read and pread), memory from mmap (it wraps malloc): runs inside a
 * dl_iterate_phdr callback on the tracer's event path. */
int ctrace__unw_debug_frame(const struct dl_phdr_info *info, ctrace__unw_blob *out);

void ctrace__unw_blob_free(ctrace__unw_blob *b);

/* The GNU build id in the notes of the object info describes (its
 * PT_NOTE segments, in memory); false if it has none. */
bool ctrace__unw_build_id(const struct dl_phdr_info *info, const uint8_t **id, size_t *len);

#endif
