/* ctrace/error.h - errors, one convention for every part of ctrace: the
 * tracer (ctrace.h), the reader (parse.h), the analyses and exports
 * (analyse.h, export.h).
 *
 * A function that can fail returns 0 on success (or the non-negative value
 * it documents, such as 1 for "an event") and a negative code on failure:
 *   - a system error as its negative errno, the cause kept: -ENOENT for a
 *     trace file that is not there, -EACCES, -ENOSPC for a full disk...;
 *   - one of ctrace's own conditions, CTRACE_E* below, all under
 *     CTRACE_ERRNO_BASE and so never an errno, whatever the platform.
 * CTRACE_EINVAL, CTRACE_ENOMEM and CTRACE_EIO are the system's own codes.
 * ctrace_strerror names every code, as libuv's uv_strerror does.
 */
#ifndef CTRACE_ERROR_H
#define CTRACE_ERROR_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTRACE_ERRNO_BASE (-4000)

/* ctrace's own conditions: name, value, message. */
#define CTRACE_ERRNO_MAP(X)                                                                  \
  X(EBUSY, -4001, "tracing is already on")                                                   \
  X(ENOTRACE, -4002, "tracing is not on")                                                    \
  X(EREADER, -4003, "another reader is active")                                              \
  X(EFDCHANGED, -4004, "the trace's descriptor was closed or replaced by the program")       \
  X(ECAPPED, -4005,                                                                          \
    "the reader fell max_pending bytes behind: the trace ended early (go1.11) or has gaps "  \
    "(go1.22)")                                                                              \
  X(EEMPTY, -4006, "nothing was recorded in the flight recorder's window")                   \
  X(EFORMAT, -4007, "not a trace, or a malformed one (the parse error says where)")

enum {
#define CTRACE__ERR_ENUM(name, val, msg) CTRACE_##name = val,
  CTRACE_ERRNO_MAP(CTRACE__ERR_ENUM)
#undef CTRACE__ERR_ENUM
  CTRACE_EINVAL = -EINVAL,
  CTRACE_ENOMEM = -ENOMEM,
  CTRACE_EIO = -EIO
};

/* The message of a code: ctrace's own, or the system's for -errno
 * ("success" for 0, "unknown error" for what is neither); never NULL, and
 * safe from any thread. */
const char *ctrace_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
