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

/* Code with no symbol, in a stripped library, is named by its object and
   its address there, never after the exported function before it. */
static void test_stripped(void **state) {
  void *lib = dlopen(SYMSTRIP_PATH, RTLD_NOW);
  assert_non_null(lib);
  uintptr_t (*local_addr)(void) = (uintptr_t(*)(void))dlsym(lib, "symstrip_local_addr");
  void *before = dlsym(lib, "symstrip_before");
  assert_non_null(local_addr);
  assert_non_null(before);
  uintptr_t local = local_addr();
  assert_true(local > (uintptr_t)before);
  Dl_info info;
  assert_int_not_equal(dladdr((void *)local, &info), 0);
  ctrace__frame f;
  ctrace__symbolize(local + 1, &f);
  char want[128];
  snprintf(want, sizeof want, "libctrace_symstrip.so+0x%llx",
           (unsigned long long)(local - (uintptr_t)info.dli_fbase));
  assert_string_equal(f.func, want);
  /* The exported one keeps its name. */
  ctrace__symbolize((uintptr_t)before + 1, &f);
  assert_string_equal(f.func, "symstrip_before");
  ctrace__symbolize_close();
  dlclose(lib);
}

/* A symbol table's versioned name (name@@VERSION, as glibc's) names the
   function without its version. */
static void test_versioned(void **state) {
  void *lib = dlopen(SYMVER_PATH, RTLD_NOW);
  assert_non_null(lib);
  uintptr_t (*addr)(void) = (uintptr_t(*)(void))dlsym(lib, "symver_addr");
  assert_non_null(addr);
  ctrace__frame f;
  ctrace__symbolize(addr() + 1, &f);
  assert_null(strchr(f.func, '@'));
  assert_true(strcmp(f.func, "symver_fn") == 0 || strcmp(f.func, "symver_impl") == 0);
  ctrace__symbolize_close();
  dlclose(lib);
}

/* C++ names are demangled by the process's own __cxa_demangle (main
   loads libstdc++), Rust's legacy and v0 names by their own rules;
   anything else, or what does not fit, is left as it is. */
static void test_demangle(void **state) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"_ZN4shop5Queue5relayEi", "shop::Queue::relay(int)"},
      {"_ZNSt6thread11_State_implINS_8_InvokerISt5tupleIJZ4mainEUlvE_EEEEE6_M_runEv",
       "std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run()"},
      {"_ZN3std3sys4unix6thread6Thread3new12thread_start17h0123456789abcdefE",
       "std::sys::unix::thread::Thread::new::thread_start"},
      {"_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$"
       "17h6e2e2f2c8a0b1d3eE",
       "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"},
      {"_ZN9rust_sync4ring17hfedcba9876543210E.llvm.123", "rust_sync::ring"},
      {"_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h0000000000000000E",
       "core::ops::function::FnOnce::call_once{{vtable.shim}}"},
      {"main", "main"},
      {"_Zbroken", "_Zbroken"},
      {"_ZN3foo3barE", "foo::bar"},
      /* Rust v0 (RFC 2603): names rustc 1.95 made, and made by hand for
         what it did not; each as binutils' c++filt prints it, less the
         crate hashes and the types it adds after constants. */
      {"_RNvCsfq2Zq5gqAK1_2v04main", "v0::main"},
      {"_RNvMCsfq2Zq5gqAK1_2v0INtB2_5QueuemE5relayB2_", "<v0::Queue<u32>>::relay"},
      {"_RNvXs1g_NtCsgEmfK2I1SDS_4core3fmtRDNtB6_5DebugEL_Bx_3fmtB8_",
       "<&dyn core::fmt::Debug as core::fmt::Debug>::fmt"},
      {"_RINvNtNtCsjrHSEGnQ3l9_3std6thread9lifecycle15spawn_uncheckedNCNvCsfq2Zq5gqAK1_2v04main0uEB10_",
       "std::thread::lifecycle::spawn_unchecked::<v0::main::{closure#0}, ()>"},
      {"_RNCNvCs_3foo4main0B3_", "foo::main::{closure#0}"},
      {"_RNvXCs_3fooNtB2_2SqNtB2_5Shape4area", "<foo::Sq as foo::Shape>::area"},
      {"_RINvCs_3foo3barFlEmE", "foo::bar::<fn(i32) -> u32>"},
      {"_RINvCs_3foo3barAhj4_ThcEKj1f_E", "foo::bar::<[u8; 4], (u8, char), 31>"},
      {"_RINvCs_3foo3barRL_eQSlPhOuFUKCEuDNtCs_3foo5ShapeEL_E",
       "foo::bar::<&str, &mut [i32], *const u8, *mut (), unsafe extern \"C\" fn(), dyn foo::Shape>"},
      {"_RINvCs_3foo3barFG_RL0_hEuE", "foo::bar::<for<'a> fn(&'a u8)>"},
      {"_RINvCs_3foo3barDINtNtNtCs_4core3ops8function6FnOnceTEEp6OutputuEL_E",
       "foo::bar::<dyn core::ops::function::FnOnce<(), Output = ()>>"},
      {"_RINvCs_3foo3barKb1_Kc61_Kan5_E", "foo::bar::<true, 'a', -5>"},
      {"_RINvCs_3foo3barTlEE", "foo::bar::<(i32,)>"},
      {"_RNvNtCs_3foo1a1b.llvm.123", "foo::a::b"},
      /* Left as they are: punycode, a version, a back-reference forward
         or to itself, a cut name, a constant past 64 bits. */
      {"_RNvCs_3foou3bar", "_RNvCs_3foou3bar"},
      {"_R5foo", "_R5foo"},
      {"_RNvB9_3foo", "_RNvB9_3foo"},
      {"_RB_", "_RB_"},
      {"_RNvCs_3foo3ba", "_RNvCs_3foo3ba"},
      {"_RINvCs_3foo3barKm1234567890abcdef0_E", "_RINvCs_3foo3barKm1234567890abcdef0_E"},
  };
  char buf[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    assert_string_equal(ctrace__demangle(cases[i].in, buf, sizeof buf), cases[i].out);
  char tiny[8];
  assert_string_equal(ctrace__demangle("_ZN4shop5Queue5relayEi", tiny, sizeof tiny), "_ZN4shop5Queue5relayEi");
  assert_string_equal(ctrace__demangle(cases[2].in, tiny, sizeof tiny), cases[2].in);
  assert_string_equal(ctrace__demangle("_RNvCsfq2Zq5gqAK1_2v04main", tiny, sizeof tiny), "_RNvCsfq2Zq5gqAK1_2v04main");
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
  /* A C++ program's demangler, which this C program otherwise lacks. */
  if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "test_symbolize: %s\n", dlerror());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_function),
      cmocka_unit_test(test_inlined),
      cmocka_unit_test(test_cached),
      cmocka_unit_test(test_unknown),
      cmocka_unit_test(test_libc),
      cmocka_unit_test(test_close_and_reopen),
      cmocka_unit_test(test_stripped),
      cmocka_unit_test(test_versioned),
      cmocka_unit_test(test_demangle),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
