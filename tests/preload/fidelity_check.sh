#!/usr/bin/env bash
# fidelity_check.sh - what a program reads and writes is the same traced
# and untraced, where the shim's tries without waiting could change it
# (src/preload/io.h, docs/run.md "Calls tried without waiting").
#
# Usage: tests/preload/fidelity_check.sh CTRACE BINDIR OUTDIR
#
# run_fidelity's cases (tests/preload/fidelity.c), then real programs on files
# whose page cache was dropped (GNU dd's iflag=nocache count=0 drops a
# file's pages, no root needed): tar archiving a file, dd reading it and
# /dev/zero, python3 copying a file with sendfile, file(1) reading a file
# opened O_NONBLOCK. Each runs untraced
# and under `ctrace run`; stdout, the files written and the exit status
# must be the same, and ctrace check must accept every trace.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

outdir_args "$@"
readonly LIMIT=120


# cold FILE: FILE's pages leave the page cache.
cold() {
    dd if="$1" iflag=nocache count=0 status=none
}

# both NAME CMD...: runs CMD untraced, then traced, in $out/NAME.{plain,traced}/
# (the working directory), stdout to out.txt there, after prep_NAME if
# defined; the two stdouts and exit statuses must match.
both() {
    local name=$1 st_plain=0 st_traced=0
    shift
    for mode in plain traced; do
        local dir="$out/$name.$mode"
        mkdir -p "$dir"
        if declare -F "prep_$name" >/dev/null; then (cd "$dir" && "prep_$name"); fi
        if [ $mode = plain ]; then
            (cd "$dir" && timeout -k 5 $LIMIT "$@" >out.txt 2>err.txt) || st_plain=$?
        else
            (cd "$dir" && timeout -k 5 $LIMIT "$ctrace" run -o "$out/$name.trace" -- "$@" \
                >out.txt 2>err.txt) || st_traced=$?
        fi
    done
    [ "$st_plain" -eq "$st_traced" ] ||
        fatal "$name: exit status $st_traced traced, $st_plain untraced; stderr: $(cat "$out/$name.traced/err.txt")"
    diff "$out/$name.plain/out.txt" "$out/$name.traced/out.txt" >&2 ||
        fatal "$name: stdout differs (< untraced, > traced)"
    "$ctrace" check "$out/$name.trace" >/dev/null || fatal "$name: ctrace check rejects the trace"
    echo "$prog: $name: same traced and untraced ($(wc -l <"$out/$name.plain/out.txt") lines)"
}

# ---- run_fidelity's own cases -----------------------------------------------------
both fidelity "$bindir/run_fidelity" .
grep -q '^cold read: 262144 errno=0 same=1' "$out/fidelity.plain/out.txt" ||
    fatal "fidelity: the untraced run did not read the whole cold file: $(cat "$out/fidelity.plain/out.txt")"

# ---- tar: a 48 MiB file, cold (a short read became "File shrank ... padding with zeros")
prep_tar() {
    head -c $((48 << 20)) /dev/urandom >big.bin
    sync big.bin
    cold big.bin
}
both tar sh -c 'tar cf archive.tar big.bin && tar xOf archive.tar | cmp - big.bin && echo archive whole'

# ---- dd: /dev/zero (RWF_NOWAIT stopped its reads early) and a cold file
prep_dd() {
    head -c $((32 << 20)) /dev/urandom >in.bin
    sync in.bin
    cold in.bin
}
both dd sh -c 'dd if=/dev/zero bs=1M count=100 2>&1 >/dev/null | grep records; dd if=in.bin of=copy.bin bs=1M 2>&1 | grep records; cmp in.bin copy.bin && echo copy whole'

# ---- python3's shutil.copyfile: one sendfile of a cold file (src/preload/
# transfer.c), the whole copy; and the trace shows its wait for the disk
# (before the shim knew sendfile, the copy was all execution)
prep_copy() {
    head -c $((48 << 20)) /dev/urandom >src.bin
    sync src.bin
    cold src.bin
}
# Whether the copy waits is said by a 1-byte probe of the file's first
# page as sendfile begins (RWF_NOWAIT). On this machine's virtual disk
# that probe finds a file made cold just before cached 3 times in 40
# (fincore said no page was), likely the readahead the probe itself
# starts, done before the read looks again; the copy then shows as all
# execution (a CI run's ASan stage met it). So up to five tries, each on
# a file made cold afresh: a shim that never shows the wait fails all.
for try in 1 2 3 4 5; do
    rm -rf "$out"/copy.*
    # python3 leaves its objects to the exit: in the ASan stage, whose shim
    # brings ASan into python3, LeakSanitizer would call them leaks (as
    # python_check.sh says).
    (
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        both copy python3 -c 'import shutil; shutil.copyfile("src.bin", "dst.bin"); print(open("src.bin", "rb").read() == open("dst.bin", "rb").read())'
    ) || exit 1
    grep -qx True "$out/copy.plain/out.txt" || fatal "copy: the untraced copy is not whole"
    blocked=$("$ctrace" stats --format=csv "$out/copy.trace" | awk -F, '
        /^start_function,/ { for (i = 1; i <= NF; i++) if ($i == "syscall_block_ns") c = i; next }
        c && /^$/ { c = 0 } c { s += $c } END { print s + 0 }')
    [ "$blocked" -gt 0 ] && break
    echo "$prog: copy: try $try: no time blocked in sendfile (the file's first page cached again?)" >&2
done
[ "$blocked" -gt 0 ] || fatal "copy: no time blocked in a system call in the trace (sendfile of a cold file), 5 tries"
echo "$prog: copy: $blocked ns blocked in sendfile"

# ---- file(1): opens with O_NONBLOCK; a cold file's read said EAGAIN
if command -v file >/dev/null; then
    prep_file() {
        { echo '#!/bin/sh'; head -c $((1 << 20)) /dev/zero | tr '\0' 'x'; } >script.sh
        head -c $((4 << 20)) /dev/urandom | gzip -1 >data.gz
        sync script.sh data.gz
        cold script.sh
        cold data.gz
    }
    both file file script.sh data.gz
else
    echo "$prog: file(1) not installed: skipped"
fi
rm -rf "$out"
