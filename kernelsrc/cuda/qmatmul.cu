/*
 * qmatmul.cu - the cuda/rocm entry points of qmatmul (docs/kernels.md), one
 * image per BITS (-DBITS=1, 2, 4, 8): qmatmul, its int8-x twin qmatmul_q8x
 * (docs/weights.md, "int8 x"), which launch the same way, x rounded once
 * into records by qmatmul_q8x_x, and the two entries that multiply them:
 * qmatmul_q8x_rec (qmatmul_q8x's bits, a decode batch whose x several
 * matmuls share) and qmatmul_q8x_mm (int8 tensor cores, many rows of x),
 * each with its own launch row. The bodies are qmatmul.cuh, q8x.cuh and
 * q8x_mma.cuh.
 */
#include "q8x_batch.cuh"
#include "q8x_mma.cuh"

#if !defined(BITS) || (BITS != 1 && BITS != 2 && BITS != 4 && BITS != 8)
#error "qmatmul.cu: compile with -DBITS=1, 2, 4 or 8"
#endif

/* Two blocks per SM (16 warps): loads in flight enough for m == 1 to reach
 * DRAM's bandwidth; the m > 1 tile fits the 128 registers that leaves. */
extern "C" GK_KERNEL void __launch_bounds__(QM_THREADS, QM_MIN_BLOCKS)
qmatmul(const float *x, const void *w, float *y, int64_t m, int64_t n, int64_t k) {
  gk_qmatmul<BITS>(x, w, y, m, n, k);
}

extern "C" GK_KERNEL void __launch_bounds__(QM_THREADS, QM_MIN_BLOCKS)
qmatmul_q8x(const float *x, const void *w, float *y, int64_t m, int64_t n, int64_t k) {
  gk_qmatmul_q8x<BITS>(x, w, y, m, n, k);
}

extern "C" GK_KERNEL void __launch_bounds__(QM_THREADS, QM_MIN_BLOCKS)
qmatmul_q8x_x(const float *x, void *xq, int64_t m, int64_t k) {
  gk_q8x_x<BITS>(x, xq, m, k);
}

/* qmatmul_q8x on x rounded once by qmatmul_q8x_x (its records): the same
 * tiles, walk and y bits, no rounding in any block (q8x.cuh, gk_q8x_rec). */
extern "C" GK_KERNEL void __launch_bounds__(QM_THREADS, QM_MIN_BLOCKS)
qmatmul_q8x_rec(const void *xq, const void *w, float *y, int64_t m, int64_t n, int64_t k) {
  gk_qmatmul_q8x<BITS>(gk_q8x_rec{(const unsigned char *)xq}, w, y, m, n, k);
}

/* One block an SM (8 warps, up to 255 registers a thread): each group's
 * 64 x 32 corner of y holds 64 accumulators, and each B fragment and W
 * scale it makes serves 4 mma tiles (q8x_mma.cuh). The 32 x 32 corners
 * before fitted 128 registers at two blocks an SM (-DGK_Q8M_MT=2 builds
 * them so); on an H200 they were slower (2026-11-29, BITS 4: 117 and 125
 * TFLOP/s at m = 512 and 4096, n = k = 8192, against 124 and 127). HIP's dot
 * products keep the 32 x 32 corners (gk_q8m_geo); the bound of one block
 * lets them keep no scratch at BITS 8 on gfx906 as well (docs/weights.md).
 * Its stages are 4 on sm_80 and newer, in up to 94 KB of the launch's
 * dynamic shared memory (q8x_mma.cuh's GK_Q8M_STAGES; recipes/qmatmul.lua's
 * second cuda section), 2 in static shared memory elsewhere.
 * -DGK_Q8M_MIN_BLOCKS=2 bounds the default tile to 128 registers, two
 * blocks an SM (ci/gpu's q8mb2 experiment: whether 16 warps an SM hide
 * more than the spills cost). */
#ifndef GK_Q8M_MIN_BLOCKS
#define GK_Q8M_MIN_BLOCKS (GK_Q8M_MT == 4 ? 1 : QM_MIN_BLOCKS)
#endif
extern "C" GK_KERNEL void __launch_bounds__(QM_THREADS, GK_Q8M_MIN_BLOCKS)
qmatmul_q8x_mm(const void *xq, const void *w, float *y, int64_t m, int64_t n, int64_t k) {
  gk_q8x_mm<BITS>(xq, w, y, m, n, k);
}
