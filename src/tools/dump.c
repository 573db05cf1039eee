/* ctrace dump: every event, one line each, as `go tool trace -d` prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "ctrace/parse.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace dump FILE\n"
          "\n"
          "Prints every event of the trace FILE in order, one line each, exactly as\n"
          "`go tool trace -d FILE` prints them, so the two can be diffed. Reads every\n"
          "trace version Go 1.19 reads. A trace Go would reject prints nothing and\n"
          "the error, with its byte offset, goes to stderr (exit status 1).\n");
}

int ctrace__cmd_dump(int argc, char **argv) {
  int rc = ctrace__tool_file_arg(argc, argv, usage);
  if (rc >= 0) return rc;
  ctrace_reader *r = ctrace__tool_open(argv[1]);
  if (!r) return 1;
  static char out[1 << 20];
  setvbuf(stdout, out, _IOFBF, sizeof out);
  ctrace_event ev;
  char line[4096];
  while (ctrace_reader_next(r, &ev)) {
    int n = ctrace_event_format(&ev, line, sizeof line);
    if (n >= (int)sizeof line) { /* a long log message */
      char *big = malloc((size_t)n + 1);
      if (big) {
        ctrace_event_format(&ev, big, (size_t)n + 1);
        fputs(big, stdout);
        free(big);
      }
    } else {
      fwrite(line, 1, (size_t)n, stdout);
    }
    putchar('\n');
  }
  ctrace_reader_close(r);
  if (fflush(stdout) != 0) {
    perror("ctrace dump: stdout");
    return 1;
  }
  return 0;
}
