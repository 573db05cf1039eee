/* Helpers shared by the subcommands that read traces. */
#ifndef CTRACE_TOOLS_TOOLS_H
#define CTRACE_TOOLS_TOOLS_H

#include "ctrace/parse.h"

/* Opens and checks a trace; on failure prints "ctrace: FILE: offset N:
 * message" to stderr and returns NULL. On a terminal, shows progress on
 * stderr for traces over 50 MB. info may be NULL. */
ctrace_reader *ctrace__tool_open_info(const char *path, ctrace_trace_info *info);
#define ctrace__tool_open(path) ctrace__tool_open_info(path, NULL)

#endif
