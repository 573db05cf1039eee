/* The event table, expanded from CTRACE_EVENTS. */
#include "ctrace/format.h"

#define CTRACE__DESC(name, num, ver, fl, n, a, sa) [num] = {#name, ver, fl, n, a, sa},
const ctrace_event_desc ctrace_event_descs[CTRACE_EV_COUNT] = {CTRACE_EVENTS(CTRACE__DESC)};
#undef CTRACE__DESC
