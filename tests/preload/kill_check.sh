#!/usr/bin/env bash
# kill_check.sh - a trace in Go's current format survives SIGKILL.
#
# Usage: tests/preload/kill_check.sh CTRACE BINDIR OUTDIR
#
# Runs a busy program (run_compute: threads hashing and locking) under
# `ctrace run --format=go1.22` with a generation every 50 ms, and kills it
# with SIGKILL at five points, 0 to 0.6 s after its trace passed 1500
# bytes (several generations), so the trace is cut wherever its writer
# was. `ctrace check` must read each cut trace up to its last whole
# generation, warning of the cut with a hint to salvage it (or read it
# whole, cut between two generations: then without a warning), exactly
# as `ctrace check --salvage` trims it, to a trace that `ctrace check`,
# Go 1.22 and Go 1.23 all read, holding at least two generations.
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

. "$(dirname "$0")/../lib/go_paths.sh"
outdir_args "$@"
export GOCACHE="$out/gocache" GOTOOLCHAIN=local

for ms in 0 150 300 450 600; do
    t=$out/k$ms.trace
    CTRACE_GEN_MS=50 "$ctrace" run --format=go1.22 -o "$t" -- "$bindir/run_compute" 2000000000 2 \
        >/dev/null 2>&1 &
    runner=$!
    # Generations are written once the first one's stacks are symbolized
    # (longer in sanitized builds): kill ms after the trace has several.
    for _ in $(seq 600); do
        [ "$(stat -c %s "$t" 2>/dev/null || echo 0)" -ge 1500 ] && break
        sleep 0.05
    done
    sleep "0.$(printf '%03d' "$ms")"
    kill -KILL "$runner" 2>/dev/null || true # ctrace run execs the program: this is it
    wait "$runner" 2>/dev/null || true
    [ -s "$t" ] || die "$t: no trace"
    # The writer writes whole buffers and a generation's tables last: a
    # cut between two generations leaves a valid trace, any other cut one
    # that check reads up to its last whole generation, with a warning
    # pointing at --salvage, and that check --strict refuses.
    "$ctrace" check "$t" >"$t.check" 2>"$t.check.err" || die "$t: check refuses it: $(cat "$t.check.err")"
    strict=0
    "$ctrace" check --strict "$t" >/dev/null 2>&1 || strict=$?
    if [ -s "$t.check.err" ]; then
        grep -q "^ctrace: warning: $t: cut short at byte .*--salvage" "$t.check.err" ||
            die "$t: check's warning does not say where it was cut or suggest --salvage: $(cat "$t.check.err")"
        [ "$strict" -eq 1 ] || die "$t: check --strict exited $strict on a trace check says was cut"
    else
        [ "$strict" -eq 0 ] || die "$t: check --strict exited $strict on a trace check read whole"
    fi
    "$ctrace" check --salvage -o "$t.salvaged" "$t" >"$t.salvage" 2>&1 ||
        die "$t: salvage failed: $(cat "$t.salvage")"
    sum=$("$ctrace" check "$t.salvaged") || die "$t.salvaged: check failed"
    # What check read is what --salvage kept.
    [ "$(sed 's/^[^:]*: //' "$t.check")" = "$(sed 's/^[^:]*: //' <<<"$sum")" ] ||
        die "$t: check read $(cat "$t.check"), --salvage kept $sum"
    gens=$(grep -o '[0-9]* generations' <<<"$sum" | cut -d' ' -f1)
    [ "$gens" -ge 2 ] || die "$t.salvaged: $gens generation(s) kept of a trace killed $ms ms after 1500 bytes"
    for go in "$GO122" "$GO123"; do
        "$go" tool trace -d=1 "$t.salvaged" >/dev/null 2>"$t.go.err" ||
            die "$t.salvaged: $go refuses it: $(tail -n 2 "$t.go.err")"
    done
    echo "$prog: killed $ms ms after 1500 bytes: $(stat -c %s "$t") bytes, salvaged $sum"
done
rm -rf "$out"
