#!/usr/bin/env bash
# Brings the Go toolchains the tests compare ctrace with that bookworm does
# not ship: Go 1.24 from trixie, Go 1.26 and 1.27 from sid. Each is Debian's
# golang-1.NN-go, which depends on nothing but its golang-1.NN-src.
# Usage: scripts/go-oracles.sh [BUILD_DIR]   (default: build)
#
# The machine's own apt sources are never touched: a trixie or sid line
# there would let a later upgrade pull unstable packages into the system.
# A private apt configuration under BUILD_DIR/apt/ (its own sources list,
# state and cache) only downloads the .deb files, and dpkg -x unpacks them
# into BUILD_DIR/go/, where tests/lib/go_paths.sh finds them: nothing is
# installed, nothing outside BUILD_DIR is written. A toolchain already
# there is not fetched again.
set -eu
build=$(realpath -m "${1:-build}")
apt=$build/apt
dest=$build/go

# SUITE:VERSION for each toolchain.
wanted="trixie:1.24 sid:1.26 sid:1.27"

# From Go 1.24 on, `go tool trace` and `go tool pprof` are not shipped
# built: the go command builds them on first use into the build cache,
# half a minute each time a test's cache is new. They are built here once
# into the toolchain's own tool directory, where the go command (and
# tests/lib/go_paths.sh's go_trace_tool) finds them as it finds Go 1.23's.
tools() {
  local v=$1 go=$dest/go-$1/bin/go dir t bin
  dir=$(GOTOOLCHAIN=local "$go" env GOTOOLDIR)
  for t in trace pprof; do
    [ -x "$dir/$t" ] && continue
    bin=$(GOTOOLCHAIN=local GOFLAGS= GOCACHE="$dest/gocache" "$go" tool -n "$t") || return 1
    cp "$bin" "$dir/$t.tmp" && mv -f "$dir/$t.tmp" "$dir/$t"
  done
}

need=()
for w in $wanted; do
  v=${w#*:}
  if [ -x "$dest/go-$v/bin/go" ]; then
    tools "$v" || { echo "ctrace: cannot build Go $v's trace and pprof tools" >&2; exit 1; }
  else
    need+=("$w")
  fi
done
[ ${#need[@]} -eq 0 ] && exit 0

echo "ctrace: fetching Go toolchains into $dest: ${need[*]}" >&2
mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial" "$apt/etc" "$apt/debs" "$dest"
# The mirror the machine's bookworm comes from, and Debian's keyring, which
# signs trixie and sid too.
uri=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
uri=${uri:-http://deb.debian.org/debian}
key=/usr/share/keyrings/debian-archive-keyring.gpg
suites=$(for w in "${need[@]}"; do echo "${w%%:*}"; done | sort -u | tr '\n' ' ')
for s in $suites; do
  echo "deb [signed-by=$key] $uri $s main"
done >"$apt/etc/sources.list"

# Our list alone (no sources.list.d); an empty dpkg status of our own, so
# that apt resolves nothing against the machine's packages: we only download.
aptopts=(-o "Dir::Etc::SourceList=$apt/etc/sources.list"
         -o "Dir::Etc::SourceParts=/dev/null"
         -o "Dir::State=$apt/state"
         -o "Dir::State::status=$apt/state/status"
         -o "Dir::Cache=$apt/cache"
         -o "APT::Default-Release="
         -o "Debug::NoLocking=1"
         -o "Acquire::Languages=none")
# apt's download user (_apt) cannot write into a build tree of root's.
[ "$(id -u)" -ne 0 ] || aptopts+=(-o "APT::Sandbox::User=root")
touch "$apt/state/status"
apt-get -q "${aptopts[@]}" update >&2

cd "$apt/debs"
for w in "${need[@]}"; do
  suite=${w%%:*} v=${w#*:}
  pkgs="golang-$v-go golang-$v-src"
  for p in $pkgs; do
    if ! apt-cache "${aptopts[@]}" show "$p/$suite" >/dev/null 2>&1; then
      echo "ctrace: $p is not in $suite; what $suite has:" >&2
      apt-cache "${aptopts[@]}" search '^golang-1\.[0-9]*-go$' >&2 || true
      exit 1
    fi
    rm -f "${p}"_*.deb
    apt-get -q "${aptopts[@]}" download "$p/$suite" >&2
  done
  rm -rf "$dest/root-$v" "$dest/go-$v"
  for p in $pkgs; do
    dpkg -x "$p"_*.deb "$dest/root-$v"
  done
  # The package's GOROOT is /usr/lib/go-1.NN; its bin/ and src/ are links
  # into /usr/share/go-1.NN, which dpkg -x unpacked beside it: make the
  # links relative to the unpacked tree so that GOROOT is found from there.
  root=$dest/root-$v
  for l in $(find "$root/usr/lib/go-$v" -maxdepth 1 -type l); do
    t=$(readlink "$l")
    case $t in /*) ln -sfn "$root$t" "$l" ;; esac
  done
  ln -sfn "root-$v/usr/lib/go-$v" "$dest/go-$v"
  "$dest/go-$v/bin/go" version >&2
  tools "$v" || { echo "ctrace: cannot build Go $v's trace and pprof tools" >&2; exit 1; }
  rm -f "$apt/debs"/*.deb
done
