/*
 * q8x.h - qmatmul_q8x: y = x * W^T with W in the packed layout (qpack.h,
 * docs/weights.md "Packed layout") and x quantized to int8 once per call,
 * per 32-column block, so a block's 32 products are integer (as ggml does
 * for q4_0 and q4_1 against its q8 activations). Included by qmatmul.c
 * after qpack.h and its m == 1 code (chunk_len, PREFETCH_ROWS), for one
 * BITS.
 *
 * Why. With m == 1 every weight is used once and decoding the codes to
 * floats costs more core time per block than memory takes to deliver them
 * (BITS 4: ~0.8 ns per block and core against ~0.6 at the read bandwidth of
 * two cores). Integer products skip that decode: on AVX-512 one vpdpbusd
 * multiplies 64 codes by 64 int8 x and adds them in fours, exactly.
 *
 * Arithmetic (exact definition; the scalar reference of
 * tests/kernels/test_qmatmul.c repeats it, and every level gives the same y bit
 * for bit). For each row of x and each block b of 32 columns:
 *   a_b   = the largest |x_t| of the block (finite x only: anything else
 *           gives unspecified values);
 *   dx_b  = a_b / 127 (one float division);
 *   inv   = a_b > 0 ? 127 / a_b : 0;
 *   xq_t  = min(max(x_t * inv, -127), 127) rounded to the nearest
 *           integer, ties to even (the default rounding mode);
 *   s_b   = sum_t xq_t (integer), sb_b = dx_b * s_b (one float multiply);
 *   i_b   = sum_t q_t * xq_t (integer, q the codes of W's block: exact);
 * then per chunk of CHUNK_BLOCKS blocks, 16 float lanes start at 0 and
 * block b (in order) updates lane b % 16, every operation rounded to float
 * (no fused multiply-add: the levels without FMA give the same bits):
 *   lane = lane + (float)i_b * (d_b * dx_b);  lane = lane + m_b * sb_b;
 * the lanes are added l + 8, l + 4, l + 2, l + 1 (the tree of vf_hsum on
 * 16 lanes), and the chunk sums are added to y in order from 0. So
 * y ~= sum_b (d_b * dx_b * i_b + m_b * dx_b * s_b): x is rounded to ~7
 * bits per block, W is exact. The result depends neither on the level nor
 * on the threads.
 *
 * Speed (AVX-512, BITS 4): a 64-byte group holds the codes of 4 blocks,
 * byte 4l + i = block i's code byte l (codes t = 2l, 2l+1). One in-lane
 * byte shuffle makes dword i of each 128-bit lane block i's, two masks
 * split the nibbles, two vpdpbusd against x laid out to match (q8x_pos)
 * give per-lane partial sums, and 4 groups' partials fold into the 16
 * block sums of a step with 6 lane shuffles. BITS 8 with VNNI needs no
 * layout: a block's code bytes are the unsigned operand of vpdpbusd as
 * they lie (q8x_chunk8_vnni). AVX2 (x86-64-v3, BITS 4) does
 * the same on ymm with vpmaddubsw. Elsewhere (other levels, other BITS,
 * the tail of a row) the integer sums are computed block by block in plain
 * C: the same integers.
 */
#ifndef GK_Q8X_H
#define GK_Q8X_H

/* Q8X_FAST: AVX-512 (vpdpbusd or vpmaddubsw); Q8X_AVX2: vpmaddubsw on
 * ymm. Both read x in the lane layout of q8x_pos (Q8X_LAYOUT). */
#if VL == 16 && BITS == 4
#define Q8X_FAST 1
#else
#define Q8X_FAST 0
#endif
#if VL == 8 && BITS == 4
#define Q8X_AVX2 1
#else
#define Q8X_AVX2 0
#endif
/* Q8X_FAST8: BITS 8 on AVX-512 with vpdpbusd (x in t order). */
#if VL == 16 && BITS == 8
#define Q8X_FAST8 1
#else
#define Q8X_FAST8 0
#endif
#define Q8X_LAYOUT (Q8X_FAST || Q8X_AVX2)

/* x of one chunk, quantized: xq in q8x_pos order, and per block dx, sb. */
typedef struct q8x_chunk {
  _Alignas(64) int8_t xq[CHUNK_BLOCKS * GK_QBLOCK];
  _Alignas(64) float dx[CHUNK_BLOCKS];
  _Alignas(64) float sb[CHUNK_BLOCKS];
} q8x_chunk;

/* Where xq of block b (within the chunk), column t goes. Fast path: per 4
 * blocks, 64 bytes of even t then 64 of odd t; byte 16c + 4i + j of either
 * is block i, t/2 = 4c + j (the lanes of the shuffled codes). */
static inline int q8x_pos(int b, int t) {
#if Q8X_LAYOUT
  const int l = t >> 1;
  return (b >> 2) * 128 + (t & 1) * 64 + (l >> 2) * 16 + (b & 3) * 4 + (l & 3);
#else
  return b * GK_QBLOCK + t;
#endif
}

/* The clamp and rounding of the definition in plain C: max and min as
 * vmaxps / vminps do them (NaN -> -127), then adding and removing 1.5 * 2^23
 * rounds |v| <= 127 to the nearest integer, ties to even, with no libm
 * call (the images link no libm: gk_cpu.h). */
static inline int q8x_round(float v) {
  v = v > -127.0f ? v : -127.0f;
  v = v < 127.0f ? v : 127.0f;
  return (int)((v + 12582912.0f) - 12582912.0f);
}

/* Block b of the chunk from its 32 floats at xb (the definition above). */
static void q8x_quant_block(const float *xb, q8x_chunk *q, int b) {
#if VL == 16
  const __m512 lo = _mm512_loadu_ps(xb), hi = _mm512_loadu_ps(xb + 16);
  const __m512 a = _mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi));
  const float amax = _mm512_reduce_max_ps(a);
#else
  float amax = 0.0f;
  for (int t = 0; t < GK_QBLOCK; t++) {
    const float v = __builtin_fabsf(xb[t]);
    amax = amax > v ? amax : v;
  }
#endif
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  q->dx[b] = amax / 127.0f;
#if VL == 16
  const __m512 vi = _mm512_set1_ps(inv), l127 = _mm512_set1_ps(-127.0f);
  const __m512 h127 = _mm512_set1_ps(127.0f);
  /* max then min with the constant second: NaN -> -127, as q8x_clamp. */
  const __m512i i0 = _mm512_cvtps_epi32(
      _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(lo, vi), l127), h127));
  const __m512i i1 = _mm512_cvtps_epi32(
      _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(hi, vi), l127), h127));
  q->sb[b] = q->dx[b] * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
  _Alignas(16) int8_t v[GK_QBLOCK];
  _mm_store_si128((__m128i *)v, _mm512_cvtepi32_epi8(i0));
  _mm_store_si128((__m128i *)(v + 16), _mm512_cvtepi32_epi8(i1));
#if Q8X_FAST
  /* Even t to one 16-byte row, odd t to the other, then 4 bytes per lane. */
  static const int8_t deint[16] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
  const __m128i sh = _mm_load_si128((const __m128i *)deint);
  const __m128i a0 = _mm_shuffle_epi8(_mm_load_si128((const __m128i *)v), sh);
  const __m128i a1 = _mm_shuffle_epi8(_mm_load_si128((const __m128i *)(v + 16)), sh);
  const __m128i ev = _mm_unpacklo_epi64(a0, a1), od = _mm_unpackhi_epi64(a0, a1);
  int8_t *base = q->xq + (b >> 2) * 128 + (b & 3) * 4;
  _Alignas(16) int32_t e[4], o[4];
  _mm_store_si128((__m128i *)e, ev);
  _mm_store_si128((__m128i *)o, od);
  for (int c = 0; c < 4; c++) {
    memcpy(base + 16 * c, &e[c], 4);
    memcpy(base + 64 + 16 * c, &o[c], 4);
  }
#else
  for (int t = 0; t < GK_QBLOCK; t++)
    q->xq[q8x_pos(b, t)] = v[t];
#endif
#else
  int s = 0;
  for (int t = 0; t < GK_QBLOCK; t++) {
    const int v = q8x_round(xb[t] * inv);
    q->xq[q8x_pos(b, t)] = (int8_t)v;
    s += v;
  }
  q->sb[b] = q->dx[b] * (float)s;
#endif
}

/* Blocks c .. c+len-1 of a row of x (len <= CHUNK_BLOCKS). */
static void q8x_quant_chunk(const float *xc, int len, q8x_chunk *q) {
  for (int b = 0; b < len; b++)
    q8x_quant_block(xc + b * GK_QBLOCK, q, b);
}

/* The 32 codes of block b of a packed row whose codes start at `codes`
 * (docs/weights.md, "Packed layout"), in t order. */
static inline void q8x_codes(const unsigned char *codes, int64_t nb, int64_t b,
                             uint8_t out[GK_QBLOCK]) {
  const int64_t full = BITS == 8 ? nb : nb / QP_G * QP_G;
  if (BITS == 8) {
    memcpy(out, codes + b * GK_QBLOCK, GK_QBLOCK);
  } else if (b >= full) {
    const unsigned char *blk = codes + full / QP_G * QP_GROUP_BYTES + (b - full) * 4 * BITS;
    for (int t = 0; t < GK_QBLOCK; t++)
      out[t] = (uint8_t)gk_q_code(blk, BITS, t);
  } else {
    const unsigned char *gp = codes + b / QP_G * QP_GROUP_BYTES;
    const int s0 = 2 * (int)(b % QP_G) * BITS; /* slot 2i; 2i+1 is BITS on */
    for (int l = 0; l < 16; l++) {
      const uint32_t w = gk_q_le32(gp + 4 * l);
      const uint8_t lo = (uint8_t)((w >> s0) & GK_QMASK(BITS));
      const uint8_t hi = (uint8_t)((w >> (s0 + BITS)) & GK_QMASK(BITS));
      if (BITS == 4)
        out[2 * l] = lo, out[2 * l + 1] = hi;
      else
        out[l] = lo, out[16 + l] = hi;
    }
  }
}

/* i_b of block c + b (b within the chunk), in plain C. */
static inline int32_t q8x_isum(const q8x_chunk *q, const unsigned char *codes, int64_t nb,
                               int64_t c, int b) {
  uint8_t code[GK_QBLOCK];
  q8x_codes(codes, nb, c + b, code);
  int32_t s = 0;
  for (int t = 0; t < GK_QBLOCK; t++)
    s += code[t] * q->xq[q8x_pos(b, t)];
  return s;
}

/* The 16 lanes added in the fixed tree. */
static inline float q8x_tree(float *lane) {
  for (int h = 8; h >= 1; h /= 2)
    for (int l = 0; l < h; l++)
      lane[l] += lane[l + h];
  return lane[0];
}

/* Blocks from..len-1 of the chunk, one by one, into lanes (plain C). */
static inline void q8x_blocks_c(const q8x_chunk *q, const unsigned char *row, int64_t nb,
                                int64_t c, int from, int len, float *lane) {
  for (int b = from; b < len; b++) {
    const float d = gk_q_f16_to_f32(gk_q_le16(row + 2 * (c + b)));
    const float m = gk_q_f16_to_f32(gk_q_le16(row + 2 * nb + 2 * (c + b)));
    const int32_t i = q8x_isum(q, row + 4 * nb, nb, c, b);
    float *l = &lane[b % 16];
    *l = *l + (float)i * (d * q->dx[b]);
    *l = *l + m * q->sb[b];
  }
}

#if Q8X_FAST || Q8X_FAST8

/* vpdpbusd when the CPU has it, unless GK_QMATMUL_NO_VNNI is set to
 * something other than 0 (tests run the other path that way). */
static int q8x_has_vnni(void) {
  static _Atomic int has = -1; /* -1: not asked yet */
  int h = atomic_load_explicit(&has, memory_order_relaxed);
  if (h < 0) {
    const char *off = getenv("GK_QMATMUL_NO_VNNI");
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx512vnni") && !(off && *off && strcmp(off, "0") != 0);
    atomic_store_explicit(&has, h, memory_order_relaxed);
  }
  return h;
}

/* The scales of the chunk's first `steps` blocks (a multiple of 16): dd =
 * d * dx and mf = m, read before the codes, so a row stays one ascending
 * stream (its three parts read step by step defeat the hardware
 * prefetcher); a line of each prefetched `ahead` on, a later row's. */
static inline void q8x_scales16(const q8x_chunk *q, const unsigned char *row, int64_t nb,
                                int64_t c, int steps, int64_t ahead, float *dd, float *mf) {
  for (int b = 0; b < steps; b += 16) {
    const unsigned char *dp = row + 2 * (c + b), *mp = dp + 2 * nb;
    if (b % 32 == 0)
      __builtin_prefetch(dp + ahead, 0, 3), __builtin_prefetch(mp + ahead, 0, 3);
    _mm512_store_ps(dd + b, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dp)),
                                          _mm512_load_ps(q->dx + b)));
    _mm512_store_ps(mf + b, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)mp)));
  }
}

/* 16 blocks' integer sums (block order) into the lanes, as the definition
 * adds them: lane + i * (d * dx), then lane + m * sb. */
static inline __m512 q8x_add16(__m512 lane, __m512i isum, const float *dd, const float *mf,
                               const float *sb) {
  lane = _mm512_add_ps(lane, _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_load_ps(dd)));
  return _mm512_add_ps(lane, _mm512_mul_ps(_mm512_load_ps(mf), _mm512_load_ps(sb)));
}

/* The chunk's blocks from b on in plain C, then the lanes' tree. */
static inline float q8x_end16(__m512 lane, const q8x_chunk *q, const unsigned char *row,
                              int64_t nb, int64_t c, int b, int len) {
  _Alignas(64) float l16[16];
  _mm512_store_ps(l16, lane);
  q8x_blocks_c(q, row, nb, c, b, len, l16);
  return q8x_tree(l16);
}

#endif

#if Q8X_FAST

/* 4 groups' per-lane partial sums (dword i of 128-bit lane c of a[g] =
 * block 4g + i, part c) -> the 16 block sums in block order. */
static inline __m512i q8x_fold(const __m512i a[4]) {
  const __m512i ab = _mm512_add_epi32(_mm512_shuffle_i32x4(a[0], a[1], 0x88),
                                      _mm512_shuffle_i32x4(a[0], a[1], 0xdd));
  const __m512i cd = _mm512_add_epi32(_mm512_shuffle_i32x4(a[2], a[3], 0x88),
                                      _mm512_shuffle_i32x4(a[2], a[3], 0xdd));
  return _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88),
                          _mm512_shuffle_i32x4(ab, cd, 0xdd));
}

/* The fast chunk, once with vpdpbusd (AVX512-VNNI, chosen at run time) and
 * once with vpmaddubsw + vpmaddwd (plain AVX-512BW): the same integers
 * (a code times an int8 is at most 15 * 127, so no pair saturates). */
#define Q8X_DP_VNNI(acc, u, s) _mm512_dpbusd_epi32(acc, u, s)
#define Q8X_DP_BW(acc, u, s)                                                  \
  _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s),         \
                                          _mm512_set1_epi16(1)))

#define Q8X_DEFINE_CHUNK(name, attr, DP)                                        \
  attr static float name(const q8x_chunk *q, const unsigned char *row,         \
                         int64_t nb, int64_t c, int len, int64_t ahead) {      \
    static const int8_t tr[16] = {0, 4, 8, 12, 1, 5, 9, 13,                    \
                                  2, 6, 10, 14, 3, 7, 11, 15};                 \
    const __m512i shuf = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)tr)); \
    const __m512i low = _mm512_set1_epi8(0x0f);                                \
    const unsigned char *codes = row + 4 * nb + c / QP_G * QP_GROUP_BYTES;     \
    const int64_t in_groups = nb / QP_G * QP_G - c;                             \
    const int grouped = (int)(in_groups < len ? in_groups : len);              \
    _Alignas(64) float dd[CHUNK_BLOCKS], mf[CHUNK_BLOCKS];                     \
    const int steps = grouped / 16 * 16;                                       \
    q8x_scales16(q, row, nb, c, steps, ahead, dd, mf);                         \
    __m512 lane = _mm512_setzero_ps();                                         \
    int b = 0;                                                                  \
    for (; b < steps; b += 16) {                                               \
      __m512i a[4];                                                            \
      for (int g = 0; g < 4; g++) {                                            \
        const unsigned char *gp = codes + (b / 4 + g) * QP_GROUP_BYTES;       \
        __builtin_prefetch(gp + ahead, 0, 3);                                  \
        const __m512i w = _mm512_shuffle_epi8(                                 \
            _mm512_loadu_si512((const void *)gp), shuf);                       \
        const int8_t *xg = q->xq + (b + 4 * g) * GK_QBLOCK;                    \
        __m512i s = DP(_mm512_setzero_si512(), _mm512_and_si512(w, low),       \
                       _mm512_load_si512((const void *)xg));                   \
        a[g] = DP(s, _mm512_and_si512(_mm512_srli_epi16(w, 4), low),           \
                  _mm512_load_si512((const void *)(xg + 64)));                 \
      }                                                                        \
      lane = q8x_add16(lane, q8x_fold(a), dd + b, mf + b, q->sb + b);          \
    }                                                                          \
    return q8x_end16(lane, q, row, nb, c, b, len);                             \
  }

Q8X_DEFINE_CHUNK(q8x_chunk_vnni, __attribute__((target("avx512vnni"))), Q8X_DP_VNNI)
Q8X_DEFINE_CHUNK(q8x_chunk_bw, , Q8X_DP_BW)

#endif

#if Q8X_FAST8

/* 8 vectors of partial sums (a[k]: block 2k in 128-bit lanes 0-1, block
 * 2k+1 in lanes 2-3, four dwords each) -> the 16 block sums in block
 * order: the halves of each block added (s[j] lane L = block 4j + L), the
 * four dwords of each lane added across s[0..3] (dword 4L + j = block
 * 4j + L), then one permute. Integer adds: any order gives the same sums. */
static inline __m512i q8x_fold8(const __m512i a[8]) {
  static const int32_t order[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  __m512i s[4];
  for (int j = 0; j < 4; j++)
    s[j] = _mm512_add_epi32(_mm512_shuffle_i32x4(a[2 * j], a[2 * j + 1], 0x88),
                            _mm512_shuffle_i32x4(a[2 * j], a[2 * j + 1], 0xdd));
  const __m512i u01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0], s[1]),
                                       _mm512_unpackhi_epi32(s[0], s[1]));
  const __m512i u23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2], s[3]),
                                       _mm512_unpackhi_epi32(s[2], s[3]));
  const __m512i r = _mm512_add_epi32(_mm512_unpacklo_epi64(u01, u23),
                                     _mm512_unpackhi_epi64(u01, u23));
  return _mm512_permutexvar_epi32(_mm512_loadu_si512((const void *)order), r);
}

/*
 * The BITS 8 chunk with vpdpbusd: a block's 32 code bytes are unsigned and
 * its x int8, so one vpdpbusd multiplies two blocks as they lie (x in t
 * order), exactly. Without VNNI the integers are computed in plain C:
 * vpmaddubsw would saturate (255 * 127 * 2 > 32767). Every float operation
 * is the definition's, as in the BITS 4 chunk.
 */
__attribute__((target("avx512vnni"))) static float
q8x_chunk8_vnni(const q8x_chunk *q, const unsigned char *row, int64_t nb, int64_t c, int len,
                int64_t ahead) {
  const unsigned char *codes = row + 4 * nb + c * GK_QBLOCK;
  _Alignas(64) float dd[CHUNK_BLOCKS], mf[CHUNK_BLOCKS];
  const int steps = len / 16 * 16;
  q8x_scales16(q, row, nb, c, steps, ahead, dd, mf);
  __m512 lane = _mm512_setzero_ps();
  int b = 0;
  for (; b < steps; b += 16) {
    __m512i a[8];
    for (int k = 0; k < 8; k++) {
      const unsigned char *gp = codes + (b + 2 * k) * GK_QBLOCK;
      __builtin_prefetch(gp + ahead, 0, 3);
      a[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512((const void *)gp),
                                 _mm512_load_si512((const void *)(q->xq + (b + 2 * k) * GK_QBLOCK)));
    }
    lane = q8x_add16(lane, q8x_fold8(a), dd + b, mf + b, q->sb + b);
  }
  return q8x_end16(lane, q, row, nb, c, b, len);
}

#endif

#if Q8X_AVX2

/*
 * The same chunk on AVX2 (x86-64-v3): a group is two ymm, each shuffled as
 * on AVX-512 (dword i of a 128-bit lane = block i); vpmaddubsw gives int16
 * pair sums (at most 2 * 15 * 127), and the four of a group (low and high
 * nibbles of both halves: the same blocks) still fit int16 (15240), so one
 * vpmaddwd per group makes the int32 partials. Lanes 0..7 and 8..15 of the
 * definition are two ymm; every float operation is the definition's.
 */
static float q8x_chunk_avx2(const q8x_chunk *q, const unsigned char *row, int64_t nb,
                            int64_t c, int len, int64_t ahead) {
  static const int8_t tr[32] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  const __m256i shuf = _mm256_loadu_si256((const __m256i *)tr);
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const unsigned char *codes = row + 4 * nb + c / QP_G * QP_GROUP_BYTES;
  const int64_t in_groups = nb / QP_G * QP_G - c;
  const int grouped = (int)(in_groups < len ? in_groups : len);
  _Alignas(64) float dd[CHUNK_BLOCKS], mf[CHUNK_BLOCKS];
  const int steps = grouped / 16 * 16;
  for (int b = 0; b < steps; b += 8) {
    const unsigned char *dp = row + 2 * (c + b), *mp = dp + 2 * nb;
    if (b % 32 == 0)
      __builtin_prefetch(dp + ahead, 0, 3), __builtin_prefetch(mp + ahead, 0, 3);
    _mm256_store_ps(dd + b, _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dp)),
                                          _mm256_load_ps(q->dx + b)));
    _mm256_store_ps(mf + b, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)mp)));
  }
  __m256 l0 = _mm256_setzero_ps(), l1 = _mm256_setzero_ps();
  int b = 0;
  for (; b < steps; b += 16) {
    __m256i a[4];
    for (int g = 0; g < 4; g++) {
      const unsigned char *gp = codes + (b / 4 + g) * QP_GROUP_BYTES;
      __builtin_prefetch(gp + ahead, 0, 3);
      const __m256i w0 = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)gp), shuf);
      const __m256i w1 =
          _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(gp + 32)), shuf);
      const __m256i *xg = (const __m256i *)(q->xq + (b + 4 * g) * GK_QBLOCK);
      __m256i p = _mm256_maddubs_epi16(_mm256_and_si256(w0, low), _mm256_load_si256(xg));
      p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(w1, low),
                                                   _mm256_load_si256(xg + 1)));
      p = _mm256_add_epi16(p, _mm256_maddubs_epi16(
                                  _mm256_and_si256(_mm256_srli_epi16(w0, 4), low),
                                  _mm256_load_si256(xg + 2)));
      p = _mm256_add_epi16(p, _mm256_maddubs_epi16(
                                  _mm256_and_si256(_mm256_srli_epi16(w1, 4), low),
                                  _mm256_load_si256(xg + 3)));
      a[g] = _mm256_madd_epi16(p, ones);
    }
    /* [group g lane 0 + lane 1 | group g+1 ...]: blocks in order. */
    const __m256i r0 = _mm256_add_epi32(_mm256_permute2x128_si256(a[0], a[1], 0x20),
                                        _mm256_permute2x128_si256(a[0], a[1], 0x31));
    const __m256i r1 = _mm256_add_epi32(_mm256_permute2x128_si256(a[2], a[3], 0x20),
                                        _mm256_permute2x128_si256(a[2], a[3], 0x31));
    l0 = _mm256_add_ps(l0, _mm256_mul_ps(_mm256_cvtepi32_ps(r0), _mm256_load_ps(dd + b)));
    l1 = _mm256_add_ps(l1, _mm256_mul_ps(_mm256_cvtepi32_ps(r1), _mm256_load_ps(dd + b + 8)));
    l0 = _mm256_add_ps(l0, _mm256_mul_ps(_mm256_load_ps(mf + b), _mm256_load_ps(q->sb + b)));
    l1 = _mm256_add_ps(l1, _mm256_mul_ps(_mm256_load_ps(mf + b + 8),
                                         _mm256_load_ps(q->sb + b + 8)));
  }
  _Alignas(32) float l16[16];
  _mm256_store_ps(l16, l0);
  _mm256_store_ps(l16 + 8, l1);
  q8x_blocks_c(q, row, nb, c, b, len, l16);
  return q8x_tree(l16);
}

#endif

/* One chunk of one packed W row against one quantized chunk of x. */
static inline float q8x_chunk_dot(const q8x_chunk *q, const unsigned char *row, int64_t nb,
                                  int64_t c, int len, int64_t ahead, int vnni) {
#if Q8X_FAST
  return vnni ? q8x_chunk_vnni(q, row, nb, c, len, ahead)
              : q8x_chunk_bw(q, row, nb, c, len, ahead);
#elif Q8X_FAST8
  if (vnni) return q8x_chunk8_vnni(q, row, nb, c, len, ahead);
  float lane[16] = {0};
  q8x_blocks_c(q, row, nb, c, 0, len, lane);
  return q8x_tree(lane);
#elif Q8X_AVX2
  (void)vnni;
  return q8x_chunk_avx2(q, row, nb, c, len, ahead);
#else
  (void)ahead, (void)vnni;
  float lane[16] = {0};
  q8x_blocks_c(q, row, nb, c, 0, len, lane);
  return q8x_tree(lane);
#endif
}

/* Every row of x quantized (row i's chunks at i * nchunks), on the heap;
 * NULL when that cannot be allocated (q8x_cols then quantizes per chunk). */
static q8x_chunk *q8x_quant_all(const float *x, int64_t m, int64_t k) {
  const int64_t nb = k / GK_QBLOCK, nchunks = (nb + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS;
  if (nchunks == 0 || (uint64_t)m > SIZE_MAX / sizeof(q8x_chunk) / (uint64_t)nchunks)
    return NULL;
  q8x_chunk *qx = aligned_alloc(_Alignof(q8x_chunk), (size_t)(m * nchunks) * sizeof(q8x_chunk));
  for (int64_t i = 0; qx && i < m; i++)
    for (int64_t ch = 0; ch < nchunks; ch++)
      q8x_quant_chunk(x + i * k + ch * CHUNK_BLOCKS * GK_QBLOCK,
                      chunk_len(nb, ch * CHUNK_BLOCKS), qx + i * nchunks + ch);
  return qx;
}

/*
 * qmatmul_q8x, columns j0 <= j < j1: chunk by chunk, each row of x against
 * every W row's chunk. x comes quantized (qx, q8x_quant_all) or, when the
 * caller could not allocate that, is quantized here per chunk.
 */
static void q8x_cols(const float *x, const unsigned char *w, float *y, int64_t m,
                     int64_t n, int64_t k, const q8x_chunk *qx, int64_t j0, int64_t j1) {
  const int64_t nb = k / GK_QBLOCK, row_bytes = nb * BLOCK_BYTES;
  const int64_t nchunks = (nb + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS;
#if Q8X_FAST || Q8X_FAST8
  const int vnni = q8x_has_vnni();
#else
  const int vnni = 0;
#endif
  q8x_chunk own;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = j0; j < j1; j++)
      y[i * n + j] = 0.0f;
  for (int64_t c = 0; c < nb; c += CHUNK_BLOCKS) {
    const int len = chunk_len(nb, c);
    if (qx) {
      /* A W row's chunk (2.5 KB for BITS 4) stays in L1 for every row of x. */
      for (int64_t j = j0; j < j1; j++) {
        const int64_t ahead = j + PREFETCH_ROWS < j1 ? PREFETCH_ROWS * row_bytes : 0;
        for (int64_t i = 0; i < m; i++)
          y[i * n + j] += q8x_chunk_dot(qx + i * nchunks + c / CHUNK_BLOCKS,
                                        w + j * row_bytes, nb, c, len, ahead, vnni);
      }
      continue;
    }
    for (int64_t i = 0; i < m; i++) {
      q8x_quant_chunk(x + i * k + c * GK_QBLOCK, len, &own);
      for (int64_t j = j0; j < j1; j++) {
        const int64_t ahead = j + PREFETCH_ROWS < j1 ? PREFETCH_ROWS * row_bytes : 0;
        y[i * n + j] += q8x_chunk_dot(&own, w + j * row_bytes, nb, c, len, ahead, vnni);
      }
    }
  }
}

#endif /* GK_Q8X_H */
