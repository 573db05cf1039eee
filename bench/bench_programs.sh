#!/usr/bin/env bash
# bench_programs.sh - what `ctrace run` costs real programs, as Debian
# ships them: PostgreSQL serving pgbench -S, and a git workload; each
# untraced, traced, and traced with --no-stacks, side by side.
#
# Usage: bench/bench_programs.sh BUILD_DIR [REPS]      (REPS default 5)
#        bench/bench_programs.sh --help
#
# - pgbench-select: a private cluster (initdb once, scale 1, its socket in
#   a scratch directory; as nobody when run as root: PostgreSQL refuses
#   root). Each repetition, in each mode, starts the server (traced:
#   `ctrace run -f` on pg_ctl, so the postmaster and every backend it
#   forks write a trace), runs pgbench -S -c 2 -j 2 -T 10 -P 1 against it,
#   untraced (the load stays the same), and stops it. The figures are of
#   seconds 4 to 8, the steady state: left out are the start (the startup
#   process's trace being written, cold buffers, the backends' fork and
#   trace start) and the end (a backend's trace written as it exits: what
#   a process's start and end cost is in the git figures). tps is
#   pgbench's, per second (-P 1); CPU is that of the two backends (every
#   thread: the tracer's writer too), from /proc, per transaction.
#     BENCH name=pgbench-select[-nostacks] ratio=<untraced tps / traced tps>
#           ratio_min=<r> ratio_max=<r> cpu_ratio=<traced / untraced CPU>
#           untraced_tps=<t> traced_tps=<t> untraced_cpu_us=<us> traced_cpu_us=<us>
#           trace_kb=<k> traces=<n> reps=<n>
#   ratio is the slowdown, as the other ratios are (traced time over
#   untraced), from the medians; ratio_min and ratio_max the range of each
#   repetition's own (its runs are seconds apart). On a shared machine
#   tps also measures waiting for a CPU; cpu_ratio does not.
# - git: in a scratch directory, git init, add of 300 files in 12
#   directories, commit, five more commits, gc, fsck, clone --no-local (so
#   that pack-objects and upload-pack run), grep and log in the clone: one
#   bash script, traced with `ctrace run -f` (bash and every git process,
#   some 80 traces).
#     BENCH name=git[-nostacks] ratio=<traced / untraced wall> cpu_ratio=<CPU>
#           untraced_ms=<m> traced_ms=<m> trace_kb=<k> traces=<n> reps=<n>
#   CPU is user+system of the whole tree of processes (GNU time).
# The REPS repetitions interleave the three modes, rotating which goes
# first, so that drifts of a shared machine hit all alike; the figures are
# medians. Progress on stderr. Skips what is not installed (postgresql,
# git, GNU time: `make bench` installs them).
set -euo pipefail

usage="usage: ${0##*/} BUILD_DIR [REPS]"
case ${1:-} in
-h | --help) echo "$usage"; exit 0 ;;
"") echo "$usage" >&2; exit 2 ;;
esac
build=$1
reps=${2:-5}
ctrace=$(realpath "$build/bin/ctrace")
[ -x "$ctrace" ] || { echo "${0##*/}: $ctrace not built" >&2; exit 1; }
time_bin=/usr/bin/time

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_programs.XXXXXX")
chmod 755 "$tmp" # the servers' user (nobody) works in it
pg_running=""
cleanup() {
    if [ -n "$pg_running" ]; then "${as_user[@]}" "$pgbin/pg_ctl" -D "$tmp/pg/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# modes REP: the three modes, the first one rotating with REP.
modes() {
    local all=(plain stacks nostacks) i
    for ((i = 0; i < 3; i++)); do echo "${all[$(((i + $1) % 3))]}"; done
}

# run_opts MODE TRACE: the command words that run a program in MODE:
# none untraced, else ctrace run into TRACE, following children. Paths
# without blanks (ours and mktemp's).
run_opts() {
    case $1 in
    plain) ;;
    stacks) echo "$ctrace run -f -o $2 --" ;;
    nostacks) echo "$ctrace run -f --no-stacks -o $2 --" ;;
    esac
}

# traces_of DIR, size_kb DIR: how many traces DIR holds, their size.
traces_of() { find "$1" -type f | wc -l; }
size_kb() { du -sk "$1" | cut -f1; }

# ---- pgbench -S -------------------------------------------------------------------------
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ "$(id -u)" -eq 0 ]; then
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
else
    as_user=()
fi

# cpu_ticks PID...: their user+system CPU, in clock ticks.
cpu_ticks() {
    local p
    for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null || true; done |
        awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { print t + 0 }'
}

# measure_window OUT: with pgbench -S running (-P 1), waits for its two
# backends, skips 3 s (the start: the startup process's trace being
# written, cold buffers), then reads the backends' CPU over 5 s; appends
# "CPU_TICKS SECONDS" to OUT.
measure_window() {
    local b=() i t0 t1 c0 c1
    for ((i = 0; i < 100 && ${#b[@]} != 2; i++)); do
        sleep 0.1
        mapfile -t b < <(pgrep -f '^postgres: bench postgres \[local\]' || true)
    done
    [ ${#b[@]} -eq 2 ] || { echo "${0##*/}: pgbench's backends not found" >&2; exit 1; }
    sleep 3
    c0=$(cpu_ticks "${b[@]}") t0=$(date +%s%N)
    sleep 5
    c1=$(cpu_ticks "${b[@]}") t1=$(date +%s%N)
    echo "$((c1 - c0)) $(((t1 - t0) / 1000000))" >>"$1"
}

bench_pgbench() {
    local pg=$tmp/pg hz
    hz=$(getconf CLK_TCK)
    mkdir -p "$pg/traces"
    [ ${#as_user[@]} -eq 0 ] || chown -R nobody "$pg"
    export PGHOST=$pg PGPORT=5432 PGUSER=bench PGDATABASE=postgres
    "${as_user[@]}" "$pgbin/initdb" -D "$pg/data" -A trust -U bench --no-sync >/dev/null
    local start=("$pgbin/pg_ctl" -D "$pg/data" -l "$pg/server.log" -w
        -o "-c listen_addresses='' -k $pg -p 5432")
    "${as_user[@]}" "${start[@]}" start >/dev/null
    "${as_user[@]}" "$pgbin/pgbench" -i -s 1 -q >/dev/null 2>&1
    "${as_user[@]}" "$pgbin/pg_ctl" -D "$pg/data" -m fast -w stop >/dev/null
    local r m pid
    for m in plain stacks nostacks; do : >"$tmp/pg.$m"; done
    for ((r = 0; r < reps; r++)); do
        for m in $(modes "$r"); do
            rm -rf "$pg/traces.$m" && mkdir -p "$pg/traces.$m"
            [ ${#as_user[@]} -eq 0 ] || chown nobody "$pg/traces.$m"
            # shellcheck disable=SC2046  # run_opts: words
            "${as_user[@]}" $(run_opts "$m" "$pg/traces.$m/pg.trace") "${start[@]}" start >/dev/null
            pg_running=1
            pid=$(head -1 "$pg/data/postmaster.pid")
            : >"$tmp/window"
            "${as_user[@]}" "$pgbin/pgbench" -S -n -c 2 -j 2 -T 10 -P 1 >/dev/null 2>"$tmp/progress" &
            measure_window "$tmp/window"
            wait $!
            "${as_user[@]}" "$pgbin/pg_ctl" -D "$pg/data" -m fast -w stop >/dev/null
            pg_running=""
            # The postmaster's trace is written as it exits, after pg_ctl
            # saw its pid file go.
            while [ -d "/proc/$pid" ] && [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
                sleep 0.05
            done
            # tps: pgbench's seconds 4 to 8, those of the CPU window.
            # "progress: 4.0 s, 20233.9 tps, lat 0.099 ms stddev 0.024, 0 failed"
            awk -v hz="$hz" -v w="$(cat "$tmp/window")" '
                /^progress: / { s = $2 + 0; if (s >= 4 && s <= 8) { t += $4; n++ } }
                END { split(w, x, " "); tps = t / n
                      printf "%.1f %.2f\n", tps, x[1] / hz * 1e6 / (tps * x[2] / 1000) }' \
                "$tmp/progress" >>"$tmp/pg.$m"
        done
        printf 'pgbench-select: rep %d/%d\r' $((r + 1)) "$reps" >&2
    done
    printf '\n' >&2
    local u uc t tc lo hi
    u=$(cut -d' ' -f1 "$tmp/pg.plain" | median)
    uc=$(cut -d' ' -f2 "$tmp/pg.plain" | median)
    for m in stacks nostacks; do
        t=$(cut -d' ' -f1 "$tmp/pg.$m" | median)
        tc=$(cut -d' ' -f2 "$tmp/pg.$m" | median)
        # The range of the repetitions' own ratios (runs seconds apart).
        read -r lo hi < <(paste -d' ' "$tmp/pg.plain" "$tmp/pg.$m" | awk '{ r = $1 / $3 }
            NR == 1 || r < lo { lo = r } NR == 1 || r > hi { hi = r } END { print lo, hi }')
        local name=pgbench-select
        [ $m = nostacks ] && name=pgbench-select-nostacks
        awk -v n="$name" -v u="$u" -v t="$t" -v uc="$uc" -v tc="$tc" -v lo="$lo" -v hi="$hi" \
            -v kb="$(size_kb "$pg/traces.$m")" -v c="$(traces_of "$pg/traces.$m")" -v r="$reps" 'BEGIN {
            printf "BENCH name=%s ratio=%.3f ratio_min=%.3f ratio_max=%.3f cpu_ratio=%.3f untraced_tps=%.0f traced_tps=%.0f untraced_cpu_us=%.1f traced_cpu_us=%.1f trace_kb=%d traces=%d reps=%d\n",
                n, u / t, lo, hi, tc / uc, u, t, uc, tc, kb, c, r }'
    done
}

if [ -z "$pgbin" ]; then
    echo "${0##*/}: pgbench-select: skipped: postgresql not installed" >&2
else
    bench_pgbench
fi

# ---- git ---------------------------------------------------------------------------------
git_script='
set -e
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=bench \
    GIT_AUTHOR_EMAIL=bench@example.org GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.org
rm -rf repo clone
cp -r src repo
cd repo
git init -q
git add .
git commit -q -m one
for i in 1 2 3 4 5; do
    echo "change $i" >>d$i/f$((i * 13)).txt
    git add .
    git commit -q -m "change $i"
done
git gc -q
git fsck --no-progress >/dev/null 2>&1
cd ..
git clone -q --no-local repo clone
cd clone
git grep -c line >/dev/null
git log --oneline >/dev/null
'

bench_git() {
    local g=$tmp/git i
    mkdir -p "$g/src"
    for i in $(seq 1 300); do
        mkdir -p "$g/src/d$((i % 12))"
        awk -v i="$i" 'BEGIN { for (l = 0; l < 40 + i % 200; l++)
            printf "line %d of file %d: %x\n", l, i, l * i * 2654435761 % 4294967296 }' >"$g/src/d$((i % 12))/f$i.txt"
    done
    echo "$git_script" >"$g/work.sh"
    : >"$tmp/git.plain" && : >"$tmp/git.stacks" && : >"$tmp/git.nostacks"
    local r m t0 t1 cpu
    for ((r = 0; r < reps; r++)); do
        for m in $(modes "$r"); do
            rm -rf "$g/traces.$m" && mkdir -p "$g/traces.$m"
            t0=$(date +%s%N)
            # shellcheck disable=SC2046  # run_opts: words
            (cd "$g" && "$time_bin" -f '%U %S' -o "$g/time" $(run_opts "$m" "$g/traces.$m/git.trace") bash work.sh)
            t1=$(date +%s%N)
            cpu=$(awk '{ print ($1 + $2) * 1000 }' "$g/time")
            echo "$(((t1 - t0) / 1000000)) $cpu" >>"$tmp/git.$m"
        done
        printf 'git: rep %d/%d\r' $((r + 1)) "$reps" >&2
    done
    printf '\n' >&2
    local u uc t tc
    u=$(cut -d' ' -f1 "$tmp/git.plain" | median)
    uc=$(cut -d' ' -f2 "$tmp/git.plain" | median)
    for m in stacks nostacks; do
        t=$(cut -d' ' -f1 "$tmp/git.$m" | median)
        tc=$(cut -d' ' -f2 "$tmp/git.$m" | median)
        local name=git
        [ $m = nostacks ] && name=git-nostacks
        awk -v n="$name" -v u="$u" -v t="$t" -v uc="$uc" -v tc="$tc" -v kb="$(size_kb "$g/traces.$m")" \
            -v c="$(traces_of "$g/traces.$m")" -v r="$reps" 'BEGIN {
            printf "BENCH name=%s ratio=%.3f cpu_ratio=%.3f untraced_ms=%.0f traced_ms=%.0f trace_kb=%d traces=%d reps=%d\n",
                n, t / u, tc / uc, u, t, kb, c, r }'
    done
}

if ! command -v git >/dev/null; then
    echo "${0##*/}: git: skipped: git not installed" >&2
elif ! "$time_bin" -f '' true 2>/dev/null; then
    echo "${0##*/}: git: skipped: GNU time not installed as $time_bin" >&2
else
    bench_git
fi
