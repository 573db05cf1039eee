#!/usr/bin/env bash
# Installs the Debian packages a make target needs, skipping those present.
# Usage: scripts/deps.sh PKG...   (runs apt-get as root, or through sudo)
# A package written SUITE/NAME (bookworm-backports/golang-1.23-go) comes
# from that suite, which is added to apt's sources, with the mirror and
# keyring of the main suite, when it is missing.
set -eu
missing=() backports=()
for p in "$@"; do
  name=${p#*/}
  dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed" && continue
  if [ "$name" != "$p" ]; then backports+=("$p"); else missing+=("$p"); fi
done
[ ${#missing[@]} -eq 0 ] && [ ${#backports[@]} -eq 0 ] && exit 0
echo "ctrace: installing Debian packages: ${missing[*]} ${backports[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
stamp=/tmp/.ctrace-apt-updated
for p in "${backports[@]}"; do
  suite=${p%%/*}
  if ! grep -rqs "$suite" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "ctrace: adding the $suite suite to apt's sources" >&2
    src=/etc/apt/sources.list.d/debian.sources
    if [ -f "$src" ]; then
      uri=$(awk '/^URIs:/{print $2; exit}' "$src")
      key=$(awk '/^Signed-By:/{print $2; exit}' "$src")
    fi
    uri=${uri:-http://deb.debian.org/debian}
    key=${key:-/usr/share/keyrings/debian-archive-keyring.gpg}
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
      "$uri" "$suite" "$key" | $sudo tee "/etc/apt/sources.list.d/ctrace-$suite.sources" >/dev/null
    rm -f "$stamp"
  fi
done
if [ ! -e "$stamp" ]; then
  $sudo apt-get update -q
  touch "$stamp"
fi
apt="$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends"
[ ${#missing[@]} -eq 0 ] || $apt "${missing[@]}"
for p in "${backports[@]}"; do
  $apt -t "${p%%/*}" "${p#*/}"
done
