/* What the exporters share: a trace as tracks and what happens on them,
 * made once by the walk (walk.c) and written by one encoder per format
 * (perfetto.c, json.c). Internal to src/export/.
 *
 * The walk reads the trace once and hands each record to the encoder as it
 * is made, so no format holds the events; a record's strings are valid
 * only during the call. Per track, the records come in time order, and a
 * track's TRACK record comes before anything on it. */
#ifndef CTRACE_EXPORT_MODEL_H
#define CTRACE_EXPORT_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctrace/parse.h"

/* Tracks, by kind and an id within the kind. */
enum ex_kind {
  EX_PROCESS = 1, /* the trace's process (id 0) */
  EX_GOROUTINE,   /* a goroutine's states (id g), a thread of the process */
  EX_REGIONS,     /* its user regions (id g), a child of its goroutine's track */
  EX_PROC,        /* a P (id p): the goroutine it runs */
  EX_GC,          /* GC cycles (id 0) */
  EX_STW,         /* stop-the-world phases (id 0) */
  EX_TASK,        /* a user task (id: the task's), an async track */
  EX_COUNTER,     /* a group of counters (id: enum ex_counter) */
};

enum { EX_NAME_LASTS = 1, EX_CAT_LASTS = 2 };

enum ex_counter { EX_C_GOROUTINES, EX_C_THREADS, EX_C_HEAP, EX_C_COUNT };

enum ex_type {
  EX_TRACK,   /* a track is described: name (for a counter group, its series) */
  EX_BEGIN,   /* a slice begins: cat, name, stack, flow_in */
  EX_END,     /* the track's innermost slice ends */
  EX_INSTANT, /* cat, name, stack, flow_out; a log on a task's track: cat is
                 its category, name its message */
  EX_COUNTER_VALUES, /* the values of a counter group, changed: which moved */
  /* An EX_GOROUTINE track and its EX_REGIONS get nothing more (the
   * goroutine ended for good): an encoder may forget them. name is the
   * name its slices on the Ps had, lasting until now: an encoder that
   * knows it by its address forgets that too (the walk frees it). */
  EX_GONE,
};

typedef struct ex_rec {
  uint8_t type, kind;
  uint64_t id;
  int64_t ts; /* nanoseconds since the trace's first event */
  const char *name, *cat;
  /* Which of name and cat never change and live until the walk of this
   * trace ends (string literals, and names the walk keeps): an encoder
   * may know them by their address until the next trace begins. */
  uint8_t lasting; /* EX_NAME_LASTS | EX_CAT_LASTS */
  /* On every record of an EX_TASK track, the task's type ("" if its
   * creation is not in the trace): the track is named "TYPE ID" ("task
   * ID"), and JSON names async events by their track. */
  const char *task_type;
  uint64_t stack;            /* the reader's stack id, 0 for none */
  uint64_t flow_in, flow_out; /* 0 for none; unique across the traces */
  /* A counter group: nseries values, named by series. */
  const char *const *series;
  const int64_t *values;
  int nseries;
  unsigned changed; /* bit i: values[i] differs from the last record's */
} ex_rec;

/* One trace of the export: a process. */
typedef struct ex_source {
  ctrace_reader *r;
  const char *name;
  uint32_t pid;
  uint32_t index, count; /* its position among the traces, from 0; how many */
  /* Called now and then with the time the walk has reached and the
   * trace's duration (ns); NULL for none. */
  void (*progress)(void *arg, int64_t ts, int64_t duration);
  void *progress_arg;
  int64_t duration;
  /* A range of a Go 1.22+ trace's generations, from 1 (0: none): the walk
   * moves the window of e (window) to their times as it meets them. */
  uint64_t gen_from, gen_to;
  int64_t offset; /* added to every time (ctrace_export_options.offsets_ns) */
  /* Where the window begins in the trace's own times, for a walk that may
   * begin reading near it (ctrace_export_options.seek); 0: from the start. */
  int64_t seek_ns;
  /* CLOCK_REALTIME (ns since 1970 UTC) at the trace's first event, and at
   * the timeline's 0 (the same for every trace of the export); 0 unknown
   * (ctrace_process_read). */
  int64_t start_real_ns, wall0_ns;
} ex_source;

/* An encoder: the walk calls begin for each trace, then rec for each of
 * its records; finish ends the file. The encoder sets oom when out of
 * memory and werr when it cannot write (errno then says why); either stops
 * the walk. */
typedef struct ex_enc ex_enc;
struct ex_enc {
  void (*begin)(ex_enc *e, const ex_source *s);
  void (*rec)(ex_enc *e, const ex_rec *r);
  void (*finish)(ex_enc *e);
  void (*free)(ex_enc *e);
  FILE *out;
  bool oom, werr;
  bool stop;      /* what is left of the trace is not wanted: the walk stops */
  /* The window filter's: its window's start (from >= 0) or end (to >= 0)
   * set as the walk finds them; NULL for an encoder. */
  void (*window)(ex_enc *e, int64_t from, int64_t to);
  uint64_t bytes;   /* made so far: what a reader parses */
  uint64_t written; /* written to out, once finished (Perfetto's bundles: fewer) */
};

/* The encoders; NULL when out of memory. */
/* Perfetto's packets deflated in bundles (deflate.c), or plain. */
ex_enc *ctrace__ex_perfetto(FILE *out, bool plain);
ex_enc *ctrace__ex_json(FILE *out);

/* A filter in front of in (window.c): the records between from and to
 * (ns since the trace's first event; to < 0: to its end), the walk
 * stopped once more than max_bytes (0: no limit) are written. NULL when
 * out of memory; in is then still the caller's. */
ex_enc *ctrace__ex_window(ex_enc *in, int64_t from, int64_t to, uint64_t max_bytes);
/* Whether the window's output passed its max_bytes; then *reached is the
 * time of the trace it had reached. */
bool ctrace__ex_window_over(const ex_enc *e, int64_t *reached);

/* Walks one checked trace into e. 0, or -1 with err set. */
int ctrace__ex_walk(const ex_source *s, ex_enc *e, char *err, size_t errlen);

#endif
