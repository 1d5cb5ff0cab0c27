#!/bin/sh
# configure.sh [BUILD_DIR] - configures and builds the project (default: build/).
# Extra CMake options can come from $GK_CMAKE_ARGS (e.g. -DGK_PORTABLE_ONLY=ON).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
# Homebrew keeps sqlite and curl "keg-only" (out of the default search path,
# since macOS has its own, older copies), and lua@5.4 too (ci/setup-macos.sh):
# point pkg-config at them.
if [ "$(uname -s)" = Darwin ] && command -v brew >/dev/null 2>&1; then
  for f in sqlite curl lua@5.4; do
    p=$(brew --prefix "$f" 2>/dev/null || true)/lib/pkgconfig
    [ -d "$p" ] && PKG_CONFIG_PATH="$p${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  done
  export PKG_CONFIG_PATH
fi
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S "$root" -B "$build" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo ${GK_CMAKE_ARGS:-} >/dev/null
# getconf, not nproc: macOS has no nproc.
cmake --build "$build" -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
