#!/bin/sh
# test_dawn.sh OUT NPMDIR - the wgsl images of a gk build folder (OUT)
# through Dawn's WGSL front end (npm package `webgpu`, null backend), by
# validate.mjs; then a copy with one image broken must fail, so a silent
# validator cannot pass. The package is installed once into NPMDIR (in the
# build folder). SKIP, saying why, where node or npm is missing or the npm
# registry cannot be reached.
set -u
OUT=$1 NPMDIR=$2
here=$(cd "$(dirname "$0")" && pwd)
WEBGPU_VERSION=0.6.2 # the version tried here (Dawn builds for linux-x64 inside)
command -v node >/dev/null 2>&1 || { echo "SKIP: node not found (Debian: apt-get install nodejs npm)"; exit 77; }
[ -f "$OUT/manifest.json" ] || { echo "SKIP: no wgsl build in '$OUT'"; exit 77; }
if [ ! -f "$NPMDIR/node_modules/webgpu/package.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "SKIP: npm not found (Debian: apt-get install npm)"; exit 77; }
  mkdir -p "$NPMDIR"
  [ -f "$NPMDIR/package.json" ] || echo '{ "private": true }' >"$NPMDIR/package.json"
  if ! timeout 300 npm install --prefix "$NPMDIR" --no-audit --no-fund --loglevel=error \
      "webgpu@$WEBGPU_VERSION" >"$NPMDIR/install.log" 2>&1; then
    echo "SKIP: cannot install the npm package webgpu@$WEBGPU_VERSION (registry unreachable?):"
    tail -3 "$NPMDIR/install.log"
    exit 77
  fi
fi
# ESM resolves 'webgpu' from the script's folder: run it from NPMDIR.
cp "$here/validate.mjs" "$NPMDIR/validate.mjs"
timeout 300 node "$NPMDIR/validate.mjs" "$OUT"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

# The same images with one broken: the validator must say so.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp -r "$OUT/." "$T/"
victim=$(ls "$T"/wgsl/argmax/*.wgsl | head -1)
sed -i 's/return v > w/return v > 1u/' "$victim"
if timeout 300 node "$NPMDIR/validate.mjs" "$T" >"$T/log" 2>&1; then
  echo "FAIL: a broken WGSL image passed Dawn's validation"; cat "$T/log"; exit 1
fi
grep -q "FAIL: wgsl/argmax/" "$T/log" || { echo "FAIL: the broken image is not named"; cat "$T/log"; exit 1; }
echo "a broken image is refused: $(grep FAIL "$T/log" | head -1)"
