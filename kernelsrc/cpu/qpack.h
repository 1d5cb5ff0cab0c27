/*
 * qpack.h - the packed layout of qmatmul's weights (docs/weights.md,
 * "Packed layout"): the repack that produces it and the SIMD decode that
 * reads it. Included by qmatmul.c after its SIMD layer (vf, VL, NV,
 * vf_fma, block_decode), for one BITS.
 *
 * Why a second layout. With m == 1 each weight is used once, so a core's
 * work per block sets the speed, and in the original layout a block's two
 * binary16 scales cost as much as its codes: a broadcast, a conversion and
 * two shuffles to spread d and m over a vector. The packed layout keeps the
 * same bytes, rearranged:
 * - the scales of a row apart from its codes (all d, then all m, then the
 *   codes: one ascending stream), so a chunk
 *   of them is converted 16 at a time and each block then takes its d and m
 *   with broadcast loads, which use no shuffle unit;
 * - the codes of G = 16/BITS consecutive blocks interleaved in one 64-byte
 *   group of 16 little-endian words, so that one load brings them and
 *   shifting all words right by s*BITS puts code slot s in the low bits of
 *   every lane: 16 codes of one block per vector, with no widening shuffle
 *   (vpmovzxbd) and no per-lane variable shift (vpsrlvd).
 * Word l (0..15) of group g holds, in bits [s*BITS, (s+1)*BITS), the code
 * of block G*g + s/2, weight qp_slot_t(s, l). For BITS == 4 slot 2i holds
 * the even weights and 2i+1 the odd ones (the lane order the original
 * kernel uses on v3 and v4); for BITS 1 and 2 slot 2i holds weights 0..15
 * and 2i+1 weights 16..31. BITS 8 keeps its code bytes in block order (a
 * byte needs no unpacking beyond the widening load). Either way every level decodes a block
 * into exactly the lanes, in exactly the order, of its original-layout
 * path, so qmatmul_packed gives bit-identical y to qmatmul on the same
 * image. The nb % G blocks after the last full group keep their original
 * code bytes (4*BITS each).
 */
#ifndef GK_QPACK_H
#define GK_QPACK_H

#include <stdlib.h>
#include <string.h>

#define QP_G (16 / BITS)    /* blocks per group */
#define QP_GROUP_BYTES 64   /* 16 words: 4*BITS code bytes for each of G blocks */
#define QP_SLOTS (32 / BITS) /* codes per word: two per block */
/* Blocks per round of the m == 1 loop: whole groups and whole sets of
 * accumulators (USETS, qmatmul.c). */
#define QP_ROUND (QP_G > USETS ? QP_G : USETS)

/* The weight (0..31) that code slot s of word l stands for. */
static inline int qp_slot_t(int s, int l) {
  return BITS == 4 ? 2 * l + (s & 1) : 16 * (s & 1) + l;
}

/* ------------------------------------------------------------------------ */
/* Repack: one row of the original layout into the packed one.               */
/* ------------------------------------------------------------------------ */

static void qp_pack_row(const unsigned char *src, unsigned char *row, int64_t nb) {
  const int64_t ng = BITS == 8 ? 0 : nb / QP_G; /* BITS 8: codes in block order */
  unsigned char *ds = row, *ms = row + 2 * nb, *dst = row + 4 * nb;
  for (int64_t g = 0; g < ng; g++)
    for (int l = 0; l < 16; l++) {
      uint32_t word = 0;
      for (int s = 0; s < QP_SLOTS; s++) {
        const unsigned char *blk = src + (g * QP_G + s / 2) * BLOCK_BYTES;
        word |= (uint32_t)gk_q_code(blk + GK_QCODES_OFFSET, BITS, qp_slot_t(s, l))
                << (s * BITS);
      }
      unsigned char *o = dst + g * QP_GROUP_BYTES + 4 * l;
      o[0] = (unsigned char)word, o[1] = (unsigned char)(word >> 8);
      o[2] = (unsigned char)(word >> 16), o[3] = (unsigned char)(word >> 24);
    }
  for (int64_t b = ng * QP_G; b < nb; b++)
    memcpy(dst + ng * QP_GROUP_BYTES + (b - ng * QP_G) * 4 * BITS,
           src + b * BLOCK_BYTES + GK_QCODES_OFFSET, 4 * BITS);
  for (int64_t b = 0; b < nb; b++) {
    memcpy(ds + 2 * b, src + b * BLOCK_BYTES, 2);
    memcpy(ms + 2 * b, src + b * BLOCK_BYTES + 2, 2);
  }
}

/* ------------------------------------------------------------------------ */
/* Decode: block i (0..G-1) of a group, in the lanes of block_decode.       */
/* ------------------------------------------------------------------------ */

#if BITS == 8

/* A code is already a byte: the widening load of the original layout is the
 * cheapest unpacking, so the codes stay in block order (only the scales
 * move) and a "group" is two blocks' code bytes one after the other. */
typedef const unsigned char *qp_words;
static inline qp_words qp_load(const unsigned char *g) { return g; }
static inline void qp_decode(qp_words g, int i, vf d, vf m, vf w[NV]) {
  block_decode(g + 32 * i, d, m, w);
}

#elif VL == 16

typedef __m512i qp_words;
static inline qp_words qp_load(const unsigned char *g) {
  return _mm512_loadu_si512((const void *)g);
}

static inline void qp_decode(qp_words g, int i, vf d, vf m, vf w[NV]) {
  /* vpermps reads the low 4 bits of each index lane; the table repeats
   * with period 2^BITS, so the codes above slot s do not matter. */
  static const float lane_code[16] = {LANES8(LANE_CODE, 0), LANES8(LANE_CODE, 8)};
  const vf table = vf_fma(d, vf_load(lane_code), m);
  for (int h = 0; h < 2; h++)
    w[h] = _mm512_permutexvar_ps(_mm512_srli_epi32(g, BITS * (2 * i + h)), table);
}

#elif VL == 8

typedef struct qp_words {
  __m256i a, b; /* words 0..7 and 8..15 */
} qp_words;
static inline qp_words qp_load(const unsigned char *g) {
  qp_words r = {_mm256_loadu_si256((const __m256i *)g),
                _mm256_loadu_si256((const __m256i *)(g + 32))};
  return r;
}

static inline void qp_decode(qp_words g, int i, vf d, vf m, vf w[NV]) {
  /* The original's vectors: BITS 4 [even 0..14, odd 1..15, even 16..30,
   * odd 17..31] = words a then b, slot 2i then 2i+1; BITS 1 and 2
   * t 0..7, 8..15, 16..23, 24..31 = slot 2i then 2i+1, words a then b. */
  const __m256i src[4] = {g.a, BITS == 4 ? g.a : g.b, BITS == 4 ? g.b : g.a, g.b};
  const int slot[4] = {2 * i, BITS == 4 ? 2 * i + 1 : 2 * i,
                       BITS == 4 ? 2 * i : 2 * i + 1, 2 * i + 1};
#if BITS == 4
  const __m256i mask = _mm256_set1_epi32(NCODES - 1);
  for (int v = 0; v < NV; v++)
    w[v] = vf_fma(d, _mm256_cvtepi32_ps(_mm256_and_si256(
                         _mm256_srli_epi32(src[v], BITS * slot[v]), mask)),
                  m);
#else
  /* vpermps reads the low 3 bits; the table's period 2^BITS divides 8. */
  static const float lane_code[8] = {LANES8(LANE_CODE, 0)};
  const vf table = vf_fma(d, vf_load(lane_code), m);
  for (int v = 0; v < NV; v++)
    w[v] = _mm256_permutevar8x32_ps(table, _mm256_srli_epi32(src[v], BITS * slot[v]));
#endif
}

#elif VL == 4

typedef struct qp_words {
  __m128i c[4]; /* words 4c .. 4c+3 */
} qp_words;
static inline qp_words qp_load(const unsigned char *g) {
  qp_words r;
  for (int c = 0; c < 4; c++)
    r.c[c] = _mm_loadu_si128((const __m128i *)(g + 16 * c));
  return r;
}

static inline void qp_decode(qp_words g, int i, vf d, vf m, vf w[NV]) {
  const __m128i mask = _mm_set1_epi32(NCODES - 1);
  for (int c = 0; c < 4; c++) {
#if BITS == 4
    /* Even and odd weights of words 4c..4c+3, interleaved back into t
     * order (the original's SSE2 order): t = 8c .. 8c+7. */
    const __m128i e = _mm_and_si128(_mm_srli_epi32(g.c[c], 8 * i), mask);
    const __m128i o = _mm_and_si128(_mm_srli_epi32(g.c[c], 8 * i + 4), mask);
    w[2 * c] = vf_fma(d, _mm_cvtepi32_ps(_mm_unpacklo_epi32(e, o)), m);
    w[2 * c + 1] = vf_fma(d, _mm_cvtepi32_ps(_mm_unpackhi_epi32(e, o)), m);
#else
    for (int h = 0; h < 2; h++)
      w[4 * h + c] = vf_fma(d, _mm_cvtepi32_ps(_mm_and_si128(
                                   _mm_srli_epi32(g.c[c], BITS * (2 * i + h)), mask)),
                            m);
#endif
  }
}

#else

typedef const unsigned char *qp_words;
static inline qp_words qp_load(const unsigned char *g) { return g; }

static inline void qp_decode(qp_words g, int i, vf d, vf m, vf w[NV]) {
  for (int t = 0; t < GK_QBLOCK; t++) {
    const int l = BITS == 4 ? t / 2 : t % 16;
    const int s = 2 * i + (BITS == 4 ? t % 2 : t / 16);
    const unsigned q = (unsigned)(gk_q_le32(g + 4 * l) >> (s * BITS)) & GK_QMASK(BITS);
    w[t] = vf_fma(d, (float)q, m);
  }
}

#endif

/*
 * The binary16 scales at `h` (len of them, consecutive) as floats. F16C
 * converts 16 (masked for the last few) or 8 at a time, exactly like
 * gk_q_f16_to_f32, which does the rest on v3 and all of them below; never
 * reads past h[len - 1]. The same bytes `ahead` further on are prefetched.
 */
static inline void qp_scales(const unsigned char *h, int len, float *out, int64_t ahead) {
  int b = 0;
  for (int o = 0; o < 2 * len; o += 64) /* `ahead` bytes on: a later row's */
    __builtin_prefetch(h + o + ahead, 0, 3);
#if VL == 16
  for (; b + 16 <= len; b += 16)
    _mm512_storeu_ps(out + b, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + 2 * b))));
  if (b < len) {
    /* A masked load reads only the halves that exist (AVX512BW + VL, both
     * in v4); the store is whole (out has room for CHUNK_BLOCKS, a multiple
     * of 16): a masked store would not forward to the broadcasts reading
     * it, which then wait for it to retire (2x slower at k = 256). */
    const __mmask16 k = (__mmask16)((1u << (len - b)) - 1u);
    _mm512_storeu_ps(out + b, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, h + 2 * b)));
    return;
  }
#elif VL == 8
  for (; b + 8 <= len; b += 8)
    _mm256_storeu_ps(out + b, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 2 * b))));
#endif
  for (; b < len; b++)
    out[b] = gk_q_f16_to_f32(gk_q_le16(h + 2 * b));
}

/*
 * Block b (0 <= b < nb) of a packed row whose codes start at `codes`, with
 * scales d and m: from its group, or, past the last full group, from its
 * original code bytes.
 */
static inline void qp_block(const unsigned char *codes, int64_t nb, int64_t b, vf d,
                            vf m, vf w[NV]) {
  const int64_t full = nb / QP_G * QP_G;
  if (b < full)
    qp_decode(qp_load(codes + b / QP_G * QP_GROUP_BYTES), (int)(b % QP_G), d, m, w);
  else
    block_decode(codes + full / QP_G * QP_GROUP_BYTES + (b - full) * 4 * BITS, d, m, w);
}

#endif /* GK_QPACK_H */
