#!/usr/bin/env bash
# goclock_check.sh - a trace Go 1.25+ writes is dated and placed by the
# clock snapshot of its sync batch (ctrace_process_read), as one of ctrace
# run by its ctrace.process log.
#
# Usage: tests/analyse/goclock_check.sh CTRACE WORKDIR
#
#   - gotrace (tests/lib/gotrace.go.in) built with Go 1.27 writes two
#     traces one after the other: ctrace stats of each says it started, in
#     UTC, "by Go's clock snapshot", between the times `date` read before
#     and after its run; exported together, with no warning, the second's
#     first event comes after the first's last;
#   - a trace of `ctrace run` and then one of Go: the same, the one placed
#     by its log, the other by Go's snapshot (both are CLOCK_MONOTONIC).
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 2 "CTRACE WORKDIR" $#
ctrace=$1 work=$2
. "$here/../lib/go_paths.sh"
[ -x "$GO127" ] || fatal "no Go 1.27 at $GO127 (make test-deps: scripts/go-oracles.sh)"
mkdir -p "$work"
out=$(cd "$work" && pwd)/run
fresh_dir "$out"
bin=$(bash "$here/../lib/gotrace_build.sh" "$GO127" "${CTRACE_GO_WORK:-$work}") || fatal "cannot build gotrace with Go 1.27"

# The UTC time stats says a trace started at, in ns since 1970, checked
# against the run's bounds (ns, date +%s%N) and the JSON's.
started() {
    local s ns
    s=$("$ctrace" stats "$1" | sed -n "s/^  started      \([^ ]*\) (UTC, by $2)\$/\1/p")
    [ -n "$s" ] || fatal "stats of $1 does not say it started, by $2: $("$ctrace" stats "$1" | head -4)"
    ns=$(( $(date -u -d "$s" +%s) * 1000000000 + 10#$(echo "$s" | sed 's/.*\.\([0-9]*\)Z$/\1/') ))
    [ "$ns" -ge "$3" ] && [ "$ns" -le "$4" ] || fatal "stats says $1 started at $s, not between $3 and $4 ns (date)"
    [ "$("$ctrace" stats --format=json "$1" | jq -r .start.utc)" = "$s" ] || fatal "stats' JSON of $1 does not say $s"
    echo "$s"
}

# name TAB first TAB last (microseconds) of each process of a JSON export.
spans() {
    jq -r '.traceEvents as $e
        | ($e | map(select(.ph == "M" and .name == "process_name")) | map({key: (.pid | tostring), value: .args.name}) | from_entries) as $n
        | $e | map(select(.ts != null)) | group_by(.pid)[]
        | [$n[.[0].pid | tostring], (map(.ts) | min), (map(.ts) | max)] | @tsv' "$1"
}

# $2's trace (named $5 in the export) after $1's (named $4), exported together.
after_other() {
    "$ctrace" export -f json -o "$out/$3.json" "$1" "$2" 2>"$out/$3.err" || fatal "export of $1 and $2: $(cat "$out/$3.err")"
    [ ! -s "$out/$3.err" ] || fatal "export of $1 and $2 warned: $(cat "$out/$3.err")"
    spans "$out/$3.json" >"$out/$3.spans"
    awk -F'\t' -v a="$4" -v b="$5" '$1 ~ a { a_last = $3; na++ } $1 ~ b { b_first = $2; nb++ }
        END { exit !(na == 1 && nb == 1 && b_first > a_last) }' \
        "$out/$3.spans" || fatal "$2 does not come after $1: $(cat "$out/$3.spans")"
}

t0=$(date +%s%N)
"$bin" "$out/g1.trace" nocpu >/dev/null
t1=$(date +%s%N)
"$bin" "$out/g2.trace" nocpu >/dev/null
t2=$(date +%s%N)
s1=$(started "$out/g1.trace" "Go's clock snapshot" "$t0" "$t1")
s2=$(started "$out/g2.trace" "Go's clock snapshot" "$t1" "$t2")
after_other "$out/g1.trace" "$out/g2.trace" gg "^g1[.]trace$" "^g2[.]trace$"
echo "$prog: two Go 1.27 traces: started $s1 and $s2 by Go's clock snapshot, in that order on one timeline"

t0=$(date +%s%N)
"$ctrace" run -o "$out/c.trace" -- sleep 0.05
t1=$(date +%s%N)
"$bin" "$out/g3.trace" nocpu >/dev/null
t2=$(date +%s%N)
started "$out/c.trace" "ctrace.process log" "$t0" "$t1" >/dev/null
started "$out/g3.trace" "Go's clock snapshot" "$t1" "$t2" >/dev/null
after_other "$out/c.trace" "$out/g3.trace" cg "^sleep [(]pid [0-9]+[)]$" "^g3[.]trace$"
echo "$prog: ctrace run's trace, then Go's: in that order on one timeline"
