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
 * creations, blocks and system calls. docs/analyse.md lists it all.
 * Where a trace holds a clock anchor (ctrace_process_read in
 * ctrace/analyse.h), the first that does dates the timeline: Perfetto's
 * clock snapshot ties it to REALTIME, the JSON's "metadata" says when its
 * ts 0 and each process's trace began (UTC). 0, or a negative code (ctrace/error.h)
 * with a message in err: CTRACE_ENOMEM, or the system's -errno where
 * writing out failed (the output is then incomplete). */
int ctrace_export(const ctrace_export_trace *traces, size_t n, ctrace_export_format format, FILE *out,
                  char *err, size_t errlen);

/* What an export may be asked beyond the whole of its traces. Zeroed, it
 * is the whole. */
typedef struct ctrace_export_options {
  /* A window, in nanoseconds since each trace's first event (or on the
   * timeline of offsets_ns, below): what the
   * traces show between from_ns and to_ns (to_ns < 0: to the end). A
   * slice open at from_ns begins there, one open at to_ns ends there, the
   * counters start at from_ns with their values then. to_ns == 0 with
   * from_ns == 0 is the whole. */
  int64_t from_ns, to_ns;
  /* A window of generations of Go 1.22+ traces instead: gen_from to gen_to
   * (from 1, both in), from the first event of gen_from to the last of
   * gen_to, each trace's own (0: none; not with from_ns, to_ns). */
  uint64_t gen_from, gen_to;
  /* Stop once more than this many bytes are written (0: no limit): the
   * export is then incomplete, and ctrace_export_result says where. */
  uint64_t max_bytes;
  /* Called now and then with the trace being walked (its index), the time
   * reached in it and its duration, for progress; NULL for none. */
  void (*progress)(void *arg, size_t trace, int64_t ts, int64_t duration);
  void *progress_arg;
  /* Each trace's duration (ns, first to last event; ctrace_trace_info),
   * for progress; NULL when unknown. */
  const int64_t *durations;
  /* Each trace's place on one timeline, added to its times (ns): traces
   * of several processes put side by side by their clocks
   * (ctrace_process_place in ctrace/analyse.h gives them). NULL:
   * each trace's first event at 0. A window (from_ns, to_ns) is then on
   * that timeline. */
  const int64_t *offsets_ns;
  /* Perfetto's packets as they are. By default (0) they are deflated in
   * bundles of about a megabyte (TracePacket.compressed_packets), as
   * Perfetto's tracing service writes a compressed trace: 6 to 7 times
   * smaller, on threads of the export's own. Every Perfetto trace
   * processor since 2019, so the UI, reads them. */
  int plain;
  /* A window that begins late in a long Go 1.22+ trace, read from the
   * generation before the one where from_ns falls rather than from the
   * trace's start: seconds, not a walk through all that comes before.
   * Its start state is then what a trace begun at that generation shows:
   * each goroutine's and P's state, from the statuses Go writes at each
   * generation; a region or task begun earlier, or a thread's name given
   * earlier, is not known (0: read from the start, what the whole shows). */
  int seek;
} ctrace_export_options;

typedef struct ctrace_export_result {
  /* The export's size as a reader parses it (Perfetto's packets
   * inflated), which max_bytes bounds; and the bytes written to out. */
  uint64_t bytes, written;
  /* 1 if the export stopped at max_bytes, the trace it was in and the
   * time it had reached there. */
  int over;
  size_t over_trace;
  int64_t reached_ns;
} ctrace_export_result;

/* ctrace_export with options (opt NULL: none) and its result (res may be
 * NULL). Stopping at max_bytes is not an error: 0, with res->over set. */
int ctrace_export_ex(const ctrace_export_trace *traces, size_t n, ctrace_export_format format,
                     const ctrace_export_options *opt, FILE *out, ctrace_export_result *res, char *err,
                     size_t errlen);

/* ctrace_export of one trace as Perfetto's format. */
int ctrace_export_perfetto(ctrace_reader *r, FILE *out, const char *process_name, uint32_t pid,
                           char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
