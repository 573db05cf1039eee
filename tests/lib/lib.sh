# lib.sh - what the tests' scripts share: their messages, failures, work
# directories and Go's environment. Sourced, after the script's `set`
# options, by any script of tests/:
#
#     here=$(cd "$(dirname "$0")" && pwd)
#     . "$here/../lib/lib.sh"
#
# Sets prog (the script's name) and failed (0); defines the functions
# below, and nothing runs but those two assignments: a script parses its
# own arguments (want_args), or calls ctrace_args (CTRACE BINDIR WORKDIR,
# the analyses' convention) or outdir_args (CTRACE BINDIR OUTDIR, that of
# the tests of ctrace run). Go's paths are in go_paths.sh beside this
# file, which a script sources when it needs Go.

prog=${0##*/}
failed=0

# want_args N USAGE ARGC: exits 2 with "usage: PROG USAGE" unless the
# script got N arguments (ARGC, the script's $#).
want_args() {
    if [ "$3" -ne "$1" ]; then
        echo "usage: $prog $2" >&2
        exit 2
    fi
}

# die MESSAGE: the test cannot go on (a tool is missing, a step it needs
# failed): exit 1.
die() {
    echo "$prog: $*" >&2
    exit 1
}

# skip MESSAGE: what the test needs is not there (a program not
# installed): exit 77, which CMake's SKIP_RETURN_CODE calls a skip.
skip() {
    echo "$prog: skipped: $*"
    exit 77
}

# fatal MESSAGE: a check failed, and the test ends there: exit 1.
fatal() {
    echo "$prog: FAIL: $*" >&2
    exit 1
}

# fail NAME WHAT: one failure, counted in failed; the test goes on (finish
# ends it).
fail() {
    echo "$prog: $1: FAIL: $2" >&2
    failed=$((failed + 1))
}

# has GREP_ARGS...: whether standard input holds a match (grep -q's
# arguments), read to its end. `cmd | grep -q` stops reading at the first
# match, and a cmd that writes after it dies of SIGPIPE, which under
# pipefail fails the pipeline by chance (ldd's lines come in several
# writes).
has() {
    local r=0
    grep -q "$@" || r=$?
    cat >/dev/null
    return $r
}

# indent FILE [N]: FILE's first N lines (8) on stderr, cut at 300
# characters and indented: what a failure quotes.
indent() {
    head -n "${2:-8}" "$1" | cut -c1-300 | sed 's/^/  | /' >&2
}

# fresh_dir DIR: DIR, emptied or made.
fresh_dir() {
    rm -rf "$1"
    mkdir -p "$1"
}

# work_dir DIR: sets work to DIR, made and absolute, and run to a fresh
# run.XXXXXX in it; those of runs an hour old, kept by failures, are
# removed. What work holds outlives the run (caches); run is finish's to
# remove.
work_dir() {
    mkdir -p "$1"
    work=$(cd "$1" && pwd)
    find "$work" -maxdepth 1 -name 'run.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
    run=$(mktemp -d "$work/run.XXXXXX")
}

# ctrace_args "$@": the arguments CTRACE BINDIR WORKDIR (exit 2 on
# others): sets ctrace, bindir, then work and run as work_dir does. With
# shared_go_work=1 set before, work is $CTRACE_GO_WORK/SCRIPT-NAME when
# make check sets CTRACE_GO_WORK: its sanitizer stages share the plain
# stage's Go outputs and builds.
ctrace_args() {
    want_args 3 "CTRACE BINDIR WORKDIR" $#
    ctrace=$1
    bindir=$2
    local dir=$3
    if [ "${shared_go_work:-0}" = 1 ] && [ -n "${CTRACE_GO_WORK:-}" ]; then dir=$CTRACE_GO_WORK/${prog%.sh}; fi
    work_dir "$dir"
}

# outdir_args "$@": the arguments CTRACE BINDIR OUTDIR (exit 2 on
# others), the convention of the tests of ctrace run: sets ctrace, bindir
# and out, emptied or made.
outdir_args() {
    want_args 3 "CTRACE BINDIR OUTDIR" $#
    ctrace=$1
    bindir=$2
    out=$3
    fresh_dir "$out"
}

# home_writable DIR: HOME is DIR/home (made) when HOME is unset or not
# writable: Go's commands write under it.
home_writable() {
    if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then
        export HOME="$1/home"
        mkdir -p "$HOME"
    fi
}

# go_env [DIR [GOCACHE]]: Go's commands (go, go tool trace, go tool
# pprof) with their build cache in GOCACHE (default DIR/gocache), a HOME
# they may write to (home_writable DIR), no browser, no display, no
# GOFLAGS; and pprof's files in run/pproftmp when run is set. DIR is work
# by default.
go_env() {
    local dir=${1:-$work}
    export GOCACHE="${2:-$dir/gocache}" BROWSER=/bin/true
    [ -z "${run:-}" ] || export PPROF_TMPDIR="$run/pproftmp"
    home_writable "$dir"
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

# pf_decode IN OUT: a Perfetto export as protoc decodes it with our minimal
# .proto (perfetto_min.proto), its compressed_packets first inflated as
# Perfetto's trace processor inflates them ($bindir/pf_inflate, which also
# checks each bundle's framing); the inflated packets are kept in
# OUT.plain. Fails as protoc or pf_inflate does, their errors on stderr.
pf_decode() {
    "$bindir/pf_inflate" <"$1" >"$2.plain" &&
        protoc --proto_path="$ctrace_testlib" --decode=perfetto.protos.Trace perfetto_min.proto <"$2.plain" >"$2"
}
ctrace_testlib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
