/* sample.cu - the cuda/rocm entry point of sample (docs/kernels.md); the
 * body is sample.cuh. */
#include "sample.cuh"

extern "C" GK_KERNEL void __launch_bounds__(SM_THREADS)
sample(const float *logits, const float *u, int32_t *out, int64_t rows, int64_t n,
       float temperature, int32_t top_k, float top_p) {
  gk_sample(logits, u, out, rows, n, temperature, top_k, top_p);
}
