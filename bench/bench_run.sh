#!/usr/bin/env bash
# bench_run.sh - what `ctrace run` costs: each workload untraced and traced,
# side by side.
#
# Usage: bench/bench_run.sh BUILD_DIR [REPS]      (REPS default 7)
#
# The workloads are the test programs of tests/preload/, made bigger:
#   run-pingpong    20000 round trips over a mutex and condition variable
#   run-threadpool  40000 tasks through a 4-worker pool
#   run-pipe        10000 messages of 4 KiB through a pipe
#   run-tcp         10000 echo round trips on 127.0.0.1
#   run-compute     10^8 hash rounds per thread (one thread per CPU),
#                   locking a shared mutex every 10^5
#   run-rust-pingpong   20000 round trips over Rust's Mutex and Condvar
#                   (futexes through syscall(); built with Debian's rustc)
#   run-cxx20-pingpong  20000 round trips over C++20's std::atomic wait
#                   and notify_one (libstdc++'s futexes)
#   run-loop-pingpong   20000 round trips between two threads, each
#                   waiting in epoll_wait for the other's write to an
#                   eventfd (two event loops handing work back and forth)
# and then bench_shim (bench/bench_shim.c): the cost of one interposed call
# that does not wait (uncontended mutex, semaphore, malloc+free, a pipe
# write+read), as the median of REPS runs each way:
#   BENCH name=shim-<case> untraced_ns=<x> traced_ns=<y> added_ns=<y-x>
# Each program times its own work, in wall time (ns=) and in CPU time of
# the whole process (cpu_ns=: every thread, the tracer's writer included),
# so the figures leave out process start and the trace's start and stop;
# the stop (mostly symbolizing stacks) is reported apart, as stop_ms: the
# traced process's wall time minus its work. The REPS repetitions
# interleave the two modes, alternating which goes first, so drifts of a
# shared machine hit both alike; the figures are medians. On a busy
# machine wall time also measures waiting for a CPU (+-15% per run on the
# shared 2-vCPU guest); CPU time does not, so cpu_ratio is the steadier
# figure for what tracing itself costs.
#
# One line per workload on stdout:
#   BENCH name=<w> ratio=<traced/untraced wall> cpu_ratio=<traced/untraced CPU>
#         untraced_ms=<m> traced_ms=<m> stop_ms=<m> trace_kb=<k> reps=<n>
# Progress on stderr.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: ${0##*/} BUILD_DIR [REPS]" >&2; exit 2; }
case $1 in -h | --help) echo "usage: ${0##*/} BUILD_DIR [REPS]"; exit 0 ;; esac
build=$1
reps=${2:-7}
bin=$build/bin
ctrace=$bin/ctrace
for p in ctrace run_pingpong run_threadpool run_pipe run_tcp run_compute run_cxx20 run_loop bench_shim; do
    [ -x "$bin/$p" ] || { echo "${0##*/}: $bin/$p not built" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

readonly WORKLOADS=(
    "run-pingpong run_pingpong 20000"
    "run-threadpool run_threadpool 40000 4"
    "run-pipe run_pipe 10000 4096"
    "run-tcp run_tcp 10000 512"
    "run-compute run_compute 100000000"
    "run-rust-pingpong run_rust_sync pingpong 20000"
    "run-cxx20-pingpong run_cxx20 pingpong 20000"
    "run-loop-pingpong run_loop pingpong 20000"
)

# The Rust program is built here, beside the others (tests/preload/run_check.sh
# builds its own copy): Debian's rustc, as a user's would be.
/usr/bin/rustc -O -o "$bin/run_rust_sync" "$(dirname "$0")/../tests/preload/rust_sync.rs" ||
    { echo "${0##*/}: /usr/bin/rustc failed (Debian's rustc: make bench installs it)" >&2; exit 1; }

now_ns() { date +%s%N; }

# once MODE PROG ARGS...: runs the workload; prints "WORK_NS CPU_NS WALL_NS".
once() {
    local mode=$1 out t0 t1 work cpu
    shift
    t0=$(now_ns)
    if [ "$mode" = traced ]; then
        out=$("$ctrace" run -o "$tmp/t.trace" -- "$bin/$1" "${@:2}")
    else
        out=$("$bin/$1" "${@:2}")
    fi
    t1=$(now_ns)
    work=$(sed -n 's/.* ns=\([0-9]*\).*/\1/p' <<<"$out")
    cpu=$(sed -n 's/.* cpu_ns=\([0-9]*\).*/\1/p' <<<"$out")
    [ -n "$work" ] && [ -n "$cpu" ] || { echo "${0##*/}: $1 printed no ns=/cpu_ns=: $out" >&2; exit 1; }
    echo "$work $cpu $((t1 - t0))"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for w in "${WORKLOADS[@]}"; do
    read -r name prog args <<<"$w"
    : >"$tmp/plain" && : >"$tmp/traced" && : >"$tmp/stop"
    : >"$tmp/plain.cpu" && : >"$tmp/traced.cpu"
    for ((r = 0; r < reps; r++)); do
        order="plain traced"
        [ $((r % 2)) -eq 1 ] && order="traced plain"
        for mode in $order; do
            # shellcheck disable=SC2086  # args: several words
            read -r work cpu wall < <(once "$mode" "$prog" $args)
            echo "$work" >>"$tmp/$mode"
            echo "$cpu" >>"$tmp/$mode.cpu"
            [ "$mode" = traced ] && echo $((wall - work)) >>"$tmp/stop"
        done
        printf '%s: rep %d/%d\r' "$name" $((r + 1)) "$reps" >&2
    done
    printf '\n' >&2
    u=$(median <"$tmp/plain")
    t=$(median <"$tmp/traced")
    uc=$(median <"$tmp/plain.cpu")
    tc=$(median <"$tmp/traced.cpu")
    s=$(median <"$tmp/stop")
    kb=$(( $(stat -c %s "$tmp/t.trace") / 1024 ))
    awk -v n="$name" -v u="$u" -v t="$t" -v uc="$uc" -v tc="$tc" -v s="$s" -v kb="$kb" -v r="$reps" 'BEGIN {
        printf "BENCH name=%s ratio=%.3f cpu_ratio=%.3f untraced_ms=%.1f traced_ms=%.1f stop_ms=%.0f trace_kb=%d reps=%d\n",
            n, t / u, tc / uc, u / 1e6, t / 1e6, s / 1e6, kb, r }'
done

# ---- one call that does not wait ------------------------------------------------
: >"$tmp/shim"
for ((r = 0; r < reps; r++)); do
    "$bin/bench_shim" | sed 's/^/plain /' >>"$tmp/shim"
    "$ctrace" run -o "$tmp/s.trace" -- "$bin/bench_shim" | sed 's/^/traced /' >>"$tmp/shim"
    printf 'shim: rep %d/%d\r' $((r + 1)) "$reps" >&2
done
printf '\n' >&2
for c in $(awk '{ sub("case=", "", $3); print $3 }' "$tmp/shim" | sort -u); do
    u=$(awk -v c="case=$c" '$1 == "plain" && $3 == c { sub("ns_per_op=", "", $4); print $4 }' "$tmp/shim" | median)
    t=$(awk -v c="case=$c" '$1 == "traced" && $3 == c { sub("ns_per_op=", "", $4); print $4 }' "$tmp/shim" | median)
    awk -v c="$c" -v u="$u" -v t="$t" 'BEGIN {
        printf "BENCH name=shim-%s untraced_ns=%.1f traced_ns=%.1f added_ns=%.1f\n", c, u, t, t - u }'
done
