/* export_seek: a window late in a Go 1.22+ trace read from the generation
 * before it (ctrace__model_seek, ctrace_export_options.seek), on a trace
 * of four generations or more (export_seek.sh writes it):
 *   - the generations' start times (ctrace_reader_generations): as many
 *     as the check counts, in order, the first no later than the first
 *     event;
 *   - a seek to a time in generation k passes over k - 2 generations, and
 *     from generation k on gives the events a pass from the start gives
 *     there, one for one (time, type, goroutine, P, first argument, the
 *     innermost function of the stack); a seek to generation 1 or 2
 *     passes over none; ctrace_reader_seek_generation refuses generation
 *     0 and n + 1, and reads the last one alone;
 *   - with an event of the first generation broken, the export of a late
 *     window that seeks never meets it (that generation's events are not
 *     decoded), and one read from the start does; one broken in the last
 *     generation, the seek meets, and ctrace_reader_failed says where.
 *
 *   export_seek TRACE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace/error.h"
#include "ctrace/export.h"
#include "ctrace/parse.h"
#include "parse/model.h"

static int failures;

#define CHECK(c, ...)                                  \
  do {                                                 \
    if (!(c)) {                                        \
      fprintf(stderr, "export_seek: FAIL: " __VA_ARGS__); \
      fputc('\n', stderr);                             \
      failures++;                                      \
    }                                                  \
  } while (0)

typedef struct rec {
  int64_t ts;
  uint8_t type;
  uint64_t g, a0;
  int64_t p;
  const char *fn;
} rec;

static rec rec_of(ctrace_reader *r, const ctrace_event *ev) {
  const ctrace_frame *fr;
  size_t n = ev->stack ? ctrace__model_stack(r, ev->stack, &fr) : 0;
  return (rec){ev->ts, ev->type, ev->g, ev->args[0], ev->p, n && fr[0].func ? fr[0].func : ""};
}

static bool is_sync(const ctrace_event *ev) { return ev->format == 1 && ev->type == CTRACE_EV122_Sync; }

/* The model's events after the syncs-th Sync of a pass begun by seek
 * (from_ns) or a rewind (from_ns 0), into *out: how many. */
static size_t after_sync(ctrace_reader *r, int64_t from_ns, uint64_t syncs, rec **out, int64_t *skipped) {
  *skipped = ctrace__model_seek(r, from_ns);
  size_t n = 0, cap = 0;
  uint64_t seen = 0;
  ctrace_event buf;
  const ctrace_event *ev;
  *out = NULL;
  while ((ev = ctrace__model_next_ref(r, &buf))) {
    if (seen < syncs) {
      seen += is_sync(ev);
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 4096;
      *out = realloc(*out, cap * sizeof **out);
      if (!*out) abort();
    }
    (*out)[n++] = rec_of(r, ev);
  }
  return n;
}

static int export_window(ctrace_reader *r, int64_t from, int64_t to, int seek, char *err, size_t errlen) {
  FILE *null = fopen("/dev/null", "w");
  if (!null) abort();
  ctrace_export_trace t = {.reader = r, .name = "seek"};
  ctrace_export_options opt = {.from_ns = from, .to_ns = to, .seek = seek, .plain = 1};
  int rc = ctrace_export_ex(&t, 1, CTRACE_EXPORT_PERFETTO, &opt, null, NULL, err, errlen);
  fclose(null);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: export_seek TRACE\n");
    return 2;
  }
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open(argv[1], &r, &err) || ctrace_reader_check(r, &info, &err)) {
    fprintf(stderr, "export_seek: %s: offset %llu: %s\n", argv[1], (unsigned long long)err.offset, err.message);
    return 1;
  }
  const int64_t *starts;
  size_t n;
  CHECK(ctrace_reader_generations(r, &starts, &n, &err) == 0, "generations: %s", err.message);
  CHECK(n == info.generations && n >= 4, "%zu generations' starts, the check counts %llu (4 at least wanted)", n,
        (unsigned long long)info.generations);
  if (n < 4) return 1;
  for (size_t i = 1; i < n; i++)
    CHECK(starts[i] > starts[i - 1], "generation %zu begins before the one before it", i + 1);

  /* The trace's first event, which the model's times count from. */
  ctrace_event buf;
  ctrace__model_rewind(r);
  const ctrace_event *first = ctrace__model_next_ref(r, &buf);
  CHECK(first != NULL, "no event");
  ctrace_event ev0;
  ctrace_reader_rewind(r);
  CHECK(ctrace_reader_next(r, &ev0) == 1 && starts[0] <= ev0.ts, "the first generation starts after the first event");
  int64_t t0 = ev0.ts;

  /* A time in generation k (from 1): passes over k - 2; from generation
   * k on, the events of a pass from the start. Go 1.22's Syncs close each
   * generation: generation k begins after Sync k - 1 of a whole pass, and
   * after the first of a pass that read generation k - 1 first. */
  size_t k = n - 1;
  int64_t from = (starts[k - 1] + starts[k]) / 2 - t0, skipped;
  rec *whole, *seek;
  size_t nw = after_sync(r, 0, k - 1, &whole, &skipped);
  CHECK(skipped == 0, "a rewind passed over %lld generations", (long long)skipped);
  size_t ns = after_sync(r, from, 1, &seek, &skipped);
  CHECK(skipped == (int64_t)k - 2, "a seek into generation %llu passed over %lld generations, not %llu",
        (unsigned long long)k, (long long)skipped, (unsigned long long)k - 2);
  CHECK(nw > 1000 && ns == nw, "from generation %llu: %zu events after a seek, %zu after a rewind",
        (unsigned long long)k, ns, nw);
  for (size_t i = 0; i < ns && i < nw; i++) {
    const rec *a = &whole[i], *b = &seek[i];
    if (a->ts != b->ts || a->type != b->type || a->g != b->g || a->p != b->p || a->a0 != b->a0 ||
        strcmp(a->fn, b->fn) != 0) {
      CHECK(0, "event %zu of generation %llu: %lld %s g=%llu p=%lld a0=%llu %s after a seek, %lld %s g=%llu p=%lld a0=%llu %s from the start",
            i, (unsigned long long)k, (long long)b->ts, ctrace_event_descs[b->type].name, (unsigned long long)b->g,
            (long long)b->p, (unsigned long long)b->a0, b->fn, (long long)a->ts, ctrace_event_descs[a->type].name,
            (unsigned long long)a->g, (long long)a->p, (unsigned long long)a->a0, a->fn);
      break;
    }
  }
  free(whole);
  free(seek);
  CHECK(ctrace__model_seek(r, (starts[1] + starts[2]) / 2 - t0) == 0, "a seek into generation 2 passed over some");
  CHECK(ctrace_reader_seek_generation(r, 0, &err) == CTRACE_EINVAL &&
            ctrace_reader_seek_generation(r, n + 1, &err) == CTRACE_EINVAL,
        "a seek to generation 0 or %zu (of %zu) did not fail", n + 1, n);
  /* The public seek: the first event of generation n is no earlier than
   * when it begins, and the pass reads to the end. */
  ctrace_event e;
  CHECK(ctrace_reader_seek_generation(r, n, &err) == 0 && ctrace_reader_read(r, &e, &err) == 1 &&
            e.ts >= starts[n - 1],
        "a seek to generation %zu: %s", n, err.message);
  int rc;
  while ((rc = ctrace_reader_read(r, &e, &err)) == 1) {
  }
  CHECK(rc == 0 && !ctrace_reader_failed(r, &err), "the last generation read alone: %s", err.message);

  /* The first generation's events broken: a window of the last two
   * generations does not read them. */
  char msg[512];
  int64_t to = starts[n - 1] - t0 + 1; /* starts is r's */
  CHECK(export_window(r, from, to, 1, msg, sizeof msg) == 0, "late window: %s", msg);
  ctrace_reader_rewind(r);
  ctrace_event ev;
  uint64_t off = 0, late = 0;
  for (int i = 0; i < 200 && ctrace_reader_next(r, &ev) == 1; i++)
    if (ev.type == CTRACE_EV122_GoBlock || ev.type == CTRACE_EV122_GoUnblock) off = ev.off;
  CHECK(off != 0, "no GoBlock or GoUnblock among the first 200 events");
  ctrace_reader_seek_generation(r, n, &err);
  for (int i = 0; i < 200 && ctrace_reader_next(r, &ev) == 1; i++)
    if (ev.type == CTRACE_EV122_GoBlock || ev.type == CTRACE_EV122_GoUnblock) late = ev.off;
  CHECK(late != 0, "no GoBlock or GoUnblock among the last generation's first 200 events");
  FILE *f = fopen(argv[1], "rb");
  static char data[64 << 20];
  size_t len = f ? fread(data, 1, sizeof data, f) : 0;
  if (f) fclose(f);
  CHECK(len > off && len < sizeof data, "cannot read %s whole", argv[1]);
  ctrace_reader_close(r);
  char was = data[off];
  data[off] = (char)0xfe; /* no event type */
  for (int seek = 1; seek >= 0; seek--) {
    CHECK(ctrace_reader_open_mem(data, len, &r, &err) == 0, "open the broken trace: %s", err.message);
    export_window(r, from, to, seek, msg, sizeof msg);
    /* The walk ends where the reader fails; the reader says so. */
    if (seek) CHECK(!ctrace_reader_failed(r, &err), "a late window of the broken trace, seeking, met the broken event");
    else CHECK(ctrace_reader_failed(r, &err), "a late window of the broken trace, read from the start, did not meet it");
    ctrace_reader_close(r);
  }
  /* One broken in the window's generations: met, and said where. */
  data[off] = was;
  data[late] = (char)0xfe;
  CHECK(ctrace_reader_open_mem(data, len, &r, &err) == 0, "open the broken trace: %s", err.message);
  export_window(r, from, to, 1, msg, sizeof msg);
  CHECK(ctrace_reader_failed(r, &err) && err.offset == late,
        "a late window broken at %llu, seeking: failed at %llu (%s)", (unsigned long long)late,
        (unsigned long long)err.offset, err.message);
  ctrace_reader_close(r);
  if (failures) return 1;
  printf("export_seek: ok (%zu generations, %zu events compared)\n", n, nw);
  return 0;
}
