/* The ctrace command: dispatches to one subcommand per file. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "ctrace/ctrace.h"

static int cmd_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("ctrace %s\n", CTRACE_VERSION_STRING);
  return 0;
}

static int cmd_help(int argc, char **argv);
int ctrace__cmd_dump(int argc, char **argv);
int ctrace__cmd_check(int argc, char **argv);
int ctrace__cmd_pprof(int argc, char **argv);
int ctrace__cmd_stats(int argc, char **argv);
int ctrace__cmd_export(int argc, char **argv);
int ctrace__cmd_view(int argc, char **argv);

const ctrace__cmd ctrace__cmds[] = {
    {"help", cmd_help, "print this help, or a command's (ctrace help COMMAND)"},
    {"check", ctrace__cmd_check, "validate a trace and sum it up"},
    {"dump", ctrace__cmd_dump, "print every event as `go tool trace -d` does"},
    {"export", ctrace__cmd_export, "write traces for Perfetto or as Chrome JSON, one timeline"},
    {"pprof", ctrace__cmd_pprof, "write a pprof profile of a trace: net, sync, syscall, sched, wall"},
    {"run", ctrace__cmd_run, "run a program and trace it, unmodified (ctrace run -- PROG)"},
    {"stats", ctrace__cmd_stats, "the numbers of a trace: goroutines, waits, tasks, regions, MMU"},
    {"version", cmd_version, "print the version"},
    {"view", ctrace__cmd_view, "open traces in ui.perfetto.dev, served from 127.0.0.1:9001"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace <command> [arguments]\n"
          "\n"
          "ctrace records Go execution traces of C programs; Go's own tools\n"
          "(go tool trace) open what it writes.\n"
          "\n"
          "commands:\n");
  for (const ctrace__cmd *c = ctrace__cmds; c->name; c++)
    fprintf(f, "  %-10s %s\n", c->name, c->summary);
  fprintf(f, "\nEvery command takes --help.\n");
}

static const ctrace__cmd *find(const char *name) {
  for (const ctrace__cmd *c = ctrace__cmds; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

static int cmd_help(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--help") != 0) {
    const ctrace__cmd *c = find(argv[1]);
    if (!c) {
      fprintf(stderr, "ctrace: unknown command '%s'\n", argv[1]);
      return 2;
    }
    char *args[] = {argv[1], "--help", NULL};
    return c->main(2, args);
  }
  usage(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) name = "help";
  if (strcmp(name, "--version") == 0) name = "version";
  /* Blocks of 128 KiB and more in pages of their own, given back when
   * freed: glibc's threshold otherwise rises to the largest block freed,
   * and a generation's tables, freed for the next one's, then stay in
   * the heap beside them. Peak RSS of `ctrace check` on a Go trace of 4
   * generations against the same program's trace of one: 3.6 MB against
   * 3.2 MB, 3.4 MB with the threshold fixed. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  const ctrace__cmd *c = find(name);
  if (!c) {
    fprintf(stderr, "ctrace: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
  }
  return c->main(argc - 1, argv + 1);
}
