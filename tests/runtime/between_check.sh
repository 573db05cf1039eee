#!/usr/bin/env bash
# between_check.sh - events a runtime writes between its goroutines
# (tests/runtime/test_between.c), then what Go makes of them.
#
# Usage: tests/runtime/between_check.sh TEST_BETWEEN CTRACE DIR
#
# test_between writes its traces into DIR and checks that nothing was
# lost and that every event is there on a G and a P; then `ctrace check`
# reads each, every Go serves the classic trace and every Go since 1.22
# the current format's (tests/lib/go_compat.sh: every page of the viewer;
# each Go's viewer panics on a region of G0, which the classic format
# wrote between goroutines before the thread's own G stood in), and
# Go 1.22 and the newest Go parse the flight recorder's snapshots.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "TEST_BETWEEN CTRACE DIR" $#
test_between=$1 ctrace=$2 dir=$3
. "$here/../lib/go_paths.sh"
fresh_dir "$dir"
"$test_between" "$dir"
for t in "$dir"/*.trace; do
    "$ctrace" check "$t" >/dev/null || { echo "between_check: ctrace check rejects $t" >&2; exit 1; }
done
bash "$here/../lib/go_compat.sh" "$dir/classic.trace" "$dir/classic-threads.trace"
GO_COMPAT_GOS="$GO_CURRENT" bash "$here/../lib/go_compat.sh" "$dir/go122.trace" "$dir/go122-threads.trace"
GO_COMPAT_GOS="$GO_CURRENT_EDGES" bash "$here/../lib/go_compat.sh" --parse-only "$dir"/flight.*.trace
rm -rf "$dir"
