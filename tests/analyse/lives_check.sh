#!/usr/bin/env bash
# lives_check.sh - the profiles that learn the goroutines' lifetimes in
# their own pass (src/analyse/lives.c) count what they keep aside as the
# filter's pass with intervals counted it (ctrace__an_overlap), which
# gave the values below.
#
# Usage: tests/analyse/lives_check.sh CTRACE TRACE WORKDIR
#
# TRACE is fuzz/corpus/go123_lives_kept, a Go 1.23 trace made by
# hand (its text form: tests/analyse/lives_kept.txt, turned to bytes by
# Go 1.23's gotraceraw text2bytes): goroutines waiting since before the
# trace, woken, of which one never starts (its waits count to the
# trace's end) and one starts later (they count nothing); goroutines
# woken and sampled after a "forever" block that a later one moves, one
# of them ended for good (counted then), the other to the end; CPU
# samples before a start, after an end and at the trace's last time; a
# region begun before the trace and one still open at its end. Each
# profile, through `go tool pprof -raw` (pprof_norm.awk), must be the
# one given.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 3 "CTRACE TRACE WORKDIR" $#
ctrace=$1
trace=$2
work_dir "$3"
. "$here/../lib/go_paths.sh"
[ -x "$GO123" ] || skip "needs Go 1.23 at $GO123 (make test-deps)"
go_env

# check NAME ARGS... <<EXPECTED: the profile of ARGS, normalised.
check() {
    local name=$1
    shift
    cat >"$run/want"
    "$ctrace" pprof "$@" -o "$run/p.pb" "$trace" 2>"$run/err" || { fail "$name" "exit status $?"; indent "$run/err"; return; }
    GOTOOLCHAIN=local "$GO123" tool pprof -raw "$run/p.pb" 2>"$run/err" | awk -f "$here/pprof_norm.awk" | sort >"$run/got"
    cmp -s "$run/want" "$run/got" || { fail "$name" "another profile"; diff "$run/want" "$run/got" | indent /dev/stdin 12; }
}

check "waker, never started" -t waker --goroutine= <<'E'
2 86 | 0x1040 main.main /src/main.go:10:0 ;
E
check "waker, after an end" -t waker --goroutine=main.worker <<'E'
2 40 | 0x1040 main.main /src/main.go:10:0 ;
E
check "waker, started later" -t waker --goroutine=main.sleeper <<'E'
1 90 | 0x1040 main.main /src/main.go:10:0 ;
E
check "waker, region" -t waker --region=r <<'E'
1 35 | 0x10c0 runtime.gopark /src/main.go:10:0 ; 0x10c1 main.sleeper /src/main.go:11:0 ;
4 140 | 0x1100 runtime.gopark /src/main.go:10:0 ; 0x1101 main.worker /src/main.go:11:0 ;
E
check "cpu, never started" -t cpu --goroutine= <<'E'
1 20 | 0x1180 main.spin /src/main.go:10:0 ; 0x1181 main.main /src/main.go:11:0 ;
E
check "cpu, after an end" -t cpu --goroutine=main.worker <<'E'
6 120 | 0x11c0 main.spin2 /src/main.go:10:0 ; 0x11c1 main.worker /src/main.go:11:0 ;
E
check "cpu, started later" -t cpu --goroutine=main.sleeper <<'E'
2 40 | 0x1200 main.spin3 /src/main.go:10:0 ; 0x1201 main.sleeper /src/main.go:11:0 ;
E
check "cpu, region" -t cpu --region=r <<'E'
3 60 | 0x1180 main.spin /src/main.go:10:0 ; 0x1181 main.main /src/main.go:11:0 ;
E
check "cpu, both" -t cpu --goroutine=main.main --region=r <<'E'
3 60 | 0x1180 main.spin /src/main.go:10:0 ; 0x1181 main.main /src/main.go:11:0 ;
E
finish "" "ok"
