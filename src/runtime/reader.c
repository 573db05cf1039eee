/* ctrace_read: hands out the header, the full buffers in the order they
 * were queued, the frequency footer, then the end.
 *
 * Buffers are queued FIFO; a P's batches therefore reach the file in time
 * order, which Go's reader requires.
 *
 * A reader that falls behind (a slow pipe, a stalled consumer) would make
 * the queue, and the traced program's memory, grow without bound. Past
 * max_pending bytes queued, tracing goes off at once
 * (ctrace__trace_capped). In the classic format the trace ends there:
 * nothing more is recorded, and the next ctrace_stop closes it as usual,
 * so it stays whole and valid, and says so (CTRACE_ECAPPED,
 * ctrace_stats.capped). That format cannot drop a stretch from its
 * middle: its readers need every event since the start to follow each
 * goroutine's state. In the generation format a gap begins instead: the
 * generation tracing went off in is closed and sealed (ctrace__gap_begin),
 * the generations that would have followed are never written, and once
 * the reader has handed out the last one before the gap, tracing goes on
 * in the next (ctrace__gap_end), with a log that says how long it paused.
 * The buffer last returned to the reader goes back to the pool on its
 * next call (so the caller's pointer stays valid until then).
 *
 * In the generation format the reader hands out one generation at a time:
 * full buffers queue by generation parity, and the next generation's go
 * out once the current one is sealed (every buffer of it queued) and
 * drained. The reader also ends generations (ctrace__try_advance), every
 * GEN_NS or GEN_BYTES, whichever comes first, and only once it has
 * handed out the previous one whole: so at most two are ever held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader.h"
#include "runtime/env.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static ctrace__buf *head[2], *tail[2]; /* full buffers, by generation parity */
static uint64_t rgen;              /* generation being handed out (generation format) */
static uint64_t sealed;            /* last generation wholly queued */
static uint64_t gen_ns;            /* when the writing generation began */
static size_t gen_bytes[2];        /* bytes queued for a generation */
static size_t pending;             /* their bytes */
static bool capped;                /* pending passed max_pending (since the last gap) */
static bool gap;                   /* generation format: in a gap begun at the cap */
static ctrace__buf *reading;       /* returned by the last read */
static bool open_;                 /* a trace is being produced or drained */
static bool header_due, closing, footer_done, drained;
static bool reader_active;
static bool paused;                /* reads return NULL (ctrace__reader_pause) */
static bool abandoned;             /* no reader will come (ctrace__reader_abandon) */
static void (*inline_write)(void *, const void *, size_t); /* the close reads (ctrace__reader_inline) */
static void *inline_arg;
static uint64_t frequency;
static uint8_t footer[1 + 2 * CTRACE_MAX_VARINT];

/* Go 1.22's own period (CTRACE_GEN_MS sets another); the size bounds
 * what a generation holds in its tables and, for a reader that keeps up,
 * in the queue. */
#define GEN_NS 1000000000ull
#define GEN_BYTES (16u << 20)
static uint64_t gen_period = GEN_NS;
static size_t gen_max = GEN_BYTES;
/* A generation this many times gen_max is cut even inside a stop-the-world
 * (cut_forced), and past it a sink that holds generations pauses tracing
 * (ctrace__queue_full): the bound on what the flight recorder holds of it. */
#define GEN_BOUND 4
static bool holds;                 /* the sink holds generations (ctrace__sink) */
/* The writing generation is to end as soon as the rules allow
 * (ctrace__reader_advance_now), and, with force, inside a stop-the-world. */
static bool advance_now, advance_force;
/* Of each generation, by parity: when it began to be written, and what
 * ctrace__gc_seal said at its seal. */
static uint64_t began[2], began_ticks[2], gc_unstated[2];
/* By parity: when each generation's threads were last in it (a thread
 * that saw it before the next began may write into it until then). */
static uint64_t ended[2];
/* By parity, the last generation a batch of events was queued for. */
static uint64_t event_gen[2];

void ctrace__queue_full(ctrace__buf *b) {
  b->link = NULL;
  int q = 0;
  bool events = false;
  if (ctrace__genfmt()) {
    events = ctrace__close_batch2(b);
    q = b->gen & 1;
  }
  pthread_mutex_lock(&mu);
  /* A batch of a generation handed out already would go out with the
   * next one of its parity, where Go's reader refuses it ("generations
   * out of order"): a thread leaving amid the cap's gap once queued an
   * empty one so, in 1 flight test in some tens. Dropped; one with
   * events is counted lost (a batch, at least one event). */
  bool stale = ctrace__genfmt() && open_ && b->gen < rgen;
  if (abandoned || stale) {
    pthread_mutex_unlock(&mu);
    if (stale && events) atomic_fetch_add_explicit(&ctrace__stats.lost, 1, memory_order_relaxed);
    ctrace__buf_put(b);
    return;
  }
  if (events) event_gen[q] = b->gen;
  if (tail[q])
    tail[q]->link = b;
  else
    head[q] = b;
  tail[q] = b;
  pending += b->size;
  gen_bytes[q] += b->size;
  bool cap_now = !capped && (pending > ctrace__cfg.max_pending || (holds && gen_bytes[q] > GEN_BOUND * gen_max));
  if (cap_now) capped = true;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  if (cap_now) ctrace__trace_capped();
}

void ctrace__reader_open(uint64_t gen, size_t cut_bytes, bool hold) {
  pthread_mutex_lock(&mu);
  gen_max = cut_bytes ? cut_bytes : GEN_BYTES;
  holds = hold;
  advance_now = advance_force = false;
  rgen = gen;
  sealed = gen - 1;
  const char *ms = ctrace__getenv("CTRACE_GEN_MS");
  gen_period = ms && atoll(ms) > 0 ? (uint64_t)atoll(ms) * 1000000 : GEN_NS;
  gen_ns = ctrace__mono_ns();
  began[gen & 1] = gen_ns;
  began_ticks[gen & 1] = ctrace__ticks();
  gen_bytes[0] = gen_bytes[1] = 0;
  open_ = true;
  header_due = true;
  closing = footer_done = drained = capped = gap = paused = abandoned = false;
  pthread_mutex_unlock(&mu);
}

bool ctrace__reader_has_events(uint64_t gen) {
  pthread_mutex_lock(&mu);
  bool has = event_gen[gen & 1] == gen;
  pthread_mutex_unlock(&mu);
  return has;
}

void ctrace__reader_seal(uint64_t gen, uint64_t gc, uint64_t quiet_ns) {
  pthread_mutex_lock(&mu);
  sealed = gen;
  gc_unstated[gen & 1] = gc;
  ended[gen & 1] = quiet_ns;
  gen_ns = ctrace__mono_ns();
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* Whether a cut now may go through an open stop-the-world (events.c,
 * cut_mu): a crash's snapshot, or a generation at GEN_BOUND times its
 * size. */
static bool cut_forced(void) { return advance_force || gen_bytes[rgen & 1] >= GEN_BOUND * gen_max; }

/* Whether the writing generation is due to end: it is the one being
 * handed out (the one before is out whole), and old or big enough. Not
 * while a stop-the-world is open, unless forced. */
static bool advance_due(void) {
  uint64_t s = atomic_load_explicit(&ctrace__state, memory_order_relaxed);
  if (closing || !(s & 1) || s >> 1 != rgen || sealed + 1 != rgen) return false;
  if (ctrace__stw_shown() && !cut_forced()) return false;
  return advance_now || ctrace__mono_ns() - gen_ns >= gen_period || gen_bytes[rgen & 1] >= gen_max;
}

void ctrace__reader_began(uint64_t gen, uint64_t ns, uint64_t ticks) {
  pthread_mutex_lock(&mu);
  began[gen & 1] = ns;
  began_ticks[gen & 1] = ticks;
  /* Counted from here, before any thread can write into gen: zeroed at
   * the previous generation's seal instead, the count forgot what gen's
   * threads queued while that seal waited for a late writer (up to the
   * queue's cap), and a generation outgrew GEN_BOUND by as much. */
  gen_bytes[gen & 1] = 0;
  pthread_mutex_unlock(&mu);
}

void ctrace__reader_advance_now(bool force) {
  pthread_mutex_lock(&mu);
  advance_now = true;
  advance_force |= force;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

void ctrace__reader_close_and_wait(uint64_t freq) {
  pthread_mutex_lock(&mu);
  frequency = freq;
  closing = true;
  pthread_cond_broadcast(&cv);
  void (*write)(void *, const void *, size_t) = inline_write;
  void *arg = inline_arg;
  inline_write = NULL;
  if (write && !abandoned) {
    pthread_mutex_unlock(&mu);
    const void *p;
    size_t n;
    while ((p = ctrace_read(&n)) != NULL) write(arg, p, n);
    pthread_mutex_lock(&mu);
  }
  while (!drained && !abandoned) pthread_cond_wait(&done_cv, &mu);
  open_ = false;
  pthread_mutex_unlock(&mu);
}

void ctrace__reader_inline(void (*write)(void *arg, const void *p, size_t n), void *arg) {
  pthread_mutex_lock(&mu);
  inline_write = write;
  inline_arg = arg;
  pthread_mutex_unlock(&mu);
}

void ctrace__reader_pause(bool on) {
  pthread_mutex_lock(&mu);
  paused = on;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

void ctrace__reader_abandon(void) {
  pthread_mutex_lock(&mu);
  abandoned = true;
  ctrace__buf *list = NULL;
  for (int q = 0; q < 2; q++) {
    if (tail[q]) {
      tail[q]->link = list;
      list = head[q];
    }
    head[q] = tail[q] = NULL;
  }
  pending = 0;
  pthread_cond_broadcast(&done_cv);
  pthread_mutex_unlock(&mu);
  while (list) {
    ctrace__buf *next = list->link;
    ctrace__buf_put(list);
    list = next;
  }
}

/* Fork child: the queued buffers are the parent's trace, and no trace is
 * being read here. */
void ctrace__reader_fork_child(void) {
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&cv, NULL);
  pthread_cond_init(&done_cv, NULL);
  head[0] = head[1] = tail[0] = tail[1] = reading = NULL;
  pending = 0;
  open_ = header_due = closing = footer_done = drained = reader_active = capped = gap = false;
  paused = abandoned = false;
  inline_write = NULL;
}

/* ctrace_read, and, with take, the flight recorder's read: *take gets
 * the buffer handed out, the caller's from then on, the header is left
 * out, and the end of a generation handed out whole returns END_OF_GEN
 * with *info. */
static const char END_OF_GEN[1];

static const void *next(size_t *len, ctrace__buf **take, ctrace__gen_info *info) {
  *len = 0;
  pthread_mutex_lock(&mu);
  if (reader_active) {
    pthread_mutex_unlock(&mu);
    return NULL;
  }
  reader_active = true;
  if (reading) {
    ctrace__buf_put(reading);
    reading = NULL;
  }
  const void *out = NULL;
  while (open_ && !drained && !paused) {
    if (header_due) {
      header_due = false;
      if (take) continue;
      /* 1.19 only adds CPU samples: the oldest header that reads the trace.
       * Of the current format, 1.22's is read by Go 1.22 and every Go
       * since; 1.23's only from 1.23 on. */
      out = ctrace__genfmt()     ? "go 1.22 trace\0\0\0"
            : ctrace__cfg.cpu_hz ? "go 1.19 trace\0\0\0"
                                 : CTRACE_HEADER;
      *len = CTRACE_HEADER_LEN;
      break;
    }
    /* Checked before each buffer: a generation filling faster than it
     * is handed out (a flight recorder's, kept in memory) is cut at its
     * size all the same. */
    if (ctrace__genfmt() && advance_due()) {
      /* The requests this end serves are taken before it, not cleared
       * after: one made while it runs (a snapshot wanting the generation
       * that has just begun) waited for the next period, a second, when
       * it was cleared with them. */
      bool force = cut_forced(), now = advance_now, forced = advance_force;
      advance_now = advance_force = false;
      pthread_mutex_unlock(&mu);
      bool done = ctrace__try_advance(force);
      pthread_mutex_lock(&mu);
      if (!done) advance_now |= now, advance_force |= forced;
    }
    int q = ctrace__genfmt() ? rgen & 1 : 0;
    if (head[q]) {
      ctrace__buf *b = head[q];
      head[q] = b->link;
      if (!head[q]) tail[q] = NULL;
      pending -= b->size;
      size_t n = (size_t)(b->pos - b->data);
      if (n == 0) { /* nothing was written into it */
        ctrace__buf_put(b);
        continue;
      }
      if (take)
        *take = b;
      else
        reading = b;
      out = b->data;
      *len = n;
      break;
    }
    if (ctrace__genfmt()) {
      if (sealed >= rgen) {
        rgen++; /* the next generation's turn */
        if (!take) continue;
        uint64_t g = rgen - 1;
        *info = (ctrace__gen_info){g, began[g & 1], began_ticks[g & 1], ended[g & 1], gc_unstated[g & 1]};
        out = END_OF_GEN;
        break;
      }
      if (closing) { /* set once the last generation is sealed */
        drained = true;
        pthread_cond_broadcast(&done_cv);
        break;
      }
      /* Past the cap: the generation tracing went off in is sealed, and,
       * once it is out whole, tracing goes on in the next. */
      if (capped && !gap) {
        pthread_mutex_unlock(&mu);
        bool begun = ctrace__gap_begin();
        pthread_mutex_lock(&mu);
        if (begun) {
          gap = true;
          continue;
        }
      } else if (gap && sealed < rgen) {
        pthread_mutex_unlock(&mu);
        bool ended = ctrace__gap_end();
        pthread_mutex_lock(&mu);
        if (ended) {
          gap = capped = false;
          gen_ns = ctrace__mono_ns();
          continue;
        }
      }
      /* The cut's precision, or, with CPU samples, the period they are
       * drained at (below), if shorter. */
      uint64_t wait = gen_period / 10, ms = (uint64_t)ctrace__prof_drain_ms();
      if (ms && ms * 1000000u < wait) wait = ms * 1000000u;
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      uint64_t ns = (uint64_t)until.tv_nsec + wait;
      until.tv_sec += (time_t)(ns / 1000000000u);
      until.tv_nsec = (long)(ns % 1000000000u);
      if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT && ms) {
        pthread_mutex_unlock(&mu);
        ctrace__prof_drain_all();
        pthread_mutex_lock(&mu);
      }
      continue;
    }
    if (closing && !footer_done) {
      footer_done = true;
      uint8_t *q = footer;
      *q++ = CTRACE_EV_Frequency | 0 << CTRACE_ARG_COUNT_SHIFT;
      q = ctrace__put_uvarint(q, frequency);
      out = footer;
      *len = (size_t)(q - footer);
      break;
    }
    if (closing) {
      drained = true;
      pthread_cond_broadcast(&done_cv);
      break;
    }
    /* The reader is woken by a full buffer or by stop, and with CPU
     * samples every few ms to drain them (not under mu: the threads lock
     * comes first). */
    long ms = ctrace__prof_drain_ms();
    if (!ms) {
      pthread_cond_wait(&cv, &mu);
      continue;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ms * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_nsec -= 1000000000L, until.tv_sec++;
    if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT) {
      pthread_mutex_unlock(&mu);
      ctrace__prof_drain_all();
      pthread_mutex_lock(&mu);
    }
  }
  if (out != END_OF_GEN) atomic_fetch_add_explicit(&ctrace__stats.bytes, *len, memory_order_relaxed);
  reader_active = false;
  pthread_mutex_unlock(&mu);
  return out;
}

const void *ctrace_read(size_t *len) { return next(len, NULL, NULL); }

int ctrace__read_flight(ctrace__buf **b, ctrace__gen_info *info) {
  size_t n;
  *b = NULL;
  const void *p = next(&n, b, info);
  return !p ? 0 : p == END_OF_GEN ? 2 : 1;
}
