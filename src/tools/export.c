/* ctrace export: a trace for Perfetto (src/export/). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "ctrace/export.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace export [--perfetto] [-o FILE] TRACE\n"
          "\n"
          "Writes the trace TRACE in Perfetto's protobuf trace format (open it in\n"
          "ui.perfetto.dev or trace_processor) to FILE, or to standard output when it\n"
          "is not a terminal: a track per goroutine with its states as slices (running,\n"
          "runnable, syscall, waiting and why) and its user regions, a track per P, GC\n"
          "and stop-the-world slices, the heap as a counter, and flows from creator to\n"
          "created and from waker to woken. See docs/analyse.md.\n"
          "\n"
          "  --perfetto   the format (the default and, for now, the only one)\n"
          "  -o FILE      write to FILE (replaced only once the export is complete)\n"
          "\n"
          "Exit status 0, 1 if the trace is bad (the error names its byte offset), 2 on\n"
          "bad usage.\n");
}

int ctrace__cmd_export(int argc, char **argv) {
  const char *out = NULL, *trace = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--perfetto") == 0 || strcmp(a, "-f=perfetto") == 0) {
    } else if (strcmp(a, "-f") == 0 && i + 1 < argc && strcmp(argv[i + 1], "perfetto") == 0) {
      i++;
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strncmp(a, "-o=", 3) == 0) {
      out = a + 3;
    } else if (!ctrace__tool_operand("export", a, &trace)) {
      return 2;
    }
  }
  if (!trace) {
    usage(stderr);
    return 2;
  }
  if (!out && isatty(1)) {
    fprintf(stderr, "ctrace export: not writing a binary trace to a terminal: use -o FILE\n");
    return 2;
  }
  ctrace_reader *r = ctrace__tool_open_analysed("export", trace, NULL);
  if (!r) return 1;
  FILE *f = stdout;
  char *tmp = NULL;
  int rc = 1;
  if (out) {
    /* Written beside the target and renamed: no half export under its name. */
    size_t len = strlen(out) + 16;
    tmp = malloc(len);
    int fd = -1;
    if (tmp) {
      snprintf(tmp, len, "%s.tmpXXXXXX", out);
      fd = mkstemp(tmp);
    }
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
      fprintf(stderr, "ctrace export: %s: %s\n", out, strerror(errno));
      if (fd >= 0) close(fd), unlink(tmp);
      free(tmp);
      ctrace_reader_close(r);
      return 1;
    }
  }
  const char *base = strrchr(trace, '/');
  char err[256];
  if (ctrace_export_perfetto(r, f, base ? base + 1 : trace, 1, err, sizeof err) == 0) rc = 0;
  else fprintf(stderr, "ctrace export: %s: %s\n", trace, err);
  if (out) {
    if (fclose(f) && rc == 0) {
      fprintf(stderr, "ctrace export: %s: %s\n", out, strerror(errno));
      rc = 1;
    }
    if (rc == 0 && rename(tmp, out)) {
      fprintf(stderr, "ctrace export: %s: %s\n", out, strerror(errno));
      rc = 1;
    }
    if (rc) unlink(tmp);
    free(tmp);
  }
  ctrace_reader_close(r);
  return rc;
}
