# lib.sh - the start and the end the analyses' tests share. Sourced, after
# its `set` options, by a script called as SCRIPT CTRACE BINDIR WORKDIR:
#
#     here=$(cd "$(dirname "$0")" && pwd)
#     . "$here/lib.sh"
#
# Sets prog (the script's name), ctrace, bindir, work and run: WORKDIR,
# made and absolute (with shared_go_work=1 set before, $CTRACE_GO_WORK/
# SCRIPT-NAME when make check sets CTRACE_GO_WORK: its sanitizer stages
# share the plain stage's Go outputs and builds), and a fresh run.XXXXXX
# in it (those of runs an hour old, kept by failures, are removed).
# Defines die, fail (which counts in failed), go_env and finish. A usage
# error exits 2.

prog=${0##*/}
if [ $# -ne 3 ]; then
    echo "usage: $prog CTRACE BINDIR WORKDIR" >&2
    exit 2
fi
ctrace=$1
bindir=$2
work=$3
if [ "${shared_go_work:-0}" = 1 ] && [ -n "${CTRACE_GO_WORK:-}" ]; then work=$CTRACE_GO_WORK/${prog%.sh}; fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
find "$work" -maxdepth 1 -name 'run.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
run=$(mktemp -d "$work/run.XXXXXX")
failed=0

# die MESSAGE: the test cannot go on (a tool is missing): exit 1.
die() {
    echo "$prog: $*" >&2
    exit 1
}

# fail NAME WHAT: one failure, counted; the test goes on.
fail() {
    echo "$prog: $1: FAIL: $2" >&2
    failed=$((failed + 1))
}

# go_env: Go's commands (go, go tool trace, go tool pprof) with their
# caches under work, a HOME they may write to, and no browser or display.
go_env() {
    export GOCACHE="$work/gocache" BROWSER=/bin/true PPROF_TMPDIR="$run/pproftmp"
    if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then
        export HOME="$work/home"
        mkdir -p "$HOME"
    fi
    unset DISPLAY GOFLAGS
}

# finish [CONTEXT [OK_LINE]]: the end. On failures, their count (and
# CONTEXT), outputs kept in run, exit 1; else OK_LINE if given, and run
# removed.
finish() {
    if [ "$failed" -ne 0 ]; then
        echo "$prog: $failed failure(s)${1:+ $1}; outputs kept in $run" >&2
        exit 1
    fi
    [ -z "${2:-}" ] || echo "$prog: $2"
    rm -rf "$run"
}
