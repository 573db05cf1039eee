#!/usr/bin/env bash
# export_window.sh - `ctrace export --from --to` exports what the whole
# export shows between the two times, and `ctrace export`/`ctrace view`
# say when an export is more than a browser opens.
#
# Usage: tests/export/export_window.sh CTRACE BINDIR WORKDIR
#
# On a trace of Go's corpus and ex_threads' trace, both formats, decoded
# into flat lines as export_check.sh does (perfetto_flat.awk, json_flat.jq),
# a window [A, B] in the middle of the trace against the whole export:
#   - every record of the window is within [A, B];
#   - the slices' begins and ends and the instants strictly inside it are
#     those of the whole there, name for name;
#   - each track has at A as many begins as the whole has slices open
#     there, with their names, and at B as many ends as the whole has open
#     at B; every track's slices nest;
#   - each counter's value at A is the whole's last before A;
#   - every flow that ends in the window begins in it;
#   - no track is described that has nothing in the window, and the
#     process is named as in the whole.
# Generations: --gen windows of a Go 1.23 trace (below); tasks and
# goroutines: --task and --goroutine windows.
# Then bad windows (an end not after the start, a start after the trace's
# end, a time without a unit) exit 2 and say why, with nothing written;
# --budget past the export: export writes it whole with a warning that
# proposes windows; progress shows on a
# terminal only; --help documents it.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"
command -v protoc >/dev/null 2>&1 || die "protoc not found (install protobuf-compiler: make test-deps)"
command -v jq >/dev/null 2>&1 || die "jq not found (install jq: make test-deps)"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT 2>/dev/null || echo /usr/lib/go)/src/internal/trace/testdata}

# flat NAME FORMAT ARGS...: exports into $run/NAME.FORMAT, flattened to
# $run/NAME.FORMAT.flat.
flat() {
    local name=$1 fmt=$2 out=$run/$1.$2
    shift 2
    if ! "$ctrace" export -f "$fmt" -o "$out" "$@" 2>"$out.err"; then
        fail "$name" "ctrace export -f $fmt $* failed"; sed 's/^/  | /' "$out.err" >&2; return 1
    fi
    if [ "$fmt" = perfetto ]; then
        pf_decode "$out" "$out.txt"
        awk -f "$here/perfetto_flat.awk" "$out.txt" >"$out.flat"
    else
        jq -r -f "$here/json_flat.jq" "$out" >"$out.flat"
    fi
    if grep -q '^ERR|' "$out.flat"; then fail "$name" "$(grep -m 3 '^ERR|' "$out.flat" | tr '\n' ' ')"; fi
}

same() {
    if ! cmp -s "$3" "$4"; then
        fail "$1" "$2 ($(wc -l <"$4") lines for $(wc -l <"$3") wanted; first differences, < wanted > got:)"
        diff "$3" "$4" | head -n 6 | sed 's/^/  | /' >&2
    fi
}

# window NAME TRACE: the checks above, in both formats.
window() {
    local name=$1 trace=$2 fmt
    for fmt in perfetto json; do
        local n=$name.$fmt
        flat "$n.whole" "$fmt" "$trace" || continue
        local whole=$run/$n.whole.$fmt.flat
        # A and B: a third and two thirds into the trace, at times where
        # the whole has no record (ties at the edges have no one order).
        local last a b
        last=$(awk -F'|' '$3 != "" && $3 + 0 > m { m = $3 + 0 } END { print m + 0 }' "$whole")
        [ "$last" -gt 1000 ] || { fail "$n" "trace too short ($last ns)"; continue; }
        a=$(awk -F'|' -v t=$((last / 3)) '$3 != "" { at[$3] = 1 } END { while (t in at) t++; print t }' "$whole")
        b=$(awk -F'|' -v t=$((2 * last / 3)) '$3 != "" { at[$3] = 1 } END { while (t in at) t++; print t }' "$whole")
        flat "$n.win" "$fmt" --from "${a}ns" --to "${b}ns" "$trace" || continue
        local win=$run/$n.win.$fmt.flat o=$run/$n

        local bad
        bad=$(awk -F'|' -v a="$a" -v b="$b" '$3 != "" && ($3 + 0 < a || $3 + 0 > b) { print; exit }' "$win")
        [ -z "$bad" ] || fail "$n" "a record outside [$a, $b]: $bad"
        [ "$(awk -F'|' '$2 == "B"' "$win" | wc -l)" -gt 0 ] || fail "$n" "no slices in the window"

        # Inside: the same begins, ends and instants.
        awk -F'|' -v a="$a" -v b="$b" '($2 == "B" || $2 == "E" || $2 == "I") && $3 + 0 > a && $3 + 0 < b { print $2 "|" $3 "|" $4 "|" $6 "|" $7 "|" $9 }' "$whole" | sort >"$o.in.want"
        awk -F'|' -v a="$a" -v b="$b" '($2 == "B" || $2 == "E" || $2 == "I") && $3 + 0 > a && $3 + 0 < b { print $2 "|" $3 "|" $4 "|" $6 "|" $7 "|" $9 }' "$win" | sort >"$o.in.got"
        same "$n" "slices and instants inside the window" "$o.in.want" "$o.in.got"

        # The edges: what the whole has open at A begins at A; what is
        # open at B ends at B.
        awk -F'|' -v a="$a" -v b="$b" '
            $2 == "B" && $3 + 0 < a { open[$4, ++d[$4]] = $6 }
            $2 == "E" && $3 + 0 < a { d[$4]-- }
            END { for (k in d) for (i = 1; i <= d[k]; i++) print a "|" k "|" open[k, i] }' "$whole" | sort >"$o.a.want"
        awk -F'|' -v a="$a" '$2 == "B" && $3 + 0 == a { print $3 "|" $4 "|" $6 }' "$win" | sort >"$o.a.got"
        same "$n" "slices open at the window's start begin there" "$o.a.want" "$o.a.got"
        awk -F'|' -v b="$b" '
            $2 == "B" && $3 + 0 < b { d[$4]++ }
            $2 == "E" && $3 + 0 < b { d[$4]-- }
            END { for (k in d) for (i = 1; i <= d[k]; i++) print b "|" k }' "$whole" | sort >"$o.b.want"
        awk -F'|' -v b="$b" '$2 == "E" && $3 + 0 == b { print $3 "|" $4 }' "$win" | sort >"$o.b.got"
        same "$n" "slices open at the window's end end there" "$o.b.want" "$o.b.got"
        bad=$(awk -F'|' '
            $2 == "B" { d[$4]++ }
            $2 == "E" { if (--d[$4] < 0) { print "end without begin on " $4; exit } }
            $2 == "S" { fl[$8] = 1 }
            $2 == "F" && !($8 in fl) { print "flow " $8 " ends in the window, begun before it"; exit }
            END { for (t in d) if (d[t] != 0) { print "track " t " has " d[t] " unended slice(s)"; exit } }' "$win")
        [ -z "$bad" ] || fail "$n" "$bad"

        # Counters at A: the whole's last values before it (0 if none).
        awk -F'|' -v a="$a" '$2 == "C" && $3 + 0 < a { v[$4] = $8 } END { for (k in v) if (v[k] != 0) print k "|" v[k] }' "$whole" | sort >"$o.c.want"
        awk -F'|' -v a="$a" '$2 == "C" && $3 + 0 == a { v[$4] = $8 } END { for (k in v) if (v[k] != 0) print k "|" v[k] }' "$win" | sort >"$o.c.got"
        same "$n" "counter values at the window's start" "$o.c.want" "$o.c.got"

        # The process is named as in the whole, though its description
        # came before the window.
        [ "$(awk -F'|' '$2 == "D" && $5 == "process" { n = $4 } END { print n }' "$win")" = \
          "$(awk -F'|' '$2 == "D" && $5 == "process" { n = $4 } END { print n }' "$whole")" ] ||
            fail "$n" "the window does not name the process as the whole does"

        # Described tracks: those with something in the window (and the
        # goroutine of a region track, its parent).
        awk -F'|' '$2 == "D" && $5 != "process" && $5 != "counter" { print $4 }' "$win" | sort -u >"$o.d.got"
        awk -F'|' '$2 != "D" && $5 != "counter" { print $4 }
            $2 != "D" && $5 == "regions" { g = $4; sub(/ regions$/, "", g); print "G" g }' "$win" | sort -u >"$o.used"
        # A region track names its goroutine "G<id>"; the goroutine's
        # track is "... G<id>": matched by its suffix.
        bad=$(awk 'NR == FNR { used[$0] = 1; next }
            { n = $0; g = n; sub(/^.* /, "", g); if (!(n in used) && !(g in used)) { print n; exit } }' "$o.used" "$o.d.got")
        [ -z "$bad" ] || fail "$n" "track \"$bad\" described with nothing in the window"
        echo "$prog: $n: window [$a, $b] of $last ns: $(wc -l <"$win") records, $(wc -l <"$o.in.got") inside as in the whole"
    done
}

for t in stress_1_19_good user_task_region_1_19_good; do
    [ -f "$corpus/$t" ] && window "$t" "$corpus/$t"
done
"$bindir/ex_threads" "$run/ex_threads.trace" >/dev/null 2>&1 || fail ex_threads "exited non-zero"
window ex_threads "$run/ex_threads.trace"
tr=$run/ex_threads.trace

# Bad windows: exit 2, why said, nothing written.
bad_window() {
    local what=$1 want=$2 st=0
    shift 2
    mkdir -p "$run/bad"
    "$ctrace" export -o "$run/bad/out" "$@" "$tr" 2>"$run/bad.err" || st=$?
    [ "$st" -eq 2 ] || fail "bad window" "$what: exit status $st, want 2"
    grep -q -- "$want" "$run/bad.err" || fail "bad window" "$what: no \"$want\" in: $(cat "$run/bad.err")"
    [ -z "$(ls -A "$run/bad")" ] || fail "bad window" "$what: left $(ls "$run/bad")"
}
bad_window "end before start" "where it does not begin" --from 2ms --to 1ms
bad_window "end at start" "where it does not begin" --from 2ms --to 2ms
bad_window "start after the end" "after the trace ends" --from 1h
bad_window "no unit" "bad --from 5" --from 5
bad_window "not a time" "bad --to" --to soon
bad_window "negative" "bad --from" --from -1s
st=0
"$ctrace" view --from 2ms --to 1ms --port 0 "$tr" 2>"$run/bad.err" || st=$?
[ "$st" -eq 2 ] && grep -q "where it does not begin" "$run/bad.err" || fail "bad window" "view: exit status $st, $(cat "$run/bad.err")"

# Generations (--gen A-B) of a Go 1.23 trace of 4: each generation's
# window begins where the one before ends, the first at the trace's start
# and the last at its end; --gen 2-3 is the time window from the start of
# generation 2 to the end of generation 3, record for record; bad ranges,
# a classic trace, and --gen with --from exit 2.
gens=$here/../parse/gens-go1.23.trace
if [ -f "$gens" ]; then
    flat gens.whole perfetto "$gens"
    # The first generation begins with the trace's first record.
    prev=$(awk -F'|' '$3 != "" { if (m == "" || $3 + 0 < m) m = $3 + 0 } END { printf "%.0f\n", m }' "$run/gens.whole.perfetto.flat")
    for g in 1 2 3 4; do
        flat "gens.$g" perfetto --gen "$g" "$gens" || continue
        f=$run/gens.$g.perfetto.flat
        lo=$(awk -F'|' '$3 != "" { if (m == "" || $3 + 0 < m) m = $3 + 0 } END { printf "%.0f\n", m }' "$f")
        hi=$(awk -F'|' '$3 != "" && $3 + 0 > m { m = $3 + 0 } END { printf "%.0f\n", m }' "$f")
        [ "$lo" = "$prev" ] || fail gens "generation $g begins at $lo, not where the one before ends ($prev)"
        [ "$hi" -gt "$lo" ] || fail gens "generation $g is empty ($lo to $hi)"
        [ "$g" = 2 ] && g2=$lo
        [ "$g" = 3 ] && g3=$hi
        prev=$hi
    done
    last=$(awk -F'|' '$3 != "" && $3 + 0 > m { m = $3 + 0 } END { printf "%.0f\n", m }' "$run/gens.whole.perfetto.flat")
    [ "$prev" = "$last" ] || fail gens "the last generation ends at $prev, the trace at $last"
    if [ -n "${g2:-}" ] && [ -n "${g3:-}" ]; then
        flat gens.23 perfetto --gen 2-3 "$gens"
        flat gens.t23 perfetto --from "${g2}ns" --to "${g3}ns" "$gens"
        sort "$run/gens.23.perfetto.flat" >"$run/gens.23.sorted"
        sort "$run/gens.t23.perfetto.flat" >"$run/gens.t23.sorted"
        same gens "--gen 2-3 against --from ${g2}ns --to ${g3}ns" "$run/gens.t23.sorted" "$run/gens.23.sorted"
    fi
    # Past the budget, the windows proposed are cut in the generation,
    # not in the whole trace: the first begins where generation 2 does.
    if [ -n "${g2:-}" ]; then
        "$ctrace" export --gen 2 --budget 2K -o "$run/gover.pftrace" "$gens" 2>"$run/gover.err" || fail gens "--gen 2 --budget 2K failed"
        first=$(grep -m1 -o -- '--from [^ ]*' "$run/gover.err" | awk '{ v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
            m = u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1; printf "%.0f\n", v * m }')
        # (printed to 9 digits: within a microsecond)
        [ -n "$first" ] && [ $((first > g2 ? first - g2 : g2 - first)) -le 1000 ] ||
            fail gens "--gen 2 past the budget proposes windows from ${first:-none} ns, not from generation 2's start ($g2 ns)"
    fi
    for bad in "5:has 4 generations" "3-2:bad --gen" "0:bad --gen" "x:bad --gen"; do
        st=0
        "$ctrace" export --gen "${bad%%:*}" -o "$run/gbad.out" "$gens" 2>"$run/gbad.err" || st=$?
        [ "$st" -eq 2 ] && grep -q -- "${bad#*:}" "$run/gbad.err" && [ ! -e "$run/gbad.out" ] ||
            fail gens "--gen ${bad%%:*}: exit status $st, $(cat "$run/gbad.err")"
    done
    st=0
    "$ctrace" export --gen 1 --from 1ms -o "$run/gbad.out" "$gens" 2>"$run/gbad.err" || st=$?
    [ "$st" -eq 2 ] && grep -q "not with --from" "$run/gbad.err" || fail gens "--gen with --from: exit status $st"
    [ -f "$corpus/stress_1_19_good" ] && { st=0
        "$ctrace" export --gen 1 -o "$run/gbad.out" "$corpus/stress_1_19_good" 2>"$run/gbad.err" || st=$?
        [ "$st" -eq 2 ] && grep -q "not a Go 1.22+ trace" "$run/gbad.err" || fail gens "--gen on a classic trace: exit status $st"; }
else
    fail gens "no $gens"
fi

# Tasks and goroutines (--task A-B, --goroutine A-B): the window of their
# lives, byte for byte the export of --from and --to at the times the dump
# gives: task 1 of Go's corpus from its creation to its end, goroutine 21
# from its creation to its end (and the range 21-25, which holds it
# alone), 20-21 from 20's creation to the trace's end (20 never ends);
# goroutine 1 of the Go 1.23 trace, there when the trace began and
# running at its end, over the whole trace. Then an id or range no trace
# has, one two traces have, 0, a range backwards, and either with
# --from, exit 2 with nothing written.
life() {
    local name=$1 trace=$2 from=$3 to=$4
    shift 4
    if ! "$ctrace" export -o "$run/life.$name" "$@" "$trace" 2>"$run/life.err"; then
        fail "$name" "ctrace export $* failed: $(cat "$run/life.err")"; return
    fi
    "$ctrace" export -o "$run/life.$name.want" --from "${from}ns" --to "${to}ns" "$trace" ||
        { fail "$name" "--from ${from}ns --to ${to}ns failed"; return; }
    cmp -s "$run/life.$name.want" "$run/life.$name" ||
        fail "$name" "$* is not the window --from ${from}ns --to ${to}ns"
    [ -s "$run/life.$name" ] || fail "$name" "$* exported nothing"
}
ut=$corpus/user_task_region_1_19_good
if [ -f "$ut" ]; then
    "$ctrace" dump "$ut" >"$run/ut.dump"
    a=$(awk '$2 == "UserTaskCreate" && / taskid=1 / { print $1; exit }' "$run/ut.dump")
    b=$(awk '$2 == "UserTaskEnd" && / taskid=1$/ { print $1; exit }' "$run/ut.dump")
    [ -n "$a" ] && [ -n "$b" ] && life task1 "$ut" "$a" "$b" --task 1 || fail task1 "no task 1 in $ut's dump"
    a=$(awk '$2 == "GoCreate" && / g=21 stack=/ { print $1; exit }' "$run/ut.dump")
    b=$(awk '$2 == "GoEnd" && $4 == "g=21" { print $1; exit }' "$run/ut.dump")
    [ -n "$a" ] && [ -n "$b" ] && life g21 "$ut" "$a" "$b" --goroutine 21 || fail g21 "no goroutine 21 in $ut's dump"
    # Ranges: 21-25 holds 21 alone; 20-21 begins at 20's creation and,
    # 20 never ending, ends with the trace.
    [ -n "$a" ] && [ -n "$b" ] && life g21r "$ut" "$a" "$b" --goroutine 21-25
    a=$(awk '$2 == "GoCreate" && / g=20 stack=/ { print $1; exit }' "$run/ut.dump")
    ! grep -q 'GoEnd .* g=20 ' "$run/ut.dump" || fail g20 "goroutine 20 ends in $ut's dump"
    end=$(awk -F'|' '$3 != "" && $3 + 0 > m { m = $3 + 0 } END { printf "%.0f\n", m }' \
        "$run/user_task_region_1_19_good.perfetto.whole.perfetto.flat")
    [ -n "$a" ] && life g20r "$ut" "$a" "$end" --goroutine 20-21 || fail g20r "no goroutine 20 in $ut's dump"
fi
if [ -f "$gens" ]; then
    last=$(awk -F'|' '$3 != "" && $3 + 0 > m { m = $3 + 0 } END { printf "%.0f\n", m }' "$run/gens.whole.perfetto.flat")
    life g1 "$gens" 0 "$last" --goroutine 1
fi
bad_life() {
    local what=$1 want=$2 st=0
    shift 2
    rm -rf "$run/bad" && mkdir -p "$run/bad"
    "$ctrace" export -o "$run/bad/out" "$@" 2>"$run/bad.err" || st=$?
    [ "$st" -eq 2 ] || fail "bad life" "$what: exit status $st, want 2"
    grep -q -- "$want" "$run/bad.err" || fail "bad life" "$what: no \"$want\" in: $(cat "$run/bad.err")"
    [ -z "$(ls -A "$run/bad")" ] || fail "bad life" "$what: left $(ls "$run/bad")"
}
bad_life "no such task" "has no task 4242424" --task 4242424 "$tr"
bad_life "no such goroutine" "none of the traces has it" --goroutine 999999 "$tr" "$tr"
bad_life "in two traces" "both .* have it" --goroutine 1 "$gens" "$gens"
bad_life "task 0" "bad --task 0" --task 0 "$tr"
bad_life "a range backwards" "bad --goroutine 5-3" --goroutine 5-3 "$tr"
bad_life "no such range" "has no task 4242424-4242430" --task 4242424-4242430 "$tr"
bad_life "with --from" "a window of its own" --task 1 --from 1ms "$tr"
bad_life "both" "a window of its own" --task 1 --goroutine 1 "$tr"

# Past the budget: export writes it whole and warns, with windows to
# export instead (view serves those windows: view_check.sh).
st=0
"$ctrace" export --budget 2K -o "$run/big.pftrace" "$tr" 2>"$run/big.err" || st=$?
[ "$st" -eq 0 ] || fail budget "export: exit status $st, want 0"
cmp -s "$run/big.pftrace" "$run/ex_threads.perfetto.whole.perfetto" || fail budget "export past the budget is not the whole export"
grep -q "more than a browser opens" "$run/big.err" || fail budget "export: no warning: $(cat "$run/big.err")"
grep -q -- "ctrace export -o $run/big-1.pftrace --from 0s --to [0-9.]*[mun]*s .*ex_threads.trace" "$run/big.err" ||
    fail budget "export: no windows proposed, each to its own file: $(cat "$run/big.err")"
# The windows proposed fit the budget, or nearly: the first one exported.
from=$(grep -m1 -o -- '--from [^ ]* --to [^ ]*' "$run/big.err" || true)
if [ -n "$from" ]; then
    # shellcheck disable=SC2086
    "$ctrace" export $from -o "$run/part.pftrace" "$tr" 2>/dev/null || fail budget "the proposed window $from does not export"
    size=$(stat -c %s "$run/part.pftrace" 2>/dev/null || echo 0)
    [ "$size" -gt 0 ] && [ "$size" -lt 8192 ] || fail budget "the proposed window $from is $size bytes for a 2K budget"
fi
st=0
"$ctrace" export -f json --budget 2K -o "$run/big.json" "$tr" 2>"$run/bigj.err" || st=$?
[ "$st" -eq 0 ] && grep -q -- "ctrace export -f json -o $run/big-1.json --from 0s --to" "$run/bigj.err" ||
    fail budget "export -f json: exit status $st, or no JSON windows proposed: $(cat "$run/bigj.err")"
"$ctrace" export --budget 1G -o "$run/small.pftrace" "$tr" 2>"$run/small.err" || fail budget "export under the budget failed"
[ ! -s "$run/small.err" ] || fail budget "a warning under the budget: $(cat "$run/small.err")"

# Progress: on a terminal (script(1) gives one), once the export has taken
# CTRACE_PROGRESS_AFTER seconds (1 unless set: 0 here, as no export of a
# test lasts a second), "exporting N%", cleared at the end; none when
# stderr is not a terminal. The export is the same either way.
big=$corpus/stress_1_7_good
if command -v script >/dev/null 2>&1 && [ -f "$big" ]; then
    CTRACE_PROGRESS_AFTER=0 script -qfec "$ctrace export -o $run/prog.tty.pftrace $big" /dev/null >"$run/prog.tty" </dev/null 2>&1 ||
        fail progress "export on a terminal failed: $(cat "$run/prog.tty")"
    grep -q "exporting  *[0-9]*%" "$run/prog.tty" || fail progress "no progress on a terminal: $(head -c 300 "$run/prog.tty")"
    grep -q $'\r\033\[K' "$run/prog.tty" || fail progress "progress not cleared at the end"
    CTRACE_PROGRESS_AFTER=0 "$ctrace" export -o "$run/prog.pftrace" "$big" 2>"$run/prog.err" || fail progress "export failed"
    [ ! -s "$run/prog.err" ] || fail progress "progress without a terminal: $(head -c 300 "$run/prog.err")"
    cmp -s "$run/prog.pftrace" "$run/prog.tty.pftrace" || fail progress "the export differs on a terminal"
fi

for cmd in export view; do
    "$ctrace" "$cmd" --help | has -- "--from TIME" && "$ctrace" "$cmd" --help | has -- "--to TIME" &&
        "$ctrace" "$cmd" --help | has -- "--budget SIZE" && "$ctrace" "$cmd" --help | has -- "--gen A-B" &&
        "$ctrace" "$cmd" --help | has -- "--task A-B" && "$ctrace" "$cmd" --help | has -- "--goroutine A-B" ||
        fail help "ctrace $cmd --help says nothing of --from, --to, --gen, --task, --goroutine, --budget"
done

finish
