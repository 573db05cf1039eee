#!/usr/bin/env bash
# test_install.sh - install a build tree and use it as a user would.
#
# Usage: tests/api/test_install.sh BUILD_DIR
#
#   1. `cmake --install BUILD_DIR --prefix TMP` into a fresh directory;
#   2. the headers, the libraries, ctrace.pc and the ctrace command are there
#      (the pkg-config directory is wherever GNUInstallDirs put it:
#      lib/pkgconfig or lib/<multiarch>/pkgconfig);
#   3. `pkg-config --cflags --libs ctrace` (PKG_CONFIG_PATH set to that
#      directory) names the installed tree, not some other prefix;
#   4. a small two-thread program compiles and links with those flags, runs
#      against the installed libctrace.so (LD_LIBRARY_PATH) and writes a
#      trace that Go 1.27's `go tool trace -d=parsed` accepts; the same program linked
#      statically (libctrace.a plus `pkg-config --static --libs`) too;
#   5. a program that reads that trace and prints its statistics builds
#      against the installed reader and analyses, through pkg-config (C,
#      shared; C++, static) and through CMake's find_package(ctrace), and
#      finds the regions the trace holds;
#   6. the installed `ctrace --help` runs and prints its usage.
#
# Environment: CC (default cc) and CTRACE_TEST_CFLAGS (extra flags, e.g. the
# sanitizer flags the installed libraries were built with).
# Exit status: 0 on success, 1 on a failure, 2 on a usage error.

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"

want_args 1 "BUILD_DIR" $#
build=$1
cc=${CC:-cc}
# shellcheck disable=SC2206  # word splitting of the flags is intended
extra=(${CTRACE_TEST_CFLAGS:-})

command -v cmake >/dev/null 2>&1 || fatal "cmake not found"
command -v pkg-config >/dev/null 2>&1 || fatal "pkg-config not found"
command -v go >/dev/null 2>&1 || fatal "go not found on PATH (install golang-go)"
[ -f "$build/cmake_install.cmake" ] || fatal "$build is not a configured build tree"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctrace_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
export GOCACHE="$tmp/gocache"
home_writable "$tmp"
unset DISPLAY GOFLAGS

# --- 1. install ----------------------------------------------------------------

if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    sed 's/^/  | /' "$tmp/install.log" >&2
    fatal "cmake --install $build --prefix $prefix"
fi

# --- 2. the installed files ------------------------------------------------------

for f in include/ctrace/ctrace.h include/ctrace/format.h bin/ctrace; do
    [ -f "$prefix/$f" ] || fatal "not installed: $f"
done
pcfile=$(find "$prefix" -name ctrace.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pcfile" ] || fatal "ctrace.pc not installed (installed: $(cd "$prefix" && find . -type f | tr '\n' ' '))"
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$pcdir")
for f in libctrace.so libctrace.a; do
    [ -e "$libdir/$f" ] || fatal "$f not installed in ${libdir#"$prefix"/}"
done
echo "$prog: installed into $prefix (libraries in ${libdir#"$prefix"/})"

# Only the public ctrace_ names leave the shared library.
if command -v nm >/dev/null 2>&1; then
    private=$(nm -D --defined-only "$libdir/libctrace.so" | awk '{ print $NF }' \
              | grep -v '^ctrace_[^_]' | grep -v '^CTRACE_' || true)
    [ -z "$private" ] || fatal "libctrace.so exports non-public symbols: $(echo "$private" | head -n 10 | tr '\n' ' ')"
fi

# --- 3. pkg-config -----------------------------------------------------------------

export PKG_CONFIG_PATH=$pcdir
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
flags=$(pkg-config --cflags --libs ctrace) || fatal "pkg-config --cflags --libs ctrace"
echo "$prog: pkg-config --cflags --libs ctrace: $flags"
for f in $flags; do
    case $f in
    -I*|-L*)
        dir=${f#-?}
        case $dir in
        "$prefix"/*) ;;
        *)
            fatal "pkg-config points outside the installed tree: $f" \
                 "(want a path under $prefix; $pcfile has:" \
                 "$(grep -E '^(prefix|libdir|includedir)=' "$pcfile" | tr '\n' ' '))"
            ;;
        esac
        ;;
    esac
done

# --- 4. a program built against the installed tree -------------------------------

cat >"$tmp/user.c" <<'EOF'
#include <ctrace/ctrace.h>
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg) {
  uint64_t task = ctrace_task_create(0, "work");
  for (int i = 0; i < 100; i++) {
    ctrace_region_begin(task, "step");
    ctrace_logf(task, "user", "step %d of thread %s", i, (const char *)arg);
    ctrace_region_end(task, "step");
  }
  ctrace_task_end(task);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int rc = ctrace_start_file(argv[1], NULL);
  if (rc) {
    fprintf(stderr, "ctrace_start_file: %s\n", ctrace_strerror(rc));
    return 1;
  }
  pthread_t th;
  if (pthread_create(&th, NULL, work, "b")) return 1;
  work("a");
  pthread_join(th, NULL);
  rc = ctrace_stop();
  if (rc) {
    fprintf(stderr, "ctrace_stop: %s\n", ctrace_strerror(rc));
    return 1;
  }
  ctrace_stats st;
  ctrace_stats_get(&st);
  printf("user: %llu events, %llu lost\n", (unsigned long long)st.events,
         (unsigned long long)st.lost);
  return st.lost != 0;
}
EOF

# The newest Go reads the library's default format, Go's current one
# (Go 1.19, on PATH, does not).
. "$(dirname "$0")/../lib/go_paths.sh"
trace_tool=$(go_trace_tool "$GO127") || fatal "cannot locate Go 1.27's 'go tool trace'"

# check_trace TRACE: go tool trace -d=parsed must accept it and print events.
check_trace() {
    local rc=0
    "$trace_tool" -d=parsed "$1" >"$tmp/d.out" 2>"$tmp/d.err" || rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$tmp/d.out" ]; then
        tail -n 5 "$tmp/d.err" | sed 's/^/  | /' >&2
        fatal "go tool trace -d=parsed $1: status $rc, $(wc -l <"$tmp/d.out") events"
    fi
    echo "$prog: go tool trace -d=parsed accepts $(basename "$1") ($(wc -l <"$tmp/d.out") events)"
}

# Dynamic, exactly as the pkg-config line says.
# shellcheck disable=SC2086  # $flags is a list of flags
if ! "$cc" "${extra[@]}" -o "$tmp/user" "$tmp/user.c" $flags -lpthread 2>"$tmp/cc.err"; then
    sed 's/^/  | /' "$tmp/cc.err" >&2
    fatal "cannot build a program with: $cc ${extra[*]} user.c $flags -lpthread"
fi
resolved=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/user" | awk '$1 ~ /^libctrace\.so/ { print $3 }')
[ "$resolved" = "$libdir/libctrace.so.0" ] \
    || fatal "user program resolves libctrace to '$resolved', not $libdir/libctrace.so.0"
LD_LIBRARY_PATH=$libdir "$tmp/user" "$tmp/user.trace" || fatal "the dynamically linked program failed"
check_trace "$tmp/user.trace"

# Static: libctrace.a and its private dependencies (Libs.private).
cflags=$(pkg-config --cflags ctrace) || fatal "pkg-config --cflags ctrace"
static_libs=$(pkg-config --static --libs-only-l ctrace | sed 's/\(^\| \)-lctrace\( \|$\)/ /') \
    || fatal "pkg-config --static --libs-only-l ctrace"
# shellcheck disable=SC2086  # lists of flags
if ! "$cc" "${extra[@]}" -o "$tmp/user_static" "$tmp/user.c" $cflags \
        "$libdir/libctrace.a" $static_libs -lpthread 2>"$tmp/cc.err"; then
    sed 's/^/  | /' "$tmp/cc.err" >&2
    fatal "cannot link statically with: libctrace.a $static_libs (pkg-config --static)"
fi
if ldd "$tmp/user_static" | has libctrace; then
    fatal "the static program still loads libctrace.so"
fi
"$tmp/user_static" "$tmp/user_static.trace" || fatal "the statically linked program failed"
check_trace "$tmp/user_static.trace"

# --- 5. a reader built against the installed tree ------------------------------------
# It reads the trace the user program wrote and prints its statistics
# (libctrace-analyse, on libctrace-parse), built through pkg-config and
# through CMake's find_package(ctrace), dynamically and statically; as C++
# too, for the headers are the library's, not only C's.

for f in libctrace-parse.so libctrace-parse.a libctrace-analyse.so libctrace-analyse.a \
         pkgconfig/ctrace-parse.pc pkgconfig/ctrace-analyse.pc cmake/ctrace/ctraceConfig.cmake; do
    [ -e "$libdir/$f" ] || fatal "$f not installed in ${libdir#"$prefix"/}"
done
for f in parse.h analyse.h export.h; do
    [ -f "$prefix/include/ctrace/$f" ] || fatal "not installed: include/ctrace/$f"
done
for l in libctrace-parse.so libctrace-analyse.so; do
    private=$(nm -D --defined-only "$libdir/$l" | awk '{ print $NF }' | grep -v '^ctrace_[^_]' || true)
    [ -z "$private" ] || fatal "$l exports non-public symbols: $(echo "$private" | head -n 10 | tr '\n' ' ')"
done

cat >"$tmp/stats.c" <<'EOF'
#include <ctrace/analyse.h>
#include <ctrace/parse.h>
#include <stdio.h>

int main(int argc, char **argv) {
  ctrace_reader *r;
  ctrace_parse_error err;
  ctrace_trace_info info;
  if (argc != 2) return 2;
  if (ctrace_reader_open(argv[1], &r, &err) != 0 || ctrace_reader_check(r, &info, &err) != 0) {
    fprintf(stderr, "%s: at byte %llu: %s\n", argv[1], (unsigned long long)err.offset, err.message);
    return 1;
  }
  ctrace_stats *st;
  char msg[256];
  if (ctrace_stats_build(r, &info, &st, msg, sizeof msg) != 0) {
    fprintf(stderr, "%s: %s\n", argv[1], msg);
    return 1;
  }
  printf("events %llu goroutines %zu regions %zu\n", (unsigned long long)info.events,
         st->ngoroutines, st->nregions);
  for (size_t i = 0; i < st->nregions; i++)
    printf("region %s %llu\n", st->regions[i].name, (unsigned long long)st->regions[i].count);
  ctrace_stats_free(st);
  ctrace_reader_close(r);
  return 0;
}
EOF
cp "$tmp/stats.c" "$tmp/stats.cpp"

# check_stats PROGRAM: it reads user.trace and finds its 200 "step"
# regions (test 4's program: 100 per thread).
check_stats() {
    local got
    got=$(LD_LIBRARY_PATH=$libdir "$1" "$tmp/user.trace") || fatal "$1 failed on user.trace"
    grep -qx 'region step 200' <<<"$got" || fatal "$1 printed no 'region step 200': $got"
}

rflags=$(pkg-config --cflags --libs ctrace-analyse) || fatal "pkg-config --cflags --libs ctrace-analyse"
echo "$prog: pkg-config --cflags --libs ctrace-analyse: $rflags"
# shellcheck disable=SC2086  # $rflags is a list of flags
"$cc" "${extra[@]}" -o "$tmp/stats" "$tmp/stats.c" $rflags 2>"$tmp/cc.err" ||
    { sed 's/^/  | /' "$tmp/cc.err" >&2; fatal "cannot build a reader with: $cc stats.c $rflags"; }
check_stats "$tmp/stats"
rcflags=$(pkg-config --cflags ctrace-analyse)
rstatic=$(pkg-config --static --libs-only-l ctrace-analyse | sed -E 's/(^| )-lctrace-(analyse|parse)( |$)/ /g')
# shellcheck disable=SC2086  # lists of flags
"${CXX:-c++}" "${extra[@]}" -o "$tmp/stats_static" "$tmp/stats.cpp" $rcflags \
    "$libdir/libctrace-analyse.a" "$libdir/libctrace-parse.a" $rstatic 2>"$tmp/cc.err" ||
    { sed 's/^/  | /' "$tmp/cc.err" >&2; fatal "cannot link a C++ reader statically (pkg-config --static)"; }
if ldd "$tmp/stats_static" | has libctrace; then fatal "the static reader still loads a libctrace .so"; fi
check_stats "$tmp/stats_static"
echo "$prog: a reader built with pkg-config (C, shared; C++, static) reads user.trace"

# Through CMake, as a project would that finds ctrace installed elsewhere.
mkdir -p "$tmp/cm"
cp "$tmp/stats.c" "$tmp/cm/stats.c"
cat >"$tmp/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(reader C)
find_package(ctrace 0.1 REQUIRED)
add_executable(stats stats.c)
target_link_libraries(stats PRIVATE ctrace::analyse)
add_executable(stats_static stats.c)
target_link_libraries(stats_static PRIVATE ctrace::analyse_static)
EOF
if ! { CFLAGS="${extra[*]}" LDFLAGS="${extra[*]}" cmake -S "$tmp/cm" -B "$tmp/cm/build" \
         -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" &&
       cmake --build "$tmp/cm/build"; } >"$tmp/cm.log" 2>&1; then
    sed 's/^/  | /' "$tmp/cm.log" >&2
    fatal "cannot build a reader with find_package(ctrace)"
fi
check_stats "$tmp/cm/build/stats"
check_stats "$tmp/cm/build/stats_static"
echo "$prog: a reader built with find_package(ctrace) (shared and static) reads user.trace"

# --- 6. the ctrace command -----------------------------------------------------------

out=$("$prefix/bin/ctrace" --help 2>&1) || fatal "ctrace --help exited with status $?: $out"
case $out in
*usage*) ;;
*) fatal "ctrace --help printed no usage: $out" ;;
esac
echo "$prog: $prefix/bin/ctrace --help ok"
echo "$prog: PASS"
