/* retitle: a daemon's worker, as nginx and PostgreSQL make one.
 *
 *   run_retitle MS ARGS...
 *
 * Forks; the child writes "retitled: worker" over its arguments, NULs
 * after it (what /proc/PID/cmdline and ps then show), sleeps MS ms, 10 at
 * a time, or until SIGUSR1, then writes "retitled: worker ending" (as
 * nginx's worker says "is shutting down") and exits 0; the parent waits
 * for it. ARGS only make room for the titles: the arguments are one block
 * of memory, and the titles must fit in it. Exits 0 if the child did, 2
 * if the titles do not fit.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t told;

static void on_usr1(int sig) {
  (void)sig;
  told = 1;
}

/* title over the arguments, room bytes from argv[0]. */
static void retitle(char **argv, size_t room, const char *title) {
  memset(argv[0], 0, room);
  memcpy(argv[0], title, strlen(title));
}

int main(int argc, char **argv) {
  static const char worker[] = "retitled: worker", ending[] = "retitled: worker ending";
  if (argc < 2) return 2;
  int ms = atoi(argv[1]);
  char *end = argv[argc - 1] + strlen(argv[argc - 1]);
  size_t room = (size_t)(end - argv[0]);
  if (room < sizeof ending) return 2;
  signal(SIGUSR1, on_usr1);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    retitle(argv, room, worker);
    for (int i = 0; i < ms / 10 && !told; i++) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    retitle(argv, room, ending);
    return 0;
  }
  int st;
  while (waitpid(pid, &st, 0) != pid) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
