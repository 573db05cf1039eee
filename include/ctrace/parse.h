/* ctrace's reader: parses, orders and validates Go execution traces of
 * every version Go 1.19 reads (1.5, 1.7 to 1.11, 1.19), ctrace's own
 * included, and of Go's current format (headers 1.22, 1.23, 1.25 and
 * 1.26, which Go 1.22 to 1.27 write: see "Go 1.22 and later" below),
 * without Go.
 *
 * It reads in passes over the file (mapped, not copied): the first checks
 * the framing of every event and gathers strings, stacks, the frequency and
 * an index of batches; later passes merge the batches into one ordered
 * stream (Go's frontier merge on per-goroutine sequence numbers, or the
 * timestamp sort of 1.5) and check the goroutine/P/GC/region state machine
 * as they go. Memory is the strings, the stacks, the batch index and the
 * state of live goroutines and Ps, not the events: see docs/reader.md for
 * the bound and its two exceptions.
 *
 * Errors carry the byte offset they are about and, where Go rejects a
 * trace, Go's own words.
 */
#ifndef CTRACE_PARSE_H
#define CTRACE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace/error.h"
#include "ctrace/format.h"
#include "ctrace/format_go122.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctrace_reader ctrace_reader;

typedef struct ctrace_parse_error {
  uint64_t offset;   /* byte offset in the trace the error is about */
  char message[512]; /* what was expected, in Go's words where Go says it */
  int code;          /* what the call returned (ctrace/error.h): CTRACE_EFORMAT for a
                        trace Go's reader refuses, -errno for a file that cannot be read,
                        CTRACE_ENOMEM */
} ctrace_parse_error;

/* Fake Ps that Go's reader moves some events to (its FakeP + n). */
#define CTRACE_P_TIMER 1000001
#define CTRACE_P_NETPOLL 1000002
#define CTRACE_P_SYSCALL 1000003
#define CTRACE_P_GC 1000004
#define CTRACE_P_PROFILE 1000005
#define CTRACE_NO_LINK UINT64_MAX

typedef struct ctrace_frame {
  uint64_t pc;
  const char *func, *file;
  uint64_t line;
  /* Lengths of func and file where they may hold a NUL (Go 1.22+ traces);
   * 0 means strlen. */
  uint32_t func_len, file_len;
} ctrace_frame;

typedef struct ctrace_event {
  uint64_t seq;        /* position in the ordered stream, from 0 */
  int64_t ts;          /* nanoseconds since the first event */
  uint64_t off;        /* byte offset of the event in the trace */
  uint8_t type;        /* CTRACE_EV_*; Local variants read as the plain kind, as Go reads them */
  int64_t p;           /* P, -1 for none, or a CTRACE_P_* */
  uint64_t g;          /* goroutine, 0 for none */
  uint64_t args[6];    /* named as in the event table (ctrace_event_descs) */
  uint64_t stack;      /* stack id, 0 for none */
  /* String arguments, valid until the reader closes; a log message (of
   * UserLog) only until the next ctrace_reader_next. */
  const char *sargs[2];
  uint64_t sargs_len[2]; /* their lengths: a string may hold a NUL */
  /* The earlier event this one completes, by seq: a start for an end or a
   * block, a block for its unblock, a syscall for its exit, a region's
   * start, a task's creation. CTRACE_NO_LINK if none. */
  uint64_t link;

  /* Go 1.22 and later (format 1). Such an event is Go's trace.Event (Go
   * 1.23's for the headers go 1.22 and 1.23, Go 1.27's for go 1.25 and
   * 1.26): type is a CTRACE_EV122_*; CTRACE_EV122_Sync comes after each
   * generation (go 1.22, 1.23) or before each and once at the end (go
   * 1.25, 1.26), with args[0] its number from 1 (Go's Sync.N) and, in the
   * Sync that begins a go 1.25+ generation, its clock snapshot: args[1]
   * the trace's time then (ns, as ts, not made increasing), args[2] the
   * monotonic clock (ns), args[3] and args[4] the wall clock (seconds and
   * nanoseconds since 1970), args[5] 1 (0 where there is none);
   * ts is Go's Time (nanoseconds, not rebased), m, p and g the thread,
   * P and goroutine it ran on (-1 for none; g as int64_t), args the
   * arguments in table order and then what Go's reader adds (the old
   * state of a status event, a steal's old P status, a task end's parent),
   * sargs the strings Go prints (a transition's reason, a label, a range's
   * STW kind, a task's or region's type, a log's category and message).
   * stack is the event's stack id (Go's Event.Stack) and frames its
   * frames; tstack/tframes the state transition's stack. Strings and
   * frames are valid until the reader moves to the next generation (the
   * next call of ctrace_reader_next after a Sync event). */
  uint8_t format;     /* 0: Go 1.5-1.19 formats; 1: Go 1.22+ */
  uint8_t kind;       /* enum ctrace_kind (format 1) */
  uint8_t has_stack;  /* Go prints "Stack=" (format 1) */
  uint8_t has_tstack; /* Go prints "TransitionStack=" (format 1) */
  int64_t m;
  uint64_t tstack;
  const ctrace_frame *frames, *tframes;
  uint32_t nframes, ntframes;
} ctrace_event;

typedef struct ctrace_trace_info {
  int version;          /* 1005, 1007 ... 1011, 1019, 1021, 1022, 1023, 1025, 1026 */
  uint64_t frequency;   /* ticks per second */
  uint64_t bytes;       /* size of the trace */
  uint64_t events;      /* events after ordering */
  uint64_t goroutines;  /* distinct goroutines seen */
  uint64_t procs;       /* distinct Ps with events */
  int64_t duration_ns;  /* first to last event */
  uint64_t generations; /* Go 1.22+: generations read (0 for older formats) */
  uint64_t threads;     /* Go 1.22+: distinct Ms with events */
} ctrace_trace_info;

/* Opens a trace file (mapped) or a buffer (not copied: it must outlive the
 * reader) and reads its header. 0, or a negative code (ctrace/error.h:
 * -errno for a file that cannot be read, CTRACE_EFORMAT, CTRACE_ENOMEM)
 * with *err set. */
int ctrace_reader_open(const char *path, ctrace_reader **out, ctrace_parse_error *err);
int ctrace_reader_open_mem(const void *data, size_t len, ctrace_reader **out,
                           ctrace_parse_error *err);
void ctrace_reader_close(ctrace_reader *r);
/* The version its header names: 1005 ... 1019, 1021, 1022, 1023, 1025, 1026. */
int ctrace_reader_version(const ctrace_reader *r);

/* The trace's clock anchor: a go 1.25+ trace's first generation says in
 * its sync batch what the monotonic and the wall clock read when the
 * trace's clock read trace_ns (ns, Go's clock, as ctrace_event.ts of a
 * Go 1.22+ event), which dates every event: its wall time is wall_sec,
 * wall_nsec plus (ts - trace_ns) ns. */
typedef struct ctrace_clock_snapshot {
  int64_t trace_ns;
  uint64_t mono_ns;
  int64_t wall_sec;
  int64_t wall_nsec;
} ctrace_clock_snapshot;

/* Fills *c with the first generation's clock snapshot: 1, or 0 if the
 * trace has none (older formats, or nothing read yet: it is known once
 * ctrace_reader_check or the first ctrace_reader_read has read the first
 * generation). */
int ctrace_reader_clock(const ctrace_reader *r, ctrace_clock_snapshot *c);

/* Called during ctrace_reader_check, and a Go 1.22+ pass that checks as
 * it reads, with how far it is (done of total), on the caller's thread. */
void ctrace_reader_set_progress(ctrace_reader *r,
                                void (*fn)(void *arg, uint64_t done, uint64_t total), void *arg);

/* Reads, orders and validates the whole trace, and fills *info. 0, or a
 * negative code (CTRACE_EFORMAT: Go refuses it there; CTRACE_ENOMEM)
 * with *err set (then nothing may be read). Must precede every call
 * below, but for a Go 1.22+ trace: one read from a rewind to its end
 * (ctrace_reader_next or _read) checks it as it goes, and this call then
 * answers from that pass without reading again. */
int ctrace_reader_check(ctrace_reader *r, ctrace_trace_info *info, ctrace_parse_error *err);

/* The next event of the ordered stream: 1 with *ev set, 0 at the end
 * (or, for a Go 1.22+ trace read unchecked, where it fails to read).
 * Where the process may run on two CPUs, a pass of a Go 1.22+ trace is
 * read ahead by a thread the reader starts at the pass's first event and
 * joins at its end (or at a rewind, or the close); events are handed out
 * in order on the caller's thread all the same. CTRACE_READ_AHEAD=0 in
 * the environment reads on the caller's thread alone. */
int ctrace_reader_next(ctrace_reader *r, ctrace_event *ev);
/* ctrace_reader_next without copying the event: a pointer to it, in buf
 * or where the reader holds it (a pass read ahead), valid until the next
 * call on r; NULL where ctrace_reader_next returns 0. */
const ctrace_event *ctrace_reader_next_ref(ctrace_reader *r, ctrace_event *buf);

/* Go 1.22 and later: reads the trace as a stream, generation by generation,
 * validating as it goes, as Go's trace.Reader does; no ctrace_reader_check
 * is needed before it (one pass instead of two). 1 with *ev set, 0 at the
 * end, a negative code with *err set where Go's reader fails (the events before it were
 * valid, as Go prints them too). For the older formats it is
 * ctrace_reader_next after a successful check. */
int ctrace_reader_read(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err);
/* Back to the first event. */
void ctrace_reader_rewind(ctrace_reader *r);

/* Go 1.22 and later: the time (ns, as ctrace_event.ts) at which each of
 * the trace's generations begins (its earliest batch's), in order: *n of
 * them in *starts, valid until the reader closes. Go writes a generation
 * about every second, and states every goroutine's and P's status in
 * each. Found once, by a pass that reads each generation's batches and
 * tables but orders none of its events; no ctrace_reader_check is needed
 * before.
 * 0, or a negative code with *err: CTRACE_EINVAL for the older formats,
 * CTRACE_EFORMAT where a generation's batches do not read. The call that
 * finds them rewinds. */
int ctrace_reader_generations(ctrace_reader *r, const int64_t **starts, size_t *n, ctrace_parse_error *err);
/* Go 1.22 and later: rewinds to read from generation k (from 1, as
 * ctrace_reader_generations counts them) on, as a trace that begins
 * there is read (as Go's flight recorder writes them): its statuses set
 * every goroutine's and P's state, and what began before it (a region, a
 * task) is not known. Times stay the trace's own, and Syncs are numbered
 * as in the whole. Seconds for the end of a trace of gigabytes, where a
 * read from the start reads them all. A pass from k > 1 is no check
 * (ctrace_reader_check reads the whole trace); ctrace_reader_failed, or
 * ctrace_reader_read, says where it fails. 0, or a negative code with
 * *err (as ctrace_reader_generations; CTRACE_EINVAL for no generation k). */
int ctrace_reader_seek_generation(ctrace_reader *r, size_t k, ctrace_parse_error *err);
/* Go 1.22 and later: 1 with *err if the pass ctrace_reader_next or
 * _next_ref gave its events from ended where the trace fails to read
 * (they return 0 there); 0 if not, or for the older formats (checked
 * before they are read). */
int ctrace_reader_failed(const ctrace_reader *r, ctrace_parse_error *err);

/* Salvage: what of a trace cut short (its writer killed, its disk full)
 * still reads. A Go 1.22+ trace is cut into generations, and Go's writer,
 * like ctrace's, writes every batch of a generation before any batch of
 * the next: a generation is whole once a batch of the next one begins
 * after it. The salvaged trace is a prefix of the trace: its header and
 * every such whole generation that reads as valid, up to the first that
 * does not. The last generation begun is dropped, for nothing tells
 * whether all its batches were written, unless the file ends on a batch
 * boundary and reads as valid to its end (a trace that was stopped, or
 * one killed right after a batch whose last generation still reads: then
 * it is kept whole). A trace of the older formats (go 1.5 to go 1.21) has
 * no generations and its frequency comes last: it is kept whole if it
 * reads, and cannot be salvaged otherwise. docs/reader.md, "Salvage". */
typedef struct ctrace_salvage_info {
  uint64_t keep;        /* the salvaged trace is the trace's first keep bytes */
  int whole;            /* 1: the trace reads to its end and is kept whole */
  uint64_t generations; /* generations kept */
  uint64_t dropped;     /* generations begun in the file after those, dropped */
  /* Where the trace's whole batches end (its size when they fill it) and,
   * if they do not fill it, why: the file ends inside the batch there
   * (torn = 1, a cut), or the bytes there are no batch that can follow
   * (torn = 0). The message is "" when they fill it. */
  ctrace_parse_error cut;
  int torn;
  /* The reader's first error on the trace (the generations it reached),
   * "" if none: why a generation the rule would keep was dropped, or why
   * the last one does not read. */
  ctrace_parse_error error;
  /* The salvaged trace's, as ctrace_reader_check gives it. */
  ctrace_trace_info info;
} ctrace_salvage_info;

/* Finds the salvaged trace of r's trace (read afresh: r's own stream is
 * untouched, and no check is needed before). 0 with *s set, or a negative
 * code with *err (CTRACE_EFORMAT: nothing is left that reads; the offset
 * is where the trace is cut or fails). */
int ctrace_reader_salvage(ctrace_reader *r, ctrace_salvage_info *s, ctrace_parse_error *err);
/* The trace's bytes as the reader holds them (mapped or in memory), valid
 * until it closes: a salvaged trace is the first keep of them. */
const void *ctrace_reader_bytes(const ctrace_reader *r, size_t *len);

/* Reading a Go 1.22+ trace cut short as it stands, without a salvaged
 * copy. With allow nonzero, set before ctrace_reader_check or the first
 * ctrace_reader_read, the reader reads such a trace up to its last whole
 * generation, and ctrace_reader_cut says what it left out. A trace is cut
 * short, and its last generation begun left out, when
 *   - the file ends inside a batch (its writer was killed in a write):
 *     every generation that a batch of the next one follows is read (the
 *     torn batch counts once its header has its generation); or
 *   - the file ends between two batches, and the last generation begun
 *     does not read as a generation (Go's readGeneration fails on it: no
 *     frequency, as Go's writer and ctrace's write it when the generation
 *     ends); or (go 1.26) it has no EndOfGeneration.
 * Anything else stays an error where the reader meets it: bytes that are
 * no batch, a whole generation that does not read, events of the last
 * generation that do not order. A trace cut inside its first generation
 * has nothing whole to read: check and read fail with CTRACE_EFORMAT, at
 * the offset where the torn batch begins with a message saying it was
 * cut short, or (cut between two batches) with the generation's own
 * error, such as "no frequency event found". A trace cut exactly between two generations reads as whole: nothing in
 * it says that more was to come. The classic formats (go 1.5 to 1.21)
 * are read as without it. Off by default: Go's reader refuses such a
 * trace, and ctrace_reader_check gives Go's verdict. */
void ctrace_reader_allow_cut(ctrace_reader *r, int allow);
/* After a check, or a read to the end, of a reader that allows a cut:
 * 1 with *s set if the trace was read cut short, 0 if it was read whole
 * (or was not read so far). *s is what ctrace_reader_salvage gives for
 * the part read: keep is where the generation left out begins, the bytes
 * read are [0, keep); generations those read, dropped 1; cut and torn
 * where the whole batches end and why (cut.message "" when the file ends
 * between two batches), error why the last generation does not read (""
 * when the file ends inside a batch); info the check's, if there was
 * one, with bytes = keep. */
int ctrace_reader_cut(const ctrace_reader *r, ctrace_salvage_info *s);

/* The string of an id ("" for 0 or unknown), and the frames of a stack
 * (0 frames for 0 or unknown). Valid until the reader closes. */
const char *ctrace_reader_string(const ctrace_reader *r, uint64_t id);
size_t ctrace_reader_stack(const ctrace_reader *r, uint64_t id, const ctrace_frame **frames);

/* Writes the line `go tool trace -d` prints for ev (no newline), as
 * snprintf does: returns the length it needed. For a Go 1.22+ event
 * (format 1), what Go 1.23's `go tool trace -d=1` prints for it (its
 * Event.String): one line, or with stacks several, each frame's line ending
 * in a newline; the caller adds the final newline as Go's Println does. */
int ctrace_event_format(const ctrace_event *ev, char *buf, size_t size);
/* The same in the words of Go go (1023 or 1027) for a Go 1.22+ event:
 * Go 1.27's `go tool trace -d=parsed` prints a state transition's states
 * before its reason, a metric's value as Value{Uint64(n)}, a Sync's
 * number and clock snapshot, and an experimental event's arguments by
 * name. ctrace_event_format is go 1023; older events print as it prints
 * them whatever go is. */
int ctrace_event_format_go(const ctrace_event *ev, int go, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
