#!/usr/bin/env bash
# stress_check.sh - run the stress test and check every trace it wrote.
#
# Usage: tests/runtime/stress_check.sh TEST_STRESS DIR
#
#   1. runs TEST_STRESS DIR (tests/runtime/test_stress.c): 100 start/stop cycles while
#      threads emit events; it writes DIR/trace-NNN.trace and DIR/counts.txt
#      ("NNN COUNT": events the library counted for that trace);
#   2. runs `go tool trace -d` on every trace, STRESS_JOBS (default 2) at a
#      time: every trace must be accepted, the number of event lines it
#      prints must equal the recorded count, and no G may still be running,
#      nor a P started, at its end;
#   3. runs tests/lib/go_compat.sh: every trace must parse in every other Go
#      version it lists (step 2 was the parse of the Go on PATH), and the
#      first, a middle and the last serve every web page.
#
# Why the counts can match exactly: `go tool trace -d` prints one line per
# event left after parsing and ordering (internal/trace.Print). It never
# prints EvBatch, EvString, EvStack, EvFrequency or EvTimerGoroutine, which
# ctrace does not count as events either, and it drops futile-wakeup
# sequences, which the stress mix never produces. On a mismatch the events
# per type are shown.
#
# Old traces in DIR are removed first; on success the traces are removed
# unless STRESS_KEEP=1 (on a failure they are kept for inspection).
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 2 "TEST_STRESS DIR" $#
stress_bin=$1
dir=$2
jobs=${STRESS_JOBS:-2}

[ -x "$stress_bin" ] || die "not an executable: $stress_bin"
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/stress_check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export GOCACHE="$scratch/gocache"
home_writable "$scratch"
export BROWSER=/bin/true
unset DISPLAY GOFLAGS

trace_tool=$(go tool -n trace) || die "cannot locate 'go tool trace'"
[ -x "$trace_tool" ] || die "'go tool trace' binary not found: $trace_tool"

# --- 1. the stress program -----------------------------------------------------

mkdir -p "$dir"
rm -f "$dir"/trace-*.trace "$dir/counts.txt"
SECONDS=0
if ! "$stress_bin" "$dir"; then
    die "$stress_bin failed (traces kept in $dir)"
fi
t_run=$SECONDS

counts=$dir/counts.txt
[ -s "$counts" ] || die "$counts is missing or empty"
ntraces=$(wc -l <"$counts")
[ "$ntraces" -ge 1 ] || die "no cycles recorded in $counts"
while read -r f _; do
    [ -s "$dir/trace-$f.trace" ] || die "trace $dir/trace-$f.trace is missing or empty"
done <"$counts"

# --- 2. go tool trace -d on every trace ------------------------------------------

# check_one NNN: parse trace NNN; writes NNN.lines (event lines printed),
# NNN.types (events per type) and NNN.err (stderr); NNN.fail on failure;
# NNN.open the Gs still running and the Ps not stopped at the trace's end
# (the stop closes every one: Go 1.19's and 1.22's viewers panic on a
# GoStart that nothing ends, which the web pages below see in a few traces
# only).
check_one() {
    local n=$1 rc
    local trace=$dir/trace-$n.trace out=$scratch/$n
    "$trace_tool" -d -http=127.0.0.1:0 "$trace" 2>"$out.err" \
        | awk -v open="$out.open" '
            { c[$2]++; p = ""; for (i = 3; i <= NF; i++) if ($i ~ /^p=/) { p = substr($i, 3); break } }
            $2 ~ /^GoStart(Label|Local)?$/ { run[p] = $0 }
            $2 ~ /^(GoEnd|GoStop|GoSched|GoPreempt|GoSleep|GoSysBlock|GoBlock.*)$/ { delete run[p] }
            $2 == "ProcStart" { on[p] = 1 }
            $2 == "ProcStop" { delete on[p] }
            END { for (t in c) print t, c[t]
                  for (q in run) print "a G still running: " run[q] >open
                  for (q in on) print "P " q " not stopped" >open }' >"$out.types"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "$rc" >"$out.fail"
        return 0
    fi
    awk '{ s += $2 } END { print s + 0 }' "$out.types" >"$out.lines"
}
export -f check_one
export dir scratch trace_tool

SECONDS=0
# shellcheck disable=SC2016  # $1 is expanded by the inner bash
cut -d' ' -f1 "$counts" | xargs -P "$jobs" -I{} bash -c 'check_one "$1"' _ {}
t_parse=$SECONDS

failed=0
mismatched=0
unclosed=0
while read -r n want; do
    if [ -e "$scratch/$n.fail" ]; then
        failed=$((failed + 1))
        echo "$prog: $dir/trace-$n.trace: 'go tool trace -d' failed" \
             "(status $(cat "$scratch/$n.fail")):" >&2
        grep -v 'Parsing trace' "$scratch/$n.err" | tail -n 5 | sed 's/^/  | /' >&2
        continue
    fi
    if [ -s "$scratch/$n.open" ]; then
        unclosed=$((unclosed + 1))
        echo "$prog: $dir/trace-$n.trace ends with:" >&2
        sed 's/^/  | /' "$scratch/$n.open" >&2
    fi
    got=$(cat "$scratch/$n.lines")
    if [ "$got" != "$want" ]; then
        mismatched=$((mismatched + 1))
        echo "$prog: $dir/trace-$n.trace: go tool trace -d printed $got events," \
             "ctrace counted $want (difference $((got - want)))" >&2
        sort "$scratch/$n.types" | sed 's/^/  | /' >&2
    fi
done <"$counts"

total=$(awk '{ s += $2 } END { print s + 0 }' "$counts")
echo "$prog: $ntraces traces, $total events; run ${t_run}s, go tool trace -d ${t_parse}s" \
     "($jobs at a time); $failed rejected, $mismatched with a wrong count, $unclosed with a G or P open at the end"
if [ "$failed" -ne 0 ] || [ "$mismatched" -ne 0 ] || [ "$unclosed" -ne 0 ]; then
    die "FAIL (traces kept in $dir)"
fi

# Every trace parses in the other Go versions too (go_compat.sh lists
# them; the one whose `go tool trace -d` step 2 ran, with go_compat.sh's
# flags, has parsed them already), in two halves at once.
SECONDS=0
all=()
while read -r n _; do all+=("$dir/trace-$n.trace"); done <"$counts"
others=()
while read -r g; do
    [ "$(GOTOOLCHAIN=local "$g" tool -n trace 2>/dev/null)" = "$trace_tool" ] || others+=("$g")
done < <(bash "$here/../lib/go_compat.sh" --list)
if [ "${#others[@]}" -gt 0 ]; then
    half=$(( (${#all[@]} + 1) / 2 ))
    GO_COMPAT_GOS="${others[*]}" bash "$here/../lib/go_compat.sh" --parse-only "${all[@]:0:$half}" \
        >"$scratch/parse1" 2>&1 &
    p1=$!
    rc2=0
    GO_COMPAT_GOS="${others[*]}" bash "$here/../lib/go_compat.sh" --parse-only "${all[@]:$half}" \
        >"$scratch/parse2" 2>&1 || rc2=$?
    rc1=0
    wait "$p1" || rc1=$?
    if [ "$rc1" -ne 0 ] || [ "$rc2" -ne 0 ]; then
        grep -v '^go_compat: ' "$scratch/parse1" "$scratch/parse2" >&2 || true
        die "FAIL: a Go version rejects a trace (traces kept in $dir)"
    fi
fi
echo "$prog: every trace parses in every Go version (${SECONDS}s)"


# --- 3. every web page for a few traces -----------------------------------------

first=$(head -n 1 "$counts" | cut -d' ' -f1)
middle=$(sed -n "$(( (ntraces + 1) / 2 ))p" "$counts" | cut -d' ' -f1)
last=$(tail -n 1 "$counts" | cut -d' ' -f1)
SECONDS=0
picked=$(printf '%s\n' "$first" "$middle" "$last" | sort -u)
args=()
for n in $picked; do
    args+=("$dir/trace-$n.trace")
done
if ! "$here/../lib/go_compat.sh" "${args[@]}"; then
    die "FAIL: web pages (traces kept in $dir)"
fi
echo "$prog: web pages of ${#args[@]} traces ok in ${SECONDS}s"

if [ "${STRESS_KEEP:-0}" != 1 ]; then
    rm -f "$dir"/trace-*.trace "$dir/counts.txt"
    rmdir "$dir" 2>/dev/null || true
fi
echo "$prog: PASS"
