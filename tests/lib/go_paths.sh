# go_paths.sh - sourced by the tests and benchmarks: where each Go
# toolchain they compare ctrace with is, written once. Each may be
# overridden by its variable (GO119 ... GO127).
#
# Go 1.19 (Debian bookworm's golang-go), 1.22 and 1.23 (bookworm-backports)
# are installed by make test-deps as Debian packages; Go 1.24 (trixie's
# golang-1.24-go), 1.26 and 1.27 (sid's) are unpacked into build/go/ by
# scripts/go-oracles.sh (called by make test-deps), never installed.
# CTRACE_GO_DIR names that folder (default: build/go beside the tests/
# that holds this file's lib/), for a build elsewhere.
ctrace__gp_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CTRACE_GO_DIR=${CTRACE_GO_DIR:-$(cd "$ctrace__gp_here/../.." && pwd)/build/go}
GO119=${GO119:-/usr/lib/go-1.19/bin/go}
GO122=${GO122:-/usr/lib/go-1.22/bin/go}
GO123=${GO123:-/usr/lib/go-1.23/bin/go}
GO124=${GO124:-$CTRACE_GO_DIR/go-1.24/bin/go}
GO126=${GO126:-$CTRACE_GO_DIR/go-1.26/bin/go}
GO127=${GO127:-$CTRACE_GO_DIR/go-1.27/bin/go}
# Every Go a trace ctrace writes must open in (tests/lib/go_compat.sh).
GO_ALL="$GO119 $GO122 $GO123 $GO124 $GO126 $GO127"
unset ctrace__gp_here

# go_trace_tool GO: the path of GO's `go tool trace` command. Up to Go 1.23
# it ships in GOTOOLDIR; from Go 1.24 on it is built on first use into the
# build cache, and `go tool -n trace` builds it and says where: into
# make check's one cache ($CTRACE_GO_WORK/gocache) when there is one, so
# that it is built once for all the tests, else into the caller's GOCACHE.
go_trace_tool() {
    local dir
    dir=$(GOTOOLCHAIN=local "$1" env GOTOOLDIR) || return 1
    if [ -x "$dir/trace" ]; then
        echo "$dir/trace"
    elif [ -n "${CTRACE_GO_WORK:-}" ]; then
        mkdir -p "$CTRACE_GO_WORK/gocache" &&
            GOCACHE=$CTRACE_GO_WORK/gocache GOTOOLCHAIN=local GOFLAGS= "$1" tool -n trace
    else
        GOTOOLCHAIN=local GOFLAGS= "$1" tool -n trace
    fi
}
# go_reads TRACE GO_MINOR: whether Go 1.GO_MINOR reads TRACE: a trace of
# Go's current format (header go 1.22 or later) only Go 1.22 and later do.
go_reads() {
    local head
    head=$(head -c 16 "$1" | tr -d '\0')
    case $head in
    "go 1.2"[2-9]" trace" | "go 1."[3-9][0-9]" trace") [ "$2" -ge 22 ] ;;
    *) return 0 ;;
    esac
}
# Those that read Go's current format (a trace ctrace writes with
# CTRACE_FORMAT=go1.22): all but Go 1.19.
GO_CURRENT="$GO122 $GO123 $GO124 $GO126 $GO127"
# The oldest and the newest of them: what the tests that write many traces
# in the current format parse each with (Go 1.24 rewrote the reader Go 1.22
# and 1.23 share; the newest is what users open traces with).
GO_CURRENT_EDGES="$GO122 $GO127"
