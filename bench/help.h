/* --help for the benchmark programs: prints the usage and what the program
 * measures, then exits 0. A benchmark given --help must not run (nor, as
 * bench_gen_trace did, write a trace named "--help"). */
#ifndef CTRACE_BENCH_HELP_H
#define CTRACE_BENCH_HELP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void bench_help(int argc, char **argv, const char *usage) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      exit(0);
    }
}

#endif
