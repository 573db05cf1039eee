/* timed [MODE]: the timed waits, given times and clocks glibc takes and
 * times and clocks it refuses, on objects free and held; one line per
 * call: its result, errno, and what it left (the lock taken or not, the
 * semaphore's value, the thread joined or not). tests/preload/run_check.sh
 * (case timed) compares the lines traced with the untraced ones: the
 * shim tries a lock before the real call, and a try made before glibc
 * looks at the time takes the lock where glibc refuses it, and one made
 * before glibc acts on a pending cancellation takes a semaphore's unit
 * (issue 31).
 *
 *   (none)     every call below, each on a new object:
 *              pthread_mutex_timedlock, _clocklock and mtx_timedlock on
 *              seven kinds of mutex, free, held by another thread, held by
 *              the caller; the rwlock's timed and clock rd/wr locks on
 *              two kinds, free, read- or write-held by another thread or
 *              the caller; sem_timedwait and sem_clockwait at values 1
 *              and 0; pthread_timedjoin_np and _clockjoin_np of a thread
 *              that has ended and of one that runs; the condition
 *              variables' timed waits and cnd_timedwait; nanosleep,
 *              clock_nanosleep and thrd_sleep; then a thread whose
 *              cancellation is pending calls the semaphores' waits and the
 *              joins of an ended thread (ret=-100: cancelled)
 *   sem_null   sem_timedwait(s, NULL) on a semaphore of value 1: glibc
 *              reads the time first (SIGSEGV), traced too
 *   cond_null  pthread_cond_timedwait(c, m, NULL): the same
 *
 * Times: tv_nsec of 1e9 or -1 (glibc refuses them, but not in every call
 * nor before every try), a tv_sec of -1, long past; clocks: the two glibc's
 * futexes take, and three others. No call waits long: every valid time is
 * in the past, and the one wait glibc makes with a refused time (a join,
 * until the thread ends) ends within 20 ms.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

typedef struct named_time {
  const char *name;
  struct timespec t;
  bool null;
} named_time;

/* Absolute times. NULL is a wait without end where glibc takes it: only
 * on a free object. */
static const named_time times[] = {
    {"past", {1, 0}, false},       {"nsec=1e9", {1, 1000000000}, false},
    {"nsec=-1", {1, -1}, false},   {"sec=-1", {-1, 0}, false},
    {"null", {0, 0}, true},
};
#define NTIMES (sizeof times / sizeof times[0])

static const struct {
  const char *name;
  clockid_t id;
} clocks[] = {
    {"REALTIME", CLOCK_REALTIME},
    {"MONOTONIC", CLOCK_MONOTONIC},
    {"BOOTTIME", CLOCK_BOOTTIME},
    {"PROCESS_CPUTIME", CLOCK_PROCESS_CPUTIME_ID},
    {"99", 99},
};
#define NCLOCKS (sizeof clocks / sizeof clocks[0])

/* NULL through a volatile: the functions are declared nonnull, and the
 * compiler must not reason from that about the calls this program makes. */
static const struct timespec *volatile no_time;

static const struct timespec *tp(const named_time *t) { return t->null ? no_time : &t->t; }

/* A time glibc's wait would not end at: tv_nsec out of range. */
static bool refused(const named_time *t) {
  return !t->null && (t->t.tv_nsec < 0 || t->t.tv_nsec >= 1000000000);
}

static void report(const char *what, int r, int err, const char *after) {
  const char *e = err ? strerrorname_np(err) : "0";
  printf("%s: ret=%d errno=%s%s%s\n", what, r, e ? e : "?", after[0] ? " " : "", after);
}

/* ---- another thread holds the object, or tries it --------------------------- */

typedef int (*op_fn)(void *);

typedef struct holder {
  pthread_t th;
  op_fn lock, unlock;
  void *obj;
  sem_t held, release;
} holder;

static void *hold_main(void *p) {
  holder *h = p;
  h->lock(h->obj);
  sem_post(&h->held);
  sem_wait(&h->release);
  h->unlock(h->obj);
  return NULL;
}

static void hold(holder *h, op_fn lock, op_fn unlock, void *obj) {
  h->lock = lock;
  h->unlock = unlock;
  h->obj = obj;
  sem_init(&h->held, 0, 0);
  sem_init(&h->release, 0, 0);
  pthread_create(&h->th, NULL, hold_main, h);
  sem_wait(&h->held);
}

static void unhold(holder *h) {
  sem_post(&h->release);
  pthread_join(h->th, NULL);
  sem_destroy(&h->held);
  sem_destroy(&h->release);
}

typedef struct probe {
  op_fn try, unlock;
  void *obj;
  int r;
} probe;

static void *probe_main(void *p) {
  probe *q = p;
  q->r = q->try(q->obj);
  if (q->r == 0) q->unlock(q->obj);
  return NULL;
}

/* Whether another thread finds obj held ("held") or takes it ("free"). */
static const char *probe_held(op_fn try, op_fn unlock, void *obj) {
  probe q = {try, unlock, obj, -1};
  pthread_t th;
  pthread_create(&th, NULL, probe_main, &q);
  pthread_join(th, NULL);
  return q.r == 0 ? "free" : q.r == EBUSY ? "held" : "?";
}

/* ---- mutexes ------------------------------------------------------------------ */

static int m_lock(void *m) { return pthread_mutex_lock(m); }
static int m_trylock(void *m) { return pthread_mutex_trylock(m); }
static int m_unlock(void *m) { return pthread_mutex_unlock(m); }

static const struct {
  const char *name;
  int type, robust, protocol;
} mkinds[] = {
    {"normal", PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE},
    {"recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE},
    {"errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE},
    {"adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE},
    {"robust", PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ROBUST, PTHREAD_PRIO_NONE},
    {"pi", PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_INHERIT},
    {"pi-recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_INHERIT},
};

enum { FREE, OTHER, OWN };
static const char *const states[] = {"free", "other", "own"};

typedef int (*mcall_fn)(pthread_mutex_t *, clockid_t, const struct timespec *);
static int m_timedlock(pthread_mutex_t *m, clockid_t c, const struct timespec *t) {
  (void)c;
  return pthread_mutex_timedlock(m, t);
}
static int m_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *t) {
  return pthread_mutex_clocklock(m, c, t);
}
/* glibc's mtx_t is its pthread_mutex_t. */
static int m_mtx_timedlock(pthread_mutex_t *m, clockid_t c, const struct timespec *t) {
  (void)c;
  return mtx_timedlock((mtx_t *)m, t);
}

static void mutex_case(const char *call, mcall_fn fn, int kind, int state, const named_time *t,
                       int clk) {
  if (t->null && state != FREE) return;
  pthread_mutexattr_t a;
  pthread_mutex_t m;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, mkinds[kind].type);
  pthread_mutexattr_setrobust(&a, mkinds[kind].robust);
  pthread_mutexattr_setprotocol(&a, mkinds[kind].protocol);
  pthread_mutex_init(&m, &a);
  pthread_mutexattr_destroy(&a);
  holder h;
  if (state == OTHER) hold(&h, m_lock, m_unlock, &m);
  if (state == OWN) pthread_mutex_lock(&m);
  errno = 0;
  int r = fn(&m, clk >= 0 ? clocks[clk].id : CLOCK_REALTIME, tp(t));
  int err = errno;
  char what[160], after[32] = "";
  snprintf(what, sizeof what, "%s %s %s %s%s%s", call, mkinds[kind].name, states[state], t->name,
           clk >= 0 ? " " : "", clk >= 0 ? clocks[clk].name : "");
  if (state == FREE) {
    snprintf(after, sizeof after, "after=%s", probe_held(m_trylock, m_unlock, &m));
    if (strcmp(after, "after=held") == 0) pthread_mutex_unlock(&m);
  } else if (state == OTHER) {
    unhold(&h);
  } else {
    /* A second hold is let go, then the first: the mutex must be free. */
    if (r == 0) pthread_mutex_unlock(&m);
    pthread_mutex_unlock(&m);
    snprintf(after, sizeof after, "after=%s", probe_held(m_trylock, m_unlock, &m));
  }
  report(what, r, err, after);
  pthread_mutex_destroy(&m);
}

static void mutexes(void) {
  for (size_t k = 0; k < sizeof mkinds / sizeof mkinds[0]; k++)
    for (int s = FREE; s <= OWN; s++)
      for (size_t i = 0; i < NTIMES; i++) {
        mutex_case("pthread_mutex_timedlock", m_timedlock, (int)k, s, &times[i], -1);
        mutex_case("mtx_timedlock", m_mtx_timedlock, (int)k, s, &times[i], -1);
        for (size_t c = 0; c < NCLOCKS; c++)
          mutex_case("pthread_mutex_clocklock", m_clocklock, (int)k, s, &times[i], (int)c);
      }
}

/* ---- read-write locks ---------------------------------------------------------- */

static int rw_rdlock(void *l) { return pthread_rwlock_rdlock(l); }
static int rw_wrlock(void *l) { return pthread_rwlock_wrlock(l); }
static int rw_trywrlock(void *l) { return pthread_rwlock_trywrlock(l); }
static int rw_unlock(void *l) { return pthread_rwlock_unlock(l); }

enum { RW_FREE, RW_OTHER_RD, RW_OTHER_WR, RW_OWN_RD, RW_OWN_WR };
static const char *const rw_states[] = {"free", "other-rd", "other-wr", "own-rd", "own-wr"};

typedef int (*rwcall_fn)(pthread_rwlock_t *, clockid_t, const struct timespec *);
static int rw_timedrdlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *t) {
  (void)c;
  return pthread_rwlock_timedrdlock(l, t);
}
static int rw_timedwrlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *t) {
  (void)c;
  return pthread_rwlock_timedwrlock(l, t);
}
static int rw_clockrdlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *t) {
  return pthread_rwlock_clockrdlock(l, c, t);
}
static int rw_clockwrlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *t) {
  return pthread_rwlock_clockwrlock(l, c, t);
}

static void rwlock_case(const char *call, rwcall_fn fn, int prefer_writer, int state,
                        const named_time *t, int clk) {
  if (t->null && state != RW_FREE) return;
  pthread_rwlockattr_t a;
  pthread_rwlock_t l;
  pthread_rwlockattr_init(&a);
  pthread_rwlockattr_setkind_np(&a, prefer_writer ? PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
                                                  : PTHREAD_RWLOCK_PREFER_READER_NP);
  pthread_rwlock_init(&l, &a);
  pthread_rwlockattr_destroy(&a);
  holder h;
  if (state == RW_OTHER_RD) hold(&h, rw_rdlock, rw_unlock, &l);
  if (state == RW_OTHER_WR) hold(&h, rw_wrlock, rw_unlock, &l);
  if (state == RW_OWN_RD) pthread_rwlock_rdlock(&l);
  if (state == RW_OWN_WR) pthread_rwlock_wrlock(&l);
  errno = 0;
  int r = fn(&l, clk >= 0 ? clocks[clk].id : CLOCK_REALTIME, tp(t));
  int err = errno;
  char what[160], after[32] = "";
  snprintf(what, sizeof what, "%s %s %s %s%s%s", call, prefer_writer ? "prefer-writer" : "default",
           rw_states[state], t->name, clk >= 0 ? " " : "", clk >= 0 ? clocks[clk].name : "");
  if (state == RW_OTHER_RD || state == RW_OTHER_WR) {
    if (r == 0) pthread_rwlock_unlock(&l);
    unhold(&h);
  } else {
    if (state != RW_FREE) pthread_rwlock_unlock(&l);
    if (r == 0) pthread_rwlock_unlock(&l);
    snprintf(after, sizeof after, "after=%s", probe_held(rw_trywrlock, rw_unlock, &l));
  }
  report(what, r, err, after);
  pthread_rwlock_destroy(&l);
}

static void rwlocks(void) {
  static const struct {
    const char *name;
    rwcall_fn fn;
    bool clock;
  } calls[] = {
      {"pthread_rwlock_timedrdlock", rw_timedrdlock, false},
      {"pthread_rwlock_timedwrlock", rw_timedwrlock, false},
      {"pthread_rwlock_clockrdlock", rw_clockrdlock, true},
      {"pthread_rwlock_clockwrlock", rw_clockwrlock, true},
  };
  for (size_t f = 0; f < sizeof calls / sizeof calls[0]; f++)
    for (int w = 0; w <= 1; w++)
      for (int s = RW_FREE; s <= RW_OWN_WR; s++)
        for (size_t i = 0; i < NTIMES; i++) {
          if (!calls[f].clock) {
            rwlock_case(calls[f].name, calls[f].fn, w, s, &times[i], -1);
            continue;
          }
          for (size_t c = 0; c < NCLOCKS; c++) rwlock_case(calls[f].name, calls[f].fn, w, s, &times[i], (int)c);
        }
}

/* ---- semaphores ------------------------------------------------------------------ */

static void sem_case(int value, const named_time *t, int clk) {
  if (t->null) return; /* glibc reads the time first: sem_null */
  sem_t s;
  sem_init(&s, 0, (unsigned)value);
  errno = 0;
  int r = clk >= 0 ? sem_clockwait(&s, clocks[clk].id, tp(t)) : sem_timedwait(&s, tp(t));
  int err = errno, v = -1;
  sem_getvalue(&s, &v);
  char what[160], after[32];
  snprintf(what, sizeof what, "%s value=%d %s%s%s", clk >= 0 ? "sem_clockwait" : "sem_timedwait", value,
           t->name, clk >= 0 ? " " : "", clk >= 0 ? clocks[clk].name : "");
  snprintf(after, sizeof after, "value=%d", v);
  report(what, r, err, after);
  sem_destroy(&s);
}

static void semaphores(void) {
  for (int v = 1; v >= 0; v--)
    for (size_t i = 0; i < NTIMES; i++) {
      sem_case(v, &times[i], -1);
      for (size_t c = 0; c < NCLOCKS; c++) sem_case(v, &times[i], (int)c);
    }
}

/* ---- joins ----------------------------------------------------------------------- */

static sem_t go;
static _Atomic pid_t target_tid;

static void *target(void *arg) {
  target_tid = gettid();
  if (arg) sem_wait(&go);
  return (void *)(intptr_t)42;
}

static void pause_ms(int ms) {
  struct timespec d = {0, ms * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
}

static void *poster(void *arg) {
  (void)arg;
  pause_ms(20);
  sem_post(&go);
  return NULL;
}

/* A thread that has ended: its kernel thread is gone (as is glibc's
 * note of it, which the kernel clears as the thread ends). */
static pthread_t ended_thread(void) {
  pthread_t th;
  target_tid = 0;
  pthread_create(&th, NULL, target, NULL);
  while (!target_tid) sched_yield();
  while (syscall(SYS_tgkill, getpid(), target_tid, 0) == 0) pause_ms(1);
  return th;
}

static void join_case(bool running, const named_time *t, int clk) {
  if (t->null && running) return; /* waits for the end; valid */
  pthread_t th, post;
  sem_init(&go, 0, 0);
  if (running)
    pthread_create(&th, NULL, target, (void *)1);
  else
    th = ended_thread();
  /* glibc's join does not look at tv_nsec: it waits, each futex wait
   * refused at once, until the thread ends, which a thread then makes it
   * do. Valid times are past: the join gives up at once. */
  bool waits = running && refused(t) && (clk < 0 || clocks[clk].id == CLOCK_REALTIME ||
                                         clocks[clk].id == CLOCK_MONOTONIC);
  if (waits) pthread_create(&post, NULL, poster, NULL);
  void *ret = NULL;
  errno = 0;
  int r = clk >= 0 ? pthread_clockjoin_np(th, &ret, clocks[clk].id, tp(t))
                   : pthread_timedjoin_np(th, &ret, tp(t));
  int err = errno;
  char what[160], after[64];
  snprintf(what, sizeof what, "%s %s %s%s%s", clk >= 0 ? "pthread_clockjoin_np" : "pthread_timedjoin_np",
           running ? "running" : "ended", t->name, clk >= 0 ? " " : "", clk >= 0 ? clocks[clk].name : "");
  if (waits) pthread_join(post, NULL);
  else if (running) sem_post(&go);
  /* The thread not joined yet is joined now. */
  int again = r == 0 ? -1 : pthread_join(th, NULL);
  snprintf(after, sizeof after, "result=%ld join_after=%d", r == 0 ? (long)(intptr_t)ret : -1L, again);
  report(what, r, err, after);
  sem_destroy(&go);
}

static void joins(void) {
  for (int running = 0; running <= 1; running++)
    for (size_t i = 0; i < NTIMES; i++) {
      join_case(running, &times[i], -1);
      for (size_t c = 0; c < NCLOCKS; c++) join_case(running, &times[i], (int)c);
    }
}

/* ---- condition variables ----------------------------------------------------------- */

static void cond_case(const char *call, const named_time *t, int clk) {
  if (t->null) return; /* glibc reads the time first: cond_null */
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&m);
  errno = 0;
  int r;
  if (strcmp(call, "cnd_timedwait") == 0)
    r = cnd_timedwait((cnd_t *)&c, (mtx_t *)&m, tp(t));
  else if (clk >= 0)
    r = pthread_cond_clockwait(&c, &m, clocks[clk].id, tp(t));
  else
    r = pthread_cond_timedwait(&c, &m, tp(t));
  int err = errno;
  char what[160], after[32];
  snprintf(what, sizeof what, "%s %s%s%s", call, t->name, clk >= 0 ? " " : "", clk >= 0 ? clocks[clk].name : "");
  /* The mutex is the caller's again, whatever the wait said. */
  snprintf(after, sizeof after, "mutex=%s", probe_held(m_trylock, m_unlock, &m));
  report(what, r, err, after);
  pthread_mutex_unlock(&m);
}

static void conds(void) {
  for (size_t i = 0; i < NTIMES; i++) {
    cond_case("pthread_cond_timedwait", &times[i], -1);
    cond_case("cnd_timedwait", &times[i], -1);
    for (size_t c = 0; c < NCLOCKS; c++) cond_case("pthread_cond_clockwait", &times[i], (int)c);
  }
}

/* ---- sleeps ------------------------------------------------------------------------ */

static void sleeps(void) {
  /* Relative: 1 us, refused ones, NULL. */
  static const named_time rel[] = {
      {"1us", {0, 1000}, false},      {"nsec=1e9", {0, 1000000000}, false},
      {"nsec=-1", {0, -1}, false},    {"sec=-1", {-1, 0}, false},
      {"zero", {0, 0}, false},        {"null", {0, 0}, true},
  };
  static const struct {
    const char *name;
    clockid_t id;
  } sclocks[] = {{"REALTIME", CLOCK_REALTIME}, {"MONOTONIC", CLOCK_MONOTONIC},
                 {"THREAD_CPUTIME", CLOCK_THREAD_CPUTIME_ID}, {"99", 99}};
  char what[160];
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    const struct timespec *t = tp(&rel[i]);
    errno = 0;
    int r = nanosleep(t, NULL);
    snprintf(what, sizeof what, "nanosleep %s", rel[i].name);
    report(what, r, errno, "");
    if (!rel[i].null) {
      errno = 0;
      r = thrd_sleep(t, NULL);
      snprintf(what, sizeof what, "thrd_sleep %s", rel[i].name);
      report(what, r, errno, "");
    }
    for (size_t c = 0; c < sizeof sclocks / sizeof sclocks[0]; c++) {
      errno = 0;
      r = clock_nanosleep(sclocks[c].id, 0, t, NULL);
      snprintf(what, sizeof what, "clock_nanosleep %s %s", rel[i].name, sclocks[c].name);
      report(what, r, errno, "");
    }
  }
  for (size_t i = 0; i < NTIMES; i++)
    for (size_t c = 0; c < sizeof sclocks / sizeof sclocks[0]; c++) {
      errno = 0;
      int r = clock_nanosleep(sclocks[c].id, TIMER_ABSTIME, tp(&times[i]), NULL);
      snprintf(what, sizeof what, "clock_nanosleep abs %s %s", times[i].name, sclocks[c].name);
      report(what, r, errno, "");
    }
}

/* ---- cancellation points ----------------------------------------------------------
 *
 * A thread whose cancellation is pending calls each wait once: glibc acts
 * on it before it takes a free unit in some (sem_wait, sem_timedwait),
 * not in others (sem_clockwait, a join of an ended thread). */

static sem_t cancel_sem;
static pthread_t cancel_ended;

static void *cancel_caller(void *arg) {
  int which = (int)(intptr_t)arg, r = -9;
  const struct timespec past = {1, 0}, bad = {1, 1000000000};
  pthread_cancel(pthread_self()); /* deferred: pending until a cancellation point */
  switch (which) {
  case 0: r = sem_wait(&cancel_sem); break;
  case 1: r = sem_timedwait(&cancel_sem, &past); break;
  case 2: r = sem_timedwait(&cancel_sem, &bad); break;
  case 3: r = sem_clockwait(&cancel_sem, CLOCK_MONOTONIC, &past); break;
  case 4: r = pthread_join(cancel_ended, NULL); break;
  case 5: r = pthread_timedjoin_np(cancel_ended, NULL, &past); break;
  case 6: r = pthread_clockjoin_np(cancel_ended, NULL, CLOCK_MONOTONIC, &past); break;
  }
  return (void *)(intptr_t)r;
}

static void cancels(void) {
  static const char *const calls[] = {"sem_wait",           "sem_timedwait past",
                                      "sem_timedwait nsec=1e9", "sem_clockwait past MONOTONIC",
                                      "pthread_join ended", "pthread_timedjoin_np ended past",
                                      "pthread_clockjoin_np ended past MONOTONIC"};
  for (int i = 0; i < (int)(sizeof calls / sizeof calls[0]); i++) {
    sem_init(&cancel_sem, 0, 1);
    cancel_ended = ended_thread();
    pthread_t th;
    void *ret;
    pthread_create(&th, NULL, cancel_caller, (void *)(intptr_t)i);
    pthread_join(th, &ret);
    int v = -1;
    sem_getvalue(&cancel_sem, &v);
    /* Not joined by the caller: joined now. */
    bool joined = i >= 4 && ret == (void *)0;
    if (!joined) pthread_join(cancel_ended, NULL);
    char what[160], after[64];
    snprintf(what, sizeof what, "cancel pending: %s", calls[i]);
    snprintf(after, sizeof after, "value=%d joined=%d", v, joined);
    report(what, ret == PTHREAD_CANCELED ? -100 : (int)(intptr_t)ret, 0, after);
    sem_destroy(&cancel_sem);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "sem_null") == 0) {
    sem_t s;
    sem_init(&s, 0, 1);
    printf("sem_timedwait null: ret=%d\n", sem_timedwait(&s, no_time));
    return 0;
  }
  if (strcmp(mode, "cond_null") == 0) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    printf("pthread_cond_timedwait null: ret=%d\n", pthread_cond_timedwait(&c, &m, no_time));
    return 0;
  }
  if (mode[0]) {
    fprintf(stderr, "usage: timed [sem_null|cond_null]\n");
    return 2;
  }
  mutexes();
  rwlocks();
  semaphores();
  joins();
  conds();
  sleeps();
  cancels();
  return 0;
}
