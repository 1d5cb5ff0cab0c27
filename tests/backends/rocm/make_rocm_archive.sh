#!/bin/sh
# make_rocm_archive.sh GK RECIPES CACHE OUT ARCHIVE: builds rocm images of the
# real recipes with the real hipcc (cached in CACHE, so only the first run
# compiles) and packs them: the archive of the rocm tests (fixture
# rocm_archive). Targets: gfx906 (GCN wave64), gfx90a and gfx90a:xnack- (CDNA2,
# a target ID with a feature), gfx1030 (RDNA2 wave32): every kind of code
# object the rules distinguish, at a third of the cost of the recipes' list.
# Exit 77 (SKIP) without hipcc.
set -eu
gk=$1 recipes=$2 cache=$3 out=$4 archive=$5
if ! command -v hipcc >/dev/null 2>&1; then
  echo "SKIP: hipcc not found on PATH (apt-get install hipcc rocm-device-libs)"
  rm -f "$archive"
  exit 77
fi
"$gk" build --recipes "$recipes" --backend rocm --targets rocm=gfx906,gfx90a,gfx90a:xnack-,gfx1030 \
  --cache "$cache" --out "$out"
"$gk" pack "$out" -o "$archive"
