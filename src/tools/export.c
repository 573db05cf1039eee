/* ctrace export: traces as one timeline for Perfetto or Chrome's viewer
 * (src/export/). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "ctrace/export.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace export [-f perfetto|json] [-o FILE] [--from TIME] [--to TIME] [--gen A-B]\n"
          "       [--task A-B | --goroutine A-B] [--exact] TRACE...\n"
          "\n"
          "Writes the traces TRACE... as one timeline to FILE, or to standard output\n"
          "when it is not a terminal, in Perfetto's protobuf trace format (the default;\n"
          "open it in ui.perfetto.dev or trace_processor) or in the JSON trace event\n"
          "format of Chrome's viewer (for tools that read only JSON).\n"
          "\n"
          "Each trace is a process, named by its program and pid where it says them\n"
          "(`ctrace run` writes them), else after its file, pid N when its name ends\n"
          "in .pid<N> (the files of `ctrace run -f`), else 1, 2, .... Traces that all\n"
          "hold their clock (`ctrace run`'s, Go 1.25+'s) go on one timeline by it,\n"
          "dated (Perfetto's REALTIME clock, JSON's metadata); else each\n"
          "starts at 0, with a warning for each without. In each process: a track per\n"
          "goroutine with its states as slices (running, runnable, syscall, waiting\n"
          "and why) and its user regions, a track per P, GC and stop-the-world slices,\n"
          "a track per user task (creation to end) with its logs (category, message),\n"
          "counters of goroutines by state, of threads (holding a P, in a syscall) and\n"
          "of the heap, flows from creator to created and from waker to woken, and the\n"
          "call stacks of creations, blocks and system calls. See docs/analyse.md.\n"
          "\n"
          "  -f FORMAT    perfetto (the default) or json\n"
          "  --perfetto   the same as -f perfetto\n"
          "  --plain      Perfetto's packets as they are, for tools that read its\n"
          "               protos but do not inflate compressed_packets\n"
          "  -o FILE      write to FILE (replaced only once the export is complete)\n"
          "  --from TIME  export the window from TIME on, a time since each trace's\n"
          "               first event with its unit: 1.5s, 250ms, 100us, 2m\n"
          "  --to TIME    ... up to TIME. A slice open at the window's start begins\n"
          "               there, one open at its end ends there, and the counters\n"
          "               start with their values then; what is outside is left out.\n"
          "  --gen A-B    the window of generations A to B (or --gen A) of Go 1.22+\n"
          "               traces, from 1 (Go writes one about every second)\n"
          "  --task A-B   the window of tasks A to B (or --task A): from the first\n"
          "               creation to the last end (the trace's start or end where\n"
          "               they are not in it)\n"
          "  --goroutine A-B  the window of goroutines A to B (or --goroutine A), the\n"
          "               same way\n"
          CTRACE__TOOL_EXACT_HELP
          "  --budget SIZE  what a browser opens (default 1G of packets, inflated:\n"
          "               Perfetto's UI holds a trace at 2 to 4 times that): a larger\n"
          "               export, in either format, is written whole, with a warning\n"
          "               that proposes windows that fit\n"
          "\n"
          "Perfetto's format is the one for big traces. Its packets are deflated in\n"
          "bundles (compressed_packets), as Perfetto's own tracing service writes a\n"
          "compressed trace, about 1.3 times the size of a Go 1.22+ trace (3 to 10\n"
          "times with --plain), on a thread a core. JSON, many times larger and slower\n"
          "to load, is for small traces and tools that read only JSON. On a terminal,\n"
          "an export that takes more than a second shows its progress.\n"
          "\n"
          "Exit status 0 (with a warning past the budget), 1 if a trace is bad (the\n"
          "error names its byte offset), 2 on bad usage (a bad window: its end not\n"
          "after its start, its start after the trace's end, generations a trace\n"
          "does not have, tasks or goroutines no trace has, or two have).\n");
}

/* Whether -o FILE is written beside its name and renamed into place only
 * once whole (ctrace__tool_out_open: a regular file, or a new one), so
 * that a trace found bad after the export has begun leaves nothing. */
static bool out_replaced_whole(const char *out) {
  struct stat st;
  return out && (stat(out, &st) != 0 || S_ISREG(st.st_mode));
}

/* The files, space-separated, for a command line to copy. */
static char *join(const char **files, size_t n) {
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += strlen(files[i]) + 1;
  char *s = malloc(len);
  if (!s) return NULL;
  s[0] = 0;
  for (size_t i = 0; i < n; i++) strcat(strcat(s, i ? " " : ""), files[i]);
  return s;
}

int ctrace__cmd_export(int argc, char **argv) {
  const char *out = NULL, *format = "perfetto";
  const char **files = calloc((size_t)argc, sizeof *files);
  ctrace_export_trace *traces = calloc((size_t)argc, sizeof *traces);
  size_t n = 0;
  int rc = 2;
  ctrace__tool_window win = {.budget = CTRACE__TOOL_BUDGET};
  int64_t *durations = NULL, *offsets = NULL, longest = 0; /* offsets: durations' second half */
  ctrace_export_result res = {0};
  bool json = false;
  int plain = 0;
  if (!files || !traces) {
    fprintf(stderr, "ctrace export: out of memory\n");
    rc = 1;
    goto done;
  }
  durations = calloc(2 * (size_t)argc, sizeof *durations);
  offsets = durations ? durations + argc : NULL;
  if (!durations) {
    fprintf(stderr, "ctrace export: out of memory\n");
    rc = 1;
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int wa = ctrace__tool_window_arg("export", argc, argv, &i, &win);
    if (wa < 0) goto done;
    if (wa > 0) continue;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      rc = 0;
      goto done;
    } else if (strcmp(a, "--perfetto") == 0) {
      format = "perfetto";
    } else if (strcmp(a, "--plain") == 0) {
      plain = 1;
    } else if (strcmp(a, "-f") == 0 && i + 1 < argc) {
      format = argv[++i];
    } else if (strncmp(a, "-f=", 3) == 0) {
      format = a + 3;
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strncmp(a, "-o=", 3) == 0) {
      out = a + 3;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "ctrace export: unknown option %s\nrun 'ctrace export --help' for usage\n", a);
      goto done;
    } else {
      files[n++] = a;
    }
  }
  json = strcmp(format, "json") == 0;
  if (!json && strcmp(format, "perfetto") != 0) {
    fprintf(stderr, "ctrace export: unknown format %s (perfetto or json)\n", format);
    goto done;
  }
  if (!n) {
    usage(stderr);
    goto done;
  }
  if (!out && isatty(1)) {
    fprintf(stderr, "ctrace export: not writing a trace export to a terminal: use -o FILE\n");
    goto done;
  }
  /* Every trace is read through before anything is let out: a bad one
   * leaves no output. One Go 1.22+ trace exported whole into a file has
   * no pass of its own for it (an eighth of the export's time): the
   * export's pass is the check, as stats' is (ctrace__tool_open_unchecked),
   * and what it finds is said before the file is renamed into place, as
   * it would have been before the export. Several traces are read
   * through first: what each says (a clock missing, a cut) comes before
   * the error of a later one; a window needs their durations, and
   * standard output cannot be taken back. */
  rc = 1;
  bool unchecked = n == 1 && !win.has_from && !win.has_to && !win.gen_from && !win.task && !win.goroutine &&
                   out_replaced_whole(out);
  /* Nor is one trace's window read from the generation before it
   * (ctrace_export_options.seek): the trace's duration comes from its
   * last generation, and what the window's pass meets is said as the
   * check would have said it. */
  bool seeking = n == 1 && win.has_from && win.from > 0 && !win.exact && !win.gen_from && !win.task &&
                 !win.goroutine && out_replaced_whole(out);
  int prep = ctrace__tool_export_prepare("export", files, n, traces, durations, offsets, &win, &longest,
                                         unchecked || seeking);
  if (prep != 0) {
    rc = prep;
    goto done;
  }
  FILE *f = stdout;
  ctrace__tool_out o;
  if (out) {
    /* No half export under its name (ctrace__tool_out_open). */
    int fd = ctrace__tool_out_open(&o, out);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
      int e = errno;
      if (fd >= 0) ctrace__tool_out_close(&o, false);
      /* A bad trace is said first, and alone, as when it was read first. */
      ctrace_trace_info info;
      if (unchecked && !ctrace__tool_checked(files[0], traces[0].reader, &info, false)) goto done;
      fprintf(stderr, "ctrace export: %s: %s\n", out, strerror(e));
      goto done;
    }
    o.fd = -1; /* fclose closes it */
  }
  char err[512];
  ctrace__tool_progress prog;
  ctrace__tool_progress_begin(&prog, "export", files);
  if (unchecked) ctrace_reader_set_progress(traces[0].reader, ctrace__tool_progress_bytes, &prog);
  ctrace_export_options opt = {.from_ns = win.from, .to_ns = win.has_to ? win.to : 0,
                               .progress = ctrace__tool_progress_show, .progress_arg = &prog,
                               .durations = durations, .offsets_ns = offsets, .gen_from = win.gen_from, .gen_to = win.gen_to,
                               .plain = plain, .seek = !win.exact};
  int xrc = ctrace_export_ex(traces, n, json ? CTRACE_EXPORT_JSON : CTRACE_EXPORT_PERFETTO, &opt, f, &res, err,
                             sizeof err);
  ctrace__tool_progress_end(&prog);
  bool bad = false;
  if (unchecked) {
    /* What the check would have said, from the export's pass. */
    ctrace_trace_info info;
    ctrace_reader_set_progress(traces[0].reader, NULL, NULL);
    if (!ctrace__tool_checked(files[0], traces[0].reader, &info, false)) bad = true;
    else longest = durations[0] = info.duration_ns;
  } else if (seeking) {
    ctrace_parse_error perr;
    if (ctrace_reader_failed(traces[0].reader, &perr)) {
      ctrace__tool_error(files[0], &perr);
      bad = true;
    } else if (ctrace_reader_version(traces[0].reader) >= 1022) {
      ctrace__tool_cut_warning(files[0], traces[0].reader, NULL);
    }
  }
  if (bad) rc = 1;
  else if (xrc == 0) rc = 0;
  else fprintf(stderr, "ctrace export: %s\n", err);
  if (out) {
    int e = fclose(f) ? errno : 0;
    int c = ctrace__tool_out_close(&o, rc == 0 && !e);
    if (rc == 0 && (e || c)) {
      fprintf(stderr, "ctrace export: %s: %s\n", out, strerror(e ? e : c));
      rc = 1;
    }
  }
  if (rc == 0 && res.bytes > win.budget) {
    /* Written whole, as asked; but a browser will not open it. */
    int64_t from = win.from, to = win.has_to && win.to < longest ? win.to : longest;
    char size[32], budget[32];
    ctrace__tool_fmt_size(size, sizeof size, res.bytes);
    ctrace__tool_fmt_size(budget, sizeof budget, win.budget);
    fprintf(stderr,
            "ctrace export: warning: the export is %s of packets, more than a browser opens (--budget %s: "
            "Perfetto's UI holds a trace at 2 to 4 times its packets' size)\n",
            size, budget);
    char *list = join(files, n);
    ctrace__tool_propose(json ? "export -f json" : "export", &win, from, to, res.bytes, to - from,
                         list ? list : files[0], out);
    free(list);
  }
done:
  if (traces) ctrace__tool_export_close(traces, n);
  free(files);
  free(traces);
  free(durations);
  return rc;
}
