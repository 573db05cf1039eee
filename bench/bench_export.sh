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
# For BENCH_ROUNDS rounds, `ctrace export -o FILE TRACE` under GNU time; one
# line a trace, from the medians:
#   BENCH name=export-size source=go123|classic format=perfetto trace_mb=..
#     out_mb=.. ratio=<out / trace> export_s=.. rss_mb=.. window_mb=..
# window_mb: the export of the trace's first 100 ms (--to 100ms).
# A trace not cached yet is said and left out.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${BENCH_ROUNDS:-3}
ctrace=$build/bin/ctrace
time_bin=/usr/bin/time
dir=$build/bench
die() { echo "bench_export: $*" >&2; exit 1; }
[ -x "$ctrace" ] || die "$ctrace not built"
"$time_bin" -f '' true 2>/dev/null || die "needs GNU time as $time_bin (Debian package time)"
mkdir -p "$dir"
out=$dir/export.pftrace
trap 'rm -f "$out" "$out.win"' EXIT
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

bench() {
  local source=$1 trace=$2
  if [ ! -s "$trace" ]; then
    echo "bench_export: no $trace (written by the dump benchmarks): $source left out" >&2
    return 0
  fi
  rm -f "$dir/export.times"
  local r
  for r in $(seq 1 "$rounds"); do
    "$time_bin" -f '%e %M' -o "$dir/export.time" "$ctrace" export -o "$out" "$trace" 2>"$dir/export.err" ||
      { cat "$dir/export.err" >&2; die "ctrace export $trace failed"; }
    tail -n 1 "$dir/export.time" >>"$dir/export.times"
    echo "bench_export: round $r $source: $(tail -n 1 "$dir/export.time" | awk '{printf "%.2f s, %.1f MB", $1, $2 / 1024}')" >&2
  done
  "$ctrace" export --to 100ms -o "$out.win" "$trace"
  local tb ob wb
  tb=$(stat -L -c %s "$trace")
  ob=$(stat -c %s "$out")
  wb=$(stat -c %s "$out.win")
  awk -v src="$source" -v tb="$tb" -v ob="$ob" -v wb="$wb" -v k="$rounds" \
      -v s="$(awk '{print $1}' "$dir/export.times" | median)" -v m="$(awk '{print $2 / 1024}' "$dir/export.times" | median)" 'BEGIN {
    printf "BENCH name=export-size source=%s format=perfetto trace_mb=%.1f out_mb=%.1f ratio=%.2f export_s=%.2f rss_mb=%.1f window_mb=%.1f rounds=%s\n",
      src, tb / 1e6, ob / 1e6, ob / tb, s, m, wb / 1e6, k }'
}

bench go123 "$dir/go123-${BENCH122_MB:-40}mb.trace"
bench classic "$dir/dump-${BENCH_TRACE_MB:-40}mb.trace"
