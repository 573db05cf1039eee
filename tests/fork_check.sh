#!/usr/bin/env bash
# fork_check.sh - run tests/test_fork.c and check the traces it wrote.
#
# Usage: tests/fork_check.sh TEST_FORK DIR
#
# TEST_FORK writes DIR/parent.trace and one DIR/child-NN.trace per fork.
# Every trace must pass `go tool trace -d`; the parent's and the first
# child's must serve every page of the web UI (tests/go_compat.sh). Traces
# are removed on success.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] || { echo "usage: ${0##*/} TEST_FORK DIR" >&2; exit 2; }
bin=$1 dir=$2
command -v go >/dev/null 2>&1 || { echo "${0##*/}: go not found" >&2; exit 1; }

rm -rf "$dir"
mkdir -p "$dir"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fork_check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export GOCACHE="$scratch/gocache"
trace_tool=$(go tool -n trace) # the tool itself: no go command per trace

"$bin" "$dir"
n=0
for t in "$dir"/*.trace; do
    if ! "$trace_tool" -d "$t" >"$scratch/d.out" 2>&1; then
        echo "${0##*/}: $t: go tool trace -d failed:" >&2
        tail -n 5 "$scratch/d.out" >&2
        exit 1
    fi
    n=$((n + 1))
done
[ "$n" -ge 21 ] || { echo "${0##*/}: expected 21 traces, found $n" >&2; exit 1; }
bash "$here/go_compat.sh" "$dir/parent.trace" "$dir/child-00.trace"
echo "fork_check: $n traces accepted"
rm -rf "$dir"
