/* ctrace dump: every event, one line each, as `go tool trace -d` prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parse/model.h"
#include "cmd.h"
#include "ctrace/parse.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace dump [--strict] FILE\n"
          "       ctrace dump --model FILE\n"
          "\n"
          "Prints every event of the trace FILE in order, one line each, exactly as\n"
          "`go tool trace -d FILE` prints them, so the two can be diffed. Reads every\n"
          "trace version Go 1.19 reads; a trace Go would reject prints nothing and\n"
          "the error, with its byte offset, goes to stderr (exit status 1).\n"
          "Traces of Go's current format print streamed (on an error, the events\n"
          "before it, then the error): those of headers go 1.22 and 1.23 (Go 1.22\n"
          "to 1.24) as Go 1.23's `go tool trace -d=1` prints them, those of go 1.25\n"
          "and 1.26 (Go 1.25 to 1.27) as Go 1.27's `go tool trace -d=parsed` does.\n"
          "Such a trace cut short (its writer killed) prints up to its last whole\n"
          "generation, with a warning on stderr that says where it was cut (exit\n"
          "status 0); cut inside its first generation, it is an error. With\n"
          "--strict, a trace cut short is an error, as it is to Go's tool: what\n"
          "this prints and its exit status are then Go's.\n"
          "\n"
          "With --model, prints instead the classic events ctrace's analyses and\n"
          "exports read, in the words of Go 1.19's `go tool trace -d`: a Go 1.22+\n"
          "trace's events turned into classic ones as Go 1.23 turns them back\n"
          "(GoCreate, GoStart, GoBlockSync, GoSysBlock, ...), so that what a\n"
          "program did can be counted alike in every format. The adapter's own\n"
          "markers (generation ends, status stacks) are left out.\n");
}

static int write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(1, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int flush(char *buf, size_t *at) {
  int rc = write_all(buf, *at);
  *at = 0;
  return rc;
}

/* Lines are formatted straight into one big buffer, written out when it
 * fills: stdio per line was a tenth of the time. */
enum { OUT = 1 << 20, LINE = 4096 };
static char out[OUT];
static size_t at;

/* ev's line, in the words of Go go, into out; a long log message's
 * straight to stdout. -1 on a write error or out of memory. */
static int put(const ctrace_event *ev, int go) {
  if (OUT - at < LINE && flush(out, &at)) return -1;
  int n = ctrace_event_format_go(ev, go, out + at, OUT - at);
  if ((size_t)n + 1 < OUT - at) {
    at += (size_t)n;
    out[at++] = '\n';
    return 0;
  }
  if (flush(out, &at)) return -1;
  char *big = malloc((size_t)n + 2);
  if (!big) return -1;
  ctrace_event_format_go(ev, go, big, (size_t)n + 1);
  big[n] = '\n';
  int rc = write_all(big, (size_t)n + 1);
  free(big);
  return rc;
}

/* --model: the model's classic events (format 0), each line as the
 * classic reader's; a model is read over a checked reader. */
static int dump_model(const char *path) {
  ctrace_reader *r = ctrace__tool_open(path);
  if (!r) return 1;
  int rc = 0;
  ctrace_event ev;
  while (rc == 0 && ctrace__model_next(r, &ev) == 1)
    if (ev.format == 0 && put(&ev, 1023)) rc = 1;
  if (flush(out, &at)) rc = 1;
  if (rc) perror("ctrace dump: stdout");
  if (ctrace__model_oom(r)) {
    fprintf(stderr, "ctrace dump: %s: out of memory\n", path);
    rc = 1;
  }
  ctrace_reader_close(r);
  return rc;
}

int ctrace__cmd_dump(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--model") == 0) {
    argv++, argc--;
    int rc = ctrace__tool_file_arg(argc, argv, usage);
    return rc >= 0 ? rc : dump_model(argv[1]);
  }
  bool strict = argc == 3 && strcmp(argv[1], "--strict") == 0;
  if (strict) argv++, argc--;
  int rc = ctrace__tool_file_arg(argc, argv, usage);
  if (rc >= 0) return rc;
  /* A Go 1.22+ trace streams in one pass, printed as read, and an error
   * ends it as it ends Go's output; older ones are checked first. */
  ctrace_reader *r = ctrace__tool_open_stream(argv[1], !strict);
  if (!r) return 1;
  ctrace_parse_error err;
  rc = 0;
  ctrace_event ev;
  int more;
  /* Each format in the words of the newest Go we hold its text to. */
  const int go = ctrace_reader_version(r) >= 1025 ? 1027 : 1023;
  while ((more = ctrace_reader_read(r, &ev, &err)) == 1 && rc == 0)
    if (put(&ev, go)) rc = 1;
  if (flush(out, &at)) rc = 1;
  if (rc) perror("ctrace dump: stdout");
  if (more < 0 && rc == 0) {
    ctrace__tool_error(argv[1], &err);
    rc = 1;
  }
  if (rc == 0) ctrace__tool_cut_warning(argv[1], r, NULL);
  ctrace_reader_close(r);
  return rc;
}
