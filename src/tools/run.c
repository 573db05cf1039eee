/* ctrace run: runs a program with libctrace-preload.so, which traces it.
 *
 * The command sets the environment up and then becomes the program
 * (execvp, as env and a shell start one: a file without #! runs under
 * /bin/sh, and the exit status is 127 if it is not found, 126 if it cannot
 * be run): exit status, signals, stdin/stdout/stderr, process group and
 * pid are the program's own, with nothing in between. The shim writes the
 * trace from inside the program (src/preload/shim.c), follows the process
 * across exec, and removes itself from the environment its children
 * inherit.
 *
 * A program built with AddressSanitizer needs its runtime first in the
 * list of preloaded objects ("ASan runtime does not come first in initial
 * library list"); the command reads the program's DT_NEEDED entries (and
 * the shim's: an ASan build of the shim needs the runtime too) and puts the
 * runtime before the shim (src/preload/elfinfo.c decides, here and in the
 * shim's exec wrappers). ThreadSanitizer and the shim do not work together
 * (the program crashes or hangs: both replace the same thread and lock
 * functions); the command says so instead of starting it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "ctrace/ctrace.h"
#include "preload/elfinfo.h"
#include "runtime/clock.h"
#include "unwind/unwind.h"

#define SHIM "libctrace-preload.so"
#define DEFAULT_OUT "ctrace.trace"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace run [-o FILE] [-f] [-v] [--no-stacks] [--cpu[=HZ]] [--unwind=MODE]\n"
          "                  [--format=go1.11|go1.22]\n"
          "                  [--flight[=DURATION] [--flight-max=MB] [--flight-signal=SIG]\n"
          "                   [--flight-at-exit]] [--]\n"
          "                  PROG [ARGS...]\n"
          "\n"
          "Runs PROG, a dynamically linked program, and writes its execution trace to\n"
          "FILE (default " DEFAULT_OUT "), for `go tool trace FILE`. Nothing in PROG\n"
          "needs to change: " SHIM ", preloaded, records every thread as a\n"
          "goroutine, its creation and end, the waits on mutexes, read-write locks,\n"
          "condition variables, semaphores, barriers and joins, sleeps, system calls\n"
          "(blocked or not), network waits, and the size of the heap. The trace is\n"
          "finished when PROG exits, calls exec, or is killed by a signal.\n"
          "\n"
          "PROG is found and run as env or a shell would (execvp: PATH, and /bin/sh\n"
          "for a script without #!), in place of ctrace: its exit status, signals and\n"
          "output are its own. If PROG execs another program (as launcher scripts and\n"
          "env do), that one is traced in turn: FILE holds the last program, FILE.1,\n"
          "FILE.2, ... the ones before it. Children (fork, posix_spawn) run untraced,\n"
          "or with -f each writes its own trace, FILE.pid<PID>.\n"
          "\n"
          "options:\n"
          "  -o FILE, --output FILE  write the trace to FILE (default " DEFAULT_OUT ")\n"
          "  -f, --follow-forks      trace children too, each into FILE.pid<PID>\n"
          "  -v, --verbose           at the end, say where each object's symbols came from\n"
          "                          (DWARF, a separate debug file, .symtab, MiniDebugInfo,\n"
          "                          dynamic symbols), and its unwind rules where they came\n"
          "                          from .debug_frame\n"
          "  --no-stacks             record no call stacks\n"
          "  --cpu[=HZ]              also sample what each thread runs, HZ times per\n"
          "                          second of its CPU time (default 100; the kernel's\n"
          "                          tick, often 250, caps it)\n"
          "  --unwind=MODE           how stacks are walked: auto (default: frame pointers\n"
          "                          where the code keeps them, else its unwind tables),\n"
          "                          fp (frame pointers only), tables (unwind tables only)\n"
          "  --format=FORMAT         go1.22 (default: Go's current format, which Go 1.22\n"
          "                          and later read, cut into self-contained generations,\n"
          "                          so that the trace of a program killed or cut short\n"
          "                          keeps all but its last one) or go1.11 (Go's classic\n"
          "                          format, which every Go reads, Go 1.19 and 1.21 too,\n"
          "                          and which only a program that exits writes whole);\n"
          "                          without it, $CTRACE_FORMAT if set\n"
          "  --flight[=DURATION]     flight recorder: keep the trace in memory, at least\n"
          "                          its last DURATION (default 10s; ms, s or m), in Go's\n"
          "                          current format, and write it out only when asked:\n"
          "                          SIGUSR2 writes a snapshot to FILE.1, FILE.2, ...; a\n"
          "                          crash (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) to\n"
          "                          FILE.crash; a normal exit nothing, unless\n"
          "                          --flight-at-exit (to FILE). Files of an earlier run\n"
          "                          by those names are removed first\n"
          "  --flight-max=MB         memory for what is kept (default 64; it wins over\n"
          "                          DURATION)\n"
          "  --flight-signal=SIG     the snapshot signal instead of USR2 (a name, such as\n"
          "                          USR1 or RTMIN+3, or a number); the program's own\n"
          "                          handler for it still runs, after the snapshot\n"
          "  --flight-at-exit        write the window to FILE when PROG exits\n"
          "  -h, --help              print this help\n"
          "\n"
          "The same without this command:\n"
          "  LD_PRELOAD=/path/to/" SHIM " CTRACE_OUT=FILE PROG [ARGS...]\n"
          "(CTRACE_FOLLOW_FORKS=1 for -f, CTRACE_NO_STACKS=1 for --no-stacks,\n"
          "CTRACE_CPU_HZ=HZ for --cpu, CTRACE_UNWIND=MODE for --unwind=MODE,\n"
          "CTRACE_FORMAT=FORMAT for --format=FORMAT, CTRACE_FLIGHT=MS for --flight,\n"
          "CTRACE_FLIGHT_MAX_MB, CTRACE_FLIGHT_SIGNAL=NUMBER, CTRACE_FLIGHT_AT_EXIT=1,\n"
          "CTRACE_VERBOSE=1 for -v).\n"
          "CTRACE_PRELOAD=PATH makes this command use another shim.\n"
          "Exit status: PROG's; 127 if PROG is not found, 126 if it cannot be run, 2 on\n"
          "bad usage or if FILE cannot be written.\n");
}

/* ---- finding things ---------------------------------------------------------- */

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The shim: $CTRACE_PRELOAD, else next to this executable (../lib in the
 * build tree, ../<libdir> when installed), else the install libdir. */
static bool find_shim(char *out, size_t size) {
  const char *env = getenv("CTRACE_PRELOAD");
  if (env && *env) {
    snprintf(out, size, "%s", env);
    return is_file(out);
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    const char *dir = dirname(exe);
    const char *rel[] = {"lib", CTRACE_REL_LIBDIR};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
      snprintf(out, size, "%s/../%s/" SHIM, dir, rel[i]);
      if (is_file(out)) {
        char real[PATH_MAX];
        if (realpath(out, real)) snprintf(out, size, "%s", real);
        return true;
      }
    }
  }
  snprintf(out, size, "%s/" SHIM, CTRACE_INSTALL_LIBDIR);
  return is_file(out);
}

/* ---- flight recorder options -------------------------------------------------------- */

/* A duration: a number with ms, s or m (s if none). -1 if not one. */
static long long duration_ms(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v <= 0) return -1;
  double ms = strcmp(end, "ms") == 0              ? v
              : strcmp(end, "s") == 0 || !*end   ? v * 1000
              : strcmp(end, "m") == 0            ? v * 60000
                                                 : -1;
  return ms >= 1 && ms < 1e12 ? (long long)ms : -1;
}

/* A signal by name (USR1, SIGUSR1, RTMIN+3) or number; 0 if none, or one
 * that ends a process as a crash or cannot be caught. */
static int signal_number(const char *s) {
  static const struct {
    const char *name;
    int sig;
  } names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
               {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
               {"CHLD", SIGCHLD}, {"CONT", SIGCONT}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},
               {"TTOU", SIGTTOU}, {"URG", SIGURG},   {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},
               {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
               {"PWR", SIGPWR}};
  if (strncmp(s, "SIG", 3) == 0) s += 3;
  char *end;
  long n = strtol(s, &end, 10);
  int sig = 0;
  if (*s && !*end) {
    sig = (int)n;
  } else if (strncmp(s, "RTMIN", 5) == 0) {
    long k = s[5] == '+' ? strtol(s + 6, &end, 10) : (end = (char *)s + 5, 0);
    sig = !*end ? SIGRTMIN + (int)k : 0;
  } else {
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      if (strcmp(s, names[i].name) == 0) sig = names[i].sig;
  }
  bool crash = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT ||
               sig == SIGTRAP || sig == SIGSYS;
  return sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP && !crash ? sig : 0;
}

/* Removes what an earlier flight run left by the names this one writes:
 * FILE, FILE.crash and FILE.1, FILE.2, ... (while they are there), so
 * that a snapshot's number says which of this run's it is. */
static void remove_old_snapshots(const char *out) {
  char path[PATH_MAX + 16];
  unlink(out);
  snprintf(path, sizeof path, "%s.crash", out);
  unlink(path);
  for (int n = 1;; n++) {
    snprintf(path, sizeof path, "%s.%d", out, n);
    if (unlink(path) != 0) break;
  }
}

/* ---- the command ------------------------------------------------------------------ */

/* What the command line asks for. */
typedef struct run_opts {
  const char *out, *unwind, *format;
  bool no_stacks, follow_forks, verbose, flight_at_exit;
  int cpu_hz, flight_sig;
  long long flight_ms, flight_max_mb;
  char **prog_argv; /* the program and its arguments */
} run_opts;

/* Reads the options into o: -1 to go on, else the command's exit status
 * (0 after --help). */
static int parse_args(int argc, char **argv, run_opts *o) {
  *o = (run_opts){.out = DEFAULT_OUT};
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "ctrace run: %s needs a file name\n", a);
        return 2;
      }
      o->out = argv[++i];
    } else if (strncmp(a, "--output=", 9) == 0) {
      o->out = a + 9;
    } else if (strncmp(a, "--unwind=", 9) == 0) {
      o->unwind = a + 9;
      if (ctrace__unwind_mode(o->unwind) < 0) {
        fprintf(stderr, "ctrace run: --unwind is auto, fp or tables, not '%s'\n", o->unwind);
        return 2;
      }
    } else if (strncmp(a, "--format=", 9) == 0) {
      o->format = a + 9;
      if (strcmp(o->format, "go1.11") != 0 && strcmp(o->format, "go1.22") != 0) {
        fprintf(stderr, "ctrace run: --format is go1.11 or go1.22, not '%s'\n", o->format);
        return 2;
      }
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      o->verbose = true;
    } else if (strcmp(a, "--no-stacks") == 0) {
      o->no_stacks = true;
    } else if (strcmp(a, "--cpu") == 0) {
      o->cpu_hz = 100;
    } else if (strncmp(a, "--cpu=", 6) == 0) {
      char *end;
      long hz = strtol(a + 6, &end, 10);
      if (*end || hz < 1 || hz > 10000) {
        fprintf(stderr, "ctrace run: --cpu=%s: want a rate from 1 to 10000 per second\n", a + 6);
        return 2;
      }
      o->cpu_hz = (int)hz;
    } else if (strcmp(a, "-f") == 0 || strcmp(a, "--follow-forks") == 0) {
      o->follow_forks = true;
    } else if (strcmp(a, "--flight") == 0) {
      o->flight_ms = CTRACE_FLIGHT_DEFAULT_MIN_AGE_MS;
    } else if (strncmp(a, "--flight=", 9) == 0) {
      if ((o->flight_ms = duration_ms(a + 9)) < 0) {
        fprintf(stderr, "ctrace run: --flight=%s: want a duration, such as 500ms, 10s or 2m\n", a + 9);
        return 2;
      }
    } else if (strncmp(a, "--flight-max=", 13) == 0) {
      char *end;
      o->flight_max_mb = strtoll(a + 13, &end, 10);
      if (*end || o->flight_max_mb < 1 || o->flight_max_mb > (1 << 20)) {
        fprintf(stderr, "ctrace run: --flight-max=%s: want MiB, 1 or more\n", a + 13);
        return 2;
      }
    } else if (strncmp(a, "--flight-signal=", 16) == 0) {
      if (!(o->flight_sig = signal_number(a + 16))) {
        fprintf(stderr, "ctrace run: --flight-signal=%s: want a signal that can be caught and"
                        " is not a crash's (USR1, USR2, RTMIN+N, a number)\n", a + 16);
        return 2;
      }
    } else if (strcmp(a, "--flight-at-exit") == 0) {
      o->flight_at_exit = true;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "ctrace run: unknown option '%s'\n\n", a);
      usage(stderr);
      return 2;
    } else {
      break;
    }
  }
  if (i >= argc || !*o->out) {
    usage(stderr);
    return 2;
  }
  o->prog_argv = argv + i;
  /* CTRACE_FORMAT picks the format as it does for ctrace_start with no
   * format (an empty value is the default); --format wins over it. A
   * flight recorder records Go's current format whatever it says, as
   * ctrace_flight_start does. */
  const char *f = getenv("CTRACE_FORMAT");
  if (!o->format && !o->flight_ms && f && *f) {
    if (strcmp(f, "go1.11") != 0 && strcmp(f, "go1.22") != 0) {
      fprintf(stderr, "ctrace run: CTRACE_FORMAT is go1.11 or go1.22, not '%s'\n", f);
      return 2;
    }
    o->format = f;
  }
  /* Go's current format unless told: its generations are whole as they
   * are written, so a program that dies (SIGKILL, the OOM killer, a
   * container stopped) leaves a trace that reads up to its last one; a
   * classic trace's stack table and clock come last, and nothing of it
   * reads without them. */
  if (!o->format) o->format = "go1.22";
  if ((o->flight_max_mb || o->flight_sig || o->flight_at_exit) && !o->flight_ms) {
    fprintf(stderr, "ctrace run: --flight-max, --flight-signal and --flight-at-exit go with --flight\n");
    return 2;
  }
  if (o->flight_ms && o->format && strcmp(o->format, "go1.22") != 0) {
    fprintf(stderr, "ctrace run: --flight records Go's current format (go1.22)\n");
    return 2;
  }
  return -1;
}

/* Whether the program execvp will run (prog) can be traced by the shim;
 * says why not. The sanitizer runtime either was built with, which must
 * come first in LD_PRELOAD, into san ("" if none). */
static bool traceable(const char *prog, const char *shim, char *san, size_t cap) {
  ctrace__elf_info pf, sf;
  ctrace__elf_info_read(prog, &pf);
  ctrace__elf_info_read(shim, &sf);
  if (pf.elf && !pf.dynamic) {
    fprintf(stderr, "ctrace run: %s is statically linked: a preloaded library cannot trace it\n",
            prog);
    return false;
  }
  if (pf.elf && pf.no_libc_start) {
    fprintf(stderr, "ctrace run: %s does not start through glibc's __libc_start_main (a Go"
                    " program?), where tracing starts: it cannot be traced\n", prog);
    return false;
  }
  if (pf.tsan || sf.tsan) {
    fprintf(stderr, "ctrace run: %s is built with ThreadSanitizer, which cannot run with a"
                    " preloaded tracer\n", pf.tsan ? prog : shim);
    return false;
  }
  snprintf(san, cap, "%s", pf.asan[0] ? pf.asan : sf.asan);
  return true;
}

/* Sets name to the number v, or unsets it if v is 0. */
static void setenv_num(const char *name, long long v) {
  char s[32];
  snprintf(s, sizeof s, "%lld", v);
  if (v)
    setenv(name, s, 1);
  else
    unsetenv(name);
}

/* Sets name to v, or unsets it if v is NULL. */
static void setenv_or_unset(const char *name, const char *v) {
  if (v)
    setenv(name, v, 1);
  else
    unsetenv(name);
}

/* The environment the shim reads (shim.c): every variable set or unset,
 * so that none comes from an outer ctrace run. False if out of memory. */
static bool shim_env(const run_opts *o, const char *shim, const char *san, const char *abs_out) {
  /* LD_PRELOAD: [sanitizer runtime:]shim[:what was there]. */
  char added[2 * PATH_MAX + 2];
  snprintf(added, sizeof added, "%s%s%s", san, *san ? ":" : "", shim);
  const char *old = getenv("LD_PRELOAD");
  size_t len = strlen(added) + (old ? strlen(old) + 1 : 0) + 1;
  char *preload = malloc(len);
  if (!preload) return false;
  snprintf(preload, len, "%s%s%s", added, old && *old ? ":" : "", old ? old : "");
  setenv("LD_PRELOAD", preload, 1);
  free(preload);
  setenv("CTRACE_RUN_PRELOAD", added, 1);
  setenv("CTRACE_OUT", abs_out, 1);
  setenv_num("CTRACE_CPU_HZ", o->cpu_hz);
  setenv_or_unset("CTRACE_NO_STACKS", o->no_stacks ? "1" : NULL);
  if (o->verbose) setenv("CTRACE_VERBOSE", "1", 1);
  setenv_or_unset("CTRACE_UNWIND", o->unwind);
  setenv_or_unset("CTRACE_FORMAT", o->format);
  setenv_or_unset("CTRACE_FOLLOW_FORKS", o->follow_forks ? "1" : NULL);
  setenv_num("CTRACE_FLIGHT", o->flight_ms);
  setenv_num("CTRACE_FLIGHT_MAX_MB", o->flight_ms ? o->flight_max_mb : 0);
  setenv_num("CTRACE_FLIGHT_SIGNAL", o->flight_ms ? o->flight_sig : 0);
  setenv_or_unset("CTRACE_FLIGHT_AT_EXIT", o->flight_ms && o->flight_at_exit ? "1" : NULL);
  /* The TSC's rate, measured once here for every process traced (an
   * outer run's stands): their clocks then run at one rate, and none
   * spends its own 10 ms on it at start. */
  if (!getenv("CTRACE_TSC_HZ")) setenv_num("CTRACE_TSC_HZ", (long long)(ctrace__tsc_hz(20) + 0.5));
  return true;
}

int ctrace__cmd_run(int argc, char **argv) {
  run_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0) return rc;

  char shim[PATH_MAX];
  if (!find_shim(shim, sizeof shim)) {
    fprintf(stderr, "ctrace run: cannot find %s (looked next to this command and in %s;"
                    " CTRACE_PRELOAD=PATH names it)\n", SHIM, CTRACE_INSTALL_LIBDIR);
    return 2;
  }
  /* The file execvp will run (below), for what it is. */
  char prog[PATH_MAX], san[PATH_MAX];
  if (!ctrace__elf_find_program(o.prog_argv[0], prog, sizeof prog)) {
    int err = errno;
    fprintf(stderr, "ctrace run: %s: %s\n", o.prog_argv[0], strerror(err));
    return err == ENOENT ? 127 : 126;
  }
  if (!traceable(prog, shim, san, sizeof san)) return 2;

  /* The shim opens the file before the program's own code runs, in the
   * same directory; an absolute name still holds if the program moves.
   * A flight recorder writes it only when asked: here it is only tried. */
  int fd = open(o.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "ctrace run: cannot write %s: %s\n", o.out, strerror(errno));
    return 2;
  }
  close(fd);
  if (o.flight_ms) remove_old_snapshots(o.out);
  char abs_out[PATH_MAX];
  if (!realpath(o.out, abs_out)) snprintf(abs_out, sizeof abs_out, "%s", o.out);
  if (!shim_env(&o, shim, san, abs_out)) return 2;

  /* As a shell or env starts it: the same search of PATH, and a file the
   * kernel cannot run (no #! line) runs under /bin/sh (glibc's execvp). */
  execvp(o.prog_argv[0], o.prog_argv);
  int err = errno;
  fprintf(stderr, "ctrace run: %s: %s\n", o.prog_argv[0], strerror(err));
  return err == ENOENT ? 127 : 126;
}
