#!/bin/sh
# make_seeds.sh GK [CACHE] - regenerates the seed inputs of tests/fuzz/corpus
# from real images: the argmax recipe built with the real toolchains present
# (cached in CACHE), packed by the real `gk pack`.
#   corpus/archive/seed-cpu, seed-all      archives (cpu; every backend here;
#                                                   no .gkfat: .gitignore skips those)
#   corpus/elf/seed-BACKEND-TARGET                  "GKROW ...\n" + one image
#   corpus/recipe/seed-*.lua                        real recipes
#   corpus/launch/seed-BACKEND-KERNEL               "BACKEND\n" + a real launch row + NUL + values
# Everything else in corpus/ was found by the fuzzers (ci/fuzz.sh): keep it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gk=$1
cache=${2:-${GK_CACHE_DIR:-$HOME/.gsc/gllm/kernels}}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
# Recipes name their sources relative to themselves (../kernelsrc).
mkdir "$w/recipes"
cp "$root/recipes/argmax.lua" "$w/recipes/"
ln -s "$root/kernelsrc" "$w/kernelsrc"
targets="--targets cuda=sm_90a,sm_120,compute_75 --targets rocm=gfx90a:xnack-,gfx1030"
"$gk" build --recipes "$w/recipes" --out "$w/cpu" --cache "$cache" --backend cpu >/dev/null
# shellcheck disable=SC2086 # $targets is a list of options
"$gk" build --recipes "$w/recipes" --out "$w/all" --cache "$cache" $targets >/dev/null
mkdir -p "$here/corpus/archive" "$here/corpus/elf" "$here/corpus/recipe" "$here/corpus/launch"
"$gk" pack "$w/cpu" -o "$here/corpus/archive/seed-cpu" >/dev/null
"$gk" pack "$w/all" -o "$here/corpus/archive/seed-all" >/dev/null
python3 - "$w/all" "$here/corpus/elf" <<'PY'
import json, os, sys
out, dest = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(out, "manifest.json")))
for im in m["images"]:
    if im["backend"] == "cpu" and im["target"] != "x86-64-v3":
        continue  # one cpu image is enough: the levels differ in code only
    row = "|".join([im["backend"], im["format"], im["target"],
                    json.dumps(im["entry"], separators=(",", ":")), im["toolchain"]])
    data = open(os.path.join(out, im["path"]), "rb").read()
    name = "seed-%s-%s" % (im["backend"], im["target"].replace(":", "_"))
    with open(os.path.join(dest, name), "wb") as f:
        f.write(b"GKROW " + row.encode() + b"\n" + data)
PY
python3 - "$w/all" "$here/corpus/launch" <<'PY'
import json, os, sys
out, dest = sys.argv[1], sys.argv[2]
for im in json.load(open(os.path.join(out, "manifest.json")))["images"]:
    if im["backend"] == "cpu":
        continue
    text = json.dumps(im["launch"], separators=(",", ":"))
    vals = b"".join(v.to_bytes(8, "little") for v in (0x1000, 0x2000, 7, 1000003, 65, 4096, 3))
    with open(os.path.join(dest, "seed-%s-%s" % (im["backend"], im["kernel"])), "wb") as f:
        f.write((im["backend"] + "\n" + text).encode() + b"\0" + vals)
PY
# No metallib can be built off macOS: a header-only one (magic "MTLB").
printf 'GKROW metal|metallib|macos-metal3.1|["argmax"]|\nMTLB\001\200\002\000' \
  >"$here/corpus/elf/seed-metal-synthetic"
cp "$root/recipes/argmax.lua" "$here/corpus/recipe/seed-argmax.lua"
cp "$root/recipes/rmsnorm.lua" "$here/corpus/recipe/seed-rmsnorm.lua"
du -sh "$here/corpus"
