// cxx_spawn.cpp - std::thread running named functions of the program's,
// for their start functions in ctrace's outputs
// (tests/preload/funcnames_check.sh).
//
// Usage: run_cxx_spawn
//
// fetcher is given to std::thread as a function pointer, indexer through
// a lambda; each sleeps a millisecond, a wait with its own stack. Both
// are kept out of line: a function the compiler inlined into libstdc++'s
// _M_run has no frame of its own to name it by.
#include <chrono>
#include <cstdio>
#include <thread>

__attribute__((noinline)) void fetcher(int n) {
  std::this_thread::sleep_for(std::chrono::milliseconds(n));
}

namespace shop {
__attribute__((noinline)) void indexer() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
} // namespace shop

int main() {
  std::thread a(fetcher, 1);
  std::thread b([] { shop::indexer(); });
  a.join();
  b.join();
  std::puts("cxx_spawn: done");
  return 0;
}
