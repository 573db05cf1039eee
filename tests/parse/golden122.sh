#!/usr/bin/env bash
# golden122.sh - ctrace reads Go 1.22 and 1.23 traces (which Go 1.22 to 1.24
# write) as Go 1.23 reads them.
#
# Usage: tests/parse/golden122.sh CTRACE WORKDIR
#
#   CTRACE   the ctrace command (build/bin/ctrace)
#   WORKDIR  scratch and cache directory in the build tree
#
# Go 1.23 (GO123 and GO122, tests/lib/go_paths.sh) is the
# reference. Built here, at test time, never kept in the repository:
#   - the oracle (tests/lib/go_oracle/build123.sh): Go 1.23's internal/trace
#     reader printing what `go tool trace -d=1` prints, with its one source
#     of randomness (a walk over a map of threads, which orders events of
#     equal time differently from run to run) made the file order;
#   - Go's testdata/cmd/gotraceraw, to turn the text form of Go's test
#     cases into traces;
#   - tests/lib/gotrace.go.in, built with Go 1.22, 1.23 and 1.24.
# Then, for every trace:
#   1. Go's conformance cases (testdata/tests/*.test): ctrace check must
#      give the expected outcome (SUCCESS, or FAILURE with a message that
#      matches Go's pattern), `ctrace dump` print exactly the oracle's
#      output, and Go 1.23's own `go tool trace -d=1` agree with the
#      oracle on the outcome and on the lines up to their order and times.
#   2. Go's fuzz seeds (testdata/fuzz/FuzzReader, 1.22 headers), and the
#      inputs kept in fuzz/corpus/go12?_regress_*: check accepts exactly what
#      Go's reader accepts (the oracle's -q: Go's FuzzReader, reading
#      without printing), and where it rejects, says what Go says (the
#      first 60 characters of Go's message); dump prints what the oracle
#      prints, where Go's printing does not panic.
#   3. Traces Go 1.22, 1.23 and 1.24 write (with and without CPU samples, one
#      long enough to span generations): accepted; dump as the oracle;
#      `go tool trace -d=1` prints the same lines up to order and times.
#   4. Mutants (GOLDEN_MUTANTS cuts and as many one-byte changes, default
#      10, of a few of those traces): check accepts what Go accepts, dump
#      prints what the oracle prints.
#   5. Go 1.23's corpus of old-format traces (Go 1.11, 1.19, 1.21): dump
#      gives the events Go 1.23's parser of those formats gives.
# Go's outputs are cached in WORKDIR/cache by the file's hash.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 2 "CTRACE WORKDIR" $#
ctrace=$1
work=$2
# make check's sanitizer stages share the plain stage's Go outputs and Go
# builds (CTRACE_GO_WORK): only ctrace's side differs between them.
if [ -n "${CTRACE_GO_WORK:-}" ]; then work=$CTRACE_GO_WORK/${prog%.sh}; fi
. "$here/../lib/go_paths.sh"
go123=$GO123
go122=$GO122
[ -x "$ctrace" ] || die "not an executable: $ctrace"
[ -x "$go123" ] || die "no Go 1.23 at $go123 (make test-deps installs golang-1.23-go)"
[ -x "$go122" ] || die "no Go 1.22 at $go122 (make test-deps installs golang-1.22-go)"
[ -x "$GO124" ] || die "no Go 1.24 at $GO124 (make test-deps unpacks it: scripts/go-oracles.sh)"
work_dir "$work"
mkdir -p "$work/cache"
# The traces Go writes differ from run to run, and so do their keys: the
# end removes the entries this run did not use, or the cache grew by a
# few hundred megabytes a run (12 GB in one build tree).
touch "$run/cache.stamp"
# Go's build cache: under make check, the one of every Go build of the tests.
go_env "$work" "${CTRACE_GO_WORK:-$work}/gocache"
export GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0

root=$("$go123" env GOROOT)
gotool=$("$go123" env GOTOOLDIR)/trace
[ -x "$gotool" ] || die "no Go 1.23 trace tool at $gotool"
testdata=${GO_TRACE_TESTDATA_123:-$root/src/internal/trace/testdata}
[ -d "$testdata/tests" ] || die "no Go 1.23 trace testdata in $testdata"
oracle=$work/go123_oracle
GO123=$go123 bash "$here/../lib/go_oracle/build123.sh" "$oracle" || die "cannot build the Go 1.23 oracle"

# gotraceraw, from Go's own tree (it imports internal packages: it builds
# only there), into the work directory.
raw=$work/gotraceraw
rawkey=$( { "$go123" version; cat "$testdata/cmd/gotraceraw/main.go"; } | sha256sum | cut -c1-40)
exec 8>"$raw.lock"
flock 8
if [ ! -x "$raw" ] || [ "$(cat "$raw.key" 2>/dev/null)" != "$rawkey" ]; then
    (cd "$root/src" && "$go123" build -o "$raw.tmp" ./internal/trace/testdata/cmd/gotraceraw) \
        || die "cannot build Go's gotraceraw"
    mv -f "$raw.tmp" "$raw"
    echo "$rawkey" >"$raw.key"
fi
exec 8>&-

checked=0

# hash_of FILE: the cache key of FILE's results (the oracle's key and FILE).
hash_of() { { cat "$oracle.key"; cat "$1"; } | sha256sum | cut -c1-40; }

# oracle_cached MODE FILE [HASH]: prints the prefix of the oracle's cached result
# (PREFIX.out, .err, .rc); MODE is "print" or "q", or "go" for Go 1.23's
# own `go tool trace -d=1`.
oracle_cached() {
    local mode=$1 file=$2 prefix rc=0
    prefix=$work/cache/${3:-$(hash_of "$file")}-$mode
    if [ -f "$prefix.rc" ]; then
        touch "$prefix".* # used by this run: kept (the end prunes the rest)
    else
        if [ "$mode" = q ]; then
            "$oracle" -q "$file" >"$prefix.out.tmp" 2>"$prefix.err.tmp" || rc=$?
        elif [ "$mode" = go ]; then
            "$gotool" -d=1 "$file" >"$prefix.out.tmp" 2>"$prefix.err.tmp" || rc=$?
        else
            "$oracle" "$file" >"$prefix.out.tmp" 2>"$prefix.err.tmp" || rc=$?
        fi
        mv -f "$prefix.out.tmp" "$prefix.out"
        mv -f "$prefix.err.tmp" "$prefix.err"
        echo "$rc" >"$prefix.rc"
    fi
    echo "$prefix"
}

# compare NAME FILE [MUST_ACCEPT]: ctrace check and dump against the oracle.
# check: accepted (exit 0) exactly when Go's reader accepts; dump: the
# oracle's output, byte for byte, and exit status, unless Go's printing
# panicked (exit 2), where only what it printed before is compared. Both
# --strict: Go's verdict on a trace cut short, not ctrace's reading of it.
compare() {
    local name=$1 file=$2 must=${3:-} q p crc=0 drc=0 out=$run/cmp h
    h=$(hash_of "$file")
    q=$(oracle_cached q "$file" "$h")
    p=$(oracle_cached print "$file" "$h")
    checked=$((checked + 1))
    local f0=$failed goq
    goq=$(cat "$q.rc")
    "$ctrace" check --strict "$file" >"$out.check" 2>"$out.check.err" || crc=$?
    "$ctrace" dump --strict "$file" >"$out.dump" 2>"$out.dump.err" || drc=$?
    if [ "$goq" -eq 0 ] && [ "$crc" -ne 0 ]; then
        fail "$name" "Go accepts it, 'ctrace check' exited $crc"
        indent "$out.check.err"
    elif [ "$goq" -ne 0 ] && [ "$crc" -ne 1 ]; then
        fail "$name" "Go rejects it ($(head -n 1 "$q.err")), 'ctrace check' exited $crc"
    fi
    if [ "$goq" -ne 0 ] && [ "$crc" -eq 1 ] && ! grep -qF -- "$(head -n 1 "$q.err" | cut -c1-60)" "$out.check.err"; then
        fail "$name" "'ctrace check' lacks Go's error text"
        echo "  go:     $(head -n 1 "$q.err" | cut -c1-200)" >&2
        echo "  ctrace: $(head -n 1 "$out.check.err" | cut -c1-200)" >&2
    fi
    if [ -n "$must" ] && [ "$goq" -ne 0 ]; then
        fail "$name" "Go rejects a trace Go wrote: $(head -n 1 "$q.err")"
    fi
    local prc
    prc=$(cat "$p.rc")
    if [ "$prc" -le 1 ]; then
        if ! cmp -s "$p.out" "$out.dump"; then
            fail "$name" "'ctrace dump' differs from Go's output ($(wc -l <"$p.out") lines from Go, $(wc -l <"$out.dump") from ctrace)"
            diff "$p.out" "$out.dump" | head -n 12 | sed 's/^/  | /' >&2 || true
        elif [ "$prc" -ne "$drc" ]; then
            fail "$name" "Go's -d=1 exits $prc, 'ctrace dump' $drc"
            indent "$out.dump.err"
        fi
    else
        # Go panicked while printing: ctrace must print at least what Go
        # printed before the panic.
        local n
        n=$(wc -c <"$p.out")
        if ! cmp -s "$p.out" <(head -c "$n" "$out.dump"); then
            fail "$name" "'ctrace dump' differs from what Go printed before it panicked"
        fi
    fi
    if [ "$failed" -eq "$f0" ]; then
        if [ "$goq" -eq 0 ]; then
            echo "$prog: $name: ok ($(grep -c '^M=' "$out.dump" || true) events)"
        else
            echo "$prog: $name: rejected as by Go ($(head -n 1 "$q.err" | cut -c1-100))"
        fi
    fi
    return 0
}

# untimed FILE: the lines of FILE without their times, sorted. Go's order
# of events of equal time varies from run to run, and with it the times Go
# bumps to keep them increasing; what remains must be the same.
untimed() { sed -E 's/ Time=-?[0-9]+//' "$1" | LC_ALL=C sort; }

# --- 1. Go's conformance cases ----------------------------------------------------
mkdir -p "$run/tests"
ncases=0
nagree=0
for t in "$testdata"/tests/*.test; do
    name=$(basename "$t" .test)
    bin=$run/tests/$name.trace
    sed -n '/^-- trace --$/,$p' "$t" | tail -n +2 | "$raw" text2bytes >"$bin" 2>"$run/tests/$name.raw.err" \
        || { fail "$name" "gotraceraw text2bytes failed"; indent "$run/tests/$name.raw.err"; continue; }
    expect=$(sed -n '/^-- expect --$/{n;p;}' "$t")
    ncases=$((ncases + 1))
    f0=$failed
    compare "$name" "$bin"
    crc=0
    "$ctrace" check --strict "$bin" >/dev/null 2>"$run/tests/$name.check.err" || crc=$?
    case $expect in
    SUCCESS)
        [ "$crc" -eq 0 ] || { fail "$name" "expected SUCCESS, 'ctrace check' exited $crc"; indent "$run/tests/$name.check.err"; }
        ;;
    FAILURE*)
        pattern=$(sed -E 's/^FAILURE "(.*)"$/\1/' <<<"$expect")
        if [ "$crc" -ne 1 ]; then
            fail "$name" "expected $expect, 'ctrace check' exited $crc"
        elif ! grep -qE -- "$pattern" "$run/tests/$name.check.err"; then
            fail "$name" "expected $expect, ctrace says: $(cat "$run/tests/$name.check.err")"
        fi
        ;;
    *) fail "$name" "unknown expectation: $expect" ;;
    esac
    # Go 1.23's own tool must agree with the oracle, up to the order of lines.
    g=$(oracle_cached go "$bin")
    grc=$(cat "$g.rc")
    p=$(oracle_cached print "$bin")
    if [ "$grc" -ne "$(cat "$p.rc")" ] || ! cmp -s <(untimed "$g.out") <(untimed "$p.out"); then
        fail "$name" "the oracle differs from go tool trace -d=1 (exit $grc vs $(cat "$p.rc"))"
    fi
    [ "$failed" -eq "$f0" ] && nagree=$((nagree + 1))
done
[ "$ncases" -gt 0 ] || die "no test cases in $testdata/tests"
echo "$prog: Go's conformance cases: ctrace check agrees with the expected outcome on $nagree of $ncases"

echo "$prog: ${SECONDS}s so far"
# --- 2. Go's fuzz seeds -----------------------------------------------------------------
mkdir -p "$run/fuzz"
nseeds=0
for s in "$testdata"/fuzz/FuzzReader/*; do
    [ -f "$s" ] || continue
    name=seed-$(basename "$s")
    "$oracle" -unquote "$s" >"$run/fuzz/$name" || { fail "$name" "cannot decode the seed"; continue; }
    case $(head -c 16 "$run/fuzz/$name" | tr -d '\0') in
    "go 1.22 trace" | "go 1.23 trace") ;;
    *) echo "$prog: $name: an older format (Go 1.19's rules apply there: golden.sh)"; continue ;;
    esac
    nseeds=$((nseeds + 1))
    compare "$name" "$run/fuzz/$name"
done

# Inputs that once read differently from Go (fuzz/corpus/go12?_regress_*):
# found by mutating Go's traces, kept once fixed.
for m in "$here/../../fuzz/corpus"/go12?_regress_*; do
    [ -f "$m" ] || continue
    compare "$(basename "$m")" "$m"
done

echo "$prog: ${SECONDS}s so far"
# --- 3. traces Go 1.22, 1.23 and 1.24 write ----------------------------------------
# (Go 1.24 writes go 1.23 traces: Go 1.23's rules are theirs too.)
mkdir -p "$run/gen"
for go in "$go122" "$go123" "$GO124"; do
    bin=$(bash "$here/../lib/gotrace_build.sh" "$go" "${CTRACE_GO_WORK:-$work}") ||
        die "cannot build gotrace with $go"
    v=${bin##*-}
    for mode in nocpu cpu long; do
        file=$run/gen/go$v-$mode.trace
        bash "$here/../lib/gotrace_write.sh" "$bin" "$mode" "$file" >"$run/gen/go$v-$mode.log" 2>&1 \
            || { fail "go$v-$mode" "gotrace exited non-zero"; indent "$run/gen/go$v-$mode.log"; continue; }
        compare "go$v-$mode" "$file" must-accept
        # Go's own tool prints the same lines (in its order).
        g=$(oracle_cached go "$file")
        grc=$(cat "$g.rc")
        if [ "$grc" -ne 0 ] || ! cmp -s <(untimed "$g.out") <("$ctrace" dump "$file" | untimed /dev/stdin); then
            fail "go$v-$mode" "go tool trace -d=1 (exit $grc) prints other lines than ctrace dump"
        fi
        gens=$("$ctrace" check "$file" | sed -nE 's/.* ([0-9]+) generations.*/\1/p')
        echo "$prog: go$v-$mode: $gens generation(s)"
        if [ "$mode" = long ] && [ "${gens:-0}" -lt 2 ]; then
            fail "go$v-$mode" "the long trace has ${gens:-0} generation(s), wanted 2 or more"
        fi
    done
done

echo "$prog: ${SECONDS}s so far"
# --- 4. mutants -----------------------------------------------------------------------------
nmut=${GOLDEN_MUTANTS:-10}
mkdir -p "$run/mut"
vals=(00 ff 80 01 7f 19 0d 10 02 0e 41 9f 14 16)
for base in "$run/gen/go1.23-nocpu.trace" "$run/gen/go1.22-nocpu.trace" "$run/tests/go122-annotations.trace" \
            "$run/tests/go122-task-across-generations.trace"; do
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

# --- 5. the old formats, Go 1.11 to 1.21 ---------------------------------------------------
# Go 1.23's corpus of traces its old-format parser reads (internal/oldtrace/
# testdata: Go 1.11, 1.19 and 1.21): ctrace reads each into the same events
# as that parser, before its conversion to the new model (the oracle's
# -old): time, type, P and G (Go 1.19 and ctrace show GC and STW events on
# G 0, where it keeps the G), and each STW's kind. Compared sorted: that
# parser orders events of equal time otherwise than Go 1.19 and ctrace.
nold=0
for f in "$root"/src/internal/trace/internal/oldtrace/testdata/*_good; do
    [ -f "$f" ] || continue
    b=old-$(basename "$f")
    if ! "$oracle" -old "$f" >"$run/$b.go" 2>"$run/$b.goerr"; then
        fail "$b" "the oracle rejects it"; indent "$run/$b.goerr"; continue
    fi
    if ! "$ctrace" dump "$f" >"$run/$b.dump" 2>"$run/$b.err"; then
        fail "$b" "ctrace dump rejects it"; indent "$run/$b.err"; continue
    fi
    awk '$2 ~ /^GC(Start|Done|STWStart|STWDone)$/ { $4 = "g=0" }
         { print $1, $2, $3, $4, ($2 == "GCSTWStart" ? $5 : "") }' "$run/$b.go" | sort >"$run/$b.want"
    # The oracle's kind is Go 1.21's numbering, which came before as 0 and 1.
    v21=0
    [ "$(head -c 13 "$f")" = "go 1.21 trace" ] && v21=1
    awk -v v21="$v21" '{ k = ""
           if ($2 == "GCSTWStart") for (i = 5; i <= NF; i++) if ($i ~ /^kindid=/) k = "kind=" (substr($i, 8) + 1 - v21)
           print $1, $2, $3, $4, k }' "$run/$b.dump" | sort >"$run/$b.got"
    if ! diff -q "$run/$b.want" "$run/$b.got" >/dev/null; then
        fail "$b" "events differ from Go 1.23's old-format parser (< Go, > ctrace)"
        diff "$run/$b.want" "$run/$b.got" >"$run/$b.diff" || true
        indent "$run/$b.diff"
    fi
    nold=$((nold + 1))
    checked=$((checked + 1))
done
[ "$nold" -ge 9 ] || fail old-formats "only $nold traces in Go 1.23's old-format corpus"

echo "$prog: ${SECONDS}s in all"
if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed failure(s) in $checked trace(s); outputs kept in $run" >&2
    exit 1
fi
find "$work/cache" -type f ! -newer "$run/cache.stamp" -delete
echo "$prog: $checked trace(s) read as Go 1.23 reads them ($ncases conformance cases, $nseeds fuzz seeds, $nold old-format traces)"
rm -rf "$run"
