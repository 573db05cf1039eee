#!/usr/bin/env bash
# stress_go122.sh - the stress test in Go's current format: start/stop
# cycles while threads emit, each trace cut into generations every millisecond
# (CTRACE_GEN_MS), which end while threads write.
#
# Usage: tests/runtime/stress_go122.sh TEST_STRESS CTRACE DIR
#
# Every trace must open in Go 1.23 with exactly the events ctrace counted
# (`go tool trace -d=1` prints one line per event and one Sync per
# generation) and pass `ctrace check` with the same count; the six with
# the most generations must parse in Go 1.22, and the one with the most
# serve every web page in both (tests/lib/go_compat.sh). Cycles: STRESS_GO122_CYCLES (default 20).
# With STRESS_GO122_GAPS=1, the reader is held slow under a 1 MiB cap and
# generations last 5 ms (test_stress.c, STRESS_GAPS): each trace pauses
# at the cap and goes on, again and again, with the same checks, and the
# traces must hold the log of a gap.
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

. "$here/../lib/go_paths.sh"
want_args 3 "TEST_STRESS CTRACE DIR" $#
stress_bin=$1 ctrace=$2 dir=$3
go123=$GO123 go122=$GO122
[ -x "$go123" ] && [ -x "$go122" ] || die "Go 1.22 and 1.23 are needed (make test-deps)"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/stress_go122.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export GOCACHE="$scratch/gocache" GOTOOLCHAIN=local BROWSER=/bin/true
trace123=$("$go123" tool -n trace)

mkdir -p "$dir"
rm -f "$dir"/trace-*.trace "$dir/counts.txt"
gaps=${STRESS_GO122_GAPS:-0}
if [ "$gaps" = 1 ]; then gen_ms=5 cycles=6; else gen_ms=1 cycles=20; fi
CTRACE_FORMAT=go1.22 CTRACE_GEN_MS=$gen_ms STRESS_GAPS=$gaps STRESS_CYCLES=${STRESS_GO122_CYCLES:-$cycles} \
    "$stress_bin" "$dir" || die "$stress_bin failed (traces kept in $dir)"

# check_one NNN WANT: "NNN GENERATIONS" on success, else a message.
check_one() {
    local n=$1 want=$2 f=$dir/trace-$1.trace out gens got
    out=$("$ctrace" check --strict "$f" 2>&1) || { echo "FAIL $n: ctrace check: $out"; return; }
    gens=$(grep -o '[0-9]* generations' <<<"$out" | cut -d' ' -f1)
    got=$(grep -o '[0-9]* events' <<<"$out" | cut -d' ' -f1)
    [ "$got" = $((want + gens)) ] ||
        { echo "FAIL $n: ctrace check: $got events, counted $want + $gens generations"; return; }
    got=$("$trace123" -d=1 "$f" 2>"$scratch/$n.err" | grep -c '^M=') ||
        { echo "FAIL $n: go 1.23: $(tail -n 2 "$scratch/$n.err")"; return; }
    [ "$got" = $((want + gens)) ] ||
        { echo "FAIL $n: go 1.23: $got events, counted $want + $gens generations"; return; }
    echo "$n $gens"
}
export -f check_one
export dir ctrace trace123 scratch
xargs -P 2 -L 1 bash -c 'check_one "$@"' _ <"$dir/counts.txt" >"$scratch/results"

if grep '^FAIL' "$scratch/results" >&2; then die "FAIL (traces kept in $dir)"; fi
ntraces=$(wc -l <"$scratch/results")
[ "$ntraces" -eq "$(wc -l <"$dir/counts.txt")" ] || die "not every trace was checked"
gens=$(awk '{ s += $2 } END { print s }' "$scratch/results")
multi=$(awk '$2 > 1' "$scratch/results" | wc -l)
[ "$multi" -ge 1 ] || die "no trace has two generations: the test did not test their ends"
most=$(sort -k2 -n "$scratch/results" | tail -n 1 | cut -d' ' -f1)
if [ "$gaps" = 1 ]; then
    logs=$(cat "$dir"/trace-*.trace | grep -ac "tracing paused for" || true)
    [ "$logs" -ge 1 ] || die "no trace holds the log of a gap"
fi

# Go 1.22 (a reader of its own, not 1.23's) on the six with the most.
some=()
while read -r n _; do some+=("$dir/trace-$n.trace"); done < <(sort -k2 -n -r "$scratch/results" | head -n 6)
GO_COMPAT_GOS=$go122 bash "$here/../lib/go_compat.sh" --parse-only "${some[@]}" >"$scratch/parse" 2>&1 ||
    { tail -n 20 "$scratch/parse" >&2; die "Go 1.22 rejected a trace (kept in $dir)"; }
GO_COMPAT_GOS="$go122 $go123" bash "$here/../lib/go_compat.sh" "$dir/trace-$most.trace" ||
    die "trace-$most.trace fails Go's pages (kept in $dir)"
echo "$prog: $ntraces traces, $gens generations ($multi traces with more than one): counts exact in ctrace and Go 1.23"
rm -f "$dir"/trace-*.trace
