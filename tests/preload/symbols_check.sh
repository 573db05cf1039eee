#!/usr/bin/env bash
# symbols_check.sh - names in stacks of stripped programs, local files only.
#
# Usage: tests/preload/symbols_check.sh CTRACE BINDIR OUTDIR
#
# run_deep9 (static functions t1..t9, m1..m9, built without frame pointers)
# is stripped of every symbol in two ways, then run under `ctrace run -v`:
#   debuglink: its DWARF moved to .debug/prog.debug, named by
#              .gnu_debuglink (no build id), as objcopy makes it; libc's
#              frames in the same stacks are named from the debug file
#              Debian's libc6-dbg installs under /usr/lib/debug/.build-id;
#   minidebuginfo: its function symbols in an xz-compressed .gnu_debugdata
#              section (Fedora's MiniDebugInfo; skipped without xz).
# The stacks must still name t9 ... t1, and the verbose line must say where
# the names came from. Unwinding needs no symbols: .eh_frame stays. Then
# stripped bare: main and _start named all the same (below).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
outdir_args "$@"

check() { # NAME WANT_SOURCE
    local d=$out/$1
    "$ctrace" run -v -o "$d/t.trace" -- "$d/prog" >"$d/out" 2>"$d/err" || fatal "$1: the program failed"
    grep "symbols of $d/prog:" "$d/err" || fatal "$1: no verbose line for the program"
    grep -q "symbols of $d/prog: $2" "$d/err" || fatal "$1: symbols not from $2"
    "$bindir/run_stacks" "$d/t.trace" >"$d/stacks"
    grep GoBlockCond "$d/stacks" | has "t9 < t8 < t7 < t6 < t5 < t4 < t3 < t2 < t1" ||
        fatal "$1: the wait's stack lacks t9 ... t1: $(grep GoBlockCond "$d/stacks" | head -1)"
}

d=$out/debuglink
mkdir -p "$d/.debug"
cp "$bindir/run_deep9" "$d/prog.full"
objcopy --remove-section .note.gnu.build-id "$d/prog.full" "$d/prog"
objcopy --only-keep-debug "$d/prog" "$d/.debug/prog.debug"
strip --strip-all "$d/prog"
objcopy --add-gnu-debuglink="$d/.debug/prog.debug" "$d/prog"
check debuglink "DWARF from $d/.debug/prog.debug (.gnu_debuglink)"

# By build id: libc's frames in the same stacks, named from Debian's
# libc6-dbg (make test-deps installs it) under /usr/lib/debug/.build-id.
libc=$(sed -n 's/^ctrace: symbols of \([^:]*libc\.so\.6\): .*/\1/p' "$d/err" | head -1)
[ -n "$libc" ] || fatal "build id: no verbose line for libc"
id=$(readelf -n "$libc" | awk '/Build ID:/ {print $3; exit}')
dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
if [ -n "$id" ] && [ -f "$dbg" ]; then
    grep -q "symbols of $libc: DWARF from $dbg (build id)" "$d/err" ||
        fatal "build id: libc's symbols not from $dbg: $(grep "symbols of $libc" "$d/err")"
    echo "build id: libc's symbols from $dbg"
else
    echo "$prog: no $dbg (libc6-dbg): the build id path left out"
fi

if command -v xz >/dev/null; then
    d=$out/minidebuginfo
    mkdir -p "$d"
    cp "$bindir/run_deep9" "$d/prog"
    (
        cd "$d"
        nm -D prog --format=posix --defined-only | awk '{print $1}' | sort >dynsyms
        nm prog --format=posix --defined-only | awk '$2 ~ /^[TtD]$/ {print $1}' | sort >funcsyms
        comm -13 dynsyms funcsyms >keep
        objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep prog mini
        strip --strip-all -R .comment prog
        xz mini
        objcopy --add-section .gnu_debugdata=mini.xz prog
    )
    check minidebuginfo "MiniDebugInfo (.gnu_debugdata)"
else
    echo "$prog: xz not found: MiniDebugInfo left out"
fi
# Bare: stripped of every symbol, no debug file anywhere. Its functions
# are named by their address (prog+0x...), but for main, whose address
# the shim's __libc_start_main is handed, and _start, the entry point:
# .eh_frame_hdr bounds each. The main thread's creations read "... <
# main < ... < _start"; the wait's stack names no t-function (an address
# is no name to make up), and goroutine 1 starts at main in ctrace stats.
d=$out/bare
mkdir -p "$d"
cp "$bindir/run_deep9" "$d/prog"
strip --strip-all "$d/prog"
"$ctrace" run -o "$d/t.trace" -- "$d/prog" >"$d/out" 2>"$d/err" || fatal "bare: the program failed"
"$bindir/run_stacks" "$d/t.trace" >"$d/stacks"
# (an ASan build's own pthread_create comes between)
grep 'GoCreate .* g=1 .*| pthread_create < .*\bmain < ' "$d/stacks" | grep -q ' < _start$' ||
    fatal "bare: the main thread's creation is not pthread_create < main < ... < _start: $(grep 'GoCreate .* g=1 ' "$d/stacks" | head -1)"
wait=$(grep -m1 GoBlockCond "$d/stacks")
echo "$wait" | grep -q "< prog+0x[0-9a-f]* < prog+0x" && ! echo "$wait" | grep -qE "< (main|t[0-9]) <" ||
    fatal "bare: the thread's wait names what the program does not: $wait"
"$ctrace" stats "$d/t.trace" | awk '/^Goroutines by/ { on = 1; getline; next } on { print $1; exit }' | grep -qx main ||
    fatal "bare: the first goroutine does not start at main: $("$ctrace" stats "$d/t.trace" | sed -n '/^Goroutines by/,+3p')"
echo "bare: main and _start named, the rest by address"

echo "$prog: ok"
rm -rf "$out"
