/* ctrace_strerror (include/ctrace/error.h): built into every library, so
 * that a program using only the reader has it too. */
#include <string.h>

#include "ctrace/error.h"

const char *ctrace_strerror(int err) {
  switch (err) {
#define CTRACE__ERR_CASE(name, val, msg) \
  case CTRACE_##name:                    \
    return msg;
    CTRACE_ERRNO_MAP(CTRACE__ERR_CASE)
#undef CTRACE__ERR_CASE
  case 0:
    return "success";
  }
  /* strerrordesc_np: the system's message, a constant string (strerror's
   * may be a buffer another thread's call overwrites). */
  const char *m = err < 0 && err > CTRACE_ERRNO_BASE ? strerrordesc_np(-err) : NULL;
  return m ? m : "unknown error";
}
