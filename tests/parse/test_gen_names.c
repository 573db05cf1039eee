/* test_gen_names.c - a task and a region that outlive the generation they
 * began in keep their names.
 *
 *   test_gen_names TRACE
 *
 * The reader of Go 1.22+ traces points a task's or region's name into its
 * generation's string table while that generation is read, and copies it
 * when the generation is let go of (ctrace__g2_order_adopt). Here ctrace
 * writes a Go 1.22 trace whose generations end every 20 ms (CTRACE_GEN_MS)
 * while a task and a region inside it stay open for 120 ms; then the
 * trace is read back, and:
 *   - it reads to its end (the region's end matches its begin, by name);
 *   - a Sync lies between the begin and the end of each (they do span
 *     generations, or the test proves nothing);
 *   - the task's end carries the task's type, byte for byte.
 * Without the copy the names point into freed tables: AddressSanitizer
 * stops on the first read of one, and a plain build reads whatever the
 * allocator left there. */
#include <ctrace/ctrace.h>
#include <ctrace/parse.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "test_gen_names: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fputc('\n', stderr);                                            \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

static const char TASK[] = "gen-names-task", REGION[] = "gen-names-region";

static bool is(const ctrace_event *ev, const char *s) {
  return ev->sargs[0] && ev->sargs_len[0] == strlen(s) && memcmp(ev->sargs[0], s, strlen(s)) == 0;
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: test_gen_names TRACE");
  setenv("CTRACE_GEN_MS", "20", 1);
  ctrace_options opts = {.format = CTRACE_FORMAT_GO122, .no_stacks = 1};
  CHECK(ctrace_start_file(argv[1], &opts) == 0, "ctrace_start_file failed");
  uint64_t task = ctrace_task_create(0, TASK);
  ctrace_region_begin(task, REGION);
  nanosleep(&(struct timespec){0, 120 * 1000 * 1000}, NULL);
  ctrace_region_end(task, REGION);
  ctrace_task_end(task);
  CHECK(ctrace_stop() == 0, "ctrace_stop failed");

  ctrace_reader *r;
  ctrace_parse_error err;
  CHECK(ctrace_reader_open(argv[1], &r, &err) == 0, "open: %s", err.message);
  ctrace_event ev;
  int rc;
  uint64_t syncs = 0, task_begin = 0, region_begin = 0;
  int seen_task_begin = 0, seen_region_begin = 0, seen_region_end = 0, seen_task_end = 0;
  while ((rc = ctrace_reader_read(r, &ev, &err)) > 0) {
    switch (ev.type) {
    case CTRACE_EV122_Sync: syncs++; break;
    case CTRACE_EV122_UserTaskBegin:
      if (!is(&ev, TASK)) break;
      seen_task_begin = 1;
      task_begin = syncs;
      break;
    case CTRACE_EV122_UserRegionBegin:
      if (!is(&ev, REGION)) break;
      seen_region_begin = 1;
      region_begin = syncs;
      break;
    case CTRACE_EV122_UserRegionEnd:
      if (!is(&ev, REGION)) break;
      seen_region_end = 1;
      CHECK(syncs > region_begin, "the region began and ended in one generation: the test proves nothing");
      break;
    case CTRACE_EV122_UserTaskEnd:
      if (ev.args[0] != task) break;
      seen_task_end = 1;
      CHECK(syncs > task_begin, "the task began and ended in one generation: the test proves nothing");
      CHECK(is(&ev, TASK), "the task's end carries \"%.*s\", not \"%s\"", (int)ev.sargs_len[0],
            ev.sargs[0] ? ev.sargs[0] : "", TASK);
      break;
    }
  }
  CHECK(rc == 0, "the trace does not read to its end: %s (offset %llu)", err.message,
        (unsigned long long)err.offset);
  CHECK(seen_task_begin && seen_region_begin && seen_region_end && seen_task_end,
        "missing: task begin %d, region begin %d, region end %d, task end %d", seen_task_begin,
        seen_region_begin, seen_region_end, seen_task_end);
  ctrace_reader_close(r);
  printf("test_gen_names: ok (%llu generations)\n", (unsigned long long)syncs);
  return 0;
}
