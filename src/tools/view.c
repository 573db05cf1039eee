/* ctrace view: the export of traces (src/export/), served to
 * ui.perfetto.dev from 127.0.0.1 (serve.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
          "       [--task A-B | --goroutine A-B] [--exact] TRACE...\n"
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
          "  --task A-B   the window of tasks A to B (or --task A): from the first\n"
          "               creation to the last end (the trace's start or end where\n"
          "               they are not in it)\n"
          "  --goroutine A-B  the window of goroutines A to B (or --goroutine A), the\n"
          "               same way\n"
          CTRACE__TOOL_EXACT_HELP
          "  --budget SIZE  what a browser opens (default 1G of packets, inflated:\n"
          "               Perfetto's UI holds a trace at 2 to 4 times that)\n"
          "\n"
          "An export larger than the budget would not open in a browser tab: it is\n"
          "served in windows that fit instead. The link printed is then a page,\n"
          "http://127.0.0.1:9001/, that lists them, each a link that opens it in\n"
          "ui.perfetto.dev; a window is exported when the UI fetches it.\n"
          "\n"
          "Exit status 0 (interrupted, or a trace sent with --once), 1 if a trace is\n"
          "bad (the error names its byte offset; nothing is served) or the port is\n"
          "in use, 2 on bad usage (a bad window: its end not after its start, its\n"
          "start after the trace's end, generations a trace does not have, a task\n"
          "or goroutine no trace has, or two have).\n");
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

/* What view serves: the whole export (whole), or past the budget an index
 * page of windows, each exported when the UI fetches it. */
typedef struct site {
  const char *name; /* "NAME.pftrace", the whole's */
  int stem;         /* the length of NAME: window K is "NAME-K.pftrace" */
  char *buf;        /* the whole, or the last window made */
  size_t len;
  bool whole;
  int64_t made;     /* the window in buf, from 1; 0 none */
  char *index;      /* the index page of the windows */
  size_t index_len;
  int64_t from, to, wlen, count; /* the windows: count of wlen from from, the last to to */
  const char **files;
  const ctrace_export_trace *traces;
  size_t n;
  const int64_t *durations, *offsets;
  uint64_t budget;
  int seek; /* ctrace_export_options.seek: not --exact */
} site;

/* Window k's times, from 1. */
static void window_at(const site *s, int64_t k, int64_t *from, int64_t *to) {
  *from = s->from + (k - 1) * s->wlen;
  *to = k < s->count ? *from + s->wlen : s->to;
}

/* The export opt asks of s's traces into s->buf, with progress on a
 * terminal: 0, or -1 with err set. */
static int export_mem(site *s, ctrace_export_options *opt, ctrace_export_result *res, char *err, size_t errlen) {
  FILE *mem = open_memstream(&s->buf, &s->len);
  if (!mem) {
    snprintf(err, errlen, "%s", strerror(errno));
    return -1;
  }
  ctrace__tool_progress prog;
  ctrace__tool_progress_begin(&prog, "view", s->files);
  opt->progress = ctrace__tool_progress_show;
  opt->progress_arg = &prog;
  opt->durations = s->durations;
  opt->offsets_ns = s->offsets;
  int xrc = ctrace_export_ex(s->traces, s->n, CTRACE_EXPORT_PERFETTO, opt, mem, res, err, errlen);
  ctrace__tool_progress_end(&prog);
  if (fclose(mem) && xrc == 0) snprintf(err, errlen, "%s", strerror(errno)), xrc = -1;
  return xrc;
}

/* Exports window k into s->buf: 0, or -1 (said). Made when the UI asks,
 * from the traces' start: a window is a walk up to its end, and holding
 * every window made would be the whole export again. */
static int make_window(site *s, int64_t k) {
  if (s->made == k) return 0;
  free(s->buf);
  s->buf = NULL;
  s->made = 0;
  int64_t from, to;
  window_at(s, k, &from, &to);
  char err[512];
  ctrace_export_options opt = {.from_ns = from, .to_ns = to, .seek = s->seek};
  ctrace_export_result res;
  if (export_mem(s, &opt, &res, err, sizeof err) != 0) {
    fprintf(stderr, "ctrace view: window %lld: %s\n", (long long)k, err);
    return -1;
  }
  s->made = k;
  char a[32], b[32], size[32], budget[32];
  ctrace__tool_fmt_duration(a, sizeof a, from);
  ctrace__tool_fmt_duration(b, sizeof b, to);
  ctrace__tool_fmt_size(size, sizeof size, res.bytes);
  ctrace__tool_fmt_size(budget, sizeof budget, s->budget);
  /* A busier stretch than the rate the windows were cut by: served all
   * the same, a cut one would show less than it says. The budget is of
   * the packets the UI inflates, not of the bundles served. */
  if (res.bytes > s->budget)
    fprintf(stderr, "ctrace view: window %lld (%s to %s) is %s, more than the budget (%s)\n", (long long)k, a, b,
            size, budget);
  return 0;
}

static int site_get(void *arg, const char *path, ctrace__serve_doc *doc) {
  site *s = arg;
  if (path[0] != '/') return 0;
  path++;
  if (s->whole) {
    if (strcmp(path, s->name) != 0) return 0;
    *doc = (ctrace__serve_doc){s->buf, s->len, "application/octet-stream", true};
    return 1;
  }
  if (!*path || strcmp(path, "index.html") == 0) {
    *doc = (ctrace__serve_doc){s->index, s->index_len, "text/html; charset=utf-8", false};
    return 1;
  }
  /* NAME-K.pftrace, K from 1 to count, in its one spelling. */
  char *end;
  if (strncmp(path, s->name, (size_t)s->stem) != 0 || path[s->stem] != '-' || path[s->stem + 1] < '1' ||
      path[s->stem + 1] > '9')
    return 0;
  long long k = strtoll(path + s->stem + 1, &end, 10);
  if (strcmp(end, ".pftrace") != 0 || k < 1 || k > s->count) return 0;
  if (make_window(s, k) != 0) return -1;
  *doc = (ctrace__serve_doc){s->buf, s->len, "application/octet-stream", true};
  return 1;
}

/* Writes t into f with what HTML gives a meaning to escaped. */
static void html(FILE *f, const char *t) {
  for (; *t; t++) {
    switch (*t) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*t, f);
    }
  }
}

/* The index page: a link that opens each window in the UI, as go tool
 * trace's page lists the ranges it split a big trace into. 0, or -1. */
static int make_index(site *s, unsigned port, const char *at, const char *over) {
  FILE *f = open_memstream(&s->index, &s->index_len);
  if (!f) return -1;
  char l[32], a[32], b[32], budget[32];
  ctrace__tool_fmt_duration(l, sizeof l, s->wlen);
  ctrace__tool_fmt_size(budget, sizeof budget, s->budget);
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ctrace view: ", f);
  for (size_t i = 0; i < s->n; i++) html(f, s->files[i]), fputs(i + 1 < s->n ? " " : "", f);
  fputs("</title></head>\n<body>\n<h1>", f);
  for (size_t i = 0; i < s->n; i++) html(f, s->files[i]), fputs(i + 1 < s->n ? " " : "", f);
  fprintf(f, "</h1>\n<p>The whole export passes %s (the budget) at %s into ", budget, at);
  html(f, over);
  fprintf(f, ": more than a browser opens (Perfetto's UI holds a trace at 2 to 4 times its packets' size). "
             "Here it is in %lld windows of %s; each opens in ui.perfetto.dev, exported when it asks "
             "for it.</p>\n<ol>\n", (long long)s->count, l);
  for (int64_t k = 1; k <= s->count; k++) {
    int64_t from, to;
    window_at(s, k, &from, &to);
    ctrace__tool_fmt_duration(a, sizeof a, from);
    ctrace__tool_fmt_duration(b, sizeof b, to);
    fprintf(f, "<li><a href=\"" PERFETTO_ORIGIN "/#!/?url=http://127.0.0.1:%u/%.*s-%lld.pftrace\">%s to %s</a></li>\n",
            port, s->stem, s->name, (long long)k, a, b);
  }
  fputs("</ol>\n</body></html>\n", f);
  return fclose(f) ? -1 : 0;
}

int ctrace__cmd_view(int argc, char **argv) {
  const char **files = calloc((size_t)argc, sizeof *files);
  ctrace_export_trace *traces = calloc((size_t)argc, sizeof *traces);
  size_t n = 0;
  long port = PERFETTO_PORT;
  bool once = false;
  site st = {0};
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
  st = (site){.files = files, .traces = traces, .n = n, .durations = durations, .offsets = offsets,
              .budget = win.budget, .seek = !win.exact};
  char err[512];
  /* Made up to the budget and no further: past it, what was made tells
   * how much of the trace fits, and windows are served instead. */
  ctrace_export_options opt = {.from_ns = win.from, .to_ns = win.has_to ? win.to : 0, .max_bytes = win.budget,
                               .gen_from = win.gen_from, .gen_to = win.gen_to, .seek = st.seek};
  ctrace_export_result res;
  if (export_mem(&st, &opt, &res, err, sizeof err) != 0) {
    fprintf(stderr, "ctrace view: %s\n", err);
    goto done;
  }
  st.whole = !res.over;
  if (!(st.name = doc_name(files[0], n))) {
    fprintf(stderr, "ctrace view: out of memory\n");
    goto done;
  }
  st.stem = (int)(strlen(st.name) - strlen(".pftrace"));
  char at[32] = "", budget[32] = "";
  /* The whole needs the readers no more: their memory goes back. */
  if (st.whole) ctrace__tool_export_close(traces, n);
  if (res.over) {
    free(st.buf);
    st.buf = NULL;
    st.len = 0;
    ctrace__tool_fmt_duration(at, sizeof at, res.reached_ns);
    ctrace__tool_fmt_size(budget, sizeof budget, win.budget);
    st.from = win.from;
    st.to = win.has_to && win.to < longest ? win.to : longest;
    /* Only the traces before the one it stopped in were whole; the rate
     * of the one it stopped in stands for the rest. */
    st.count = ctrace__tool_windows(&win, st.from, st.to, res.bytes, res.reached_ns - win.from, &st.wlen);
  }
  uint16_t p = (uint16_t)port;
  int fd = ctrace__serve_listen(&p, err, sizeof err);
  if (fd < 0) {
    fprintf(stderr, "ctrace view: %s\n", err);
    goto done;
  }
  if (res.over && make_index(&st, p, at, files[res.over_trace]) != 0) {
    fprintf(stderr, "ctrace view: out of memory\n");
    close(fd);
    goto done;
  }
  /* The link alone on stdout, for a script or xdg-open; the rest on
   * stderr. */
  if (st.whole) {
    printf(PERFETTO_ORIGIN "/#!/?url=http://127.0.0.1:%u/%s\n", (unsigned)p, st.name);
    fflush(stdout);
    fprintf(stderr, "ctrace view: serving %s (%zu bytes) on http://127.0.0.1:%u/%s; open the link above%s\n",
            st.name, st.len, (unsigned)p, st.name, once ? "" : ", Ctrl-C to stop");
  } else {
    char l[32];
    ctrace__tool_fmt_duration(l, sizeof l, st.wlen);
    printf("http://127.0.0.1:%u/\n", (unsigned)p);
    fflush(stdout);
    fprintf(stderr,
            "ctrace view: the export passes %s (--budget) at %s into %s, more than a browser opens "
            "(Perfetto's UI holds a trace at 2 to 4 times its packets' size)\n"
            "ctrace view: serving it in %lld windows of %s instead: the page at the link above opens each "
            "in ui.perfetto.dev%s\n",
            budget, at, files[res.over_trace], (long long)st.count, l, once ? "" : "; Ctrl-C to stop");
  }
  if (p != PERFETTO_PORT)
    fprintf(stderr, "ctrace view: ui.perfetto.dev fetches from port %d only: this port is for tests or "
                    "another UI\n", PERFETTO_PORT);
  ctrace__serve_site site = {.get = site_get, .arg = &st, .origin = PERFETTO_ORIGIN};
  if (ctrace__serve(fd, &site, once, true, err, sizeof err) != 0) {
    fprintf(stderr, "ctrace view: %s\n", err);
    goto done;
  }
  rc = 0;
done:
  if (traces) ctrace__tool_export_close(traces, n);
  free(files);
  free(traces);
  free(durations);
  free(st.buf);
  free(st.index);
  free((char *)st.name);
  return rc;
}
