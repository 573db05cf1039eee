#!/usr/bin/env bash
# fork_go122.sh - tests/runtime/test_fork.c in Go's current format.
#
# Usage: tests/runtime/fork_go122.sh TEST_FORK CTRACE DIR
#
# TEST_FORK (CTRACE_FORMAT=go1.22) writes DIR/parent.trace, traced while
# its threads fork 20 times, and one DIR/child-NN.trace per child, traced
# on its own. Every trace must say "go 1.22 trace", pass `ctrace check`
# and parse in Go 1.27; the first child's in Go 1.22 too. Traces are removed on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "TEST_FORK CTRACE DIR" $#
bin=$1 ctrace=$2 dir=$3
fresh_dir "$dir"
# Generations of 2 ms, so that the forks race their ends, on the reader's
# thread, which allocate: under AddressSanitizer, whose allocator takes
# none of its locks around a fork, a child forked while one was under way
# hung in its first malloc (src/runtime/fork.c: a fork now waits for it).
CTRACE_FORMAT=go1.22 CTRACE_GEN_MS=2 "$bin" "$dir"
traces=("$dir"/*.trace)
[ "${#traces[@]}" -ge 21 ] || die "expected 21 traces, found ${#traces[@]}"
for t in "${traces[@]}"; do
    [ "$(head -c 13 "$t")" = "go 1.22 trace" ] || die "$t: not a go 1.22 trace"
    "$ctrace" check --strict "$t" >/dev/null || die "$t: ctrace check failed"
done
. "$here/../lib/go_paths.sh"
GO_COMPAT_GOS=$GO127 bash "$here/../lib/go_compat.sh" --parse-only "${traces[@]}" >/dev/null ||
    die "Go 1.27 refuses a trace (kept in $dir)"
GO_COMPAT_GOS=$GO122 bash "$here/../lib/go_compat.sh" --parse-only "$dir/child-00.trace" \
    >/dev/null || die "Go 1.22 refuses a trace (kept in $dir)"
echo "$prog: ${#traces[@]} traces in Go's current format, read by ctrace and Go"
rm -rf "$dir"
