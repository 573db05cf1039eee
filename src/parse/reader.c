/* The reader's public API: open (pass 1), check (an ordering pass, then
 * an ordering + state pass), and next (the same again, one event at a time).
 * Every pass reads the mapped file afresh, so memory does not grow with the
 * number of events. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader.h"

/* Open reads the header only: a file that is no trace fails at once, and
 * a progress display set after open sees every pass. */
static int open_common(ctrace_reader *r, ctrace_reader **out, ctrace_parse_error *err) {
  if (ctrace__header(r, err)) {
    ctrace_reader_close(r);
    *out = NULL;
    return -1;
  }
  r->info.version = r->ver;
  r->info.bytes = r->len;
  if (r->ver >= 1022 && !(r->g2 = ctrace__g2_new(r->data, r->len, r->mapped, r->ver))) {
    ctrace_reader_close(r);
    *out = NULL;
    return ctrace__perr(err, 0, "out of memory");
  }
  *out = r;
  return 0;
}

/* Pass 0 (the scan) is the first half, pass 1 the second. */
static void progress(ctrace_reader *r, int pass, uint64_t done, uint64_t of) {
  if (r->progress && of)
    r->progress(r->progress_arg, r->len / 2 * (uint64_t)pass + r->len / 2 * done / of, r->len);
}

int ctrace_reader_open_mem(const void *data, size_t len, ctrace_reader **out,
                           ctrace_parse_error *err) {
  ctrace_reader *r = calloc(1, sizeof *r);
  if (!r) return ctrace__pfail(ctrace__perr(err, 0, "out of memory"), err);
  r->data = data;
  r->len = len;
  return ctrace__pfail(open_common(r, out, err), err);
}

/* A file that cannot be read: the system's error is the code. */
static int sys_err(ctrace_parse_error *err, int e, const char *what) {
  ctrace__perr(err, 0, "failed to %s trace file: %s", what, strerror(e));
  if (err) err->code = -e;
  return -1;
}

static int read_all(int fd, ctrace_reader *r) {
  size_t cap = 1 << 20, len = 0;
  uint8_t *b = malloc(cap);
  if (!b) return -1;
  for (;;) {
    if (len == cap) {
      uint8_t *n = realloc(b, cap *= 2);
      if (!n) {
        free(b);
        return -1;
      }
      b = n;
    }
    ssize_t k = read(fd, b + len, cap - len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      free(b);
      return -1;
    }
    if (k == 0) break;
    len += (size_t)k;
  }
  r->data = b;
  r->len = len;
  r->owned = true;
  return 0;
}

static int reader_open(const char *path, ctrace_reader **out, ctrace_parse_error *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_err(err, errno, "open");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return sys_err(err, e, "open");
  }
  ctrace_reader *r = calloc(1, sizeof *r);
  if (!r) {
    close(fd);
    return ctrace__perr(err, 0, "out of memory");
  }
  void *m = MAP_FAILED;
  if (S_ISREG(st.st_mode) && st.st_size > 0)
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m != MAP_FAILED) {
    madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    r->data = m;
    r->len = (size_t)st.st_size;
    r->mapped = true;
  } else if (S_ISREG(st.st_mode) && st.st_size == 0) {
    r->data = (const uint8_t *)"";
  } else {
    /* A pipe or other stream cannot be mapped, and the reader makes more
     * than one pass: read it into memory. */
    if (read_all(fd, r) != 0) {
      int e = errno;
      close(fd);
      ctrace_reader_close(r);
      return sys_err(err, e, "read");
    }
  }
  close(fd);
  return open_common(r, out, err);
}

int ctrace_reader_open(const char *path, ctrace_reader **out, ctrace_parse_error *err) {
  return ctrace__pfail(reader_open(path, out, err), err);
}

int ctrace_reader_version(const ctrace_reader *r) { return r->ver; }

int ctrace_reader_clock(const ctrace_reader *r, ctrace_clock_snapshot *c) {
  if (!r->g2 || !r->g2->have_clock) return 0;
  *c = r->g2->clock;
  return 1;
}

void ctrace_reader_set_progress(ctrace_reader *r, void (*fn)(void *, uint64_t, uint64_t),
                                void *arg) {
  r->progress = fn;
  r->progress_arg = arg;
}

void ctrace_reader_close(ctrace_reader *r) {
  if (!r) return;
  ctrace__ahead_stop(r->ahead);
  if (r->model_free) r->model_free(r->model);
  ctrace__g2_free(r->g2);
  free(r->gens);
  free(r->gen_starts);
  ctrace__order_free(r);
  ctrace__state_free(r);
  if (r->mapped) munmap((void *)r->data, r->len);
  if (r->owned) free((void *)r->data);
  free(r->arena);
  ctrace__map_free(&r->strings);
  ctrace__map_free(&r->stack_ids);
  for (size_t i = 0; i < r->nstacks; i++) free(r->stacks[i].frames);
  free(r->stacks);
  ctrace__map_free(&r->ps);
  for (uint32_t i = 0; i < r->npq; i++) free(r->pq[i].batches);
  free(r->pq);
  free(r->batches);
  free(r->samples);
  ctrace__map_free(&r->timer_gs);
  ctrace__map_free(&r->exits_with_ts);
  free(r->msgbuf);
  free(r->merge_log);
  free(r);
}

/* Go's int64(x) of a float64 on amd64: out of range (or NaN) gives the
 * minimum int64, the instruction's "indefinite" result. C leaves that
 * undefined, so say it. */
static int64_t go_int64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)x;
}

/* Ticks to nanoseconds since the first event, and Go's fake Ps for timer
 * unblocks and syscall exits, as Go's parseEvents does after ordering. */
static void convert(ctrace_reader *r, const pev *e, ctrace_event *ev) {
  /* Every field set here (no memset: this runs once per event). */
  double ns_per_tick = 1e9 / (double)r->ticks_per_sec;
  ev->ts = go_int64((double)(int64_t)((uint64_t)e->ts - (uint64_t)r->min_ts) * ns_per_tick);
  ev->off = e->off;
  ev->type = e->type;
  ev->p = e->p;
  ev->g = e->g;
  ev->args[0] = e->args[0];
  ev->args[1] = e->args[1];
  ev->args[2] = e->args[2];
  ev->args[3] = ev->args[4] = ev->args[5] = 0;
  ev->format = ev->kind = ev->has_stack = ev->has_tstack = 0;
  ev->m = -1;
  ev->tstack = 0;
  ev->frames = ev->tframes = NULL;
  ev->nframes = ev->ntframes = 0;
  ev->stack = e->stk;
  ev->sargs[0] = e->sargs[0];
  ev->sargs[1] = e->sargs[1];
  ev->sargs_len[0] = e->slen[0];
  ev->sargs_len[1] = e->slen[1];
  ev->link = CTRACE_NO_LINK;
  if (e->type == CTRACE_EV_UserLog) {
    if (e->msglen + 1 > r->msgcap) {
      size_t cap = e->msglen + 1 > 256 ? e->msglen + 1 : 256;
      char *b = realloc(r->msgbuf, cap);
      if (b) r->msgbuf = b, r->msgcap = cap;
    }
    if (e->msglen + 1 <= r->msgcap) {
      memcpy(r->msgbuf, e->msg, e->msglen);
      r->msgbuf[e->msglen] = 0;
      ev->sargs[1] = r->msgbuf;
      ev->sargs_len[1] = e->msglen;
    } else {
      ev->sargs[1] = "";
    }
  }
  if (e->type == CTRACE_EV_GoUnblock && ctrace__map_get(&r->timer_gs, e->g)) ev->p = CTRACE_P_TIMER;
  if (e->type == CTRACE_EV_GoSysExit) ev->p = CTRACE_P_SYSCALL;
}

/* The next event of the final stream (futile wakeups dropped), converted.
 * The stream is sorted, so its first event gives the time base. */
static int next_converted(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  pev e;
  for (;;) {
    int rc = ctrace__order_next(r, &e, err);
    if (rc <= 0) return rc;
    if (r->out_seq == 0 && !r->have_base) {
      r->min_ts = e.ts;
      r->have_base = true;
    }
    if (r->ss.futile_set.len && ctrace__map_get(&r->ss.futile_set, e.off)) continue;
    break;
  }
  convert(r, &e, ev);
  ev->seq = r->out_seq++;
  return 1;
}

static int next_event(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  int rc = next_converted(r, ev, err);
  if (rc == 1 && ctrace__state_apply(r, ev, err)) return -1;
  return rc;
}

void ctrace_reader_rewind(ctrace_reader *r) {
  if (r->g2) {
    ctrace__ahead_stop(r->ahead);
    r->ahead = NULL;
    ctrace__g2_rewind(r->g2);
    r->pass_whole = !r->checked && !r->check_failed;
    r->pass_n = 0;
    r->pass_freq = 0;
    return;
  }
  ctrace__order_init(r);
  ctrace__state_init(r);
  r->out_seq = 0;
  r->have_base = false;
}

/* Go 1.22+: the next event, counting for the check while the pass is
 * whole. The Go 1.22+ reader rejects what Go's does as it reads, so a
 * command whose analysis reads the whole trace needs no check pass of
 * its own before it: this pass is one (ctrace_reader_check then answers
 * from it), and its error is the one a check pass would have met first.
 * Progress is shown from here unless the pass is read ahead: the
 * callback is the caller's, called on its thread (ahead.c). */
static inline __attribute__((always_inline)) int g2_read(ctrace_reader *r, ctrace_event *ev,
                                                         ctrace_parse_error *err, bool report) {
  g2reader *g = r->g2;
  int rc = ctrace__g2_next(g, ev, err);
  if (!r->pass_whole) return rc;
  if (rc == 1) {
    r->pass_n++;
    if (g->gen.have_freq) r->pass_freq = g->gen.freq; /* not the end's Sync, after the last generation */
    if (report && (r->pass_n & 0xfffff) == 0 && r->progress) r->progress(r->progress_arg, g->off, r->len);
    return 1;
  }
  r->pass_whole = false;
  if (rc < 0) {
    r->check_failed = true;
    r->check_err = *err;
    return rc;
  }
  ctrace__g2_info(g, r->pass_n, r->pass_freq, &r->info);
  r->checked = true;
  if (report && r->progress) r->progress(r->progress_arg, r->len, r->len);
  return 0;
}

/* g2_read is inline in g2_next, which gives every event of
 * ctrace_reader_next and _read, and in check_g2: a call a level for each
 * event cost as much as a hash lookup. This is ahead.c's. */
int ctrace__g2_read(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err) { return g2_read(r, ev, err, false); }

/* Go 1.22+: one streaming pass to the end, counting; or what a whole pass
 * already read said. */
static int check_g2(ctrace_reader *r, ctrace_parse_error *err) {
  if (r->check_failed) {
    *err = r->check_err;
    return -1;
  }
  ctrace_reader_rewind(r);
  int rc;
  while ((rc = g2_read(r, NULL, err, true)) == 1) {
  }
  if (rc < 0) return -1;
  ctrace_reader_rewind(r);
  return 0;
}

/* A pass of a Go 1.22+ trace is read ahead on a second thread (ahead.c)
 * where the process may run on two CPUs or more; CTRACE_READ_AHEAD=0
 * reads on the caller's thread alone, =1 reads ahead whatever the CPUs,
 * =sleep too, with threads that sleep as soon as they wait (the tests'
 * way to that path: they spin first otherwise). On the 2-vCPU guest of
 * BENCHMARKS.md it takes stats' wall time from 0.87 to 0.54 s and
 * pprof's from 0.63 to 0.49 s (one busy hour), for 14% and 41% more CPU. */
static bool ahead_wanted(void) {
  const char *e = getenv("CTRACE_READ_AHEAD");
  if (e && *e) return strcmp(e, "0") != 0;
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2;
}

/* Go 1.22+: the next event for ctrace_reader_read and _next, read ahead
 * on a second thread from a pass's first event on (ahead.c): 1 with *out
 * at it, in buf or, read ahead, in the chunk it was read into, which
 * holds it until the next call (not copying it saved a twentieth of
 * stats' time: ctrace_reader_next_ref). */
static inline __attribute__((always_inline)) int g2_next(ctrace_reader *r, ctrace_event *buf,
                                                         const ctrace_event **out, ctrace_parse_error *err) {
  g2reader *g = r->g2;
  if (!r->ahead && g->out_seq == 0 && !g->done && !g->failed && ahead_wanted())
    r->ahead = ctrace__ahead_start(r);
  *out = buf;
  if (!r->ahead) return g2_read(r, buf, err, true);
  if ((*out = ctrace__ahead_next(r->ahead))) return 1;
  g = r->g2; /* the reading thread has ended: its state is ours */
  if (!g->failed) {
    if (r->checked && r->progress) r->progress(r->progress_arg, r->len, r->len);
    return 0;
  }
  *err = g->error;
  return -1;
}

static inline int g2_next_copy(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  const ctrace_event *e;
  int rc = g2_next(r, ev, &e, err);
  if (rc == 1 && e != ev) *ev = *e;
  return rc;
}

/* Before the first check or read of a reader that allows a cut: its
 * plan; a failure fails every read after it, as the stream's own do. */
static int plan_cut(ctrace_reader *r, ctrace_parse_error *err) {
  if (!r->allow_cut || r->cut_planned || !r->g2) return 0;
  if (ctrace__cut_plan(r, err) == 0) return 0;
  r->g2->failed = true;
  r->g2->error = *err;
  r->check_failed = true; /* a rewind clears g2's failure, not the check's */
  r->check_err = *err;
  return -1;
}

int ctrace_reader_generations(ctrace_reader *r, const int64_t **starts, size_t *n, ctrace_parse_error *err) {
  if (!r->g2) {
    ctrace__perr(err, 0, "a trace of Go %d.%d has no generations", ctrace_reader_version(r) / 1000,
                 ctrace_reader_version(r) % 1000);
    if (err) err->code = CTRACE_EINVAL;
    return CTRACE_EINVAL;
  }
  if (plan_cut(r, err)) return ctrace__pfail(-1, err);
  if (!r->gens_found) {
    ctrace_reader_rewind(r);
    g2genpos *g;
    uint64_t k;
    int rc = ctrace__g2_gen_starts(r->g2, &g, &k, err);
    ctrace_reader_rewind(r);
    if (rc < 0) return ctrace__pfail(-1, err);
    int64_t *t = malloc((k ? k : 1) * sizeof *t);
    if (!t) {
      free(g);
      ctrace__perr(err, 0, "out of memory");
      return ctrace__pfail(-1, err);
    }
    for (uint64_t i = 0; i < k; i++) t[i] = g[i].start_ns;
    r->gens = g;
    r->gen_starts = t;
    r->ngens = (size_t)k;
    r->gens_found = true;
  }
  *starts = r->gen_starts;
  *n = r->ngens;
  return 0;
}

int ctrace_reader_seek_generation(ctrace_reader *r, size_t k, ctrace_parse_error *err) {
  const int64_t *starts;
  size_t n;
  int rc = ctrace_reader_generations(r, &starts, &n, err);
  if (rc) return rc;
  if (k < 1 || k > n) {
    ctrace__perr(err, 0, "no generation %zu: the trace has %zu", k, n);
    if (err) err->code = CTRACE_EINVAL;
    return CTRACE_EINVAL;
  }
  ctrace_reader_rewind(r);
  if (k > 1) {
    r->pass_whole = false; /* no check: it reads part of the trace */
    ctrace__g2_seek(r->g2, k - 1, &r->gens[k - 1]);
  }
  return 0;
}

int ctrace_reader_failed(const ctrace_reader *r, ctrace_parse_error *err) {
  if (!r->g2 || !r->g2->failed) return 0;
  if (err) *err = r->g2->error;
  return 1;
}

void ctrace_reader_allow_cut(ctrace_reader *r, int allow) {
  if (!r->cut_planned) r->allow_cut = allow != 0;
}

int ctrace_reader_cut(const ctrace_reader *r, ctrace_salvage_info *s) {
  if (!r->cut_planned || !r->g2 || !(r->cut_known || r->g2->cut_hit)) return 0;
  /* Read to an io.EOF of Go's before the cut: the whole file reads the
   * same (the same bytes up to there), so nothing was left out. */
  if (r->g2->eof_inside) return 0;
  *s = r->cut;
  if (r->g2->cut_hit) s->error = r->g2->cut_error;
  if (r->checked) s->info = r->info;
  s->info.bytes = s->keep;
  return 1;
}

int ctrace_reader_read(ctrace_reader *r, ctrace_event *ev, ctrace_parse_error *err) {
  if (plan_cut(r, err)) return ctrace__pfail(-1, err);
  if (r->g2) return ctrace__pfail(g2_next_copy(r, ev, err), err);
  if (!r->checked) {
    ctrace__perr(err, 0, "ctrace_reader_read before ctrace_reader_check");
    if (err) err->code = CTRACE_EINVAL;
    return CTRACE_EINVAL;
  }
  return ctrace_reader_next(r, ev);
}

static int reader_check(ctrace_reader *r, ctrace_trace_info *info, ctrace_parse_error *err);

int ctrace_reader_check(ctrace_reader *r, ctrace_trace_info *info, ctrace_parse_error *err) {
  return ctrace__pfail(reader_check(r, info, err), err);
}

static int reader_check(ctrace_reader *r, ctrace_trace_info *info, ctrace_parse_error *err) {
  if (r->checked) {
    if (info) *info = r->info;
    return 0;
  }
  if (r->g2) {
    if (plan_cut(r, err) || check_g2(r, err)) return -1;
    if (info) *info = r->info;
    return 0;
  }
  /* Pass 1: framing, strings, stacks, the batch index. */
  if (ctrace__scan(r, err)) return -1;
  r->info.frequency = (uint64_t)r->ticks_per_sec;
  /* Futile wakeups are found on the whole ordered stream before anything
   * is dropped: an extra pass, only for traces that have them. */
  if (r->nfutile) {
    ctrace__order_init(r);
    void *futile = ctrace__futile_begin();
    pev e;
    int rc;
    while ((rc = ctrace__order_next(r, &e, err)) == 1) ctrace__futile_observe(r, futile, &e);
    ctrace__futile_end(futile);
    if (rc < 0) return -1;
  }
  /* Pass 2: order and state together. Go reports an ordering error
   * anywhere before any state error, so after a state error the order is
   * still followed to the end. The merge is recorded for the replays. */
  ctrace_reader_rewind(r);
  r->recording = r->ver >= 1007;
  ctrace_event ev;
  ctrace_parse_error state_err;
  bool state_failed = false;
  int64_t first = 0, last = 0;
  int rc;
  while ((rc = next_converted(r, &ev, err)) == 1) {
    if (ev.seq == 0) first = ev.ts;
    last = ev.ts;
    if (!state_failed && ctrace__state_apply(r, &ev, &state_err)) state_failed = true;
    if ((ev.seq & 0xfffff) == 0) progress(r, 1, ev.seq, r->nevents + r->nsamples);
  }
  r->recording = false;
  if (r->log_failed) {
    free(r->merge_log);
    r->merge_log = NULL;
  }
  if (rc < 0) return -1;
  if (state_failed) {
    *err = state_err;
    return -1;
  }
  uint64_t procs = 0;
  for (uint32_t i = 0; i < r->npq; i++)
    if (r->pq[i].remaining && r->pq[i].p >= 0 && r->pq[i].p < 1000000) procs++;
  r->info.events = r->out_seq;
  r->info.goroutines = r->ss.ng ? r->ss.ng - 1 : 0; /* not G0 */
  r->info.procs = procs;
  r->info.duration_ns = last - first;
  r->checked = true;
  if (info) *info = r->info;
  ctrace_reader_rewind(r);
  progress(r, 1, 1, 1);
  return 0;
}

int ctrace_reader_next(ctrace_reader *r, ctrace_event *ev) {
  ctrace_parse_error err;
  /* A Go 1.22+ trace reads unchecked too (g2_read checks it as it goes):
   * whoever reads it so checks it after, with ctrace_reader_check. */
  if (r->g2) return !plan_cut(r, &err) && g2_next_copy(r, ev, &err) == 1;
  if (!r->checked) return 0;
  return next_event(r, ev, &err) == 1;
}

const ctrace_event *ctrace_reader_next_ref(ctrace_reader *r, ctrace_event *buf) {
  ctrace_parse_error err;
  const ctrace_event *e;
  if (r->g2) return !plan_cut(r, &err) && g2_next(r, buf, &e, &err) == 1 ? e : NULL;
  return ctrace_reader_next(r, buf) ? buf : NULL;
}

const char *ctrace_reader_string(const ctrace_reader *r, uint64_t id) {
  if (r->g2) { /* the current generation's */
    uint64_t n;
    const char *s = r->g2->have_gen ? ctrace__g2_string(&r->g2->gen, id, &n) : NULL;
    return s ? s : "";
  }
  return ctrace__string(r, id);
}

size_t ctrace_reader_stack(const ctrace_reader *r, uint64_t id, const ctrace_frame **frames) {
  if (r->g2) { /* the current generation's */
    uint32_t n = 0;
    *frames = NULL;
    if (r->g2->have_gen && !ctrace__g2_stack(&r->g2->gen, id, frames, &n)) n = 0;
    if (!n) *frames = NULL;
    return n;
  }
  const uint64_t *i = ctrace__map_get(&r->stack_ids, id);
  if (!i) {
    *frames = NULL;
    return 0;
  }
  *frames = r->stacks[*i].frames;
  return r->stacks[*i].n;
}

const void *ctrace_reader_bytes(const ctrace_reader *r, size_t *len) {
  *len = r->len;
  return r->data;
}
