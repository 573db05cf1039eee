/* ctrace stats: a trace's numbers at a glance (src/analyse/stats.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "ctrace/analyse.h"
#include "tools.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace stats [--format=table|csv|json] TRACE\n"
          "\n"
          "Prints the numbers of the trace TRACE: a summary (the process and when\n"
          "the trace started, in UTC, where the trace says: ctrace run's and Go\n"
          "1.25+'s do; duration, events,\n"
          "goroutines, Ps, threads, GC cycles and stop-the-world pauses); goroutines\n"
          "grouped by thread name (where the trace names threads) and start function,\n"
          "with their execution, scheduling wait, syscall,\n"
          "blocked time by reason and the rest (as Go 1.23's goroutine pages split it);\n"
          "user tasks and regions by type, with count and latency p50/p90/p99/max;\n"
          "the minimum mutator utilization at 1, 10 and 100 ms windows (as Go 1.23's\n"
          "/mmu page: GC stop-the-world, mark workers and assists); and who kept\n"
          "them waiting: the waits (but sleeps) by start function of the goroutines\n"
          "that waited and of the goroutine that ended each wait (\"no waker known\"\n"
          "if none, or why the waits ended by themselves where the trace says: ctrace\n"
          "run's event loops), with count and total/p50/p99/max wait, largest total\n"
          "first. Times in nanoseconds in csv and json; csv's summary row ends with\n"
          "the start (start_utc, start_unix_ns, clock) and the process (pid, ppid,\n"
          "host, program, cmdline), empty where the trace does not say. See\n"
          "docs/analyse.md.\n"
          "\n"
          "Exit status 0, 1 if the trace is bad (the error names its byte offset), 2 on\n"
          "bad usage.\n");
}

enum fmt { TABLE, CSV, JSON };

/* A string for CSV or JSON: quoted, with what needs it escaped. */
static void qstr(FILE *f, const char *s, enum fmt fm) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (fm == CSV) {
      if (ch == '"') fputc('"', f);
      fputc(ch, f);
    } else if (ch == '"' || ch == '\\') {
      fprintf(f, "\\%c", ch);
    } else if (ch < 0x20) {
      fprintf(f, "\\u%04x", ch);
    } else {
      fputc(ch, f);
    }
  }
  fputc('"', f);
}

/* CSV column names of the block reasons: the X-macro's identifiers. */
static const char *const reason_ids[CTRACE_BLOCK_COUNT] = {
#define ID(name, str) #name,
    CTRACE_BLOCK_REASONS(ID)
#undef ID
};

static void reason_cols(void) {
  for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) {
    printf(",block_");
    for (const char *p = reason_ids[k]; *p; p++) putchar(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    printf("_ns");
  }
}

static void csv_times(const ctrace_gtimes *t) {
  printf(",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, t->total, t->exec,
         t->sched_wait, t->syscall, t->syscall_block);
  for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) printf(",%" PRId64, t->block[k]);
  printf(",%" PRId64, t->unknown);
}

/* The goroutines' rows of csv and json: written to a spool as the
 * analysis settles each goroutine (at its end, or the trace's), then
 * copied out in their place, after the groups, so that memory does not
 * follow the goroutines a trace ever had (ctrace_stats_options.row). */
typedef struct rows {
  enum fmt fm;
  FILE *spool;
  uint64_t n;
} rows;

/* A row is built in memory and written at once: a churning server's trace
 * has millions, and stdio's formatting and locking a call took half of
 * csv's time. Flushed to f when full (a name may be long). */
typedef struct line {
  FILE *f;
  size_t n;
  char b[8192];
} line;

static void l_put(line *l, const char *s, size_t n) {
  if (l->n + n > sizeof l->b) {
    fwrite(l->b, 1, l->n, l->f);
    l->n = 0;
    if (n > sizeof l->b) {
      fwrite(s, 1, n, l->f);
      return;
    }
  }
  memcpy(l->b + l->n, s, n);
  l->n += n;
}

static void l_str(line *l, const char *s) { l_put(l, s, strlen(s)); }

static void l_int(line *l, int64_t v) {
  char t[24], *p = t + sizeof t;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  l_put(l, p, (size_t)(t + sizeof t - p));
}

/* qstr's quoting, into l. */
static void l_q(line *l, const char *s, enum fmt fm) {
  l_put(l, "\"", 1);
  for (const char *run = s;; s++) {
    unsigned char ch = (unsigned char)*s;
    bool esc = fm == CSV ? ch == '"' : ch == '"' || ch == '\\' || (ch && ch < 0x20);
    if (ch && !esc) continue;
    l_put(l, run, (size_t)(s - run));
    if (!ch) break;
    char e[8];
    if (fm == CSV) l_put(l, "\"\"", 2);
    else if (ch >= 0x20) l_put(l, e, (size_t)snprintf(e, sizeof e, "\\%c", ch));
    else l_put(l, e, (size_t)snprintf(e, sizeof e, "\\u%04x", ch));
    run = s + 1;
  }
  l_put(l, "\"", 1);
}

static void row(const ctrace_goroutine_stats *g, void *arg) {
  rows *r = arg;
  line l = {.f = r->spool};
  const ctrace_gtimes *t = &g->t;
  int64_t times[] = {t->total, t->exec, t->sched_wait, t->syscall, t->syscall_block};
  if (r->fm == CSV) { /* csv's columns, as csv_times writes them */
    l_int(&l, (int64_t)g->id);
    l_put(&l, ",", 1);
    l_q(&l, g->name, CSV);
    l_put(&l, ",", 1);
    l_int(&l, g->creation);
    l_put(&l, ",", 1);
    l_int(&l, g->end);
    for (size_t k = 0; k < sizeof times / sizeof *times; k++) {
      l_put(&l, ",", 1);
      l_int(&l, times[k]);
    }
    for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) {
      l_put(&l, ",", 1);
      l_int(&l, t->block[k]);
    }
    l_put(&l, ",", 1);
    l_int(&l, t->unknown);
    l_put(&l, ",", 1);
    l_q(&l, g->thread, CSV);
    l_put(&l, "\n", 1);
  } else { /* json's fields, as jtimes writes them */
    static const char *const names[] = {"total_ns", "exec_ns", "sched_wait_ns", "syscall_ns", "syscall_block_ns"};
    l_str(&l, r->n ? ",\n    {\"id\": " : "\n    {\"id\": ");
    l_int(&l, (int64_t)g->id);
    l_str(&l, ", \"start_function\": ");
    l_q(&l, g->name, JSON);
    l_str(&l, ", \"thread\": ");
    l_q(&l, g->thread, JSON);
    l_str(&l, ", \"creation_ns\": ");
    l_int(&l, g->creation);
    l_str(&l, ", \"end_ns\": ");
    l_int(&l, g->end);
    for (size_t k = 0; k < sizeof times / sizeof *times; k++) {
      l_str(&l, ", \"");
      l_str(&l, names[k]);
      l_str(&l, "\": ");
      l_int(&l, times[k]);
    }
    l_str(&l, ", \"block_ns\": {");
    const char *sep = "";
    for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) {
      if (!t->block[k]) continue;
      l_str(&l, sep);
      l_q(&l, ctrace_block_reason_names[k], JSON);
      l_str(&l, ": ");
      l_int(&l, t->block[k]);
      sep = ", ";
    }
    l_str(&l, "}, \"other_ns\": ");
    l_int(&l, t->unknown);
    l_put(&l, "}", 1);
  }
  fwrite(l.b, 1, l.n, l.f);
  r->n++;
}

/* The spooled rows to standard output: false (and said why) if the spool
 * could not be written or read back. */
static bool rows_out(rows *r) {
  char buf[64 << 10];
  bool ok = fflush(r->spool) == 0 && !ferror(r->spool) && fseek(r->spool, 0, SEEK_SET) == 0;
  for (size_t n; ok && (n = fread(buf, 1, sizeof buf, r->spool)) > 0;) fwrite(buf, 1, n, stdout);
  if (!ok || ferror(r->spool)) {
    fprintf(stderr, "ctrace stats: the goroutines' rows, spooled in /tmp: %s\n", strerror(errno));
    return false;
  }
  return true;
}

static const char *gname(const char *n) { return n[0] ? n : "(unknown)"; }

/* A waker table's party: "THREAD (START_FUNCTION)" where its thread is
 * named, else its start function. */
static const char *party(char *buf, size_t n, const char *thread, const char *fn) {
  if (!thread[0]) return gname(fn);
  snprintf(buf, n, "%s (%s)", thread, gname(fn));
  return buf;
}

/* Where the wall-clock time comes from, as stats says it. */
static const char *clock_source(const ctrace_process_info *p) {
  return p->clock == CTRACE_CLOCK_GO ? "Go's clock snapshot" : "ctrace.process log";
}

static void ms(FILE *f, int64_t ns) { fprintf(f, " %12.3f", (double)ns / 1e6); }

/* A name in a column width wide that ends at column end of the line: one
 * longer (a C++ lambda's or a Rust closure's start function) is printed
 * whole on a line of its own, and the row goes on below it where the
 * column ends, so that the numbers stay under their headings. */
static void cell(const char *s, int width, int end) {
  if ((int)strlen(s) <= width) printf("%-*s", width, s);
  else printf("%s\n%*s", s, end, "");
}

static void table(const ctrace_stats *s, const ctrace_process_info *p) {
  const ctrace_trace_info *in = &s->info;
  printf("Summary\n");
  if (p->known)
    printf("  process      %s (pid %u, parent %u) on %s: %s\n", p->program, p->pid, p->ppid, p->host, p->cmdline);
  char utc[48];
  if (p->start_real_ns)
    printf("  started      %s (UTC, by %s)\n", ctrace_format_utc(p->start_real_ns, utc, sizeof utc), clock_source(p));
  printf("  duration     %.3f ms\n", (double)in->duration_ns / 1e6);
  printf("  events       %" PRIu64 "\n", in->events);
  printf("  goroutines   %" PRIu64 "\n", in->goroutines);
  printf("  Ps           %" PRIu64 "\n", in->procs);
  printf("  threads      %" PRIu64 "\n", s->threads);
  printf("  GC cycles    %" PRIu64 " (%.3f ms)\n", s->gc_cycles, (double)s->gc_ns / 1e6);
  printf("  STW pauses   %" PRIu64 " (total %.3f ms, max %.3f ms)\n", s->stw_count,
         (double)s->stw_ns / 1e6, (double)s->stw_max_ns / 1e6);
  /* The thread column only where the trace names a thread. A thread the
   * tracer took as unnamed carries the name exec gave the process (it
   * kept or inherited it: src/runtime/names.c): shown so, as ps -L shows
   * it (15 bytes, the kernel's comm), where the trace says the process. */
  char comm[16] = "-";
  if (p->known && p->program[0]) snprintf(comm, sizeof comm, "%.15s", p->program);
  bool named = false;
  for (size_t i = 0; i < s->ngroups; i++) named |= s->groups[i].thread[0] != 0;
  printf("\nGoroutines by %sstart function (ms)\n", named ? "thread name and " : "");
  printf("  %*s%s%-40s %6s %12s %12s %12s %12s %12s %12s %12s\n", named ? -16 : 0,
         named ? "thread" : "", named ? " " : "", "start function", "count", "total", "execution",
         "sched wait", "syscall", "sys blocked", "blocked", "other");
  for (size_t i = 0; i < s->ngroups; i++) {
    const ctrace_group_stats *g = &s->groups[i];
    int64_t blocked = 0;
    for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) blocked += g->t.block[k];
    if (named) {
      printf("  ");
      cell(g->thread[0] ? g->thread : comm, 16, 18);
    }
    printf("%s", named ? " " : "  ");
    cell(gname(g->name), 40, named ? 59 : 42);
    printf(" %6" PRIu64, g->count);
    ms(stdout, g->t.total);
    ms(stdout, g->t.exec);
    ms(stdout, g->t.sched_wait);
    ms(stdout, g->t.syscall);
    ms(stdout, g->t.syscall_block);
    ms(stdout, blocked);
    ms(stdout, g->t.unknown);
    printf("\n");
    for (int k = 0; k < CTRACE_BLOCK_COUNT; k++)
      if (g->t.block[k])
        printf("  %*s%-40s %6s   blocked (%s) %.3f\n", named ? 17 : 0, "", "", "",
               ctrace_block_reason_names[k][0] ? ctrace_block_reason_names[k] : "other",
               (double)g->t.block[k] / 1e6);
  }
  for (int w = 0; w < 2; w++) {
    const ctrace_latency_stats *l = w ? s->regions : s->tasks;
    size_t n = w ? s->nregions : s->ntasks;
    printf("\n%s (ms; p50, p90, p99 within %g%%)\n", w ? "Regions" : "Tasks", CTRACE_STATS_QUANTILE_ERROR * 100);
    if (!n) {
      printf("  none\n");
      continue;
    }
    printf("  %-40s %6s %12s %12s %12s %12s %6s\n", "type", "count", "p50", "p90", "p99", "max",
           "open");
    for (size_t i = 0; i < n; i++) {
      printf("  ");
      cell(gname(l[i].name), 40, 42);
      printf(" %6" PRIu64, l[i].count);
      ms(stdout, l[i].p50);
      ms(stdout, l[i].p90);
      ms(stdout, l[i].p99);
      ms(stdout, l[i].max);
      printf(" %6" PRIu64 "\n", l[i].open);
    }
  }
  printf("\nMinimum mutator utilization (GC stop-the-world, mark workers, mark assists)\n");
  for (int k = 0; k < CTRACE_MMU_WINDOWS; k++) {
    printf("  %4" PRId64 " ms  ", s->mmu_window_ns[k] / 1000000);
    if (s->mmu[k] < 0) {
      printf("n/a (no GOMAXPROCS after the trace's start, where Go begins it)\n");
    } else {
      printf("%.1f%%", s->mmu[k] * 100);
      if (s->mmu_window_ns[k] > s->mmu_span_ns) {
        printf(" (the whole %.3f ms)", (double)s->mmu_span_ns / 1e6);
      }
      printf("\n");
    }
  }
  printf("\nWho kept them waiting (ms; p50, p99 within %g%%)\n", CTRACE_STATS_QUANTILE_ERROR * 100);
  if (!s->nwakers) {
    printf("  none\n");
    return;
  }
  printf("  %-32s %-32s %6s %12s %12s %12s %12s\n", "woken (start function)", "waker",
         "waits", "total", "p50", "p99", "max");
  for (size_t i = 0; i < s->nwakers; i++) {
    const ctrace_waker_stats *w = &s->wakers[i];
    char why[64], wo[256], wk[256];
    if (w->why) snprintf(why, sizeof why, "(no waker: %s)", w->why);
    printf("  ");
    cell(party(wo, sizeof wo, w->woken_thread, w->woken), 32, 34);
    printf(" ");
    cell(w->waker ? party(wk, sizeof wk, w->waker_thread, w->waker) : w->why ? why : "(no waker known)", 32, 67);
    printf(" %6" PRIu64, w->count);
    ms(stdout, w->total);
    ms(stdout, w->p50);
    ms(stdout, w->p99);
    ms(stdout, w->max);
    printf("\n");
  }
}

static bool csv(const ctrace_stats *s, const ctrace_process_info *p, rows *rows) {
  const ctrace_trace_info *in = &s->info;
  /* One table per section, separated by blank lines, each with its header.
   * The summary's wall-clock start and process come after the counts (new
   * columns go last, for readers that count them), empty where the trace
   * does not say. */
  printf("duration_ns,events,goroutines,procs,threads,gc_cycles,gc_ns,stw_count,stw_ns,stw_max_ns,"
         "start_utc,start_unix_ns,clock,pid,ppid,host,program,cmdline\n");
  printf("%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64
         ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",",
         in->duration_ns, in->events, in->goroutines, in->procs, s->threads, s->gc_cycles,
         s->gc_ns, s->stw_count, s->stw_ns, s->stw_max_ns);
  if (p->start_real_ns) {
    char utc[48];
    printf("%s,%" PRId64 ",", ctrace_format_utc(p->start_real_ns, utc, sizeof utc), p->start_real_ns);
    qstr(stdout, clock_source(p), CSV);
  } else {
    printf(",,");
  }
  if (p->known) {
    printf(",%u,%u,", p->pid, p->ppid);
    qstr(stdout, p->host, CSV);
    printf(",");
    qstr(stdout, p->program, CSV);
    printf(",");
    qstr(stdout, p->cmdline, CSV);
    printf("\n\n");
  } else {
    printf(",,,,,\n\n");
  }
  printf("start_function,count,total_ns,exec_ns,sched_wait_ns,syscall_ns,syscall_block_ns");
  reason_cols();
  printf(",other_ns,thread\n");
  for (size_t i = 0; i < s->ngroups; i++) {
    const ctrace_group_stats *g = &s->groups[i];
    qstr(stdout, g->name, CSV);
    printf(",%" PRIu64, g->count);
    csv_times(&g->t);
    printf(",");
    qstr(stdout, g->thread, CSV);
    printf("\n");
  }
  printf("\ngoroutine,start_function,creation_ns,end_ns,total_ns,exec_ns,sched_wait_ns,syscall_ns,"
         "syscall_block_ns");
  reason_cols();
  printf(",other_ns,thread\n");
  if (!rows_out(rows)) return false;
  printf("\nkind,type,count,open,p50_ns,p90_ns,p99_ns,max_ns\n");
  for (int w = 0; w < 2; w++) {
    const ctrace_latency_stats *l = w ? s->regions : s->tasks;
    size_t n = w ? s->nregions : s->ntasks;
    for (size_t i = 0; i < n; i++) {
      printf("%s,", w ? "region" : "task");
      qstr(stdout, l[i].name, CSV);
      printf(",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
             l[i].count, l[i].open, l[i].p50, l[i].p90, l[i].p99, l[i].max);
    }
  }
  /* mmu empty: none (Go shows none); span_ns: a longer window is cut to it. */
  printf("\nwindow_ns,mmu,span_ns\n");
  for (int k = 0; k < CTRACE_MMU_WINDOWS; k++) {
    printf("%" PRId64 ",", s->mmu_window_ns[k]);
    if (s->mmu[k] >= 0) printf("%.9f", s->mmu[k]);
    printf(",%" PRId64 "\n", s->mmu_span_ns);
  }
  /* waker_known 0: no waker known (waker_start_function is then empty);
   * why: then, the reason the waits ended by themselves, if told; the
   * threads' names last ("" none). */
  printf("\nwoken_start_function,waker_start_function,waker_known,count,total_ns,p50_ns,p99_ns,"
         "max_ns,why,woken_thread,waker_thread\n");
  for (size_t i = 0; i < s->nwakers; i++) {
    const ctrace_waker_stats *w = &s->wakers[i];
    qstr(stdout, w->woken, CSV);
    printf(",");
    qstr(stdout, w->waker ? w->waker : "", CSV);
    printf(",%d,%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", w->waker != NULL,
           w->count, w->total, w->p50, w->p99, w->max);
    if (w->why) qstr(stdout, w->why, CSV);
    printf(",");
    qstr(stdout, w->woken_thread, CSV);
    printf(",");
    qstr(stdout, w->waker_thread, CSV);
    printf("\n");
  }
  return true;
}

static void jtimes(const ctrace_gtimes *t) {
  printf("\"total_ns\": %" PRId64 ", \"exec_ns\": %" PRId64 ", \"sched_wait_ns\": %" PRId64
         ", \"syscall_ns\": %" PRId64 ", \"syscall_block_ns\": %" PRId64 ", \"block_ns\": {",
         t->total, t->exec, t->sched_wait, t->syscall, t->syscall_block);
  const char *sep = "";
  for (int k = 0; k < CTRACE_BLOCK_COUNT; k++) {
    if (!t->block[k]) continue;
    printf("%s", sep);
    qstr(stdout, ctrace_block_reason_names[k], JSON);
    printf(": %" PRId64, t->block[k]);
    sep = ", ";
  }
  printf("}, \"other_ns\": %" PRId64, t->unknown);
}

static bool json(const ctrace_stats *s, const ctrace_process_info *p, rows *rows) {
  const ctrace_trace_info *in = &s->info;
  printf("{\n");
  if (p->start_real_ns) {
    char utc[48];
    printf("  \"start\": {\"utc\": \"%s\", \"unix_ns\": %" PRId64 ", \"clock\": \"%s\"},\n",
           ctrace_format_utc(p->start_real_ns, utc, sizeof utc), p->start_real_ns, clock_source(p));
  }
  if (p->known) {
    printf("  \"process\": {\"pid\": %u, \"ppid\": %u, \"host\": ", p->pid, p->ppid);
    qstr(stdout, p->host, JSON);
    printf(", \"program\": ");
    qstr(stdout, p->program, JSON);
    printf(", \"cmdline\": ");
    qstr(stdout, p->cmdline, JSON);
    printf("},\n");
  }
  printf("  \"summary\": {\"duration_ns\": %" PRId64 ", \"events\": %" PRIu64
         ", \"goroutines\": %" PRIu64 ", \"procs\": %" PRIu64 ", \"threads\": %" PRIu64
         ", \"gc_cycles\": %" PRIu64 ", \"gc_ns\": %" PRId64 ", \"stw_count\": %" PRIu64
         ", \"stw_ns\": %" PRId64 ", \"stw_max_ns\": %" PRId64 "},\n",
         in->duration_ns, in->events, in->goroutines, in->procs, s->threads, s->gc_cycles,
         s->gc_ns, s->stw_count, s->stw_ns, s->stw_max_ns);
  printf("  \"quantile_relative_error\": %g,\n", CTRACE_STATS_QUANTILE_ERROR);
  printf("  \"groups\": [");
  for (size_t i = 0; i < s->ngroups; i++) {
    printf("%s\n    {\"start_function\": ", i ? "," : "");
    qstr(stdout, s->groups[i].name, JSON);
    printf(", \"thread\": ");
    qstr(stdout, s->groups[i].thread, JSON);
    printf(", \"count\": %" PRIu64 ", ", s->groups[i].count);
    jtimes(&s->groups[i].t);
    printf("}");
  }
  printf("\n  ],\n  \"goroutines\": [");
  if (!rows_out(rows)) return false;
  printf("\n  ],\n");
  for (int w = 0; w < 2; w++) {
    const ctrace_latency_stats *l = w ? s->regions : s->tasks;
    size_t n = w ? s->nregions : s->ntasks;
    printf("  \"%s\": [", w ? "regions" : "tasks");
    for (size_t i = 0; i < n; i++) {
      printf("%s\n    {\"type\": ", i ? "," : "");
      qstr(stdout, l[i].name, JSON);
      printf(", \"count\": %" PRIu64 ", \"open\": %" PRIu64 ", \"p50_ns\": %" PRId64
             ", \"p90_ns\": %" PRId64 ", \"p99_ns\": %" PRId64 ", \"max_ns\": %" PRId64 "}",
             l[i].count, l[i].open, l[i].p50, l[i].p90, l[i].p99, l[i].max);
    }
    printf("\n  ],\n");
  }
  printf("  \"mmu\": [");
  for (int k = 0; k < CTRACE_MMU_WINDOWS; k++) {
    printf("%s{\"window_ns\": %" PRId64 ", \"mmu\": ", k ? ", " : "", s->mmu_window_ns[k]);
    if (s->mmu[k] >= 0)
      printf("%.9f", s->mmu[k]);
    else
      printf("null");
    printf(", \"span_ns\": %" PRId64 "}", s->mmu_span_ns);
  }
  printf("],\n  \"wakers\": [");
  for (size_t i = 0; i < s->nwakers; i++) {
    const ctrace_waker_stats *w = &s->wakers[i];
    printf("%s\n    {\"woken\": ", i ? "," : "");
    qstr(stdout, w->woken, JSON);
    printf(", \"waker\": "); /* null: no waker known */
    if (w->waker)
      qstr(stdout, w->waker, JSON);
    else
      printf("null");
    printf(", \"count\": %" PRIu64 ", \"total_ns\": %" PRId64 ", \"p50_ns\": %" PRId64
           ", \"p99_ns\": %" PRId64 ", \"max_ns\": %" PRId64 ", \"why\": ",
           w->count, w->total, w->p50, w->p99, w->max);
    if (w->why) /* null: a waker, or no reason told */
      qstr(stdout, w->why, JSON);
    else
      printf("null");
    printf(", \"woken_thread\": ");
    qstr(stdout, w->woken_thread, JSON);
    printf(", \"waker_thread\": ");
    qstr(stdout, w->waker_thread, JSON);
    printf("}");
  }
  printf("\n  ]\n}\n");
  return true;
}

int ctrace__cmd_stats(int argc, char **argv) {
  enum fmt fm = TABLE;
  const char *trace = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    const char *v = NULL;
    if (strncmp(a, "--format=", 9) == 0) v = a + 9;
    else if (strcmp(a, "--format") == 0 && i + 1 < argc) v = argv[++i];
    if (v) {
      if (strcmp(v, "table") == 0) fm = TABLE;
      else if (strcmp(v, "csv") == 0) fm = CSV;
      else if (strcmp(v, "json") == 0) fm = JSON;
      else {
        fprintf(stderr, "ctrace stats: unknown format '%s' (table, csv, json)\n", v);
        return 2;
      }
    } else if (!ctrace__tool_operand("stats", a, &trace)) {
      return 2;
    }
  }
  if (!trace) {
    usage(stderr);
    return 2;
  }
  ctrace_trace_info info;
  bool progress;
  ctrace_reader *r = ctrace__tool_open_unchecked(trace, &info, &progress);
  if (!r) return 1;
  ctrace_stats *s;
  char err[256];
  int rc = 0;
  ctrace_process_info proc;
  ctrace_process_read(r, &proc);
  /* The table shows groups only; csv and json spool the goroutines' rows
   * as they come. None is kept. */
  rows rows = {.fm = fm};
  if (fm != TABLE && !(rows.spool = tmpfile())) {
    fprintf(stderr, "ctrace stats: a spool for the goroutines' rows in /tmp: %s\n", strerror(errno));
    ctrace_reader_close(r);
    return 1;
  }
  ctrace_stats_options opt = {.groups_only = 1, .row = fm == TABLE ? NULL : row, .row_arg = &rows};
  int failed = ctrace_stats_build_ex(r, &info, &opt, &s, err, sizeof err);
  if (!ctrace__tool_checked(trace, r, &info, progress)) {
    if (!failed) ctrace_stats_free(s);
    rc = 1;
  } else if (failed) {
    fprintf(stderr, "ctrace stats: %s: %s\n", trace, err);
    rc = 1;
  } else {
    /* The process as ps names it at the trace's end: its title, if it
     * retitled itself (a worker nginx or PostgreSQL forked). */
    if (proc.known && s->cmdline[0]) snprintf(proc.cmdline, sizeof proc.cmdline, "%s", s->cmdline);
    if (fm == TABLE) table(s, &proc);
    else if (!(fm == CSV ? csv(s, &proc, &rows) : json(s, &proc, &rows))) rc = 1;
    if (fflush(stdout) || ferror(stdout)) {
      perror("ctrace stats: stdout");
      rc = 1;
    }
    ctrace_stats_free(s);
  }
  if (rows.spool) fclose(rows.spool);
  ctrace_reader_close(r);
  return rc;
}
