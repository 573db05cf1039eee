/* Scenarios of test_unwind: call chains built with and without frame
 * pointers that end in a probe, which compares ctrace's walk of its stack
 * with libunwind's. */
#ifndef TEST_UNWIND_SCENARIOS_H
#define TEST_UNWIND_SCENARIOS_H

typedef struct scn_env {
  int (*probe)(void *arg);
  void *arg;
} scn_env;

/* In fp.c (frame pointers): calls f(e, x) from a frame-pointer frame. */
int fp_call(const scn_env *e, int (*f)(const scn_env *, int), int x);
int fp_chain(const scn_env *e, int n);

#define SCN_DECL(p)                                  \
  int p##_chain9(const scn_env *e);                  \
  int p##_deep(const scn_env *e, int n);             \
  int p##_dynamic(const scn_env *e);                 \
  int p##_tails(const scn_env *e);                   \
  int p##_mixed(const scn_env *e);                   \
  int p##_signal(const scn_env *e);

SCN_DECL(o2)
SCN_DECL(o3)

#endif
