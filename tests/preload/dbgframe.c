/* Built -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables
 * -fno-unwind-tables -g (tests/preload/CMakeLists.txt), with its library
 * dbgframe_lib.c built the same way: neither has .eh_frame for these
 * functions (the library has no .eh_frame_hdr at all), only .debug_frame,
 * which is not mapped. A thread waits on a condition variable through
 * t1 .. t3, the library (lib_entry, lib_inner) and a callback c1, c2;
 * main waits in pthread_join through m1 .. m3. Under `ctrace run` the
 * stacks of both waits must equal gdb's backtraces at the same calls, pc
 * for pc (tests/preload/dbgframe_check.sh). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

int lib_entry(int (*cb)(int), int x);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;
static volatile int sink;

#define NOINLINE __attribute__((noinline))

static NOINLINE int wait_here(void) {
  pthread_mutex_lock(&mu);
  while (!ready) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return sink;
}

/* Work after each call keeps it from being a tail call; locals give each
 * frame a shape of its own. */
#define LEVEL(name, next)            \
  static NOINLINE int name(int x) {  \
    int a = x * 3 + sink, r;         \
    r = next(a);                     \
    sink = a;                        \
    return r + a;                    \
  }

static NOINLINE int c2(int x) { return wait_here() + x * sink; }
LEVEL(c1, c2)

static NOINLINE int t3(int x) {
  int a = x * 5 + sink, r = lib_entry(c1, a);
  sink = a;
  return r + a;
}
LEVEL(t2, t3)
LEVEL(t1, t2)

static void *thread_start(void *arg) {
  sink = t1((int)(long)arg);
  return NULL;
}

static pthread_t th;
static NOINLINE int m3(int x) {
  pthread_join(th, NULL);
  return x + sink;
}
LEVEL(m2, m3)
LEVEL(m1, m2)

static void *waker(void *arg) {
  (void)arg;
  usleep(50000);
  pthread_mutex_lock(&mu);
  ready = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(void) {
  pthread_t w;
  pthread_create(&th, NULL, thread_start, (void *)1L);
  pthread_create(&w, NULL, waker, NULL);
  int r = m1(2);
  pthread_join(w, NULL);
  printf("dbgframe done\n");
  return r == 12345678;
}
