/* argmax.cu - the cuda/rocm entry point of argmax (docs/kernels.md); the
 * body is argmax.cuh. */
#include "argmax.cuh"

extern "C" GK_KERNEL void __launch_bounds__(AM_THREADS)
argmax(const float *x, int32_t *out, int64_t rows, int64_t n) {
  gk_argmax(x, out, rows, n);
}
