/* startname.c - a thread's start function: Rust's and C++'s threads.
 *
 * A thread made by Rust's std::thread::spawn starts at std's routine
 * (std::sys::...::Thread::new::thread_start), one made by std::thread at
 * libstdc++'s (execute_native_thread_routine, or the state's _M_run where
 * the shim finds it, src/preload/threads.c). The user's function is what
 * that routine calls at last: the frame inside Rust's
 * __rust_begin_short_backtrace (every std version has it, and calls the
 * closure it is given), or inside libstdc++'s _M_run, past its _Invoker
 * and __invoke helpers.
 *
 * The creator writes GoCreate before the new thread has run the user's
 * function, and Rust keeps the closure behind a boxed trait object in
 * std's private thread data, whose layout changes between versions: only
 * the new thread's own stacks show it. So the tracer gives a thread's
 * creation a start stack of its own and names it when it writes the stack
 * table, off the hot path, from the thread's first stacks of that
 * generation (stack.c); the analyses name a thread a trace left at its
 * routine by the first stack of its own that goes past the routines
 * (src/analyse/filter.c).
 *
 * A closure the compiler inlined into the routine has no frame of its
 * own (ctrace names one function per pc, not inlined ones), nor has a
 * function that ended in a tail call: what the routine then calls is
 * std's or libc's, not the user's, and the name stays the routine's; but
 * where Rust's v0 mangling names __rust_begin_short_backtrace's
 * instance by its closure, that instance's name. */
#include <string.h>

#include "startname.h"

static bool prefixed(const char *f, const char *p) { return strncmp(f, p, strlen(p)) == 0; }

/* A sanitizer's thread start (AddressSanitizer's, ThreadSanitizer's),
 * which runs the start routine the program gave pthread_create: the start
 * function the shim sees in a sanitized program. */
static bool sanitizer_start(const char *f) {
  return prefixed(f, "asan_thread_start") || prefixed(f, "__tsan_thread_start_func");
}

/* The frames of libc's thread start, or a sanitizer's, outside every
 * thread's start routine. */
static bool libc_start(const char *f) {
  return strcmp(f, "start_thread") == 0 || strcmp(f, "clone") == 0 || strcmp(f, "clone3") == 0 ||
         strcmp(f, "__clone") == 0 || strcmp(f, "__clone3") == 0 || strcmp(f, "__clone_internal") == 0 ||
         sanitizer_start(f);
}

/* libc's start of the process, outside main. */
static bool process_start(const char *f) {
  return strcmp(f, "_start") == 0 || prefixed(f, "__libc_start_main") || strcmp(f, "__libc_start_call_main") == 0;
}

ptrdiff_t ctrace__root_frame(const void *frames, size_t n, ctrace__frame_name *name) {
  ptrdiff_t i = (ptrdiff_t)n - 1;
  while (i > 0 && (libc_start(name(frames, (size_t)i)) || process_start(name(frames, (size_t)i)))) i--;
  return i;
}

/* Rust std's thread start routine, in any std's path for it
 * (std::sys::unix::thread::..., std::sys::pal::unix::thread::..., and
 * Rust 1.9x's impl path <std::sys::thread::unix::Thread>::new::...). */
static bool rust_start(const char *f) {
  size_t n = strlen(f);
  if (n <= 14 || strcmp(f + n - 14, "::thread_start") != 0) return false;
  while (*f == '<') f++;
  return prefixed(f, "std::");
}

/* Frames between Rust's start routine and __rust_begin_short_backtrace:
 * std's, core's and alloc's (the spawn closure, catch_unwind, the boxed
 * FnOnce's call_once and its vtable shim), and the panic runtime's try. */
static bool rust_runtime(const char *f) {
  if (strcmp(f, "__rust_try") == 0) return true;
  while (*f == '<') f++; /* an impl's: <std::...>::, <<std::...> as ...>:: (v0) */
  return prefixed(f, "std::") || prefixed(f, "core::") || prefixed(f, "alloc::");
}

/* libstdc++'s thread start routine, execute_native_thread_routine: by
 * name, or, in a libstdc++ without its local symbols (Debian's), as an
 * address in libstdc++ (module+0xoffset) outside libc's start. */
static bool cxx_start(const char *f) {
  return strcmp(f, "execute_native_thread_routine") == 0 ||
         (prefixed(f, "libstdc++.so") && strstr(f, "+0x"));
}

/* libstdc++'s std::thread state's _M_run, which calls the callable. */
static bool cxx_run(const char *f) {
  return prefixed(f, "std::thread::_State_impl<") && strstr(f, ">::_M_run(");
}

/* libstdc++'s helpers between _M_run and the callable (kept as frames
 * when not inlined, as at -O0); their names may begin with a return type. */
static bool cxx_invoke(const char *f) {
  return strstr(f, "std::thread::_Invoker<") || strstr(f, "std::__invoke");
}

bool ctrace__start_routine(const char *f) {
  return rust_start(f) || cxx_run(f) || cxx_start(f) || sanitizer_start(f);
}

/* Whether a function the start routine calls is the user's: Rust's has a
 * path outside std, core and alloc (libc's and the shim's have no path);
 * C++'s has its parameters and is not in std (its name may begin with a
 * return type). */
static bool user_function(const char *f, bool rust) {
  if (rust) return strstr(f, "::") && !rust_runtime(f);
  const char *paren = strchr(f, '('), *sp = strchr(f, ' '), *lt = strchr(f, '<');
  if (!paren) return false;
  if (sp && sp < paren && (!lt || sp < lt)) f = sp + 1;
  return !prefixed(f, "std::") && !prefixed(f, "__gnu_cxx::");
}

ptrdiff_t ctrace__start_frame(const char *routine, const void *frames, size_t n, ctrace__frame_name *name,
                              bool *settled) {
  if (!ctrace__start_routine(routine)) {
    *settled = true;
    return -1;
  }
  /* From the outermost frame in, to the frame the routine calls: i. A
   * sanitizer's start (san) runs the program's start routine, which may
   * be a language runtime's or the program's own. */
  ptrdiff_t i = (ptrdiff_t)n, marker = -1;
  bool rust = false, cxx = false, in_routine = false, san = sanitizer_start(routine);
  for (;;) {
    if (--i < 0) return -1; /* the routines alone: a later stack may say */
    const char *f = name(frames, (size_t)i);
    /* A stack that begins at the routine is a creation's (the new
     * goroutine's start pc), which says nothing of what it calls. */
    if (i == (ptrdiff_t)n - 1 && !libc_start(f)) return -1;
    if (libc_start(f)) continue;
    if (cxx_start(f)) {
      cxx = true;
      continue;
    }
    if (strstr(f, "__rust_begin_short_backtrace")) {
      rust = true;
      marker = i;
      i--;
      break;
    }
    if (cxx_run(f)) {
      for (i--; i >= 0 && cxx_invoke(name(frames, (size_t)i)); i--)
        ;
      break;
    }
    if (rust_start(f) || (in_routine && rust_runtime(f))) {
      in_routine = true;
      continue;
    }
    /* Past libstdc++'s routine, with no _M_run: _M_run called this one
     * as its last act (a tail call), leaving no frame. */
    if (cxx) break;
    if (san && !in_routine) { /* the program's own start routine */
      *settled = true;
      return i;
    }
    return -1; /* cut short (its depth), or not this thread's start: no say */
  }
  /* The first stack past the routines settles it. With no frame inside
   * them (i < 0), the callable inlined in the routine made a call that
   * is traced. */
  *settled = true;
  if (i >= 0 && user_function(name(frames, (size_t)i), rust)) return i;
  /* Rust's v0 names give the routine's generic arguments: the closure
   * inlined into it is named there (__rust_begin_short_backtrace::<
   * app::main::{closure#0}, ()>). */
  if (marker >= 0 && strstr(name(frames, (size_t)marker), "::<")) return marker;
  return -1;
}
