#!/bin/sh
# prepare.sh [BUILD_DIR] - runs HERE (no GPU needed): builds the project
# (ci/configure.sh, reusing BUILD_DIR, default build/) and fills gpu-pack/
# with what ci/gpu/run.sh needs on a GPU machine, so that a GPU check costs
# one call that carries gpu-pack:
#   gpu.gkfat              one archive: cpu images (the references), cuda
#                          images for $GK_GPU_TARGETS (default sm_80, sm_90,
#                          sm_90a and compute_75 PTX) and, when glslang and
#                          spirv-val are here, vulkan images
#   wgmma5.gkfat, wgmma5b.gkfat, wgmma5t.gkfat, wsnosoft.gkfat, wsbare.gkfat,
#   k32.gkfat, dec6.gkfat, q8mb2.gkfat, qmpf.gkfat, qmxs.gkfat, qmload.gkfat
#                          the experiments, which run.sh tests and times
#                          beside gpu.gkfat's images (docs/gpu-speed.md
#                          says what each gave):
#                          wgmma5 flash_attention, paged_attention and
#                                 kv_append for sm_90a, flash_attention
#                                 with -DGK_FA_WGMMA=4: the prefill on
#                                 wgmma, warp-specialized (a producer
#                                 warpgroup and two consumers, blocks of
#                                 384, query blocks of 128 rows), each
#                                 consumer's S of a tile computed while its
#                                 P V of the last one is, Q in shared
#                                 memory, tiles of 128 keys causal, 176
#                                 not (192 at head_dim 64): shared 212992;
#                                 and -DGK_FA_DEC_STAGES=4, the decode's
#                                 ring of sm_90a's section (every wgmma
#                                 experiment below takes it too)
#                          wgmma5b the same as wgmma5 from the recipes and
#                                 kernels of commit $GK_GPU_WGMMA5_BASE
#                                 (default c44b9bf: the stages without
#                                 swizzle, as timed on 2026-11-30): the
#                                 A/B, in the same call, of the 128-byte
#                                 swizzle (docs/gpu-speed.md, "Written
#                                 2026-12-02, later")
#                          wgmma5t the same as wgmma5 with -DGK_FA_TMA=1:
#                                 its producer loads K and V by TMA (one
#                                 thread, boxes of 64 x KEYS in the
#                                 128-byte swizzle, tensor maps it builds
#                                 on the device), the consumers wait on
#                                 mbarriers: shared 213632
#                          wsnosoft, wsbare flash_attention alone, as wgmma5
#                                 with -DGK_FA_ABLATE=1 and 3: diagnoses,
#                                 not kernels (their o is not attention's,
#                                 so run.sh times them without test_gpu):
#                                 wgmma5's prefill without softmax (P is S
#                                 rounded), and without the producer's
#                                 copies of K and V too, so that the time
#                                 of each beside wgmma5's says what holds
#                                 it: the softmax, the copies or the
#                                 schedule itself (gk_gpu.cuh)
#                          k32    the same kernels for sm_90 (not sm_90a):
#                                 the mma.sync prefill on tiles of 32 keys
#                                 that every target but sm_90a runs, where
#                                 sm_90a's takes 64 (recipes/
#                                 flash_attention.lua)
#                          dec6   flash_attention, paged_attention and
#                                 kv_append for sm_90a, both attention
#                                 kernels with -DGK_FA_DEC_STAGES=6: a
#                                 decode's ring of 6 tiles of 16 KB (5 in
#                                 flight; sm_90a's flash_attention takes
#                                 4, paged_attention 3), shared 98304
#                          q8mb2  qmatmul alone (sm_90a),
#                                 -DGK_Q8M_MIN_BLOCKS=2: qmatmul_q8x_mm's
#                                 default tile at two blocks an SM (128
#                                 registers a thread, 16 warps an SM where
#                                 the default has 8 at up to 235)
#                          qmpf   qmatmul alone (sm_90a),
#                                 -DGK_QM_TILE_PF=1: the f32 m > 1 tile
#                                 prefetching W into L2 a few steps ahead
#                                 (qmatmul.cuh), against the default's
#                                 m = 16 (whether its long_scoreboard
#                                 waits on W)
#                          qmxs   qmatmul alone (sm_90a),
#                                 -DGK_QM_TILE_XS=1: the f32 m > 1 tile
#                                 reading a whole tile of x from shared
#                                 memory, copied once a block a step
#                                 (qmatmul.cuh), against the default's
#                                 m = 16 (and m = 1, whose loop it
#                                 lengthens by 1 to 3%)
#                          qmload qmatmul alone (sm_90a),
#                                 -DGK_QM_LOADS_ONLY=1: a diagnosis, not a
#                                 kernel (its y is not qmatmul's, so
#                                 run.sh times it without test_gpu): the
#                                 m = 1 loops of qmatmul and qmatmul_q8x
#                                 load W as they do and fold the words
#                                 instead of decoding and multiplying, so
#                                 their time is what the loads alone allow
#                                 (qmatmul.cuh)
#                          base   qmatmul, flash_attention,
#                                 paged_attention and kv_append for sm_90a
#                                 from the recipes and kernels of commit
#                                 $GK_GPU_BASE (default 7c039b9, the tree
#                                 the H200 measured on 2026-11-30): the
#                                 A/B, in the same call, of what changed
#                                 since (the split's merge, the decode
#                                 grids, paged_attention's table check);
#                                 skipped with a word where git or the
#                                 commit is missing
#   tests/gpu/wgmma_probe.cubin  one wgmma per shape (tests/gpu/wgmma_probe.cu,
#                          sm_90a), which test_wgmma_probe checks first
#   tests/gpu/tma_probe.cubin  K tiles by TMA read by wgmma (tma_probe.cu),
#                          which test_tma_probe checks (run.sh's probes step)
#   gk, tests/gpu/test_gpu, tests/gpu/test_wgmma_probe, tests/gpu/test_tma_probe,
#   bench/gk_bench_gpu,
#   tests/backends/vulkan/test_vk_kernels
#                          (BUILD_DIR's layout, so bench/gpu.sh takes gpu-pack
#                          as its BUILD_DIR)
#   lib/                   the shared libraries beyond glibc that `ldd` lists
#                          for them (the GPU machine's glibc is newer; these
#                          are not there)
#   debs/                  the Vulkan loader's Debian packages (libvulkan1,
#                          libglvnd0, libglx0, libegl1, libopengl0, libgl1,
#                          libgles2, the set the device tool's README ran
#                          Vulkan with there): the GPU machine has
#                          NVIDIA's Vulkan driver but no loader
# $GK_GPU_EXPERIMENTS names the experiments built (default all: wgmma5
# wgmma5b wgmma5t wsnosoft wsbare k32 dec6 q8mb2 qmpf qmxs qmload base);
# run.sh's step of one not built says SKIP. A short list keeps a prepare
# after a kernel change short: each attention experiment compiles ~28
# images anew (a diagnosis 12).
# Images are compiled through the test cache (GK_TEST_CACHE of BUILD_DIR's
# CMakeCache.txt), so what the test fixtures built is not compiled again.
# Prints the pack's size and fails above 64 MiB, what a device call carries.
set -eu
case ${1:-} in -h|--help) sed -n '2,120p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
pack=$root/gpu-pack
limit=$((64 * 1024 * 1024))

"$root/ci/configure.sh" "$build" >/dev/null
for f in gk bench/gk_bench_gpu tests/gpu/test_gpu tests/gpu/test_wgmma_probe \
  tests/gpu/test_tma_probe; do
  [ -x "$build/$f" ] || { echo "ci/gpu/prepare.sh: $build/$f was not built" >&2; exit 1; }
done
nvcc=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
[ -x "$nvcc" ] ||
  { echo "ci/gpu/prepare.sh: nvcc not found: the cuda images cannot be built here" >&2; exit 1; }

rm -rf "$pack"
mkdir -p "$pack/bench" "$pack/tests/gpu" "$pack/tests/backends/vulkan" "$pack/lib" "$pack/debs"

cache=$(sed -n 's/^GK_TEST_CACHE:PATH=//p' "$build/CMakeCache.txt")
backends="--backend cpu --backend cuda"
if command -v glslangValidator >/dev/null 2>&1 && command -v spirv-val >/dev/null 2>&1; then
  backends="$backends --backend vulkan"
else
  echo "ci/gpu/prepare.sh: glslangValidator or spirv-val missing: no vulkan images" >&2
fi
# shellcheck disable=SC2086 # $backends is a list of options
"$build/gk" build --recipes "$root/recipes" $backends \
  --targets "cuda=${GK_GPU_TARGETS:-sm_80,sm_90,sm_90a,compute_75}" \
  --cache "${cache:-$build/test-cache}" --out "$build/gpu-pack-images" >&2
"$build/gk" pack "$build/gpu-pack-images" -o "$pack/gpu.gkfat" >&2

# want NAME: whether experiment NAME is to be built ($GK_GPU_EXPERIMENTS).
want() {
  case " ${GK_GPU_EXPERIMENTS:-wgmma5 wgmma5b wgmma5t wsnosoft wsbare k32 dec6 q8mb2 qmpf qmxs qmload base} " in
    *" $1 "*) return 0 ;;
  esac
  return 1
}

# An experiment's recipes: a copy in $exp ($build/gpu-NAME) beside a link to
# kernelsrc, so that their sources resolve (exp_recipes NAME), or the
# recipes and kernelsrc of commit COMMIT (exp_recipes NAME COMMIT; 1 where
# git or the commit is missing), whose recipe R's cuda section may add FLAG
# (exp_flag R FLAG).
exp_recipes() {
  exp=$build/gpu-$1
  rm -rf "$exp" && mkdir -p "$exp"
  if [ -n "${2:-}" ]; then
    git -C "$root" archive "$2" recipes kernelsrc 2>/dev/null | tar -x -C "$exp"
    return
  fi
  cp -R "$root/recipes" "$exp/recipes"
  ln -s "$root/kernelsrc" "$exp/kernelsrc"
}
exp_flag() {
  sed -i "s|^\\( *\\)source  = \"../kernelsrc/cuda/$1.cu\",|&\\n\\1flags   = { \"$2\" },|" \
    "$exp/recipes/$1.lua"
  grep -q -- "$2" "$exp/recipes/$1.lua" ||
    { echo "ci/gpu/prepare.sh: could not add $2 to $1.lua" >&2; exit 1; }
}

# The attention experiments, NAME:TARGET:FLAG:BLOCK:SHARED:COMMIT:
# flash_attention, paged_attention and kv_append for TARGET from a copy of
# the recipes (those of COMMIT where given) whose flash_attention section
# for sm_90a takes FLAG instead of its own and, where BLOCK is given, the
# launches take blocks of BLOCK threads on query blocks of 128 rows, and
# SHARED bytes of dynamic shared memory where given. FLAG may be several,
# separated by spaces. The diagnoses (ws*) build flash_attention alone.
# The wgmma images keep the decode's ring of 4 tiles that sm_90a's section
# gives its image (-DGK_FA_DEC_STAGES=4): their decodes run on two consumer
# warpgroups of one block an SM, each with its ring, where the default runs
# two blocks an SM; with the ring of 3 a flag of their own left them, an SM
# held 4 tiles in flight where the default holds 6.
w5="-DGK_FA_WGMMA=4 -DGK_FA_DEC_STAGES=4"
for e in "wgmma5:sm_90a:$w5:384:212992:" \
  "wgmma5b:sm_90a:$w5:384:212992:${GK_GPU_WGMMA5_BASE:-c44b9bf}" \
  "wgmma5t:sm_90a:$w5 -DGK_FA_TMA=1:384:213632:" \
  "wsnosoft:sm_90a:$w5 -DGK_FA_ABLATE=1:384:212992:" \
  "wsbare:sm_90a:$w5 -DGK_FA_ABLATE=3:384:212992:" k32:sm_90::::; do
  name=${e%%:*} rest=${e#*:}
  target=${rest%%:*} rest=${rest#*:}
  flag=${rest%%:*} rest=${rest#*:}
  block=${rest%%:*} rest=${rest#*:}
  shared=${rest%%:*} commit=${rest#*:}
  want "$name" || continue
  if ! exp_recipes "$name" "$commit"; then
    echo "ci/gpu/prepare.sh: no commit $commit here (git archive failed): no $name.gkfat" >&2
    continue
  fi
  f=$exp/recipes/flash_attention.lua
  if [ -n "$flag" ]; then
    flag=$(echo "$flag" | sed 's/ /", "/g') # a Lua list's items
    sed -i "s|flags   = { \"-DGK_FA_QS_KEYS=64\", \"-DGK_FA_DEC_STAGES=4\" },|flags   = { \"$flag\" },|" "$f"
    grep -q -- "flags   = { \"$flag\" }," "$f" ||
      { echo "ci/gpu/prepare.sh: could not give flash_attention.lua's sm_90a section $flag" >&2; exit 1; }
  fi
  if [ -n "$block" ]; then
    sed -i "s|block  = { 128, 1, 1 },|block  = { $block, 1, 1 },|; s|\"sq / 64 - 1 + skv|\"sq / 128 - 1 + skv|" "$f"
    if ! grep -q '"sq / 128 - 1 + skv' "$f" || ! grep -q "block  = { $block, 1, 1 }" "$f"; then
      echo "ci/gpu/prepare.sh: could not give flash_attention.lua blocks of $block" >&2; exit 1
    fi
  fi
  if [ -n "$shared" ]; then
    sed -i "s|launch  = cuda_launch(65536),|launch  = cuda_launch($shared),|" "$f"
    grep -q "launch  = cuda_launch($shared)," "$f" ||
      { echo "ci/gpu/prepare.sh: could not give flash_attention.lua shared = $shared" >&2; exit 1; }
  fi
  kernels="--kernel flash_attention --kernel paged_attention --kernel kv_append"
  case $name in ws*) kernels="--kernel flash_attention" ;; esac
  # shellcheck disable=SC2086 # $kernels is a list of options
  "$build/gk" build --recipes "$exp/recipes" --backend cuda $kernels --targets "cuda=$target" \
    --cache "${cache:-$build/test-cache}" --out "$exp/images" >&2
  "$build/gk" pack "$exp/images" -o "$pack/$name.gkfat" >&2
done

# The decode's ring of 6 tiles (dec6): sm_90a's flash_attention section and
# paged_attention's cuda section take -DGK_FA_DEC_STAGES=6, each launch row
# 96 KB of dynamic shared memory (6 x 16 KB).
if want dec6; then
  exp_recipes dec6
  f=$exp/recipes/flash_attention.lua
  sed -i 's|flags   = { "-DGK_FA_QS_KEYS=64", "-DGK_FA_DEC_STAGES=4" },|flags   = { "-DGK_FA_QS_KEYS=64", "-DGK_FA_DEC_STAGES=6" },|; s|launch  = cuda_launch(65536),|launch  = cuda_launch(98304),|' "$f"
  if ! grep -q 'DGK_FA_DEC_STAGES=6" },' "$f" || ! grep -q 'launch  = cuda_launch(98304),' "$f"; then
    echo "ci/gpu/prepare.sh: could not give flash_attention.lua's sm_90a section 6 stages" >&2; exit 1
  fi
  exp_flag paged_attention -DGK_FA_DEC_STAGES=6
  f=$exp/recipes/paged_attention.lua
  sed -i '0,/      shared = 0,/s//      shared = 98304,/' "$f"
  grep -q '      shared = 98304,' "$f" ||
    { echo "ci/gpu/prepare.sh: could not give paged_attention.lua shared = 98304" >&2; exit 1; }
  "$build/gk" build --recipes "$exp/recipes" --backend cuda --kernel flash_attention \
    --kernel paged_attention --kernel kv_append --targets cuda=sm_90a \
    --cache "${cache:-$build/test-cache}" --out "$exp/images" >&2
  "$build/gk" pack "$exp/images" -o "$pack/dec6.gkfat" >&2
fi

# The qmatmul experiments, NAME:FLAG:SHARED, qmatmul alone for sm_90a with
# FLAG and qmatmul_q8x_mm's launch row giving SHARED bytes of dynamic shared
# memory (a block takes the tiles of the grid's walk, any grid):
#   q8mb2  the default tile at two blocks an SM (4 stages, 94 KB each)
#   qmpf   the f32 m > 1 tile with W's L2 prefetch (GK_QM_TILE_PF)
#   qmxs   the f32 m > 1 tile with x through shared memory (GK_QM_TILE_XS)
#   qmload the m = 1 loops' loads of W alone (GK_QM_LOADS_ONLY)
for e in q8mb2:-DGK_Q8M_MIN_BLOCKS=2:96256 qmpf:-DGK_QM_TILE_PF=1:96256 \
  qmxs:-DGK_QM_TILE_XS=1:96256 qmload:-DGK_QM_LOADS_ONLY=1:96256; do
  name=${e%%:*} rest=${e#*:}
  flag=${rest%%:*} shared=${rest#*:}
  want "$name" || continue
  exp_recipes "$name"
  exp_flag qmatmul "$flag"
  sed -i "s|launch  = cuda_launch(96256),|launch  = cuda_launch($shared),|" "$exp/recipes/qmatmul.lua"
  grep -q "launch  = cuda_launch($shared)," "$exp/recipes/qmatmul.lua" ||
    { echo "ci/gpu/prepare.sh: could not give qmatmul_q8x_mm shared = $shared" >&2; exit 1; }
  "$build/gk" build --recipes "$exp/recipes" --backend cuda --kernel qmatmul --targets cuda=sm_90a \
    --cache "${cache:-$build/test-cache}" --out "$exp/images" >&2
  "$build/gk" pack "$exp/images" -o "$pack/$name.gkfat" >&2
done

# The base: the recipes and kernelsrc of an earlier commit, as it was.
base=${GK_GPU_BASE:-7c039b9}
if ! want base; then
  rm -rf "$build/gpu-base"
elif exp_recipes base "$base"; then
  "$build/gk" build --recipes "$exp/recipes" --backend cuda --kernel qmatmul \
    --kernel flash_attention --kernel paged_attention --kernel kv_append --targets cuda=sm_90a \
    --cache "${cache:-$build/test-cache}" --out "$exp/images" >&2
  "$build/gk" pack "$exp/images" -o "$pack/base.gkfat" >&2
else
  echo "ci/gpu/prepare.sh: no commit $base here (git archive failed): no base.gkfat" >&2
fi

"$nvcc" -cubin -arch=sm_90a -O3 -std=c++17 -I"$root/kernelsrc/cuda" \
  -o "$pack/tests/gpu/wgmma_probe.cubin" "$root/tests/gpu/wgmma_probe.cu"
"$nvcc" -cubin -arch=sm_90a -O3 -std=c++17 -I"$root/kernelsrc/cuda" \
  -o "$pack/tests/gpu/tma_probe.cubin" "$root/tests/gpu/tma_probe.cu"

bins="gk bench/gk_bench_gpu tests/gpu/test_gpu tests/gpu/test_wgmma_probe tests/gpu/test_tma_probe"
[ -x "$build/tests/backends/vulkan/test_vk_kernels" ] && bins="$bins tests/backends/vulkan/test_vk_kernels"
for b in $bins; do
  cp "$build/$b" "$pack/$b"
  # Libraries as ldd resolves them, under their soname; glibc's own stay.
  ldd "$build/$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*) ;;
      *) cp -L "$lib" "$pack/lib/" ;;
    esac
  done
done

# The Vulkan loader for NVIDIA's driver there (ci/gpu/run.sh unpacks them).
if (cd "$pack/debs" && apt-get download libvulkan1 libglvnd0 libglx0 libegl1 libopengl0 libgl1 libgles2) >/dev/null 2>&1; then
  :
else
  echo "ci/gpu/prepare.sh: apt-get download of the Vulkan loader failed: the vulkan step will skip" >&2
  rm -f "$pack/debs/"*.deb
fi

size=$(du -sb "$pack" | cut -f1)
echo "gpu-pack: $(find "$pack" -type f | wc -l) files, $size bytes ($((size / 1048576)) MiB):" \
     "$(find "$pack/lib" -type f -printf '%f ')"
if [ "$size" -gt "$limit" ]; then
  echo "ci/gpu/prepare.sh: gpu-pack is over 64 MiB, more than a device call carries" >&2
  exit 1
fi
echo "next: carry gpu-pack and run ci/gpu/run.sh on the GPU machine (results under \$OUT)"
