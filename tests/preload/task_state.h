/* What the kernel says a thread of this process is doing, from
 * /proc/self/task/TID. The tests wait on it rather than on time: a loaded
 * machine may stretch any delay, but a thread the kernel reports asleep in
 * a call is asleep in it. C and C++ (tests/preload/cxx20.cpp). */
#ifndef CTRACE_TESTS_RUN_TASK_STATE_H
#define CTRACE_TESTS_RUN_TASK_STATE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Reads /proc/self/task/TID/NAME into buf (NUL-terminated): its length,
 * or -1 if the thread is gone. */
static inline long task_read(pid_t tid, const char *name, char *buf, size_t cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return (long)n;
}

/* The thread's state letter ('S' while it sleeps in the kernel, 'R'
 * running...), or '?' once it is gone. */
static inline char task_state(pid_t tid) {
  char buf[512];
  if (task_read(tid, "stat", buf, sizeof buf) <= 0) return '?';
  const char *p = strrchr(buf, ')'); /* its name may hold spaces and parentheses */
  return p && p[1] == ' ' ? p[2] : '?';
}

/* The system call the thread is in (the first field of its syscall
 * file), or -1 while it runs ("running") or once it is gone. */
static inline long task_syscall(pid_t tid) {
  char buf[256];
  if (task_read(tid, "syscall", buf, sizeof buf) <= 0 || buf[0] < '0' || buf[0] > '9') return -1;
  return strtol(buf, NULL, 10);
}

/* Whether the thread sleeps in system call nr. */
static inline int task_asleep_in(pid_t tid, long nr) { return task_state(tid) == 'S' && task_syscall(tid) == nr; }

#endif
