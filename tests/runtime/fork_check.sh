#!/usr/bin/env bash
# fork_check.sh - run tests/runtime/test_fork.c and check the traces it wrote.
#
# Usage: tests/runtime/fork_check.sh TEST_FORK DIR
#
# TEST_FORK writes DIR/parent.trace and one DIR/child-NN.trace per fork.
# Every trace must parse in every Go version tests/lib/go_compat.sh lists; the
# parent's and the first child's must serve every page of the web UI.
# Traces are removed on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 2 "TEST_FORK DIR" $#
bin=$1 dir=$2
command -v go >/dev/null 2>&1 || die "go not found"

fresh_dir "$dir"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fork_check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export GOCACHE="$scratch/gocache"

"$bin" "$dir"
traces=("$dir"/*.trace)
n=${#traces[@]}
[ "$n" -ge 21 ] || die "expected 21 traces, found $n"
# Every trace parses in every Go version; a child's and the parent's serve
# every page (the two served are parsed there).
others=()
for t in "${traces[@]}"; do
    case $t in */parent.trace | */child-00.trace) ;; *) others+=("$t") ;; esac
done
bash "$here/../lib/go_compat.sh" --parse-only "${others[@]}" >/dev/null
bash "$here/../lib/go_compat.sh" "$dir/child-00.trace" "$dir/parent.trace"
echo "fork_check: $n traces accepted"
rm -rf "$dir"
