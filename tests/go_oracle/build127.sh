#!/usr/bin/env bash
# build127.sh - build rawtext127 (rawtext127.go.in): Go 1.27's text form of
# a trace, as its testdata's *.test cases hold them, to the trace's bytes.
#
# Usage: tests/go_oracle/build127.sh OUT
#
# Copies, at test time, GOROOT/src/internal/trace/{raw,tracev2,version}
# (not their tests) from Go 1.27 (GO127, tests/go_paths.sh) into a
# throwaway module under OUT.d/, renames their imports, and builds OUT.
# Nothing of Go's is kept in the repository. Rebuilt only when Go or these
# files change; concurrent callers wait on a lock. Exit 1 on a failure, 2
# on a usage error.
set -euo pipefail
prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../go_paths.sh"
[ $# -eq 1 ] || { echo "usage: $prog OUT" >&2; exit 2; }
out=$1
go=$GO127
[ -x "$go" ] || { echo "$prog: no Go 1.27 at $go (make test-deps)" >&2; exit 1; }
root=$(GOTOOLCHAIN=local "$go" env GOROOT)
src=$root/src/internal/trace
[ -f "$src/raw/textreader.go" ] && [ -f "$src/tracev2/events.go" ] || { echo "$prog: no Go 1.27 trace sources in $src" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
exec 9>"$out.lock"
flock 9
dirs=(raw tracev2 version)
key=$( { "$go" version; for d in "${dirs[@]}"; do for f in "$src/$d"/*.go; do echo "$f"; cat "$f"; done; done
         cat "$here/rawtext127.go.in" "$0"; } | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then exit 0; fi
mod=$out.d
rm -rf "$mod"
for d in "${dirs[@]}"; do
  mkdir -p "$mod/trace/$d"
  for f in "$src/$d"/*.go; do
    case $f in *_test.go) continue ;; esac
    sed 's#"internal/trace#"ctrace_go127_raw/trace#' "$f" >"$mod/trace/$d/$(basename "$f")"
  done
done
cp "$here/rawtext127.go.in" "$mod/main.go"
printf 'module ctrace_go127_raw\n\ngo 1.27\n' >"$mod/go.mod"
# Go's build cache: under make check the one of every Go build of the
# tests (CTRACE_GO_WORK), else the caller's, else one of its own.
if [ -n "${CTRACE_GO_WORK:-}" ]; then GOCACHE=$CTRACE_GO_WORK/gocache; fi
export GOCACHE=${GOCACHE:-$mod.gocache} GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on \
  CGO_ENABLED=0 GOTOOLCHAIN=local
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then export HOME="$mod.home"; mkdir -p "$HOME"; fi
(cd "$mod" && "$go" build -o "$out.tmp" .) || { echo "$prog: go build failed in $mod" >&2; exit 1; }
mv -f "$out.tmp" "$out"
echo "$key" >"$out.key"
