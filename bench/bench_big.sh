#!/usr/bin/env bash
# bench_big.sh: the commands that read a whole trace (check, stats, pprof -t
# sync, export) on a large trace Go 1.23 writes, side by side with Go 1.23's
# own tool in the same run, and their time and peak memory on a trace four
# times as long (the same program run four times as long).
#   bench/bench_big.sh [BUILD_DIR]          (make bench runs it)
# Environment: BENCH122_MB (default 40), BENCH_ROUNDS (default 3),
# BENCH_GO_ROUNDS (default BENCH_ROUNDS: Go takes 25 to 80 s a run), GO123
# (tests/lib/go_paths.sh).
#
# The traces are bench_dump122.sh's (bench/gotrace_bench.go.in built with
# Go 1.23, BUILD_DIR/bench/go123-MBmb.trace and the 4 x MB one), made here
# the same way when missing. Go's side: `go tool trace -d=1` (Go's reader
# and ordering: what check, stats and export read) and `-pprof=sync`, its
# trace tool's binary run directly. Each command under GNU time, rounds
# interleaved; one line per case from the medians (wall seconds, and CPU
# seconds, user + system, which a loaded machine moves less):
#   BENCH name=<case>-vs-go123 speedup=<go wall / ctrace wall>
#     cpu_speedup=<go CPU / ctrace CPU> ctrace_s=... ctrace_cpu_s=...
#     go_s=... go_cpu_s=... rss_mb=<ctrace peak RSS>
#     go_rss_mb=... ctrace_s_4x=... rss_4x_mb=... rss_growth_4x=<4x / 1x RSS>
#     time_growth_4x=<4x / 1x CPU> trace_mb=... rounds=...
# Cases: check (against -d=1), stats (against -d=1), pprof-sync (against
# -pprof=sync), export (Perfetto, to a file; against -d=1).
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib/go_paths.sh
build=${1:-build}
mb=${BENCH122_MB:-40}
rounds=${BENCH_ROUNDS:-3}
go_rounds=${BENCH_GO_ROUNDS:-$rounds}
go=$GO123
ctrace=$build/bin/ctrace
time_bin=/usr/bin/time
dir=$build/bench
die() { echo "bench_big: $*" >&2; exit 1; }
[ -x "$ctrace" ] || die "$ctrace not built"
[ -x "$go" ] || die "needs Go 1.23 at $go (Debian: golang-1.23-go from bookworm-backports)"
"$time_bin" -f '' true 2>/dev/null || die "needs GNU time as $time_bin (Debian package time)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
unset GOFLAGS
export GOTOOLCHAIN=local GOCACHE="$dir/gocache" GOPROXY=off CGO_ENABLED=0
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then export HOME="$dir/home"; mkdir -p "$HOME"; fi
gotrace="$("$go" env GOTOOLDIR)/trace"
[ -x "$gotrace" ] || die "no $gotrace"

# ---- the traces, shared with bench_dump122.sh ----------------------------------
prog=$dir/gotrace_bench
key=$( { "$go" version; cat bench/gotrace_bench.go.in; } | sha256sum | cut -c1-40)
if [ ! -x "$prog" ] || [ "$(cat "$prog.key" 2>/dev/null)" != "$key" ]; then
  rm -rf "$prog.d"
  mkdir -p "$prog.d"
  cp bench/gotrace_bench.go.in "$prog.d/main.go"
  printf 'module gotrace_bench\n\ngo 1.23\n' >"$prog.d/go.mod"
  (cd "$prog.d" && "$go" build -o "$prog.tmp" .) || die "cannot build bench/gotrace_bench.go.in with $go"
  mv -f "$prog.tmp" "$prog"
  echo "$key" >"$prog.key"
fi
trace=$dir/go123-${mb}mb.trace
trace4=$dir/go123-$((4 * mb))mb.trace
for t in "$trace:$mb" "$trace4:$((4 * mb))"; do
  f=${t%%:*}
  m=${t##*:}
  if [ ! -s "$f" ] || [ "$(cat "$f.key" 2>/dev/null)" != "$key" ]; then
    echo "bench_big: writing a $m MB trace with Go 1.23 to $f" >&2
    rm -f "$f" "$f.key" "$f.same"
    "$prog" "$f.tmp" "$m"
    mv "$f.tmp" "$f"
    echo "$key" >"$f.key"
  fi
done
mbs() { awk -v b="$(stat -L -c %s "$1")" 'BEGIN {printf "%.1f", b / 1e6}'; }

# ---- timed rounds ------------------------------------------------------------------
# measure NAME ROUND CMD...: one run under GNU time, appended to NAME.times
# as "wall rss_kb cpu".
measure() {
  local name=$1 r=$2
  shift 2
  local out=$dir/big.time
  if ! "$time_bin" -f '%e %M %U %S' -o "$out" "$@" >/dev/null 2>"$dir/big-$name.err"; then
    cat "$dir/big-$name.err" >&2
    die "$name failed: $*"
  fi
  tail -n 1 "$out" | awk '{print $1, $2, $3 + $4}' >>"$dir/big-$name.times"
  echo "bench_big: round $r $name: $(tail -n 1 "$dir/big-$name.times" | awk '{printf "%.2f s (cpu %.2f s), %.1f MB", $1, $3, $2 / 1024}')" >&2
}
cases="check stats pprof-sync export"
# cmd_of CASE TRACE: the command of a case, in the array cmd.
cmd_of() {
  case $1 in
  check) cmd=("$ctrace" check "$2") ;;
  stats) cmd=("$ctrace" stats "$2") ;;
  pprof-sync) cmd=("$ctrace" pprof -t sync -o "$dir/big.pb" "$2") ;;
  export) cmd=("$ctrace" export -o "$dir/big.perfetto" "$2") ;;
  esac
}
for c in $cases god1 gopprof; do rm -f "$dir/big-$c.times" "$dir/big-$c-4x.times"; done
for r in $(seq 1 "$rounds"); do
  for c in $cases; do
    cmd_of "$c" "$trace"
    measure "$c" "$r" "${cmd[@]}"
    cmd_of "$c" "$trace4"
    measure "$c-4x" "$r" "${cmd[@]}"
  done
  if [ "$r" -le "$go_rounds" ]; then
    measure god1 "$r" "$gotrace" -d=1 "$trace"
    measure gopprof "$r" "$gotrace" -pprof=sync "$trace"
  fi
done
rm -f "$dir/big.pb" "$dir/big.perfetto"
median() { awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for c in $cases; do
  g=god1
  [ "$c" = pprof-sync ] && g=gopprof
  f=$dir/big-$c.times f4=$dir/big-$c-4x.times gf=$dir/big-$g.times
  awk -v name="$c" -v w="$(median 1 "$f")" -v r="$(median 2 "$f")" -v cpu="$(median 3 "$f")" \
      -v w4="$(median 1 "$f4")" -v r4="$(median 2 "$f4")" -v cpu4="$(median 3 "$f4")" \
      -v gw="$(median 1 "$gf")" -v gr="$(median 2 "$gf")" -v gcpu="$(median 3 "$gf")" -v go_cmd="$g" \
      -v mb="$(mbs "$trace")" -v mb4="$(mbs "$trace4")" -v k="$rounds" -v gk="$go_rounds" 'BEGIN {
    if (w < 0.01) w = 0.01
    if (cpu < 0.01) cpu = 0.01
    printf "BENCH name=%s-vs-go123 speedup=%.1f cpu_speedup=%.1f ctrace_s=%.2f ctrace_cpu_s=%.2f go_s=%.2f go_cpu_s=%.2f rss_mb=%.1f go_rss_mb=%.1f ctrace_s_4x=%.2f ctrace_cpu_s_4x=%.2f rss_4x_mb=%.1f rss_growth_4x=%.2f time_growth_4x=%.2f go=%s trace_mb=%s trace_4x_mb=%s rounds=%s go_rounds=%s\n",
      name, gw / w, gcpu / cpu, w, cpu, gw, gcpu, r / 1024, gr / 1024, w4, cpu4, r4 / 1024, r4 / r, cpu4 / cpu,
      go_cmd == "god1" ? "d=1" : "pprof=sync", mb, mb4, k, gk
  }'
done
