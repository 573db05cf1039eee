/* Prints each event of a trace that has a stack, one line:
 *   <event as ctrace dump --model prints it> | func1 < func2 < ... (innermost first)
 * or with -p, the stack's pcs in hex instead of names:
 *   <event> | 0x... 0x... ...
 * for tests/preload/unwind_check.sh and dbgframe_check.sh to look into. The
 * events are the model's (src/parse/model.h), the classic events of every
 * format, so that the checks read a trace of Go's current format (ctrace
 * run's default) as they read a classic one. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctrace/parse.h"
#include "parse/model.h"

int main(int argc, char **argv) {
  int pcs = argc == 3 && strcmp(argv[1], "-p") == 0;
  if (argc != 2 + pcs) {
    fprintf(stderr, "usage: %s [-p] TRACE\n", argv[0]);
    return 2;
  }
  const char *path = argv[1 + pcs];
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open(path, &r, &err) != 0 || ctrace_reader_check(r, &info, &err) != 0) {
    fprintf(stderr, "%s: %s\n", path, err.message);
    return 1;
  }
  ctrace_event ev;
  while (ctrace__model_next(r, &ev) == 1) {
    if (!ev.stack || ev.format != 0) continue;
    char buf[512];
    ctrace_event_format(&ev, buf, sizeof buf);
    const ctrace_frame *f;
    size_t n = ctrace__model_stack(r, ev.stack, &f);
    printf("%s |", buf);
    for (size_t i = 0; i < n; i++) {
      if (pcs)
        printf(" %#" PRIx64, f[i].pc);
      else
        printf("%s%s", i ? " < " : " ", f[i].func);
    }
    printf("\n");
  }
  ctrace_reader_close(r);
  return 0;
}
