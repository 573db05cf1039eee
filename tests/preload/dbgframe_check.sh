#!/usr/bin/env bash
# dbgframe_check.sh - stacks through code whose unwind rules are only in
# .debug_frame, against gdb's backtraces, pc for pc.
#
# Usage: tests/preload/dbgframe_check.sh CTRACE BINDIR OUTDIR
#
# run_dbgframe and its library librun_dbgframe_lib.so are built -O2
# -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables
# -g: .debug_frame (never mapped) holds their functions' CFI, .eh_frame
# only the C runtime's, and the library has no .eh_frame_hdr. Each runs
# under gdb (tests/preload/dbgframe_bt.py) as `ctrace run -v` runs it; at the
# shim's pthread_cond_wait (a thread, through the library and a callback
# back into the program) and pthread_join (main) gdb prints its
# backtrace, and the trace's GoBlockCond and GoBlockSync stacks must be
# the same pcs (gdb turns off address randomization: one process, one
# layout). Twice: as built (.debug_frame in the files), and stripped with
# their DWARF, compressed, in debug files named by .gnu_debuglink. The
# verbose lines must say where .debug_frame came from. With --unwind=fp
# the same stacks stop early (no frame pointers): printed, not checked.
# Skipped (77) without gdb (make test-deps installs it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "CTRACE BINDIR OUTDIR" $#
ctrace=$1 bindir=$2 out=$3
command -v gdb >/dev/null || skip "gdb not found"
fresh_dir "$out"

exe=$bindir/run_dbgframe
lib=$(cd "$bindir/../lib" && pwd)/librun_dbgframe_lib.so
[ -f "$lib" ] || fatal "no $lib"

# The premise: the functions' rules are in .debug_frame, not in .eh_frame.
readelf -lW "$lib" | has GNU_EH_FRAME && fatal "the library has .eh_frame_hdr"
for f in "$exe" "$lib"; do
    readelf -SW "$f" | has '\.debug_frame' || fatal "$f has no .debug_frame"
done
t1=$(nm "$exe" | awk '$3 == "t1" {print $1}')
[ -n "$t1" ] || fatal "no t1 in $exe"
# (Addresses as 16 hex digits, both: compared as strings.)
readelf --debug-dump=frames "$exe" | awk -v t1="x$t1" '
    /^Contents of the / { eh = /\.eh_frame / }
    eh && / FDE / { split($NF, r, "\\.\\."); sub("pc=", "", r[1])
                    if (t1 >= "x" r[1] && t1 < "x" r[2]) bad = 1 }
    END { exit bad }' || fatal ".eh_frame has an FDE for t1"

want_wait="wait_here c2 c1 lib_inner lib_entry t3 t2 t1 thread_start"
want_join="m3 m2 m1 main"

# Runs PROG under gdb and ctrace run in DIR, then holds the trace's stacks
# to gdb's. WANT_SOURCE: how the verbose lines must say .debug_frame came.
check() { # NAME PROG WANT_SOURCE
    local d=$out/$1 p=$2
    mkdir -p "$d"
    # (In a sanitized build: LeakSanitizer cannot run under a debugger.)
    DBGFRAME_BT_OUT=$d/gdb.bt ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        timeout -k 5 90 gdb -nx -batch -x "$here/dbgframe_bt.py" \
        --args "$ctrace" run -v -o "$d/t.trace" -- "$p" >"$d/gdb.out" 2>"$d/gdb.err" ||
        fatal "$1: gdb failed: $(tail -3 "$d/gdb.err")"
    grep -q "dbgframe done" "$d/gdb.out" || fatal "$1: the program did not finish"
    grep -q "unwind tables of $(readlink -f "$p"): .debug_frame from $3" "$d/gdb.err" ||
        fatal "$1: no verbose line for the program's .debug_frame from $3: $(grep 'unwind tables' "$d/gdb.err" || true)"
    grep -q "unwind tables of [^ ]*librun_dbgframe_lib.so: .debug_frame from $3" "$d/gdb.err" ||
        fatal "$1: no verbose line for the library's .debug_frame from $3"
    "$ctrace" check "$d/t.trace" >/dev/null || fatal "$1: ctrace check rejects the trace"
    "$bindir/run_stacks" -p "$d/t.trace" | grep ' GoBlock' >"$d/stacks" || true
    local what want gdbline pcs ev
    for what in wait join; do
        if [ $what = wait ]; then want=$want_wait ev=GoBlockCond; else want=$want_join ev=GoBlockSync; fi
        # gdb's own backtrace must go through the functions.
        gdbline=$(grep " | $want " "$d/gdb.bt" | head -1 || true)
        [ -n "$gdbline" ] || fatal "$1: gdb's backtraces lack '$want': $(cat "$d/gdb.bt")"
        pcs=$(echo "$gdbline" | awk -F' [|] ' '{print $2}')
        # The trace's stack: the shim's own pc, then exactly gdb's frames.
        if ! grep " $ev " "$d/stacks" | awk -F' [|] ' -v want="$pcs" '
                { n = split($2, a, " "); s = ""
                  for (i = 2; i <= n; i++) s = s (i > 2 ? " " : "") a[i]
                  if (s == want) found = 1 }
                END { exit !found }'; then
            echo "$prog: gdb ($what): $pcs" >&2
            grep " $ev " "$d/stacks" | sed "s/^/$prog: trace: /" >&2
            fatal "$1: no $ev stack equals gdb's backtrace"
        fi
        echo "$1: $ev: $(echo "$pcs" | wc -w) frames equal gdb's ($want ...)"
    done
}

check built "$exe" "the file"

# Stripped, the DWARF in debug files named by .gnu_debuglink (zlib-compressed
# sections, as Debian's -dbgsym files have them), no build id to find them
# by: the link's CRC is checked.
d=$out/stripped
mkdir -p "$d/.debug"
for f in "$exe" "$lib"; do
    b=$(basename "$f")
    objcopy --remove-section .note.gnu.build-id "$f" "$d/$b"
    objcopy --only-keep-debug --compress-debug-sections=zlib "$d/$b" "$d/.debug/$b.debug"
    strip --strip-debug "$d/$b"
    objcopy --add-gnu-debuglink="$d/.debug/$b.debug" "$d/$b"
    readelf -SW "$d/$b" | has '\.debug_frame' && fatal "$d/$b still has .debug_frame"
done
LD_LIBRARY_PATH=$d check stripped "$d/run_dbgframe" "its debug file (.gnu_debuglink)"
grep -q "unwind tables of $d/librun_dbgframe_lib.so" "$out/stripped/gdb.err" ||
    fatal "stripped: the library loaded is not the stripped one"

"$ctrace" run --unwind=fp -o "$out/fp.trace" -- "$exe" >/dev/null || fatal "fp: the program failed"
"$bindir/run_stacks" "$out/fp.trace" | grep -m1 GoBlockCond | sed 's/.*GoBlockCond/fp: GoBlockCond/' || true
echo "$prog: ok"
rm -rf "$out"
