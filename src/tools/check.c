/* ctrace check: validates a trace as Go's reader would and sums it up. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace check FILE\n"
          "\n"
          "Reads, orders and validates the trace FILE as Go's reader does and prints one\n"
          "line: its version, events, goroutines, Ps and duration; or the error with its\n"
          "byte offset, in Go's words where Go rejects the trace. Exit status 0 if the\n"
          "trace is valid, 1 if not, 2 on bad usage.\n");
}

int ctrace__cmd_check(int argc, char **argv) {
  int rc = ctrace__tool_file_arg(argc, argv, usage);
  if (rc >= 0) return rc;
  ctrace_trace_info in;
  ctrace_reader *r = ctrace__tool_open_info(argv[1], &in);
  if (!r) return 1;
  if (in.version >= 1022)
    printf("%s: go 1.%d trace, %llu events, %llu goroutines, %llu Ps, %llu threads, %llu generations, %.3f ms\n",
           argv[1], in.version % 1000, (unsigned long long)in.events, (unsigned long long)in.goroutines,
           (unsigned long long)in.procs, (unsigned long long)in.threads, (unsigned long long)in.generations,
           (double)in.duration_ns / 1e6);
  else
    printf("%s: go 1.%d trace, %llu events, %llu goroutines, %llu Ps, %.3f ms\n", argv[1],
           in.version % 1000, (unsigned long long)in.events, (unsigned long long)in.goroutines,
           (unsigned long long)in.procs, (double)in.duration_ns / 1e6);
  ctrace_reader_close(r);
  return 0;
}
