/*
 * rmsnorm.cuh - y[r][j] = x[r][j] / sqrt(mean_j' x[r][j']^2 + eps) * w[j]
 * (docs/kernels.md), on GPUs.
 *
 * Launch: blocks of RN_THREADS threads, grid (rows), or fewer (a block
 * takes rows r, r + gridDim.x, ...). Block r reads row r
 * twice: once for the sum of squares (each thread a strided share, fmaf in
 * order, then the block sum of gk_gpu.cuh), once to scale it. The scale is
 * 1 / sqrtf(mean + eps) with IEEE division and square root (nvcc's default
 * -prec-div=true -prec-sqrt=true; never rsqrtf, which is 2 ulp off).
 */
#ifndef GK_RMSNORM_CUH
#define GK_RMSNORM_CUH

#include "gk_gpu.cuh"

#define RN_THREADS 256

GK_DEV void gk_rmsnorm(const float *x, const float *w, float *y, int64_t rows,
                       int64_t dim, float eps) {
  __shared__ float scratch[RN_THREADS / GK_GROUP];
  if (dim <= 0) return;
  /* Rows r, r + gridDim.x, ...: the loop is uniform over the block. */
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * dim;
    float *yr = y + r * dim;
    float ss = 0.0f;
    for (int64_t j = threadIdx.x; j < dim; j += RN_THREADS) ss = fmaf(xr[j], xr[j], ss);
    ss = gk_block_sum<RN_THREADS / GK_GROUP>(ss, scratch);
    const float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int64_t j = threadIdx.x; j < dim; j += RN_THREADS) yr[j] = xr[j] * inv * w[j];
  }
}

#endif /* GK_RMSNORM_CUH */
