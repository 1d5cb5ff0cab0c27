#!/bin/sh
# configure.sh [BUILD_DIR] - configures and builds the project (default: build/).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
