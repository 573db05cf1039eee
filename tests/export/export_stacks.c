/* export_stacks: the stacks of a trace's events, from the reader alone,
 * for export_check.sh to hold `ctrace export` to (ctrace dump prints stack
 * ids only, as Go's -d does). The events are the model's (src/parse/model.h):
 * the classic events of every format, which the export is built from. One
 * line per event with a non-empty stack:
 *
 *   TS TYPE G FUNC;FUNC;...      (leaf first, as the reader gives them;
 *                                a C++ name may hold spaces)
 *
 *   export_stacks TRACE */
#include <stdio.h>

#include "ctrace/parse.h"
#include "parse/model.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: export_stacks TRACE\n");
    return 2;
  }
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open(argv[1], &r, &err) || ctrace_reader_check(r, &info, &err)) {
    fprintf(stderr, "export_stacks: %s: offset %llu: %s\n", argv[1], (unsigned long long)err.offset,
            err.message);
    return 1;
  }
  ctrace_event ev;
  while (ctrace__model_next(r, &ev) == 1) {
    const ctrace_frame *fr;
    size_t n = ev.stack && ev.format == 0 ? ctrace__model_stack(r, ev.stack, &fr) : 0;
    if (!n) continue;
    printf("%lld %s %llu ", (long long)ev.ts, ctrace_event_descs[ev.type].name, (unsigned long long)ev.g);
    for (size_t i = 0; i < n; i++) printf("%s%s", i ? ";" : "", fr[i].func ? fr[i].func : "");
    printf("\n");
  }
  ctrace_reader_close(r);
  return 0;
}
