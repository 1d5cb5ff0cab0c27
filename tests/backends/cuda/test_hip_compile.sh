#!/bin/sh
# test_hip_compile.sh SRCDIR: the CUDA kernel bodies (kernelsrc/cuda) compile
# with hipcc as well, for an AMD wave64 (gfx906) and a wave32 (gfx1030)
# target, so that the rocm backend can reuse them: gk_gpu.cuh's HIP branch,
# no CUDA-only intrinsic, no warp size of 32 assumed. Each output must be an
# AMDGPU code object holding the kernel's descriptor (NAME.kd);
# qmatmul's int8 entries must use no scratch memory and the processors'
# byte dot product (v_dot4_i32_i8, gk_gpu.cuh's
# GK_AMD_SDOT4). Exit 77 (SKIP) without hipcc.
set -u
SRC=$1
if ! command -v hipcc >/dev/null 2>&1; then
  echo "SKIP: hipcc not found on PATH (apt-get install hipcc rocm-device-libs)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
for k in qmatmul flash_attention paged_attention kv_append rmsnorm rope argmax sample; do
  for a in gfx906 gfx1030; do
    out=$T/$k.$a.hsaco
    if ! hipcc -x hip -O3 -c --cuda-device-only --no-gpu-bundle-output --offload-arch=$a \
         -DBITS=4 -DCAUSAL=1 -DDTYPE=f16 -DHEAD_DIM=128 -DPAGE=64 -o "$out" "$SRC/$k.cu" >"$T/log" 2>&1; then
      echo "FAIL: hipcc $a $k.cu:"; cat "$T/log"; failures=$((failures + 1)); continue
    fi
    # e_machine 224 (EM_AMDGPU) at offset 18, and the kernel descriptor.
    mach=$(od -An -tu2 -j18 -N2 "$out" | tr -d ' ')
    [ "$mach" = 224 ] || { echo "FAIL: $k.cu for $a: e_machine $mach, not 224"; failures=$((failures + 1)); }
    grep -qa "$k.kd" "$out" || { echo "FAIL: $k.cu for $a: no $k.kd"; failures=$((failures + 1)); }
    # qmatmul's int8 entries keep their sums and words in VGPRs (q8x_mma.cuh's
    # dot-product form, gk_gpu.cuh's GK_MMA_DIRECT): no scratch memory
    # (llvm-readelf-15 comes with hipcc's llvm-15; rocm.cli checks every BITS).
    if [ "$k" = qmatmul ]; then
      "$(dirname "$0")/../rocm/no_scratch.sh" "$out"
      case $? in 0 | 77) ;; *) echo "FAIL: scratch memory in qmatmul for $a (above)"; failures=$((failures + 1)) ;; esac
    fi
    if [ "$k" = qmatmul ] && command -v llvm-objdump-15 >/dev/null 2>&1; then
      dots=$(llvm-objdump-15 -d "$out" | grep -c 'v_dot4c\{0,1\}_i32_i8')
      [ "$dots" -gt 0 ] ||
        { echo "FAIL: qmatmul for $a: no v_dot4_i32_i8 (gk_dp4a_us on plain byte products)"; failures=$((failures + 1)); }
    fi
  done
done
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok: 8 kernels x gfx906, gfx1030 with hipcc"
