/*
 * sample.c - one token per row of logits (docs/kernels.md): temperature,
 * top-k, top-p, then a walk over the kept tokens in index order with the
 * caller's uniform number u[r].
 *
 * One source, built once per x86-64 level (no variant).
 *
 * Without scratch memory. The rule ranks tokens by p = exp((l - max) / T)
 * (descending, ties by index), which a sort would do with n indices of
 * scratch. Here the kept set is found by radix selection instead, on the
 * bits of p: for non-negative floats the bit patterns order like the
 * values, so three passes with a 2048-bin histogram (bits 31..21, 20..10,
 * 9..0) find the exact p value at a cut. A cut is then "p > key, plus the
 * first `ties` tokens (in index order) with p == key", which is exactly a
 * prefix of the ranking. Top-k counts ranks; top-p sums p per bin (double)
 * and takes the last rank whose preceding mass is < top_p times the top-k
 * mass. p is recomputed from the logits in every pass (vector exp), which
 * costs less than the memory a stored copy would need; every pass computes
 * the same p bits for the same token, so the passes agree.
 *
 * Sums of p are taken in double, so the decisions differ from the exact
 * ones only by the f32 rounding of each p (relative 2^-22): tests keep u
 * and top_p a margin away from the boundaries (tests/common/kref.h).
 *
 * Edge cases (docs/kernels.md): temperature <= 0 (or NaN) is argmax; a NaN
 * logit has p = 0; a row whose largest non-NaN logit is not finite (all
 * NaN, all -inf, or a +inf) is argmax too; top_p <= 0 (or NaN) keeps only
 * the top-ranked token.
 */
#include "gk_cpu.h"

/* Logits turned into p per chunk, on the stack. */
#define CHUNK 256
#define NBINS 2048

/* A cut of the ranking: tokens with p (as bits) > key are in, and the
 * first `ties` tokens in index order with p == key. */
typedef struct cut {
  uint32_t key;
  int64_t ties;
} cut;

static const cut keep_all = {0u, INT64_MAX};

/* Membership in order: `seen` counts the ties met so far in the pass. */
static inline int in_cut(cut c, uint32_t b, int64_t *seen) {
  if (b > c.key)
    return 1;
  return b == c.key && (*seen)++ < c.ties;
}

/* p for logits l[0..len) (len <= CHUNK), NaN logits giving 0. The last
 * partial vector is padded with -inf (p = 0), so that every token goes
 * through the same vector exp whatever its position. */
static void p_chunk(const float *l, int len, float mx, float t, float *p) {
  const vf vmx = vf_set1(mx), vt = vf_set1(t), ninf = vf_set1(-__builtin_inff());
  int j = 0;
  for (; j + GK_VL <= len; j += GK_VL) {
    /* vf_max(d, -inf) replaces a NaN d by -inf (x86 max rule). */
    const vf d = vf_max(vf_div(vf_sub(vf_load(l + j), vmx), vt), ninf);
    vf_store(p + j, vf_exp(d));
  }
  if (j < len) {
    float pad[GK_VL];
    for (int i = 0; i < GK_VL; i++)
      pad[i] = j + i < len ? l[j + i] : -__builtin_inff();
    const vf d = vf_max(vf_div(vf_sub(vf_load(pad), vmx), vt), ninf);
    vf_store(pad, vf_exp(d));
    for (int i = 0; j + i < len; i++)
      p[j + i] = pad[i];
  }
}

/* The radix levels: shift and width of each digit of the 32-bit key. */
static const int level_shift[3] = {21, 10, 0};
static const int level_width[3] = {11, 11, 10};

/* The cut keeping ranks 0 .. k-1 (1 <= k < n). */
static cut select_top_k(const float *l, int64_t n, float mx, float t, int64_t k) {
  uint32_t cnt[NBINS];
  uint32_t prefix = 0, pmask = 0;
  int64_t above = 0; /* tokens with a key above the current prefix */
  for (int lev = 0; lev < 3; lev++) {
    const int sh = level_shift[lev];
    const uint32_t wm = (1u << level_width[lev]) - 1u;
    for (uint32_t b = 0; b <= wm; b++)
      cnt[b] = 0;
    for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
      const int len = (int)(n - j0 < CHUNK ? n - j0 : CHUNK);
      _Alignas(64) float p[CHUNK];
      p_chunk(l + j0, len, mx, t, p);
      for (int i = 0; i < len; i++) {
        const uint32_t b = gk_q_f32_to_bits(p[i]);
        if ((b & pmask) == prefix)
          cnt[(b >> sh) & wm]++;
      }
    }
    /* Rank k-1 lies in the highest bin that brings the count to k. */
    uint32_t bin = wm;
    for (;; bin--) {
      if (above + cnt[bin] >= k || bin == 0)
        break;
      above += cnt[bin];
    }
    prefix |= bin << sh;
    pmask |= wm << sh;
  }
  return (cut){prefix, k - above};
}

/*
 * The top-p cut inside `set` (the top-k cut, or keep_all): the last kept
 * rank is the last one whose preceding mass is < top_p * (mass of set).
 * Bins are walked from the top with A = the mass above the bin; the bin
 * holding the last kept rank is the last non-empty one with A < P.
 */
static cut select_top_p(const float *l, int64_t n, float mx, float t, cut set,
                        double top_p) {
  uint32_t cnt[NBINS];
  double sum[NBINS];
  uint32_t prefix = 0, pmask = 0, chosen = 0;
  double above = 0.0, target = 0.0;
  for (int lev = 0; lev < 3; lev++) {
    const int sh = level_shift[lev];
    const uint32_t wm = (1u << level_width[lev]) - 1u;
    for (uint32_t b = 0; b <= wm; b++) {
      cnt[b] = 0;
      sum[b] = 0.0;
    }
    int64_t seen = 0;
    for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
      const int len = (int)(n - j0 < CHUNK ? n - j0 : CHUNK);
      _Alignas(64) float p[CHUNK];
      p_chunk(l + j0, len, mx, t, p);
      for (int i = 0; i < len; i++) {
        const uint32_t b = gk_q_f32_to_bits(p[i]);
        if (!in_cut(set, b, &seen) || (b & pmask) != prefix)
          continue;
        const uint32_t bin = (b >> sh) & wm;
        cnt[bin]++;
        sum[bin] += p[i];
      }
    }
    if (lev == 0) {
      double total = 0.0;
      for (uint32_t b = 0; b <= wm; b++)
        total += sum[b];
      target = top_p * total;
    }
    /* The first non-empty bin always qualifies: its A is the A of its
     * parent bin, which was < P (at the top, 0 < P). */
    double a = above, a_chosen = above;
    int found = 0;
    for (uint32_t bin = wm + 1; bin-- > 0;) {
      if (cnt[bin] == 0)
        continue;
      if (found && !(a < target))
        break;
      chosen = bin;
      a_chosen = a;
      found = 1;
      a += sum[bin];
    }
    above = a_chosen;
    prefix |= chosen << sh;
    pmask |= wm << sh;
  }
  /* The ties at the cut value, in index order: tie i has mass above + i*p
   * before it and is kept while that is < P (tie 0 always). */
  const double pk = (double)gk_q_f32_from_bits(prefix);
  const int64_t avail = cnt[chosen];
  int64_t m = 0;
  for (double run = above; m < avail && (m == 0 || run < target); m++)
    run += pk;
  return (cut){prefix, m};
}

static int32_t sample_row(const float *l, int64_t n, float u, float t,
                          int32_t top_k, float top_p) {
  if (!(t > 0.0f) || n <= 0)
    return gk_argmax_row(l, n);
  const float mx = gk_row_max(l, n);
  if (!(mx > -__builtin_inff() && mx < __builtin_inff()))
    return gk_argmax_row(l, n);

  cut c = keep_all;
  int64_t k = top_k > 0 && top_k < n ? top_k : n;
  if (!(top_p > 0.0f))
    k = 1; /* no mass is < top_p: only the top-ranked token */
  if (k < n)
    c = select_top_k(l, n, mx, t, k);
  if (k > 1 && top_p < 1.0f)
    c = select_top_p(l, n, mx, t, c, (double)top_p);

  /* The kept mass, then the walk in index order. */
  double kept = 0.0;
  int64_t seen = 0;
  for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
    const int len = (int)(n - j0 < CHUNK ? n - j0 : CHUNK);
    _Alignas(64) float p[CHUNK];
    p_chunk(l + j0, len, mx, t, p);
    for (int i = 0; i < len; i++)
      if (in_cut(c, gk_q_f32_to_bits(p[i]), &seen))
        kept += p[i];
  }
  const double target = (double)u * kept;
  double run = 0.0;
  int32_t last = 0;
  seen = 0;
  for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
    const int len = (int)(n - j0 < CHUNK ? n - j0 : CHUNK);
    _Alignas(64) float p[CHUNK];
    p_chunk(l + j0, len, mx, t, p);
    for (int i = 0; i < len; i++) {
      if (!in_cut(c, gk_q_f32_to_bits(p[i]), &seen))
        continue;
      run += p[i];
      last = (int32_t)(j0 + i);
      if (run > target)
        return last;
    }
  }
  return last; /* rounding left none: the last kept token */
}

/* The entry point (gk.h gk_sample_fn). Nothing is done for rows <= 0;
 * n <= 0 gives 0. */
GK_KERNEL_EXPORT void sample(const float *logits, const float *u, int32_t *out,
                             int64_t rows, int64_t n, float temperature,
                             int32_t top_k, float top_p) {
  for (int64_t r = 0; r < rows; r++)
    out[r] = sample_row(logits + r * (n > 0 ? n : 0), n, u[r], temperature,
                        top_k, top_p);
}
