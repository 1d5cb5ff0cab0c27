#!/bin/sh
# make_vk_archive.sh GK RECIPES CACHE OUT ARCHIVE: builds the recipes'
# vulkan images with the real glslang and spirv-val (cached) and packs
# them: the archive the vulkan tests share. SKIP (77) where the toolchain
# is missing; the tests then skip too, saying so.
set -eu
gk=$1 recipes=$2 cache=$3 out=$4 archive=$5
rm -f "$archive"
for tool in glslangValidator spirv-val; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found (Debian: apt-get install glslang-tools spirv-tools)"
    exit 77
  fi
done
"$gk" build --recipes "$recipes" --backend vulkan --cache "$cache" --out "$out"
"$gk" pack "$out" -o "$archive"
"$gk" verify "$archive" >/dev/null
