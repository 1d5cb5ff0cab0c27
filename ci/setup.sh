#!/bin/sh
# setup.sh - installs what a Debian 12 machine lacks to build and test
# gllm-kernels. Idempotent: installs only missing packages, and only refreshes
# the package lists when something is missing.
set -eu

# Build tools and the libraries the project links (through pkg-config).
pkgs="build-essential cmake ninja-build pkg-config binutils python3
      liblua5.4-dev libzstd-dev libsqlite3-dev libsodium-dev libjansson-dev
      libcmocka-dev zstd sqlite3"

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "setup: all packages present" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "setup: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet: refresh once if needed.
$SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 || {
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends $missing
}
