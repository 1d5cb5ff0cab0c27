/*
 * qmatmul.c - y = x * W^T for the quantized weight format of
 * docs/weights.md, on CPUs: y[i*n + j] = sum_t x[i*k + t] * W[j][t].
 *
 * One source, built once per (BITS, x86-64 level) by the cpu recipe:
 *   cc -std=c11 -O3 -fPIC -shared -fvisibility=hidden -march=LEVEL
 *      -mtune=generic [-mprefer-vector-width=512] -DBITS=N -pthread qmatmul.c
 * The SIMD layer is chosen by the macros -march defines: AVX-512
 * (x86-64-v4, zmm), AVX2+FMA+F16C (x86-64-v3, ymm), SSE2 (x86-64 and
 * x86-64-v2, xmm), plain C for anything else. No extra flags are needed:
 * fused multiply-adds are intrinsics, never left to -ffp-contract, and
 * nothing relies on reassociation.
 *
 * Arithmetic. Both the m == 1 and the m > 1 path do exactly this, so a row
 * of x gives bit-identical y whatever batch it comes in:
 * - every weight is w = d*q + m, rounded once (FMA) where FMA exists;
 * - a row is cut into chunks of CHUNK_BLOCKS blocks; in a chunk, block b's
 *   32 products x*w go elementwise into accumulator set b % USETS (several
 *   sets keep the FMA units busy instead of waiting on one dependency
 *   chain);
 * - the sets, then their lanes, are added in a fixed tree, and the chunk
 *   sums are added to y in order, starting from 0.
 * Levels differ in vector width and USETS, so their last bits may differ.
 *
 * Speed. With m == 1 every weight is used once, so the work per block is
 * the limit: each (ISA, BITS) decodes a block with as few shuffles as it
 * can (the shuffle units are the scarce ones). For BITS <= 4 a weight is a
 * table lookup: one FMA makes the vector of d*q + m for every code q, and
 * vpermps picks an entry per lane by code. A block's weights may come out in
 * a "lane order" other than t = 0..31 (X_PERMUTED); for m == 1 the chunk of
 * x is then put in that order once, for m > 1 the decoded weights are put
 * back in t order once per W row and only the accumulators are permuted.
 *
 * Layouts. `qmatmul` reads W in the block format of docs/weights.md;
 * `qmatmul_packed` reads the same bytes rearranged by `qmatmul_repack`
 * (qpack.h: scales apart from codes, codes of several blocks interleaved),
 * which saves a block's scale decode and its widening shuffle. Each level
 * decodes a packed block into the lanes of its original path, so the two
 * entries give identical y.
 *
 * Threads. A call's output columns are split over the image's own
 * persistent pool (gk_pool.h): one core decodes about one block per ns
 * (measured on a Zen 5 class VM), ~20 GB/s of W for BITS = 4, so one core
 * alone cannot keep up with memory.
 */
#define _GNU_SOURCE /* gk_pool.h: sched_getaffinity, syscall */
#include <stddef.h>
#include <stdint.h>

#include "../common/gk_quant.h"
#include "gk_pool.h"

#if !defined(BITS) || (BITS != 1 && BITS != 2 && BITS != 4 && BITS != 8)
#error "qmatmul.c: compile with -DBITS=1, 2, 4 or 8"
#endif

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

#define QMATMUL_EXPORT __attribute__((visibility("default")))

/* 128 blocks = 4096 weights: a 4096-wide row is one chunk. The chunk of x
 * (m == 1) or of decoded W (m > 1), 16 KB, stays in L1 while it is used. */
#define CHUNK_BLOCKS 128
#define BLOCK_BYTES GK_QBLOCK_BYTES(BITS)
#define NCODES (1 << BITS)

/* Per-lane constants of the 32-bit word form of the codes (gk_q_code_w32):
 * lane l's code is word LANE_WORD(l) shifted right by LANE_SHIFT(l). */
#define LANE_WORD(l) (((l) * BITS) >> 5)
#define LANE_SHIFT(l) (((l) * BITS) & 31)
/* Code value a table lane stands for: tables repeat with period 2^BITS so
 * that garbage above the code's bits in an index lane is harmless. */
#define LANE_CODE(l) ((float)((l) % NCODES))
#define LANES8(F, b) F(b), F(b + 1), F(b + 2), F(b + 3), F(b + 4), F(b + 5), \
                     F(b + 6), F(b + 7)
#define LANES32(F) LANES8(F, 0), LANES8(F, 8), LANES8(F, 16), LANES8(F, 24)

/* ------------------------------------------------------------------------ */
/* SIMD layer: vf holds VL floats; a block is NV = 32/VL of them.           */
/* ------------------------------------------------------------------------ */

#if defined(__AVX512F__)

#define VL 16
#define USETS 4 /* 2 FMAs per block: 4 sets give 8 independent chains */
typedef __m512 vf;
static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm512_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm512_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#define VL 8
#define USETS 2
typedef __m256 vf;
static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm256_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm256_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }

#elif defined(__SSE2__)

/* No FMA below x86-64-v3: a multiply and an add, each rounded. */
#define VL 4
#define USETS 1
typedef __m128 vf;
static inline vf vf_zero(void) { return _mm_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm_add_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) {
  return _mm_add_ps(_mm_mul_ps(a, b), c);
}

#else

/* Portable C: one float per "vector". */
#define VL 1
#define USETS 1
typedef float vf;
static inline vf vf_zero(void) { return 0.0f; }
static inline vf vf_set1(float a) { return a; }
static inline vf vf_load(const float *p) { return *p; }
static inline void vf_store(float *p, vf a) { *p = a; }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_fma(vf a, vf b, vf c) { return a * b + c; }

#endif

#define NV (GK_QBLOCK / VL)

/* Horizontal sums in a fixed tree: lanes l and l + VL/2 first. */
#if VL >= 4
static inline float hsum128(__m128 a) {
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_shuffle_ps(a, a, 0x55));
  return _mm_cvtss_f32(a);
}
#endif
#if VL >= 8
static inline float hsum256(__m256 a) {
  return hsum128(_mm_add_ps(_mm256_castps256_ps128(a),
                            _mm256_extractf128_ps(a, 1)));
}
#endif
static inline float vf_hsum(vf a) {
#if VL == 16
  /* The 64-bit-lane extract is plain AVX-512F (the f32x8 one needs DQ). */
  __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
  return hsum256(_mm256_add_ps(_mm512_castps512_ps256(a), hi));
#elif VL == 8
  return hsum256(a);
#elif VL == 4
  return hsum128(a);
#else
  return a;
#endif
}

/* ------------------------------------------------------------------------ */
/* Decoding a block: its 32 weights as NV vectors, in lane order.           */
/* ------------------------------------------------------------------------ */

/*
 * d and m of a block, each broadcast to a whole vector. F16C converts the
 * pair exactly in one instruction ([d, m, d, m, ...]); two in-lane
 * duplicates then spread each one. Below v3, the decode of gk_quant.h.
 */
static inline void block_scales(const unsigned char *blk, vf *d, vf *m) {
#if VL == 16
  const __m512 dm = _mm512_cvtph_ps(_mm256_set1_epi32((int)gk_q_le32(blk)));
  *d = _mm512_moveldup_ps(dm);
  *m = _mm512_movehdup_ps(dm);
#elif VL == 8
  const __m256 dm = _mm256_cvtph_ps(_mm_set1_epi32((int)gk_q_le32(blk)));
  *d = _mm256_moveldup_ps(dm);
  *m = _mm256_movehdup_ps(dm);
#else
  *d = vf_set1(gk_q_f16_to_f32(gk_q_le16(blk)));
  *m = vf_set1(gk_q_f16_to_f32(gk_q_le16(blk + 2)));
#endif
}

/*
 * block_decode: w = d*q + m for the 32 codes at `codes` (the code bytes of
 * a block, docs/weights.md) with the block's scales d and m. Lane order is t = 0..31
 * (lane l of vector v is weight v*VL + l) except where X_PERMUTED says
 * otherwise. Every variant computes each weight as the same single FMA (or,
 * without FMA, the same multiply and add), so the unpacking method never
 * changes a result.
 */
#if VL == 16

#if BITS == 4
/* Lane order: w[0] holds weights 0, 2, .., 30 (the low nibbles of the 16
 * code bytes), w[1] weights 1, 3, .., 31. One widening load and one shift
 * unpack the block, where t order would cost two cross-lane permutes. */
#define X_PERMUTED 1
#endif

static inline void block_decode(const unsigned char *codes, vf d, vf m, vf w[NV]) {
#if BITS == 8
  for (int v = 0; v < NV; v++)
    w[v] = vf_fma(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                         (const __m128i *)(codes + 16 * v)))),
                  m);
#else
  /* vpermps reads the low 4 bits of each index lane: give lane l its code
   * in those bits (the bits above are ignored) and look it up. */
  static const float lane_code[16] = {LANES8(LANE_CODE, 0),
                                      LANES8(LANE_CODE, 8)};
  const vf table = vf_fma(d, vf_load(lane_code), m);
#if BITS == 4
  const __m512i bytes =
      _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)codes));
  w[0] = _mm512_permutexvar_ps(bytes, table);
  w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
#else
  /* BITS 1 and 2: a vector's 16 codes share one word. (For BITS == 1 this
   * beats using the code bits as blend masks: mask moves are slow.) */
  static const int32_t lane_shift[32] = {LANES32(LANE_SHIFT)};
  for (int v = 0; v < NV; v++) {
    __m512i idx =
        _mm512_set1_epi32((int)gk_q_le32(codes + 4 * LANE_WORD(16 * v)));
    idx = _mm512_srlv_epi32(idx, _mm512_loadu_si512(lane_shift + 16 * v));
    w[v] = _mm512_permutexvar_ps(idx, table);
  }
#endif
#endif
}

#elif VL == 8

#if BITS == 4
/* Lane order: w[0] holds weights 0, 2, .., 14, w[1] 1, 3, .., 15, w[2]
 * 16, 18, .., 30, w[3] 17, 19, .., 31: the low and high nibbles of code
 * bytes 0..7 and 8..15, two widening loads instead of four word
 * broadcasts and variable shifts. */
#define X_PERMUTED 1
#endif

static inline void block_decode(const unsigned char *codes, vf d, vf m, vf w[NV]) {
#if BITS == 8
  for (int v = 0; v < NV; v++)
    w[v] = vf_fma(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(
                         (const __m128i *)(codes + 8 * v)))),
                  m);
#elif BITS == 4
  /* 16 codes do not fit an 8-entry vpermps table: mask and convert. */
  const __m256i mask = _mm256_set1_epi32(NCODES - 1);
  for (int h = 0; h < 2; h++) {
    const __m256i bytes = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64((const __m128i *)(codes + 8 * h)));
    w[2 * h] = vf_fma(d, _mm256_cvtepi32_ps(_mm256_and_si256(bytes, mask)), m);
    w[2 * h + 1] = vf_fma(d, _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4)), m);
  }
#else
  /* BITS 1 and 2: the 8 codes of a vector share one word: broadcast it,
   * shift each lane by its own amount, look the code up in an 8-entry
   * table (vpermps reads the low 3 bits of each index lane). */
  static const int32_t lane_shift[32] = {LANES32(LANE_SHIFT)};
  static const float lane_code[8] = {LANES8(LANE_CODE, 0)};
  const vf table = vf_fma(d, vf_load(lane_code), m);
  for (int v = 0; v < NV; v++) {
    __m256i idx = _mm256_set1_epi32((int)gk_q_le32(codes + 4 * LANE_WORD(8 * v)));
    idx = _mm256_srlv_epi32(
        idx, _mm256_loadu_si256((const __m256i *)(lane_shift + 8 * v)));
    w[v] = _mm256_permutevar8x32_ps(table, idx);
  }
#endif
}

#elif VL == 4

static inline void block_decode(const unsigned char *codes, vf d, vf m, vf w[NV]) {
  /* SSE2 has no per-lane shifts: spread the codes to one per byte by
   * interleaving (c0: codes 0..15, c1: 16..31), then widen to 32 bits. */
  __m128i c0, c1;
#if BITS == 8
  c0 = _mm_loadu_si128((const __m128i *)codes);
  c1 = _mm_loadu_si128((const __m128i *)(codes + 16));
#elif BITS == 4
  const __m128i b = _mm_loadu_si128((const __m128i *)codes);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(b, m4);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m4);
  c0 = _mm_unpacklo_epi8(lo, hi); /* code 2i is the low nibble of byte i */
  c1 = _mm_unpackhi_epi8(lo, hi);
#elif BITS == 2
  /* p_s holds code 4i+s in byte i; interleave bytes, then byte pairs. */
  const __m128i b = _mm_loadl_epi64((const __m128i *)codes);
  const __m128i m2 = _mm_set1_epi8(3);
  const __m128i p0 = _mm_and_si128(b, m2);
  const __m128i p1 = _mm_and_si128(_mm_srli_epi16(b, 2), m2);
  const __m128i p2 = _mm_and_si128(_mm_srli_epi16(b, 4), m2);
  const __m128i p3 = _mm_and_si128(_mm_srli_epi16(b, 6), m2);
  const __m128i a01 = _mm_unpacklo_epi8(p0, p1);
  const __m128i a23 = _mm_unpacklo_epi8(p2, p3);
  c0 = _mm_unpacklo_epi16(a01, a23);
  c1 = _mm_unpackhi_epi16(a01, a23);
#else /* BITS == 1 */
  /* Repeat each code byte 8 times, then test one bit per byte. */
  const __m128i b = _mm_cvtsi32_si128((int)gk_q_le32(codes));
  __m128i t = _mm_unpacklo_epi8(b, b);
  t = _mm_unpacklo_epi16(t, t);
  const __m128i sel = _mm_set_epi8((char)128, 64, 32, 16, 8, 4, 2, 1,
                                   (char)128, 64, 32, 16, 8, 4, 2, 1);
  const __m128i one = _mm_set1_epi8(1);
  c0 = _mm_unpacklo_epi32(t, t);
  c1 = _mm_unpackhi_epi32(t, t);
  c0 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(c0, sel), sel), one);
  c1 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(c1, sel), sel), one);
#endif
  const __m128i z = _mm_setzero_si128();
  const __m128i c[2] = {c0, c1};
  for (int h = 0; h < 2; h++) {
    const __m128i w0 = _mm_unpacklo_epi8(c[h], z), w1 = _mm_unpackhi_epi8(c[h], z);
    const __m128i q[4] = {_mm_unpacklo_epi16(w0, z), _mm_unpackhi_epi16(w0, z),
                          _mm_unpacklo_epi16(w1, z), _mm_unpackhi_epi16(w1, z)};
    for (int r = 0; r < 4; r++)
      w[4 * h + r] = vf_fma(d, _mm_cvtepi32_ps(q[r]), m);
  }
}

#else

static inline void block_decode(const unsigned char *codes, vf d, vf m, vf w[NV]) {
  for (int j = 0; j < GK_QBLOCK; j++)
    w[j] = vf_fma(d, (float)gk_q_code(codes, BITS, j), m);
}

#endif

/* A block of the original layout: its scales, then its codes. */
static inline void block_weights(const unsigned char *blk, vf w[NV]) {
  vf d, m;
  block_scales(blk, &d, &m);
  block_decode(blk + GK_QCODES_OFFSET, d, m, w);
}

#ifndef X_PERMUTED
#define X_PERMUTED 0
#endif

/* The packed layout: its repack and its decode (qmatmul_repack, _packed). */
#include "qpack.h"

/*
 * The 32 values of a block held as NV vectors, from t order (vector v holds
 * t = v*VL ..) to lane order and back; the identity unless X_PERMUTED.
 * Lane order is the even t, then the odd t (per 16 t on AVX2).
 */
static inline void lanes_from_t(vf v[NV]) {
#if X_PERMUTED && VL == 16
  static const int32_t even[16] = {0,  2,  4,  6,  8,  10, 12, 14,
                                   16, 18, 20, 22, 24, 26, 28, 30};
  const __m512i ev = _mm512_loadu_si512(even);
  const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
  const vf a = v[0], b = v[1];
  v[0] = _mm512_permutex2var_ps(a, ev, b);
  v[1] = _mm512_permutex2var_ps(a, od, b);
#elif X_PERMUTED && VL == 8
  for (int h = 0; h < 2; h++) {
    const vf a = v[2 * h], b = v[2 * h + 1];
    /* In-lane shuffles give [0 2 8 10 | 4 6 12 14]; the 64-bit permute
     * puts the pairs in order. */
    v[2 * h] = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    v[2 * h + 1] = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
  }
#else
  (void)v;
#endif
}

static inline void t_from_lanes(vf v[NV]) {
#if X_PERMUTED && VL == 16
  /* t < 16 comes from v[0] (even t) or v[1] (odd t, index 16 + t/2). */
  static const int32_t lo[16] = {0, 16, 1, 17, 2, 18, 3, 19,
                                 4, 20, 5, 21, 6, 22, 7, 23};
  const __m512i il = _mm512_loadu_si512(lo);
  const __m512i ih = _mm512_add_epi32(il, _mm512_set1_epi32(8));
  const vf e = v[0], o = v[1];
  v[0] = _mm512_permutex2var_ps(e, il, o);
  v[1] = _mm512_permutex2var_ps(e, ih, o);
#elif X_PERMUTED && VL == 8
  for (int h = 0; h < 2; h++) {
    /* Interleaving gives [0 1 2 3 | 8 9 10 11] and [4 5 6 7 | 12 13 14 15];
     * swapping 128-bit halves puts them in order. */
    const vf lo = _mm256_unpacklo_ps(v[2 * h], v[2 * h + 1]);
    const vf hi = _mm256_unpackhi_ps(v[2 * h], v[2 * h + 1]);
    v[2 * h] = _mm256_permute2f128_ps(lo, hi, 0x20);
    v[2 * h + 1] = _mm256_permute2f128_ps(lo, hi, 0x31);
  }
#else
  (void)v;
#endif
}

/* ------------------------------------------------------------------------ */
/* The kernel, written once over the layers above.                          */
/* ------------------------------------------------------------------------ */

/* Accumulators of one (x row, W row) pair over a chunk: USETS sets of a
 * block's lanes. */
typedef struct lanes {
  vf a[USETS][NV];
} lanes;

static inline void lanes_zero(lanes *acc) {
  for (int u = 0; u < USETS; u++)
    for (int v = 0; v < NV; v++)
      acc->a[u][v] = vf_zero();
}

/* Set u += x * w, elementwise over one block. */
static inline void lanes_fma(lanes *acc, int u, const vf xv[NV], const vf w[NV]) {
  for (int v = 0; v < NV; v++)
    acc->a[u][v] = vf_fma(xv[v], w[v], acc->a[u][v]);
}

/* The fixed tree: sets u and u + USETS/2 first, then vectors v and
 * v + NV/2, then the lanes of the last vector. */
static inline float lanes_sum(lanes *acc) {
  for (int h = USETS / 2; h >= 1; h /= 2)
    for (int u = 0; u < h; u++)
      for (int v = 0; v < NV; v++)
        acc->a[u][v] = vf_add(acc->a[u][v], acc->a[u + h][v]);
  for (int h = NV / 2; h >= 1; h /= 2)
    for (int v = 0; v < h; v++)
      acc->a[0][v] = vf_add(acc->a[0][v], acc->a[0][v + h]);
  return vf_hsum(acc->a[0][0]);
}

/* Both paths below read block b of a chunk in this loop shape: whole
 * rounds of USETS blocks, then the rest, block b always in set b % USETS. */

/* m == 1: `len` blocks of a W row from `blk`, decoded in registers, against
 * x already put in lane order (xl). */
static inline float chunk_fused(const float *restrict xl,
                                const unsigned char *restrict blk, int len) {
  lanes acc;
  lanes_zero(&acc);
  int b = 0;
  for (; b + USETS <= len; b += USETS)
    for (int u = 0; u < USETS; u++) {
      vf w[NV], xv[NV];
      block_weights(blk + (b + u) * BLOCK_BYTES, w);
      for (int v = 0; v < NV; v++)
        xv[v] = vf_load(xl + (b + u) * GK_QBLOCK + v * VL);
      lanes_fma(&acc, u, xv, w);
    }
  for (; b < len; b++) {
    vf w[NV], xv[NV];
    block_weights(blk + b * BLOCK_BYTES, w);
    for (int v = 0; v < NV; v++)
      xv[v] = vf_load(xl + b * GK_QBLOCK + v * VL);
    lanes_fma(&acc, b % USETS, xv, w);
  }
  return lanes_sum(&acc);
}

/*
 * m > 1: `len` decoded blocks (wt, t order) against x (t order). Here an
 * accumulator lane holding weight t sums the same products, in the same
 * order, as the lane holding t in chunk_fused; putting the accumulators in
 * lane order before the tree makes the result identical, for a few
 * permutes per chunk instead of two per block.
 */
static inline float chunk_decoded(const float *restrict x,
                                  const float *restrict wt, int len) {
  lanes acc;
  lanes_zero(&acc);
  int b = 0;
  for (; b + USETS <= len; b += USETS)
    for (int u = 0; u < USETS; u++) {
      vf w[NV], xv[NV];
      for (int v = 0; v < NV; v++) {
        w[v] = vf_load(wt + (b + u) * GK_QBLOCK + v * VL);
        xv[v] = vf_load(x + (b + u) * GK_QBLOCK + v * VL);
      }
      lanes_fma(&acc, u, xv, w);
    }
  for (; b < len; b++) {
    vf w[NV], xv[NV];
    for (int v = 0; v < NV; v++) {
      w[v] = vf_load(wt + b * GK_QBLOCK + v * VL);
      xv[v] = vf_load(x + b * GK_QBLOCK + v * VL);
    }
    lanes_fma(&acc, b % USETS, xv, w);
  }
  for (int u = 0; u < USETS; u++)
    lanes_from_t(acc.a[u]);
  return lanes_sum(&acc);
}

static inline int chunk_len(int64_t nblocks, int64_t c) {
  return (int)(nblocks - c < CHUNK_BLOCKS ? nblocks - c : CHUNK_BLOCKS);
}

/* The chunk of x starting at xc (len blocks) in lane order: xc itself, or
 * its copy in xbuf when lanes are permuted. */
static inline const float *x_lanes(const float *xc, int len, float *xbuf) {
#if X_PERMUTED
  for (int b = 0; b < len; b++) {
    vf xv[NV];
    for (int v = 0; v < NV; v++)
      xv[v] = vf_load(xc + b * GK_QBLOCK + v * VL);
    lanes_from_t(xv);
    for (int v = 0; v < NV; v++)
      vf_store(xbuf + b * GK_QBLOCK + v * VL, xv[v]);
  }
  return xbuf;
#else
  (void)len, (void)xbuf;
  return xc;
#endif
}

/*
 * m == 1, columns j0 <= j < j1. Chunk by chunk: the chunk of x is put in
 * lane order once, then every W row's chunk is decoded against it.
 */
static void cols_single(const float *x, const unsigned char *w, float *y,
                        int64_t nblocks, int64_t j0, int64_t j1) {
  const int64_t row_bytes = nblocks * BLOCK_BYTES;
  _Alignas(64) float xbuf[X_PERMUTED ? CHUNK_BLOCKS * GK_QBLOCK : 1];
  for (int64_t j = j0; j < j1; j++)
    y[j] = 0.0f;
  for (int64_t c = 0; c < nblocks; c += CHUNK_BLOCKS) {
    const int len = chunk_len(nblocks, c);
    const float *xl = x_lanes(x + c * GK_QBLOCK, len, xbuf);
    for (int64_t j = j0; j < j1; j++)
      y[j] += chunk_fused(xl, w + j * row_bytes + c * BLOCK_BYTES, len);
  }
}

/*
 * m == 1 on the packed layout (qpack.h): blocks c .. c+len-1 of a row whose
 * codes start at `codes`, with their scales already floats in ds and ms
 * (index b - c). The same products go into the same lanes and sets, in the
 * same order, as chunk_fused on the original layout. c is a multiple of
 * CHUNK_BLOCKS, hence of QP_G: the chunk starts on a group. Each group read
 * prefetches the byte `ahead` bytes on (the same group of a later row).
 */
static inline float chunk_packed(const float *restrict xl,
                                 const unsigned char *restrict codes,
                                 const float *restrict ds, const float *restrict ms,
                                 int64_t nb, int64_t c, int len, int64_t ahead) {
  lanes acc;
  lanes_zero(&acc);
  const int64_t in_groups = nb / QP_G * QP_G - c;
  const int grouped = (int)(in_groups < len ? in_groups : len);
  int b = 0;
  /* Whole rounds of QP_ROUND blocks, unrolled so that every set index and
   * shift count is a constant (a set chosen at run time would keep the
   * accumulators in memory). */
  for (; b + QP_ROUND <= grouped; b += QP_ROUND) {
#pragma GCC unroll 16
    for (int gi = 0; gi < QP_ROUND / QP_G; gi++) {
      const unsigned char *gp = codes + (c + b) / QP_G * QP_GROUP_BYTES + gi * QP_GROUP_BYTES;
      __builtin_prefetch(gp + ahead, 0, 3); /* the same group PREFETCH_ROWS rows on */
      const qp_words g = qp_load(gp);
#pragma GCC unroll 16
      for (int i = 0; i < QP_G; i++) {
        const int bi = b + gi * QP_G + i;
        vf w[NV], xv[NV];
        qp_decode(g, i, vf_set1(ds[bi]), vf_set1(ms[bi]), w);
        for (int v = 0; v < NV; v++)
          xv[v] = vf_load(xl + bi * GK_QBLOCK + v * VL);
        lanes_fma(&acc, (gi * QP_G + i) % USETS, xv, w);
      }
    }
  }
  /* The rest, block by block (the end of a row only). */
  for (; b < len; b++) {
    vf w[NV], xv[NV];
    qp_block(codes, nb, c + b, vf_set1(ds[b]), vf_set1(ms[b]), w);
    for (int v = 0; v < NV; v++)
      xv[v] = vf_load(xl + b * GK_QBLOCK + v * VL);
#pragma GCC unroll 16
    for (int u = 0; u < USETS; u++)
      if (u == b % USETS)
        lanes_fma(&acc, u, xv, w);
  }
  return lanes_sum(&acc);
}

/* Where a packed row's parts start: nb d's, nb m's, then the codes. That
 * order makes a row one ascending stream (scales, then the codes they
 * scale); codes first, with the scales read ahead of them, ran at half the
 * speed from memory (the prefetchers did not follow the backward jumps). */
#define PACKED_D(row, nb) (row)
#define PACKED_M(row, nb) ((row) + 2 * (nb))
#define PACKED_CODES(row, nb) ((row) + 4 * (nb))

/*
 * Rows this far ahead are prefetched. A packed row's first use of memory is
 * its scales, and its whole chunk depends on them; on a row the hardware
 * prefetcher has not reached yet, every row stalled for a memory round
 * trip (m == 1 ran at 0.65x the original layout's speed from memory, 1.3x
 * from cache). Two rows ahead is ~0.3 us of work at memory speed.
 */
#define PREFETCH_ROWS 2

static void cols_single_packed(const float *x, const unsigned char *w, float *y,
                               int64_t nblocks, int64_t j0, int64_t j1) {
  const int64_t row_bytes = nblocks * BLOCK_BYTES;
  _Alignas(64) float xbuf[X_PERMUTED ? CHUNK_BLOCKS * GK_QBLOCK : 1];
  _Alignas(64) float ds[CHUNK_BLOCKS], ms[CHUNK_BLOCKS];
  for (int64_t j = j0; j < j1; j++)
    y[j] = 0.0f;
  for (int64_t c = 0; c < nblocks; c += CHUNK_BLOCKS) {
    const int len = chunk_len(nblocks, c);
    const float *xl = x_lanes(x + c * GK_QBLOCK, len, xbuf);
    for (int64_t j = j0; j < j1; j++) {
      const unsigned char *row = w + j * row_bytes;
      /* Prefetches ride along the loops that read the row (one per line
       * read, no loop of their own); the last rows prefetch themselves. */
      const int64_t ahead = j + PREFETCH_ROWS < j1 ? PREFETCH_ROWS * row_bytes : 0;
      qp_scales(PACKED_D(row, nblocks) + 2 * c, len, ds, ahead);
      qp_scales(PACKED_M(row, nblocks) + 2 * c, len, ms, ahead);
      y[j] += chunk_packed(xl, PACKED_CODES(row, nblocks), ds, ms, nblocks, c, len, ahead);
    }
  }
}

/*
 * m > 1, one W row (y points at its column): each chunk of the row is
 * decoded once into wbuf (in t order), then every row of x takes its dot
 * product with it. `packed` says which layout the row is in; the decoded
 * chunk is the same either way.
 */
static void col_batched(const float *x, const unsigned char *row, float *y,
                        int64_t m, int64_t n, int64_t k, int64_t nblocks,
                        int packed) {
  _Alignas(64) float wbuf[CHUNK_BLOCKS * GK_QBLOCK];
  _Alignas(64) float ds[CHUNK_BLOCKS], ms[CHUNK_BLOCKS];
  for (int64_t i = 0; i < m; i++)
    y[i * n] = 0.0f;
  for (int64_t c = 0; c < nblocks; c += CHUNK_BLOCKS) {
    const int len = chunk_len(nblocks, c);
    if (packed) {
      qp_scales(PACKED_D(row, nblocks) + 2 * c, len, ds, 0);
      qp_scales(PACKED_M(row, nblocks) + 2 * c, len, ms, 0);
    }
    for (int b = 0; b < len; b++) {
      vf wv[NV];
      if (packed)
        qp_block(PACKED_CODES(row, nblocks), nblocks, c + b, vf_set1(ds[b]),
                 vf_set1(ms[b]), wv);
      else
        block_weights(row + (c + b) * BLOCK_BYTES, wv);
      t_from_lanes(wv);
      for (int v = 0; v < NV; v++)
        vf_store(wbuf + b * GK_QBLOCK + v * VL, wv[v]);
    }
    for (int64_t i = 0; i < m; i++)
      y[i * n] += chunk_decoded(x + i * k + c * GK_QBLOCK, wbuf, len);
  }
}

/*
 * Output columns j0 <= j < j1 for all m rows. Columns are independent and
 * write disjoint parts of y, which is how the pool splits a call; each
 * piece keeps its scratch on its own thread's stack.
 */
static void qmatmul_cols(const float *x, const unsigned char *w, float *y,
                         int64_t m, int64_t n, int64_t k, int64_t j0,
                         int64_t j1, int packed) {
  const int64_t nblocks = k / GK_QBLOCK;
  if (m == 1) {
    if (packed)
      cols_single_packed(x, w, y, nblocks, j0, j1);
    else
      cols_single(x, w, y, nblocks, j0, j1);
    return;
  }
  for (int64_t j = j0; j < j1; j++)
    col_batched(x, w + j * nblocks * BLOCK_BYTES, y + j, m, n, k, nblocks, packed);
}

/* The int8-x entry on the packed layout (qmatmul_q8x). */
#include "q8x.h"

GK_POOL_DEFINE(qmatmul_pool)

typedef struct call {
  const float *x;
  const unsigned char *w;
  float *y;
  int64_t m, n, k;
  int packed; /* 0 original, 1 packed, 2 packed with int8 x (qmatmul_q8x) */
  const q8x_chunk *qx; /* q8x: x quantized by the caller, or NULL */
} call;

static void call_cols(void *arg, int64_t j0, int64_t j1) {
  const call *c = arg;
  if (c->packed == 2)
    q8x_cols(c->x, c->w, c->y, c->m, c->n, c->k, c->qx, j0, j1);
  else
    qmatmul_cols(c->x, c->w, c->y, c->m, c->n, c->k, j0, j1, c->packed);
}

static void run(const float *x, const void *w, float *y, int64_t m, int64_t n,
                int64_t k, int packed) {
  if (m <= 0 || n <= 0 || k < 0)
    return;
  call c = {x, (const unsigned char *)w, y, m, n, k, packed, NULL};
  /* q8x: x is quantized once, here, rather than by every piece (a piece is
   * as small as 16 columns; quantizing 4096 x takes ~1.5 us). */
  q8x_chunk *qx = packed == 2 ? q8x_quant_all(x, m, k) : NULL;
  c.qx = qx;
  /* Pieces of at least ~64K multiply-adds: taking one costs an atomic
   * operation and, for m == 1, reordering a chunk of x (~0.2 us). */
  const int64_t per_col = m * (k < GK_QBLOCK ? GK_QBLOCK : k);
  gk_pool_run(&qmatmul_pool, call_cols, (void *)&c, n, per_col * n,
              (65536 + per_col - 1) / per_col);
  free(qx);
}

/*
 * The entry point (ABI in loader/gk.h, gk_qmatmul_fn). k must be a multiple
 * of 32; x's rows are k floats apart, and trailing k % 32 columns, if any,
 * are ignored (k < 32 gives zeros). Nothing is done when m, n or k is
 * negative or m or n is zero. The columns are split over the image's
 * threads (gk_pool.h); every column is computed by one thread with the
 * same operations, so y does not depend on the number of threads.
 */
QMATMUL_EXPORT void qmatmul(const float *x, const void *w, float *y, int64_t m,
                            int64_t n, int64_t k) {
  run(x, w, y, m, n, k, 0);
}

/*
 * The same product with W in the packed layout that qmatmul_repack makes
 * (docs/weights.md, "Packed layout"; same signature, gk_qmatmul_fn). y is
 * bit-identical to qmatmul's on the original W, on this image.
 */
QMATMUL_EXPORT void qmatmul_packed(const float *x, const void *w, float *y, int64_t m,
                                   int64_t n, int64_t k) {
  run(x, w, y, m, n, k, 1);
}

/*
 * The product with W in the packed layout and x rounded to int8 per block
 * of 32 columns, once per call (q8x.h has the exact definition; same
 * signature, gk_qmatmul_fn). Not qmatmul's y: x loses bits, W none. Every
 * level gives the same y, bit for bit.
 */
QMATMUL_EXPORT void qmatmul_q8x(const float *x, const void *w, float *y, int64_t m,
                                int64_t n, int64_t k) {
  run(x, w, y, m, n, k, 2);
}

/*
 * Rewrites W (n rows, k columns, the original layout of docs/weights.md)
 * into the packed layout, the same number of bytes, at `out`: out == w
 * repacks in place, any other overlap is not allowed. The layout depends
 * only on BITS, not on the level, so any image of the same BITS reads it.
 * Returns 0, or -1 (nothing written) when w or out is NULL, n or k is
 * negative, or, in place, the one-row buffer cannot be allocated. Trailing
 * k % 32 columns are ignored as qmatmul ignores them. Single-threaded,
 * reentrant: call it once per weight matrix, at load time.
 */
QMATMUL_EXPORT int qmatmul_repack(const void *w, void *out, int64_t n, int64_t k) {
  if (n < 0 || k < 0 || !w || !out)
    return -1;
  const int64_t nb = k / GK_QBLOCK, row_bytes = nb * BLOCK_BYTES;
  if (n == 0 || nb == 0)
    return 0;
  unsigned char *tmp = NULL;
  if (w == out && !(tmp = malloc((size_t)row_bytes)))
    return -1;
  for (int64_t j = 0; j < n; j++) {
    const unsigned char *src = (const unsigned char *)w + j * row_bytes;
    unsigned char *dst = (unsigned char *)out + j * row_bytes;
    if (tmp) {
      memcpy(tmp, src, (size_t)row_bytes);
      src = tmp;
    }
    qp_pack_row(src, dst, nb);
  }
  free(tmp);
  return 0;
}
