/* ctrace export: a trace as Perfetto's protobuf trace format (a Trace of
 * TracePackets), written without the Perfetto SDK. Field numbers are those
 * of Perfetto's public protos (protos/perfetto/trace/trace_packet.proto,
 * track_event/track_event.proto, track_descriptor.proto, ...).
 *
 * One pass over the reader's ordered stream; each packet is framed and
 * written as soon as it is made, so memory is the state of live goroutines
 * and Ps, not the events (as the reader's own). Tracks (docs/analyse.md):
 * the process; per goroutine, its states as back-to-back slices (running,
 * runnable, syscall, waiting with its reason) and a child track of its user
 * regions; per P, the goroutine it runs; GC and stop-the-world slices; the
 * heap as a counter. Flows join a creator to the goroutine's first run and
 * a waker to the woken goroutine's next run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse/pb.h"
#include "ctrace/export.h"
#include "parse/map.h"

/* Perfetto field numbers. */
enum {
  TRACE_PACKET = 1,
  PACKET_TIMESTAMP = 8, PACKET_SEQUENCE_ID = 10, PACKET_TRACK_EVENT = 11,
  PACKET_SEQUENCE_FLAGS = 13, PACKET_TRACK_DESCRIPTOR = 60,
  TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT_UUID = 5, TD_COUNTER = 8,
  PD_PID = 1, PD_PROCESS_NAME = 6,
  THD_PID = 1, THD_TID = 2, THD_THREAD_NAME = 5,
  TE_TYPE = 9, TE_TRACK_UUID = 11, TE_CATEGORIES = 22, TE_NAME = 23, TE_COUNTER_VALUE = 30,
  TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48,
  TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
  SEQ_INCREMENTAL_STATE_CLEARED = 1,
};

/* Track uuids: kind in the low byte, the id above it, the process's pid in
 * the top bits so that several traces can share one timeline later. */
enum { K_PROCESS = 1, K_GOROUTINE, K_REGIONS, K_PROC, K_GC, K_STW, K_HEAP };

typedef struct gstate {
  bool described, in_slice;
  uint64_t flow_in; /* a flow to end at its next run, 0 none */
  int regions_open;
  bool regions_described;
} gstate;

typedef struct ectx {
  ctrace_reader *r;
  FILE *out;
  uint32_t pid;
  pbuf pkt, sub, sub2;
  u64map gix; /* g -> index + 1 */
  gstate *gs;
  size_t ngs, capgs;
  u64map prun; /* p + 1 -> g + 1 running there */
  u64map pdesc;
  uint64_t next_flow;
  bool gc_described, heap_described, werr;
  bool gc_open, stw_open;
} ectx;

static uint64_t uuid(const ectx *c, int kind, uint64_t id) {
  return (uint64_t)c->pid << 48 | id << 8 | (uint64_t)kind;
}

/* Frames the packet built in c->pkt into the output. */
static void flush_packet(ectx *c) {
  pbuf frame = {0};
  pb_uint(&c->pkt, PACKET_SEQUENCE_ID, 1);
  pb_msg(&frame, TRACE_PACKET, &c->pkt);
  if (frame.oom || fwrite(frame.b, 1, frame.len, c->out) != frame.len) c->werr = true;
  free(frame.b);
}

static void describe(ectx *c, uint64_t u, uint64_t parent, const char *name, int what,
                     uint64_t tid) {
  /* what: 0 plain, 1 process, 2 thread, 3 counter */
  pb_uint(&c->sub, TD_UUID, u);
  if (parent) pb_uint(&c->sub, TD_PARENT_UUID, parent);
  if (what == 1) {
    pb_uint(&c->sub2, PD_PID, c->pid);
    pb_str(&c->sub2, PD_PROCESS_NAME, name);
    pb_msg(&c->sub, TD_PROCESS, &c->sub2);
  } else if (what == 2) {
    pb_uint(&c->sub2, THD_PID, c->pid);
    pb_uint(&c->sub2, THD_TID, tid);
    pb_str(&c->sub2, THD_THREAD_NAME, name);
    pb_msg(&c->sub, TD_THREAD, &c->sub2);
  } else {
    pb_str(&c->sub, TD_NAME, name);
    if (what == 3) pb_msg(&c->sub, TD_COUNTER, &c->sub2); /* an empty CounterDescriptor */
  }
  pb_msg(&c->pkt, PACKET_TRACK_DESCRIPTOR, &c->sub);
  flush_packet(c);
}

/* A TrackEvent; flow_out/flow_in 0 for none, name NULL for a slice end. */
static void event(ectx *c, int64_t ts, uint64_t track, int type, const char *cat,
                  const char *name, uint64_t flow_out, uint64_t flow_in, int64_t counter) {
  pb_uint(&c->pkt, PACKET_TIMESTAMP, (uint64_t)ts);
  pb_uint(&c->sub, TE_TYPE, (uint64_t)type);
  pb_uint(&c->sub, TE_TRACK_UUID, track);
  if (cat) pb_str(&c->sub, TE_CATEGORIES, cat);
  if (name) pb_str(&c->sub, TE_NAME, name);
  if (type == TYPE_COUNTER) pb_uint(&c->sub, TE_COUNTER_VALUE, (uint64_t)counter);
  if (flow_out) pb_fixed64(&c->sub, TE_FLOW_IDS, flow_out);
  if (flow_in) pb_fixed64(&c->sub, TE_TERMINATING_FLOW_IDS, flow_in);
  pb_msg(&c->pkt, PACKET_TRACK_EVENT, &c->sub);
  flush_packet(c);
}

static gstate *gget(ectx *c, uint64_t g, uint64_t create_stack) {
  bool fresh;
  gstate *gs = ctrace__map_slot(&c->gix, g, &c->gs, &c->ngs, &c->capgs, sizeof *c->gs, &fresh);
  if (!gs) return NULL;
  if (!gs->described) {
    /* Named by start function and id, as the issue asks. */
    const ctrace_frame *fr;
    const char *fn = "";
    if (create_stack && ctrace_reader_stack(c->r, create_stack, &fr)) fn = fr[0].func ? fr[0].func : "";
    char name[512];
    snprintf(name, sizeof name, "%s%sG%llu", fn, fn[0] ? " " : "", (unsigned long long)g);
    describe(c, uuid(c, K_GOROUTINE, g), uuid(c, K_PROCESS, 0), name, 2, g);
    gs->described = true;
  }
  return gs;
}

/* Ends the goroutine's current state slice and begins the next (NULL: none). */
static void gslice(ectx *c, uint64_t g, gstate *gs, int64_t ts, const char *next, uint64_t flow_in) {
  uint64_t t = uuid(c, K_GOROUTINE, g);
  if (gs->in_slice) event(c, ts, t, TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
  gs->in_slice = next != NULL;
  if (next) event(c, ts, t, TYPE_SLICE_BEGIN, "goroutine", next, 0, flow_in, 0);
}

static const char *wait_name(uint8_t type) {
  switch (type) {
  case CTRACE_EV_GoBlockSend: return "waiting: chan send";
  case CTRACE_EV_GoBlockRecv: return "waiting: chan receive";
  case CTRACE_EV_GoBlockSelect: return "waiting: select";
  case CTRACE_EV_GoBlockSync: return "waiting: sync";
  case CTRACE_EV_GoBlockCond: return "waiting: sync.Cond";
  case CTRACE_EV_GoBlockNet: return "waiting: network";
  case CTRACE_EV_GoSleep: return "waiting: sleep";
  case CTRACE_EV_GoBlockGC: return "waiting: GC assist";
  case CTRACE_EV_GoBlock: return "waiting: forever";
  default: return NULL;
  }
}

/* The goroutine on P p stops running there. */
static void p_stop(ectx *c, int64_t p, int64_t ts) {
  uint64_t *v = ctrace__map_get(&c->prun, (uint64_t)p + 1);
  if (!v || !*v) return;
  event(c, ts, uuid(c, K_PROC, (uint64_t)p), TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
  *v = 0;
}

static void p_start(ectx *c, int64_t p, uint64_t g, int64_t ts) {
  if (p < 0 || p >= CTRACE_P_TIMER) return;
  bool fresh;
  if (!ctrace__map_put(&c->pdesc, (uint64_t)p, &fresh)) return;
  if (fresh) {
    char name[32];
    snprintf(name, sizeof name, "P%lld", (long long)p);
    describe(c, uuid(c, K_PROC, (uint64_t)p), uuid(c, K_PROCESS, 0), name, 0, 0);
  }
  p_stop(c, p, ts);
  uint64_t *v = ctrace__map_put(&c->prun, (uint64_t)p + 1, NULL);
  if (!v) return;
  *v = g + 1;
  char name[32];
  snprintf(name, sizeof name, "G%llu", (unsigned long long)g);
  event(c, ts, uuid(c, K_PROC, (uint64_t)p), TYPE_SLICE_BEGIN, "proc", name, 0, 0, 0);
}

int ctrace_export_perfetto(ctrace_reader *r, FILE *out, const char *process_name, uint32_t pid,
                           char *err, size_t errlen) {
  ectx c = {.r = r, .out = out, .pid = pid ? pid : 1};
  int rc = 0;
  /* The first packet clears incremental state for the sequence. */
  pb_uint(&c.pkt, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
  flush_packet(&c);
  describe(&c, uuid(&c, K_PROCESS, 0), 0, process_name, 1, 0);
  ctrace_reader_rewind(r);
  ctrace_event ev;
  int64_t last = 0;
  while (!c.werr && ctrace_reader_next(r, &ev)) {
    last = ev.ts;
    gstate *gs;
    const char *w;
    switch (ev.type) {
    case CTRACE_EV_GoCreate: {
      uint64_t flow = ++c.next_flow;
      if (ev.g && (gs = gget(&c, ev.g, 0)))
        event(&c, ev.ts, uuid(&c, K_GOROUTINE, ev.g), TYPE_INSTANT, "goroutine", "create", flow, 0, 0);
      else
        flow = 0;
      if (!(gs = gget(&c, ev.args[0], ev.args[1]))) goto oom;
      gs->flow_in = flow;
      gslice(&c, ev.args[0], gs, ev.ts, "runnable", 0);
      break;
    }
    case CTRACE_EV_GoStart:
    case CTRACE_EV_GoStartLabel:
      if (!(gs = gget(&c, ev.g, 0))) goto oom;
      gslice(&c, ev.g, gs, ev.ts, "running", gs->flow_in);
      gs->flow_in = 0;
      p_start(&c, ev.p, ev.g, ev.ts);
      break;
    case CTRACE_EV_GoEnd:
    case CTRACE_EV_GoStop:
      if (!(gs = gget(&c, ev.g, 0))) goto oom;
      gslice(&c, ev.g, gs, ev.ts, NULL, 0);
      p_stop(&c, ev.p, ev.ts);
      break;
    case CTRACE_EV_GoSched:
    case CTRACE_EV_GoPreempt:
      if (!(gs = gget(&c, ev.g, 0))) goto oom;
      gslice(&c, ev.g, gs, ev.ts, "runnable", 0);
      p_stop(&c, ev.p, ev.ts);
      break;
    case CTRACE_EV_GoSysBlock:
      if (!(gs = gget(&c, ev.g, 0))) goto oom;
      gslice(&c, ev.g, gs, ev.ts, "syscall", 0);
      p_stop(&c, ev.p, ev.ts);
      break;
    case CTRACE_EV_GoSysExit:
      if (!(gs = gget(&c, ev.g, 0))) goto oom;
      gslice(&c, ev.g, gs, ev.ts, "runnable", 0);
      break;
    case CTRACE_EV_GoWaiting:
    case CTRACE_EV_GoInSyscall:
      if (!(gs = gget(&c, ev.g, 0))) goto oom;
      gslice(&c, ev.g, gs, ev.ts, ev.type == CTRACE_EV_GoWaiting ? "waiting: unknown" : "syscall", 0);
      break;
    case CTRACE_EV_GoUnblock: {
      uint64_t flow = 0;
      if (ev.g && gget(&c, ev.g, 0)) {
        flow = ++c.next_flow;
        event(&c, ev.ts, uuid(&c, K_GOROUTINE, ev.g), TYPE_INSTANT, "goroutine", "unblock", flow, 0, 0);
      }
      if (!(gs = gget(&c, ev.args[0], 0))) goto oom;
      gs->flow_in = flow;
      gslice(&c, ev.args[0], gs, ev.ts, "runnable", 0);
      break;
    }
    case CTRACE_EV_UserRegion: {
      if (!ev.g || !(gs = gget(&c, ev.g, 0))) break;
      uint64_t t = uuid(&c, K_REGIONS, ev.g);
      if (!gs->regions_described) {
        char name[64];
        snprintf(name, sizeof name, "G%llu regions", (unsigned long long)ev.g);
        describe(&c, t, uuid(&c, K_GOROUTINE, ev.g), name, 0, 0);
        gs->regions_described = true;
      }
      if (ev.args[1] == 0) {
        event(&c, ev.ts, t, TYPE_SLICE_BEGIN, "region", ev.sargs[0] ? ev.sargs[0] : "", 0, 0, 0);
        gs->regions_open++;
      } else if (gs->regions_open > 0) { /* an end whose start is in the trace */
        event(&c, ev.ts, t, TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
        gs->regions_open--;
      }
      break;
    }
    case CTRACE_EV_GCStart:
    case CTRACE_EV_GCDone:
    case CTRACE_EV_GCSTWStart:
    case CTRACE_EV_GCSTWDone: {
      if (!c.gc_described) {
        describe(&c, uuid(&c, K_GC, 0), uuid(&c, K_PROCESS, 0), "GC", 0, 0);
        describe(&c, uuid(&c, K_STW, 0), uuid(&c, K_PROCESS, 0), "stop-the-world", 0, 0);
        c.gc_described = true;
      }
      bool stw = ev.type == CTRACE_EV_GCSTWStart || ev.type == CTRACE_EV_GCSTWDone;
      bool begin = ev.type == CTRACE_EV_GCStart || ev.type == CTRACE_EV_GCSTWStart;
      bool *open = stw ? &c.stw_open : &c.gc_open;
      uint64_t t = uuid(&c, stw ? K_STW : K_GC, 0);
      if (begin) {
        event(&c, ev.ts, t, TYPE_SLICE_BEGIN, "gc", stw ? "STW" : "GC", 0, 0, 0);
        *open = true;
      } else if (*open) {
        event(&c, ev.ts, t, TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
        *open = false;
      }
      break;
    }
    case CTRACE_EV_HeapAlloc:
      if (!c.heap_described) {
        describe(&c, uuid(&c, K_HEAP, 0), uuid(&c, K_PROCESS, 0), "heap bytes", 3, 0);
        c.heap_described = true;
      }
      event(&c, ev.ts, uuid(&c, K_HEAP, 0), TYPE_COUNTER, NULL, NULL, 0, 0, (int64_t)ev.args[0]);
      break;
    default:
      if ((w = wait_name(ev.type))) {
        if (!(gs = gget(&c, ev.g, 0))) goto oom;
        gslice(&c, ev.g, gs, ev.ts, w, 0);
        p_stop(&c, ev.p, ev.ts);
      }
      break;
    }
    if (c.pkt.oom || c.sub.oom || c.sub2.oom) goto oom;
  }
  /* What is still open ends with the trace. */
  for (size_t i = 0; i < c.gix.cap; i++) {
    if (!c.gix.used[i]) continue;
    gstate *gs = &c.gs[c.gix.vals[i] - 1];
    gslice(&c, c.gix.keys[i], gs, last, NULL, 0);
    for (; gs->regions_open > 0; gs->regions_open--)
      event(&c, last, uuid(&c, K_REGIONS, c.gix.keys[i]), TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
  }
  for (size_t i = 0; i < c.prun.cap; i++)
    if (c.prun.used[i]) p_stop(&c, (int64_t)c.prun.keys[i] - 1, last);
  if (c.gc_open) event(&c, last, uuid(&c, K_GC, 0), TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
  if (c.stw_open) event(&c, last, uuid(&c, K_STW, 0), TYPE_SLICE_END, NULL, NULL, 0, 0, 0);
  if (c.werr || fflush(out) || ferror(out)) {
    snprintf(err, errlen, "write error: %s", strerror(errno));
    rc = -1;
  }
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = -1;
out:
  free(c.pkt.b);
  free(c.sub.b);
  free(c.sub2.b);
  free(c.gs);
  ctrace__map_free(&c.gix);
  ctrace__map_free(&c.prun);
  ctrace__map_free(&c.pdesc);
  return rc;
}
