/* tdecode: see tdecode.h. */
#include "tdecode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A0 {NULL, NULL, NULL}
#define A1(x) {x, NULL, NULL}
#define A2(x, y) {x, y, NULL}
#define A3(x, y, z) {x, y, z}

/* Transcribed from /usr/lib/go-1.19/src/internal/trace/parser.go,
 * EventDescriptions: name, minVersion, Stack, Args. */
const td_desc td_go_events[TD_EV_COUNT] = {
    [0] = {"None", 1005, false, 0, A0},
    [1] = {"Batch", 1005, false, 2, A2("p", "ticks")},
    [2] = {"Frequency", 1005, false, 1, A1("freq")},
    [3] = {"Stack", 1005, false, 2, A2("id", "siz")},
    [4] = {"Gomaxprocs", 1005, true, 1, A1("procs")},
    [5] = {"ProcStart", 1005, false, 1, A1("thread")},
    [6] = {"ProcStop", 1005, false, 0, A0},
    [7] = {"GCStart", 1005, true, 1, A1("seq")},
    [8] = {"GCDone", 1005, false, 0, A0},
    [9] = {"GCSTWStart", 1005, false, 1, A1("kindid")},
    [10] = {"GCSTWDone", 1005, false, 0, A0},
    [11] = {"GCSweepStart", 1005, true, 0, A0},
    [12] = {"GCSweepDone", 1005, false, 2, A2("swept", "reclaimed")},
    [13] = {"GoCreate", 1005, true, 2, A2("g", "stack")},
    [14] = {"GoStart", 1005, false, 2, A2("g", "seq")},
    [15] = {"GoEnd", 1005, false, 0, A0},
    [16] = {"GoStop", 1005, true, 0, A0},
    [17] = {"GoSched", 1005, true, 0, A0},
    [18] = {"GoPreempt", 1005, true, 0, A0},
    [19] = {"GoSleep", 1005, true, 0, A0},
    [20] = {"GoBlock", 1005, true, 0, A0},
    [21] = {"GoUnblock", 1005, true, 2, A2("g", "seq")},
    [22] = {"GoBlockSend", 1005, true, 0, A0},
    [23] = {"GoBlockRecv", 1005, true, 0, A0},
    [24] = {"GoBlockSelect", 1005, true, 0, A0},
    [25] = {"GoBlockSync", 1005, true, 0, A0},
    [26] = {"GoBlockCond", 1005, true, 0, A0},
    [27] = {"GoBlockNet", 1005, true, 0, A0},
    [28] = {"GoSysCall", 1005, true, 0, A0},
    [29] = {"GoSysExit", 1005, false, 3, A3("g", "seq", "ts")},
    [30] = {"GoSysBlock", 1005, false, 0, A0},
    [31] = {"GoWaiting", 1005, false, 1, A1("g")},
    [32] = {"GoInSyscall", 1005, false, 1, A1("g")},
    [33] = {"HeapAlloc", 1005, false, 1, A1("mem")},
    [34] = {"HeapGoal", 1005, false, 1, A1("mem")},
    [35] = {"TimerGoroutine", 1005, false, 1, A1("g")},
    [36] = {"FutileWakeup", 1005, false, 0, A0},
    [37] = {"String", 1007, false, 0, A0},
    [38] = {"GoStartLocal", 1007, false, 1, A1("g")},
    [39] = {"GoUnblockLocal", 1007, true, 1, A1("g")},
    [40] = {"GoSysExitLocal", 1007, false, 2, A2("g", "ts")},
    [41] = {"GoStartLabel", 1008, false, 3, A3("g", "seq", "labelid")},
    [42] = {"GoBlockGC", 1008, true, 0, A0},
    [43] = {"GCMarkAssistStart", 1009, true, 0, A0},
    [44] = {"GCMarkAssistDone", 1009, false, 0, A0},
    [45] = {"UserTaskCreate", 1011, true, 3, A3("taskid", "pid", "typeid")},
    [46] = {"UserTaskEnd", 1011, true, 1, A1("taskid")},
    [47] = {"UserRegion", 1011, true, 3, A3("taskid", "mode", "typeid")},
    [48] = {"UserLog", 1011, true, 2, A2("id", "keyid")},
    [49] = {"CPUSample", 1019, true, 3, A3("ts", "p", "g")},
};

enum { T_BATCH = 1, T_FREQ = 2, T_STACK = 3, T_TIMER = 35, T_STRING = 37, T_USERLOG = 48 };

bool td_has_ts(int type) {
  return !(type == T_BATCH || type == T_FREQ || type == T_STACK || type == T_TIMER ||
           type == T_STRING);
}

int td_expected_nvals(int type) {
  if (type <= 0 || type >= TD_EV_COUNT || type == T_STACK || type == T_STRING) return -1;
  const td_desc *d = &td_go_events[type];
  return (td_has_ts(type) ? 1 : 0) + d->nargs + (d->stack ? 1 : 0);
}

size_t td_uvarint(const uint8_t *p, size_t n, uint64_t *out) {
  uint64_t v = 0;
  for (size_t i = 0; i < 10 && i < n; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *out = v;
      return i + 1;
    }
  }
  return 0;
}

#define GROW(arr, n, cap)                                        \
  do {                                                           \
    if ((n) == (cap)) {                                          \
      (cap) = (cap) ? 2 * (cap) : 64;                            \
      void *np_ = realloc((arr), (cap) * sizeof *(arr));         \
      if (!np_) abort();                                         \
      (arr) = np_;                                               \
    }                                                            \
  } while (0)

typedef struct dec {
  td_trace *tr;
  const uint8_t *d;
  size_t len, off;
  size_t cev, cvals, cstr, cstk, cb;
} dec;

static int fail(dec *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(x->tr->err, sizeof x->tr->err, "offset %zu: ", x->off);
  vsnprintf(x->tr->err + n, sizeof x->tr->err - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static int rd(dec *x, uint64_t *v) {
  size_t k = td_uvarint(x->d + x->off, x->len - x->off, v);
  if (!k) return fail(x, "bad or truncated varint");
  x->off += k;
  return 0;
}

static void push_val(dec *x, uint64_t v) {
  td_trace *tr = x->tr;
  GROW(tr->vals, tr->nvals, x->cvals);
  tr->vals[tr->nvals++] = v;
}

uint64_t td_val(const td_trace *tr, const td_event *e, uint32_t i) {
  return i < e->nv ? tr->vals[e->voff + i] : 0;
}

/* Indexes of strings and stacks by id: open addressing over positions + 1
 * (0 is empty), doubled at half load. */
static size_t slot(uint64_t id, size_t cap) { return (size_t)(id * 0x9E3779B97F4A7C15u) & (cap - 1); }

static size_t ix_find(const size_t *ix, size_t cap, uint64_t id, const void *arr, size_t stride) {
  if (!cap) return SIZE_MAX;
  for (size_t i = slot(id, cap);; i = (i + 1) & (cap - 1)) {
    if (!ix[i]) return SIZE_MAX;
    uint64_t have;
    memcpy(&have, (const char *)arr + (ix[i] - 1) * stride, sizeof have); /* id is first */
    if (have == id) return ix[i] - 1;
  }
}

static void ix_add(size_t **ix, size_t *cap, size_t n, const void *arr, size_t stride) {
  /* arr[n-1] was just appended. */
  if (2 * n > *cap) {
    size_t nc = *cap ? 2 * *cap : 256;
    size_t *nx = calloc(nc, sizeof *nx);
    if (!nx) abort();
    free(*ix);
    *ix = nx;
    *cap = nc;
    for (size_t k = 0; k + 1 < n; k++) ix_add(ix, cap, k + 1, arr, stride);
  }
  uint64_t id;
  memcpy(&id, (const char *)arr + (n - 1) * stride, sizeof id);
  size_t i = slot(id, *cap);
  while ((*ix)[i]) i = (i + 1) & (*cap - 1);
  (*ix)[i] = n;
}

const char *td_str(const td_trace *tr, uint64_t id) {
  size_t i = ix_find(tr->str_ix, tr->str_cap, id, tr->str, sizeof *tr->str);
  return i == SIZE_MAX ? NULL : tr->str[i].z;
}

const td_stack *td_stack_get(const td_trace *tr, uint64_t id) {
  size_t i = ix_find(tr->stk_ix, tr->stk_cap, id, tr->stk, sizeof *tr->stk);
  return i == SIZE_MAX ? NULL : &tr->stk[i];
}

size_t td_count(const td_trace *tr, int type) {
  size_t n = 0;
  for (size_t i = 0; i < tr->nev; i++) n += tr->ev[i].type == type;
  return n;
}

const td_event *td_next(const td_trace *tr, int type, size_t *it) {
  for (; *it < tr->nev; (*it)++)
    if (tr->ev[*it].type == type) return &tr->ev[(*it)++];
  return NULL;
}

static int read_bytes(dec *x, const uint8_t **s, size_t *n) {
  uint64_t l;
  if (rd(x, &l)) return -1;
  if (l > x->len - x->off) return fail(x, "string of %llu bytes runs past the end",
                                       (unsigned long long)l);
  *s = x->d + x->off;
  *n = (size_t)l;
  x->off += (size_t)l;
  return 0;
}

static int one_event(dec *x) {
  td_trace *tr = x->tr;
  size_t off0 = x->off;
  uint8_t b = x->d[x->off++];
  td_event e;
  memset(&e, 0, sizeof e);
  e.type = b & 0x3f;
  e.count = b >> 6;
  e.off = off0;
  e.batch = tr->nb ? (long)tr->nb - 1 : -1;
  e.p = tr->nb ? tr->b[tr->nb - 1].p : 0;
  e.voff = tr->nvals;
  if (e.type == 0 || e.type >= TD_EV_COUNT) {
    x->off = off0;
    return fail(x, "unknown event type %d", e.type);
  }
  if (e.type == T_STRING) {
    uint64_t id;
    if (rd(x, &id)) return -1;
    if (id == 0) return fail(x, "string with id 0");
    if (td_str(tr, id)) return fail(x, "duplicate string id %llu", (unsigned long long)id);
    if (read_bytes(x, &e.s, &e.slen)) return -1;
    if (e.slen == 0) return fail(x, "string %llu has length 0", (unsigned long long)id);
    if (e.slen > 1000000) return fail(x, "string %llu too long", (unsigned long long)id);
    push_val(x, id);
    push_val(x, e.slen);
    e.nv = 2;
    GROW(tr->str, tr->nstr, x->cstr);
    td_string *s = &tr->str[tr->nstr++];
    s->id = id;
    s->len = e.slen;
    s->z = malloc(e.slen + 1);
    if (!s->z) abort();
    memcpy(s->z, e.s, e.slen);
    s->z[e.slen] = 0;
    ix_add(&tr->str_ix, &tr->str_cap, tr->nstr, tr->str, sizeof *tr->str);
  } else if (e.count < 3) {
    for (int i = 0; i <= e.count; i++) {
      uint64_t v;
      if (rd(x, &v)) return -1;
      push_val(x, v);
      e.nv++;
    }
  } else {
    uint64_t l;
    if (rd(x, &l)) return -1;
    if (l > x->len - x->off) return fail(x, "event length %llu runs past the end",
                                         (unsigned long long)l);
    size_t end = x->off + (size_t)l;
    while (x->off < end) {
      uint64_t v;
      size_t k = td_uvarint(x->d + x->off, end - x->off, &v);
      if (!k) return fail(x, "event value runs past its length");
      x->off += k;
      push_val(x, v);
      e.nv++;
    }
  }
  if (e.type == T_USERLOG && read_bytes(x, &e.s, &e.slen)) return -1;

  /* Per-type meaning. */
  if (e.type == T_BATCH) {
    if (e.nv != 2) return fail(x, "Batch with %u values", e.nv);
    GROW(tr->b, tr->nb, x->cb);
    td_batch *bt = &tr->b[tr->nb++];
    bt->p = (int64_t)td_val(tr, &e, 0);
    bt->ticks = bt->last = td_val(tr, &e, 1);
    bt->first = tr->nev + 1;
    bt->nev = 0;
    e.batch = (long)tr->nb - 1;
    e.p = bt->p;
  } else if (e.type == T_FREQ) {
    tr->freq = td_val(tr, &e, 0);
    tr->nfreq++;
  } else if (e.type == T_STACK) {
    if (e.nv < 2) return fail(x, "Stack with %u values", e.nv);
    uint64_t id = td_val(tr, &e, 0), n = td_val(tr, &e, 1);
    if (n > 1000) return fail(x, "Stack %llu with %llu frames", (unsigned long long)id,
                              (unsigned long long)n);
    if (e.nv != 2 + 4 * n) return fail(x, "Stack %llu: %llu frames but %u values",
                                       (unsigned long long)id, (unsigned long long)n, e.nv);
    if (id == 0) return fail(x, "Stack with id 0");
    if (td_stack_get(tr, id)) return fail(x, "duplicate stack id %llu", (unsigned long long)id);
    GROW(tr->stk, tr->nstk, x->cstk);
    td_stack *s = &tr->stk[tr->nstk++];
    s->id = id;
    s->n = n;
    s->f = calloc(n ? n : 1, sizeof *s->f);
    if (!s->f) abort();
    for (uint64_t i = 0; i < n; i++) {
      s->f[i].pc = td_val(tr, &e, 2 + 4 * i);
      s->f[i].fn = td_val(tr, &e, 3 + 4 * i);
      s->f[i].file = td_val(tr, &e, 4 + 4 * i);
      s->f[i].line = td_val(tr, &e, 5 + 4 * i);
    }
    ix_add(&tr->stk_ix, &tr->stk_cap, tr->nstk, tr->stk, sizeof *tr->stk);
  }
  if (td_has_ts(e.type)) {
    if (!tr->nb) return fail(x, "%s before any batch", td_go_events[e.type].name);
    if (e.nv < 1) return fail(x, "%s without a timestamp", td_go_events[e.type].name);
    td_batch *bt = &tr->b[tr->nb - 1];
    uint64_t diff = td_val(tr, &e, 0);
    if (bt->last + diff < bt->last) return fail(x, "tick overflow");
    e.has_ts = true;
    e.ts = bt->last + diff;
    bt->last = e.ts;
  }
  if (e.type != T_STRING && e.type != T_STACK) {
    int want = td_expected_nvals(e.type);
    int from = td_has_ts(e.type) ? 1 : 0;
    bool stack = td_go_events[e.type].stack && (int)e.nv == want;
    for (int i = from; i < (int)e.nv && e.na < 4; i++) {
      if (stack && i == (int)e.nv - 1) {
        e.has_stk = true;
        e.stk = td_val(tr, &e, (uint32_t)i);
      } else {
        e.a[e.na++] = td_val(tr, &e, (uint32_t)i);
      }
    }
  }
  if (tr->nb && e.type != T_BATCH) tr->b[tr->nb - 1].nev++;
  GROW(tr->ev, tr->nev, x->cev);
  tr->ev[tr->nev++] = e;
  return 0;
}

int td_decode(const uint8_t *data, size_t len, td_trace *tr) {
  memset(tr, 0, sizeof *tr);
  dec x = {.tr = tr, .d = data, .len = len};
  static const char hdr[16] = "go 1.11 trace\0\0\0";
  if (len < 16 || memcmp(data, hdr, 16) != 0) return fail(&x, "bad header");
  x.off = 16;
  while (x.off < len)
    if (one_event(&x)) return -1;
  tr->freq_last = tr->nev > 0 && tr->ev[tr->nev - 1].type == T_FREQ;
  return 0;
}

void td_free(td_trace *tr) {
  for (size_t i = 0; i < tr->nstr; i++) free(tr->str[i].z);
  for (size_t i = 0; i < tr->nstk; i++) free(tr->stk[i].f);
  free(tr->ev);
  free(tr->vals);
  free(tr->str);
  free(tr->stk);
  free(tr->b);
  free(tr->stk_ix);
  free(tr->str_ix);
  memset(tr, 0, sizeof *tr);
}
