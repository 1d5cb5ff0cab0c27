#!/bin/sh
# make_rocm_clang_archive.sh GK RECIPES CACHE OUT ARCHIVES: the rocm images
# Debian's hipcc 5.2 cannot make, built by the hipclang module (Debian's
# clang-19 + lld-19, Debian's ROCm 5.2 headers and device libraries) from the
# real recipes into CACHE (only the first run compiles), packed three ways
# (fixture rocm_clang_archive):
#   ARCHIVES/procs.gkfat    gfx942 gfx1100 gfx1200 (one processor a family:
#                           gfx1101, gfx1102 and gfx1201 compile the same
#                           sources for the same code object kinds, and
#                           took 430 s of CI's 90 minutes; without their
#                           images the probes check that they take their
#                           family's generic one)
#   ARCHIVES/generic.gkfat  gfx9-generic gfx10-3-generic gfx11-generic
#                           gfx12-generic (alone, so that a family member
#                           with an exact image, gfx1200, still takes the
#                           generic one in the driver test)
#   ARCHIVES/all.gkfat      both sets, as a release holds them
# Exit 77 (SKIP) without clang-19 and its lld.
set -eu
gk=$1 recipes=$2 cache=$3 out=$4 archives=$5
rm -rf "$archives"
if ! command -v clang-19 >/dev/null 2>&1 || ! command -v ld.lld-19 >/dev/null 2>&1; then
  echo "SKIP: clang-19 or ld.lld-19 not found on PATH (apt-get install clang-19 lld-19)"
  exit 77
fi
mkdir -p "$archives"
procs=gfx942,gfx1100,gfx1200
generic=gfx9-generic,gfx10-3-generic,gfx11-generic,gfx12-generic
# --strict: every one of these must be built here, by some module.
"$gk" build --recipes "$recipes" --backend rocm --targets rocm=$procs,$generic --strict \
  --cache "$cache" --out "$out/all"
"$gk" pack "$out/all" -o "$archives/all.gkfat"
for set in procs generic; do
  eval "targets=\$$set"
  "$gk" build --recipes "$recipes" --backend rocm --targets rocm=$targets \
    --cache "$cache" --out "$out/$set" 2>/dev/null
  "$gk" pack "$out/$set" -o "$archives/$set.gkfat"
done
