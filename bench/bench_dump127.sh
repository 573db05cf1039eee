#!/usr/bin/env bash
# bench_dump127.sh: ctrace against Go 1.27 on a large trace Go 1.27 writes
# (a go 1.26 trace): `ctrace dump` against `go tool trace -d=parsed`
# (bench_big.sh 27 times check, stats, pprof and export against Go 1.27).
#   bench/bench_dump127.sh [BUILD_DIR]          (make bench runs it)
# Environment: BENCH127_MB (default 45), BENCH_ROUNDS (default 3), GO127
# (tests/lib/go_paths.sh: build/go/go-1.27, which scripts/go-oracles.sh unpacks).
#
# bench/gotrace_bench.go.in is built with Go 1.27 into BUILD_DIR/bench/ and
# writes the trace there, cached until the program or Go changes
# (bench/lib.sh). The first
# time, Go's -d=parsed output is compared with ctrace dump's, byte for byte
# (Go 1.27's order of events is deterministic), and the verdict kept.
# Then BENCH_ROUNDS rounds of each command under GNU time; from the medians:
#   BENCH name=dump-vs-go127 speedup=<go wall / ctrace wall>
#     memory_ratio=<ctrace RSS / go RSS> ... same_output=yes|no
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_dump127 "${1:-build}"
mb=${BENCH127_MB:-45}
go=$GO127
[ -x "$go" ] || die "needs Go 1.27 at $go (scripts/go-oracles.sh)"
gotrace=$(go_trace_tool "$go") || die "cannot build Go 1.27's trace tool"
trace=$(bench_go_trace "$go" 27 "$mb")
if [ ! -s "$trace.same" ]; then
  echo "bench_dump127: comparing ctrace dump with go tool trace -d=parsed on $trace (takes a while)" >&2
  go_sha=$("$gotrace" -d=parsed "$trace" 2>"$dir/go127.err" | sha1sum) || die "go tool trace -d=parsed failed"
  c_sha=$("$ctrace" dump "$trace" | sha1sum) || die "ctrace dump failed"
  if [ "$go_sha" = "$c_sha" ]; then echo yes >"$trace.same"; else echo no >"$trace.same"; fi
fi
same=$(cat "$trace.same")
line=$("$ctrace" check "$trace")
gens=$(sed -nE 's/.* ([0-9]+) generations.*/\1/p' <<<"$line")
events=$(sed -nE 's/.*trace, ([0-9]+) events.*/\1/p' <<<"$line")
echo "bench_dump127: $line; ctrace dump prints what Go prints: $same" >&2

rm -f "$dir"/{dump127,go127}.times
for r in $(seq 1 "$rounds"); do
  bench_measure dump127 "$r" "$ctrace" dump "$trace"
  bench_measure go127 "$r" "$gotrace" -d=parsed "$trace"
done
awk -v w="$(bench_median 1 "$dir/dump127.times")" -v r="$(bench_median 2 "$dir/dump127.times")" \
    -v gw="$(bench_median 1 "$dir/go127.times")" -v gr="$(bench_median 2 "$dir/go127.times")" -v name=dump-vs-go127 \
    -v mb="$(bench_mb "$trace")" \
    -v g="$gens" -v ev="$events" -v k="$rounds" -v same="$same" 'BEGIN {
  if (w < 0.01) w = 0.01
  printf "BENCH name=%s source=go speedup=%.1f memory_ratio=%.4f ctrace_s=%.2f go_s=%.2f ctrace_rss_mb=%.1f go_rss_mb=%.1f trace_mb=%s generations=%s events=%s rounds=%s same_output=%s\n",
    name, gw / w, r / gr, w, gw, r / 1024, gr / 1024, mb, g, ev, k, same
}'
