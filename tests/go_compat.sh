#!/usr/bin/env bash
# go_compat.sh - check that trace files are accepted by Go's own tools.
#
# Usage: tests/go_compat.sh TRACE [TRACE...]
#
# For every TRACE (see /work/shared/GO-COMPAT.md for why each step matters):
#   1. `go tool trace -d TRACE` must exit 0 (the parser accepts the trace);
#   2. `go tool trace -http=127.0.0.1:0 TRACE` must come up and serve it
#      (this also builds the views, which `-d` does not);
#   3. every page of the web UI must answer HTTP 200 and /jsontrace must
#      return a non-empty body (its handler reports errors as an empty 200);
#   4. the page of the first goroutine group listed on /goroutines must
#      answer 200 as well.
# Prints "go_compat: TRACE ok (N pages)" per passing trace and exits 0 only
# if every trace passes (1 on a failure, 2 on a usage error).
#
# Needs `go` (Go 1.19's tool is the reference reader) and `curl`. No network
# access beyond 127.0.0.1 is used.

set -euo pipefail

# Pages every trace must serve with status 200. The pprof pages are asked
# for with ?raw=1: without it they would render SVG through Graphviz, which
# tests the CI machine rather than the trace.
readonly PAGES=(
    /
    /trace
    /jsontrace
    /goroutines
    '/io?raw=1'
    '/block?raw=1'
    '/syscall?raw=1'
    '/sched?raw=1'
    /usertasks
    /userregions
    /mmu
)
readonly START_TIMEOUT=120   # seconds for the server to parse and listen
readonly PAGE_TIMEOUT=300    # seconds per page (/jsontrace of a big trace)
readonly SHOW_LINES=20       # lines of output shown on a failure

prog=${0##*/}

die() {
    echo "$prog: $*" >&2
    exit 1
}

if [ $# -eq 0 ]; then
    echo "usage: $prog TRACE [TRACE...]" >&2
    exit 2
fi
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"
command -v curl >/dev/null 2>&1 || die "curl not found on PATH"

# --- private scratch space and clean-up --------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/go_compat.XXXXXX")
server_pid=""

# Stop the trace server started by this script, if one is running.
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A clean CI environment (e.g. root without HOME) must still work: give the
# go command a private cache and, if needed, a HOME. Keep a browser from
# opening: cmd/internal/browser tries $BROWSER first and stops at the first
# command that succeeds, and only tries xdg-open when DISPLAY is set.
export GOCACHE="$tmp/gocache"
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then
    export HOME="$tmp/home"
    mkdir -p "$HOME"
fi
export BROWSER=/bin/true
unset DISPLAY GOFLAGS

# Run the trace tool binary itself rather than through `go tool`: the go
# command runs tools as a child process, so killing it would leave the
# server behind. `go tool -n trace` prints the binary `go tool trace` runs.
trace_tool=$(go tool -n trace) || die "cannot locate 'go tool trace'"
[ -x "$trace_tool" ] || die "'go tool trace' binary not found: $trace_tool"

# --- helpers -------------------------------------------------------------------

# show TITLE FILE [LINES]: print the last LINES (default $SHOW_LINES) lines
# of FILE, indented, under TITLE.
show() {
    local lines=${3:-$SHOW_LINES}
    echo "  --- $1 (last $lines lines) ---" >&2
    if [ -s "$2" ]; then
        tail -n "$lines" "$2" | sed 's/^/  | /' >&2
    else
        echo "  | (empty)" >&2
    fi
}

# show_head TITLE FILE: print the first lines of FILE, indented, under TITLE
# (only the size if FILE holds binary data, such as a raw pprof profile).
show_head() {
    echo "  --- $1 (first $SHOW_LINES lines) ---" >&2
    if [ ! -s "$2" ]; then
        echo "  | (empty)" >&2
    elif ! LC_ALL=C grep -Iq . "$2"; then
        echo "  | (binary, $(wc -c <"$2") bytes)" >&2
    else
        head -n "$SHOW_LINES" "$2" | cut -c1-300 | sed 's/^/  | /' >&2
    fi
}

# fail TRACE MESSAGE: report a failure of TRACE.
fail() {
    echo "$prog: $1: FAIL: $2" >&2
}

# fetch BASE PAGE BODY: GET BASE/PAGE into file BODY and require status 200
# and a complete transfer (a handler that panics after sending the header
# leaves a truncated body, which curl reports as an error).
# Returns non-zero and prints the details on failure.
fetch() {
    local base=$1 page=$2 body=$3 code rc=0 what
    : >"$body"  # curl leaves the file alone when no body arrives
    code=$(curl --silent --show-error --noproxy '*' \
                --max-time "$PAGE_TIMEOUT" \
                --output "$body" --write-out '%{http_code}' \
                "$base$page" 2>"$tmp/curl.err") || rc=$?
    if [ "$rc" -eq 0 ] && [ "$code" = 200 ]; then
        return 0
    fi
    if [ "${code:-000}" = 000 ]; then
        # The server recovers a handler's panic by dropping the connection.
        what="got no HTTP response (curl exit $rc; did the handler panic?)"
    elif [ "$rc" -ne 0 ]; then
        what="answered HTTP $code but the transfer failed (curl exit $rc)"
    else
        what="answered HTTP $code"
    fi
    fail "$trace" "page $page $what"
    show "curl error" "$tmp/curl.err"
    show_head "body of $page" "$body"
    show "server output" "$tmp/server.log" 40
    return 1
}

# --- the check of one trace ----------------------------------------------------

# check_trace: run every check on the trace file named by the global $trace
# (which fetch also uses in its messages); returns non-zero on failure.
# Called in an `if`, so `set -e` does not apply here: every step checks
# its status explicitly.
check_trace() {
    local rc=0 addr="" page n=0 goroutine

    if [ ! -r "$trace" ]; then
        fail "$trace" "cannot read the file"
        return 1
    fi

    # 1. The parser: `-d` parses the trace and prints its events. Only the
    #    last lines are kept; a big trace prints millions.
    "$trace_tool" -d -http=127.0.0.1:0 "$trace" 2>"$tmp/d.err" \
        | tail -n "$SHOW_LINES" >"$tmp/d.out" || rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        fail "$trace" "'go tool trace -d' exited with status $rc"
        show "stderr" "$tmp/d.err"
        show "stdout" "$tmp/d.out"
        return 1
    fi

    # 2. The server: it parses the trace, splits it, then logs the address.
    : >"$tmp/server.log"
    "$trace_tool" -http=127.0.0.1:0 "$trace" >"$tmp/server.log" 2>&1 &
    server_pid=$!
    SECONDS=0
    while :; do
        addr=$(sed -n 's/.*Trace viewer is listening on \(http:[^ ]*\).*/\1/p' \
                   "$tmp/server.log" | head -n 1)
        [ -n "$addr" ] && break
        if ! kill -0 "$server_pid" 2>/dev/null; then
            rc=0
            wait "$server_pid" || rc=$?
            server_pid=""
            fail "$trace" "'go tool trace -http' exited early (status $rc)"
            show "server output" "$tmp/server.log" 40
            return 1
        fi
        if [ "$SECONDS" -ge "$START_TIMEOUT" ]; then
            fail "$trace" "server not listening after ${START_TIMEOUT}s"
            show "server output" "$tmp/server.log" 40
            stop_server
            return 1
        fi
        sleep 0.1
    done

    # 3. Every page must answer 200.
    for page in "${PAGES[@]}"; do
        fetch "$addr" "$page" "$tmp/page" || { stop_server; return 1; }
        n=$((n + 1))
        case $page in
        /jsontrace)
            # Its handler logs errors and returns an empty 200.
            if [ ! -s "$tmp/page" ]; then
                fail "$trace" "page /jsontrace returned an empty body"
                show "server output" "$tmp/server.log" 40
                stop_server
                return 1
            fi
            ;;
        /goroutines)
            cp "$tmp/page" "$tmp/goroutines.html"
            ;;
        esac
    done

    # 4. The page of the first goroutine group listed on /goroutines.
    goroutine=$(grep -o 'href="/goroutine?id=[0-9]*"' "$tmp/goroutines.html" \
                | head -n 1 | sed 's/^href="//; s/"$//') || true
    if [ -n "$goroutine" ]; then
        fetch "$addr" "$goroutine" "$tmp/page" || { stop_server; return 1; }
        n=$((n + 1))
    fi

    stop_server

    echo "go_compat: $trace ok ($n pages)"
}

# --- main ----------------------------------------------------------------------

failed=0
for trace in "$@"; do
    if ! check_trace; then
        failed=$((failed + 1))
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed of $# trace(s) failed" >&2
    exit 1
fi
exit 0
