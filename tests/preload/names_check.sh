#!/usr/bin/env bash
# names_check.sh - thread names under `ctrace run`, in the trace and in
# every ctrace output.
#
# Usage: tests/preload/names_check.sh CTRACE BINDIR OUTDIR
#
# run_names (tests/preload/names.c) names threads every way a program does:
# before the trace (names_pre.c), pthread_setname_np of itself and of
# another thread, prctl(PR_SET_NAME), writes to /proc/thread-self/comm and
# /proc/self/task/TID/comm, and a rename while it runs; one thread and
# main keep the names they inherited. Traced in both formats, each trace
# must carry every name on its thread's G (`ctrace dump`: GoStartLabel, or
# Go 1.22's Label) and none on the others; `ctrace stats` must put each
# goroutine under its thread's name (the last one, rename-2), in its
# table, CSV and JSON, and say by thread who kept whom waiting; `ctrace export` must name each thread's track by it
# (Perfetto's thread_name, decoded by protoc, and Chrome JSON's
# thread_name metadata, the last of each thread); a thread named by main
# while it waits for good, by the log main writes; and every Go that opens
# the format must open the trace, every page (tests/lib/go_compat.sh). A
# named thread that never waits must be named in each generation (10 ms
# each) it writes in, so that a trace beginning with any of them names it.
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 3 "CTRACE BINDIR OUTDIR" $#
ctrace=$1 bindir=$2 out=$3
command -v jq >/dev/null 2>&1 || fatal "jq not found (make test-deps)"
command -v protoc >/dev/null 2>&1 || fatal "protoc not found (make test-deps)"
[ -n "${NAMES_KEEP:-}" ] || rm -rf "$out"
mkdir -p "$out"

# start function -> the thread name its goroutine must end with ("" none);
# by_other runs twice, named by main each way.
readonly WANT='self_setname worker-a
self_prctl worker-p
self_comm worker-c
renamer rename-2
unnamed -
by_other worker-o
by_other worker-t'
readonly NAMES="pre-start worker-a worker-p worker-c rename-1 rename-2 worker-o worker-t"
# An ASan build's threads all start in ASan's asan_thread_start(void*), which
# its pthread_create hands the shim as theirs; ctrace stats names them by
# the routine it calls, the program's (src/analyse/filter.c).

check() {
    local name=$1 fmt=$2 t=$out/$1.trace
    timeout -k 5 60 "$ctrace" run --format="$fmt" -o "$t" -- "$bindir/run_names" >"$out/$name.out" 2>"$out/$name.err" ||
        fatal "$name: run_names failed: $(cat "$out/$name.out" "$out/$name.err")"
    grep -qx "names ok" "$out/$name.out" || fatal "$name: $(cat "$out/$name.out")"
    "$ctrace" check "$t" >/dev/null || fatal "$name: ctrace check rejects the trace"

    # The trace: each name on a G of its own (rename-1 and rename-2 on the
    # same), written by that G's own thread.
    "$ctrace" dump "$t" >"$out/$name.dump"
    local labels n
    if [ "$fmt" = go1.11 ]; then
        labels=$(awk '$2 == "GoStartLabel" { l = $NF; sub("label=", "", l); g = $4; sub("g=", "", g); print g, l }' "$out/$name.dump" | sort -u)
    else
        labels=$(awk '/ Label / { l = $0; sub(/.*Label="/, "", l); sub(/".*/, "", l); g = $3; sub("G=", "", g); print g, l }' "$out/$name.dump" | sort -u)
    fi
    for n in $NAMES; do
        [ "$(awk -v n="$n" '$2 == n' <<<"$labels" | wc -l)" -eq 1 ] ||
            fatal "$name: want one G labelled $n, have: $(tr '\n' ';' <<<"$labels")"
    done
    [ "$(awk '{ print $1 }' <<<"$labels" | sort -u | wc -l)" -eq 7 ] ||
        fatal "$name: want 7 labelled Gs (rename-1 and rename-2 one), have: $(tr '\n' ';' <<<"$labels")"
    [ "$(awk '$2 ~ /^rename-/ { print $1 }' <<<"$labels" | sort -u | wc -l)" -eq 1 ] ||
        fatal "$name: rename-1 and rename-2 are not one G's"
    ! awk '{ print $2 }' <<<"$labels" | has -v -e '^pre-start$' -e '^worker-' -e '^rename-' ||
        fatal "$name: a label that names no thread: $(tr '\n' ';' <<<"$labels")"

    # ctrace stats: CSV's goroutines (start function, thread), JSON's
    # groups, the table's rows.
    "$ctrace" stats --format=csv "$t" >"$out/$name.csv"
    local got
    got=$(awk '/^goroutine,start_function,/ { t = 1; next } t && /^$/ { t = 0 }
               t { n = split($0, f, ","); fn = f[2]; th = f[n]; gsub(/"/, "", fn); gsub(/"/, "", th)
                   print fn, (th == "" ? "-" : th) }' "$out/$name.csv")
    local line
    while read -r line; do
        grep -qxF -- "$line" <<<"$got" || fatal "$name: ctrace stats has no goroutine \"$line\": $(tr '\n' ';' <<<"$got")"
    done <<<"$WANT"
    grep -q ' pre-start$' <<<"$got" || fatal "$name: ctrace stats has no pre-start thread: $(tr '\n' ';' <<<"$got")"
    # main and the unnamed thread: 9 goroutines, 7 named.
    [ "$(grep -vc ' -$' <<<"$got")" -eq 7 ] && [ "$(wc -l <<<"$got")" -eq 9 ] ||
        fatal "$name: want 9 goroutines, 7 named: $(tr '\n' ';' <<<"$got")"
    # Who kept them waiting, by thread: main's joins ended by each named
    # thread's end; worker-o's and worker-t's reads ended by main's writes.
    got=$(awk -F, '/^woken_start_function,/ { t = 1; next } t && /^$/ { t = 0 }
                   t { wo = $(NF - 1); wk = $NF; gsub(/"/, "", wo); gsub(/"/, "", wk); print "woken=" wo, "waker=" wk }' \
        "$out/$name.csv")
    for n in worker-a worker-p worker-c rename-2 worker-o worker-t; do
        grep -qx "woken= waker=$n" <<<"$got" || fatal "$name: no waits of main ended by $n in ctrace stats: $(tr '\n' ';' <<<"$got")"
    done
    for n in worker-o worker-t; do
        grep -qx "woken=$n waker=" <<<"$got" || fatal "$name: no waits of $n ended by main in ctrace stats: $(tr '\n' ';' <<<"$got")"
    done
    "$ctrace" stats --format=json "$t" >"$out/$name.json"
    [ "$(jq -r '.groups[] | select(.count == 1 and (.thread | startswith("worker-"))) | .thread' "$out/$name.json" |
        sort | tr '\n' ' ')" = "worker-a worker-c worker-o worker-p worker-t " ] ||
        fatal "$name: JSON groups are not one a worker-* thread: $(jq -c '[.groups[] | [.start_function, .thread]]' "$out/$name.json")"
    "$ctrace" stats "$t" >"$out/$name.table"
    grep -q '^Goroutines by thread name and start function' "$out/$name.table" &&
        grep -Eq '^  rename-2 +(renamer|asan_thread_start\(void\*\)) +1 ' "$out/$name.table" ||
        fatal "$name: the table does not group by thread name: $(sed -n '/^Goroutines/,/^$/p' "$out/$name.table")"
    # main and the unnamed thread carry the name exec gave the process, as
    # ps -L shows them.
    grep -Eq '^  run_names +main +1 ' "$out/$name.table" &&
        grep -Eq '^  run_names +(unnamed|asan_thread_start\(void\*\)) +1 ' "$out/$name.table" ||
        fatal "$name: the table does not show the process's name for main and the unnamed thread: $(sed -n '/^Goroutines/,/^$/p' "$out/$name.table")"

    # ctrace export: the last name each thread's track is given.
    "$ctrace" export -f json -o "$out/$name.export.json" "$t"
    got=$(jq -r '[(.traceEvents // .)[] | select(.ph == "M" and .name == "thread_name")] | group_by(.tid)[] | last | .args.name' \
        "$out/$name.export.json")
    for n in pre-start worker-a worker-p worker-c rename-2 worker-o worker-t; do
        grep -Eq "^$n G[0-9]+$" <<<"$got" || fatal "$name: JSON export has no thread named $n: $(tr '\n' ';' <<<"$got")"
    done
    grep -Eq '^(unnamed|asan_thread_start\(void\*\)) G[0-9]+$' <<<"$got" || fatal "$name: JSON export names the unnamed thread: $(tr '\n' ';' <<<"$got")"
    "$ctrace" export -o "$out/$name.pb" "$t"
    pf_decode "$out/$name.pb" "$out/$name.pb.txt" || fatal "$name: protoc cannot decode the export"
    for n in pre-start worker-a worker-p worker-c rename-2 worker-o worker-t; do
        grep -Eq "thread_name: \"$n G[0-9]+\"" "$out/$name.pb.txt" || fatal "$name: Perfetto export has no thread named $n"
    done
    echo "$prog: $name: 7 threads named, in the trace, ctrace stats and both exports"
}

check names go1.11
check names_go122 go1.22

# A named thread that never waits, over 10 ms generations: each
# generation it writes in names it (a trace, a flight recorder's
# snapshot, may begin with any of them).
t=$out/spin.trace
CTRACE_GEN_MS=10 timeout -k 5 60 "$ctrace" run --format=go1.22 -o "$t" -- "$bindir/run_names" spin 100 \
    >"$out/spin.out" 2>"$out/spin.err" || fatal "spin: run_names failed: $(cat "$out/spin.out" "$out/spin.err")"
grep -qx "names ok" "$out/spin.out" || fatal "spin: $(cat "$out/spin.out")"
"$ctrace" check "$t" >/dev/null || fatal "spin: ctrace check rejects the trace"
"$ctrace" dump "$t" >"$out/spin.dump"
g=$(awk '/ Label .*Label="spinner"/ { g = $3; sub("G=", "", g); print g; exit }' "$out/spin.dump")
[ -n "$g" ] || fatal "spin: no G labelled spinner"
res=$(awk -v g="G=$g" '/ Sync / { n++; next } $3 == g { ev[n] = 1 } $3 == g && / Label / { lab[n] = 1 }
    END { for (k in ev) { gens++; if (!(k in lab)) bad++ } print gens + 0, bad + 0 }' "$out/spin.dump")
[ "${res#* }" -eq 0 ] || fatal "spin: ${res#* } of the ${res% *} generations the spinner wrote in do not name it"
echo "$prog: spin: each of the ${res% *} generations the spinner wrote in names it"

# A thread named by main while it waits, waiting until the process exits:
# no start of its own carries the name (no label of its G), the log main
# writes as it names it does ("ctrace.thread", "g=N name=worker-l"), and
# ctrace stats and the export name it by it, in both formats.
for fmt in go1.11 go1.22; do
    t=$out/late-$fmt.trace
    timeout -k 5 60 "$ctrace" run --format="$fmt" -o "$t" -- "$bindir/run_names" late \
        >"$out/late.out" 2>"$out/late.err" || fatal "late: run_names failed: $(cat "$out/late.out" "$out/late.err")"
    grep -qx "names ok" "$out/late.out" || fatal "late: $(cat "$out/late.out")"
    "$ctrace" check "$t" >/dev/null || fatal "late ($fmt): ctrace check rejects the trace"
    "$ctrace" dump "$t" >"$out/late.dump"
    if [ "$fmt" = go1.11 ]; then
        g=$(awk '$2 == "UserLog" && /ctrace.thread/ && /name=worker-l/ { print; exit }' "$out/late.dump" |
            sed -n 's/.*g=\([0-9]*\) name=worker-l.*/\1/p')
        ! grep -q 'GoStartLabel .*label=worker-l' "$out/late.dump" || fatal "late ($fmt): a start of its own names it"
    else
        g=$(sed -n 's/.* Log .*Category="ctrace.thread" Message="g=\([0-9]*\) name=worker-l".*/\1/p' "$out/late.dump" | head -1)
        ! grep -q 'Label="worker-l"' "$out/late.dump" || fatal "late ($fmt): a start of its own names it"
    fi
    [ -n "$g" ] || fatal "late ($fmt): no ctrace.thread log names worker-l"
    "$ctrace" stats --format=csv "$t" >"$out/late.csv"
    awk -F, '/^goroutine,start_function,/ { t = 1; next } t && /^$/ { exit }
             t { gsub(/"/, ""); print $1, $2, $NF }' "$out/late.csv" |
        grep -Eqx "$g (waits_forever|asan_thread_start\(void\*\)) worker-l" ||
        fatal "late ($fmt): ctrace stats does not name goroutine $g worker-l: $(grep -A5 '^goroutine,' "$out/late.csv" | tr '\n' ';')"
    "$ctrace" export -f json -o "$out/late.json" "$t"
    jq -r '[(.traceEvents // .)[] | select(.ph == "M" and .name == "thread_name")] | group_by(.tid)[] | last | .args.name' \
        "$out/late.json" | grep -qx "worker-l G$g" || fatal "late ($fmt): the export does not name its track worker-l G$g"
    echo "$prog: late ($fmt): named while it waits for good, by main's log"
done

. "$here/../lib/go_paths.sh"
bash "$here/../lib/go_compat.sh" "$out/names.trace"
GO_COMPAT_GOS="$GO_CURRENT" bash "$here/../lib/go_compat.sh" "$out/names_go122.trace" "$out/spin.trace"
[ -n "${NAMES_KEEP:-}" ] || rm -rf "$out"
