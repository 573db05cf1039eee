/* The Go execution-trace wire format: one event table for writer, reader
 * and dumper.
 *
 * Every trace is a 16-byte header ("go 1.11 trace" padded with NUL) and a
 * stream of events. An event is one byte, type | min(nargs,3) << 6, where
 * nargs counts the varint values after the byte minus one (the first value
 * of a timestamped event is its tick diff). With 3 or more values a varint
 * byte length comes first. Values are unsigned LEB128, at most 10 bytes.
 *
 * CTRACE_EVENTS(X) lists every event kind as
 *   X(Name, number, min_version, flags, nargs, "arg names", "")
 * with the arguments as Go 1.19's reader names them, without the timestamp
 * and the stack. Flags: CTRACE_F_STACK (a stack id follows the arguments),
 * CTRACE_F_NOTS (no timestamp diff), CTRACE_F_STRING (a string follows
 * the length-counted values and is not part of that length).
 */
#ifndef CTRACE_FORMAT_H
#define CTRACE_FORMAT_H

#include <stdint.h>

#define CTRACE_F_STACK 1u
#define CTRACE_F_NOTS 2u
#define CTRACE_F_STRING 4u

/* clang-format off */
#define CTRACE_EVENTS(X)                                                                                  \
  X(None,              0,  1005, 0,                                0, "", "")                             \
  /* start of a batch of one P [p, absolute ticks] */                                                     \
  X(Batch,             1,  1005, CTRACE_F_NOTS,                    2, "p ticks", "")                      \
  /* trailer: ticks per second [freq] */                                                                  \
  X(Frequency,         2,  1005, CTRACE_F_NOTS,                    1, "freq", "")                         \
  /* stack table entry [id, frame count, {pc, func id, file id, line}...] */                              \
  X(Stack,             3,  1005, CTRACE_F_NOTS,                    2, "id siz", "")                       \
  X(Gomaxprocs,        4,  1005, CTRACE_F_STACK,                   1, "procs", "")                        \
  X(ProcStart,         5,  1005, 0,                                1, "thread", "")                       \
  X(ProcStop,          6,  1005, 0,                                0, "", "")                             \
  X(GCStart,           7,  1005, CTRACE_F_STACK,                   1, "seq", "")                          \
  X(GCDone,            8,  1005, 0,                                0, "", "")                             \
  /* kind: 0 mark termination, 1 sweep termination */                                                     \
  X(GCSTWStart,        9,  1005, 0,                                1, "kindid", "kind")                   \
  X(GCSTWDone,         10, 1005, 0,                                0, "", "")                             \
  X(GCSweepStart,      11, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GCSweepDone,       12, 1005, 0,                                2, "swept reclaimed", "")              \
  /* [new g, new g's stack id (its start function), stack] */                                             \
  X(GoCreate,          13, 1005, CTRACE_F_STACK,                   2, "g stack", "")                      \
  X(GoStart,           14, 1005, 0,                                2, "g seq", "")                        \
  X(GoEnd,             15, 1005, 0,                                0, "", "")                             \
  X(GoStop,            16, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoSched,           17, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoPreempt,         18, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoSleep,           19, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoBlock,           20, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoUnblock,         21, 1005, CTRACE_F_STACK,                   2, "g seq", "")                        \
  X(GoBlockSend,       22, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoBlockRecv,       23, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoBlockSelect,     24, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoBlockSync,       25, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoBlockCond,       26, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoBlockNet,        27, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  X(GoSysCall,         28, 1005, CTRACE_F_STACK,                   0, "", "")                             \
  /* [g, seq, real exit ticks or 0] */                                                                    \
  X(GoSysExit,         29, 1005, 0,                                3, "g seq ts", "")                     \
  X(GoSysBlock,        30, 1005, 0,                                0, "", "")                             \
  /* state of a g that already existed when tracing started */                                            \
  X(GoWaiting,         31, 1005, 0,                                1, "g", "")                            \
  X(GoInSyscall,       32, 1005, 0,                                1, "g", "")                            \
  X(HeapAlloc,         33, 1005, 0,                                1, "mem", "")                          \
  /* NextGC in the Go 1.11 runtime; Go 1.19's reader calls it HeapGoal */                                 \
  X(HeapGoal,          34, 1005, 0,                                1, "mem", "")                          \
  X(TimerGoroutine,    35, 1005, CTRACE_F_NOTS,                    1, "g", "")                            \
  X(FutileWakeup,      36, 1005, 0,                                0, "", "")                             \
  /* string dictionary entry [id, length, bytes]; no count bits */                                        \
  X(String,            37, 1007, CTRACE_F_NOTS,                    0, "", "")                             \
  X(GoStartLocal,      38, 1007, 0,                                1, "g", "")                            \
  X(GoUnblockLocal,    39, 1007, CTRACE_F_STACK,                   1, "g", "")                            \
  X(GoSysExitLocal,    40, 1007, 0,                                2, "g ts", "")                         \
  X(GoStartLabel,      41, 1008, 0,                                3, "g seq labelid", "label")           \
  X(GoBlockGC,         42, 1008, CTRACE_F_STACK,                   0, "", "")                             \
  X(GCMarkAssistStart, 43, 1009, CTRACE_F_STACK,                   0, "", "")                             \
  X(GCMarkAssistDone,  44, 1009, 0,                                0, "", "")                             \
  X(UserTaskCreate,    45, 1011, CTRACE_F_STACK,                   3, "taskid pid typeid", "name")        \
  X(UserTaskEnd,       46, 1011, CTRACE_F_STACK,                   1, "taskid", "")                       \
  /* mode: 0 start, 1 end */                                                                              \
  X(UserRegion,        47, 1011, CTRACE_F_STACK,                   3, "taskid mode typeid", "name")       \
  X(UserLog,           48, 1011, CTRACE_F_STACK | CTRACE_F_STRING, 2, "id keyid", "category message")     \
  /* [absolute ticks, p or ^0, g] with a stack; 1.19 only */                                              \
  X(CPUSample,         49, 1019, CTRACE_F_STACK,                   3, "ts p g", "")
/* clang-format on */

enum ctrace_ev {
#define CTRACE__EV_ENUM(name, num, ver, flags, nargs, args, sargs) CTRACE_EV_##name = num,
  CTRACE_EVENTS(CTRACE__EV_ENUM)
#undef CTRACE__EV_ENUM
  CTRACE_EV_COUNT
};

#define CTRACE_ARG_COUNT_SHIFT 6
#define CTRACE_MAX_VARINT 10
/* The version ctrace writes. */
#define CTRACE_VERSION 1011
#define CTRACE_HEADER "go 1.11 trace\0\0\0"
#define CTRACE_HEADER_LEN 16

/* Descriptor of one event kind, built from CTRACE_EVENTS. */
typedef struct ctrace_event_desc {
  const char *name;
  uint16_t min_version;
  uint8_t flags;
  uint8_t nargs; /* named arguments, without timestamp and stack */
  const char *args;  /* space-separated names */
  const char *sargs; /* space-separated names of string arguments */
} ctrace_event_desc;

#ifdef __cplusplus
extern "C" {
#endif
/* Indexed by event number; CTRACE_EV_COUNT entries. */
extern const ctrace_event_desc ctrace_event_descs[CTRACE_EV_COUNT];
#ifdef __cplusplus
}
#endif

#endif
