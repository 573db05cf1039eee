// cxx20.cpp - C++20's waits, which libstdc++ makes on futexes through
// libc's syscall() (src/preload/futex.c): std::atomic::wait/notify_one, std::latch,
// std::counting_semaphore.
//
// Usage: run_cxx20 ROUNDS | pingpong ROUNDS
//
// pingpong (bench/bench_run.sh): two threads hand a turn back and forth
// ROUNDS times with std::atomic wait and notify_one; prints
// "cxx20-pingpong rounds=N ns=T cpu_ns=C".
//
// Three threads pass a token round ROUNDS times with atomic wait and
// notify_all. libstdc++ spins and yields before its futex wait, and a
// yield on a loaded machine can outlast any fixed hold: so the holder
// keeps the token until the kernel says both others sleep in a futex wait
// (asleep_in_futex), and every round has two waits, each ended by the
// holder's notify. Main waits at a latch from the start (the first holder
// begins once main sleeps there) until the last of the three arrives past
// the ring; then main releases a semaphore the three take. Prints what it
// did.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <latch>
#include <semaphore>
#include <thread>
#include <vector>

#include "task_state.h"

static constexpr int kThreads = 3;
static std::atomic<int> turn{0};
static int rounds;
static std::atomic<pid_t> tids[kThreads];
static pid_t main_tid;

// Whether thread tid sleeps in a futex wait or has ended.
static bool asleep_in_futex(pid_t tid) {
  char state = task_state(tid);
  return state == '?' || (state == 'S' && task_syscall(tid) == SYS_futex);
}

// Waits (ten seconds at most: a hang would hide what went wrong) until
// thread tid sleeps in a futex wait or has ended.
static void await_asleep(pid_t tid) {
  for (int tries = 0; tries < 100000 && !asleep_in_futex(tid); tries++)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// Until every thread of the ring but me sleeps in a futex wait, on the
// token or at the latch past the ring's end.
static void others_asleep(int me) {
  for (int i = 0; i < kThreads; i++)
    if (i != me) await_asleep(tids[i].load());
}

static long long clock_ns(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int pingpong(int n) {
  std::atomic<int> t{0};
  long long t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  std::thread other([&] {
    for (int i = 0; i < n; i++) {
      t.wait(0);
      t.store(0);
      t.notify_one();
    }
  });
  for (int i = 0; i < n; i++) {
    t.store(1);
    t.notify_one();
    t.wait(1);
  }
  other.join();
  long long t1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  std::printf("cxx20-pingpong rounds=%d ns=%lld cpu_ns=%lld\n", n, t1 - t0, c1 - c0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "pingpong" && std::atoi(argv[2]) > 0)
    return pingpong(std::atoi(argv[2]));
  if (argc != 2 || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: %s ROUNDS\n", argv[0]);
    return 2;
  }
  rounds = std::atoi(argv[1]);
  main_tid = gettid();
  std::latch ready(kThreads + 1);
  std::counting_semaphore<kThreads> sem(0);
  std::atomic<int> taken{0};
  std::vector<std::thread> ts;
  for (int me = 0; me < kThreads; me++)
    ts.emplace_back([me, &ready, &sem, &taken] {
      tids[me] = gettid();
      tids[me].notify_all();
      for (int i = 0; i < kThreads; i++) tids[i].wait(0);
      if (me == 0) await_asleep(main_tid);
      for (int r = 0; r < rounds; r++) {
        for (int t = turn.load(); t != me; t = turn.load()) turn.wait(t);
        others_asleep(me);
        turn.store((me + 1) % kThreads);
        turn.notify_all();
      }
      ready.arrive_and_wait();
      sem.acquire();
      taken++;
    });
  ready.arrive_and_wait();
  // The three are at the semaphore (or on their way) when main releases it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  sem.release(kThreads);
  for (auto &t : ts) t.join();
  std::printf("cxx20: %d rounds, latch passed, %d took the semaphore\n", rounds, taken.load());
  return 0;
}
