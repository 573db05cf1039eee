/* A library built without debug information and not stripped, whose
 * symbol table names a function with its version, as glibc's does
 * (__libc_start_main@@GLIBC_2.34): test_symbolize.c names it without. */
#include <stdint.h>

__asm__(".symver symver_impl, symver_fn@@CTRACE_SYMVER_1");
__attribute__((noinline, used)) int symver_impl(int x) { return x * 7 + 3; }

uintptr_t symver_addr(void) { return (uintptr_t)&symver_impl; }
