#!/usr/bin/env bash
# Runs the reader fuzzer for a fixed time; fails on any crash, leak, timeout
# or out-of-memory, printing the reproducer's path. `make fuzz` and
# `make fuzz-ci` call it; see fuzz/README.md.
#   fuzz/run.sh OUT_DIR SECONDS [extra libFuzzer flags...]
# OUT_DIR holds the fuzzer binary (fuzz_reader), the growing corpus
# (OUT_DIR/corpus, seeded from fuzz/corpus), the log (OUT_DIR/fuzz.log) and
# crash artifacts (OUT_DIR/crash-*, leak-*, timeout-*, oom-*).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: fuzz/run.sh OUT_DIR SECONDS}
secs=${2:?usage: fuzz/run.sh OUT_DIR SECONDS}
shift 2
bin=$out/fuzz_reader
log=$out/fuzz.log
[ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz builds it)" >&2; exit 2; }
mkdir -p "$out/corpus"

# Artifacts of this run are the ones newer than this mark.
mark=$out/.run-start
touch "$mark"

echo "fuzz: $bin for ${secs}s, corpus $out/corpus + fuzz/corpus, log $log"
# The first corpus directory receives new inputs; fuzz/corpus stays as is.
# Inputs up to 64 KiB (the seeds are below 50 KB); 10 s per input at most.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$bin" "$out/corpus" fuzz/corpus \
  -dict=fuzz/trace.dict \
  -max_total_time="$secs" \
  -max_len=65536 \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -artifact_prefix="$out/" \
  -print_final_stats=1 \
  "$@" >"$log" 2>&1
rc=$?

# The last status line ("#N DONE cov: ... ft: ... corp: ... exec/s: ...")
# and libFuzzer's final stats.
status=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")
corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$status")
echo "FUZZ name=reader seconds=$secs execs=${execs:-?} exec_per_sec=${eps:-?} cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?}"

mapfile -t artifacts < <(find "$out" -maxdepth 1 -type f \
  \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) \
  -newer "$mark" | sort)
if [ "$rc" -ne 0 ] || [ ${#artifacts[@]} -gt 0 ]; then
  echo "fuzz: FAILED (fuzzer exit status $rc); end of $log:" >&2
  tail -n 80 "$log" >&2
  for a in "${artifacts[@]}"; do
    echo "fuzz: reproducer: $a" >&2
    echo "fuzz:   rerun with: $bin $a" >&2
  done
  [ ${#artifacts[@]} -gt 0 ] || echo "fuzz: no reproducer written; see $log" >&2
  exit 1
fi
echo "fuzz: no crashes"
