#!/bin/sh
# main.sh - the main job: set up the machine, build gk, compile every recipe
# for every backend whose toolchain is present (the rest are skipped, with the
# reason), pack the fat archive, verify it and print its support matrix.
#   out/          browsable images + manifest.json
#   out/kernels.gkfat
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/setup.sh"
"$root/ci/configure.sh" "$root/build"
gk="$root/build/gk"
"$gk" build --recipes "$root/recipes" --out "$root/out"
"$gk" pack "$root/out" -o "$root/out/kernels.gkfat"
"$gk" verify "$root/out/kernels.gkfat" >/dev/null
"$gk" matrix "$root/out/kernels.gkfat"
