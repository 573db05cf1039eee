#!/usr/bin/env bash
# unwind_check.sh - stacks of code without frame pointers under `ctrace run`.
#
# Usage: tests/preload/unwind_check.sh CTRACE BINDIR OUTDIR
#
# run_deep9 (built -O2 -fomit-frame-pointer) waits on a condition variable
# nine calls below its thread's start routine, and in pthread_join nine
# calls below main. With the default unwinding (auto) and with
# --unwind=tables, the stack of the GoBlockCond must hold t9 ... t1 and
# thread_start, the GoBlockSync's m9 ... m1 and main; the trace must pass
# `ctrace check`. With --unwind=fp the same stacks are short (the reason
# for the tables): printed, not checked.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
outdir_args "$@"


for mode in auto tables fp; do
    t=$out/$mode.trace
    timeout -k 5 60 "$ctrace" run --unwind=$mode -o "$t" -- "$bindir/run_deep9" >"$out/$mode.out" ||
        fatal "$mode: run_deep9 failed"
    grep -q "deep9 done" "$out/$mode.out" || fatal "$mode: no output"
    "$ctrace" check "$t" >/dev/null || fatal "$mode: ctrace check rejects the trace"
    "$bindir/run_stacks" "$t" >"$out/$mode.stacks" || fatal "$mode: cannot read the stacks"
    cond=$(grep -m1 "GoBlockCond" "$out/$mode.stacks" || true)
    join=$(grep "GoBlockSync" "$out/$mode.stacks" | grep -m1 "m9" || true)
    echo "$mode: GoBlockCond${cond#*GoBlockCond}"
    echo "$mode: GoBlockSync${join#*GoBlockSync}"
    [ "$mode" = fp ] && continue
    want_cond="t9 < t8 < t7 < t6 < t5 < t4 < t3 < t2 < t1 < thread_start"
    want_join="m9 < m8 < m7 < m6 < m5 < m4 < m3 < m2 < m1 < main"
    [[ $cond == *"$want_cond"* ]] || fatal "$mode: the wait's stack does not reach thread_start"
    [[ $join == *"$want_join"* ]] || fatal "$mode: the join's stack does not reach main"
done
echo "$prog: ok"
rm -rf "$out"
