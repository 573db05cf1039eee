/* ctrace pprof: a pprof profile of a trace (src/analyse/). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "ctrace/analyse.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace pprof -t TYPE [--goroutine=NAME] [--region=NAME] [--hz=N] [-o FILE] TRACE\n"
          "\n"
          "Writes a pprof profile (gzip-compressed profile.proto) of the trace TRACE to\n"
          "FILE, or to standard output when it is not a terminal. Read it with\n"
          "`go tool pprof` or any pprof viewer. TYPE is one of:\n"
          "  net      time blocked on the network      (as go tool trace -pprof=net)\n"
          "  sync     time blocked on channels, select, mutexes, conds and GC (-pprof=sync)\n"
          "  syscall  time in system calls             (-pprof=syscall)\n"
          "  sched    time runnable before running, after a wakeup or creation (-pprof=sched)\n"
          "  wall     every goroutine's time, by state: one flame graph of where time goes\n"
          "  cpu      the trace's CPU samples (ctrace run --cpu, cpu_hz, or Go's own):\n"
          "           samples (count) and CPU time (nanoseconds)\n"
          "  waker    who kept them waiting: each wait (but sleeps) under the stack of\n"
          "           the goroutine that ended it, as it did; labels woken= and waker=\n"
          "           (start functions; waker=none, frame [no waker known]: none known)\n"
          "The first four are Go's: per stack at entry to the state, contentions (count)\n"
          "and delay (nanoseconds), as is waker. See docs/analyse.md.\n"
          "\n"
          "  --goroutine=NAME  only goroutines whose start function is NAME\n"
          "  --region=NAME     only time inside user regions of type NAME\n"
          "  --hz=N            -t cpu: the samples were taken N times per second of CPU\n"
          "                    (the trace does not say; by default it is estimated)\n"
          "  -o FILE           write to FILE (replaced only once the profile is complete)\n"
          "\n"
          "Exit status 0, 1 if the trace is bad (the error names its byte offset), 2 on\n"
          "bad usage.\n");
}

static const struct {
  const char *name;
  ctrace_profile_kind kind;
} kinds[] = {
    {"net", CTRACE_PROFILE_NET},         {"sync", CTRACE_PROFILE_SYNC},
    {"syscall", CTRACE_PROFILE_SYSCALL}, {"sched", CTRACE_PROFILE_SCHED},
    {"wall", CTRACE_PROFILE_WALL},       {"cpu", CTRACE_PROFILE_CPU},
    {"waker", CTRACE_PROFILE_WAKER},
};

/* The value of option NAME at argv[*i] ("NAME=V" or "NAME V"), or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *bad) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != 0) return NULL;
  if (*i + 1 >= argc) {
    fprintf(stderr, "ctrace pprof: %s needs a value\n", name);
    *bad = 1;
    return NULL;
  }
  return argv[++*i];
}

/* Copies the spooled profile f to fd. 0 or an errno value. */
static int copy_out(FILE *f, int fd) {
  char buf[64 << 10];
  if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) return errno;
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;)
    for (size_t done = 0; done < n;) {
      ssize_t k = write(fd, buf + done, n - done);
      if (k < 0 && errno != EINTR) return errno;
      if (k > 0) done += (size_t)k;
    }
  return ferror(f) ? EIO : 0;
}

int ctrace__cmd_pprof(int argc, char **argv) {
  ctrace_profile_options opt = {.kind = CTRACE_PROFILE_WALL};
  const char *type = NULL, *out = NULL, *trace = NULL, *v;
  int bad = 0;
  for (int i = 1; i < argc && !bad; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if ((v = opt_value(argc, argv, &i, "-t", &bad)) ||
               (v = opt_value(argc, argv, &i, "--type", &bad))) {
      type = v;
    } else if ((v = opt_value(argc, argv, &i, "--goroutine", &bad))) {
      opt.goroutine = v;
    } else if ((v = opt_value(argc, argv, &i, "--region", &bad))) {
      opt.region = v;
    } else if ((v = opt_value(argc, argv, &i, "--hz", &bad))) {
      char *end;
      long hz = strtol(v, &end, 10);
      if (*end || hz < 1 || hz > 1000000) {
        fprintf(stderr, "ctrace pprof: --hz=%s: want a positive rate per second\n", v);
        bad = 1;
      }
      opt.cpu_hz = (int)hz;
    } else if ((v = opt_value(argc, argv, &i, "-o", &bad))) {
      out = v;
    } else if (bad) {
      break;
    } else if (argv[i][0] == '-' && argv[i][1] != 0) {
      fprintf(stderr, "ctrace pprof: unknown option %s\n", argv[i]);
      bad = 1;
    } else if (trace) {
      fprintf(stderr, "ctrace pprof: one TRACE only\n");
      bad = 1;
    } else {
      trace = argv[i];
    }
  }
  if (!bad && !type) fprintf(stderr, "ctrace pprof: -t TYPE is required\n"), bad = 1;
  if (!bad && !trace) fprintf(stderr, "ctrace pprof: no TRACE given\n"), bad = 1;
  if (!bad) {
    size_t k = 0;
    for (; k < sizeof kinds / sizeof kinds[0]; k++)
      if (strcmp(kinds[k].name, type) == 0) break;
    if (k == sizeof kinds / sizeof kinds[0]) {
      fprintf(stderr, "ctrace pprof: unknown profile type '%s' (net, sync, syscall, sched, wall, cpu, waker)\n",
              type);
      bad = 1;
    } else {
      opt.kind = kinds[k].kind;
    }
  }
  if (!bad && !out && isatty(1)) {
    fprintf(stderr, "ctrace pprof: not writing a binary profile to a terminal: use -o FILE\n");
    bad = 1;
  }
  if (bad) {
    fprintf(stderr, "run 'ctrace pprof --help' for usage\n");
    return 2;
  }

  ctrace_trace_info info;
  bool progress;
  ctrace_reader *r = ctrace__tool_open_unchecked(trace, &info, &progress);
  if (!r) return 1;
  /* The profile is written as it is built, and memory stays flat (-t
   * wall), but nothing shows under its name, or on standard output, before
   * the trace is read through and found good: it goes to the file beside
   * -o FILE (ctrace__tool_out), or else to a spool copied out once good. */
  ctrace__tool_out o = {.fd = -1};
  int fd = out ? ctrace__tool_out_open(&o, out) : 1;
  FILE *f = fd < 0 ? NULL : o.tmp ? fdopen(fd, "wb") : tmpfile();
  const char *where = o.tmp ? out : "a spool in /tmp";
  if (!f) {
    fprintf(stderr, "ctrace pprof: %s: %s\n", fd < 0 ? out : where, strerror(errno));
    if (fd >= 0) ctrace__tool_out_close(&o, false);
    ctrace_reader_close(r);
    return 1;
  }
  char err[256];
  int failed = ctrace_profile_write(r, &opt, f, err, sizeof err);
  bool good = ctrace__tool_checked(trace, r, &info, progress);
  if (good && failed) fprintf(stderr, "ctrace pprof: %s: %s\n", failed == CTRACE_EIO ? where : trace, err);
  bool ok = good && !failed;
  int e = ok && !o.tmp ? copy_out(f, fd) : 0; /* the spool, to -o's device or stdout */
  if (fclose(f) != 0 && ok && o.tmp && !e) e = errno;
  if (o.tmp) o.fd = -1; /* fclose closed it */
  ok = ok && !e;
  if (out) {
    int c = ctrace__tool_out_close(&o, ok);
    if (ok && c) ok = false, e = c;
  }
  if (e) fprintf(stderr, "ctrace pprof: %s: %s\n", out ? out : "stdout", strerror(e));
  int rc = ok ? 0 : 1;
  ctrace_reader_close(r);
  return rc;
}
