#!/usr/bin/env bash
# export_check.sh - `ctrace export --perfetto` writes what the trace holds.
#
# Usage: tests/analyse/export_check.sh CTRACE BINDIR WORKDIR
#
# Decodes the export with `protoc --decode` and our own minimal .proto
# (tests/analyse/perfetto_min.proto, Perfetto's field numbers), then checks
# it against `ctrace dump` of the same trace, on traces of Go's corpus and
# the ex_threads example:
#   - one goroutine track (a ThreadDescriptor) per goroutine of the dump;
#   - a "running" slice begins at the time of each GoStart, and the
#     goroutine and P tracks' slices begin at exactly the dump's GoStart times;
#   - a "GC" slice per GCStart, an "STW" slice per GCSTWStart, a heap counter
#     value per HeapAlloc (the same values), a region slice per region start;
#   - every track's slices nest (each end closes a begun slice), and every
#     terminating flow was begun by an earlier event;
#   - the first packet clears the sequence's incremental state.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 3 ]; then
    echo "usage: $prog CTRACE BINDIR WORKDIR" >&2
    exit 2
fi
ctrace=$1
bindir=$2
work=$3
die() {
    echo "$prog: $*" >&2
    exit 1
}
command -v protoc >/dev/null 2>&1 || die "protoc not found (install protobuf-compiler: make test-deps)"
mkdir -p "$work"
work=$(cd "$work" && pwd)
run=$(mktemp -d "$work/run.XXXXXX")
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT 2>/dev/null || echo /usr/lib/go)/src/internal/trace/testdata}
failed=0
fail() {
    echo "$prog: $1: FAIL: $2" >&2
    failed=$((failed + 1))
}

# flat DECODED: one line per packet: "TS|TYPE|UUID|NAME|FLOWS|TFLOWS|COUNTER|KIND"
# (KIND: thread, process, counter or track for a descriptor).
flat() {
    awk '
    function out() { print ts "|" type "|" uuid "|" name "|" fl "|" tfl "|" cv "|" kind }
    /^packet {/ { ts = ""; type = ""; uuid = ""; name = ""; fl = ""; tfl = ""; cv = ""; kind = ""; depth = 1; next }
    depth > 0 && /{$/ { depth++; if ($1 == "thread") kind = "thread"; else if ($1 == "process") kind = "process"; else if ($1 == "counter") kind = "counter"; else if ($1 == "track_descriptor" && kind == "") kind = "track"; next }
    depth > 0 && /^ *}$/ { depth--; if (depth == 0) out(); next }
    depth > 0 && /counter {}/ { kind = "counter"; next }
    depth > 0 {
        k = $1; sub(/:$/, "", k); v = $0; sub(/^[^:]*: /, "", v); gsub(/^"|"$/, "", v)
        if (k == "timestamp") ts = v
        else if (k == "type") type = v
        else if (k == "track_uuid" || (k == "uuid" && uuid == "")) uuid = v
        else if (k == "name" || k == "thread_name" || k == "process_name") name = v
        else if (k == "flow_ids") fl = fl " " v
        else if (k == "terminating_flow_ids") tfl = tfl " " v
        else if (k == "counter_value") cv = v
        else if (k == "sequence_flags") type = "FLAGS" v
    }' "$1"
}

check() {
    local name=$1 file=$2 out=$run/$1 want got
    if ! "$ctrace" export --perfetto -o "$out.pftrace" "$file" 2>"$out.err"; then
        fail "$name" "ctrace export failed"; sed 's/^/  | /' "$out.err" >&2; return
    fi
    if ! protoc --proto_path="$here" --decode=perfetto.protos.Trace perfetto_min.proto \
           <"$out.pftrace" >"$out.txt" 2>"$out.protoc.err"; then
        fail "$name" "protoc cannot decode the export"; sed 's/^/  | /' "$out.protoc.err" | head -5 >&2; return
    fi
    "$ctrace" dump "$file" >"$out.dump"
    flat "$out.txt" >"$out.flat"
    local f0=$run/$name.f0
    [ "$(head -n 1 "$out.flat" | cut -d'|' -f2)" = FLAGS1 ] || fail "$name" "the first packet does not clear incremental state"
    # Goroutines: every g of a goroutine event in the dump.
    want=$(awk '{ t = $2; g = substr($4, 3) }
        t == "GoCreate" || t == "GoUnblock" { for (i = 5; i <= NF; i++) if ($i ~ /^g=/) { seen[substr($i, 3)] = 1; break } }
        t ~ /^(GoStart|GoStartLabel|GoEnd|GoStop|GoSched|GoPreempt|GoSleep|GoBlock.*|GoSysBlock|GoSysExit|GoWaiting|GoInSyscall|UserRegion)$/ && g != 0 { seen[g] = 1 }
        END { print length(seen) }' "$out.dump")
    got=$(awk -F'|' '$8 == "thread"' "$out.flat" | wc -l)
    [ "$want" -eq "$got" ] || fail "$name" "$got goroutine tracks for $want goroutines"
    # Running slices begin at the GoStart times; P slices too.
    awk '$2 == "GoStart" || $2 == "GoStartLabel" { print $1 }' "$out.dump" | sort -n >"$out.starts"
    awk -F'|' '$2 == "TYPE_SLICE_BEGIN" && $4 == "running" { print $1 }' "$out.flat" | sort -n >"$out.running"
    cmp -s "$out.starts" "$out.running" || fail "$name" "running slices ($(wc -l <"$out.running")) do not begin at the $(wc -l <"$out.starts") GoStart times"
    awk -F'|' '$2 == "TYPE_SLICE_BEGIN" && $4 ~ /^G[0-9]+$/ { print $1 }' "$out.flat" | sort -n >"$out.pslices"
    [ "$(comm -13 "$out.starts" "$out.pslices" | wc -l)" -eq 0 ] || fail "$name" "a P slice begins at no GoStart"
    # GC, STW, heap, regions.
    for pair in "GCStart:GC" "GCSTWStart:STW"; do
        want=$(awk -v t="${pair%%:*}" '$2 == t' "$out.dump" | wc -l)
        got=$(awk -F'|' -v n="${pair#*:}" '$2 == "TYPE_SLICE_BEGIN" && $4 == n' "$out.flat" | wc -l)
        [ "$want" -eq "$got" ] || fail "$name" "$got ${pair#*:} slices for $want ${pair%%:*}"
    done
    awk '$2 == "HeapAlloc" { v = $NF; sub(/mem=/, "", v); print $1, v }' "$out.dump" >"$out.heap.want"
    awk -F'|' '$2 == "TYPE_COUNTER" { print $1, $7 }' "$out.flat" >"$out.heap.got"
    cmp -s "$out.heap.want" "$out.heap.got" || fail "$name" "heap counter values differ from the HeapAlloc events"
    want=$(awk '$2 == "UserRegion" && / mode=0 /' "$out.dump" | wc -l)
    got=$(awk -F'|' '$2 == "TYPE_SLICE_BEGIN" && $4 != "running" && $4 !~ /^(runnable|syscall|waiting: .*|GC|STW|G[0-9]+)$/' "$out.flat" | wc -l)
    [ "$want" -eq "$got" ] || fail "$name" "$got region slices for $want region starts"
    # Nesting per track, and flows.
    local bad
    bad=$(awk -F'|' '
        $2 == "TYPE_SLICE_BEGIN" { d[$3]++ }
        $2 == "TYPE_SLICE_END" { if (--d[$3] < 0) { print "end without begin on track " $3; exit } }
        { n = split($5, a, " "); for (i = 1; i <= n; i++) fl[a[i]] = 1
          n = split($6, a, " "); for (i = 1; i <= n; i++) if (!(a[i] in fl)) { print "flow " a[i] " ends before it begins"; exit } }
        END { for (t in d) if (d[t] != 0) { print "track " t " has " d[t] " unended slice(s)"; exit } }' "$out.flat")
    [ -z "$bad" ] || fail "$name" "$bad"
    echo "$prog: $name: $(wc -l <"$out.flat") packets, as the dump says"
}

for t in stress_1_19_good user_task_region_1_19_good http_1_11_good; do
    [ -f "$corpus/$t" ] && check "$t" "$corpus/$t"
done
"$bindir/ex_threads" "$run/ex_threads.trace" >/dev/null 2>&1 || fail ex_threads "exited non-zero"
check ex_threads "$run/ex_threads.trace"

if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed failure(s); outputs kept in $run" >&2
    exit 1
fi
rm -rf "$run"
