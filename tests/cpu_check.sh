#!/usr/bin/env bash
# cpu_check.sh - CPU samples end to end (tests/test_cpu.c, then the trace).
#
# Usage: tests/cpu_check.sh TEST_CPU CTRACE TRACE
#
# test_cpu writes TRACE and checks its samples with libctrace-parse; then
# the trace must open in every Go (tests/go_compat.sh), and the CPU profile
# `ctrace pprof -t cpu` makes of it must put 75% +- 5% of the CPU time of
# burn_a and burn_b in burn_a as `go tool pprof -top` reads it (of all
# the time, burn_a has less: under TSan its own frames take several
# points), with the rate estimated and with --hz given (test_cpu
# samples at 250 Hz); and the leaf functions' caller,
# burner, must hold 90% or more of it: burn_a and burn_b set up no frame,
# so only the unwind tables (src/unwind/) find their caller from a signal.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: ${0##*/} TEST_CPU CTRACE TRACE" >&2; exit 2; }
test_cpu=$1 ctrace=$2 trace=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -f "$trace"
"$test_cpu" "$trace"
bash "$here/go_compat.sh" "$trace"
export GOCACHE=${TMPDIR:-/tmp}/cpu_check.gocache
for hz in "" --hz=250; do
    "$ctrace" pprof -t cpu $hz -o "$trace.pprof" "$trace"
    share=$(go tool pprof -top "$trace.pprof" 2>/dev/null |
            awk '$NF == "burn_a" { sub("%", "", $2); a = $2 } $NF == "burn_b" { sub("%", "", $2); b = $2 }
                 END { if (a + b > 0) printf "%.1f", 100 * a / (a + b) }')
    [ -n "$share" ] && awk -v s="$share" 'BEGIN { exit !(s >= 70 && s <= 80) }' || {
        go tool pprof -top "$trace.pprof" 2>&1 | head -12 >&2
        echo "cpu_check: pprof -t cpu $hz: burn_a has ${share:-no}% of burn_a and burn_b's CPU, want 75 +- 5" >&2
        exit 1
    }
    echo "cpu_check: pprof -t cpu $hz: ${share}% of burn_a and burn_b's CPU in burn_a"
done
cum=$(go tool pprof -top "$trace.pprof" 2>/dev/null | awk '$NF == "burner" { sub("%", "", $5); print $5 }')
[ -n "$cum" ] && awk -v c="$cum" 'BEGIN { exit !(c >= 90) }' ||
    { echo "cpu_check: burner holds ${cum:-no}% of the CPU time, want >= 90" >&2; exit 1; }
echo "cpu_check: burner holds ${cum}%"
