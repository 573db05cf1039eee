#!/usr/bin/env bash
# bench_dump122.sh: ctrace dump against Go 1.23's `go tool trace -d=1` on a
# large trace Go 1.23 writes, and ctrace's peak memory on a trace four
# times as long (four times the generations).
#   bench/bench_dump122.sh [BUILD_DIR]          (make bench runs it)
# Environment: BENCH122_MB (default 40), BENCH_ROUNDS (default 3), GO123
# (tests/lib/go_paths.sh).
#
# bench/gotrace_bench.go.in is built with Go 1.23 (GOTOOLCHAIN=local,
# GOFLAGS unset, a private GOCACHE) into BUILD_DIR/bench/, and writes the
# two traces there (MB and 4 x MB megabytes), cached until the program or
# Go changes. The first time, Go's output is checked against ctrace's
# (the same lines, without their times and sorted: Go's order of events
# of equal time varies from run to run) and the verdict kept.
#
# Then, for BENCH_ROUNDS rounds: `ctrace dump` on both traces and Go's
# trace tool with -d=1 (its binary, run directly) on the first, each under
# GNU time. One line from the medians:
#   BENCH name=dump-vs-go123 source=go speedup=<go wall / ctrace wall>
#     memory_ratio=<ctrace RSS / go RSS> ... ctrace_rss_4x_mb=<on the 4x trace>
#     rss_growth_4x=<ctrace RSS 4x / ctrace RSS> generations=... generations_4x=...
#
# The same on an MB-megabyte trace ctrace writes in Go's current format
# (bench_gen_trace, CTRACE_FORMAT=go1.22), written anew each run (it is
# the writer's output that is measured too) and held to Go's output the
# same way each time:
#   BENCH name=dump-vs-go123 source=ctrace speedup=... memory_ratio=...
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_dump122 "${1:-build}"
mb=${BENCH122_MB:-40}
go=$GO123
[ -x "$go" ] || die "needs Go 1.23 at $go (Debian: golang-1.23-go from bookworm-backports)"
gotrace=$(go_trace_tool "$go") || die "no trace tool in Go 1.23"
trace=$(bench_go_trace "$go" 23 "$mb")
trace4=$(bench_go_trace "$go" 23 $((4 * mb)))

# ---- same output? (once, not timed) --------------------------------------------
untimed() { sed -E 's/ Time=-?[0-9]+//' | LC_ALL=C sort -S 25% | sha1sum | cut -d' ' -f1; }
if [ ! -s "$trace.same" ]; then
  echo "bench_dump122: comparing ctrace dump with go tool trace -d=1 on $trace (takes a while)" >&2
  go_sha=$("$gotrace" -d=1 "$trace" 2>"$dir/go123.err" | untimed) || die "go tool trace -d=1 failed"
  c_sha=$("$ctrace" dump "$trace" | untimed) || die "ctrace dump failed"
  if [ "$go_sha" = "$c_sha" ]; then echo yes >"$trace.same"; else echo no >"$trace.same"; fi
fi
same=$(cat "$trace.same")
gens=$("$ctrace" check "$trace" | sed -nE 's/.* ([0-9]+) generations.*/\1/p')
gens4=$("$ctrace" check "$trace4" | sed -nE 's/.* ([0-9]+) generations.*/\1/p')
events=$("$ctrace" check "$trace" | sed -nE 's/.*trace, ([0-9]+) events.*/\1/p')
echo "bench_dump122: $trace: $(stat -c %s "$trace") bytes, $events events, $gens generations;" \
     "$trace4: $gens4 generations; ctrace dump prints the lines Go prints: $same" >&2

# ---- timed rounds ------------------------------------------------------------------
rm -f "$dir"/{dump122,dump122x4,go123}.times
for r in $(seq 1 "$rounds"); do
  bench_measure dump122 "$r" "$ctrace" dump "$trace"
  bench_measure dump122x4 "$r" "$ctrace" dump "$trace4"
  bench_measure go123 "$r" "$gotrace" -d=1 "$trace"
done
awk -v w="$(bench_median 1 "$dir/dump122.times")" -v r="$(bench_median 2 "$dir/dump122.times")" \
    -v w4="$(bench_median 1 "$dir/dump122x4.times")" -v r4="$(bench_median 2 "$dir/dump122x4.times")" \
    -v gw="$(bench_median 1 "$dir/go123.times")" -v gr="$(bench_median 2 "$dir/go123.times")" \
    -v mb="$(bench_mb "$trace")" \
    -v mb4="$(bench_mb "$trace4")" \
    -v g="$gens" -v g4="$gens4" -v ev="$events" -v k="$rounds" -v same="$same" 'BEGIN {
  if (w < 0.01) w = 0.01
  printf "BENCH name=dump-vs-go123 source=go speedup=%.1f memory_ratio=%.4f ctrace_s=%.2f go_s=%.2f ctrace_rss_mb=%.1f go_rss_mb=%.1f ctrace_s_4x=%.2f ctrace_rss_4x_mb=%.1f rss_growth_4x=%.2f trace_mb=%s trace_4x_mb=%s generations=%s generations_4x=%s events=%s rounds=%s same_output=%s\n",
    gw / w, r / gr, w, gw, r / 1024, gr / 1024, w4, r4 / 1024, r4 / r, mb, mb4, g, g4, ev, k, same
}'

# ---- a trace ctrace writes in Go's current format -----------------------------------
ctrace_trace=$dir/ctrace122-${mb}mb.trace
CTRACE_FORMAT=go1.22 "$build/bin/bench_gen_trace" "$ctrace_trace" "$mb" 2>"$dir/gen122.err" ||
  { cat "$dir/gen122.err" >&2; die "bench_gen_trace failed"; }
go_sha=$("$gotrace" -d=1 "$ctrace_trace" 2>"$dir/go123c.err" | untimed) || die "go tool trace -d=1 failed on $ctrace_trace"
c_sha=$("$ctrace" dump "$ctrace_trace" | untimed) || die "ctrace dump failed on $ctrace_trace"
same_c=$([ "$go_sha" = "$c_sha" ] && echo yes || echo no)
gens_c=$("$ctrace" check "$ctrace_trace" | sed -nE 's/.* ([0-9]+) generations.*/\1/p')
events_c=$("$ctrace" check "$ctrace_trace" | sed -nE 's/.*trace, ([0-9]+) events.*/\1/p')
echo "bench_dump122: $ctrace_trace: $(stat -c %s "$ctrace_trace") bytes, $events_c events," \
     "$gens_c generations; ctrace dump prints the lines Go prints: $same_c" >&2
rm -f "$dir"/{dump122c,go123c}.times
for r in $(seq 1 "$rounds"); do
  bench_measure dump122c "$r" "$ctrace" dump "$ctrace_trace"
  bench_measure go123c "$r" "$gotrace" -d=1 "$ctrace_trace"
done
awk -v w="$(bench_median 1 "$dir/dump122c.times")" -v r="$(bench_median 2 "$dir/dump122c.times")" \
    -v gw="$(bench_median 1 "$dir/go123c.times")" -v gr="$(bench_median 2 "$dir/go123c.times")" \
    -v mb="$(bench_mb "$ctrace_trace")" \
    -v g="$gens_c" -v ev="$events_c" -v k="$rounds" -v same="$same_c" 'BEGIN {
  if (w < 0.01) w = 0.01
  printf "BENCH name=dump-vs-go123 source=ctrace speedup=%.1f memory_ratio=%.4f ctrace_s=%.2f go_s=%.2f ctrace_rss_mb=%.1f go_rss_mb=%.1f trace_mb=%s generations=%s events=%s rounds=%s same_output=%s\n",
    gw / w, r / gr, w, gw, r / 1024, gr / 1024, mb, g, ev, k, same
}'
