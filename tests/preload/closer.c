/* closer MODE DATAFILE: does to descriptors what daemons do, then writes
 * its own data while threads come and go. Under `ctrace run` its data file
 * and output must come out byte for byte as without, and the trace must
 * hold what it did after the descriptors were taken.
 *
 * MODE:
 *   loop         close(fd) for every fd from 3 to 1023, then open DATAFILE
 *   close_range  close_range(3, ~0U, 0)
 *   closefrom    closefrom(3)
 *   dup2         open DATAFILE, then dup2 it onto every number from 3 to 63
 *                (whatever the tracer held there is replaced), write through
 *                them all, close them
 *   proc         close what /proc/self/fd lists from 3 up
 *   daemon       fork, setsid, fork again; the grandchild (the daemon)
 *                closes every descriptor, 0 to 2 included, reopens them on
 *                /dev/null and does the work; the first prints its pid
 *   list         exec itself as "listed": prints every descriptor from 3 up
 *                that /proc/self/fd lists (none when nothing leaked)
 *
 * The work: 10 threads, one after the other, each writing 20 lines with
 * write(2) and sleeping once. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 10
#define LINES 20

static int data_fd = -1;

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void *worker(void *arg) {
  long t = (long)arg;
  struct timespec d = {0, 1000000};
  nanosleep(&d, NULL);
  for (int i = 0; i < LINES; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "thread %ld line %d\n", t, i);
    if (write(data_fd, line, (size_t)n) != n) die("write");
  }
  return NULL;
}

static void work(void) {
  for (long t = 0; t < THREADS; t++) {
    pthread_t th;
    if (pthread_create(&th, NULL, worker, (void *)t) != 0) die("pthread_create");
    pthread_join(th, NULL);
  }
}

static void open_data(const char *path) {
  data_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (data_fd < 0) die(path);
}

static void close_listed(void) {
  int fds[4096], n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) die("/proc/self/fd");
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd >= 3 && fd != dirfd(d) && n < 4096) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) close(fds[i]);
}

static void list_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) die("/proc/self/fd");
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd < 3 || fd == dirfd(d)) continue;
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    printf("fd %d %s\n", fd, target);
  }
  closedir(d);
}

static void daemonize(const char *path) {
  int p[2];
  if (pipe(p) != 0) die("pipe");
  pid_t c = fork();
  if (c < 0) die("fork");
  if (c > 0) {
    close(p[1]);
    int pid;
    if (read(p[0], &pid, sizeof pid) != sizeof pid) die("read");
    int st;
    waitpid(c, &st, 0);
    printf("closer: daemon started\n");
    fprintf(stderr, "closer: daemon pid %d\n", pid); /* for the test; varies */
    return;
  }
  setsid();
  pid_t g = fork();
  if (g < 0) _exit(1);
  if (g > 0) _exit(0);
  int pid = getpid();
  if (write(p[1], &pid, sizeof pid) != sizeof pid) _exit(1);
  for (int fd = 0; fd < 1024; fd++) close(fd);
  int nul = open("/dev/null", O_RDWR);
  if (nul != 0 || dup(0) != 1 || dup(0) != 2) _exit(1);
  open_data(path);
  work();
  exit(0);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "listed") == 0) {
    list_fds();
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: closer MODE DATAFILE\n");
    return 2;
  }
  const char *mode = argv[1], *path = argv[2];
  if (strcmp(mode, "loop") == 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
  } else if (strcmp(mode, "close_range") == 0) {
    if (close_range(3, ~0U, 0) != 0) die("close_range");
  } else if (strcmp(mode, "closefrom") == 0) {
    closefrom(3);
  } else if (strcmp(mode, "proc") == 0) {
    close_listed();
  } else if (strcmp(mode, "dup2") == 0) {
    open_data(path);
    int fd = data_fd;
    for (int n = 3; n < 64; n++)
      if (n != fd && dup2(fd, n) != n) die("dup2");
    /* Each number writes a line: all of them are the program's file now. */
    for (int n = 3; n < 64; n++) {
      char line[32];
      int k = snprintf(line, sizeof line, "via fd %d\n", n);
      if (write(n, line, (size_t)k) != k) die("write");
    }
    work();
    for (int n = 3; n < 64; n++)
      if (n != fd) close(n);
    printf("closer %s lines=%d\n", mode, THREADS * LINES + 61);
    return 0;
  } else if (strcmp(mode, "daemon") == 0) {
    daemonize(path);
    return 0;
  } else if (strcmp(mode, "list") == 0) {
    execl("/proc/self/exe", argv[0], "listed", (char *)NULL);
    die("execl");
  } else {
    fprintf(stderr, "closer: unknown mode %s\n", mode);
    return 2;
  }
  open_data(path);
  work();
  printf("closer %s lines=%d\n", mode, THREADS * LINES);
  return 0;
}
