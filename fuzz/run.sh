#!/usr/bin/env bash
# Runs the reader fuzzer for a fixed time (or, SECONDS 0, until the
# -runs=N among the extra flags); fails on any crash, leak, timeout
# or out-of-memory, printing the reproducer's path. `make fuzz` and
# `make fuzz-ci` call it; see fuzz/README.md.
#   fuzz/run.sh OUT_DIR SECONDS [extra libFuzzer flags...]
# OUT_DIR holds the fuzzer binary (fuzz_reader), the growing corpus
# (OUT_DIR/corpus, or FUZZ_CORPUS; seeded from fuzz/corpus), the log (OUT_DIR/fuzz.log) and
# crash artifacts (OUT_DIR/crash-*, leak-*, timeout-*, oom-*).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: fuzz/run.sh OUT_DIR SECONDS}
secs=${2:?usage: fuzz/run.sh OUT_DIR SECONDS}
shift 2
bin=$out/fuzz_reader
log=$out/fuzz.log
[ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz builds it)" >&2; exit 2; }
corpus=${FUZZ_CORPUS:-$out/corpus}
mkdir -p "$corpus"

# Artifacts of this run are the ones newer than this mark.
mark=$out/.run-start
touch "$mark"

echo "fuzz: $bin for ${secs}s (0: the -runs given: $*), corpus $corpus + fuzz/corpus, log $log"
# The first corpus directory receives new inputs; fuzz/corpus stays as is.
# Inputs up to 64 KiB (the seeds are below 50 KB); 10 s per input at most.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$bin" "$corpus" fuzz/corpus \
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
  # The report from its first line (a sanitizer's "==ERROR", a contract
  # "fuzz_reader: contract broken", UBSan's "runtime error", libFuzzer's
  # "==N== ERROR"), not just the log's tail, which a long stack pushes out.
  echo "fuzz: FAILED (fuzzer exit status $rc); the report in $log:" >&2
  first=$(grep -n -m 1 -E '==ERROR|ERROR: libFuzzer|contract broken|runtime error|^ALARM' "$log" | cut -d: -f1)
  if [ -n "$first" ]; then tail -n +"$((first > 5 ? first - 5 : 1))" "$log" | head -n 150 >&2
  else tail -n 80 "$log" >&2; fi
  for a in "${artifacts[@]}"; do
    echo "fuzz: reproducer: $a" >&2
    echo "fuzz:   rerun with: $bin $a" >&2
    # A clean clone's build directory does not outlive CI: the input itself
    # goes into the log, small as it is (max_len 64 KiB).
    echo "fuzz:   its bytes (base64 -d to restore):" >&2
    base64 -w 76 "$a" | head -n 1200 >&2
  done
  [ ${#artifacts[@]} -gt 0 ] || echo "fuzz: no reproducer written; see $log" >&2
  exit 1
fi
echo "fuzz: no crashes"
