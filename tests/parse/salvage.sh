#!/usr/bin/env bash
# salvage.sh - ctrace salvages Go 1.22 and 1.23 traces cut at every byte:
# what `ctrace check --salvage` keeps opens in Go 1.23 and holds the
# original's first generations, event for event.
#
# Usage: tests/parse/salvage.sh CTRACE TEST_SALVAGE ORACLE WORKDIR
#
#   CTRACE        the ctrace command (build/bin/ctrace)
#   TEST_SALVAGE  tests/parse/test_salvage.c, built
#   ORACLE        where tests/lib/go_oracle/build123.sh builds Go 1.23's reader
#                 (the one reader_golden122 builds: one build for both)
#   WORKDIR       scratch directory in the build tree
#
# The traces are tests/parse/gens-go1.22.trace and gens-go1.23.trace,
# written by Go 1.22's and Go 1.23's own runtime (tests/parse/gens.go.in):
# 4 generations each, CPU samples included, about 20 KB. For each:
#   1. Go's word on it: the oracle's -batches frames its batches with Go
#      1.23's readBatch, -prefixes says which batch boundaries Go reads the
#      trace cut at as a whole trace, and the original's dump is Go's.
#   2. test_salvage cuts it at every byte (SALVAGE_CUTS=N: N random ones
#      instead, seed SALVAGE_SEED) and holds ctrace_reader_salvage on each
#      cut to the rule, worked out there from Go's framing alone: every
#      generation followed by a batch of the next (or the header of one,
#      up to its generation number); the whole cut on a boundary Go reads;
#      nothing (an error with an offset) when no generation is whole. It
#      also checks each kept prefix against ctrace_reader_check's summary.
#   3. Each distinct kept prefix is checked as a file: `ctrace check`
#      accepts it, Go 1.23's reader accepts it and prints exactly what
#      `ctrace dump` prints, and that is the original's dump up to its N-th
#      Sync (its first N generations, event for event).
#   4. The command on a sample of the cuts (the first and last of each kind
#      of outcome, and the header): `ctrace check --salvage -o OUT` exits 0
#      with OUT exactly the kept bytes, the report and OUT's summary line,
#      or exits 1 with a byte offset and no file, no temporary one either;
#      `ctrace check --strict` on a cut inside a batch says the byte where
#      it is cut and, when something is left, suggests --salvage; `ctrace
#      check` reads what --salvage kept (one warning, exit 0, and `ctrace
#      dump` prints its events), or refuses with an offset if nothing.
# Then a few cases by hand: a corrupt generation before the cut (the ones
# before it are kept), zeros after whole generations, the output over the
# input, the default output name, bad usage, and the older formats (a Go
# 1.19 trace whole is kept as is; cut, it is refused with the reason).
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
. "$here/../lib/go_paths.sh"
want_args 4 "CTRACE TEST_SALVAGE ORACLE WORKDIR" $#
ctrace=$1
tsalv=$2
oracle=$3
work=$4
# make check's sanitizer stages share the plain stage's Go builds
# (CTRACE_GO_WORK), as reader_golden122 does, whose oracle this is.
if [ -n "${CTRACE_GO_WORK:-}" ]; then oracle=$CTRACE_GO_WORK/golden122/go123_oracle; fi
go123=$GO123
[ -x "$ctrace" ] || die "not an executable: $ctrace"
[ -x "$tsalv" ] || die "not an executable: $tsalv"
ctrace=$(cd "$(dirname "$ctrace")" && pwd)/$(basename "$ctrace")
[ -x "$go123" ] || die "no Go 1.23 at $go123 (make test-deps installs golang-1.23-go)"
work_dir "$work"
unset GOFLAGS
export GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0
home_writable "$work"
GO123=$go123 bash "$here/../lib/go_oracle/build123.sh" "$oracle" || die "cannot build the Go 1.23 oracle"

ncuts=0
nverified=0
ncli=0

# verify NAME FILE N [ORIG_DUMP SYNC_LINE]: FILE, a salvaged trace of N
# generations, reads in ctrace and in Go 1.23 alike; with ORIG_DUMP, its
# events are the original's up to its N-th Sync, on line SYNC_LINE.
verify() {
    local name=$1 f=$2 n=$3 odump=${4:-} upto=${5:-} rc=0
    nverified=$((nverified + 1))
    "$ctrace" check "$f" >"$run/v.check" 2>"$run/v.err" || rc=$?
    [ "$rc" -eq 0 ] || { fail "$name" "'ctrace check' rejects the salvaged trace"; indent "$run/v.err"; return; }
    grep -q " $n generations," "$run/v.check" || { fail "$name" "the salvaged trace has not $n generations: $(cat "$run/v.check")"; return; }
    rc=0
    "$oracle" "$f" >"$run/v.go" 2>"$run/v.goerr" || rc=$?
    [ "$rc" -eq 0 ] || { fail "$name" "Go 1.23 rejects the salvaged trace: $(head -n 1 "$run/v.goerr")"; return; }
    "$ctrace" dump "$f" >"$run/v.dump" 2>"$run/v.err" || { fail "$name" "'ctrace dump' fails"; indent "$run/v.err"; return; }
    cmp -s "$run/v.go" "$run/v.dump" || { fail "$name" "'ctrace dump' differs from Go 1.23's reader"; diff "$run/v.go" "$run/v.dump" | head -n 6 >&2 || true; return; }
    if [ -n "$odump" ]; then
        head -n "$upto" "$odump" >"$run/v.want"
        cmp -s "$run/v.want" "$run/v.dump" \
            || { fail "$name" "its events are not the original's first $n generations'"; diff "$run/v.want" "$run/v.dump" | head -n 6 >&2 || true; }
    fi
}

# cli NAME TRACE CUT RC KEEP N WHOLE TORN_AT: the command on TRACE cut at
# CUT, against what test_salvage found the rule keeps.
cli() {
    local name=$1 T=$2 c=$3 xrc=$4 keep=$5 n=$6 whole=$7 torn=$8 rc=0
    local cut=$run/cli/cut out=$run/cli/out/salvaged
    ncli=$((ncli + 1))
    rm -rf "$run/cli"
    mkdir -p "$run/cli/out"
    head -c "$c" "$T" >"$cut"
    "$ctrace" check --salvage -o "$out" "$cut" >"$run/cli/stdout" 2>"$run/cli/stderr" || rc=$?
    if [ "$xrc" -eq 1 ]; then
        if [ "$rc" -ne 1 ]; then
            fail "$name" "nothing is whole, yet --salvage exited $rc"; indent "$run/cli/stderr"
        elif ! grep -q "offset [0-9]*: " "$run/cli/stderr" || ! grep -q "nothing to salvage" "$run/cli/stderr"; then
            fail "$name" "no offset or no 'nothing to salvage' in the message"; indent "$run/cli/stderr"
        fi
        [ -z "$(ls -A "$run/cli/out")" ] || fail "$name" "files left behind: $(ls -A "$run/cli/out")"
    elif [ "$rc" -ne 0 ]; then
        fail "$name" "--salvage exited $rc, expected $n generation(s), $keep bytes"; indent "$run/cli/stderr"
    else
        [ "$(ls -A "$run/cli/out")" = salvaged ] || fail "$name" "files in the output's directory: $(ls -A "$run/cli/out")"
        cmp -s "$out" <(head -c "$keep" "$T") \
            || { fail "$name" "wrote $(stat -c %s "$out") bytes, expected $keep"; indent "$run/cli/stderr"; }
        grep -q "^$out: go 1.2[23] trace, .* $n generations," "$run/cli/stdout" \
            || fail "$name" "summary: $(cat "$run/cli/stdout"), expected $n generations"
        if [ "$whole" -eq 1 ]; then
            grep -q "^ctrace: $cut: reads to its end: kept whole, $n generation" "$run/cli/stderr" \
                || { fail "$name" "no 'kept whole' on stderr"; indent "$run/cli/stderr"; }
        elif ! grep -q "^ctrace: $cut: kept $n generations\?, bytes 0-$((keep - 1)) ($keep bytes)" "$run/cli/stderr" \
            || ! grep -q "^ctrace: $cut: dropped [1-9][0-9]* generations\? begun after" "$run/cli/stderr"; then
            fail "$name" "no 'kept $n' and 'dropped' on stderr"; indent "$run/cli/stderr"
        fi
    fi
    if [ "$torn" -ge 0 ]; then
        rc=0
        "$ctrace" check --strict "$cut" >/dev/null 2>"$run/cli/check.err" || rc=$?
        if [ "$rc" -ne 1 ] || ! grep -q "^ctrace: $cut: cut at byte $torn: " "$run/cli/check.err"; then
            fail "$name" "'ctrace check --strict' (exit $rc) does not say it is cut at byte $torn"; indent "$run/cli/check.err"
        elif [ "$xrc" -eq 0 ] && ! grep -q -- "--salvage $cut\` keeps its first $n generation" "$run/cli/check.err"; then
            fail "$name" "'ctrace check --strict' does not suggest --salvage"; indent "$run/cli/check.err"
        fi
        # Without --strict, check and dump read it as --salvage keeps it,
        # with one warning, or (nothing whole) refuse it with an offset.
        rc=0
        "$ctrace" check "$cut" >"$run/cli/lenient" 2>"$run/cli/lenient.err" || rc=$?
        if [ "$xrc" -eq 1 ]; then
            [ "$rc" -eq 1 ] && grep -q "^ctrace: $cut: offset [0-9]*: " "$run/cli/lenient.err" \
                || { fail "$name" "'ctrace check' of nothing whole exited $rc"; indent "$run/cli/lenient.err"; }
        elif [ "$rc" -ne 0 ]; then
            fail "$name" "'ctrace check' exited $rc on a cut --salvage keeps $n generation(s) of"; indent "$run/cli/lenient.err"
        elif [ "$(wc -l <"$run/cli/lenient.err")" -ne 1 ] \
            || ! grep -q "^ctrace: warning: $cut: cut short at byte $keep of $c (its writer was killed?): read the $n whole generations\? before it" "$run/cli/lenient.err"; then
            fail "$name" "'ctrace check' does not warn once of the cut at byte $keep"; indent "$run/cli/lenient.err"
        elif ! grep -q "^$cut: go 1.2[23] trace, .* $n generations," "$run/cli/lenient"; then
            fail "$name" "'ctrace check' sums up other than $n generations: $(cat "$run/cli/lenient")"
        elif ! cmp -s <("$ctrace" dump "$cut" 2>/dev/null) <("$ctrace" dump "$out"); then
            fail "$name" "'ctrace dump' of the cut prints other events than of what --salvage kept"
        fi
    fi
}

for T in "$here/gens-go1.22.trace" "$here/gens-go1.23.trace"; do
    tn=$(basename "$T" .trace)
    [ -f "$T" ] || die "missing $T"
    size=$(stat -c %s "$T")
    # 1. Go's framing, the boundaries Go reads a cut at, Go's events.
    "$oracle" -batches "$T" >"$run/$tn.batches" || die "$tn: the oracle cannot frame its batches"
    "$oracle" -prefixes "$T" >"$run/$tn.prefixes" || die "$tn: the oracle cannot read its prefixes"
    awk '$2 == "ok" { print $1 }' "$run/$tn.prefixes" >"$run/$tn.accepted"
    ng=$(awk '$1 != "end" { g[$3] = 1 } END { print length(g) }' "$run/$tn.batches")
    [ "$ng" -ge 3 ] || die "$tn: $ng generations, the test needs 3 or more"
    "$ctrace" dump "$T" >"$run/$tn.dump" || die "$tn: ctrace dump fails on the original"
    "$oracle" "$T" >"$run/$tn.go" || die "$tn: Go 1.23 rejects the original"
    cmp -s "$run/$tn.go" "$run/$tn.dump" || die "$tn: ctrace dump differs from Go 1.23 on the original"
    mapfile -t syncs < <(grep -n '^M=-1 P=-1 G=-1 Sync ' "$run/$tn.dump" | cut -d: -f1)
    [ "${#syncs[@]}" -eq "$ng" ] || die "$tn: ${#syncs[@]} Syncs for $ng generations"
    declare -A gen_boundary=()
    while read -r o _ _ _; do [ "$o" = end ] || gen_boundary[$o]=1; done \
        < <(awk '$1 != "end" && $3 != last { print; last = $3 }' "$run/$tn.batches")
    gen_boundary[$size]=1

    # 2. Every cut through the library.
    rc=0
    "$tsalv" "$T" "$run/$tn.batches" "$run/$tn.accepted" "$run/$tn.table" \
        ${SALVAGE_CUTS:-all} ${SALVAGE_SEED:-1} >"$run/$tn.kept" 2>"$run/$tn.tsalv" || rc=$?
    tail -n 1 "$run/$tn.tsalv"
    [ "$rc" -eq 0 ] || { fail "$tn" "test_salvage exited $rc"; indent "$run/$tn.tsalv" 20; }
    nt=$(wc -l <"$run/$tn.table")
    ncuts=$((ncuts + nt))

    # 3. Each kept prefix, as a file, in ctrace and in Go.
    while read -r keep n _; do
        head -c "$keep" "$T" >"$run/kept"
        if [ -n "${gen_boundary[$keep]:-}" ]; then
            verify "$tn:$keep" "$run/kept" "$n" "$run/$tn.dump" "${syncs[$((n - 1))]}"
        else
            # Go reads a cut inside a generation whole (never with these
            # traces: Go's writer writes a generation's strings last).
            verify "$tn:$keep" "$run/kept" "$n"
        fi
    done <"$run/$tn.kept"

    # 4. The command on a sample: the first and last cut of each outcome.
    while read -r c xrc keep n whole torn; do
        cli "$tn@$c" "$T" "$c" "$xrc" "$keep" "$n" "$whole" "$torn"
    done < <(awk '{ k = $2 " " $3 " " $5 " " ($6 < 0); if (!(k in first)) { first[k] = $0; order[++m] = k } last[k] = $0 }
                  $1 == 8 || $1 == 15 { print }
                  END { for (i = 1; i <= m; i++) { print first[order[i]]; if (last[order[i]] != first[order[i]]) print last[order[i]] } }' \
                 "$run/$tn.table")
    unset gen_boundary
    echo "$prog: $tn: $nt cut points, $ncli through the command so far, ${SECONDS}s"
done

# --- by hand --------------------------------------------------------------------------
T=$here/gens-go1.23.trace
mapfile -t g < <(awk '$1 != "end" && $3 != last { print $1 " " $2; last = $3 }' "$run/gens-go1.23.batches")
# g[k]: OFFSET END of generation k+1's first batch (Go's writer: the frequency).
read -r g2 g2end <<<"${g[1]}"
read -r g3 _ <<<"${g[2]}"
read -r g4 _ <<<"${g[3]}"

# A corrupt generation 2 (its frequency batch turned into an event batch:
# "no frequency event found") in a trace cut in generation 4: generation 1
# is kept, and the report says why 2 is not.
f=$run/corrupt
head -c $((g4 + 100)) "$T" >"$f"
[ "$(od -An -tu1 -j $((g2end - 5)) -N1 "$f" | tr -d ' ')" = 8 ] || die "generation 2 does not begin with its frequency"
printf '\x0a' | dd of="$f" bs=1 seek=$((g2end - 5)) conv=notrunc status=none
rc=0
"$ctrace" check --salvage -o "$run/corrupt.out" "$f" >/dev/null 2>"$run/corrupt.err" || rc=$?
if [ "$rc" -ne 0 ] || ! cmp -s "$run/corrupt.out" <(head -c "$g2" "$T") || ! grep -q "generation 2 does not read" "$run/corrupt.err"; then
    fail corrupt "expected generation 1 kept and generation 2 said not to read (exit $rc)"; indent "$run/corrupt.err"
fi
# Read as it stands, that is corruption, not a cut: an error at its offset.
rc=0
"$ctrace" check "$f" >/dev/null 2>"$run/corrupt.err" || rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "^ctrace: $f: offset $g2: no frequency event found" "$run/corrupt.err"; then
    fail corrupt "'ctrace check' exited $rc, expected 1 and generation 2's error"; indent "$run/corrupt.err"
fi

# Zeros after three whole generations (a file extended past what was
# written): the batches end there; the last generation begun is dropped.
f=$run/zeros
{ head -c "$g4" "$T"; head -c 4096 /dev/zero; } >"$f"
rc=0
"$ctrace" check --salvage -o "$run/zeros.out" "$f" >/dev/null 2>"$run/zeros.err" || rc=$?
if [ "$rc" -ne 0 ] || ! cmp -s "$run/zeros.out" <(head -c "$g3" "$T") || ! grep -q "its batches end at byte $g4: expected batch event, got 0" "$run/zeros.err"; then
    fail zeros "expected 2 generations kept and the batches said to end at byte $g4 (exit $rc)"; indent "$run/zeros.err"
fi
rc=0
"$ctrace" check "$f" >/dev/null 2>"$run/zeros.err" || rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "^ctrace: $f: offset $g4: expected batch event, got" "$run/zeros.err"; then
    fail zeros "'ctrace check' exited $rc, expected 1 and the bytes at $g4 said to be no batch"; indent "$run/zeros.err"
fi

# In place, and the default name.
f=$run/inplace
head -c $((g3 + 1000)) "$T" >"$f"
cp "$f" "$run/default"
rc=0
"$ctrace" check --salvage -o "$f" "$f" >/dev/null 2>"$run/inplace.err" || rc=$?
[ "$rc" -eq 0 ] && cmp -s "$f" <(head -c "$g3" "$T") || { fail in-place "the trace was not trimmed in place (exit $rc)"; indent "$run/inplace.err"; }
rc=0
(cd "$run" && "$ctrace" check --salvage default >/dev/null 2>default.err) || rc=$?
[ "$rc" -eq 0 ] && cmp -s "$run/default.salvaged" <(head -c "$g3" "$T") || { fail default-name "no default.salvaged (exit $rc)"; indent "$run/default.err"; }
rc=0
"$ctrace" check -o "$run/x" "$T" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail usage "-o without --salvage exited $rc, not 2"

# The older formats: kept whole when they read; cut, refused, with why.
O=$here/../../fuzz/corpus/go_stress_start_stop_1_19_good
rc=0
"$ctrace" check --salvage -o "$run/old.out" "$O" >/dev/null 2>"$run/old.err" || rc=$?
[ "$rc" -eq 0 ] && cmp -s "$run/old.out" "$O" || { fail old-whole "a valid Go 1.19 trace was not kept whole (exit $rc)"; indent "$run/old.err"; }
head -c $(($(stat -c %s "$O") / 2)) "$O" >"$run/old.cut"
rc=0
"$ctrace" check --salvage -o "$run/old.cut.out" "$run/old.cut" >/dev/null 2>"$run/old.err" || rc=$?
if [ "$rc" -ne 1 ] || [ -e "$run/old.cut.out" ] || ! grep -q "nothing to salvage: .* go 1.19 trace has no generations" "$run/old.err"; then
    fail old-cut "a cut Go 1.19 trace: exit $rc, expected 1 and the reason"; indent "$run/old.err"
fi

echo "$prog: ${SECONDS}s in all"
if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed failure(s) in $ncuts cut points; outputs kept in $run" >&2
    exit 1
fi
echo "$prog: $ncuts cut points salvaged as the rule says ($ncli through the command); the $nverified prefixes kept read in ctrace and Go 1.23 as the originals' first generations"
rm -rf "$run"
