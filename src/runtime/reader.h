/* The reader side: the queue of full buffers and ctrace_read. */
#ifndef CTRACE_READER_H
#define CTRACE_READER_H

#include "internal.h"

/* Returns an empty buffer to the pool. */
void ctrace__buf_put(ctrace__buf *b) CTRACE__HIDDEN;
/* A new trace begins: the header is due first. Generations are cut at
 * gen_bytes (0: the default); a sink that holds generations bounds them
 * (ctrace__sink.holds). */
void ctrace__reader_open(uint64_t gen, size_t gen_bytes, bool holds) CTRACE__HIDDEN;
/* The generation being written ends as soon as the previous one is out
 * whole and no stop-the-world is open, or with force once it is out (a
 * flight recorder's snapshot; a crash's forces: the world may never
 * start again). */
void ctrace__reader_advance_now(bool force) CTRACE__HIDDEN;
/* Generation gen began to be written at ns (mono) and ticks. */
void ctrace__reader_began(uint64_t gen, uint64_t ns, uint64_t ticks) CTRACE__HIDDEN;
/* A generation handed out whole, for the flight recorder. */
typedef struct ctrace__gen_info {
  uint64_t gen;
  uint64_t began_ns, began_ticks; /* when it began to be written */
  uint64_t ended_ns;              /* when its threads were last in it */
  uint64_t gc_unstated;           /* ctrace__gc_seal's, at its seal */
} ctrace__gen_info;
/* The flight recorder's read: 1 and *b, a full buffer, the caller's to
 * keep (ctrace__buf_put gives it back); 2 and *info, a generation handed
 * out whole; 0 at the trace's end. One reader at a time. */
int ctrace__read_flight(ctrace__buf **b, ctrace__gen_info *info) CTRACE__HIDDEN;
/* Whether a batch of gen's events has been queued. */
bool ctrace__reader_has_events(uint64_t gen) CTRACE__HIDDEN;
/* Generation format: every buffer of gen is queued; the reader may hand
 * out the next generation's once gen's are out. quiet_ns: when the
 * threads were last in gen (the sealer's statuses come after). */
void ctrace__reader_seal(uint64_t gen, uint64_t gc_unstated, uint64_t quiet_ns) CTRACE__HIDDEN;
/* Ends the current generation if no start or stop is under way (the
 * reader's, between reads), and no stop-the-world is open, unless force.
 * False if it could not: the reader tries again. */
bool ctrace__try_advance(bool force) CTRACE__HIDDEN;
/* Generation format, past the cap: the generation tracing went off in
 * is sealed and a gap begins; once the reader has handed it out, tracing
 * goes on in the next (tracer.c). Each false if ctl_mu was busy. */
bool ctrace__gap_begin(void) CTRACE__HIDDEN;
bool ctrace__gap_end(void) CTRACE__HIDDEN;
/* Everything is queued: after the queue, the reader gets the frequency
 * footer and then the end. Blocks until the reader has returned the end. */
void ctrace__reader_close_and_wait(uint64_t freq) CTRACE__HIDDEN;
/* With on, every read returns NULL at once (the one under way too), the
 * trace left as it is, until it is called with off: the reader's thread
 * ends for a pause (ctrace__pause), and the next one reads on. */
void ctrace__reader_pause(bool on) CTRACE__HIDDEN;
/* No reader will come: what is queued, and what is queued from now on,
 * goes back to the pool, and the close waits for no one. */
void ctrace__reader_abandon(void) CTRACE__HIDDEN;
/* No reader thread: the close reads the trace itself, to the end, handing
 * each piece to write(arg, ...) (a writer that is not a thread, writer.c).
 * Set before or during a trace, for its close; NULL: none. */
void ctrace__reader_inline(void (*write)(void *arg, const void *p, size_t n), void *arg) CTRACE__HIDDEN;

#endif
