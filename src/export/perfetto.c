/* The Perfetto encoder: the walk's records (model.h) as Perfetto's protobuf
 * trace format (a Trace of TracePackets), written without the Perfetto SDK.
 * Field numbers are those of Perfetto's public protos
 * (protos/perfetto/trace/trace_packet.proto, trace_packet_defaults.proto,
 * clock_snapshot.proto, track_event/track_event.proto,
 * track_event/track_descriptor.proto, interned_data/interned_data.proto,
 * profiling/profile_common.proto).
 *
 * A browser holds the packets, inflated, at 2 to 4 times their size, so
 * every byte an event counts (the file holds them deflated in bundles,
 * deflate.c, unless asked plain): times are differences on an
 * incremental clock of the sequence's own (stamp), counters ride as extra
 * values on the event of their time (counter_joins), flow ids and track
 * uuids are small varints.
 *
 * Each trace is a packet sequence of its own (trusted_packet_sequence_id =
 * its position + 1), whose first packet clears incremental state and sets
 * the sequence's defaults (its clock, the counter tracks of extra values),
 * and whose clock snapshot ties that clock to BOOTTIME, the timeline, and
 * to REALTIME where the traces are dated;
 * what is interned is the sequence's own, as the trace's stack ids are. A
 * track event is held until the next record (the counters of its time may
 * join it), the rest framed as they are made. Interned, in the packet of
 * the first event that needs them: a stack (its function names, source
 * paths, frames and the callstack itself, whose iid is the reader's stack
 * id), and event names and categories, which most events repeat (up to
 * NAMES_MAX of each a sequence: log messages are without end; the rest go
 * inline). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse/pb.h"
#include "analyse/analyse.h"
#include "export/deflate.h"
#include "export/model.h"
#include "parse/map.h"

/* Perfetto field numbers. */
enum {
  TRACE_PACKET = 1,
  PACKET_TIMESTAMP = 8, PACKET_SEQUENCE_ID = 10, PACKET_TRACK_EVENT = 11, PACKET_INTERNED_DATA = 12,
  PACKET_SEQUENCE_FLAGS = 13, PACKET_TRACK_DESCRIPTOR = 60, PACKET_CLOCK_SNAPSHOT = 6,
  PACKET_TIMESTAMP_CLOCK_ID = 58, PACKET_DEFAULTS = 59,
  DEFAULTS_TIMESTAMP_CLOCK_ID = 58, DEFAULTS_TRACK_EVENT = 11, TED_EXTRA_COUNTER_TRACK_UUIDS = 31,
  CS_CLOCKS = 1, CLOCK_ID = 1, CLOCK_TIMESTAMP = 2, CLOCK_INCREMENTAL = 3, CLOCK_UNIT_NS = 4,
  CLOCK_REALTIME = 1, CLOCK_BOOTTIME = 6, CLOCK_SEQ = 64, /* 64-127: the sequence's own clocks */
  TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT_UUID = 5, TD_COUNTER = 8,
  PD_PID = 1, PD_PROCESS_NAME = 6,
  THD_PID = 1, THD_TID = 2, THD_THREAD_NAME = 5,
  TE_TYPE = 9, TE_TRACK_UUID = 11, TE_CATEGORIES = 22, TE_NAME = 23, TE_COUNTER_VALUE = 30,
  TE_FLOW_IDS_OLD = 36, TE_TERMINATING_FLOW_IDS_OLD = 42, TE_CALLSTACK_IID = 56,
  TE_EXTRA_COUNTER_VALUES = 12,
  TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
  SEQ_INCREMENTAL_STATE_CLEARED = 1,
  ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7, ID_SOURCE_PATHS = 18,
  IS_IID = 1, IS_STR = 2,
  ID_EVENT_CATEGORIES = 1, ID_EVENT_NAMES = 2, EN_IID = 1, EN_NAME = 2,
  TE_CATEGORY_IIDS = 3, TE_NAME_IID = 10,
  FRAME_IID = 1, FRAME_FUNCTION_NAME_ID = 2, FRAME_SOURCE_PATH_IID = 5, FRAME_LINE_NUMBER = 6,
  CS_IID = 1, CS_FRAME_IDS = 2,
};

enum { NAMES_MAX = 4096 };

/* Strings interned by content: a hash to the iid, and the strings by iid
 * to tell a collision from a match. */
typedef struct strtab {
  u64map ids;
  char **strs;
  size_t n;
  /* Lasting names (ex_rec.lasting) by address, in a slot by address: the
   * few the walk names nearly every event with ("goroutine", "running",
   * "runnable" ...) are found without hashing or comparing them, which
   * took an eighth of the export's time. */
  struct {
    const char *s;
    uint64_t iid;
  } seen[256];
} strtab;

/* The counters a track event carries as extra values (TrackEventDefaults'
 * extra_counter_track_uuids), in this order: goroutines by state, then
 * threads. A value is written for each of the first N, N the last that
 * changed, so the likeliest to change come first. */
enum { XC_THREADS = 4, XC_N = 6 };

typedef struct pf {
  ex_enc e; /* first: the walk holds a pointer to it */
  const ex_source *s;
  /* The packet sequence: the trace's position + 1, kept because the
   * pending packet of a trace is framed once the next one has begun. */
  uint32_t seq;
  pbuf out; /* packets not yet written, the last maybe still open */
  ex_deflate *z; /* NULL: packets written as they are */
  pbuf pkt, sub, sub2, interned;
  strtab names, cats;
  /* Interned on this sequence: stack ids (value 1, or 2 for an empty
   * stack), and function names, source paths (by the reader's string
   * pointer) and frames (by pc) to their iids. */
  u64map stacks, funcs, files, frames;
  uint64_t nfuncs, nfiles, nframes;
  u64map tracks; /* a track's key (its id << 4 | its kind) to its number */
  uint64_t ntracks;
  /* The last tracks met, in a slot by key: nearly every event names a
   * goroutine's or a P's track, found here before the map (5% of the
   * export's time). A track's number never changes once given. */
  struct {
    uint64_t key, n; /* n 0: empty */
  } recent[256];
  /* The sequence's clock: the time of its last packet on it, and its unit
   * in nanoseconds. */
  int64_t clock, unit;
  /* The track event open in out and not yet closed, at pend_ts,
   * which counters of the same time join: it carries the first nextra of
   * xc. */
  bool pending;
  int64_t pend_ts;
  size_t pend_pkt, pend_te; /* where its packet and event begin in out */
  int nextra;
  unsigned joined; /* the groups in it: 1 goroutines, 2 threads */
  int64_t xc[XC_N];
  bool xc_described[2]; /* the goroutine and thread counter groups */
} pf;

/* Track uuids, small because every event names its track: a number per
 * track of the trace, times the number of traces plus the trace's
 * position, so that traces share one file without sharing tracks. The
 * process is 0, the counters' series fixed numbers below TRACK_FIRST (a
 * series id is its group << 3 | its index); a task, of which there may be
 * millions, an odd number from its id; the others, as few as goroutines
 * and Ps, an even number in the order they come (a map). */
enum { TRACK_FIRST = 32 };

/* A track's number (the slow path of uuid: a track not in its slot). */
static __attribute__((noinline)) uint64_t track_number(pf *p, uint64_t key, size_t slot) {
  bool fresh;
  uint64_t *v = ctrace__map_put(&p->tracks, key, &fresh);
  if (!v) {
    p->e.oom = true;
    return 0;
  }
  if (fresh) *v = TRACK_FIRST + 2 * p->ntracks++;
  p->recent[slot].key = key;
  p->recent[slot].n = *v;
  return *v;
}

static inline size_t recent_slot(const pf *p, uint64_t key) {
  return (key ^ key >> 8) % (sizeof p->recent / sizeof p->recent[0]);
}

static inline uint64_t uuid(pf *p, int kind, uint64_t id) {
  uint64_t n = 0;
  if (kind == EX_COUNTER) {
    n = 1 + (id >> 3) * 8 + (id & 7);
  } else if (kind == EX_TASK) {
    n = TRACK_FIRST + 2 * id + 1;
  } else if (kind != EX_PROCESS) {
    uint64_t key = id << 4 | (uint64_t)kind;
    size_t slot = recent_slot(p, key);
    n = p->recent[slot].n && p->recent[slot].key == key ? p->recent[slot].n : track_number(p, key, slot);
  }
  return n * p->s->count + p->s->index + 1;
}

/* What the deflater's rc says, in the export's flags. */
static void deflated(pf *p, int rc) {
  p->e.oom |= rc == EX_DEFLATE_OOM;
  p->e.werr |= rc == EX_DEFLATE_WERR;
}

/* Writes the framed packets once there are many, or all: to the bundles
 * to deflate, or as they are. */
static void drain(pf *p, bool all) {
  if (p->out.len < (all ? 1 : 1u << 16)) return;
  if (p->out.oom) {
    p->e.oom = true;
  } else if (p->z) {
    deflated(p, ctrace__ex_deflate_write(p->z, p->out.b, p->out.len));
  } else if (fwrite(p->out.b, 1, p->out.len, p->e.out) != p->out.len) {
    p->e.werr = true;
  }
  if (!p->e.oom && !p->e.werr) p->e.bytes += p->out.len;
  p->out.len = 0;
}

/* Frames the packet built in p->pkt into the output. */
static void flush(pf *p) {
  pb_uint(&p->pkt, PACKET_SEQUENCE_ID, p->seq);
  pb_msg(&p->out, TRACE_PACKET, &p->pkt);
  drain(p, false);
}

/* The iid of a name in t (0: write it inline), interned into field of
 * p->interned when new. */
static __attribute__((noinline)) uint64_t intern_name_slow(pf *p, strtab *t, int field, const char *s) {
  uint64_t h = 14695981039346656037ull; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) h = (h ^ *c) * 1099511628211ull;
  uint64_t *v = ctrace__map_get(&t->ids, h);
  if (v) return strcmp(t->strs[*v - 1], s) == 0 ? *v : 0;
  if (t->n == NAMES_MAX) return 0;
  if (!t->strs && !(t->strs = malloc(NAMES_MAX * sizeof *t->strs))) return 0;
  char *copy = strdup(s);
  if (!copy || !(v = ctrace__map_put(&t->ids, h, NULL))) {
    free(copy);
    return 0;
  }
  t->strs[t->n++] = copy;
  *v = t->n;
  pb_uint(&p->sub2, EN_IID, *v);
  pb_str(&p->sub2, EN_NAME, s);
  pb_msg(&p->interned, field, &p->sub2);
  return *v;
}

/* The slot of a lasting name in strtab.seen. */
static inline size_t seen_slot(const strtab *t, const char *s) {
  return ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) % (sizeof t->seen / sizeof t->seen[0]);
}

/* The same, for a name lasting (ex_rec.lasting) or not. */
static inline uint64_t intern_name(pf *p, strtab *t, int field, const char *s, bool lasting) {
  size_t slot = seen_slot(t, s);
  if (lasting && t->seen[slot].s == s) return t->seen[slot].iid;
  uint64_t iid = intern_name_slow(p, t, field, s);
  if (lasting && iid) t->seen[slot].s = s, t->seen[slot].iid = iid;
  return iid;
}

static void strtab_free(strtab *t) {
  for (size_t i = 0; i < t->n; i++) free(t->strs[i]);
  free(t->strs);
  ctrace__map_free(&t->ids);
  *t = (strtab){0};
}

/* The iid of a string on the sequence, interned into field of p->interned
 * when new. */
static uint64_t intern_str(pf *p, u64map *m, uint64_t *n, int field, const char *s) {
  bool fresh;
  uint64_t *v = ctrace__map_put(m, (uint64_t)(uintptr_t)s, &fresh);
  if (!v) {
    p->e.oom = true;
    return 0;
  }
  if (fresh) {
    *v = ++*n;
    pb_uint(&p->sub2, IS_IID, *v);
    pb_str(&p->sub2, IS_STR, s);
    pb_msg(&p->interned, field, &p->sub2);
  }
  return *v;
}

static uint64_t intern_frame(pf *p, const ctrace_frame *f) {
  bool fresh = true;
  uint64_t *v = NULL, iid;
  if (f->pc) { /* a frame without a pc is not shared */
    if (!(v = ctrace__map_put(&p->frames, f->pc, &fresh))) {
      p->e.oom = true;
      return 0;
    }
  }
  if (!fresh) return *v;
  iid = ++p->nframes;
  if (v) *v = iid;
  uint64_t fn = intern_str(p, &p->funcs, &p->nfuncs, ID_FUNCTION_NAMES, f->func ? f->func : "");
  uint64_t file = f->file && f->file[0] ? intern_str(p, &p->files, &p->nfiles, ID_SOURCE_PATHS, f->file) : 0;
  pb_uint(&p->sub2, FRAME_IID, iid);
  pb_uint(&p->sub2, FRAME_FUNCTION_NAME_ID, fn);
  if (file) pb_uint(&p->sub2, FRAME_SOURCE_PATH_IID, file);
  if (f->line) pb_uint(&p->sub2, FRAME_LINE_NUMBER, f->line);
  pb_msg(&p->interned, ID_FRAMES, &p->sub2);
  return iid;
}

/* The callstack iid of a stack (0 for none), interned when new. */
static uint64_t intern_stack(pf *p, uint64_t stack) {
  bool fresh;
  uint64_t *v = ctrace__map_put(&p->stacks, stack, &fresh);
  if (!v) {
    p->e.oom = true;
    return 0;
  }
  if (!fresh) return *v == 1 ? stack : 0;
  const ctrace_frame *fr;
  size_t n = ctrace__model_stack(p->s->r, stack, &fr);
  *v = n ? 1 : 2;
  if (!n) return 0;
  /* The frames' iids first (each may intern its own), then the callstack,
   * root first as Perfetto wants it; the reader's are leaf first. */
  pbuf ids = {0};
  for (size_t i = n; i-- > 0;) pb_uint(&ids, CS_FRAME_IDS, intern_frame(p, &fr[i]));
  pb_uint(&p->sub2, CS_IID, stack);
  pb_put(&p->sub2, ids.b, ids.len);
  if (ids.oom) p->e.oom = true;
  free(ids.b);
  pb_msg(&p->interned, ID_CALLSTACKS, &p->sub2);
  return stack;
}

static void track(pf *p, const ex_rec *r) {
  uint64_t u = uuid(p, r->kind, r->id);
  if (r->kind == EX_COUNTER) { /* a track per series, named "GROUP SERIES" */
    if (r->id < 2) p->xc_described[r->id] = true;
    for (int i = 0; i < r->nseries; i++) {
      char name[128];
      snprintf(name, sizeof name, "%s %s", r->name, r->series[i]);
      pb_uint(&p->sub, TD_UUID, uuid(p, EX_COUNTER, r->id << 3 | (uint64_t)i));
      pb_uint(&p->sub, TD_PARENT_UUID, uuid(p, EX_PROCESS, 0));
      pb_str(&p->sub, TD_NAME, name);
      pb_msg(&p->sub, TD_COUNTER, &p->sub2); /* an empty CounterDescriptor */
      pb_msg(&p->pkt, PACKET_TRACK_DESCRIPTOR, &p->sub);
      flush(p);
    }
    return;
  }
  pb_uint(&p->sub, TD_UUID, u);
  if (r->kind == EX_PROCESS) {
    pb_uint(&p->sub2, PD_PID, p->s->pid);
    pb_str(&p->sub2, PD_PROCESS_NAME, r->name);
    pb_msg(&p->sub, TD_PROCESS, &p->sub2);
  } else if (r->kind == EX_GOROUTINE) {
    pb_uint(&p->sub, TD_PARENT_UUID, uuid(p, EX_PROCESS, 0));
    pb_uint(&p->sub2, THD_PID, p->s->pid);
    pb_uint(&p->sub2, THD_TID, r->id);
    pb_str(&p->sub2, THD_THREAD_NAME, r->name);
    pb_msg(&p->sub, TD_THREAD, &p->sub2);
  } else if (r->kind == EX_TASK) {
    char name[512];
    snprintf(name, sizeof name, "%s %llu", r->task_type[0] ? r->task_type : "task",
             (unsigned long long)r->id);
    pb_uint(&p->sub, TD_PARENT_UUID, uuid(p, EX_PROCESS, 0));
    pb_str(&p->sub, TD_NAME, name);
  } else {
    pb_uint(&p->sub, TD_PARENT_UUID,
            r->kind == EX_REGIONS ? uuid(p, EX_GOROUTINE, r->id) : uuid(p, EX_PROCESS, 0));
    pb_str(&p->sub, TD_NAME, r->name);
  }
  pb_msg(&p->pkt, PACKET_TRACK_DESCRIPTOR, &p->sub);
  flush(p);
}

/* A track event's packet is written in place in p->out through a cursor
 * of its own: room for the whole packet is made once, then its fields are
 * stored with no check, and out's length set once at the end. Through
 * pb.h's calls, each byte stored (an unsigned char, which may alias
 * anything) made the compiler load out's length, capacity and base again
 * for the next field: a fifth of the export's instructions. */
static unsigned char *put_varint(unsigned char *q, uint64_t v) {
  while (v > 0x7f) {
    *q++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *q++ = (unsigned char)v;
  return q;
}

static unsigned char *put_uint(unsigned char *q, int field, uint64_t v) {
  return put_varint(put_varint(q, (uint64_t)field << 3 | PB_VARINT), v);
}

/* Room for n more bytes in out: where they go, or NULL (oom set). */
static unsigned char *room(pf *p, size_t n) {
  return pb_room(&p->out, n) ? p->out.b + p->out.len : NULL;
}

/* The packet's time on the sequence's incremental clock: the time since
 * the sequence's last packet, in its unit. A time that goes back, or is
 * not a multiple of the unit, is written whole on the boot clock, which
 * the sequence's clock snapshot makes the same time line; the incremental
 * clock then stays where it was. */
static unsigned char *stamp(pf *p, unsigned char *q, int64_t ts) {
  int64_t d = ts - p->clock;
  /* A unit of 1 ns (Go's traces) without a division: it was a third of
   * the time spent opening a packet. */
  if (d >= 0 && (p->unit == 1 || d % p->unit == 0)) {
    p->clock = ts;
    return put_uint(q, PACKET_TIMESTAMP, (uint64_t)(p->unit == 1 ? d : d / p->unit));
  }
  q = put_uint(q, PACKET_TIMESTAMP_CLOCK_ID, CLOCK_BOOTTIME);
  return put_uint(q, PACKET_TIMESTAMP, (uint64_t)ts);
}

/* The most a varint field takes (a tag of two bytes, a value of ten), and
 * the most a packet's head and the fields written through the cursor
 * take: the packet's tag and length byte, a time on the boot clock (two
 * fields), the event's tag and length byte, and four fields. */
enum { FIELD_MAX = 12, PACKET_ROOM = 2 + 2 * FIELD_MAX + 2 + 4 * FIELD_MAX };

/* Opens a track event's packet and its event at q (room made): the
 * positions of their length bytes go to *pkt and *te. */
static unsigned char *te_open(pf *p, unsigned char *q, int64_t ts, size_t *pkt, size_t *te) {
  *q++ = TRACE_PACKET << 3 | PB_BYTES;
  *pkt = (size_t)(q++ - p->out.b);
  q = stamp(p, q, ts);
  *q++ = PACKET_TRACK_EVENT << 3 | PB_BYTES;
  *te = (size_t)(q++ - p->out.b);
  return q;
}

/* ... and closes them, out's length at the event's end, with the
 * interned data its event needs. */
static inline void te_close(pf *p, size_t pkt, size_t te) {
  pb_close(&p->out, te);
  if (p->interned.len) pb_msg(&p->out, PACKET_INTERNED_DATA, &p->interned);
  unsigned char *q = room(p, FIELD_MAX);
  if (q) p->out.len = (size_t)(put_uint(q, PACKET_SEQUENCE_ID, p->seq) - p->out.b);
  pb_close(&p->out, pkt);
  drain(p, false);
}

/* A flow's id, small as a varint: the walk's ids are unique across the
 * traces by a high part (the trace's position), which would make every id
 * 6 bytes; here the trace's position is interleaved in the low part. */
static uint64_t flow_id(const pf *p, uint64_t id) {
  uint64_t local = id & ((1ull << 40) - 1);
  return (local - 1) * p->s->count + p->s->index + 1;
}

/* Frames the pending track event, with its counter values. */
static inline void pend_flush(pf *p) {
  if (!p->pending) return;
  p->pending = false;
  unsigned char *q = room(p, XC_N * FIELD_MAX);
  if (!q) return;
  for (int i = 0; i < p->nextra; i++) q = put_uint(q, TE_EXTRA_COUNTER_VALUES, (uint64_t)p->xc[i]);
  p->out.len = (size_t)(q - p->out.b);
  te_close(p, p->pend_pkt, p->pend_te);
  p->nextra = 0;
  p->joined = 0;
}

/* A TrackEvent of type on track, with what r gives, left pending. It
 * needs the sequence's incremental state (its time is on the sequence's
 * incremental clock, its names may be interned) but does not say so
 * (SEQ_NEEDS_INCREMENTAL_STATE): Perfetto's reader uses that flag only to
 * drop a packet while the state is lost, after a gap in a ring buffer,
 * which a file written whole never has, and it was 2 of an event's 14 to
 * 23 bytes. */
static void event(pf *p, const ex_rec *r, int type, uint64_t track) {
  /* What is interned first (into p->interned), then the packet. */
  uint64_t cs = r->stack ? intern_stack(p, r->stack) : 0;
  uint64_t cat = 0, name = 0;
  bool has_cat = type != TYPE_SLICE_END && r->cat && r->cat[0];
  if (has_cat) cat = intern_name(p, &p->cats, ID_EVENT_CATEGORIES, r->cat, r->lasting & EX_CAT_LASTS);
  if (type != TYPE_SLICE_END) name = intern_name(p, &p->names, ID_EVENT_NAMES, r->name, r->lasting & EX_NAME_LASTS);
  unsigned char *q = room(p, PACKET_ROOM);
  if (!q) return;
  q = te_open(p, q, r->ts, &p->pend_pkt, &p->pend_te);
  q = put_uint(q, TE_TYPE, (uint64_t)type);
  q = put_uint(q, TE_TRACK_UUID, track);
  if (cat) q = put_uint(q, TE_CATEGORY_IIDS, cat);
  if (name) q = put_uint(q, TE_NAME_IID, name);
  p->out.len = (size_t)(q - p->out.b);
  /* Past NAMES_MAX of a sequence, names go inline. */
  if (has_cat && !cat) pb_str(&p->out, TE_CATEGORIES, r->cat);
  if (type != TYPE_SLICE_END && !name) pb_str(&p->out, TE_NAME, r->name);
  /* The varint fields Perfetto's reader takes as well as the fixed64 ones
   * (flow_ids_old, terminating_flow_ids_old): 3 bytes an id, not 9. */
  if (r->flow_out) pb_uint(&p->out, TE_FLOW_IDS_OLD, flow_id(p, r->flow_out));
  if (r->flow_in) pb_uint(&p->out, TE_TERMINATING_FLOW_IDS_OLD, flow_id(p, r->flow_in));
  if (cs) pb_uint(&p->out, TE_CALLSTACK_IID, cs);
  p->pending = true;
  p->pend_ts = r->ts;
  p->nextra = 0;
  p->joined = 0;
}

/* The first index of a counter group in xc, -1 for one not there. */
static int xc_base(const ex_rec *r) {
  return r->id == EX_C_GOROUTINES ? 0 : r->id == EX_C_THREADS ? XC_THREADS : -1;
}

/* Counter values join the pending track event of their time when they
 * can: as its extra counter values, a byte or two each, instead of a
 * packet each. */
static bool counter_joins(pf *p, const ex_rec *r) {
  int base = xc_base(r);
  if (base < 0 || !p->pending || p->pend_ts != r->ts) return false;
  /* A second change of a group at one time keeps its own packet: both
   * values stay in the trace. */
  unsigned group = base ? 2 : 1;
  if (p->joined & group) return false;
  p->joined |= group;
  /* Every value up to the last one written names a described track. */
  if (base == XC_THREADS && !p->xc_described[0]) return false;
  int last = -1;
  for (int i = 0; i < r->nseries; i++) {
    p->xc[base + i] = r->values[i];
    if (r->changed & 1u << i) last = base + i;
  }
  if (last + 1 > p->nextra) p->nextra = last + 1;
  return true;
}

static void counter(pf *p, const ex_rec *r) {
  int base = xc_base(r);
  for (int i = 0; i < r->nseries; i++) {
    if (base >= 0) p->xc[base + i] = r->values[i];
    if (!(r->changed & 1u << i)) continue;
    uint64_t track = uuid(p, EX_COUNTER, r->id << 3 | (uint64_t)i);
    size_t pkt, te;
    unsigned char *q = room(p, PACKET_ROOM);
    if (!q) return;
    q = te_open(p, q, r->ts, &pkt, &te);
    q = put_uint(q, TE_TYPE, TYPE_COUNTER);
    q = put_uint(q, TE_TRACK_UUID, track);
    q = put_uint(q, TE_COUNTER_VALUE, (uint64_t)r->values[i]);
    p->out.len = (size_t)(q - p->out.b);
    te_close(p, pkt, te);
  }
}

/* A goroutine gone (EX_GONE): its tracks' numbers, never given again,
 * and its P slices' name by address. */
static void forget(pf *p, const ex_rec *r) {
  for (int kind = EX_GOROUTINE; kind <= EX_REGIONS; kind++) {
    uint64_t key = r->id << 4 | (uint64_t)kind;
    size_t slot = recent_slot(p, key);
    if (p->recent[slot].key == key) p->recent[slot].n = 0;
    ctrace__map_del(&p->tracks, key);
  }
  if (r->name) {
    size_t slot = seen_slot(&p->names, r->name);
    if (p->names.seen[slot].s == r->name) p->names.seen[slot].s = NULL;
  }
}

static void pf_rec(ex_enc *e, const ex_rec *r) {
  pf *p = (pf *)e;
  if (r->type == EX_GONE) {
    forget(p, r);
    return;
  }
  if (r->type == EX_COUNTER_VALUES && counter_joins(p, r)) return;
  /* Packets go out in the order their times were taken on the clock. */
  pend_flush(p);
  switch (r->type) {
  case EX_TRACK: track(p, r); break;
  case EX_BEGIN: event(p, r, TYPE_SLICE_BEGIN, uuid(p, r->kind, r->id)); break;
  case EX_END: event(p, r, TYPE_SLICE_END, uuid(p, r->kind, r->id)); break;
  case EX_INSTANT: event(p, r, TYPE_INSTANT, uuid(p, r->kind, r->id)); break;
  case EX_COUNTER_VALUES: counter(p, r); break;
  }
  /* Memory ran out where out's writes were dropped since. The other
   * buffers' running out reaches out when they are framed into it
   * (pb_msg): interned with the next track event, the rest at once. */
  if (p->out.oom) p->e.oom = true;
}

/* The interned tables of one packet sequence (one trace). */
static void interned_free(pf *p) {
  ctrace__map_free(&p->stacks);
  ctrace__map_free(&p->funcs);
  ctrace__map_free(&p->files);
  ctrace__map_free(&p->frames);
  ctrace__map_free(&p->tracks);
  memset(p->recent, 0, sizeof p->recent);
  strtab_free(&p->names);
  strtab_free(&p->cats);
}

/* The unit of the sequence's clock: the greatest common divisor of the
 * first times of the trace (Go 1.22+ traces count in 64 ns on amd64),
 * which makes most differences a byte shorter. A later time it does not
 * divide goes on the boot clock (stamp). */
static int64_t clock_unit(ctrace_reader *r) {
  ctrace__model_rewind(r);
  ctrace_event ev;
  uint64_t g = 0;
  int n = 0;
  while (n < 4096 && ctrace__model_next(r, &ev)) {
    uint64_t a = (uint64_t)(ev.ts > 0 ? ev.ts : 0), b = g;
    while (b) { uint64_t t = a % b; a = b; b = t; }
    if (ev.ts > 0) g = a, n++;
  }
  ctrace__model_rewind(r);
  return n >= 16 && g > 0 && g <= 1000 ? (int64_t)g : 1;
}

static void pf_begin(ex_enc *e, const ex_source *s) {
  pf *p = (pf *)e;
  pend_flush(p);
  p->s = s;
  p->seq = s->index + 1;
  interned_free(p);
  p->nfuncs = p->nfiles = p->nframes = p->ntracks = 0;
  p->clock = 0;
  p->unit = clock_unit(s->r);
  memset(p->xc, 0, sizeof p->xc);
  p->xc_described[0] = p->xc_described[1] = false;
  /* The sequence's first packet clears its incremental state and sets its
   * defaults: times on the sequence's own clock, and the counter tracks of
   * a track event's extra values. */
  pb_uint(&p->pkt, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
  pb_uint(&p->sub, DEFAULTS_TIMESTAMP_CLOCK_ID, CLOCK_SEQ);
  for (int i = 0; i < XC_N; i++) {
    uint64_t c = i < XC_THREADS ? (uint64_t)EX_C_GOROUTINES << 3 | (uint64_t)i
                                : (uint64_t)EX_C_THREADS << 3 | (uint64_t)(i - XC_THREADS);
    pb_uint(&p->sub2, TED_EXTRA_COUNTER_TRACK_UUIDS, uuid(p, EX_COUNTER, c));
  }
  pb_msg(&p->sub, DEFAULTS_TRACK_EVENT, &p->sub2);
  pb_msg(&p->pkt, PACKET_DEFAULTS, &p->sub);
  flush(p);
  /* The clock: incremental, from 0 where the boot clock (the trace's time
   * line) is 0. */
  pbuf clk = {0};
  pb_uint(&clk, CLOCK_ID, CLOCK_BOOTTIME);
  pb_uint(&clk, CLOCK_TIMESTAMP, 0);
  pb_msg(&p->sub, CS_CLOCKS, &clk);
  pb_uint(&clk, CLOCK_ID, CLOCK_SEQ);
  pb_uint(&clk, CLOCK_TIMESTAMP, 0);
  pb_uint(&clk, CLOCK_INCREMENTAL, 1);
  pb_uint(&clk, CLOCK_UNIT_NS, (uint64_t)p->unit);
  pb_msg(&p->sub, CS_CLOCKS, &clk);
  /* And the wall clock, where the traces hold an anchor
   * (ctrace_process_read): the UI then shows times of day. One mapping for
   * every sequence, the timeline's, so that they agree. */
  if (s->wall0_ns > 0) {
    pb_uint(&clk, CLOCK_ID, CLOCK_REALTIME);
    pb_uint(&clk, CLOCK_TIMESTAMP, (uint64_t)s->wall0_ns);
    pb_msg(&p->sub, CS_CLOCKS, &clk);
  }
  if (clk.oom) p->e.oom = true;
  free(clk.b);
  pb_msg(&p->pkt, PACKET_CLOCK_SNAPSHOT, &p->sub);
  flush(p);
}

static void pf_finish(ex_enc *e) {
  pf *p = (pf *)e;
  pend_flush(p);
  if (p->out.oom || p->pkt.oom || p->sub.oom || p->sub2.oom || p->interned.oom) p->e.oom = true;
  drain(p, true);
  p->e.written = p->e.bytes;
  if (p->z && !p->e.oom && !p->e.werr) deflated(p, ctrace__ex_deflate_finish(p->z, &p->e.written));
}

static void pf_free(ex_enc *e) {
  pf *p = (pf *)e;
  ctrace__ex_deflate_free(p->z);
  free(p->out.b);
  free(p->pkt.b);
  free(p->sub.b);
  free(p->sub2.b);
  free(p->interned.b);
  interned_free(p);
  free(p);
}

ex_enc *ctrace__ex_perfetto(FILE *out, bool plain) {
  pf *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->e = (ex_enc){.begin = pf_begin, .rec = pf_rec, .finish = pf_finish, .free = pf_free, .out = out};
  if (!plain) {
    /* A thread a core the process may run on (as the reader counts them
     * for its own thread, reader.c): what deflating costs is then off the
     * walk's. On one core, on the walk's thread. */
    cpu_set_t cpus;
    int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    if (!(p->z = ctrace__ex_deflate_new(out, cores > 1 ? (unsigned)cores : 0))) {
      free(p);
      return NULL;
    }
  }
  return &p->e;
}
