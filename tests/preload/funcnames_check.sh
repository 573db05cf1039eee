#!/usr/bin/env bash
# funcnames_check.sh - function names as people read them, in the trace
# itself (so Go's tools show them too).
#
# Usage: tests/preload/funcnames_check.sh CTRACE BINDIR OUTDIR
#
# run_cxx20 (libstdc++'s std::thread, latch and atomic waits) and
# rust_sync.rs (built here with Debian's rustc, as a user's would be) run
# under `ctrace run`; run_stacks prints each event's stack from the trace.
# Their stacks must hold demangled names (std::thread::..., Rust paths
# without their hash) and no mangled one (_Z..., ::h + 16 hex digits),
# and none of the tracer's own frames (the shim's thread trampoline: a
# thread's stack goes from its start function to libc's start_thread); a
# std::thread's start function is the callable it was given, and the
# functions of the program's that run_cxx_spawn's std::threads and
# rust_spawn.rs's threads run are theirs, in ctrace stats, in the
# export's track names, and in the trace itself: Go 1.27's reader (which
# names a goroutine by its creation's start frame) gives the creations
# those functions, in Go's current format and in the classic one.
# run_behind's
# thread, made by libc's own pthread_create where the shim does not see
# it, starts at its start routine (behind_worker), not at the first call
# the tracer saw (pthread_setname_np).
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
outdir_args "$@"
. "$here/../lib/go_paths.sh"
export GOCACHE=$out/gocache GOTOOLCHAIN=local

# creations NAME: the start frames of the goroutines NAME's trace creates,
# as Go 1.27's reader gives them (-d=parsed: a creation is a NotExist->
# Runnable transition, its TransitionStack the new goroutine's), sorted.
creations() {
    "$(go_trace_tool "$GO127")" -d=parsed "$out/$1.trace" >"$out/$1.parsed" 2>&1 ||
        fatal "$1: Go 1.27 does not read the trace: $(tail -2 "$out/$1.parsed")"
    awk '/ NotExist->Runnable / { s = 1; next } s == 1 && /^TransitionStack=/ { s = 2; next }
         s == 2 { sub(/^\t/, ""); sub(/ @ 0x[0-9a-f]+$/, ""); print } { s = 0 }' "$out/$1.parsed" | sort
}

# check NAME WANT...: the stacks of NAME's trace hold every WANT (a fixed
# string), and no mangled name.
check() {
    local name=$1 w
    shift
    "$bindir/run_stacks" "$out/$name.trace" | sed -n 's/^[^|]*| //p' | sed 's/ < /\n/g' |
        sed 's/^ *//; s/ *$//' | sort -u >"$out/$name.funcs"
    [ -s "$out/$name.funcs" ] || fatal "$name: no stack in the trace"
    for w in "$@"; do
        grep -qxF -- "$w" "$out/$name.funcs" || fatal "$name: no frame named '$w' (of $(wc -l <"$out/$name.funcs"))"
    done
    if grep -E '^_Z|^_R|::h[0-9a-f]{16}$' "$out/$name.funcs" >"$out/$name.mangled"; then
        fatal "$name: mangled names in its stacks: $(head -3 "$out/$name.mangled" | tr '\n' ' ')"
    fi
    grep -qx start_thread "$out/$name.funcs" || fatal "$name: no stack reaches libc's start_thread"
    if grep -x trampoline "$out/$name.funcs" >"$out/$name.tracer"; then
        fatal "$name: the tracer's frames in its stacks: $(tr '\n' ' ' <"$out/$name.tracer")"
    fi
    echo "$prog: $name: $(wc -l <"$out/$name.funcs") function names, none mangled nor the tracer's; $*"
}

"$ctrace" run -o "$out/cxx20.trace" -- "$bindir/run_cxx20" 10 >"$out/cxx20.out" 2>&1 ||
    fatal "cxx20: the run failed: $(tail -3 "$out/cxx20.out")"
# Certain in every run: the creation stacks (pthread_create's caller) and
# main's wait at the latch, which the ring starts only once main sleeps in.
check cxx20 "std::thread::_M_start_thread(std::unique_ptr<std::thread::_State, std::default_delete<std::thread::_State> >, void (*)())" \
    "void std::__detail::__platform_wait<int>(int const*, int)"

# A std::thread's start function is what the program gave it (the
# state's _M_run, which names the lambda), not libstdc++'s routine; in an
# ASan build, ASan's own routine starts every thread.
"$ctrace" stats "$out/cxx20.trace" >"$out/cxx20.stats"
want='std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run()'
if ldd "$bindir/run_cxx20" | has libasan; then
    echo "$prog: cxx20: start functions not checked (an ASan build: asan_thread_start starts every thread)"
elif ! grep -qxF "  $want" "$out/cxx20.stats"; then
    fatal "cxx20: no thread started by '$want': $(sed -n '/^Goroutines by/,/^$/p' "$out/cxx20.stats")"
else
    echo "$prog: cxx20: its threads start at $want"
fi
# That name is longer than its column: it has a line of its own, and
# every row's numbers stay under their headings (the count's last digit
# under the t of count, in the goroutine and the waker tables).
aligned() {
    awk -v h="$1" -v col="$2" '
        /^$/ { on = 0 }
        index($0, h) && index($0, " " col " ") { on = 1; end = index($0, " " col " ") + length(col); next }
        on && /^ / && !/blocked \(/ && NF >= 6 {
            c = substr($0, end - 5, 6); n++
            if (c !~ /^ *[0-9]+$/ || substr($0, end + 1, 1) != " ") { print "misaligned: " $0; bad = 1 }
        }
        END { if (!n) print "no rows under \"" h "\""; exit bad || !n }' "$3"
}
if ! ldd "$bindir/run_cxx20" | has libasan; then
    aligned "start function" count "$out/cxx20.stats" >&2 && aligned "woken (start function)" waits "$out/cxx20.stats" >&2 ||
        fatal "cxx20: ctrace stats's columns do not line up: $(sed -n '/^Goroutines by/,/^$/p' "$out/cxx20.stats")"
    echo "$prog: cxx20: ctrace stats's columns line up, its long names on lines of their own"
fi

[ -x /usr/bin/rustc ] || fatal "rust: Debian's rustc is not installed (make test-deps)"
/usr/bin/rustc -O -o "$out/run_rust_sync" "$here/rust_sync.rs" || fatal "rust: rustc failed"
"$ctrace" run -o "$out/rust.trace" -- "$out/run_rust_sync" 10 >"$out/rust.out" 2>&1 ||
    fatal "rust: the run failed: $(tail -3 "$out/rust.out")"
# The creation stacks, and the ring threads' waits (from their start).
check rust "std::sys::unix::thread::Thread::new" "std::sys::unix::thread::Thread::new::thread_start"

# Threads of Rust's spawn and of std::thread running named functions of
# the program's start at those functions in ctrace stats, not at std's
# or libstdc++'s start routine (their stacks show what the routine calls).
/usr/bin/rustc -O -o "$out/run_rust_spawn" "$here/rust_spawn.rs" || fatal "rust_spawn: rustc failed"
"$ctrace" run -o "$out/rust_spawn.trace" -- "$out/run_rust_spawn" >"$out/rust_spawn.out" 2>&1 ||
    fatal "rust_spawn: the run failed: $(tail -3 "$out/rust_spawn.out")"
"$ctrace" stats "$out/rust_spawn.trace" >"$out/rust_spawn.stats"
# fetcher's thread has no name of its own: the table shows the name it
# inherited, the process's (15 bytes of it), as ps -L does.
grep -qE '^  run_rust_spawn +rust_spawn::fetcher ' "$out/rust_spawn.stats" &&
    grep -qE '^  indexer +rust_spawn::indexer ' "$out/rust_spawn.stats" ||
    fatal "rust_spawn: its threads do not start at fetcher and indexer: $(sed -n '/^Goroutines by/,/^$/p' "$out/rust_spawn.stats")"
echo "$prog: rust_spawn: its threads start at rust_spawn::fetcher and rust_spawn::indexer"
# In the trace: the creations of fetcher's and indexer's threads start
# at them (the third's closure is inlined: it keeps std's routine), in
# both formats.
"$ctrace" run --format=go1.11 -o "$out/rust_spawn111.trace" -- "$out/run_rust_spawn" >"$out/rust_spawn111.out" 2>&1 ||
    fatal "rust_spawn: the classic run failed: $(tail -3 "$out/rust_spawn111.out")"
for t in rust_spawn rust_spawn111; do
    creations "$t" >"$out/$t.creations"
    grep -qx 'rust_spawn::fetcher' "$out/$t.creations" && grep -qx 'rust_spawn::indexer' "$out/$t.creations" ||
        fatal "$t: Go 1.27 names its creations $(tr '\n' ';' <"$out/$t.creations"), not rust_spawn::fetcher and rust_spawn::indexer"
done
echo "$prog: rust_spawn: Go 1.27 reads the creations at rust_spawn::fetcher and rust_spawn::indexer, in both formats"
# tracks NAME: the name each thread's track ends with in the JSON export
# (the last description of a tid names it), one a line.
tracks() {
    "$ctrace" export -f json -o "$out/$1.json" "$out/$1.trace" || fatal "$1: the export failed"
    jq -r '[.traceEvents[] | select(.ph == "M" and .name == "thread_name")] | group_by(.tid)[] | last | .args.name' \
        "$out/$1.json"
}
tracks rust_spawn >"$out/rust_spawn.tracks"
grep -qE '^rust_spawn::fetcher G[0-9]+$' "$out/rust_spawn.tracks" ||
    fatal "rust_spawn: no track named by rust_spawn::fetcher in the export: $(tr '\n' ';' <"$out/rust_spawn.tracks")"
# Its closure inlined into std's __rust_begin_short_backtrace has no
# frame: with Rust's v0 mangling, the routine's instance names it.
/usr/bin/rustc -O -C symbol-mangling-version=v0 -o "$out/run_rust_spawn_v0" "$here/rust_spawn.rs" ||
    fatal "rust_spawn v0: rustc failed"
"$ctrace" run -o "$out/rust_spawn_v0.trace" -- "$out/run_rust_spawn_v0" >"$out/rust_spawn_v0.out" 2>&1 ||
    fatal "rust_spawn v0: the run failed: $(tail -3 "$out/rust_spawn_v0.out")"
"$ctrace" stats "$out/rust_spawn_v0.trace" >"$out/rust_spawn_v0.stats"
grep -qE '^  run_rust_spawn_ +rust_spawn::fetcher ' "$out/rust_spawn_v0.stats" &&
    grep -qE '^  indexer +rust_spawn::indexer ' "$out/rust_spawn_v0.stats" &&
    grep -qE '^  run_rust_spawn_ +[^ ]*rust_spawn::main::\{closure#[0-9]+\}' "$out/rust_spawn_v0.stats" ||
    fatal "rust_spawn v0: its threads do not start at fetcher, indexer and main's closure: $(sed -n '/^Goroutines by/,/^$/p' "$out/rust_spawn_v0.stats")"
echo "$prog: rust_spawn v0: its threads start at rust_spawn::fetcher, rust_spawn::indexer and main's closure"

"$ctrace" run -o "$out/cxx_spawn.trace" -- "$bindir/run_cxx_spawn" >"$out/cxx_spawn.out" 2>&1 ||
    fatal "cxx_spawn: the run failed: $(tail -3 "$out/cxx_spawn.out")"
"$ctrace" stats "$out/cxx_spawn.trace" >"$out/cxx_spawn.stats"
# (In an ASan build too: past asan_thread_start, the routine it calls.)
if grep -qE '^  fetcher\(int\) ' "$out/cxx_spawn.stats" && grep -qE '^  shop::indexer\(\) ' "$out/cxx_spawn.stats"; then
    tracks cxx_spawn >"$out/cxx_spawn.tracks"
    grep -qE '^fetcher\(int\) G[0-9]+$' "$out/cxx_spawn.tracks" && grep -qE '^shop::indexer\(\) G[0-9]+$' "$out/cxx_spawn.tracks" ||
        fatal "cxx_spawn: the export's tracks are not named by fetcher and indexer: $(tr '\n' ';' <"$out/cxx_spawn.tracks")"
    creations cxx_spawn >"$out/cxx_spawn.creations"
    grep -qxF 'fetcher(int)' "$out/cxx_spawn.creations" && grep -qxF 'shop::indexer()' "$out/cxx_spawn.creations" ||
        fatal "cxx_spawn: Go 1.27 names its creations $(tr '\n' ';' <"$out/cxx_spawn.creations"), not fetcher(int) and shop::indexer()"
    echo "$prog: cxx_spawn: its threads start at fetcher(int) and shop::indexer(), in stats, the export and Go 1.27's reader"
else
    fatal "cxx_spawn: its threads do not start at fetcher and indexer: $(sed -n '/^Goroutines by/,/^$/p' "$out/cxx_spawn.stats")"
fi

"$ctrace" run -o "$out/behind.trace" -- "$bindir/run_behind" >"$out/behind.out" 2>&1 ||
    fatal "behind: the run failed: $(tail -3 "$out/behind.out")"
"$ctrace" stats "$out/behind.trace" >"$out/behind.stats"
grep -qE '^  behind +behind_worker ' "$out/behind.stats" ||
    fatal "behind: its thread does not start at behind_worker: $(sed -n '/^Goroutines by/,/^$/p' "$out/behind.stats")"
echo "$prog: behind: the thread libc made starts at behind_worker"
