/* ctrace view: the export of traces (src/export/), served to
 * ui.perfetto.dev from 127.0.0.1 (serve.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ctrace/export.h"
#include "serve.h"
#include "tools.h"

/* Perfetto's UI fetches from this port of the loopback and no other: it is
 * the one its Content-Security-Policy allows (connect-src, for
 * trace_processor --httpd), and the one its own tools/open_trace_in_ui
 * serves a trace on for that reason. */
#define PERFETTO_PORT 9001
#define PERFETTO_ORIGIN "https://ui.perfetto.dev"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace view [--port=N] [--once] [--from TIME] [--to TIME] [--gen A-B]\n"
          "       [--task ID | --goroutine ID] TRACE...\n"
          "\n"
          "Exports the traces TRACE... as one timeline in Perfetto's format (as\n"
          "`ctrace export` does), serves it on http://127.0.0.1:9001 and prints the\n"
          "link that opens it in ui.perfetto.dev:\n"
          "\n"
          "  " PERFETTO_ORIGIN "/#!/?url=http://127.0.0.1:9001/NAME.pftrace\n"
          "\n"
          "This is Perfetto's own way of opening a local trace (its tools/\n"
          "open_trace_in_ui): the page fetches the file from this machine, which\n"
          "sends the CORS headers that let it; nothing is uploaded. The server\n"
          "listens on 127.0.0.1 only, and serves until interrupted (Ctrl-C).\n"
          "\n"
          "  --port=N     listen on port N (0: any free one). ui.perfetto.dev fetches\n"
          "               from port 9001 only (its Content-Security-Policy): another\n"
          "               port is for tests, or a UI that allows it.\n"
          "  --once       exit once the trace has been sent (the UI fetches it once)\n"
          "  --from TIME  view the window from TIME on, a time since each trace's\n"
          "               first event with its unit: 1.5s, 250ms, 100us, 2m\n"
          "  --to TIME    ... up to TIME (as `ctrace export --from --to`)\n"
          "  --gen A-B    the window of generations A to B (or --gen A) of Go 1.22+\n"
          "               traces, from 1 (Go writes one about every second)\n"
          "  --task ID    the window of task ID's life, from its creation to its end\n"
          "               (the trace's start or end where they are not in it)\n"
          "  --goroutine ID  the window of goroutine ID's life, the same way\n"
          "  --budget SIZE  what a browser opens (default 1G: Perfetto's UI holds a\n"
          "               trace at 2 to 4 times its size)\n"
          "\n"
          "An export larger than the budget is not served: a browser tab could not\n"
          "open it. The windows that fit are proposed instead, to view one at a\n"
          "time with --from and --to.\n"
          "\n"
          "Exit status 0 (interrupted, or sent with --once), 1 if a trace is bad (the\n"
          "error names its byte offset; nothing is served), the export is larger than\n"
          "the budget (windows proposed; nothing is served) or the port is in use, 2\n"
          "on bad usage (a bad window: its end not after its start, its start after\n"
          "the trace's end, generations a trace does not have, a task or goroutine\n"
          "no trace has, or two have).\n");
}

/* The name the export is served under: the first trace's file name, with
 * what a URL would need escaped replaced, so the link needs no escaping. */
static char *doc_name(const char *file, size_t n) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t len = strlen(base);
  char *s = malloc(len + 48);
  if (!s) return NULL;
  for (size_t i = 0; i < len; i++) {
    char c = base[i];
    s[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                   c == '-' || c == '_'
               ? c
               : '_';
  }
  s[len] = 0;
  if (!len || s[0] == '.') memmove(s + 5, s, len + 1), memcpy(s, "trace", 5);
  if (n > 1) snprintf(s + strlen(s), 32, "-and-%zu-more", n - 1);
  strcat(s, ".pftrace");
  return s;
}

int ctrace__cmd_view(int argc, char **argv) {
  const char **files = calloc((size_t)argc, sizeof *files);
  ctrace_export_trace *traces = calloc((size_t)argc, sizeof *traces);
  size_t n = 0;
  long port = PERFETTO_PORT;
  bool once = false;
  char *buf = NULL, *name = NULL, *path = NULL;
  size_t len = 0;
  int rc = 2;
  ctrace__tool_window win = {.budget = CTRACE__TOOL_BUDGET};
  int64_t *durations = calloc(2 * (size_t)argc, sizeof *durations), longest = 0;
  int64_t *offsets = durations ? durations + argc : NULL; /* durations' second half */
  if (!files || !traces || !durations) {
    fprintf(stderr, "ctrace view: out of memory\n");
    rc = 1;
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int wa = ctrace__tool_window_arg("view", argc, argv, &i, &win);
    if (wa < 0) goto done;
    if (wa > 0) continue;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      rc = 0;
      goto done;
    } else if (strcmp(a, "--once") == 0) {
      once = true;
    } else if (strncmp(a, "--port=", 7) == 0) {
      v = a + 7;
    } else if (strcmp(a, "--port") == 0 && i + 1 < argc) {
      v = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "ctrace view: unknown option %s\nrun 'ctrace view --help' for usage\n", a);
      goto done;
    } else {
      files[n++] = a;
    }
    if (v) {
      char *end;
      errno = 0;
      port = strtol(v, &end, 10);
      if (!*v || *end || errno || port < 0 || port > 65535) {
        fprintf(stderr, "ctrace view: bad port %s (0 to 65535)\n", v);
        goto done;
      }
    }
  }
  if (!n) {
    usage(stderr);
    goto done;
  }

  /* The whole export is made, in memory, before the port is even taken: a
   * bad trace serves nothing, and the UI gets a Content-Length. */
  rc = 1;
  int prep = ctrace__tool_export_prepare("view", files, n, traces, durations, offsets, &win, &longest, false);
  if (prep != 0) {
    rc = prep;
    goto done;
  }
  FILE *mem = open_memstream(&buf, &len);
  if (!mem) {
    fprintf(stderr, "ctrace view: %s\n", strerror(errno));
    goto done;
  }
  char err[512];
  /* Made up to the budget and no further: past it nothing is served, and
   * what was made tells how much of the trace fits. */
  ctrace__tool_progress prog;
  ctrace__tool_progress_begin(&prog, "view", files);
  ctrace_export_options opt = {.from_ns = win.from, .to_ns = win.has_to ? win.to : 0, .max_bytes = win.budget,
                               .progress = ctrace__tool_progress_show, .progress_arg = &prog,
                               .durations = durations, .offsets_ns = offsets, .gen_from = win.gen_from, .gen_to = win.gen_to};
  ctrace_export_result res;
  int xrc = ctrace_export_ex(traces, n, CTRACE_EXPORT_PERFETTO, &opt, mem, &res, err, sizeof err);
  ctrace__tool_progress_end(&prog);
  if (fclose(mem) && xrc == 0) snprintf(err, sizeof err, "%s", strerror(errno)), xrc = -1;
  if (xrc != 0) {
    fprintf(stderr, "ctrace view: %s\n", err);
    goto done;
  }
  if (res.over) {
    char at[32];
    ctrace__tool_fmt_duration(at, sizeof at, res.reached_ns);
    int64_t to = win.has_to && win.to < longest ? win.to : longest;
    char budget[32];
    ctrace__tool_fmt_size(budget, sizeof budget, win.budget);
    fprintf(stderr,
            "ctrace view: the export passes %s (--budget) at %s into %s, more than a browser opens "
            "(Perfetto's UI holds a trace at 2 to 4 times its size): not served\n",
            budget, at, files[res.over_trace]);
    /* Only the traces before the one it stopped in were whole; the rate
     * of the one it stopped in stands for the rest. */
    char list[4096] = "";
    for (size_t i = 0; i < n && strlen(list) + strlen(files[i]) + 2 < sizeof list; i++)
      strcat(strcat(list, i ? " " : ""), files[i]);
    ctrace__tool_propose("view", &win, win.from, to, res.bytes, res.reached_ns - win.from, list, NULL);
    goto done;
  }
  ctrace__tool_export_close(traces, n);

  if (!(name = doc_name(files[0], n)) || !(path = malloc(strlen(name) + 2))) {
    fprintf(stderr, "ctrace view: out of memory\n");
    goto done;
  }
  sprintf(path, "/%s", name);
  uint16_t p = (uint16_t)port;
  int fd = ctrace__serve_listen(&p, err, sizeof err);
  if (fd < 0) {
    fprintf(stderr, "ctrace view: %s\n", err);
    goto done;
  }
  /* The link alone on stdout, for a script or xdg-open; the rest on
   * stderr. */
  printf(PERFETTO_ORIGIN "/#!/?url=http://127.0.0.1:%u%s\n", (unsigned)p, path);
  fflush(stdout);
  fprintf(stderr, "ctrace view: serving %s (%zu bytes) on http://127.0.0.1:%u%s; open the link above%s\n",
          name, len, (unsigned)p, path, once ? "" : ", Ctrl-C to stop");
  if (p != PERFETTO_PORT)
    fprintf(stderr, "ctrace view: ui.perfetto.dev fetches from port %d only: this port is for tests or "
                    "another UI\n", PERFETTO_PORT);
  ctrace__serve_doc doc = {.path = path, .body = buf, .len = len, .origin = PERFETTO_ORIGIN};
  if (ctrace__serve(fd, &doc, once, true, err, sizeof err) != 0) {
    fprintf(stderr, "ctrace view: %s\n", err);
    goto done;
  }
  rc = 0;
done:
  if (traces) ctrace__tool_export_close(traces, n);
  free(files);
  free(traces);
  free(durations);
  free(buf);
  free(name);
  free(path);
  return rc;
}
