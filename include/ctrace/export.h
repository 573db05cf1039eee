/* ctrace's exporters (src/export/): traces in formats other tools open,
 * written with no SDK of theirs. */
#ifndef CTRACE_EXPORT_H
#define CTRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctrace/parse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ctrace_export_format {
  CTRACE_EXPORT_PERFETTO, /* Perfetto's protobuf trace format */
  CTRACE_EXPORT_JSON,     /* Chrome's Trace Event Format (JSON) */
} ctrace_export_format;

/* One trace of an export: a process of the timeline. */
typedef struct ctrace_export_trace {
  ctrace_reader *reader; /* checked (ctrace_reader_check) */
  const char *name;      /* the process's name */
  uint32_t pid;          /* its pid; 0: its position among the traces, from 1 */
} ctrace_export_trace;

/* Writes n traces to out as one timeline in format, a process each, each
 * trace's first event at time 0 (the reader gives times since it): per
 * goroutine a track of its states as slices and one of its user regions,
 * a track per P, GC and stop-the-world slices, a track per user task with
 * its logs, counters of goroutines by state, threads and the heap, flows
 * from creator to created and from waker to woken, and the stacks of
 * creations, blocks and system calls. docs/analyse.md lists it all. Go
 * 1.22+ traces are not exported yet. 0, or a negative code (ctrace/error.h)
 * with a message in err: CTRACE_ENOMEM, or the system's -errno where
 * writing out failed (the output is then incomplete). */
int ctrace_export(const ctrace_export_trace *traces, size_t n, ctrace_export_format format, FILE *out,
                  char *err, size_t errlen);

/* ctrace_export of one trace as Perfetto's format. */
int ctrace_export_perfetto(ctrace_reader *r, FILE *out, const char *process_name, uint32_t pid,
                           char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
