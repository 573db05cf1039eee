#!/usr/bin/env bash
# bench_dump127.sh: ctrace against Go 1.27 on a large trace Go 1.27 writes
# (a go 1.26 trace): `ctrace dump` against `go tool trace -d=parsed`, and
# `ctrace pprof -t sync` against `go tool trace -pprof=sync`.
#   bench/bench_dump127.sh [BUILD_DIR]          (make bench runs it)
# Environment: BENCH127_MB (default 45), BENCH_ROUNDS (default 3), GO127
# (tests/lib/go_paths.sh: build/go/go-1.27, which scripts/go-oracles.sh unpacks).
#
# bench/gotrace_bench.go.in is built with Go 1.27 into BUILD_DIR/bench/ and
# writes the trace there, cached until the program or Go changes. The first
# time, Go's -d=parsed output is compared with ctrace dump's, byte for byte
# (Go 1.27's order of events is deterministic), and the verdict kept.
# Then BENCH_ROUNDS rounds of each command under GNU time; from the medians:
#   BENCH name=dump-vs-go127 speedup=<go wall / ctrace wall>
#     memory_ratio=<ctrace RSS / go RSS> ... same_output=yes|no
#   BENCH name=pprof-vs-go127 speedup=... memory_ratio=...
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib/go_paths.sh
build=${1:-build}
mb=${BENCH127_MB:-45}
rounds=${BENCH_ROUNDS:-3}
go=$GO127
ctrace=$build/bin/ctrace
time_bin=/usr/bin/time
dir=$build/bench
die() { echo "bench_dump127: $*" >&2; exit 1; }
[ -x "$ctrace" ] || die "$ctrace not built"
[ -x "$go" ] || die "needs Go 1.27 at $go (scripts/go-oracles.sh)"
"$time_bin" -f '' true 2>/dev/null || die "needs GNU time as $time_bin (Debian package time)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
unset GOFLAGS
export GOTOOLCHAIN=local GOCACHE="$dir/gocache" GOPROXY=off CGO_ENABLED=0
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then export HOME="$dir/home"; mkdir -p "$HOME"; fi
gotrace=$(go_trace_tool "$go") || die "cannot build Go 1.27's trace tool"

prog=$dir/gotrace_bench127
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
trace=$dir/go127-${mb}mb.trace
if [ ! -s "$trace" ] || [ "$(cat "$trace.key" 2>/dev/null)" != "$key" ]; then
  echo "bench_dump127: writing a $mb MB trace with Go 1.27 to $trace" >&2
  rm -f "$trace" "$trace.key" "$trace.same"
  "$prog" "$trace.tmp" "$mb"
  mv "$trace.tmp" "$trace"
  echo "$key" >"$trace.key"
fi
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

measure() {
  local name=$1 r=$2
  shift 2
  local out=$dir/time127.out
  if ! "$time_bin" -f '%e %M %U %S' -o "$out" "$@" >/dev/null 2>"$dir/$name.err"; then
    cat "$dir/$name.err" >&2
    die "$name failed: $*"
  fi
  tail -n 1 "$out" >>"$dir/$name.times"
  echo "bench_dump127: round $r $name: $(tail -n 1 "$out" | awk '{printf "%.2f s, %.1f MB", $1, $2 / 1024}')" >&2
}
rm -f "$dir"/{dump127,go127,pprof127,gopprof127}.times
for r in $(seq 1 "$rounds"); do
  measure dump127 "$r" "$ctrace" dump "$trace"
  measure go127 "$r" "$gotrace" -d=parsed "$trace"
  measure pprof127 "$r" "$ctrace" pprof -t sync -o "$dir/pprof127.pb" "$trace"
  measure gopprof127 "$r" "$gotrace" -pprof=sync "$trace"
done
median() { awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for pair in "dump127 go127 dump-vs-go127" "pprof127 gopprof127 pprof-vs-go127"; do
  set -- $pair
  awk -v w="$(median 1 "$dir/$1.times")" -v r="$(median 2 "$dir/$1.times")" \
      -v gw="$(median 1 "$dir/$2.times")" -v gr="$(median 2 "$dir/$2.times")" -v name="$3" \
      -v mb="$(awk -v b="$(stat -c %s "$trace")" 'BEGIN {printf "%.1f", b / 1e6}')" \
      -v g="$gens" -v ev="$events" -v k="$rounds" -v same="$same" 'BEGIN {
    if (w < 0.01) w = 0.01
    printf "BENCH name=%s source=go speedup=%.1f memory_ratio=%.4f ctrace_s=%.2f go_s=%.2f ctrace_rss_mb=%.1f go_rss_mb=%.1f trace_mb=%s generations=%s events=%s rounds=%s same_output=%s\n",
      name, gw / w, r / gr, w, gw, r / 1024, gr / 1024, mb, g, ev, k, same
  }'
done
