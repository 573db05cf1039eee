/* Who the traced process is, written into its own trace as it starts: a
 * log (category "ctrace.process") on the thread that starts the trace,
 *
 *   pid=N ppid=N host=NAME mono_ns=N real_ns=N exe=PATH cmdline=ARGS...
 *
 * Its time in the trace and the CLOCK_MONOTONIC and CLOCK_REALTIME read
 * just before it tie the trace's clock to the machine's: `ctrace export`
 * and `view` put several traces (a forked child's, a client's and a
 * server's) on one timeline by it, and name each process by its program
 * and pid (src/tools/tools.c). A log is what every Go's viewer shows and
 * every reader keeps; the formats have no field for either. cmdline comes
 * last: its arguments, joined by spaces, may hold anything. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctrace/ctrace.h"
#include "preload.h"

static unsigned long long clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* /proc/self/cmdline, its NULs as spaces, into out; "" if unreadable. */
static void cmdline(char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen("/proc/self/cmdline", "re");
  if (!f) return;
  size_t n = fread(out, 1, cap - 1, f);
  fclose(f);
  while (n && out[n - 1] == '\0') n--;
  for (size_t i = 0; i < n; i++)
    if (out[i] == '\0') out[i] = ' ';
  out[n] = '\0';
}

void ctrace__pl_note_process(void) {
  char host[256] = "", exe[1024] = "", args[1024], msg[2560];
  gethostname(host, sizeof host - 1);
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  cmdline(args, sizeof args);
  unsigned long long real = clock_ns(CLOCK_REALTIME), mono = clock_ns(CLOCK_MONOTONIC);
  snprintf(msg, sizeof msg, "pid=%d ppid=%d host=%s mono_ns=%llu real_ns=%llu exe=%s cmdline=%s", (int)getpid(),
           (int)getppid(), host, mono, real, exe, args);
  ctrace_log(0, "ctrace.process", msg);
}
