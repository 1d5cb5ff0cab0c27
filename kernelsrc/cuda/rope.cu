/* rope.cu - the cuda/rocm entry point of rope (docs/kernels.md); the body
 * is rope.cuh. */
#include "rope.cuh"

extern "C" GK_KERNEL void __launch_bounds__(RP_THREADS)
rope(float *x, const int32_t *pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
     float theta_base) {
  gk_rope(x, pos, n_tokens, n_heads, head_dim, theta_base);
}
