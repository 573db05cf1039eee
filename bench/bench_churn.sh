#!/usr/bin/env bash
# bench_churn.sh: memory and time of the commands that read a whole trace
# (check, stats, pprof -t sync, export; and stats --format=csv, pprof -t
# wall, pprof -t sync, waker and cpu with --goroutine and --region, which
# write or filter a row, a sample or an interval a goroutine) on a trace of a program that starts
# goroutines without end (bench/gotrace_churn.go.in: a server's goroutine
# a request), and on one four times as long: as many goroutines alive at
# once, four times as many in all. Issue 30 wants every command's memory
# flat in the trace's length; bench_big.sh's traces hold 20 goroutines in
# all, so they cannot show what grows with the goroutines a trace ever had.
#   bench/bench_churn.sh [BUILD_DIR [GO_MINOR]]     (make bench runs it for 23)
# GO_MINOR: 23 (default) or 27; BENCH_CHURN_MB (default 20), BENCH_ROUNDS
# (default 3), BENCH_CHURN_CASES (default all of them). One line per command from the medians:
#   BENCH name=churn-<case>-go1MINOR ctrace_s=... ctrace_s_4x=...
#     rss_mb=<peak RSS> rss_4x_mb=... rss_growth_4x=<4x / 1x RSS>
#     time_growth_4x=<4x / 1x CPU> goroutines=... goroutines_4x=...
#     trace_mb=... trace_4x_mb=... rounds=...
set -euo pipefail
. "$(dirname "$0")/lib.sh"
minor=${2:-23}
bench_init bench_churn "${1:-build}"
case $minor in
23) go=$GO123 ;;
27) go=$GO127 ;;
*) die "GO_MINOR is 23 or 27, not $minor" ;;
esac
[ -x "$go" ] || die "needs Go 1.$minor at $go (make test-deps)"
mb=${BENCH_CHURN_MB:-20}
trace=$(bench_go_trace "$go" "$minor" "$mb" churn)
trace4=$(bench_go_trace "$go" "$minor" $((4 * mb)) churn)
bench_read_cases=${BENCH_CHURN_CASES:-"$bench_read_cases stats-csv pprof-wall pprof-sync-goroutine pprof-sync-region
  pprof-waker-goroutine pprof-waker-region pprof-cpu-goroutine pprof-cpu-region"}

for c in $bench_read_cases; do rm -f "$dir/churn$minor-$c.times" "$dir/churn$minor-$c-4x.times"; done
for r in $(seq 1 "$rounds"); do bench_read_round "churn$minor" "$r" "$trace" "$trace4"; done
goroutines() { "$ctrace" check "$1" | sed -n '1s/.* \([0-9]*\) goroutines.*/\1/p'; }
ng=$(goroutines "$trace") ng4=$(goroutines "$trace4")
for c in $bench_read_cases; do
  f=$dir/churn$minor-$c.times f4=$dir/churn$minor-$c-4x.times
  awk -v name="$c" -v w="$(bench_median 1 "$f")" -v r="$(bench_median 2 "$f")" -v cpu="$(bench_median 3 "$f")" \
      -v w4="$(bench_median 1 "$f4")" -v r4="$(bench_median 2 "$f4")" -v cpu4="$(bench_median 3 "$f4")" \
      -v ng="$ng" -v ng4="$ng4" -v mb="$(bench_mb "$trace")" -v mb4="$(bench_mb "$trace4")" \
      -v minor="$minor" -v k="$rounds" 'BEGIN {
    if (cpu < 0.01) cpu = 0.01
    printf "BENCH name=churn-%s-go1%s ctrace_s=%.2f ctrace_s_4x=%.2f rss_mb=%.1f rss_4x_mb=%.1f rss_growth_4x=%.2f time_growth_4x=%.2f goroutines=%s goroutines_4x=%s trace_mb=%s trace_4x_mb=%s rounds=%s\n",
      name, minor, w, w4, r / 1024, r4 / 1024, r4 / r, cpu4 / cpu, ng, ng4, mb, mb4, k
  }'
done
