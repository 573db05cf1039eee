/* The flight recorder: a trace in Go's current format kept in memory, its
 * last generations only, written out on demand (Go's
 * runtime/trace.FlightRecorder).
 *
 * A generation is self-contained (its own tables, statuses and
 * frequency), so the last few, after the header, make a valid trace. The
 * recorder's thread is the trace's reader: it takes the buffers the
 * reader hands out and keeps them, by generation, with no copy. Once a
 * generation is out whole, the oldest kept ones are dropped (their
 * buffers go back to the pool) while what remains still covers min_age,
 * and while the kept bytes pass max_bytes: the cap wins, and each
 * generation it drops younger than min_age is counted. Generations are
 * cut at a quarter of max_bytes (or the reader's usual 16 MiB), so that
 * the cap can keep a few whole. A buffer handed out mostly empty is kept
 * as a copy of its bytes (shrink), so that the cap counts events, not
 * the slack of buffers cut short.
 *
 * A snapshot first ends the generation being written, so that it holds
 * events up to the call, waits until that generation is kept, then
 * writes the header and every kept generation up to that one. The kept
 * list is locked meanwhile; the recorder's thread, which takes the lock
 * at every buffer, waits for the write to end (and the reader's queue
 * grows meanwhile, up to max_pending). One snapshot at a time: a second caller
 * gets CTRACE_EBUSY.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"

typedef struct kept {
  ctrace__gen_info info;
  size_t bytes;
  ctrace__buf *first, *last;
} kept;

/* One recorder at a time, as one trace: static, so that a snapshot or
 * stats call racing with the stop never meets freed memory. */
static struct flight {
  ctrace__sink sink; /* the tracer holds the recorder as its sink */
  pthread_t thread;
  sem_t gate;         /* opens once the trace is on, or failed to start */
  bool abort;
  uint64_t min_age_ns;
  size_t max_bytes;
  pthread_mutex_t mu; /* what follows */
  pthread_cond_t cv;  /* a generation is kept, or the trace ended */
  bool on;            /* between a start and the end of its stop */
  kept *ring;         /* mapped at the start (ring_bytes) */
  size_t ring_len;
  size_t head, n; /* oldest kept, how many */
  size_t bytes;   /* kept, and of the generation being handed out */
  uint64_t last_gen;
  uint64_t snap_ns; /* when the snapshot waiting for a generation began */
  bool ended;
  uint64_t dropped_young; /* generations younger than min_age, dropped at the cap */
  uint64_t snapshots;
  /* The generation being handed out, not yet kept: the thread's, and, over
   * a pause (ctrace__pause), the next thread's. */
  kept cur;
  _Atomic bool pausing; /* the thread is to end for a pause */
  bool running;         /* a thread to join */
  bool paused;          /* it ended for a pause: resume starts one */
} fl = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
/* One snapshot at a time; held by the stop, too, while it frees. */
static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Generations the ring holds: a kept one holds a page at least, so the
 * cap's worth, bounded for a cap of gigabytes (past that many, the
 * oldest goes, counted if young). */
static size_t ring_bytes(size_t max_bytes) {
  size_t len = max_bytes / page_size() + 2;
  if (len > (1u << 16)) len = 1u << 16;
  return len * sizeof(kept);
}

/* A buffer handed out with most of it empty (a generation's end cuts
 * every thread's buffer short, a quiet thread's holds a few events, and
 * the tables come in batches of their own) goes back to the pool, its
 * batches appended to the generation's last copy if they fit, or copied
 * to whole pages of their own: 1 ms generations of a few events would
 * otherwise hold six 64 KiB buffers each, and the default cap keep a
 * fifth of a second of them, not min_age. NULL: b's bytes joined
 * cur->last. The copies are the recorder thread's work, off the events'
 * path; mmap, as for buffers, keeps the traced program's allocator out. */
static ctrace__buf *shrink(kept *cur, ctrace__buf *b) {
  size_t used = (size_t)(b->pos - (uint8_t *)b), page = page_size();
  size_t size = (used + page - 1) & ~(page - 1);
  if (size > b->size / 2) return b;
  ctrace__buf *last = cur->last;
  size_t n = (size_t)(b->pos - b->data);
  if (last && last->size != ctrace__cfg.buffer_size && (size_t)(last->end - last->pos) >= n) {
    memcpy(last->pos, b->data, n);
    last->pos += n;
    ctrace__buf_put(b);
    return NULL;
  }
  void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return b;
  ctrace__buf *s = m;
  memcpy(s, b, used);
  s->pos = s->data + (b->pos - b->data);
  s->end = (uint8_t *)s + size;
  s->lenpos = NULL;
  s->size = size;
  ctrace__buf_put(b);
  return s;
}

/* The pool takes buffers of its own size back; shrink's copies are
 * unmapped. */
static void put_list(ctrace__buf *b) {
  while (b) {
    ctrace__buf *next = b->link;
    if (b->size == ctrace__cfg.buffer_size)
      ctrace__buf_put(b);
    else
      munmap(b, b->size);
    b = next;
  }
}

/* Under fl.mu: drops the oldest generation. */
static void drop_oldest(void) {
  kept *k = &fl.ring[fl.head];
  put_list(k->first);
  fl.bytes -= k->bytes;
  fl.head = (fl.head + 1) % fl.ring_len;
  fl.n--;
}

/* Under fl.mu: drops what the window and the cap let go, for snapshots
 * taken at now or later, never the generation keep (nor later ones). The
 * oldest goes once its threads were last in it min_age before now:
 * every event in it is older than they need (a thread that saw it before
 * the next one began may write into it a little after), and the rest
 * cover min_age. Past the cap it goes anyway, while there is more than
 * one. */
static void trim(uint64_t now, uint64_t keep) {
  while (fl.n > 1 && fl.ring[fl.head].info.gen < keep) {
    bool aged = fl.ring[fl.head].info.ended_ns + fl.min_age_ns <= now;
    if (!aged && fl.bytes <= fl.max_bytes) break;
    if (!aged) fl.dropped_young++;
    drop_oldest();
  }
}

/* Under fl.mu: the ring is full (a snapshot's wait holds the trim back,
 * or the cap is in gigabytes): the oldest goes, counted if young. */
static void make_room(uint64_t now) {
  if (fl.n < fl.ring_len) return;
  if (fl.ring[fl.head].info.ended_ns + fl.min_age_ns > now) fl.dropped_young++;
  drop_oldest();
}

/* Under fl.mu: keeps cur, the generation info tells of. A snapshot
 * waiting for it trims for its own time, which came before. */
static void keep(kept *cur, const ctrace__gen_info *info) {
  fl.last_gen = info->gen;
  if (!cur->first) return; /* a generation left out (end_generation) */
  uint64_t now = ctrace__mono_ns();
  make_room(now);
  cur->info = *info;
  fl.ring[(fl.head + fl.n) % fl.ring_len] = *cur;
  fl.n++;
  if (!fl.snap_ns) trim(now, UINT64_MAX);
}

static void *flight_main(void *arg) {
  (void)arg;
  while (sem_wait(&fl.gate) != 0) {
  }
  kept *cur = &fl.cur;
  while (!fl.abort) {
    ctrace__buf *b;
    ctrace__gen_info info;
    int r = ctrace__read_flight(&b, &info);
    if (r == 0) break;
    /* Before the lock a snapshot's write holds: cur is this thread's. */
    if (r == 1 && !(b = shrink(cur, b))) continue;
    pthread_mutex_lock(&fl.mu);
    if (r == 1) {
      b->link = NULL;
      if (cur->last)
        cur->last->link = b;
      else
        cur->first = b;
      cur->last = b;
      cur->bytes += b->size;
      fl.bytes += b->size;
    } else {
      keep(cur, &info);
      *cur = (kept){0};
      pthread_cond_broadcast(&fl.cv);
    }
    pthread_mutex_unlock(&fl.mu);
    if (r != 1) ctrace__identity_refresh(atomic_load_explicit(&ctrace__state, memory_order_relaxed) >> 1);
  }
  if (atomic_load(&fl.pausing)) return NULL; /* the next thread goes on with cur */
  /* Buffers of a generation not handed out whole (none: stop seals the
   * last one) go back. */
  pthread_mutex_lock(&fl.mu);
  fl.bytes -= cur->bytes;
  fl.ended = true;
  pthread_cond_broadcast(&fl.cv);
  pthread_mutex_unlock(&fl.mu);
  put_list(cur->first);
  *cur = (kept){0};
  return NULL;
}

/* ctrace__pause: the thread ends, what it keeps stays. Not with a crash
 * snapshot armed: its helper is a thread too. */
static int flight_pause(ctrace__sink *s) {
  (void)s;
  if (!fl.running) return 0; /* no reader left: no thread to end */
  if (ctrace__flight_crash_armed()) return CTRACE_EBUSY;
  atomic_store(&fl.pausing, true);
  ctrace__reader_pause(true);
  pthread_join(fl.thread, NULL);
  fl.running = false;
  fl.paused = true;
  atomic_store(&fl.pausing, false);
  return 0;
}

/* A new thread goes on; if none can be started, what comes is dropped,
 * and the recorder has ended. */
static int flight_resume(ctrace__sink *s) {
  (void)s;
  if (!fl.paused) return 0;
  fl.paused = false;
  ctrace__reader_pause(false);
  int rc = pthread_create(&fl.thread, NULL, flight_main, NULL);
  if (rc != 0) {
    ctrace__reader_abandon();
    pthread_mutex_lock(&fl.mu);
    fl.ended = true;
    pthread_cond_broadcast(&fl.cv);
    pthread_mutex_unlock(&fl.mu);
    return -rc;
  }
  fl.running = true;
  sem_post(&fl.gate);
  return 0;
}

static int flight_join(ctrace__sink *s) {
  (void)s;
  ctrace__flight_crash_disarm();
  if (fl.running) pthread_join(fl.thread, NULL);
  fl.running = false;
  /* What a pause's thread left, should no thread have taken it over. */
  put_list(fl.cur.first);
  fl.cur = (kept){0};
  sem_destroy(&fl.gate);
  /* After a snapshot under way, if any. */
  pthread_mutex_lock(&write_mu);
  pthread_mutex_lock(&fl.mu);
  while (fl.n) drop_oldest();
  munmap(fl.ring, ring_bytes(fl.max_bytes));
  fl.ring = NULL;
  fl.on = false;
  pthread_mutex_unlock(&fl.mu);
  pthread_mutex_unlock(&write_mu);
  return 0;
}

/* In the child of a fork: the parent's recorder is not here (its thread
 * is not, its buffers are the parent's memory, left unfreed as the rest
 * of the parent's trace is); the child may start its own. */
static void flight_fork_child(ctrace__sink *s) {
  (void)s;
  pthread_mutex_init(&fl.mu, NULL);
  pthread_cond_init(&fl.cv, NULL);
  pthread_mutex_init(&write_mu, NULL);
  fl.on = fl.running = fl.paused = false;
  fl.n = fl.head = fl.bytes = 0;
  fl.ring = NULL;
  fl.cur = (kept){0};
}

int ctrace_flight_start(const ctrace_flight_options *opts) {
  ctrace_flight_options fo = {0};
  if (opts) fo = *opts;
  ctrace_options o = {0};
  if (fo.trace) o = *fo.trace;
  if (o.format && o.format != CTRACE_FORMAT_GO122) return CTRACE_EINVAL;
  o.format = CTRACE_FORMAT_GO122;
  if (!fo.max_bytes) fo.max_bytes = CTRACE_FLIGHT_DEFAULT_MAX_BYTES;
  if (fo.max_bytes < (1u << 20)) return CTRACE_EINVAL;
  void *ring = mmap(NULL, ring_bytes(fo.max_bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) return CTRACE_ENOMEM;
  /* What is queued for the recorder's thread while it ends a generation
   * is memory too: past a quarter of the cap (at least the 1 MiB
   * ctrace_start takes), tracing pauses (a gap, ctrace_stats.capped). */
  if (!o.max_pending) o.max_pending = fo.max_bytes / 4 > (1u << 20) ? fo.max_bytes / 4 : 1u << 20;
  pthread_mutex_lock(&write_mu);
  pthread_mutex_lock(&fl.mu);
  bool busy = fl.on;
  if (!busy) {
    fl.on = true;
    fl.sink = (ctrace__sink){.join = flight_join,
                             .fork_child = flight_fork_child,
                             .pause = flight_pause,
                             .resume = flight_resume,
                             .gen_bytes = fo.max_bytes / 4 < (16u << 20) ? fo.max_bytes / 4 : 0,
                             .holds = true};
    fl.min_age_ns = (fo.min_age_ms ? fo.min_age_ms : CTRACE_FLIGHT_DEFAULT_MIN_AGE_MS) * 1000000ull;
    fl.max_bytes = fo.max_bytes;
    fl.ring = ring;
    fl.ring_len = ring_bytes(fo.max_bytes) / sizeof(kept);
    fl.head = fl.n = fl.bytes = 0;
    fl.last_gen = fl.snap_ns = 0;
    fl.ended = fl.abort = fl.paused = false;
    fl.dropped_young = fl.snapshots = 0;
  }
  pthread_mutex_unlock(&fl.mu);
  pthread_mutex_unlock(&write_mu);
  if (busy) {
    munmap(ring, ring_bytes(fo.max_bytes));
    return CTRACE_EBUSY;
  }
  int err = CTRACE_ENOMEM;
  sem_init(&fl.gate, 0, 0);
  /* The thread exists before tracing starts, so a started trace always
   * has its reader; it reads only once the trace is ours. */
  fl.cur = (kept){0};
  if (pthread_create(&fl.thread, NULL, flight_main, NULL) == 0) {
    fl.running = true;
    err = ctrace__start(&o, &fl.sink);
    fl.abort = err != 0;
    sem_post(&fl.gate);
    if (!err && fo.crash_path && (err = ctrace__flight_crash_arm(fo.crash_path)) != 0) ctrace_stop();
    if (!err) return 0;
    if (!fl.abort) return err; /* the stop joined the thread */
    pthread_join(fl.thread, NULL);
    fl.running = false;
  }
  sem_destroy(&fl.gate);
  pthread_mutex_lock(&fl.mu);
  munmap(fl.ring, ring_bytes(fl.max_bytes));
  fl.ring = NULL;
  fl.on = false;
  pthread_mutex_unlock(&fl.mu);
  return err;
}

int ctrace_flight_stop(void) {
  pthread_mutex_lock(&fl.mu);
  bool on = fl.on;
  pthread_mutex_unlock(&fl.mu);
  if (!on) return CTRACE_ENOTRACE;
  /* Gaps at the cap (ctrace_stats counts them) cost the window, not the
   * stop. */
  int err = ctrace_stop();
  return err == CTRACE_ECAPPED ? 0 : err;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k < 0 ? -errno : CTRACE_EIO;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

/* A snapshot's first generation had a GC open through it that no thread
 * said (ctrace__gc_seal): a batch of no thread saying it, which Go takes
 * in a trace's first generation only. */
static int write_gc_active(int fd, const ctrace__gen_info *info) {
  _Alignas(ctrace__buf) uint8_t raw[sizeof(ctrace__buf) + 64];
  ctrace__buf *b = (ctrace__buf *)raw;
  b->pos = b->data;
  ctrace__open_batch2(b, info->gen, UINT64_MAX, info->began_ticks);
  *b->pos++ = CTRACE_EV122_GCActive;
  b->pos = ctrace__put_uvarint(b->pos, 0);
  b->pos = ctrace__put_uvarint(b->pos, info->gc_unstated);
  ctrace__close_batch2(b);
  return write_all(fd, b->data, (size_t)(b->pos - b->data));
}

int ctrace_flight_write(int fd) { return ctrace__flight_write(fd, false); }

int ctrace__flight_write(int fd, bool force) {
  if (pthread_mutex_trylock(&write_mu)) return CTRACE_EBUSY;
  pthread_mutex_lock(&fl.mu);
  if (!fl.on || fl.ended) {
    pthread_mutex_unlock(&fl.mu);
    pthread_mutex_unlock(&write_mu);
    return CTRACE_ENOTRACE;
  }
  /* The generation being written now ends, and is kept, first; tracing
   * paused at the cap (no generation is being written) ends none. The
   * wait is for the recorder's thread, which a loaded machine may keep
   * off a core for seconds: it is cut short only inside a stop-the-world
   * (after 2 s, as documented: no generation ends there), or after 30 s
   * should a thread stop in the middle of an event (a debugger's
   * breakpoint) and hold the generation open. */
  uint64_t want = atomic_load_explicit(&ctrace__state, memory_order_relaxed) >> 1;
  uint64_t now = fl.snap_ns = ctrace__mono_ns();
  pthread_mutex_unlock(&fl.mu);
  ctrace__reader_advance_now(force);
  pthread_mutex_lock(&fl.mu);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  for (int waited = 0; fl.last_gen < want && !fl.ended;) {
    if (pthread_cond_timedwait(&fl.cv, &fl.mu, &until) != ETIMEDOUT) continue;
    if (++waited >= 30 || (waited >= 2 && ctrace__stw_shown())) break;
    until.tv_sec += 1;
  }
  fl.snap_ns = 0;
  /* Up to the generation the call ended, which the cap does not drop for
   * later ones: those kept while the call waited began after it. (Should
   * that generation have been left out, with no event, all are.) */
  trim(now, want);
  size_t n = 0;
  while (n < fl.n && fl.ring[(fl.head + n) % fl.ring_len].info.gen <= want) n++;
  if (!n) n = fl.n;
  int err = n ? write_all(fd, "go 1.22 trace\0\0\0", CTRACE_HEADER_LEN) : CTRACE_EEMPTY;
  if (!err && n && fl.ring[fl.head].info.gc_unstated) err = write_gc_active(fd, &fl.ring[fl.head].info);
  for (size_t i = 0; i < n && !err; i++)
    for (ctrace__buf *b = fl.ring[(fl.head + i) % fl.ring_len].first; b && !err; b = b->link)
      err = write_all(fd, b->data, (size_t)(b->pos - b->data));
  fl.snapshots++;
  pthread_mutex_unlock(&fl.mu);
  pthread_mutex_unlock(&write_mu);
  return err;
}

void ctrace_flight_stats_get(ctrace_flight_stats *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&fl.mu);
  if (fl.on) {
    out->bytes = fl.bytes;
    out->generations = fl.n;
    out->window_ns = fl.n ? ctrace__mono_ns() - fl.ring[fl.head].info.began_ns : 0;
    out->dropped_young = fl.dropped_young;
    out->snapshots = fl.snapshots;
  }
  pthread_mutex_unlock(&fl.mu);
}
