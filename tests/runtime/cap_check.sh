#!/usr/bin/env bash
# cap_check.sh - a trace that ended early at max_pending is whole.
#
# Usage: tests/runtime/cap_check.sh TEST_CAP CTRACE DIR
#
# Runs TEST_CAP DIR (tests/runtime/test_cap.c: a reader that falls behind, resident
# memory held under the cap), then holds DIR/cap.trace to it: ctrace check
# accepts it, ctrace dump prints exactly the events the library counted,
# and every Go version opens it (tests/lib/go_compat.sh, parse only).
# With CTRACE_FORMAT=go1.22 the trace has gaps instead (test_cap.c): Go
# 1.22 and 1.27 open it, and it holds the log of each gap that tracing
# went on after (all but, perhaps, the last).
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
. "$here/../lib/go_paths.sh"
want_args 3 "TEST_CAP CTRACE DIR" $#
test_cap=$1
ctrace=$2
dir=$3
fresh_dir "$dir"
"$test_cap" "$dir" >"$dir/out" || { cat "$dir/out"; echo "$prog: test_cap failed" >&2; exit 1; }
cat "$dir/out"
want=$(sed -n 's/^events=//p' "$dir/out")
"$ctrace" check --strict "$dir/cap.trace" >"$dir/check" || die "ctrace check rejects the trace"
cat "$dir/check"
if [ "${CTRACE_FORMAT:-}" = go1.22 ]; then
    # One line per event, stacks on lines of their own; and one Sync
    # event per generation that the library does not write.
    got=$("$ctrace" dump "$dir/cap.trace" | grep -c '^M=')
    want=$((want + $(sed -n 's/.* \([0-9]*\) generations.*/\1/p' "$dir/check")))
else
    got=$("$ctrace" dump "$dir/cap.trace" | wc -l)
fi
[ "$got" -eq "$want" ] || die "ctrace dump prints $got events, the library counted $want"
if [ "${CTRACE_FORMAT:-}" = go1.22 ]; then
    gaps=$(sed -n 's/^gaps=//p' "$dir/out")
    logs=$("$ctrace" dump "$dir/cap.trace" | grep -c 'tracing paused for .* the reader fell max_pending' || true)
    [ "$logs" -ge $((gaps - 1)) ] && [ "$logs" -le "$gaps" ] ||
        die "$logs logs of a gap in the trace, for $gaps gaps"
    GO_COMPAT_GOS="$GO_CURRENT_EDGES" GO_COMPAT_PARSE_ONLY=1 \
        bash "$here/../lib/go_compat.sh" "$dir/cap.trace"
    echo "$prog: a trace with $gaps gaps at the cap is whole: $got events"
else
    GO_COMPAT_PARSE_ONLY=1 bash "$here/../lib/go_compat.sh" "$dir/cap.trace"
    echo "$prog: a trace ended at the cap is whole: $got events"
fi
rm -rf "$dir"
