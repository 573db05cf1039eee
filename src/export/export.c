/* ctrace_export: runs the walk (walk.c) over each trace into the encoder of
 * the format asked for (perfetto.c, json.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctrace/export.h"
#include "export/model.h"

int ctrace_export(const ctrace_export_trace *traces, size_t n, ctrace_export_format format, FILE *out,
                  char *err, size_t errlen) {
  ex_enc *e = format == CTRACE_EXPORT_JSON ? ctrace__ex_json(out) : ctrace__ex_perfetto(out);
  if (!e) {
    snprintf(err, errlen, "out of memory");
    return CTRACE_ENOMEM;
  }
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    ex_source s = {.r = traces[i].reader, .name = traces[i].name,
                   .pid = traces[i].pid ? traces[i].pid : (uint32_t)i + 1, .index = (uint32_t)i,
                   .count = (uint32_t)n};
    rc = ctrace__ex_walk(&s, e, err, errlen) ? CTRACE_ENOMEM : 0; /* what a walk fails on */
  }
  if (rc == 0) e->finish(e);
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
  return rc;
}

int ctrace_export_perfetto(ctrace_reader *r, FILE *out, const char *process_name, uint32_t pid,
                           char *err, size_t errlen) {
  ctrace_export_trace t = {.reader = r, .name = process_name, .pid = pid};
  return ctrace_export(&t, 1, CTRACE_EXPORT_PERFETTO, out, err, errlen);
}
