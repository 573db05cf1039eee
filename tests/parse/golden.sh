#!/usr/bin/env bash
# golden.sh - ctrace's reader prints what Go's reader prints, byte for byte.
#
# Usage: tests/parse/golden.sh CTRACE ORACLE WORKDIR [PROGRAM...]
#
#   CTRACE   the ctrace command (build/bin/ctrace)
#   ORACLE   where tests/lib/go_oracle/build.sh builds the Go oracle
#   WORKDIR  scratch and cache directory in the build tree
#   PROGRAM  trace writers run as `PROGRAM OUT` (ex_threads, ex_mn_runtime),
#            or, when named test_stress, as `STRESS_CYCLES=3 PROGRAM DIR`
#            (each trace it writes is checked)
#
# For every trace of Go 1.19's corpus (GOROOT/src/internal/trace/testdata)
# and every trace the programs write:
#   - the expected output is Go's: `go tool trace -d` for 1.7 and later, the
#     Go oracle (tests/lib/go_oracle: the same parser, without the refusal of 1.5
#     traces that come without their binary) for 1.5;
#   - if Go accepts the trace, `ctrace dump FILE` must print exactly Go's
#     stdout and exit 0, and `ctrace check FILE` must exit 0 printing one
#     line on stdout;
#   - if Go rejects it, `ctrace check FILE` must exit 1 and `ctrace dump
#     FILE` must fail, both with a message that contains Go's error text
#     (what follows "failed to parse trace: "). stress_1_5_unordered must be
#     rejected, with "time stamps out of order".
# The same holds for mutants of a few small traces of the corpus (cut at
# evenly spaced offsets, or with one byte changed; GOLDEN_MUTANTS of each,
# default 16), for the inputs the fuzzer found (fuzz/corpus/regress_*), and
# for traces Go 1.19 writes (tests/lib/gotrace.go.in, built here; with
# and without CPU samples).
# Also, for every 1.7+ trace of the corpus, the oracle must print exactly
# what `go tool trace -d` prints: that is what lets it stand in for Go on 1.5.
# Failures of traces listed in `known` below (known ctrace bugs) are
# reported and not counted.
#
# Go's order of events with equal timestamps on different Ps is not
# deterministic: order1007 (internal/trace/order.go) fills its frontier by
# iterating over a map of batches, and Go 1.19's own output for
# stress_start_stop_1_19_good differs from run to run (two GoStart/GoUnblock
# at 1013119 ns swap). So where the outputs differ, they are compared again
# with each run of lines of equal timestamp sorted; equal then is a pass,
# reported as such. Not for 1.5 traces, which Go orders by sequence number.
#
# Go's outputs for the corpus and the traces Go writes are cached in
# WORKDIR/cache, keyed by the file's hash and the go version, so reruns take
# seconds.
# Exit status: 0 pass, 1 failure, 2 usage error, 77 skip (no `ctrace dump`).

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

if [ $# -lt 3 ]; then
    echo "usage: $prog CTRACE ORACLE WORKDIR [PROGRAM...]" >&2
    exit 2
fi
ctrace=$1
oracle=$2
work=$3
# make check's sanitizer stages share the plain stage's Go outputs and Go
# builds (CTRACE_GO_WORK): only ctrace's side differs between them.
if [ -n "${CTRACE_GO_WORK:-}" ]; then work=$CTRACE_GO_WORK/${prog%.sh}; fi
shift 3

[ -x "$ctrace" ] || die "not an executable: $ctrace"
if ! "$ctrace" dump --help >/dev/null 2>&1 || ! "$ctrace" check --help >/dev/null 2>&1; then
    skip "$ctrace has no dump/check subcommand yet"
fi
command -v go >/dev/null 2>&1 || die "go not found on PATH (install golang-go)"

# Two runs may share WORKDIR (two ctest runs in one build tree): each has
# its own run directory; the cache is written by rename only.
work_dir "$work"
mkdir -p "$work/cache" "$run/gen"

go_env

trace_tool=$(go tool -n trace) || die "cannot locate 'go tool trace'"
[ -x "$trace_tool" ] || die "'go tool trace' binary not found: $trace_tool"
bash "$here/../lib/go_oracle/build.sh" "$oracle" || die "cannot build the Go oracle"
corpus=${GO_TRACE_TESTDATA:-$(go env GOROOT)/src/internal/trace/testdata}
[ -d "$corpus" ] || die "no Go trace corpus in $corpus"
govers=$(go version | sha256sum | cut -c1-12)

checked=0
SHOW=10


# indent FILE [LINES]: the first LINES lines of FILE, indented, to stderr.
indent() {
    if [ -s "$1" ]; then
        head -n "${2:-$SHOW}" "$1" | cut -c1-400 | sed 's/^/  | /' >&2
    else
        echo "  | (empty)" >&2
    fi
}

# is_15 FILE: the trace is of Go 1.5 (header "go 1.5 trace").
is_15() {
    [ "$(head -c 12 "$1")" = "go 1.5 trace" ]
}

# go_run TOOL FILE PREFIX: run Go's reader (TOOL is go or oracle) on FILE
# into PREFIX.out, PREFIX.err (the error text after "failed to parse
# trace: ", or empty) and PREFIX.rc.
go_run() {
    local tool=$1 file=$2 prefix=$3 rc=0 tmp=$run/go_run
    if [ "$tool" = go ]; then
        "$trace_tool" -d "$file" >"$tmp.out" 2>"$tmp.stderr" || rc=$?
    else
        "$oracle" "$file" >"$tmp.out" 2>"$tmp.stderr" || rc=$?
    fi
    sed -n 's/^failed to parse trace: //p' "$tmp.stderr" | head -n 1 >"$tmp.err"
    if [ "$rc" -ne 0 ] && [ ! -s "$tmp.err" ]; then
        echo "$prog: $tool on $file: exit $rc without a parse error:" >&2
        indent "$tmp.stderr"
        return 1
    fi
    echo "$rc" >"$tmp.rc"
    mv -f "$tmp.out" "$prefix.out"
    mv -f "$tmp.err" "$prefix.err"
    mv -f "$tmp.rc" "$prefix.rc"
}

# go_cached TOOL FILE: prints the prefix of Go's cached result for FILE.
go_cached() {
    local tool=$1 file=$2 prefix
    prefix=$work/cache/$(sha256sum <"$file" | cut -c1-40)-$govers-$tool
    if [ ! -f "$prefix.rc" ] || [ ! -f "$prefix.out" ]; then
        go_run "$tool" "$file" "$prefix" || return 1
    fi
    echo "$prefix"
}

# tie_sorted FILE: FILE with every run of lines of equal timestamp (the
# first field) sorted.
tie_sorted() {
    awk '{ if ($1 != prev) g++; prev = $1; printf "%010d %s\n", g, $0 }' "$1" \
        | LC_ALL=C sort | cut -d' ' -f2-
}

# first_diff EXPECTED GOT: the first differing line, numbered.
first_diff() {
    awk 'NR == FNR { want[FNR] = $0; n = FNR; next }
         { if (!(FNR in want) || want[FNR] != $0) {
               printf "  line %d\n  go:     %s\n  ctrace: %s\n", FNR,
                      (FNR in want) ? want[FNR] : "(end of output)", $0; found = 1; exit } }
         END { if (!found && FNR < n)
                   printf "  line %d\n  go:     %s\n  ctrace: (end of output)\n", FNR + 1, want[FNR + 1] }' \
        "$1" "$2" >&2
}

# same_output NAME EXPECTED GOT FILE: compare, tolerating Go's order of
# ties where that order is Go's map iteration (not 1.5). Prints a note
# when only the order of ties differs.
same_output() {
    local name=$1 want=$2 got=$3 file=$4
    if cmp -s "$want" "$got"; then
        return 0
    fi
    if ! is_15 "$file" && cmp -s <(tie_sorted "$want") <(tie_sorted "$got"); then
        echo "$prog: $name: equal up to the order of events with equal timestamps (Go's order of those is map order)"
        return 0
    fi
    return 1
}

# says_go_error GOERR FILE...: the files hold Go's error text GOERR. One
# exception: on a failed read inside an event, Go's readVal returns offset
# 0, so Go says "failed to read event N argument at offset 0 (...)" where
# ctrace names the real offset; that form is compared with numbers masked.
says_go_error() {
    local goerr=$1
    shift
    grep -qF -- "$goerr" "$@" && return 0
    case $goerr in
    "failed to read event "*" argument at offset 0 ("*)
        sed -E 's/0x[0-9a-fA-F]+/#/g; s/[0-9]+/#/g' "$@" \
            | has -F -- "$(sed -E 's/0x[0-9a-fA-F]+/#/g; s/[0-9]+/#/g' <<<"$goerr")"
        return
        ;;
    esac
    return 1
}

# Known ctrace bugs, by trace name: a failure there is reported as such
# and not counted; a pass says the bug is gone (then drop it here).
declare -A known=()
nknown=0

# check_trace NAME FILE PREFIX: compare ctrace with Go's result at PREFIX.
check_trace() {
    check_trace_ "$@"
    local name=$1
    [ -n "${known[$name]:-}" ] || return 0
    if [ "$failed" -gt "$failed0" ]; then
        echo "$prog: $name: KNOWN CTRACE BUG (not counted): ${known[$name]}"
        failed=$failed0
        nknown=$((nknown + 1))
    else
        echo "$prog: $name: known ctrace bug no longer seen, drop it from golden.sh: ${known[$name]}"
    fi
}

check_trace_() {
    local name=$1 file=$2 prefix=$3 rc_go rc=0 crc=0 goerr out=$run/$1
    failed0=$failed
    rc_go=$(cat "$prefix.rc")
    checked=$((checked + 1))
    "$ctrace" dump "$file" >"$out.dump" 2>"$out.dump.err" || rc=$?
    "$ctrace" check "$file" >"$out.check" 2>"$out.check.err" || crc=$?

    if [ "$rc_go" -eq 0 ]; then
        if [ "$rc" -ne 0 ]; then
            fail "$name" "Go accepts it, 'ctrace dump' exited $rc"
            indent "$out.dump.err"
        elif ! same_output "$name" "$prefix.out" "$out.dump" "$file"; then
            fail "$name" "'ctrace dump' differs from Go ($(wc -l <"$prefix.out") lines from Go, $(wc -l <"$out.dump") from ctrace)"
            first_diff "$prefix.out" "$out.dump"
            diff "$prefix.out" "$out.dump" | head -n 20 | sed 's/^/  | /' >&2 || true
        fi
        if [ "$crc" -ne 0 ]; then
            fail "$name" "Go accepts it, 'ctrace check' exited $crc"
            indent "$out.check.err"
        elif [ "$(wc -l <"$out.check")" -ne 1 ]; then
            fail "$name" "'ctrace check' printed $(wc -l <"$out.check") lines, not one summary line"
            indent "$out.check"
        elif ! grep -q "[^0-9]$(wc -l <"$prefix.out") events" "$out.check"; then
            fail "$name" "'ctrace check' does not count the $(wc -l <"$prefix.out") events Go prints"
            indent "$out.check"
        fi
        if [ "$failed" -eq "$failed0" ]; then
            echo "$prog: $name: ok ($(wc -l <"$prefix.out") events)"
        fi
        return
    fi

    goerr=$(cat "$prefix.err")
    if [ "$crc" -ne 1 ]; then
        fail "$name" "Go rejects it ($goerr), 'ctrace check' exited $crc (want 1)"
        indent "$out.check"
        indent "$out.check.err"
    elif ! says_go_error "$goerr" "$out.check" "$out.check.err"; then
        fail "$name" "'ctrace check' message lacks Go's error text"
        echo "  go:     $goerr" >&2
        echo "  ctrace: $(cat "$out.check" "$out.check.err" | head -n 3)" >&2
    fi
    if [ "$rc" -eq 0 ]; then
        fail "$name" "Go rejects it ($goerr), 'ctrace dump' exited 0"
    elif ! says_go_error "$goerr" "$out.dump.err"; then
        fail "$name" "'ctrace dump' message lacks Go's error text"
        echo "  go:     $goerr" >&2
        echo "  ctrace: $(head -n 3 "$out.dump.err")" >&2
    fi
    if [ "$failed" -eq "$failed0" ]; then
        echo "$prog: $name: rejected as by Go ($goerr)"
    fi
}

# --- Go's corpus -----------------------------------------------------------------

ncorpus=0
for file in "$corpus"/*; do
    [ -f "$file" ] || continue
    name=$(basename "$file")
    ncorpus=$((ncorpus + 1))
    if is_15 "$file"; then
        prefix=$(go_cached oracle "$file") || { fail "$name" "Go oracle failed"; continue; }
    else
        prefix=$(go_cached go "$file") || { fail "$name" "go tool trace failed"; continue; }
        # The oracle must print what `go tool trace -d` prints.
        oprefix=$(go_cached oracle "$file") || { fail "$name" "Go oracle failed"; continue; }
        if [ "$(cat "$prefix.rc")" != "$(cat "$oprefix.rc")" ] \
           || ! cmp -s "$prefix.err" "$oprefix.err" \
           || ! same_output "$name (oracle)" "$prefix.out" "$oprefix.out" "$file"; then
            fail "$name" "the Go oracle's output differs from 'go tool trace -d'"
            first_diff "$prefix.out" "$oprefix.out"
        fi
    fi
    case $name in
    stress_1_5_unordered)
        if [ "$(cat "$prefix.rc")" -eq 0 ] || [ "$(cat "$prefix.err")" != "time stamps out of order" ]; then
            fail "$name" "Go's oracle does not reject it with 'time stamps out of order': $(cat "$prefix.err")"
        fi
        ;;
    esac
    check_trace "$name" "$file" "$prefix"
done
[ "$ncorpus" -gt 0 ] || die "no traces in $corpus"

# --- mutants of small traces of the corpus ---------------------------------------
# MUTANTS (default 16) cuts at evenly spaced offsets after the header, and
# as many single-byte changes, of a few small traces (a 1.5 one included):
# whatever Go makes of each, ctrace must make the same (the same events or
# the same error).

nmut=${GOLDEN_MUTANTS:-16}
mkdir -p "$run/mutants"
vals=(00 ff 80 01 7f 25 c1 43 02 0e 41 9f)
for base in http_1_11_good user_task_region_1_19_good stress_start_stop_1_9_good http_1_5_good; do
    file=$corpus/$base
    [ -f "$file" ] || continue
    size=$(stat -c %s "$file")
    for i in $(seq 1 "$nmut"); do
        off=$((16 + (size - 16) * i / (nmut + 1)))
        for kind in cut byte; do
            m=$run/mutants/$base.$kind$i
            if [ "$kind" = cut ]; then
                head -c "$off" "$file" >"$m"
            else
                cp "$file" "$m"
                v=${vals[$((i % ${#vals[@]}))]}
                if [ "$(od -An -tx1 -j "$off" -N1 "$file" | tr -d ' ')" = "$v" ]; then
                    v=${vals[$(((i + 1) % ${#vals[@]}))]}
                fi
                printf "\\x$v" | dd of="$m" bs=1 seek="$off" conv=notrunc status=none
            fi
            prefix=$(go_cached oracle "$m") || { fail "$(basename "$m")" "Go oracle failed"; continue; }
            check_trace "$(basename "$m")" "$m" "$prefix"
        done
    done
done

# --- inputs the fuzzer found ------------------------------------------------------
# fuzz/corpus/regress_*: inputs that once broke the reader (fuzz/README.md);
# ctrace must make of each what Go makes of it.

for m in "$here/../../fuzz/corpus"/regress_*; do
    [ -f "$m" ] || continue
    prefix=$(go_cached oracle "$m") || { fail "$(basename "$m")" "Go oracle failed"; continue; }
    check_trace "$(basename "$m")" "$m" "$prefix"
done

# --- traces Go 1.19 writes --------------------------------------------------------
# tests/lib/gotrace.go.in, built here, traces itself with Go's runtime:
# once without and once with the CPU profiler (CPU samples in the trace).

gotrace=$(bash "$here/../lib/gotrace_build.sh" "$(command -v go)" "${CTRACE_GO_WORK:-$work}") ||
    die "cannot build $here/../lib/gotrace.go.in"
for mode in nocpu cpu; do
    file=$run/gen/go-$mode.trace
    bash "$here/../lib/gotrace_write.sh" "$gotrace" "$mode" "$file" >"$run/gen/go-$mode.log" 2>&1 \
        || { fail "go-$mode.trace" "gotrace exited non-zero"; indent "$run/gen/go-$mode.log"; continue; }
    prefix=$(go_cached go "$file") || { fail "go-$mode.trace" "go tool trace failed"; continue; }
    check_trace "go-$mode.trace" "$file" "$prefix"
done

# --- a trace read from a pipe ------------------------------------------------------
# `go tool trace -d /dev/stdin` reads a pipe as a stream; so must ctrace.

name=pipe:http_1_11_good
if [ -f "$corpus/http_1_11_good" ]; then
    prefix=$(go_cached go "$corpus/http_1_11_good") || fail "$name" "go tool trace failed"
    rc=0
    cat "$corpus/http_1_11_good" | "$ctrace" dump /dev/stdin >"$run/pipe.dump" 2>"$run/pipe.err" || rc=$?
    failed0=$failed
    checked=$((checked + 1))
    if [ "$rc" -ne 0 ]; then
        fail "$name" "'ctrace dump /dev/stdin' from a pipe exited $rc"
        indent "$run/pipe.err"
    elif ! cmp -s "$prefix.out" "$run/pipe.dump"; then
        fail "$name" "'ctrace dump /dev/stdin' from a pipe differs from Go"
        first_diff "$prefix.out" "$run/pipe.dump"
    else
        echo "$prog: $name: ok ($(wc -l <"$prefix.out") events)"
    fi
fi

# --- traces ctrace writes --------------------------------------------------------

for program in "$@"; do
    pname=$(basename "$program")
    if [ "$pname" = test_stress ]; then
        mkdir -p "$run/gen/stress"
        STRESS_CYCLES=${GOLDEN_STRESS_CYCLES:-3} "$program" "$run/gen/stress" >"$run/gen/stress.log" 2>&1 \
            || { fail "$pname" "exited non-zero"; indent "$run/gen/stress.log"; continue; }
        files=("$run/gen/stress"/*.trace)
    else
        "$program" "$run/gen/$pname.trace" >"$run/gen/$pname.log" 2>&1 \
            || { fail "$pname" "exited non-zero"; indent "$run/gen/$pname.log"; continue; }
        files=("$run/gen/$pname.trace")
    fi
    for file in "${files[@]}"; do
        name=$(basename "$file")
        [ "$pname" = test_stress ] && name=stress-$name
        prefix=$run/gen/$name.go
        go_run go "$file" "$prefix" || { fail "$name" "go tool trace failed"; continue; }
        if [ "$(cat "$prefix.rc")" -ne 0 ]; then
            fail "$name" "Go rejects a trace ctrace wrote: $(cat "$prefix.err")"
        fi
        check_trace "$name" "$file" "$prefix"
    done
done

if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed failure(s) in $checked trace(s); outputs kept in $run" >&2
    exit 1
fi
if [ "$nknown" -ne 0 ]; then
    echo "$prog: $checked trace(s) read as Go reads them, except $nknown with known ctrace bugs"
else
    echo "$prog: $checked trace(s) read as Go reads them"
fi
rm -rf "$run"
