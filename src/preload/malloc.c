/* The heap: the live size of the program's allocations, as HeapAlloc.
 *
 * Every allocation and free adds its usable size (malloc_usable_size's
 * figure, so that a block's allocation and its free count the same) to a
 * per-thread difference; when that difference reaches +-64 KiB it is added
 * to the process total, and HeapAlloc reports the total. The cost per call
 * is a read of the block's size and a thread-local add; the figure is
 * exact to within 64 KiB per thread. A thread's remainder is added when it
 * ends.
 *
 * The size is read before a free, which must then fail as glibc's does
 * when the pointer is not one malloc gave (abort with "free(): invalid
 * pointer" and the like, issue 31). malloc_usable_size reads more than
 * free reads first (the next chunk's header, at an offset the pointer's
 * own header gives), and crashed on such pointers where free would have
 * aborted with its message. So with glibc's allocator the shim reads only
 * the word free reads first, the chunk's size before the block, which
 * gives the usable size as malloc_usable_size computes it for a block in
 * use: the chunk's size less 8, or 16 if it was mmapped. Whatever is at
 * an invalid pointer, free then sees it first and fails its own way (a
 * header that cannot be read: SIGSEGV, as in free). The first call checks
 * that the next allocator is glibc's (libc.so's malloc, free and realloc)
 * and that the reading agrees with malloc_usable_size on a small block;
 * otherwise (another allocator, or a malloc debugging library preloaded
 * after the shim) the shim calls malloc_usable_size, as before.
 *
 * dlsym allocates (its error state), and the first malloc must call dlsym
 * to find libc's: while ctrace__pl_in_dlsym is set, allocations come from a
 * static bootstrap arena, which is never freed (LTTng-UST's libc wrapper
 * does the same). Each bootstrap block carries its size in front, for
 * realloc and malloc_usable_size.
 *
 * The guard is held around libc's malloc and free, so a terminating signal
 * that arrives inside them is handled after they return (signals.c): the
 * trace is never finished while this thread holds an arena lock.
 *
 * A program built with a sanitizer uses the sanitizer's allocator, which
 * comes before the shim; these wrappers are then never called and the
 * trace has no heap figures.
 */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"

#define HEAP_STEP ((int64_t)64 * 1024)

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef size_t (*usable_fn)(void *);

static struct {
  malloc_fn malloc;
  free_fn free;
  calloc_fn calloc;
  realloc_fn realloc;
  memalign_fn memalign, aligned_alloc;
  posix_memalign_fn posix_memalign;
  malloc_fn valloc, pvalloc;
  usable_fn usable;
  bool glibc; /* glibc's allocator: its chunk header gives the size */
  _Atomic bool ready;
} real;

/* A block's usable size from glibc's chunk header: the word before it,
 * the chunk's size with flags in its low 3 bits (2: mmapped). Reads only
 * what glibc's free and realloc read first. */
static inline size_t chunk_usable(const void *p) {
  size_t h;
  memcpy(&h, (const unsigned char *)p - sizeof h, sizeof h);
  return (h & ~(size_t)7) - ((h & 2) ? 16 : 8);
}

static inline size_t block_size(void *p) {
  return ctrace__pl_likely(real.glibc) ? chunk_usable(p) : real.usable(p);
}

/* Whether f is defined in the object that defines gnu_get_libc_version:
 * libc.so itself. dladdr allocates nothing, but the bootstrap arena is
 * in place should it. */
static bool in_libc(void *f) {
  Dl_info fi, li;
  ctrace__pl_in_dlsym++;
  bool same = dladdr(f, &fi) && dladdr((void *)gnu_get_libc_version, &li) &&
              fi.dli_fbase == li.dli_fbase;
  ctrace__pl_in_dlsym--;
  return same;
}

/* chunk_usable is malloc_usable_size for a block of n bytes. */
static bool chunk_usable_agrees(size_t n) {
  void *p = real.malloc(n);
  if (!p) return false;
  bool same = chunk_usable(p) == real.usable(p);
  real.free(p);
  return same;
}

/* All at once, on the first call of any: a later lookup from inside
 * another (free during dlsym, say) would nest dlsym calls. */
static void resolve(void) {
  real.malloc = (malloc_fn)ctrace__pl_sym("malloc", NULL);
  real.free = (free_fn)ctrace__pl_sym("free", NULL);
  real.calloc = (calloc_fn)ctrace__pl_sym("calloc", NULL);
  real.realloc = (realloc_fn)ctrace__pl_sym("realloc", NULL);
  real.memalign = (memalign_fn)ctrace__pl_sym("memalign", NULL);
  real.aligned_alloc = (memalign_fn)ctrace__pl_sym("aligned_alloc", NULL);
  real.posix_memalign = (posix_memalign_fn)ctrace__pl_sym("posix_memalign", NULL);
  real.valloc = (malloc_fn)ctrace__pl_sym("valloc", NULL);
  real.pvalloc = (malloc_fn)ctrace__pl_sym("pvalloc", NULL);
  real.usable = (usable_fn)ctrace__pl_sym("malloc_usable_size", NULL);
  /* A small block only: freeing an mmapped one would raise glibc's mmap
   * threshold for the program (its dynamic threshold). */
  real.glibc = in_libc((void *)real.malloc) && in_libc((void *)real.free) &&
               in_libc((void *)real.realloc) && chunk_usable_agrees(24);
  atomic_store_explicit(&real.ready, true, memory_order_release);
}

static inline void ready(void) {
  if (ctrace__pl_unlikely(!atomic_load_explicit(&real.ready, memory_order_acquire))) resolve();
}

/* ---- bootstrap arena ------------------------------------------------------------- */

#define BOOT_SIZE (64 * 1024)
#define BOOT_HEADER 16

static _Alignas(64) unsigned char boot[BOOT_SIZE];
static _Atomic size_t boot_used;

static bool is_boot(const void *p) {
  return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + BOOT_SIZE;
}

static void *boot_alloc(size_t n, size_t align) {
  if (align < BOOT_HEADER) align = BOOT_HEADER;
  if (n > BOOT_SIZE || align > BOOT_SIZE / 4) return NULL;
  size_t used = atomic_load_explicit(&boot_used, memory_order_relaxed), start, end;
  do {
    start = (used + BOOT_HEADER + align - 1) & ~(align - 1);
    end = start + ((n + 15) & ~(size_t)15);
    if (end > BOOT_SIZE) return NULL;
  } while (!atomic_compare_exchange_weak(&boot_used, &used, end));
  memcpy(boot + start - sizeof(size_t), &n, sizeof n);
  return boot + start; /* zero: the arena is static and never reused */
}

static size_t boot_size(const void *p) {
  size_t n;
  memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
  return n;
}

/* ---- accounting -------------------------------------------------------------------- */

static __thread int64_t heap_delta __attribute__((tls_model("initial-exec")));
static _Atomic int64_t heap_live;

static void report(int64_t d) {
  heap_delta = 0;
  int64_t live = atomic_fetch_add_explicit(&heap_live, d, memory_order_relaxed) + d;
  /* Not from inside the tracer (libdw allocating at stop, say). errno
   * kept: free never changes it (POSIX.1-2024), malloc only on failure. */
  if (ctrace__pl_guard == 0 && ctrace_enabled())
    CTRACE__PL_CALL_KEEP_ERRNO(ctrace_heap_alloc(live > 0 ? (uint64_t)live : 0));
}

static inline void account(int64_t d) {
  int64_t x = heap_delta + d;
  if (ctrace__pl_likely(x < HEAP_STEP && x > -HEAP_STEP))
    heap_delta = x;
  else
    report(x);
}

void ctrace__pl_heap_flush(void) {
  atomic_fetch_add_explicit(&heap_live, heap_delta, memory_order_relaxed);
  heap_delta = 0;
}

static inline void *counted(void *p) {
  if (p) account((int64_t)block_size(p));
  return p;
}

/* Holds the guard around a call into libc's allocator (see top), counted
 * as CTRACE__PL_GUARD_ALLOC so that a crash handler knows where it is; its
 * release runs a deferred signal as ctrace__pl_unguard's does. */
#define GUARDED(expr)                                                    \
  do {                                                                   \
    ctrace__pl_guard += CTRACE__PL_GUARD_ALLOC;                          \
    expr;                                                                \
    if ((ctrace__pl_guard -= CTRACE__PL_GUARD_ALLOC) == 0 &&             \
        ctrace__pl_unlikely(ctrace__pl_deferred))                        \
      ctrace__pl_run_deferred();                                         \
  } while (0)

/* ---- the allocator's interface --------------------------------------------------------- */

CTRACE__PL_EXPORT void *malloc(size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) return boot_alloc(n, 16);
  ready();
  void *p;
  GUARDED(p = real.malloc(n));
  return counted(p);
}

CTRACE__PL_EXPORT void free(void *p) {
  if (!p || is_boot(p)) return;
  ready();
  int64_t n = (int64_t)block_size(p);
  GUARDED(real.free(p));
  account(-n);
}

CTRACE__PL_EXPORT void *calloc(size_t n, size_t size) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) {
    if (size && n > SIZE_MAX / size) return NULL;
    return boot_alloc(n * size, 16);
  }
  ready();
  void *p;
  GUARDED(p = real.calloc(n, size));
  return counted(p);
}

CTRACE__PL_EXPORT void *realloc(void *old, size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym || is_boot(old))) {
    /* A bootstrap block moves to wherever malloc puts it now. */
    void *p = malloc(n);
    if (p && old) {
      size_t was = boot_size(old);
      memcpy(p, old, was < n ? was : n);
    }
    return p;
  }
  ready();
  int64_t was = old ? (int64_t)block_size(old) : 0;
  void *p;
  GUARDED(p = real.realloc(old, n));
  if (p || n == 0) {
    /* Freed (n == 0 frees in glibc) or moved: the old block is gone. */
    account(-was);
    counted(p);
  }
  return p;
}

CTRACE__PL_EXPORT void *reallocarray(void *old, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(old, n * size);
}

CTRACE__PL_EXPORT void *memalign(size_t align, size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) return boot_alloc(n, align);
  ready();
  void *p;
  GUARDED(p = real.memalign(align, n));
  return counted(p);
}

CTRACE__PL_EXPORT void *aligned_alloc(size_t align, size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) return boot_alloc(n, align);
  ready();
  void *p;
  GUARDED(p = real.aligned_alloc(align, n));
  return counted(p);
}

CTRACE__PL_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) {
    *out = boot_alloc(n, align);
    return *out ? 0 : ENOMEM;
  }
  ready();
  int r;
  GUARDED(r = real.posix_memalign(out, align, n));
  if (r == 0) counted(*out);
  return r;
}

CTRACE__PL_EXPORT void *valloc(size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) return boot_alloc(n, 4096);
  ready();
  void *p;
  GUARDED(p = real.valloc(n));
  return counted(p);
}

CTRACE__PL_EXPORT void *pvalloc(size_t n) {
  if (ctrace__pl_unlikely(ctrace__pl_in_dlsym)) return boot_alloc((n + 4095) & ~(size_t)4095, 4096);
  ready();
  void *p;
  GUARDED(p = real.pvalloc(n));
  return counted(p);
}

CTRACE__PL_EXPORT size_t malloc_usable_size(void *p) {
  if (!p) return 0;
  if (is_boot(p)) return boot_size(p);
  ready();
  return real.usable(p);
}
