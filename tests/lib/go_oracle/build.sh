#!/usr/bin/env bash
# build.sh - build the Go oracle: Go 1.19's own trace parser as a command
# that prints what `go tool trace -d` prints, for 1.5 traces too.
#
# Usage: tests/lib/go_oracle/build.sh OUT
#
# Copies GOROOT/src/internal/trace/*.go (not the tests) into a throwaway
# module under OUT.d/, as package ctrace_go_oracle/trace, adds
# export.go.in (one exported wrapper around the package's parse) and
# main.go.in (see there), and builds OUT with `go build`: no network, the
# module has no dependencies. Go's files are copied at test time, never
# kept in the repository.
#
# OUT is rebuilt only when the go version, Go's sources or the wrappers
# change (their hash is kept in OUT.key); concurrent callers wait on a lock.
# GO_ORACLE_SRC overrides the directory of Go's package.
# Prints nothing on success; exit 1 on a failure, 2 on a usage error.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"

want_args 1 "OUT" $#
out=$1
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"

src=${GO_ORACLE_SRC:-$(go env GOROOT)/src/internal/trace}
[ -f "$src/parser.go" ] || die "no Go trace parser in $src"
# The wrapper needs the pre-1.21 reader's parse(r, bin).
grep -q '^func parse(r io.Reader, bin string)' "$src/parser.go" \
    || die "$src/parser.go has no parse(r, bin): not Go 1.19's reader"

mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

exec 9>"$out.lock"
flock 9

key=$( { go version; cd "$src" && for f in *.go; do
           case $f in *_test.go) continue ;; esac
           echo "$f"; cat "$f"; done
         cat "$here/main.go.in" "$here/export.go.in"; } | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
    exit 0
fi

mod=$out.d
rm -rf "$mod"
mkdir -p "$mod/trace"
for f in "$src"/*.go; do
    case $f in *_test.go) continue ;; esac
    cp "$f" "$mod/trace/"
done
cp "$here/export.go.in" "$mod/trace/ctrace_oracle_export.go"
cp "$here/main.go.in" "$mod/main.go"
printf 'module ctrace_go_oracle\n\ngo 1.19\n' >"$mod/go.mod"

# A private cache, no proxy (nothing to fetch), and a HOME that works for
# root without one.
export GOCACHE="$mod.gocache" GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on CGO_ENABLED=0
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then
    export HOME="$mod.home"
    mkdir -p "$HOME"
fi
(cd "$mod" && go build -o "$out.tmp" .) || die "go build failed in $mod"
mv -f "$out.tmp" "$out"
echo "$key" >"$out.key"
