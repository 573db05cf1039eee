#!/usr/bin/env bash
# view_check.sh - `ctrace view` serves what `ctrace export` writes, as
# ui.perfetto.dev needs it, on 127.0.0.1 only.
#
# Usage: tests/export/view_check.sh CTRACE BINDIR WORKDIR
#
# `ctrace view --once --port=P` runs in the background on a free port (a
# random one, another tried if it is taken), and curl plays the UI:
#   - the link printed is https://ui.perfetto.dev/#!/?url=http://127.0.0.1:P/NAME
#     and the server listens on 127.0.0.1:P, on no other address;
#   - a second server on P exits 1 saying the port is in use;
#   - an OPTIONS preflight: 204, the UI's origin allowed, GET allowed,
#     Private Network Access allowed;
#   - HEAD of the path: 200 and the Content-Length, no body;
#   - GET of another path: 404 (before the real GET: --once exits after it);
#   - clients that ask for the trace and go away unread (at once, or with
#     the response come) leave the --once server up;
#   - GET of the path: 200, the CORS origin, application/octet-stream,
#     no-cache, Content-Length, and a body byte-identical to
#     `ctrace export -o FILE` of the same traces; then --once exits 0;
#   - with --from/--to, the body is `ctrace export --from --to`'s;
#   - past --budget: the link is an index page of windows end to end,
#     each linked into the UI and exported when fetched, as `ctrace
#     export --from --to` writes it;
#   - several traces, without --once: the same, then SIGINT ends it, 0;
#   - a bad trace: exit 1 with its byte offset, no link, no "serving".
# Exit status: 0 pass, 1 failure, 2 usage error.

set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
ctrace_args "$@"
command -v curl >/dev/null 2>&1 || die "curl not found (install curl: make test-deps)"
vpid=
cleanup() { [ -n "$vpid" ] && kill "$vpid" 2>/dev/null; }
trap cleanup EXIT
curl=(curl -s --max-time 20)
origin=https://ui.perfetto.dev

# wait_exit PID SECONDS: sets st to PID's exit status, or 124 (and kills
# it) if it is still running after SECONDS.
wait_exit() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
        kill "$1" 2>/dev/null
        wait "$1" 2>/dev/null
        st=124
    else
        wait "$1"
        st=$?
    fi
}

# start NAME ARGS...: `ctrace view --port=P ARGS...` in the background
# (vpid, port), its output in $run/NAME.{out,err}, once it has printed its
# link. Returns 1 if it exited first (st: its status) for another reason
# than the port being taken.
start() {
    local name=$1 try i
    shift
    for try in 1 2 3 4 5 6 7 8 9 10; do
        port=$((20000 + RANDOM % 40000))
        "$ctrace" view --port="$port" "$@" >"$run/$name.out" 2>"$run/$name.err" &
        vpid=$!
        # The export comes first: on a loaded machine it may take a while.
        for ((i = 0; i < 600; i++)); do
            [ -s "$run/$name.out" ] && return 0
            kill -0 "$vpid" 2>/dev/null || break
            sleep 0.1
        done
        wait_exit "$vpid" 1
        vpid=
        grep -q "is in use" "$run/$name.err" || return 1
    done
    return 1
}

# status FILE: the status code of the response whose headers are in FILE.
status() { awk 'NR == 1 { print $2 }' "$1"; }
# hdr FILE NAME: the value of header NAME in FILE.
hdr() { awk -v n="$(echo "$2" | tr 'A-Z' 'a-z')" -F': ' 'tolower($1) == n { sub(/\r$/, "", $2); print $2; exit }' "$1"; }

# expect NAME WHAT WANT GOT
expect() { [ "$3" = "$4" ] || fail "$1" "$2: \"$4\", want \"$3\""; }

"$bindir/ex_threads" "$run/ex_threads.trace" >/dev/null 2>&1 || die "ex_threads exited non-zero"
cp "$run/ex_threads.trace" "$run/copy.pid77"

# --help, and bad usage.
out=$("$ctrace" view --help) && [[ $out == "usage: ctrace view"* ]] || fail help "ctrace view --help"
st=0; "$ctrace" view --port=70000 "$run/ex_threads.trace" >/dev/null 2>&1 || st=$?
expect usage "--port=70000: exit status" 2 "$st"

# ---- one trace, --once -----------------------------------------------------
"$ctrace" export -o "$run/one.want" "$run/ex_threads.trace" || die "ctrace export failed"
size=$(wc -c <"$run/one.want")
if ! start one --once "$run/ex_threads.trace"; then
    fail one "ctrace view did not start (exit status $st)"; sed 's/^/  | /' "$run/one.err" >&2
else
    link=$(cat "$run/one.out")
    [ "$(wc -l <"$run/one.out")" -eq 1 ] || fail one "stdout is not one line: $link"
    [[ $link =~ ^https://ui\.perfetto\.dev/#!/\?url=http://127\.0\.0\.1:$port/[A-Za-z0-9._-]+$ ]] ||
        fail one "link $link"
    url=${link#*url=}

    # Listening on 127.0.0.1:P, and on no other address.
    phex=$(printf '%04X' "$port")
    listen=$(awk -v p=":$phex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
    expect one "listening sockets on port $port" "0100007F:$phex" "$listen"

    # The port taken: a second server says so and exits 1.
    st=0
    timeout 120 "$ctrace" view --once --port="$port" "$run/ex_threads.trace" >"$run/busy.out" 2>"$run/busy.err" || st=$?
    expect busy "second server on the port: exit status" 1 "$st"
    grep -q "127.0.0.1:$port is in use" "$run/busy.err" || fail busy "no port in use said: $(cat "$run/busy.err")"
    [ ! -s "$run/busy.out" ] || fail busy "printed a link: $(cat "$run/busy.out")"

    # The preflight.
    "${curl[@]}" -o "$run/pre.body" -D "$run/pre.h" -X OPTIONS -H "Origin: $origin" \
        -H 'Access-Control-Request-Method: GET' -H 'Access-Control-Request-Private-Network: true' "$url" ||
        fail preflight "curl failed"
    expect preflight status 204 "$(status "$run/pre.h")"
    expect preflight Access-Control-Allow-Origin "$origin" "$(hdr "$run/pre.h" Access-Control-Allow-Origin)"
    [[ $(hdr "$run/pre.h" Access-Control-Allow-Methods) == *GET* ]] || fail preflight "GET not among the allowed methods"
    expect preflight Access-Control-Allow-Private-Network true "$(hdr "$run/pre.h" Access-Control-Allow-Private-Network)"

    # HEAD: the length, no body.
    "${curl[@]}" -o "$run/head.body" -D "$run/head.h" -I "$url" || fail head "curl failed"
    expect head status 200 "$(status "$run/head.h")"
    expect head Content-Length "$size" "$(hdr "$run/head.h" Content-Length)"

    # Another path.
    "${curl[@]}" -o "$run/nf.body" -D "$run/nf.h" -H "Origin: $origin" "${url%/*}/other.pftrace" || fail 404 "curl failed"
    expect 404 status 404 "$(status "$run/nf.h")"
    expect 404 Access-Control-Allow-Origin "$origin" "$(hdr "$run/nf.h" Access-Control-Allow-Origin)"

    # Clients that ask for the trace and go away without reading it: at
    # once, and once the response has come (unread, so the close resets
    # the connection). Neither has the trace: --once goes on serving.
    for wait in 0 0.5; do
        if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
            printf 'GET /%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "${url##*/}" >&3
            sleep "$wait"
            exec 3<&- 3>&-
        else
            fail gone "cannot connect"
        fi
        sleep 0.3
        kill -0 "$vpid" 2>/dev/null || fail gone "the server exited after a client went away after ${wait}s"
    done

    # The trace itself, as the UI fetches it.
    "${curl[@]}" -o "$run/one.got" -D "$run/one.h" -H "Origin: $origin" "$url" || fail one "curl GET failed"
    expect one status 200 "$(status "$run/one.h")"
    expect one Access-Control-Allow-Origin "$origin" "$(hdr "$run/one.h" Access-Control-Allow-Origin)"
    expect one Content-Type application/octet-stream "$(hdr "$run/one.h" Content-Type)"
    expect one Cache-Control no-cache "$(hdr "$run/one.h" Cache-Control)"
    expect one Content-Length "$size" "$(hdr "$run/one.h" Content-Length)"
    cmp -s "$run/one.want" "$run/one.got" || fail one "body ($(wc -c <"$run/one.got") bytes) differs from ctrace export's ($size)"
    wait_exit "$vpid" 30
    vpid=
    expect one "--once exit status after the GET" 0 "$st"
fi

# ---- a window: --from/--to serve what `ctrace export --from --to` writes --------
"$ctrace" export --from 2ms --to 6ms -o "$run/win.want" "$run/ex_threads.trace" || die "ctrace export of a window failed"
cmp -s "$run/win.want" "$run/one.want" && fail window "the window's export is the whole's"
if ! start win --once --from 2ms --to 6ms "$run/ex_threads.trace"; then
    fail window "ctrace view --from --to did not start (exit status $st)"; sed 's/^/  | /' "$run/win.err" >&2
else
    url=$(head -n 1 "$run/win.out"); url=${url#*url=}
    "${curl[@]}" -o "$run/win.got" -H "Origin: $origin" "$url" || fail window "curl GET failed"
    cmp -s "$run/win.want" "$run/win.got" ||
        fail window "body ($(wc -c <"$run/win.got") bytes) differs from ctrace export --from --to's ($(wc -c <"$run/win.want"))"
    wait_exit "$vpid" 30
    vpid=
    expect window "--once exit status after the GET" 0 "$st"
fi

# ---- past the budget: an index of windows, each exported when fetched ------
# The link is the index page's; the page links each window into the UI,
# as many as stderr says, numbered from 1, end to end from the trace's
# start (their length is cut by the rate of what was made up to the
# budget, which depends on where the trace is busy: not compared with
# export's proposals, cut by the whole's rate); a window's body is
# `ctrace export --from --to`'s; one past the last is 404; --once exits
# once a window is sent.
if ! start over --once --budget 2K "$run/ex_threads.trace"; then
    fail over "ctrace view --budget 2K did not start (exit status $st)"; sed 's/^/  | /' "$run/over.err" >&2
else
    expect over "stdout" "http://127.0.0.1:$port/" "$(cat "$run/over.out")"
    nwin=$(sed -n 's/.*serving it in \([0-9]*\) windows of .*/\1/p' "$run/over.err")
    [ -n "$nwin" ] && [ "$nwin" -ge 2 ] || fail over "no windows said: $(cat "$run/over.err")"
    "${curl[@]}" -o "$run/index.html" -D "$run/index.h" "http://127.0.0.1:$port/" || fail over "curl of the index failed"
    expect over "index status" 200 "$(status "$run/index.h")"
    expect over "index Content-Type" "text/html; charset=utf-8" "$(hdr "$run/index.h" Content-Type)"
    # Each window's link and times, as "K FROM TO".
    sed -n 's|.*<a href="https://ui.perfetto.dev/#!/?url=http://127.0.0.1:'"$port"'/ex_threads.trace-\([0-9]*\).pftrace">\([^ ]*\) to \([^<]*\)</a>.*|\1 \2 \3|p' \
        "$run/index.html" >"$run/index.links"
    expect over "windows linked" "${nwin:-?}" "$(wc -l <"$run/index.links")"
    expect over "their numbers" "$(seq "${nwin:-0}" | tr '\n' ' ')" "$(cut -d' ' -f1 "$run/index.links" | tr '\n' ' ')"
    bad=$(awk 'NR == 1 && $2 != "0s" { print "window 1 begins at " $2; exit }
               NR > 1 && $2 != prev { print "window " $1 " begins at " $2 ", the one before ends at " prev; exit }
               { prev = $3 }' "$run/index.links")
    [ -z "$bad" ] || fail over "the windows are not end to end from the start: $bad"
    "${curl[@]}" -o "$run/past.body" -D "$run/past.h" "http://127.0.0.1:$port/ex_threads.trace-$((${nwin:-0} + 1)).pftrace" ||
        fail over "curl past the last window failed"
    expect over "past the last window" 404 "$(status "$run/past.h")"
    read -r _ a b < <(head -n 1 "$run/index.links")
    "$ctrace" export --from "$a" --to "$b" -o "$run/w1.want" "$run/ex_threads.trace" || fail over "export --from $a --to $b failed"
    "${curl[@]}" -o "$run/w1.got" -D "$run/w1.h" -H "Origin: $origin" "http://127.0.0.1:$port/ex_threads.trace-1.pftrace" ||
        fail over "curl of window 1 failed"
    expect over "window 1 status" 200 "$(status "$run/w1.h")"
    expect over "window 1 origin" "$origin" "$(hdr "$run/w1.h" Access-Control-Allow-Origin)"
    cmp -s "$run/w1.want" "$run/w1.got" ||
        fail over "window 1 ($(wc -c <"$run/w1.got") bytes) is not ctrace export --from $a --to $b's ($(wc -c <"$run/w1.want"))"
    wait_exit "$vpid" 30
    vpid=
    expect over "--once exit status after a window" 0 "$st"
fi

# ---- several traces, until SIGINT ---------------------------------------------
"$ctrace" export -o "$run/two.want" "$run/ex_threads.trace" "$run/copy.pid77" || die "ctrace export of two failed"
if ! start two "$run/ex_threads.trace" "$run/copy.pid77"; then
    fail two "ctrace view did not start (exit status $st)"; sed 's/^/  | /' "$run/two.err" >&2
else
    url=$(sed 's/.*url=//' "$run/two.out")
    for i in 1 2; do
        "${curl[@]}" -o "$run/two.got" -D "$run/two.h" "$url" || fail two "curl GET $i failed"
        expect two "status of GET $i" 200 "$(status "$run/two.h")"
        cmp -s "$run/two.want" "$run/two.got" || fail two "body of GET $i differs from ctrace export's"
    done
    kill -INT "$vpid"
    wait_exit "$vpid" 10
    vpid=
    expect two "exit status after SIGINT" 0 "$st"
fi

# ---- a bad trace: nothing served --------------------------------------------
head -c 3000 "$run/ex_threads.trace" >"$run/bad.trace"
port=$((20000 + RANDOM % 40000))
st=0
timeout 120 "$ctrace" view --once --port="$port" "$run/bad.trace" >"$run/bad.out" 2>"$run/bad.err" || st=$?
expect bad "exit status" 1 "$st"
grep -q "bad.trace: offset [0-9]" "$run/bad.err" || fail bad "no byte offset in: $(cat "$run/bad.err")"
[ ! -s "$run/bad.out" ] || fail bad "printed a link: $(cat "$run/bad.out")"
grep -q "serving" "$run/bad.err" && fail bad "says it is serving"

finish "" ok
