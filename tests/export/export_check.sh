#!/usr/bin/env bash
# export_check.sh - `ctrace export` writes what the traces hold, in both
# formats.
#
# Usage: tests/export/export_check.sh CTRACE BINDIR WORKDIR
#
# Each export is decoded into flat lines, one per record, with every name
# and stack resolved: Perfetto's, its bundles inflated (pf_inflate), by
# `protoc --decode` with our own minimal .proto (perfetto_min.proto,
# Perfetto's field numbers) and
# perfetto_flat.awk, JSON's by jq and json_flat.jq. The lines of each
# trace's process are then held to `ctrace dump` of the trace, on traces of
# Go's corpus, ex_threads' trace and the traces of a forking program under
# `ctrace run -f`:
#   - the process: its pid (N of a name ending in .pid<N>, else 1, 2, ...
#     unused by the others) and name (the file's);
#   - a goroutine track (thread) per goroutine of the dump, named
#     "... G<id>"; a "running" slice at each GoStart, P slices only there;
#   - a "GC" slice per GCStart, an "STW" slice per GCSTWStart, the heap
#     counter's values those of HeapAlloc;
#   - the goroutine counters (running, runnable, waiting, syscall) and the
#     thread counters (running: holding a P; in syscall) at every change, as
#     a simulation of the states on the dump gives them;
#   - a region slice per region start, with its name, on its goroutine's
#     region track;
#   - a task track per task ("TYPE ID"), a slice from each UserTaskCreate to
#     its UserTaskEnd, each log an instant with its category and message on
#     its task's track (or its goroutine's, for no task);
#   - the stacks (export_stacks: the reader's frames) of every creation by a
#     goroutine, block and system call on exactly the events that make them,
#     and on no other;
#   - every track's slices nest, every flow ends after it begins, interned
#     data is defined before use on a sequence that needs it (Perfetto);
#   - the Perfetto export deflated in bundles by default, which inflate to
#     the --plain export;
#   - a bad trace among good ones: exit status 1, the byte offset said, and
#     nothing left under the -o name; nor after a write error;
#   - with PERFETTO_PROTOS set (a checkout of Perfetto's repository), each
#     Perfetto export decodes with Perfetto's own protos, every field known.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"
command -v protoc >/dev/null 2>&1 || die "protoc not found (install protobuf-compiler: make test-deps)"
command -v jq >/dev/null 2>&1 || die "jq not found (install jq: make test-deps)"
[ -x "$bindir/export_stacks" ] || die "no $bindir/export_stacks"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT 2>/dev/null || echo /usr/lib/go)/src/internal/trace/testdata}

# same NAME WHAT WANT GOT: the two files hold the same lines.
same() {
    if ! cmp -s "$3" "$4"; then
        fail "$1" "$2 ($(wc -l <"$4") lines for $(wc -l <"$3") wanted; first differences, < wanted > got:)"
        diff "$3" "$4" | head -n 6 | sed 's/^/  | /' >&2
    fi
}

# export NAME FORMAT FILE...: exports the files into one $run/NAME.FORMAT and
# decodes it into $run/NAME.FORMAT.flat.
export_flat() {
    local name=$1 fmt=$2 out=$run/$1.$2
    shift 2
    if ! "$ctrace" export -f "$fmt" -o "$out" "$@" 2>"$out.err"; then
        fail "$name" "ctrace export -f $fmt failed"; sed 's/^/  | /' "$out.err" >&2; return 1
    fi
    if [ "$fmt" = perfetto ]; then
        if ! pf_decode "$out" "$out.txt" 2>"$out.dec.err"; then
            fail "$name" "the export does not inflate or decode"; head -n 5 "$out.dec.err" | sed 's/^/  | /' >&2; return 1
        fi
        awk -f "$here/perfetto_flat.awk" "$out.txt" >"$out.flat"
        # With Perfetto's own protos at hand (PERFETTO_PROTOS: a checkout
        # of its repository, holding protos/perfetto/trace/trace.proto),
        # the export decodes with them too, and has no field they lack.
        if [ -n "${PERFETTO_PROTOS:-}" ]; then
            if ! protoc --proto_path="$PERFETTO_PROTOS" --decode=perfetto.protos.Trace \
                   protos/perfetto/trace/trace.proto <"$out.txt.plain" >"$out.real" 2>"$out.real.err"; then
                fail "$name" "Perfetto's protos cannot decode the export"; head -n 5 "$out.real.err" | sed 's/^/  | /' >&2
            elif grep -qE '^ *[0-9]+: ' "$out.real"; then
                fail "$name" "fields Perfetto's protos do not know: $(grep -m 3 -E '^ *[0-9]+: ' "$out.real" | tr '\n' ' ')"
            fi
        fi
    elif ! jq -r -f "$here/json_flat.jq" "$out" >"$out.flat" 2>"$out.dec.err"; then
        fail "$name" "jq cannot read the JSON export"; head -n 5 "$out.dec.err" | sed 's/^/  | /' >&2; return 1
    fi
    if grep -q '^ERR|' "$out.flat"; then
        fail "$name" "$(grep -m 3 '^ERR|' "$out.flat" | tr '\n' ' ')"
    fi
}

# check NAME FLAT PID FILE: the process PID of the flat lines against the
# dump of FILE.
check() {
    local name=$1 pid=$3 file=$4 o=$run/$1
    awk -F'|' -v p="$pid" '$1 == p' "$2" >"$o.flat"
    # The classic events of every format: what the export is built from
    # (ctrace run writes Go's current format).
    "$ctrace" dump --model "$file" >"$o.dump"
    "$bindir/export_stacks" "$file" >"$o.stacks"
    local f=$o.flat d=$o.dump

    # The process: by the program and pid its log says (ctrace run writes
    # it), else after the file. The program is the name it was run as
    # (name=, a link's own: /bin/sh, not dash), or, in a log without one,
    # exe's file name.
    # (The pid the log says, though the export numbers the process
    # otherwise where another has it: a program's images before and after
    # an exec.)
    awk '!n && / category=ctrace.process / && match($0, / exe=.* cmdline=/) {
            n = split(substr($0, RSTART + 5, RLENGTH - 14), p, "/"); prog = p[n]
            if (match($0, / name=.* exe=/)) prog = substr($0, RSTART + 6, RLENGTH - 11)
            match($0, / message=pid=[0-9]+/)
            print prog " (pid " substr($0, RSTART + 13, RLENGTH - 13) ")" }' "$d" >"$o.prog"
    if [ -s "$o.prog" ]; then
        cp "$o.prog" "$o.proc.want"
    else
        printf '%s\n' "${file##*/}" >"$o.proc.want"
    fi
    awk -F'|' '$2 == "D" && $5 == "process" { print $4 }' "$f" >"$o.proc.got"
    same "$name" "process $pid named by its program or its file" "$o.proc.want" "$o.proc.got"

    # Goroutine tracks, named "... G<id>" (a track renamed once its
    # thread's start function is known has a second descriptor: one track).
    awk '{ t = $2; g = substr($4, 3) }
        t == "GoCreate" || t == "GoUnblock" { for (i = 6; i <= NF; i++) if ($i ~ /^g=/) { print substr($i, 3); break } }
        t ~ /^(GoStart|GoStartLabel|GoEnd|GoStop|GoSched|GoPreempt|GoSleep|GoBlock.*|GoSysCall|GoSysBlock|GoSysExit|GoWaiting|GoInSyscall|UserRegion)$/ && g != 0 { print g }
        t == "UserLog" && g != 0 && / id=0 / { print g }' "$d" | sort -un >"$o.g.want"
    awk -F'|' '$2 == "D" && $5 == "thread" { print $8 }' "$f" | sort -un >"$o.g.got"
    same "$name" "goroutine tracks" "$o.g.want" "$o.g.got"
    local bad
    bad=$(awk -F'|' '$2 == "D" && $5 == "thread" && $4 !~ ("(^| )G" $8 "$") { print $4; exit }' "$f")
    [ -z "$bad" ] || fail "$name" "goroutine track named \"$bad\""
    # Map track name -> "G<tid>" for the checks below.
    awk -F'|' '$2 == "D" && $5 == "thread" { print $4 "|G" $8 }' "$f" >"$o.gname"

    # Running slices begin at the GoStart times; P slices only there.
    awk '$2 == "GoStart" || $2 == "GoStartLabel" { print $1 }' "$d" | sort -n >"$o.starts"
    awk -F'|' '$2 == "B" && $5 == "thread" && $6 == "running" { print $3 }' "$f" | sort -n >"$o.running"
    same "$name" "running slices at the GoStart times" "$o.starts" "$o.running"
    awk -F'|' '$2 == "B" && $4 ~ /^P[0-9]+$/ { print $3 }' "$f" | sort -n >"$o.pslices"
    [ "$(comm -13 "$o.starts" "$o.pslices" | wc -l)" -eq 0 ] || fail "$name" "a P slice begins at no GoStart"
    [ -s "$o.pslices" ] || [ ! -s "$o.starts" ] || fail "$name" "no P slices"

    # GC, STW, heap.
    awk '$2 == "GCStart" { print $1 }' "$d" >"$o.gc.want"
    awk -F'|' '$2 == "B" && $4 == "GC" && $6 == "GC" { print $3 }' "$f" >"$o.gc.got"
    same "$name" "GC slices at the GCStart times" "$o.gc.want" "$o.gc.got"
    awk '$2 == "GCSTWStart" { print $1 }' "$d" >"$o.stw.want"
    awk -F'|' '$2 == "B" && $4 == "stop-the-world" && $6 == "STW" { print $3 }' "$f" >"$o.stw.got"
    same "$name" "STW slices at the GCSTWStart times" "$o.stw.want" "$o.stw.got"
    awk '$2 == "HeapAlloc" { v = $NF; sub(/mem=/, "", v); print $1, v }' "$d" >"$o.heap.want"
    awk -F'|' '$2 == "C" && $4 == "heap bytes" { print $3, $8 }' "$f" >"$o.heap.got"
    same "$name" "heap counter values (HeapAlloc)" "$o.heap.want" "$o.heap.got"

    # Goroutines by state and threads: the states simulated on the dump,
    # a value at each change ("SERIES|TS|VALUE").
    awk '
        function set(g, s) { if (st[g] != "") c[st[g]]--; st[g] = s; if (s != "") c[s]++ }
        function show(series, v) { if (v != shown[series] + 0) { print series "|" $1 "|" v; shown[series] = v } }
        { t = $2; g = substr($4, 3); a = ""; for (i = 6; i <= NF; i++) if ($i ~ /^g=/) { a = substr($i, 3); break } }
        t == "GoCreate" || t == "GoUnblock" { set(a, "runnable") }
        t == "GoStart" || t == "GoStartLabel" { set(g, "running") }
        t == "GoEnd" || t == "GoStop" { set(g, "") }
        t == "GoSched" || t == "GoPreempt" || t == "GoSysExit" { set(g, "runnable") }
        t == "GoSysBlock" || t == "GoInSyscall" { set(g, "syscall") }
        t == "GoWaiting" || t == "GoSleep" || t ~ /^GoBlock/ { set(g, "waiting") }
        t == "ProcStart" { procs++ }
        t == "ProcStop" { procs-- }
        { show("goroutines running", c["running"] + 0); show("goroutines runnable", c["runnable"] + 0)
          show("goroutines waiting", c["waiting"] + 0); show("goroutines syscall", c["syscall"] + 0)
          show("threads running", procs + 0); show("threads in syscall", c["syscall"] + 0) }' "$d" | sort >"$o.count.want"
    awk -F'|' '$2 == "C" && $4 ~ /^(goroutines|threads) / && $8 != last[$4] + 0 { print $4 "|" $3 "|" $8; last[$4] = $8 }' "$f" |
        sort >"$o.count.got"
    same "$name" "goroutine and thread counters" "$o.count.want" "$o.count.got"

    # Regions: a slice per start, named, on its goroutine's region track.
    awk '$2 == "UserRegion" && / mode=0 / { n = $0; sub(/.* name=/, "", n); print $1 "|" $4 " regions|" n }' "$d" |
        sed 's/|g=/|G/' | sort >"$o.reg.want"
    awk -F'|' '$2 == "B" && $5 == "regions" { print $3 "|" $4 "|" $6 }' "$f" | sort >"$o.reg.got"
    same "$name" "region slices" "$o.reg.want" "$o.reg.got"

    # Tasks: tracks, slices, logs. A task's track is described at its first
    # creation or log ("TYPE ID", or "task ID" without a creation before);
    # its state goes with its end, so a later log describes it anew.
    awk -v want="$o.task" '
        function tname(id) { if (!(id in named)) named[id] = "task " id; print named[id] >(want ".tracks"); return named[id] }
        $2 == "UserTaskCreate" {
            id = substr($6, 8); ty = $0; sub(/.* name=/, "", ty)
            if (!(id in named)) named[id] = ty " " id
            tname(id); open[id] = 1
            print $1 "|" named[id] "|" ty >(want ".begin")
        }
        $2 == "UserTaskEnd" { id = substr($6, 8); if (open[id]) { print $1 "|" named[id] >(want ".end"); delete open[id]; delete named[id] } }
        $2 == "UserLog" {
            id = substr($6, 4); c = $0; sub(/.* category=/, "", c); m = c; sub(/ message=.*/, "", c); sub(/^.* message=/, "", m)
            if (id != 0) print $1 "|" tname(id) "|" c "|" m >(want ".log")
            else if ($4 != "g=0") print $1 "|G" substr($4, 3) "|" c "|" m >(want ".log")
        }
        { last = $1 }
        END { for (id in open) print last "|" named[id] >(want ".end") }' "$d"
    local k
    for k in tracks begin end log; do touch "$o.task.$k"; sort -u "$o.task.$k" -o "$o.task.$k"; done
    awk -F'|' '$2 == "D" && $5 == "track" && $4 !~ /^(P[0-9]+|GC|stop-the-world)$/ { print $4 }' "$f" | sort -u >"$o.task.tracks.got"
    same "$name" "task tracks" "$o.task.tracks" "$o.task.tracks.got"
    awk -F'|' -v tasks="$o.task.tracks.got" 'BEGIN { while ((getline t <tasks) > 0) task[t] = 1 }
        $2 == "B" && ($4 in task) { print $3 "|" $4 "|" $6 >(FILENAME ".begin") }
        $2 == "E" && ($4 in task) { print $3 "|" $4 >(FILENAME ".end") }' "$f"
    touch "$f.begin" "$f.end"
    sort "$f.begin" -o "$f.begin"
    sort "$f.end" -o "$f.end"
    same "$name" "task slices begun at UserTaskCreate" "$o.task.begin" "$f.begin"
    same "$name" "task slices ended at UserTaskEnd" "$o.task.end" "$f.end"
    awk -F'|' -v tasks="$o.task.tracks.got" -v gname="$o.gname" '
        BEGIN { while ((getline t <tasks) > 0) task[t] = 1; while ((getline t <gname) > 0) { split(t, a, "|"); gn[a[1]] = a[2] } }
        $2 == "I" && ($4 in task) { print $3 "|" $4 "|" $7 "|" $6 }
        $2 == "I" && $5 == "thread" && !($7 == "goroutine" && $6 ~ /^(create|unblock|syscall)$/) { print $3 "|" gn[$4] "|" $7 "|" $6 }' "$f" |
        sort >"$o.log.got"
    same "$name" "log instants (category, message) on their tasks' tracks" "$o.task.log" "$o.log.got"

    # Stacks: on creations by a goroutine, blocks and system calls, exactly.
    awk '$2 == "GoCreate" && $3 != 0 { k = "create" }
        $2 == "GoSysCall" { k = "syscall" }
        $2 ~ /^GoBlock/ || $2 == "GoSleep" { k = "waiting" }
        k != "" { s = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", s); print $1 "|G" $3 "|" k "|" s } { k = "" }' "$o.stacks" |
        sort >"$o.stk.want"
    awk -F'|' -v gname="$o.gname" 'BEGIN { while ((getline t <gname) > 0) { split(t, a, "|"); gn[a[1]] = a[2] } }
        $9 != "" { k = $6; if ($2 == "B" && k ~ /^waiting: /) k = "waiting"; print $3 "|" ($4 in gn ? gn[$4] : $4) "|" k "|" $9 }' "$f" |
        sort >"$o.stk.got"
    same "$name" "stacks of creations, blocks and system calls" "$o.stk.want" "$o.stk.got"

    # Nesting per track, and flows.
    bad=$(awk -F'|' '
        $2 == "B" { d[$4]++ }
        $2 == "E" { if (--d[$4] < 0) { print "end without begin on track " $4; exit } }
        $2 == "S" { fl[$8] = 1 }
        $2 == "F" && !($8 in fl) { print "flow " $8 " ends before it begins"; exit }
        END { for (t in d) if (d[t] != 0) { print "track " t " has " d[t] " unended slice(s)"; exit } }' "$f")
    [ -z "$bad" ] || fail "$name" "$bad"
    [ "$(awk -F'|' '$2 == "F"' "$f" | wc -l)" -gt 0 ] || [ "$(wc -l <"$o.starts")" -lt 2 ] ||
        fail "$name" "no flows"
    echo "$prog: $name: $(wc -l <"$f") records, as the dump says"
}

# pids FILE...: the pid each file's process should get, in order.
pids() {
    local -a got=()
    local f n i
    for f in "$@"; do
        # The pid its process's log says (ctrace run writes it), else the
        # file name's.
        n=$("$ctrace" dump --model "$f" | awk '!n && / category=ctrace.process / && match($0, / message=pid=[0-9]+/) {
            n = substr($0, RSTART + 13, RLENGTH - 13); print n }')
        [ -n "$n" ] || n=0
        [ "$n" != 0 ] || [[ ! ${f##*/} =~ \.pid([0-9]+)$ ]] || n=${BASH_REMATCH[1]}
        for i in "${got[@]}"; do [ "$i" = "$n" ] && n=0; done
        got+=("$n")
    done
    # The lowest number unused, by the shell alone: `printf | grep -q`
    # under pipefail fails when grep, done at its first match, leaves
    # printf a closed pipe, and then a number was given twice.
    local -A used=()
    for i in "${got[@]}"; do used[$i]=1; done
    n=1
    for i in "${!got[@]}"; do
        if [ "${got[$i]}" = 0 ]; then
            while [ -n "${used[$n]:-}" ]; do n=$((n + 1)); done
            got[$i]=$n
            used[$n]=1
        fi
    done
    printf '%s\n' "${got[@]}"
}

# normal FLAT: the flat lines of an export, as both formats must give them:
# a counter's value only where it changes, from 0 (the JSON export writes
# every series of a group at each change, the Perfetto export only the
# changed ones, and as extra values of the event of their time a few
# unchanged ones too), no counter track descriptions (JSON has none), flow
# ids and the thread ids JSON gives tracks that are not goroutines' left
# out (each format numbers its own), sorted.
normal() {
    awk -F'|' 'BEGIN { OFS = "|" }
        $2 == "D" && $5 == "counter" { next }
        $2 == "C" { k = $1 "|" $4; if (last[k] + 0 == $8 + 0) next; last[k] = $8 }
        $2 == "S" || $2 == "F" || ($2 == "D" && $5 != "thread") { $8 = "" }
        { print }' "$1" | sort
}

# check_all NAME FILE...: both formats of the files as one export; each
# file's process checked, and no other process there; and both formats
# say the same, record for record (the JSON export is the reference: its
# content has not changed while the Perfetto one was made smaller).
check_all() {
    local name=$1 fmt i
    shift
    local -a files=("$@") want
    mapfile -t want < <(pids "$@")
    for fmt in perfetto json; do
        export_flat "$name" "$fmt" "$@" || continue
        printf '%s\n' "${want[@]}" | sort -n >"$run/$name.$fmt.pids.want"
        awk -F'|' '$2 == "D" && $5 == "process" { print $1 }' "$run/$name.$fmt.flat" | sort -n >"$run/$name.$fmt.pids.got"
        same "$name.$fmt" "processes by pid" "$run/$name.$fmt.pids.want" "$run/$name.$fmt.pids.got"
        for i in "${!files[@]}"; do
            check "$name.$fmt.${want[$i]}" "$run/$name.$fmt.flat" "${want[$i]}" "${files[$i]}"
        done
    done
    if [ -f "$run/$name.perfetto.flat" ] && [ -f "$run/$name.json.flat" ]; then
        normal "$run/$name.json.flat" >"$run/$name.json.norm"
        normal "$run/$name.perfetto.flat" >"$run/$name.perfetto.norm"
        same "$name" "Perfetto's records against JSON's" "$run/$name.json.norm" "$run/$name.perfetto.norm"
    fi
}

for t in stress_1_19_good user_task_region_1_19_good http_1_11_good; do
    [ -f "$corpus/$t" ] && check_all "$t" "$corpus/$t"
done
"$bindir/ex_threads" "$run/ex_threads.trace" >/dev/null 2>&1 || fail ex_threads "exited non-zero"
check_all ex_threads "$run/ex_threads.trace"

# Several traces, one timeline: a program that forks, under ctrace run -f
# (its children's traces are FILE.pid<PID>), with a corpus trace beside them.
mkdir -p "$run/fork"
if "$ctrace" run -f -o "$run/fork/f.trace" -- "$bindir/run_forker" 2 >"$run/fork/out" 2>"$run/fork/err"; then
    mapfile -t ff < <(ls "$run/fork"/f.trace*)
    [ "${#ff[@]}" -ge 3 ] || fail fork "ctrace run -f wrote ${#ff[@]} traces"
    check_all fork "${ff[@]}" "$corpus/user_task_region_1_19_good"
else
    fail fork "ctrace run -f failed"; sed 's/^/  | /' "$run/fork/err" >&2
fi

# The default Perfetto export is its packets deflated in bundles
# (compressed_packets), as Perfetto's tracing service writes them: only
# bundles, which inflate to --plain's export byte for byte, a big one at
# most a third of its size.
for t in stress_1_19_good http_1_11_good; do
    [ -f "$corpus/$t" ] || continue
    "$ctrace" export -o "$run/$t.z" "$corpus/$t"
    "$ctrace" export --plain -o "$run/$t.plain" "$corpus/$t"
    if ! "$bindir/pf_inflate" -s <"$run/$t.z" >"$run/$t.z.inflated" 2>"$run/$t.z.stats"; then
        fail "$t.deflated" "$(cat "$run/$t.z.stats")"
    elif ! grep -Eq '^bundles=[1-9][0-9]* packets=[1-9][0-9]* plain=0$' "$run/$t.z.stats"; then
        fail "$t.deflated" "not bundles alone: $(cat "$run/$t.z.stats")"
    elif ! cmp -s "$run/$t.z.inflated" "$run/$t.plain"; then
        fail "$t.deflated" "inflated, not the --plain export"
    else
        # A megabyte and more deflates to under a third; a few kilobytes
        # hold too little that repeats.
        z=$(stat -c %s "$run/$t.z") p=$(stat -c %s "$run/$t.plain")
        if [ "$p" -ge 1000000 ] && [ $((3 * z)) -gt "$p" ]; then
            fail "$t.deflated" "$z bytes, more than a third of --plain's $p"
        else
            echo "$prog: $t: the export deflated, $z bytes for $p, $(cut -d' ' -f1,2 "$run/$t.z.stats")"
        fi
    fi
done

# A bad trace among good ones: its byte offset said, exit 1, nothing left
# under the -o name (nor beside it).
head -c 3000 "$run/ex_threads.trace" >"$run/bad.trace"
for fmt in perfetto json; do
    mkdir -p "$run/bad.$fmt"
    st=0
    "$ctrace" export -f "$fmt" -o "$run/bad.$fmt/out" "$run/ex_threads.trace" "$run/bad.trace" 2>"$run/bad.$fmt.err" || st=$?
    [ "$st" -eq 1 ] || fail "bad.$fmt" "exit status $st, want 1"
    grep -q "bad.trace: offset [0-9]" "$run/bad.$fmt.err" || fail "bad.$fmt" "no byte offset in: $(cat "$run/bad.$fmt.err")"
    [ -z "$(ls -A "$run/bad.$fmt")" ] || fail "bad.$fmt" "left $(ls "$run/bad.$fmt")"
done
# A write error (past the file size limit, its signal ignored): exit 1 and,
# again, nothing left.
for fmt in perfetto json; do
    mkdir -p "$run/full.$fmt"
    st=0
    (trap '' XFSZ; ulimit -f 8; exec "$ctrace" export -f "$fmt" -o "$run/full.$fmt/out" "$run/ex_threads.trace") \
        2>"$run/full.$fmt.err" || st=$?
    [ "$st" -eq 1 ] || fail "full.$fmt" "exit status $st, want 1"
    grep -q "write error" "$run/full.$fmt.err" || fail "full.$fmt" "no write error said: $(cat "$run/full.$fmt.err")"
    [ -z "$(ls -A "$run/full.$fmt")" ] || fail "full.$fmt" "left $(ls "$run/full.$fmt")"
done
st=0
"$ctrace" export -f svg -o "$run/svg.out" "$run/ex_threads.trace" 2>/dev/null || st=$?
[ "$st" -eq 2 ] && [ ! -e "$run/svg.out" ] || fail usage "-f svg: exit status $st, want 2 and no output"

finish
