/* out.h - the formatters' output (format_event.c, go122/format.c): text
 * written by hand into a caller's buffer with snprintf's contract, since
 * ctrace dump prints millions of events and printf was most of its time. */
#ifndef CTRACE_PARSE_OUT_H
#define CTRACE_PARSE_OUT_H

#include <stdint.h>
#include <string.h>

typedef struct out {
  char *buf;
  size_t size, at; /* at counts what would be written, like snprintf */
} out;

/* The copy whose length is n, not the room left, so that a literal's is
 * a constant and compiles to a move or two: a call of memcpy for every
 * piece of a line was 29% of ctrace dump's time. */
static inline void put(out *o, const char *s, size_t n) {
  if (o->at + n <= o->size) memcpy(o->buf + o->at, s, n);
  else if (o->at < o->size) memcpy(o->buf + o->at, s, o->size - o->at);
  o->at += n;
}

static inline void put_u(out *o, uint64_t v) {
  char d[20];
  int n = 0;
  do d[sizeof d - 1 - n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  put(o, d + sizeof d - n, (size_t)n);
}

static inline void put_i(out *o, int64_t v) {
  if (v < 0) {
    put(o, "-", 1);
    put_u(o, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u(o, (uint64_t)v);
  }
}

#endif
