/* Fork: the child starts with tracing off and the tracer's state its own.
 *
 * After fork(2) only the calling thread exists in the child, yet every
 * structure of the tracer is a copy of the parent's: the thread registry
 * lists threads that are not there, the buffer lists hold the parent's
 * trace, and a mutex may be held by a thread that no longer exists. The
 * child handler below has each module keep only what belongs to the
 * calling thread and re-initialize its locks. Tracing is off in the child:
 * the trace, its writer thread and its file stay the parent's. The child
 * may start a trace of its own.
 *
 * The prepare handler takes the two locks whose lists the child keeps part
 * of (live Gs, P numbers), so the child never sees them half-updated.
 * Everything else the child drops unread, so prepare does not wait for it,
 * but for a generation's end under way (ctrace__tracer_fork_prepare): it
 * allocates, and an allocator whose locks a fork does not take would hand
 * the child one held for good. The tracer's lock comes first, as it does
 * where a generation's end takes the others; those two are not held while
 * another lock is taken.
 *
 * ctrace__fork_child is also called by the preload shim after _Fork, which
 * runs no atfork handlers.
 */
#include "internal.h"

static void prepare(void) {
  ctrace__tracer_fork_prepare();
  ctrace__sched_fork_prepare();
  ctrace__events_fork_prepare();
}

static void parent(void) {
  ctrace__events_fork_parent();
  ctrace__sched_fork_parent();
  ctrace__tracer_fork_parent();
}

void ctrace__fork_child(void) {
  ctrace__tracer_fork_child();
  ctrace__buf_fork_child();
  ctrace__reader_fork_child();
  ctrace__sched_fork_child();
  ctrace__events_fork_child();
  ctrace__tables_fork_child();
  ctrace__identity_fork_child();
}

void ctrace__fork_init(void) { pthread_atfork(prepare, parent, ctrace__fork_child); }
