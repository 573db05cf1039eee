/* Go's current execution-trace format ("go 1.22 trace", "go 1.23 trace",
 * "go 1.25 trace", "go 1.26 trace"): one event table for the reader and the
 * dumper.
 *
 * A trace is the 16-byte header and a sequence of batches. A batch is
 * EvEventBatch [generation, M, absolute time, length] (or
 * EvExperimentalBatch, with an experiment byte before the generation)
 * followed by length bytes: either one structural section (EvStrings,
 * EvStacks, EvCPUSamples, EvFrequency as its first byte) or timed events of
 * that thread (M), each a type byte, a varint time diff from the previous
 * event of the batch, and its arguments as varints (no argument count on
 * the wire: the table gives it). Batches are at most 64 KiB. Time is cut
 * into generations, each self-contained: its own strings, stacks,
 * frequency and CPU samples, and sequence numbers that restart.
 *
 * Go 1.25 ("go 1.25 trace") puts the frequency in a sync batch (SyncBatch
 * first) beside a ClockSnapshot, which ties the trace's clock to the
 * monotonic and wall clocks; Go 1.26 ("go 1.26 trace", also Go 1.27's)
 * ends each generation with an EndOfGeneration byte where a batch would
 * begin. Which Go wrote which header: Go 1.22 "go 1.22", 1.23 and 1.24
 * "go 1.23", 1.25 "go 1.25", 1.26 and 1.27 "go 1.26" (Go 1.27's
 * internal/trace/version: Current = Go126).
 *
 * CTRACE_GO122_EVENTS(X) lists every kind as
 *   X(Name, number, kind, flags, nargs, "arg names", stack, stack2, str, str2)
 * with the arguments as Go names them (Go 1.27's internal/trace/tracev2),
 * without the time diff; stack and str name the argument (1-based, 0 for
 * none) that is the event's stack id or a string id; stack2 a second stack
 * (the new goroutine's). kind is Go's EventKind for timed events. Flags:
 * CTRACE_G_TIMED (a timed event, allowed in a batch of events),
 * CTRACE_G_EXP (an experimental event).
 */
#ifndef CTRACE_FORMAT_GO122_H
#define CTRACE_FORMAT_GO122_H

#include <stdint.h>

#define CTRACE_G_TIMED 1u
#define CTRACE_G_EXP 2u

/* Go's EventKind: what Go's reader makes of an event kind. */
#define CTRACE_KINDS(X) \
  X(Bad) X(Sync) X(Metric) X(Label) X(StackSample) X(RangeBegin) X(RangeActive) X(RangeEnd) \
  X(TaskBegin) X(TaskEnd) X(RegionBegin) X(RegionEnd) X(Log) X(StateTransition) X(Experimental)

enum ctrace_kind {
#define CTRACE__KIND_ENUM(n) CTRACE_KIND_##n,
  CTRACE_KINDS(CTRACE__KIND_ENUM)
#undef CTRACE__KIND_ENUM
  CTRACE_KIND_COUNT
};

#define CTRACE_G_TE (CTRACE_G_TIMED | CTRACE_G_EXP)
/* clang-format off */
#define CTRACE_GO122_EVENTS(X)                                                                      \
  /* structural: batch header [generation, M, time, length] */                                     \
  X(EventBatch,           1, Bad,             0, 4, "gen m time size", 0, 0, 0, 0)                 \
  /* start of a section of the stack table [...EvStack] */                                          \
  X(Stacks,               2, Bad,             0, 0, "", 0, 0, 0, 0)                                 \
  /* [id, frame count, {pc, func string, file string, line}...] */                                 \
  X(Stack,                3, Bad,             0, 2, "id nframes", 0, 0, 0, 0)                       \
  X(Strings,              4, Bad,             0, 0, "", 0, 0, 0, 0)                                 \
  /* [id, length, bytes] */                                                                         \
  X(String,               5, Bad,             0, 1, "id", 0, 0, 0, 0)                               \
  X(CPUSamples,           6, Bad,             0, 0, "", 0, 0, 0, 0)                                 \
  /* [time, M, P, G, stack] (absolute time, in its own section) */                                  \
  X(CPUSample,            7, StackSample,     0, 5, "time m p g stack", 0, 0, 0, 0)                 \
  /* timestamp units per second [freq] */                                                           \
  X(Frequency,            8, Bad,             0, 1, "freq", 0, 0, 0, 0)                             \
  /* GOMAXPROCS [value, stack] */                                                                   \
  X(ProcsChange,          9, Metric,          CTRACE_G_TIMED, 2, "procs_value stack", 2, 0, 0, 0)                \
  X(ProcStart,           10, StateTransition, CTRACE_G_TIMED, 2, "p p_seq", 0, 0, 0, 0)                          \
  X(ProcStop,            11, StateTransition, CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  /* a P taken from a thread in a syscall [P, P seq, M it was taken from] */                       \
  X(ProcSteal,           12, StateTransition, CTRACE_G_TIMED, 3, "p p_seq m", 0, 0, 0, 0)                        \
  /* a P's status at the start of a generation */                                                   \
  X(ProcStatus,          13, StateTransition, CTRACE_G_TIMED, 2, "p pstatus", 0, 0, 0, 0)                        \
  X(GoCreate,            14, StateTransition, CTRACE_G_TIMED, 3, "new_g new_stack stack", 3, 2, 0, 0)            \
  /* a goroutine appears in a syscall (cgo callback) */                                             \
  X(GoCreateSyscall,     15, StateTransition, CTRACE_G_TIMED, 1, "new_g", 0, 0, 0, 0)                            \
  X(GoStart,             16, StateTransition, CTRACE_G_TIMED, 2, "g g_seq", 0, 0, 0, 0)                          \
  X(GoDestroy,           17, StateTransition, CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  X(GoDestroySyscall,    18, StateTransition, CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  X(GoStop,              19, StateTransition, CTRACE_G_TIMED, 2, "reason_string stack", 2, 0, 1, 0)              \
  X(GoBlock,             20, StateTransition, CTRACE_G_TIMED, 2, "reason_string stack", 2, 0, 1, 0)              \
  X(GoUnblock,           21, StateTransition, CTRACE_G_TIMED, 3, "g g_seq stack", 3, 0, 0, 0)                    \
  X(GoSyscallBegin,      22, StateTransition, CTRACE_G_TIMED, 2, "p_seq stack", 2, 0, 0, 0)                      \
  X(GoSyscallEnd,        23, StateTransition, CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  X(GoSyscallEndBlocked, 24, StateTransition, CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  /* a goroutine's status at the start of a generation [G, M, status] */                            \
  X(GoStatus,            25, StateTransition, CTRACE_G_TIMED, 3, "g m gstatus", 0, 0, 0, 0)                      \
  X(STWBegin,            26, RangeBegin,      CTRACE_G_TIMED, 2, "kind_string stack", 2, 0, 1, 0)                \
  X(STWEnd,              27, RangeEnd,        CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  X(GCActive,            28, RangeActive,     CTRACE_G_TIMED, 1, "gc_seq", 0, 0, 0, 0)                           \
  X(GCBegin,             29, RangeBegin,      CTRACE_G_TIMED, 2, "gc_seq stack", 2, 0, 0, 0)                     \
  X(GCEnd,               30, RangeEnd,        CTRACE_G_TIMED, 1, "gc_seq", 0, 0, 0, 0)                           \
  X(GCSweepActive,       31, RangeActive,     CTRACE_G_TIMED, 1, "p", 0, 0, 0, 0)                                \
  X(GCSweepBegin,        32, RangeBegin,      CTRACE_G_TIMED, 1, "stack", 1, 0, 0, 0)                            \
  X(GCSweepEnd,          33, RangeEnd,        CTRACE_G_TIMED, 2, "swept_value reclaimed_value", 0, 0, 0, 0)      \
  X(GCMarkAssistActive,  34, RangeActive,     CTRACE_G_TIMED, 1, "g", 0, 0, 0, 0)                                \
  X(GCMarkAssistBegin,   35, RangeBegin,      CTRACE_G_TIMED, 1, "stack", 1, 0, 0, 0)                            \
  X(GCMarkAssistEnd,     36, RangeEnd,        CTRACE_G_TIMED, 0, "", 0, 0, 0, 0)                                 \
  X(HeapAlloc,           37, Metric,          CTRACE_G_TIMED, 1, "heapalloc_value", 0, 0, 0, 0)                  \
  X(HeapGoal,            38, Metric,          CTRACE_G_TIMED, 1, "heapgoal_value", 0, 0, 0, 0)                   \
  X(GoLabel,             39, Label,           CTRACE_G_TIMED, 1, "label_string", 0, 0, 1, 0)                     \
  X(UserTaskBegin,       40, TaskBegin,       CTRACE_G_TIMED, 4, "task parent_task name_string stack", 4, 0, 3, 0) \
  X(UserTaskEnd,         41, TaskEnd,         CTRACE_G_TIMED, 2, "task stack", 2, 0, 0, 0)                       \
  X(UserRegionBegin,     42, RegionBegin,     CTRACE_G_TIMED, 3, "task name_string stack", 3, 0, 2, 0)           \
  X(UserRegionEnd,       43, RegionEnd,       CTRACE_G_TIMED, 3, "task name_string stack", 3, 0, 2, 0)           \
  X(UserLog,             44, Log,             CTRACE_G_TIMED, 4, "task key_string value_string stack", 4, 0, 2, 3) \
  /* coroutines (Go 1.23) */                                                                        \
  X(GoSwitch,            45, StateTransition, CTRACE_G_TIMED, 2, "g g_seq", 0, 0, 0, 0)                          \
  X(GoSwitchDestroy,     46, StateTransition, CTRACE_G_TIMED, 2, "g g_seq", 0, 0, 0, 0)                          \
  X(GoCreateBlocked,     47, StateTransition, CTRACE_G_TIMED, 3, "new_g new_stack stack", 3, 2, 0, 0)            \
  /* GoStatus with a stack (Go 1.23) */                                                             \
  X(GoStatusStack,       48, StateTransition, CTRACE_G_TIMED, 4, "g m gstatus stack", 4, 0, 0, 0)                \
  /* structural: [experiment, generation, M, time, length] (Go 1.23) */                            \
  X(ExperimentalBatch,   49, Bad,             0, 4, "exp gen m time", 0, 0, 0, 0)                   \
  /* structural (Go 1.25): first byte of a sync batch, which holds a Frequency and a                \
   * ClockSnapshot [...Frequency|ClockSnapshot]; Go's EvSync, named apart from the                  \
   * reader's Sync event (CTRACE_EV122_Sync) */                                                     \
  X(SyncBatch,           50, Bad,             0, 0, "", 0, 0, 0, 0)                                 \
  /* the trace, monotonic and wall clocks read together, in a sync batch (Go 1.25)                  \
   * [time diff from the batch's time, mono ns, wall sec, wall nsec]; timed in Go's table,          \
   * so that one found among a thread's events reaches the ordering (Go 1.27) */                    \
  X(ClockSnapshot,       51, Bad,             CTRACE_G_TIMED, 3, "mono sec nsec", 0, 0, 0, 0)       \
  /* structural (Go 1.26): a batch of this one byte ends a generation */                            \
  X(EndOfGeneration,     52, Bad,             0, 0, "", 0, 0, 0, 0)                                 \
  /* experimental heap and stack events (Go 1.23, GOEXPERIMENT=allocheapprofile) */                 \
  X(Span,               128, Experimental,    CTRACE_G_TE, 3, "id npages_value kindclass", 0, 0, 0, 0)        \
  X(SpanAlloc,          129, Experimental,    CTRACE_G_TE, 3, "id npages_value kindclass", 0, 0, 0, 0)        \
  X(SpanFree,           130, Experimental,    CTRACE_G_TE, 1, "id", 0, 0, 0, 0)                               \
  X(HeapObject,         131, Experimental,    CTRACE_G_TE, 2, "id type", 0, 0, 0, 0)                          \
  X(HeapObjectAlloc,    132, Experimental,    CTRACE_G_TE, 2, "id type", 0, 0, 0, 0)                          \
  X(HeapObjectFree,     133, Experimental,    CTRACE_G_TE, 1, "id", 0, 0, 0, 0)                               \
  X(GoroutineStack,     134, Experimental,    CTRACE_G_TE, 2, "id order", 0, 0, 0, 0)                         \
  X(GoroutineStackAlloc,135, Experimental,    CTRACE_G_TE, 2, "id order", 0, 0, 0, 0)                         \
  X(GoroutineStackFree, 136, Experimental,    CTRACE_G_TE, 1, "id", 0, 0, 0, 0)
/* clang-format on */

enum ctrace_ev122 {
#define CTRACE__EV122_ENUM(name, num, kind, fl, n, a, s1, s2, t1, t2) CTRACE_EV122_##name = num,
  CTRACE_GO122_EVENTS(CTRACE__EV122_ENUM)
#undef CTRACE__EV122_ENUM
  CTRACE_EV122_COUNT,
  /* Not on the wire: the reader's sync point after each generation (Go's
   * evSync, ^event.Type(0)). */
  CTRACE_EV122_Sync = 255
};

/* Goroutine and P statuses on the wire (GoStatus, ProcStatus). */
enum { CTRACE_GS_BAD, CTRACE_GS_RUNNABLE, CTRACE_GS_RUNNING, CTRACE_GS_SYSCALL, CTRACE_GS_WAITING };
enum { CTRACE_PS_BAD, CTRACE_PS_RUNNING, CTRACE_PS_IDLE, CTRACE_PS_SYSCALL, CTRACE_PS_SYSCALL_ABANDONED };

#define CTRACE_GO122_MAX_BATCH (64u << 10)
#define CTRACE_GO122_MAX_FRAMES 128
#define CTRACE_GO122_MAX_STRING 1024

typedef struct ctrace_event122_desc {
  const char *name; /* NULL for numbers that name no event */
  uint8_t kind;     /* enum ctrace_kind */
  uint8_t flags;
  uint8_t nargs;    /* without the time diff */
  uint8_t stack, stack2, str, str2; /* 1-based argument positions, 0 none */
  const char *args; /* space-separated names */
} ctrace_event122_desc;

#ifdef __cplusplus
extern "C" {
#endif
/* Indexed by event number; 256 entries (most unnamed). */
extern const ctrace_event122_desc ctrace_event122_descs[256];
#ifdef __cplusplus
}
#endif

#endif
