#!/usr/bin/env bash
# bench_scale.sh: whether time and memory scale with a trace's length, on
# a trace 25 times the 40 MB ones: 1 GB that bench_gen_trace (a small
# server, bench/gen_trace.c) writes in Go's current format, and 40 MB of
# the same for the base.
#   bench/bench_scale.sh [BUILD_DIR]          (make bench runs it)
# Environment: BENCH_SCALE_MB (default 1024), BENCH_ROUNDS (default 1
# here: a round takes minutes).
#
# Both traces are cached in BUILD_DIR/bench/ until the generator is
# rebuilt. For each command that reads a whole trace, `ctrace check`,
# `stats`, `pprof -t sync`, `dump` and `export` (Perfetto; past the 1 GiB
# budget it warns and proposes windows, and still writes all), all to
# /dev/null, under GNU time on both traces; from the medians:
#   BENCH name=scale-<command> trace_mb=.. events=.. generations=.. s=.. cpu_s=..
#     rss_mb=.. mb_per_cpu_s=<trace MB per CPU second> base_mb=.. base_cpu_s=..
#     base_rss_mb=.. size_growth=<MB / base MB> time_growth=<CPU / base CPU>
#     rss_growth=<RSS / base RSS> rounds=..
# time_growth near size_growth is time linear in the trace's length;
# rss_growth near 1 is memory flat in it. Then a window of 500 ms at 90%
# of each trace's length, exported as a window is by default (read from
# the generation before it) and with --exact (read from the start):
#   BENCH name=scale-window trace_mb=.. window_ms=500 s=.. cpu_s=.. rss_mb=..
#     exact_s=.. exact_cpu_s=.. speedup=<exact CPU / CPU> base_cpu_s=..
#     time_growth=<CPU / base CPU>
# time_growth near 1 is a window's time flat in the trace's length.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
BENCH_ROUNDS=${BENCH_ROUNDS:-1}
bench_init bench_scale "${1:-build}"
mb=${BENCH_SCALE_MB:-1024}
gen=$build/bin/bench_gen_trace
[ -x "$gen" ] || die "$gen not built"

# trace MB: the path of an MB-megabyte trace of the generator, cached.
trace() {
  local t=$dir/scale-$1mb.trace
  if [ ! -s "$t" ] || [ "$gen" -nt "$t" ]; then
    echo "bench_scale: writing a $1 MB trace to $t" >&2
    CTRACE_FORMAT=go1.22 "$gen" "$t.tmp" "$1" >&2 || die "$gen failed"
    mv "$t.tmp" "$t"
  fi
  echo "$t"
}
base=$(trace 40)
big=$(trace "$mb")
line=$("$ctrace" check "$big") || die "ctrace check $big failed"
events=$(sed -nE 's/.*trace, ([0-9]+) events.*/\1/p' <<<"$line")
gens=$(sed -nE 's/.* ([0-9]+) generations.*/\1/p' <<<"$line")
echo "bench_scale: $line" >&2

cmds=(check stats pprof dump export)
for c in "${cmds[@]}"; do rm -f "$dir/scale-$c.times" "$dir/scale-$c-base.times"; done
for r in $(seq 1 "$rounds"); do
  for c in "${cmds[@]}"; do
    case $c in
    pprof) a=(pprof -t sync -o /dev/null) ;;
    export) a=(export -o /dev/null) ;;
    *) a=("$c") ;;
    esac
    bench_measure "scale-$c-base" "$r" "$ctrace" "${a[@]}" "$base"
    bench_measure "scale-$c" "$r" "$ctrace" "${a[@]}" "$big"
  done
done
for c in "${cmds[@]}"; do
  f=$dir/scale-$c.times b=$dir/scale-$c-base.times
  awk -v name="$c" -v w="$(bench_median 1 "$f")" -v r="$(bench_median 2 "$f")" -v cpu="$(bench_median 3 "$f")" \
      -v br="$(bench_median 2 "$b")" -v bcpu="$(bench_median 3 "$b")" -v mb="$(bench_mb "$big")" \
      -v bmb="$(bench_mb "$base")" -v ev="$events" -v g="$gens" -v k="$rounds" 'BEGIN {
    if (cpu < 0.01) cpu = 0.01
    if (bcpu < 0.01) bcpu = 0.01
    printf "BENCH name=scale-%s trace_mb=%s events=%s generations=%s s=%.2f cpu_s=%.2f rss_mb=%.1f mb_per_cpu_s=%.1f base_mb=%s base_cpu_s=%.2f base_rss_mb=%.1f size_growth=%.1f time_growth=%.1f rss_growth=%.2f rounds=%s\n",
      name, mb, ev, g, w, cpu, r / 1024, mb / cpu, bmb, bcpu, br / 1024, mb / bmb, cpu / bcpu, r / br, k
  }'
done

# A late window: its times from each trace's length (check's last field).
late() { "$ctrace" check "$1" | awk '{ ms = $(NF - 1); printf "--from %dms --to %dms", ms * 0.9, ms * 0.9 + 500 }'; }
read -r -a wbig <<<"$(late "$big")"
read -r -a wbase <<<"$(late "$base")"
# Into a file, as a window is written: to /dev/null (or a pipe, which
# cannot take a bad trace's output back) the trace is checked whole first.
rm -f "$dir"/scale-window*.times
win=$dir/scale-window.pftrace
trap 'rm -f "$win"' EXIT
for r in $(seq 1 "$rounds"); do
  bench_measure scale-window-base "$r" "$ctrace" export "${wbase[@]}" -o "$win" "$base"
  bench_measure scale-window "$r" "$ctrace" export "${wbig[@]}" -o "$win" "$big"
  bench_measure scale-window-exact "$r" "$ctrace" export --exact "${wbig[@]}" -o "$win" "$big"
done
f=$dir/scale-window.times e=$dir/scale-window-exact.times b=$dir/scale-window-base.times
awk -v w="$(bench_median 1 "$f")" -v r="$(bench_median 2 "$f")" -v cpu="$(bench_median 3 "$f")" \
    -v ew="$(bench_median 1 "$e")" -v ecpu="$(bench_median 3 "$e")" -v bcpu="$(bench_median 3 "$b")" \
    -v mb="$(bench_mb "$big")" -v k="$rounds" 'BEGIN {
  if (cpu < 0.01) cpu = 0.01
  if (bcpu < 0.01) bcpu = 0.01
  printf "BENCH name=scale-window trace_mb=%s window_ms=500 s=%.2f cpu_s=%.2f rss_mb=%.1f exact_s=%.2f exact_cpu_s=%.2f speedup=%.1f base_cpu_s=%.2f time_growth=%.2f rounds=%s\n",
    mb, w, cpu, r / 1024, ew, ecpu, ecpu / cpu, bcpu, cpu / bcpu, k
}'
