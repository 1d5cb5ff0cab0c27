/*
 * rope.c - rotary position embedding of interleaved pairs, in place
 * (docs/kernels.md): x is [n_tokens][n_heads][head_dim] f32, pos is
 * [n_tokens] int32, and pair p of every head of token t turns by
 * a = pos[t] * theta_base^(-2p/head_dim).
 *
 * One source, built once per x86-64 level (no variant).
 *
 * Precision. An angle formed in f32 is off by |a| * 2^-24 radians, which
 * at a position of 10^5 is 0.006 rad and far from the reference. So the
 * frequencies theta^(-2p/head_dim) and the angles are formed in double,
 * reduced modulo pi/2 in double and turned into sin and cos in double
 * (gk_cpu.h, no libm), then rounded once to f32; the rotation itself is f32
 * arithmetic (two products and a sum: about 1 ulp of the pair's magnitude).
 *
 * Speed. sin and cos depend on (token, pair) only, so they are computed
 * once per token for a chunk of pairs and applied to every head; the
 * rotation loop is plain C the compiler vectorizes (pairs are de- and
 * re-interleaved with shuffles).
 */
#include "gk_cpu.h"

/* Pairs per chunk: the frequencies, sines and cosines of a chunk live on
 * the stack (about 1 KB), whatever head_dim is. */
#define PAIR_CHUNK 64

static void rotate(float *restrict xh, const float *restrict cs,
                   const float *restrict sn, int n) {
  for (int p = 0; p < n; p++) {
    const float x0 = xh[2 * p], x1 = xh[2 * p + 1];
    xh[2 * p] = x0 * cs[p] - x1 * sn[p];
    xh[2 * p + 1] = x0 * sn[p] + x1 * cs[p];
  }
}

/* The entry point (gk.h gk_rope_fn). Nothing is done when n_tokens,
 * n_heads <= 0 or head_dim < 2; with an odd head_dim the last element of
 * each head is left alone (docs/kernels.md requires it even). */
GK_KERNEL_EXPORT void rope(float *x, const int32_t *pos, int64_t n_tokens,
                           int64_t n_heads, int64_t head_dim, float theta_base) {
  if (n_tokens <= 0 || n_heads <= 0 || head_dim < 2)
    return;
  const int64_t half = head_dim / 2;
  const double ln_theta = gk_log_d((double)theta_base);
  for (int64_t p0 = 0; p0 < half; p0 += PAIR_CHUNK) {
    const int n = (int)(half - p0 < PAIR_CHUNK ? half - p0 : PAIR_CHUNK);
    double freq[PAIR_CHUNK];
    float cs[PAIR_CHUNK], sn[PAIR_CHUNK];
    for (int p = 0; p < n; p++)
      freq[p] = gk_exp_d(-(2.0 * (double)(p0 + p) / (double)head_dim) * ln_theta);
    for (int64_t t = 0; t < n_tokens; t++) {
      const double pt = (double)pos[t];
      for (int p = 0; p < n; p++) {
        double s, c;
        gk_sincos_d(pt * freq[p], &s, &c);
        cs[p] = (float)c;
        sn[p] = (float)s;
      }
      float *xt = x + t * n_heads * head_dim + 2 * p0;
      for (int64_t h = 0; h < n_heads; h++)
        rotate(xt + h * head_dim, cs, sn, n);
    }
  }
}
