#!/bin/sh
# test_metal_build.sh GK RECIPES - on a host without xcrun, gk build skips
# metal with the reason and builds the rest; asking for metal by name fails
# with that reason. On macOS (xcrun present) it says SKIP: the macOS runner
# builds metallibs for real.
set -u
GK=$1 RECIPES=$2
if command -v xcrun >/dev/null 2>&1; then
  echo "SKIP: xcrun is present: this test is about hosts without it"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mkdir -p "$T/r"
# The real sources, in a recipe of two backends (the real recipes also
# build cuda and rocm, minutes of work that this test is not about).
src=$(cd "$RECIPES/../kernelsrc" && pwd)
cat >"$T/r/argmax.lua" <<LUA
kernel "argmax" {
  wgsl { source = "$src/wgsl/argmax.wgsl", targets = { "webgpu" } },
  metal { source = "$src/metal/argmax.metal", targets = { "macos-metal3.0" } },
}
LUA
"$GK" build --recipes "$T/r" --backend wgsl --backend metal --cache "$T/c" --out "$T/o" >"$T/log" 2>&1 &&
  fail "--backend metal without xcrun succeeded"
grep -q "cannot build backend 'metal'.*xcrun not found (Metal builds need macOS)" "$T/log" ||
  { fail "--backend metal does not say why"; cat "$T/log"; }
"$GK" build --recipes "$T/r" --backend wgsl --cache "$T/c" --out "$T/o" >"$T/log" 2>&1 ||
  { fail "the wgsl build failed"; cat "$T/log"; }
# Every backend of the recipe: metal skipped with the reason, the rest built.
"$GK" build --recipes "$T/r" --cache "$T/c" --out "$T/o2" >"$T/log" 2>&1
grep -q "metal: skipped, xcrun not found (Metal builds need macOS)" "$T/log" ||
  { fail "the build does not say why metal is skipped"; cat "$T/log"; }
grep -q '"backend": "metal"' "$T/o2/manifest.json" 2>/dev/null ||
  fail "the manifest does not list metal as skipped"
[ -n "$(ls "$T/o2/wgsl/argmax" 2>/dev/null)" ] || fail "wgsl images were not built beside the skipped metal"
[ "$failures" -eq 0 ] || exit 1
echo "all checks passed"
