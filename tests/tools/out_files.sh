#!/usr/bin/env bash
# out_files.sh - what the commands that write a file (-o OUT) leave there.
#
# Usage: tests/tools/out_files.sh CTRACE EX_THREADS DIR
#
# ctrace pprof (-t wall writes its profile as it is built), export and
# check --salvage write a regular file whole or
# not at all, beside its name and renamed over it, with the mode a plain
# create gives under the umask, and leave nothing beside it. Any other
# OUT (a FIFO here, and a symlink to one: /dev/null is the same case, not
# tried on the machine's own) is written where it is, and stays what it
# was: a rename over it would replace the device itself (it once replaced
# /dev/null). ctrace run -o DEVICE with a followed exec leaves it too.
# A command that fails leaves the file it was to replace as it was; one
# ended by SIGTERM as it was about to rename leaves nothing.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "CTRACE EX_THREADS DIR" $#
ctrace=$1 ex=$2 dir=$3
fresh_dir "$dir"
trace=$dir/t.trace
"$ex" "$trace" >/dev/null 2>&1 || fatal "ex_threads did not write a trace"
umask 022

# NAME|ARGS, OUT where @OUT@ stands.
cmds=(
    "pprof|pprof -t sync -o @OUT@ $trace"
    "pprof-wall|pprof -t wall -o @OUT@ $trace"
    "export|export -o @OUT@ $trace"
    "salvage|check --salvage -o @OUT@ $trace"
)
# run ARGS OUT: ctrace ARGS, OUT for @OUT@.
run() {
    local line=${1//@OUT@/$2}
    # shellcheck disable=SC2086
    "$ctrace" $line >/dev/null 2>"$dir/err"
}

for c in "${cmds[@]}"; do
    name=${c%%|*} line=${c#*|}
    # A regular file: replaced whole, mode 644 under umask 022, nothing left beside.
    echo old >"$dir/$name.reg"
    chmod 600 "$dir/$name.reg"
    run "$line" "$dir/$name.reg" || fatal "$name: -o a regular file: $(cat "$dir/err")"
    [ -s "$dir/$name.reg" ] && [ "$(head -c 3 "$dir/$name.reg")" != old ] ||
        fatal "$name: the regular file was not written"
    [ "$(stat -c %a "$dir/$name.reg")" = 644 ] ||
        fatal "$name: the file's mode is $(stat -c %a "$dir/$name.reg"), not 644 under umask 022"
    ls -A "$dir" | has '\.ctrace-' && fatal "$name: left $(ls -A "$dir" | grep '\.ctrace-')"

    # A FIFO, and a symlink to one: written in place, still a FIFO and a
    # symlink, and what came through is what the regular file holds.
    for kind in fifo link; do
        rm -f "$dir/$name.fifo" "$dir/$name.link"
        mkfifo "$dir/$name.fifo"
        out=$dir/$name.fifo
        [ "$kind" = link ] && ln -s "$name.fifo" "$dir/$name.link" && out=$dir/$name.link
        cat "$dir/$name.fifo" >"$dir/$name.got" &
        reader=$!
        run "$line" "$out" || { kill "$reader" 2>/dev/null; fatal "$name: -o a $kind: $(cat "$dir/err")"; }
        wait "$reader"
        [ -p "$dir/$name.fifo" ] || fatal "$name: the FIFO is no longer one after -o $kind"
        [ "$kind" = fifo ] || [ -L "$dir/$name.link" ] || fatal "$name: the symlink is no longer one"
        cmp -s "$dir/$name.got" "$dir/$name.reg" || fatal "$name: the $kind got other bytes than the file"
    done
    ls -A "$dir" | has '\.ctrace-' && fatal "$name: left $(ls -A "$dir" | grep '\.ctrace-')"

    # SIGTERM at the last moment before the file is put in place (gdb
    # stops the command at its rename and delivers it): the command dies
    # of it, and leaves neither the file nor anything beside it.
    rm -f "$dir/$name.sig"
    gdb -q -batch -ex 'set breakpoint pending on' -ex 'break rename' -ex "run ${line//@OUT@/$dir/$name.sig}" \
        -ex 'signal SIGTERM' --args "$ctrace" >"$dir/gdb" 2>&1 || true
    grep -q 'Breakpoint 1[.0-9]*, .*rename' "$dir/gdb" && grep -q 'signal SIGTERM, Terminated' "$dir/gdb" ||
        fatal "$name: gdb did not stop it at rename and end it with SIGTERM: $(tail -5 "$dir/gdb")"
    [ ! -e "$dir/$name.sig" ] || fatal "$name: SIGTERM before the rename left the file"
    ls -A "$dir" | has '\.ctrace-' && fatal "$name: SIGTERM before the rename left $(ls -A "$dir" | grep '\.ctrace-')"

    # A command that fails (no such trace) leaves the file as it was.
    echo keep >"$dir/$name.keep"
    line=${line%"$trace"}$dir/missing.trace
    run "$line" "$dir/$name.keep" && fatal "$name: succeeded on a missing trace"
    [ "$(cat "$dir/$name.keep")" = keep ] || fatal "$name: a failed command changed its OUT"
done

# A device, made here (/dev/null's numbers; root only): every command
# writes into it and leaves it a device; so does ctrace run of a program
# that execs another (the first image's trace moves aside as OUT.1 only
# where OUT is a regular file).
if mknod "$dir/null" c 1 3 2>/dev/null; then
    for c in "${cmds[@]}"; do
        run "${c#*|}" "$dir/null" || fatal "${c%%|*}: -o a device: $(cat "$dir/err")"
        [ -c "$dir/null" ] || fatal "${c%%|*}: the device is no longer one"
    done
    "$ctrace" run -o "$dir/null" -- sh -c 'exec true' >/dev/null 2>"$dir/err" ||
        fatal "run: -o a device: $(cat "$dir/err")"
    [ -c "$dir/null" ] && [ ! -e "$dir/null.1" ] || fatal "run: the device was moved aside"
    devices="; a device stays one"
else
    devices="; no device tried (not root)"
fi
echo "$prog: pprof, export and check --salvage write regular files whole (mode 644), nothing when a signal ends them, FIFOs in place$devices"
rm -rf "$dir"
