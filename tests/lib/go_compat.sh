#!/usr/bin/env bash
# go_compat.sh - check that trace files are accepted by Go's own tools, in
# every Go version a user may open them with.
#
# Usage: tests/lib/go_compat.sh [--parse-only] TRACE [TRACE...]
#        tests/lib/go_compat.sh --list
#
# For every TRACE and every Go toolchain in GO_COMPAT_GOS (below; see
# /work/shared/GO-COMPAT.md for why each step matters):
#   1. the parser accepts it: `go tool trace -d TRACE` (Go 1.19-1.21),
#      `-d=1` (1.22 and 1.23, where -d takes a level, and 1.23 converts the
#      old format to its new event model) or `-d=parsed` (1.24 and later);
#   2. `go tool trace -http=127.0.0.1:0 TRACE` comes up and serves it (this
#      builds the views, which -d does not: Go 1.23's viewer runs its
#      generators over the whole trace as it starts, and panics on a trace
#      its converter accepted);
#   3. every page of the web UI answers HTTP 200: the version's fixed pages,
#      the /jsontrace data behind each /trace view the main page links to
#      (the first time range of each, for a big trace that is split; a
#      non-empty body: its handler reports errors as an empty 200);
#   4. every page /goroutines, /usertasks and /userregions link to (one per
#      goroutine group, task type and region type), and from those the raw
#      profiles they link to and, per kind of page, the /jsontrace data of
#      the first GO_COMPAT_TRACE_LINKS (default 1) /trace views they link
#      to (per goroutine, per task: each builds its view from the whole
#      trace, and a task page links two per task). GO_COMPAT_TRACE_LINKS=0
#      skips the main page's views too, for big traces (the server's start
#      runs the per-P view's code over the whole trace already).
# With --parse-only, step 1 alone (for tests that write many traces and
# serve a few of them in full). --list prints the go commands, one a line,
# and exits (for a test that has run one of them on its traces already).
#
# Prints "go_compat: TRACE ok (go1.19: N pages, ...)" per passing trace and
# exits 0 only if every trace passes in every version (1 on a failure, 2 on
# a usage error).
#
# Needs the Go toolchains and curl. No network access beyond 127.0.0.1 is
# used (GOTOOLCHAIN=local: no toolchain is ever downloaded).

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

# The Go toolchains every trace must open in: the one list of them for all
# the tests (tests/lib/go_paths.sh). Go 1.19 (Debian bookworm's golang-go) is
# the reference reader of the old format; Go 1.22 (bookworm-backports)
# still reads it with the old parser; Go 1.23 converts it to the new event
# model, as later Gos and today's third-party readers do; Go 1.24
# (trixie), 1.26 and 1.27 (sid) are what Go users run today, and Go 1.27
# reads the current format with other rules than 1.23 (a Sync before each
# generation). GO_COMPAT_GOS overrides the list (go commands separated by
# spaces).
. "$(dirname "${BASH_SOURCE[0]}")/go_paths.sh"
readonly DEFAULT_GOS="$GO_ALL"
read -r -a GOS <<<"${GO_COMPAT_GOS:-$DEFAULT_GOS}"

# Pages every version serves. The pprof pages are asked for with ?raw=1:
# without it they would render SVG through Graphviz, which tests the CI
# machine rather than the trace.
readonly COMMON_PAGES=(
    /
    /goroutines
    '/io?raw=1'
    '/block?raw=1'
    '/syscall?raw=1'
    '/sched?raw=1'
    '/regionio?raw=1'
    '/regionblock?raw=1'
    '/regionsyscall?raw=1'
    '/regionsched?raw=1'
    /usertasks
    /userregions
    /mmu
)
# The minimum mutator utilization data the /mmu page asks for, all flags
# on, per P and not: Go 1.19 serves it as /mmuPlot, 1.22 and later as
# /mmu?mode=plot. ('|' is %7C.)
readonly MMU_FLAGS='mut%7Cstw%7Cbackground%7Cassist%7Csweep'
readonly PAGES_OLD=("/mmuPlot?flags=$MMU_FLAGS" "/mmuPlot?flags=perProc%7C$MMU_FLAGS")
readonly PAGES_NEW=("/mmu?mode=plot&flags=$MMU_FLAGS" "/mmu?mode=plot&flags=perProc%7C$MMU_FLAGS")
# Pages whose links are followed (step 4).
readonly INDEX_PAGES=(/goroutines /usertasks /userregions)
readonly TRACE_LINKS=${GO_COMPAT_TRACE_LINKS:-1}
readonly START_TIMEOUT=120   # seconds for the server to parse and listen
readonly PAGE_TIMEOUT=300    # seconds per page (/jsontrace of a big trace)
readonly SHOW_LINES=20       # lines of output shown on a failure



# GO_COMPAT_PARSE_ONLY=1 does the same for every call (make check-asan and
# check-tsan: the pages exercise Go's code, not ours, and the plain run
# serves them from the same traces).
parse_only=${GO_COMPAT_PARSE_ONLY:-0}
if [ "${1:-}" = --list ]; then
    printf '%s\n' "${GOS[@]}"
    exit 0
fi
if [ "${1:-}" = --parse-only ]; then
    parse_only=1
    shift
fi
if [ $# -eq 0 ]; then
    echo "usage: $prog [--parse-only] TRACE [TRACE...]" >&2
    exit 2
fi
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
# go commands a private cache and, if needed, a HOME. Keep a browser from
# opening: cmd/internal/browser tries $BROWSER first and stops at the first
# command that succeeds, and only tries xdg-open when DISPLAY is set.
export GOCACHE="$tmp/gocache"
home_writable "$tmp"
export BROWSER=/bin/true GOTOOLCHAIN=local
unset DISPLAY GOFLAGS

# Run each trace tool binary itself rather than through `go tool`: the go
# command runs tools as a child process, so killing it would leave the
# server behind. `go tool trace` runs GOTOOLDIR/trace.
tools=() names=() minors=()
for go in "${GOS[@]}"; do
    [ -x "$go" ] || die "Go toolchain not found: $go (make test-deps installs them)"
    { read -r version && read -r tooldir; } < <("$go" env GOVERSION GOTOOLDIR) ||
        die "$go env GOVERSION GOTOOLDIR failed"
    minor=${version#go1.}
    minor=${minor%%[!0-9]*}
    # From Go 1.24 on, the tool is built on first use into the build cache.
    tool=$(go_trace_tool "$go") || die "cannot build '$go tool trace'"
    [ -x "$tool" ] || die "'$go tool trace' binary not found: $tool"
    tools+=("$tool") names+=("${version%.*}") minors+=("$minor")
done

# A pause without a process: a read that times out on a FIFO nobody writes.
mkfifo "$tmp/tick"
exec {tick}<>"$tmp/tick"
pause() { read -r -t "$1" -u "$tick" _ || true; }

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

# fail MESSAGE: report a failure of the trace and Go version being checked.
fail() {
    echo "$prog: $trace: $name: FAIL: $1" >&2
}

# fetch PAGE...: GETs every PAGE from $base (those not fetched yet from this
# server), through one curl, which keeps one connection open: a process per
# page would cost more than the pages. The body of the i-th page fetched
# from this server is $tmp/page.i; $tmp/fetched lists "i PAGE". Every page
# must answer 200 with a complete transfer (a handler that panics after
# sending the header leaves a truncated body, which curl reports as an
# error), and /jsontrace a non-empty body (see json_ok). Returns non-zero
# and prints the details on the first failure.
fetch() {
    local page i n=0 num code rc what
    local -a batch=()
    : >"$tmp/curl.cfg"
    for page in "$@"; do
        [ -z "${fetched[$page]:-}" ] || continue
        pages=$((pages + 1))
        fetched[$page]=$pages
        batch+=("$page")
        echo "$pages $page" >>"$tmp/fetched"
        # curl's config syntax: quoted strings, backslash and quote escaped.
        printf 'url = "%s"\noutput = "%s"\n' "$base$page" "$tmp/page.$pages" >>"$tmp/curl.cfg"
    done
    [ "${#batch[@]}" -gt 0 ] || return 0
    curl --silent --show-error --noproxy '*' --globoff --max-time "$PAGE_TIMEOUT" \
         --config "$tmp/curl.cfg" --write-out '%{urlnum} %{http_code} %{exitcode}\n' \
         >"$tmp/status" 2>"$tmp/curl.err" || true
    # Builtins only from here: a process per page would cost more than the page.
    local -A codes=() rcs=()
    while read -r num code rc; do
        codes[$num]=$code rcs[$num]=$rc
    done <"$tmp/status"
    for page in "${batch[@]}"; do
        i=${fetched[$page]}
        code=${codes[$n]:-000} rc=${rcs[$n]:--1}
        n=$((n + 1))
        [ -z "${GO_COMPAT_VERBOSE:-}" ] || echo "  $name $code $page" >&2
        [ -e "$tmp/page.$i" ] || : >"$tmp/page.$i"
        if [ "$rc" = 0 ] && [ "$code" = 200 ]; then
            json_ok "$page" "$tmp/page.$i" && continue
            what="returned an empty body"
        elif [ "$code" = 000 ]; then
            # The server recovers a handler's panic by dropping the connection.
            what="got no HTTP response (curl exit $rc; did the handler panic?)"
        elif [ "$rc" != 0 ]; then
            what="answered HTTP $code but the transfer failed (curl exit $rc)"
        else
            what="answered HTTP $code"
        fi
        fail "page $page $what"
        show "curl error" "$tmp/curl.err"
        show_head "body of $page" "$tmp/page.$i"
        show "server output" "$tmp/server.log" 40
        return 1
    done
}

# json_ok PAGE BODY: false for a /jsontrace PAGE with an empty BODY: its
# handler reports errors as an empty 200. One exception, Go 1.23's own: the
# view of a task with neither its start nor its end in the trace (a task
# made before the trace began and ended after it, or task 0, the background
# task that regions outside any task belong to, which the task pages list
# since 1.23) is an empty body and the log line "failed to find task with
# id N", as it is for Go's own traces.
json_ok() {
    local task
    case $1 in /jsontrace*) ;; *) return 0 ;; esac
    [ -s "$2" ] && return 0
    task=$(sed -n 's/^\/jsontrace?\(focus\)\{0,1\}task\(id\)\{0,1\}=\([0-9]*\)$/\3/p' <<<"$1")
    [ -n "$task" ] && grep -q "failed to find task with id $task\$" "$tmp/server.log"
}

# targets MAX_TRACES FILTER FILE...: the pages to fetch for the links of
# the HTML pages FILE..., in page order, each once per FILE: the site's own
# links (href values starting with '/', entities decoded, fragments dropped)
# to raw profiles (links without raw= render SVG, see COMMON_PAGES), to the
# pages of goroutine groups, task types and region types, and, for the
# first MAX_TRACES /trace views the FILEs link to (-1: all), their
# /jsontrace data. Each of those builds its view from the whole trace,
# which takes a while for a big one. An operand kind=K among the FILEs
# starts a kind of page of its own: its first MAX_TRACES views count from
# there. FILTER: all; views, the /jsontrace data alone, one per view (the
# time ranges of a split view after its first left out); or noindex, the
# pages of goroutine groups, task types and region types left out. One awk
# for all the files: processes are what costs here.
targets() {
    local max=$1 filter=$2
    shift 2
    awk -v max="$max" -v filter="$filter" -v q="'" '
        BEGIN { re = "href=[\"" q "]/[^\"" q "]*[\"" q "]" }
        {
            line = $0
            while (match(line, re)) {
                link = substr(line, RSTART + 6, RLENGTH - 7)
                line = substr(line, RSTART + RLENGTH)
                sub(/#.*/, "", link)
                gsub(/&amp;/, "\\&", link)
                if (seen[FILENAME "\t" link]++) continue
                if (link == "/trace" || link ~ /^\/trace\?/) {
                    if (max >= 0 && ++traces[kind] > max) continue
                    query = substr(link, 7)
                    sub(/^\?/, "", query)
                    out = "/jsontrace?" query
                } else if (link ~ /^\/(io|block|syscall|sched)\?.*raw=/ || link ~ /^\/region.*raw=/ ||
                           link ~ /^\/(goroutine|usertask|userregion)\?/) {
                    out = link
                } else {
                    continue
                }
                if (filter == "views") {
                    if (out !~ /^\/jsontrace/) continue
                    v = out
                    sub(/&?(start|end)=[0-9]*/, "", v)
                    sub(/&?(start|end)=[0-9]*/, "", v)
                    if (views[v]++) continue
                } else if (filter == "noindex" && out ~ /^\/(goroutine|usertask|userregion)\?/) {
                    continue
                }
                print out
            }
        }' "$@"
}


# --- the check of one trace in one Go version ----------------------------------

# check_version: run every check on $trace with the Go version at index $v
# of the tool lists; returns non-zero on failure. Called in an `if`, so
# `set -e` does not apply here: every step checks its status explicitly.
check_version() {
    local tool=${tools[$v]} minor=${minors[$v]} rc=0 page dflag=-d line
    local -a pages_v level next files
    local kind
    pages=0 base=""
    fetched=()
    rm -f "$tmp"/page.* "$tmp/fetched"
    [ "$minor" -ge 22 ] && dflag=-d=1
    [ "$minor" -ge 24 ] && dflag=-d=parsed # -d takes a mode from Go 1.24 on

    # 1. The parser: it parses the trace and prints its events. Only the
    #    last lines are kept; a big trace prints millions.
    "$tool" "$dflag" -http=127.0.0.1:0 "$trace" 2>"$tmp/d.err" \
        | tail -n "$SHOW_LINES" >"$tmp/d.out" || rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        fail "'go tool trace $dflag' exited with status $rc"
        show "stderr" "$tmp/d.err"
        show "stdout" "$tmp/d.out"
        return 1
    fi
    [ "$parse_only" -eq 1 ] && return 0

    # 2. The server: it parses the trace, splits it, then logs the address.
    : >"$tmp/server.log"
    "$tool" -http=127.0.0.1:0 "$trace" >"$tmp/server.log" 2>&1 &
    server_pid=$!
    SECONDS=0
    while :; do
        while IFS= read -r line; do
            if [[ $line =~ Trace\ viewer\ is\ listening\ on\ (http:[^ ]*) ]]; then
                base=${BASH_REMATCH[1]}
                break
            fi
        done <"$tmp/server.log"
        [ -n "$base" ] && break
        if ! kill -0 "$server_pid" 2>/dev/null; then
            rc=0
            wait "$server_pid" || rc=$?
            server_pid=""
            fail "'go tool trace -http' exited early (status $rc)"
            show "server output" "$tmp/server.log" 40
            return 1
        fi
        if [ "$SECONDS" -ge "$START_TIMEOUT" ]; then
            fail "server not listening after ${START_TIMEOUT}s"
            show "server output" "$tmp/server.log" 40
            stop_server
            return 1
        fi
        pause 0.05
    done

    # 3. The fixed pages, and the data of the views the main page links to
    #    (the other links of the main page are among the fixed pages, or
    #    are Go 1.19's misspelt /sche?raw=1).
    if [ "$minor" -ge 22 ]; then
        pages_v=("${COMMON_PAGES[@]}" "${PAGES_NEW[@]}")
    else
        pages_v=("${COMMON_PAGES[@]}" "${PAGES_OLD[@]}")
    fi
    fetch "${pages_v[@]}" || { stop_server; return 1; }
    #    A big trace is split into time ranges, each a view of its own:
    #    the first range of each view (Go 1.22+: per P, per thread) is
    #    fetched, the others are the same code on other events.
    #    With GO_COMPAT_TRACE_LINKS=0, no view at all: the server's start
    #    already ran the per-P view's code over the whole trace.
    level=()
    [ "$TRACE_LINKS" -eq 0 ] || mapfile -t level < <(targets -1 views "$tmp/page.${fetched[/]}")
    fetch "${level[@]}" || { stop_server; return 1; }

    # 4. Every page the index pages link to, and one level more.
    files=()
    for page in "${INDEX_PAGES[@]}"; do files+=("$tmp/page.${fetched[$page]}"); done
    mapfile -t level < <(targets -1 all "${files[@]}")
    fetch "${level[@]}" || { stop_server; return 1; }
    #    From the pages of each kind (goroutine groups, task types, region
    #    types), the first GO_COMPAT_TRACE_LINKS /trace views.
    files=()
    local n=0
    for kind in goroutine usertask userregion; do
        files+=("kind=$kind")
        for page in "${level[@]}"; do
            case $page in "/$kind?"*) files+=("$tmp/page.${fetched[$page]}") n=$((n + 1)) ;; esac
        done
    done
    next=()
    # (Not without a page: awk given no file reads its standard input.)
    [ "$n" -eq 0 ] || mapfile -t next < <(targets "$TRACE_LINKS" noindex "${files[@]}")
    fetch "${next[@]}" || { stop_server; return 1; }

    stop_server
    # A handler's panic the server survived still fails the trace.
    if grep -q 'panic' "$tmp/server.log"; then
        fail "the server logged a panic"
        show "server output" "$tmp/server.log" 40
        return 1
    fi
}

# --- main ----------------------------------------------------------------------

declare -A fetched  # page -> its number, for the server being crawled
failed=0
for trace in "$@"; do
    ok=1 summary=""
    if [ ! -r "$trace" ]; then
        echo "$prog: $trace: FAIL: cannot read the file" >&2
        failed=$((failed + 1))
        continue
    fi
    read_by=() skipped=()
    for v in "${!tools[@]}"; do
        name=${names[$v]}
        # Go's current format is for Go 1.22 and later: an older Go says
        # "unsupported trace file version" of it, by design.
        if ! go_reads "$trace" "${minors[$v]}"; then
            skipped+=("$name")
            continue
        fi
        read_by+=("$name")
        if check_version; then
            summary+="${summary:+, }$name: $pages pages"
        else
            ok=0
        fi
    done
    if [ "${#read_by[@]}" -eq 0 ]; then
        echo "$prog: $trace: FAIL: none of ${names[*]} reads its format" >&2
        ok=0
    fi
    notread=${skipped[*]+"; not for ${skipped[*]}, older than its format"}
    if [ "$ok" -eq 1 ]; then
        if [ "$parse_only" -eq 1 ]; then
            echo "go_compat: $trace parsed (${read_by[*]}$notread)"
        else
            echo "go_compat: $trace ok ($summary$notread)"
        fi
    else
        failed=$((failed + 1))
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed of $# trace(s) failed" >&2
    exit 1
fi
exit 0
