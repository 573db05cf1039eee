#!/usr/bin/env bash
# flight_check.sh - ctrace run --flight: snapshots on a signal, on a crash
# and at exit, each a trace that ctrace and Go 1.22 and 1.27 open.
#
# Usage: tests/preload/flight_check.sh CTRACE BINDIR DIR
#
# With tests/preload/flight.c: SIGUSR2 three times takes FILE.1 to FILE.3 and
# the program's own handler still runs each time; a signal named with
# --flight-signal takes them without a handler of the program's and
# without ending it; a crash leaves FILE.crash and the exit status of the
# crash untraced; --flight-at-exit writes FILE at exit, and nothing is
# written without it; snapshots of an earlier run are removed; bad
# options are refused.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
. "$here/../lib/go_paths.sh"
want_args 3 "CTRACE BINDIR DIR" $#
ctrace=$1
bin=$2/run_flight
dir=$3
fresh_dir "$dir"
ulimit -c 0
valid=()
check() {
    "$ctrace" check "$1" >"$dir/check.out" || die "ctrace check rejects $1"
    valid+=("$1")
}

# A stale snapshot of an earlier run goes.
echo stale >"$dir/a.trace.1"
out=$("$ctrace" run --flight=1s -o "$dir/a.trace" -- "$bin" snap 12 2>"$dir/a.err")
rc=$?
[ $rc -eq 7 ] || die "snap: exit status $rc, not 7"
[ "$out" = "own handler ran 3 times" ] || die "snap: the program's handler: '$out'"
for n in 1 2 3; do
    [ -s "$dir/a.trace.$n" ] || die "snap: no $dir/a.trace.$n"
    check "$dir/a.trace.$n"
done
[ -e "$dir/a.trace.4" ] && die "snap: a fourth snapshot"
[ -e "$dir/a.trace" ] && die "snap: a trace at exit without --flight-at-exit"
grep -q "wrote $dir/a.trace.3" "$dir/a.err" || die "snap: stderr does not say what it wrote"
echo "$prog: snap: three snapshots on SIGUSR2, the program's handler ran three times"

"$ctrace" run --flight=1s --flight-signal=USR1 -o "$dir/b.trace" -- "$bin" bare 10 >/dev/null 2>&1
rc=$?
[ $rc -eq 7 ] || die "bare USR1: exit status $rc, not 7 (the signal ended the program?)"
[ -s "$dir/b.trace.3" ] || die "bare USR1: no third snapshot"
check "$dir/b.trace.3"
echo "$prog: bare: --flight-signal=USR1 takes snapshots and does not end the program"

"$bin" crash
want=$?
"$ctrace" run --flight -o "$dir/c.trace" -- "$bin" crash 2>"$dir/c.err"
rc=$?
[ $rc -eq $want ] || die "crash: exit status $rc, $want untraced"
[ -s "$dir/c.trace.crash" ] || die "crash: no $dir/c.trace.crash"
check "$dir/c.trace.crash"
sleeps=$("$ctrace" dump "$dir/c.trace.crash" | grep -c 'Reason="sleep" GoID=[0-9]* Running->Waiting')
[ "$sleeps" -ge 100 ] || die "crash: $sleeps sleeps in the crash file, for the 150 before the crash"
echo "$prog: crash: exit status $rc as untraced, $(cat "$dir/check.out")"

"$ctrace" run --flight=2s --flight-at-exit -o "$dir/d.trace" -- "$bin" exit 2>/dev/null
rc=$?
[ $rc -eq 0 ] || die "exit: exit status $rc"
check "$dir/d.trace"
"$ctrace" run --flight -o "$dir/e.trace" -- "$bin" exit 2>/dev/null
[ -e "$dir/e.trace" ] && die "exit: a trace written without --flight-at-exit"
echo "$prog: exit: written with --flight-at-exit only"

# With --cpu the kept generations carry their CPU samples: Go's reader
# lists them (StackSample) with the stacks of run_compute's work.
"$ctrace" run --flight=10s --flight-at-exit --cpu -o "$dir/f.trace" -- "$2/run_compute" 300000000 2 \
    >/dev/null 2>&1 || die "cpu: ctrace run --flight --cpu run_compute failed"
check "$dir/f.trace"
"$(go_trace_tool "$GO127")" -d=parsed "$dir/f.trace" >"$dir/f.d" 2>&1 || die "cpu: Go 1.27 does not parse $dir/f.trace"
n=$(awk '/ StackSample / { s = 1; next } s == 1 && /^Stack=/ { s = 2; next }
         s == 2 && /^\twork @/ { n++ } { s = 0 } END { print n + 0 }' "$dir/f.d")
[ "$n" -ge 20 ] || die "cpu: $n CPU samples in work in the flight recorder's trace, want >= 20"
echo "$prog: cpu: $n CPU samples in work, as Go 1.27 reads them"

for bad in "--flight=abc" "--flight --format=go1.11" "--flight --flight-signal=SEGV" "--flight-at-exit"; do
    # shellcheck disable=SC2086
    "$ctrace" run $bad -o "$dir/x.trace" -- "$bin" exit 2>/dev/null
    [ $? -eq 2 ] || die "'ctrace run $bad' is not refused"
done

GO_COMPAT_GOS="$GO_CURRENT_EDGES" bash "$here/../lib/go_compat.sh" --parse-only "${valid[@]}" ||
    die "Go does not parse a snapshot"
GO_COMPAT_GOS="$GO_CURRENT_EDGES" bash "$here/../lib/go_compat.sh" "$dir/c.trace.crash" ||
    die "Go does not serve the crash file"
rm -rf "$dir"
