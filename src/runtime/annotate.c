/* User annotations, as Go's runtime/trace package has them: tasks,
 * regions and logs. Events of the current G (between Gs, the thread's own). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Atomic uint64_t next_task = 1;

/* Leaves the write section, the thread's own G (if it stood in) blocked
 * again. */
#define ANNOTATION_END(t, w)                                      \
  if (ctrace__unlikely(si_.on)) ctrace__stand_in_done(&w, &si_); \
  ctrace__writer_done(&w);                                        \
  ctrace__end(t)

/* Enters the write section as the thread's current G. Go's current
 * format takes annotations only from a G on a P, and Go's viewers take
 * a region from no G in either format: between Gs (or, in the current
 * format, without a P) the thread's own G stands in (ctrace__stand_in). */
#define ANNOTATION_BEGIN(t, w)                                                                  \
  ctrace_g *cur_ = ctrace__current(&ctrace__tls, (uintptr_t)__builtin_return_address(0));       \
  ctrace__thread *t = ctrace__begin();                                                          \
  if (!t) return;                                                                               \
  ctrace__w w = ctrace__writer(t);                                                              \
  ctrace__standin si_;                                                                          \
  si_.on = false;                                                                               \
  if (ctrace__unlikely(t->tcurg != cur_)) {                                                     \
    if (cur_)                                                                                   \
      ctrace__ensure_running(&w, cur_, 0);                                                      \
    else                                                                                        \
      ctrace__free_p(&w, NULL);                                                                 \
  }                                                                                             \
  if (ctrace__unlikely(!t->tcurg || w.p < 0) && !ctrace__stand_in(&w, true, &si_)) {                 \
    ANNOTATION_END(t, w);                                                                       \
    return;                                                                                     \
  }


/* Go's current reader keeps each G's open regions as a stack and rejects
 * an end that is not the innermost one's (an end with none open it takes
 * for one begun before the trace). So the regions the trace shows open on
 * g are kept, as hashes of task and name (8 deep; deeper ones counted
 * only), and an end whose begin the trace never showed, as of a region
 * begun in a gap at the cap (tracer.c) while one begun before it is still
 * open in the trace's eyes, or of a program's own misnesting, is not
 * written. Returns whether the begin or end is written. */
static bool region_shown(ctrace_g *g, uint64_t task, const char *name, bool end) {
  uint32_t h = 2166136261u ^ (uint32_t)task;
  for (const char *c = name ? name : ""; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
  uint32_t n = g->ctrace__nregions, max = sizeof g->ctrace__regions / sizeof *g->ctrace__regions;
  if (!end) {
    if (n < max) g->ctrace__regions[n] = h;
    g->ctrace__nregions = n + 1;
    return true;
  }
  if (n == 0) return true;
  if (n <= max && g->ctrace__regions[n - 1] != h) return false;
  g->ctrace__nregions = n - 1;
  return true;
}

/* UserTaskCreate [task, parent, name] and UserRegion [task, mode, name],
 * each with the caller's stack. */
static void named_event(uint8_t ev, uint64_t a, uint64_t b, const char *name, void *fp) {
  ANNOTATION_BEGIN(t, w);
  if (ctrace__genfmt() && ev == CTRACE_EV_UserRegion && !region_shown(t->tcurg, a, name, b)) {
    ANNOTATION_END(t, w);
    return;
  }
  uint64_t v[4] = {a, b, ctrace__string_id(&w, name), ctrace__stack_id(t, fp)};
  if (!ctrace__genfmt())
    ctrace__emit(&w, ev, 4, v, 0);
  else if (ev == CTRACE_EV_UserTaskCreate)
    ctrace__emit2(&w, CTRACE_EV122_UserTaskBegin, 4, v, 0);
  else /* [task, name, stack] */
    ctrace__emit2(&w, b ? CTRACE_EV122_UserRegionEnd : CTRACE_EV122_UserRegionBegin, 3,
                  (uint64_t[3]){a, v[2], v[3]}, 0);
  ANNOTATION_END(t, w);
}

uint64_t ctrace_task_create(uint64_t parent, const char *name) {
  uint64_t id = atomic_fetch_add_explicit(&next_task, 1, memory_order_relaxed);
  if (ctrace__on())
    named_event(CTRACE_EV_UserTaskCreate, id, parent, name, __builtin_frame_address(0));
  return id;
}

void ctrace_task_end(uint64_t task) {
  if (!ctrace__on()) return;
  ANNOTATION_BEGIN(t, w);
  uint64_t v[2] = {task, ctrace__stack_id(t, __builtin_frame_address(0))};
  ctrace__emit_as(&w, CTRACE_EV_UserTaskEnd, CTRACE_EV122_UserTaskEnd, 2, v, 0);
  ANNOTATION_END(t, w);
}

void ctrace_region_begin(uint64_t task, const char *name) {
  if (ctrace__on()) named_event(CTRACE_EV_UserRegion, task, 0, name, __builtin_frame_address(0));
}

void ctrace_region_end(uint64_t task, const char *name) {
  if (ctrace__on()) named_event(CTRACE_EV_UserRegion, task, 1, name, __builtin_frame_address(0));
}

static void log_event(uint64_t task, const char *category, const char *msg, size_t len,
                      void *fp) {
  ANNOTATION_BEGIN(t, w);
  uint64_t v[3] = {task, ctrace__string_id(&w, category), ctrace__stack_id(t, fp)};
  if (ctrace__genfmt()) {
    /* The message goes into the generation's strings, not looked up. */
    if (len > CTRACE_GO122_MAX_STRING) {
      len = CTRACE_GO122_MAX_STRING;
      atomic_fetch_add_explicit(&ctrace__stats.truncated, 1, memory_order_relaxed);
    }
    /* An empty message is string 0, a 1-byte varint of 0. */
    ctrace__ustr u = len ? ctrace__unique_id(&w, len) : (ctrace__ustr){.n = 1};
    if (u.id || !len) {
      ctrace__emit2_log(&w, task, v[1], u, v[2]);
      if (u.id) ctrace__unique_put(u, msg, len);
    }
    ANNOTATION_END(t, w);
    return;
  }
  ctrace__classic_log(&w, v, msg, len);
  ANNOTATION_END(t, w);
}

void ctrace__classic_log(ctrace__w *w, const uint64_t v[3], const char *msg, size_t len) {
  /* The message follows the length-counted values; make room for both
   * first so that the emit below cannot move to another buffer. */
  size_t max = ctrace__buf_capacity() - 2 * CTRACE__MAX_EVENT - CTRACE_MAX_VARINT;
  if (len > max) {
    len = max;
    atomic_fetch_add_explicit(&ctrace__stats.truncated, 1, memory_order_relaxed);
  }
  if (ctrace__reserve(w->bp, w->p, CTRACE__MAX_EVENT + CTRACE_MAX_VARINT + len) &&
      ctrace__emit(w, CTRACE_EV_UserLog, 3, v, 0)) {
    ctrace__buf *b = *w->bp;
    uint8_t *q = ctrace__put_uvarint(b->pos, len);
    memcpy(q, msg, len);
    b->pos = q + len;
  }
}

void ctrace_log(uint64_t task, const char *category, const char *message) {
  if (!ctrace__on()) return;
  if (!message) message = "";
  log_event(task, category, message, strlen(message), __builtin_frame_address(0));
}

void ctrace_logf(uint64_t task, const char *category, const char *fmt, ...) {
  if (!ctrace__on()) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  size_t len = (size_t)n;
  if (len >= sizeof msg) {
    len = sizeof msg - 1;
    atomic_fetch_add_explicit(&ctrace__stats.truncated, 1, memory_order_relaxed);
  }
  log_event(task, category, msg, len, __builtin_frame_address(0));
}

/* The gap to tell of, in ns (ctrace__gap_note); 0 for none. */
static _Atomic uint64_t gap_due;

void ctrace__gap_note(uint64_t ns) { atomic_store(&gap_due, ns ? ns : 1); }

void ctrace__gap_log(ctrace__w *w) {
  uint64_t ns = atomic_exchange(&gap_due, 0);
  if (!ns) return;
  char msg[200];
  int n = snprintf(msg, sizeof msg,
                   "tracing paused for %.3f s: the reader fell max_pending (%zu MiB) behind; "
                   "what happened meanwhile is not in the trace",
                   (double)ns / 1e9, ctrace__cfg.max_pending >> 20);
  ctrace__ustr u = ctrace__unique_id(w, (size_t)n);
  if (!u.id) return;
  ctrace__emit2_log(w, 0, ctrace__string_id(w, "ctrace"), u, 0);
  ctrace__unique_put(u, msg, (size_t)n);
}
