#!/usr/bin/env bash
# cut_check.sh - every command reads a trace of Go's current format cut
# short (its writer killed) up to its last whole generation, and says so.
#
# Usage: tests/parse/cut_check.sh CTRACE GEN_TRACE WORKDIR
#
#   CTRACE     the ctrace command (build/bin/ctrace)
#   GEN_TRACE  bench_gen_trace (bench/gen_trace.c): a small server's trace,
#              written here with CTRACE_FORMAT=go1.22 and a generation
#              every 5 ms, until it has 3 or more
#   WORKDIR    scratch directory in the build tree
#
# Where its generations and batches begin is found with the command itself
# (`ctrace check --salvage` of the trace cut one byte short says where its
# last generation and its last batch begin). The trace is then cut
#   - inside its last batch: check, dump, stats, pprof and export exit 0,
#     each with one warning that names where the last generation begins
#     and the file's size; check sums up, and dump prints, exactly what
#     --salvage keeps (a file Go 1.23 opens, when it is installed);
#     check --strict and dump --strict refuse it, as Go does;
#   - between two batches of its last generation (before its frequency):
#     the same;
#   - exactly between two generations: read whole, without a warning
#     (nothing says more was to come);
#   - inside its header, and inside its first generation: errors, exit 1,
#     with the offset;
# and a generation made corrupt before a cut is an error at its offset,
# not a cut. Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "CTRACE GEN_TRACE WORKDIR" $#
ctrace=$1 gen=$2 work=$3
indent() { sed 's/^/  | /' "$1" >&2; }
fresh_dir "$work"
cd "$work"

# A trace of 3 or more generations: the writer ends one every 5 ms, the
# first once its stacks are symbolized; more megabytes until it has them.
T=$work/t.trace
n=0
for mb in 0.25 0.5 1 2 4 8 16 32; do
    CTRACE_FORMAT=go1.22 CTRACE_GEN_MS=5 "$gen" "$T" "$mb" >/dev/null 2>"$work/gen.err" ||
        { indent "$work/gen.err"; die "bench_gen_trace failed"; }
    sum=$("$ctrace" check --strict "$T") || die "ctrace check --strict refuses the trace bench_gen_trace wrote"
    n=$(sed -nE 's/.* ([0-9]+) generations,.*/\1/p' <<<"$sum")
    [ "$n" -lt 3 ] || break
done
[ "$n" -ge 3 ] || die "$n generations in a trace of $mb MB, the test needs 3"
size=$(stat -c %s "$T")
"$ctrace" dump --strict "$T" >"$work/t.dump" || die "ctrace dump --strict refuses the trace"

# Where the last generation and its last batch begin: the salvage of the
# trace cut one byte short keeps the generations before the last and says
# where the torn batch begins.
head -c $((size - 1)) "$T" >"$work/probe"
"$ctrace" check --salvage -o "$work/probe.out" "$work/probe" >/dev/null 2>"$work/probe.err" ||
    { indent "$work/probe.err"; die "--salvage of the trace cut one byte short failed"; }
glast=$(sed -nE 's/.*: kept [0-9]+ generations?, bytes 0-[0-9]+ \(([0-9]+) bytes\)$/\1/p' "$work/probe.err")
blast=$(sed -nE 's/.*: cut at byte ([0-9]+): .*/\1/p' "$work/probe.err")
[ -n "$glast" ] && [ -n "$blast" ] && [ "$blast" -gt "$glast" ] ||
    { indent "$work/probe.err"; die "no last generation and last batch in what --salvage said"; }
# The generation before the last begins where the salvage of the trace cut
# one byte before the last generation ends.
head -c $((glast - 1)) "$T" >"$work/probe"
"$ctrace" check --salvage -o "$work/probe.out" "$work/probe" >/dev/null 2>"$work/probe.err" ||
    { indent "$work/probe.err"; die "--salvage of the trace cut before its last generation failed"; }
gprev=$(sed -nE 's/.*: kept [0-9]+ generations?, bytes 0-[0-9]+ \(([0-9]+) bytes\)$/\1/p' "$work/probe.err")
[ -n "$gprev" ] && [ "$gprev" -lt "$glast" ] || { indent "$work/probe.err"; die "no generation before the last"; }
echo "$prog: $n generations, $size bytes; the last begins at byte $glast, its last batch at $blast"

# cut NAME BYTES WHY: the trace cut at BYTES, read by every command as
# cut short: the whole generations before byte $glast, one warning each,
# that WHY (a pattern) says why; --strict refuses it.
cut() {
    local name=$1 c=$2 why=$3 f=$work/$1.trace rc=0 k=$((n - 1))
    head -c "$c" "$T" >"$f"
    local warn="^ctrace: warning: $f: cut short at byte $glast of $c (its writer was killed?): read the $k whole generations before it, left out the last, incomplete one ($why)"
    "$ctrace" check "$f" >"$f.check" 2>"$f.check.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "$name" "check exited $rc"; indent "$f.check.err"
    elif [ "$(wc -l <"$f.check.err")" -ne 1 ] || ! grep -q "$warn; \`ctrace check --salvage $f\` writes them to a file Go's tools open$" "$f.check.err"; then
        fail "$name" "check's stderr is not the one warning expected"; indent "$f.check.err"
    elif ! grep -q "^$f: go 1.22 trace, .* $k generations," "$f.check"; then
        fail "$name" "check sums up other than $k generations: $(cat "$f.check")"
    fi
    # The events read are those of the salvaged trace, the trace's first
    # $glast bytes, and those of the original up to its k-th Sync.
    rc=0
    "$ctrace" check --salvage -o "$f.salvaged" "$f" >"$f.salvage" 2>"$f.salvage.err" || rc=$?
    [ "$rc" -eq 0 ] && cmp -s "$f.salvaged" <(head -c "$glast" "$T") ||
        { fail "$name" "--salvage exited $rc, or did not keep the first $glast bytes"; indent "$f.salvage.err"; }
    [ "$(sed 's/^[^:]*: //' "$f.check")" = "$(sed 's/^[^:]*: //' "$f.salvage")" ] ||
        fail "$name" "check read $(cat "$f.check"), --salvage kept $(cat "$f.salvage")"
    rc=0
    "$ctrace" dump "$f" >"$f.dump" 2>"$f.dump.err" || rc=$?
    if [ "$rc" -ne 0 ] || [ "$(wc -l <"$f.dump.err")" -ne 1 ] || ! grep -q "$warn$" "$f.dump.err"; then
        fail "$name" "dump exited $rc, or without the one warning"; indent "$f.dump.err"
    fi
    cmp -s "$f.dump" <("$ctrace" dump --strict "$f.salvaged") ||
        fail "$name" "dump prints other events than the dump of what --salvage kept"
    local syncs
    syncs=$(awk -v k="$k" '{ print } / Sync / && ++s == k { exit }' "$work/t.dump" | cmp -s - "$f.dump" && echo same)
    [ "$syncs" = same ] || fail "$name" "dump prints other events than the original's up to its Sync $k"
    # The other commands read it too, with the same one warning.
    local cmd
    for cmd in "stats" "pprof -t sync -o $f.pb" "export -o $f.pftrace"; do
        rc=0
        # shellcheck disable=SC2086 # the command's words
        "$ctrace" $cmd "$f" >/dev/null 2>"$f.cmd.err" || rc=$?
        if [ "$rc" -ne 0 ] || [ "$(wc -l <"$f.cmd.err")" -ne 1 ] || ! grep -q "$warn$" "$f.cmd.err"; then
            fail "$name" "ctrace ${cmd%% *} exited $rc, or without the one warning"; indent "$f.cmd.err"
        fi
    done
    # Go's verdict, with --strict: refused.
    rc=0
    "$ctrace" check --strict "$f" >/dev/null 2>"$f.strict.err" || rc=$?
    [ "$rc" -eq 1 ] && grep -q -- "--salvage $f\` keeps its first $k generations ($glast of $c bytes)" "$f.strict.err" ||
        { fail "$name" "check --strict exited $rc, or without the hint to salvage"; indent "$f.strict.err"; }
    rc=0
    "$ctrace" dump --strict "$f" >/dev/null 2>"$f.strict.err" || rc=$?
    [ "$rc" -eq 1 ] || { fail "$name" "dump --strict exited $rc, want 1"; indent "$f.strict.err"; }
    echo "$prog: $name: cut at byte $c of $size: read $k generations, as --salvage keeps them"
}

cut torn $((size - 1)) "the file ends [0-9]* bytes into the batch at byte $blast, of [0-9]* bytes"
cut between "$blast" "it ends with the file, between two batches, and does not read: no frequency event found"

# Exactly between two generations: a whole trace of the first n-1.
f=$work/boundary.trace
head -c "$glast" "$T" >"$f"
rc=0
"$ctrace" check "$f" >"$f.check" 2>"$f.check.err" || rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$f.check.err" ] && grep -q " $((n - 1)) generations," "$f.check" ||
    { fail boundary "check exited $rc, or warned, or read other than $((n - 1)) generations"; indent "$f.check.err"; }
rc=0
"$ctrace" dump "$f" >"$f.dump" 2>"$f.dump.err" || rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$f.dump.err" ] && cmp -s "$f.dump" "$work/torn.trace.dump" ||
    { fail boundary "dump exited $rc, or warned, or printed other events than of the torn cut"; indent "$f.dump.err"; }

# errs NAME BYTES PATTERN: the trace cut at BYTES is an error, exit 1, of
# every command, with its offset.
errs() {
    local name=$1 c=$2 pat=$3 f=$work/$1.trace rc cmd
    head -c "$c" "$T" >"$f"
    for cmd in check dump stats; do
        rc=0
        "$ctrace" "$cmd" "$f" >/dev/null 2>"$f.err" || rc=$?
        [ "$rc" -eq 1 ] && grep -q "^ctrace: $f: offset $pat" "$f.err" && ! grep -q warning "$f.err" ||
            { fail "$name" "ctrace $cmd exited $rc, or not with 'offset $pat'"; indent "$f.err"; }
    done
    echo "$prog: $name: cut at byte $c: refused"
}
errs header 10 "0: failed to read header"
errs first-generation 40 "16: cut short inside its first generation (begun at byte 16; the file has 40 bytes): the file ends"

# A corrupt generation before the cut (the batch that begins the one
# before the last made no batch at all): an error there, not a cut.
f=$work/corrupt.trace
head -c $((size - 1)) "$T" >"$f"
printf '\x7f' | dd of="$f" bs=1 seek="$gprev" conv=notrunc status=none
for cmd in check dump; do
    rc=0
    "$ctrace" "$cmd" "$f" >/dev/null 2>"$f.err" || rc=$?
    [ "$rc" -eq 1 ] && grep -q "^ctrace: $f: offset $gprev: expected batch event" "$f.err" && ! grep -q warning "$f.err" ||
        { fail corrupt "ctrace $cmd exited $rc, or not with the error at byte $gprev"; indent "$f.err"; }
done
echo "$prog: corrupt: a batch made no batch at byte $gprev, before the cut: refused there"

if [ "$failed" -ne 0 ]; then
    echo "$prog: $failed failure(s); outputs kept in $work" >&2
    exit 1
fi
echo "$prog: ok"
rm -rf "$work"
