/*
 * qmatmul.cu - the cuda/rocm entry point of qmatmul (docs/kernels.md), one
 * image per BITS (-DBITS=1, 2, 4, 8), with its int8-x twin qmatmul_q8x
 * (docs/weights.md, "int8 x"). The bodies are qmatmul.cuh and q8x.cuh; both
 * entries launch the same way (the recipe's one launch row).
 */
#include "q8x.cuh"

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
