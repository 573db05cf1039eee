#!/usr/bin/env bash
# go122_read.sh - the analyses read a Go 1.22+ trace, or refuse what they
# cannot yet compute as Go 1.23 does.
#
# Usage: tests/analyse/go122_read.sh CTRACE TRACE
#
# Given TRACE (a Go 1.22+ trace): stats (all formats), export (both
# formats) and pprof -t wall|cpu|waker must succeed and write something;
# stats must count the goroutines `ctrace check` counts. pprof -t
# net|sync|syscall|sched, which Go 1.23 computes on its new model in a way
# ctrace does not follow yet, must exit 1 with a message naming the
# version, and leave no output file. (How the numbers agree with Go 1.23
# is tests/analyse/stats_vs_go123.sh's business.)
set -u
[ $# -eq 2 ] || { echo "usage: ${0##*/} CTRACE TRACE" >&2; exit 2; }
ctrace=$1
trace=$2
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
rc=0
bad() { echo "${0##*/}: $*" >&2; rc=1; }
for f in table csv json; do
    "$ctrace" stats --format=$f "$trace" >"$o/stats.$f" 2>"$o/err" && [ -s "$o/stats.$f" ] ||
        bad "ctrace stats --format=$f: $(cat "$o/err")"
done
# Goroutines: Go's reader's count (check) against stats' summary.
want=$("$ctrace" check "$trace" | sed -n 's/.* \([0-9][0-9]*\) goroutines.*/\1/p')
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "goroutines") c = i; next } NR == 2 { print $c; exit }' "$o/stats.csv")
[ -n "$want" ] && [ "$want" = "$got" ] || bad "stats counts goroutines '$got', check '$want'"
for f in perfetto json; do
    "$ctrace" export -f $f -o "$o/export.$f" "$trace" 2>"$o/err" && [ -s "$o/export.$f" ] ||
        bad "ctrace export -f $f: $(cat "$o/err")"
done
for t in wall cpu waker; do
    "$ctrace" pprof -t $t -o "$o/$t.pb" "$trace" 2>"$o/err" && [ -s "$o/$t.pb" ] ||
        bad "ctrace pprof -t $t: $(cat "$o/err")"
done
for t in net sync syscall sched; do
    "$ctrace" pprof -t $t -o "$o/out" "$trace" >"$o/stdout" 2>"$o/err"
    e=$?
    if [ "$e" -ne 1 ] || ! grep -q 'a go 1.2[2-9] trace: -t '$t' not analysed yet' "$o/err" || [ -s "$o/stdout" ] ||
        [ -e "$o/out" ]; then
        bad "ctrace pprof -t $t: exit $e, stderr: $(cat "$o/err")"
    fi
done
exit $rc
