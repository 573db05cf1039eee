/* Processes: fork, exec, and waiting for children.
 *
 * fork: libctrace's own atfork handler gives the child a clean, stopped
 * tracer (src/runtime/fork.c), and the shim's marks the child as not the
 * tracing process; the parent's trace goes on. The child then runs
 * untraced, or with -f (CTRACE_FOLLOW_FORKS) starts a trace of its own
 * (shim.c). fork is called with the guard held, so the handlers' own
 * locking is not traced. _Fork runs no atfork handlers: its wrapper resets
 * the child itself, and its child, which may only make async-signal-safe
 * calls, is never followed. vfork cannot be wrapped (the child borrows the
 * caller's stack frame); a vfork child that calls exec or _exit through us
 * is recognized by its pid and leaves the parent's trace alone.
 *
 * exec: the trace is finished first (it is complete in the file when the
 * new program starts), and the new program is traced in turn: each wrapper
 * execs with the environment ctrace__pl_exec_env builds (shim.c), which
 * also puts libasan first for an ASan program, and leaves a TSan one
 * untraced. If exec fails, the process goes on untraced (its trace is
 * complete), and a later exec is traced again. The execl family is rebuilt
 * on execve/execvpe, which take the environment.
 *
 * wait: tried with WNOHANG; a wait for a child that has not changed state
 * is a blocked system call (GoSysCall, GoSysBlock, GoSysExit). system()
 * waits for its child internally: it is shown as one blocked system call.
 */
#include <alloca.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"

void ctrace__fork_child(void) CTRACE__PL_HIDDEN; /* libctrace: src/runtime/fork.c */

CTRACE__PL_REAL(pid_t, fork, (void))
CTRACE__PL_REAL(pid_t, _Fork, (void))
CTRACE__PL_REAL(int, execve, (const char *, char *const[], char *const[]))
CTRACE__PL_REAL(int, execvpe, (const char *, char *const[], char *const[]))
CTRACE__PL_REAL(int, fexecve, (int, char *const[], char *const[]))
CTRACE__PL_REAL(int, execveat, (int, const char *, char *const[], char *const[], int))
CTRACE__PL_REAL(pid_t, waitpid, (pid_t, int *, int))
CTRACE__PL_REAL(pid_t, wait4, (pid_t, int *, int, struct rusage *))
CTRACE__PL_REAL(int, waitid, (idtype_t, id_t, siginfo_t *, int))
CTRACE__PL_REAL(int, system, (const char *))
CTRACE__PL_REAL(int, posix_spawn,
                (pid_t *, const char *, const posix_spawn_file_actions_t *,
                 const posix_spawnattr_t *, char *const[], char *const[]))
CTRACE__PL_REAL(int, posix_spawnp,
                (pid_t *, const char *, const posix_spawn_file_actions_t *,
                 const posix_spawnattr_t *, char *const[], char *const[]))

/* ---- fork ---------------------------------------------------------------------- */

CTRACE__PL_EXPORT pid_t fork(void) {
  if (ctrace__pl_off()) return real_fork()();
  CTRACE__PL_SYSCALL();
  pid_t pid;
  CTRACE__PL_CALL(pid = real_fork()());
  if (pid == 0) ctrace__pl_follow_fork();
  return pid;
}

CTRACE__PL_EXPORT pid_t _Fork(void) {
  pid_t pid = real__Fork()();
  if (pid == 0 && ctrace__pl_pid) {
    ctrace__fork_child();
    ctrace__pl_wake_fork_child();
    ctrace__pl_pid = 0;
  }
  return pid;
}

/* ---- exec ------------------------------------------------------------------------ */

#include "elfinfo.h"

extern char **environ;

/* The file an exec of path relative to dirfd runs, for its ELF facts. */
static void at_path(int dirfd, const char *path, int flags, char *out, size_t size) {
  if (path[0] == '/')
    snprintf(out, size, "%s", path);
  else if (!path[0] && (flags & AT_EMPTY_PATH))
    snprintf(out, size, "/proc/self/fd/%d", dirfd);
  else if (dirfd == AT_FDCWD)
    snprintf(out, size, "%s", path);
  else
    snprintf(out, size, "/proc/self/fd/%d/%s", dirfd, path);
}

CTRACE__PL_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  char **env = ctrace__pl_exec_env(path, envp);
  int r = real_execve()(path, argv, env);
  ctrace__pl_env_free(env, envp);
  return r;
}

CTRACE__PL_EXPORT int execv(const char *path, char *const argv[]) {
  return execve(path, argv, environ);
}

CTRACE__PL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  char prog[PATH_MAX];
  if (!ctrace__elf_find_program(file, prog, sizeof prog)) prog[0] = 0;
  char **env = ctrace__pl_exec_env(prog, envp);
  int r = real_execvpe()(file, argv, env);
  ctrace__pl_env_free(env, envp);
  return r;
}

CTRACE__PL_EXPORT int execvp(const char *file, char *const argv[]) {
  return execvpe(file, argv, environ);
}

CTRACE__PL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  char prog[64];
  snprintf(prog, sizeof prog, "/proc/self/fd/%d", fd);
  char **env = ctrace__pl_exec_env(prog, envp);
  int r = real_fexecve()(fd, argv, env);
  ctrace__pl_env_free(env, envp);
  return r;
}

CTRACE__PL_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
                               char *const envp[], int flags) {
  char prog[PATH_MAX];
  at_path(dirfd, path, flags, prog, sizeof prog);
  char **env = ctrace__pl_exec_env(prog, envp);
  int r = real_execveat()(dirfd, path, argv, env, flags);
  ctrace__pl_env_free(env, envp);
  return r;
}

/* argv of the execl family, collected on the stack (alloca: this frame is
 * left only by a failed exec). */
#define COLLECT_ARGS(arg0, ap, argv, extra)                   \
  va_list ap;                                                 \
  va_start(ap, arg0);                                         \
  size_t argc_ = 1;                                           \
  {                                                           \
    va_list cp;                                               \
    va_copy(cp, ap);                                          \
    while (va_arg(cp, char *)) argc_++;                       \
    va_end(cp);                                               \
  }                                                           \
  char **argv = alloca((argc_ + 1) * sizeof(char *));         \
  argv[0] = (char *)(arg0);                                   \
  for (size_t i_ = 1; i_ <= argc_; i_++) argv[i_] = va_arg(ap, char *); \
  extra;                                                      \
  va_end(ap)

CTRACE__PL_EXPORT int execl(const char *path, const char *arg0, ...) {
  COLLECT_ARGS(arg0, ap, argv, (void)0);
  return execv(path, argv);
}

CTRACE__PL_EXPORT int execlp(const char *file, const char *arg0, ...) {
  COLLECT_ARGS(arg0, ap, argv, (void)0);
  return execvp(file, argv);
}

CTRACE__PL_EXPORT int execle(const char *path, const char *arg0, ...) {
  char *const *envp;
  COLLECT_ARGS(arg0, ap, argv, envp = va_arg(ap, char *const *));
  return execve(path, argv, envp);
}

/* ---- posix_spawn ---------------------------------------------------------------------- */

/* Followed with -f as a fork is: the child, whose pid is not known before,
 * names its trace FILE.pid<PID> itself (CTRACE_SPAWNED, shim.c). */
CTRACE__PL_EXPORT int posix_spawn(pid_t *pid, const char *path,
                                  const posix_spawn_file_actions_t *actions,
                                  const posix_spawnattr_t *attr, char *const argv[],
                                  char *const envp[]) {
  char **env = ctrace__pl_spawn_env(path, envp);
  int r = real_posix_spawn()(pid, path, actions, attr, argv, env);
  ctrace__pl_env_free(env, envp);
  return r;
}

CTRACE__PL_EXPORT int posix_spawnp(pid_t *pid, const char *file,
                                   const posix_spawn_file_actions_t *actions,
                                   const posix_spawnattr_t *attr, char *const argv[],
                                   char *const envp[]) {
  char prog[PATH_MAX];
  if (!ctrace__elf_find_program(file, prog, sizeof prog)) prog[0] = 0;
  char **env = ctrace__pl_spawn_env(prog, envp);
  int r = real_posix_spawnp()(pid, file, actions, attr, argv, env);
  ctrace__pl_env_free(env, envp);
  return r;
}

/* ---- waiting for children ------------------------------------------------------------ */

CTRACE__PL_EXPORT pid_t waitpid(pid_t pid, int *status, int options) {
  if (ctrace__pl_off()) return real_waitpid()(pid, status, options);
  CTRACE__PL_SYSCALL();
  if (options & WNOHANG) return real_waitpid()(pid, status, options);
  pid_t r = real_waitpid()(pid, status, options | WNOHANG);
  if (r != 0) return r;
  ctrace__pl_wait_begin(CTRACE__PL_WAIT_SYS);
  r = real_waitpid()(pid, status, options);
  ctrace__pl_wait_end(CTRACE__PL_WAIT_SYS);
  return r;
}

CTRACE__PL_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru) {
  if (ctrace__pl_off()) return real_wait4()(pid, status, options, ru);
  CTRACE__PL_SYSCALL();
  if (options & WNOHANG) return real_wait4()(pid, status, options, ru);
  pid_t r = real_wait4()(pid, status, options | WNOHANG, ru);
  if (r != 0) return r;
  ctrace__pl_wait_begin(CTRACE__PL_WAIT_SYS);
  r = real_wait4()(pid, status, options, ru);
  ctrace__pl_wait_end(CTRACE__PL_WAIT_SYS);
  return r;
}

CTRACE__PL_EXPORT pid_t wait(int *status) { return waitpid(-1, status, 0); }

CTRACE__PL_EXPORT pid_t wait3(int *status, int options, struct rusage *ru) {
  return wait4(-1, status, options, ru);
}

/* waitid with WNOHANG reports "no child ready" as 0 with si_pid 0. */
CTRACE__PL_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options) {
  if (ctrace__pl_off()) return real_waitid()(type, id, info, options);
  CTRACE__PL_SYSCALL();
  if ((options & WNOHANG) || !info) return real_waitid()(type, id, info, options);
  info->si_pid = 0;
  int r = real_waitid()(type, id, info, options | WNOHANG);
  if (r != 0 || info->si_pid != 0) return r;
  ctrace__pl_wait_begin(CTRACE__PL_WAIT_SYS);
  r = real_waitid()(type, id, info, options);
  ctrace__pl_wait_end(CTRACE__PL_WAIT_SYS);
  return r;
}

CTRACE__PL_EXPORT int system(const char *cmd) {
  if (ctrace__pl_off() || !cmd) return real_system()(cmd);
  CTRACE__PL_SYSCALL();
  ctrace__pl_wait_begin(CTRACE__PL_WAIT_SYS);
  int r = real_system()(cmd);
  ctrace__pl_wait_end(CTRACE__PL_WAIT_SYS);
  return r;
}
