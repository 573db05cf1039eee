#!/usr/bin/env bash
# go122_refused.sh - the analyses refuse a Go 1.22+ trace.
#
# Usage: tests/analyse/go122_refused.sh CTRACE TRACE
#
# stats, pprof and export read the events of the formats before Go 1.22
# only: given TRACE (a Go 1.22+ trace), each must exit 1 with a message
# naming its version, print nothing and leave no output file, rather than
# print numbers made of events it misread.
set -u
[ $# -eq 2 ] || { echo "usage: ${0##*/} CTRACE TRACE" >&2; exit 2; }
ctrace=$1
trace=$2
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
rc=0
for c in stats pprof export; do
    case $c in
    stats) args=(stats) ;;
    pprof) args=(pprof -t sync -o "$o/out") ;;
    export) args=(export -o "$o/out") ;;
    esac
    "$ctrace" "${args[@]}" "$trace" >"$o/stdout" 2>"$o/err"
    e=$?
    if [ "$e" -ne 1 ] || ! grep -q 'a go 1.2[2-9] trace: not analysed yet' "$o/err" || [ -s "$o/stdout" ] ||
        [ -e "$o/out" ]; then
        echo "${0##*/}: ctrace $c: exit $e, stderr: $(cat "$o/err"), stdout: $(head -c 200 "$o/stdout")" >&2
        rc=1
    fi
done
exit $rc
