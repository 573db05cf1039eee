#!/usr/bin/env bash
# help_check.sh - every benchmark program answers --help with its usage
# (or, a script sharing bench/lib.sh, its header comment, which names it),
# exit status 0, and runs nothing: no BENCH line, no file written (the
# trace generator once wrote a trace named "--help").
#
# Usage: bench/help_check.sh PROGRAM...
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: ${0##*/} PROGRAM..." >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
for prog in "$@"; do
    name=${prog##*/}
    out=$(timeout 10 "$prog" --help 2>&1) || { echo "$name --help: exit status $?: $out" >&2; exit 1; }
    case $out in
    "usage: $name"* | "$name: "*) ;; # a usage line, or a script's header (bench/lib.sh)
    *) echo "$name --help printed no usage: $out" >&2; exit 1 ;;
    esac
    if grep -q '^BENCH name=' <<<"$out"; then echo "$name --help ran the benchmark" >&2; exit 1; fi
    if [ -n "$(ls -A)" ]; then echo "$name --help wrote $(ls -A)" >&2; exit 1; fi
    echo "$name --help ok"
done
