/* ctrace_export: runs the walk (walk.c) over each trace into the encoder of
 * the format asked for (perfetto.c, json.c). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace/analyse.h"

#include "ctrace/export.h"
#include "export/model.h"

typedef struct prog {
  const ctrace_export_options *opt;
  size_t trace;
} prog;

static void progress(void *arg, int64_t ts, int64_t duration) {
  prog *p = arg;
  p->opt->progress(p->opt->progress_arg, p->trace, ts, duration);
}

int ctrace_export_ex(const ctrace_export_trace *traces, size_t n, ctrace_export_format format,
                     const ctrace_export_options *opt, FILE *out, ctrace_export_result *res, char *err,
                     size_t errlen) {
  static const ctrace_export_options none;
  if (!opt) opt = &none;
  ctrace_export_result tmp;
  if (!res) res = &tmp;
  *res = (ctrace_export_result){0};
  ex_enc *e = format == CTRACE_EXPORT_JSON ? ctrace__ex_json(out) : ctrace__ex_perfetto(out, opt->plain);
  /* The window filter only where a window or a budget is asked: the whole
   * goes straight to the encoder. */
  bool windowed = opt->from_ns > 0 || opt->to_ns != 0 || opt->max_bytes || opt->gen_from;
  if (e && windowed) {
    /* A generation range starts with no window: the walk sets it. */
    int64_t from = opt->gen_from ? INT64_MAX : opt->from_ns;
    ex_enc *w = ctrace__ex_window(e, from, opt->to_ns == 0 ? -1 : opt->to_ns, opt->max_bytes);
    if (!w) e->free(e);
    e = w;
  }
  if (!e) {
    snprintf(err, errlen, "out of memory");
    return CTRACE_ENOMEM;
  }
  /* Each trace's wall-clock time at its first event, where it holds an
   * anchor; the first that does dates the timeline (its 0). */
  int64_t *real = calloc(n ? n : 1, sizeof *real), wall0 = 0;
  if (!real) {
    e->free(e);
    snprintf(err, errlen, "out of memory");
    return CTRACE_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    ctrace_process_info pi;
    ctrace_process_read(traces[i].reader, &pi);
    real[i] = pi.start_real_ns;
    if (real[i] && !wall0) wall0 = real[i] - (opt->offsets_ns ? opt->offsets_ns[i] : 0);
  }
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0 && !res->over; i++) {
    prog pg = {opt, i};
    ex_source s = {.r = traces[i].reader, .name = traces[i].name,
                   .pid = traces[i].pid ? traces[i].pid : (uint32_t)i + 1, .index = (uint32_t)i,
                   .count = (uint32_t)n, .progress = opt->progress ? progress : NULL, .progress_arg = &pg,
                   .duration = opt->durations ? opt->durations[i] : 0, .gen_from = opt->gen_from,
                   .gen_to = opt->gen_to, .offset = opt->offsets_ns ? opt->offsets_ns[i] : 0,
                   .start_real_ns = real[i], .wall0_ns = wall0};
    if (opt->seek && !opt->gen_from) s.seek_ns = opt->from_ns - s.offset;
    rc = ctrace__ex_walk(&s, e, err, errlen) ? CTRACE_ENOMEM : 0; /* what a walk fails on */
    if (windowed && ctrace__ex_window_over(e, &res->reached_ns)) res->over = 1, res->over_trace = i;
  }
  if (rc == 0) e->finish(e);
  res->bytes = e->bytes;
  res->written = e->written;
  if (rc == 0 && e->oom) {
    snprintf(err, errlen, "out of memory");
    rc = CTRACE_ENOMEM;
  }
  if (rc == 0 && (e->werr || fflush(out) || ferror(out))) {
    int code = errno ? -errno : CTRACE_EIO;
    snprintf(err, errlen, "write error: %s", ctrace_strerror(code));
    rc = code;
  }
  e->free(e);
  free(real);
  return rc;
}

int ctrace_export(const ctrace_export_trace *traces, size_t n, ctrace_export_format format, FILE *out,
                  char *err, size_t errlen) {
  return ctrace_export_ex(traces, n, format, NULL, out, NULL, err, errlen);
}

int ctrace_export_perfetto(ctrace_reader *r, FILE *out, const char *process_name, uint32_t pid,
                           char *err, size_t errlen) {
  ctrace_export_trace t = {.reader = r, .name = process_name, .pid = pid};
  return ctrace_export(&t, 1, CTRACE_EXPORT_PERFETTO, out, err, errlen);
}
