#!/usr/bin/env bash
# build127.sh - build rawtext127 (rawtext127.go.in): Go 1.27's text form of
# a trace, as its testdata's *.test cases hold them, to the trace's bytes.
#
# Usage: tests/lib/go_oracle/build127.sh OUT
#
# Copies (lib.sh), at test time, GOROOT/src/internal/trace/{raw,tracev2,version}
# (not their tests) from Go 1.27 (GO127, tests/lib/go_paths.sh) into a
# throwaway module under OUT.d/, renames their imports, and builds OUT.
# Nothing of Go's is kept in the repository. Rebuilt only when Go or these
# files change; concurrent callers wait on a lock. Exit 1 on a failure, 2
# on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/../go_paths.sh"
want_args 1 "OUT" $#
out=$1
go=$GO127
[ -x "$go" ] || die "no Go 1.27 at $go (make test-deps)"
src=$(GOTOOLCHAIN=local "$go" env GOROOT)/src/internal/trace
[ -f "$src/raw/textreader.go" ] && [ -f "$src/tracev2/events.go" ] || die "no Go 1.27 trace sources in $src"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
. "$here/lib.sh"
oracle_copy "$go" "$out" ctrace_go127_raw "$here/rawtext127.go.in" raw tracev2 version
oracle_build "$go" "$out" ctrace_go127_raw 1.27 "$here/rawtext127.go.in"
