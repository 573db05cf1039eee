/* bench_unwind_tables: the one-time cost of compiling an object's .eh_frame
 * into the unwind table of src/unwind/, for libc and, where installed,
 * libpython3.11 (loaded here for the purpose). One line per object:
 *   BENCH name=unwind-table-build object=<path part> ms=<x> rows=<n> fp_all=<0|1>
 * Each object is built once per process (tables are cached), so each line
 * is a first build: page faults on the object's CFI included, as a traced
 * program would pay them. ms is the building thread's CPU time (the
 * machines this runs on are shared: wall time also counts other load). */
#include "help.h"
#include <dlfcn.h>
#include <stdio.h>

#include "unwind/unwind.h"

static void one(const char *name) {
  ctrace__unw_build_info info;
  long rows = ctrace__unwind_build(name, &info);
  if (rows < 0) {
    fprintf(stderr, "bench_unwind_tables: %s: not loaded or no unwind tables\n", name);
    return;
  }
  printf("BENCH name=unwind-table-build object=%s ms=%.2f rows=%ld fp_all=%d\n", name, info.ms,
         rows, info.fp_all);
}

int main(int argc, char **argv) {
  bench_help(argc, argv,
             "usage: bench_unwind_tables\n"
             "The one-time cost of compiling libc's (and libpython3.11's) unwind tables.\n");
  one("libc.so.6");
  if (dlopen("libpython3.11.so.1.0", RTLD_NOW | RTLD_LOCAL))
    one("libpython3.11.so");
  else
    fprintf(stderr, "bench_unwind_tables: libpython3.11 is not installed: left out\n");
  return 0;
}
