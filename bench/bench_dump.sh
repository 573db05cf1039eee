#!/usr/bin/env bash
# bench_dump.sh: ctrace's reader against Go's on one large trace.
#   bench/bench_dump.sh [BUILD_DIR]          (make bench runs it)
# Environment: BENCH_TRACE_MB (default 40), BENCH_ROUNDS (default 3).
#
# The trace comes from build/bin/bench_gen_trace (bench/gen_trace.c) and is
# cached in BUILD_DIR/bench/, with the SHA-1 of the sorted lines Go prints
# for it and their count, until the generator is rebuilt. The first time, Go's
# `go tool trace -d` must accept it.
#
# Then, interleaved for BENCH_ROUNDS rounds: `ctrace dump FILE >/dev/null`,
# `ctrace check FILE >/dev/null` and Go's trace tool with -d (its binary in
# `go env GOTOOLDIR`, run directly, so the go command's own start-up is not
# counted), each under GNU time: wall seconds and peak RSS. One line per
# comparison, from the medians:
#   BENCH name=dump-vs-go speedup=<go wall / ctrace wall> memory_ratio=<ctrace RSS / go RSS> ...
# In the same rounds, the analyses that read the whole trace, each against
# ctrace dump (the reader's own cost) on the same file: `ctrace export` in
# both formats and `ctrace pprof -t sync`, to /dev/null as dump is (out_bytes:
# what they would write):
#   BENCH name=export-perfetto ratio_to_dump=<wall / dump wall> s=.. dump_s=.. rss_mb=.. dump_rss_mb=.. ...
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_dump "${1:-build}"
mb=${BENCH_TRACE_MB:-40}
gen=$build/bin/bench_gen_trace
trace=$dir/dump-${mb}mb.trace
[ -x "$gen" ] || die "$gen not built"
command -v go >/dev/null || die "needs go (Debian package golang-go)"
gotrace="$(go env GOTOOLDIR)/trace"
[ -x "$gotrace" ] || die "no $gotrace"
for sub in dump check; do
  "$ctrace" help "$sub" >/dev/null 2>&1 || die "this ctrace has no '$sub' command"
done

# ---- the trace, cached ---------------------------------------------------
if [ ! -s "$trace" ] || [ ! -s "$trace.go" ] || [ "$gen" -nt "$trace" ]; then
  echo "bench_dump: writing a ${mb} MB trace to $trace" >&2
  rm -f "$trace" "$trace.go"
  # The classic format, which the Go on PATH (Debian's 1.19) reads.
  CTRACE_FORMAT=go1.11 "$gen" "$trace.tmp" "$mb"
  echo "bench_dump: checking it with go tool trace -d (takes a while)" >&2
  if ! "$gotrace" -d "$trace.tmp" 2>"$dir/go.err" |
       awk -v f="$dir/go.lines" '{ print } END { print NR >f }' | LC_ALL=C sort -S 25% | sha1sum >"$dir/go.sha1"; then
    cat "$dir/go.err" >&2
    die "go tool trace -d rejects the generated trace"
  fi
  echo "$(cut -d' ' -f1 "$dir/go.sha1") $(cat "$dir/go.lines")" >"$trace.go.tmp"
  mv "$trace.tmp" "$trace"
  mv "$trace.go.tmp" "$trace.go"
fi
read -r go_sha go_lines <"$trace.go"
bytes=$(stat -c %s "$trace")

# ---- same output? (not timed) ----------------------------------------------
# Go orders events with equal timestamps differently from run to run (it
# sorts its merge frontier unstably), so the lines are compared sorted.
dump_sha=$("$ctrace" dump "$trace" | LC_ALL=C sort -S 25% | sha1sum | cut -d' ' -f1) || die "ctrace dump failed"
same=no
[ "$dump_sha" = "$go_sha" ] && same=yes
echo "bench_dump: $trace: $bytes bytes, $go_lines events; ctrace dump prints the lines Go prints: $same" >&2

# ---- timed rounds -------------------------------------------------------------
rm -f "$dir"/{dump,check,go,export-perfetto,export-json,pprof-sync}.times
for r in $(seq 1 "$rounds"); do
  bench_measure dump "$r" "$ctrace" dump "$trace"
  bench_measure check "$r" "$ctrace" check "$trace"
  bench_measure go "$r" "$gotrace" -d "$trace"
  bench_measure export-perfetto "$r" "$ctrace" export -f perfetto "$trace"
  bench_measure export-json "$r" "$ctrace" export -f json "$trace"
  bench_measure pprof-sync "$r" "$ctrace" pprof -t sync "$trace"
done

go_wall=$(bench_median 1 "$dir/go.times")
go_rss=$(bench_median 2 "$dir/go.times")
go_cpu=$(bench_median 3 "$dir/go.times")
for name in dump check; do
  wall=$(bench_median 1 "$dir/$name.times")
  rss=$(bench_median 2 "$dir/$name.times")
  cpu=$(bench_median 3 "$dir/$name.times")
  extra=""
  [ "$name" = dump ] && extra=" same_output=$same"
  awk -v n="$name" -v w="$wall" -v r="$rss" -v gw="$go_wall" -v gr="$go_rss" -v c="$cpu" -v gc="$go_cpu" \
      -v mb="$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}')" -v ev="$go_lines" -v x="$extra" -v k="$rounds" 'BEGIN {
    # GNU time has 10 ms resolution: a wall of 0.00 counts as 0.01.
    if (w < 0.01) w = 0.01
    printf "BENCH name=%s-vs-go speedup=%.1f memory_ratio=%.4f ctrace_s=%.2f go_s=%.2f ctrace_cpu_s=%.2f go_cpu_s=%.2f ctrace_rss_mb=%.1f go_rss_mb=%.1f trace_mb=%s events=%s rounds=%s%s\n",
      n, gw / w, r / gr, w, gw, c, gc, r / 1024, gr / 1024, mb, ev, k, x
  }'
done

# ---- the analyses against dump ----------------------------------------------------
dump_wall=$(bench_median 1 "$dir/dump.times")
dump_rss=$(bench_median 2 "$dir/dump.times")
dump_cpu=$(bench_median 3 "$dir/dump.times")
for name in export-perfetto export-json pprof-sync; do
  case $name in
  export-*) out=$("$ctrace" export -f "${name#export-}" "$trace" | wc -c) ;;
  *) out=$("$ctrace" pprof -t sync "$trace" | wc -c) ;;
  esac
  awk -v n="$name" -v w="$(bench_median 1 "$dir/$name.times")" -v r="$(bench_median 2 "$dir/$name.times")" \
      -v c="$(bench_median 3 "$dir/$name.times")" -v dw="$dump_wall" -v dr="$dump_rss" -v dc="$dump_cpu" \
      -v o="$out" -v k="$rounds" 'BEGIN {
    if (w < 0.01) w = 0.01
    if (dw < 0.01) dw = 0.01
    printf "BENCH name=%s ratio_to_dump=%.2f cpu_ratio_to_dump=%.2f s=%.2f dump_s=%.2f cpu_s=%.2f dump_cpu_s=%.2f rss_mb=%.1f dump_rss_mb=%.1f out_bytes=%s rounds=%s\n",
      n, w / dw, (dc > 0 ? c / dc : 0), w, dw, c, dc, r / 1024, dr / 1024, o, k
  }'
done
