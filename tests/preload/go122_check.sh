#!/usr/bin/env bash
# go122_check.sh - programs traced in Go's current format open in Go.
#
# Usage: tests/preload/go122_check.sh CTRACE BINDIR OUTDIR
#
# `ctrace run --format=go1.22` over programs that block in system calls
# on pipes, wait on read-write locks and in event loops (whose waits that
# end by themselves unblock with a frame that says why), and the M:N
# runtime example with
# CTRACE_FORMAT=go1.22 and a generation period of a minute: each trace must say
# "go 1.22 trace", pass `ctrace check --strict`, and serve every page of
# Go 1.22's and Go 1.23's viewers (tests/lib/go_compat.sh). A bad --format or
# CTRACE_FORMAT exits 2; run_pipe's format comes from CTRACE_FORMAT, and
# --format wins over it.
# And run_pingpong into a FIFO read at about 300 kB/s under a 1 MiB
# CTRACE_MAX_PENDING_MB: its trace pauses at the cap, `ctrace run` says so
# on stderr (gaps, time not traced), and the trace opens as the others.
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

. "$here/../lib/go_paths.sh"
outdir_args "$@"

rc=0
"$ctrace" run --format=go1.21 -- /bin/true 2>"$out/bad.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "go1.11 or go1.22" "$out/bad.err" || die "--format=go1.21: exit $rc, want 2 and a message"
# CTRACE_FORMAT picks the format as it does for the library, --format
# wins over it, and a bad one exits 2 (ctrace run once ignored it).
rc=0
CTRACE_FORMAT=go1.21 "$ctrace" run -- /bin/true 2>"$out/bad.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "CTRACE_FORMAT is go1.11 or go1.22" "$out/bad.err" ||
    die "CTRACE_FORMAT=go1.21: exit $rc, want 2 and a message"
CTRACE_FORMAT=go1.22 "$ctrace" run --format=go1.11 -o "$out/over.trace" -- /bin/true ||
    die "ctrace run --format=go1.11 with CTRACE_FORMAT=go1.22 failed"
[ "$(head -c 13 "$out/over.trace")" = "go 1.11 trace" ] || die "--format=go1.11 did not win over CTRACE_FORMAT=go1.22"

traces=()
for c in "pipe" "wakers rwlock" "loop timeout 20" "loop poll eventfd,pipe,socketpair,tcp 20"; do
    read -r p arg <<<"$c"
    t=$out/${c//[ ,]/_}.trace
    # run_pipe's format comes from the environment (checked below).
    fmt=--format=go1.22
    [ "$p" != pipe ] || fmt=
    CTRACE_FORMAT=go1.22 timeout 120 "$ctrace" run $fmt -o "$t" -- "$bindir/run_$p" $arg >"$t.out" 2>&1 ||
        die "ctrace run run_$p $arg failed: $(tail -n 3 "$t.out")"
    traces+=("$t")
done
# CPU samples (--cpu), in Go's own sample batches: Go's reader lists them
# (StackSample) with the stacks of run_compute's work; the format from
# --format, then from CTRACE_FORMAT.
for how in --format=go1.22 env; do
    t=$out/cpu_${how#--format=}.trace
    if [ "$how" = env ]; then
        CTRACE_FORMAT=go1.22 timeout 120 "$ctrace" run --cpu -o "$t" -- "$bindir/run_compute" 300000000 2 >"$t.out" 2>&1
    else
        timeout 120 "$ctrace" run --cpu "$how" -o "$t" -- "$bindir/run_compute" 300000000 2 >"$t.out" 2>&1
    fi || die "ctrace run --cpu ($how) run_compute failed: $(tail -n 3 "$t.out")"
    GOTOOLCHAIN=local "$(go_trace_tool "$GO127")" -d=parsed "$t" >"$t.d" 2>&1 || die "$t: Go 1.27 does not parse it"
    n=$(awk '/ StackSample / { s = 1; next } s == 1 && /^Stack=/ { s = 2; next }
             s == 2 && /^\twork @/ { n++ } { s = 0 } END { print n + 0 }' "$t.d")
    [ "$n" -ge 50 ] || die "$t: $n CPU samples in work as Go 1.27 reads them, want >= 50 (2 s of CPU)"
    "$ctrace" pprof -t cpu -o "$t.pprof" "$t" || die "$t: ctrace pprof -t cpu failed"
    GOTOOLCHAIN=local go tool pprof -top "$t.pprof" 2>/dev/null | awk '$NF == "work" { f = 1 } END { exit !f }' ||
        die "$t: ctrace pprof -t cpu has no work"
    echo "$prog: --cpu ($how): $n CPU samples in work"
    traces+=("$t")
done
# A reader that falls behind: gaps, said on stderr.
t=$out/gaps.trace
mkfifo "$out/fifo"
# (`ctrace run` opens the file once before the program does: an end of
# file before the program's own is not the end.)
( while :; do
      n=$(dd bs=65536 count=1 iflag=fullblock status=none | tee -a "$t" | wc -c)
      [ "$n" -gt 0 ] || [ ! -e "$out/ran" ] || break
      sleep 0.2
  done <"$out/fifo" ) &
slow=$!
CTRACE_MAX_PENDING_MB=1 timeout 120 "$ctrace" run --format=go1.22 -o "$out/fifo" -- \
    "$bindir/run_pingpong" 100000 >"$t.out" 2>"$t.err" || die "ctrace run run_pingpong into a slow reader failed: $(tail -n 3 "$t.err")"
touch "$out/ran"
wait "$slow"
grep -q "has [1-9][0-9]* gap(s), .* s not traced" "$t.err" ||
    die "ctrace run said nothing of the gaps: $(cat "$t.err")"
traces+=("$t")
# A period of a minute (the reader's wait is a tenth of it: past a
# second, its deadline once came out invalid and the reader spun, holding
# its lock, and the program hung).
for ex in mn_runtime; do
    t=$out/$ex.trace
    CTRACE_FORMAT=go1.22 CTRACE_GEN_MS=60000 timeout 120 "$bindir/ex_$ex" "$t" >"$t.out" 2>&1 ||
        die "ex_$ex failed or hung: $(tail -n 3 "$t.out")"
    traces+=("$t")
done
for t in "${traces[@]}"; do
    [ "$(head -c 13 "$t")" = "go 1.22 trace" ] || die "$t: not a go 1.22 trace"
    "$ctrace" check --strict "$t" >/dev/null || die "$t: ctrace check failed"
done
GO_COMPAT_GOS="$GO_CURRENT_EDGES" bash "$here/../lib/go_compat.sh" "${traces[@]}" ||
    die "Go's viewers refuse a trace (kept in $out)"
echo "$prog: ${#traces[@]} traces in Go's current format served by Go 1.22 and 1.27"
rm -rf "$out"
