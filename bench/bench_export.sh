#!/usr/bin/env bash
# bench_export.sh: the size of `ctrace export` in Perfetto's format against
# the trace's, and its time and memory, on the traces the dump benchmarks
# cache in BUILD_DIR/bench/: the one Go 1.23 writes (bench_dump122.sh) and
# the classic one (bench_dump.sh). Perfetto's UI holds a trace in a
# browser tab at two to four times its size, so the ratio is what decides
# whether a trace opens.
#   bench/bench_export.sh [BUILD_DIR]          (make bench runs it, after them)
# Environment: BENCH122_MB and BENCH_TRACE_MB (default 40: which cached traces),
# BENCH_ROUNDS (default 3).
#
# For BENCH_ROUNDS rounds, `ctrace export -o FILE TRACE` (its packets
# deflated in bundles, the default) and `ctrace export --plain` in turn
# under GNU time; one line a trace, from the medians:
#   BENCH name=export-size source=go123|classic format=perfetto trace_mb=..
#     out_mb=.. ratio=<out / trace> export_s=.. cpu_s=.. rss_mb=..
#     plain_mb=.. plain_ratio=.. plain_s=.. plain_cpu_s=.. plain_rss_mb=..
#     window_mb=..
# window_mb: the export of the trace's first 100 ms (--to 100ms).
# A trace not cached yet is said and left out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_export "${1:-build}"
out=$dir/export.pftrace
trap 'rm -f "$out" "$out.plain" "$out.win"' EXIT

bench() {
  local source=$1 trace=$2
  if [ ! -s "$trace" ]; then
    echo "bench_export: no $trace (written by the dump benchmarks): $source left out" >&2
    return 0
  fi
  local f=$dir/export-$source.times p=$dir/export-$source-plain.times r
  rm -f "$f" "$p"
  for r in $(seq 1 "$rounds"); do
    bench_measure "export-$source" "$r" "$ctrace" export -o "$out" "$trace"
    bench_measure "export-$source-plain" "$r" "$ctrace" export --plain -o "$out.plain" "$trace"
  done
  "$ctrace" export --to 100ms -o "$out.win" "$trace"
  awk -v src="$source" -v tb="$(stat -L -c %s "$trace")" -v ob="$(stat -c %s "$out")" -v wb="$(stat -c %s "$out.win")" \
      -v pb="$(stat -c %s "$out.plain")" -v k="$rounds" \
      -v s="$(bench_median 1 "$f")" -v m="$(bench_median 2 "$f")" -v c="$(bench_median 3 "$f")" \
      -v ps="$(bench_median 1 "$p")" -v pm="$(bench_median 2 "$p")" -v pc="$(bench_median 3 "$p")" 'BEGIN {
    printf "BENCH name=export-size source=%s format=perfetto trace_mb=%.1f out_mb=%.1f ratio=%.2f export_s=%.2f cpu_s=%.2f rss_mb=%.1f plain_mb=%.1f plain_ratio=%.2f plain_s=%.2f plain_cpu_s=%.2f plain_rss_mb=%.1f window_mb=%.1f rounds=%s\n",
      src, tb / 1e6, ob / 1e6, ob / tb, s, c, m / 1024, pb / 1e6, pb / tb, ps, pc, pm / 1024, wb / 1e6, k }'
}
bench go123 "$dir/go123-${BENCH122_MB:-40}mb.trace"
bench classic "$dir/dump-${BENCH_TRACE_MB:-40}mb.trace"
