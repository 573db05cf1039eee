#!/usr/bin/env bash
# waker_check.sh - `ctrace pprof -t waker` names, for every wait, the
# goroutine that ended it, and puts the wait under that goroutine's stack;
# `ctrace stats` counts the same waits per (woken, waker).
#
# Usage: tests/analyse/waker_check.sh CTRACE BINDIR WORKDIR
#
#   CTRACE   the ctrace command (build/bin/ctrace)
#   BINDIR   where ex_mn_runtime and the run_* programs are
#   WORKDIR  scratch directory in the build tree
#
# Traces: `ctrace run` of run_wakers (chain, broadcast: the waker is known),
# run_tcp (socket waits: no waker known) and run_loop (an epoll loop's
# waits, half ended by a producer, half by their timeout, which they say:
# ctrace stats splits a pair's row by that reason, and the dump does not
# tell it, so such pairs' rows are held to the dump's by count, total and
# max alone), ex_mn_runtime (a runtime on
# the library API, whose channel peers end each other's waits), and two
# of Go's corpus. For each, the waits are computed here from `ctrace dump --model`
# alone (a block but a sleep, or a GoWaiting, up to the GoUnblock of that
# goroutine; the waker is the unblock's g= unless it is 0 or the woken
# one), named by the start functions of the goroutine table of `ctrace
# stats --format=csv`, and summed per (woken, waker): the profile, read by
# `go tool pprof -raw`, must have the same number of waits and delay per
# pair of its labels woken= and waker=; and `ctrace stats` must have those
# waits (those of no time too) in its "who kept them waiting" table, with
# their total, p50, p99 and max, in csv and json alike, largest total
# first (and for chain, in the table format too). Known answers besides: in chain,
# main's unlock ends one chain_link's wait, each chain_link's unlock the
# next one's (3), and chain_links' ends main's joins; in broadcast,
# main's pthread_cond_broadcast ends the 8 cond_waiters' waits; in tcp,
# socket waits have no waker: the frame [no waker known] alone. And
# --goroutine=chain_link keeps exactly chain_link's waits.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"
go_env
pprof_tool=$(go tool -n pprof) || die "cannot locate 'go tool pprof'"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT)/src/internal/trace/testdata}

# waits DUMP: "WOKEN_G WAKER_G NS" per wait that a GoUnblock ended, from
# ctrace dump's lines "TS Type p=P g=G off=O args..." (WAKER_G 0: none).
waits() {
    awk '
    function argg(    i) { for (i = 5; i <= NF; i++) if ($i ~ /^g=/) return substr($i, 3); return "" }
    { g = substr($4, 3) }
    $2 ~ /^GoBlock/ || $2 == "GoWaiting" { waiting[g] = 1; since[g] = $1; next }
    $2 == "GoSleep" { waiting[g] = 0; next }
    $2 == "GoUnblock" {
        w = argg()
        if (!waiting[w]) next
        waiting[w] = 0
        print w, (g == w ? 0 : g), $1 - since[w]
    }' "$1"
}

# names STATS_CSV: "G<TAB>START_FUNCTION" from the goroutine table of
# ctrace stats --format=csv (names quoted, quotes doubled).
names() {
    awk '/^goroutine,start_function,/ { t = 1; next } t && /^$/ { t = 0 }
         t && match($0, /^[0-9]+,"([^"]|"")*"/) {
             id = $0; sub(/,.*/, "", id)
             n = substr($0, length(id) + 3, RLENGTH - length(id) - 3)
             gsub(/""/, "\"", n)
             print id "\t" n
         }' "$1"
}

# expected WAITS NAMES: "WOKEN<TAB>WAKER<TAB>COUNT<TAB>NS" per pair, the
# waits with time (a profile's rule), sorted.
expected() {
    awk -F'\t' 'NR == FNR { name[$1] = $2; next }
         function nm(g) { return g == 0 ? "none" : (name[g] != "" ? name[g] : "(unknown)") }
         { split($0, f, " ") }
         f[3] > 0 { k = nm(f[1]) "\t" nm(f[2]); n[k]++; d[k] += f[3] }
         END { for (k in n) print k "\t" n[k] "\t" d[k] }' "$2" "$1" | LC_ALL=C sort
}

# samples RAW: "WOKEN<TAB>WAKER<TAB>COUNT<TAB>NS<TAB>FRAMES" per sample of
# go tool pprof -raw, FRAMES the functions leaf first, joined by ";".
samples() {
    awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0; l = 1; next } /^Mappings/ { l = 0 }
         s && /^ *[0-9]+ +[0-9]+: / { n++; cnt[n] = $1; ns[n] = $2 + 0; locs[n] = ""
                                       for (i = 3; i <= NF; i++) locs[n] = locs[n] " " $i; next }
         s && /waker:\[/ { wk = $0; sub(/.*waker:\[/, "", wk); sub(/\].*/, "", wk); waker[n] = wk
                           wo = $0; sub(/.*woken:\[/, "", wo); sub(/\].*/, "", wo); woken[n] = wo }
         l && /^ +[0-9]+: / { id = $1; sub(/:/, "", id); f = $0
                              sub(/^ +[0-9]+: [^ ]+ M=[0-9]+ /, "", f); sub(/ [^ ]* s=[0-9]+$/, "", f)
                              fn[id] = f }
         END {
             for (i = 1; i <= n; i++) {
                 k = split(locs[i], a, " "); fr = ""
                 for (j = 1; j <= k; j++) fr = fr (j > 1 ? ";" : "") fn[a[j]]
                 print woken[i] "\t" waker[i] "\t" cnt[i] "\t" ns[i] "\t" fr
             }
         }' "$1"
}

# stats_want WAITS NAMES: "WOKEN<TAB>WAKER<TAB>COUNT<TAB>TOTAL<TAB>P50<TAB>P99<TAB>MAX"
# per pair, over every wait (those of no time too), sorted; percentiles by
# nearest rank.
stats_want() {
    awk -F'\t' 'NR == FNR { name[$1] = $2; next }
         function nm(g) { return g == 0 ? "none" : (name[g] != "" ? name[g] : "(unknown)") }
         { split($0, f, " "); print nm(f[1]) "\t" nm(f[2]) "\t" f[3] }' "$2" "$1" |
        LC_ALL=C sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3n |
        awk -F'\t' '
        function rank(q,    r) { r = int(q * n); if (r < q * n) r++; return r < 1 ? 1 : r }
        function flush() { if (n) print k "\t" n "\t" tot "\t" d[rank(0.50)] "\t" d[rank(0.99)] "\t" d[n] }
        $1 "\t" $2 != k { flush(); k = $1 "\t" $2; n = 0; tot = 0 }
        { d[++n] = $3; tot += $3 }
        END { flush() }' | LC_ALL=C sort
}

# stats_csv CSV: the rows of the "who kept them waiting" table of ctrace
# stats --format=csv, as stats_want prints them (no waker known: none),
# with their reason (why) last; see merge_whys.
stats_csv() {
    awk '/^woken_start_function,/ { t = 1; next } t && /^$/ { t = 0 }
         function q(    v) { match(r, /^"([^"]|"")*"/); v = substr(r, 2, RLENGTH - 2)
                             r = substr(r, RLENGTH + 2); gsub(/""/, "\"", v); return v }
         t { r = $0; wo = q(); wk = q(); split(r, f, ","); why = f[7]; gsub(/"/, "", why)
             if (f[1] == 0) wk = "none"; else if (wk == "") wk = "(unknown)"
             if (wo == "") wo = "(unknown)"
             print wo "\t" wk "\t" f[2] "\t" f[3] "\t" f[4] "\t" f[5] "\t" f[6] "\t" why }' "$1" |
        merge_whys | LC_ALL=C sort
}

# stats_json JSON: the same rows from ctrace stats --format=json (names
# without escapes in these traces).
stats_json() {
    awk '/^  "wakers": \[/ { t = 1; next } t && /^  \]/ { t = 0 }
         function str(k,    v) { v = $0; if (v ~ ("\"" k "\": null")) return "none"
                                 sub(".*\"" k "\": \"", "", v); sub(/".*/, "", v); return v == "" ? "(unknown)" : v }
         function num(k,    v) { v = $0; sub(".*\"" k "\": ", "", v); sub(/[,}].*/, "", v); return v }
         t && /"woken"/ { why = str("why"); if (why == "none") why = ""
                          print str("woken") "\t" str("waker") "\t" num("count") "\t" num("total_ns") "\t" \
                                num("p50_ns") "\t" num("p99_ns") "\t" num("max_ns") "\t" why }' "$1" |
        merge_whys | LC_ALL=C sort
}

# merge_whys: rows with their reason last, per (woken, waker), as the dump
# tells them: ctrace run's waits in poll, select and epoll that end by
# themselves say why (the stack of their unblock, which the dump does not
# print), and ctrace stats splits their pair's row by reason. Such a pair's
# rows become one: counts and totals summed, the largest max, its p50 and
# p99 "-" (mask_split masks them alike in stats_want's rows).
merge_whys() {
    awk -F'\t' '{ k = $1 "\t" $2; if (!(k in n)) order[++m] = k
                  n[k] += $3; tot[k] += $4; p50[k] = $5; p99[k] = $6; if ($7 > mx[k]) mx[k] = $7
                  rows[k]++; if ($8 != "") why[k] = 1 }
         END { for (i = 1; i <= m; i++) { k = order[i]; split_ = rows[k] > 1 || why[k]
                   print k "\t" n[k] "\t" tot[k] "\t" (split_ ? "-" : p50[k]) "\t" (split_ ? "-" : p99[k]) "\t" mx[k] } }'
}

# mask_split GOT WANT: WANT's rows with the p50 and p99 of the pairs GOT
# merged ("-") masked alike.
mask_split() {
    awk -F'\t' -v OFS='\t' 'NR == FNR { if ($5 == "-") split_[$1 "\t" $2] = 1; next }
         ($1 "\t" $2) in split_ { $5 = "-"; $6 = "-" } { print }' "$1" "$2"
}

# within_bound WANT GOT: the same rows, every field equal but p50 and p99
# (fields 5 and 6), which ctrace stats reads from a sketch: within 1% of
# the nearest-rank percentile, then rounded to the nanosecond
# (src/analyse/sketch.h), and no further.
within_bound() {
    awk -F'\t' 'NR == FNR { want[FNR] = $0; n = FNR; next }
         function off(w, g) { return w == "-" ? g != "-" : (g - w > 0.01 * w + 0.5 || w - g > 0.01 * w + 0.5) }
         { split(want[FNR], w, "\t")
           if (NF != 7 || $1 != w[1] || $2 != w[2] || $3 != w[3] || $4 != w[4] || $7 != w[7] ||
               off(w[5], $5) || off(w[6], $6)) bad = 1 }
         END { exit bad || FNR != n }' "$1" "$2"
}

# per_pair SAMPLES: "WOKEN<TAB>WAKER<TAB>COUNT<TAB>NS" summed over stacks.
per_pair() {
    awk -F'\t' '{ k = $1 "\t" $2; n[k] += $3; d[k] += $4 }
                END { for (k in n) print k "\t" n[k] "\t" d[k] }' "$1" | LC_ALL=C sort
}

# count SAMPLES WOKEN WAKER [LEAF]: waits of the pair (with LEAF the leaf
# frame of the waker's stack).
count() {
    awk -F'\t' -v wo="$2" -v wk="$3" -v leaf="${4:-}" '
        $1 == wo && $2 == wk { split($5, f, ";"); if (leaf == "" || f[1] == leaf) n += $3 }
        END { print n + 0 }' "$1"
}

# check NAME TRACE: the profile against the dump; leaves $run/NAME.samples.
check() {
    local name=$1 file=$2 out=$run/$1
    if ! "$ctrace" pprof -t waker -o "$out.pb" "$file" 2>"$out.err"; then
        fail "$name" "ctrace pprof -t waker failed"
        sed 's/^/  | /' "$out.err" >&2
        return 1
    fi
    "$pprof_tool" -raw "$out.pb" >"$out.raw" 2>"$out.raw.err" ||
        { fail "$name" "go tool pprof cannot read the profile"; return 1; }
    grep -q '^contentions/count delay/nanoseconds$' "$out.raw" ||
        fail "$name" "sample types are not contentions/count, delay/nanoseconds"
    # The classic events of every format (ctrace run writes Go's current
    # one): a wait is a GoBlock* and the GoUnblock that ends it.
    "$ctrace" dump --model "$file" >"$out.dump"
    "$ctrace" stats --format=csv "$file" >"$out.stats.csv"
    waits "$out.dump" >"$out.waits"
    names "$out.stats.csv" >"$out.names"
    expected "$out.waits" "$out.names" >"$out.want"
    samples "$out.raw" >"$out.samples"
    per_pair "$out.samples" >"$out.got"
    [ -s "$out.want" ] || fail "$name" "no waits in the trace: nothing checked"
    if ! cmp -s "$out.want" "$out.got"; then
        fail "$name" "waits per (woken, waker) differ from the dump's (< dump, > profile)"
        diff "$out.want" "$out.got" | head -n 20 | sed 's/^/  | /' >&2
        return 1
    fi
    # ctrace stats: the same waits, with their percentiles, in csv and json.
    stats_csv "$out.stats.csv" >"$out.stats.got"
    stats_want "$out.waits" "$out.names" | mask_split "$out.stats.got" - >"$out.stats.want"
    "$ctrace" stats --format=json "$file" >"$out.stats.json"
    stats_json "$out.stats.json" >"$out.stats.json.got"
    if ! within_bound "$out.stats.want" "$out.stats.got"; then
        fail "$name" "ctrace stats: waits per (woken, waker) differ from the dump's (< dump, > csv)"
        diff "$out.stats.want" "$out.stats.got" | head -n 20 | sed 's/^/  | /' >&2
    fi
    cmp -s "$out.stats.got" "$out.stats.json.got" ||
        fail "$name" "ctrace stats: json's waits per (woken, waker) differ from csv's"
    # Rows by total, largest first.
    awk '/^woken_start_function,/ { t = 1; next } t && /^$/ { t = 0 }
         t { n = split($0, f, ","); if (seen && f[n - 6] + 0 > last) bad = 1; last = f[n - 6] + 0; seen = 1 }
         END { exit bad }' "$out.stats.csv" || fail "$name" "ctrace stats: waker rows not by total, largest first"
    # A sample without a waker has the one frame that says so, or why
    # the wait ended by itself (ctrace_wait_timeout and its kin).
    local bad
    bad=$(awk -F'\t' '($2 == "none") != ($5 == "[no waker known]" || $5 ~ /^ctrace_wait_[a-z]+$/)' \
        "$out.samples" | wc -l)
    [ "$bad" -eq 0 ] || fail "$name" "$bad sample(s) where waker=none and the frame [no waker known] disagree"
    echo "$prog: $name: $(awk '{ n++ } END { print n + 0 }' "$out.waits") waits, $(wc -l <"$out.want") (woken, waker) pairs, as in the dump"
}

# want NAME WHAT GOT OP N
want() {
    [ "$3" "$4" "$5" ] || fail "$1" "$2: $3, want $4 $5"
}

# other NAME: the start function of NAME's threads other than main's (in
# an ASan build, ASan's asan_thread_start(void*), which its pthread_create runs).
other() {
    awk -F'\t' '$2 != "main" { print $2; exit }' "$run/$1.names"
}

traced() {
    local name=$1
    shift
    timeout -k 5 60 "$ctrace" run -o "$run/$name.trace" -- "$@" >"$run/$name.out" 2>&1 ||
        { fail "$name" "ctrace run $* failed"; sed 's/^/  | /' "$run/$name.out" >&2; return 1; }
}

if traced chain "$bindir/run_wakers" chain && check chain "$run/chain.trace"; then
    s=$run/chain.samples
    link=$(other chain) # chain_link
    want chain "waits of $link that main's unlock ended" \
        "$(count "$s" "$link" main pthread_mutex_unlock)" -eq 1
    want chain "waits of $link that another's unlock ended" \
        "$(count "$s" "$link" "$link" pthread_mutex_unlock)" -eq 3
    # (A join that comes after the thread's end does not wait: at least one.)
    want chain "main's joins that a $link's end ended" "$(count "$s" main "$link" thread_end)" -ge 1
    # (Names compared as strings: a demangled one, ASan's
    # asan_thread_start(void*), holds what a pattern would read.)
    awk -F'\t' -v l="$link" '$1 == l && $2 == "main" && index($0, "\tpthread_mutex_unlock;main;") { f = 1 } END { exit !f }' "$s" ||
        fail chain "main's unlock is not under main's stack"
    # The table format: the same rows (names in columns of 32, then waits).
    "$ctrace" stats "$run/chain.trace" |
        awk '/^Who kept them waiting/ { t = 1; getline; next } t && /^$/ { t = 0 }
             t { wo = substr($0, 3, 32); wk = substr($0, 36, 32); sub(/ +$/, "", wo); sub(/ +$/, "", wk)
                 if (wk == "(no waker known)") wk = "none"; print wo "\t" wk "\t" $(NF - 4) }' |
        LC_ALL=C sort >"$run/chain.table"
    cut -f 1-3 "$run/chain.stats.got" | cmp -s - "$run/chain.table" ||
        fail chain "ctrace stats: the table's waits per (woken, waker) differ from csv's"
    # --goroutine keeps the waits of those goroutines (the woken), all of
    # them here: each wait lies between the goroutine's start and end.
    if "$ctrace" pprof -t waker --goroutine="$link" -o "$run/chain_f.pb" "$run/chain.trace" &&
        "$pprof_tool" -raw "$run/chain_f.pb" >"$run/chain_f.raw" 2>/dev/null; then
        samples "$run/chain_f.raw" >"$run/chain_f.samples"
        per_pair "$run/chain_f.samples" >"$run/chain_f.got"
        awk -F'\t' -v l="$link" '$1 == l' "$run/chain.got" | cmp -s - "$run/chain_f.got" ||
            fail chain "--goroutine=$link: not the waits of $link alone"
    else
        fail chain "ctrace pprof -t waker --goroutine=$link failed"
    fi
fi
if traced broadcast "$bindir/run_wakers" broadcast && check broadcast "$run/broadcast.trace"; then
    w=$(other broadcast) # cond_waiter
    want broadcast "waits of $w that main's broadcast ended" \
        "$(count "$run/broadcast.samples" "$w" main pthread_cond_broadcast)" -eq 8
fi
if traced tcp "$bindir/run_tcp" 200 && check tcp "$run/tcp.trace"; then
    w=$(other tcp) # server
    want tcp "socket waits of main with no waker known" "$(count "$run/tcp.samples" main none)" -ge 1
    want tcp "socket waits of $w with no waker known" "$(count "$run/tcp.samples" "$w" none)" -ge 1
fi
# An event loop whose waits a producer ends, or their timeout: those say
# so (the frame ctrace_wait_timeout, the reason "timeout" in ctrace stats).
if traced loop "$bindir/run_loop" timeout 20 && check loop "$run/loop.trace"; then
    w=$(other loop) # alternate
    want loop "waits of main that $w's write ended" "$(count "$run/loop.samples" main "$w" write)" -eq 10
    t=$(awk '$1 == "timeouts" { print $2 }' "$run/loop.out")
    want loop "waits of main that ended by their timeout" \
        "$(count "$run/loop.samples" main none ctrace_wait_timeout)" -eq "${t:-0}"
    want loop "ctrace stats: main's waits ended by their timeout" \
        "$(awk -F, '$1 == "\"main\"" && $3 == 0 && $(NF - 2) == "\"timeout\"" { print $4 }' "$run/loop.stats.csv")" -eq "${t:-0}"
fi
if "$bindir/ex_mn_runtime" "$run/mn.trace" >/dev/null 2>&1; then
    if check ex_mn_runtime "$run/mn.trace"; then
        want ex_mn_runtime "waits with no waker known" "$(awk -F'\t' '$2 == "none"' "$run/ex_mn_runtime.samples" | wc -l)" -eq 0
        want ex_mn_runtime "waits of stage that sink's chan_op ended" \
            "$(count "$run/ex_mn_runtime.samples" stage sink chan_op)" -gt 0
    fi
else
    fail ex_mn_runtime "exited non-zero"
fi
for t in stress_1_19_good http_1_19_good; do
    if [ -f "$corpus/$t" ]; then check "$t" "$corpus/$t" || true; fi
done

finish
