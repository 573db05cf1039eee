/* libFuzzer harness for ctrace's reader (include/ctrace/parse.h).
 *
 * Every input goes through the whole public API, as `ctrace dump` would use
 * it: open (from memory), check, then the ordered stream twice (before and
 * after a rewind), formatting every event and looking up every stack and
 * string the events could refer to. Besides the sanitizers' findings, it
 * aborts when the reader breaks its own contract: an unterminated error
 * message, sequence numbers that skip, an event count unlike the one check
 * reported, a link that does not point back, a second pass unlike the
 * first, or a formatted line whose length is not what the formatter said.
 * A Go 1.22+ trace is also streamed once without a check
 * (ctrace_reader_read), which must give the events check counted, or
 * fail where check failed, with the same error. Every input is also
 * salvaged (ctrace_reader_salvage): what it keeps must check, with the
 * summary salvage gave, and what it keeps whole must be what check
 * accepts. A Go 1.22+ input is also read as a trace that may be cut
 * short (ctrace_reader_allow_cut), checked and streamed: both end alike,
 * what they read cut short is what salvage keeps, and an input check
 * reads whole is read whole. The event model the analyses read
 * (src/parse/model.h) is read through twice as well, and the analyses
 * and exports run on every trace check accepts (analyses, below), and a
 * Go 1.22+ one is read from a later generation too (seek_read). Both
 * formats are fuzzed: the corpus holds traces of each.
 *
 * Built by `make fuzz` (clang -fsanitize=fuzzer,address,undefined); see
 * fuzz/README.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace/analyse.h"
#include "ctrace/export.h"
#include "ctrace/parse.h"
#include "parse/model.h"

#define FAIL(...)                                                                   \
  do {                                                                              \
    fprintf(stderr, "fuzz_reader: contract broken: " __VA_ARGS__);                  \
    fputc('\n', stderr);                                                            \
    abort();                                                                        \
  } while (0)

/* Reads every byte of a string the reader handed out, so ASan sees it. */
static volatile size_t sink;
static void touch(const char *s) {
  if (s) sink += strlen(s);
}

static void check_error(const ctrace_parse_error *err) {
  if (memchr(err->message, '\0', sizeof err->message) == NULL)
    FAIL("error message not NUL-terminated");
}

static void progress(void *arg, uint64_t done, uint64_t total) {
  (void)arg;
  if (done > total) FAIL("progress %llu of %llu", (unsigned long long)done, (unsigned long long)total);
}

static void touch_stack(const ctrace_reader *r, uint64_t id) {
  const ctrace_frame *frames = NULL;
  size_t n = ctrace_reader_stack(r, id, &frames);
  if (n && !frames) FAIL("stack %llu: %zu frames, NULL array", (unsigned long long)id, n);
  for (size_t i = 0; i < n; i++) {
    sink += frames[i].pc + frames[i].line;
    touch(frames[i].func);
    touch(frames[i].file);
  }
}

/* Formats ev into a buffer of exactly the size it needs, so ASan catches a
 * write past it; then into a short one, which must be truncated and
 * terminated as snprintf does. */
static void format_event(const ctrace_event *ev) {
  int n = ctrace_event_format(ev, NULL, 0);
  if (n < 0) FAIL("event %llu: format returned %d", (unsigned long long)ev->seq, n);
  char *buf = malloc((size_t)n + 1);
  if (!buf) abort();
  int m = ctrace_event_format(ev, buf, (size_t)n + 1);
  if (m != n) FAIL("event %llu: format needs %d, then %d", (unsigned long long)ev->seq, n, m);
  /* Strings may hold NUL bytes (Go prints them), so check the terminator,
   * not strlen. */
  if (buf[n] != 0) FAIL("event %llu: format said %d, no terminator there", (unsigned long long)ev->seq, n);
  if (n > 0) {
    size_t half = (size_t)n / 2 + 1;
    char *part = malloc(half);
    if (!part) abort();
    m = ctrace_event_format(ev, part, half);
    if (m != n || part[half - 1] != 0 || memcmp(part, buf, half - 1) != 0)
      FAIL("event %llu: truncated format differs", (unsigned long long)ev->seq);
    free(part);
  }
  free(buf);
}

/* One pass over the ordered stream; returns the number of events and a
 * checksum of their fields, to compare the passes. */
static uint64_t pass(ctrace_reader *r, const ctrace_trace_info *info, uint64_t *sum) {
  ctrace_event ev;
  uint64_t n = 0, h = 1469598103934665603ull;
  int64_t last_ts = 0;
  while (ctrace_reader_next(r, &ev) == 1) {
    if (ev.seq != n) FAIL("event %llu has seq %llu", (unsigned long long)n, (unsigned long long)ev.seq);
    if (n >= info->events)
      FAIL("more events than the %llu check reported", (unsigned long long)info->events);
    if (ev.link != CTRACE_NO_LINK && ev.link >= ev.seq)
      FAIL("event %llu links forward to %llu", (unsigned long long)ev.seq, (unsigned long long)ev.link);
    /* Ticks are in order; nanoseconds too, but for a time too large for
     * int64, which Go (on amd64) prints as INT64_MIN and so may ctrace. */
    if (ev.ts >= 0) {
      if (ev.ts < last_ts)
        FAIL("event %llu at %lld ns after one at %lld ns", (unsigned long long)ev.seq,
             (long long)ev.ts, (long long)last_ts);
      last_ts = ev.ts;
    }
    /* The Sync a go 1.25+ trace ends with is where the reading ended: at
     * its last byte's end, past every other event. */
    bool at_end = ev.format == 1 && ev.type == CTRACE_EV122_Sync && ev.off == info->bytes;
    if (ev.off >= info->bytes && !at_end)
      FAIL("event %llu at offset %llu of a %llu-byte trace", (unsigned long long)ev.seq,
           (unsigned long long)ev.off, (unsigned long long)info->bytes);

    format_event(&ev);
    touch(ev.sargs[0]);
    touch(ev.sargs[1]);
    /* Lookups must answer for any id, so every argument is tried as a
     * string id and as a stack id (GoCreate's second argument is one). */
    touch_stack(r, ev.stack);
    for (int i = 0; i < 6; i++) {
      touch(ctrace_reader_string(r, ev.args[i]));
      touch_stack(r, ev.args[i]);
    }
    /* A Go 1.22+ event's frames are its generation's. */
    for (uint32_t i = 0; i < ev.nframes; i++) touch(ev.frames[i].func), touch(ev.frames[i].file);
    for (uint32_t i = 0; i < ev.ntframes; i++) touch(ev.tframes[i].func), touch(ev.tframes[i].file);

    uint64_t f[] = {ev.seq, (uint64_t)ev.ts, ev.off, ev.type, (uint64_t)ev.p, ev.g,
                    ev.args[0], ev.args[1], ev.args[2], ev.args[3], ev.args[4], ev.args[5],
                    ev.stack, ev.link, (uint64_t)ev.m, ev.kind};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) h = (h ^ f[i]) * 1099511628211ull;
    n++;
  }
  *sum = h;
  return n;
}

/* Go 1.22+: one streaming pass, no check. Returns the events read; *failed
 * and *err say how it ended. */
static uint64_t stream(const uint8_t *data, size_t size, int *failed, ctrace_parse_error *err) {
  ctrace_reader *r = NULL;
  *failed = 0;
  if (ctrace_reader_open_mem(data, size, &r, err) != 0) FAIL("stream: open failed after it worked");
  ctrace_event ev;
  uint64_t n = 0;
  int rc;
  while ((rc = ctrace_reader_read(r, &ev, err)) == 1) {
    if (ev.seq != n) FAIL("stream: event %llu has seq %llu", (unsigned long long)n, (unsigned long long)ev.seq);
    format_event(&ev);
    n++;
  }
  if (rc < 0) {
    check_error(err);
    *failed = 1;
  }
  ctrace_reader_close(r);
  return n;
}

/* A Go 1.22+ input read as a trace that may be cut short
 * (ctrace_reader_allow_cut), checked and then streamed on a reader of its
 * own: a check that fails fails the stream too, with the same error; one
 * that passes gives the events the stream gives, and if it read the input
 * cut short, the prefix it names is exactly what salvage keeps (sk, sn:
 * its bytes and generations, or sk 0 if salvage kept nothing) and checks
 * as a whole trace with the same summary. Where check without a cut
 * reads it (strict_ok), it gives the same events (strict_events). */
static void cut_read(const uint8_t *data, size_t size, uint64_t sk, uint64_t sn, int strict_ok,
                     uint64_t strict_events) {
  ctrace_reader *r = NULL, *q = NULL;
  ctrace_parse_error err, serr;
  if (ctrace_reader_open_mem(data, size, &r, &err) != 0) FAIL("cut: open failed after it worked");
  ctrace_reader_allow_cut(r, 1);
  ctrace_trace_info in;
  memset(&err, 0xAA, sizeof err);
  int rc = ctrace_reader_check(r, &in, &err);
  if (rc != 0) check_error(&err);
  ctrace_salvage_info c;
  memset(&c, 0xAA, sizeof c);
  int cut = rc == 0 && ctrace_reader_cut(r, &c);
  /* Where Go's reading ends cleanly before a tear (its io.EOF from inside
   * a later generation), the cut-tolerant one reads the same events and
   * may say the rest was cut, which it was. */
  if (rc == 0 && strict_ok && in.events != strict_events)
    FAIL("cut: read %s, %llu events, of an input check reads whole (%llu events)", cut ? "cut" : "whole",
         (unsigned long long)in.events, (unsigned long long)strict_events);
  /* Go's reader ends cleanly, with nothing, where the file ends inside
   * its first generation (its io.EOF from inside a section); read as
   * cut short, that is the error that says so. Any other failure of an
   * input check reads whole breaks the contract. */
  static const char first_gen[] = "cut short inside its first generation";
  if (rc != 0 && strict_ok && !(strict_events == 0 && strncmp(err.message, first_gen, sizeof first_gen - 1) == 0))
    FAIL("cut: check fails (%s) on an input check reads whole", err.message);
  /* The stream, on a reader of its own, ends as the check did. */
  if (ctrace_reader_open_mem(data, size, &q, &serr) != 0) FAIL("cut: open failed after it worked");
  ctrace_reader_allow_cut(q, 1);
  ctrace_event ev;
  uint64_t n = 0;
  int src;
  while ((src = ctrace_reader_read(q, &ev, &serr)) == 1) n++;
  if (src < 0) check_error(&serr);
  if ((src < 0) != (rc != 0) ||
      (rc != 0 && (serr.offset != err.offset || strcmp(serr.message, err.message) != 0)) ||
      (rc == 0 && n != in.events))
    FAIL("cut: check %s (%s), the stream %s after %llu events", rc ? "failed" : "passed", rc ? err.message : "",
         src < 0 ? serr.message : "ended", (unsigned long long)n);
  ctrace_salvage_info c2;
  if (rc == 0 && ctrace_reader_cut(q, &c2) != cut) FAIL("cut: the stream and the check disagree on a cut");
  ctrace_reader_close(q);
  if (cut) {
    check_error(&c.cut);
    check_error(&c.error);
    if (c.keep != sk || c.generations != sn || c.generations != in.generations || c.dropped == 0 || c.whole)
      FAIL("cut: read %llu bytes, %llu generations (info %llu); salvage keeps %llu bytes, %llu generations",
           (unsigned long long)c.keep, (unsigned long long)c.generations, (unsigned long long)in.generations,
           (unsigned long long)sk, (unsigned long long)sn);
    uint8_t *p = malloc(c.keep);
    if (!p) abort();
    memcpy(p, data, c.keep);
    ctrace_trace_info pin;
    if (ctrace_reader_open_mem(p, c.keep, &q, &err) != 0 || ctrace_reader_check(q, &pin, &err) != 0)
      FAIL("cut: the %llu bytes read do not check: %s", (unsigned long long)c.keep, err.message);
    if (pin.events != in.events || pin.generations != in.generations || pin.duration_ns != in.duration_ns)
      FAIL("cut: the prefix checks as %llu events, the cut read %llu", (unsigned long long)pin.events,
           (unsigned long long)in.events);
    ctrace_reader_close(q);
    free(p);
  }
  ctrace_reader_close(r);
}

/* Salvage (ctrace_reader_salvage) of the input, on a reader of its own:
 * what it keeps is a prefix that checks, with the summary salvage gave;
 * kept whole means all of it. Returns whether it was kept whole; *keep
 * and *gens what it kept (0 if nothing). */
static int salvage(const uint8_t *data, size_t size, uint64_t *keep, uint64_t *gens) {
  ctrace_reader *r = NULL;
  ctrace_parse_error err;
  if (ctrace_reader_open_mem(data, size, &r, &err) != 0) FAIL("salvage: open failed after it worked");
  ctrace_salvage_info s;
  memset(&err, 0xAA, sizeof err);
  memset(&s, 0xAA, sizeof s);
  *keep = *gens = 0;
  int rc = ctrace_reader_salvage(r, &s, &err);
  if (rc != 0) {
    check_error(&err);
    if (err.offset > size)
      FAIL("salvage: error at offset %llu of a %zu-byte input", (unsigned long long)err.offset, size);
    ctrace_reader_close(r);
    return 0;
  }
  check_error(&s.cut);
  check_error(&s.error);
  if (s.keep < 16 || s.keep > size) FAIL("salvage: keeps %llu bytes of %zu", (unsigned long long)s.keep, size);
  if (s.whole != (s.keep == size))
    FAIL("salvage: whole=%d but keeps %llu bytes of %zu", s.whole, (unsigned long long)s.keep, size);
  if (s.info.bytes != s.keep)
    FAIL("salvage: info.bytes %llu, keep %llu", (unsigned long long)s.info.bytes, (unsigned long long)s.keep);
  if (s.cut.offset > size) FAIL("salvage: cut at %llu of %zu", (unsigned long long)s.cut.offset, size);
  size_t len;
  if (ctrace_reader_bytes(r, &len) != data || len != size) FAIL("salvage: the reader's bytes are not the input");
  /* The kept prefix, copied to an allocation of its size: ASan sees a read
   * past it. */
  uint8_t *p = malloc(s.keep);
  if (!p) abort();
  memcpy(p, data, s.keep);
  ctrace_reader *q = NULL;
  ctrace_trace_info in;
  if (ctrace_reader_open_mem(p, s.keep, &q, &err) != 0 || ctrace_reader_check(q, &in, &err) != 0)
    FAIL("salvage: the %llu bytes kept do not check: offset %llu: %s", (unsigned long long)s.keep,
         (unsigned long long)err.offset, err.message);
  if (in.events != s.info.events || in.generations != s.info.generations || in.goroutines != s.info.goroutines ||
      in.procs != s.info.procs || in.threads != s.info.threads || in.duration_ns != s.info.duration_ns ||
      in.frequency != s.info.frequency || in.version != s.info.version)
    FAIL("salvage: the kept prefix checks as %llu events, %llu generations; salvage said %llu, %llu",
         (unsigned long long)in.events, (unsigned long long)in.generations, (unsigned long long)s.info.events,
         (unsigned long long)s.info.generations);
  ctrace_reader_close(q);
  free(p);
  ctrace_reader_close(r);
  *keep = s.keep;
  *gens = s.generations;
  return s.whole;
}

/* The event model the analyses and exporters read (src/parse/model.h),
 * twice: every stack and string its events name must resolve, and a
 * second pass, after a rewind, must be the first again. */
static void model_pass(ctrace_reader *r) {
  uint64_t n[2] = {0, 0}, sum[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    ctrace__model_rewind(r);
    ctrace_event ev;
    while (ctrace__model_next(r, &ev) == 1) {
      n[k]++;
      sum[k] += ev.type + ev.g + (uint64_t)ev.ts + ev.stack + ev.args[0];
      const ctrace_frame *fr = NULL;
      size_t nf = ctrace__model_stack(r, ev.stack, &fr);
      if (nf && !fr) FAIL("model stack %llu: %zu frames, NULL array", (unsigned long long)ev.stack, nf);
      for (size_t i = 0; i < nf; i++) touch(fr[i].func), touch(fr[i].file);
      touch(ctrace__model_string(r, ev.args[0]));
    }
    if (ctrace__model_oom(r)) return;
  }
  if (n[0] != n[1] || sum[0] != sum[1])
    FAIL("the model's second pass differs: %llu events vs %llu", (unsigned long long)n[1],
         (unsigned long long)n[0]);
}

/* The rows ctrace_stats_build_ex hands out one at a time. */
struct rowsum {
  size_t n;
  uint64_t ids;
};

static void rowsum_add(const ctrace_goroutine_stats *g, void *arg) {
  struct rowsum *s = arg;
  s->n++;
  s->ids += g->id * 31 + (uint64_t)g->t.total;
}

/* What every ctrace command that analyses a trace does with one check
 * accepted: its statistics, each profile (built and encoded), and both
 * exports. Each must end, with 0 or an error code and a message: a trace
 * check accepts leaves an analysis nothing to refuse but memory, and a
 * profile no goroutine to profile. The exports' bytes go to a stream in
 * memory, read through. */
static void analyses(ctrace_reader *r, const ctrace_trace_info *info) {
  char msg[256];
  ctrace_stats *st = NULL;
  memset(msg, 0xAA, sizeof msg);
  int rc = ctrace_stats_build(r, info, &st, msg, sizeof msg);
  if (rc != 0 && rc != CTRACE_ENOMEM) FAIL("stats of a checked trace: %d", rc);
  if (rc != 0 && !memchr(msg, 0, sizeof msg)) FAIL("stats: message not NUL-terminated");
  /* The rows one at a time (csv and json's way) are the rows kept. */
  struct rowsum rs = {0};
  ctrace_stats_options so = {.groups_only = 1, .row = rowsum_add, .row_arg = &rs};
  ctrace_stats *st1 = NULL;
  int rc1 = ctrace_stats_build_ex(r, info, &so, &st1, msg, sizeof msg);
  if (rc == 0 && rc1 == 0) {
    uint64_t ids = 0;
    for (size_t i = 0; i < st->ngoroutines; i++) ids += st->goroutines[i].id * 31 + (uint64_t)st->goroutines[i].t.total;
    if (rs.n != st->ngoroutines || rs.ids != ids || st1->ngoroutines != 0)
      FAIL("stats: %zu rows one at a time, %zu kept", rs.n, st->ngoroutines);
  }
  ctrace_stats_free(st1);
  ctrace_stats_free(st);
  static const ctrace_profile_kind kinds[] = {CTRACE_PROFILE_NET,   CTRACE_PROFILE_SYNC, CTRACE_PROFILE_SYSCALL,
                                              CTRACE_PROFILE_SCHED, CTRACE_PROFILE_WALL, CTRACE_PROFILE_CPU,
                                              CTRACE_PROFILE_WAKER};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    ctrace_profile *p = NULL;
    ctrace_profile_options o = {.kind = kinds[k]};
    rc = ctrace_profile_build(r, &o, &p, msg, sizeof msg);
    /* CTRACE_EINVAL: no goroutine to profile, as Go says. */
    if (rc != 0 && rc != CTRACE_ENOMEM && rc != CTRACE_EINVAL)
      FAIL("profile %d of a checked trace: %d", (int)kinds[k], rc);
    if (rc != 0 && !memchr(msg, 0, sizeof msg)) FAIL("profile %d: message not NUL-terminated", (int)kinds[k]);
    /* Written as built: it fails as the build does. */
    char *w = NULL;
    size_t wlen = 0;
    FILE *fp = open_memstream(&w, &wlen);
    if (fp) {
      int wrc = ctrace_profile_write(r, &o, fp, msg, sizeof msg);
      fclose(fp);
      if (wrc != rc && wrc != CTRACE_ENOMEM && rc != CTRACE_ENOMEM)
        FAIL("profile %d: written as built %d, built %d", (int)kinds[k], wrc, rc);
      for (size_t i = 0; i < wlen; i++) sink += (unsigned char)w[i];
      free(w);
    }
    if (rc != 0) continue;
    unsigned char *pb = NULL;
    size_t len = 0;
    if (ctrace_profile_encode(p, &pb, &len) == 0) {
      for (size_t i = 0; i < len; i++) sink += pb[i];
      free(pb);
    }
    ctrace_profile_free(p);
  }
  for (int f = 0; f < 2; f++) {
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);
    if (!fp) return;
    ctrace_export_trace t = {.reader = r, .name = "fuzz"};
    rc = ctrace_export(&t, 1, f ? CTRACE_EXPORT_JSON : CTRACE_EXPORT_PERFETTO, fp, msg, sizeof msg);
    fclose(fp);
    if (rc != 0 && rc != CTRACE_ENOMEM) FAIL("export %d of a checked trace: %d (%s)", f, rc, msg);
    for (size_t i = 0; i < len; i++) sink += (unsigned char)out[i];
    free(out);
  }
}

/* A Go 1.22+ trace check accepts, read from a later generation
 * (ctrace_reader_generations, _seek_generation): as many generations as
 * check counted; a pass from the last one and from the middle one reads
 * (or fails, with an error, where its events need what came before), and
 * no later than the trace's events; an export of the second half of the
 * trace that seeks runs. */
static void seek_read(ctrace_reader *r, const ctrace_trace_info *info) {
  const int64_t *starts;
  size_t n;
  ctrace_parse_error err;
  memset(&err, 0xAA, sizeof err);
  if (ctrace_reader_generations(r, &starts, &n, &err) != 0) {
    check_error(&err);
    FAIL("generations of a trace check accepts: %s", err.message);
  }
  if (n != info->generations)
    FAIL("%zu generations' starts, check counted %llu", n, (unsigned long long)info->generations);
  size_t ks[2] = {n, n / 2 + 1};
  for (int i = 0; i < 2 && n > 0; i++) {
    if (ctrace_reader_seek_generation(r, ks[i], &err) != 0) FAIL("seek to generation %zu of %zu: %s", ks[i], n, err.message);
    ctrace_event ev;
    uint64_t k = 0;
    int rc;
    while ((rc = ctrace_reader_read(r, &ev, &err)) == 1) {
      format_event(&ev);
      if (++k > info->events) FAIL("a pass from generation %zu read more events than the whole", ks[i]);
    }
    if (rc < 0) check_error(&err);
  }
  char *out = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&out, &len);
  if (!fp) return;
  ctrace_export_trace t = {.reader = r, .name = "fuzz"};
  ctrace_export_options opt = {.from_ns = info->duration_ns / 2 + 1, .to_ns = -1, .seek = 1, .plain = 1};
  char msg[512];
  int rc = ctrace_export_ex(&t, 1, CTRACE_EXPORT_PERFETTO, &opt, fp, NULL, msg, sizeof msg);
  fclose(fp);
  if (rc != 0 && rc != CTRACE_ENOMEM) FAIL("export of a window, seeking: %d (%s)", rc, msg);
  for (size_t i = 0; i < len; i++) sink += (unsigned char)out[i];
  free(out);
  ctrace_reader_rewind(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ctrace_reader *r = NULL;
  ctrace_parse_error err;
  memset(&err, 0xAA, sizeof err); /* no terminator unless the reader writes one */
  if (ctrace_reader_open_mem(data, size, &r, &err) != 0) {
    check_error(&err);
    if (r) FAIL("open failed but set the reader");
    return 0;
  }
  if (!r) FAIL("open succeeded without a reader");
  ctrace_reader_set_progress(r, progress, NULL);

  /* The lookups must answer before check too, and for ids never defined. */
  touch(ctrace_reader_string(r, 0));
  touch(ctrace_reader_string(r, UINT64_MAX));
  touch_stack(r, 0);
  touch_stack(r, UINT64_MAX);

  uint64_t sk, sn;
  int whole = salvage(data, size, &sk, &sn);
  int failed = 0;
  uint64_t streamed = 0;
  ctrace_parse_error serr;
  if (ctrace_reader_version(r) >= 1022) streamed = stream(data, size, &failed, &serr);

  ctrace_trace_info info;
  memset(&err, 0xAA, sizeof err);
  if (ctrace_reader_check(r, &info, &err) != 0) {
    check_error(&err);
    if (ctrace_reader_version(r) >= 1022) cut_read(data, size, sk, sn, 0, 0);
    if (whole) FAIL("salvage kept it whole, check rejects it: %s", err.message);
    if (ctrace_reader_version(r) >= 1022 &&
        (!failed || serr.offset != err.offset || strcmp(serr.message, err.message) != 0))
      FAIL("check failed (%s) but the stream %s", err.message, failed ? serr.message : "did not");
    ctrace_reader_close(r);
    return 0;
  }
  if (ctrace_reader_version(r) >= 1022 && (failed || streamed != info.events))
    FAIL("check counted %llu events, the stream read %llu%s", (unsigned long long)info.events,
         (unsigned long long)streamed, failed ? " and failed" : "");
  if (info.bytes != size)
    FAIL("info.bytes %llu for a %zu-byte input", (unsigned long long)info.bytes, size);
  if (ctrace_reader_version(r) >= 1022) cut_read(data, size, sk, sn, 1, info.events);

  uint64_t sum1, sum2;
  uint64_t n1 = pass(r, &info, &sum1);
  if (n1 != info.events)
    FAIL("%llu events read, check reported %llu", (unsigned long long)n1,
         (unsigned long long)info.events);
  ctrace_event ev;
  if (ctrace_reader_next(r, &ev) != 0) FAIL("next after the end returned an event");
  ctrace_reader_rewind(r);
  uint64_t n2 = pass(r, &info, &sum2);
  if (n2 != n1 || sum2 != sum1)
    FAIL("second pass differs: %llu events vs %llu", (unsigned long long)n2,
         (unsigned long long)n1);
  model_pass(r);
  analyses(r, &info);
  if (ctrace_reader_version(r) >= 1022) seek_read(r, &info);
  ctrace_reader_close(r);
  return 0;
}
