/* names: threads named every way a program names them, for names_check.sh.
 *
 *   pre-start  named before the trace began (a library constructor's
 *              thread, names_pre.c), seen at its first traced call
 *   worker-a   pthread_setname_np of itself
 *   worker-p   prctl(PR_SET_NAME)
 *   worker-c   a write to /proc/thread-self/comm
 *   worker-o   pthread_setname_np by main, of another thread
 *   worker-t   a write by main to /proc/self/task/TID/comm
 *   rename-1, then rename-2: a rename while it runs
 *   (unnamed)  a thread that keeps the name it inherited
 *   main       keeps the process's name: unnamed in the trace
 *
 * Each named thread sleeps a little once named, so that it shows its name
 * at a start of its own, then ends once main waits for it. Threads run one
 * after the other.
 * Prints "names ok" when every rename succeeded.
 *
 * "names late": one thread, "worker-l", named by main while it waits,
 * waits until the process exits: no start of its own shows the name, the
 * log main writes as it names it does.
 *
 * "names spin MS": one thread, "spinner", names itself and then writes
 * to /dev/null for MS ms without ever waiting: a flight recorder's
 * snapshot of its last part holds no start of it, and names it all the
 * same (a label in each generation). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int names_pre_join(void);

static int failures;

/* Whether thread tid sleeps in system call sysno (/proc: its state, then
 * its call), as run_futex's rings tell. */
static int asleep_in(pid_t tid, long sysno) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f) return 1; /* gone */
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the name may hold anything */
  if (!p || strncmp(p, ") S", 3) != 0) return 0;
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  long nr = -1;
  if (!(f = fopen(path, "r"))) return 1;
  if (fscanf(f, "%ld", &nr) != 1) nr = -1;
  fclose(f);
  return nr == sysno;
}

/* Waits until tid sleeps in sysno (10 s at most: a hang would hide what
 * went wrong), so that the wait the test looks for is certain. */
static void wait_asleep(pid_t tid, long sysno) {
  for (int i = 0; i < 100000 && !asleep_in(tid, sysno); i++) usleep(100);
}

/* A named thread sleeps a little (a start of its own, after the name),
 * and ends once main waits for it in pthread_join (a futex): main's wait
 * is ended by this thread, whose name ctrace stats gives the waker. */
static void nap(void) {
  usleep(2000);
  wait_asleep(getpid(), SYS_futex);
}

static void comm_write(const char *path, const char *name) {
  int fd = open(path, O_WRONLY);
  if (fd < 0 || write(fd, name, strlen(name)) != (ssize_t)strlen(name)) failures++;
  if (fd >= 0) close(fd);
}

static void *self_setname(void *arg) {
  (void)arg;
  if (pthread_setname_np(pthread_self(), "worker-a") != 0) failures++;
  nap();
  return NULL;
}

static void *self_prctl(void *arg) {
  (void)arg;
  if (prctl(PR_SET_NAME, "worker-p", 0, 0, 0) != 0) failures++;
  nap();
  return NULL;
}

static void *self_comm(void *arg) {
  (void)arg;
  comm_write("/proc/thread-self/comm", "worker-c");
  nap();
  return NULL;
}

static void *renamer(void *arg) {
  (void)arg;
  if (pthread_setname_np(pthread_self(), "rename-1") != 0) failures++;
  nap();
  if (pthread_setname_np(pthread_self(), "rename-2") != 0) failures++;
  return NULL;
}

static void *unnamed(void *arg) {
  (void)arg;
  nap();
  return NULL;
}

/* Named by main: it says it is there (a traced call, so that the tracer
 * knows it), waits until main has named it, then sleeps. */
static int ready[2], named[2];

static void *by_other(void *arg) {
  pid_t *tid = arg;
  *tid = gettid();
  char c = 1;
  if (write(ready[1], &c, 1) != 1 || read(named[0], &c, 1) != 1) failures++;
  nap();
  return NULL;
}

static void run(void *(*fn)(void *)) {
  pthread_t th;
  if (pthread_create(&th, NULL, fn, NULL) != 0 || pthread_join(th, NULL) != 0) failures++;
}

static void run_named_by_main(int how) {
  pthread_t th;
  pid_t tid = 0;
  char c;
  if (pipe(ready) != 0 || pipe(named) != 0) exit(1);
  if (pthread_create(&th, NULL, by_other, &tid) != 0) exit(1);
  if (read(ready[0], &c, 1) != 1) failures++;
  wait_asleep(tid, SYS_read); /* in its read of named: main's write ends it */
  if (how == 0) {
    if (pthread_setname_np(th, "worker-o") != 0) failures++;
  } else {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    comm_write(path, "worker-t");
  }
  if (write(named[1], &c, 1) != 1) failures++;
  if (pthread_join(th, NULL) != 0) failures++;
  for (int i = 0; i < 2; i++) {
    close(ready[i]);
    close(named[i]);
  }
}

static long spin_ms;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *spinner(void *arg) {
  (void)arg;
  if (pthread_setname_np(pthread_self(), "spinner") != 0) failures++;
  int fd = open("/dev/null", O_WRONLY);
  if (fd < 0) exit(1);
  /* A write every 50 us: events in every generation, few of them. */
  for (double t0 = now_ms(), next = t0; now_ms() - t0 < (double)spin_ms;) {
    while (now_ms() < next) {
    }
    next += 0.05;
    if (write(fd, "x", 1) != 1) failures++;
  }
  close(fd);
  return NULL;
}

/* Waits in its read for good: main exits meanwhile. */
static void *waits_forever(void *arg) {
  pid_t *tid = arg;
  *tid = gettid();
  char c = 1;
  if (write(ready[1], &c, 1) != 1) failures++;
  if (read(named[0], &c, 1) >= 0) failures++;
  return NULL;
}

static void run_late(void) {
  pthread_t th;
  pid_t tid = 0;
  char c;
  if (pipe(ready) != 0 || pipe(named) != 0) exit(1);
  if (pthread_create(&th, NULL, waits_forever, &tid) != 0) exit(1);
  if (read(ready[0], &c, 1) != 1) failures++;
  wait_asleep(tid, SYS_read);
  if (pthread_setname_np(th, "worker-l") != 0) failures++;
}

int main(int argc, char **argv) {
  if (names_pre_join() != 0) failures++;
  if (argc == 2 && strcmp(argv[1], "late") == 0) {
    run_late();
    printf(failures ? "names: late failed\n" : "names ok\n");
    return failures != 0;
  }
  if (argc == 3 && strcmp(argv[1], "spin") == 0) {
    spin_ms = atol(argv[2]);
    run(spinner);
    printf(failures ? "names: spin failed\n" : "names ok\n");
    return failures != 0;
  }
  run(self_setname);
  run(self_prctl);
  run(self_comm);
  run(renamer);
  run(unnamed);
  run_named_by_main(0);
  run_named_by_main(1);
  if (failures) {
    printf("names: %d failures\n", failures);
    return 1;
  }
  printf("names ok\n");
  return 0;
}
