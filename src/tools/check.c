/* ctrace check: validates a trace as Go's reader would and sums it up;
 * with --salvage, writes what of a trace cut short still reads
 * (ctrace_reader_salvage). */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace check [--strict] TRACE\n"
          "       ctrace check --salvage [-o OUT] TRACE\n"
          "\n"
          "Reads, orders and validates TRACE as Go's reader does and prints one line:\n"
          "its version, events, goroutines, Ps and duration; or the error with its byte\n"
          "offset, in Go's words where Go rejects the trace.\n"
          "A Go 1.22+ trace cut short (its writer killed) is read, as by every ctrace\n"
          "command, up to its last whole generation: the line sums those up, and a\n"
          "warning on stderr says where it was cut and what was left out. Go's tools\n"
          "do not open it as it stands; --salvage writes what was read to a file they\n"
          "open.\n"
          "\n"
          "  --strict   a trace cut short is an error, as Go's reader sees it; the\n"
          "             message then says where it is cut and what --salvage keeps\n"
          "  --salvage  write to OUT the longest prefix of TRACE made of whole\n"
          "             generations that reads (TRACE whole if it reads as it is), say\n"
          "             on stderr what was kept and dropped, and print OUT's line\n"
          "  -o OUT     where (default TRACE.salvaged); written to a temporary file\n"
          "             beside it and renamed, so OUT is never half-written\n"
          "\n"
          "A generation is kept once a batch of the next one begins after it, or (go\n"
          "1.26 traces) once its end is read: the last generation begun in a cut trace\n"
          "is dropped unless it ended (docs/reader.md, \"Salvage\"). A go 1.25+ trace\n"
          "also says when its clock read what on the wall and monotonic clocks: check\n"
          "prints that on a second line (\"clock: ...\").\n"
          "Exit status 0 if the trace is valid or was read cut short (with --strict:\n"
          "if it is valid; with --salvage: if OUT was written), 1 if not (nothing\n"
          "whole to read or salvage), 2 on bad usage.\n");
}

static void summary(const char *name, const ctrace_trace_info *in) {
  if (in->version >= 1022)
    printf("%s: go 1.%d trace, %llu events, %llu goroutines, %llu Ps, %llu threads, %llu generations, %.3f ms\n",
           name, in->version % 1000, (unsigned long long)in->events, (unsigned long long)in->goroutines,
           (unsigned long long)in->procs, (unsigned long long)in->threads, (unsigned long long)in->generations,
           (double)in->duration_ns / 1e6);
  else
    printf("%s: go 1.%d trace, %llu events, %llu goroutines, %llu Ps, %.3f ms\n", name, in->version % 1000,
           (unsigned long long)in->events, (unsigned long long)in->goroutines, (unsigned long long)in->procs,
           (double)in->duration_ns / 1e6);
}

/* A go 1.25+ trace's clock anchor, on a line of its own: when its clock
 * read what, on the wall (UTC) and the monotonic clock. */
static void clock_line(const char *name, const ctrace_reader *r) {
  ctrace_clock_snapshot c;
  if (!ctrace_reader_clock(r, &c)) return;
  time_t sec = (time_t)c.wall_sec;
  struct tm tm;
  char when[64] = "?";
  if (gmtime_r(&sec, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  printf("%s: clock: trace time %lld ns is %s.%09lldZ on the wall, %llu ns on the monotonic clock\n", name,
         (long long)c.trace_ns, when, (long long)c.wall_nsec, (unsigned long long)c.mono_ns);
}

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* After check failed on a Go 1.22+ trace: where it is cut, and what
 * --salvage would keep (a second reading, only on failure). */
static void hint(const char *path, ctrace_reader *r) {
  ctrace_salvage_info s;
  ctrace_parse_error e;
  size_t len;
  ctrace_reader_bytes(r, &len);
  int rc = ctrace_reader_salvage(r, &s, &e);
  if (s.cut.message[0])
    fprintf(stderr, "ctrace: %s: %s at byte %llu: %s\n", path, s.torn ? "cut" : "its batches end",
            (unsigned long long)s.cut.offset, s.cut.message);
  if (rc != 0) {
    if (s.cut.message[0]) fprintf(stderr, "ctrace: %s: %s\n", path, e.message);
    return;
  }
  fprintf(stderr, "ctrace: %s: %s`ctrace check --salvage %s` keeps its first %llu generation%s (%llu of %zu bytes)\n",
          path, s.cut.message[0] ? "" : "if it was cut short, ", path, (unsigned long long)s.generations,
          plural(s.generations), (unsigned long long)s.keep, len);
}

/* Puts data[0, n), the first n bytes of the file src, into fd: in the
 * kernel (copy_file_range) when src is a regular file, so the mapped trace
 * is not read again and memory stays the reader's, not the trace's size;
 * else (a pipe, read into memory), or where the kernel cannot, from data.
 * 0, or errno. */
static int put(int fd, const char *src, const void *data, size_t n) {
  size_t done = 0;
  int in = open(src, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (in >= 0 && fstat(in, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= n) {
    loff_t off = 0;
    while (done < n) {
      ssize_t k = copy_file_range(in, &off, fd, NULL, n - done, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break; /* not here (EXDEV, ENOSYS...): by write */
      done += (size_t)k;
    }
  }
  if (in >= 0) close(in);
  while (done < n) {
    size_t c = n - done > (1u << 20) ? 1u << 20 : n - done;
    ssize_t k = write(fd, (const char *)data + done, c);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    done += (size_t)k;
  }
  return 0;
}

/* Writes the first n bytes of the trace src (data) to out, whole or not
 * at all (ctrace__tool_out_open), synced. */
static int write_out(const char *out, const char *src, const void *data, size_t n) {
  ctrace__tool_out o;
  int fd = ctrace__tool_out_open(&o, out);
  const char *what = "create";
  int e = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if ((e = put(fd, src, data, n)) != 0) what = "write";
    /* A device written in place (/dev/null) need not, and may not, sync. */
    if (!e && o.tmp && fsync(fd) != 0) e = errno, what = "write";
    int c = ctrace__tool_out_close(&o, !e);
    if (!e && c) e = c, what = "write";
  }
  if (e) fprintf(stderr, "ctrace: cannot %s %s: %s\n", what, out, strerror(e));
  return e ? -1 : 0;
}

/* What was kept and dropped, on stderr. */
static void report(const char *path, const ctrace_salvage_info *s, size_t len) {
  if (s->whole) {
    if (s->info.version >= 1022)
      fprintf(stderr, "ctrace: %s: reads to its end: kept whole, %llu generation%s, %zu bytes\n", path,
              (unsigned long long)s->generations, plural(s->generations), len);
    else
      fprintf(stderr, "ctrace: %s: reads to its end: kept whole, %zu bytes\n", path, len);
    return;
  }
  if (s->cut.message[0])
    fprintf(stderr, "ctrace: %s: %s at byte %llu: %s\n", path, s->torn ? "cut" : "its batches end",
            (unsigned long long)s->cut.offset, s->cut.message);
  /* The reader's error, if it stopped inside a generation: the first one
   * not kept. */
  if (s->error.message[0])
    fprintf(stderr, "ctrace: %s: generation %llu does not read: offset %llu: %s\n", path,
            (unsigned long long)s->generations + 1, (unsigned long long)s->error.offset, s->error.message);
  fprintf(stderr, "ctrace: %s: kept %llu generation%s, bytes 0-%llu (%llu bytes)\n", path,
          (unsigned long long)s->generations, plural(s->generations), (unsigned long long)s->keep - 1,
          (unsigned long long)s->keep);
  fprintf(stderr, "ctrace: %s: dropped %llu generation%s begun after %s, bytes %llu-%llu (%llu bytes)\n", path,
          (unsigned long long)s->dropped, plural(s->dropped), s->generations == 1 ? "it" : "them",
          (unsigned long long)s->keep, (unsigned long long)len - 1, (unsigned long long)(len - s->keep));
}

static int salvage(const char *path, const char *out) {
  ctrace_parse_error err;
  ctrace_reader *r;
  if (ctrace_reader_open(path, &r, &err) != 0) {
    ctrace__tool_error(path, &err);
    if (strncmp(err.message, "failed to read header", 21) == 0)
      fprintf(stderr, "ctrace: %s: nothing to salvage: the file ends inside its 16-byte header\n", path);
    return 1;
  }
  ctrace_salvage_info s;
  bool on = ctrace__tool_progress_on(path, r);
  int rc = ctrace_reader_salvage(r, &s, &err);
  ctrace__tool_progress_off(r, on);
  if (rc != 0) {
    ctrace__tool_error(path, &err);
    ctrace_reader_close(r);
    return 1;
  }
  size_t len;
  const void *data = ctrace_reader_bytes(r, &len);
  report(path, &s, len);
  if (write_out(out, path, data, s.keep) != 0) {
    ctrace_reader_close(r);
    return 1;
  }
  fprintf(stderr, "ctrace: %s: wrote %s, %llu bytes\n", path, out, (unsigned long long)s.keep);
  summary(out, &s.info);
  ctrace_reader_close(r);
  return 0;
}

int ctrace__cmd_check(int argc, char **argv) {
  const char *path = NULL, *out = NULL;
  bool salv = false, strict = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--salvage") == 0) {
      salv = true;
    } else if (strcmp(a, "--strict") == 0) {
      strict = true;
    } else if (strcmp(a, "-o") == 0) {
      if (++i == argc) {
        fprintf(stderr, "ctrace check: -o needs a file name\n");
        return 2;
      }
      out = argv[i];
    } else if (!ctrace__tool_operand("check", a, &path)) {
      return 2;
    }
  }
  if (!path) {
    usage(stderr);
    return 2;
  }
  if (out && !salv) {
    fprintf(stderr, "ctrace check: -o goes with --salvage\n");
    return 2;
  }
  if (strict && salv) {
    fprintf(stderr, "ctrace check: --strict and --salvage do not go together\n");
    return 2;
  }
  if (salv) {
    char *def = NULL;
    if (!out) {
      size_t n = strlen(path) + sizeof ".salvaged";
      if (!(def = malloc(n))) return 1;
      snprintf(def, n, "%s.salvaged", path);
    }
    int rc = salvage(path, out ? out : def);
    free(def);
    return rc;
  }

  ctrace_parse_error err;
  ctrace_reader *r;
  if (ctrace_reader_open(path, &r, &err) != 0) {
    ctrace__tool_error(path, &err);
    return 1;
  }
  /* A trace cut short is read as every command reads it, and the exit
   * status says that it was read: the warning says what was left out,
   * and how to make a file Go's tools open. */
  if (!strict) ctrace_reader_allow_cut(r, 1);
  ctrace_trace_info in;
  if (ctrace__tool_check(path, r, &in, &err) != 0) {
    ctrace__tool_error(path, &err);
    /* Not after the reader's own "cut short" (inside the first
     * generation), which says what the hint would. */
    if (ctrace_reader_version(r) >= 1022 && strncmp(err.message, "cut short", 9) != 0) hint(path, r);
    ctrace_reader_close(r);
    return 1;
  }
  char more[64 + 2 * PATH_MAX];
  snprintf(more, sizeof more, "; `ctrace check --salvage %s` writes them to a file Go's tools open", path);
  ctrace__tool_cut_warning(path, r, more);
  summary(path, &in);
  clock_line(path, r);
  ctrace_reader_close(r);
  return 0;
}
