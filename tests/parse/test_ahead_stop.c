/* test_ahead_stop.c - a Go 1.22+ pass read ahead on a second thread
 * (src/parse/ahead.c) gives the events of one thread's reading, and can
 * be left at any event: closed or rewound there, the reading thread ends.
 *
 *   test_ahead_stop TRACE
 *
 * TRACE: a Go 1.22+ trace of several generations and some thousands of
 * events (more than the read-ahead ring's 2,048). Its events are read on
 * the caller's thread alone (CTRACE_READ_AHEAD=0) for reference; then,
 * read ahead, with threads that spin before they sleep (=1) and with
 * threads that sleep at once (=sleep):
 *   - the whole pass is the reference, event for event;
 *   - the pass is closed after n events, for n every 997 (every point of
 *     the ring and across generations), and rewound after n and read
 *     again whole. A reading thread that missed the stop hangs the close
 *     (the test's timeout), and ThreadSanitizer (the "concurrent" label)
 *     sees the two threads' every meeting. */
#include <ctrace/parse.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/check.h"

typedef struct {
  int64_t ts;
  uint64_t seq, off, g;
  uint8_t type;
} ref;

static ref *refs;
static size_t nrefs;

static ctrace_reader *open_trace(const char *path) {
  ctrace_reader *r;
  ctrace_parse_error err;
  if (ctrace_reader_open(path, &r, &err) != 0) {
    fprintf(stderr, "test_ahead_stop: %s: %s\n", path, err.message);
    exit(2);
  }
  return r;
}

static bool same(const ctrace_event *e, size_t i) {
  return i < nrefs && e->ts == refs[i].ts && e->seq == refs[i].seq && e->off == refs[i].off &&
         e->g == refs[i].g && e->type == refs[i].type;
}

/* Reads up to n events (all: SIZE_MAX) of r's pass, each checked
 * against the reference; how many it read. */
static size_t read_some(ctrace_reader *r, size_t n, const char *mode) {
  ctrace_event buf;
  const ctrace_event *e;
  size_t i = 0;
  while (i < n && (e = ctrace_reader_next_ref(r, &buf))) {
    if (!same(e, i)) {
      CHECK(0, "CTRACE_READ_AHEAD=%s: event %zu (type %u at %llu) differs from the reference", mode, i,
            e->type, (unsigned long long)e->off);
      return i;
    }
    i++;
  }
  return i;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_ahead_stop TRACE\n");
    return 2;
  }
  setenv("CTRACE_READ_AHEAD", "0", 1);
  ctrace_reader *r = open_trace(argv[1]);
  ctrace_event ev;
  size_t cap = 0;
  while (ctrace_reader_next(r, &ev) == 1) {
    if (nrefs == cap) {
      cap = cap ? 2 * cap : 4096;
      refs = realloc(refs, cap * sizeof *refs);
      if (!refs) return 2;
    }
    refs[nrefs++] = (ref){ev.ts, ev.seq, ev.off, ev.g, ev.type};
  }
  ctrace_trace_info info;
  ctrace_parse_error err;
  if (ctrace_reader_check(r, &info, &err) != 0) {
    fprintf(stderr, "test_ahead_stop: %s: %s\n", argv[1], err.message);
    return 2;
  }
  ctrace_reader_close(r);
  /* Or the test proves nothing of the ring's turns and the generations. */
  CHECK(nrefs > 4 * 2048, "%zu events: the trace is too small", nrefs);
  CHECK(info.generations >= 2, "%llu generations: the trace needs more", (unsigned long long)info.generations);

  const char *modes[] = {"1", "sleep"};
  for (size_t m = 0; m < 2; m++) {
    setenv("CTRACE_READ_AHEAD", modes[m], 1);
    r = open_trace(argv[1]);
    size_t got = read_some(r, SIZE_MAX, modes[m]);
    CHECK(got == nrefs, "CTRACE_READ_AHEAD=%s: %zu events, alone %zu", modes[m], got, nrefs);
    ctrace_reader_close(r);
    for (size_t n = 1; n < nrefs; n += 997) {
      r = open_trace(argv[1]);
      got = read_some(r, n, modes[m]);
      CHECK(got == n, "CTRACE_READ_AHEAD=%s: %zu events of the first %zu", modes[m], got, n);
      ctrace_reader_close(r); /* with the reading thread ahead */
    }
    r = open_trace(argv[1]);
    for (size_t n = 1; n < nrefs; n += 7 * 997) {
      got = read_some(r, n, modes[m]);
      CHECK(got == n, "CTRACE_READ_AHEAD=%s: %zu events of the first %zu", modes[m], got, n);
      ctrace_reader_rewind(r);
    }
    got = read_some(r, SIZE_MAX, modes[m]);
    CHECK(got == nrefs, "CTRACE_READ_AHEAD=%s: %zu events after the rewinds, alone %zu", modes[m], got, nrefs);
    ctrace_reader_close(r);
  }
  free(refs);
  if (failures) fprintf(stderr, "test_ahead_stop: %d failures\n", failures);
  else printf("test_ahead_stop: %zu events, every 997th a stop: ok\n", nrefs);
  return failures != 0;
}
