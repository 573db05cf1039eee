/* tdecode: a small, strict, test-only decoder of the "go 1.11 trace"
 * format, written from /work/shared/GO-COMPAT.md and Go 1.19's
 * internal/trace/parser.go, independently of the library's own tables.
 *
 * It splits a trace into events, batches, strings and stacks, computes
 * absolute ticks, and refuses what Go's raw reader would refuse (bad
 * header, unknown event types, bad lengths, overlong varints, truncation,
 * duplicate or empty strings). Semantic checks (argument counts, stack and
 * string references) are left to the tests, which use td_go_events.
 */
#ifndef CTRACE_TESTS_TDECODE_H
#define CTRACE_TESTS_TDECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TD_EV_COUNT 50

/* One row of Go 1.19's EventDescriptions, transcribed by hand. */
typedef struct td_desc {
  const char *name;
  int min_version;
  bool stack;
  int nargs;
  const char *args[3];
} td_desc;

/* Indexed by event number, 0..49. */
extern const td_desc td_go_events[TD_EV_COUNT];

/* How many raw values Go 1.19 expects for an event of this type at
 * version >= 1007 (its argNum): timestamp diff (except Batch, Frequency,
 * TimerGoroutine) + named arguments + stack id (if any). -1 for String and
 * Stack, whose layout is their own. */
int td_expected_nvals(int type);
/* Whether the event's first value is a timestamp diff. */
bool td_has_ts(int type);

typedef struct td_event {
  uint8_t type, count; /* low 6 bits and high 2 bits of the event byte */
  size_t off;          /* offset of the event byte in the trace */
  long batch;          /* index into td_trace.b, -1 if before any batch */
  int64_t p;           /* P of that batch */
  bool has_ts;
  uint64_t ts;  /* absolute ticks, for events with a timestamp */
  uint32_t nv;  /* raw values (after the length, if any) */
  size_t voff;  /* first raw value in td_trace.vals */
  int na;       /* named arguments: values minus timestamp and stack */
  uint64_t a[4];
  bool has_stk; /* only when nv matches td_expected_nvals */
  uint64_t stk;
  const uint8_t *s; /* String bytes, or UserLog message */
  size_t slen;
} td_event;

typedef struct td_string {
  uint64_t id;
  char *z; /* NUL-terminated copy */
  size_t len;
} td_string;

typedef struct td_frame {
  uint64_t pc, fn, file, line;
} td_frame;

typedef struct td_stack {
  uint64_t id, n;
  td_frame *f;
} td_stack;

typedef struct td_batch {
  int64_t p;
  uint64_t ticks;    /* absolute ticks in the header */
  uint64_t last;     /* ticks of its last timestamped event */
  size_t first, nev; /* events after the header, up to the next batch */
} td_batch;

typedef struct td_trace {
  td_event *ev;
  size_t nev;
  uint64_t *vals;
  size_t nvals;
  td_string *str;
  size_t nstr;
  td_stack *stk;
  size_t nstk;
  td_batch *b;
  size_t nb;
  size_t *stk_ix, *str_ix; /* open-addressed indexes by id (private) */
  size_t stk_cap, str_cap;
  uint64_t freq; /* value of the last Frequency */
  int nfreq;
  bool freq_last; /* the trace ends exactly after a Frequency event */
  char err[256];
} td_trace;

/* Decodes data. Returns 0, or -1 with tr->err set. td_free either way. */
int td_decode(const uint8_t *data, size_t len, td_trace *tr);
void td_free(td_trace *tr);

uint64_t td_val(const td_trace *tr, const td_event *e, uint32_t i);
/* String with that id, NULL if not defined. */
const char *td_str(const td_trace *tr, uint64_t id);
const td_stack *td_stack_get(const td_trace *tr, uint64_t id);
size_t td_count(const td_trace *tr, int type);
/* Iterates events of one type: start *it at 0. NULL at the end. */
const td_event *td_next(const td_trace *tr, int type, size_t *it);

/* Decodes one LEB128 value as Go does (at most 10 bytes). Returns the
 * bytes used, 0 if truncated or too long. */
size_t td_uvarint(const uint8_t *p, size_t n, uint64_t *out);

#endif
