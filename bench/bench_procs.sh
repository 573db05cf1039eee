#!/usr/bin/env bash
# bench_procs.sh: what a Go trace's number of Ps costs the commands that
# read a whole trace (check, stats, pprof -t sync, export). The bench
# program (bench/gotrace_bench.go.in, Go 1.23) writes the same size of
# trace run with GOMAXPROCS=2 and with GOMAXPROCS=N (32: a server's); each
# command's CPU per million events on both, and their ratio: near 1 when no
# work per event grows with the Ps (stats' minimum mutator utilization
# once counted the Ps doing GC work over every P at each event: 1.3 times
# the CPU with 32 Ps).
#   bench/bench_procs.sh [BUILD_DIR]     (make bench runs it)
# BENCH_PROCS (default 32), BENCH_PROCS_MB (default 40: GNU time counts
# CPU in hundredths of a second, and check takes a few tenths), BENCH_ROUNDS
# (default 3). One line per command, from the medians:
#   BENCH name=procs-<case> cpu_s_per_mev_p2=... cpu_s_per_mev_pN=...
#     ratio=<pN / p2> procs=N events_p2=... events_pN=... trace_mb=... rounds=...
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_procs "${1:-build}"
[ -x "$GO123" ] || die "needs Go 1.23 at $GO123 (make test-deps)"
procs=${BENCH_PROCS:-32}
mb=${BENCH_PROCS_MB:-40}
t2=$(BENCH_GO_PROCS=2 bench_go_trace "$GO123" 23 "$mb")
tn=$(BENCH_GO_PROCS=$procs bench_go_trace "$GO123" 23 "$mb")
events() { "$ctrace" check "$1" | sed -n '1s/.*trace, \([0-9]*\) events.*/\1/p'; }
e2=$(events "$t2") en=$(events "$tn")

for c in $bench_read_cases; do rm -f "$dir/procs-$c-p2.times" "$dir/procs-$c-pn.times"; done
for r in $(seq 1 "$rounds"); do
  for c in $bench_read_cases; do
    bench_read_cmd "$c" "$t2"
    bench_measure "procs-$c-p2" "$r" "${cmd[@]}"
    bench_read_cmd "$c" "$tn"
    bench_measure "procs-$c-pn" "$r" "${cmd[@]}"
  done
done
rm -f "$dir/read.pb" "$dir/read.perfetto"
for c in $bench_read_cases; do
  awk -v name="$c" -v c2="$(bench_median 3 "$dir/procs-$c-p2.times")" -v cn="$(bench_median 3 "$dir/procs-$c-pn.times")" \
      -v e2="$e2" -v en="$en" -v n="$procs" -v mb="$(bench_mb "$t2")" -v k="$rounds" 'BEGIN {
    a = c2 / (e2 / 1e6); b = cn / (en / 1e6)
    printf "BENCH name=procs-%s cpu_s_per_mev_p2=%.4f cpu_s_per_mev_p%d=%.4f ratio=%.2f procs=%d events_p2=%s events_p%d=%s trace_mb=%s rounds=%s\n",
      name, a, n, b, b / a, n, e2, n, en, mb, k
  }'
done
