/* openmp.c - OpenMP's waits in GCC's libgomp (src/preload/openmp.c).
 *
 * Usage: run_openmp ROUNDS
 *
 * A team of four threads, ROUNDS times: each takes a critical section
 * (held a millisecond by whoever has it, so the others wait), a named
 * one, an OpenMP lock, and meets the others at a barrier; a worksharing
 * loop whose iterations take thread 0 four times as long ends at its
 * implied barrier; thread 0 is slowest to finish the region's body, except
 * in a second region where it finishes first and waits for the others
 * at the region's end. Prints the sums, the same whatever the timing.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void pause_us(long us) {
  struct timespec t = {0, us * 1000};
  nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
  int rounds = argc == 2 ? atoi(argv[1]) : 0;
  if (rounds <= 0) {
    fprintf(stderr, "usage: %s ROUNDS\n", argv[0]);
    return 2;
  }
  long critical = 0, named = 0, locked = 0, looped = 0;
  omp_lock_t lock;
  omp_init_lock(&lock);
#pragma omp parallel num_threads(4)
  {
    for (int r = 0; r < rounds; r++) {
#pragma omp critical
      {
        critical++;
        pause_us(1000);
      }
#pragma omp critical(other)
      named++;
      omp_set_lock(&lock);
      locked++;
      pause_us(200);
      omp_unset_lock(&lock);
#pragma omp barrier
    }
#pragma omp for schedule(static, 1) reduction(+ : looped)
    for (int i = 0; i < 8; i++) {
      pause_us(omp_get_thread_num() == 0 ? 4000 : 1000);
      looped += i;
    }
  }
#pragma omp parallel num_threads(4)
  {
    if (omp_get_thread_num() != 0) pause_us(20000);
  }
  omp_destroy_lock(&lock);
  printf("openmp: critical %ld named %ld locked %ld looped %ld\n", critical, named, locked, looped);
  return 0;
}
