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
#   - `ctrace stats --format=csv` ends its summary row with the start
#     (start_unix_ns between the times read before and after the run),
#     clock, pid, ppid, host, program and command line;
#   - `ctrace export -f json` names the process "ex_threads (pid N)";
#   - every Go's parser accepts it (tests/go_compat.sh --parse-only; the
#     Go toolchains: make test-deps).
# Run through a link of another name, it is named by the link.
# And a trace with no anchor (Go 1.22's, from tests/parse): csv's new
# columns are there, empty.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"

now_ns() { date +%s%N; }

for fmt in go1.22 go1.11; do
    t=$run/ex_threads.$fmt.trace
    before=$(now_ns)
    # The pid the program runs as: the shell's own, which exec keeps.
    pid=$(CTRACE_FORMAT=$fmt bash -c 'echo $$; exec "$0" "$1" >/dev/null' "$bindir/ex_threads" "$t")
    after=$(now_ns)
    [ -s "$t" ] || { fail "$fmt" "ex_threads wrote no trace"; continue; }

    "$ctrace" stats "$t" >"$run/$fmt.stats" 2>&1 || fail "$fmt" "ctrace stats failed"
    grep -qE "^  process +ex_threads \\(pid $pid, parent [0-9]+\\) on [^ ]+:" "$run/$fmt.stats" ||
        fail "$fmt" "stats does not say it is ex_threads, pid $pid: $(head -3 "$run/$fmt.stats")"
    grep -qE '^  started +[0-9T:.-]+Z \(UTC, by ctrace.process log\)' "$run/$fmt.stats" ||
        fail "$fmt" "stats does not say when it started: $(head -3 "$run/$fmt.stats")"

    "$ctrace" stats --format=csv "$t" >"$run/$fmt.csv" 2>&1 || fail "$fmt" "ctrace stats --format=csv failed"
    # The summary: its header and row, fields by name.
    row=$(awk -F, -v OFS='|' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        NR == 2 { gsub(/"/, ""); print $c["start_unix_ns"], $c["start_utc"], $c["clock"], $c["pid"], $c["program"]; exit }' \
        "$run/$fmt.csv")
    IFS='|' read -r unix utc clock cpid program <<<"$row"
    { [ -n "$unix" ] && [ "$unix" -ge "$before" ] && [ "$unix" -le "$after" ]; } ||
        fail "$fmt" "csv: start_unix_ns '$unix' not in [$before, $after]"
    [[ $utc =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]] || fail "$fmt" "csv: start_utc '$utc'"
    [ "$clock" = "ctrace.process log" ] || fail "$fmt" "csv: clock '$clock'"
    [ "$cpid" = "$pid" ] && [ "$program" = ex_threads ] ||
        fail "$fmt" "csv: process '$program' pid '$cpid', want ex_threads pid $pid"

    "$ctrace" export -f json -o "$run/$fmt.json" "$t" 2>"$run/$fmt.export.err" || fail "$fmt" "ctrace export failed"
    name=$(jq -r '.traceEvents[] | select(.name == "process_name") | .args.name' "$run/$fmt.json" 2>/dev/null | head -1)
    [ "$name" = "ex_threads (pid $pid)" ] || fail "$fmt" "export names the process '$name', want 'ex_threads (pid $pid)'"

    bash "$here/../lib/go_compat.sh" --parse-only "$t" >"$run/$fmt.compat" 2>&1 ||
        fail "$fmt" "Go's parsers refuse it: $(tail -3 "$run/$fmt.compat")"
    [ "$failed" -ne 0 ] || echo "$prog: $fmt: ex_threads, pid $pid, started $utc, in stats, csv and export"
done

# Run as a link of another name (Debian's redis-server is a link to
# redis-check-rdb): the process is named as it was run, as ps names it.
ln -sf "$bindir/ex_threads" "$run/linked_threads"
t=$run/linked.trace
pid=$(bash -c 'echo $$; exec "$0" "$1" >/dev/null' "$run/linked_threads" "$t")
"$ctrace" stats "$t" >"$run/linked.stats" 2>&1 || fail linked "ctrace stats failed"
grep -qE "^  process +linked_threads \\(pid $pid, parent [0-9]+\\) on " "$run/linked.stats" ||
    fail linked "stats does not name it linked_threads, pid $pid: $(head -3 "$run/linked.stats")"

# No anchor: the columns, empty.
"$ctrace" stats --format=csv "$here/../parse/gens-go1.22.trace" >"$run/noanchor.csv" 2>&1 ||
    fail noanchor "ctrace stats --format=csv failed"
awk -F, 'NR == 1 && $11 != "start_utc" { bad = 1 } NR == 2 { if ($11 $12 $13 $14 $18 != "") bad = 1; exit }
    END { exit bad }' "$run/noanchor.csv" || fail noanchor "csv: $(head -2 "$run/noanchor.csv")"

finish "" "both formats name ex_threads and date it; a link names its process; a trace without an anchor leaves the columns empty"
