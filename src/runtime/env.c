/* The tracer's settings from the environment. Every read of one goes
 * through ctrace__getenv: in a program linked with libctrace that is
 * getenv, in the LD_PRELOAD shim the copy the shim took before it removed
 * the variables from the program's environment (a tracer must leave the
 * program's environment as it would be untraced, and bash, for one,
 * copies it into its own variables in main, out of reach of unsetenv). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

static char *const *_Atomic source;

void ctrace__env_use(char *const *entries) { atomic_store(&source, entries); }

const char *ctrace__getenv(const char *name) {
  char *const *e = atomic_load(&source);
  if (!e) return getenv(name);
  size_t n = strlen(name);
  for (; *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}
