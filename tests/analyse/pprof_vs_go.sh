#!/usr/bin/env bash
# pprof_vs_go.sh - `ctrace pprof -t TYPE` makes the profile Go makes.
#
# Usage: tests/analyse/pprof_vs_go.sh CTRACE BINDIR WORKDIR
#
#   CTRACE   the ctrace command (build/bin/ctrace)
#   BINDIR   where ex_threads, ex_mn_runtime and the run_* programs are
#   WORKDIR  scratch and cache directory in the build tree
#
# For each of net, sync, syscall and sched, and each trace of Go 1.19's
# corpus that `go tool trace -pprof` reads (1.7 and later: a 1.5 trace needs
# its binary), each trace the examples write, and `ctrace run` traces of
# tests/preload programs: `go tool pprof -raw` (Go 1.19) of ctrace's profile
# must show the same samples as of `go tool trace -pprof=TYPE`'s: per
# sample its count, its delay and its stack as address, function, file and
# line of each frame (pprof_norm.awk). Only the numbering and order of
# samples, locations and functions are left out of the comparison: Go
# builds them by iterating over maps, so they change from run to run. So
# does its order of events of equal time, by a nanosecond of delay: a
# delay may differ by as much a contention (pprof_same.awk).
# Also: the profile types' sample types are Go's, and the ctrace traces give
# non-empty profiles where the program did wait (so that agreement is not
# only two empty profiles). The same on traces Go 1.22 and 1.23 write, held
# to Go 1.23 (its own rules there), one of them with a goroutine that Go
# 1.23 first shows in a status with a stack (GoStatusStack), and on traces
# Go 1.26 and 1.27 write, held to Go 1.27 (its rules, GOMAXPROCS 1 and 2). The filters
# (--goroutine, --region) against Go's pages, which filter: Go 1.19's on
# an example's trace, Go 1.23's on a Go 1.23 trace of several generations
# and Go 1.27's on a Go 1.27 one (on one each: the pages take some 15 s).
# Go's normalised output for the corpus is cached in WORKDIR/cache.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# make check's sanitizer stages share the plain stage's Go outputs and Go
# builds (CTRACE_GO_WORK): only ctrace's side differs between them.
shared_go_work=1
. "$here/../lib/lib.sh"
ctrace_args "$@"
. "$here/../lib/go_paths.sh"
norm=$here/pprof_norm.awk
# same GO CTRACE: the two normalised profiles show the same samples, a
# delay within a nanosecond a contention of Go's (pprof_same.awk says why).
same() { awk -f "$here/pprof_same.awk" "$1" "$2"; }
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"
mkdir -p "$work/cache"
go_env
trace_tool=$(go tool -n trace) || die "cannot locate 'go tool trace'"
pprof_tool=$(go tool -n pprof) || die "cannot locate 'go tool pprof'"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT)/src/internal/trace/testdata}
[ -d "$corpus" ] || die "no Go trace corpus in $corpus"
govers=$(go version | sha256sum | cut -c1-12)

checked=0

# raw PROFILE OUT: the normalised samples of PROFILE, sorted; pprof's -raw
# output itself in OUT.raw.
raw() {
    local rc=0
    "$pprof_tool" -raw "$1" >"$2.raw" 2>"$2.err" || rc=$?
    awk -f "$norm" "$2.raw" | LC_ALL=C sort >"$2"
    return "$rc"
}

# go_profile KIND TRACE OUT [CACHE]: Go's normalised profile (of the Go
# whose trace tool is $trace_tool).
go_profile() {
    local kind=$1 file=$2 out=$3 key
    if [ "${4:-}" = cache ]; then
        key=$work/cache/$(sha256sum <"$file" | cut -c1-40)-$govers-$kind
        if [ -f "$key" ]; then
            cp "$key" "$out"
            return 0
        fi
    fi
    "$trace_tool" -pprof="$kind" "$file" >"$out.pb" 2>"$out.err" || return 1
    raw "$out.pb" "$out"
    if [ -n "${key:-}" ]; then
        cp "$out" "$key.tmp.$$" && mv -f "$key.tmp.$$" "$key"
    fi
}

# check NAME TRACE [cache]: every kind; prints the samples per kind.
declare -A nsamples
check() {
    local name=$1 file=$2 kind out=$run/$1 counts=""
    for kind in net sync syscall sched; do
        checked=$((checked + 1))
        if ! go_profile "$kind" "$file" "$out.$kind.go" "${3:-}"; then
            fail "$name" "go tool trace -pprof=$kind failed"
            sed 's/^/  | /' "$out.$kind.go.err" | head -5 >&2
            continue
        fi
        if ! "$ctrace" pprof -t "$kind" -o "$out.$kind.pb" "$file" 2>"$out.$kind.err"; then
            fail "$name" "ctrace pprof -t $kind failed"
            sed 's/^/  | /' "$out.$kind.err" | head -5 >&2
            continue
        fi
        raw "$out.$kind.pb" "$out.$kind.ctrace"
        if ! grep -qx 'contentions/count delay/nanoseconds' "$out.$kind.ctrace.raw"; then
            fail "$name" "-t $kind: sample types are not contentions/count delay/nanoseconds"
        fi
        if ! same "$out.$kind.go" "$out.$kind.ctrace"; then
            fail "$name" "-t $kind: samples differ from Go's ($(wc -l <"$out.$kind.go") from Go, $(wc -l <"$out.$kind.ctrace") from ctrace)"
            diff "$out.$kind.go" "$out.$kind.ctrace" | head -n 10 | cut -c1-300 | sed 's/^/  | /' >&2 || true
            continue
        fi
        nsamples[$name.$kind]=$(wc -l <"$out.$kind.go")
        counts="$counts $kind=${nsamples[$name.$kind]}"
    done
    echo "$prog: $name:$counts"
}

# serve TRACE LOG: starts $trace_tool -http on TRACE; sets url and pid
# (url empty if it did not start). It listens once it has read the trace,
# which a loaded machine may make slow: waited for as long as it runs
# (ctest's timeout bounds the test).
serve() {
    : >"$2"
    "$trace_tool" -http=127.0.0.1:0 "$1" >"$2" 2>&1 &
    pid=$!
    url=
    while :; do
        url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$2")
        [ -n "$url" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$url" ] || kill "$pid" 2>/dev/null || true
}

# same_as_page NAME PAGE_URL WHAT CTRACE_ARGS...: Go's raw profile from a
# page against ctrace pprof's, with those arguments, of the caller's file;
# adds Go's samples to the caller's n.
same_as_page() {
    local name=$1 page=$2 what=$3
    shift 3
    checked=$((checked + 1))
    curl -sf "$page" -o "$run/f.go.pb" || { fail "$name" "no $what"; return; }
    "$ctrace" pprof "$@" -o "$run/f.pb" "$file" 2>"$run/f.err" \
        || { fail "$name" "ctrace pprof $* failed"; sed 's/^/  | /' "$run/f.err" >&2; return; }
    raw "$run/f.go.pb" "$run/f.go"
    raw "$run/f.pb" "$run/f.ctrace"
    if ! same "$run/f.go" "$run/f.ctrace"; then
        fail "$name" "pprof $* differs from Go's $what"
        diff "$run/f.go" "$run/f.ctrace" | head -n 6 | cut -c1-300 | sed 's/^/  | /' >&2 || true
    fi
    n=$((n + $(wc -l <"$run/f.go")))
}

# --- Go's corpus ------------------------------------------------------------
for file in "$corpus"/*_good; do
    [ "$(head -c 12 "$file")" = "go 1.5 trace" ] && continue
    check "$(basename "$file")" "$file" cache
done

# --- traces ctrace writes ------------------------------------------------------
gen=$run/gen
mkdir -p "$gen"
for ex in threads mn_runtime; do
    "$bindir/ex_$ex" "$gen/ex_$ex.trace" >"$gen/ex_$ex.log" 2>&1 || fail "ex_$ex" "exited non-zero"
    check "ex_$ex" "$gen/ex_$ex.trace"
done
# ctrace run: condition variables (sync), a pipe and a socket (net),
# system calls, wakeups (sched). In the classic format here, which Go 1.19
# reads; in ctrace run's default, Go's current format, against Go 1.23
# below.
run_traces() { # FORMAT SUFFIX
    local p args
    for p in pingpong pipe tcp threadpool; do
        args=()
        [ "$p" = pingpong ] && args=(50)
        timeout -k 5 120 "$ctrace" run --format="$1" -o "$gen/run_$p$2.trace" -- "$bindir/run_$p" \
            ${args[@]+"${args[@]}"} >"$gen/run_$p$2.log" 2>&1 || { fail "run_$p$2" "ctrace run failed"; continue; }
        check "run_$p$2" "$gen/run_$p$2.trace"
    done
}
run_traces go1.11 ""
# --- traces Go 1.22 and 1.23 write, against Go 1.23 ---------------------------
# Go 1.23 computes the four profiles on its new model by its own rules
# (cmd/trace/pprof.go), which ctrace follows on these traces only: held
# to Go 1.23's `go tool trace -pprof`, read by Go 1.23's pprof. Traces of
# tests/lib/gotrace.go.in (blocking of every kind, syscalls, GC, with
# and without CPU samples, over several generations), built at test time.
go123=$GO123

# filters123 NAME TRACE: --goroutine and --region on a Go 1.22+ trace,
# against Go 1.23's pages: they filter by a goroutine group's name (the
# /goroutines page links /goroutine?name=NAME; /io, /block, /syscall and
# /sched take the same ?name=NAME&raw=1) and by region type (/userregions
# links /userregion?type=NAME; /regionio, /regionblock, /regionsyscall,
# /regionsched take ?type=NAME&raw=1).
filters123() {
    local name=$1 file=$2 n=0 enc gname kind page t
    serve "$file" "$run/http123.log"
    [ -n "$url" ] || { fail "$name" "go tool trace -http did not start"; return; }
    curl -sf "$url/goroutines" -o "$run/groups.html" || fail "$name" "no /goroutines page"
    while IFS=$'\t' read -r enc gname; do
        [ -n "$enc" ] || continue
        gname=$(sed 's/&lt;/</g; s/&gt;/>/g; s/&#34;/"/g; s/&quot;/"/g; s/&#39;/'"'"'/g; s/&amp;/\&/g' <<<"$gname")
        for kind in net sync syscall sched; do
            case $kind in net) page=io ;; sync) page=block ;; *) page=$kind ;; esac
            same_as_page "$name" "$url/$page?name=$enc&raw=1" "/$page?name=$enc" -t "$kind" --goroutine="$gname"
        done
    done < <(sed -n 's/.*href="\/goroutine?name=\([^"]\{1,\}\)">\([^<]*\)<.*/\1\t\2/p' "$run/groups.html")
    curl -sf "$url/userregions" -o "$run/regions.html" || fail "$name" "no /userregions page"
    for t in $(sed -n 's/.*href="\/userregion?type=\([^"&]\{1,\}\)".*/\1/p' "$run/regions.html" | sort -u); do
        for kind in net sync syscall sched; do
            case $kind in net) page=regionio ;; sync) page=regionblock ;; *) page=region$kind ;; esac
            same_as_page "$name" "$url/$page?type=$t&raw=1" "/$page?type=$t" -t "$kind" --region="$t"
        done
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ "$n" -gt 0 ] || fail "$name" "the filtered profiles are all empty: nothing compared"
    echo "$prog: $name: filters as Go's pages ($n samples)"
}

# pages FILTERS NAME TRACE: the filters against Go's pages, served by
# Go for each trace anew (a trace written at test time is never in the
# cache), in the plain stage of make check only: the sanitizer stages
# (GO_COMPAT_PARSE_ONLY) would spend minutes on Go's servers to run
# ctrace's side, which the plain stage has held to them already.
pages() {
    if [ -n "${GO_COMPAT_PARSE_ONLY:-}" ]; then
        echo "$prog: $2: the filters against Go's pages are the plain stage's"
        return
    fi
    "$@"
}

if [ -x "$go123" ]; then
    saved_trace=$trace_tool saved_pprof=$pprof_tool saved_govers=$govers
    trace_tool=$("$go123" tool -n trace) || die "cannot locate Go 1.23's 'go tool trace'"
    pprof_tool=$("$go123" tool -n pprof) || die "cannot locate Go 1.23's 'go tool pprof'"
    govers=$("$go123" version | sha256sum | cut -c1-12)
    for go in "$GO122" "$go123"; do
        [ -x "$go" ] || { fail "$go" "no such Go (make test-deps)"; continue; }
        gt=$(bash "$here/../lib/gotrace_build.sh" "$go" "${CTRACE_GO_WORK:-$work}") ||
            { fail "$go" "cannot build gotrace"; continue; }
        v=${gt##*-}
        for mode in ${PPROF_GOTRACE_MODES:-nocpu cpu long}; do
            if bash "$here/../lib/gotrace_write.sh" "$gt" "$mode" "$gen/go$v-$mode.trace" \
                   >"$gen/go$v-$mode.log" 2>&1; then
                check "go$v-$mode" "$gen/go$v-$mode.trace" cache
                [ "$v-$mode" = 1.23-long ] && pages filters123 "go$v-$mode" "$gen/go$v-$mode.trace"
            else
                fail "go$v-$mode" "gotrace exited non-zero"
            fi
        done
    done
    run_traces go1.22 -go122
    trace_tool=$saved_trace pprof_tool=$saved_pprof govers=$saved_govers
else
    fail go1.23 "no Go 1.23 at $go123 (make test-deps)"
fi

# --- traces Go 1.26 and 1.27 write, against Go 1.27 ---------------------------
# Go 1.27's rules for go 1.25+ traces (cmd/trace/pprof.go): every
# goroutine transition counts, stack or not (a GoStart ends a sched
# interval, a syscall's end a syscall one), an interval begun without a
# stack is counted under the empty stack, and a record is keyed by its
# stack's PCs. Held to Go 1.27's `go tool trace -pprof`, read by Go 1.27's
# pprof; its filters to its pages on one trace of several generations.
if [ -x "$GO127" ] && [ -x "$GO126" ]; then
    saved_trace=$trace_tool saved_pprof=$pprof_tool saved_govers=$govers
    trace_tool=$(go_trace_tool "$GO127") || die "cannot build Go 1.27's 'go tool trace'"
    pprof_tool=$(GOTOOLCHAIN=local "$GO127" tool -n pprof) || die "cannot build Go 1.27's 'go tool pprof'"
    govers=$("$GO127" version | sha256sum | cut -c1-12)
    for go in "$GO126" "$GO127"; do
        gt=$(bash "$here/../lib/gotrace_build.sh" "$go" "${CTRACE_GO_WORK:-$work}") ||
            { fail "$go" "cannot build gotrace"; continue; }
        v=${gt##*-}
        for mode in ${PPROF_GOTRACE_MODES:-nocpu cpu long long-p1}; do
            if bash "$here/../lib/gotrace_write.sh" "$gt" "$mode" "$gen/go$v-$mode.trace" \
                   >"$gen/go$v-$mode.log" 2>&1; then
                check "go$v-$mode" "$gen/go$v-$mode.trace" cache
                [ "$v-$mode" = 1.27-long ] && pages filters123 "go$v-$mode" "$gen/go$v-$mode.trace"
            else
                fail "go$v-$mode" "gotrace exited non-zero"
            fi
        done
    done
    trace_tool=$saved_trace pprof_tool=$saved_pprof govers=$saved_govers
else
    fail go1.27 "no Go 1.26 or 1.27 at $GO126, $GO127 (make test-deps: scripts/go-oracles.sh)"
fi

# --- the filters, against Go 1.19's web pages ---------------------------------
# Go's command line has no filter; its pages do: /block?id=PC&raw=1 (a
# goroutine group, by the PC of its start function, which /goroutines
# lists with the function's name) and /regionblock?type=NAME&raw=1. Checked
# on the ex_threads trace, whose regions wait on locks.
filters() {
    local name=$1 file=$2 n=0 page kind id gname r
    serve "$file" "$run/http.log"
    [ -n "$url" ] || { fail "$name" "go tool trace -http did not start"; return; }
    page=$(curl -sf "$url/goroutines") || fail "$name" "no /goroutines page"
    while IFS=$'\t' read -r id gname; do
        [ "$id" != 0 ] && [ -n "$gname" ] || continue
        same_as_page "$name" "$url/block?id=$id&raw=1" "/block?id=$id" -t sync --goroutine="$gname"
        same_as_page "$name" "$url/sched?id=$id&raw=1" "/sched?id=$id" -t sched --goroutine="$gname"
    done < <(sed -n 's/.*goroutine?id=\([0-9]*\)">\([^<]*\)<.*/\1\t\2/p' <<<"$page")
    for r in produce join process wait_stock; do
        for kind in sync sched syscall; do
            case $kind in sync) page=regionblock ;; *) page=region$kind ;; esac
            same_as_page "$name" "$url/$page?type=$r&raw=1" "/$page?type=$r" -t "$kind" --region="$r"
        done
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ "$n" -gt 0 ] || fail "$name" "the filtered profiles are all empty: nothing compared"
    echo "$prog: $name: filters as Go's pages ($n samples)"
}
pages filters ex_threads "$gen/ex_threads.trace"

# Go 1.23's GoStatusStack: gotrace's long mode has a goroutine in a system
# call from before the trace until after its first generation; Go 1.23
# writes its status with its stack at that generation's end, and its
# syscall profile counts the call from there (Go 1.22 writes the status
# without a stack). That sample must be among those both agree on.
if [ -f "$run/go1.23-long.syscall.go" ] && ! grep -q 'blockedBeforeTrace\.func1' "$run/go1.23-long.syscall.go"; then
    fail go1.23-long "no sample of the goroutine met in a GoStatusStack in the syscall profile: nothing compared"
fi

# (gotrace's work makes the four of go1.2?-nocpu certain: main blocks on
# a channel and on the network before its peers go on.)
for want in run_pingpong.sync run_pingpong.sched run_tcp.net run_pingpong-go122.sync run_tcp-go122.net ex_mn_runtime.syscall ex_threads.sync \
    go1.22-nocpu.{net,sync,syscall,sched} go1.23-nocpu.{net,sync,syscall,sched}; do
    if [ "${nsamples[$want]:-0}" -eq 0 ]; then
        fail "${want%.*}" "no samples in the ${want##*.} profile: nothing compared"
    fi
done

finish "in $checked profile(s)" "$checked profile(s) the same as Go's"
