/*
 * tma_probe.cu - tma_probe.cuh's entry for the GPU: tma_probe(map, swz, k0,
 * hk, a, p, raw, s, o, status, kbase, skv, kvh, dmap), a block of 128
 * threads, the tensor map a __grid_constant__ parameter (how CUTLASS and
 * FlashAttention-3 pass theirs; with swz 2 the kernel builds its own from
 * kbase, skv and kvh).
 * Built by ci/gpu/prepare.sh and ctest's gpu.tma_probe: nvcc -cubin
 * -arch=sm_90a -I kernelsrc/cuda.
 */
#include "tma_probe.cuh"

#if !GK_WGMMA_HW
#error "tma_probe.cu: compile for sm_90a (-arch=sm_90a)"
#endif

extern "C" GK_KERNEL void __launch_bounds__(128)
    tma_probe(const __grid_constant__ CUtensorMap map, int swz, int k0, int hk,
              const uint16_t *a, const uint16_t *p, uint16_t *raw, float *s, float *o,
              int *status, const uint16_t *kbase, int skv, int kvh, unsigned char *dmap) {
  gk_tma_probe(&map, swz, k0, hk, a, p, raw, s, o, status, kbase, skv, kvh, dmap);
}
