#!/usr/bin/env bash
# run_check.sh - trace a test program with `ctrace run` and check the trace.
#
# Usage: tests/preload/run_check.sh CASE CTRACE BINDIR OUTDIR
#
#   CASE     pingpong threadpool pipe tcp compute fork fork_follow exec signals asan
#            passthrough c11 closer state wakers timed make futex bash launch
#            userns loop node memcached redis waits (see the case_* functions below)
#   CTRACE   the ctrace command
#   BINDIR   where the run_* test programs are
#   OUTDIR   scratch directory for the traces (emptied first; removed on
#            success)
#
# Each case runs its program under `ctrace run` (with a time limit), checks
# the exit status and output the program has without tracing, then
# checks the trace: `go tool trace -d` (and `ctrace check`) must accept it,
# and the events Go prints must match what the program did (counts per event type and per
# goroutine); finally every page of Go's web UI must serve it
# (tests/lib/go_compat.sh). CTRACE_TEST_SANITIZE=address says the programs are
# built with ASan, whose allocator the shim does not see (no HeapAlloc).
#
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 4 "CASE CTRACE BINDIR OUTDIR" $#
case_name=$1 ctrace=$2 bindir=$3 out=$4
command -v go >/dev/null 2>&1 || die "go not found (install golang-go)"

fresh_dir "$out"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/run_check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export GOCACHE="$scratch/gocache"
home_writable "$scratch"
trace_tool=$(go tool -n trace)
. "$here/../lib/go_paths.sh"
trace_tool_new=$(go_trace_tool "$GO127") || die "cannot build Go 1.27's go tool trace"
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
# PROG runs untraced first: its stdout must be the same, but for the
# timings the programs print (ns=, cpu_ns=) and the shell's $_, which
# names the command the shell ran (ctrace).
traced() {
    local name=$1 want=$2 st=0
    shift 2
    timeout -k 5 "$LIMIT" "$@" >"$out/$name.plain" 2>/dev/null || true
    timeout -k 5 "$LIMIT" "$ctrace" run ${run_opts[@]+"${run_opts[@]}"} -o "$out/$name.trace" -- "$@" \
        >"$out/$name.out" 2>"$out/$name.err" || st=$?
    if [ "$st" -ne "$want" ]; then
        echo "--- stdout"; cat "$out/$name.out"; echo "--- stderr"; cat "$out/$name.err"
        fail "$name: exit status $st, want $want"
    fi
    local norm='s/ (ns|cpu_ns)=[0-9]+//g; /^env _=/d'
    if ! diff <(sed -E "$norm" "$out/$name.plain") <(sed -E "$norm" "$out/$name.out") >"$out/$name.diff"; then
        cat "$out/$name.diff"
        fail "$name: stdout differs from the untraced run's (< untraced, > traced)"
    fi
    decode "$name"
}

# same_file NAME UNTRACED TRACED: the program's own file is byte for byte
# what the untraced run wrote.
same_file() {
    cmp "$2" "$3" >&2 || fail "$1: $3 differs from the untraced run's $2"
}

# decode NAME: the events of $out/NAME.trace into $out/NAME.d, one line
# each in the words of Go 1.19's `go tool trace -d`, for the checks below to
# count: a classic trace's as Go 1.19 prints them, and a trace of Go's
# current format (the default) as ctrace's model reads it (`ctrace dump
# --model`: the classic events Go 1.23 turns it back into), once the
# newest Go's reader has accepted it (`go tool trace -d=parsed`). ctrace's
# own reader (ctrace check) must accept the trace as well; go_compat.sh
# serves every page of it at the end. With new_format=1 (the cases that
# check a summary), NAME.d is ctrace check's line.
new_format=0
declare -A current # NAME -> 1 for a trace of Go's current format
decode() {
    local name=$1 head
    [ -s "$out/$name.trace" ] || fail "$name: no trace written"
    head=$("$ctrace" check "$out/$name.trace") || fail "$name: ctrace check rejects the trace"
    if [ "$new_format" -eq 1 ]; then
        echo "$head" >"$out/$name.d"
        return
    fi
    case $head in
    *": go 1.2"[2-9]" trace,"*)
        if ! "$trace_tool_new" -d=parsed "$out/$name.trace" >/dev/null 2>"$out/$name.derr"; then
            tail -n 5 "$out/$name.derr" >&2
            fail "$name: Go 1.27's go tool trace -d=parsed rejects the trace"
        fi
        "$ctrace" dump --model "$out/$name.trace" >"$out/$name.d" || fail "$name: ctrace dump --model failed"
        current[$name]=1
        ;;
    *)
        if ! "$trace_tool" -d "$out/$name.trace" >"$out/$name.d" 2>"$out/$name.derr"; then
            tail -n 5 "$out/$name.derr" >&2
            fail "$name: go tool trace -d rejects the trace"
        fi
        ;;
    esac
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

# tool_for NAME: the go tool trace that reads NAME's trace: Go 1.19's for
# a classic one, Go 1.27's for Go's current format.
tool_for() {
    if [ -n "${current[$1]:-}" ]; then echo "$trace_tool_new"; else echo "$trace_tool"; fi
}

# sysblocks NAME [G]: the system calls (of G) that blocked and gave up
# their P. A classic trace says so with GoSysBlock. In Go's current
# format every call is a state of its own, which the model shows as a
# classic call that blocked (GoSysCall, GoSysBlock, GoSysExit); one that
# did not block is started again at once, at its exit's time (GoSyscallEnd),
# while one that blocked (GoSyscallEndBlocked) waits for a P.
sysblocks() {
    if [ -z "${current[$1]:-}" ]; then
        count "$1" GoSysBlock "${2:-}"
        return
    fi
    awk -v g="${2:-}" '
        exit_ts != "" { if (!($2 == "GoStart" && $1 == exit_ts)) n++; exit_ts = "" }
        $2 == "GoSysExit" && (g == "" || $4 == "g=" g) { exit_ts = $1 }
        END { if (exit_ts != "") n++; print n + 0 }' "$out/$1.d"
}

# expect_sys_pairs NAME: every blocked system call (GoSysBlock) has its exit.
expect_sys_pairs() {
    [ "$(count "$1" GoSysExit)" -eq "$(count "$1" GoSysBlock)" ] ||
        fail "$1: GoSysExit and GoSysBlock differ"
}

# linked NAME G EVENTS...: GoUnblocks of G that end one of its waits of
# these kinds (a GoBlock* or GoSleep of G) and were written by another
# goroutine, its waker: not by G0 (a wait that ended with no waker known).
linked() {
    local name=$1 g=$2
    shift 2
    awk -v g="g=$g" -v kinds=" $* " '
        $2 ~ /^Go(Block|Sleep)/ && $4 == g { last = $2 }
        $2 == "GoUnblock" && $6 == g && $4 != "g=0" && $4 != g && index(kinds, " " last " ") { n++ }
        END { print n + 0 }' "$out/$name.d"
}

# unlinked_alone NAME G OTHER: G's GoBlockNet waits that G ended itself
# while OTHER was not in a GoBlockNet wait of its own, neither when G's
# began nor when it ended.
unlinked_alone() {
    awk -v g="g=$2" -v o="g=$3" '
        $2 ~ /^Go(Block|Sleep)/ { last[$4] = $2 }
        $2 == "GoBlockNet" { inwait[$4] = 1; if ($4 == g) other = inwait[o] }
        $2 == "GoStart" { inwait[$6] = 0 }
        $2 == "GoUnblock" && $6 == g && last[g] == "GoBlockNet" && ($4 == "g=0" || $4 == g) &&
            !inwait[o] && !other { n++ }
        END { print n + 0 }' "$out/$1.d"
}

# unblocked_by NAME G WAKER: GoUnblocks of G that WAKER wrote.
unblocked_by() {
    awk -v g="g=$2" -v w="g=$3" '$2 == "GoUnblock" && $6 == g && $4 == w { n++ } END { print n + 0 }' \
        "$out/$1.d"
}

# wakers_of NAME G EVENT: who ended each of G's EVENT waits, one goroutine
# id per wait, in order ("self" for a wait G ended itself).
wakers_of() {
    awk -v g="g=$2" -v kind="$3" '
        $2 ~ /^Go(Block|Sleep)/ && $4 == g { last = $2 }
        $2 == "GoUnblock" && $6 == g && last == kind {
            w = $4; sub("g=", "", w); print ($4 == g || $4 == "g=0") ? "self" : w; last = "" }' "$out/$1.d"
}

# expect_linked NAME G EVENTS...: every wait of G of these kinds was ended
# by another goroutine, which wrote its GoUnblock.
expect_linked() {
    local name=$1 g=$2 ev waits=0 got
    shift 2
    for ev in "$@"; do waits=$((waits + $(count "$name" "$ev" "$g"))); done
    got=$(linked "$name" "$g" "$@")
    [ "$got" -eq "$waits" ] || fail "$name: g $g: $got of its $waits $* waits ended by a waker"
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
    # Each side's every wait is ended by the other, which writes its
    # GoUnblock. (main's join of the partner races the partner's end: a
    # joiner that comes after it has no waker left.)
    expect_linked pingpong "$m" GoBlockCond
    expect_linked pingpong "$p" GoBlockCond
    [ "$(unblocked_by pingpong "$m" "$p")" -ge 299 ] || fail "pingpong: main's waits not ended by the partner"
    [ "$(unblocked_by pingpong "$p" "$m")" -ge 299 ] || fail "pingpong: the partner's waits not ended by main"
    # The blocking profile names the call and its callers.
    "$(tool_for pingpong)" -pprof=sync "$out/pingpong.trace" >"$out/sync.pprof" 2>/dev/null ||
        fail "pingpong: go tool trace -pprof=sync failed"
    go tool pprof -traces "$out/sync.pprof" >"$out/sync.txt" 2>/dev/null ||
        fail "pingpong: go tool pprof failed"
    grep -A1 'pthread_cond_wait' "$out/sync.txt" | has partner ||
        fail "pingpong: no pthread_cond_wait called from partner in the sync profile"
    grep -A1 'pthread_cond_wait' "$out/sync.txt" | has main ||
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
    # A pipe wait shows as Go shows one, a network poller wait.
    expect pipe "GoBlockNet $m" -ge 1
    expect pipe "GoBlockNet $w" -ge 1
    [ "$(sysblocks pipe)" -eq 0 ] || fail "pipe: $(sysblocks pipe) system calls blocked, want 0"
    expect pipe "GoSleep $w" -eq 1
    expect pipe "GoSleep $m" -eq 1
    # Who ended each wait: the other side's read or write, which claims
    # the waiter before its call and again after it. Not linked, by design
    # (docs/run.md): a wait ended from inside the other side's own wait
    # (its blocked read, once woken, took its data and so made room). Of
    # the others, one may be missed, and one in ten (a waker's claim lost
    # to a waiter the kernel woke first).
    local n waits
    waits=$(($(count pipe GoBlockNet "$m") + $(count pipe GoBlockNet "$w")))
    n=$(($(unlinked_alone pipe "$m" "$w") + $(unlinked_alone pipe "$w" "$m")))
    [ "$n" -le $((1 + waits / 10)) ] || fail "pipe: $n of $waits pipe waits not ended by the other side"
    [ "$(unblocked_by pipe "$m" "$w")" -ge 1 ] || fail "pipe: no read ended by the writer"
    [ "$(unblocked_by pipe "$w" "$m")" -ge 1 ] || fail "pipe: no write ended by the reader"
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
    [ "$(sysblocks tcp)" -eq 0 ] || fail "tcp: $(sysblocks tcp) system calls blocked, want 0"
    # Client: connect, send and recv per round; server: accept, then poll,
    # recv and send per round.
    expect tcp "GoSysCall $m" -ge 401
    expect tcp "GoSysCall $s" -ge 601
    # Both ends are the process's (connect's and accept's sockets paired):
    # the server's send ends the client's wait for the echo (none when the
    # connection is not paired). All but two: the client's first waits,
    # in connect and the first round, end while the server still waits in
    # its poll for the connection, with no call of the server's (two in
    # eleven of twelve runs, in both formats). How many waits there are
    # is the machine's: a client that finds the echo there waits not at
    # all (3 to 201 of 200 rounds), so "most" of them would be a bet.
    local waits got
    waits=$(count tcp GoBlockNet "$m")
    got=$(linked tcp "$m" GoBlockNet)
    [ "$((waits - got))" -le 2 ] || fail "tcp: $got of the client's $waits network waits ended by the server"
}

case_compute() {
    traced compute 0 "$bindir/run_compute" 2000000 2
    has_output compute '^compute threads=2 iterations=2000000 '
    expect_goroutines compute 2
    expect compute GoEnd -eq 2
    # --cpu: CPU samples (Go's CPU sample batches; in the classic format,
    # the `go 1.19 trace` header), each of a goroutine of the program's, at
    # least one per computing thread.
    run_opts=(--cpu=250)
    traced cpu 0 "$bindir/run_compute" 40000000 2
    run_opts=()
    "$ctrace" check "$out/cpu.trace" | grep -Eq 'go 1\.(19|2[2-9]) trace' || fail "cpu: not a trace with CPU samples"
    local g
    for g in $(goroutines cpu); do
        [ "$(awk -v g="g=$g" '$2 == "CPUSample" && $NF == g { n++ } END { print n + 0 }' "$out/cpu.d")" -ge 1 ] ||
            fail "cpu: no CPU sample of g $g"
    done
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
    [ "$(sysblocks fork "$m")" -ge 1 ] || fail "fork: main's waits never blocked"
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

# retitled NAME WANT CHILD_TRACE PARENT_TRACE: ctrace stats gives the
# child's command line as WANT, and the export names the child "WANT (pid
# N)" and the parent by its program.
retitled() {
    local name=$1 want=$2 child=$3 parent=$4 pid=${3##*.pid}
    "$ctrace" stats "$child" >"$out/$name.child.stats" 2>&1 || fail "$name: ctrace stats failed"
    has -E "^  process +run_retitle \\(pid $pid, parent [0-9]+\\) on [^ ]+: $want\$" <"$out/$name.child.stats" ||
        fail "$name: stats does not give the child's command line as '$want': $(sed -n 2p "$out/$name.child.stats")"
    "$ctrace" export -f json -o "$out/$name.json" "$parent" "$child" 2>/dev/null || fail "$name: ctrace export failed"
    # The last name each process is given.
    jq -r '[.traceEvents[] | select(.ph == "M" and .name == "process_name")] | group_by(.pid)[] | last | .args.name' \
        "$out/$name.json" >"$out/$name.names"
    has -xF "$want (pid $pid)" <"$out/$name.names" && has -xE 'run_retitle \(pid [0-9]+\)' <"$out/$name.names" ||
        fail "$name: the export names the processes $(tr '\n' ';' <"$out/$name.names"), not '$want (pid $pid)'"
}

case_retitle() {
    # A daemon's worker retitles itself after the fork (nginx's and
    # PostgreSQL's write their role over their arguments): its trace,
    # followed with -f, names it by its title as ps does, in ctrace stats
    # and in the export; the parent, which kept its arguments, by its
    # program. The child retitles itself again as it ends ("retitled:
    # worker ending", as nginx's worker says "is shutting down").
    #
    # A child of 50 ms ends within its first generation: the log of its
    # title is the one its exit writes.
    run_opts=(-f)
    traced retitle 0 "$bindir/run_retitle" 50 arguments that make room for a title
    run_opts=()
    local children=("$out"/retitle.trace.pid*) i found=
    [ -e "${children[0]}" ] && [ "${#children[@]}" -eq 1 ] || fail "retitle: want one child's trace: ${children[*]}"
    retitled retitle "retitled: worker ending" "${children[0]}" "$out/retitle.trace"

    # A child that runs on: the tracer reads its title again once a
    # generation (here 20 ms), so the trace's later generations carry it,
    # looked for until there; then the child is told to end. It is named
    # by the title its generations gave, not by the one it ends with.
    mkdir -p "$out/retitle_run"
    CTRACE_GEN_MS=20 timeout -k 5 "$LIMIT" "$ctrace" run -f -o "$out/retitle_run/t.trace" -- \
        "$bindir/run_retitle" 60000 arguments that make room for a title >/dev/null 2>&1 &
    local runner=$!
    for i in $(seq 1 300); do
        children=("$out"/retitle_run/t.trace.pid*)
        if [ -s "${children[0]}" ] && "$ctrace" dump "${children[0]}" 2>/dev/null | has -F 'cmdline=retitled: worker"'; then
            found=1
            break
        fi
        sleep 0.1
    done
    [ -e "${children[0]}" ] && kill -USR1 "${children[0]##*.pid}" 2>/dev/null
    wait "$runner" || fail "retitle_run: ctrace run ended with status $?"
    [ -n "$found" ] || fail "retitle_run: after 30 s, no generation of the running child's trace gives its title"
    retitled retitle_run "retitled: worker" "${children[0]}" "$out/retitle_run/t.trace"
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
    for mode in term:143 handler:0 segv:139 abort:134 _exit:7 exit:5 pthread_exit:0 pthread_exit_last:0 \
        pthread_exit_alone:0 prestart:0; do
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
    # main and the thread that ends last; what runs after their
    # pthread_exit (traced() compared the lines with the untraced ones)
    expect sig_pthread_exit GoEnd -eq 2
    has_output sig_pthread_exit '^destructor of the last thread$'
    expect sig_pthread_exit_last GoEnd -eq 2
    has_output sig_pthread_exit_last '^cleanup of the last thread$'
    expect sig_pthread_exit_alone GoEnd -eq 1
    has_output sig_pthread_exit_alone '^destructor, second round$'
    has_output sig_pthread_exit_alone '^atexit$'
    # main ends; the thread from before the trace made no traced call, so
    # it has no goroutine (and it ended unseen: the process still exited).
    expect_goroutines sig_prestart 0
    expect sig_prestart "GoEnd $(main_g sig_prestart)" -eq 1
    # free and realloc of pointers malloc never gave: glibc's message and
    # SIGABRT, as untraced (the shim read the block's size before the free
    # and crashed first). ASan's allocator, which an ASan build of the shim
    # brings, says otherwise, untraced or not: a plain build only.
    [ -z "${CTRACE_TEST_SANITIZE:-}" ] || return 0
    local msg
    for mode in free_stack free_inside realloc_inside; do
        traced "sig_$mode" 134 "$bindir/run_signals" "$mode"
        msg=$("$bindir/run_signals" "$mode" 2>&1 >/dev/null) && fail "sig_$mode: untraced, it returned"
        [ -n "$msg" ] && grep -qxF "$msg" "$out/sig_$mode.err" ||
            fail "sig_$mode: glibc's '$msg' not on stderr: $(cat "$out/sig_$mode.err")"
    done
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

# A program that takes the descriptors away (tests/preload/closer.c): its
# data file must be what it is untraced, and the trace whole, holding its
# ten threads, each thread's sleep and the writes it made after the close.
case_closer() {
    local mode
    for mode in loop close_range closefrom proc dup2; do
        "$bindir/run_closer" "$mode" "$out/$mode.untraced" >/dev/null || fail "untraced closer $mode failed"
        traced "closer_$mode" 0 "$bindir/run_closer" "$mode" "$out/$mode.data"
        same_file "closer_$mode" "$out/$mode.untraced" "$out/$mode.data"
        expect_goroutines "closer_$mode" 10
        expect "closer_$mode" GoSleep -eq 10
        expect "closer_$mode" GoSysCall -ge 200
    done
    # After an exec, /proc/self/fd lists no descriptor of the tracer
    # (traced() compares the listing with the untraced one).
    traced closer_list 0 "$bindir/run_closer" list -
    moved closer_list 1
    # A daemon, followed with -f: fork, setsid, fork, close 0 to 1023.
    run_opts=(-f)
    traced closer_daemon 0 "$bindir/run_closer" daemon "$out/daemon.data"
    run_opts=()
    "$bindir/run_closer" daemon "$out/daemon.untraced" >/dev/null 2>"$out/daemon.untraced.err"
    local pid upid
    pid=$(sed -n 's/^closer: daemon pid //p' "$out/closer_daemon.err")
    upid=$(sed -n 's/^closer: daemon pid //p' "$out/daemon.untraced.err")
    [ -n "$pid" ] && [ -n "$upid" ] || fail "closer_daemon: no daemon pid"
    SECONDS=0
    while kill -0 "$pid" 2>/dev/null || kill -0 "$upid" 2>/dev/null; do
        [ "$SECONDS" -lt "$LIMIT" ] || fail "closer_daemon: the daemon did not end"
        sleep 0.1
    done
    same_file closer_daemon "$out/daemon.untraced" "$out/daemon.data"
    local t
    t=$(ls "$out"/closer_daemon.trace.pid*.pid"$pid" 2>/dev/null) || fail "closer_daemon: no trace of the daemon"
    mv "$t" "$out/closer_daemond.trace"
    decode closer_daemond
    expect_goroutines closer_daemond 10
    expect closer_daemond GoSysCall -ge 200
}

# Who ended each wait (tests/preload/wakers.c): the releasing thread writes
# the GoUnblock of the one it wakes, exactly once per wait.
case_wakers() {
    local m w ws n
    traced chain 0 "$bindir/run_wakers" chain
    m=$(main_g chain)
    ws=$(goroutines chain)
    expect_goroutines chain 4
    for w in $ws; do
        expect chain "GoBlockSync $w" -eq 1
        expect_linked chain "$w" GoBlockSync
    done
    # main wakes the first; each of the others is woken by a worker.
    n=0
    for w in $ws; do n=$((n + $(unblocked_by chain "$w" "$m"))); done
    [ "$n" -eq 1 ] || fail "chain: main ended $n of the workers' waits, want 1"

    traced barrier 0 "$bindir/run_wakers" barrier
    n=0
    for w in $(goroutines barrier); do
        expect_linked barrier "$w" GoBlockSync
        n=$((n + $(count barrier GoBlockSync "$w")))
    done
    [ "$n" -eq 3 ] || fail "barrier: $n waits at the barrier, want 3"

    traced join 0 "$bindir/run_wakers" join
    m=$(main_g join)
    expect join "GoBlockSync $m" -eq 1
    expect_linked join "$m" GoBlockSync

    traced sem 0 "$bindir/run_wakers" sem
    m=$(main_g sem)
    expect sem "GoBlockSync $m" -eq 1
    expect_linked sem "$m" GoBlockSync

    traced broadcast 0 "$bindir/run_wakers" broadcast
    m=$(main_g broadcast)
    for w in $(goroutines broadcast); do
        expect broadcast "GoBlockCond $w" -eq 1
        expect_linked broadcast "$w" GoBlockCond
        [ "$(unblocked_by broadcast "$w" "$m")" -ge 1 ] || fail "broadcast: g $w not woken by main"
    done

    # Timeouts racing signals, and a thread that signals and ends: exactly
    # one GoUnblock per wait, whoever wrote it; some by the signaller.
    traced race 0 "$bindir/run_wakers" race
    m=$(main_g race)
    local waits=0 ev
    for ev in GoBlockCond GoBlockSync GoSleep; do waits=$((waits + $(count race "$ev" "$m"))); done
    n=$(awk -v g="g=$m" '$2 == "GoUnblock" && $6 == g { n++ } END { print n + 0 }' "$out/race.d")
    [ "$n" -eq "$waits" ] || fail "race: $n GoUnblocks of main for $waits waits"
    [ "$(linked race "$m" GoBlockCond)" -ge 1 ] || fail "race: no wait of main ended by a signal"

    traced c11 0 "$bindir/run_wakers" c11
    for w in $(goroutines c11); do expect_linked c11 "$w" GoBlockSync; done
    m=$(main_g c11)
    expect_linked c11 "$m" GoBlockCond
    [ "$(linked c11 "$m" GoBlockCond)" -ge 1 ] || fail "c11: main's cnd_wait not ended by the signaller"

    # A thread cancelled in its wait leaves no entry behind on its stack
    # (which the next thread reuses): the program ends, and the next
    # waiter on each object is woken by main.
    traced cancel 0 "$bindir/run_wakers" cancel
    has_output cancel '^wakers cancel$'
    m=$(main_g cancel)
    n=0
    for w in $(goroutines cancel); do n=$((n + $(unblocked_by cancel "$w" "$m"))); done
    [ "$n" -eq 3 ] || fail "cancel: main ended $n waits, want 3 (a condition variable's, a semaphore's, a pipe's)"

    # The same for a wait left with siglongjmp out of a signal handler.
    traced jump 0 "$bindir/run_wakers" jump
    has_output jump '^wakers jump$'
    m=$(main_g jump)
    w=$(goroutines jump)
    [ "$(unblocked_by jump "$w" "$m")" -eq 1 ] || fail "jump: the second read not ended by main's write"

    # A read-write lock: a writer's unlock ends the readers' waits, the
    # last reader's the writer's (not the first reader's).
    traced rwlock 0 "$bindir/run_wakers" rwlock
    m=$(main_g rwlock)
    ws=$(goroutines rwlock)
    expect_goroutines rwlock 3
    local r1 r2 wr
    read -r r1 r2 wr <<<"$(echo $ws)"
    for w in $r1 $r2; do
        expect rwlock "GoBlockSync $w" -eq 1
        [ "$(wakers_of rwlock "$w" GoBlockSync)" = "$m" ] || fail "rwlock: reader g $w not woken by main's unlock"
    done
    expect rwlock "GoBlockSync $wr" -eq 1
    [ "$(wakers_of rwlock "$wr" GoBlockSync)" = "$r2" ] ||
        fail "rwlock: writer g $wr not woken by the last reader (g $r2)"

    # An eventfd, and both directions of a socketpair.
    traced eventfd 0 "$bindir/run_wakers" eventfd
    m=$(main_g eventfd)
    w=$(goroutines eventfd)
    [ "$(unblocked_by eventfd "$w" "$m")" -eq 1 ] || fail "eventfd: the read not ended by main's write"
    traced socketpair 0 "$bindir/run_wakers" socketpair
    m=$(main_g socketpair)
    ws=$(goroutines socketpair)
    expect_goroutines socketpair 2
    for w in $ws; do
        [ "$(unblocked_by socketpair "$w" "$m")" -eq 1 ] || fail "socketpair: g $w's wait not ended by main"
    done
}

# bash (tests/preload/children.sh) keeps its own copy of the environment,
# built from main's envp, with its own getenv, setenv and unsetenv: the
# shim must take its variables out before main, in place. The children
# bash starts then get none of them (/proc/self/environ: the environment
# the kernel gave them, which is what a static program sees), run
# untraced, and the trace left is bash's own, not the last child's over
# it. With -f each child is traced, into a file of its own, as before.
case_bash() {
    mkdir -p "$out/bash"
    (cd "$out/bash" && traced bash 0 bash "$here/children.sh" "$out/bash.pid" environ)
    decode bash
    local pid files
    pid=$(cat "$out/bash.pid")
    grep -Eq "^[0-9]+ ProcStart p=[0-9]+ g=0 off=[0-9]+ thread=$pid\$" "$out/bash.d" ||
        fail "bash: not the trace of bash (process $pid)"
    # 22 children: a fork and a wait for each.
    expect bash GoSysCall -ge 44
    files=$(find "$out" -name 'bash.trace*' | wc -l)
    [ "$files" -eq 1 ] && [ -z "$(ls -A "$out/bash")" ] ||
        fail "bash: traces of children: $(cd "$out" && find . -name '*.trace*' | grep -v '^./bash.trace$')"

    run_opts=(-f)
    (cd "$out/bash" && traced bash_f 0 bash "$here/children.sh" "$out/bash_f.pid")
    run_opts=()
    decode bash_f
    pid=$(cat "$out/bash_f.pid")
    grep -Eq "^[0-9]+ ProcStart p=[0-9]+ g=0 off=[0-9]+ thread=$pid\$" "$out/bash_f.d" ||
        fail "bash_f: not the trace of bash (process $pid)"
    expect bash_f GoSysCall -ge 40
    # Each of the 20 /bin/true: the forked bash (FILE.pid<PID>.1), then
    # the program it became (FILE.pid<PID>).
    local t n=0
    for t in "$out"/bash_f.trace.pid*; do
        [ -e "$t" ] || continue
        "$ctrace" check "$t" >/dev/null || fail "bash_f: ctrace check rejects $t"
        n=$((n + 1))
    done
    [ "$n" -ge 40 ] || fail "bash_f: $n traces of children, want 40 at least"
    [ -z "$(ls -A "$out/bash")" ] || fail "bash_f: traces in the working directory"
}

# `ctrace run` starts PROG as execvp does, as env and a shell do: a file
# without #! runs under /bin/sh (which is traced), PATH is searched as
# glibc searches it (past a file of that name that cannot be run), and a
# program not found or that cannot be run gives env's status (127, 126)
# and error.
case_launch() {
    mkdir -p "$out/bin" "$out/noexec" "$out/dir"
    printf 'echo "script: $0 $*"\nexit 3\n' >"$out/bin/noshebang"
    chmod +x "$out/bin/noshebang"
    traced noshebang 3 "$out/bin/noshebang" a b
    has_output noshebang "^script: $out/bin/noshebang a b\$"
    printf 'echo "not this one"\n' >"$out/noexec/noshebang"
    PATH=$out/noexec:$out/bin:$PATH traced path 3 noshebang c
    has_output path "^script: $out/bin/noshebang c\$"
    printf 'echo plain\n' >"$out/plain"
    local env path p st want msg wmsg
    env=$(command -v env)
    for path in "$PATH" "$out/noexec"; do
        for p in nope ./nope "$out/plain" "$out/dir" "$out/plain/x" noshebang ''; do
            want=0 st=0
            PATH=$path "$env" "$p" >/dev/null 2>"$out/env.err" || want=$?
            PATH=$path "$ctrace" run -o "$out/err.trace" -- "$p" >/dev/null 2>"$out/err.err" || st=$?
            wmsg=$(sed 's/.*: //' "$out/env.err")
            msg=$(sed 's/.*: //' "$out/err.err")
            [ "$st" -eq "$want" ] && [ "$msg" = "$wmsg" ] && [ "$want" -ge 126 ] ||
                fail "'$p' in PATH=$path: status $st, '$(cat "$out/err.err")'; env: $want, '$(cat "$out/env.err")'"
        done
    done
}

# A program of one thread enters namespaces (tests/preload/userns.c): the
# kernel refuses unshare(CLONE_NEWUSER) and setns to a mount namespace
# to a process of several threads, and the tracer's threads must not make
# it one (src/preload/ns.c pauses them). Each call's result is the same
# as untraced (traced() compares), and so are `unshare -U -r` and
# `nsenter -m`'s; the trace holds what came before and after each pause,
# whole: in both formats, with the flight recorder, and in a child with -f.
case_userns() {
    # 30000 writes: a buffer (64 KiB) and more go to the file before the
    # pause, and the next writer must go on after them.
    local m n=30000
    traced userns 0 "$bindir/run_userns" $n
    has_output userns '^unshare user, two threads: -1 Invalid argument$'
    m=$(main_g userns)
    expect userns "GoSysCall $m" -ge $((2 * n + 3))
    expect_goroutines userns 1
    expect userns GoEnd -eq 1
    # The same calls through syscall(): the shim's syscall sends them to
    # the same wrappers.
    traced userns_syscall 0 "$bindir/run_userns" $n syscall
    new_format=1
    run_opts=(--format=go1.22)
    traced userns_go122 0 "$bindir/run_userns" $n
    run_opts=(--flight --flight-at-exit)
    traced userns_flight 0 "$bindir/run_userns" $n
    run_opts=()
    new_format=0
    local c
    for c in userns_go122 userns_flight; do
        grep -Eq "go 1.22 trace, [0-9]{5,} events, 2 goroutines" "$out/$c.d" ||
            fail "$c: want 2 goroutines and the writes' events: $(cat "$out/$c.d")"
    done
    mkdir -p "$out/fork"
    run_opts=(-f)
    (cd "$out/fork" && traced userns_fork 0 "$bindir/run_userns" $n fork)
    run_opts=()
    decode userns_fork
    local t
    t=$(ls "$out"/userns_fork.trace.pid* 2>/dev/null) || fail "userns_fork: no trace of the child"
    mv "$t" "$out/userns_child.trace"
    decode userns_child
    expect userns_child GoSysCall -ge $((2 * n + 3))
    # The tools themselves: unshare, then the program it execs.
    local st
    st=$(untraced 0 unshare -U -r id)
    traced unshare "$st" unshare -U -r id
    moved unshare 1
    st=$(untraced 0 nsenter -t $$ -m -- echo entered)
    traced nsenter "$st" nsenter -t $$ -m -- echo entered
    moved nsenter 1
    # A new pid namespace: the process that unshares it may start no thread
    # after (a thread would be in the other namespace), nor may an image
    # it execs: their traces are written by the thread that stops them,
    # across a second pause (of no thread) too.
    # LeakSanitizer stops the world at exit with a thread of its own,
    # which such a process cannot start: not under ASan (its leaks are
    # looked for in the other cases).
    local asan_opts=${ASAN_OPTIONS-}
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    traced userns_pid 0 "$bindir/run_userns" $n pid
    expect userns_pid "GoSysCall $(main_g userns_pid)" -ge $((3 * n + 3))
    st=$(untraced 0 unshare -U -r -m -p -f --mount-proc sh -c 'echo pid $$')
    traced unshare_pid "$st" unshare -U -r -m -p -f --mount-proc sh -c 'echo pid $$'
    [ ! -s "$out/unshare_pid.err" ] || fail "unshare_pid: stderr: $(cat "$out/unshare_pid.err")"
    export ASAN_OPTIONS=$asan_opts
    st=$(untraced 0 unshare -U -r -p sh -c 'echo in; /bin/echo child')
    traced unshare_pid_exec "$st" unshare -U -r -p sh -c 'echo in; /bin/echo child'
    [ ! -s "$out/unshare_pid_exec.err" ] || fail "unshare_pid_exec: stderr: $(cat "$out/unshare_pid_exec.err")"
    moved unshare_pid_exec 1
    # nsenter into namespaces where the shim's file is not (a container's):
    # the program it execs runs untraced, and the loader says nothing of a
    # preload it cannot find on its stderr.
    local shimdir pid
    shimdir=$(cd "$(dirname "$ctrace")/../lib" && pwd)
    unshare -U -r -m sh -c "mount -t tmpfs none '$shimdir' && echo \$\$ >'$out/hidden.pid' && exec sleep 60" \
        >/dev/null 2>&1 </dev/null &
    SECONDS=0
    until [ -s "$out/hidden.pid" ]; do
        [ "$SECONDS" -lt 10 ] || fail "hidden: no namespace without the shim (unshare -U -r -m)"
        sleep 0.05
    done
    pid=$(cat "$out/hidden.pid")
    st=$(untraced 0 nsenter -t "$pid" -U -m -- /bin/echo entered)
    traced hidden "$st" nsenter -t "$pid" -U -m -- /bin/echo entered
    kill "$pid"
    [ ! -s "$out/hidden.err" ] || fail "hidden: stderr: $(cat "$out/hidden.err")"
    [ ! -e "$out/hidden.trace.1" ] || fail "hidden: the program nsenter ran was traced"
    # Go's parsers, not their pages (seconds a trace in each Go): what a
    # pause could break is the file, and pages are the same code on every
    # case's traces. Each is parsed above by Go 1.19; these are the two of
    # the plain trace around the pauses.
    export GO_COMPAT_PARSE_ONLY=1
    traces=("$out/userns.trace" "$out/userns_syscall.trace")
}

# What a wrapper could disturb (tests/preload/state.c): errno after every
# wrapped call, umask, cwd, signals, environment, descriptors, the
# descriptor limit, and what an exec'd child and system() see. traced()
# compares the whole report with the untraced one.
case_state() {
    traced state 0 "$bindir/run_state"
    has_output state '^read \(waits\) +ret=1 errno=4242$'
    # A relative CTRACE_OUT (the environment form) is taken from where the
    # program started: after a chdir, the exec'd image's trace is still
    # written there, not into the program's new directory.
    mkdir -p "$out/rel/sub"
    local shim pre
    shim=$(dirname "$ctrace")/../lib/libctrace-preload.so
    pre=$shim
    if [ "${CTRACE_TEST_SANITIZE:-}" = address ]; then
        pre="$(gcc -print-file-name=libasan.so):$shim"
    fi
    (cd "$out/rel" && timeout -k 5 "$LIMIT" env LD_PRELOAD="$pre" CTRACE_OUT=rel.trace \
        /bin/sh -c "cd sub && exec '$bindir/run_pingpong' 20" >/dev/null) || fail "rel: pingpong failed"
    [ -z "$(ls -A "$out/rel/sub")" ] || fail "rel: a trace in the program's new directory: $(ls "$out/rel/sub")"
    mv "$out/rel/rel.trace" "$out/rel.trace"
    decode rel
    expect rel GoBlockCond -ge 18
}

# Timed waits given times and clocks glibc refuses, on objects free and
# held (tests/preload/timed.c): each call's result, errno and what it took or
# left are the untraced ones (traced() compares the lines). A refused call
# is not tried, nor recorded: main's condition variable waits are the
# eight with a valid time. A NULL time that glibc reads first is a crash
# traced too.
case_timed() {
    traced timed 0 "$bindir/run_timed"
    has_output timed '^sem_timedwait value=1 nsec=1e9: ret=-1 errno=EINVAL value=1$'
    has_output timed '^pthread_clockjoin_np ended past 99: ret=22 errno=0 result=-1 join_after=0$'
    [ "$(wc -l <"$out/timed.out")" -ge 1300 ] || fail "timed: $(wc -l <"$out/timed.out") lines, want 1300"
    expect timed "GoBlockCond $(main_g timed)" -eq 8
    # Under an ASan build the shim brings ASan's runtime, whose own SIGSEGV
    # handler would make the crash an abort: the program's is glibc's.
    local mode st asan_opts=${ASAN_OPTIONS-}
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
    for mode in sem_null cond_null; do
        st=$(untraced 139 "$bindir/run_timed" "$mode")
        traced "timed_$mode" "$st" "$bindir/run_timed" "$mode"
    done
    export ASAN_OPTIONS=$asan_opts
}

# make -j2 building four C files, with -f: make and every child it starts
# (shells, the compiler's driver and passes) trace into files of their own.
# Their traces hold what broke Go 1.23's viewer when a blocking system call
# left its P running (GoSysCall, GoSysBlock, GoSysExit, GoStart, ...,
# GoSched, ProcStop): go_compat.sh serves each with all three Gos.
case_make() {
    command -v make >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 ||
        die "make: make or cc missing"
    local src=$out/src i
    mkdir -p "$src"
    for i in 1 2 3 4; do
        printf 'int f%d(int x) { return x * %d; }\n' "$i" "$i" >"$src/f$i.c"
    done
    printf 'all: f1.o f2.o f3.o f4.o\n%%.o: %%.c\n\t$(CC) -c -o $@ $<\n' >"$src/Makefile"
    # Under an ASan build the shim brings libasan into every child: the
    # compiler's own leaks (it frees nothing on purpose) are not ours.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    # -B: traced() runs make untraced first, which leaves nothing to do.
    run_opts=(-f)
    traced mk 0 make -s -B -j2 -C "$src"
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
    [ "$(sysblocks mk)" -ge 1 ] || fail "mk: make never blocked in a system call"
}

# Waits on futexes through libc's syscall() (src/preload/futex.c): C's
# own, C++20's (libstdc++) and Rust's std (Debian's rustc), each a token
# ring of three threads and more. A wait that slept until its waker's wake
# was linked before its call, and the wake came after: it is a
# GoBlockSync ended by the waker's GoUnblock. Each ring makes its sleeps
# certain whatever the load: in C's, the program counts the waits that
# slept; in the others the holder keeps the token until the kernel says
# the others sleep in their futex wait.
case_futex() {
    local m blocks linked g rounds=100
    traced ring 0 "$bindir/run_futex" ring 300
    local slept
    slept=$(awk '$1 == "slept" { print $2 }' "$out/ring.err")
    [ -n "$slept" ] || fail "ring: the program did not say how many waits slept"
    blocks=0 linked=0
    for g in $(goroutines ring); do
        blocks=$((blocks + $(count ring GoBlockSync "$g")))
        linked=$((linked + $(linked ring "$g" GoBlockSync)))
    done
    [ "$blocks" -ge "$slept" ] || fail "ring: $blocks GoBlockSync for $slept waits that slept"
    [ "$linked" -ge "$slept" ] || fail "ring: $linked waits ended by a waker, $slept slept"
    echo "$prog: futex ring: $slept waits slept, $blocks blocks, $linked ended by a waker"

    traced waitv 0 "$bindir/run_futex" waitv
    for g in $(goroutines waitv); do expect_linked waitv "$g" GoBlockSync; done

    # futex_ring NAME BLOCKS LINKED: NAME's goroutines but main's blocked
    # at least BLOCKS times, and at least LINKED of their waits were ended
    # by a waker.
    futex_ring() {
        m=$(main_g "$1")
        blocks=0 linked=0
        for g in $(goroutines "$1"); do
            blocks=$((blocks + $(count "$1" GoBlockSync "$g")))
            linked=$((linked + $(linked "$1" "$g" GoBlockSync)))
        done
        [ "$blocks" -ge "$2" ] || fail "$1: $blocks GoBlockSync in $rounds rounds, want $2"
        [ "$linked" -ge "$3" ] || fail "$1: $linked of $blocks waits ended by a waker, want $3"
        echo "$prog: $1: $blocks blocks, $linked ended by a waker"
    }
    # Each of the 3 * rounds holdings sees two sleeps on the token, which
    # its notify_all ends (a sleep at the latch, past the ring, may be seen
    # twice): 6 * rounds less a few, all linked.
    traced cxx20 0 "$bindir/run_cxx20" "$rounds"
    futex_ring cxx20 $((5 * rounds)) $((5 * rounds))
    [ "$(linked cxx20 "$m" GoBlockSync)" -ge 1 ] || fail "cxx20: main's waits ended by no waker"

    local rustc=/usr/bin/rustc
    [ -x "$rustc" ] || fail "rust: Debian's rustc is not installed (make test-deps)"
    "$rustc" -O -o "$out/run_rust_sync" "$here/rust_sync.rs" || fail "rust: rustc failed"
    # Each holding sees the next holder asleep, a sleep of its own (it
    # ends before its holding): at least 3 * rounds. Which of the sleeps on
    # the mutex a wake ends is the kernel's choice, the shim's guess: half
    # linked is the floor.
    traced rust 0 "$out/run_rust_sync" "$rounds"
    futex_ring rust $((3 * rounds)) $((3 * rounds / 2))
    # std::thread::Builder::name: each ring thread names itself as it
    # starts (prctl's PR_SET_NAME, through pthread_setname_np).
    local rn
    rn=$("$ctrace" stats --format=csv "$out/rust.trace" |
        awk -F, '/^goroutine,start_function,/ { t = 1; next } t && /^$/ { t = 0 } t && $NF ~ /^"ring-[0-9]+"$/ { print $NF }' |
        sort -u | wc -l)
    [ "$rn" -eq 3 ] || fail "rust: $rn ring threads named ring-N in ctrace stats, want 3"
    # mpsc: main received each message, most of them waiting.
    [ "$(linked rust "$m" GoBlockSync)" -ge $((rounds / 2)) ] ||
        fail "rust: $(linked rust "$m" GoBlockSync) of main's receives ended by the sender"

    # OpenMP (GCC's libgomp, which makes its own system calls): critical
    # sections held a millisecond, a lock, barriers, a loop's end, and
    # main waiting at the end of a region for threads 20 ms slower. At
    # each round's barrier every thread but the last to arrive waits, and
    # the last ends their waits: of the three threads main's team made, at
    # least two each round, whatever the timing.
    traced openmp 0 "$bindir/run_openmp" 20
    rounds=20
    futex_ring openmp $((2 * rounds)) $((2 * rounds))
    local mb ml
    mb=$(count openmp GoBlockSync "$m")
    ml=$(linked openmp "$m" GoBlockSync)
    [ "$ml" -ge 1 ] || fail "openmp: main's waits ($mb) ended by no waker"
    [ $((ml * 2)) -ge "$mb" ] || fail "openmp: $ml of main's $mb waits ended by a waker"
}

# whys NAME WOKEN WHY: waits of the goroutines started by WOKEN (any: '*')
# that ended by themselves for the reason WHY, as ctrace stats
# --format=csv counts them (its "who kept them waiting" rows: woken, waker,
# waker_known, count, ..., why, woken_thread, waker_thread).
whys() {
    "$ctrace" stats --format=csv "$out/$1.trace" |
        awk -F, -v wo="\"$2\"" -v why="\"$3\"" '/^woken_start_function,/ { t = 1; next } t && /^$/ { t = 0 }
            t && (wo == "\"*\"" || $1 == wo) && $3 == 0 && $(NF - 2) == why { n += $4 } END { print n + 0 }'
}

# net_wakes NAME G WAKER: G's GoBlockNet waits that WAKER ended.
net_wakes() {
    wakers_of "$1" "$2" GoBlockNet | awk -v w="$3" '$1 == w { n++ } END { print n + 0 }'
}

# Event loops (tests/preload/loop.c, src/preload/poll.c): a loop thread (main)
# waits in poll, select or epoll; each producer writes once the loop sleeps
# in its call, so that every wait is a block (GoBlockNet) that the
# producer's write ends: the producer writes the loop's GoUnblock. Waits
# that no thread ends end by themselves and say why (ctrace stats).
# The waits for the disk, file locks and signals (src/preload/disk.c,
# sigwait.c; tests/preload/waits.c): every call answers as untraced
# (traced() compares the lines), and each function's system call is in
# the trace, with the program's stack: fsync, fdatasync and syncfs, and
# the seven calls waits.c lets go 30 ms after it saw them asleep, lasting
# that long (25 ms at least: before the shim knew them, they showed no
# system call at all).
case_waits() {
    traced waits 0 "$bindir/run_waits" "$out"
    # Each system call's and each wait on a stream's first frame and
    # length, from Go's own transitions: "sys" and "net" lines.
    "$ctrace" dump "$out/waits.trace" | awk '
        function at(what) { match($0, what "=[0-9]+"); return substr($0, RSTART + length(what) + 1, RLENGTH - length(what) - 1) }
        / Running->Syscall$/ || / Reason="network" .* Running->Waiting$/ {
            g = at("GoID"); begin[g] = at("Time"); kind[g] = /->Syscall$/ ? "sys" : "net"; want = g; next }
        want != "" && /^\t[^\t]/ { split($0, w, " "); fn[want] = w[1]; want = ""; next }
        / Syscall->/ || / Waiting->/ { g = at("GoID")
            if (g in begin) print kind[g], fn[g], at("Time") - begin[g]; delete begin[g] }' >"$out/waits.sys"
    local f longest
    for f in fsync fdatasync syncfs copy_file_range; do
        grep -q "^sys $f " "$out/waits.sys" || fail "waits: no system call of $f in the trace"
    done
    # Waits in a system call, then on a pipe or socket (transfer.c), then
    # on queues and semaphores between processes (ipc.c).
    for f in sys:flock sys:lockf sys:fcntl sys:fcntl64 sys:sigwait sys:sigwaitinfo sys:sigtimedwait sys:sigsuspend sys:pause \
        net:sendfile net:splice net:tee net:recvmmsg net:sendmmsg \
        sys:mq_receive sys:mq_send sys:msgrcv sys:msgsnd sys:semop; do
        longest=$(awk -v k="${f%%:*}" -v f="${f#*:}" '$1 == k && $2 == f && $3 > m { m = $3 } END { print m + 0 }' \
            "$out/waits.sys")
        [ "$longest" -ge 25000000 ] || fail "waits: the longest $f wait lasted $longest ns, not 30 ms"
    done
}

case_loop() {
    local m w call n t
    # The issue's loop: an eventfd and a pipe, two producers, 200 writes each.
    traced epoll 0 "$bindir/run_loop" epoll_wait eventfd,pipe 200
    m=$(main_g epoll)
    expect_goroutines epoll 2
    expect epoll "GoBlockNet $m" -eq 400
    for w in $(goroutines epoll); do
        [ "$(net_wakes epoll "$m" "$w")" -eq 200 ] ||
            fail "epoll: producer g $w ended $(net_wakes epoll "$m" "$w") of the loop's waits, want 200"
    done
    # Every call, on an eventfd, a pipe, a socketpair and a loopback TCP
    # connection; et: epoll_wait edge-triggered. The connect is one more
    # wait of main's, which ends by itself.
    for call in epoll_wait epoll_pwait epoll_pwait2 poll ppoll select pselect et; do
        traced "$call" 0 "$bindir/run_loop" "$call" eventfd,pipe,socketpair,tcp 30
        m=$(main_g "$call")
        expect_goroutines "$call" 4
        expect "$call" "GoBlockNet $m" -eq 121
        for w in $(goroutines "$call"); do
            n=$(net_wakes "$call" "$m" "$w")
            [ "$n" -eq 30 ] || fail "$call: producer g $w ended $n of the loop's waits, want 30"
        done
    done
    # 64 streams open at once, socketpairs and loopback TCP connections,
    # with pipes made between them so that their inodes fall anywhere in
    # the shim's table of pairs (src/preload/io.c), as on a busy machine:
    # each keeps its link, and the writer ends every one of the loop's 64
    # waits in poll. A stream whose pair lost its slot to another's waits
    # unlinked, and its wait ends by itself: with a table of one slot per
    # hash, 40 runs of 40 failed here.
    traced many 0 "$bindir/run_loop" many 64
    m=$(main_g many)
    expect_goroutines many 1
    w=$(goroutines many)
    n=$(net_wakes many "$m" "$w")
    [ "$n" -eq 64 ] || fail "many: the writer ended $n of the loop's 64 waits, want 64"
    # Producers that write when they like: several make the loop's
    # descriptors ready at once, and the first ends the wait; one GoUnblock
    # per wait (the trace is valid), most by a producer: a wait linked just
    # after a producer read the sequence, before its write, ends by itself,
    # and on a loaded machine a producer stays longer in that window (98%
    # linked alone, 88% in a clean clone's CI): half is the floor, which
    # links that broke (none linked) cannot reach.
    traced race 0 "$bindir/run_loop" race eventfd,pipe,socketpair,tcp 300
    m=$(main_g race)
    n=$(count race GoBlockNet "$m")
    t=$(linked race "$m" GoBlockNet)
    [ "$n" -ge 100 ] && [ $((t * 2)) -ge "$n" ] || fail "race: $t of the loop's $n waits ended by a producer"
    # Room in a full pipe: the reader's read of a page ends the loop's
    # waits for output, level-triggered EPOLLOUT in epoll, then POLLOUT.
    traced out 0 "$bindir/run_loop" out 30
    m=$(main_g out)
    w=$(goroutines out)
    expect out "GoBlockNet $m" -eq 60
    [ "$(net_wakes out "$m" "$w")" -eq 60 ] || fail "out: the reader ended $(net_wakes out "$m" "$w") of 60 waits for room"
    # A timeout in every other round: those waits end by themselves, and
    # say so; the others, by the producer.
    traced timeout 0 "$bindir/run_loop" timeout 40
    t=$(awk '$1 == "timeouts" { print $2 }' "$out/timeout.err")
    [ -n "$t" ] && [ "$t" -ge 20 ] || fail "timeout: the program timed out $t times, want 20 or more"
    m=$(main_g timeout)
    w=$(goroutines timeout)
    expect timeout "GoBlockNet $m" -eq $((20 + t))
    [ "$(net_wakes timeout "$m" "$w")" -eq 20 ] || fail "timeout: the producer ended $(net_wakes timeout "$m" "$w") waits, want 20"
    [ "$(whys timeout main timeout)" -eq "$t" ] || fail "timeout: $(whys timeout main timeout) waits ended by their timeout, want $t"
    # A timerfd's expiry, a signal through a signalfd: every wait says so.
    traced timerfd 0 "$bindir/run_loop" timerfd 20
    m=$(main_g timerfd)
    n=$(count timerfd GoBlockNet "$m")
    [ "$n" -ge 1 ] && [ "$(whys timerfd main timer)" -eq "$n" ] ||
        fail "timerfd: $(whys timerfd main timer) of $n waits ended by the timer"
    traced signalfd 0 "$bindir/run_loop" signalfd 20
    m=$(main_g signalfd)
    expect signalfd "GoBlockNet $m" -eq 20
    [ "$(whys signalfd main signal)" -eq 20 ] || fail "signalfd: $(whys signalfd main signal) of 20 waits ended by the signal"
    # poll and select on no descriptor: sleeps.
    traced sleep 0 "$bindir/run_loop" sleep 20
    m=$(main_g sleep)
    expect sleep "GoSleep $m" -eq 40
    expect sleep "GoBlockNet $m" -eq 0
}

# start_fn NAME G: the start function of G, as ctrace stats names it.
# is_start NAME G FN: G's start function is FN. In an ASan build every
# thread's is ASan's asan_thread_start(void*) (demangled), which its pthread_create hands the
# shim in place of the program's: there the links are checked, not names.
is_start() {
    local f
    f=$(start_fn "$1" "$2")
    [ "$f" = "$3" ] || { [ "${CTRACE_TEST_SANITIZE:-}" = address ] && [ "$f" = "asan_thread_start(void*)" ]; }
}

start_fn() {
    "$ctrace" stats --format=csv "$out/$1.trace" |
        awk -F, -v g="$2" '/^goroutine,start_function,/ { t = 1; next } t && /^$/ { t = 0 }
            t && $1 == g { gsub(/"/, "", $2); print $2; exit }'
}

# Node.js (Debian's nodejs) reading files through libuv's thread pool
# (tests/preload/readfiles.js): a pool thread ("worker") posts each request's
# completion to the main loop with a write to an eventfd, which ends the
# loop's wait in epoll_pwait.
case_node() {
    # Debian's build, not ours: its leaks at exit are not ASan's to judge here.
    [ "${CTRACE_TEST_SANITIZE:-}" != address ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    command -v node >/dev/null 2>&1 || fail "node: Node.js is not installed (make test-deps)"
    local dir=$out/files i m waits linked w n
    mkdir -p "$dir"
    for i in $(seq 1 200); do head -c 4096 /dev/zero >"$dir/f$i"; done
    # All at once (the issue's): before, 10 waits of main, of which 6 had
    # a waker, none in epoll; now those in epoll are ended by the pool.
    # How many there are depends on the machine (main issues the 200
    # requests while the pool answers: on a loaded machine, none).
    traced node_parallel 0 node "$here/readfiles.js" parallel "$dir" 200
    has_output node_parallel '^read 200 files, 819200 bytes$'
    m=$(main_g node_parallel)
    waits=$(count node_parallel GoBlockNet "$m")
    linked=$(linked node_parallel "$m" GoBlockNet)
    [ $((linked * 2)) -ge "$waits" ] ||
        fail "node_parallel: $linked of main's $waits waits in epoll ended by a waker"
    # One after the other: the loop waits for most of the 4 requests of
    # each file (open, fstat, read, close), and the pool thread that did
    # it ends the wait.
    traced node_chain 0 node "$here/readfiles.js" chain "$dir" 100
    has_output node_chain '^read 100 files, 409600 bytes$'
    m=$(main_g node_chain)
    waits=$(count node_chain GoBlockNet "$m")
    n=0
    for w in $(wakers_of node_chain "$m" GoBlockNet | sort -u); do
        [ "$w" != self ] && is_start node_chain "$w" worker &&
            n=$((n + $(net_wakes node_chain "$m" "$w")))
    done
    # How many of the 400 requests main waits for depends on the load (a
    # request done before main's epoll_wait is no wait): 94 in a loaded
    # ASan run. Ten are enough to tell who ended them.
    [ "$waits" -ge 10 ] && [ $((n * 2)) -ge "$waits" ] ||
        fail "node_chain: $n of main's $waits waits in epoll ended by a pool thread (worker)"
    echo "$prog: node: parallel $linked of $(count node_parallel GoBlockNet "$(main_g node_parallel)") waits in epoll ended by a waker, chain $n of $waits by the pool"
}

# memcached (libevent, epoll): a client in another process (mcload.py)
# opens connections one after the other. The dispatcher thread (main)
# accepts each and hands it to a worker thread through the worker's
# notify descriptor: main ends that worker's wait in epoll_wait. The
# clients' requests end the workers' waits from outside, which they say.
case_memcached() {
    # Debian's build, not ours: its leaks at exit are not ASan's to judge here.
    [ "${CTRACE_TEST_SANITIZE:-}" != address ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    command -v memcached >/dev/null 2>&1 || fail "memcached: memcached is not installed (make test-deps)"
    local port pid st=0 m w n=0 conns=50 user=()
    [ "$(id -u)" -ne 0 ] || user=(-u root) # memcached refuses to run as root without it
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    timeout -k 5 "$LIMIT" "$ctrace" run -o "$out/mc.trace" -- memcached "${user[@]}" -l 127.0.0.1 \
        -p "$port" -U 0 -t 4 >"$out/mc.out" 2>"$out/mc.err" &
    pid=$!
    python3 "$here/mcload.py" "$port" "$conns" 10 >"$out/mcload.out" || { kill "$pid"; fail "memcached: the client failed"; }
    kill -TERM "$pid"
    wait "$pid" || st=$?
    [ "$st" -eq 0 ] || { cat "$out/mc.err"; fail "memcached: exit status $st, want 0"; }
    decode mc
    m=$(main_g mc)
    for w in $(awk '$2 == "GoCreate" && $4 != "g=0" { sub("g=", "", $6); print $6 }' "$out/mc.d"); do
        n=$((n + $(net_wakes mc "$w" "$m")))
    done
    [ $((n * 2)) -ge "$conns" ] ||
        fail "memcached: $n workers' waits ended by the dispatcher, for $conns connections"
    [ "$(whys mc '*' outside)" -ge "$conns" ] ||
        fail "memcached: $(whys mc '*' outside) waits ended from outside, for $conns connections of 10 requests"
    # Its worker threads by the name memcached gives each (its creator's
    # pthread_setname_np of the new thread), in ctrace stats: Debian's
    # binary is stripped, so their start functions tell nothing.
    local named
    named=$("$ctrace" stats --format=csv "$out/mc.trace" |
        awk -F, '/^goroutine,start_function,/ { t = 1; next } t && /^$/ { t = 0 } t && $NF == "\"mc-worker\"" { k++ } END { print k + 0 }')
    [ "$named" -eq 4 ] || fail "memcached: $named threads named mc-worker in ctrace stats, want 4 (-t 4)"
    echo "$prog: memcached: $n workers' waits ended by the dispatcher, $(whys mc '*' outside) from outside, $named mc-workers"
}

# redis-server (Debian's, stripped) names its threads from within each:
# bio_close_file, bio_aof_fsync, bio_lazy_free, io_thd_1 (--io-threads 2),
# and jemalloc's background threads, which jemalloc creates behind the
# shim (not through the PLT) and names jemalloc_bg_thd. ctrace stats must
# show each by its name.
case_redis() {
    [ "${CTRACE_TEST_SANITIZE:-}" != address ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 ||
        fail "redis: redis-server is not installed (make test-deps)"
    local pid st=0 i n sock=$out/redis.sock
    timeout -k 5 "$LIMIT" "$ctrace" run -o "$out/redis.trace" -- redis-server --port 0 --unixsocket "$sock" \
        --dir "$out" --save '' --appendonly no --io-threads 2 >"$out/redis.out" 2>&1 &
    pid=$!
    for i in $(seq 200); do
        [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] && break
        sleep 0.05
    done
    for i in $(seq 20); do redis-cli -s "$sock" set "k$i" "v$i" >/dev/null; done
    redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" || st=$?
    [ "$st" -eq 0 ] || { tail -n 5 "$out/redis.out"; fail "redis: exit status $st, want 0"; }
    decode redis
    "$ctrace" stats --format=csv "$out/redis.trace" >"$out/redis.csv"
    for n in bio_close_file bio_aof_fsync bio_lazy_free io_thd_1 jemalloc_bg_thd; do
        grep -q ",\"$n\"$" "$out/redis.csv" ||
            fail "redis: no thread named $n in ctrace stats: $(sed -n '/^goroutine,/,/^$/p' "$out/redis.csv" | awk -F, '{ print $NF }' | tr '\n' ' ')"
    done
    echo "$prog: redis: bio_close_file, bio_aof_fsync, bio_lazy_free, io_thd_1 and jemalloc_bg_thd named"
}

"case_$case_name"
bash "$here/../lib/go_compat.sh" "${traces[@]}"
echo "run_check: $case_name: ${#traces[@]} trace(s) ok"
rm -rf "$out"
