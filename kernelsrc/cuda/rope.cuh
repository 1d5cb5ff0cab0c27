/*
 * rope.cuh - rotary position embedding of interleaved pairs, in place
 * (docs/kernels.md), on GPUs: pair p of every head of token t turns by
 * a = pos[t] * theta_base^(-2p/head_dim).
 *
 * Launch: blocks of RP_THREADS threads, grid (ceil(n_tokens * (head_dim/2) /
 * RP_THREADS)); the body also strides over the grid, so a smaller grid is
 * correct too. One thread per (token, pair): its angle, sine and cosine are
 * formed once, in double, and applied to that pair of every head (adjacent
 * threads touch adjacent pairs, so the accesses coalesce).
 *
 * Precision. An angle formed in f32 is off by |a| * 2^-24 radians (0.006 rad
 * at position 10^5), so the frequency, the angle and its sine and cosine are
 * double and rounded once to f32, as the CPU kernel does; the rotation is
 * f32. Double math costs little here: one sincos per (token, pair), not per
 * head.
 */
#ifndef GK_ROPE_CUH
#define GK_ROPE_CUH

#include "gk_gpu.cuh"

#define RP_THREADS 256

GK_DEV void gk_rope(float *x, const int32_t *pos, int64_t n_tokens, int64_t n_heads,
                    int64_t head_dim, float theta_base) {
  if (n_tokens <= 0 || n_heads <= 0 || head_dim < 2) return;
  const int64_t half = head_dim / 2, total = n_tokens * half;
  const double ln_theta = log((double)theta_base);
  for (int64_t e = (int64_t)blockIdx.x * RP_THREADS + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * RP_THREADS) {
    const int64_t t = e / half, p = e % half;
    const double freq = exp(-(2.0 * (double)p / (double)head_dim) * ln_theta);
    double s, c;
    sincos((double)pos[t] * freq, &s, &c);
    const float sn = (float)s, cs = (float)c;
    float *xt = x + t * n_heads * head_dim + 2 * p;
    for (int64_t h = 0; h < n_heads; h++) {
      const float x0 = xt[h * head_dim], x1 = xt[h * head_dim + 1];
      xt[h * head_dim] = x0 * cs - x1 * sn;
      xt[h * head_dim + 1] = x0 * sn + x1 * cs;
    }
  }
}

#endif /* GK_ROPE_CUH */
