#!/usr/bin/env bash
# golden127.sh - ctrace reads the traces Go 1.25, 1.26 and 1.27 write
# (headers go 1.25 and go 1.26) as Go 1.27 reads them.
#
# Usage: tests/parse/golden127.sh CTRACE WORKDIR
#
#   CTRACE   the ctrace command (build/bin/ctrace)
#   WORKDIR  scratch and cache directory in the build tree
#
# Go 1.27 (GO127, tests/lib/go_paths.sh; Go 1.26 likewise) is the reference: its
# `go tool trace -d=parsed` is the oracle as it is, for Go 1.27's reader
# keeps each generation's threads in the order of their first batch, where
# Go 1.23's walked a map (golden122.sh builds an oracle to fix that). For
# every trace:
#   1. Go 1.27's conformance cases of go 1.25 and later (its
#      testdata/tests/go125-*.test; the go122 and go123 ones are Go 1.23's
#      to judge, golden122.sh): the expected outcome, and `ctrace dump`
#      prints exactly what Go prints, with the same exit status.
#   2. Traces Go 1.26 and Go 1.27 write (tests/lib/gotrace.go.in: with
#      and without CPU samples, one spanning generations, and each of those
#      with GOMAXPROCS=1 as well as 2): accepted, and dump prints exactly
#      what Go prints.
#   3. Mutants (GOLDEN_MUTANTS cuts and as many one-byte changes, default
#      10, of a few of those): check accepts what Go accepts, says what Go
#      says where it rejects, and dump prints what Go prints before it
#      (where Go's printing panics, what it printed before the panic).
# Go's outputs are cached in WORKDIR/cache by the file's hash.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 2 "CTRACE WORKDIR" $#
ctrace=$1
work=$2
. "$here/../lib/go_paths.sh"
# make check's sanitizer stages share the plain stage's Go outputs and Go
# builds (CTRACE_GO_WORK): only ctrace's side differs between them.
if [ -n "${CTRACE_GO_WORK:-}" ]; then work=$CTRACE_GO_WORK/${prog%.sh}; fi
[ -x "$ctrace" ] || die "not an executable: $ctrace"
for go in "$GO126" "$GO127"; do
    [ -x "$go" ] || die "no Go at $go (make test-deps unpacks Go 1.26 and 1.27: scripts/go-oracles.sh)"
done
work_dir "$work"
mkdir -p "$work/cache"
# The traces Go writes differ from run to run, and so do their keys: the
# end removes the entries this run did not use, or the cache grew by a
# few hundred megabytes a run (12 GB in one build tree).
touch "$run/cache.stamp"
go_env "$work" "${CTRACE_GO_WORK:-$work}/gocache"
export GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0

root=$("$GO127" env GOROOT)
gotool=$(go_trace_tool "$GO127") || die "cannot build Go 1.27's trace tool"
[ -x "$gotool" ] || die "no Go 1.27 trace tool at $gotool"
testdata=$root/src/internal/trace/testdata
[ -d "$testdata/tests" ] || die "no Go 1.27 trace testdata in $testdata"
raw=$work/rawtext127
bash "$here/../lib/go_oracle/build127.sh" "$raw" || die "cannot build rawtext127"
gokey=$( { "$GO127" version; sha256sum <"$gotool"; } | sha256sum | cut -c1-40)

checked=0

# go_cached FILE: the prefix of Go 1.27's cached `-d=parsed` of FILE
# (PREFIX.out, .err, .rc).
go_cached() {
    local file=$1 prefix rc=0
    prefix=$work/cache/$( { echo "$gokey"; cat "$file"; } | sha256sum | cut -c1-40)
    if [ -f "$prefix.rc" ]; then
        touch "$prefix".* # used by this run: kept (the end prunes the rest)
    else
        "$gotool" -d=parsed "$file" >"$prefix.out.tmp" 2>"$prefix.err.tmp" || rc=$?
        mv -f "$prefix.out.tmp" "$prefix.out"
        mv -f "$prefix.err.tmp" "$prefix.err"
        echo "$rc" >"$prefix.rc"
    fi
    echo "$prefix"
}

# compare NAME FILE [MUST_ACCEPT]: ctrace check and dump against Go 1.27.
# check: accepted exactly when Go accepts, and in Go's words where not;
# dump: Go's output byte for byte, and its exit status. Both --strict:
# Go's verdict on a trace cut short, not ctrace's reading of it.
compare() {
    local name=$1 file=$2 must=${3:-} g grc crc=0 drc=0 out=$run/cmp f0=$failed
    g=$(go_cached "$file")
    grc=$(cat "$g.rc")
    checked=$((checked + 1))
    "$ctrace" check --strict "$file" >"$out.check" 2>"$out.check.err" || crc=$?
    "$ctrace" dump --strict "$file" >"$out.dump" 2>"$out.dump.err" || drc=$?
    if [ "$grc" -eq 2 ]; then
        # Go panicked while printing (a mutant's status out of its table):
        # what it printed before must be what ctrace prints first.
        if ! cmp -s "$g.out" <(head -c "$(wc -c <"$g.out")" "$out.dump"); then
            fail "$name" "'ctrace dump' differs from what Go printed before it panicked"
        else
            echo "$prog: $name: as Go printed it before it panicked ($(grep -m1 '^panic' "$g.err" | cut -c1-80))"
        fi
        return 0
    fi
    if [ "$grc" -eq 0 ] && [ "$crc" -ne 0 ]; then
        fail "$name" "Go accepts it, 'ctrace check' exited $crc"
        indent "$out.check.err"
    elif [ "$grc" -ne 0 ] && [ "$crc" -ne 1 ]; then
        fail "$name" "Go rejects it ($(head -n 1 "$g.err")), 'ctrace check' exited $crc"
    elif [ "$grc" -ne 0 ] && ! grep -qF -- "$(head -n 1 "$g.err" | cut -c1-60)" "$out.check.err"; then
        fail "$name" "'ctrace check' lacks Go's error text"
        echo "  go:     $(head -n 1 "$g.err" | cut -c1-200)" >&2
        echo "  ctrace: $(head -n 1 "$out.check.err" | cut -c1-200)" >&2
    fi
    if [ -n "$must" ] && [ "$grc" -ne 0 ]; then
        fail "$name" "Go rejects a trace Go wrote: $(head -n 1 "$g.err")"
    fi
    if ! cmp -s "$g.out" "$out.dump"; then
        fail "$name" "'ctrace dump' differs from Go 1.27's -d=parsed ($(wc -l <"$g.out") lines from Go, $(wc -l <"$out.dump") from ctrace)"
        diff "$g.out" "$out.dump" | head -n 12 | sed 's/^/  | /' >&2 || true
    elif [ "$grc" -ne "$drc" ]; then
        fail "$name" "Go's -d=parsed exits $grc, 'ctrace dump' $drc"
        indent "$out.dump.err"
    fi
    if [ "$failed" -eq "$f0" ]; then
        if [ "$grc" -eq 0 ]; then
            echo "$prog: $name: ok ($(grep -c '^M=' "$out.dump" || true) events)"
        else
            echo "$prog: $name: rejected as by Go ($(head -n 1 "$g.err" | cut -c1-100))"
        fi
    fi
    return 0
}

# --- 1. Go 1.27's conformance cases of go 1.25 and later ---------------------------
mkdir -p "$run/tests"
ncases=0
for t in "$testdata"/tests/*.test; do
    name=$(basename "$t" .test)
    case $(sed -n '/^-- trace --$/{n;p;}' "$t") in
    "Trace Go1.22" | "Trace Go1.23") continue ;; # Go 1.23's rules: golden122.sh
    esac
    bin=$run/tests/$name.trace
    sed -n '/^-- trace --$/,$p' "$t" | tail -n +2 | "$raw" >"$bin" 2>"$run/tests/$name.raw.err" \
        || { fail "$name" "rawtext127 failed"; indent "$run/tests/$name.raw.err"; continue; }
    expect=$(sed -n '/^-- expect --$/{n;p;}' "$t")
    ncases=$((ncases + 1))
    compare "$name" "$bin"
    crc=0
    "$ctrace" check --strict "$bin" >/dev/null 2>"$run/tests/$name.check.err" || crc=$?
    case $expect in
    SUCCESS)
        [ "$crc" -eq 0 ] || { fail "$name" "expected SUCCESS, 'ctrace check' exited $crc"; indent "$run/tests/$name.check.err"; }
        ;;
    FAILURE*)
        pattern=$(sed -E 's/^FAILURE "(.*)"$/\1/' <<<"$expect")
        if [ "$crc" -ne 1 ] || ! grep -qE -- "$pattern" "$run/tests/$name.check.err"; then
            fail "$name" "expected $expect, 'ctrace check' exited $crc: $(cat "$run/tests/$name.check.err")"
        fi
        ;;
    *) fail "$name" "unknown expectation: $expect" ;;
    esac
done
[ "$ncases" -gt 0 ] || die "no go 1.25+ test cases in $testdata/tests"

# --- 2. traces Go 1.26 and 1.27 write ---------------------------------------------------
mkdir -p "$run/gen"
for go in "$GO126" "$GO127"; do
    bin=$(bash "$here/../lib/gotrace_build.sh" "$go" "${CTRACE_GO_WORK:-$work}") ||
        die "cannot build gotrace with $go"
    v=${bin##*-}
    for mode in nocpu cpu long nocpu-p1 cpu-p1 long-p1; do
        file=$run/gen/go$v-$mode.trace
        bash "$here/../lib/gotrace_write.sh" "$bin" "$mode" "$file" >"$run/gen/go$v-$mode.log" 2>&1 \
            || { fail "go$v-$mode" "gotrace exited non-zero"; indent "$run/gen/go$v-$mode.log"; continue; }
        case $(head -c 16 "$file" | tr -d '\0') in
        "go 1.26 trace") ;;
        *) fail "go$v-$mode" "Go $v wrote a $(head -c 16 "$file" | tr -d '\0'), not a go 1.26 trace" ;;
        esac
        compare "go$v-$mode" "$file" must-accept
        gens=$("$ctrace" check "$file" | sed -nE 's/.* ([0-9]+) generations.*/\1/p')
        procs=$("$ctrace" check "$file" | sed -nE 's/.* ([0-9]+) Ps.*/\1/p')
        echo "$prog: go$v-$mode: $gens generation(s), $procs P(s)"
        case $mode in
        long*) [ "${gens:-0}" -ge 2 ] || fail "go$v-$mode" "the long trace has ${gens:-0} generation(s), wanted 2 or more" ;;
        esac
        case $mode in
        *-p1) [ "${procs:-0}" -eq 1 ] || fail "go$v-$mode" "GOMAXPROCS=1 gave $procs Ps" ;;
        esac
    done
done

# --- 3. mutants ---------------------------------------------------------------------------
nmut=${GOLDEN_MUTANTS:-10}
mkdir -p "$run/mut"
vals=(00 ff 80 01 7f 19 0d 10 02 0e 41 9f 14 34 33 32)
for base in "$run/gen/go1.27-nocpu.trace" "$run/gen/go1.26-nocpu-p1.trace" "$run/tests/go125-sync.trace"; do
    [ -f "$base" ] || continue
    size=$(stat -c %s "$base")
    b=$(basename "$base" .trace)
    for i in $(seq 1 "$nmut"); do
        off=$((16 + (size - 16) * i / (nmut + 1)))
        for kind in cut byte; do
            m=$run/mut/$b.$kind$i
            if [ "$kind" = cut ]; then
                head -c "$off" "$base" >"$m"
            else
                cp "$base" "$m"
                v=${vals[$((i % ${#vals[@]}))]}
                if [ "$(od -An -tx1 -j "$off" -N1 "$base" | tr -d ' ')" = "$v" ]; then
                    v=${vals[$(((i + 1) % ${#vals[@]}))]}
                fi
                printf "\\x$v" | dd of="$m" bs=1 seek="$off" conv=notrunc status=none
            fi
            compare "$b.$kind$i" "$m"
        done
    done
done

echo "$prog: ${SECONDS}s in all"
if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed failure(s) in $checked trace(s); outputs kept in $run" >&2
    exit 1
fi
find "$work/cache" -type f ! -newer "$run/cache.stamp" -delete
echo "$prog: $checked trace(s) read as Go 1.27 reads them ($ncases conformance cases)"
rm -rf "$run"
