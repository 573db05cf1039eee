/* -t wall: every goroutine's time, by state (docs/analyse.md). */
#include <stdio.h>

#include "analyse.h"
#include "profile.h"

int ctrace__an_wall(ctrace_reader *r, const an_filter *f, ctrace_profile *p, char *err,
                    size_t errlen) {
  snprintf(err, errlen, "-t wall is not implemented yet");
  return -1;
}
