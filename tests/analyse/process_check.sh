#!/usr/bin/env bash
# process_check.sh - a trace written through the library's API says which
# process it is of and when it started, in both formats, and ctrace's
# outputs say it.
#
# Usage: tests/analyse/process_check.sh CTRACE BINDIR WORKDIR
#
# ex_threads (the API, not ctrace run) writes a trace in Go's current
# format and one in the classic format (CTRACE_FORMAT=go1.11); of each:
#   - `ctrace stats` says "process ex_threads (pid N, parent M) on HOST",
#     N the pid the program ran as, and when it started "by ctrace.process
#     log";
#   - `ctrace export -f json` names the process "ex_threads (pid N)";
#   - every Go's parser accepts it (tests/go_compat.sh --parse-only; the
#     Go toolchains: make test-deps).
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

for fmt in go1.22 go1.11; do
    t=$run/ex_threads.$fmt.trace
    # The pid the program runs as: the shell's own, which exec keeps.
    pid=$(CTRACE_FORMAT=$fmt bash -c 'echo $$; exec "$0" "$1" >/dev/null' "$bindir/ex_threads" "$t")
    [ -s "$t" ] || { fail "$fmt" "ex_threads wrote no trace"; continue; }

    "$ctrace" stats "$t" >"$run/$fmt.stats" 2>&1 || fail "$fmt" "ctrace stats failed"
    grep -qE "^  process +ex_threads \\(pid $pid, parent [0-9]+\\) on [^ ]+:" "$run/$fmt.stats" ||
        fail "$fmt" "stats does not say it is ex_threads, pid $pid: $(head -3 "$run/$fmt.stats")"
    grep -qE '^  started +[0-9T:.-]+Z \(UTC, by ctrace.process log\)' "$run/$fmt.stats" ||
        fail "$fmt" "stats does not say when it started: $(head -3 "$run/$fmt.stats")"

    "$ctrace" export -f json -o "$run/$fmt.json" "$t" 2>"$run/$fmt.export.err" || fail "$fmt" "ctrace export failed"
    name=$(jq -r '.traceEvents[] | select(.name == "process_name") | .args.name' "$run/$fmt.json" 2>/dev/null | head -1)
    [ "$name" = "ex_threads (pid $pid)" ] || fail "$fmt" "export names the process '$name', want 'ex_threads (pid $pid)'"

    bash "$here/../go_compat.sh" --parse-only "$t" >"$run/$fmt.compat" 2>&1 ||
        fail "$fmt" "Go's parsers refuse it: $(tail -3 "$run/$fmt.compat")"
    [ "$failed" -ne 0 ] || echo "$prog: $fmt: ex_threads, pid $pid, in stats and export"
done

finish "" "both formats name ex_threads and date it"
