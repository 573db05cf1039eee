#!/usr/bin/env bash
# malformed_vs_go.sh - what ctrace says of each malformed trace of
# test_malformed.c, compared with what Go's reader says of the same bytes.
#
# Usage: tests/parse/malformed_vs_go.sh TEST_MALFORMED ORACLE WORKDIR
#
#   TEST_MALFORMED  the test_malformed binary (writes the cases with --write)
#   ORACLE          where tests/lib/go_oracle/build.sh builds the Go oracle
#   WORKDIR         scratch directory (a run takes a directory of its own
#                   in it, removed at the end)
#
# The oracle is Go 1.19's own parser, printing what `go tool trace -d`
# prints (and reading 1.5 traces, which some cases are). For every case:
#   - where Go accepts a case, ctrace must accept it too and its events, as
#     ctrace_event_format prints them (NAME.dump), must be Go's output;
#   - where Go rejects it, ctrace must too, and ctrace's message must contain Go's
#     error text (what follows "failed to parse trace: ") as it is;
#   - except where the case says (NAME.offsets) that Go's text carries an
#     offset other than the one the error is about: then the two are
#     compared with every number masked, and both are printed;
#   - or where the case says (NAME.differs) that Go's reader is wrong on it
#     (it drops an error): then ctrace must reject it, and what Go says is
#     only printed;
#   - where the case names a known ctrace bug (NAME.bug), a disagreement is
#     reported as KNOWN CTRACE BUG without failing, an agreement as the
#     bug being gone.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"


want_args 3 "TEST_MALFORMED ORACLE WORKDIR" $#
test_bin=$1
oracle=$2
work=$3


[ -x "$test_bin" ] || die "not an executable: $test_bin"
bash "$here/../lib/go_oracle/build.sh" "$oracle" || die "cannot build the Go oracle"
mkdir -p "$work"
work=$(mktemp -d "$work/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$test_bin" --write "$work/cases" || die "$test_bin --write failed"

# mask TEXT: every number (decimal or 0x hex) replaced by #.
mask() {
    sed -E 's/0x[0-9a-fA-F]+/#/g; s/[0-9]+/#/g' <<<"$1"
}

failed=0
n=0
bugs=0

# compare NAME: what Go and ctrace say of the case agree (see above);
# prints what it found, returns 1 on a disagreement.
compare() {
    local name=$1 trace=$work/cases/$1.trace said msg rc=0 goerr m_go m_ct
    said=$(head -n 1 "$work/cases/$name.ctrace")
    msg=${said#*$'\t'}
    "$oracle" "$trace" >"$work/go.out" 2>"$work/go.err" || rc=$?
    goerr=$(sed -n 's/^failed to parse trace: //p' "$work/go.err" | head -n 1)

    if [ "$rc" -eq 0 ] && [ "$said" = ok ]; then
        if cmp -s "$work/go.out" "$work/cases/$name.dump"; then
            echo "$prog: $name: accepted by both, same events ($(wc -l <"$work/go.out"))"
            return 0
        fi
        echo "$prog: $name: accepted by both, events differ (< Go, > ctrace_event_format)"
        diff -a "$work/go.out" "$work/cases/$name.dump" | head -n 10 | sed 's/^/    /' || true
        return 1
    fi
    if [ "$said" = ok ]; then
        echo "$prog: $name: ctrace accepts it; Go says '${goerr:-ok}'"
        return 1
    fi
    if [ -f "$work/cases/$name.differs" ]; then
        echo "$prog: $name: differs from Go by design: $(cat "$work/cases/$name.differs")"
        echo "    go:     ${goerr:-(accepts it)}"
        echo "    ctrace: $msg"
        return 0
    fi
    if [ "$rc" -eq 0 ] || [ -z "$goerr" ]; then
        echo "$prog: $name: Go accepts it (exit $rc); ctrace says '$msg'"
        return 1
    fi
    case $msg in
    *"$goerr"*)
        echo "$prog: $name: ok ($goerr)"
        return 0
        ;;
    esac
    if [ -f "$work/cases/$name.offsets" ]; then
        m_go=$(mask "$goerr")
        m_ct=$(mask "$msg")
        case $m_ct in
        *"$m_go"*)
            echo "$prog: $name: ok up to offsets: $(cat "$work/cases/$name.offsets")"
            echo "    go:     $goerr"
            echo "    ctrace: $msg"
            return 0
            ;;
        esac
    fi
    echo "$prog: $name: ctrace's message lacks Go's error text"
    echo "    go:     $goerr"
    echo "    ctrace: $msg"
    return 1
}

for trace in "$work/cases"/*.trace; do
    name=$(basename "$trace" .trace)
    n=$((n + 1))
    if [ -f "$work/cases/$name.bug" ]; then
        if compare "$name" >"$work/said"; then
            echo "$prog: $name: known ctrace bug no longer seen, make the case GO_SAME: $(cat "$work/cases/$name.bug")"
        else
            bugs=$((bugs + 1))
            echo "$prog: $name: KNOWN CTRACE BUG: $(cat "$work/cases/$name.bug")"
        fi
        sed 's/^/  /' "$work/said"
    elif ! compare "$name" >"$work/said"; then
        sed 's/^[^:]*: [^:]*: /&FAIL: /' "$work/said" >&2
        failed=$((failed + 1))
    else
        cat "$work/said"
    fi
done

[ "$n" -gt 1 ] || die "no cases written"
if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed of $n case(s) failed" >&2
    exit 1
fi
if [ "$bugs" -ne 0 ]; then
    echo "$prog: $n case(s) as Go says them, except $bugs known ctrace bug(s)"
else
    echo "$prog: $n case(s) as Go says them"
fi
