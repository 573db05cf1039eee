#!/usr/bin/env bash
# wall_check.sh - `ctrace pprof -t wall` accounts for every goroutine's whole
# lifetime, once.
#
# Usage: tests/analyse/wall_check.sh CTRACE BINDIR WORKDIR
#
# On traces of Go's corpus and traces the examples write: for every
# goroutine, the time of its samples (label goroutine=ID, summed over the
# states) must equal its lifetime in the trace, computed here independently
# from `ctrace dump`: from its GoCreate (or the trace's start when it has
# none) to its GoEnd or GoStop (or the last event's time). Also: every
# sample carries a state label and a leaf frame naming that state, and the
# states include running, runnable and a wait. `go tool pprof -raw` (Go)
# reads the profile: the test also shows pprof accepts it.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"
go_env
pprof_tool=$(go tool -n pprof) || die "cannot locate 'go tool pprof'"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT)/src/internal/trace/testdata}

# lifetimes DUMP: "G NANOSECONDS" per goroutine, from ctrace dump's lines
# "TS Type p=P g=G off=O args...".
lifetimes() {
    awk '
    function see(g, ts) { if (!(g in seen)) { seen[g] = 1; alive[g] = 1; birth[g] = 0 } }
    function argg(    i) { for (i = 5; i <= NF; i++) if ($i ~ /^g=/) return substr($i, 3); return "" }
    { ts = $1; last = ts; g = substr($4, 3); t = $2 }
    t == "GoCreate" {
        n = argg(); seen[n] = 1; alive[n] = 1; birth[n] = ts; next
    }
    t == "GoUnblock" { see(argg(), ts); next }
    t ~ /^(GoStart|GoStartLabel|GoSched|GoPreempt|GoSleep|GoBlock.*|GoSysCall|GoSysBlock|GoSysExit|GoWaiting|GoInSyscall)$/ {
        see(g, ts); next
    }
    t == "GoEnd" || t == "GoStop" {
        see(g, ts); if (alive[g]) { life[g] += ts - birth[g]; alive[g] = 0 } next
    }
    END {
        for (g in seen) {
            if (alive[g]) life[g] += last - birth[g]
            if (life[g] > 0) print g, life[g]
        }
    }' "$1" | sort -n
}

# wall_sums RAW: "G NANOSECONDS" per goroutine label of pprof -raw output.
wall_sums() {
    awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
         s && /^ *[0-9]+ +[0-9]+: / { v = $2 + 0; next }
         s && /goroutine:\[/ { g = $0; sub(/.*goroutine:\[/, "", g); sub(/\].*/, "", g); sum[g] += v }
         END { for (g in sum) print g, sum[g] }' "$1" | sort -n
}

check() {
    local name=$1 file=$2 out=$run/$1
    if ! "$ctrace" pprof -t wall -o "$out.pb" "$file" 2>"$out.err"; then
        fail "$name" "ctrace pprof -t wall failed"
        sed 's/^/  | /' "$out.err" >&2
        return
    fi
    "$pprof_tool" -raw "$out.pb" >"$out.raw" 2>"$out.raw.err" || { fail "$name" "go tool pprof cannot read the profile"; return; }
    "$ctrace" dump "$file" >"$out.dump"
    lifetimes "$out.dump" >"$out.want"
    wall_sums "$out.raw" >"$out.got"
    if ! cmp -s "$out.want" "$out.got"; then
        fail "$name" "per-goroutine time differs from the lifetimes (goroutine ns: want, got)"
        join -a1 -a2 -e - -o 0,1.2,2.2 "$out.want" "$out.got" | awk '$2 != $3' | head -n 10 | sed 's/^/  | /' >&2
        return
    fi
    # Each sample: a state label, and a leaf location naming it.
    local bad
    bad=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
              s && /^ *[0-9]+ +[0-9]+: / { n++; has = 0 } s && /state:\[/ { st++ }
              END { print n - st }' "$out.raw")
    [ "$bad" -eq 0 ] || fail "$name" "$bad sample(s) without a state label"
    for st in running runnable; do
        grep -q "state:\[$st\]" "$out.raw" || fail "$name" "no '$st' time"
    done
    grep -q 'state:\[waiting: ' "$out.raw" || fail "$name" "no waiting time"
    grep -q ' \[running\] ' "$out.raw" || fail "$name" "no [running] frame"
    echo "$prog: $name: $(wc -l <"$out.want") goroutines, each with its lifetime"
}

for t in stress_1_19_good http_1_11_good user_task_region_1_19_good stress_start_stop_1_9_good; do
    [ -f "$corpus/$t" ] && check "$t" "$corpus/$t"
done
for ex in threads mn_runtime; do
    "$bindir/ex_$ex" "$run/ex_$ex.trace" >/dev/null 2>&1 || fail "ex_$ex" "exited non-zero"
    check "ex_$ex" "$run/ex_$ex.trace"
done

finish
