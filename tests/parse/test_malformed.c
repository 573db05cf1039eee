/* test_malformed.c - the reader rejects malformed traces with Go's words,
 * at the right offset, without crashing and without allocating by what a
 * corrupt file claims.
 *
 *   test_malformed               run the cases (cmocka)
 *   test_malformed --write DIR   write each case as DIR/NAME.trace, with
 *                                what ctrace says of it in DIR/NAME.ctrace
 *                                ("OFFSET<TAB>MESSAGE", or "ok", and then
 *                                its events as ctrace_event_format prints
 *                                them in DIR/NAME.dump) and, where
 *                                Go's message carries offsets of its own or
 *                                differs, DIR/NAME.offsets or
 *                                DIR/NAME.differs (why; see GO_SAME): for
 *                                tests/parse/malformed_vs_go.sh
 *
 * Each case builds a small trace in memory with the encoder below (header,
 * LEB128 varints, events as `type | min(nvalues-1, 3) << 6`, a byte length
 * first from 4 values on), opens it with ctrace_reader_open_mem and checks
 * it with ctrace_reader_check. It must fail, at either step, with a message
 * that contains the case's text (Go's words, without the offsets Go puts in
 * them) and an offset inside the file: for most cases one inside the
 * record at fault (the header, the event or string record that is wrong or
 * cut; its first byte, or the varint or string bytes in it that are wrong
 * or cut), for the whole-trace errors (no ordering possible, time order,
 * empty, no frequency) anywhere. An offset at the end of the file (where a
 * truncation is noticed) is not inside it.
 *
 * Allocations of the reader (malloc, calloc, realloc, strdup, anonymous
 * mmap: the link wraps them, see tests/CMakeLists.txt) are counted while a
 * case runs; the cases whose counts or lengths are huge must not allocate
 * more than 12 KiB beyond what an empty trace takes. Under ASan (make check-asan)
 * CTest also sets max_allocation_size_mb, so one huge allocation aborts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "ctrace/format.h"
#include "ctrace/parse.h"

/* ---- allocation accounting (the link wraps these; see CMakeLists) -------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static int counting;           /* inside a case's reader calls */
static uint64_t alloc_total;   /* bytes requested while counting */
static uint64_t alloc_largest; /* largest single request while counting */

static void count(uint64_t n) {
  if (!counting) return;
  alloc_total += n;
  if (n > alloc_largest) alloc_largest = n;
}

void *__wrap_malloc(size_t n) {
  count(n);
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m) {
  count(m && n > UINT64_MAX / m ? UINT64_MAX : (uint64_t)n * m);
  return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) {
  count(n);
  return __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) {
  count(strlen(s) + 1);
  return __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n) {
  count(strnlen(s, n) + 1);
  return __real_strndup(s, n);
}
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (flags & MAP_ANONYMOUS) count(len);
  return __real_mmap(addr, len, prot, flags, fd, off);
}
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (flags & MAP_ANONYMOUS) count(len);
  return __real_mmap64(addr, len, prot, flags, fd, off);
}

/* ---- the encoder ------------------------------------------------------------ */

typedef struct tb {
  uint8_t d[4096];
  size_t n;
} tb;

static void put(tb *b, uint8_t c) {
  assert_true(b->n < sizeof b->d);
  b->d[b->n++] = c;
}

static void put_mem(tb *b, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) put(b, ((const uint8_t *)p)[i]);
}

static void put_uv(tb *b, uint64_t v) {
  for (; v >= 0x80; v >>= 7) put(b, (uint8_t)(v | 0x80));
  put(b, (uint8_t)v);
}

static size_t uv_len(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) n++;
  return n;
}

/* "go 1.N trace" padded with NUL to 16 bytes. */
static void header(tb *b, const char *text) {
  char h[16] = {0};
  memcpy(h, text, strlen(text));
  put_mem(b, h, sizeof h);
}

/* An event of a 1.7+ trace: the type byte, then the values (the tick diff
 * first, for kinds that have one): 1 to 3 values inline, from 4 on a byte
 * length first. */
static void ev_(tb *b, unsigned type, const uint64_t *v, size_t n) {
  assert_true(n >= 1);
  unsigned bits = n - 1 > 3 ? 3 : (unsigned)(n - 1);
  put(b, (uint8_t)(type | bits << CTRACE_ARG_COUNT_SHIFT));
  if (bits == 3) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += uv_len(v[i]);
    put_uv(b, len);
  }
  for (size_t i = 0; i < n; i++) put_uv(b, v[i]);
}
#define EV(b, type, ...)                                    \
  ev_((b), CTRACE_EV_##type, (const uint64_t[]){__VA_ARGS__}, \
      sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

/* An event of a 1.5 trace: [seq diff, tick diff, args...]; the count bits
 * are nvalues-2, and from 5 values on a byte length comes first. */
static void ev15_(tb *b, unsigned type, const uint64_t *v, size_t n) {
  assert_true(n >= 2);
  unsigned bits = n - 2 > 3 ? 3 : (unsigned)(n - 2);
  put(b, (uint8_t)(type | bits << CTRACE_ARG_COUNT_SHIFT));
  if (bits == 3) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += uv_len(v[i]);
    put_uv(b, len);
  }
  for (size_t i = 0; i < n; i++) put_uv(b, v[i]);
}
#define EV15(b, type, ...)                                    \
  ev15_((b), CTRACE_EV_##type, (const uint64_t[]){__VA_ARGS__}, \
        sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

static void str(tb *b, uint64_t id, const char *s) {
  put(b, CTRACE_EV_String);
  put_uv(b, id);
  put_uv(b, strlen(s));
  put_mem(b, s, strlen(s));
}

/* The record at fault, [mark, mark_end), set by a case's builder: MARK
 * where it starts, END where it ends (if not at the end of the file). */
static uint64_t mark, mark_end;
#define MARK(b) (mark = (b)->n)
#define END(b) (mark_end = (b)->n)

/* A 1.11 trace's usual opening: header, batch of P 0 at tick 1000, P 0
 * started (by thread 1). */
static void open11(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Batch, 0, 1000);
  EV(b, ProcStart, 0, 1);
}

/* G g created by G0 on P 0 and started. */
static void create_start(tb *b, uint64_t g) {
  EV(b, GoCreate, 10, g, 0, 0);
  EV(b, GoStart, 10, g, 1);
}

static void freq(tb *b) {
  EV(b, Frequency, 1000000000);
}

/* ---- the cases ------------------------------------------------------------- */

enum { ANY = -1 }; /* the error's offset may be anywhere in the file */

typedef struct tcase {
  const char *name;
  void (*build)(tb *b);
  const char *msg; /* substring of ctrace's message; NULL: the trace is valid */
  int any_offset;  /* ANY: the offset is only checked to be inside the file */
  int frugal;      /* huge claims: allocate no more than a valid trace */
  /* How Go's message compares (tests/parse/malformed_vs_go.sh):
   * GO_SAME: ctrace's message contains Go's error text as it is.
   * GO_OFFSETS: Go's text carries an offset other than the one the error
   *   is about, since Go reports offsets inconsistently (the offset after
   *   a value, in decimal; or 0, which readVal returns on a failure, in
   *   "failed to read event N argument at offset 0 (...)"); the script
   *   compares the two with every number masked.
   * GO_DIFFERS: Go says something else or nothing, for a reason in `why`
   *   (a bug of Go's reader that ctrace does not copy).
   * CTRACE_BUG: ctrace should agree with Go and does not yet, for the
   *   reason in `why`: the script reports the difference without failing,
   *   and says so when it is gone (then the case becomes GO_SAME). */
  int go;
  const char *why;
} tcase;
enum { GO_SAME, GO_OFFSETS, GO_DIFFERS, CTRACE_BUG };

/* The valid trace every case departs from, and the baseline of allocations
 * for the frugal cases: a string, a one-frame stack, a G created, started
 * and ended, P 0 stopped. */
static void b_valid(tb *b) {
  open11(b);
  str(b, 1, "main");
  str(b, 2, "main.c");
  EV(b, Stack, 1, 1, 0x401000, 1, 2, 10);
  EV(b, GoCreate, 10, 1, 1, 1);
  EV(b, GoStart, 10, 1, 1);
  EV(b, GoEnd, 10);
  EV(b, ProcStop, 10);
  freq(b);
}

static void b_header_truncated(tb *b) {
  MARK(b);
  put_mem(b, "go 1.11 tr", 10);
}

static void b_header_bad(tb *b) {
  MARK(b);
  header(b, "go 1.11 trace!");
  END(b);
  EV(b, Batch, 0, 1000);
  freq(b);
}

static void b_header_version(tb *b) {
  MARK(b);
  header(b, "go 1.6 trace");
  END(b);
  EV(b, Batch, 0, 1000);
  freq(b);
}

/* ProcStart [tick diff, thread]: the file ends after the tick diff. */
static void b_trunc_event(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_ProcStart | 1 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, 5);
}

/* The file ends inside a varint (a byte with the continuation bit). */
static void b_trunc_varint(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_HeapAlloc | 1 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, 5);
  put(b, 0x80);
}

/* A length-counted event (GoCreate) whose values stop before its length. */
static void b_trunc_long_event(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_GoCreate | 3 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, 4);
  put_uv(b, 10);
  put_uv(b, 2);
}

/* A string of 10 bytes, none in the file. */
static void b_trunc_string_bytes(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_String);
  put_uv(b, 1);
  put_uv(b, 10);
}

/* A string of 10 bytes, 3 in the file. */
static void b_trunc_string(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_String);
  put_uv(b, 1);
  put_uv(b, 10);
  put_mem(b, "abc", 3);
}

/* The value string of a UserLog, cut. */
static void b_trunc_log_string(tb *b) {
  open11(b);
  str(b, 1, "cat");
  MARK(b);
  EV(b, UserLog, 10, 0, 1, 0);
  put_uv(b, 8);
  put_mem(b, "abc", 3);
}

/* The value string of a UserLog claims 1,000,001 bytes. */
static void b_log_string_too_long(tb *b) {
  open11(b);
  str(b, 1, "cat");
  MARK(b);
  EV(b, UserLog, 10, 0, 1, 0);
  put_uv(b, 1000001);
  put_mem(b, "abc", 3);
  END(b);
  freq(b);
}

/* 11 bytes with the continuation bit: no varint is that long. */
static void b_varint_long(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_HeapAlloc | 1 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, 5);
  for (int i = 0; i < 11; i++) put(b, 0x81);
  put(b, 0x01);
  END(b);
  freq(b);
}

/* The same, as a string's id. */
static void b_varint_long_string(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_String);
  for (int i = 0; i < 11; i++) put(b, 0x81);
  put(b, 0x01);
  END(b);
  freq(b);
}

/* A string that claims 1,000,001 bytes. */
static void b_string_too_long(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_String);
  put_uv(b, 1);
  put_uv(b, 1000001);
  put_mem(b, "abc", 3);
  END(b);
  freq(b);
}

/* A string that claims 1,000,000 bytes (allowed) in a file of ~40: a
 * truncation, found without allocating the million. */
static void b_string_huge_claim(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_String);
  put_uv(b, 1);
  put_uv(b, 1000000);
  put_mem(b, "abc", 3);
}

static void b_string_id0(tb *b) {
  open11(b);
  MARK(b);
  str(b, 0, "zero");
  END(b);
  freq(b);
}

static void b_string_dup(tb *b) {
  open11(b);
  str(b, 1, "one");
  MARK(b);
  str(b, 1, "uno");
  END(b);
  freq(b);
}

static void b_string_len0(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_String);
  put_uv(b, 1);
  put_uv(b, 0);
  END(b);
  freq(b);
}

/* GoCreate [dt, g, stack, stack] = 1+2+1+1 bytes, its length says 2: the
 * value that crosses the length (g, 2 bytes) ends at 3. */
static void b_wrong_length(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_GoCreate | 3 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, 2);
  put_uv(b, 1);
  put_uv(b, 200);
  put_uv(b, 0);
  put_uv(b, 0);
  END(b);
  freq(b);
}

/* A length-counted event claiming 2^40 bytes in a short file. */
static void b_huge_event_length(tb *b) {
  open11(b);
  MARK(b);
  put(b, CTRACE_EV_GoCreate | 3 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, (uint64_t)1 << 40);
  put_uv(b, 1);
  put_uv(b, 2);
}

/* ProcStart with 3 values instead of 2. */
static void b_wrong_nargs(tb *b) {
  open11(b);
  MARK(b);
  EV(b, ProcStart, 10, 1, 7);
  END(b);
  freq(b);
}

/* GoCreate with 5 values (length-counted) instead of 4. */
static void b_wrong_nargs_long(tb *b) {
  open11(b);
  MARK(b);
  EV(b, GoCreate, 10, 1, 0, 0, 9);
  END(b);
  freq(b);
}

static void b_unknown_type(tb *b) {
  open11(b);
  MARK(b);
  put(b, 50);
  END(b);
  put_uv(b, 1);
  freq(b);
}

static void b_unknown_type0(tb *b) {
  open11(b);
  MARK(b);
  put(b, 0);
  END(b);
  put_uv(b, 1);
  freq(b);
}

/* CPUSample (49) exists from 1.19 on: unknown in a 1.11 trace. */
static void b_type_too_new(tb *b) {
  open11(b);
  MARK(b);
  EV(b, CPUSample, 10, 2000, 0, 1, 0);
  END(b);
  freq(b);
}

/* EvStack of 1001 frames (its values stop at the count). */
static void b_stack_too_deep(tb *b) {
  open11(b);
  EV(b, HeapAlloc, 10, 4096);
  MARK(b);
  EV(b, Stack, 1, 1001);
  END(b);
  freq(b);
}

/* EvStack claiming 1000 frames (the most allowed) with none given. */
static void b_stack_frames_missing(tb *b) {
  open11(b);
  EV(b, HeapAlloc, 10, 4096);
  MARK(b);
  EV(b, Stack, 1, 1000);
  END(b);
  freq(b);
}

/* EvStack claiming 1000 frames whose length (16,000 bytes) runs past the
 * end of a short file. */
static void b_stack_frames_truncated(tb *b) {
  open11(b);
  EV(b, HeapAlloc, 10, 4096);
  MARK(b);
  put(b, CTRACE_EV_Stack | 3 << CTRACE_ARG_COUNT_SHIFT);
  put_uv(b, 16000);
  put_uv(b, 1);
  put_uv(b, 1000);
  put_uv(b, 0x401000);
  put_uv(b, 0);
}

static void b_no_frequency(tb *b) {
  open11(b);
  EV(b, HeapAlloc, 10, 4096);
}

static void b_frequency0(tb *b) {
  open11(b);
  EV(b, HeapAlloc, 10, 4096);
  MARK(b);
  EV(b, Frequency, 0);
  END(b);
}

static void b_empty(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Batch, 0, 1000);
  freq(b);
}

static void b_empty_no_batch(tb *b) {
  header(b, "go 1.11 trace");
  freq(b);
}

/* GoStart with sequence 5 where 1 is due. */
static void b_bad_seq(tb *b) {
  open11(b);
  EV(b, GoCreate, 10, 1, 0, 0);
  EV(b, GoStart, 10, 1, 5);
  EV(b, GoEnd, 10);
  freq(b);
}

/* An unblock of a G that is not waiting (it never blocked). */
static void b_bad_seq_unblock(tb *b) {
  open11(b);
  EV(b, GoCreate, 10, 1, 0, 0);
  EV(b, GoUnblock, 10, 1, 1, 0);
  freq(b);
}

/* G 1 is created on P 0 at tick 1100 and started on P 1 at tick 600:
 * ordering puts the start after the creation, so time goes back. */
static void b_time_back(tb *b) {
  open11(b);
  EV(b, GoCreate, 100, 1, 0, 0);
  EV(b, Batch, 1, 500);
  EV(b, ProcStart, 0, 2);
  EV(b, GoStart, 100, 1, 1);
  EV(b, GoEnd, 10);
  freq(b);
}

/* A 1.5 trace (no order but sequence numbers): GoStart of G 5, which was
 * never created. */
static void b_start_not_runnable(tb *b) {
  header(b, "go 1.5 trace");
  EV15(b, Batch, 0, 0, 1000);
  EV15(b, ProcStart, 1, 10, 1);
  MARK(b);
  EV15(b, GoStart, 1, 10, 5);
  END(b);
  EV15(b, Frequency, 1000000000, 0);
}

static void b_goend_g0(tb *b) {
  open11(b);
  MARK(b);
  EV(b, GoEnd, 10);
  END(b);
  freq(b);
}

static void b_procstop_running(tb *b) {
  open11(b);
  create_start(b, 1);
  MARK(b);
  EV(b, ProcStop, 10);
  END(b);
  freq(b);
}

static void b_procstart_twice(tb *b) {
  open11(b);
  MARK(b);
  EV(b, ProcStart, 10, 1);
  END(b);
  freq(b);
}

static void b_gcdone_alone(tb *b) {
  open11(b);
  MARK(b);
  EV(b, GCDone, 10);
  END(b);
  freq(b);
}

static void b_gcstart_twice(tb *b) {
  open11(b);
  EV(b, GCStart, 10, 0, 0);
  MARK(b);
  EV(b, GCStart, 10, 1, 0);
  END(b);
  freq(b);
}

/* Region "a" of task 1 opened, region "a" of task 2 closed. */
static void b_region_mismatch(tb *b) {
  open11(b);
  str(b, 1, "a");
  EV(b, UserRegion, 10, 1, 0, 1, 0);
  MARK(b);
  EV(b, UserRegion, 10, 2, 1, 1, 0);
  END(b);
  freq(b);
}

static void b_region_mode(tb *b) {
  open11(b);
  str(b, 1, "a");
  MARK(b);
  EV(b, UserRegion, 10, 1, 2, 1, 0);
  END(b);
  freq(b);
}

static void b_task_dup(tb *b) {
  open11(b);
  str(b, 1, "job");
  EV(b, UserTaskCreate, 10, 7, 0, 1, 0);
  MARK(b);
  EV(b, UserTaskCreate, 10, 7, 0, 1, 0);
  END(b);
  freq(b);
}

static void b_stw_kind(tb *b) {
  open11(b);
  MARK(b);
  EV(b, GCSTWStart, 10, 2);
  END(b);
  EV(b, GCSTWDone, 10);
  freq(b);
}

/* G 1 created twice. From 1.7 on, ordering finds no place for the second
 * creation (a G's sequence starts dead at 0), so this is a 1.5 trace. */
static void b_g_exists(tb *b) {
  header(b, "go 1.5 trace");
  EV15(b, Batch, 0, 0, 1000);
  EV15(b, ProcStart, 1, 10, 1);
  EV15(b, GoCreate, 1, 10, 1, 0, 0);
  MARK(b);
  EV15(b, GoCreate, 1, 10, 1, 0, 0);
  END(b);
  EV15(b, Frequency, 1000000000, 0);
}

/* ---- edge cases Go reads (their dump must be Go's), and more errors -------- */

/* 1.11 header, a batch of P 0 at tick 100 with P 0 started. */
static void open11_100(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
}

/* A batch starting above 2^63 ticks: Go's int64 ticks wrap. */
static void b_ticks_wrap(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Batch, 0, ((uint64_t)1 << 63) + 5);
  EV(b, ProcStart, 0, 1);
  EV(b, HeapAlloc, 10, 5);
  freq(b);
}

/* Batches of P -1 (no P), P 2^40, and P 1000001 (Go's TimerP). */
static void b_p_values(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Batch, UINT64_MAX, 100);
  EV(b, HeapAlloc, 1, 5);
  EV(b, Batch, (uint64_t)1 << 40, 100);
  EV(b, HeapAlloc, 2, 6);
  EV(b, Batch, 1000001, 100);
  EV(b, HeapAlloc, 3, 7);
  freq(b);
}

/* 2^63-1 ticks per second: nanoseconds come out smaller than ticks. */
static void b_freq_huge(tb *b) {
  open11_100(b);
  EV(b, HeapAlloc, 3, 5);
  EV(b, HeapAlloc, 3, 6);
  EV(b, HeapAlloc, 1, 7);
  EV(b, Frequency, INT64_MAX);
}

/* 3 ticks per second: Go's float64 conversion of each timestamp. */
static void b_freq_odd(tb *b) {
  open11_100(b);
  EV(b, HeapAlloc, 12345, 5);
  EV(b, HeapAlloc, 99999, 6);
  EV(b, HeapAlloc, 7, 7);
  EV(b, Frequency, 3);
}

/* Two EvFrequency: the last counts. */
static void b_freq_twice(tb *b) {
  open11_100(b);
  EV(b, HeapAlloc, 1000, 5);
  EV(b, Frequency, 1000);
  EV(b, Frequency, 2000);
}

/* EvFrequency before everything else. */
static void b_freq_first(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Frequency, 1000);
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, HeapAlloc, 1000, 5);
}

/* Events before any EvBatch: P 0 from tick 0, as Go reads them. */
static void b_no_batch(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, ProcStart, 5, 1);
  EV(b, HeapAlloc, 7, 5);
  freq(b);
}

/* Bytes that are not UTF-8, a newline, printf directives. */
static void b_str_bytes(tb *b) {
  header(b, "go 1.11 trace");
  str(b, 1, "\xff\xfe\n%s%d\t");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, UserRegion, 1, 0, 0, 1, 0);
  freq(b);
}

/* A NUL inside a region name and inside a log message: Go prints it. */
static void b_str_nul(tb *b) {
  header(b, "go 1.11 trace");
  put(b, CTRACE_EV_String);
  put_uv(b, 1);
  put_uv(b, 3);
  put_mem(b, "a\0b", 3);
  str(b, 2, "k");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, UserRegion, 1, 0, 0, 1, 0);
  EV(b, UserLog, 1, 0, 2, 0);
  put_uv(b, 3);
  put_mem(b, "x\0y", 3);
  freq(b);
}

/* Names by string ids never defined (Go prints ""), and a string defined
 * after the event naming it (Go reads all strings first). */
static void b_str_ids(tb *b) {
  open11_100(b);
  EV(b, UserRegion, 1, 0, 0, 99, 0);
  EV(b, UserRegion, 1, 0, 0, 1, 0);
  str(b, 1, "late");
  freq(b);
}

/* A stack table with id 0, no frames, a redefined id, frames naming
 * strings never defined. */
static void b_stack_odd(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Stack, 0, 1, 5, 77, 88, 9);
  EV(b, Stack, 3, 0);
  EV(b, Stack, 4, 2, 1, 0, 0, 0, 2, 0, 0, 0);
  EV(b, Stack, 4, 1, 9, 0, 0, 0);
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, HeapAlloc, 1, 5);
  freq(b);
}

/* 1.19 CPU samples [tick diff, absolute ticks, P or -1, G, stack]: Go
 * advances the batch's ticks by the diff, stamps the sample with the
 * absolute ticks, takes P and G from the arguments (and prints them as
 * arguments too, with ts zeroed) and orders samples by their ticks. */
static void b_cpusample(tb *b) {
  header(b, "go 1.19 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, HeapAlloc, 10, 5);
  EV(b, CPUSample, 5, 150, 0, 0, 0);
  EV(b, CPUSample, 5, 90, UINT64_MAX, 7, 0);
  EV(b, CPUSample, 5, 120, 3, 0, 0);
  EV(b, HeapAlloc, 10, 6);
  freq(b);
}

/* What the timer goroutine (9) unblocks goes to Go's TimerP. */
static void b_timer(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, TimerGoroutine, 9);
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoCreate, 1, 9, 0, 0);
  EV(b, GoStart, 1, 1, 1);
  EV(b, GoBlock, 1, 0);
  EV(b, GoStart, 1, 9, 1);
  EV(b, GoUnblock, 1, 1, 2, 0);
  EV(b, GoEnd, 1);
  freq(b);
}

/* A futile wakeup: Go drops the unblock, start, FutileWakeup and block. */
static void b_futile(tb *b) {
  open11_100(b);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoCreate, 1, 2, 0, 0);
  EV(b, GoStart, 1, 1, 1);
  EV(b, GoBlock, 1, 0);
  EV(b, GoStart, 1, 2, 1);
  EV(b, GoUnblock, 1, 1, 2, 0);
  EV(b, GoEnd, 1);
  EV(b, GoStart, 1, 1, 3);
  EV(b, FutileWakeup, 1);
  EV(b, GoBlock, 1, 0);
  freq(b);
}

/* GoStartLocal and GoUnblockLocal read as GoStart and GoUnblock. */
static void b_local(tb *b) {
  open11_100(b);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoStartLocal, 1, 1);
  EV(b, GoBlock, 1, 0);
  EV(b, GoUnblockLocal, 1, 1, 0);
  EV(b, GoStartLocal, 1, 1);
  EV(b, GoEnd, 1);
  freq(b);
}

/* A region end with no start, a task end of an unknown task, a label. */
static void b_orphans(tb *b) {
  header(b, "go 1.11 trace");
  str(b, 1, "r");
  str(b, 2, "GC (idle)");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, UserRegion, 1, 0, 1, 1, 0);
  EV(b, UserTaskEnd, 1, 5, 0);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoStartLabel, 1, 1, 1, 2);
  EV(b, GoEnd, 1);
  freq(b);
}

/* A syscall exit with its real ticks (105), written later (at 111): Go
 * stamps it with the real ticks and sorts it back before the HeapAlloc at
 * 107. Then a G found in a syscall at start, exiting at its real ticks. */
static void b_sysexit_ticks(tb *b) {
  open11_100(b);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoStart, 1, 1, 1);
  EV(b, GoSysCall, 1, 0);
  EV(b, GoSysBlock, 1);
  EV(b, HeapAlloc, 3, 5);
  EV(b, GoSysExit, 4, 1, 2, 105);
  EV(b, GoStart, 1, 1, 3);
  EV(b, GoEnd, 1);
  EV(b, GoCreate, 1, 2, 0, 0);
  EV(b, GoInSyscall, 1, 2);
  EV(b, GoSysExit, 10, 2, 2, 120);
  freq(b);
}

/* Go 1.19's ErrTimeOrder for a frequency that is negative as int64. */
static void b_freq_negative(tb *b) {
  open11_100(b);
  EV(b, HeapAlloc, 3, 5);
  MARK(b);
  EV(b, Frequency, UINT64_MAX);
  END(b);
}

/* A second EvFrequency of 0 after a good one. */
static void b_freq_then_0(tb *b) {
  open11_100(b);
  EV(b, HeapAlloc, 3, 5);
  EV(b, Frequency, 1000);
  MARK(b);
  EV(b, Frequency, 0);
  END(b);
}

/* A syscall exit whose real ticks precede the block. */
static void b_sysexit_early(tb *b) {
  open11_100(b);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoStart, 1, 1, 1);
  EV(b, GoSysCall, 1, 0);
  EV(b, GoSysBlock, 1);
  EV(b, GoSysExit, 5, 1, 2, 50);
  freq(b);
}

/* A syscall exit with real ticks of a G that blocked on something else. */
static void b_sysexit_stray(tb *b) {
  open11_100(b);
  EV(b, GoCreate, 1, 1, 0, 0);
  EV(b, GoStart, 1, 1, 1);
  EV(b, GoBlock, 1, 0);
  EV(b, GoSysExit, 5, 1, 2, 150);
  freq(b);
}

/* Ticks that overflow int64 as Go adds them. */
static void b_ticks_overflow(tb *b) {
  header(b, "go 1.11 trace");
  EV(b, Batch, 0, 0);
  EV(b, ProcStart, 0, 1);
  EV(b, HeapAlloc, (uint64_t)1 << 62, 5);
  EV(b, HeapAlloc, (uint64_t)1 << 62, 6);
  EV(b, Frequency, 1);
}

/* ---- version differences and headers -------------------------------------- */

/* Before 1.10 STW was per P: two Ps in STW at once is fine in 1.9 ...
 * (Like every trace here that Go accepts, no two Ps have events at the same
 * tick: Go's order of those depends on its map iteration.) */
static void b_stw_per_p_19(tb *b) {
  header(b, "go 1.9 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, GCSTWStart, 1);
  EV(b, Batch, 1, 200);
  EV(b, ProcStart, 0, 2);
  EV(b, GCSTWStart, 2);
  EV(b, GCSTWDone, 1);
  EV(b, Batch, 0, 300);
  EV(b, GCSTWDone, 1);
  freq(b);
}

/* ... and not from 1.10 on (where STW has a kind). */
static void b_stw_global_110(tb *b) {
  header(b, "go 1.10 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, GCSTWStart, 1, 0);
  EV(b, Batch, 1, 100);
  EV(b, ProcStart, 0, 2);
  MARK(b);
  EV(b, GCSTWStart, 2, 0);
  END(b);
  EV(b, GCSTWDone, 1);
  freq(b);
}

/* GCSweepDone had no arguments before 1.9 ... */
static void b_sweepdone_17(tb *b) {
  header(b, "go 1.7 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, GCSweepStart, 1, 0);
  EV(b, GCSweepDone, 1);
  freq(b);
}

/* ... so 1.9's two are too many in 1.7. */
static void b_sweepdone_17_args(tb *b) {
  header(b, "go 1.7 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, GCSweepStart, 1, 0);
  MARK(b);
  EV(b, GCSweepDone, 1, 5, 6);
  END(b);
  freq(b);
}

/* GoStartLabel exists from 1.8 on. */
static void b_label_17(tb *b) {
  header(b, "go 1.7 trace");
  str(b, 1, "x");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  EV(b, GoCreate, 1, 1, 0, 0);
  MARK(b);
  EV(b, GoStartLabel, 1, 1, 1, 1);
  END(b);
  freq(b);
}

static void b_header_1_100(tb *b) {
  MARK(b);
  put_mem(b, "go 1.100 trace\0\0", 16);
  END(b);
  EV(b, Batch, 0, 100);
  freq(b);
}

static void b_header_2_0(tb *b) {
  MARK(b);
  header(b, "go 2.0 trace");
  END(b);
  EV(b, Batch, 0, 100);
  freq(b);
}

static void b_header_1_011(tb *b) {
  MARK(b);
  header(b, "go 1.011 trace");
  END(b);
  EV(b, Batch, 0, 100);
  freq(b);
}

/* A header alone: read, and empty. */
static void b_header_only(tb *b) {
  header(b, "go 1.5 trace");
}

/* Mark assists per G: a second start before the done ... */
static void b_mark_assist_twice(tb *b) {
  header(b, "go 1.9 trace");
  EV(b, Batch, 0, 100);
  EV(b, ProcStart, 0, 1);
  create_start(b, 1);
  EV(b, GCMarkAssistStart, 1, 0);
  MARK(b);
  EV(b, GCMarkAssistStart, 1, 0);
  END(b);
  freq(b);
}

/* ... while a done without a start is fine (tracing began during it). A
 * Gomaxprocs, and an unblock of a G blocked on the network, which goes to
 * Go's NetpollP. */
static void b_assist_gomaxprocs_netpoll(tb *b) {
  header(b, "go 1.9 trace");
  EV(b, Batch, 0, 100);
  EV(b, Gomaxprocs, 1, 8, 0);
  EV(b, ProcStart, 0, 1);
  create_start(b, 1);
  EV(b, GCMarkAssistDone, 1);
  EV(b, GoBlockNet, 1, 0);
  EV(b, GoUnblock, 1, 1, 2, 0);
  freq(b);
}

/* GoWaiting is for a G just created (the snapshot at trace start). */
static void b_gowaiting_late(tb *b) {
  open11(b);
  create_start(b, 1);
  EV(b, GoWaiting, 1, 1);
  freq(b);
}

#define READVAL_0 "readVal returns offset 0 on a failure: Go says \"argument at offset 0\""
#define AFTER_VALUE "Go names the offset after the value it read, in decimal"
#define STRING_BYTES "Go names the offset of the string's bytes, in decimal"
#define LOST_ERROR                                                                 \
  "Go's readTrace drops readStr's error: the next read overwrites it, so Go goes " \
  "on (and reports no EvFrequency, or parses the string's bytes as events)"

static const tcase cases[] = {
    {"valid", b_valid, NULL, 0, 0, GO_SAME, NULL},
    {"header_truncated", b_header_truncated, "failed to read header", 0, 0, GO_SAME, NULL},
    {"header_bad", b_header_bad, "not a trace file", 0, 0, GO_SAME, NULL},
    {"header_version", b_header_version, "unsupported trace file version 1.6", 0, 0, GO_SAME, NULL},
    {"trunc_event", b_trunc_event, "failed to read", 0, 0, GO_OFFSETS, READVAL_0},
    {"trunc_varint", b_trunc_varint, "failed to read", 0, 0, GO_OFFSETS, READVAL_0},
    {"trunc_long_event", b_trunc_long_event, "failed to read", 0, 0, GO_OFFSETS, READVAL_0},
    {"trunc_string", b_trunc_string, "failed to read", 0, 0, GO_OFFSETS, STRING_BYTES},
    {"trunc_string_bytes", b_trunc_string_bytes, "failed to read", 0, 0, GO_SAME, NULL},
    {"trunc_log_string", b_trunc_log_string, "failed to read", 0, 0, GO_DIFFERS, LOST_ERROR},
    {"log_string_too_long", b_log_string_too_long, "is too large", 0, 1, GO_DIFFERS, LOST_ERROR},
    {"varint_long", b_varint_long, "bad value at offset", 0, 0, GO_OFFSETS, READVAL_0},
    {"varint_long_string", b_varint_long_string, "bad value at offset", 0, 0, GO_SAME, NULL},
    {"string_too_long", b_string_too_long, "too large length 1000001", 0, 1, GO_OFFSETS,
     AFTER_VALUE},
    {"string_huge_claim", b_string_huge_claim, "failed to read", 0, 1, GO_OFFSETS, STRING_BYTES},
    {"string_id0", b_string_id0, "has invalid id 0", 0, 0, GO_OFFSETS, AFTER_VALUE},
    {"string_dup", b_string_dup, "has duplicate id 1", 0, 0, GO_OFFSETS, AFTER_VALUE},
    {"string_len0", b_string_len0, "has invalid length 0", 0, 0, GO_OFFSETS, AFTER_VALUE},
    {"wrong_length", b_wrong_length, "event has wrong length", 0, 0, GO_SAME, NULL},
    {"huge_event_length", b_huge_event_length, "failed to read", 0, 1, GO_OFFSETS, READVAL_0},
    {"wrong_nargs", b_wrong_nargs, "ProcStart has wrong number of arguments", 0, 0, GO_SAME, NULL},
    {"wrong_nargs_long", b_wrong_nargs_long, "GoCreate has wrong number of arguments", 0, 0,
     GO_SAME, NULL},
    {"unknown_type", b_unknown_type, "unknown event type 50", 0, 0, GO_SAME, NULL},
    {"unknown_type0", b_unknown_type0, "unknown event type 0", 0, 0, GO_SAME, NULL},
    {"type_too_new", b_type_too_new, "unknown event type 49", 0, 0, GO_SAME, NULL},
    {"stack_too_deep", b_stack_too_deep, "EvStack has bad number of frames", 0, 0, GO_SAME, NULL},
    {"stack_frames_missing", b_stack_frames_missing, "EvStack has wrong number of arguments", 0, 1,
     GO_SAME, NULL},
    {"stack_frames_truncated", b_stack_frames_truncated, "failed to read", 0, 1, GO_OFFSETS,
     READVAL_0},
    {"no_frequency", b_no_frequency, "no EvFrequency event", ANY, 0, GO_SAME, NULL},
    {"frequency0", b_frequency0, "time stamps out of order", 0, 0, GO_SAME, NULL},
    {"empty", b_empty, "trace is empty", ANY, 0, GO_SAME, NULL},
    {"empty_no_batch", b_empty_no_batch, "trace is empty", ANY, 0, GO_SAME, NULL},
    {"bad_seq", b_bad_seq, "no consistent ordering of events possible", ANY, 0, GO_SAME, NULL},
    {"bad_seq_unblock", b_bad_seq_unblock, "no consistent ordering of events possible", ANY, 0,
     GO_SAME, NULL},
    {"time_back", b_time_back, "time stamps out of order", ANY, 0, GO_SAME, NULL},
    {"start_not_runnable", b_start_not_runnable, "g 5 is not runnable before start", 0, 0, GO_SAME,
     NULL},
    {"goend_g0", b_goend_g0, "g 0 did GoEnd", 0, 0, GO_SAME, NULL},
    {"procstop_running", b_procstop_running, "p 0 is running a goroutine 1 during stop", 0, 0,
     GO_SAME, NULL},
    {"procstart_twice", b_procstart_twice, "p 0 is running before start", 0, 0, GO_SAME, NULL},
    {"gcdone_alone", b_gcdone_alone, "bogus GC end", 0, 0, GO_SAME, NULL},
    {"gcstart_twice", b_gcstart_twice, "previous GC is not ended before a new one", 0, 0, GO_SAME,
     NULL},
    {"region_mismatch", b_region_mismatch, "misuse of region in goroutine 0", 0, 0, GO_SAME, NULL},
    {"region_mode", b_region_mode, "invalid user region mode", 0, 0, GO_SAME, NULL},
    {"task_dup", b_task_dup, "task id conflicts (id:7)", 0, 0, GO_SAME, NULL},
    {"stw_kind", b_stw_kind, "unknown STW kind 2", 0, 0, GO_SAME, NULL},
    {"g_exists", b_g_exists, "g 1 already exists", 0, 0, GO_SAME, NULL},
    {"freq_negative", b_freq_negative, "time stamps out of order", 0, 0, GO_SAME, NULL},
    {"freq_then_0", b_freq_then_0, "time stamps out of order", 0, 0, GO_SAME, NULL},
    {"sysexit_early", b_sysexit_early, "time stamps out of order", ANY, 0, GO_SAME, NULL},
    {"sysexit_stray", b_sysexit_stray, "stray syscall exit", ANY, 0, GO_SAME, NULL},
    {"ticks_overflow", b_ticks_overflow, "time stamps out of order", ANY, 0, GO_SAME, NULL},
    {"stw_global_110", b_stw_global_110, "previous STW is not ended before a new one", 0, 0,
     GO_SAME, NULL},
    {"sweepdone_17_args", b_sweepdone_17_args, "GCSweepDone has wrong number of arguments", 0, 0,
     GO_SAME, NULL},
    {"label_17", b_label_17, "unknown event type 41", 0, 0, GO_SAME, NULL},
    {"header_1_100", b_header_1_100, "unsupported trace file version 1.100", 0, 0, GO_SAME, NULL},
    {"header_2_0", b_header_2_0, "not a trace file", 0, 0, GO_SAME, NULL},
    {"header_1_011", b_header_1_011, "not a trace file", 0, 0, GO_SAME, NULL},
    {"header_only", b_header_only, "trace is empty", ANY, 0, GO_SAME, NULL},
    {"mark_assist_twice", b_mark_assist_twice, "previous mark assist is not ended before a new one",
     0, 0, GO_SAME, NULL},
    {"gowaiting_late", b_gowaiting_late, "no consistent ordering of events possible", ANY, 0,
     GO_SAME, NULL},
    /* Traces Go reads: their events must print as Go prints them. */
    {"stw_per_p_19", b_stw_per_p_19, NULL, 0, 0, GO_SAME, NULL},
    {"sweepdone_17", b_sweepdone_17, NULL, 0, 0, GO_SAME, NULL},
    {"assist_gomaxprocs_netpoll", b_assist_gomaxprocs_netpoll, NULL, 0, 0, GO_SAME, NULL},
    {"ticks_wrap", b_ticks_wrap, NULL, 0, 0, GO_SAME, NULL},
    {"p_values", b_p_values, NULL, 0, 0, GO_SAME, NULL},
    {"freq_huge", b_freq_huge, NULL, 0, 0, GO_SAME, NULL},
    {"freq_odd", b_freq_odd, NULL, 0, 0, GO_SAME, NULL},
    {"freq_twice", b_freq_twice, NULL, 0, 0, GO_SAME, NULL},
    {"freq_first", b_freq_first, NULL, 0, 0, GO_SAME, NULL},
    {"no_batch", b_no_batch, NULL, 0, 0, GO_SAME, NULL},
    {"str_bytes", b_str_bytes, NULL, 0, 0, GO_SAME, NULL},
    {"str_ids", b_str_ids, NULL, 0, 0, GO_SAME, NULL},
    {"stack_odd", b_stack_odd, NULL, 0, 0, GO_SAME, NULL},
    {"cpusample", b_cpusample, NULL, 0, 0, GO_SAME, NULL},
    {"str_nul", b_str_nul, NULL, 0, 0, GO_SAME, NULL},
    {"timer", b_timer, NULL, 0, 0, GO_SAME, NULL},
    {"futile", b_futile, NULL, 0, 0, GO_SAME, NULL},
    {"local", b_local, NULL, 0, 0, GO_SAME, NULL},
    {"orphans", b_orphans, NULL, 0, 0, GO_SAME, NULL},
    {"sysexit_ticks", b_sysexit_ticks, NULL, 0, 0, GO_SAME, NULL},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* ---- running a case -------------------------------------------------------- */

typedef struct result {
  int failed; /* the reader rejected the trace */
  ctrace_parse_error err;
  uint64_t alloc_total, alloc_largest;
} result;

static void run_reader(const uint8_t *d, size_t n, result *res) {
  ctrace_reader *r = NULL;
  ctrace_trace_info info;
  memset(res, 0, sizeof *res);
  memset(&res->err, 0, sizeof res->err);
  alloc_total = alloc_largest = 0;
  counting = 1;
  if (ctrace_reader_open_mem(d, n, &r, &res->err) != 0) {
    res->failed = 1;
  } else {
    if (ctrace_reader_check(r, &info, &res->err) != 0) res->failed = 1;
    ctrace_reader_close(r);
  }
  counting = 0;
  res->alloc_total = alloc_total;
  res->alloc_largest = alloc_largest;
}

/* What the reader allocates for a trace it reads through to the end and
 * rejects as empty (header, batch, frequency): its fixed tables. */
static result baseline;

static int setup_baseline(void **state) {
  static tb b;
  memset(&b, 0, sizeof b);
  b_empty(&b);
  run_reader(b.d, b.n, &baseline);
  return 0;
}

/* What a frugal case may allocate beyond the baseline: a few strings and
 * index entries, far below what its claims would take (a 1e6-byte string,
 * 1000 frames of 32 bytes, a 2^40-byte event). */
enum { FRUGAL_SLACK = 12 * 1024 };

static void test_case(void **state) {
  const tcase *c = *state;
  tb *b = calloc(1, sizeof *b);
  assert_non_null(b);
  mark = mark_end = UINT64_MAX;
  c->build(b);
  result res;
  run_reader(b->d, b->n, &res);

  if (!c->msg) {
    if (res.failed)
      fail_msg("%s: a valid trace was rejected: offset %llu: %s", c->name,
               (unsigned long long)res.err.offset, res.err.message);
    free(b);
    return;
  }
  if (!res.failed) fail_msg("%s: accepted; want an error containing \"%s\"", c->name, c->msg);
  if (!strstr(res.err.message, c->msg))
    fail_msg("%s: message \"%s\" (offset %llu) lacks \"%s\"", c->name, res.err.message,
             (unsigned long long)res.err.offset, c->msg);
  if (res.err.offset >= b->n)
    fail_msg("%s: offset %llu is not inside the file of %zu bytes (message \"%s\")", c->name,
             (unsigned long long)res.err.offset, b->n, res.err.message);
  if (c->any_offset != ANY) {
    assert_true(mark != UINT64_MAX);
    uint64_t end = mark_end < b->n ? mark_end : b->n;
    if (res.err.offset < mark || res.err.offset >= end)
      fail_msg("%s: offset %llu, want one in the record at fault, [%llu, %llu) (message \"%s\")",
               c->name, (unsigned long long)res.err.offset, (unsigned long long)mark,
               (unsigned long long)end, res.err.message);
  }
  if (c->frugal && res.alloc_total > baseline.alloc_total + FRUGAL_SLACK)
    fail_msg("%s: allocated %llu bytes (largest %llu) for a %zu-byte file; an empty trace takes "
             "%llu (largest %llu)",
             c->name, (unsigned long long)res.alloc_total, (unsigned long long)res.alloc_largest,
             b->n, (unsigned long long)baseline.alloc_total,
             (unsigned long long)baseline.alloc_largest);
  free(b);
}

/* Every prefix of the valid trace, and every single-byte change of it,
 * is either read or rejected with an offset inside the file: no crash, no
 * error without a message. */
static void test_mutations(void **state) {
  static tb b;
  memset(&b, 0, sizeof b);
  b_valid(&b);
  result res;
  for (size_t n = 0; n < b.n; n++) {
    run_reader(b.d, n, &res);
    if (!res.failed) fail_msg("prefix of %zu of %zu bytes accepted", n, b.n);
    if (!res.err.message[0]) fail_msg("prefix of %zu bytes: empty message", n);
    if (n > 0 && res.err.offset >= n)
      fail_msg("prefix of %zu bytes: offset %llu outside (%s)", n,
               (unsigned long long)res.err.offset, res.err.message);
  }
  static const uint8_t values[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xc1, 0x43, 0x25};
  for (size_t i = 0; i < b.n; i++) {
    for (size_t k = 0; k < sizeof values; k++) {
      static tb m;
      m = b;
      if (m.d[i] == values[k]) continue;
      m.d[i] = values[k];
      run_reader(m.d, m.n, &res);
      if (res.failed && !res.err.message[0])
        fail_msg("byte %zu set to 0x%02x: empty message", i, values[k]);
      if (res.failed && res.err.offset >= m.n)
        fail_msg("byte %zu set to 0x%02x: offset %llu outside (%s)", i, values[k],
                 (unsigned long long)res.err.offset, res.err.message);
    }
  }
}

/* ---- --write DIR -------------------------------------------------------------- */

/* The events of an accepted trace as ctrace_event_format prints them, one
 * a line, into f. */
static int write_dump(const uint8_t *d, size_t n, FILE *f) {
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (ctrace_reader_open_mem(d, n, &r, &err) != 0) return -1;
  if (ctrace_reader_check(r, &info, &err) != 0) {
    ctrace_reader_close(r);
    return -1;
  }
  ctrace_event ev;
  char line[256], *big = NULL;
  while (ctrace_reader_next(r, &ev) == 1) {
    int len = ctrace_event_format(&ev, line, sizeof line);
    const char *p = line;
    if (len >= (int)sizeof line) {
      free(big);
      big = malloc((size_t)len + 1);
      if (!big) break;
      ctrace_event_format(&ev, big, (size_t)len + 1);
      p = big;
    }
    fwrite(p, 1, (size_t)len, f);
    fputc('\n', f);
  }
  free(big);
  ctrace_reader_close(r);
  return 0;
}

static int write_file(const char *dir, const char *name, const char *ext, const void *d,
                      size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(d, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "test_malformed: %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int write_cases(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "test_malformed: %s: %s\n", dir, strerror(errno));
    return 1;
  }
  for (size_t i = 0; i < NCASES; i++) {
    const tcase *c = &cases[i];
    static tb b;
    memset(&b, 0, sizeof b);
    c->build(&b);
    result res;
    run_reader(b.d, b.n, &res);
    char said[1024];
    int len = res.failed ? snprintf(said, sizeof said, "%llu\t%s\n",
                                    (unsigned long long)res.err.offset, res.err.message)
                         : snprintf(said, sizeof said, "ok\n");
    if (write_file(dir, c->name, "trace", b.d, b.n) ||
        write_file(dir, c->name, "ctrace", said, (size_t)len) ||
        (c->go == GO_OFFSETS && write_file(dir, c->name, "offsets", c->why, strlen(c->why))) ||
        (c->go == GO_DIFFERS && write_file(dir, c->name, "differs", c->why, strlen(c->why))) ||
        (c->go == CTRACE_BUG && write_file(dir, c->name, "bug", c->why, strlen(c->why))))
      return 1;
    if (!res.failed) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.dump", dir, c->name);
      FILE *f = fopen(path, "wb");
      if (!f || write_dump(b.d, b.n, f) != 0 || fclose(f) != 0) {
        fprintf(stderr, "test_malformed: %s: cannot write the dump\n", path);
        return 1;
      }
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write") == 0) return write_cases(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: %s [--write DIR]\n", argv[0]);
    return 2;
  }
  struct CMUnitTest tests[NCASES + 1];
  for (size_t i = 0; i < NCASES; i++) {
    struct CMUnitTest t = {cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
    tests[i] = t;
  }
  struct CMUnitTest m = {"mutations", test_mutations, NULL, NULL, NULL};
  tests[NCASES] = m;
  return _cmocka_run_group_tests("reader_malformed", tests, NCASES + 1, setup_baseline, NULL);
}
