/* The tracer's settings from the environment (env.c): CTRACE_FORMAT,
 * CTRACE_MAX_PENDING_MB, CTRACE_VERBOSE and the like. */
#ifndef CTRACE_ENV_H
#define CTRACE_ENV_H

/* The value of the environment variable name, or NULL: getenv's, or,
 * once ctrace__env_use gave it one, the list's. */
const char *ctrace__getenv(const char *name) __attribute__((visibility("hidden")));
/* From now on ctrace__getenv reads entries ("NAME=value", NULL-ended,
 * kept by the caller for good) instead of the environment: the
 * LD_PRELOAD shim takes the tracer's variables out of the program's
 * environment before the program runs (src/preload/shim.c), and hands
 * the tracer its copy of them. */
void ctrace__env_use(char *const *entries) __attribute__((visibility("hidden")));

#endif
