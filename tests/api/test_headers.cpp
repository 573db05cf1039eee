/* test_headers.cpp - the public headers compile on their own as strict C++
 * (-std=c++11 and -std=c++17, -Wall -Wextra -Werror -pedantic) and their
 * functions and data link with C linkage (extern "C"): a missing extern "C"
 * would make the linker look for C++-mangled names, which libctrace lacks.
 *
 * Built for C++11 and C++17, each twice: with ctrace/ctrace.h first, and
 * with ctrace/format.h first (TEST_HEADERS_FORMAT_FIRST), so that each
 * header is shown to be self-contained. Each is included twice to test its
 * include guard.
 */
#ifdef TEST_HEADERS_FORMAT_FIRST
#include <ctrace/format.h>
#include <ctrace/ctrace.h>
#else
#include <ctrace/ctrace.h>
#include <ctrace/format.h>
#endif
#include <ctrace/ctrace.h>
#include <ctrace/format.h>

#include <cstdio>
#include <cstring>
using std::strcmp;
using std::printf;
using std::fprintf;

static int failures;

#define EXPECT(cond)                                                       \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "test_headers.cpp:%d: failed: %s\n", __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)

/* The public types are usable as declared. */
static ctrace_options options = {0, CTRACE_DEFAULT_STACK_DEPTH, CTRACE_DEFAULT_BUFFER_SIZE, 0,
                                  CTRACE_UNWIND_AUTO, 0, CTRACE_FORMAT_DEFAULT};
static_assert(sizeof(ctrace_g) > sizeof(uint64_t), "ctrace_g");

int main(void) {
  /* Error codes and their messages (the X-macro table in ctrace.h). */
  EXPECT(strcmp(ctrace_strerror(CTRACE_EBUSY), "tracing is already on") == 0);
  EXPECT(strcmp(ctrace_strerror(CTRACE_EREADER), "another reader is active") == 0);
  EXPECT(strcmp(ctrace_strerror(0), "success") == 0);
  EXPECT(ctrace_strerror(12345) != NULL);

  /* The event table, through the shared library's exported data. */
  EXPECT(strcmp(ctrace_event_descs[CTRACE_EV_UserLog].name, "UserLog") == 0);
  EXPECT(ctrace_event_descs[CTRACE_EV_UserLog].flags & CTRACE_F_STRING);
  EXPECT(ctrace_event_descs[CTRACE_EV_Batch].nargs == 2);
  EXPECT(CTRACE_EV_COUNT == 50);
  EXPECT(sizeof(CTRACE_HEADER) - 1 == CTRACE_HEADER_LEN);
  EXPECT(CTRACE_VERSION == 1011);

  /* Public API usable without tracing: no trace is on. */
  EXPECT(!ctrace_enabled());
  EXPECT(ctrace_stop() == CTRACE_ENOTRACE);
  options.stack_depth = CTRACE_MAX_STACK_DEPTH + 1;
  EXPECT(ctrace_start(&options) == CTRACE_EINVAL);
  EXPECT(ctrace_task_create(0, "t") != 0);

  if (failures) return 1;
  printf("test_headers (C++%ld%s): ok\n", (long)__cplusplus,
#ifdef TEST_HEADERS_FORMAT_FIRST
         ", format.h first"
#else
         ", ctrace.h first"
#endif
  );
  return 0;
}
