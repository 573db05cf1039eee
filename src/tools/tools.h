/* Helpers shared by the subcommands that read traces. */
#ifndef CTRACE_TOOLS_TOOLS_H
#define CTRACE_TOOLS_TOOLS_H

#include <stdbool.h>
#include <stdio.h>

#include "ctrace/export.h"
#include "ctrace/parse.h"

/* Opens and checks a trace; on failure prints "ctrace: FILE: offset N:
 * message" to stderr and returns NULL. On a terminal, shows progress on
 * stderr for traces over 50 MB. info may be NULL. A Go 1.22+ trace cut
 * short is read up to its last whole generation (ctrace_reader_allow_cut),
 * with the warning of ctrace__tool_cut_warning. */
ctrace_reader *ctrace__tool_open_info(const char *path, ctrace_trace_info *info);
#define ctrace__tool_open(path) ctrace__tool_open_info(path, NULL)
/* The same for the analyses (cmd's), which read the events of the formats
 * before Go 1.22 only: a Go 1.22+ trace is refused with a message. */
ctrace_reader *ctrace__tool_open_analysed(const char *cmd, const char *path, ctrace_trace_info *info);

/* For a command whose analysis reads the whole trace before it writes
 * anything: a Go 1.22+ trace is opened unchecked (info has its version
 * and size only, and progress shows while the analysis reads), since the
 * reader checks what it reads and the analysis's pass is then the check
 * (one pass, not two); ctrace__tool_checked, after the analysis, reports
 * what ctrace__tool_open_info would have (the same error, the same cut
 * warning) and fills info: false when the trace does not read (printed;
 * r stays open). Older formats are checked at open, as there. */
ctrace_reader *ctrace__tool_open_unchecked(const char *path, ctrace_trace_info *info, bool *progress);
bool ctrace__tool_checked(const char *path, ctrace_reader *r, ctrace_trace_info *info, bool progress);

/* Checks an open reader as ctrace__tool_open_info does, printing nothing
 * but the progress: 0, or -1 with *err (the reader stays open). */
int ctrace__tool_check(const char *path, ctrace_reader *r, ctrace_trace_info *info, ctrace_parse_error *err);
/* Progress on stderr while r reads, for a trace over 50 MB on a terminal:
 * on returns whether it shows, off (given that) clears the line. */
bool ctrace__tool_progress_on(const char *path, ctrace_reader *r);
void ctrace__tool_progress_off(ctrace_reader *r, bool on);

/* Opens a trace without checking it, for a command that streams a Go
 * 1.22+ trace (ctrace_reader_read); older formats are checked as by
 * ctrace__tool_open. With allow_cut, a cut is allowed as there: the
 * caller says so with ctrace__tool_cut_warning once the stream has
 * ended. */
ctrace_reader *ctrace__tool_open_stream(const char *path, bool allow_cut);

/* If r read a trace cut short, one line on stderr: "ctrace: warning:
 * FILE: cut short at byte N of M (its writer was killed?): read the K
 * whole generations before it, left out the last, incomplete one (why)",
 * and more, if not NULL, before its end. N is where the generation left
 * out begins, M the file's size. */
void ctrace__tool_cut_warning(const char *path, const ctrace_reader *r, const char *more);

/* Prints "ctrace: FILE: offset N: message" (or without an offset for a
 * file that cannot be opened). */
void ctrace__tool_error(const char *path, const ctrace_parse_error *err);

/* For commands that take one FILE: prints usage for --help (returns 0) or
 * bad usage (returns 2); returns -1 when argv[1] is the file to read. */
int ctrace__tool_file_arg(int argc, char **argv, void (*usage)(FILE *));

/* An argument of `ctrace CMD` that no option of CMD took: the TRACE
 * operand into *trace, or false, with the error said, for an unknown
 * option or a second TRACE. */
bool ctrace__tool_operand(const char *cmd, const char *a, const char **trace);

/* The n traces of an export (ctrace export, ctrace view), files[i] into
 * t[i] (zeroed): each opened and checked, and named by its program and
 * pid ("redis-server (pid 7)") where its process's log says them
 * (ctrace_process_read), else after its file, with pid N
 * when the name ends in ".pid<N>" (ctrace run -f's), else the first
 * number no other trace has. Every trace is read through here, before
 * anything is written: false, with the reader's message said (its byte
 * offset), for a bad one; the caller closes what was opened with
 * ctrace__tool_export_close either way. durations and gens (NULL: not
 * wanted) get each trace's duration (first to last event, in ns) and
 * generations (0 for a classic trace); offsets (NULL: not wanted, else
 * zeroed) where each trace's time 0 falls on one timeline, when there are
 * several and each holds an anchor (ctrace_process_place), else all 0,
 * with a warning for each trace without. With unchecked, a Go 1.22+ trace
 * is opened as by ctrace__tool_open_unchecked, without the pass that
 * reads it through (its duration and generations then 0), for a caller
 * that reports what that pass would have with ctrace__tool_checked after
 * its own pass, before it lets anything out; older formats are checked as
 * without. */
bool ctrace__tool_export_open(const char *cmd, const char **files, size_t n, ctrace_export_trace *t,
                              int64_t *durations, uint64_t *gens, int64_t *offsets, bool unchecked);
void ctrace__tool_export_close(ctrace_export_trace *t, size_t n);

/* An export's window and budget (window.c), as --from, --to and --budget
 * give them. */
typedef struct ctrace__tool_window {
  int64_t from, to; /* ns since the trace's start */
  bool has_from, has_to;
  uint64_t gen_from, gen_to; /* --gen A-B; 0: none */
  /* --task A-B, --goroutine A-B (0: none): the window of their lives,
   * found in the one trace that names them (ctrace__tool_export_prepare),
   * into from and to. */
  uint64_t task, task_to, goroutine, goroutine_to;
  uint64_t budget; /* bytes of Perfetto's format a browser opens */
  /* --exact: a window read from the trace's start, not from the
   * generation before it (ctrace_export_options.seek). */
  bool exact;
} ctrace__tool_window;

/* What a browser tab opens: Perfetto's UI holds a trace in memory at two to
 * four times its size, and a tab gets a few GiB at most. */
#define CTRACE__TOOL_BUDGET (1ull << 30)

/* --exact in export's and view's help. */
#define CTRACE__TOOL_EXACT_HELP                                                    \
  "  --exact      read a window from the trace's start. By default a window\n"   \
  "               of a Go 1.22+ trace is read from the generation before the\n"  \
  "               one it begins in (Go writes one about every second), as\n"     \
  "               if tracing had begun there: seconds for a window at the\n"     \
  "               end of a trace of gigabytes, not a walk through all of it;\n"  \
  "               but a region or task begun before that generation, or a\n"     \
  "               thread's name given before it, is not shown\n"

/* argv[*i] if it is --from, --to, --gen, --task, --goroutine, --budget or --exact
 * (with its value, = or the next argument, *i moved past it) into w: 1; 0
 * if it is none; -1 (said) if its value is bad. */
int ctrace__tool_window_arg(const char *cmd, int argc, char **argv, int *i, ctrace__tool_window *w);
/* The window against the longest trace's duration, and a generation range
 * against each trace's generations: 0, or -1 (said). */
int ctrace__tool_window_check(const char *cmd, const ctrace__tool_window *w, int64_t duration);
int ctrace__tool_gen_check(const char *cmd, const ctrace__tool_window *w, const char **files,
                           const uint64_t *gens, size_t n);
/* export's and view's start: the traces opened (ctrace__tool_export_open)
 * and the window held to them (a task's or goroutine's found, into
 * w->from and w->to). 0 with *longest the end of the latest trace on
 * their timeline (offsets, zeroed: ctrace__tool_export_open), or the
 * command's exit status (1: a trace does not read or memory ran out, 2:
 * the window does not fit them, or no trace or two name its task or
 * goroutine), said. unchecked: as for ctrace__tool_export_open, for a
 * caller that asks for no window (which needs the traces' durations and
 * generations). */
int ctrace__tool_export_prepare(const char *cmd, const char **files, size_t n, ctrace_export_trace *t,
                                int64_t *durations, int64_t *offsets, ctrace__tool_window *w,
                                int64_t *longest, bool unchecked);
/* "1.5s", "250ms", "100us", "0": a time into ns; 0, or -1 if bad. */
int ctrace__tool_duration(const char *s, int64_t *ns);
/* "512M", "2G", "100K", "1000": a size into bytes; 0, or -1 if bad. */
int ctrace__tool_size(const char *s, uint64_t *bytes);
/* bytes as "1.5 GiB", "300 MiB", "12 KiB". */
void ctrace__tool_fmt_size(char *b, size_t n, uint64_t bytes);
/* ns as ctrace__tool_duration reads it back. */
void ctrace__tool_fmt_duration(char *b, size_t n, int64_t ns);
/* The windows of [from, to) whose exports fit w's budget, bytes having
 * been written for span ns of it: how many, each *len long but the last,
 * which ends at to. */
int64_t ctrace__tool_windows(const ctrace__tool_window *w, int64_t from, int64_t to, uint64_t bytes,
                             int64_t span, int64_t *len);
/* Says on stderr which windows of [from, to) to export instead (those of
 * ctrace__tool_windows); files: the traces, as typed; out: the -o FILE
 * given (NULL: none), which each window's command names with its number. */
void ctrace__tool_propose(const char *cmd, const ctrace__tool_window *w, int64_t from, int64_t to,
                          uint64_t bytes, int64_t span, const char *files, const char *out);

/* An export's progress on a terminal, once it has taken a second. */
typedef struct ctrace__tool_progress {
  const char *cmd;
  const char **files;
  double start, after; /* shown once after seconds have passed */
  bool tty, shown;
  const char *doing; /* what it shows the progress of; NULL: "exporting" */
  uint64_t done, total; /* bytes read, for a trace of no known duration */
} ctrace__tool_progress;
void ctrace__tool_progress_begin(ctrace__tool_progress *p, const char *cmd, const char **files);
/* A ctrace_export_options progress callback; arg: the ctrace__tool_progress. */
void ctrace__tool_progress_show(void *arg, size_t trace, int64_t ts, int64_t duration);
/* A reader's progress callback (ctrace_reader_set_progress) for the same:
 * what an export of a trace whose duration is not known yet (0) shows. */
void ctrace__tool_progress_bytes(void *arg, uint64_t done, uint64_t total);
void ctrace__tool_progress_end(ctrace__tool_progress *p);

/* An output file a command writes whole or not at all (-o FILE). A
 * regular file, or a new one, is written beside its name (DIR/.NAME.
 * ctrace-XXXXXX, with the mode a plain create would give) and renamed over
 * it once complete (ctrace__tool_out_close): no half file lies under its
 * name, and SIGINT, SIGTERM or SIGHUP before then removes it. Anything else, /dev/null, a FIFO, a terminal, is written where it
 * is: a rename would replace the device itself. */
typedef struct ctrace__tool_out {
  const char *path;
  char *tmp; /* the file beside path; NULL when written in place */
  int fd;
} ctrace__tool_out;
/* The descriptor to write to, or -1 with errno (and nothing to close). */
int ctrace__tool_out_open(ctrace__tool_out *o, const char *path);
/* Closes o (fd, unless the caller closed it already: -1): with ok, puts
 * the file in place (rename); without, removes what was written beside.
 * 0, or an errno value. */
int ctrace__tool_out_close(ctrace__tool_out *o, bool ok);

#endif
