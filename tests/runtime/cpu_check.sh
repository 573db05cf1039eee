#!/usr/bin/env bash
# cpu_check.sh - CPU samples end to end (tests/runtime/test_cpu.c, then the trace).
#
# Usage: tests/runtime/cpu_check.sh TEST_CPU CTRACE TRACE
#
# For the classic format (TRACE) and Go's current one (TRACE's name with
# .go122.trace): test_cpu writes the trace and checks its samples with
# libctrace-parse; Go 1.23 and the newest Go list the current format's
# samples, with their stacks, as events of their own (StackSample); then
# the trace must open in every Go (tests/lib/go_compat.sh), and the CPU profile
# `ctrace pprof -t cpu` makes of it must put the share of the CPU time of
# burn_a and burn_b in burn_a that test_cpu's reference timer found
# (75% on an idle machine, more under load), +- 5, as `go tool
# pprof -top` reads it (of all
# the time, burn_a has less: under TSan its own frames take several
# points), with the rate estimated and with --hz given (test_cpu
# samples at 250 Hz); and the leaf functions' caller,
# burner, must hold 90% or more of it: burn_a and burn_b set up no frame,
# so only the unwind tables (src/unwind/) find their caller from a signal.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "TEST_CPU CTRACE TRACE" $#
test_cpu=$1 ctrace=$2 trace=$3
. "$here/../lib/go_paths.sh"
export GOCACHE=${TMPDIR:-/tmp}/cpu_check.gocache GOTOOLCHAIN=local
# The classic format (`go 1.19 trace`), then Go's current one, whose
# samples are in Go's own CPU sample batches.
for fmt in go1.11 go1.22; do
    t=$trace
    [ "$fmt" = go1.22 ] && t=${trace%.trace}.go122.trace
    rm -f "$t"
    if [ "$fmt" = go1.22 ]; then "$test_cpu" "$t" go1.22; else "$test_cpu" "$t"; fi | tee "$t.out"
    ref=$(awk '$1 == "reference" { print $2 }' "$t.out")
    [ -n "$ref" ] || fatal "test_cpu printed no reference share"
    if [ "$fmt" = go1.22 ]; then
        GO_COMPAT_GOS="$GO_CURRENT" bash "$here/../lib/go_compat.sh" "$t"
    else
        bash "$here/../lib/go_compat.sh" "$t"
    fi
    if [ "$fmt" = go1.22 ]; then
        # Go's own reader makes each sample an event (StackSample) with its
        # stack: Go 1.23's -d=1 and the newest Go's -d=parsed list them.
        for go in "$GO123" "$GO127"; do
            d=-d=parsed
            [ "$go" = "$GO123" ] && d=-d=1
            "$(go_trace_tool "$go")" "$d" "$t" >"$t.d" 2>&1 ||
                { tail -3 "$t.d" >&2; echo "cpu_check: $go tool trace $d failed" >&2; exit 1; }
            n=$(awk '/ StackSample / { s = 1; next } s == 1 && /^Stack=/ { s = 2; next }
                     s == 2 && /^\t(burn_a|burn_b) @/ { n++ } { s = 0 } END { print n + 0 }' "$t.d")
            [ "$n" -ge 300 ] ||
                { echo "cpu_check: $go tool trace $d: $n samples in burn_a or burn_b, want >= 300" >&2; exit 1; }
            echo "cpu_check: $fmt: $go tool trace $d lists $n samples with burn_a or burn_b on top"
        done
    fi
    for hz in "" --hz=250; do
        "$ctrace" pprof -t cpu $hz -o "$t.pprof" "$t"
        share=$(go tool pprof -top "$t.pprof" 2>/dev/null |
                awk '$NF == "burn_a" { sub("%", "", $2); a = $2 } $NF == "burn_b" { sub("%", "", $2); b = $2 }
                     END { if (a + b > 0) printf "%.1f", 100 * a / (a + b) }')
        [ -n "$share" ] && awk -v s="$share" -v r="$ref" 'BEGIN { exit !(s >= r - 5 && s <= r + 5) }' || {
            go tool pprof -top "$t.pprof" 2>&1 | head -12 >&2
            echo "cpu_check: $fmt: pprof -t cpu $hz: burn_a has ${share:-no}% of burn_a and burn_b's CPU, want $ref +- 5" >&2
            exit 1
        }
        echo "cpu_check: $fmt: pprof -t cpu $hz: ${share}% of burn_a and burn_b's CPU in burn_a"
    done
    cum=$(go tool pprof -top "$t.pprof" 2>/dev/null | awk '$NF == "burner" { sub("%", "", $5); print $5 }')
    [ -n "$cum" ] && awk -v c="$cum" 'BEGIN { exit !(c >= 90) }' ||
        { echo "cpu_check: $fmt: burner holds ${cum:-no}% of the CPU time, want >= 90" >&2; exit 1; }
    echo "cpu_check: $fmt: burner holds ${cum}%"
done
