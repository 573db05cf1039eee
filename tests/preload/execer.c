/* execer: traced work, a failed exec, then an exec of itself.
 *
 *   run_execer               creates and joins 1 thread, tries to exec a
 *                            missing file (fails: goes on), then execs
 *                            itself as "run_execer again"
 *   run_execer again         creates and joins 3 threads, prints, exits 3
 *
 * Under `ctrace run -o FILE` the first image's trace is finished before the
 * first exec (2 goroutines: main and its one thread) and moves to FILE.1
 * when the second image starts tracing into FILE (4 goroutines). Output
 * from both images passes through; the exit status is the second image's.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void *work(void *arg) { return arg; }

static void threads(int n) {
  for (int i = 0; i < n; i++) {
    pthread_t th;
    if (pthread_create(&th, NULL, work, NULL) == 0) pthread_join(th, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "again") == 0) {
    threads(3);
    printf("execer: second image\n");
    return 3;
  }
  threads(1);
  printf("execer: first image\n");
  fflush(stdout);
  char *none[] = {"/nonexistent/program", NULL};
  execv(none[0], none);
  perror("execer: exec of a missing file failed as expected");
  execl("/proc/self/exe", argv[0], "again", (char *)NULL);
  perror("execer: exec");
  return 1;
}
