#!/usr/bin/env bash
# stats_vs_go123.sh - `ctrace stats` times goroutines, and measures the
# minimum mutator utilization, as Go 1.23's pages do.
#
# Usage: tests/analyse/stats_vs_go123.sh CTRACE BINDIR WORKDIR
#
# For traces Go 1.23 reads (Go's 1.11 and 1.19 corpus traces and two 1.22
# ones, ex_threads' trace, a `ctrace run` trace of tests/preload/pingpong,
# test_sequences' GC traces, and traces Go 1.22 and 1.23 write, built at
# test time by gotrace_build.sh), runs `go tool trace -http` of Go 1.23
# (GO123, tests/lib/go_paths.sh), reads its /goroutines page (the
# groups by start function and their execution time) and the
# /goroutine?name=NAME page of every group (per goroutine: total, execution,
# blocked by reason, blocked in syscall, scheduling wait, syscall, unknown),
# and holds `ctrace stats --format=csv` to each number.
#
# Tolerance. Go 1.23 converts a classic trace into its new event model,
# which does not allow two events at one time: each event not later than
# the one before it is moved to 1 ns after it (internal/trace/oldtrace.go),
# and a syscall that did not block becomes a begin/end pair 1 ns apart,
# whose end is one more event. ctrace keeps the trace's own times (and makes
# the same 1 ns syscalls). So each of Go's times may differ from ours by the
# shifts of the events that bound it, which this script bounds by
# simulating that move on the trace's times (`ctrace dump`, plus one event
# 1 ns after each GoSysCall and GoStartLabel, whose label Go makes an event
# of its own): S = the sum over events of how far they move.
# A time per goroutine is a sum of intervals between its events, each
# bound moved at most S in all, so it may differ by at most 2*S ns; a
# group's time, the sum over its goroutines, by 2*S*count. Nothing else may
# differ: every goroutine and group must be there, with the same name.
# Traces Go 1.22+ writes are not converted: Go moves nothing there (the
# reader makes the 1 ns fix-ups Go's own reader makes), so the tolerance is
# 0 ns (NATIVE_BUDGET to loosen it), but for one thing: events of one time
# on different threads Go's reader takes in the order a walk over a map
# happens to give (Go's tool is not deterministic there), then moves each
# 1 ns past the one before; ctrace's reader has one fixed order. So a run
# of events each 1 ns after the one before, on two threads or more, may be
# another order in Go, an event up to k ns from where ctrace has it in a
# run of k + 1: S = the sum over such runs of k*(k+1) (0 to a few ns for
# the traces Go writes on this machine; some hundreds on Go's corpus,
# whose clock ticked every 64 ns).
#
# The same pages give the minimum mutator utilization (/mmu), held to
# ctrace's at 1, 10 and 100 ms (mmu_check); and, on a Go 1.23 trace and
# Go's gc-stress, the goroutines' times are held to ctrace export's slices
# and pprof -t wall's samples (views_vs_go).
# Go's pages of a trace are kept in WORKDIR/cache by the trace's hash (under
# make check, in CTRACE_GO_WORK: the sanitizer stages differ only in ctrace).
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
shared_go_work=1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"
. "$here/../lib/go_paths.sh"
go123=$GO123
[ -x "$go123" ] || die "no Go 1.23 at $go123 (make test-deps)"
command -v curl >/dev/null 2>&1 || die "curl not found"
command -v jq >/dev/null 2>&1 || die "jq not found (make test-deps)"
go_env
trace_tool=$("$go123" tool -n trace) || die "cannot locate Go 1.23's 'go tool trace'"
pprof_tool=$("$go123" tool -n pprof) || die "cannot locate Go 1.23's 'go tool pprof'"
govers=$("$go123" version | sha256sum | cut -c1-12)
mkdir -p "$work/cache"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT 2>/dev/null)/src/internal/trace/testdata}

# shift_budget DUMP: S, as described above.
shift_budget() {
    awk '{ print $1; if ($2 == "GoSysCall" || $2 == "GoStartLabel") print $1 + 1 }' "$1" | sort -n -s |
        awk 'NR == 1 { prev = $1; next }
             { t = $1; if (t <= prev) { s += prev + 1 - t; t = prev + 1 } prev = t }
             END { print s + 0 }'
}

# tie_budget DUMP: S of a Go 1.22+ trace, as described above (a run whose
# events are all of one thread keeps its order in Go too: it counts 0).
tie_budget() {
    sed -n 's/^M=\([^ ]*\) .* Time=\([0-9]*\).*/\2 \1/p' "$1" |
        awk 'function run(   m, n) { for (m in ms) n++; if (n > 1) s += k * (k + 1); k = 0; delete ms }
             NR > 1 && $1 == prev + 1 { k++; ms[$2] = 1; prev = $1; next }
             { run(); ms[$2] = 1; prev = $1 }
             END { run(); print s + 0 }'
}

# dur: Go's time.Duration strings (1.5ms, 805.404µs, 51ns, 1m2.5s, 0s) in ns.
dur_awk='
function dur(s,    n, tot, num, unit) {
    gsub(/[ \t]/, "", s)
    tot = 0
    while (s != "") {
        if (!match(s, /^[0-9.]+/)) return -1
        num = substr(s, 1, RLENGTH) + 0; s = substr(s, RLENGTH + 1)
        if (s ~ /^ns/) { unit = 1; s = substr(s, 3) }
        else if (s ~ /^µs/) { unit = 1e3; s = substr(s, 3 + (length("µ") - 1)) }
        else if (s ~ /^us/) { unit = 1e3; s = substr(s, 3) }
        else if (s ~ /^ms/) { unit = 1e6; s = substr(s, 3) }
        else if (s ~ /^s/) { unit = 1e9; s = substr(s, 2) }
        else if (s ~ /^m/) { unit = 60e9; s = substr(s, 2) }
        else if (s ~ /^h/) { unit = 3600e9; s = substr(s, 2) }
        else return -1
        tot += num * unit
    }
    return sprintf("%.0f", tot)
}'

# go_rows PAGE: "ID COLUMN NS" lines of a /goroutine?name= page.
go_rows() {
    awk "$dur_awk"'
    /id="ranges"/ { exit }  # "Special ranges": overlapping times, another table
    /<th class="link"/ { if (match($0, /sortby., .[^'"'"']*/)) { h = substr($0, RSTART + 10, RLENGTH - 10); if (h != "Total time") cols[++nc] = h } }
    /href="\/trace\?goid=/ { id = $0; sub(/.*goid=/, "", id); sub(/".*/, "", id); state = 1; c = 0; next }
    state == 1 && /<td>/ { v = $0; sub(/.*<td>/, "", v); sub(/<\/td>.*/, "", v); print id, "Total", dur(v); state = 2; next }
    state == 2 && /^[ \t]*<td> [^<]*<\/td>/ { v = $0; sub(/.*<td>/, "", v); sub(/<\/td>.*/, "", v); c++; print id, cols[c], dur(v); if (c == nc) state = 0 }
    ' "$1"
}

# ours CSV: "ID COLUMN NS" lines, Go's column names, from ctrace stats --format=csv.
ours() {
    awk -F, '
    /^goroutine,/ { sect = 1; for (i = 1; i <= NF; i++) col[i] = $i; next }
    sect && /^$/ { sect = 0 }
    sect && $2 == "\"\"" { next }
    sect {
        for (i = 5; i <= NF; i++) {
            n = col[i]; v = $i
            if (n == "total_ns") print $1, "Total", v
            else if (n == "exec_ns") print $1, "Execution time", v
            else if (n == "sched_wait_ns") print $1, "Sched wait time", v
            else if (n == "syscall_ns") print $1, "Syscall execution time", v
            else if (n == "syscall_block_ns") print $1, "Block time (syscall)", v
            else if (n == "other_ns") print $1, "Unknown time", v
            else if (n == "block_sleep_ns") print $1, "Block time (sleep)", v
            else if (n == "block_chan_send_ns") print $1, "Block time (chan send)", v
            else if (n == "block_chan_recv_ns") print $1, "Block time (chan receive)", v
            else if (n == "block_select_ns") print $1, "Block time (select)", v
            else if (n == "block_sync_ns") print $1, "Block time (sync)", v
            else if (n == "block_cond_ns") print $1, "Block time (sync.(*Cond).Wait)", v
            else if (n == "block_net_ns") print $1, "Block time (network)", v
            else if (n == "block_gc_ns") print $1, "Block time (GC mark assist wait for work)", v
            else if (n == "block_unspecified_ns") print $1, "Block time (unspecified)", v
            else if (n == "block_gc_sweep_ns") print $1, "Block time (GC background sweeper wait)", v
            else if (n == "block_system_ns") print $1, "Block time (system goroutine wait)", v
            else if (n == "block_preempted_ns") print $1, "Block time (preempted)", v
            else if (n == "block_debug_call_ns") print $1, "Block time (wait for debug call)", v
            else if (n == "block_until_gc_ends_ns") print $1, "Block time (wait until GC ends)", v
            else if (n == "block_gc_weak_ns") print $1, "Block time (GC weak to strong wait)", v
            else if (n == "block_other_ns") print $1, "Block time ()", v
        }
    }' "$1"
}

go_mmu_panics=0 # traces whose /mmu Go cannot serve (go_pages)

# mmu_check NAME OUT BUDGET: the minimum mutator utilization of
# ctrace stats (OUT.csv) at 1, 10 and 100 ms against Go 1.23's /mmu page
# (OUT.mmu, from go_pages)
# with its default boxes ticked (system view; STW, background workers,
# mark assists): the least mean of the worst windows its details list,
# over the same window cut to the trace as Go cuts it. None (Go's list is
# null: no GOMAXPROCS after the state dump) must be none in ctrace too.
# Tolerance: the numbers are printed to 1e-9, and each event that is
# elsewhere in Go's eyes (S above) shifts a window's integral by at most
# how far it moved, so the MMU by at most 2*S/W (W: the window, cut to the
# trace).
mmu_check() {
    local name=$1 out=$2 budget=$3 w go ours res vals="" maxd=0
    [ -e "$out.mmu" ] || return 0 # Go's /mmu panicked (go_pages)
    for w in $mmu_windows; do
        go=$(awk -v w=$w '$1 == w { print $2 }' "$out.mmu")
        [ -n "$go" ] || { fail "$name" "no /mmu details for $w ns"; return; }
        ours=$(awk -F, -v w=$w '/^window_ns,mmu,span_ns$/ { s = 1; next } s && $1 == w { print ($2 == "" ? "none" : $2), $3; exit }' "$out.csv")
        [ -n "$ours" ] || { fail "$name" "no MMU at $w ns in ctrace stats"; return; }
        res=$(awk -v go="$go" -v o="${ours% *}" -v span="${ours#* }" -v w=$w -v s="$budget" 'BEGIN {
            if (go == "none" || o == "none") { print (go == o ? "ok" : "bad"), 0, 0; exit }
            if (w > span) w = span
            tol = 1e-9 + 2 * s / w; d = go - o; if (d < 0) d = -d
            printf "%s %.3g %.3g\n", (d <= tol ? "ok" : "bad"), d, tol }')
        set -- $res
        [ "$1" = ok ] || { fail "$name" "MMU at $w ns: Go $go, ctrace ${ours% *} (difference $2, allowed $3)"; return; }
        vals="$vals ${ours% *}"
        maxd=$(awk -v a="$maxd" -v b="$2" 'BEGIN { print (b > a ? b : a) }')
    done
    echo "$prog: $name: MMU at 1, 10, 100 ms:$vals as ${gonm:-Go 1.23}'s /mmu (largest difference $maxd)"
}

# views_vs_go NAME TRACE OUT BUDGET: ctrace export and pprof -t wall of a
# Go 1.22+ trace against Go 1.23's view of it, after check has read Go's
# pages (OUT.go, OUT.groups.html). The export must have one goroutine
# track per goroutine Go counts; per goroutine, the export's slices and
# the wall profile's samples (labels goroutine and state), summed by
# state, must equal Go's times, within 2*S: running its execution,
# runnable its scheduling wait, syscall its syscall execution plus blocked
# in syscall, "waiting: REASON" its time blocked for that reason (where
# "unknown", waiting when met, and "forever", a block with no reason, are
# Go's reason "", and "sync.Cond" and "GC assist" are Go's longer names).
# The JSON export is decoded with jq (its microseconds have three
# decimals: whole nanoseconds), the profile with pprof -raw.
views_vs_go() {
    local name=$1 file=$2 out=$3 budget=$4 ntracks ngo view
    "$ctrace" export -f json -o "$out.json" "$file" 2>"$out.export.err" \
        || { fail "$name" "ctrace export failed"; sed 's/^/  | /' "$out.export.err" >&2; return; }
    jq -r '.traceEvents[] | select(.tid != null and .tid < 1000000000 and (.ph == "B" or .ph == "E"))
           | "\(.ph)\t\(.tid)\t\(.ts * 1000 | round)\t\(.name // "")"' "$out.json" |
        awk -F'\t' '$1 == "B" { b[$2] = $3; nm[$2] = $4; next }
                    ($2 in b) { print $2 "\t" nm[$2] "\t" $3 - b[$2]; delete b[$2] }' >"$out.export.sums" \
        || { fail "$name" "the export is not JSON jq reads"; return; }
    ntracks=$(jq '[.traceEvents[] | select(.ph == "M" and .name == "thread_name" and .tid < 1000000000)] | length' "$out.json")
    ngo=$(awk '/href="\/goroutine\?name=/ { st = 1; next } st && /<td>/ { v = $0; gsub(/<[^>]*>|[ \t]/, "", v); n += v; st = 0 } END { print n + 0 }' "$out.groups.html")
    [ "$ntracks" -eq "$ngo" ] || fail "$name" "the export has $ntracks goroutine tracks, Go counts $ngo goroutines"
    "$ctrace" pprof -t wall -o "$out.wall.pb" "$file" 2>"$out.wall.err" \
        || { fail "$name" "ctrace pprof -t wall failed"; sed 's/^/  | /' "$out.wall.err" >&2; return; }
    "$pprof_tool" -raw "$out.wall.pb" 2>/dev/null |
        awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
             s && /^ +[0-9]+ +[0-9]+:/ { v = $2; next }
             s && /state:\[/ { st = $0; sub(/.*state:\[/, "", st); sub(/\].*/, "", st); next }
             s && /goroutine:\[/ { g = $0; sub(/.*goroutine:\[/, "", g); sub(/\].*/, "", g); print g "\t" st "\t" v }' \
        >"$out.wall.sums"
    [ -s "$out.wall.sums" ] || { fail "$name" "no samples in pprof -raw of the wall profile"; return; }
    local nbad maxd items
    for view in export wall; do
        awk -F'\t' -v tol=$((2 * budget)) -v view=$view '
            FNR == 1 { file++ }
            file == 1 {
                # Go: "ID COLUMN NS", COLUMN with spaces
                id = $0; sub(/ .*/, "", id); v = $0; sub(/.* /, "", v)
                col = substr($0, length(id) + 2, length($0) - length(id) - length(v) - 2)
                if (col == "Total" || col == "Unknown time") next
                if (col == "Syscall execution time" || col == "Block time (syscall)") col = "syscall"
                go[id SUBSEP col] += v; ids[id] = 1; next
            }
            {
                n = $2
                if (n == "running") col = "Execution time"
                else if (n == "runnable") col = "Sched wait time"
                else if (n == "syscall") col = "syscall"
                else if (n == "waiting: unknown" || n == "waiting: forever") col = "Block time ()"
                else if (n == "waiting: sync.Cond") col = "Block time (sync.(*Cond).Wait)"
                else if (n == "waiting: GC assist" || n == "waiting: GC assist wait") col = "Block time (GC mark assist wait for work)"
                else if (n ~ /^waiting: /) col = "Block time (" substr(n, 10) ")"
                else col = "state " n
                ours[$1 SUBSEP col] += $3; items++
            }
            END {
                for (k in go) {
                    split(k, p, SUBSEP); o = (k in ours) ? ours[k] : 0; d = go[k] - o; if (d < 0) d = -d
                    if (d > maxd) maxd = d
                    if (d > tol) { print "goroutine " p[1] " " p[2] ": Go " go[k] ", " view " " o; bad++ }
                }
                for (k in ours) {
                    split(k, p, SUBSEP)
                    if ((p[1] in ids) && !(k in go) && ours[k] > tol) { print "goroutine " p[1] " " p[2] ": Go none, " view " " ours[k]; bad++ }
                }
                print bad + 0, maxd + 0, items + 0
            }' "$out.go" "$out.$view.sums" >"$out.$view.cmp"
        read -r nbad maxd items < <(tail -n 1 "$out.$view.cmp")
        if [ "$nbad" -ne 0 ]; then
            fail "$name" "$nbad $view time(s) differ from Go's pages beyond 2*S = $((2 * budget)) ns"
            head -n -1 "$out.$view.cmp" | head -n 10 | sed 's/^/  | /' >&2
            continue
        fi
        if [ $view = export ]; then items="$items slices in $ntracks goroutine tracks"; else items="$items samples"; fi
        echo "$prog: $name: $view: $items, summed per goroutine and state, as Go 1.23's times (largest difference $maxd ns)"
    done
}

# go_pages NAME FILE OUT: Go 1.23's side: its /goroutines page of FILE into
# OUT.groups.html, go_rows of every /goroutine?name= page that links to
# into OUT.go, the number of those pages into OUT.n, and its /mmu details
# at each of mmu_windows into OUT.mmu ("WINDOW MMU" lines). False if the
# server did not come up or served no /goroutines. Kept in $work/cache by
# the trace's hash when every page came.
mmu_windows="1000000 10000000 100000000"
go_pages() {
    local name=$1 file=$2 out=$3 key log url pid n=0 href f0=$failed ext w v
    key=$work/cache/$(sha256sum <"$file" | cut -c1-40)-$govers
    if [ -f "$key.n" ]; then
        for ext in groups.html go mmu n; do cp "$key.$ext" "$out.$ext"; done
        return 0
    fi
    log=$out.http.log
    : >"$log"
    "$trace_tool" -http=127.0.0.1:0 "$file" >"$log" 2>&1 &
    pid=$!
    url=
    # It listens once it has read the trace, which a loaded machine may
    # make slow: waited for as long as it runs (ctest's timeout bounds it).
    while :; do
        url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log")
        [ -n "$url" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$url" ]; then
        kill "$pid" 2>/dev/null || true
        fail "$name" "Go 1.23's go tool trace -http did not start"
        sed 's/^/  | /' "$log" | head -5 >&2
        return 1
    fi
    curl -sf "$url/goroutines" >"$out.groups.html" || { fail "$name" "no /goroutines"; kill "$pid"; return 1; }
    : >"$out.go"
    while read -r href; do
        href=${href//&amp;/&}
        curl -sf "$url$href" >"$out.page.html" || { fail "$name" "no $href"; continue; }
        go_rows "$out.page.html" >>"$out.go"
        n=$((n + 1))
    done < <(sed -n 's/.*href="\(\/goroutine?name=[^"]\{1,\}\)".*/\1/p' "$out.groups.html")
    # Go's page for the empty name is not the group of unnamed goroutines (it
    # shows other times): those are checked through /goroutines only, below.
    : >"$out.mmu"
    for w in $mmu_windows; do
        v=$(curl -sf "$url/mmu?mode=details&window=$w&flags=stw%7Cbackground%7Cassist" |
            jq -r 'if . == null or . == [] then "none" else ([.[].MutatorUtil] | min) end') && {
            echo "$w $v" >>"$out.mmu"
            continue
        }
        # Go 1.27's MMU code indexes out of range on some traces Go 1.26
        # writes (internal/trace.MutatorUtilizationV2, index -1): Go's own
        # bug, on Go's own trace. Nothing to compare with then; said, and
        # counted, so that a run where every trace hits it is seen.
        if grep -q 'MutatorUtilizationV2' "$out.http.log" 2>/dev/null; then
            echo "$prog: $name: Go's /mmu panics on this trace (internal/trace.MutatorUtilizationV2, a bug of Go's): MMU not compared"
            go_mmu_panics=$((go_mmu_panics + 1))
            rm -f "$out.mmu"
            break
        fi
        fail "$name" "no /mmu details for $w ns"
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "$n" >"$out.n"
    if [ "$failed" -eq "$f0" ]; then
        # .n last: its presence says the others are whole.
        for ext in groups.html go mmu n; do cp "$out.$ext" "$key.$ext.tmp.$$" && mv -f "$key.$ext.tmp.$$" "$key.$ext"; done
    fi
}

# lost_bindings DUMP: the goroutines whose syscall Go's summary loses
# track of (internal/trace/summary.go). It binds a goroutine entering a
# syscall to its P both ways (syscallingP, syscallingG), drops the P's
# side when the P is stolen, not the goroutine's; when that goroutine's
# syscall ends, it deletes its stale P's binding, which another
# goroutine's syscall on that P may hold by then: that one's P, stolen
# later, then counts no "Block time (syscall)", and its whole syscall is
# "Syscall execution time". Its two times are compared summed.
lost_bindings() {
    awk '
        function at(what) { match($0, what "=[-0-9]+"); return substr($0, RSTART + length(what) + 1, RLENGTH - length(what) - 1) }
        / StateTransition / && /Resource=Goroutine\(/ && /->Syscall$/ && !/Syscall->Syscall$/ {
            g = at("GoID"); p = at("P"); byp[p] = g; byg[g] = p; next }
        / StateTransition / && /Resource=Goroutine\(/ && / Syscall->/ {
            g = at("GoID")
            if (g in byg) { p = byg[g]; if (p >= 0 && (p in byp) && byp[p] != g) lost[byp[p]] = 1; delete byp[p]; delete byg[g] }
            next }
        / StateTransition / && /Resource=Proc\(/ && /->Idle$/ && !/Idle->Idle$/ { delete byp[at("ProcID")] }
        END { for (g in lost) print g }' "$1"
}

check() {
    local name=$1 file=$2 out=$run/$1 budget n
    "$ctrace" stats --format=csv "$file" >"$out.csv" 2>"$out.err" || { fail "$name" "ctrace stats failed"; sed 's/^/  | /' "$out.err" >&2; return; }
    "$ctrace" dump "$file" >"$out.dump"
    if [ "${3:-}" = native ]; then
        budget=${NATIVE_BUDGET:-$(tie_budget "$out.dump")}
    else
        budget=$(shift_budget "$out.dump")
    fi
    go_pages "$name" "$file" "$out" || return 0
    n=$(cat "$out.n")
    mmu_check "$name" "$out" "$budget"
    ours "$out.csv" >"$out.ours"
    # Every value Go shows, against ours (a column Go does not show is 0 in
    # Go's eyes: ours must be within the budget of 0 too).
    local res
    res=$(awk -v tol=$((2 * budget)) -v lost="$(lost_bindings "$out.dump" | tr '\n' ' ')" '
        BEGIN { n = split(lost, l, " "); for (i = 1; i <= n; i++) lostg[l[i]] = 1 }
        function key(   c) {
            c = substr($0, length($1) + 2, length($0) - length($1) - length($NF) - 2)
            if (($1 in lostg) && (c == "Syscall execution time" || c == "Block time (syscall)")) c = "Syscall time, executing and blocked (Go lost its binding)"
            return $1 SUBSEP c
        }
        NR == FNR { go[key()] += $NF; ids[$1] = 1; next }
        { ours[key()] += $NF; oids[$1] = 1 }
        END {
            for (id in ids) if (!(id in oids)) { print "goroutine " id ": in Go'"'"'s pages, not in ctrace stats"; bad++ }
            for (id in oids) if (!(id in ids)) { print "goroutine " id ": in ctrace stats, not in Go'"'"'s pages"; bad++ }
            for (k in go) {
                o = (k in ours) ? ours[k] : 0; d = go[k] - o; if (d < 0) d = -d
                if (d > maxd) maxd = d
                if (d > tol) { split(k, p, SUBSEP); print "goroutine " p[1] " " p[2] ": Go " go[k] ", ctrace " o; bad++ }
            }
            for (k in ours) if (!(k in go) && ours[k] + 0 > tol) { split(k, p, SUBSEP); print "goroutine " p[1] " " p[2] ": Go shows none, ctrace " ours[k]; bad++ }
            printf "%d %d\n", bad, maxd
        }' "$out.go" "$out.ours")
    local nbad=${res##*$'\n'}
    if [ "${nbad%% *}" -ne 0 ]; then
        fail "$name" "$(printf '%s' "$res" | head -n -1 | wc -l) difference(s) beyond 2*S = $((2 * budget)) ns"
        printf '%s\n' "$res" | head -n -1 | head -n 12 | sed 's/^/  | /' >&2
        return
    fi
    [ "$n" -gt 0 ] || { fail "$name" "no goroutine groups on Go's page"; return; }
    # The groups of /goroutines: name, count and total execution time.
    local gres
    gres=$(awk -v tol=$((2 * budget)) -v asan="$(ldd "$bindir/run_pingpong" 2>/dev/null | grep -c libasan)" "$dur_awk"'
        function unesc(s) { gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&#34;|&quot;/, "\"", s); gsub(/&#39;/, "\047", s); gsub(/&amp;/, "\\&", s); return s }
        FNR == 1 { file++ }
        file == 1 && /href="\/goroutine\?name=/ { g = $0; sub(/.*<a [^>]*>/, "", g); sub(/<\/a>.*/, "", g); g = unesc(g); if (g == "(Inactive, no stack trace sampled)") g = ""; st = 1; next }
        file == 1 && st == 1 && /<td>/ { v = $0; gsub(/<[^>]*>|[ \t]/, "", v); cnt[g] = v; st = 2; next }
        file == 1 && st == 2 && /<td>/ { v = $0; gsub(/<[^>]*>/, "", v); exec[g] = dur(v); st = 0; gs[g] = 1; next }
        file == 2 && /^start_function,/ { sect = 1; next }
        file == 2 && sect && /^$/ { sect = 0 }
        file == 2 && sect {
            # "name",count,total,exec,... (a name may hold commas: split at the last quote)
            q = match($0, /",[0-9]/); nm = substr($0, 2, q - 2); gsub(/""/, "\"", nm)
            split(substr($0, q + 2), f, ","); ocnt[nm] = f[1]; oexec[nm] = f[3]; os[nm] = 1
        }
        END {
            # Under ASan every thread starts in ASan'"'"'s asan_thread_start, by
            # which Go groups them; ctrace names them by the routine it
            # calls, the program'"'"'s (src/analyse/filter.c): those groups,
            # summed, are Go'"'"'s one.
            a = "asan_thread_start(void*)"
            if (asan && (a in gs) && !(a in os)) {
                for (g in os) if (!(g in gs)) mine[g] = 1
                for (g in mine) { ocnt[a] += ocnt[g]; oexec[a] += oexec[g]; os[a] = 1; delete os[g] }
            }
            for (g in gs) {
                if (!(g in os)) { print "group \"" g "\": on Go'"'"'s page, not in ctrace stats"; bad++; continue }
                if (cnt[g] != ocnt[g]) { print "group \"" g "\": Go counts " cnt[g] ", ctrace " ocnt[g]; bad++ }
                d = exec[g] - oexec[g]; if (d < 0) d = -d
                if (d > tol * cnt[g]) { print "group \"" g "\": execution Go " exec[g] ", ctrace " oexec[g]; bad++ }
            }
            for (g in os) if (!(g in gs)) { print "group \"" g "\": in ctrace stats, not on Go'"'"'s page"; bad++ }
            print bad + 0
        }' "$out.groups.html" "$out.csv")
    if [ "${gres##*$'\n'}" -ne 0 ]; then
        fail "$name" "groups differ from Go's /goroutines"
        printf '%s\n' "$gres" | head -n -1 | head -n 10 | sed 's/^/  | /' >&2
        return
    fi
    echo "$prog: $name: $(cut -d' ' -f1 "$out.go" | sort -u | wc -l) goroutines in $n groups as ${gonm:-Go 1.23} times them (largest difference ${nbad#* } ns, allowed $((2 * budget)))"
    case " ${STATS_VIEW_TRACES:-go1.23-long go123_test_gc-stress} " in
    *" $name "*) views_vs_go "$name" "$file" "$out" "$budget" ;;
    esac
}

for t in ${STATS_TRACES:-stress_1_19_good http_1_19_good user_task_region_1_19_good stress_1_11_good stress_start_stop_1_19_good}; do
    [ -f "$corpus/$t" ] && check "$t" "$corpus/$t"
done
# Not ex_mn_runtime: Go 1.23's viewer panics on its trace ("silently broken
# trace or generator invariant (startRunningTime != 0) not held"), so there
# is no page to compare with.
"$bindir/ex_threads" "$run/ex_threads.trace" >/dev/null 2>&1 || fail ex_threads "exited non-zero"
check ex_threads "$run/ex_threads.trace"
if timeout -k 5 120 "$ctrace" run -o "$run/run_pingpong.trace" -- "$bindir/run_pingpong" 50 >/dev/null 2>&1; then
    check run_pingpong "$run/run_pingpong.trace"
else
    fail run_pingpong "ctrace run failed"
fi

# GC work of every kind Go's MMU counts. Go's own: its corpus's
# go122-gc-stress and go122-annotations-stress (testdata/tests, as binary
# traces in fuzz/corpus): mark workers, assists, sweeps, and ranges under
# way when the trace began. ctrace's: test_sequences' gc scenario, two
# traces (stop-the-world of both kinds, sweeps, assists across a block
# and a system call, left open at stop), and its first in Go's current
# format (CTRACE_FORMAT=go1.22), read natively.
for t in ${STATS_GO_CORPUS:-gc-stress annotations-stress}; do
    check "go123_test_$t" "$here/../../fuzz/corpus/go123_test_$t" native
done
# A trace Go 1.22 wrote (gotrace cpu) whose goroutine 20 ends blocked in a
# system call: Go counts that call both as syscall and as scheduling
# wait, so the times add up past the total, and Go's unknown time is 0
# there (ctrace's was -3531585 ns).
check go122_regress_syscall_at_end "$here/../../fuzz/corpus/go122_regress_syscall_at_end" native
# A trace Go 1.22 wrote (gotrace long, its first generation) where Go's
# summary loses goroutine 22's syscall binding (lost_bindings): Go counts
# its 74 us blocked, after its P was stolen, as syscall execution.
check go122_regress_syscall_binding_lost "$here/../../fuzz/corpus/go122_regress_syscall_binding_lost" native
mkdir -p "$run/seq" "$run/seq122"
if "$bindir/test_sequences" "$run/seq" >/dev/null 2>&1; then
    for t in gc gc_2; do check "seq_$t" "$run/seq/$t.trace"; done
else
    fail test_sequences "exited non-zero"
fi
if CTRACE_FORMAT=go1.22 "$bindir/test_sequences" "$run/seq122" >/dev/null 2>&1; then
    check seq122_gc "$run/seq122/gc.trace" native
else
    fail test_sequences "exited non-zero with CTRACE_FORMAT=go1.22"
fi

# Traces Go 1.22 and 1.23 write themselves (tests/lib/gotrace.go.in:
# spinning, blocking of every kind, a syscall, tasks and regions, GC; with
# CPU samples; over several generations), read natively, not converted.
for go in "$GO122" "$go123"; do
    [ -x "$go" ] || { fail "$go" "no such Go (make test-deps)"; continue; }
    gt=$(bash "$here/../lib/gotrace_build.sh" "$go" "${CTRACE_GO_WORK:-$work}") ||
        { fail "$go" "cannot build gotrace"; continue; }
    v=${gt##*-}
    for mode in ${STATS_GOTRACE_MODES:-nocpu cpu long}; do
        if bash "$here/../lib/gotrace_write.sh" "$gt" "$mode" "$run/go$v-$mode.trace" \
               >"$run/go$v-$mode.log" 2>&1; then
            check "go$v-$mode" "$run/go$v-$mode.trace" native
        else
            fail "go$v-$mode" "gotrace exited non-zero"
        fi
    done
done

# Traces Go 1.26 and 1.27 write (go 1.26 traces), against Go 1.27's pages:
# its summary dates a goroutine first met in a status from the Sync that
# now begins its generation, in the state the status gives, and names it
# from that status's stack.
if [ -x "$GO126" ] && [ -x "$GO127" ]; then
    trace_tool=$(go_trace_tool "$GO127") || die "cannot build Go 1.27's 'go tool trace'"
    pprof_tool=$(GOTOOLCHAIN=local "$GO127" tool -n pprof) || die "cannot build Go 1.27's 'go tool pprof'"
    govers=$("$GO127" version | sha256sum | cut -c1-12)
    gonm="Go 1.27"
    for go in "$GO126" "$GO127"; do
        gt=$(bash "$here/../lib/gotrace_build.sh" "$go" "${CTRACE_GO_WORK:-$work}") ||
            { fail "$go" "cannot build gotrace"; continue; }
        v=${gt##*-}
        for mode in ${STATS_GOTRACE_MODES:-nocpu cpu long long-p1}; do
            if bash "$here/../lib/gotrace_write.sh" "$gt" "$mode" "$run/go$v-$mode.trace" \
                   >"$run/go$v-$mode.log" 2>&1; then
                check "go$v-$mode" "$run/go$v-$mode.trace" native
            else
                fail "go$v-$mode" "gotrace exited non-zero"
            fi
        done
    done
else
    fail go1.27 "no Go 1.26 or 1.27 at $GO126, $GO127 (make test-deps: scripts/go-oracles.sh)"
fi

[ "$go_mmu_panics" -le 2 ] || fail all "Go's /mmu panicked on $go_mmu_panics traces: too few compared"
finish
