/*
 * qmatmul.cuh - y = x * W^T for the quantized weight format of
 * docs/weights.md, on GPUs: y[i*n + j] = sum_t x[i*k + t] * W[j][t].
 * One template for every code width (Bits = 1, 2, 4, 8).
 *
 * Launch (the recipe's `launch`, docs/kernels.md "Launching on GPUs"):
 * blocks of QM_THREADS threads, grid (ceil(n / QM_COLS), ceil(m / QM_ROWS)),
 * or any smaller grid (the blocks loop over what it leaves).
 * A group of 32 threads computes one output column j (one row of W) for up
 * to QM_ROWS rows of x; lane l takes blocks l, l+32, ... of the row, so the
 * 32 lanes read 32 consecutive blocks of W at once.
 *
 * Two paths, one code: m == 1 (decode) instantiates the tile with one row
 * of x (memory bound: each weight is read and used once, nothing else is
 * kept); m > 1 with QM_ROWS rows, so each block of W is decoded once for
 * QM_ROWS rows of x. The grid formula is the same for both.
 *
 * Arithmetic: each weight is fmaf(d, q, m) (one rounding, as on CPUs with
 * FMA); a lane sums a block's 32 products in order with fmaf, adds the
 * block sums of its blocks in order, and the group adds its 32 lanes in a
 * fixed butterfly. So a row of x gives the same y in any batch position and
 * batch size, and on every run.
 *
 * Requirements (device pointers from cuMemAlloc/hipMalloc satisfy them):
 * x 16-byte aligned (rows are read as float4), w 4-byte aligned (blocks as
 * 32-bit words). k % 32 columns at the end are ignored; k < 32 gives zeros.
 */
#ifndef GK_QMATMUL_CUH
#define GK_QMATMUL_CUH

#include "gk_gpu.cuh"

#define QM_THREADS 256
#define QM_COLS (QM_THREADS / GK_GROUP) /* output columns per block */
#define QM_ROWS 4                       /* rows of x per block when m > 1 */

/* Output column j (row j of W) for rows i0 .. i0+MT-1 of x, by one group. */
template <int Bits, int MT>
GK_DEV void gk_qmatmul_tile(const float *x, const void *w, float *y, int64_t m,
                            int64_t n, int64_t k, int64_t j, int64_t i0) {
  const int lane = gk_lane();
  const int64_t nb = k / GK_QBLOCK;
  const int block_words = GK_QBLOCK_BYTES(Bits) / 4;
  const uint32_t *row = (const uint32_t *)w + j * nb * block_words;

  float acc[MT];
  for (int r = 0; r < MT; r++) acc[r] = 0.0f;
  for (int64_t b = lane; b < nb; b += GK_GROUP) {
    const uint32_t *blk = row + b * block_words;
    const uint32_t head = blk[0]; /* d in bytes 0-1, m in bytes 2-3 */
    const float d = gk_h2f((uint16_t)(head & 0xffffu));
    const float mo = gk_h2f((uint16_t)(head >> 16));
    uint32_t words[Bits];
    for (int u = 0; u < Bits; u++) words[u] = blk[1 + u];
    float wv[GK_QBLOCK];
    for (int t = 0; t < GK_QBLOCK; t++)
      wv[t] = fmaf(d, (float)gk_q_code_w32(words, Bits, t), mo);
    for (int r = 0; r < MT; r++) {
      if (i0 + r >= m) break;
      const float4 *xr = (const float4 *)(x + (i0 + r) * k + b * GK_QBLOCK);
      float s = 0.0f;
      for (int q = 0; q < GK_QBLOCK / 4; q++) {
        const float4 xv = xr[q];
        s = fmaf(xv.x, wv[4 * q + 0], s);
        s = fmaf(xv.y, wv[4 * q + 1], s);
        s = fmaf(xv.z, wv[4 * q + 2], s);
        s = fmaf(xv.w, wv[4 * q + 3], s);
      }
      acc[r] += s;
    }
  }
  for (int r = 0; r < MT; r++) {
    const float v = gk_group_sum(acc[r]);
    if (lane == 0 && i0 + r < m) y[(i0 + r) * n + j] = v;
  }
}

/* Block (bx, by) takes column groups bx, bx + gridDim.x, ... and row tiles
 * by, by + gridDim.y, ...: a grid smaller than ceil(n / QM_COLS) x
 * ceil(m / QM_ROWS) (one clamped to a device limit) is still correct. The
 * bounds are the same for the 32 threads of a group, which leave a loop
 * together: no shuffle is left half-attended. */
template <int Bits>
GK_DEV void gk_qmatmul(const float *x, const void *w, float *y, int64_t m,
                       int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k < 0) return;
  const int mt = m == 1 ? 1 : QM_ROWS;
  for (int64_t by = blockIdx.y; by * mt < m; by += gridDim.y)
    for (int64_t bx = blockIdx.x; bx * QM_COLS < n; bx += gridDim.x) {
      const int64_t j = bx * QM_COLS + gk_group();
      if (j >= n) continue;
      if (m == 1)
        gk_qmatmul_tile<Bits, 1>(x, w, y, m, n, k, j, 0);
      else
        gk_qmatmul_tile<Bits, QM_ROWS>(x, w, y, m, n, k, j, by * QM_ROWS);
    }
}

#endif /* GK_QMATMUL_CUH */
