#!/bin/sh
# make_cuda_archive.sh GK RECIPES CACHE OUT ARCHIVE: builds the cuda images of
# the real recipes - every SM of their lists plus compute_75 PTX - with the
# real nvcc (cached in CACHE, so only the first run compiles) and packs them:
# the archive of the cuda tests (fixture cuda_archive). Prints how long the
# build took. Exit 77 (SKIP) without nvcc.
set -eu
gk=$1 recipes=$2 cache=$3 out=$4 archive=$5
# shellcheck source=tests/backends/cuda/nvcc.sh
. "$(dirname "$0")/nvcc.sh"
if [ -z "$nvcc" ]; then
  echo "$nvcc_skip"
  rm -f "$archive"
  exit 77
fi
start=$(date +%s)
"$gk" build --recipes "$recipes" --backend cuda --cache "$cache" --out "$out"
end=$(date +%s)
"$gk" pack "$out" -o "$archive"
echo "cuda images built in $((end - start)) s; archive $(wc -c <"$archive") bytes"
