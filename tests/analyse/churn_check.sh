#!/usr/bin/env bash
# churn_check.sh - the commands that read a whole trace keep memory flat in
# the goroutines a trace ever had, not only in its length.
#
# Usage: tests/analyse/churn_check.sh CTRACE BINDIR WORKDIR
#
# bench/gotrace_churn.go.in (a program that starts goroutines without end,
# as a server starts one a request) writes a trace of 3 MB and one of 12
# MB with Go 1.23 and with Go 1.27: as many goroutines alive at once,
# four times as many in all (some 500 thousand). On each, under GNU time:
# ctrace check, stats (its table, csv and json), pprof -t sync, -t sched,
# -t waker, -t wall, -t sync --goroutine and --region, -t wall --region,
# -t waker and -t cpu --goroutine and --region (the filter's pass kept
# every goroutine, and an interval per region or matching goroutine), and
# export (Perfetto and JSON). The longer trace's
# peak resident memory may be at most 1.25 times the shorter's, plus 1 MB
# (the reader counts goroutines a bit each: 64 KB for 500 thousand); each
# kept a record of every goroutine (stats a wait record of every pair, csv
# and json every row, -t wall every goroutine's samples) and took 3.5 to 4
# times as much. And the table that keeps no goroutine's row
# (ctrace_stats_build_ex's groups_only, which retires goroutines as they
# end) shows the groups the csv shows, which prints every row. Not under
# the sanitizers: ASan's quarantine keeps what is freed, and its shadow
# grows with it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
shared_go_work=1
. "$here/../lib/lib.sh"
ctrace_args "$@"
. "$here/../lib/go_paths.sh"
[ -z "${CTRACE_SANITIZE:-}" ] || skip "memory under a sanitizer is the sanitizer's"
/usr/bin/time -f '' true 2>/dev/null || skip "needs GNU time as /usr/bin/time (Debian package time)"
src=$here/../../bench/gotrace_churn.go.in

# rss_kb CMD...: the command's peak resident memory in KB (it must succeed).
rss_kb() {
    /usr/bin/time -f '%M' -o "$run/time" "$@" >/dev/null 2>"$run/err" ||
        { fail "$*" "exit status $?"; indent "$run/err"; echo 0; return; }
    tail -n 1 "$run/time"
}

for minor in 23 27; do
    go=GO1$minor
    go=${!go}
    [ -x "$go" ] || die "needs Go 1.$minor at $go (make test-deps)"
    go_env
    gobin=$work/churn1$minor
    key=$( { "$go" version; cat "$src"; } | sha256sum | cut -c1-40)
    if [ "$(cat "$gobin.key" 2>/dev/null)" != "$key" ]; then
        rm -rf "$gobin.d" && mkdir -p "$gobin.d" && cp "$src" "$gobin.d/main.go"
        printf 'module churn\n\ngo 1.23\n' >"$gobin.d/go.mod"
        (cd "$gobin.d" && GOTOOLCHAIN=local "$go" build -o "$gobin" .) || die "cannot build $src with Go 1.$minor"
        echo "$key" >"$gobin.key"
    fi
    "$gobin" "$run/c1.trace" 3 && "$gobin" "$run/c4.trace" 12 || die "gotrace_churn (Go 1.$minor) failed"
    n1=$("$ctrace" check "$run/c1.trace" | sed -n '1s/.* \([0-9]*\) goroutines.*/\1/p')
    n4=$("$ctrace" check "$run/c4.trace" | sed -n '1s/.* \([0-9]*\) goroutines.*/\1/p')
    [ "${n4:-0}" -ge $((5 * ${n1:-1} / 2)) ] || fail "go1.$minor" "the longer trace has $n4 goroutines, the shorter $n1"
    for cmd in "check" "stats" "stats --format=csv" "stats --format=json" "pprof -t sync -o $run/p.pb" \
        "pprof -t sched -o $run/p.pb" "pprof -t waker -o $run/p.pb" "pprof -t wall -o $run/p.pb" \
        "pprof -t sync --goroutine=main.main.func1 -o $run/p.pb" "pprof -t sync --region=recv -o $run/p.pb" \
        "pprof -t wall --region=recv -o $run/p.pb" \
        "pprof -t waker --goroutine=main.main.func1 -o $run/p.pb" "pprof -t waker --region=recv -o $run/p.pb" \
        "pprof -t cpu --goroutine=main.main.func1 -o $run/p.pb" "pprof -t cpu --region=recv -o $run/p.pb" \
        "export -o $run/x.pftrace" "export -f json -o $run/x.json"; do
        # shellcheck disable=SC2086 # the command's words
        r1=$(rss_kb "$ctrace" $cmd "$run/c1.trace")
        # shellcheck disable=SC2086
        r4=$(rss_kb "$ctrace" $cmd "$run/c4.trace")
        rm -f "$run/p.pb" "$run/x.pftrace" "$run/x.json"
        echo "$prog: go1.$minor: ctrace ${cmd%% -o*}: $r1 KB for $n1 goroutines, $r4 KB for $n4"
        [ "$r4" -le $((r1 * 5 / 4 + 1024)) ] ||
            fail "go1.$minor" "ctrace ${cmd%% -o*} takes $r4 KB for $n4 goroutines, $r1 KB for $n1"
    done
    # The groups of the table (no rows kept) are those of the csv (every row).
    # A name and a count a line ("(unknown)" for none); the table puts a
    # long name on a line of its own, the numbers on the next.
    "$ctrace" stats --format=csv "$run/c4.trace" |
        awk -F, '/^start_function,/ { on = 1; next } on && NF == 0 { exit }
                 on { gsub(/"/, "", $1); print ($1 == "" ? "(unknown)" : $1), $2 }' | sort >"$run/csv.groups"
    "$ctrace" stats "$run/c4.trace" |
        awk '/^Goroutines by start function/ { on = 1; getline; next } on && NF == 0 { exit }
             !on || $1 == "blocked" { next }
             NF == 1 { name = $1; next }
             name != "" { print name, $1; name = ""; next }
             { print $1, $2 }' | sort >"$run/table.groups"
    [ -s "$run/csv.groups" ] || fail "go1.$minor" "no groups in ctrace stats --format=csv"
    cmp -s "$run/csv.groups" "$run/table.groups" || {
        fail "go1.$minor" "the table's groups are not the csv's"
        diff "$run/csv.groups" "$run/table.groups" | head -n 6 >&2
    }
    rm -f "$run/c1.trace" "$run/c4.trace"
done
finish
