#!/usr/bin/env bash
# python_check.sh - Debian's python3, eight threads, under `ctrace run`.
#
# Usage: tests/preload/python_check.sh CTRACE BINDIR OUTDIR
#
# Python and libc are built without frame pointers: with frame pointers
# alone a wait's stack is two frames (pthread_cond_timedwait, take_gil).
# With the default unwinding at least 95% of the block events' stacks must
# reach the thread's start (libc's start_thread: the tracer's trampoline
# above it is left out) or
# main (Py_BytesMain, main or, where the program is stripped of local
# symbols, __libc_start_call_main). Skipped (77) without /usr/bin/python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "CTRACE BINDIR OUTDIR" $#
ctrace=$1 bindir=$2 out=$3
py=/usr/bin/python3
[ -x "$py" ] || skip "$py not found"
fresh_dir "$out"
cat >"$out/threads.py" <<'PY'
import queue, threading, time
q = queue.Queue()
def worker():
    for _ in range(100):
        try:
            q.get(timeout=0.001)
        except queue.Empty:
            pass
        sum(range(2000))
threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads: t.start()
for i in range(200):
    q.put(i)
    time.sleep(0.0005)
for t in threads: t.join()
print("ok")
PY
# In a sanitized build libasan is preloaded with the shim: its leak check
# would then report what Python leaves allocated at exit, by design.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout -k 5 120 "$ctrace" run -o "$out/py.trace" -- "$py" "$out/threads.py" >"$out/py.out"
grep -q '^ok$' "$out/py.out" || fatal "python did not finish"
"$ctrace" check "$out/py.trace"
"$bindir/run_stacks" "$out/py.trace" | grep ' GoBlock' >"$out/blocks" || true
total=$(wc -l <"$out/blocks")
whole=$(grep -cE '< (start_thread|Py_BytesMain|main|__libc_start_call_main)( |$)' "$out/blocks" || true)
echo "$prog: $whole of $total block events have stacks reaching the thread's start or main"
[ "$total" -ge 100 ] || fatal "too few block events ($total)"
[ $((whole * 100)) -ge $((total * 95)) ] || {
    echo "$prog: FAIL: fewer than 95%; the others:" >&2
    grep -vE '< (start_thread|Py_BytesMain|main|__libc_start_call_main)( |$)' "$out/blocks" | head -5 >&2
    exit 1
}
rm -rf "$out"
