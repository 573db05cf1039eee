#!/usr/bin/env bash
# memcached_kill.sh - a real server traced in Go's current format, killed
# with SIGKILL under load, leaves a trace every command reads.
#
# Usage: tests/preload/memcached_kill.sh CTRACE OUTDIR
#
# Debian's memcached (libevent, epoll; -t 2: a dispatcher, main, and two
# worker threads) runs under `ctrace run` in its default format, Go's
# current one (a generation every 3 s here, not Go's second: a worker
# fills its buffer within one even when the machine's other load leaves
# memcached and its clients little CPU), serving six clients in other
# processes (mcload.py: set and get, connection after connection). After
# 1.5 s of load it is stopped (SIGSTOP, every thread: its trace file no
# longer changes) and looked at: if the file ends inside a generation
# (a busy worker's full buffer went out before the generation ended) and
# what is before it holds two whole generations or more, it is killed
# there with SIGKILL; else it goes on (SIGCONT) for a while and is looked
# at again. So the kill cuts the trace where its writer was, and what the
# checks need is certain, not hoped for; two workers, not four, fill
# their buffers within a generation on a loaded machine too. Then `ctrace
# check`, `dump` and `stats` each read it, exit 0 and warn once, naming
# the byte where the generation left out begins and the file's size;
# check sums up K >= 2 generations; dump prints exactly the events of the
# file's first N bytes, which check --strict accepts as a whole trace of
# K generations, and in them both workers waited in the network 10 times
# or more (served requests).
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 2 "CTRACE OUTDIR" $#
ctrace=$1 out=$2
command -v memcached >/dev/null 2>&1 || die "memcached is not installed (make test-deps)"
# Debian's build, not ours: its leaks at exit are not ASan's to judge here.
[ "${CTRACE_TEST_SANITIZE:-}" != address ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fresh_dir "$out"
t=$out/mc.trace

pid='' clients=()
cleanup() {
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
    for c in "${clients[@]}"; do kill "$c" 2>/dev/null || true; done
}
trap cleanup EXIT

user=()
[ "$(id -u)" -ne 0 ] || user=(-u root) # memcached refuses to run as root without it
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# No timeout(1) in between: the kill must reach memcached itself (ctrace
# run execs it, so this is its pid).
env -u CTRACE_FORMAT CTRACE_GEN_MS=3000 "$ctrace" run -o "$t" -- memcached "${user[@]}" -l 127.0.0.1 \
    -p "$port" -U 0 -t 2 >"$out/mc.out" 2>"$out/mc.err" &
pid=$!
# Served once (mcload waits for the port), then six clients for 1.5 s.
python3 "$here/mcload.py" "$port" 1 1 >/dev/null || die "memcached does not serve: $(cat "$out/mc.err")"
for _ in 1 2 3 4 5 6; do
    python3 "$here/mcload.py" "$port" 1000000 10 >/dev/null 2>&1 &
    clients+=($!)
done
sleep 1.5

# stopped: every thread of memcached stopped (T in /proc/PID/task/*/stat).
stopped() {
    local s
    for s in /proc/"$pid"/task/*/stat; do
        [ "$(sed 's/.*) //' "$s" 2>/dev/null | cut -d' ' -f1)" = T ] || return 1
    done
}

# looks_cut: the (stopped) trace ends inside a generation, and what is
# before it holds 2 generations or more.
looks_cut() {
    "$ctrace" check "$t" >"$out/look.check" 2>"$out/look.err" || return 1
    grep -q "^ctrace: warning: $t: cut short at byte" "$out/look.err" || return 1
    [ "$(sed -nE 's/.* ([0-9]+) generations,.*/\1/p' "$out/look.check")" -ge 2 ]
}

tries=0
for tries in $(seq 300); do
    kill -STOP "$pid"
    for _ in $(seq 500); do stopped && break; sleep 0.01; done
    stopped || die "memcached does not stop"
    looks_cut && break
    kill -CONT "$pid"
    sleep 0.1
    tries=0
done
[ "$tries" -gt 0 ] || die "after 300 looks, never a trace cut inside a generation after two whole ones"
kill -KILL "$pid"
st=0
wait "$pid" || st=$?
pid=
[ "$st" -eq 137 ] || die "memcached exited $st, not by SIGKILL (137)"
for c in "${clients[@]}"; do kill "$c" 2>/dev/null || true; done
clients=()

size=$(stat -c %s "$t")
"$ctrace" check "$t" >"$out/check" 2>"$out/check.err" || die "ctrace check exited $?: $(cat "$out/check.err")"
warn=$(head -n 1 "$out/check.err")
re="^ctrace: warning: $t: cut short at byte ([0-9]+) of $size \\(its writer was killed\\?\\): read the ([0-9]+) whole generations before it, left out the last, incomplete one \\(.*\\); \`ctrace check --salvage $t\` writes them to a file Go's tools open$"
[[ "$(wc -l <"$out/check.err")" -eq 1 && $warn =~ $re ]] || die "ctrace check's stderr is not one warning: $(cat "$out/check.err")"
keep=${BASH_REMATCH[1]} k=${BASH_REMATCH[2]}
[ "$k" -ge 2 ] || die "check read $k generations"
grep -q "^$t: go 1.22 trace, .* $k generations," "$out/check" || die "check sums up other than $k generations: $(cat "$out/check")"
# The same warning from dump and stats, without check's hint.
for cmd in dump stats; do
    "$ctrace" "$cmd" "$t" >"$out/$cmd" 2>"$out/$cmd.err" || die "ctrace $cmd exited $?: $(cat "$out/$cmd.err")"
    [ "$(cat "$out/$cmd.err")" = "${warn%%; \`ctrace check --salvage*}" ] ||
        die "ctrace $cmd does not warn as check does: $(cat "$out/$cmd.err")"
done
# What was read is the file's first $keep bytes: a whole trace.
head -c "$keep" "$t" >"$out/prefix.trace"
"$ctrace" check --strict "$out/prefix.trace" >"$out/prefix.check" ||
    die "the first $keep bytes are not a whole trace"
[ "$(sed 's/^[^:]*: //' "$out/check")" = "$(sed 's/^[^:]*: //' "$out/prefix.check")" ] ||
    die "check read $(cat "$out/check"), the first $keep bytes are $(cat "$out/prefix.check")"
cmp -s "$out/dump" <("$ctrace" dump --strict "$out/prefix.trace") ||
    die "dump prints other events than the first $keep bytes hold"
workers=$(sed -nE 's/.* Reason="network" GoID=([0-9]+) Running->Waiting$/\1/p' "$out/dump" | sort | uniq -c |
    awk '$2 != 1 && $1 >= 10 { n++ } END { print n + 0 }')
# Both workers' (main, G 1, is the dispatcher).
[ "$workers" -ge 2 ] || die "$workers threads besides main waited in the network 10 times or more"
grep -q "^  goroutines *[0-9]" "$out/stats" || die "ctrace stats printed no summary"
echo "$prog: killed after $tries look(s): $size bytes, read $k generations ($keep bytes, $(sed -nE 's/.* ([0-9]+) events,.*/\1/p' "$out/check") events), $workers busy workers; one warning from check, dump and stats"
rm -rf "$out"
