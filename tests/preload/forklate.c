/* A child forked long after its parent starts (run_timeline's case):
 * 300 ms, then the child lives 50 ms. */
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  usleep(300000);
  pid_t p = fork();
  if (p == 0) {
    usleep(50000);
    _exit(0);
  }
  waitpid(p, NULL, 0);
  return p < 0;
}
