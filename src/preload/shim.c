/* The shim's life: finding libc's functions, starting the trace before the
 * program's own code runs, and finishing it whichever way the process ends.
 *
 * Start. The trace starts in our __libc_start_main, which _start calls
 * through the PLT: after every shared library's constructors (ours and
 * libc's included), before the executable's constructors and main. Its
 * first argument is main, which names the main thread's goroutine.
 *
 * Environment. CTRACE_OUT names the trace file; without it the shim stays
 * inert (every wrapper passes its call on). At start, before the
 * program's constructors and main, the shim takes every variable of the
 * tracer (CTRACE_OUT, CTRACE_FORMAT, ...) and itself (with the sanitizer
 * runtime `ctrace run` put before it) out of the environment, in place
 * (env_scrub): the program sees the environment it would untraced, and
 * its children run untraced and can never write over this trace. The
 * tracer reads its settings from the shim's copy.
 *
 * Exec. The process is followed across exec: the exec wrappers
 * (process.c) finish this image's trace, then hand the new program an
 * environment that preloads the shim again (ctrace__pl_exec_env), with the
 * image's number in CTRACE_IMAGE. The new image renames the finished trace
 * FILE to FILE.<n> and writes its own into FILE: FILE is always the last
 * program the process became (a launcher script's or env's exec leads to
 * the program of interest), the earlier ones are FILE.1, FILE.2, ...
 *
 * Fork. A forked child runs untraced, or with CTRACE_FOLLOW_FORKS starts a
 * trace of its own, FILE.pid<PID>, in fork's wrapper
 * (ctrace__pl_follow_fork), and follows its own execs in turn. A child of
 * posix_spawn gets the environment an exec would, with CTRACE_SPAWNED in
 * place of CTRACE_IMAGE: it names its file FILE.pid<PID> at start.
 *
 * Finish. ctrace_stop runs on a finisher thread of the shim's own, which
 * waits on a futex from start to finish: a signal handler (or _exit called
 * from one) can ask for the trace to be finished and wait for it with
 * async-signal-safe calls only, and stop itself always runs in an ordinary
 * thread context, never on a stack a signal interrupted. The paths that ask:
 * an atexit handler registered when main starts (so it runs after the
 * handlers the program registers, and before the libraries' destructors),
 * _exit/_Exit, exec (process.c), the signal handlers (signals.c), the
 * death callback of every sanitizer runtime loaded, and a destructor as
 * the last resort.
 *
 * Flight recorder. With CTRACE_FLIGHT=<ms> the trace is recorded in memory
 * only (ctrace_flight_start, the last <ms> of it at least, within
 * CTRACE_FLIGHT_MAX_MB). The snapshot signal (CTRACE_FLIGHT_SIGNAL, else
 * SIGUSR2) has the finisher write one to FILE.<n>, the first n whose file
 * is not there yet; a crash signal, to FILE.crash as the trace is
 * finished; an exit, to FILE only with CTRACE_FLIGHT_AT_EXIT=1. An exec
 * finishes as an exit does; the next image's snapshots go on numbering.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfinfo.h"
#include "wake.h"
#include "preload.h"
#include "runtime/env.h"
#include "runtime/symbolize.h"
#include "unwind/unwind.h"
#include "runtime/sysfutex.h"

void ctrace__identity_final(void) CTRACE__PL_HIDDEN; /* libctrace: src/runtime/identity.c */

__thread volatile int ctrace__pl_guard __attribute__((tls_model("initial-exec")));
__thread volatile int ctrace__pl_in_dlsym __attribute__((tls_model("initial-exec")));
__thread volatile int ctrace__pl_deferred __attribute__((tls_model("initial-exec")));
pid_t ctrace__pl_pid;

/* ---- real functions ------------------------------------------------------ */

/* dlvsym first where a symbol has several versions (the condition variable
 * functions have a GLIBC_2.2.5 compatibility version and the current one). */
void *ctrace__pl_sym(const char *name, const char *version) {
  ctrace__pl_in_dlsym++;
  void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
  if (!p) p = dlsym(RTLD_NEXT, name);
  ctrace__pl_in_dlsym--;
  if (!p) {
    /* Only a wrapper the program called asks, so libc has the symbol;
     * if not, nothing sensible can follow. */
    static const char msg[] = "ctrace: libctrace-preload.so cannot find a libc function: ";
    syscall(SYS_write, 2, msg, sizeof msg - 1);
    syscall(SYS_write, 2, name, strlen(name));
    syscall(SYS_write, 2, "\n", 1);
    abort();
  }
  return p;
}

CTRACE__PL_REAL(void, _exit, (int))
CTRACE__PL_REAL(void, _Exit, (int))
CTRACE__PL_REAL(void, quick_exit, (int))

void ctrace__pl_real_exit(int status) {
  real__exit()(status);
  __builtin_unreachable();
}

/* This image's settings: its trace, and what the next image needs. */
static struct {
  char out[PATH_MAX];
  char shim[PATH_MAX];  /* absolute path of this object */
  char shim_asan[64];   /* libasan, if this build of the shim needs it */
  bool no_stacks;
  int cpu_hz;           /* CPU samples per second (CTRACE_CPU_HZ), 0: none */
  int unwind;           /* CTRACE_UNWIND_* from CTRACE_UNWIND */
  bool follow_forks;    /* -f: children (fork, posix_spawn) trace into FILE.pid<PID> */
  int image;            /* images of this process traced before this one */
  uint64_t flight_ms;   /* flight recorder: min_age (CTRACE_FLIGHT), 0: off */
  size_t flight_max;    /* its max_bytes (CTRACE_FLIGHT_MAX_MB), 0: default */
  int flight_sig;       /* its snapshot signal */
  bool flight_at_exit;  /* a snapshot into FILE at the end */
} cfg;

/* ---- finishing ------------------------------------------------------------- */

/* ctrace_stop, and a line on stderr when the trace is not whole: the file
 * could not be written to the end (a full disk), it was written slower
 * than events came (the trace ended early, or has gaps), or events were
 * dropped for want of memory for a buffer. Nothing is lost without a
 * word. */
/* A flight recorder's snapshot into path, said on stderr. */
static void snapshot_into(const char *path, int flags) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  int err = fd < 0 ? CTRACE_EIO : ctrace_flight_write(fd);
  if (fd >= 0 && close(fd) != 0 && !err) err = CTRACE_EIO;
  if (err == CTRACE_EEMPTY) unlink(path);
  ctrace_flight_stats st;
  ctrace_flight_stats_get(&st);
  if (err)
    fprintf(stderr, "ctrace: cannot write a snapshot to %s: %s\n", path, ctrace_strerror(err));
  else
    fprintf(stderr, "ctrace: wrote %s, the last %.1f s\n", path, (double)st.window_ns / 1e9);
}

/* The next snapshot on request: FILE.<n>, the first n not taken. */
static void snapshot_numbered(void) {
  char path[PATH_MAX + 16];
  for (int n = 1; n < 100000; n++) {
    snprintf(path, sizeof path, "%s.%d", cfg.out, n);
    if (access(path, F_OK) != 0) {
      snapshot_into(path, O_EXCL);
      return;
    }
  }
}

static void stop_trace(void) {
  if (cfg.flight_ms) {
    char path[PATH_MAX + 16];
    if (ctrace__pl_crash_sig) {
      snprintf(path, sizeof path, "%s.crash", cfg.out);
      snapshot_into(path, O_TRUNC);
    } else if (cfg.flight_at_exit) {
      snapshot_into(cfg.out, O_TRUNC);
    }
    ctrace_flight_stop();
    return;
  }
  int err = ctrace_stop();
  ctrace_stats st;
  ctrace_stats_get(&st);
  char msg[PATH_MAX + 256];
  int n = 0;
  if (err == CTRACE_ECAPPED && st.gap_ns)
    n = snprintf(msg, sizeof msg,
                 "ctrace: %s has %llu gap(s), %.1f s not traced: it was written slower than "
                 "events came, past CTRACE_MAX_PENDING_MB\n",
                 cfg.out, (unsigned long long)st.capped, (double)st.gap_ns / 1e9);
  else if (err)
    n = snprintf(msg, sizeof msg, "ctrace: the trace in %s is incomplete: %s\n", cfg.out,
                 ctrace_strerror(err));
  else if (st.lost)
    n = snprintf(msg, sizeof msg, "ctrace: %llu events are missing from %s: no memory for trace buffers\n",
                 (unsigned long long)st.lost, cfg.out);
  if (n > 0) {
    ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    (void)w;
  }
}

/* Futex words: the finisher waits for fin_req, callers of finish wait for
 * fin_done. fin_req holds FIN_STOP once the trace is to be finished,
 * FIN_WATCH once the finisher is to watch for the program's last thread
 * (ctrace__pl_watch_last), FIN_SNAP while a flight recorder's snapshot
 * is wanted, and FIN_PAUSE while the finisher is to end for a pause
 * (ctrace__pl_finisher_pause), which it says in fin_gone. */
enum { FIN_STOP = 1, FIN_WATCH = 2, FIN_SNAP = 4, FIN_PAUSE = 8 };
static _Atomic int fin_req, fin_done, fin_gone;
/* Snapshots asked for and not yet taken: one per signal, even when they
 * come faster than snapshots are written. */
static _Atomic int snap_pending;
static bool have_finisher;
static __thread bool on_finisher __attribute__((tls_model("initial-exec")));

static long futex(_Atomic int *word, int op, int val, const struct timespec *timeout) {
  return ctrace__futex(word, op, val, timeout);
}

static void *finisher(void *arg) {
  (void)arg;
  on_finisher = true;
  for (;;) {
    int req = atomic_load(&fin_req);
    if (req & FIN_STOP) break;
    if (req & FIN_PAUSE) {
      atomic_store(&fin_gone, 1);
      futex(&fin_gone, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
      return NULL;
    }
    if (req & FIN_SNAP) {
      atomic_fetch_and(&fin_req, ~FIN_SNAP);
      for (; atomic_load(&snap_pending) > 0; atomic_fetch_sub(&snap_pending, 1)) snapshot_numbered();
      continue;
    }
    /* glibc ends a process whose last thread exits with exit(0); the
     * tracer's threads keep that from happening, so do it for glibc (the
     * exit asks for the trace, which this thread then finishes itself). */
    if ((req & FIN_WATCH) && ctrace__pl_only_internal_left()) exit(0);
    struct timespec poll = {0, 10 * 1000000};
    futex(&fin_req, FUTEX_WAIT_PRIVATE, req, (req & FIN_WATCH) ? &poll : NULL);
  }
  stop_trace();
  atomic_store(&fin_done, 1);
  futex(&fin_done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
  return NULL;
}

/* Requests that come meanwhile stay in fin_req, for the next finisher:
 * have_finisher stays true, and only the thread that paused, in a wrapper
 * with the guard held, runs until then (a terminating signal waits for
 * the guard's release, a crash in the shim for no trace). */
bool ctrace__pl_finisher_pause(void) {
  if (!have_finisher) return true;
  if (atomic_fetch_or(&fin_req, FIN_PAUSE) & FIN_STOP) {
    atomic_fetch_and(&fin_req, ~FIN_PAUSE);
    return false;
  }
  futex(&fin_req, FUTEX_WAKE_PRIVATE, 1, NULL);
  while (atomic_load(&fin_gone) == 0) futex(&fin_gone, FUTEX_WAIT_PRIVATE, 0, NULL);
  return true;
}

void ctrace__pl_finisher_resume(void) {
  if (!(atomic_fetch_and(&fin_req, ~FIN_PAUSE) & FIN_PAUSE)) return; /* there was none */
  atomic_store(&fin_gone, 0);
  have_finisher = ctrace__pl_internal_thread(finisher, NULL) == 0;
}

void ctrace__pl_snapshot_request(void) {
  if (!have_finisher) return;
  atomic_fetch_add(&snap_pending, 1);
  if (atomic_fetch_or(&fin_req, FIN_SNAP) & (FIN_SNAP | FIN_STOP)) return;
  futex(&fin_req, FUTEX_WAKE_PRIVATE, 1, NULL);
}

bool ctrace__pl_tracing(void) {
  return ctrace__pl_pid != 0 && (atomic_load_explicit(&fin_req, memory_order_relaxed) & FIN_STOP) == 0;
}

void ctrace__pl_watch_last(void) {
  if (!have_finisher || (atomic_fetch_or(&fin_req, FIN_WATCH) & FIN_WATCH)) return;
  futex(&fin_req, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void ctrace__pl_finish(int timeout_ms) {
  /* Not the tracing process: a forked child (pid reset by its atfork
   * handler) or a vfork child, which shares our memory but not our pid. */
  if (ctrace__pl_pid == 0 || ctrace__pl_pid != (pid_t)syscall(SYS_getpid)) return;
  /* A title the process gave itself since its generation's log (a worker
   * that retitled itself and ends within its first generation): logged by
   * the thread that ends it, while its G still runs. Not from a signal
   * handler that interrupted the tracer (a timeout), nor once stopping. */
  if (timeout_ms == 0 && !on_finisher && !(atomic_load(&fin_req) & FIN_STOP)) {
    ctrace__pl_guard++;
    ctrace__identity_final();
    ctrace__pl_unguard();
  }
  if (!(atomic_fetch_or(&fin_req, FIN_STOP) & FIN_STOP)) {
    if (!have_finisher || on_finisher) {
      /* No finisher thread (it could not be created), or this is it (its
       * exit for the last thread): stop right here. */
      ctrace__pl_guard++;
      stop_trace();
      ctrace__pl_unguard();
      atomic_store(&fin_done, 1);
      return;
    }
    futex(&fin_req, FUTEX_WAKE_PRIVATE, 1, NULL);
  }
  uint64_t deadline = timeout_ms > 0 ? mono_ms() + (uint64_t)timeout_ms : 0;
  while (atomic_load(&fin_done) == 0) {
    struct timespec ts = {0, 100 * 1000000}, *tsp = NULL;
    if (deadline) {
      uint64_t now = mono_ms();
      if (now >= deadline) return;
      uint64_t left = deadline - now < 100 ? deadline - now : 100;
      ts.tv_nsec = (long)left * 1000000;
      tsp = &ts;
    }
    futex(&fin_done, FUTEX_WAIT_PRIVATE, 0, tsp);
  }
}

/* How long a path that may run in a signal handler waits for the trace: a
 * lock the interrupted code held could keep stop from finishing. */
#define CTRACE__PL_GUARDED_TIMEOUT_MS 2000

/* Normal exits wait for the whole trace; an exit called while this thread
 * is inside the tracer (a program's signal handler that interrupted it)
 * waits a bounded time. A thread whose goroutine has ended holds the guard
 * for good (threads.c); that one hold does not count. */
static void finish_from_exit(void) {
  int outside = ctrace__pl_thread_ended() ? 1 : 0;
  ctrace__pl_finish(ctrace__pl_guard > outside ? CTRACE__PL_GUARDED_TIMEOUT_MS : 0);
}

static void at_exit(void) { finish_from_exit(); }

static void sanitizer_death(void) { finish_from_exit(); }

__attribute__((destructor)) static void last_resort(void) {
  if (ctrace__pl_tracing()) finish_from_exit();
}

CTRACE__PL_EXPORT void _exit(int status) {
  finish_from_exit();
  real__exit()(status);
  __builtin_unreachable();
}

CTRACE__PL_EXPORT void _Exit(int status) {
  finish_from_exit();
  real__Exit()(status);
  __builtin_unreachable();
}

CTRACE__PL_EXPORT void quick_exit(int status) {
  finish_from_exit();
  real_quick_exit()(status);
  __builtin_unreachable();
}

/* ---- start ------------------------------------------------------------------ */

/* ---- the environment ---------------------------------------------------------
 *
 * The variables that set the tracer up. The shim takes them out of the
 * environment before any of the program's code runs, and keeps a copy:
 * the tracer reads its settings there (ctrace__env_use), and the exec and
 * spawn wrappers put them back for a program that is to be traced. */
static const char *const tracer_vars[] = {
    "CTRACE_OUT",           "CTRACE_RUN_PRELOAD",    "CTRACE_IMAGE",          "CTRACE_SPAWNED",
    "CTRACE_NO_STACKS",     "CTRACE_CPU_HZ",         "CTRACE_UNWIND",         "CTRACE_FOLLOW_FORKS",
    "CTRACE_FORMAT",        "CTRACE_VERBOSE",        "CTRACE_FLIGHT",         "CTRACE_FLIGHT_MAX_MB",
    "CTRACE_FLIGHT_SIGNAL", "CTRACE_FLIGHT_AT_EXIT", "CTRACE_MAX_PENDING_MB", "CTRACE_GEN_MS",
    "CTRACE_CLOCK",         "CTRACE_TSC_HZ"};
#define TRACER_VARS (sizeof tracer_vars / sizeof *tracer_vars)

/* The tracer's variables as the process got them, "NAME=value", NULL-ended. */
static char *saved_env[TRACER_VARS + 1];

extern char **environ;

/* The length of entry's name if it is one of names (n of them), else 0. */
static size_t var_in(const char *entry, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (strncmp(entry, names[i], len) == 0 && entry[len] == '=') return len;
  }
  return 0;
}

static bool is_tracer_var(const char *entry) { return var_in(entry, tracer_vars, TRACER_VARS) != 0; }

/* The value of name in the environment as the process got it. Read from
 * environ, not with getenv: a program may have its own getenv (bash has). */
static const char *initial_env(const char *name) {
  size_t len = strlen(name);
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
  return NULL;
}

/* "LD_PRELOAD=" and what is left of pre without what was put there to trace
 * this process: the entries `ctrace run` prepended (added, the value of
 * CTRACE_RUN_PRELOAD, which may hold a sanitizer runtime too), or else any
 * libctrace-preload.so. NULL when nothing is left. Static: the entry stays
 * in the environment. */
static char *preload_without_us(const char *pre, const char *added) {
  static char buf[4096 + sizeof "LD_PRELOAD="] = "LD_PRELOAD=";
  size_t n = sizeof "LD_PRELOAD=" - 1;
  const char *p = pre;
  size_t alen = added ? strlen(added) : 0;
  if (alen && strncmp(p, added, alen) == 0 && (p[alen] == ':' || p[alen] == ' ' || !p[alen])) p += alen;
  while (*p && n < sizeof buf - 1) {
    while (*p == ':' || *p == ' ') p++;
    const char *e = p;
    while (*e && *e != ':' && *e != ' ') e++;
    size_t len = (size_t)(e - p);
    const char *base = memrchr(p, '/', len);
    base = base ? base + 1 : p;
    static const char self[] = "libctrace-preload.so";
    bool ours = (size_t)(e - base) >= sizeof self - 1 && strncmp(base, self, sizeof self - 1) == 0;
    if (len && !ours && n + len + 1 < sizeof buf) {
      if (n > sizeof "LD_PRELOAD=" - 1) buf[n++] = ':';
      memcpy(buf + n, p, len);
      n += len;
    }
    p = e;
  }
  buf[n] = 0;
  return n > sizeof "LD_PRELOAD=" - 1 ? buf : NULL;
}

/* Takes the tracer's variables and the shim's LD_PRELOAD entries out of
 * the environment, keeping a copy of the variables (saved_env), which the
 * tracer then reads. Called before the program's main and its
 * executable's constructors: what the program reads of its environment,
 * through environ, main's envp or getenv, is what it would be untraced.
 *
 * In place, in the array environ points to, which is also main's envp:
 * not with unsetenv, which a program may define for itself, over its own
 * copy of the environment, and the shim's call would reach. bash does: its
 * main builds its variables from envp, and its unsetenv, called before
 * that, does nothing; the variables stayed in bash's environment and in
 * that of every child it started. The strings themselves stay where they
 * are: /proc/PID/environ shows the environment the process started with,
 * as it does after any unsetenv. */
static void env_scrub(void) {
  const char *added = initial_env("CTRACE_RUN_PRELOAD");
  size_t n = 0, k = 0;
  for (char **e = environ; e && *e; e++) {
    char *entry = *e;
    if (is_tracer_var(entry)) {
      bool dup = false;
      for (size_t i = 0; i < n; i++)
        if (strncmp(saved_env[i], entry, strcspn(entry, "=") + 1) == 0) dup = true;
      char *copy = !dup && n < TRACER_VARS ? strdup(entry) : NULL;
      if (copy) saved_env[n++] = copy;
      continue;
    }
    if (strncmp(entry, "LD_PRELOAD=", 11) == 0 && !(entry = preload_without_us(entry + 11, added))) continue;
    environ[k++] = entry;
  }
  if (environ) environ[k] = NULL;
  saved_env[n] = NULL;
  ctrace__env_use(saved_env);
}

static void fork_child(void) {
  ctrace__pl_pid = 0;
  ctrace__pl_wake_fork_child();
}

/* ---- following exec ------------------------------------------------------------ */

/* An entry the exec and spawn wrappers set for a traced program (and so
 * one they allocated, in the environment they build). */
static bool is_ours(const char *entry) {
  return strncmp(entry, "LD_PRELOAD=", 11) == 0 || is_tracer_var(entry);
}

static char *env_entry(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *env_entry(const char *fmt, ...) {
  va_list ap, cp;
  va_start(ap, fmt);
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  char *e = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (e) vsnprintf(e, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return e;
}

/* envp plus what traces prog: the next image of this process, or (spawned)
 * a child that names its trace FILE.pid<PID> itself. */
static char **traced_env(const char *prog, char *const envp[], bool spawned) {
  ctrace__elf_info info;
  ctrace__elf_info_read(prog, &info);
  /* Not traceable: run untraced rather than break it. */
  if (info.tsan) return (char **)envp;
  const char *asan = info.asan[0] ? info.asan : cfg.shim_asan;
  /* After a setns or pivot_root into another mount namespace (a
   * container's), the shim's file or the trace's directory may not be
   * there: the loader would say so on the program's stderr, or the new
   * image that it cannot trace. Run it untraced, saying nothing. */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", cfg.out);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = 0;
  if (faccessat(AT_FDCWD, cfg.shim, R_OK, AT_EACCESS) != 0 ||
      (strchr(asan, '/') && faccessat(AT_FDCWD, asan, R_OK, AT_EACCESS) != 0) ||
      (slash && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0))
    return (char **)envp;
  const char *their_preload = NULL;
  size_t n = 0;
  for (; envp && envp[n]; n++)
    if (strncmp(envp[n], "LD_PRELOAD=", 11) == 0) their_preload = envp[n] + 11;
  /* envp without our entries, then ours: LD_PRELOAD, the four this
   * image decides, the tracer's other settings as this process got them. */
  char **env = malloc((n + 5 + TRACER_VARS + 1) * sizeof *env);
  char *added = env_entry("%s%s%s", asan, *asan ? ":" : "", cfg.shim);
  if (!env || !added) {
    free(env);
    free(added);
    return (char **)envp;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!is_ours(envp[i])) env[k++] = envp[i];
  size_t first = k;
  bool more = their_preload && *their_preload;
  env[k++] = env_entry("LD_PRELOAD=%s%s%s", added, more ? ":" : "", more ? their_preload : "");
  env[k++] = env_entry("CTRACE_RUN_PRELOAD=%s", added);
  env[k++] = env_entry("CTRACE_OUT=%s", cfg.out);
  if (spawned)
    env[k++] = env_entry("CTRACE_SPAWNED=1");
  else
    env[k++] = env_entry("CTRACE_IMAGE=%d", cfg.image + 1);
  static const char *const decided[] = {"CTRACE_OUT", "CTRACE_RUN_PRELOAD", "CTRACE_IMAGE",
                                        "CTRACE_SPAWNED"};
  for (char **e = saved_env; *e; e++)
    if (!var_in(*e, decided, sizeof decided / sizeof *decided)) env[k++] = env_entry("%s", *e);
  env[k] = NULL;
  free(added);
  for (size_t i = first; i < k; i++)
    if (!env[i]) { /* out of memory: untraced */
      for (size_t j = first; j < k; j++) free(env[j]);
      free(env);
      return (char **)envp;
    }
  return env;
}

static bool tracing_process(void) {
  return ctrace__pl_pid != 0 && ctrace__pl_pid == (pid_t)syscall(SYS_getpid);
}

char **ctrace__pl_exec_env(const char *prog, char *const envp[]) {
  if (!tracing_process()) return (char **)envp;
  ctrace__pl_finish(0);
  return traced_env(prog, envp, false);
}

char **ctrace__pl_spawn_env(const char *prog, char *const envp[]) {
  if (!cfg.follow_forks || !ctrace__pl_tracing() || !tracing_process()) return (char **)envp;
  return traced_env(prog, envp, true);
}

void ctrace__pl_env_free(char **env, char *const envp[]) {
  if (env == (char **)envp) return;
  int e = errno;
  for (size_t i = 0; env[i]; i++)
    if (is_ours(env[i])) free(env[i]);
  free(env);
  errno = e;
}

/* Sanitizer runtimes loaded in the process (libasan, libubsan, ...). Each
 * keeps its own copy of sanitizer_common, so each has its own list of
 * death callbacks. Names are collected first: dlopen is not called from
 * inside dl_iterate_phdr. */
#define SANITIZERS_MAX 8
typedef struct sanitizers {
  char name[SANITIZERS_MAX][256];
  int n;
} sanitizers;

static int find_sanitizer(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  sanitizers *s = arg;
  const char *base = strrchr(info->dlpi_name, '/');
  base = base ? base + 1 : info->dlpi_name;
  if (s->n < SANITIZERS_MAX && strncmp(base, "lib", 3) == 0 && strstr(base, "san.so") &&
      strlen(info->dlpi_name) < sizeof s->name[0])
    strcpy(s->name[s->n++], info->dlpi_name);
  return 0;
}

/* A sanitizer that finds an error exits without running atexit handlers;
 * it calls its death callbacks first. */
static void hook_sanitizers(void) {
  sanitizers s = {.n = 0};
  dl_iterate_phdr(find_sanitizer, &s);
  for (int i = 0; i < s.n; i++) {
    void *h = dlopen(s.name[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void (*set_death)(void (*)(void)) =
        (void (*)(void (*)(void)))dlsym(h, "__sanitizer_set_death_callback");
    if (set_death) set_death(sanitizer_death);
    dlclose(h);
  }
}

/* FILE.pid<PID>: the trace of this process, a followed child of the one
 * tracing into parent. False if the name does not fit. */
static bool child_path(char *out, size_t size, const char *parent) {
  int n = snprintf(out, size, "%s.pid%d", parent, (int)getpid());
  return n > 0 && (size_t)n < size;
}

static bool env_flag(const char *name) {
  const char *v = ctrace__getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

/* Starts this process's trace into path, the calling thread's G running,
 * with the finisher to end it. Guarded. */
static bool trace_into(const char *path) {
  ctrace_options opts = {.no_stacks = cfg.no_stacks, .cpu_hz = cfg.cpu_hz, .unwind = cfg.unwind};
  ctrace_flight_options fo = {.min_age_ms = cfg.flight_ms, .max_bytes = cfg.flight_max, .trace = &opts};
  int err = cfg.flight_ms ? ctrace_flight_start(&fo) : ctrace_start_file(path, &opts);
  if (err) {
    fprintf(stderr, "ctrace: cannot trace into %s: %s\n", path, ctrace_strerror(err));
    return false;
  }
  ctrace__pl_pid = getpid();
  ctrace_thread_resume();
  have_finisher = ctrace__pl_internal_thread(finisher, NULL) == 0;
  return true;
}

/* In the child of fork, with -f: the child traces into FILE.pid<PID>. It
 * has a clean, stopped tracer (fork_child above, src/runtime/fork.c) and
 * one thread, the caller, whose G is the child's first goroutine; the
 * finisher and the writer are started anew, and the thread counts restart
 * from that one thread. Not when the parent's trace was being finished
 * (the process is exiting). */
void ctrace__pl_follow_fork(void) {
  if (!cfg.follow_forks || (atomic_load(&fin_req) & FIN_STOP)) return;
  char path[PATH_MAX];
  if (!child_path(path, sizeof path, cfg.out)) return;
  atomic_store(&fin_req, 0);
  atomic_store(&fin_done, 0);
  atomic_store(&fin_gone, 0);
  have_finisher = false;
  ctrace__pl_guard++;
  ctrace__pl_threads_fork_child();
  if (trace_into(path)) {
    strcpy(cfg.out, path);
    cfg.image = 0;
  }
  ctrace__pl_unguard();
}

static void start(uintptr_t main_pc) {
  const char *given = initial_env("CTRACE_OUT");
  if (!given || !*given) return;
  env_scrub();
  const char *out = ctrace__getenv("CTRACE_OUT");
  /* A relative name is taken from where the program starts: a program
   * that changes directory and then forks or execs must not have the next
   * trace written into its own directory. */
  char path[PATH_MAX], cwd[PATH_MAX];
  int n = out[0] == '/' || !getcwd(cwd, sizeof cwd) ? snprintf(path, sizeof path, "%s", out)
                                                    : snprintf(path, sizeof path, "%s/%s", cwd, out);
  if (n < 0 || (size_t)n >= sizeof path) {
    fprintf(stderr, "ctrace: CTRACE_OUT is too long; not tracing\n");
    return;
  }
  const char *img = ctrace__getenv("CTRACE_IMAGE");
  int image = img ? atoi(img) : 0;
  /* Started by a followed posix_spawn: the parent's FILE names ours. */
  if (env_flag("CTRACE_SPAWNED") && !child_path(path, sizeof path, strcpy(cwd, path))) {
    fprintf(stderr, "ctrace: CTRACE_OUT is too long; not tracing\n");
    return;
  }

  /* Kept for an exec or a fork that follows. */
  snprintf(cfg.out, sizeof cfg.out, "%s", path);
  cfg.no_stacks = env_flag("CTRACE_NO_STACKS");
  const char *hz = ctrace__getenv("CTRACE_CPU_HZ");
  cfg.cpu_hz = hz ? atoi(hz) : 0;
  cfg.unwind = ctrace__unwind_mode(ctrace__getenv("CTRACE_UNWIND"));
  if (cfg.unwind < 0) {
    fprintf(stderr, "ctrace: CTRACE_UNWIND is auto, fp or tables; using auto\n");
    cfg.unwind = CTRACE_UNWIND_AUTO;
  }
  cfg.follow_forks = env_flag("CTRACE_FOLLOW_FORKS");
  cfg.image = image > 0 ? image : 0;
  const char *fl = ctrace__getenv("CTRACE_FLIGHT");
  cfg.flight_ms = fl ? strtoull(fl, NULL, 10) : 0;
  const char *flmax = ctrace__getenv("CTRACE_FLIGHT_MAX_MB");
  cfg.flight_max = flmax ? (size_t)strtoull(flmax, NULL, 10) << 20 : 0;
  const char *flsig = ctrace__getenv("CTRACE_FLIGHT_SIGNAL");
  cfg.flight_sig = cfg.flight_ms ? (flsig && atoi(flsig) > 0 && atoi(flsig) < NSIG ? atoi(flsig) : SIGUSR2) : 0;
  cfg.flight_at_exit = env_flag("CTRACE_FLIGHT_AT_EXIT");
  Dl_info self;
  if (dladdr((void *)start, &self) && self.dli_fname && !realpath(self.dli_fname, cfg.shim))
    snprintf(cfg.shim, sizeof cfg.shim, "%s", self.dli_fname);
  ctrace__elf_info shim_info;
  if (ctrace__elf_info_read(cfg.shim, &shim_info))
    snprintf(cfg.shim_asan, sizeof cfg.shim_asan, "%s", shim_info.asan);
  /* A followed exec: the previous image's finished trace moves aside
   * (a flight recorder's snapshots are numbered as they come); a trace
   * written to a device (-o /dev/null) stays where it is, and so does the
   * device. */
  struct stat st;
  if (cfg.image > 0 && !cfg.flight_ms && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    char prev[PATH_MAX + 16];
    snprintf(prev, sizeof prev, "%s.%d", path, cfg.image);
    rename(path, prev);
  }

  ctrace__pl_guard++;
  ctrace__symbolize_main(main_pc);
  /* The main thread's G starts at main. Made before tracing starts, so
   * the trace announces it as the first goroutine. */
  ctrace_g *g = ctrace_thread_create((void (*)(void))main_pc);
  ctrace_thread_begin(g);
  ctrace__pl_threads_init(); /* before the writer thread exists */
  if (trace_into(path)) {
    pthread_atfork(NULL, NULL, fork_child);
    ctrace__pl_signals_init(cfg.flight_sig);
    hook_sanitizers();
  }
  ctrace__pl_unguard();
}

typedef int (*main_fn)(int, char **, char **);
static main_fn user_main;

/* main_hook and __libc_start_main are beneath main in every stack of the
 * main thread (where the compiler does not make their calls tail calls):
 * the tracer's own, in the section no stack shows (threads.c). */
__attribute__((section("ctrace_hidden_text"), noinline)) static int main_hook(int argc, char **argv,
                                                                              char **envp) {
  if (ctrace__pl_pid) atexit(at_exit);
  return user_main(argc, argv, envp);
}

CTRACE__PL_REAL(int, __libc_start_main,
                (main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *))

__attribute__((section("ctrace_hidden_text"))) CTRACE__PL_EXPORT int __libc_start_main(
    main_fn main, int argc, char **argv, void (*init)(void),
                                        void (*fini)(void), void (*rtld_fini)(void),
                                        void *stack_end) {
  __libc_start_main_fn real = real___libc_start_main();
  user_main = main;
  start((uintptr_t)main);
  return real(main_hook, argc, argv, init, fini, rtld_fini, stack_end);
}
