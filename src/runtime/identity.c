/* Who the traced process is, written into its own trace: a log (category
 * "ctrace.process")
 *
 *   pid=N ppid=N host=NAME mono_ns=N real_ns=N [exit=1] name=NAME exe=PATH cmdline=ARGS...
 *
 * Its time in the trace and the CLOCK_MONOTONIC and CLOCK_REALTIME read
 * just before it tie the trace's clock to the machine's: ctrace_process_read
 * (src/analyse/process.c) finds it, `ctrace export` and `view` put several
 * traces (a forked child's, a client's and a server's) on one timeline by
 * it, name each process by its program and pid, and date the outputs. A
 * log is what every Go's viewer shows and every reader keeps; the formats
 * have no field for either. name is the file execve was given
 * (AT_EXECFN), as ps and top name the process: Debian's redis-server is a
 * link to redis-check-rdb, which exe, the file itself, names. cmdline
 * comes last: its arguments, joined by spaces, may hold anything, and a
 * message longer than Go's strings (1024 bytes) loses its end.
 *
 * A process may retitle itself as it goes (nginx's and PostgreSQL's
 * forked workers write their role over their arguments, which is what
 * /proc/PID/cmdline and ps then show): the writer thread reads cmdline
 * again once a generation (ctrace__identity_refresh), and the logs of the
 * generations after carry the title; a process that ends first logs it
 * as it exits (ctrace__identity_final, from the shim's exit paths).
 * ctrace stats (ctrace_stats.cmdline) and the exports (src/export/walk.c)
 * name the process by the last log.
 *
 * In Go's current format it is in every generation, written by the first
 * G that runs on a P in it (ctrace__gen_procs, beside GOMAXPROCS), as Go
 * writes its clock snapshot in every generation: a flight recorder's
 * snapshot, which keeps the last generations only, holds it too, and so
 * does a trace started through the API. In the classic format, which has
 * no generations, the first G to start on a P in the trace writes it
 * once, as its first event (ctrace__identity_classic): Go's classic
 * readers take a log only from a G that runs, and a trace started
 * through the API, or by ctrace run, has its log wherever the program's
 * first G runs. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* "pid=N ppid=N host=NAME" and " name=NAME exe=PATH cmdline=ARGS", read
 * at the start (ctrace__identity_init), outside any write section. Read by
 * writers after the state word that publishes the trace, which orders
 * them after these stores. tail changes with the process's title
 * (ctrace__identity_refresh) under tail_lock, which the log's writer, once
 * a generation, holds for a copy: a spin lock, for no call that may block
 * or be traced has a place in a write section. */
static char head[320], tail[CTRACE_GO122_MAX_STRING];
static size_t args_at; /* where cmdline's value begins in tail */
static atomic_flag tail_lock = ATOMIC_FLAG_INIT;
static _Atomic uint64_t refreshed; /* the generation refreshed last */
/* Under tail_lock: how many times the title changed, and how many of
 * those the last log written had seen. */
static uint64_t retitles, retitles_logged;

static unsigned long long clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* /proc/self/cmdline, its NULs as spaces, into out; "" if unreadable.
 * With calls safe in a signal handler (_exit may run in one: the shim's
 * exit paths read it, ctrace__identity_final). */
static void cmdline(char *out, size_t cap) {
  size_t n = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t k;
    while (n < cap - 1 && ((k = read(fd, out + n, cap - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
      if (k > 0) n += (size_t)k;
    close(fd);
  }
  while (n && out[n - 1] == '\0') n--;
  for (size_t i = 0; i < n; i++)
    if (out[i] == '\0') out[i] = ' ';
  out[n] = '\0';
}

void ctrace__identity_init(void) {
  char host[256] = "", exe[512] = "", args[CTRACE_GO122_MAX_STRING];
  gethostname(host, sizeof host - 1);
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  cmdline(args, sizeof args);
  const char *run = (const char *)getauxval(AT_EXECFN), *name = run ? strrchr(run, '/') : NULL;
  name = name ? name + 1 : run ? run : "";
  snprintf(head, sizeof head, "pid=%d ppid=%d host=%s", (int)getpid(), (int)getppid(), host);
  int n = snprintf(tail, sizeof tail, " name=%s exe=%s cmdline=", name, exe);
  args_at = n < 0 ? 0 : (size_t)n < sizeof tail ? (size_t)n : sizeof tail - 1;
  snprintf(tail + args_at, sizeof tail - args_at, "%s", args);
  atomic_store(&refreshed, 0);
  retitles = retitles_logged = 0;
}

static void lock_tail(void) {
  while (atomic_flag_test_and_set_explicit(&tail_lock, memory_order_acquire)) {
  }
}

static void unlock_tail(void) { atomic_flag_clear_explicit(&tail_lock, memory_order_release); }

void ctrace__identity_fork_child(void) { unlock_tail(); }

/* The command line read now into tail; true if a log has yet to say it. */
static bool reread(void) {
  char args[CTRACE_GO122_MAX_STRING];
  cmdline(args, sizeof args);
  lock_tail();
  /* /proc unreadable (a chroot, a sandbox): the start's stays. */
  if (args[0] && strcmp(tail + args_at, args) != 0) {
    snprintf(tail + args_at, sizeof tail - args_at, "%s", args);
    retitles++;
  }
  bool due = retitles != retitles_logged;
  unlock_tail();
  return due;
}

void ctrace__identity_refresh(uint64_t gen) {
  if (gen && atomic_exchange(&refreshed, gen) != gen) reread();
}

/* The message, with the clocks read now, into msg: its length. The log
 * of the process's exit says so (" exit=1", before name): its title is
 * the one it ends with (nginx's worker: "is shutting down"), which names
 * it only if no generation's log gave another. */
static size_t message(char *msg, size_t cap, bool at_exit) {
  unsigned long long real = clock_ns(CLOCK_REALTIME), mono = clock_ns(CLOCK_MONOTONIC);
  lock_tail();
  int n = snprintf(msg, cap, "%s mono_ns=%llu real_ns=%llu%s%s", head, mono, real, at_exit ? " exit=1" : "",
                   tail);
  retitles_logged = retitles;
  unlock_tail();
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

void ctrace__identity_final(void) {
  if (!ctrace__on() || !ctrace__genfmt() || !reread()) return;
  char msg[CTRACE_GO122_MAX_STRING + 1];
  message(msg, sizeof msg, true);
  ctrace_log(0, "ctrace.process", msg);
}

void ctrace__identity_log(ctrace__w *w) {
  char msg[CTRACE_GO122_MAX_STRING + 1];
  size_t n = message(msg, sizeof msg, false);
  ctrace__ustr u = ctrace__unique_id(w, n);
  if (!u.id) return;
  ctrace__emit2_log(w, 0, ctrace__string_id(w, "ctrace.process"), u, 0);
  ctrace__unique_put(u, msg, n);
}

/* The trace (its generation, state >> 1, one per start in the classic
 * format) whose log is written. */
static _Atomic uint64_t logged;

void ctrace__identity_classic(ctrace__w *w) {
  uint64_t gen = ctrace__gen(w->t), seen = atomic_load_explicit(&logged, memory_order_relaxed);
  if (seen == gen || !atomic_compare_exchange_strong(&logged, &seen, gen)) return;
  char msg[2 * CTRACE_GO122_MAX_STRING];
  size_t n = message(msg, sizeof msg, false);
  uint64_t v[3] = {0, ctrace__string_id(w, "ctrace.process"), 0};
  ctrace__classic_log(w, v, msg, n);
}
