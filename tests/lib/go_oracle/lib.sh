# lib.sh - sourced by build123.sh and build127.sh: the steps every build of
# a command from Go's own internal/trace sources shares. Nothing of Go's is
# kept in the repository: the sources are copied at test time into a
# throwaway module under OUT.d/, their imports renamed, and built there.

# oracle_copy GO OUT MODULE MAIN DIR...: takes OUT's lock (concurrent
# callers wait) and exits 0 if OUT was built from these very sources (Go's
# DIRs under GOROOT/src/internal/trace, MAIN, the calling script and this
# file); else copies the DIRs (not their tests) into OUT.d/trace/ with
# their imports of internal/trace renamed to MODULE/trace, and sets mod
# (OUT.d) and oracle_key for oracle_build.
oracle_copy() {
    local go=$1 out=$2 module=$3 main=$4 src d f
    shift 4
    src=$(GOTOOLCHAIN=local "$go" env GOROOT)/src/internal/trace
    exec 9>"$out.lock"
    flock 9
    oracle_key=$( { "$go" version; for d in "$@"; do for f in "$src/$d"/*.go; do echo "$f"; cat "$f"; done; done
                    cat "$main" "$0" "${BASH_SOURCE[0]}"; } | sha256sum | cut -d' ' -f1)
    if [ -x "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$oracle_key" ]; then exit 0; fi
    mod=$out.d
    rm -rf "$mod"
    for d in "$@"; do
        mkdir -p "$mod/trace/$d"
        for f in "$src/$d"/*.go; do
            case $f in *_test.go) continue ;; esac
            sed "s#\"internal/trace#\"$module/trace#" "$f" >"$mod/trace/$d/$(basename "$f")"
        done
    done
}

# oracle_build GO OUT MODULE GOVERSION MAIN: builds OUT from the module
# oracle_copy made (MAIN its main.go), with no network and no cgo, in Go's
# build cache: under make check the one of every Go build of the tests
# (CTRACE_GO_WORK), else the caller's, else one of its own.
oracle_build() {
    local go=$1 out=$2 module=$3 version=$4 main=$5
    cp "$main" "$mod/main.go"
    printf 'module %s\n\ngo %s\n' "$module" "$version" >"$mod/go.mod"
    if [ -n "${CTRACE_GO_WORK:-}" ]; then GOCACHE=$CTRACE_GO_WORK/gocache; fi
    export GOCACHE=${GOCACHE:-$mod.gocache} GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on \
        CGO_ENABLED=0 GOTOOLCHAIN=local
    if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then export HOME="$mod.home"; mkdir -p "$HOME"; fi
    (cd "$mod" && "$go" build -o "$out.tmp" .) || { echo "${0##*/}: go build failed in $mod" >&2; exit 1; }
    mv -f "$out.tmp" "$out"
    echo "$oracle_key" >"$out.key"
}
