/*
 * rmsnorm.c - y[r][j] = x[r][j] / sqrt(mean_j' x[r][j']^2 + eps) * w[j]
 * (docs/kernels.md), rows x dim f32.
 *
 * One source, built once per x86-64 level (no variant): the SIMD layer of
 * gk_cpu.h. The sum of squares is taken in f32 in 4 vector accumulators
 * (4 independent dependency chains; a tail shorter than a vector is summed
 * into a scalar), which keeps the relative error far below 1e-6 for any
 * realistic dim. The scale 1/sqrt(mean + eps) is formed in double, rounded
 * to f32 once, and every y is (x * scale) * w, two f32 roundings.
 * y may be x (in place): each y[j] is written after its x[j] was read.
 */
#include "gk_cpu.h"

#define NACC 4

static float sum_squares(const float *x, int64_t dim) {
  vf acc[NACC];
  for (int a = 0; a < NACC; a++)
    acc[a] = vf_zero();
  int64_t j = 0;
  for (; j + NACC * GK_VL <= dim; j += NACC * GK_VL)
    for (int a = 0; a < NACC; a++) {
      const vf v = vf_load(x + j + a * GK_VL);
      acc[a] = vf_fma(v, v, acc[a]);
    }
  for (; j + GK_VL <= dim; j += GK_VL) {
    const vf v = vf_load(x + j);
    acc[0] = vf_fma(v, v, acc[0]);
  }
  float tail = 0.0f;
  for (; j < dim; j++)
    tail += x[j] * x[j];
  acc[0] = vf_add(acc[0], acc[2]);
  acc[1] = vf_add(acc[1], acc[3]);
  return vf_hsum(vf_add(acc[0], acc[1])) + tail;
}

/* The entry point (gk.h gk_rmsnorm_fn). Nothing is done for rows <= 0 or
 * dim <= 0. An all-zero row with eps = 0 gives NaN, as the formula does. */
GK_KERNEL_EXPORT void rmsnorm(const float *x, const float *w, float *y,
                              int64_t rows, int64_t dim, float eps) {
  if (rows <= 0 || dim <= 0)
    return;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * dim;
    float *yr = y + r * dim;
    const double mean = (double)sum_squares(xr, dim) / (double)dim;
    const float s = (float)(1.0 / gk_sqrt_d(mean + (double)eps));
    const vf vs = vf_set1(s);
    int64_t j = 0;
    for (; j + GK_VL <= dim; j += GK_VL)
      vf_store(yr + j, vf_mul(vf_mul(vf_load(xr + j), vs), vf_load(w + j)));
    for (; j < dim; j++)
      yr[j] = xr[j] * s * w[j];
  }
}
