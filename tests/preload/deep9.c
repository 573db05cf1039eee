/* Built -O2 -fomit-frame-pointer (tests/preload/CMakeLists.txt), like most of
 * what `ctrace run` meets: a thread waits on a condition variable nine
 * calls below its start routine, and main waits in pthread_join nine calls
 * below main. The trace's stacks of both waits must reach thread_start and
 * main (tests/preload/unwind_check.sh), which a frame-pointer walk cannot. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

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

/* Work after each call keeps it from being a tail call; locals give
 * each frame a shape of its own. */
#define LEVEL(name, next)            \
  static NOINLINE int name(int x) {  \
    int a = x * 3 + sink, r;         \
    r = next(a);                     \
    sink = a;                        \
    return r + a;                    \
  }

static NOINLINE int t9(int x) { return wait_here() + x * sink; }
LEVEL(t8, t9)
LEVEL(t7, t8)
LEVEL(t6, t7)
LEVEL(t5, t6)
LEVEL(t4, t5)
LEVEL(t3, t4)
LEVEL(t2, t3)
LEVEL(t1, t2)

static void *thread_start(void *arg) {
  sink = t1((int)(long)arg);
  return NULL;
}

static pthread_t th;
static NOINLINE int m9(int x) {
  /* Wake the thread a little later, from another thread, so that main
   * blocks in the join first. */
  pthread_join(th, NULL);
  return x + sink;
}
LEVEL(m8, m9)
LEVEL(m7, m8)
LEVEL(m6, m7)
LEVEL(m5, m6)
LEVEL(m4, m5)
LEVEL(m3, m4)
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
  printf("deep9 done\n");
  return r == 12345678;
}
