# lib.sh - what the benchmarks that time whole commands share. Sourced by
# a script run from anywhere, after its `set` options:
#
#     . "$(dirname "$0")/lib.sh"
#     bench_init bench_big "${1:-build}"
#
# bench_init NAME BUILD: BUILD -h or --help prints the script's header
# comment and exits; else cds to the source tree, sources tests/lib/go_paths.sh
# and sets build, ctrace, dir (BUILD/bench, absolute, made), rounds
# (BENCH_ROUNDS, default 3) and Go's environment (its caches under dir,
# no network, no toolchain switch). Defines die.
bench_init() {
  bench_name=$1
  build=$2
  case $build in
  -h | --help) # the script's header comment is its usage
    sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p;}' "$0"
    exit 0
    ;;
  esac
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  . tests/lib/go_paths.sh
  ctrace=$build/bin/ctrace
  rounds=${BENCH_ROUNDS:-3}
  [ -x "$ctrace" ] || die "$ctrace not built"
  /usr/bin/time -f '' true 2>/dev/null || die "needs GNU time as /usr/bin/time (Debian package time)"
  mkdir -p "$build/bench"
  dir=$(cd "$build/bench" && pwd)
  unset GOFLAGS
  export GOTOOLCHAIN=local GOCACHE="$dir/gocache" GOPROXY=off CGO_ENABLED=0
  if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then
    export HOME="$dir/home"
    mkdir -p "$HOME"
  fi
}

die() {
  echo "${bench_name:-bench}: $*" >&2
  exit 1
}

# bench_go_trace GO MINOR MB [NAME]: prints the path of an MB-megabyte
# trace that Go 1.MINOR (at GO) writes running bench/gotrace_NAME.go.in
# (default bench), written once and kept until the program or that Go
# changes (its .key file); with BENCH_GO_PROCS=N set, run with
# GOMAXPROCS=N (its own file).
bench_go_trace() {
  local go=$1 minor=$2 mb=$3 name=${4:-bench}
  local src=bench/gotrace_$name.go.in prog=$dir/gotrace_${name}1$minor key
  key=$( { "$go" version; cat "$src"; } | sha256sum | cut -c1-40)
  if [ ! -x "$prog" ] || [ "$(cat "$prog.key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$prog.d"
    mkdir -p "$prog.d"
    cp "$src" "$prog.d/main.go"
    printf 'module gotrace_%s\n\ngo 1.23\n' "$name" >"$prog.d/go.mod"
    (cd "$prog.d" && "$go" build -o "$prog.tmp" .) >&2 || die "cannot build $src with $go"
    mv -f "$prog.tmp" "$prog"
    echo "$key" >"$prog.key"
  fi
  local trace=$dir/go1$minor-${mb}mb.trace
  [ "$name" = bench ] || trace=$dir/go1$minor-$name-${mb}mb.trace
  local procs=${BENCH_GO_PROCS:-}
  [ -z "$procs" ] || trace=${trace%.trace}-p$procs.trace
  if [ ! -s "$trace" ] || [ "$(cat "$trace.key" 2>/dev/null)" != "$key" ]; then
    echo "$bench_name: writing a $mb MB trace with Go 1.$minor to $trace" >&2
    rm -f "$trace" "$trace.key" "$trace.same"
    env ${procs:+GOMAXPROCS=$procs} "$prog" "$trace.tmp" "$mb" >&2 || die "$prog failed"
    mv "$trace.tmp" "$trace"
    echo "$key" >"$trace.key"
  fi
  echo "$trace"
}

# The cases that read a whole trace (bench_read_cmd).
bench_read_cases="check stats pprof-sync export"

# bench_read_round PREFIX ROUND TRACE TRACE4: a round of those cases, each
# on TRACE and on TRACE4 (four times as long), measured as PREFIX-CASE and
# PREFIX-CASE-4x (their outputs removed at the end).
bench_read_round() {
  local c
  for c in $bench_read_cases; do
    bench_read_cmd "$c" "$3"
    bench_measure "$1-$c" "$2" "${cmd[@]}"
    bench_read_cmd "$c" "$4"
    bench_measure "$1-$c-4x" "$2" "${cmd[@]}"
  done
  rm -f "$dir/read.pb" "$dir/read.perfetto"
}

# bench_read_cmd CASE TRACE: in the array cmd, the command of one of the
# cases that read a whole trace, its output in dir.
bench_read_cmd() {
  case $1 in
  check) cmd=("$ctrace" check "$2") ;;
  stats) cmd=("$ctrace" stats "$2") ;;
  pprof-sync) cmd=("$ctrace" pprof -t sync -o "$dir/read.pb" "$2") ;;
  export) cmd=("$ctrace" export -o "$dir/read.perfetto" "$2") ;;
  # bench_churn.sh's own: those that write a row or a sample a goroutine,
  # and filters (gotrace_churn's goroutines are main.main.func1 and func2;
  # each receiver waits in a region "recv").
  stats-csv) cmd=("$ctrace" stats --format=csv "$2") ;;
  pprof-wall) cmd=("$ctrace" pprof -t wall -o "$dir/read.pb" "$2") ;;
  pprof-sync-goroutine) cmd=("$ctrace" pprof -t sync --goroutine=main.main.func1 -o "$dir/read.pb" "$2") ;;
  pprof-sync-region) cmd=("$ctrace" pprof -t sync --region=recv -o "$dir/read.pb" "$2") ;;
  pprof-waker-goroutine) cmd=("$ctrace" pprof -t waker --goroutine=main.main.func1 -o "$dir/read.pb" "$2") ;;
  pprof-waker-region) cmd=("$ctrace" pprof -t waker --region=recv -o "$dir/read.pb" "$2") ;;
  pprof-cpu-goroutine) cmd=("$ctrace" pprof -t cpu --goroutine=main.main.func1 -o "$dir/read.pb" "$2") ;;
  pprof-cpu-region) cmd=("$ctrace" pprof -t cpu --region=recv -o "$dir/read.pb" "$2") ;;
  esac
}

# bench_measure NAME ROUND CMD...: runs CMD once under GNU time (its output
# thrown away, its stderr in dir/NAME.err) and appends "wall_s rss_kb
# cpu_s" to dir/NAME.times; CPU is user + system, which a loaded machine
# moves less than wall time.
bench_measure() {
  local name=$1 r=$2
  shift 2
  local out=$dir/$name.time
  if ! /usr/bin/time -f '%e %M %U %S' -o "$out" "$@" >/dev/null 2>"$dir/$name.err"; then
    cat "$dir/$name.err" >&2
    die "$name failed: $*"
  fi
  tail -n 1 "$out" | awk '{print $1, $2, $3 + $4}' >>"$dir/$name.times"
  echo "$bench_name: round $r $name: $(tail -n 1 "$dir/$name.times" |
    awk '{printf "%.2f s (cpu %.2f s), %.1f MB", $1, $3, $2 / 1024}')" >&2
}

# bench_median COLUMN FILE: the median of a column of a .times file.
bench_median() {
  awk -v c="$1" '{print $c}' "$2" | sort -g |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# bench_mb FILE: its size in megabytes (10^6), one decimal.
bench_mb() { awk -v b="$(stat -L -c %s "$1")" 'BEGIN {printf "%.1f", b / 1e6}'; }
