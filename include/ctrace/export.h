/* ctrace's exporters (src/export/): a trace in formats other tools open,
 * written with no SDK of theirs. */
#ifndef CTRACE_EXPORT_H
#define CTRACE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "ctrace/parse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the trace of a checked reader to out as Perfetto's protobuf trace
 * format (for ui.perfetto.dev and trace_processor): a process named
 * process_name with pid (0: 1), a track per goroutine with its states as
 * slices and a child track of its user regions, a track per P, GC and
 * stop-the-world slices, the heap as a counter, and flows from creator to
 * created and from waker to woken. docs/analyse.md lists it all. 0, or -1
 * with a message in err. */
int ctrace_export_perfetto(ctrace_reader *r, FILE *out, const char *process_name, uint32_t pid,
                           char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
