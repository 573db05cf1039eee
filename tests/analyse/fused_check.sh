#!/usr/bin/env bash
# fused_check.sh - stats, pprof and export say what check says about a trace.
#
# Usage: tests/analyse/fused_check.sh CTRACE TRACE...
#
# ctrace stats and ctrace pprof run no check pass of their own on a Go
# 1.22+ trace: their analysis's pass is the check (src/parse/reader.c). For
# each TRACE (good, cut short, or one Go refuses), each must say on stderr
# what `ctrace check` says there (the same error, or the same cut warning),
# fail when it fails, and then write nothing: pprof -t wall, which writes
# its profile as it builds it (to a spool for standard output), too. These run with the second
# thread that reads ahead (src/parse/ahead.c, the default on two CPUs,
# forced here by CTRACE_READ_AHEAD=1), and it changes nothing: stats, the
# profile and the export are the same byte for byte without it
# (CTRACE_READ_AHEAD=0), and stats with threads that sleep as soon as
# they wait (CTRACE_READ_AHEAD=sleep).
# ctrace export -o FILE of one trace has no check pass either (its pass
# is the check, src/tools/export.c): the same, with check's exit status,
# no FILE left for a trace check refuses, and the export the same byte for
# byte as the one to standard output, which reads the trace through first.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
[ $# -ge 2 ] || { echo "usage: ${0##*/} CTRACE TRACE..." >&2; exit 2; }
ctrace=$1
shift
export CTRACE_READ_AHEAD=1
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
n=0 nbad=0
# what ctrace check says that a command opening the trace says too: its
# first line on stderr (the error, or the warning of a cut, without check's
# own advice after it).
said() { head -n 1 "$1" | sed 's/; `ctrace check --salvage .*$//'; }
# A command's stderr without its own errors (an analysis that finds
# nothing to profile says so in its own name).
own() { grep -v "^ctrace $2: " "$1"; }
for t in "$@"; do
    name=${t##*/}
    n=$((n + 1))
    "$ctrace" check "$t" >/dev/null 2>"$o/check.err"
    want=$?
    said "$o/check.err" >"$o/want.err"
    [ "$want" -ne 0 ] && nbad=$((nbad + 1))
    "$ctrace" stats --format=csv "$t" >"$o/stats.out" 2>"$o/stats.err"
    sok=$?
    rm -f "$o/sync.pb"
    "$ctrace" pprof -t sync -o "$o/sync.pb" "$t" >/dev/null 2>"$o/pprof.err"
    pok=$?
    # -t wall writes as it builds, to a spool for standard output.
    "$ctrace" pprof -t wall "$t" >"$o/wall.out" 2>"$o/wall.err"
    wok=$?
    rm -f "$o/x.pftrace"
    "$ctrace" export -o "$o/x.pftrace" "$t" >/dev/null 2>"$o/export.err"
    xst=$?
    for c in stats pprof wall export; do
        own "$o/$c.err" "${c/wall/pprof}" >"$o/$c.got"
        cmp -s "$o/want.err" "$o/$c.got" ||
            fail "$name" "ctrace $c says '$(head -c 300 "$o/$c.got")', check '$(head -c 300 "$o/want.err")'"
    done
    [ "$xst" -eq "$want" ] || fail "$name" "ctrace export exits with $xst, check with $want"
    if [ "$want" -ne 0 ]; then
        [ ! -e "$o/x.pftrace" ] || fail "$name" "ctrace export wrote a file for a trace check refuses"
        [ "$sok" -ne 0 ] || fail "$name" "ctrace stats succeeds where check fails"
        [ "$pok" -ne 0 ] || fail "$name" "ctrace pprof succeeds where check fails"
        [ ! -s "$o/stats.out" ] || fail "$name" "ctrace stats wrote a table for a trace check refuses"
        [ ! -e "$o/sync.pb" ] || fail "$name" "ctrace pprof wrote a profile of a trace check refuses"
        [ "$wok" -ne 0 ] && [ ! -s "$o/wall.out" ] ||
            fail "$name" "ctrace pprof -t wall wrote a profile of a trace check refuses"
        continue
    fi
    "$ctrace" export "$t" >"$o/x.std" 2>/dev/null
    cmp -s "$o/x.pftrace" "$o/x.std" || fail "$name" "ctrace export -o FILE differs from its export to standard output"
    # The same without the thread reading ahead.
    CTRACE_READ_AHEAD=0 "$ctrace" stats --format=csv "$t" >"$o/stats0.out" 2>/dev/null
    cmp -s "$o/stats.out" "$o/stats0.out" || fail "$name" "ctrace stats differs with CTRACE_READ_AHEAD=0"
    # And with threads that sleep as soon as they wait (no spinning
    # first), the path that a lost wake-up would hang.
    CTRACE_READ_AHEAD=sleep timeout 120 "$ctrace" stats --format=csv "$t" >"$o/stats_s.out" 2>/dev/null
    [ $? -ne 124 ] || fail "$name" "ctrace stats hangs with CTRACE_READ_AHEAD=sleep"
    cmp -s "$o/stats.out" "$o/stats_s.out" || fail "$name" "ctrace stats differs with CTRACE_READ_AHEAD=sleep"
    CTRACE_READ_AHEAD=0 "$ctrace" export "$t" >"$o/x0.std" 2>/dev/null
    cmp -s "$o/x.std" "$o/x0.std" || fail "$name" "ctrace export differs with CTRACE_READ_AHEAD=0"
    if [ "$pok" -eq 0 ]; then
        CTRACE_READ_AHEAD=0 "$ctrace" pprof -t sync -o "$o/sync0.pb" "$t" 2>/dev/null
        cmp -s "$o/sync.pb" "$o/sync0.pb" || fail "$name" "ctrace pprof differs with CTRACE_READ_AHEAD=0"
    fi
    if [ "$wok" -eq 0 ]; then
        CTRACE_READ_AHEAD=0 "$ctrace" pprof -t wall "$t" >"$o/wall0.out" 2>/dev/null
        cmp -s "$o/wall.out" "$o/wall0.out" || fail "$name" "ctrace pprof -t wall differs with CTRACE_READ_AHEAD=0"
    fi
done
[ "$nbad" -gt 0 ] || fail all "no trace that check refuses: nothing checked of the errors"
echo "$prog: $n traces ($nbad refused by check)" >&2
[ "$failed" -eq 0 ]
