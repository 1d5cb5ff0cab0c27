/*
 * gk_cpu.h - what the CPU kernels other than qmatmul share: the export
 * macro, a small SIMD layer chosen by the macros -march defines, a vector
 * exp, and double-precision exp/log/sin/cos/sqrt.
 *
 * The images are shared objects loaded from memory into any process, so
 * they call no libm function: a libm symbol would be unresolved in a program
 * that does not link libm (the images are linked without -lm), and results
 * would change with the C library's version. Everything here is plain
 * arithmetic, the same on every machine for a given level.
 *
 * SIMD layer (vf holds GK_VL floats):
 *   x86-64-v4   AVX-512F, zmm, GK_VL 16, FMA, f16 via vcvtph2ps/vcvtps2ph
 *   x86-64-v3   AVX2 + FMA + F16C, ymm, GK_VL 8
 *   x86-64(-v2) SSE2, xmm, GK_VL 4, multiply then add (no FMA), f16 loads
 *               with integer SSE2, f16 stores in C (gk_quant.h)
 *   other       plain C, GK_VL 1
 * bfloat16 (vf_load_b, vf_store_b) is integer work on every level: a load
 * widens each 16-bit pattern and shifts it into the high half of a float
 * (exact), a store rounds to nearest even by adding 0x7fff plus the kept
 * part's lowest bit and keeps the high half; a NaN becomes the quiet NaN
 * 0x7fc0 with its sign (gk_q_f32_to_bf16, gk_quant.h, is the scalar rule).
 */
#ifndef GK_CPU_H
#define GK_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "../common/gk_quant.h"

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

/* The one symbol an image exports (built with -fvisibility=hidden). */
#define GK_KERNEL_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------ */
/* Vector layer                                                             */
/* ------------------------------------------------------------------------ */

#if defined(__AVX512F__)

#define GK_VL 16
typedef __m512 vf;
typedef __m512i vi;
static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm512_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm512_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
/* a*b subtracted from c, rounded once. */
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
/* max and min return b when a is NaN (the x86 rule, kept on every level). */
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
/* Lanes where a < b are zeroed (the exp underflow clamp). */
static inline vf vf_zero_below(vf x, vf a, vf b) {
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, b, _CMP_NLT_UQ), x);
}
static inline vi vf_round_i(vf a) { return _mm512_cvtps_epi32(a); }
static inline vf vi_to_f(vi a) { return _mm512_cvtepi32_ps(a); }
/* 2^n for -126 <= n <= 127: the exponent field. */
static inline vf vi_pow2(vi n) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
}
static inline vf vf_load_h(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline void vf_store_h(uint16_t *p, vf a) {
  _mm256_storeu_si256((__m256i *)p,
                      _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline vf vf_load_b(const uint16_t *p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(
      _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
static inline void vf_store_b(uint16_t *p, vf a) {
  const __m512i u = _mm512_castps_si512(a);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i qnan = _mm512_or_si512(
      _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)),
      _mm512_set1_epi32(0x7fc0));
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), qnan);
  _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(r));
}
static inline float vf_hsum(vf a) {
  /* The 64-bit-lane extract is plain AVX-512F (the f32x8 one needs DQ). */
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 0x55));
  return _mm_cvtss_f32(q);
}
static inline float vf_hmax(vf a) {
  __m256 h = _mm256_max_ps(_mm512_castps512_ps256(a),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  q = _mm_max_ss(q, _mm_shuffle_ps(q, q, 0x55));
  return _mm_cvtss_f32(q);
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#define GK_VL 8
typedef __m256 vf;
typedef __m256i vi;
static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm256_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm256_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_zero_below(vf x, vf a, vf b) {
  return _mm256_andnot_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), x);
}
static inline vi vf_round_i(vf a) { return _mm256_cvtps_epi32(a); }
static inline vf vi_to_f(vi a) { return _mm256_cvtepi32_ps(a); }
static inline vf vi_pow2(vi n) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}
static inline vf vf_load_h(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline void vf_store_h(uint16_t *p, vf a) {
  _mm_storeu_si128((__m128i *)p,
                   _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline vf vf_load_b(const uint16_t *p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
static inline void vf_store_b(uint16_t *p, vf a) {
  const __m256i u = _mm256_castps_si256(a);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(
      _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i qnan = _mm256_or_si256(
      _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
      _mm256_set1_epi32(0x7fc0));
  r = _mm256_blendv_epi8(r, qnan, _mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
  /* Every lane is 0 .. 0xffff, so the unsigned saturating pack is exact; it
   * packs within 128-bit halves, and the permute brings lanes 0..7 together. */
  const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
  _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(h));
}
static inline float vf_hsum(vf a) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 0x55));
  return _mm_cvtss_f32(q);
}
static inline float vf_hmax(vf a) {
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  q = _mm_max_ss(q, _mm_shuffle_ps(q, q, 0x55));
  return _mm_cvtss_f32(q);
}

#elif defined(__SSE2__)

#define GK_VL 4
typedef __m128 vf;
typedef __m128i vi;
static inline vf vf_zero(void) { return _mm_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm_div_ps(a, b); }
/* No FMA below x86-64-v3: a multiply and an add, each rounded. */
static inline vf vf_fma(vf a, vf b, vf c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm_sub_ps(c, _mm_mul_ps(a, b)); }
static inline vf vf_max(vf a, vf b) { return _mm_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm_min_ps(a, b); }
static inline vf vf_zero_below(vf x, vf a, vf b) {
  return _mm_andnot_ps(_mm_cmplt_ps(a, b), x);
}
static inline vi vf_round_i(vf a) { return _mm_cvtps_epi32(a); }
static inline vf vi_to_f(vi a) { return _mm_cvtepi32_ps(a); }
static inline vf vi_pow2(vi n) {
  return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23));
}
/*
 * Four binary16 -> binary32 without F16C, exact for every pattern (the
 * integer method of gk_q_f16_to_f32, four lanes at once): exponent and
 * mantissa move into place and the exponent is rebiased; inf/NaN get the
 * rest of the rebias; zeros and subnormals are made a normal float of
 * exponent -14 plus the mantissa, then 2^-14 is subtracted, which is exact.
 */
static inline vf vf_load_h(const uint16_t *p) {
  const __m128i h = _mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)p),
                                       _mm_setzero_si128());
  const __m128i exp_mask = _mm_set1_epi32(0x7c00 << 13);
  __m128i o = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
  const __m128i e = _mm_and_si128(o, exp_mask);
  o = _mm_add_epi32(o, _mm_set1_epi32((127 - 15) << 23));
  const __m128i infnan = _mm_cmpeq_epi32(e, exp_mask);
  o = _mm_add_epi32(o, _mm_and_si128(infnan, _mm_set1_epi32((128 - 16) << 23)));
  const __m128i sub = _mm_cmpeq_epi32(e, _mm_setzero_si128());
  const __m128 dn = _mm_sub_ps(
      _mm_castsi128_ps(_mm_add_epi32(o, _mm_set1_epi32(1 << 23))),
      _mm_castsi128_ps(_mm_set1_epi32(113 << 23)));
  const __m128 r = _mm_or_ps(_mm_and_ps(_mm_castsi128_ps(sub), dn),
                             _mm_andnot_ps(_mm_castsi128_ps(sub), _mm_castsi128_ps(o)));
  const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
  return _mm_or_ps(r, _mm_castsi128_ps(sign));
}
static inline void vf_store_h(uint16_t *p, vf a) {
  float t[4];
  _mm_storeu_ps(t, a);
  for (int l = 0; l < 4; l++)
    p[l] = gk_q_f32_to_f16(t[l]);
}
/* bfloat16 with SSE2 alone: interleaving zeros below the patterns puts each
 * in the high half of a lane; the store sign-extends the low half of each
 * lane so that the signed saturating pack (SSE2 has no unsigned one for
 * 32-bit lanes) keeps its 16 bits exactly. */
static inline vf vf_load_b(const uint16_t *p) {
  return _mm_castsi128_ps(
      _mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64((const __m128i *)p)));
}
static inline void vf_store_b(uint16_t *p, vf a) {
  const __m128i u = _mm_castps_si128(a);
  const __m128i lsb = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
  __m128i r = _mm_srli_epi32(_mm_add_epi32(u, _mm_add_epi32(lsb, _mm_set1_epi32(0x7fff))), 16);
  const __m128i qnan = _mm_or_si128(
      _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(0x8000)), _mm_set1_epi32(0x7fc0));
  const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(a, a));
  r = _mm_or_si128(_mm_and_si128(nan, qnan), _mm_andnot_si128(nan, r));
  r = _mm_srai_epi32(_mm_slli_epi32(r, 16), 16);
  _mm_storel_epi64((__m128i *)p, _mm_packs_epi32(r, r));
}
static inline float vf_hsum(vf a) {
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_shuffle_ps(a, a, 0x55));
  return _mm_cvtss_f32(a);
}
static inline float vf_hmax(vf a) {
  a = _mm_max_ps(a, _mm_movehl_ps(a, a));
  a = _mm_max_ss(a, _mm_shuffle_ps(a, a, 0x55));
  return _mm_cvtss_f32(a);
}

#else

#define GK_VL 1
typedef float vf;
typedef int32_t vi;
static inline vf vf_zero(void) { return 0.0f; }
static inline vf vf_set1(float a) { return a; }
static inline vf vf_load(const float *p) { return *p; }
static inline void vf_store(float *p, vf a) { *p = a; }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_sub(vf a, vf b) { return a - b; }
static inline vf vf_mul(vf a, vf b) { return a * b; }
static inline vf vf_div(vf a, vf b) { return a / b; }
static inline vf vf_fma(vf a, vf b, vf c) { return a * b + c; }
static inline vf vf_fnma(vf a, vf b, vf c) { return c - a * b; }
static inline vf vf_max(vf a, vf b) { return a > b ? a : b; }
static inline vf vf_min(vf a, vf b) { return a < b ? a : b; }
static inline vf vf_zero_below(vf x, vf a, vf b) { return a < b ? 0.0f : x; }
static inline vi vf_round_i(vf a) { /* to nearest; |a| < 2^22 here */
  return (vi)(a + (a < 0 ? -0.5f : 0.5f));
}
static inline vf vi_to_f(vi a) { return (float)a; }
static inline vf vi_pow2(vi n) { return gk_q_f32_from_bits((uint32_t)(n + 127) << 23); }
static inline vf vf_load_h(const uint16_t *p) { return gk_q_f16_to_f32(*p); }
static inline void vf_store_h(uint16_t *p, vf a) { *p = gk_q_f32_to_f16(a); }
static inline vf vf_load_b(const uint16_t *p) { return gk_q_bf16_to_f32(*p); }
static inline void vf_store_b(uint16_t *p, vf a) { *p = gk_q_f32_to_bf16(a); }
static inline float vf_hsum(vf a) { return a; }
static inline float vf_hmax(vf a) { return a; }

#endif

/*
 * e^x for every lane, within about 2 ulp of the exact value (Cephes expf:
 * x = n ln2 + r with |r| <= ln2/2, ln2 in two parts so that n*ln2 is exact,
 * a degree-7 polynomial for e^r, then 2^n through the exponent field).
 * Lanes with x below -87.336 (where e^x leaves the normal range) give
 * exactly 0, so that exp(-inf) = 0 as softmax and masking need; x above
 * 88 is clamped (callers only pass x <= 0). A NaN lane gives garbage.
 */
static inline vf vf_exp(vf x) {
  const vf lo = vf_set1(-87.33654f);
  const vf xc = vf_max(vf_min(x, vf_set1(88.0f)), lo);
  const vi n = vf_round_i(vf_mul(xc, vf_set1(1.44269504088896341f)));
  const vf fn = vi_to_f(n);
  vf r = vf_fnma(fn, vf_set1(0.693359375f), xc);
  r = vf_fnma(fn, vf_set1(-2.12194440e-4f), r);
  const vf z = vf_mul(r, r);
  vf y = vf_set1(1.9875691500e-4f);
  y = vf_fma(y, r, vf_set1(1.3981999507e-3f));
  y = vf_fma(y, r, vf_set1(8.3334519073e-3f));
  y = vf_fma(y, r, vf_set1(4.1665795894e-2f));
  y = vf_fma(y, r, vf_set1(1.6666665459e-1f));
  y = vf_fma(y, r, vf_set1(5.0000001201e-1f));
  y = vf_add(vf_fma(y, z, r), vf_set1(1.0f));
  return vf_zero_below(vf_mul(y, vi_pow2(n)), x, lo);
}

/* The same function for one float (n is rounded half away from zero here,
 * to even in vf_exp: both are within the same error bound). */
static inline float gk_expf(float x) {
  const float lo = -87.33654f;
  if (!(x >= lo)) /* also NaN: no caller passes one where it matters */
    return x != x ? x : 0.0f;
  const float xc = x < 88.0f ? x : 88.0f;
  const float t = xc * 1.44269504088896341f;
  const int32_t n = (int32_t)(t + (t < 0 ? -0.5f : 0.5f));
  const float fn = (float)n;
#if defined(__FMA__)
  float r = __builtin_fmaf(-fn, 0.693359375f, xc);
  r = __builtin_fmaf(-fn, -2.12194440e-4f, r);
#else
  float r = xc - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
#endif
  const float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  return y * gk_q_f32_from_bits((uint32_t)(n + 127) << 23);
}

/*
 * The largest non-NaN x[j], j < n (n >= 1), and -inf when there is none.
 * vf_max(x, m) returns m when x is a NaN, so a NaN never enters m; the
 * four accumulators are four independent chains.
 */
static inline float gk_row_max(const float *x, int64_t n) {
  vf m[4];
  for (int a = 0; a < 4; a++)
    m[a] = vf_set1(-__builtin_inff());
  int64_t j = 0;
  for (; j + 4 * GK_VL <= n; j += 4 * GK_VL)
    for (int a = 0; a < 4; a++)
      m[a] = vf_max(vf_load(x + j + a * GK_VL), m[a]);
  for (; j + GK_VL <= n; j += GK_VL)
    m[0] = vf_max(vf_load(x + j), m[0]);
  float best = vf_hmax(vf_max(vf_max(m[0], m[1]), vf_max(m[2], m[3])));
  for (; j < n; j++)
    best = x[j] > best ? x[j] : best;
  return best;
}

/* argmax of docs/kernels.md for one row: the first index holding the
 * largest non-NaN value (== is exact and a NaN equals nothing, so ties go
 * to the lowest index); 0 when the row is all NaN or n <= 0. */
static inline int32_t gk_argmax_row(const float *x, int64_t n) {
  if (n <= 0)
    return 0;
  const float m = gk_row_max(x, n);
  for (int64_t j = 0; j < n; j++)
    if (x[j] == m)
      return (int32_t)j;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Double precision, scalar                                                 */
/* ------------------------------------------------------------------------ */

/* sqrt(x) for x >= 0, correctly rounded (the hardware instruction: a call
 * to sqrt() would keep a libm reference for errno on negative input). */
static inline double gk_sqrt_d(double x) {
#if defined(__SSE2__)
  return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x)));
#else
  /* Newton from a rough guess; 6 steps reach full precision. */
  if (!(x > 0))
    return x == 0 ? x : (x - x) / (x - x);
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 64 && r * r > x * (1 + 1e-15); i++)
    r = 0.5 * (r + x / r);
  for (int i = 0; i < 3; i++)
    r = 0.5 * (r + x / r);
  return r;
#endif
}

/* Round to the nearest integer (ties away or to even, either is fine for
 * argument reduction) for |x| < 2^51: adding and removing 1.5 * 2^52 does
 * it in the default rounding mode with no libm call. */
static inline double gk_round_d(double x) {
  /* Strict IEEE evaluation (no -ffast-math) keeps both operations. */
  return (x + 6755399441055744.0) - 6755399441055744.0;
}

/* 2^n as a double, -1022 <= n <= 1023. */
static inline double gk_pow2_d(int n) {
  const uint64_t b = (uint64_t)(n + 1023) << 52;
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* e^x in double, relative error a few 1e-16, for x in [-700, 700]; 0 below,
 * inf above. x = n ln2 + r, |r| <= ln2/2, Taylor series of e^r to r^14. */
static inline double gk_exp_d(double x) {
  if (x < -700.0)
    return 0.0;
  if (x > 700.0)
    return 1e308 * 10.0;
  const double n = gk_round_d(x * 1.4426950408889634);
  const double r = (x - n * 0x1.62e42fee00000p-1) - n * 0x1.a39ef35793c76p-33;
  double s = 1.0;
  for (int i = 14; i >= 1; i--) /* Horner: 1 + r(1 + r/2(1 + r/3(...))) */
    s = 1.0 + s * r / i;
  return s * gk_pow2_d((int)n);
}

/* ln x in double for finite x > 0 (relative error a few 1e-16): x = m 2^e
 * with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1),
 * |s| < 0.172, the series to s^29. Non-positive or non-finite x give NaN
 * or the obvious limit. */
static inline double gk_log_d(double x) {
  if (!(x > 0))
    return x == 0 ? -1e308 * 10.0 : (x - x) / (x - x);
  if (x > 1.79e308)
    return x;
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  int e = (int)((b >> 52) & 0x7ff);
  if (e == 0) { /* subnormal: scale into the normal range first */
    x *= 0x1p54;
    memcpy(&b, &x, sizeof b);
    e = (int)((b >> 52) & 0x7ff) - 54;
  }
  e -= 1023;
  b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
  double m;
  memcpy(&m, &b, sizeof m);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e++;
  }
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double t = 0.0;
  for (int k = 29; k >= 3; k -= 2)
    t = (t + 1.0 / k) * s2;
  return e * 0x1.62e42fefa39efp-1 + 2.0 * s * (1.0 + t);
}

/*
 * sin and cos of x in double for |x| <= 2^31 (absolute error about 1e-16
 * plus |x| * 1e-22). x = k pi/2 + r with pi/2 in three parts, the first two
 * of 21 bits so that k * part is exact for k < 2^32 (Cody and Waite), and
 * |r| <= pi/4; then the fdlibm kernel polynomials and the quadrant k mod 4.
 */
static inline void gk_sincos_d(double x, double *s, double *c) {
  const double k = gk_round_d(x * 0x1.45f306dc9c883p-1);
  const double r = ((x - k * 0x1.921fb00000000p+0) - k * 0x1.5110b00000000p-22) -
                   k * 0x1.18469898cc517p-44;
  const double z = r * r;
  const double ps = r + r * z *
      (-1.66666666666666324348e-01 +
       z * (8.33333333332248946124e-03 +
            z * (-1.98412698298579493134e-04 +
                 z * (2.75573137070700676789e-06 +
                      z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
  const double pc = 1.0 - 0.5 * z +
      z * z * (4.16666666666666019037e-02 +
               z * (-1.38888888888741095749e-03 +
                    z * (2.48015872894767294178e-05 +
                         z * (-2.75573143513906633035e-07 +
                              z * (2.08757232129817482790e-09 +
                                   z * -1.13596475577881948265e-11)))));
  switch ((int64_t)k & 3) {
  case 0: *s = ps; *c = pc; break;
  case 1: *s = pc; *c = -ps; break;
  case 2: *s = -ps; *c = -pc; break;
  default: *s = -pc; *c = ps; break;
  }
}

#endif /* GK_CPU_H */
