/* retitle: a daemon's worker, as nginx and PostgreSQL make one.
 *
 *   run_retitle MS ARGS...
 *
 * Forks; the child writes "retitled: worker" over its arguments, NULs
 * after it (what /proc/PID/cmdline and ps then show), and sleeps MS ms,
 * 10 at a time; the parent waits for it. ARGS only make room for the
 * title: the arguments are one block of memory, and the title must fit in
 * it. Exits 0 if the child did, 2 if the title does not fit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  static const char title[] = "retitled: worker";
  if (argc < 2) return 2;
  int ms = atoi(argv[1]);
  char *end = argv[argc - 1] + strlen(argv[argc - 1]);
  size_t room = (size_t)(end - argv[0]);
  if (room < sizeof title) return 2;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    memset(argv[0], 0, room);
    memcpy(argv[0], title, sizeof title);
    for (int i = 0; i < ms / 10; i++) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    return 0;
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) return 1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
