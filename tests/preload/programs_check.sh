#!/usr/bin/env bash
# programs_check.sh - real programs, as Debian ships them, do the same
# traced and untraced (issue 31: "ctrace run changes what programs do").
#
# Usage: tests/preload/programs_check.sh CTRACE BINDIR OUTDIR
#        PROGRAMS_CASES="sqlite redis" tests/preload/programs_check.sh ...  (some cases only)
#        PROGRAMS_KEEP=1 ...  (OUTDIR is kept when all is well, too)
#
# Each case is a shell function, case_NAME, run twice: untraced in
# OUTDIR/NAME.plain/ and traced in OUTDIR/NAME.traced/ (its working
# directory; its stdout and stderr go to out.txt and err.txt there). It runs
# each program through `t` (or `serve` for a server), which in the traced run
# puts it under `ctrace run -o OUTDIR/NAME.traces/LABEL.trace` (with -f:
# following its children). Then, for the case:
#   - the exit status of every program is the same in both runs (and what
#     the case expects, 0 unless it says otherwise);
#   - every file in the two directories is the same, byte for byte, text
#     outputs (*.txt, *.out, *.err, *.log) after normalise() and the case's
#     own norm_NAME; files whose bytes are inherently variable are left out
#     by the case's SKIP_NAME (each with its reason);
#   - `ctrace check` accepts every trace the traced run wrote (children's,
#     FILE.pidN, and earlier images', FILE.N, included).
# A difference is reported with its diff, and the other cases still run;
# the script fails at the end. The differences known today, which the shim
# must still fix, are listed in KNOWN below: they are reported as KNOWN,
# and do not fail the test. Programs not installed are skipped ("skipped:
# X not installed"); `make test-deps` installs them all.
#
# Servers (postgres, redis, memcached, python3's http.server) listen on
# sockets in the scratch directory, or on a port the kernel picks, and are
# stopped on exit, failure included (the EXIT trap). Running as root,
# PostgreSQL and memcached run as nobody (setpriv): they refuse root.
#
# Under CTRACE_TEST_SANITIZE (the ASan stage of `make check`, where the
# shim is built with ASan and libasan is preloaded into every traced
# program) only the cases of our own programs (sockets, atomic, cancel),
# which exercise the shim's socket, write and cancellation paths, and the
# cheap sqlite and compress cases run. Most of Debian's programs fail with
# libasan preloaded whatever the shim does: LeakSanitizer reports their own
# leaks at exit (gcc's, perl's, make's) and exits 23, and ASan aborts sort
# on an aligned_alloc(4096, 0x20001) glibc accepts; initdb and pgbench
# hang at exit with libasan preloaded, ctrace or not (glibc's
# __libc_setlocale_lock left with a reader count of -1).
# shellcheck disable=SC2034  # SKIP_<case>: digest reads them by name
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 3 "CTRACE BINDIR OUTDIR" $#
ctrace=$(realpath "$1") bindir=$(realpath "$2") out=$3
fresh_dir "$out"
out=$(realpath "$out")
readonly LIMIT=120

# Known differences, traced against untraced, that the shim must still
# fix: case -> what differs. The case still runs and its difference is
# printed; a known case that no longer differs is said to be fixed.
declare -A KNOWN=(
)


failures=()
fail() {
    echo "$prog: FAIL: $*" >&2
    failures+=("$*")
}

have() { command -v "$1" >/dev/null 2>&1; }

# The user the servers run as: nobody when root (PostgreSQL and memcached
# refuse root), else ourselves.
if [ "$(id -u)" -eq 0 ]; then
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
else
    as_user=()
fi

# ---- the EXIT trap: servers this script started ----------------------------------
# $out/servers: one "PID NAME" a line, for every server running; stop()
# and pg_stop remove theirs.
: >"$out/servers"
cleanup() {
    local pid name
    [ -f "$out/servers" ] || return 0
    while read -r pid name; do
        echo "$prog: stopping $name (pid $pid), left running" >&2
        kill -KILL "$pid" 2>/dev/null || true
    done <"$out/servers"
    : >"$out/servers"
}
trap cleanup EXIT

# ---- running programs --------------------------------------------------------------
# Set by run_case for the run under way: mode (plain or traced), traces
# (the traced run's trace directory), status (the file of exit statuses).

# t [-f] [-u] [-s STATUS] [-n LABEL] CMD...: runs CMD in the current
# directory, traced in the traced run (-f: following children), as the
# servers' user with -u; records its exit status, which must be STATUS
# (default 0), under LABEL (default: CMD's name and a number).
tn=0
t() {
    local follow=() user=() want=0 label="" st=0
    while :; do
        case $1 in
        -f) follow=(-f) ;;
        -u) user=("${as_user[@]}") ;;
        -s) want=$2; shift ;;
        -n) label=$2; shift ;;
        *) break ;;
        esac
        shift
    done
    tn=$((tn + 1))
    [ -n "$label" ] || label=$(basename "$1").$tn
    if [ "$mode" = traced ]; then
        "${user[@]}" timeout -k 5 $LIMIT "$ctrace" run "${follow[@]}" -o "$traces/$label.trace" -- "$@" || st=$?
    else
        "${user[@]}" timeout -k 5 $LIMIT "$@" || st=$?
    fi
    echo "$label: exit $st (want $want)" >>"$status"
    return 0
}

# serve NAME [-f] [-u] CMD...: starts the server CMD in the background,
# traced in the traced run, stdout and stderr to NAME.out and NAME.err;
# its pid in $NAME_pid... kept in $out/servers. No timeout: stop() ends it.
serve() {
    local name=$1 follow=() user=()
    shift
    while :; do
        case $1 in
        -f) follow=(-f) ;;
        -u) user=("${as_user[@]}") ;;
        *) break ;;
        esac
        shift
    done
    # setpriv and ctrace run exec the program: $! is the server's pid.
    if [ "$mode" = traced ]; then
        "${user[@]}" "$ctrace" run "${follow[@]}" -o "$traces/$name.trace" -- "$@" >"$name.out" 2>"$name.err" &
    else
        "${user[@]}" "$@" >"$name.out" 2>"$name.err" &
    fi
    echo "$! $name" >>"$out/servers"
}

server_pid() { awk -v n="$1" '$2 == n { print $1 }' "$out/servers"; }

# stop NAME SIGNAL [STATUS]: sends SIGNAL to the server and waits for its
# end (30 s at most, then SIGKILL); its exit status must be STATUS
# (default 0).
stop() {
    local name=$1 sig=$2 want=${3:-0} pid st=0
    pid=$(server_pid "$name")
    [ -n "$pid" ] || { echo "$name: not running" >>"$status"; return 0; }
    kill -"$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; echo "$name: did not stop on SIG$sig" >>"$status"; }
    wait "$pid" || st=$?
    sed -i "/^$pid $name\$/d" "$out/servers"
    echo "$name: exit $st (want $want)" >>"$status"
}

# wait_for FILE REGEX: until a line of FILE matches (30 s at most);
# prints the first match.
wait_for() {
    for ((i = 0; i < 300; i++)); do
        if grep -Eq "$2" "$1" 2>/dev/null; then
            grep -Em1 "$2" "$1"
            return 0
        fi
        sleep 0.1
    done
    echo "wait_for: no /$2/ in $1 after 30 s" >&2
    return 1
}

# ---- comparing -----------------------------------------------------------------------
# normalise DIR: what is variable in every text output: the two runs' own
# directories (NAME.plain and NAME.traced) and trace paths.
normalise() {
    sed -e "s#$out/[a-z_0-9]*\.\(plain\|traced\)#DIR#g"
}

# digest NAME MODE: one line per file of the run's directory: its path and
# its digest, text outputs normalised, SKIP_NAME's files (find -path
# patterns) left out.
digest() {
    local name=$1 dir="$out/$1.$2" skip_var="SKIP_$1" norm=cat
    declare -F "norm_$name" >/dev/null && norm="norm_$name"
    local find_args=(-type f)
    local p f
    for p in ${!skip_var:-}; do find_args+=(! -path "./$p"); done
    (cd "$dir" && find . "${find_args[@]}" | LC_ALL=C sort) >"$out/files.tmp"
    {
        { grep -E '\.(txt|out|err|log)$' "$out/files.tmp" || true; } | while read -r f; do
            echo "$f $(normalise <"$dir/$f" | $norm | sha256sum | cut -c1-16)"
        done
        { grep -Ev '\.(txt|out|err|log)$' "$out/files.tmp" || true; } | (cd "$dir" && xargs -r -d '\n' sha256sum) |
            awk '{ print $2, substr($1, 1, 16) }'
    } | LC_ALL=C sort
}

# show_diff NAME: the differing files' diffs, normalised, on stderr.
show_diff() {
    local name=$1 norm=cat f
    declare -F "norm_$name" >/dev/null && norm="norm_$name"
    diff "$out/$name.plain.digest" "$out/$name.traced.digest" >&2 || true
    for f in $(diff "$out/$name.plain.digest" "$out/$name.traced.digest" | awk '/^[<>]/ { print $2 }' | sort -u); do
        case $f in
        *.txt | *.out | *.err | *.log)
            if [ -f "$out/$name.plain/$f" ] && [ -f "$out/$name.traced/$f" ]; then
                echo "--- $f (< untraced, > traced):" >&2
                diff <(normalise <"$out/$name.plain/$f" | $norm) \
                    <(normalise <"$out/$name.traced/$f" | $norm) | head -40 >&2 || true
            fi
            ;;
        *)
            if [ -f "$out/$name.plain/$f" ] && [ -f "$out/$name.traced/$f" ]; then
                cmp "$out/$name.plain/$f" "$out/$name.traced/$f" >&2 || true
            fi
            ;;
        esac
    done
}

# run_case NAME: runs case_NAME untraced and traced (after prep_NAME in
# each directory, if defined), then compares; after_NAME DIR, if defined,
# checks each run's directory further.
run_case() {
    local name=$1 m
    if [ -n "${PROGRAMS_CASES:-}" ] && ! [[ " $PROGRAMS_CASES " == *" $name "* ]]; then return 0; fi
    local t0 secs=()
    for m in plain traced; do
        mode=$m
        t0=$(date +%s%N)
        local dir="$out/$name.$m"
        traces="$out/$name.traces"
        status="$out/$name.$m.status"
        mkdir -p "$dir" "$traces"
        : >"$status"
        # The servers' user writes traces and works in the directory.
        [ ${#as_user[@]} -eq 0 ] || chown nobody "$dir" "$traces"
        (cd "$dir" && set +e && {
            if declare -F "prep_$name" >/dev/null; then "prep_$name"; fi
            "case_$name"
        } >out.txt 2>err.txt) || echo "case_$name: exit $?" >>"$status"
        # A server left running is a failure; stop it for the next run.
        if [ -s "$out/servers" ]; then
            echo "a server left running: $(cat "$out/servers")" >>"$status"
            cleanup 2>/dev/null
        fi
        secs+=("$(( ($(date +%s%N) - t0) / 100000000 ))")
    done
    local bad=0
    for m in plain traced; do
        if declare -F "after_$name" >/dev/null && ! "after_$name" "$out/$name.$m"; then
            fail "$name: $m: after_$name (above)"
        fi
    done
    # Every program ended as the case wants in the untraced run (else the
    # case itself is broken here), and the same in both.
    if grep -v ': exit \([0-9]*\) (want \1)$' "$out/$name.plain.status" >&2; then
        fail "$name: untraced, a program did not end as the case expects (above); stderr: $(head -c 2000 "$out/$name.plain/err.txt")"
        bad=1
    fi
    # Sorted: programs run at once (&) end in any order.
    if ! diff <(sort "$out/$name.plain.status") <(sort "$out/$name.traced.status") >&2; then
        bad=1
        echo "$name: exit statuses differ (< untraced, > traced)" >&2
    fi
    digest "$name" plain >"$out/$name.plain.digest"
    digest "$name" traced >"$out/$name.traced.digest"
    if ! cmp -s "$out/$name.plain.digest" "$out/$name.traced.digest"; then
        bad=1
        echo "$name: files differ (< untraced, > traced):" >&2
        show_diff "$name"
    fi
    local tr ntr=0
    for tr in "$traces"/*; do
        [ -e "$tr" ] || continue
        ntr=$((ntr + 1))
        "$ctrace" check "$tr" >/dev/null 2>"$out/check.err" ||
            { fail "$name: ctrace check rejects ${tr#"$out"/}: $(head -c 500 "$out/check.err")"; }
    done
    [ "$ntr" -gt 0 ] || fail "$name: no trace written"
    if [ -n "${KNOWN[$name]:-}" ]; then
        if [ $bad -eq 1 ]; then
            echo "$prog: $name: KNOWN difference: ${KNOWN[$name]}"
        else
            echo "$prog: $name: the known difference is gone (remove it from KNOWN): ${KNOWN[$name]}"
        fi
    elif [ $bad -eq 1 ]; then
        fail "$name: traced differs from untraced (above)"
    else
        echo "$prog: $name: same traced and untraced ($(wc -l <"$out/$name.plain.digest") files, $ntr traces; $(tenths "${secs[0]}") s untraced, $(tenths "${secs[1]}") s traced)"
    fi
}

tenths() { echo "$(($1 / 10)).$(($1 % 10))"; }

skip() { echo "$prog: $1: skipped: $2 not installed"; }

# ---- inputs, shared by both runs -----------------------------------------------------------
in="$out/inputs"
mkdir -p "$in/tree/sub/deeper"
head -c $((6 << 20)) /dev/urandom >"$in/big.bin"
# 50000 lines of text with repeated words, numbers and blanks, for
# sort, split and perl.
awk 'BEGIN { srand(31); for (i = 0; i < 50000; i++) printf "%s %d %s\n",
    substr("lorem ipsum dolor sit amet consectetur adipiscing elit sed do", int(rand() * 50) + 1, int(rand() * 12) + 1),
    int(rand() * 1000000), (i % 7 ? "x" : "") }' >"$in/text.txt"
for i in $(seq 1 60); do head -c $((i * 997)) "$in/text.txt" >"$in/tree/f$i.dat"; done
for i in $(seq 1 20); do head -c $((i * 4001)) "$in/big.bin" >"$in/tree/sub/b$i.bin"; done
ln -s ../f1.dat "$in/tree/sub/link"
echo deep >"$in/tree/sub/deeper/file"

# ---- our own programs: sockets, atomicity, cancellation ------------------------------------
case_sockets() { t "$bindir/run_sockets" udp seqpacket peek waitall rights; }
case_sockets_empty() { t "$bindir/run_sockets" empty; }

# The appenders and pipe writers are processes: -f traces them too. The
# log's order of records is the scheduler's: run_atomic checks it.
SKIP_atomic="append.log"
# Under ASan its forked writers run without LeakSanitizer: in a child of
# a process with the tracer's threads, it warns that it could not suspend
# them (they are the parent's, gone in the child), and stderr differs.
case_atomic() {
    if [ "${CTRACE_TEST_SANITIZE:-}" = address ]; then
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" t -f "$bindir/run_atomic" . append pipe
    else
        t -f "$bindir/run_atomic" . append pipe
    fi
}

case_cancel() { t "$bindir/run_cancel"; }

run_case sockets
run_case sockets_empty
run_case atomic
run_case cancel

if [ -n "${CTRACE_TEST_SANITIZE:-}" ]; then
    quick=1
else
    quick=0
fi

# ---- ptys ------------------------------------------------------------------------------------
# script(1) runs a shell on a pty (-f: the shell and its commands too);
# python3's pty module answers a program that reads its terminal: the
# echo of what it typed, then the program's answer.
pty_py='
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv("/bin/sh", ["sh", "-c", "stty -a | head -1; echo ready; read l; echo \"got $l\"; test -t 0 && echo tty"])
got = b""
while b"ready" not in got:
    got += os.read(fd, 1024)
os.write(fd, b"hello\n")
while True:
    try:
        b = os.read(fd, 1024)
    except OSError:
        break
    if not b:
        break
    got += b
_, st = os.waitpid(pid, 0)
print(repr(got), os.waitstatus_to_exitcode(st))
'
case_pty() {
    t -f script -q -c 'tty >/dev/null && echo on a tty; stty size; read -r l || echo no input; echo end' /dev/null </dev/null
    if [ -x /usr/bin/python3 ]; then t -f /usr/bin/python3 -c "$pty_py"; fi
}
if [ $quick -eq 1 ]; then :; elif have script; then run_case pty; else skip pty script; fi

# ---- coreutils: cp, split, sort -----------------------------------------------------------------
prep_coreutils() { cp -a "$in/tree" tree; cp -p "$in/big.bin" "$in/text.txt" .; }
case_coreutils() {
    t cp -a tree tree.copy
    t cp --sparse=always big.bin big.copy
    t cp -r tree/sub sub.copy
    t split -b 100000 -d big.bin part.
    t split -n l/4 text.txt lines.
    # --filter: a shell per piece (-f: traced too).
    t -f split -l 25000 --filter='gzip -1 >$FILE.gz' text.txt gz.
    t sort -S 256K --parallel=2 -T . text.txt -o sorted.txt
    t sort -n -k2 -S 512K -T . text.txt -o numeric.txt
    t sort -u text.txt -o unique.txt
    t -f sort -S 1M -T . --compress-program=gzip -k3,3 -k1,1 -s text.txt -o compressed.txt
    t sort -c sorted.txt
    t -s 1 sort -c text.txt
}
[ $quick -eq 1 ] || run_case coreutils

# ---- compression: gzip, xz, zstd --------------------------------------------------------------------
prep_compress() { cp -p "$in/big.bin" "$in/text.txt" .; }
case_compress() {
    t gzip -k -6 text.txt
    t gzip -c -1 big.bin >big.gz
    t gzip -t text.txt.gz
    t gzip -dc text.txt.gz >text.gz.out.bin
    if have xz; then
        # Blocks of 256 KiB: two threads at work.
        t xz -k -T2 -3 --block-size=256KiB text.txt
        t xz -dc -T2 text.txt.xz >text.xz.out.bin
    fi
    if have zstd; then
        t zstd -q -k -T2 -B256K -9 text.txt
        t zstd -q -c -T2 -B1M --long big.bin >big.zst
        t zstd -q -dc big.zst >big.zst.out.bin
    fi
}
run_case compress
have xz || skip compress/xz xz
have zstd || skip compress/zstd zstd

# ---- openssl ---------------------------------------------------------------------------------------
prep_openssl() { cp -p "$in/big.bin" .; }
case_openssl() {
    # A fixed salt (-S): the same ciphertext every run.
    t openssl enc -aes-256-cbc -pbkdf2 -iter 10000 -S 0011223344556677 -pass pass:ctrace \
        -in big.bin -out big.enc
    t openssl enc -d -aes-256-cbc -pbkdf2 -iter 10000 -S 0011223344556677 -pass pass:ctrace \
        -in big.enc -out big.dec
    t openssl dgst -sha256 -sha512 -md5 big.bin big.enc
    t openssl enc -base64 -in big.enc -out big.b64
}
if [ $quick -eq 1 ]; then :; elif have openssl; then run_case openssl; else skip openssl openssl; fi

# ---- perl: files, a pipe from children, threads ---------------------------------------------------
perl_script='
use strict; use warnings;
my %n; open(my $f, "<", $ARGV[0]) or die; while (<$f>) { $n{$_}++ for split } close $f;
print "$_ $n{$_}\n" for (sort { $n{$b} <=> $n{$a} || $a cmp $b } keys %n)[0 .. 9];
pipe(my $r, my $w) or die;
for my $k (1 .. 3) { my $pid = fork // die; if (!$pid) { close $r; syswrite $w, "child $k\n" x 100; exit $k } }
close $w; my @lines = <$r>; my %c; $c{$_}++ for @lines; print "$_ x $c{$_}" =~ s/\n//r, "\n" for sort keys %c;
my $st = 0; while ((my $p = wait) > 0) { $st += $? >> 8 } print "children status sum $st\n";
if (eval { require threads; require Thread::Queue; 1 }) {
    my $q = Thread::Queue->new(1 .. 2000); $q->end;
    my @t = map { threads->create(sub { my $s = 0; while (defined(my $x = $q->dequeue)) { $s += $x } $s }) } 1 .. 3;
    my $sum = 0; $sum += $_->join for @t; print "threads sum $sum\n";
}
open(my $o, ">", "perl.out.bin") or die; binmode $o; print $o pack("N*", map { $_ * 7919 % 65536 } 1 .. 100000); close $o;
'
case_perl() { t -f perl -e "$perl_script" "$in/text.txt"; }
if [ $quick -eq 1 ]; then :; elif have perl; then run_case perl; else skip perl perl; fi

# ---- gcc and make ------------------------------------------------------------------------------------
# Without -g: debug info names the build directory, which differs.
prep_build() {
    local i
    for i in 1 2 3 4 5 6; do
        printf '#include <stdio.h>\nint f%d(int x) { return x * %d + 1; }\n' "$i" "$i" >"f$i.c"
    done
    {
        echo '#include <stdio.h>'
        for i in 1 2 3 4 5 6; do echo "int f$i(int);"; done
        echo 'int main(void) { int s = 0;'
        for i in 1 2 3 4 5 6; do echo "  s += f$i($i);"; done
        echo '  printf("sum %d\n", s); return 0; }'
    } >main.c
    printf 'OBJS = main.o f1.o f2.o f3.o f4.o f5.o f6.o\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -c $< -o $@\n' >Makefile
}
prep_gcc() { prep_build; }
case_gcc() {
    t gcc -O2 -c f1.c -o one.o
    t -f gcc -O2 -Wall -o prog.gcc main.c f1.c f2.c f3.c f4.c f5.c f6.c
    t ./prog.gcc
}
if [ $quick -eq 1 ]; then :; elif have gcc; then run_case gcc; else skip gcc gcc; fi

prep_make() { prep_build; }
# make -j2 prints its commands in the order it starts them, which two
# jobs at a time make the scheduler's: sorted.
norm_make() { LC_ALL=C sort; }
case_make() {
    t -f make -j2 CC=gcc
    t ./prog
    t -f make -j2 CC=gcc
}
if [ $quick -eq 1 ]; then :; elif have make && have gcc; then run_case make; else skip make make/gcc; fi

# ---- rsync ---------------------------------------------------------------------------------------------
# What rsync -i lists depends on times; those of the files the runs
# change are set, not left to the clock (two changes within one tick of
# the file system's clock leave a directory's time as it was).
prep_rsync() {
    cp -a "$in/tree" src
    cp -p "$in/big.bin" src/
    find src -exec touch -h -d @1000000000 {} +
}
case_rsync() {
    t -f rsync -a -i src/ dst/
    # A change, a new file, a removed one; then again by checksum.
    echo changed >src/f3.dat
    head -c 50000 src/big.bin >src/new.bin
    rm src/f4.dat
    touch -d @1000000100 src src/f3.dat src/new.bin
    t -f rsync -a -i --delete src/ dst/
    t -f rsync -a -i -c --delete --inplace src/ dst.inplace/
    t -f rsync -r -i -c src/ dst/
}
if [ $quick -eq 1 ]; then :; elif have rsync; then run_case rsync; else skip rsync rsync; fi

# ---- sqlite3: one writer, two at once, WAL -------------------------------------------------------------
sqlite_fill='
create table t(id integer primary key, k text, v integer);
begin;
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
insert into t(k, v) select printf("key%05d", i), (i * 7919) % 1000 from n;
commit;
create index t_v on t(v);
select count(*), sum(v), min(k), max(k) from t;
select v, count(*) from t group by v order by count(*) desc, v limit 5;
delete from t where v % 3 = 0;
vacuum;
select count(*), sum(v) from t;
'
# sqlite_writer N JOURNAL: inserts 150 rows in their own transactions as
# writer N (without fsync: each commit's lock is the point, not the disk).
sqlite_writer() {
    local w=$1
    echo ".timeout 20000"
    echo "pragma journal_mode=$2; pragma synchronous=off;"
    for i in $(seq 1 150); do echo "insert into w(who, n) values ($w, $i);"; done
}
# Two writers at once: the order of their rows in the file is the
# scheduler's (the counts are printed instead); in WAL mode the -wal and
# -shm files are gone at the end, the database's pages are in the
# writers' order too.
SKIP_sqlite="concurrent.db wal.db"
case_sqlite() {
    echo "$sqlite_fill" | t sqlite3 one.db
    local j
    for j in delete wal; do
        local db=concurrent.db
        [ $j = wal ] && db=wal.db
        echo "pragma journal_mode=$j; create table w(who integer, n integer);" | t sqlite3 $db >/dev/null
        sqlite_writer 1 $j | t -n "$j-writer1" sqlite3 $db >/dev/null &
        sqlite_writer 2 $j | t -n "$j-writer2" sqlite3 $db >/dev/null &
        # A reader while they write (WAL: it never waits for them).
        echo ".timeout 20000
select count(*) >= 0 from w;" | t -n "$j-reader" sqlite3 $db
        wait
        echo "select who, count(*), sum(n) from w group by who; pragma integrity_check;" | t sqlite3 $db
    done
}
if have sqlite3; then run_case sqlite; else skip sqlite sqlite3; fi

if [ $quick -eq 1 ]; then
    echo "$prog: sanitizer build ($CTRACE_TEST_SANITIZE): only sockets, atomic, cancel, compress and sqlite"
    if [ ${#failures[@]} -gt 0 ]; then
        echo "$prog: ${#failures[@]} failure(s):" >&2
        printf '  %s\n' "${failures[@]}" >&2
        exit 1
    fi
    rm -rf "$out"
    exit 0
fi

# ---- curl against python3's http.server ------------------------------------------------------------------
prep_curl() { mkdir www; cp -p "$in/big.bin" www/; echo hello >www/index.html; }
# The port is the kernel's pick; the request log's lines carry the time.
norm_curl() { sed -e 's/port [0-9]*/port PORT/g; s|127\.0\.0\.1:[0-9]*|127.0.0.1:PORT|g' -e 's/\[[^]]*\]/[TIME]/'; }
case_curl() {
    serve http /usr/bin/python3 -u -m http.server --bind 127.0.0.1 0 --directory www
    local port
    port=$(wait_for http.out 'port [0-9]+' | sed 's/.*port \([0-9]*\).*/\1/') || return 1
    t curl -sS -o got.bin -w '%{http_code} %{size_download}\n' "http://127.0.0.1:$port/big.bin"
    t curl -sS "http://127.0.0.1:$port/index.html"
    t curl -sS -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/missing"
    t curl -sS -r 1000-1999 -o range.bin "http://127.0.0.1:$port/big.bin"
    # TERM, not INT: a shell starts a background job with SIGINT ignored.
    stop http TERM 143
}
if ! have curl; then skip curl curl; elif ! [ -x /usr/bin/python3 ]; then skip curl python3; else run_case curl; fi

# ---- redis: writes with appendonly, restarted, the keys still there ------------------------------------------
redis_cmds() {
    local i
    for i in $(seq 1 2000); do echo "SET key:$i value-$i"; done
    echo "INCRBY counter 5"
    echo "RPUSH list a b c"
    echo "HSET hash f1 v1 f2 v2"
}
# The log's lines start with the pid and the time, its version line has
# the pid, loading says how long it took. The AOF's base file (an RDB)
# holds its creation time and the memory used.
norm_redis() {
    sed -e 's/^[0-9]*:\([A-Z]\) [0-9]* [A-Za-z]* [0-9]* [0-9:.]*/PID:\1 TIME/' \
        -e 's/pid=[0-9]*/pid=PID/; s/[0-9.]* seconds/N seconds/'
}
SKIP_redis="appendonlydir/*.base.rdb"
case_redis() {
    local conf=(--port 0 --unixsocket "$PWD/redis.sock" --dir "$PWD" --appendonly yes --save ''
        --daemonize no)
    serve redis1 redis-server "${conf[@]}"
    wait_for redis1.out 'ready to accept' >/dev/null || return 1
    redis_cmds | t redis-cli -s redis.sock | sort | uniq -c
    t redis-cli -s redis.sock shutdown
    stop redis1 TERM
    serve redis2 redis-server "${conf[@]}"
    wait_for redis2.out 'ready to accept' >/dev/null || return 1
    printf 'DBSIZE\nGET key:1\nGET key:2000\nGET counter\nLRANGE list 0 -1\nHGETALL hash\n' |
        t redis-cli -s redis.sock
    t redis-cli -s redis.sock shutdown
    stop redis2 TERM
}
if have redis-server && have redis-cli; then run_case redis; else skip redis redis-server; fi

# ---- memcached: set and get through its text protocol ---------------------------------------------------------
memcached_py='
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rb")
def cmd(line, data=None):
    s.sendall(line + b"\r\n" + (data + b"\r\n" if data is not None else b""))
for i in range(500):
    v = bytes([97 + i % 26]) * (1 + i * 977 % 200000)
    cmd(b"set k%d 0 0 %d" % (i, len(v)), v); assert f.readline() == b"STORED\r\n"
ok = 0
for i in range(0, 500, 50):
    cmd(b"get " + b" ".join(b"k%d" % j for j in range(i, i + 50)))
    while True:
        l = f.readline()
        if l == b"END\r\n": break
        k, n = l.split()[1], int(l.split()[3]); v = f.read(n + 2)[:-2]
        j = int(k[1:]); ok += v == bytes([97 + j % 26]) * (1 + j * 977 % 200000)
print("values right:", ok)
cmd(b"set n 0 0 1", b"5"); f.readline(); cmd(b"incr n 37"); print(f.readline().strip().decode())
cmd(b"delete k7"); print(f.readline().strip().decode()); cmd(b"get k7"); print(f.readline().strip().decode())
'
case_memcached() {
    serve mc -u memcached -s "$PWD/mc.sock" -a 0777 -U 0 -t 4
    wait_for_socket mc.sock || return 1
    t /usr/bin/python3 -c "$memcached_py" mc.sock
    if have nc; then
        printf 'set a 0 0 5\r\nhello\r\nget a\r\nquit\r\n' | t nc -U mc.sock
    fi
    stop mc TERM
}
wait_for_socket() {
    for ((i = 0; i < 300; i++)); do [ -S "$1" ] && return 0; sleep 0.1; done
    echo "no socket $1 after 30 s" >&2
    return 1
}
if ! have memcached; then skip memcached memcached; elif ! [ -x /usr/bin/python3 ]; then skip memcached python3; else run_case memcached; fi
have nc || skip memcached/nc netcat-openbsd

# ---- PostgreSQL and pgbench -----------------------------------------------------------------------------------------
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
# pg_ctl prints a dot per second of waiting; pgbench's and initdb's
# figures are times; the server log's lines carry the time and the pid,
# and its checkpoint lines what the checkpoint found to write by then.
norm_postgres() {
    sed -E -e 's/\.+ done/... done/' \
        -e 's/(latency average|initial connection time|tps|latency stddev) = [0-9.]+/\1 = N/' \
        -e 's/[0-9.]+ s/N s/g' \
        -e 's/^[0-9-]+ [0-9:.]+ [A-Z]+ \[[0-9]+\]/TIME [PID]/' \
        -e 's/PID [0-9]+/PID N/; s/at [0-9-]+ [0-9:]+ [A-Z]+/at TIME/' \
        -e '/checkpoint (starting|complete)/s/[0-9]+/N/g'
}
# The cluster's files hold its random system identifier, times and WAL
# positions; the queries say what it holds.
SKIP_postgres="data/*"
pg_stop() {
    # pg_ctl returns once the postmaster.pid file is gone, which the
    # postmaster removes before it exits: wait for the process (its trace
    # is written at its exit).
    local pid i n
    pid=$(head -1 data/postmaster.pid 2>/dev/null) || pid=""
    # A client's backend may still be on its way out after the client
    # left; a fast shutdown then ends it with a FATAL in the log
    # ("terminating connection due to administrator command"). Wait until
    # no client backend is left, by their process titles ("postgres: pg
    # postgres [local] ..."), not by asking the server: the asking
    # client's own backend would be the one still leaving (on a loaded
    # machine it was). Up to a minute, untraced; nothing of this is
    # compared.
    for ((i = 0; i < 600; i++)); do
        n=$( (grep -lsa -- "^postgres: $PGUSER $PGDATABASE \\[local\\]" /proc/[0-9]*/cmdline || true) | wc -l)
        [ "$n" != 0 ] || break
        sleep 0.1
    done
    t -u "$pgbin/pg_ctl" -D data -m fast -w stop
    if [ -n "$pid" ]; then
        for ((i = 0; i < 300; i++)); do
            [ -d /proc/"$pid" ] && [ "$(awk '{ print $3 }' /proc/"$pid"/stat 2>/dev/null)" != Z ] || break
            sleep 0.1
        done
        sed -i "/^$pid postgres\$/d" "$out/servers"
    fi
}
case_postgres() {
    export PGHOST=$PWD PGPORT=5432 PGUSER=pg PGDATABASE=postgres
    t -u "$pgbin/initdb" -D "$PWD/data" -A trust -U pg --no-sync --no-instructions
    t -u -f "$pgbin/pg_ctl" -D data -l server.log -w -o "-c listen_addresses='' -k $PWD -p 5432" start
    echo "$(head -1 data/postmaster.pid) postgres" >>"$out/servers"
    t -u "$pgbin/pgbench" -i -s 1
    t -u "$pgbin/pgbench" -S -t 400 -c 2 -j 2
    t -u "$pgbin/pgbench" -t 60 -c 2 -j 2
    # TPC-B's balances add up: every account, teller and branch change is
    # in the history.
    t -u "$pgbin/psql" -Atc "select count(*) from pgbench_accounts;
        select count(*) from pgbench_history;
        select (select sum(abalance) from pgbench_accounts) = (select sum(delta) from pgbench_history)
           and (select sum(tbalance) from pgbench_tellers) = (select sum(delta) from pgbench_history)
           and (select sum(bbalance) from pgbench_branches) = (select sum(delta) from pgbench_history);"
    pg_stop
}
# pgbench ends 0 even when some transactions failed or were aborted.
after_postgres() {
    ! grep -E 'ERROR|FATAL|PANIC' "$1/server.log" >&2 &&
        ! grep -E 'ERROR|aborted|number of failed transactions: [1-9]' "$1/out.txt" "$1/err.txt" >&2
}
if [ -z "$pgbin" ]; then skip postgres postgresql; else run_case postgres; fi

if [ ${#failures[@]} -gt 0 ]; then
    echo "$prog: ${#failures[@]} failure(s):" >&2
    printf '  %s\n' "${failures[@]}" >&2
    exit 1
fi
[ -n "${PROGRAMS_KEEP:-}" ] || rm -rf "$out"
