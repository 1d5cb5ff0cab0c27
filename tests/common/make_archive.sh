#!/bin/sh
# make_archive.sh GK RECIPES CACHE OUT ARCHIVE: builds the recipes' cpu images
# with the real compiler (cached) and packs them: the archive the tests share.
set -eu
gk=$1 recipes=$2 cache=$3 out=$4 archive=$5
"$gk" build --recipes "$recipes" --backend cpu --cache "$cache" --out "$out"
"$gk" pack "$out" -o "$archive"
