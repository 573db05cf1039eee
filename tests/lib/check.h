/* check.h - the C tests' check that goes on after a failure: it says
 * where and what failed and counts it, and the test's main returns
 * failures != 0, so one run reports every check that fails. */
#ifndef CTRACE_TESTS_CHECK_H
#define CTRACE_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      failures++;                                                \
    }                                                            \
  } while (0)

#endif
