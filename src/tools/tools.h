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
 * t[i] (zeroed): each opened and checked, named after its file, with pid N
 * when the name ends in ".pid<N>" (ctrace run -f's), else the first number
 * no other trace has. Every trace is read through here, before anything is
 * written: false, with the reader's message said (its byte offset), for a
 * bad one; the caller closes what was opened with ctrace__tool_export_close
 * either way. */
bool ctrace__tool_export_open(const char *cmd, const char **files, size_t n, ctrace_export_trace *t);
void ctrace__tool_export_close(ctrace_export_trace *t, size_t n);

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
