/* A thread's start function as people know it: what a language runtime's
 * thread start routine (Rust's std, libstdc++'s std::thread, a
 * sanitizer's) calls, read from the thread's own stacks.
 *
 * Shared by the tracer, which names a thread's creation by it when it
 * writes the stack table (stack.c), and the analyses
 * (src/analyse/filter.c), which name the threads a trace left at their
 * routine. No allocation, no state: names in, an index out. */
#ifndef CTRACE_RUNTIME_STARTNAME_H
#define CTRACE_RUNTIME_STARTNAME_H

#include <stdbool.h>
#include <stddef.h>

/* The name of frame i of a stack (0 innermost), never NULL. */
typedef const char *ctrace__frame_name(const void *frames, size_t i);

/* Whether f is a start routine, which a later stack may name better. */
bool ctrace__start_routine(const char *f);

/* The frame that names a thread whose creation a trace does not hold (n
 * frames, 0 innermost): its outermost one inside libc's start of a
 * thread or of the process (clone, start_thread, _start,
 * __libc_start_main), as Go names such a goroutine by its outermost
 * frame; -1 for no frame. */
ptrdiff_t ctrace__root_frame(const void *frames, size_t n, ctrace__frame_name *name);

/* For a thread that starts at routine (its creation's start function),
 * and one of its stacks (n frames, named by name): the index of the frame
 * that names the thread, or -1 to keep routine. *settled: no later stack
 * can say more (routine is no start routine, or this stack went past
 * the routines); left false where this stack had no say (it stopped
 * short of the routines, or never reached the user's function). */
ptrdiff_t ctrace__start_frame(const char *routine, const void *frames, size_t n, ctrace__frame_name *name,
                              bool *settled);

#endif
