/*
 * argmax.cuh - out[r] = the lowest index of the largest x[r][j], NaNs
 * ignored, 0 for a row of only NaNs (docs/kernels.md), on GPUs.
 *
 * Launch: blocks of AM_THREADS threads, grid (rows), or fewer (a block takes
 * rows r, r + gridDim.x, ...). Each thread keeps the
 * best (value, index) of its strided share; the block merges them with the
 * total order of gk_argmax_merge (larger value, then lower index), so the
 * answer does not depend on how the work was split.
 */
#ifndef GK_ARGMAX_CUH
#define GK_ARGMAX_CUH

#include "gk_gpu.cuh"

#define AM_THREADS 256

/* The argmax of one row, for every thread of the block (sample uses it for
 * temperature <= 0). `sv`, `si` are __shared__ scratch of the caller. */
GK_DEV int64_t gk_row_argmax(const float *xr, int64_t n, float *sv, int64_t *si) {
  float bv = 0.0f;
  int64_t bi = -1;
  for (int64_t j = threadIdx.x; j < n; j += AM_THREADS) {
    const float v = xr[j];
    if (v == v) gk_argmax_merge(&bv, &bi, v, j); /* v != v: NaN */
  }
  gk_block_argmax<AM_THREADS / GK_GROUP>(&bv, &bi, sv, si);
  return bi < 0 ? 0 : bi;
}

GK_DEV void gk_argmax(const float *x, int32_t *out, int64_t rows, int64_t n) {
  __shared__ float sv[AM_THREADS / GK_GROUP];
  __shared__ int64_t si[AM_THREADS / GK_GROUP];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t i = gk_row_argmax(x + r * (n > 0 ? n : 0), n, sv, si);
    if (threadIdx.x == 0) out[r] = (int32_t)i;
  }
}

#endif /* GK_ARGMAX_CUH */
