/* A library as distributions ship them: stripped to its dynamic symbol
 * table (test_symbolize.c strips it after the build). symstrip_local has
 * no symbol at all and follows symstrip_before in .text, whose symbol the
 * nearest-symbol lookup of a stripped object would wrongly give it. */
#include <stdint.h>

__attribute__((noinline, used)) int symstrip_before(int x) { return x * 3 + 1; }

static __attribute__((noinline, used)) int symstrip_local(int x) { return x * 5 + 2; }

/* The address of the function that has no symbol. */
uintptr_t symstrip_local_addr(void) { return (uintptr_t)&symstrip_local; }
