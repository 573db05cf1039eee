#!/usr/bin/env bash
# gotrace_write.sh - a trace Go writes: GOTRACE (tests/lib/gotrace.go.in,
# built by gotrace_build.sh) run in MODE (nocpu, cpu or long) into OUT; its
# output on stdout. Exit status: gotrace's. MODE-p1 (nocpu-p1 ...) runs it
# with GOMAXPROCS=1 (one P: every goroutine takes turns on it).
#
# Usage: tests/lib/gotrace_write.sh GOTRACE MODE OUT
#
# Under make check (CTRACE_GO_WORK), one trace per gotrace and mode serves
# every test and every stage: the first to ask writes it into
# CTRACE_GO_WORK/traces, the others get a copy, so the Go outputs the tests
# keep by a trace's hash serve the sanitizer stages, whose only difference
# is ctrace's side. The plain stage starts without them (the Makefile
# empties the directory), so each make check holds ctrace to traces Go
# wrote for it. Without CTRACE_GO_WORK, gotrace writes OUT itself.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
want_args 3 "GOTRACE MODE OUT" $#
gt=$1
mode=$2
out=$3
run_mode=${mode%-p1}
if [ "$run_mode" != "$mode" ]; then export GOMAXPROCS=1; fi
if [ -z "${CTRACE_GO_WORK:-}" ]; then
    exec "$gt" "$out" "$run_mode" 2>&1
fi
dir=$CTRACE_GO_WORK/traces
mkdir -p "$dir"
# Named by the binary's key (Go's version and the source's hash).
shared=$dir/${gt##*/}-$(cut -c1-12 "$gt.key")-$mode.trace
exec 8>"$shared.lock"
flock 8
if [ ! -s "$shared" ]; then
    rc=0
    "$gt" "$shared.tmp" "$run_mode" >"$shared.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        cat "$shared.log"
        rm -f "$shared.tmp"
        exit "$rc"
    fi
    mv -f "$shared.tmp" "$shared"
fi
cp "$shared" "$out"
cat "$shared.log"
