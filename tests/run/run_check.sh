#!/usr/bin/env bash
# run_check.sh - trace a test program with `ctrace run` and check the trace.
#
# Usage: tests/run/run_check.sh CASE CTRACE BINDIR OUTDIR
#
#   CASE     pingpong threadpool pipe tcp compute fork fork_follow exec signals asan
#            passthrough c11 make (see the case_* functions below)
#   CTRACE   the ctrace command
#   BINDIR   where the run_* test programs are
#   OUTDIR   scratch directory for the traces (emptied first; removed on
#            success)
#
# Each case runs its program under `ctrace run` (with a time limit), checks
# the exit status and output the program would have without tracing, then
# checks the trace: `go tool trace -d` (and `ctrace check`) must accept it,
# and the events Go prints must match what the program did (counts per event type and per
# goroutine); finally every page of Go's web UI must serve it
# (tests/go_compat.sh). CTRACE_TEST_SANITIZE=address says the programs are
# built with ASan, whose allocator the shim does not see (no HeapAlloc).
#
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.
set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 4 ] || { echo "usage: $prog CASE CTRACE BINDIR OUTDIR" >&2; exit 2; }
case_name=$1 ctrace=$2 bindir=$3 out=$4
command -v go >/dev/null 2>&1 || { echo "$prog: go not found (install golang-go)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/run_check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export GOCACHE="$scratch/gocache"
if [ -z "${HOME:-}" ] || [ ! -w "$HOME" ]; then
    export HOME="$scratch/home"
    mkdir -p "$HOME"
fi
trace_tool=$(go tool -n trace)
ulimit -c 0 # the crash cases must not leave core files
readonly LIMIT=60 # seconds per traced program
traces=()
run_opts=() # options for ctrace run before -o

fail() {
    echo "$prog: $case_name: FAIL: $*" >&2
    exit 1
}

# traced NAME WANT_STATUS PROG [ARGS...]: runs PROG under ctrace run into
# $out/NAME.trace, stdout to $out/NAME.out, stderr to $out/NAME.err;
# fails unless the exit status is WANT_STATUS (128+N: killed by signal N).
traced() {
    local name=$1 want=$2 st=0
    shift 2
    timeout -k 5 "$LIMIT" "$ctrace" run ${run_opts[@]+"${run_opts[@]}"} -o "$out/$name.trace" -- "$@" \
        >"$out/$name.out" 2>"$out/$name.err" || st=$?
    if [ "$st" -ne "$want" ]; then
        echo "--- stdout"; cat "$out/$name.out"; echo "--- stderr"; cat "$out/$name.err"
        fail "$name: exit status $st, want $want"
    fi
    decode "$name"
}

# decode NAME: go tool trace -d of $out/NAME.trace into $out/NAME.d; ctrace's
# own reader (ctrace check) must accept the trace as well.
decode() {
    local name=$1
    [ -s "$out/$name.trace" ] || fail "$name: no trace written"
    if ! "$trace_tool" -d "$out/$name.trace" >"$out/$name.d" 2>"$out/$name.derr"; then
        tail -n 5 "$out/$name.derr" >&2
        fail "$name: go tool trace -d rejects the trace"
    fi
    "$ctrace" check "$out/$name.trace" >/dev/null || fail "$name: ctrace check rejects the trace"
    traces+=("$out/$name.trace")
}

# count NAME EVENT [G]: events of type EVENT in NAME's trace (of goroutine G).
count() {
    awk -v ev="$2" -v g="${3:-}" '$2 == ev && (g == "" || $4 == "g=" g) { n++ } END { print n + 0 }' \
        "$out/$1.d"
}

# expect NAME WHAT OP VALUE: WHAT is a number (from count); OP -eq, -ge, ...
expect() {
    local name=$1 what=$2 op=$3 value=$4 got
    got=$(count "$name" $what)
    [ "$got" "$op" "$value" ] || fail "$name: $what: $got, want $op $value"
}

# goroutines NAME: the goroutines the program created (not main's), one per
# line: the G named by each GoCreate made by a running goroutine.
goroutines() {
    awk '$2 == "GoCreate" && $4 != "g=0" { sub("g=", "", $6); print $6 }' "$out/$1.d"
}

# expect_goroutines NAME N: the program created exactly N goroutines.
expect_goroutines() {
    local gs
    gs=$(goroutines "$1")
    [ "$(echo "$gs" | wc -w)" -eq "$2" ] || fail "$1: goroutines created: '$(echo $gs)', want $2"
}

# expect_sys_pairs NAME: every blocked system call (GoSysBlock) has its exit.
expect_sys_pairs() {
    [ "$(count "$1" GoSysExit)" -eq "$(count "$1" GoSysBlock)" ] ||
        fail "$1: GoSysExit and GoSysBlock differ"
}

# main_g NAME: the goroutine of the main thread (announced at start).
main_g() {
    awk '$2 == "GoCreate" && $4 == "g=0" { sub("g=", "", $6); print $6; exit }' "$out/$1.d"
}

# has_output NAME PATTERN: stdout of NAME matches PATTERN (grep -E).
has_output() {
    grep -Eq "$2" "$out/$1.out" || { cat "$out/$1.out"; fail "$1: stdout lacks /$2/"; }
}

heap_expected() { [ "${CTRACE_TEST_SANITIZE:-}" != address ]; }

# ---- cases -------------------------------------------------------------------

case_pingpong() {
    traced pingpong 0 "$bindir/run_pingpong" 300
    has_output pingpong '^pingpong rounds=300 '
    local m p
    m=$(main_g pingpong)
    expect_goroutines pingpong 1
    p=$(goroutines pingpong)
    # Each side waits once per round (the last round's partner excepted).
    expect pingpong "GoBlockCond $m" -ge 299
    expect pingpong "GoBlockCond $p" -ge 299
    expect pingpong "GoEnd $p" -eq 1
    expect pingpong "GoSysCall" -eq 0
    # The blocking profile names the call and its callers.
    "$trace_tool" -pprof=sync "$out/pingpong.trace" >"$out/sync.pprof" 2>/dev/null ||
        fail "pingpong: go tool trace -pprof=sync failed"
    go tool pprof -traces "$out/sync.pprof" >"$out/sync.txt" 2>/dev/null ||
        fail "pingpong: go tool pprof failed"
    grep -A1 'pthread_cond_wait' "$out/sync.txt" | grep -q partner ||
        fail "pingpong: no pthread_cond_wait called from partner in the sync profile"
    grep -A1 'pthread_cond_wait' "$out/sync.txt" | grep -q main ||
        fail "pingpong: no pthread_cond_wait called from main in the sync profile"
}

case_threadpool() {
    traced threadpool 0 "$bindir/run_threadpool" 400 4
    has_output threadpool '^threadpool tasks=400 workers=4 '
    local ws g
    expect_goroutines threadpool 4
    ws=$(goroutines threadpool)
    for g in $ws; do expect threadpool "GoEnd $g" -eq 1; done
    expect threadpool GoBlockCond -ge 1
    if heap_expected; then
        expect threadpool HeapAlloc -ge 4
        # The results (about 400 KiB) are freed at the end: the heap falls.
        awk '$2 == "HeapAlloc" { sub("mem=", "", $6); v = $6 + 0; if (v > max) max = v; last = v }
             END { exit !(max >= 256 * 1024 && last < max) }' "$out/threadpool.d" ||
            fail "threadpool: HeapAlloc does not rise by 256 KiB and fall again"
    fi
}

case_pipe() {
    traced pipe 0 "$bindir/run_pipe" 300 4096
    has_output pipe '^pipe messages=300 bytes=1228800 '
    local m w
    m=$(main_g pipe)
    w=$(goroutines pipe)
    # Reads: at least one per 4 KiB message, and the writes' as many.
    expect pipe "GoSysCall $m" -ge 300
    expect pipe "GoSysCall $w" -ge 300
    # Main waits for the first message; the writer for room in the pipe.
    expect pipe "GoSysBlock $m" -ge 1
    expect pipe "GoSysBlock $w" -ge 1
    expect_sys_pairs pipe
    expect pipe "GoSleep $w" -eq 1
    expect pipe "GoSleep $m" -eq 1
    expect pipe GoBlockNet -eq 0
}

case_tcp() {
    traced tcp 0 "$bindir/run_tcp" 200 512
    has_output tcp '^tcp rounds=200 bytes=102400 '
    local m s
    m=$(main_g tcp)
    s=$(goroutines tcp)
    # The server's accept waits for the client; the client's reads wait
    # for the echo.
    expect tcp "GoBlockNet $s" -ge 1
    expect tcp "GoBlockNet $m" -ge 1
    expect tcp GoSysBlock -eq 0
    # Client: connect, send and recv per round; server: accept, then poll,
    # recv and send per round.
    expect tcp "GoSysCall $m" -ge 401
    expect tcp "GoSysCall $s" -ge 601
}

case_compute() {
    traced compute 0 "$bindir/run_compute" 2000000 2
    has_output compute '^compute threads=2 iterations=2000000 '
    expect_goroutines compute 2
    expect compute GoEnd -eq 2
}

case_fork() {
    # In its own directory: children must not write traces of their own.
    mkdir -p "$out/fork"
    (cd "$out/fork" && traced fork 0 "$bindir/run_forker" 10)
    decode fork
    has_output fork '^forker forks=10 ok=13$'
    local files
    files=$(find "$out" -name '*.trace' | wc -l)
    [ "$files" -eq 1 ] || fail "fork: $files trace files, want 1"
    # Main waits for its 13 children: each wait is a system call, shown
    # blocked when the child has not ended yet (the children sleep, but on
    # a loaded machine one may end before its parent waits).
    local m
    m=$(main_g fork)
    expect fork "GoSysCall $m" -ge 13
    expect fork "GoSysBlock $m" -ge 1
    expect_sys_pairs fork
    expect_goroutines fork 2
}

case_fork_follow() {
    # -f: each child traces into FILE.pid<PID> (its process's ProcStart
    # thread), and follows its own exec: the fork-and-exec child leaves
    # FILE.pid<PID>.1 (before the exec) and FILE.pid<PID> (/bin/sh), the
    # child of posix_spawn FILE.pid<PID> (/bin/sh). The child system()
    # starts inside libc is untraced.
    mkdir -p "$out/follow"
    run_opts=(-f)
    (cd "$out/follow" && traced follow 0 "$bindir/run_forker" 10)
    run_opts=()
    decode follow
    has_output follow '^forker forks=10 ok=13$'
    expect_goroutines follow 2
    [ -z "$(ls -A "$out/follow")" ] || fail "follow: traces in the working directory"
    local t base pid name plain=0 execed=0 shells=0 children=("$out"/follow.trace.pid*)
    [ -e "${children[0]}" ] || fail "follow: no trace of a child (follow.trace.pid<PID>)"
    for t in "${children[@]}"; do
        base=${t##*/follow.trace.pid}
        pid=${base%.1}
        name=follow_$pid${base#"$pid"}
        name=${name//./_}
        mv "$t" "$out/$name.trace"
        decode "$name"
        grep -Eq "^[0-9]+ ProcStart p=[0-9]+ g=0 off=[0-9]+ thread=$pid\$" "$out/$name.d" ||
            fail "$name: not the trace of process $pid"
        if [ "$base" != "$pid" ]; then
            execed=$((execed + 1)) # the child before its exec
            expect_goroutines "$name" 0
        elif [ -n "$(goroutines "$name")" ]; then
            # A child of the loop: a thread it joins, and a sleep.
            plain=$((plain + 1))
            expect_goroutines "$name" 1
            expect "$name" "GoEnd $(goroutines "$name")" -eq 1
            expect "$name" "GoSleep $(main_g "$name")" -eq 1
        else
            shells=$((shells + 1))
        fi
    done
    [ "$plain" -eq 10 ] && [ "$execed" -eq 1 ] && [ "$shells" -eq 2 ] ||
        fail "follow: traces of $plain forked children, $execed before an exec, $shells shells; want 10, 1, 2"
}

# moved NAME N: $out/NAME.trace.N, an earlier image's trace, as trace NAME_N.
moved() {
    [ -s "$out/$1.trace.$2" ] || fail "$1: no $1.trace.$2 (the image before the exec)"
    mv "$out/$1.trace.$2" "$out/$1_$2.trace"
    decode "$1_$2"
}

case_exec() {
    traced exec 3 "$bindir/run_execer"
    has_output exec '^execer: first image$'
    has_output exec '^execer: second image$'
    # FILE is the second image (main and three threads); the first (main and
    # one thread), finished before the exec, is FILE.1. The failed exec in
    # between left no trace of its own.
    expect exec GoCreate -eq 4
    expect exec GoEnd -eq 3
    moved exec 1
    expect exec_1 GoCreate -eq 2
    expect exec_1 GoEnd -eq 1
    [ ! -e "$out/exec.trace.2" ] || fail "exec: a trace more than images"
    # A launcher: env execs the program, whose trace is FILE.
    traced launcher 0 /usr/bin/env "$bindir/run_pingpong" 100
    expect launcher GoBlockCond -ge 198
    moved launcher 1
    expect launcher_1 GoCreate -eq 1
}

# untraced WANT PROG [ARGS...]: the exit status of PROG run without ctrace,
# which must be WANT in a plain build (a sanitizer may end a crash its own
# way: ASan reports a SEGV and exits 1). Prints the status.
untraced() {
    local want=$1 st=0
    shift
    timeout -k 5 "$LIMIT" "$@" >/dev/null 2>&1 || st=$?
    if [ -z "${CTRACE_TEST_SANITIZE:-}" ] && [ "$st" -ne "$want" ]; then
        fail "untraced $*: exit status $st, want $want"
    fi
    echo "$st"
}

case_signals() {
    # The traced process must end exactly as the untraced one does.
    local mode st
    for mode in term:143 handler:0 segv:139 abort:134 _exit:7 exit:5 pthread_exit:0 prestart:0; do
        st=$(untraced "${mode#*:}" "$bindir/run_signals" "${mode%:*}")
        traced "sig_${mode%:*}" "$st" "$bindir/run_signals" "${mode%:*}"
    done
    has_output sig_handler '^signals: handled SIGINT$'
    local n
    for n in sig_term sig_segv sig_abort sig__exit; do
        # main, the spinning thread, the one that ends the process
        expect_goroutines $n 2
        expect $n "GoBlockSync $(main_g $n)" -ge 1 # pthread_join
    done
    expect sig_exit GoSleep -ge 1
    expect sig_pthread_exit GoEnd -eq 2 # main and the napping thread
    # main ends; the thread from before the trace made no traced call, so
    # it has no goroutine (and it ended unseen: the process still exited).
    expect_goroutines sig_prestart 0
    expect sig_prestart "GoEnd $(main_g sig_prestart)" -eq 1
}

case_c11() {
    traced c11 0 "$bindir/run_c11" 200
    has_output c11 '^c11 rounds=200 result=7$'
    local m p
    m=$(main_g c11)
    expect_goroutines c11 1
    p=$(goroutines c11)
    expect c11 "GoBlockCond $m" -ge 199
    expect c11 "GoBlockCond $p" -ge 199
    expect c11 "GoSleep $m" -eq 1
    expect c11 "GoEnd $p" -eq 1
}

case_asan() {
    traced asan 0 "$bindir/run_asan"
    has_output asan '^asan ok$'
    expect_goroutines asan 4
    expect asan GoEnd -eq 4
    # Exec'd by a program without ASan: the shim must put libasan first
    # for the new image, or ASan refuses to start.
    traced asan_exec 0 /bin/sh -c "exec '$bindir/run_asan'"
    has_output asan_exec '^asan ok$'
    expect asan_exec GoEnd -eq 4
    moved asan_exec 1
}

# Exit status, stdout and stderr pass through; a script's interpreter is
# traced; the environment form works without the command; a Go program is
# refused; an installed (and then moved) command finds its shim.
case_passthrough() {
    traced status 7 /bin/sh -c 'echo out; echo err >&2; exit 7'
    [ "$(cat "$out/status.out")" = out ] || fail "status: stdout '$(cat "$out/status.out")'"
    [ "$(cat "$out/status.err")" = err ] || fail "status: stderr '$(cat "$out/status.err")'"
    local shim
    shim=$(dirname "$ctrace")/../lib/libctrace-preload.so
    local pre=$shim
    if [ "${CTRACE_TEST_SANITIZE:-}" = address ]; then
        pre="$(gcc -print-file-name=libasan.so):$shim"
    fi
    # timeout must not get the variables: it would be the traced process.
    timeout -k 5 "$LIMIT" bash -c 'LD_PRELOAD=$1 CTRACE_OUT=$2 exec "$3" 50' env \
        "$pre" "$out/env.trace" "$bindir/run_pingpong" >"$out/env.out" || fail "env: pingpong failed"
    decode env
    expect env GoBlockCond -ge 98
    # A trace that cannot be written whole is said to be incomplete; the
    # program's status stays its own.
    local st=0
    timeout -k 5 "$LIMIT" "$ctrace" run -o /dev/full -- "$bindir/run_pingpong" 20 \
        >"$out/full.out" 2>"$out/full.err" || st=$?
    [ "$st" -eq 0 ] || fail "full: status $st, want 0"
    grep -q '^ctrace: the trace in /dev/full is incomplete: ' "$out/full.err" ||
        fail "full: no word of the failed write; stderr: $(cat "$out/full.err")"
    # A program that does not start through __libc_start_main (Go's own
    # tool) is refused with a reason, not run into an empty trace.
    st=0
    "$ctrace" run -o "$out/go.trace" -- "$(command -v go)" version >/dev/null 2>"$out/go.err" || st=$?
    [ "$st" -eq 2 ] && grep -q __libc_start_main "$out/go.err" ||
        fail "go: status $st, stderr: $(cat "$out/go.err")"
    # Installed, then moved: the command finds the shim next to itself.
    local build
    build=$(cd "$(dirname "$ctrace")/.." && pwd)
    cmake --install "$build" --prefix "$out/prefix" >/dev/null || fail "install: cmake --install failed"
    mv "$out/prefix" "$out/moved"
    (ctrace=$out/moved/bin/ctrace; traced installed 0 "$bindir/run_pingpong" 50)
    decode installed
    expect installed GoBlockCond -ge 98
}

# make -j2 building four C files, with -f: make and every child it starts
# (shells, the compiler's driver and passes) trace into files of their own.
# Their traces hold what broke Go 1.23's viewer when a blocking system call
# left its P running (GoSysCall, GoSysBlock, GoSysExit, GoStart, ...,
# GoSched, ProcStop): go_compat.sh serves each with all three Gos.
case_make() {
    command -v make >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 ||
        { echo "$prog: make: make or cc missing" >&2; exit 1; }
    local src=$out/src i
    mkdir -p "$src"
    for i in 1 2 3 4; do
        printf 'int f%d(int x) { return x * %d; }\n' "$i" "$i" >"$src/f$i.c"
    done
    printf 'all: f1.o f2.o f3.o f4.o\n%%.o: %%.c\n\t$(CC) -c -o $@ $<\n' >"$src/Makefile"
    # Under an ASan build the shim brings libasan into every child: the
    # compiler's own leaks (it frees nothing on purpose) are not ours.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    run_opts=(-f)
    traced mk 0 make -s -j2 -C "$src"
    run_opts=()
    [ -s "$src/f4.o" ] || fail "mk: make built nothing"
    local t name n=0
    for t in "$out"/mk.trace.pid*; do
        [ -e "$t" ] || continue
        name=mk_${t##*/mk.trace.}
        name=${name//./_}
        mv "$t" "$out/$name.trace"
        decode "$name"
        n=$((n + 1))
    done
    [ "$n" -ge 4 ] || fail "mk: $n traces of make's children, want at least 4"
    [ "$(count mk GoSysBlock)" -ge 1 ] || fail "mk: make never blocked in a system call"
}

"case_$case_name"
bash "$here/../go_compat.sh" "${traces[@]}"
echo "run_check: $case_name: ${#traces[@]} trace(s) ok"
rm -rf "$out"
