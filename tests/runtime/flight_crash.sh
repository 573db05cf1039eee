#!/usr/bin/env bash
# flight_crash.sh - a crash while the flight recorder runs leaves its
# window in a file, and the process ends as it would have without ctrace.
#
# Usage: tests/runtime/flight_crash.sh TEST_FLIGHT_CRASH CTRACE DIR
#
# For each way tests/runtime/test_flight_crash.c crashes (a SIGSEGV, abort, a
# SIGSEGV the program's own handler takes, a SIGSEGV inside a
# stop-the-world): the exit status with the
# recorder is the one without it; but for the program's handler, which
# exits on its own, the crash file holds the last logs before the crash
# ("seq 999" back to "seq 900"), ctrace check accepts it and Go 1.22 and
# 1.23 parse it.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
. "$here/../lib/go_paths.sh"
want_args 3 "TEST_FLIGHT_CRASH CTRACE DIR" $#
bin=$1
ctrace=$2
dir=$3
fresh_dir "$dir"
ulimit -c 0
# Under AddressSanitizer the program's own SIGSEGV handler is taken only
# with this (its own handler reports the fault and exits 1 otherwise).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allow_user_segv_handler=1
files=()
for how in segv abort handler stw; do
    "$bin" plain "$how" 2>"$dir/$how.plain.err"
    want=$?
    "$bin" flight "$how" "$dir/$how.crash" 2>"$dir/$how.err"
    got=$?
    [ "$got" -eq "$want" ] || die "$how: exit status $got with the recorder, $want without"
    if [ "$how" = handler ]; then
        grep -q "own handler" "$dir/$how.err" || die "handler: the program's own handler did not run"
    fi
    [ -s "$dir/$how.crash" ] || die "$how: no crash file"
    "$ctrace" check --strict "$dir/$how.crash" >/dev/null || die "$how: ctrace check rejects the crash file"
    "$ctrace" dump "$dir/$how.crash" | sed -n 's/.*"seq \([0-9]*\)".*/\1/p' | sort -n >"$dir/$how.seqs"
    for n in $(seq 900 999); do
        grep -qx "$n" "$dir/$how.seqs" || die "$how: the crash file lacks seq $n"
    done
    echo "$prog: $how: exit status $got as without the recorder; the crash file holds seq $(head -1 "$dir/$how.seqs") to $(tail -1 "$dir/$how.seqs")"
    files+=("$dir/$how.crash")
done
GO_COMPAT_GOS="$GO_CURRENT_EDGES" bash "$here/../lib/go_compat.sh" --parse-only "${files[@]}" ||
    die "Go does not parse a crash file"
rm -rf "$dir"
