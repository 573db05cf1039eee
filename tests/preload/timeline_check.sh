#!/usr/bin/env bash
# timeline_check.sh - traces of several processes on one timeline, each
# named by its program and pid (the log ctrace run writes as a trace
# starts: src/runtime/identity.c).
#
# Usage: tests/preload/timeline_check.sh CTRACE BINDIR OUTDIR
#
#   - run_forklate under `ctrace run -f` forks 300 ms after it starts:
#     in the export of both traces the child's first event comes 300 ms
#     or more after the parent's first (it was drawn at 0.1 ms), the
#     processes are "run_forklate (pid N)", N their pids, and ctrace stats
#     of the child says its program, pid and parent;
#   - two programs traced one after the other: the second's first event
#     comes after the first's last;
#   - a trace without that log (one Go 1.22 wrote) beside one with: a
#     warning names it, and each is placed as when exported alone;
#   - wall-clock time: ctrace stats says when the trace started, in UTC,
#     between the times `date` read before and after the run (table and
#     JSON alike); the JSON export's metadata says the same for the
#     timeline's ts 0 and each process; the Perfetto export's clock
#     snapshot ties its clock (BOOTTIME 0) to REALTIME at that time
#     (protoc --decode with tests/lib/perfetto_min.proto);
#   - in Go's current format the runtime writes the log in every
#     generation: a trace ex_threads starts through the API (CTRACE_FORMAT=
#     go1.22) names its process, and the flight recorder's snapshot of
#     `sleep 2.5` at its exit, which keeps its last generation only (the
#     one the start was in ended 2 s before), is named and dated: it
#     starts 2 s or more after the run did, and before it ended.
# Times are read from the JSON export (jq).
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
outdir_args "$@"

# pid TAB name TAB first TAB last (microseconds), per process of a JSON export.
spans() {
    jq -r '(if type == "object" then .traceEvents else . end) as $e
        | ($e | map(select(.ph == "M" and .name == "process_name")) | map({key: (.pid | tostring), value: .args.name}) | from_entries) as $n
        | $e | map(select(.ts != null)) | group_by(.pid)[]
        | [.[0].pid, $n[.[0].pid | tostring], (map(.ts) | min), (map(.ts) | max)] | @tsv' "$1"
}

# A child forked 300 ms in.
"$ctrace" run -f -o "$out/f.trace" -- "$bindir/run_forklate" || fatal "run_forklate failed"
child=$(ls "$out"/f.trace.pid* 2>/dev/null | head -1)
[ -n "$child" ] || fatal "no trace of the forked child"
"$ctrace" export -f json -o "$out/f.json" "$out/f.trace" "$child" 2>"$out/f.err" || fatal "export: $(cat "$out/f.err")"
[ ! -s "$out/f.err" ] || fatal "export warned: $(cat "$out/f.err")"
spans "$out/f.json" >"$out/f.spans"
[ "$(wc -l <"$out/f.spans")" -eq 2 ] || fatal "not two processes: $(cat "$out/f.spans")"
cpid=${child##*.pid}
awk -F'\t' -v c="$cpid" '$1 == c && $2 == "run_forklate (pid " c ")" { ok++ } $1 != c && $2 == "run_forklate (pid " $1 ")" { ok++ }
    END { exit ok != 2 }' "$out/f.spans" || fatal "the processes are not named run_forklate (pid N): $(cat "$out/f.spans")"
gap=$(awk -F'\t' -v c="$cpid" '$1 == c { cf = $3 } $1 != c { pf = $3 } END { printf "%.0f", cf - pf }' "$out/f.spans")
[ "$gap" -ge 300000 ] || fatal "the child's first event is $gap us after the parent's, not 300 ms or more"
echo "$prog: forked 300 ms in: the child's first event $((gap / 1000)) ms after the parent's"
# ctrace stats says which process it describes.
ppid=$(awk -F'\t' -v c="$cpid" '$1 != c { print $1 }' "$out/f.spans")
"$ctrace" stats "$child" | has "^  process      run_forklate (pid $cpid, parent $ppid) on " ||
    fatal "stats of the child does not say run_forklate (pid $cpid, parent $ppid): $("$ctrace" stats "$child" | head -3)"

# Two programs, one after the other.
before=$(date +%s%N)
"$ctrace" run -o "$out/a.trace" -- sleep 0.05
after=$(date +%s%N)
"$ctrace" run -o "$out/b.trace" -- sleep 0.05
"$ctrace" export -f json -o "$out/ab.json" "$out/a.trace" "$out/b.trace" || fatal "export of two runs"
spans "$out/ab.json" >"$out/ab.spans"
# Each run by its pid (spans sorts by pid, which may wrap between runs).
pid_of() { "$ctrace" stats "$1" | sed -n 's/^  process .* (pid \([0-9]*\),.*/\1/p'; }
apid=$(pid_of "$out/a.trace") bpid=$(pid_of "$out/b.trace")
[ -n "$apid" ] && [ -n "$bpid" ] || fatal "ctrace stats names no process of the two runs"
awk -F'\t' -v a="$apid" -v b="$bpid" '$1 == a { a_last = $4; n++ } $1 == b { b_first = $3; n++ }
    END { exit !(NR == 2 && n == 2 && b_first > a_last) }' \
    "$out/ab.spans" || fatal "the second run (pid $bpid) does not come after the first (pid $apid): $(cat "$out/ab.spans")"
echo "$prog: two runs one after the other: in that order on one timeline"

# A trace without the log or a clock snapshot (Go 1.22's, of
# tests/parse: ctrace writes the log in both formats), beside one with.
cp "$(dirname "$0")/../parse/gens-go1.22.trace" "$out/plain.trace"
"$ctrace" export -f json -o "$out/mixed.json" "$out/plain.trace" "$out/a.trace" 2>"$out/mixed.err" ||
    fatal "export of a mixed pair"
grep -q "warning: $out/plain.trace holds no clock" "$out/mixed.err" || fatal "no warning for the trace without a clock: $(cat "$out/mixed.err")"
# Each where it is when exported alone.
for t in plain a; do
    "$ctrace" export -f json -o "$out/$t.json" "$out/$t.trace"
    spans "$out/$t.json" | cut -f3-4
done >"$out/alone.spans"
spans "$out/mixed.json" | cut -f3-4 | cmp -s - "$out/alone.spans" ||
    fatal "without a clock, the traces are not where each is alone: $(spans "$out/mixed.json") against $(cat "$out/alone.spans")"
echo "$prog: a trace without a clock: warned, and each placed as it is alone"

# Wall-clock time: when a.trace started, in stats, the JSON export and
# the Perfetto export.
started=$("$ctrace" stats "$out/a.trace" | sed -n 's/^  started      \([^ ]*\) (UTC, by ctrace.process log)$/\1/p')
[ -n "$started" ] || fatal "stats does not say when the trace started: $("$ctrace" stats "$out/a.trace" | head -4)"
start_ns=$(( $(date -u -d "$started" +%s) * 1000000000 + 10#$(echo "$started" | sed 's/.*\.\([0-9]*\)Z$/\1/') ))
[ "$start_ns" -ge "$before" ] && [ "$start_ns" -le "$after" ] ||
    fatal "stats says the trace started at $started, not between $before and $after ns (date)"
"$ctrace" stats --format=json "$out/a.trace" >"$out/a.stats.json"
[ "$(jq -r .start.utc "$out/a.stats.json")" = "$started" ] ||
    fatal "stats' JSON says it started at $(jq -r .start.utc "$out/a.stats.json"), its table $started"
grep -q "\"unix_ns\": $start_ns," "$out/a.stats.json" || fatal "stats' JSON has no unix_ns $start_ns: $(head -2 "$out/a.stats.json")"
jq -e --arg s "$started" '.metadata.ts0_utc == $s and .metadata.processes[0].start_utc == $s' "$out/a.json" >/dev/null ||
    fatal "the JSON export's metadata does not say $started: $(jq -c .metadata "$out/a.json")"
jq -e '.metadata.processes | length == 2' "$out/f.json" >/dev/null ||
    fatal "the JSON export of the fork does not date both processes: $(jq -c .metadata "$out/f.json")"
"$ctrace" export -o "$out/a.pb" "$out/a.trace"
pf_decode "$out/a.pb" "$out/a.pb.txt" || fatal "protoc cannot decode the Perfetto export"
awk -v t="$start_ns" '/clock_id: 6$/ { boot = 1 } /clock_id: 1$/ { real = 1; next }
    real && /timestamp:/ { if ($2 == t && boot) ok = 1; real = 0 } END { exit !ok }' "$out/a.pb.txt" ||
    fatal "the Perfetto export's clock snapshot does not tie BOOTTIME 0 to REALTIME $start_ns: $(grep -A14 clock_snapshot "$out/a.pb.txt" | head -20)"
echo "$prog: wall-clock time: started $started, in stats, the JSON export's metadata and Perfetto's clock snapshot"

# The current format: the log in every generation, whoever started the
# trace.
CTRACE_FORMAT=go1.22 "$bindir/ex_threads" "$out/api.trace" >/dev/null
"$ctrace" stats "$out/api.trace" >"$out/api.stats"
grep -q "^  process      ex_threads (pid [0-9]*, parent $$) on " "$out/api.stats" ||
    fatal "stats of a trace started through the API does not name ex_threads: $(head -3 "$out/api.stats")"
grep -q "^  started      .* (UTC, by ctrace.process log)$" "$out/api.stats" ||
    fatal "stats of a trace started through the API does not date it: $(head -3 "$out/api.stats")"
before=$(date +%s%N)
"$ctrace" run --flight=200ms --flight-at-exit -o "$out/fl.trace" -- sleep 2.5
after=$(date +%s%N)
"$ctrace" stats "$out/fl.trace" >"$out/fl.stats"
grep -q "^  process      sleep (pid [0-9]*, parent [0-9]*) on " "$out/fl.stats" ||
    fatal "stats of a flight recorder's snapshot does not name sleep: $(head -3 "$out/fl.stats")"
started=$(sed -n 's/^  started      \([^ ]*\) (UTC, by ctrace.process log)$/\1/p' "$out/fl.stats")
[ -n "$started" ] || fatal "stats of a flight recorder's snapshot does not date it: $(head -3 "$out/fl.stats")"
start_ns=$(( $(date -u -d "$started" +%s) * 1000000000 + 10#$(echo "$started" | sed 's/.*\.\([0-9]*\)Z$/\1/') ))
[ "$start_ns" -ge $((before + 2000000000)) ] && [ "$start_ns" -le "$after" ] ||
    fatal "the snapshot starts at $started, not 2 s or more after the run began ($before ns) and before it ended ($after)"
echo "$prog: the current format: a trace started through the API and a flight recorder's last generation name and date their process"
