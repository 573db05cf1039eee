#!/usr/bin/env bash
# export_seek.sh - a window late in a long Go 1.22+ trace is read from the
# generation before it, not from the start (ctrace_export_options.seek):
# export_seek on a trace of a dozen generations (bench_gen_trace, Go
# 1.22's format, a generation every 10 ms), then `ctrace export` and
# `ctrace view`'s flag for the other way, --exact, and a --gen window
# found from the generation before it. Needs jq (make test-deps).
#
# Usage: tests/export/export_seek.sh CTRACE BINDIR WORKDIR
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"

trace=$run/seek.trace
CTRACE_FORMAT=go1.22 CTRACE_GEN_MS=10 "$bindir/bench_gen_trace" "$trace" 3 >"$run/gen.out" 2>&1 ||
    { indent "$run/gen.out"; fatal "bench_gen_trace failed"; }
"$bindir/export_seek" "$trace" || fail export_seek "see above"

# The command line: the late window both ways, the same file size within
# a tenth (the start state differs: what began before the generation read
# first), and --exact documented in both commands' help.
# The window: 80% to 90% into the trace (its length in ms, from check).
ms=$("$ctrace" check "$trace" | sed -nE 's/.*, ([0-9]+)\.[0-9]+ ms$/\1/p')
[ -n "$ms" ] && [ "$ms" -ge 50 ] || fatal "the trace is too short: '$ms' ms"
for how in "" --exact; do
    "$ctrace" export $how --from $((ms * 8 / 10))ms --to $((ms * 9 / 10))ms -o "$run/win$how.pftrace" "$trace" 2>"$run/err" ||
        { indent "$run/err"; fail "export $how" "exit status $?"; }
done
a=$(stat -c %s "$run/win.pftrace") b=$(stat -c %s "$run/win--exact.pftrace")
[ "$a" -gt 1000 ] && [ $((a * 10)) -gt $((b * 9)) ] && [ $((a * 10)) -lt $((b * 11)) ] ||
    fail "export sizes" "$a bytes seeking, $b bytes read from the start"
# A generation's window: found from the generation before it, the same
# times as found from the start (its first and last record's).
gens=$("$ctrace" check "$trace" | sed -nE 's/.* ([0-9]+) generations.*/\1/p')
g=$((gens - 1))
for how in "" --exact; do
    "$ctrace" export -f json $how --gen $g -o "$run/gen$how.json" "$trace" 2>"$run/err" ||
        { indent "$run/err"; fail "export $how --gen $g" "exit status $?"; }
    jq -c '[.traceEvents[] | .ts // empty] | [min, max]' "$run/gen$how.json" >"$run/gen$how.span"
done
[ -s "$run/gen.span" ] && cmp -s "$run/gen.span" "$run/gen--exact.span" ||
    fail "export --gen $g" "spans $(cat "$run/gen.span") and, read from the start, $(cat "$run/gen--exact.span")"
for cmd in export view; do
    "$ctrace" "$cmd" --help | has -e '--exact' || fail "$cmd --help" "no --exact"
done
finish
