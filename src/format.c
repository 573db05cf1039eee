/* The event table, expanded from CTRACE_EVENTS. */
#include "ctrace/format.h"

#define CTRACE__DESC(name, num, ver, fl, n, a, sa) [num] = {#name, ver, fl, n, a, sa},
const ctrace_event_desc ctrace_event_descs[CTRACE_EV_COUNT] = {CTRACE_EVENTS(CTRACE__DESC)};
#undef CTRACE__DESC

/* Go 1.22+ events, from CTRACE_GO122_EVENTS. */
#include "ctrace/format_go122.h"

#define CTRACE__DESC122(name, num, kind, fl, n, a, s1, s2, t1, t2) \
  [num] = {#name, CTRACE_KIND_##kind, fl, n, s1, s2, t1, t2, a},
const ctrace_event122_desc ctrace_event122_descs[256] = {CTRACE_GO122_EVENTS(CTRACE__DESC122)};
#undef CTRACE__DESC122
