#include "q8x_batch.cuh"
extern "C" GK_KERNEL void __launch_bounds__(256, 2)
tb(const float *x, const void *w, float *y, int64_t m, int64_t n, int64_t k) {
  __shared__ __attribute__((aligned(16))) gk_q8b_smem<BITS> sm;
  gk_q8b_tile<BITS>(sm, x, w, y, m, n, k, blockIdx.y * 64, blockIdx.x * 16);
}
