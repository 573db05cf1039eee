/* demangle_names: each line of stdin (a symbol name) demangled by
 * ctrace__demangle (src/runtime/demangle.c, demangle_v0.c), a line each on
 * stdout, for tests/runtime/demangle_v0.sh to hold against binutils' c++filt. */
#include <stdio.h>
#include <string.h>

#include "runtime/symbolize.h"

int main(void) {
  static char line[1 << 16], out[1 << 16];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    puts(ctrace__demangle(line, out, sizeof out));
  }
  return ferror(stdout) ? 1 : 0;
}
