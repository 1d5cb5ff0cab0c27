#!/bin/sh
# make_wgsl_out.sh GK RECIPES CACHE OUT ARCHIVE: builds the recipes' wgsl
# images (the C preprocessor specializes the text; cached) and packs them.
set -eu
gk=$1 recipes=$2 cache=$3 out=$4 archive=$5
rm -f "$archive"
command -v cpp >/dev/null 2>&1 || { echo "SKIP: cpp not found (Debian: apt-get install cpp)"; exit 77; }
"$gk" build --recipes "$recipes" --backend wgsl --cache "$cache" --out "$out"
"$gk" pack "$out" -o "$archive"
"$gk" verify "$archive" >/dev/null
