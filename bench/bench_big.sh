#!/usr/bin/env bash
# bench_big.sh: the commands that read a whole trace (check, stats, pprof -t
# sync, export) on a large trace Go writes, side by side with that Go's own
# tool in the same run, and their time and peak memory on a trace four
# times as long (the same program run four times as long).
#   bench/bench_big.sh [BUILD_DIR [GO_MINOR]]     (make bench runs it for 23 and 27)
# GO_MINOR: 23 (default: Go 1.23, the reader Go 1.22 and 1.23 share) or 27
# (Go 1.27, whose reader Go 1.24 rewrote). Environment: BENCH122_MB and
# BENCH127_MB (the trace's size: 40 and 45 by default), BENCH_ROUNDS (default 3), BENCH_GO_ROUNDS (default
# BENCH_ROUNDS: Go takes 20 to 80 s a run), GO123 and GO127
# (tests/lib/go_paths.sh).
#
# The traces: bench/gotrace_bench.go.in built with that Go, as
# bench_dump122.sh and bench_dump127.sh make them (bench/lib.sh). Go's side:
# `go tool trace -d=1` (1.23) or `-d=parsed` (1.27), Go's reader and
# ordering, what check, stats and export read, and `-pprof=sync`. Each
# command under GNU time, rounds interleaved; one line per case from the
# medians (wall seconds, and CPU seconds, user + system, which a loaded
# machine moves less):
#   BENCH name=<case>-vs-go1MINOR speedup=<go wall / ctrace wall>
#     cpu_speedup=<go CPU / ctrace CPU> ctrace_s=... ctrace_cpu_s=...
#     go_s=... go_cpu_s=... rss_mb=<ctrace peak RSS>
#     go_rss_mb=... ctrace_s_4x=... rss_4x_mb=... rss_growth_4x=<4x / 1x RSS>
#     time_growth_4x=<4x / 1x CPU> trace_mb=... rounds=...
# Cases: check (against Go's reader), stats (the same), pprof-sync (against
# -pprof=sync), export (Perfetto, to a file; against Go's reader).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
minor=${2:-23}
bench_init bench_big "${1:-build}"
go_rounds=${BENCH_GO_ROUNDS:-$rounds}
case $minor in
23) go=$GO123 god=-d=1 mb=${BENCH122_MB:-40} ;;
27) go=$GO127 god=-d=parsed mb=${BENCH127_MB:-45} ;;
*) die "GO_MINOR is 23 or 27, not $minor" ;;
esac
[ -x "$go" ] || die "needs Go 1.$minor at $go (make test-deps)"
gotrace=$(go_trace_tool "$go") || die "cannot find or build Go 1.$minor's trace tool"
trace=$(bench_go_trace "$go" "$minor" "$mb")
trace4=$(bench_go_trace "$go" "$minor" $((4 * mb)))

# ---- timed rounds ------------------------------------------------------------------
for c in $bench_read_cases god gopprof; do rm -f "$dir/big$minor-$c.times" "$dir/big$minor-$c-4x.times"; done
for r in $(seq 1 "$rounds"); do
  bench_read_round "big$minor" "$r" "$trace" "$trace4"
  if [ "$r" -le "$go_rounds" ]; then
    bench_measure "big$minor-god" "$r" "$gotrace" "$god" "$trace"
    bench_measure "big$minor-gopprof" "$r" "$gotrace" -pprof=sync "$trace"
  fi
done
for c in $bench_read_cases; do
  g=god
  [ "$c" = pprof-sync ] && g=gopprof
  f=$dir/big$minor-$c.times f4=$dir/big$minor-$c-4x.times gf=$dir/big$minor-$g.times
  awk -v name="$c" -v w="$(bench_median 1 "$f")" -v r="$(bench_median 2 "$f")" -v cpu="$(bench_median 3 "$f")" \
      -v w4="$(bench_median 1 "$f4")" -v r4="$(bench_median 2 "$f4")" -v cpu4="$(bench_median 3 "$f4")" \
      -v gw="$(bench_median 1 "$gf")" -v gr="$(bench_median 2 "$gf")" -v gcpu="$(bench_median 3 "$gf")" -v go_cmd="$g" \
      -v mb="$(bench_mb "$trace")" -v mb4="$(bench_mb "$trace4")" -v minor="$minor" -v god="${god#-}" -v k="$rounds" -v gk="$go_rounds" 'BEGIN {
    if (w < 0.01) w = 0.01
    if (cpu < 0.01) cpu = 0.01
    printf "BENCH name=%s-vs-go1%s speedup=%.1f cpu_speedup=%.1f ctrace_s=%.2f ctrace_cpu_s=%.2f go_s=%.2f go_cpu_s=%.2f rss_mb=%.1f go_rss_mb=%.1f ctrace_s_4x=%.2f ctrace_cpu_s_4x=%.2f rss_4x_mb=%.1f rss_growth_4x=%.2f time_growth_4x=%.2f go=%s trace_mb=%s trace_4x_mb=%s rounds=%s go_rounds=%s\n",
      name, minor, gw / w, gcpu / cpu, w, cpu, gw, gcpu, r / 1024, gr / 1024, w4, cpu4, r4 / 1024, r4 / r, cpu4 / cpu,
      go_cmd == "god" ? god : "pprof=sync", mb, mb4, k, gk
  }'
done
