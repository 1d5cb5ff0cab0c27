/*
 * q8x.cuh - qmatmul_q8x on GPUs: y = x * W^T with x rounded to int8 per
 * block of 32 columns and integer block products (docs/weights.md, "int8
 * x"), from W in the ORIGINAL block format (GPUs need no repack). The
 * arithmetic is the CPU images' to the bit, operation by operation, so
 * every CUDA image, the CPU images and tests/common's qref_q8x give the
 * same y:
 *   per row of x and block b: a = max |x_t|, dx = a / 127,
 *     inv = a > 0 ? 127 / a : 0, xq_t = rint(clamp(x_t * inv, -127, 127)),
 *     sb = dx * (float)sum xq_t;
 *   per row of W, chunk of 128 blocks: 16 float lanes, block b into lane
 *     b % 16 in block order: lane = (lane + (float)i_b * (d * dx)) + m * sb,
 *     with i_b = sum q_t * xq_t in integers and every operation rounded (no
 *     fma); the lanes folded lane[l] += lane[l + h], h = 8, 4, 2, 1; the
 *     chunk sums added to y in chunk order from 0.
 *
 * This file: the rounding, and the dp4a tile, which takes m <= Q8X_XROWS
 * (and every m on sm_75 and HIP); on sm_80 and newer q8x_batch.cuh
 * multiplies more rows of x on int8 mma.sync, and has the entry's walk
 * over the grid. Launch: its own row, qmatmul's signature and block, grid
 * (ceil(m / 16), ceil(n / Q8X_COLS)) or smaller.
 *
 * Here a block of QM_THREADS computes Q8X_COLS rows of W against
 * Q8X_XROWS rows of x (one when m == 1). Chunk by chunk, the block first
 * rounds its rows of x into shared memory (each thread one block of x at a
 * time, with no shuffle and no conversion per element:
 * gk_q8x_round_block), then each half
 * group (16 lanes: the 16 float lanes of the definition) takes 4 rows of W,
 * lane l its blocks l, l + 16, ... of the chunk, each block's x codes read
 * once for the 4 rows; the fold is 4 xor shuffles inside the half. x is
 * rounded once per block of the grid, not once per call: that reads x
 * (m * k floats) n / Q8X_COLS times from L2, against the n * k codes of W.
 *
 * Integer products: a code word holds 32 / Bits codes; (word >> Bits*j) &
 * (mask in every byte) puts codes j, j + P, j + 2P, j + 3P (P = 8 / Bits)
 * in the 4 bytes of one dp4a operand, and the rounded x is stored in
 * shared memory in that order (gk_q8x_pos), so one dp4a (unsigned codes,
 * signed x) takes 4 products with no unpacking beyond a shift and a mask.
 */
#ifndef GK_Q8X_CUH
#define GK_Q8X_CUH

#include "qmatmul.cuh"

#define Q8X_CHUNK 128 /* blocks: docs/weights.md's chunk */
#define Q8X_MAGIC 0x4b400000 /* the bits of 1.5 * 2^23: see gk_q8x_quantize */
#define Q8X_LANES 16  /* its float lanes: a half group */
#define Q8X_XROWS 4   /* rows of x per block when m > 1: 4 KB of shared memory each */
#define Q8X_WROWS 8   /* rows of W per group, 4 per half */
#define Q8X_COLS (QM_GROUPS * Q8X_WROWS) /* rows of W per block: x's rounding is
                                            shared by 64 rows of W */

/* Where column t of a block goes among the block's 32 int8 x values, so
 * that dp4a operand word u * P + j (code word u, shift j) meets them. */
template <int Bits>
GK_DEV int gk_q8x_pos(int t) {
  const int per_word = 32 / Bits, P = 8 / Bits;
  const int u = t / per_word, r = t % per_word;
  return 4 * (u * P + r % P) + r / P;
}

/* The rounding of a block of x, in three steps that gk_q8x_round_block
 * (a thread a block) and q8x_batch.cuh's gk_q8b_round_half (two threads a
 * block) share, with no conversion instruction per element (conversions
 * issue at 16 a clock an SM: a quarter of the FMA rate on sm_80, an eighth
 * on sm_90; x is rounded once per block of the grid, so this runs n /
 * Q8X_COLS times per element of x):
 * - gk_q8x_load: N floats of the block (at src, 16-byte aligned) and the
 *   max of their |x| in column order (a max is exact in any order);
 * - gk_q8x_quantize: rint by the float adder: p + 1.5 * 2^23 lies in
 *   [2^23, 2^24), where the float's unit is 1, so the sum rounds p to the
 *   nearest integer, ties to even, as rint does, and its low bits are
 *   0x4b400000 + q: q's int8 byte is the low byte;
 * - gk_q8x_scales: dx, and sb from the sum of the codes taken in integers
 *   (|sum| < 2^12: exact, as the float sum of the definition is),
 *   converted once. */
template <int N>
GK_DEV float gk_q8x_load(const float *__restrict__ src, float *v) {
#pragma unroll
  for (int c = 0; c < N / 4; c++) {
    const float4 f = ((const float4 *)src)[c];
    v[4 * c] = f.x, v[4 * c + 1] = f.y, v[4 * c + 2] = f.z, v[4 * c + 3] = f.w;
  }
  float a = fabsf(v[0]);
#pragma unroll
  for (int t = 1; t < N; t++) a = fmaxf(a, fabsf(v[t]));
  return a;
}

/* Columns t < N of a block, v[t], rounded by inv into the bytes of w
 * (gk_q8x_pos(t)); returns the sum of their 0x4b400000 + q, mod 2^32. */
template <int Bits, int N>
GK_DEV uint32_t gk_q8x_quantize(const float *v, float inv, uint32_t w[8]) {
  uint32_t sum = 0;
#pragma unroll
  for (int t = 0; t < N; t++) {
    float p = gk_fmul(v[t], inv);
    p = p > -127.0f ? p : -127.0f;
    p = p < 127.0f ? p : 127.0f;
    const uint32_t qb = gk_q_f32_to_bits(gk_fadd(p, 12582912.0f)); /* 0x4b400000 + q */
    sum += qb;
    const int pos = gk_q8x_pos<Bits>(t);
    w[pos / 4] |= (qb & 0xffu) << (8 * (pos % 4));
  }
  return sum;
}

/* dx and sb from the block's max and code sum (32 terms of 0x4b400000 + q). */
GK_DEV void gk_q8x_scales(float a, uint32_t sum, float *dx, float *sb) {
  const float d = a / 127.0f;
  *dx = d;
  *sb = gk_fmul(d, (float)(int32_t)(sum - 32u * (uint32_t)Q8X_MAGIC));
}

/* One block of x (32 floats at src) by one thread: its int8 codes into
 * codes[0..7] (gk_q8x_pos order), dx and sb, the definition's bits. */
template <int Bits>
GK_DEV void gk_q8x_round_block(const float *__restrict__ src, uint32_t *codes, float *dx,
                               float *sb) {
  float v[32];
  const float a = gk_q8x_load<32>(src, v);
  uint32_t w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const uint32_t sum = gk_q8x_quantize<Bits, 32>(v, a > 0.0f ? 127.0f / a : 0.0f, w);
#pragma unroll
  for (int u = 0; u < 8; u++) codes[u] = w[u];
  gk_q8x_scales(a, sum, dx, sb);
}

/* The dp4a tile's shared memory: Q8X_XROWS rows of x, a chunk of blocks,
 * rounded (xq: 8 words a block in gk_q8x_pos order, read as uint4). */
struct gk_q8x_dsmem {
  uint32_t xq[Q8X_XROWS][Q8X_CHUNK * 8];
  float dx[Q8X_XROWS][Q8X_CHUNK], sb[Q8X_XROWS][Q8X_CHUNK];
};

/* Rounds rows i0 .. i0 + xrows - 1 of x, blocks c0 .. c0 + cb - 1, into
 * sm: a block of x a thread. By the whole block; the caller puts barriers
 * around it. */
template <int Bits>
GK_DEV void gk_q8x_round_x(gk_q8x_dsmem &sm, const float *__restrict__ x, int64_t k,
                           int64_t i0, int xrows, int64_t c0, int cb) {
  for (int e = (int)threadIdx.x; e < xrows * cb; e += QM_THREADS) {
    const int i = e / cb, b = e % cb;
    gk_q8x_round_block<Bits>(x + (i0 + i) * k + (c0 + b) * GK_QBLOCK, sm.xq[i] + b * 8,
                             &sm.dx[i][b], &sm.sb[i][b]);
  }
}

/* One block's tile on dp4a: rows j0 .. j0 + Q8X_COLS - 1 of W (those < n)
 * against rows i0 .. i0 + MT - 1 of x (those < m), MT <= Q8X_XROWS.
 *
 * W is read straight from global memory: a group's load of a code word
 * takes 4 bytes of 16 blocks 20 bytes apart in each of 2 rows, ~7 cache
 * lines, two cycles of L1's tag stage (4 lines a cycle) for 128 bytes.
 * Copying W through shared memory first would cost as much (a cycle to
 * copy 128 bytes, one to read them back), so this tile does not; its 16
 * warps an SM keep 20 loads each in flight (~40 KB an SM at BITS 4). */
template <int Bits, int MT>
GK_DEV void gk_q8x_tile(gk_q8x_dsmem &sm, const float *__restrict__ x,
                        const void *__restrict__ w, float *__restrict__ y, int64_t m,
                        int64_t n, int64_t k, int64_t jb, int64_t i0) {
  static_assert(MT <= Q8X_XROWS, "the tile's rows of x fit gk_q8x_dsmem");
  uint32_t(*xq)[Q8X_CHUNK * 8] = sm.xq;
  float(*dx)[Q8X_CHUNK] = sm.dx, (*sb)[Q8X_CHUNK] = sm.sb;
  const int P = 8 / Bits, lane = gk_lane(), hl = lane % Q8X_LANES;
  const uint32_t rep = GK_QMASK(Bits) * 0x01010101u;
  const int64_t nb = k / GK_QBLOCK;
  const int block_words = GK_QBLOCK_BYTES(Bits) / 4;
  const uint32_t *w32 = (const uint32_t *)w;
  int xrows = MT;
  if (i0 + xrows > m) xrows = (int)(m - i0);
  /* Half h of group g takes rows j0 + h, j0 + h + 2, ... of its Q8X_WROWS. */
  const int64_t j0 = jb + (int64_t)gk_group() * Q8X_WROWS + lane / Q8X_LANES;

  float acc[Q8X_WROWS / 2][MT];
  for (int r = 0; r < Q8X_WROWS / 2; r++)
    for (int i = 0; i < MT; i++) acc[r][i] = 0.0f;

  for (int64_t c0 = 0; c0 < nb; c0 += Q8X_CHUNK) {
    const int cb = nb - c0 < Q8X_CHUNK ? (int)(nb - c0) : Q8X_CHUNK;
    __syncthreads(); /* the previous chunk's x is read */
    gk_q8x_round_x<Bits>(sm, x, k, i0, xrows, c0, cb);
    __syncthreads();
    /* Block b of the chunk for all of the half's rows of W: b's x codes
     * are read from shared memory once (two 16-byte loads a row of x) for
     * them; each (row of W, row of x) still adds its blocks in order into
     * its own part. */
    float part[Q8X_WROWS / 2][MT];
    for (int r = 0; r < Q8X_WROWS / 2; r++)
      for (int i = 0; i < MT; i++) part[r][i] = 0.0f;
    for (int b = hl; b < cb; b += Q8X_LANES) {
      uint32_t xw[MT][8];
#pragma unroll
      for (int i = 0; i < MT; i++) {
        if (i < xrows) {
          const uint4 *xp = (const uint4 *)&xq[i][b * 8];
          const uint4 lo = xp[0], hi = xp[1];
          xw[i][0] = lo.x, xw[i][1] = lo.y, xw[i][2] = lo.z, xw[i][3] = lo.w;
          xw[i][4] = hi.x, xw[i][5] = hi.y, xw[i][6] = hi.z, xw[i][7] = hi.w;
        }
      }
#pragma unroll
      for (int r = 0; r < Q8X_WROWS / 2; r++) {
        const int64_t j = j0 + 2 * r;
        if (j < n) { /* rows past n: the half's last ones */
          const uint32_t *blk = w32 + (j * nb + c0 + b) * block_words;
          const uint32_t head = blk[0];
          const float d = gk_h2f((uint16_t)(head & 0xffffu));
          const float mo = gk_h2f((uint16_t)(head >> 16));
          /* Each sum starts at the bits of 1.5 * 2^23, so that it ends as the
           * float 1.5 * 2^23 + i_b (|i_b| < 2^21): one subtraction, exact,
           * instead of a conversion instruction (see gk_q8x_round_block). */
          int is[MT];
          for (int i = 0; i < MT; i++) is[i] = Q8X_MAGIC;
#pragma unroll
          for (int u = 0; u < Bits; u++) {
            const uint32_t word = blk[1 + u];
#pragma unroll
            for (int s = 0; s < P; s++) {
              const uint32_t codes = (word >> (Bits * s)) & rep;
#pragma unroll
              for (int i = 0; i < MT; i++)
                if (i < xrows) is[i] = gk_dp4a_us<Bits>(codes, xw[i][u * P + s], is[i]);
            }
          }
#pragma unroll
          for (int i = 0; i < MT; i++) {
            if (i < xrows) {
              const float ib = gk_q_f32_from_bits((uint32_t)is[i]) - 12582912.0f;
              const float l1 = gk_fadd(part[r][i], gk_fmul(ib, gk_fmul(d, dx[i][b])));
              part[r][i] = gk_fadd(l1, gk_fmul(mo, sb[i][b]));
            }
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < Q8X_WROWS / 2; r++) {
      /* The fold of the 16 lanes (every lane shuffles: j < n is per half,
       * the shuffles per group), then the chunk sum into y's sum. */
      for (int i = 0; i < MT; i++) {
        float v = part[r][i];
        for (int h = Q8X_LANES / 2; h > 0; h /= 2) v = gk_fadd(v, GK_SHFL_XOR(v, h));
        acc[r][i] = gk_fadd(acc[r][i], v);
      }
    }
  }
  if (hl == 0)
    for (int r = 0; r < Q8X_WROWS / 2; r++)
      for (int i = 0; i < MT; i++)
        if (j0 + 2 * r < n && i < xrows) y[(i0 + i) * n + j0 + 2 * r] = acc[r][i];
}

#endif /* GK_Q8X_CUH */
