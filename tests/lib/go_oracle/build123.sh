#!/usr/bin/env bash
# build123.sh - build the Go 1.23 oracle: Go 1.23's own trace reader
# (internal/trace) as a command printing what `go tool trace -d=1` prints,
# with its walk over a map of threads made deterministic (main123.go.in).
#
# Usage: tests/lib/go_oracle/build123.sh OUT
#
# Copies (lib.sh), at test time, GOROOT/src/internal/trace's reader packages (not the
# tests, testdata or the viewer's) from Go 1.23 (GO123, tests/lib/go_paths.sh)
# into a throwaway module under OUT.d/, renames
# their imports, applies the one change (the frontier is filled in the order
# of each thread's first batch), and builds OUT. Nothing of Go's is kept in
# the repository. Rebuilt only when Go or these files change; concurrent
# callers wait on a lock. Exit 1 on a failure, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/../go_paths.sh"
want_args 1 "OUT" $#
out=$1
go=$GO123
[ -x "$go" ] || die "no Go 1.23 at $go (install golang-1.23-go)"
src=$(GOTOOLCHAIN=local "$go" env GOROOT)/src/internal/trace
[ -f "$src/reader.go" ] && [ -f "$src/event/go122/event.go" ] || die "no Go 1.23 trace reader in $src"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
. "$here/lib.sh"
oracle_copy "$go" "$out" ctrace_go123_oracle "$here/main123.go.in" . event event/go122 version internal/oldtrace
# The one change: threads in order of first batch, not map order.
g=$mod/trace/generation.go
rd=$mod/trace/reader.go
grep -q 'g.batches\[b.m\] = append(g.batches\[b.m\], b)' "$g" && grep -q 'for m, batches := range r.gen.batches {' "$rd" \
  || die "Go's reader is not the one this patch knows"
sed -i 's#^\(\s*\)batches    map\[ThreadID\]\[\]batch#\1batches    map[ThreadID][]batch\n\1mOrder     []ThreadID#' "$g"
sed -i 's#g.batches\[b.m\] = append(g.batches\[b.m\], b)#if _, ok := g.batches[b.m]; !ok { g.mOrder = append(g.mOrder, b.m) }; g.batches[b.m] = append(g.batches[b.m], b)#' "$g"
sed -i 's#for m, batches := range r.gen.batches {#for _, m := range r.gen.mOrder { batches := r.gen.batches[m]#' "$rd"
grep -q mOrder "$g" || die "patch failed"
rm -f "$mod/trace/summary.go" "$mod/trace/gc.go" "$mod/trace/mud.go"
# Go's batch framing, exported for main's -batches (a file of our own
# beside Go's; nothing of Go's changes).
cat >"$mod/trace/oracle_batches.go" <<'EOF'
package trace

import "io"

// OracleReadBatch is readBatch (batch.go) for the oracle's -batches: the
// generation, the thread and the size of the data of the next batch.
func OracleReadBatch(r interface {
	io.Reader
	io.ByteReader
}) (gen, m uint64, size int, err error) {
	b, gen, err := readBatch(r)
	return gen, uint64(b.m), len(b.data), err
}
EOF
# The old-format parser, out of internal/, for main's -old.
mv "$mod/trace/internal/oldtrace" "$mod/trace/oldtrace"
sed -i 's#"ctrace_go123_oracle/trace/internal/oldtrace"#"ctrace_go123_oracle/trace/oldtrace"#' "$mod"/trace/*.go "$mod"/trace/*/*.go
oracle_build "$go" "$out" ctrace_go123_oracle 1.23 "$here/main123.go.in"
