#!/bin/sh
# test.sh - runs the whole test suite (unit, CLI and numeric kernel tests)
# after setting up the machine and building.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/setup.sh"
"$root/ci/configure.sh" "$root/build"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" "$@"
