/* test_cpu.c - CPU samples in the trace (ctrace_options.cpu_hz).
 *
 *   test_cpu TRACE [go1.22]
 *
 * In the classic format (by default) or Go's current one (go1.22).
 * At 250 samples per CPU second (CPU-time timers expire on the kernel's
 * tick, so the kernel's HZ, often 250, caps the rate), one thread
 * alternates burn_a and burn_b in a 3:1 ratio of work for 4 s of CPU
 * (about 1000 samples: 5% is more than three standard deviations of the
 * share), another only sleeps, and the program profiles itself with
 * setitimer(ITIMER_PROF)/SIGPROF all along. Then the trace is
 * read back (libctrace-parse) and:
 *   - the header is `go 1.19 trace` (go1.22: `go 1.22 trace`, the samples
 *     in Go's own CPU sample batches) and there are samples;
 *   - no more than a third as many are lost (their rings filled undrained);
 *   - the share of the samples whose innermost frame is burn_a or burn_b
 *     that are in burn_a is within 5 points of the share the burner's own
 *     timer finds it in burn_a (the reference), and that is 75% +- 15%.
 *     The work splits 3:1, but CPU-time timers expire on the kernel's
 *     tick, and on a loaded machine the samples lean toward the longer
 *     loop (78-81% measured with two busy processes beside it; 74% idle).
 *     The reference is a timer like ctrace's, on the burner's CPU clock
 *     at the same rate (a real-time signal ctrace never takes): both
 *     expire on the same ticks and lean alike, which makes the check
 *     independent of the load;
 *   - the sleeping thread's goroutine has no sample (none while its CPU
 *     time stays under half a sampling period; under a sanitizer its
 *     wake-ups do cost CPU, and then no more samples than that CPU time);
 *   - every sample's goroutine is 0 or running at the sample's time, as
 *     the trace shows it;
 *   - the program's own SIGPROF timer fires, per CPU second, at least half
 *     as often as it did in an untraced run of the same work just before
 *     (a tracer that took the signal would leave it none; the two phases'
 *     rates differ by up to a fifth on a loaded machine)
 *     (standard signals merge when two are pending, so CPU time alone is
 *     not the measure).
 * The trace is left for tests/lib/go_compat.sh.
 */
#include <ctrace/ctrace.h>
#include <ctrace/parse.h>

#include "runtime/symbolize.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      fprintf(stderr, "test_cpu: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                             \
      fprintf(stderr, "\n");                                    \
      exit(1);                                                  \
    }                                                           \
  } while (0)

static volatile uint64_t sink;
static atomic_int profs;
/* Where the reference timer's signals found the burner, symbolized when
 * the run is over. */
static uintptr_t ref_pcs[8192];
static atomic_int ref_n;
static bool reference;
static atomic_bool done;
static uint64_t sleeper_g;
static double sleeper_cpu;

/* Each burns in its own loop, so the sample's innermost frame names it. */
#define SPIN(n)                                                                  \
  do {                                                                           \
    uint64_t x = sink | 1;                                                       \
    for (long i = 0; i < (n); i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17;     \
    sink = x;                                                                    \
  } while (0)

__attribute__((noinline)) void burn_a(long n) { SPIN(3 * n); }
__attribute__((noinline)) void burn_b(long n) { SPIN(n); }

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double burn_seconds = 4.0;

/* The interrupted PC, as ctrace's handler takes it: from the context,
 * which a sanitizer that defers the handler keeps as it was. */
static void on_ref(int sig, siginfo_t *si, void *ctx) {
  (void)sig, (void)si;
  ucontext_t *uc = ctx;
#if defined(__x86_64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#else
#error "test_cpu: no PC in this architecture's ucontext"
#endif
  int i = atomic_fetch_add(&ref_n, 1);
  if (i < (int)(sizeof ref_pcs / sizeof ref_pcs[0])) ref_pcs[i] = pc;
}

/* The reference: this thread's CPU clock, every 4 ms (ctrace's 250 Hz),
 * signalled to this thread. */
static timer_t ref_timer(void) {
  timer_t t;
  struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN + 1};
  ev._sigev_un._tid = (int)syscall(SYS_gettid);
  CHECK(timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) == 0, "timer_create");
  struct itimerspec it = {{0, 4000000}, {0, 4000000}};
  CHECK(timer_settime(t, 0, &it, NULL) == 0, "timer_settime");
  return t;
}

static void *burner(void *arg) {
  (void)arg;
  ctrace_log(0, "burner", "start");
  timer_t ref = {0};
  if (reference) ref = ref_timer();
  double t0 = cpu_seconds();
  while (cpu_seconds() - t0 < burn_seconds) {
    burn_a(20000);
    burn_b(20000);
  }
  if (reference) timer_delete(ref);
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  ctrace_log(0, "sleeper", "start");
  sleeper_g = ctrace_thread_g()->id;
  while (!atomic_load(&done)) {
    ctrace_go_block(CTRACE_BLOCK_SLEEP);
    struct timespec d = {0, 20000000};
    nanosleep(&d, NULL);
    ctrace_thread_resume();
  }
  sleeper_cpu = cpu_seconds();
  return NULL;
}

static void on_prof(int sig) {
  (void)sig;
  atomic_fetch_add(&profs, 1);
}

static double process_cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
  CHECK(argc == 2 || (argc == 3 && strcmp(argv[2], "go1.22") == 0), "usage: test_cpu TRACE [go1.22]");
  bool go122 = argc == 3;
  signal(SIGPROF, on_prof);
  struct itimerval it = {{0, 10000}, {0, 10000}};
  CHECK(setitimer(ITIMER_PROF, &it, NULL) == 0, "setitimer");

  /* The program's own profiling, untraced: its SIGPROFs per CPU second. */
  burn_seconds = 1.0;
  double c0 = process_cpu();
  pthread_t u;
  pthread_create(&u, NULL, burner, NULL);
  pthread_join(u, NULL);
  double untraced_rate = atomic_exchange(&profs, 0) / (process_cpu() - c0);
  burn_seconds = 4.0;
  c0 = process_cpu();

  ctrace_options o = {.cpu_hz = 250, .format = go122 ? CTRACE_FORMAT_GO122 : CTRACE_FORMAT_GO111};
  /* Both timers expire on the same tick, and this signal is delivered
   * first: ctrace's waits until on_ref returns, to interrupt the burner
   * where it was, not in on_ref. The PCs are named by ctrace's own
   * symbolizer, as the samples are. */
  struct sigaction sa = {.sa_sigaction = on_ref, .sa_flags = SA_RESTART | SA_SIGINFO};
  sigfillset(&sa.sa_mask);
  CHECK(sigaction(SIGRTMIN + 1, &sa, NULL) == 0, "sigaction");
  reference = true;
  CHECK(ctrace_start_file(argv[1], &o) == 0, "start");
  pthread_t b, s;
  pthread_create(&s, NULL, sleeper, NULL);
  pthread_create(&b, NULL, burner, NULL);
  pthread_join(b, NULL);
  atomic_store(&done, true);
  pthread_join(s, NULL);
  CHECK(ctrace_stop() == 0, "stop");
  ctrace_stats st;
  ctrace_stats_get(&st);

  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  double traced_rate = atomic_load(&profs) / (process_cpu() - c0);
  CHECK(traced_rate >= 0.5 * untraced_rate, "SIGPROF: %.1f per CPU second traced, %.1f untraced",
        traced_rate, untraced_rate);

  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  CHECK(ctrace_reader_open(argv[1], &r, &err) == 0 && ctrace_reader_check(r, &info, &err) == 0,
        "%s at offset %llu", err.message, (unsigned long long)err.offset);
  CHECK(info.version == (go122 ? 1022 : 1019), "version %d, want %d", info.version, go122 ? 1022 : 1019);
  /* running[g]: the trace shows g running (ids are small here). */
  static bool running[1 << 16];
  long samples = 0, a = 0, bb = 0, sleeper_samples = 0, not_running = 0;
  ctrace_event ev;
  while (ctrace_reader_next(r, &ev) > 0) {
    uint64_t g = ev.g < (1 << 16) ? ev.g : 0;
    if (ev.format == 1) {
      /* Go's model: a G runs from its start (or a status saying so) to
       * its stop, block, end or switch away; through a system call too. */
      uint64_t ag = ev.args[0] < (1 << 16) ? ev.args[0] : 0;
      switch (ev.type) {
      case CTRACE_EV122_GoStart:
        running[ag] = true;
        break;
      case CTRACE_EV122_GoStatus:
      case CTRACE_EV122_GoStatusStack:
        running[ag] = ev.args[2] == CTRACE_GS_RUNNING || ev.args[2] == CTRACE_GS_SYSCALL;
        break;
      case CTRACE_EV122_GoSwitch:
        running[g] = false;
        running[ag] = true;
        break;
      case CTRACE_EV122_GoStop: case CTRACE_EV122_GoBlock: case CTRACE_EV122_GoDestroy:
      case CTRACE_EV122_GoSwitchDestroy: case CTRACE_EV122_GoSyscallEndBlocked:
        running[g] = false;
        break;
      case CTRACE_EV122_CPUSample:
        ev.type = CTRACE_EV_CPUSample; /* counted below, as a classic one */
        break;
      default:
        break;
      }
      if (ev.type != CTRACE_EV_CPUSample) continue;
      if (ev.g == (uint64_t)-1) g = 0;
    }
    switch (ev.type) {
    case CTRACE_EV_GoStart:
    case CTRACE_EV_GoStartLabel:
      running[g] = true;
      break;
    case CTRACE_EV_GoEnd: case CTRACE_EV_GoStop: case CTRACE_EV_GoSched: case CTRACE_EV_GoPreempt:
    case CTRACE_EV_GoSleep: case CTRACE_EV_GoBlock: case CTRACE_EV_GoBlockSend:
    case CTRACE_EV_GoBlockRecv: case CTRACE_EV_GoBlockSelect: case CTRACE_EV_GoBlockSync:
    case CTRACE_EV_GoBlockCond: case CTRACE_EV_GoBlockNet: case CTRACE_EV_GoBlockGC:
    case CTRACE_EV_GoSysBlock:
      running[g] = false;
      break;
    case CTRACE_EV_CPUSample: {
      samples++;
      if (g && !running[g]) not_running++;
      if (ev.g == sleeper_g) sleeper_samples++;
      const ctrace_frame *fr;
      size_t n = ev.format == 1 ? (fr = ev.frames, ev.nframes) : ctrace_reader_stack(r, ev.stack, &fr);
      if (n > 0 && strcmp(fr[0].func, "burn_a") == 0) a++;
      if (n > 0 && strcmp(fr[0].func, "burn_b") == 0) bb++;
      break;
    }
    default:
      break;
    }
  }
  ctrace_reader_close(r);
  /* 1000 at HZ 250; a kernel with HZ 100 gives 400. */
  CHECK(samples >= 300, "%ld samples for 4 s of CPU at 250 Hz", samples);
  /* A sample is lost where its thread's ring (64) filled before the trace's
   * reader drained it, every 10 ms or sooner: a quarter of a second of
   * the reader kept from the CPU, which a loaded machine may do now and
   * then. Rings drained only at a generation's end lost more samples
   * than they kept (582 of 967); a third as many as kept is the bound. */
  CHECK(st.lost * 3 <= (uint64_t)samples, "%llu samples lost, %ld kept", (unsigned long long)st.lost, samples);
  long ra = 0, rb = 0;
  for (int i = 0; i < atomic_load(&ref_n) && i < (int)(sizeof ref_pcs / sizeof ref_pcs[0]); i++) {
    ctrace__frame f;
    ctrace__symbolize(ref_pcs[i] + 1, &f); /* + 1: it takes a return address */
    ra += strcmp(f.func, "burn_a") == 0;
    rb += strcmp(f.func, "burn_b") == 0;
  }
  CHECK(ra + rb >= 300, "the reference timer: %ld signals for 4 s of CPU at 250 Hz", ra + rb);
  double ref = (double)ra / (double)(ra + rb);
  CHECK(ref > 0.60 && ref < 0.90, "the reference timer: %.1f%% in burn_a, want 75 +- 15", 100 * ref);
  double share = (double)a / (double)(a + bb);
  CHECK(a + bb >= samples / 2 && share > ref - 0.05 && share < ref + 0.05,
        "burn_a %ld, burn_b %ld of %ld samples: %.1f%% in burn_a, want %.1f +- 5 (the reference timer)",
        a, bb, samples, 100 * share, 100 * ref);
  long sleeper_max = sleeper_cpu < 0.002 ? 0 : (long)(sleeper_cpu * 250) + 1;
  CHECK(sleeper_samples <= sleeper_max, "the sleeping thread has %ld samples for %.1f ms of CPU",
        sleeper_samples, sleeper_cpu * 1e3);
  CHECK(not_running == 0, "%ld samples name a goroutine the trace shows not running", not_running);
  printf("test_cpu: %ld samples, %.1f%% in burn_a, SIGPROF %.1f per CPU second traced, %.1f untraced\n",
         samples, 100 * share, traced_rate, untraced_rate);
  /* cpu_check.sh compares the profile ctrace pprof makes with this. */
  printf("reference %.1f\n", 100 * ref);
  return 0;
}
