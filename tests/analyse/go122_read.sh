#!/usr/bin/env bash
# go122_read.sh - every analysis reads a Go 1.22+ trace.
#
# Usage: tests/analyse/go122_read.sh CTRACE TRACE
#
# Given TRACE (a Go 1.22+ trace): stats (all formats), export (both
# formats) and pprof of every type must succeed and write something; stats
# must count the goroutines `ctrace check` counts, and the export's times
# count from the trace's first event, as for the classic formats. (How the numbers agree
# with Go 1.23 is the business of tests/analyse/stats_vs_go123.sh and
# pprof_vs_go.sh.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 2 "CTRACE TRACE" $#
ctrace=$1
trace=$2
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
for f in table csv json; do
    "$ctrace" stats --format=$f "$trace" >"$o/stats.$f" 2>"$o/err" && [ -s "$o/stats.$f" ] ||
        fail "${trace##*/}" "ctrace stats --format=$f: $(cat "$o/err")"
done
# Goroutines: Go's reader's count (check) against stats' summary.
want=$("$ctrace" check "$trace" | sed -n 's/.* \([0-9][0-9]*\) goroutines.*/\1/p')
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "goroutines") c = i; next } NR == 2 { print $c; exit }' "$o/stats.csv")
[ -n "$want" ] && [ "$want" = "$got" ] || fail "${trace##*/}" "stats counts goroutines '$got', check '$want'"
for f in perfetto json; do
    "$ctrace" export -f $f -o "$o/export.$f" "$trace" 2>"$o/err" && [ -s "$o/export.$f" ] ||
        fail "${trace##*/}" "ctrace export -f $f: $(cat "$o/err")"
done
# The JSON's earliest time (microseconds): within a millisecond of the
# trace's first event, 0 (which itself may make no record of the export),
# not on Go's own clock (the time since its process started).
first=$(jq '[.traceEvents[] | select(.ts != null) | .ts] | min | . < 1000' "$o/export.json" 2>/dev/null)
[ "$first" = true ] || fail "${trace##*/}" "the export's times do not begin at the trace's first event: $(jq '[.traceEvents[] | select(.ts != null) | .ts] | min' "$o/export.json")"
for t in wall cpu waker net sync syscall sched; do
    "$ctrace" pprof -t $t -o "$o/$t.pb" "$trace" 2>"$o/err" && [ -s "$o/$t.pb" ] ||
        fail "${trace##*/}" "ctrace pprof -t $t: $(cat "$o/err")"
done
[ "$failed" -eq 0 ]
