/*
 * wgmma_probe.cu - the entries of wgmma_probe.cuh for the GPU, one per
 * shape the attention uses (N 32, 64, 128) and B's major, A from shared
 * memory (T 2, N 96, 128, 176 and 192), and the 128-byte swizzle (T 3: B
 * N-major, N 64 and 128; T 4: A and B K-major, N 128, 176 and 192):
 * wgmma_probe_n<N>_t<T>(a, b, d), a block of 128 threads. Built by
 * ci/gpu/prepare.sh: nvcc -cubin -arch=sm_90a -I kernelsrc/cuda.
 */
#include "wgmma_probe.cuh"

#if !GK_WGMMA_HW
#error "wgmma_probe.cu: compile for sm_90a (-arch=sm_90a)"
#endif

#define GK_PROBE(n, t)                                                              \
  extern "C" GK_KERNEL void __launch_bounds__(128)                                  \
      wgmma_probe_n##n##_t##t(const uint16_t *a, const uint16_t *b, float *d) {     \
    gk_wgmma_probe<n, t>(a, b, d);                                                  \
  }
GK_PROBE(32, 0)
GK_PROBE(32, 1)
GK_PROBE(64, 0)
GK_PROBE(64, 1)
GK_PROBE(128, 0)
GK_PROBE(128, 1)
GK_PROBE(96, 2)
GK_PROBE(128, 2)
GK_PROBE(176, 2)
GK_PROBE(192, 2)
GK_PROBE(64, 3)
GK_PROBE(128, 3)
GK_PROBE(128, 4)
GK_PROBE(176, 4)
GK_PROBE(192, 4)
