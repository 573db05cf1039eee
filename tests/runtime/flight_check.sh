#!/usr/bin/env bash
# flight_check.sh - the flight recorder's snapshots hold the last min_age
# of events and nothing much older, and open in ctrace and in Go.
#
# Usage: tests/runtime/flight_check.sh TEST_FLIGHT CTRACE DIR
#
# Runs TEST_FLIGHT DIR (tests/runtime/test_flight.c), then holds each snapshot
# DIR/snap.K.trace to the logs the program noted: ctrace check accepts
# it, every number in DIR/snap.K.req is in it and none in DIR/snap.K.old
# past its oldest generation (which may reach back that far).
# Go 1.22 and 1.27 parse every snapshot, the one taken under the cap and
# the last of each start-stop cycle, those taken amid GC cycles, in long
# stop-the-worlds and after a silence, and serve every page of the
# window's (tests/lib/go_compat.sh). The streamed trace of those
# stop-the-worlds ends all three.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
. "$here/../lib/go_paths.sh"
want_args 3 "TEST_FLIGHT CTRACE DIR" $#
test_flight=$1
ctrace=$2
dir=$3
fresh_dir "$dir"
"$test_flight" "$dir" || die "test_flight failed"
snaps=("$dir"/snap.*.trace)
[ ${#snaps[@]} -ge 4 ] || die "${#snaps[@]} snapshots, not 4"
"$ctrace" dump "$dir/late.trace" | has '"asked"' ||
    die "the late snapshot lacks the log made before it"
# The logs of sparse's snapshot: those of min_age all in.
"$ctrace" dump "$dir/sparse.trace" | grep -o '"seq [0-9]*"' | tr -dc '0-9\n' | sort -u >"$dir/sparse.got"
missing=$(sort -u "$dir/sparse.req" | comm -23 - "$dir/sparse.got" | wc -l)
[ "$(wc -l <"$dir/sparse.req")" -gt 0 ] && [ "$missing" -eq 0 ] ||
    die "sparse.trace lacks $missing of the $(wc -l <"$dir/sparse.req") logs of min_age"
[ -z "${FLIGHT_FORK:-}" ] || "$ctrace" dump "$dir/fork.trace" | has '"child"' ||
    die "the child's snapshot lacks its log"
for t in "${snaps[@]}" "$dir/cap.trace" "$dir/late.trace" "$dir/sparse.trace" "$dir"/cycle.*.trace "$dir"/gc.*.trace "$dir"/quiet.*trace \
    "$dir"/stw.*trace; do
    "$ctrace" check "$t" >/dev/null || die "ctrace check rejects $t"
done
stws=$("$ctrace" dump "$dir/stw.stream.trace" | grep -c "RangeEnd.*stop-the-world" || true)
[ "$stws" -eq 3 ] || die "stw.stream.trace ends $stws stop-the-worlds, not 3"
for t in "${snaps[@]}"; do
    base=${t%.trace}
    # Each log with the generation it is in (the Syncs between them).
    "$ctrace" dump "$t" | awk '/ Sync / { g++ } match($0, /"seq [0-9]+"/) { print substr($0, RSTART + 5, RLENGTH - 6), g + 0 }' |
        sort -u -k1,1 >"$base.gens"
    cut -d' ' -f1 "$base.gens" >"$base.got"
    missing=$(sort -u "$base.req" | comm -23 - "$base.got" | wc -l)
    [ "$missing" -eq 0 ] ||
        die "$t lacks $missing of the $(wc -l <"$base.req") logs of the last min_age"
    # A log older than min_age (and slack) may be in the oldest
    # generation kept, which ended inside min_age, however long a loaded
    # machine made it; in any later one it says a generation that ended
    # before the window was kept.
    first=$(awk 'NR == 1 || $2 < f { f = $2 } END { print f + 0 }' "$base.gens")
    stale=$(sort -u "$base.old" | join - "$base.gens" | awk -v f="$first" '$2 != f' | wc -l)
    [ "$stale" -eq 0 ] ||
        die "$t holds $stale logs older than min_age and two generations past its oldest generation"
    echo "$prog: $t: $(wc -l <"$base.got") logs, all $(wc -l <"$base.req") of the window"
done
gos="$GO_CURRENT_EDGES"
GO_COMPAT_GOS=$gos bash "$here/../lib/go_compat.sh" --parse-only "${snaps[@]}" "$dir/cap.trace" "$dir"/cycle.*.trace \
    "$dir"/gc.*.trace "$dir"/quiet.*trace "$dir"/stw.*trace "$dir/sparse.trace"
GO_COMPAT_GOS=$gos bash "$here/../lib/go_compat.sh" "${snaps[@]}"
rm -rf "$dir"
