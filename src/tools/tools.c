/* Opening a trace for the subcommands, with progress on a terminal. */
#include "tools.h"
#include "ctrace/analyse.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

/* Traces smaller than this read in a second or so: no progress shown. */
#define PROGRESS_MIN (50ull << 20)

static void show(void *arg, uint64_t done, uint64_t total) {
  fprintf(stderr, "\rctrace: %s: reading %3llu%%", (const char *)arg,
          (unsigned long long)(total ? done * 100 / total : 100));
}

static ctrace_reader *check_open(const char *path, ctrace_reader *r, ctrace_trace_info *info);

/* Every command reads a trace cut short (its writer killed) up to its
 * last whole generation, and says so once. */
static int open_cut(const char *path, ctrace_reader **r, ctrace_parse_error *err) {
  int rc = ctrace_reader_open(path, r, err);
  if (rc == 0) ctrace_reader_allow_cut(*r, 1);
  return rc;
}

void ctrace__tool_cut_warning(const char *path, const ctrace_reader *r, const char *more) {
  ctrace_salvage_info s;
  if (!ctrace_reader_cut(r, &s)) return;
  size_t len;
  ctrace_reader_bytes(r, &len);
  char why[700];
  /* The reader's words name the batch at the offset "there". */
  const char *there = strstr(s.cut.message, " there");
  if (s.cut.message[0] && there)
    snprintf(why, sizeof why, "%.*s at byte %llu%.400s", (int)(there - s.cut.message), s.cut.message,
             (unsigned long long)s.cut.offset, there + 6);
  else if (s.cut.message[0])
    snprintf(why, sizeof why, "at byte %llu: %.512s", (unsigned long long)s.cut.offset, s.cut.message);
  else if (s.error.message[0])
    snprintf(why, sizeof why, "it ends with the file, between two batches, and does not read: %.512s", s.error.message);
  else
    snprintf(why, sizeof why, "it has no end of generation");
  fprintf(stderr,
          "ctrace: warning: %s: cut short at byte %llu of %zu (its writer was killed?): read the %llu whole "
          "generation%s before it, left out the last, incomplete one (%s)%s\n",
          path, (unsigned long long)s.keep, len, (unsigned long long)s.generations, s.generations == 1 ? "" : "s",
          why, more ? more : "");
}

ctrace_reader *ctrace__tool_open_info(const char *path, ctrace_trace_info *info) {
  ctrace_parse_error err;
  ctrace_reader *r;
  if (open_cut(path, &r, &err) != 0) {
    ctrace__tool_error(path, &err);
    return NULL;
  }
  return check_open(path, r, info);
}

ctrace_reader *ctrace__tool_open_analysed(const char *cmd, const char *path, ctrace_trace_info *info) {
  (void)cmd; /* every format is analysed now (src/parse/model.c) */
  return ctrace__tool_open_info(path, info);
}

bool ctrace__tool_progress_on(const char *path, ctrace_reader *r) {
  bool progress = false;
  if (isatty(2)) {
    FILE *f = fopen(path, "rb");
    if (f && fseeko(f, 0, SEEK_END) == 0 && (uint64_t)ftello(f) >= PROGRESS_MIN) progress = true;
    if (f) fclose(f);
  }
  if (progress) ctrace_reader_set_progress(r, show, (void *)path);
  return progress;
}

void ctrace__tool_progress_off(ctrace_reader *r, bool on) {
  if (!on) return;
  ctrace_reader_set_progress(r, NULL, NULL);
  fprintf(stderr, "\r\033[K");
}

int ctrace__tool_check(const char *path, ctrace_reader *r, ctrace_trace_info *info, ctrace_parse_error *err) {
  bool on = ctrace__tool_progress_on(path, r);
  int rc = ctrace_reader_check(r, info, err);
  ctrace__tool_progress_off(r, on);
  return rc;
}

ctrace_reader *ctrace__tool_open_unchecked(const char *path, ctrace_trace_info *info, bool *progress) {
  ctrace_parse_error err;
  ctrace_reader *r;
  *progress = false;
  if (open_cut(path, &r, &err) != 0) {
    ctrace__tool_error(path, &err);
    return NULL;
  }
  if (ctrace_reader_version(r) < 1022) return check_open(path, r, info);
  size_t len;
  ctrace_reader_bytes(r, &len);
  *info = (ctrace_trace_info){.version = ctrace_reader_version(r), .bytes = len};
  *progress = ctrace__tool_progress_on(path, r);
  return r;
}

bool ctrace__tool_checked(const char *path, ctrace_reader *r, ctrace_trace_info *info, bool progress) {
  ctrace_parse_error err;
  ctrace__tool_progress_off(r, progress);
  /* Answered from the analysis's pass when it read the whole trace. */
  if (ctrace__tool_check(path, r, info, &err) != 0) {
    ctrace__tool_error(path, &err);
    return false;
  }
  if (ctrace_reader_version(r) >= 1022) ctrace__tool_cut_warning(path, r, NULL);
  return true;
}

/* Checks an open reader (closed on failure), with progress on a terminal. */
static ctrace_reader *check_open(const char *path, ctrace_reader *r, ctrace_trace_info *info) {
  ctrace_parse_error err;
  ctrace_trace_info tmp;
  if (!info) info = &tmp;
  if (ctrace__tool_check(path, r, info, &err) == 0) {
    ctrace__tool_cut_warning(path, r, NULL);
    return r;
  }
  ctrace_reader_close(r);
  ctrace__tool_error(path, &err);
  return NULL;
}

void ctrace__tool_error(const char *path, const ctrace_parse_error *err) {
  /* A file that cannot be opened has no offset to name. */
  if (strncmp(err->message, "failed to open", 14) == 0)
    fprintf(stderr, "ctrace: %s: %s\n", path, err->message);
  else
    fprintf(stderr, "ctrace: %s: offset %llu: %s\n", path, (unsigned long long)err->offset, err->message);
}

ctrace_reader *ctrace__tool_open_stream(const char *path, bool allow_cut) {
  ctrace_parse_error err;
  ctrace_reader *r;
  if (allow_cut ? open_cut(path, &r, &err) : ctrace_reader_open(path, &r, &err)) {
    ctrace__tool_error(path, &err);
    return NULL;
  }
  if (ctrace_reader_version(r) >= 1022) return r;
  return check_open(path, r, NULL); /* a pipe cannot be opened twice */
}

int ctrace__tool_file_arg(int argc, char **argv, void (*usage)(FILE *)) {
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc != 2) {
    usage(stderr);
    return 2;
  }
  return -1;
}

bool ctrace__tool_operand(const char *cmd, const char *a, const char **trace) {
  if (a[0] == '-' && a[1]) {
    fprintf(stderr, "ctrace %s: unknown option %s\nrun 'ctrace %s --help' for usage\n", cmd, a, cmd);
    return false;
  }
  if (*trace) {
    fprintf(stderr, "ctrace %s: one TRACE only\n", cmd);
    return false;
  }
  *trace = a;
  return true;
}

/* N of a name ending in ".pid<N>", or 0. */
static uint32_t pid_of(const char *name) {
  const char *p = strstr(name, ".pid"), *q;
  while (p && (q = strstr(p + 1, ".pid"))) p = q;
  if (!p || !p[4]) return 0;
  char *end;
  errno = 0;
  unsigned long v = strtoul(p + 4, &end, 10);
  return *end || errno || p[4] < '0' || p[4] > '9' || v > UINT32_MAX ? 0 : (uint32_t)v;
}

static bool pid_used(const ctrace_export_trace *t, size_t n, uint32_t pid) {
  for (size_t i = 0; i < n; i++)
    if (t[i].pid == pid) return true;
  return false;
}

/* The names export_open makes ("redis-server (pid 7)"), freed by close. */
static char **names_made;
static size_t names_n;

static const char *name_made(const char *program, uint32_t pid) {
  char **grown = realloc(names_made, (names_n + 1) * sizeof *grown);
  if (!grown) return NULL;
  names_made = grown;
  size_t len = strlen(program) + 32;
  if (!(names_made[names_n] = malloc(len))) return NULL;
  snprintf(names_made[names_n], len, "%s (pid %u)", program, pid);
  return names_made[names_n++];
}

/* Several traces on one timeline: by the anchor each holds, if all hold
 * one (offsets: where each trace's time 0 falls, from the earliest);
 * else each from 0, as before, said. */
static void place(const char *cmd, const char **files, size_t n, const ctrace_process_info *notes,
                  int64_t *offsets) {
  if (!ctrace_process_place(notes, n, offsets)) return;
  for (size_t i = 0; i < n; i++)
    if (!notes[i].clock)
      fprintf(stderr, "ctrace %s: warning: %s holds no clock to place it by (ctrace run writes one, Go 1.25+"
                      " too): each trace starts at 0, not aligned with the others\n", cmd, files[i]);
}

bool ctrace__tool_export_open(const char *cmd, const char **files, size_t n, ctrace_export_trace *t,
                              int64_t *durations, uint64_t *gens, int64_t *offsets, bool unchecked) {
  ctrace_process_info *notes = calloc(n ? n : 1, sizeof *notes);
  if (!notes) {
    fprintf(stderr, "ctrace %s: out of memory\n", cmd);
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    const char *base = strrchr(files[i], '/');
    t[i].name = base ? base + 1 : files[i];
    ctrace_trace_info info;
    bool progress = false;
    t[i].reader = unchecked ? ctrace__tool_open_unchecked(files[i], &info, &progress)
                            : ctrace__tool_open_analysed(cmd, files[i], &info);
    if (!t[i].reader) {
      ok = false;
      break;
    }
    /* Nothing shown yet: the export shows its own (ctrace__tool_progress_bytes). */
    if (progress) ctrace_reader_set_progress(t[i].reader, NULL, NULL);
    if (durations) durations[i] = info.duration_ns;
    if (gens) gens[i] = info.generations;
    ctrace_process_read(t[i].reader, &notes[i]);
    uint32_t pid = notes[i].known ? notes[i].pid : pid_of(t[i].name);
    t[i].pid = pid && !pid_used(t, i, pid) ? pid : 0;
    const char *made;
    if (notes[i].known && notes[i].program[0] && (made = name_made(notes[i].program, notes[i].pid)))
      t[i].name = made;
  }
  if (ok) {
    for (size_t i = 0, next = 1; i < n; i++) {
      if (t[i].pid) continue;
      while (pid_used(t, n, (uint32_t)next)) next++;
      t[i].pid = (uint32_t)next;
    }
    if (offsets && n > 1) place(cmd, files, n, notes, offsets);
  }
  free(notes);
  return ok;
}

void ctrace__tool_export_close(ctrace_export_trace *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (t[i].reader) ctrace_reader_close(t[i].reader), t[i].reader = NULL;
  for (size_t i = 0; i < names_n; i++) free(names_made[i]);
  free(names_made);
  names_made = NULL;
  names_n = 0;
}

/* The file beside an output being written (a command writes one at a
 * time), removed if SIGINT, SIGTERM or SIGHUP ends the command before it
 * is renamed into place. A copy of its name, not o->tmp: the handler may
 * run while the name is being freed. */
static char out_tmp[PATH_MAX + 32];
static volatile sig_atomic_t out_tmp_set;
static const int out_sigs[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction out_old[sizeof out_sigs / sizeof out_sigs[0]];

static void out_on_signal(int sig) {
  if (out_tmp_set) unlink(out_tmp);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Signals are held from before the file exists until its name is known
 * to the handler: no moment leaves it behind. */
static void out_hold(bool hold, sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof out_sigs / sizeof out_sigs[0]; i++) sigaddset(&set, out_sigs[i]);
  sigprocmask(hold ? SIG_BLOCK : SIG_SETMASK, hold ? &set : old, hold ? old : NULL);
}

int ctrace__tool_out_open(ctrace__tool_out *o, const char *path) {
  *o = (ctrace__tool_out){.path = path, .fd = -1};
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    o->fd = open(path, O_WRONLY | O_CLOEXEC);
    return o->fd;
  }
  const char *base = strrchr(path, '/');
  int dirlen = base ? (int)(base - path + 1) : 0;
  size_t cap = strlen(path) + 32;
  if (cap > sizeof out_tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  if (!(o->tmp = malloc(cap))) {
    errno = ENOMEM;
    return -1;
  }
  snprintf(o->tmp, cap, "%.*s.%s.ctrace-XXXXXX", dirlen, path, path + dirlen);
  sigset_t old;
  out_hold(true, &old);
  o->fd = mkostemp(o->tmp, O_CLOEXEC);
  if (o->fd >= 0) {
    memcpy(out_tmp, o->tmp, cap);
    out_tmp_set = 1;
    struct sigaction sa = {.sa_handler = out_on_signal};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof out_sigs / sizeof out_sigs[0]; i++) sigaction(out_sigs[i], &sa, &out_old[i]);
  }
  out_hold(false, &old);
  mode_t mask = umask(0);
  umask(mask);
  if (o->fd >= 0 && fchmod(o->fd, 0666 & ~mask) != 0) {
    int e = errno;
    ctrace__tool_out_close(o, false);
    errno = e;
    return -1;
  }
  if (o->fd < 0) {
    free(o->tmp);
    o->tmp = NULL;
  }
  return o->fd;
}

int ctrace__tool_out_close(ctrace__tool_out *o, bool ok) {
  int e = 0;
  if (o->fd >= 0 && close(o->fd) != 0) e = errno;
  o->fd = -1;
  if (o->tmp) {
    if (ok && !e && rename(o->tmp, o->path) != 0) e = errno;
    if (!ok || e) unlink(o->tmp);
    /* Only now: a signal until here removes the file, or (renamed) finds
     * no file by that name. */
    out_tmp_set = 0;
    for (size_t i = 0; i < sizeof out_sigs / sizeof out_sigs[0]; i++) sigaction(out_sigs[i], &out_old[i], NULL);
    free(o->tmp);
    o->tmp = NULL;
  }
  return e;
}
