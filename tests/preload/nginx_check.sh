#!/usr/bin/env bash
# nginx_check.sh - Debian's nginx (nginx-light) under `ctrace run -f`: its
# master and workers, a trace each, named and placed on one timeline.
#
# Usage: tests/preload/nginx_check.sh CTRACE OUTDIR
#
# nginx runs in the foreground (daemon off) with a master and two
# workers, serves a request, and 0.7 s after its start is told to reload
# (SIGHUP): the master forks two new workers then, and the old ones end;
# then it is told to quit (SIGQUIT). In the JSON export of its traces,
# with no warning:
#   - each process is named by the title nginx gives it, as ps shows it:
#     "nginx: master process ... (pid N)", "nginx: worker process (pid
#     N)" (an old worker of the reload: "nginx: worker process is
#     shutting down (pid N)"), N the pid its trace's file name ends with
#     (the master's: the pid ctrace run ran it as);
#   - every worker's first event comes after the master's first, and the
#     two workers forked at the reload 0.5 s or more after it (without the
#     traces' anchors all would start at 0);
#   - ctrace stats of a worker says its parent is the master.
# Skipped (exit 77) if nginx is not installed.
# Exit status: 0 pass, 1 failure, 2 usage error, 77 skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 2 "CTRACE OUTDIR" $#
ctrace=$1 out=$2
nginx=$(command -v nginx || true)
[ -n "$nginx" ] || [ ! -x /usr/sbin/nginx ] || nginx=/usr/sbin/nginx
if [ -z "$nginx" ]; then
    skip "nginx is not installed (nginx-light: make test-deps)"
fi
# Debian's build, not ours: its leaks at exit are not ASan's to judge here.
[ "${CTRACE_TEST_SANITIZE:-}" != address ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
rm -rf "$out"
mkdir -p "$out/tmp"
out=$(cd "$out" && pwd)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# As root, the workers would become nobody and could not write their
# traces beside the master's.
user=
[ "$(id -u)" -ne 0 ] || user="user root;"
cat >"$out/nginx.conf" <<EOF
$user
daemon off;
master_process on;
worker_processes 2;
pid $out/nginx.pid;
error_log $out/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $out/tmp/body;
    proxy_temp_path $out/tmp/proxy;
    fastcgi_temp_path $out/tmp/fastcgi;
    uwsgi_temp_path $out/tmp/uwsgi;
    scgi_temp_path $out/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "ok\n"; }
    }
}
EOF

pid=
cleanup() { [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true; }
trap cleanup EXIT
# ctrace run execs nginx: $! is the master's pid.
"$ctrace" run -f -o "$out/ngx.trace" -- "$nginx" -p "$out" -c "$out/nginx.conf" -e "$out/error.log" \
    >"$out/nginx.out" 2>&1 &
pid=$!
start=$(date +%s%N)
served=
for _ in $(seq 100); do
    if curl -s "http://127.0.0.1:$port/" 2>/dev/null | has ok; then served=1; break; fi
    sleep 0.1
done
[ -n "$served" ] || fatal "nginx does not serve: $(cat "$out/error.log" "$out/nginx.out" 2>/dev/null | tail -5)"
now=$(date +%s%N)
[ $((now - start)) -ge 700000000 ] || sleep "0.$(printf "%03d" $(( (700000000 - (now - start)) / 1000000 )))"
kill -HUP "$pid"
# The new workers serve once they are there; the old ones end.
for _ in $(seq 50); do
    [ "$(ls "$out"/ngx.trace.pid* 2>/dev/null | wc -l)" -ge 4 ] && break
    sleep 0.1
done
curl -s "http://127.0.0.1:$port/" >/dev/null || true
kill -QUIT "$pid"
master=$pid
wait "$pid" || fatal "nginx exited with status $? under ctrace run: $(tail -5 "$out/nginx.out")"
pid=
workers=$(ls "$out"/ngx.trace.pid* 2>/dev/null | wc -l)
[ "$workers" -ge 4 ] || fatal "$workers workers traced, not 4 (2, and 2 more at the reload): $(ls "$out")"

"$ctrace" export -f json -o "$out/ngx.json" "$out/ngx.trace" "$out"/ngx.trace.pid* 2>"$out/export.err" ||
    fatal "export: $(cat "$out/export.err")"
[ ! -s "$out/export.err" ] || fatal "export warned: $(cat "$out/export.err")"
# pid TAB name TAB first (microseconds), per process.
jq -r '.traceEvents as $e
    | ($e | map(select(.ph == "M" and .name == "process_name")) | map({key: (.pid | tostring), value: .args.name}) | from_entries) as $n
    | $e | map(select(.ts != null)) | group_by(.pid)[]
    | [.[0].pid, $n[.[0].pid | tostring], (map(.ts) | min)] | @tsv' "$out/ngx.json" >"$out/ngx.spans"
awk -F'\t' -v n="$((workers + 1))" -v m="$master" '
    { role = $1 == m ? "master process .+" : "worker process( is shutting down)?" }
    $2 !~ "^nginx: " role " \\(pid " $1 "\\)$" { bad = 1 } END { exit bad || NR != n }' \
    "$out/ngx.spans" || fatal "the processes are not each named by nginx's title and pid: $(cat "$out/ngx.spans")"
grep -q "^$master	" "$out/ngx.spans" || fatal "no process of the master's pid $master: $(cat "$out/ngx.spans")"
# Workers in the order they were forked: the first two at the start, the
# two of the reload after.
awk -F'\t' -v m="$master" '$1 == m { mf = $3; next } { print $3 - mf }' "$out/ngx.spans" | sort -n >"$out/gaps"
awk 'NR <= 2 && $1 <= 0 { bad = 1 } NR > 2 && $1 < 500000 { bad = 1 } END { exit bad }' "$out/gaps" ||
    fatal "the workers' first events are not after the master's, and those of the reload 500 ms or more after it (us): $(tr '\n' ' ' <"$out/gaps")"
for w in "$out"/ngx.trace.pid*; do
    "$ctrace" stats "$w" | has "^  process      nginx (pid ${w##*.pid}, parent $master) on " ||
        fatal "stats of $w does not say nginx (pid ${w##*.pid}, parent $master): $("$ctrace" stats "$w" | head -3)"
done
echo "$prog: nginx's master and $workers workers named by their titles and pids and placed: the workers' first events $(tr '\n' ' ' <"$out/gaps")us after the master's"
