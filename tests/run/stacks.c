/* Prints each event of a trace that has a stack, one line:
 *   <event as ctrace dump prints it> | func1 < func2 < ... (innermost first)
 * for tests/run/unwind_check.sh to look into. */
#include <stdio.h>

#include "ctrace/parse.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open(argv[1], &r, &err) != 0 || ctrace_reader_check(r, &info, &err) != 0) {
    fprintf(stderr, "%s: %s\n", argv[1], err.message);
    return 1;
  }
  ctrace_event ev;
  while (ctrace_reader_next(r, &ev) == 1) {
    if (!ev.stack) continue;
    char buf[512];
    ctrace_event_format(&ev, buf, sizeof buf);
    const ctrace_frame *f;
    size_t n = ctrace_reader_stack(r, ev.stack, &f);
    printf("%s |", buf);
    for (size_t i = 0; i < n; i++) printf("%s%s", i ? " < " : " ", f[i].func);
    printf("\n");
  }
  ctrace_reader_close(r);
  return 0;
}
