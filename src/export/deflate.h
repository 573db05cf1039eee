/* The Perfetto export's packets deflated in bundles (deflate.c). Internal. */
#ifndef CTRACE_EXPORT_DEFLATE_H
#define CTRACE_EXPORT_DEFLATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ex_deflate ex_deflate;

enum { EX_DEFLATE_OK, EX_DEFLATE_OOM, EX_DEFLATE_WERR /* errno says why */ };

/* A writer of bundles to out, compressed on up to `threads` threads of its
 * own (0: on the caller's); NULL when out of memory. */
ex_deflate *ctrace__ex_deflate_new(FILE *out, unsigned threads);
/* Takes n bytes of whole framed packets (Trace.packet fields). */
int ctrace__ex_deflate_write(ex_deflate *d, const void *b, size_t n);
/* Writes what is left. *written: the bytes written to out in all. */
int ctrace__ex_deflate_finish(ex_deflate *d, uint64_t *written);
/* Stops the threads and frees d, finished or not. */
void ctrace__ex_deflate_free(ex_deflate *d);

#endif
