#!/usr/bin/env bash
# Installs the Debian packages a make target needs, skipping those present.
# Usage: scripts/deps.sh PKG...   (runs apt-get as root, or through sudo)
set -eu
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "ctrace: installing Debian packages: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
stamp=/tmp/.ctrace-apt-updated
if [ ! -e "$stamp" ]; then
  $sudo apt-get update -q
  touch "$stamp"
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
