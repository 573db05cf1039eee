/* Unit test for the in-process symbolizer (src/runtime/symbolize.c). */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/symbolize.h"

static int known_line;
static int outer_line;

/* The PC a frame-pointer walk would record for the caller's frame. */
static __attribute__((noinline)) uintptr_t return_address(void) {
  return (uintptr_t)__builtin_return_address(0);
}

/* Storing the result after the call keeps it from becoming a tail call,
   which would leave no return address in this function. */
__attribute__((noinline)) void known_function(uintptr_t *pc) {
  *pc = return_address(); known_line = __LINE__;
}

static inline __attribute__((always_inline)) uintptr_t inlined_helper(void) {
  return return_address();
}

__attribute__((noinline)) void outer_function(uintptr_t *pc) {
  *pc = inlined_helper(); outer_line = __LINE__;
}

/* Compares only the tail, so a failure still prints both paths' ends. */
static void assert_file_is_this_test(const char *file) {
  static const char name[] = "test_symbolize.c";
  size_t n = strlen(file), k = sizeof name - 1;
  assert_string_equal(n >= k ? file + n - k : file, name);
  assert_true(n == k || file[n - k - 1] == '/');
}

static void test_known_function(void **state) {
  uintptr_t pc = 0;
  known_function(&pc);
  ctrace__frame f;
  ctrace__symbolize(pc, &f);
  assert_string_equal(f.func, "known_function");
  assert_file_is_this_test(f.file);
  assert_int_equal(f.line, known_line);
}

/* Code inlined into a function reports that function, at the line where
   the inlined code was called. */
static void test_inlined(void **state) {
  uintptr_t pc = 0;
  outer_function(&pc);
  ctrace__frame f;
  ctrace__symbolize(pc, &f);
  assert_string_equal(f.func, "outer_function");
  assert_file_is_this_test(f.file);
  assert_int_equal(f.line, outer_line);
}

/* A second lookup of a PC is served from the cache, with the same
   strings. */
static void test_cached(void **state) {
  uintptr_t pc = 0;
  known_function(&pc);
  ctrace__frame a, b;
  ctrace__symbolize(pc, &a);
  ctrace__symbolize(pc, &b);
  assert_ptr_equal(a.func, b.func);
  assert_ptr_equal(a.file, b.file);
  assert_int_equal(a.line, b.line);
}

static void test_unknown(void **state) {
  for (uintptr_t pc = 0; pc <= 1; pc++) {
    ctrace__frame f = {NULL, NULL, 99};
    ctrace__symbolize(pc, &f);
    assert_string_equal(f.func, "?");
    assert_string_equal(f.file, "?");
    assert_int_equal(f.line, 0);
  }
}

/* libc ships without DWARF here, but its dynamic symbol table names its
   exported functions. The address comes from libc itself, not from this
   program's PLT or a sanitizer's interceptor. */
static void test_libc(void **state) {
  void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
  assert_non_null(libc);
  void *fn = dlsym(libc, "printf");
  assert_non_null(fn);
  dlclose(libc);
  Dl_info info;
  assert_int_not_equal(dladdr(fn, &info), 0);
  assert_non_null(strstr(info.dli_fname, "libc"));

  ctrace__frame f;
  ctrace__symbolize((uintptr_t)fn + 1, &f);
  assert_non_null(f.func);
  assert_string_not_equal(f.func, "?");
  assert_non_null(f.file);
}

/* Closing frees everything (the sanitizer build checks for leaks) and a
   later call starts a fresh session. */
static void test_close_and_reopen(void **state) {
  ctrace__symbolize_close();
  ctrace__symbolize_close();
  uintptr_t pc = 0;
  known_function(&pc);
  ctrace__frame f;
  ctrace__symbolize(pc, &f);
  assert_string_equal(f.func, "known_function");
  assert_int_equal(f.line, known_line);
}

static int teardown(void **state) {
  ctrace__symbolize_close();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_function),
      cmocka_unit_test(test_inlined),
      cmocka_unit_test(test_cached),
      cmocka_unit_test(test_unknown),
      cmocka_unit_test(test_libc),
      cmocka_unit_test(test_close_and_reopen),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
