/* The ordered stream of events.
 *
 * From 1.7 on, Go orders events across Ps by a frontier merge (Go's
 * order1007): each P's events stay in file order; the head of a P may join
 * the frontier once its goroutine's state allows it (per-goroutine
 * sequence numbers, or the Local variants' "same P" promise); the frontier
 * yields its earliest event. Go re-examines every P after every event; here
 * a P whose head is not ready waits on that head's goroutine and is looked
 * at again only when that goroutine moves, so an event costs a look at the
 * Ps it may have freed and an insertion into the frontier (a sorted array
 * of the ready heads), not a walk over every P.
 *
 * Then GoSysExit events that carry the real exit time take it, and Go
 * re-sorts (stably) by time: such an exit may move back before events
 * already merged, or, in a damaged trace whose exit time is later than the
 * exit itself, forward past events still to come. Merged events wait in a
 * small buffer until nothing still to come can move before them (see
 * release_bound()).
 *
 * 1.5 traces are sorted on their global sequence numbers in memory.
 */
#include <stdlib.h>
#include <string.h>

#include "../reader.h"

enum { G_DEAD, G_RUNNABLE, G_RUNNING, G_WAITING };
#define UNORDERED UINT64_MAX
#define GARBAGE (UINT64_MAX - 1)
#define NOSEQ UINT64_MAX
#define SEQINC (UINT64_MAX - 1)
#define NONE UINT32_MAX

/* A GCSTWStart's kind: Go 1.10 to 1.19 write 0 (mark termination) or 1
 * (sweep termination); Go 1.21 one of the reasons its runtime names
 * (runtime/proc.go's stwReason, as Go 1.23's reader names them). */
static const char *stw_kind(int ver, uint64_t kind) {
  static const char *const names_1021[] = {
      "unknown", "GC mark termination", "GC sweep termination", "write heap dump",
      "goroutine profile", "goroutine profile cleanup", "all goroutine stack trace",
      "read mem stats", "AllThreadsSyscall", "GOMAXPROCS", "start trace", "stop trace",
      "CountPagesInUse (test)", "ReadMetricsSlow (test)", "ReadMemStatsSlow (test)",
      "PageCachePagesLeaked (test)", "ResetDebugLog (test)"};
  if (ver < 1021) return kind == 0 ? "mark termination" : "sweep termination";
  return kind < sizeof names_1021 / sizeof *names_1021 ? names_1021[kind] : "unknown";
}

/* ---- decoding a P's events ------------------------------------------- */

/* The next event of queue q, or false at its end. */
static bool cursor_next(ctrace_reader *r, pqueue *q, pev *e) {
  const int ver = r->ver;
  for (;;) {
    if (q->bi >= q->nbatches) return false;
    const batch *b = &r->batches[q->batches[q->bi]];
    if (q->off == 0) {
      q->off = b->start;
      q->last_ts = b->ticks;
      q->last_seq = b->seq;
    }
    if (q->off >= b->end) {
      q->bi++;
      q->off = 0;
      continue;
    }
    uint64_t off0 = q->off, v[CTRACE__MAX_ARGS];
    uint32_t n;
    const uint8_t *msg;
    uint64_t msglen;
    uint8_t typ = ctrace__decode(r, &q->off, v, &n, &msg, &msglen);
    switch (typ) {
    case CTRACE_EV_CPUSample:
      /* Kept apart (scan.c), but its tick diff still moves the batch on. */
      q->last_ts = (int64_t)((uint64_t)q->last_ts + v[0]);
      continue;
    case CTRACE_EV_String:
    case CTRACE_EV_Stack:
    case CTRACE_EV_Frequency:
    case CTRACE_EV_TimerGoroutine:
    case CTRACE_EV_Batch:
      continue;
    }
    const ctrace_event_desc *d = &ctrace_event_descs[typ];
    /* Every field set below (no memset: this runs once per event). */
    e->args[0] = e->args[1] = e->args[2] = 0;
    e->stk = 0;
    e->sargs[0] = e->sargs[1] = NULL;
    e->slen[0] = e->slen[1] = 0;
    e->msg = NULL;
    e->msglen = 0;
    e->seq = 0;
    e->off = off0;
    e->type = typ;
    e->p = q->p;
    e->g = q->last_g;
    uint32_t a;
    /* Sums wrap as Go's int64 does (in uint64: signed overflow is
     * undefined in C); a wrapped time shows as time going back. */
    if (ver < 1007) {
      e->seq = (int64_t)((uint64_t)q->last_seq + v[0]);
      e->ts = (int64_t)((uint64_t)q->last_ts + v[1]);
      q->last_seq = e->seq;
      a = 2;
    } else {
      e->ts = (int64_t)((uint64_t)q->last_ts + v[0]);
      a = 1;
    }
    q->last_ts = e->ts;
    for (uint32_t i = a; i < n && i < CTRACE__MAX_ARGS; i++) {
      if (i == n - 1 && (d->flags & CTRACE_F_STACK))
        e->stk = v[i];
      else if (i - a < 3)
        e->args[i - a] = v[i];
    }
    switch (typ) {
    case CTRACE_EV_GoStart:
    case CTRACE_EV_GoStartLocal:
    case CTRACE_EV_GoStartLabel:
      q->last_g = e->args[0];
      e->g = q->last_g;
      if (typ == CTRACE_EV_GoStartLabel) e->sargs[0] = ctrace__string_n(r, e->args[2], &e->slen[0]);
      break;
    case CTRACE_EV_GCSTWStart:
      e->g = 0;
      e->sargs[0] = stw_kind(ver, e->args[0]);
      e->slen[0] = strlen(e->sargs[0]);
      break;
    case CTRACE_EV_GCStart:
    case CTRACE_EV_GCDone:
    case CTRACE_EV_GCSTWDone:
      e->g = 0;
      break;
    case CTRACE_EV_GoEnd: case CTRACE_EV_GoStop: case CTRACE_EV_GoSched:
    case CTRACE_EV_GoPreempt: case CTRACE_EV_GoSleep: case CTRACE_EV_GoBlock:
    case CTRACE_EV_GoBlockSend: case CTRACE_EV_GoBlockRecv: case CTRACE_EV_GoBlockSelect:
    case CTRACE_EV_GoBlockSync: case CTRACE_EV_GoBlockCond: case CTRACE_EV_GoBlockNet:
    case CTRACE_EV_GoSysBlock: case CTRACE_EV_GoBlockGC:
      q->last_g = 0;
      break;
    case CTRACE_EV_GoSysExit:
    case CTRACE_EV_GoWaiting:
    case CTRACE_EV_GoInSyscall:
      e->g = e->args[0];
      break;
    case CTRACE_EV_UserTaskCreate:
    case CTRACE_EV_UserRegion:
      e->sargs[0] = ctrace__string_n(r, e->args[2], &e->slen[0]);
      break;
    case CTRACE_EV_UserLog:
      e->sargs[0] = ctrace__string_n(r, e->args[1], &e->slen[0]);
      e->msg = msg;
      e->msglen = msglen;
      break;
    }
    return true;
  }
}

/* The head of queue i: decoded lazily. The CPU samples' queue reads from
 * memory. */
static bool head(ctrace_reader *r, uint32_t i) {
  pqueue *q = &r->pq[i];
  if (q->has_head) return true;
  if (i == r->os.profile_q) {
    if (q->bi >= r->nsamples) return false;
    q->head = r->samples[q->bi++];
    q->has_head = true;
    return true;
  }
  q->has_head = cursor_next(r, q, &q->head);
  return q->has_head;
}

/* ---- Go's state transitions (order.go) --------------------------------- */

static void transition_of(const pev *e, uint64_t *g, gstate *init, gstate *next) {
  switch (e->type) {
  case CTRACE_EV_GoCreate:
    *g = e->args[0], *init = (gstate){0, G_DEAD}, *next = (gstate){1, G_RUNNABLE};
    return;
  case CTRACE_EV_GoWaiting:
  case CTRACE_EV_GoInSyscall:
    *g = e->g, *init = (gstate){1, G_RUNNABLE}, *next = (gstate){2, G_WAITING};
    return;
  case CTRACE_EV_GoStart:
  case CTRACE_EV_GoStartLabel:
    *g = e->g, *init = (gstate){e->args[1], G_RUNNABLE}, *next = (gstate){e->args[1] + 1, G_RUNNING};
    return;
  case CTRACE_EV_GoStartLocal:
    *g = e->g, *init = (gstate){NOSEQ, G_RUNNABLE}, *next = (gstate){SEQINC, G_RUNNING};
    return;
  case CTRACE_EV_GoBlock: case CTRACE_EV_GoBlockSend: case CTRACE_EV_GoBlockRecv:
  case CTRACE_EV_GoBlockSelect: case CTRACE_EV_GoBlockSync: case CTRACE_EV_GoBlockCond:
  case CTRACE_EV_GoBlockNet: case CTRACE_EV_GoSleep: case CTRACE_EV_GoSysBlock:
  case CTRACE_EV_GoBlockGC:
    *g = e->g, *init = (gstate){NOSEQ, G_RUNNING}, *next = (gstate){NOSEQ, G_WAITING};
    return;
  case CTRACE_EV_GoSched:
  case CTRACE_EV_GoPreempt:
    *g = e->g, *init = (gstate){NOSEQ, G_RUNNING}, *next = (gstate){NOSEQ, G_RUNNABLE};
    return;
  case CTRACE_EV_GoUnblock:
  case CTRACE_EV_GoSysExit:
    *g = e->args[0], *init = (gstate){e->args[1], G_WAITING},
    *next = (gstate){e->args[1] + 1, G_RUNNABLE};
    return;
  case CTRACE_EV_GoUnblockLocal:
  case CTRACE_EV_GoSysExitLocal:
    *g = e->args[0], *init = (gstate){NOSEQ, G_WAITING}, *next = (gstate){SEQINC, G_RUNNABLE};
    return;
  case CTRACE_EV_GCStart:
    *g = GARBAGE, *init = (gstate){e->args[0], G_DEAD}, *next = (gstate){e->args[0] + 1, G_DEAD};
    return;
  default:
    *g = UNORDERED;
  }
}

static gstate *gstate_of(order_state *os, uint64_t g) {
  bool fresh;
  uint64_t *i = ctrace__map_put(&os->gs, g, &fresh);
  if (!i) return NULL;
  if (fresh) {
    if (os->ngstates == os->capgstates) {
      uint64_t cap = os->capgstates ? os->capgstates * 2 : 256;
      gstate *n = realloc(os->gstates, cap * sizeof *n);
      if (!n) return NULL;
      os->gstates = n;
      os->capgstates = cap;
    }
    os->gstates[os->ngstates] = (gstate){0, G_DEAD};
    *i = os->ngstates++;
  }
  return &os->gstates[*i];
}

static bool ready(uint64_t g, const gstate *cur, gstate init) {
  return g == UNORDERED || ((init.seq == NOSEQ || init.seq == cur->seq) && init.status == cur->status);
}

/* ---- the frontier --------------------------------------------------------
 *
 * Go keeps the frontier in an array: new ready heads are appended, the
 * array is sorted by time (insertion sort, stable, up to 12 entries), the
 * first is taken and the last moved into its place. Which of two events
 * with the same time comes first therefore depends on that history, and
 * Go's output is the same from run to run. Here the array stays sorted on
 * (ticks, rank): an appended head ranks after every other, and the element
 * moved to the front ranks before its equals, as the stable sort leaves
 * them. (Go sorts more than 12 entries unstably; ties among that many
 * ready Ps may come out in another order.) */

static bool front_less(const ctrace_reader *r, frontier_item a, frontier_item b) {
  int64_t ta = r->pq[a.q].head.ts, tb = r->pq[b.q].head.ts;
  return ta < tb || (ta == tb && (int64_t)a.order < (int64_t)b.order);
}

static void front_insert(ctrace_reader *r, frontier_item it) {
  order_state *os = &r->os;
  uint32_t lo = 0, hi = os->nfront;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (front_less(r, os->front[mid], it))
      lo = mid + 1;
    else
      hi = mid;
  }
  memmove(os->front + lo + 1, os->front + lo, (os->nfront - lo) * sizeof *os->front);
  os->front[lo] = it;
  os->nfront++;
}

static bool front_push(ctrace_reader *r, uint32_t q) {
  order_state *os = &r->os;
  if (os->nfront == os->capfront) {
    uint32_t cap = os->capfront ? os->capfront * 2 : 64;
    frontier_item *f = realloc(os->front, cap * sizeof *f);
    if (!f) return false;
    os->front = f;
    os->capfront = cap;
  }
  front_insert(r, (frontier_item){q, (uint64_t)(int64_t)++os->rank_hi});
  return true;
}

static uint32_t front_pop(ctrace_reader *r) {
  order_state *os = &r->os;
  uint32_t top = os->front[0].q;
  memmove(os->front, os->front + 1, --os->nfront * sizeof *os->front);
  if (os->nfront > 1) {
    frontier_item last = os->front[--os->nfront];
    last.order = (uint64_t)(int64_t)--os->rank_lo;
    front_insert(r, last);
  }
  return top;
}

/* Queues to look at again: a stack threaded through ready_next. */
static void recheck(order_state *os, uint32_t q) {
  if (os->queued[q]) return;
  os->queued[q] = true;
  os->ready_next[q] = os->ready_head;
  os->ready_head = q;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Looks at every queue due, in queue order as Go walks its batches: a
 * ready head joins the frontier, one not ready waits on its goroutine. */
static bool fill_frontier(ctrace_reader *r) {
  order_state *os = &r->os;
  uint32_t n = 0;
  for (uint32_t q = os->ready_head; q != NONE; q = os->ready_next[q]) os->due[n++] = q;
  os->ready_head = NONE;
  if (n > 1) qsort(os->due, n, sizeof *os->due, cmp_u32);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t q = os->due[k];
    os->queued[q] = false;
    pqueue *pq = &r->pq[q];
    if (pq->in_frontier || !head(r, q)) continue;
    uint64_t g;
    gstate init, next;
    transition_of(&pq->head, &g, &init, &next);
    gstate *cur = g == UNORDERED ? NULL : gstate_of(os, g);
    if (g != UNORDERED && !cur) return false;
    if (g != UNORDERED && !ready(g, cur, init)) {
      bool fresh;
      uint64_t *w = ctrace__map_put(&os->waiting, g, &fresh);
      if (!w) return false;
      os->wait_next[q] = fresh ? NONE : (uint32_t)*w;
      *w = q;
      continue;
    }
    pq->tg = g, pq->tinit = init, pq->tnext = next;
    pq->in_frontier = true;
    if (!front_push(r, q)) return false;
  }
  return true;
}

/* ---- syscall exit times and the release buffer ------------------------- */

static void heap_push(order_state *os, uint64_t ticks, uint64_t g) {
  if (os->nheap == os->capheap) {
    uint64_t cap = os->capheap ? os->capheap * 2 : 64;
    void *h = realloc(os->heap, cap * sizeof os->heap[0]);
    if (!h) return; /* then exit_floor() holds less back: only the placing of exits suffers */
    os->heap = h;
    os->capheap = cap;
  }
  uint64_t i = os->nheap++;
  while (i > 0 && os->heap[(i - 1) / 2][0] > ticks) {
    memcpy(os->heap[i], os->heap[(i - 1) / 2], sizeof os->heap[0]);
    i = (i - 1) / 2;
  }
  os->heap[i][0] = ticks;
  os->heap[i][1] = g;
}

static void heap_pop(order_state *os) {
  uint64_t last[2];
  memcpy(last, os->heap[--os->nheap], sizeof last);
  uint64_t i = 0;
  for (;;) {
    uint64_t c = 2 * i + 1;
    if (c >= os->nheap) break;
    if (c + 1 < os->nheap && os->heap[c + 1][0] < os->heap[c][0]) c++;
    if (os->heap[c][0] >= last[0]) break;
    memcpy(os->heap[i], os->heap[c], sizeof last);
    i = c;
  }
  if (os->nheap) memcpy(os->heap[i], last, sizeof last);
}

/* The earliest time an exit still to come may take, or INT64_MAX. */
static int64_t exit_floor(ctrace_reader *r) {
  order_state *os = &r->os;
  while (os->nheap) {
    uint64_t g = os->heap[0][1];
    const uint64_t *left = ctrace__map_get(&os->exits_left, g);
    const uint64_t *blk = ctrace__map_get(&os->sysblock, g);
    if (left && *left && blk && *blk == os->heap[0][0]) return (int64_t)os->heap[0][0];
    heap_pop(os); /* stale: the goroutine blocked again, or has no exits left */
  }
  return INT64_MAX;
}

/* The buffer's events at or before this time may leave: every event still
 * to merge comes at or after the last merged one's own time (the merge is
 * in time order, or the stream ends in an error), and every exit still to
 * come at or after exit_floor(). Ties stay in merge order, as Go's stable
 * sort keeps them. */
static int64_t release_bound(ctrace_reader *r) {
  int64_t floor = exit_floor(r);
  return r->os.last_ts < floor ? r->os.last_ts : floor;
}

static bool buf_insert(order_state *os, const pev *e) {
  if (os->bhead && os->bhead == os->blen) os->bhead = os->blen = 0;
  if (os->blen == os->bcap) {
    if (os->bhead) { /* compact */
      memmove(os->buf, os->buf + os->bhead, (os->blen - os->bhead) * sizeof *os->buf);
      os->blen -= os->bhead;
      os->bhead = 0;
    }
    if (os->blen == os->bcap) {
      uint64_t cap = os->bcap ? os->bcap * 2 : 256;
      pev *b = realloc(os->buf, cap * sizeof *b);
      if (!b) return false;
      os->buf = b;
      os->bcap = cap;
    }
  }
  /* Stable: after every event at or before e's time. */
  uint64_t i = os->blen;
  while (i > os->bhead && os->buf[i - 1].ts > e->ts) i--;
  memmove(os->buf + i + 1, os->buf + i, (os->blen - i) * sizeof *os->buf);
  os->buf[i] = *e;
  os->blen++;
  return true;
}

/* Go applies real exit times after the merge, in merge order. */
static void apply_exit_time(ctrace_reader *r, pev *e) {
  order_state *os = &r->os;
  if (e->type == CTRACE_EV_GoSysBlock || e->type == CTRACE_EV_GoInSyscall) {
    uint64_t *b = ctrace__map_put(&os->sysblock, e->g, NULL);
    if (b) *b = (uint64_t)e->ts;
    const uint64_t *left = ctrace__map_get(&os->exits_left, e->g);
    if (left && *left) heap_push(os, (uint64_t)e->ts, e->g);
    return;
  }
  if (e->type != CTRACE_EV_GoSysExit || e->args[2] == 0) return;
  uint64_t *left = ctrace__map_get(&os->exits_left, e->args[0]);
  if (left && *left) --*left;
  const uint64_t *b = ctrace__map_get(&os->sysblock, e->g);
  int64_t ts = (int64_t)e->args[2], block = b ? (int64_t)*b : 0;
  if (block == 0 || ts < block) {
    if (!os->sys_error) {
      snprintf(os->sys_msg, sizeof os->sys_msg, "%s",
               block == 0 ? "stray syscall exit" : "time stamps out of order");
      os->sys_off = e->off;
    }
    os->sys_error = true;
    return;
  }
  e->ts = ts;
}

/* ---- 1.5: sort on sequence numbers ------------------------------------- */

static int cmp_seq(const void *a, const void *b) {
  const pev *x = a, *y = b;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

static int order1005(ctrace_reader *r, ctrace_parse_error *err) {
  order_state *os = &r->os;
  os->all = malloc((r->nevents ? r->nevents : 1) * sizeof *os->all);
  if (!os->all) return ctrace__perr(err, 0, "out of memory");
  for (uint32_t i = 0; i < r->npq; i++) {
    pev e;
    while (cursor_next(r, &r->pq[i], &e)) {
      if (e.type == CTRACE_EV_GoSysExit) {
        /* Emitted once the thread had a P: the real seq and time. */
        e.seq = (int64_t)e.args[1];
        if (e.args[2]) e.ts = (int64_t)e.args[2];
      }
      os->all[os->nall++] = e;
    }
  }
  qsort(os->all, os->nall, sizeof *os->all, cmp_seq);
  for (uint64_t i = 1; i < os->nall; i++)
    if (os->all[i].ts < os->all[i - 1].ts) return ctrace__perr(err, os->all[i].off, "time stamps out of order");
  return 0;
}

/* ---- the stream ---------------------------------------------------------- */

static void log_merge(ctrace_reader *r, uint32_t q) {
  if (r->log_failed) return;
  if (q > UINT16_MAX) {
    r->log_failed = true;
    return;
  }
  if (r->nlog == r->caplog) {
    uint64_t cap = r->caplog ? r->caplog * 2 : 1 << 16;
    uint16_t *l = realloc(r->merge_log, cap * sizeof *l);
    if (!l) {
      r->log_failed = true;
      return;
    }
    r->merge_log = l;
    r->caplog = cap;
  }
  r->merge_log[r->nlog++] = (uint16_t)q;
}

void ctrace__order_free(ctrace_reader *r) {
  order_state *os = &r->os;
  ctrace__map_free(&os->gs);
  ctrace__map_free(&os->waiting);
  ctrace__map_free(&os->sysblock);
  ctrace__map_free(&os->exits_left);
  free(os->gstates);
  free(os->front);
  free(os->wait_next);
  free(os->ready_next);
  free(os->queued);
  free(os->due);
  free(os->buf);
  free(os->heap);
  free(os->all);
  memset(os, 0, sizeof *os);
}

void ctrace__order_init(ctrace_reader *r) {
  ctrace__order_free(r);
  order_state *os = &r->os;
  os->profile_q = NONE;
  /* CPU samples are a queue of their own, sorted by the time the signal
   * handler took (stable, as Go's sort.Stable). */
  if (r->nsamples) {
    for (uint64_t i = 1; i < r->nsamples; i++) /* insertion sort: stable */
      for (uint64_t j = i; j > 0 && r->samples[j].ts < r->samples[j - 1].ts; j--) {
        pev t = r->samples[j];
        r->samples[j] = r->samples[j - 1];
        r->samples[j - 1] = t;
      }
    bool fresh;
    uint64_t *i = ctrace__map_put(&r->ps, (uint64_t)CTRACE_P_PROFILE, &fresh);
    if (i && fresh) {
      if (r->npq == r->cappq) {
        pqueue *q = realloc(r->pq, (r->cappq + 1) * sizeof *q);
        if (q) r->pq = q, r->cappq++;
      }
      if (r->npq < r->cappq) {
        memset(&r->pq[r->npq], 0, sizeof r->pq[0]);
        r->pq[r->npq].p = CTRACE_P_PROFILE;
        *i = r->npq++;
      }
    }
    if (i) os->profile_q = (uint32_t)*i;
  }
  for (uint32_t i = 0; i < r->npq; i++) {
    pqueue *q = &r->pq[i];
    q->bi = 0;
    q->off = 0;
    q->last_g = 0;
    q->has_head = q->in_frontier = false;
  }
  os->pending = r->nevents + r->nsamples;
  /* Each pass counts down its own copy. */
  const u64map *src = &r->exits_with_ts;
  for (size_t i = 0; i < src->cap; i++)
    if (src->used[i]) {
      uint64_t *c = ctrace__map_put(&os->exits_left, src->keys[i], NULL);
      if (c) *c = src->vals[i];
    }
  os->wait_next = calloc(r->npq + 1, sizeof *os->wait_next);
  os->ready_next = calloc(r->npq + 1, sizeof *os->ready_next);
  os->queued = calloc(r->npq + 1, sizeof *os->queued);
  os->due = calloc(r->npq + 1, sizeof *os->due);
  os->ready_head = NONE;
  for (uint32_t i = r->npq; i-- > 0;) recheck(os, i);
  os->last_ts = INT64_MIN;
}

int ctrace__order_next(ctrace_reader *r, pev *ev, ctrace_parse_error *err) {
  order_state *os = &r->os;
  if (r->ver < 1007) {
    if (!os->all && order1005(r, err)) return -1;
    if (os->iall >= os->nall) return 0;
    *ev = os->all[os->iall++];
    return 1;
  }
  if (!os->wait_next || !os->ready_next || !os->queued || !os->due) return ctrace__perr(err, 0, "out of memory");
  const bool replay = r->merge_log && !r->recording;
  for (;;) {
    /* Release what no exit still to come can precede. */
    if (os->bhead < os->blen &&
        (os->pending == 0 || os->buf[os->bhead].ts <= release_bound(r))) {
      *ev = os->buf[os->bhead++];
      return 1;
    }
    if (os->pending == 0) {
      if (os->unsorted) return ctrace__perr(err, os->unsorted_off, "time stamps out of order");
      if (os->sys_error) return ctrace__perr(err, os->sys_off, "%s", os->sys_msg);
      return 0;
    }
    pev e;
    if (replay) {
      /* The order is known and valid: take the next event from its queue. */
      uint32_t q = r->merge_log[os->replay_at++];
      head(r, q);
      e = r->pq[q].head;
      r->pq[q].has_head = false;
      os->pending--;
    } else {
      if (!fill_frontier(r)) return ctrace__perr(err, 0, "out of memory");
      if (os->nfront == 0) {
        /* Every P is stuck: name the earliest event that waits. */
        uint64_t off = r->len;
        for (uint32_t i = 0; i < r->npq; i++)
          if (r->pq[i].has_head && r->pq[i].head.off < off) off = r->pq[i].head.off;
        return ctrace__perr(err, off, "no consistent ordering of events possible");
      }
      uint32_t q = front_pop(r);
      pqueue *pq = &r->pq[q];
      e = pq->head;
      pq->has_head = pq->in_frontier = false;
      os->pending--;
      recheck(os, q);
      uint64_t g = pq->tg;
      gstate init = pq->tinit, next = pq->tnext;
      if (g != UNORDERED) {
        gstate *cur = gstate_of(os, g);
        if (!cur) return ctrace__perr(err, e.off, "out of memory");
        if (!ready(g, cur, init))
          return ctrace__perr(err, e.off, "event sequences are broken (offset %llu)",
                              (unsigned long long)e.off);
        if (next.seq == NOSEQ) next.seq = cur->seq;
        else if (next.seq == SEQINC) next.seq = cur->seq + 1;
        *cur = next;
        /* Queues waiting on g may be ready now. */
        uint64_t *w = ctrace__map_get(&os->waiting, g);
        if (w) {
          for (uint32_t i = (uint32_t)*w; i != NONE; i = os->wait_next[i]) recheck(os, i);
          ctrace__map_del(&os->waiting, g);
        }
      }
      if (r->recording) log_merge(r, q);
    }
    /* Local variants only order; from here on they are the plain kind (the
     * transition above was taken on the Local kind, as in Go). */
    if (e.type == CTRACE_EV_GoStartLocal) e.type = CTRACE_EV_GoStart;
    if (e.type == CTRACE_EV_GoUnblockLocal) e.type = CTRACE_EV_GoUnblock;
    if (e.type == CTRACE_EV_GoSysExitLocal) e.type = CTRACE_EV_GoSysExit;
    if (e.ts < os->last_ts && !os->unsorted) {
      os->unsorted = true;
      os->unsorted_off = e.off; /* the first event that went back in time */
    }
    os->last_ts = e.ts;
    apply_exit_time(r, &e);
    /* Nothing waiting and nothing to come that could precede it: out. */
    if (os->bhead == os->blen && (os->pending == 0 || e.ts <= release_bound(r))) {
      *ev = e;
      return 1;
    }
    if (!buf_insert(os, &e)) return ctrace__perr(err, e.off, "out of memory");
  }
}
