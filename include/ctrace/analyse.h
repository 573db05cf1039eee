/* ctrace's analyses of a trace (src/analyse/): pprof profiles built from
 * the ordered, validated stream of libctrace-parse, with no Go installed.
 *
 * A profile is built in memory as pprof's own encoder builds one
 * (profile/encode.go): deduplicated tables of strings, functions and
 * locations, and samples keyed by stack; it is then encoded as
 * profile.proto in one pass and written gzip-compressed, the form
 * `go tool pprof` reads.
 */
#ifndef CTRACE_ANALYSE_H
#define CTRACE_ANALYSE_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace/parse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ctrace_profile_kind {
  /* Go's four trace profiles (`go tool trace -pprof=TYPE`): the stack at
   * entry to the state, values contentions/count and delay/nanoseconds. */
  CTRACE_PROFILE_NET,     /* blocked on the network (GoBlockNet) */
  CTRACE_PROFILE_SYNC,    /* blocked on channels, select, mutexes, conds, GC */
  CTRACE_PROFILE_SYSCALL, /* in a system call, to its exit */
  CTRACE_PROFILE_SCHED,   /* runnable (woken or created) to running */
  /* Every goroutine's time, by state (docs/analyse.md). */
  CTRACE_PROFILE_WALL,
} ctrace_profile_kind;

typedef struct ctrace_profile_options {
  ctrace_profile_kind kind;
  /* Only goroutines whose start function is this (NULL: all). */
  const char *goroutine;
  /* Only time inside user regions of this type (NULL: all). */
  const char *region;
} ctrace_profile_options;

typedef struct ctrace_profile ctrace_profile;

/* Builds the profile from a checked reader (ctrace_reader_check done); the
 * reader is rewound and read through, twice where a filter needs the
 * goroutines' lifetimes first. 0, or -1 with a message in err. */
int ctrace_profile_build(ctrace_reader *r, const ctrace_profile_options *opt,
                         ctrace_profile **out, char *err, size_t errlen);

/* Samples in the profile. */
size_t ctrace_profile_samples(const ctrace_profile *p);

/* The profile as gzip-compressed profile.proto, in a malloc'ed buffer the
 * caller frees. 0, or -1 when out of memory. */
int ctrace_profile_encode(const ctrace_profile *p, unsigned char **data, size_t *len);

void ctrace_profile_free(ctrace_profile *p);

#ifdef __cplusplus
}
#endif

#endif
