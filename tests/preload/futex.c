/* futex.c - threads that wait on futexes of their own, through libc's
 * syscall() as Rust's std and libstdc++ do (src/preload/futex.c).
 *
 * Usage: run_futex ring ROUNDS | waitv
 *
 * ring: three threads pass a token round ROUNDS times: each waits
 *   (FUTEX_WAIT_BITSET, private; on odd rounds FUTEX_WAIT with a timeout) until its
 *   word is 1, clears it, sets the next thread's and wakes it
 *   (FUTEX_WAKE_PRIVATE, or FUTEX_WAKE_BITSET). Prints "slept N": the waits
 *   that slept and were woken (the call returned 0). Each was linked
 *   before its call, and its waker's wake came after the call slept, so
 *   each is a GoBlockSync ended by the waker's GoUnblock; a wait whose
 *   word had changed (EAGAIN) may be none.
 * waitv: a thread waits with futex_waitv on two words, main sets and wakes
 *   the first; prints "waitv ended" (woken, or the word was set first), or
 *   "waitv unsupported" where the kernel lacks it.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 3

static _Atomic uint32_t word[THREADS];
static int rounds;
static _Atomic int slept;

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *t, uint32_t bits) {
  return syscall(SYS_futex, w, op, val, t, NULL, bits);
}

static void *ring(void *arg) {
  int me = (int)(intptr_t)arg;
  for (int r = 0; r < rounds; r++) {
    while (atomic_load(&word[me]) == 0) {
      struct timespec t = {5, 0}; /* relative, for FUTEX_WAIT */
      long rc = r % 2 ? futex(&word[me], FUTEX_WAIT_PRIVATE, 0, &t, 0)
                      : futex(&word[me], FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, FUTEX_BITSET_MATCH_ANY);
      if (rc == 0 && atomic_load(&word[me]) == 1) atomic_fetch_add(&slept, 1);
    }
    atomic_store(&word[me], 0);
    int next = (me + 1) % THREADS;
    atomic_store(&word[next], 1);
    futex(&word[next], r % 2 ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE_BITSET_PRIVATE, 1, NULL,
          FUTEX_BITSET_MATCH_ANY);
  }
  return NULL;
}

struct waitv_entry {
  uint64_t val, uaddr;
  uint32_t flags, reserved;
};

static _Atomic uint32_t wv[2];

static void *waiter(void *arg) {
  (void)arg;
  struct waitv_entry e[2];
  memset(e, 0, sizeof e);
  for (int i = 0; i < 2; i++) {
    e[i].uaddr = (uint64_t)(uintptr_t)&wv[i];
    e[i].flags = 2 | 128; /* FUTEX2_SIZE_U32 | FUTEX2_PRIVATE */
  }
  long r = syscall(449 /* SYS_futex_waitv */, e, 2, 0, NULL, 0);
  printf("waitv %s\n", r == 0 || errno == EAGAIN ? "ended" : errno == ENOSYS ? "unsupported" : "failed");
  return NULL;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "ring") == 0) {
    rounds = argc > 2 ? atoi(argv[2]) : 300;
    pthread_t t[THREADS];
    atomic_store(&word[0], 1);
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, ring, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    /* stdout is compared with the untraced run's; how many waits slept
     * is not the same twice. */
    printf("ring %d rounds\n", rounds);
    fprintf(stderr, "slept %d\n", atomic_load(&slept));
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "waitv") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL); /* in its wait by then, or the wait finds 1 */
    atomic_store(&wv[0], 1);
    futex(&wv[0], FUTEX_WAKE_PRIVATE, 1, NULL, 0);
    pthread_join(t, NULL);
    return 0;
  }
  fprintf(stderr, "usage: %s ring ROUNDS | waitv\n", argv[0]);
  return 2;
}
