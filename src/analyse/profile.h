/* The in-memory profile: pprof's model (profile/encode.go) of deduplicated
 * tables, filled by the analyses (pprof.c, wall.c) and encoded once
 * (profile.c), or written as it is built (ctrace__prof_stream): a sample
 * that can no longer change is encoded then and its slot taken by the
 * next. Internal to src/analyse/. */
#ifndef CTRACE_ANALYSE_PROFILE_H
#define CTRACE_ANALYSE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "ctrace/analyse.h"
#include "parse/map.h"
#include "pb.h"

typedef struct prof_func {
  uint64_t name, file; /* string indices; system_name is name, as Go writes it */
} prof_func;

typedef struct prof_loc {
  uint64_t addr, func, line; /* func: 1-based function id */
} prof_loc;

typedef struct prof_sample {
  size_t locs, nlocs;  /* a run in ctrace_profile.locpool, leaf first */
  int64_t value[2];
  /* Up to two string labels (key and value as string indices; key 0: none)
   * and a numeric one (num_key 0: none): what the analyses need, no more. */
  uint64_t label_key[2], label_str[2];
  uint64_t num_key;
  int64_t num;
  uint64_t key; /* in sample_ids */
  size_t next;  /* the caller's: index + 1 of the next sample of one owner */
  bool live;    /* false: a slot retired (ctrace__prof_retire), empty */
} prof_sample;

/* Scratch buffers for the submessages of one message. */
typedef struct prof_scratch {
  pbuf sub, sub2, packed;
} prof_scratch;

struct z_stream_s;

struct ctrace_profile {
  /* string_table: index 0 is "" as profile.proto requires. */
  char **strs;
  size_t nstrs, capstrs;
  uint32_t *strhash; /* open addressing: string index + 1, 0 empty */
  size_t caphash;

  prof_func *funcs;
  size_t nfuncs, capfuncs;
  u64map func_ids; /* name << 32 | file -> id */

  prof_loc *locs;
  size_t nlocs, caplocs;
  u64map loc_ids;   /* pc -> id, as Go keys them */
  u64map synth_ids; /* string index of a synthetic frame's name -> id */

  uint64_t *locpool;
  size_t npool, cappool;

  prof_sample *samples;
  size_t nsamples, capsamples;
  u64map sample_ids; /* caller's key -> index + 1 */
  u64free free_samples; /* slots of retired samples */

  /* Written as built: the gzip stream to out, and what was encoded for it
   * but not yet compressed. */
  struct z_stream_s *z;
  FILE *out;
  pbuf pending;
  prof_scratch scratch;
  int ioerr; /* errno of the first write that failed */

  uint64_t sample_type[2][2]; /* (type, unit) string indices */
  uint64_t period_type[2];
  int64_t period;
  uint64_t default_type; /* string index of the default sample type; 0: none */
  int64_t duration_ns;
  bool oom;
};

/* All return 0 (or a NULL/0 id) and set p->oom when out of memory. */
ctrace_profile *ctrace__prof_new(const char *t0, const char *u0, const char *t1, const char *u1);
uint64_t ctrace__prof_string(ctrace_profile *p, const char *s);
/* The location of a frame, keyed by pc alone as Go's buildProfile keys it
 * (the function by file and name). */
uint64_t ctrace__prof_frame(ctrace_profile *p, uint64_t pc, const char *func, const char *file,
                            uint64_t line);
/* The locations of the n frames fr (ctrace__prof_frame) into *locs from
 * index at on (those before are the caller's own frames), an array with
 * room *cap that grows to at + n, and to one at least (a caller's own
 * frame where there are none). False when out of memory. */
bool ctrace__prof_frames(ctrace_profile *p, const ctrace_frame *fr, size_t n, size_t at, uint64_t **locs,
                         size_t *cap);
/* A location with no address, for a frame that names a state. */
uint64_t ctrace__prof_synthetic(ctrace_profile *p, const char *name);
/* The sample of key, created with locs (copied) when new; NULL when out of
 * memory. */
prof_sample *ctrace__prof_sample(ctrace_profile *p, uint64_t key, const uint64_t *locs, size_t n);
/* The same, sharing the run of n locations at locpool[run] that an earlier
 * sample was given: for samples that differ by label alone. */
prof_sample *ctrace__prof_sample_run(ctrace_profile *p, uint64_t key, size_t run, size_t n);
/* Gives sample s the n locations locs in place of its own (the old run
 * stays in the pool, unused): false if out of memory. */
bool ctrace__prof_relocate(ctrace_profile *p, prof_sample *s, const uint64_t *locs, size_t n);

/* Writes p to out as it is built: gzip-compressed profile.proto, whose
 * samples may come in any order and before the tables they name. False if
 * out of memory. */
bool ctrace__prof_stream(ctrace_profile *p, FILE *out);
/* Sample ix (its index in samples) can no longer change: written (when
 * streaming) and forgotten, its slot the next new sample's. */
void ctrace__prof_retire(ctrace_profile *p, size_t ix);
/* Writes the rest of a streamed profile and ends the stream: 0,
 * CTRACE_ENOMEM or CTRACE_EIO (ioerr says why). */
int ctrace__prof_finish(ctrace_profile *p);

#endif
