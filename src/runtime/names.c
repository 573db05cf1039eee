/* Thread names: what a thread is called (ctrace_thread_name, or the
 * system's name: pthread_setname_np, prctl's PR_SET_NAME, a write to
 * /proc/.../comm), carried in the trace as its G's label.
 *
 * Go's formats have one way to name a goroutine: a label on its start
 * (GoStartLabel in the classic format, GoLabel after GoStart in the
 * current one), which Go's runtime writes at each start of a GC worker.
 * Go 1.19's viewer names the slice of that start by the label; Go 1.22+
 * adds it to the goroutine's name ("G7 worker (mc-worker)"), and Go 1.23
 * turns a classic GoStartLabel into GoStart and GoLabel. So every start of
 * a named G carries its name (start_event, sched.c), and a rename by the
 * G's own thread is written at once (ctrace__relabel).
 *
 * The name lives in the G, beside a sequence count, so that another
 * thread may set it (pthread_setname_np of another thread) while the G's
 * thread reads it: a seqlock, with byte-wise atomic copies so that
 * neither side tears or races. The G's thread keeps the string id it
 * last wrote the name under, for that count and trace state (a
 * generation's strings are its own), so a start of a named G costs two
 * compares and one varint more than an unnamed one's.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#define NAME_MAX_LEN (sizeof(((ctrace_g *)0)->ctrace__name) - 1)

bool ctrace__g_set_name(ctrace_g *g, const char *name, size_t len) {
  if (!name) len = 0;
  if (len > NAME_MAX_LEN) len = NAME_MAX_LEN;
  /* Writers exclude each other by taking the count from even to odd. */
  uint32_t s;
  for (;;) {
    s = __atomic_load_n(&g->ctrace__name_seq, __ATOMIC_RELAXED);
    if (!(s & 1) && __atomic_compare_exchange_n(&g->ctrace__name_seq, &s, s + 1, false,
                                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      break;
    __builtin_ia32_pause();
  }
  bool same = s != 0;
  for (size_t i = 0; i <= NAME_MAX_LEN && same; i++)
    same = __atomic_load_n(&g->ctrace__name[i], __ATOMIC_RELAXED) == (i < len ? name[i] : 0);
  if (!same)
    for (size_t i = 0; i <= NAME_MAX_LEN; i++)
      __atomic_store_n(&g->ctrace__name[i], i < len ? name[i] : 0, __ATOMIC_RELAXED);
  /* Unchanged: the count as it was, so that no start writes it anew. */
  __atomic_store_n(&g->ctrace__name_seq, same ? s : s + 2, __ATOMIC_RELEASE);
  return !same;
}

uint64_t ctrace__g_label_slow(ctrace__w *w, ctrace_g *g) {
  char name[NAME_MAX_LEN + 1];
  uint32_t s;
  for (;;) {
    s = __atomic_load_n(&g->ctrace__name_seq, __ATOMIC_ACQUIRE);
    if (s & 1) {
      __builtin_ia32_pause();
      continue;
    }
    for (size_t i = 0; i <= NAME_MAX_LEN; i++)
      name[i] = __atomic_load_n(&g->ctrace__name[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&g->ctrace__name_seq, __ATOMIC_RELAXED) == s) break;
  }
  name[NAME_MAX_LEN] = 0;
  g->ctrace__name_id = ctrace__string_id(w, name);
  g->ctrace__name_seen = s;
  g->ctrace__name_state = w->t->state;
  return g->ctrace__name_id;
}

/* The name the process's first thread had when first asked (the
 * executable's, as exec set it, unless main renamed itself first): a
 * thread that carries it inherited it, and is taken as unnamed, so that
 * an unnamed thread keeps Go's own name for its goroutine (its start
 * function) and its starts their short form. */
static char proc_name[16];
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void proc_name_read(void) {
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = pread(fd, proc_name, sizeof proc_name - 1, 0);
  close(fd);
  if (n > 0 && proc_name[n - 1] == '\n') n--;
  proc_name[n > 0 ? n : 0] = 0;
}

static void set_from(ctrace__thread *t, const char *n, bool explicit) {
  ctrace_g *g = t->home;
  if (!g) return;
  pthread_once(&proc_once, proc_name_read);
  /* An inherited name is no name, unless it replaces one. */
  if (!explicit && !__atomic_load_n(&g->ctrace__name_seq, __ATOMIC_RELAXED) &&
      strcmp(n, proc_name) == 0)
    return;
  ctrace__g_set_name(g, n, strlen(n));
}

void ctrace__os_name(ctrace__thread *t, bool explicit) {
  char n[16] = {0};
  if (prctl(PR_GET_NAME, n, 0, 0, 0) != 0) return;
  n[15] = 0;
  /* Unchanged since the last read: a name given by ctrace_thread_name
   * since then stays. */
  if (!explicit && strcmp(n, t->comm) == 0) return;
  memcpy(t->comm, n, sizeof t->comm);
  set_from(t, n, explicit);
}

void ctrace__relabel(ctrace__w *w, ctrace_g *g) {
  uint64_t label = ctrace__g_label(w, g);
  if (ctrace__genfmt()) {
    /* A name taken away leaves Go's last label: "" is no string id here. */
    if (label) ctrace__emit2(w, CTRACE_EV122_GoLabel, 1, &label, 0);
    return;
  }
  ctrace__restart_labelled(w, g, label);
}

/* The trace shows the rename of the G the calling thread runs now. */
static void show_rename(ctrace_g *g) {
  ctrace__thread *t = ctrace__begin();
  if (!t) return;
  ctrace__w w = ctrace__writer(t);
  if (t->tcurg != g)
    ctrace__ensure_running(&w, g, 0); /* its start carries the name */
  else
    ctrace__relabel(&w, g);
  ctrace__writer_done(&w);
  ctrace__end(t);
}

void ctrace_thread_name(const char *name) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace__current(t0, (uintptr_t)__builtin_return_address(0));
  ctrace_g *g = t0->home;
  if (!g) return; /* a runtime's thread: its Gs are not it */
  if (ctrace__g_set_name(g, name, name ? strlen(name) : 0) && t0->curg == g) show_rename(g);
}

void ctrace__thread_renamed(void) {
  ctrace__thread *t0 = &ctrace__tls;
  ctrace__current(t0, (uintptr_t)__builtin_return_address(0));
  ctrace_g *g = t0->home;
  if (!g) return;
  uint32_t before = __atomic_load_n(&g->ctrace__name_seq, __ATOMIC_RELAXED);
  ctrace__os_name(t0, true);
  if (__atomic_load_n(&g->ctrace__name_seq, __ATOMIC_RELAXED) != before && t0->curg == g)
    show_rename(g);
}

/* Another thread's name, from /proc (a comm file written). */
bool ctrace__read_comm(pid_t tid, char out[16]) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = pread(fd, out, 15, 0);
  close(fd);
  if (n <= 0) return false;
  if (out[n - 1] == '\n') n--;
  out[n] = 0;
  return true;
}
