/* rmsnorm.cu - the cuda/rocm entry point of rmsnorm (docs/kernels.md); the
 * body is rmsnorm.cuh. */
#include "rmsnorm.cuh"

extern "C" GK_KERNEL void __launch_bounds__(RN_THREADS)
rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t dim, float eps) {
  gk_rmsnorm(x, w, y, rows, dim, eps);
}
