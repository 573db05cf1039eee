/* The reader's one event model (model.c): every trace, whatever its
 * format, as the classic events the analyses (src/analyse/) and the
 * exporters (src/export/) read, so that they know no format. Internal:
 * built into libctrace-analyse, which alone reads it, over
 * libctrace-parse's public stream. */
#ifndef CTRACE_PARSE_MODEL_H
#define CTRACE_PARSE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctrace/parse.h"

/* The classic event model for every trace: what the analyses and the
 * exporters read instead of ctrace_reader_next. For a trace before Go 1.22 it is the
 * reader's stream; for a Go 1.22+ trace, each event turned into the classic
 * events Go 1.23's oldtrace.go would turn back into it. Besides the classic
 * meaning of fields, on a 1.22+ trace:
 *   - GoCreate args[2] is 1 for a goroutine first met in a status event
 *     (there before, with no creation in the trace), args[3] then the
 *     status (CTRACE_GS_*);
 *   - GoBlock carries Go's reason in sargs[0] when no classic kind names it;
 *   - GoCreate args[2] is 2 for Go's GoCreateBlocked (the GoBlock that
 *     follows is the same transition, not a block of its own);
 *   - GoEnd args[0] is 1 for Go's GoDestroySyscall: the goroutine of a C
 *     thread, whose id comes back at the thread's next call into Go
 *     (GoCreateSyscall); after any other GoEnd (of every format) the
 *     goroutine's id is not met again, and analyses forget it;
 *   - tstack is the stack Go 1.23's summary names a goroutine from;
 *   - CTRACE__MODEL_GoStatusStack (format 1) follows the classic events of
 *     each GoStatusStack, known goroutines' too: args[0] the goroutine,
 *     args[2] its CTRACE_GS_* status, stack the event's (Go 1.23's pprof
 *     reads it as a transition with a stack);
 *   - CTRACE__MODEL_Transition (format 1, go 1.25+ traces), for each
 *     goroutine state transition, instead of the classic events once
 *     asked for by ctrace__model_transitions (but the Syncs and the
 *     regions, which a profile filtered by region reads);
 *   - CTRACE_EV122_Sync (format 1) passes at each generation's end (go
 *     1.22, 1.23; at each one's start and the trace's end for go 1.25+), and
 *     CTRACE__MODEL_GoLabel and CTRACE__MODEL_RangeActive (format 1) for what
 *     Go's MMU reads of labels and ranges under way;
 *   - the first event is a Gomaxprocs of procs 0, the adapter's own (the
 *     analyses date goroutines there before the trace from it); those of
 *     the trace's ProcsChange follow, with their counts.
 * Stack and string ids are the adapter's, the same for the whole trace:
 * resolve them with ctrace__model_stack and ctrace__model_string. 1 with *ev
 * set, 0 at the end (or out of memory: ctrace__model_oom). */
int ctrace__model_next(ctrace_reader *r, ctrace_event *ev);
/* The same without the copy of the event (200 bytes, a tenth of a pass
 * over a Go 1.22+ trace): the next event, valid until the next call, in
 * the model's queue or (older formats) in *buf; NULL at the end. */
const ctrace_event *ctrace__model_next_ref(ctrace_reader *r, ctrace_event *buf);
/* Types neither format uses (classic types end below 64, 1.22's at 136,
 * its Sync is 255), so that analyses which switch on classic types pass
 * them by. */
#define CTRACE__MODEL_GoStatusStack 254
/* A 1.22+ trace's GoLabel (format 1): g and p the event's, sargs[0] the
 * label ("GC (dedicated)", ...: a classic trace has it in GoStartLabel).
 * Go's MMU counts the goroutine as a background mark worker. */
#define CTRACE__MODEL_GoLabel 253
/* A 1.22+ trace's GCMarkAssistActive or GCSweepActive (format 1): a range
 * under way when its generation began. args[1] the CTRACE_EV122_* type,
 * args[0] the goroutine in the assist or the P sweeping; g and p the
 * event's. Go's MMU counts those of the first generation. */
#define CTRACE__MODEL_RangeActive 252
/* A go 1.25+ trace's goroutine state transition, as Go 1.27's
 * Event.StateTransition gives it (format 1): args[0] the goroutine, args[1] and args[2] its
 * old and new state (Go's GoState: 0 undetermined, 1 not existing, 2
 * runnable, 3 running, 4 waiting, 5 in a syscall), sargs[0] the reason,
 * stack the event's (Go's Event.Stack, the adapter's id; 0 for none). Go
 * 1.27's profiles count every transition, stack or not, which the
 * classic events do not all show (a status that changes nothing, a
 * syscall's end, a start). */
#define CTRACE__MODEL_Transition 251
/* Back to the first event (ctrace_reader_rewind, and the adapter's pass). */
void ctrace__model_rewind(ctrace_reader *r);
/* Back to the first event of a pass that shows the trace from from_ns
 * (since its first event) on: for a Go 1.22+ trace, from the generation
 * before the one where from_ns falls (ctrace_reader_seek_generation),
 * those before it not read but for where they begin
 * (ctrace_reader_generations), so that a window late in a long trace reads
 * about two generations before it, not the whole trace. What the
 * pass gives in that generation is then what a trace begun there
 * gives: its statuses set every goroutine's and P's state, and
 * what began before it (a region, a task, a thread's name) is not known.
 * Times still count from the trace's first event. The generations passed
 * over, 0 for another format or from_ns <= 0 (a rewind). */
int64_t ctrace__model_seek(ctrace_reader *r, int64_t from_ns);
/* The same from generation k (from 1) of a Go 1.22+ trace: the
 * generations passed over (k - 1), or 0 (a rewind) for k <= 1, a k the
 * trace does not have, or another format. */
int64_t ctrace__model_seek_gen(ctrace_reader *r, uint64_t k);
/* A Go 1.22+ trace's duration (first event to last, ns) from its first
 * event and its last generation alone, those between passed over: what
 * a check says, without reading the whole; -1 if the trace does not read
 * there (or has no generation, or is of another format). Rewound after. */
int64_t ctrace__model_duration(ctrace_reader *r);

/* The generation (from 1) a Go 1.22+ trace's events are in before its
 * first Sync, each Sync after it raising it by one: Go 1.22 and 1.23
 * traces pass a Sync at each generation's end (1), Go 1.25+ ones at each
 * one's start and at the trace's end (0). */
static inline uint64_t ctrace__model_gen_at_start(const ctrace_reader *r) {
  return ctrace_reader_version(r) >= 1025 ? 0 : 1;
}
/* Whether the passes that follow carry CTRACE__MODEL_Transition, and then
 * nothing else but the Syncs (the last of which is the trace's end): off
 * until asked. Only Go 1.27's profiles read them, which need none of the
 * classic events: those were two thirds of the model's work in a profile's
 * pass, and the transitions, with the reason each interns, a fifth of a
 * stats pass. */
void ctrace__model_transitions(ctrace_reader *r, bool on);
size_t ctrace__model_stack(const ctrace_reader *r, uint64_t id, const ctrace_frame **frames);
const char *ctrace__model_string(const ctrace_reader *r, uint64_t id);
bool ctrace__model_oom(const ctrace_reader *r);

#endif
