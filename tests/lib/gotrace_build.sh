#!/usr/bin/env bash
# gotrace_build.sh - builds tests/lib/gotrace.go.in with one Go, cached
# in WORKDIR by Go's version and the source's hash, and prints the binary's
# path. For the reader's golden tests and the analyses' tests, which hold
# what ctrace makes of traces Go writes. Under make check they all pass
# CTRACE_GO_WORK, which then also holds the one Go build cache of every
# Go build of the tests: each Go's standard library (half a minute of CPU
# for Go 1.22 and 1.23) is compiled once, not once per test and stage.
#
# Usage: tests/lib/gotrace_build.sh GO WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
want_args 2 "GO WORKDIR" $#
go=$1
work=$2
src=$here/gotrace.go.in
mkdir -p "$work"
v=$("$go" env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')
bin=$(cd "$work" && pwd)/gotrace-$v
key=$( { "$go" version; cat "$src"; } | sha256sum | cut -c1-40)
exec 8>"$bin.lock"
flock 8
if [ ! -x "$bin" ] || [ "$(cat "$bin.key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$bin.d"
    mkdir -p "$bin.d"
    cp "$src" "$bin.d/main.go"
    printf 'module gotrace\n\ngo 1.19\n' >"$bin.d/go.mod"
    (cd "$bin.d" && GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0 GOFLAGS=-mod=mod \
        GOCACHE="${CTRACE_GO_WORK:-$work}/gocache" "$go" build -o "$bin.tmp" .) >&2 || die "cannot build gotrace with $go"
    mv -f "$bin.tmp" "$bin"
    echo "$key" >"$bin.key"
fi
echo "$bin"
