#!/usr/bin/env bash
# malformed_vs_go.sh - what ctrace says of each malformed trace of
# test_malformed.c, compared with what Go's reader says of the same bytes.
#
# Usage: tests/reader/malformed_vs_go.sh TEST_MALFORMED ORACLE WORKDIR
#
#   TEST_MALFORMED  the test_malformed binary (writes the cases with --write)
#   ORACLE          where tests/go_oracle/build.sh builds the Go oracle
#   WORKDIR         scratch directory
#
# The oracle is Go 1.19's own parser, printing what `go tool trace -d`
# prints (and reading 1.5 traces, which some cases are). For every case:
#   - "valid" must be accepted by both;
#   - Go must reject every other case, and ctrace's message must contain Go's
#     error text (what follows "failed to parse trace: ") as it is;
#   - except where the case says (NAME.offsets) that Go's text carries an
#     offset other than the one the error is about: then the two are
#     compared with every number masked, and both are printed;
#   - or where the case says (NAME.differs) that Go's reader is wrong on it
#     (it drops an error): then ctrace must reject it, and what Go says is
#     only printed.
# Exit status: 0 pass, 1 failure, 2 usage error.

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)

if [ $# -ne 3 ]; then
    echo "usage: $prog TEST_MALFORMED ORACLE WORKDIR" >&2
    exit 2
fi
test_bin=$1
oracle=$2
work=$3

die() {
    echo "$prog: $*" >&2
    exit 1
}

[ -x "$test_bin" ] || die "not an executable: $test_bin"
bash "$here/../go_oracle/build.sh" "$oracle" || die "cannot build the Go oracle"
rm -rf "$work"
mkdir -p "$work"
"$test_bin" --write "$work/cases" || die "$test_bin --write failed"

# mask TEXT: every number (decimal or 0x hex) replaced by #.
mask() {
    sed -E 's/0x[0-9a-fA-F]+/#/g; s/[0-9]+/#/g' <<<"$1"
}

failed=0
n=0
for trace in "$work/cases"/*.trace; do
    name=$(basename "$trace" .trace)
    n=$((n + 1))
    said=$(cat "$work/cases/$name.ctrace")
    msg=${said#*$'\t'}
    rc=0
    "$oracle" "$trace" >"$work/go.out" 2>"$work/go.err" || rc=$?
    goerr=$(sed -n 's/^failed to parse trace: //p' "$work/go.err" | head -n 1)

    if [ "$name" = valid ]; then
        if [ "$rc" -ne 0 ] || [ "$said" != ok ]; then
            echo "$prog: $name: FAIL: the valid trace: Go says '${goerr:-ok}', ctrace says '$said'" >&2
            failed=$((failed + 1))
        else
            echo "$prog: $name: accepted by both"
        fi
        continue
    fi
    if [ "$said" = ok ]; then
        echo "$prog: $name: FAIL: ctrace accepts it; Go says '${goerr:-ok}'" >&2
        failed=$((failed + 1))
        continue
    fi
    if [ -f "$work/cases/$name.differs" ]; then
        echo "$prog: $name: differs from Go by design: $(cat "$work/cases/$name.differs")"
        echo "    go:     ${goerr:-(accepts it)}"
        echo "    ctrace: $msg"
        continue
    fi
    if [ "$rc" -eq 0 ] || [ -z "$goerr" ]; then
        echo "$prog: $name: FAIL: Go accepts it (exit $rc); ctrace says '$msg'" >&2
        failed=$((failed + 1))
        continue
    fi
    case $msg in
    *"$goerr"*)
        echo "$prog: $name: ok ($goerr)"
        continue
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
            continue
            ;;
        esac
    fi
    echo "$prog: $name: FAIL: ctrace's message lacks Go's error text" >&2
    echo "    go:     $goerr" >&2
    echo "    ctrace: $msg" >&2
    failed=$((failed + 1))
done

[ "$n" -gt 1 ] || die "no cases written"
if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed of $n case(s) failed" >&2
    exit 1
fi
echo "$prog: $n case(s) as Go says them"
