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
 * This file: the rounding, the dp4a tile, which takes 2 <= m <= Q8X_XROWS
 * (and every m > 1 on sm_75 and HIP), and gk_q8x_vec, its form for m = 1
 * (a decode: no branch inside a step, the next step's W in flight); on
 * sm_80 and newer q8x_batch.cuh multiplies more rows of x on int8
 * mma.sync, and has the entry's walk over the grid. Launch: its own row,
 * qmatmul's signature and block, grid (ceil(m / 16), ceil(n / Q8X_COLS))
 * or smaller.
 *
 * Here a block of QM_THREADS computes Q8X_COLS rows of W against
 * Q8X_XROWS rows of x (one when m == 1). Chunk by chunk, the block first
 * rounds its rows of x into shared memory (two threads a block of x, with
 * no conversion per element: gk_q8x_round_half), then each half
 * group (16 lanes: the 16 float lanes of the definition) takes 4 rows of W,
 * lane l its blocks l, l + 16, ... of the chunk, each block's x codes read
 * once for the 4 rows; the fold is 4 xor shuffles inside the half. x is
 * rounded once per block of the grid, not once per call: that reads x
 * (m * k floats) n / Q8X_COLS times from L2, against the n * k codes of W.
 * qmatmul_q8x_rec takes x rounded once per call instead (gk_q8x_rec).
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
#define Q8X_REC 48 /* bytes of a rounded block of x (docs/weights.md) */

/*
 * Where a tile's x comes from: `const float *`, rounded by the tile
 * (qmatmul_q8x), or gk_q8x_rec, x already rounded once per call by
 * qmatmul_q8x_x into records (q8x_mma.cuh: per row of x and block, its 32
 * codes in gk_q8x_pos order, dx, sb and 8 zero bytes), which
 * qmatmul_q8x_rec multiplies: the same codes, dx and sb bits, so the same
 * y, without the rounding that every block of the grid repeats (n /
 * Q8X_COLS times a call) and with 1.5 bytes of x a column read from L2
 * instead of 4. The tiles take either as a template parameter X, and the
 * steps that differ are overloads on its type (C++14 for HIP: no if
 * constexpr, gk_gpu.cuh's gk_bool).
 */
struct gk_q8x_rec {
  const unsigned char *q;
};

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
 * - gk_q8x_load: N floats of the block (at src, 16-byte aligned; four at
 *   a time, S float4 apart) and the max of their |x| in column order (a
 *   max is exact in any order);
 * - gk_q8x_quantize: rint by the float adder: p + 1.5 * 2^23 lies in
 *   [2^23, 2^24), where the float's unit is 1, so the sum rounds p to the
 *   nearest integer, ties to even, as rint does, and its low bits are
 *   0x4b400000 + q: q's int8 byte is the low byte;
 * - gk_q8x_scales: dx, and sb from the sum of the codes taken in integers
 *   (|sum| < 2^12: exact, as the float sum of the definition is),
 *   converted once. */
template <int N, int S = 1, bool Nan = false>
GK_DEV float gk_q8x_load(const float *__restrict__ src, float *v) {
#pragma unroll
  for (int c = 0; c < N / 4; c++) {
    const float4 f = ((const float4 *)src)[S * c];
    v[4 * c] = f.x, v[4 * c + 1] = f.y, v[4 * c + 2] = f.z, v[4 * c + 3] = f.w;
  }
  float a = fabsf(v[0]);
#pragma unroll
  for (int t = 1; t < N; t++) a = Nan ? gk_fmax_nan(a, fabsf(v[t])) : fmaxf(a, fabsf(v[t]));
  return a;
}

/* Columns t < N of a block, v[t], rounded by inv into the bytes of w
 * (gk_q8x_pos(t)); returns the sum of their 0x4b400000 + q, mod 2^32.
 * Clamp: the definition's min and max. Without them (gk_q8x_round_half,
 * where it has checked that they change nothing) a column takes 4
 * instructions where it took 6. */
template <int Bits, int N, bool Clamp = true>
GK_DEV uint32_t gk_q8x_quantize(const float *v, float inv, uint32_t w[8]) {
  uint32_t sum = 0;
#pragma unroll
  for (int t = 0; t < N; t++) {
    float p = gk_fmul(v[t], inv);
    if (Clamp) {
      p = p > -127.0f ? p : -127.0f;
      p = p < 127.0f ? p : 127.0f;
    }
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

/* Rounds half h of a block of x (the 16 floats at src, 16-byte aligned,
 * four at a time S float4 apart: q8x_batch.cuh's copy in shared memory
 * takes S = QM_THREADS) with the thread beside it (lane ^ 1), which takes
 * the other half of the same block: gk_q8x_round_block's bits. The max and
 * the code sum are combined by one shuffle each (a max is exact in any
 * order; the sum is an integer). codes gets words 4 h .. 4 h + 3 of the block's 8 (gk_q8x_pos
 * order): for Bits >= 2 a half's 16 columns fill 4 whole words (gk_q8x_pos
 * (t + 16) is gk_q8x_pos(t) + 16: 4 words on); for Bits = 1 each half
 * fills 2 bytes of all 8 (gk_q8x_pos(t + 16) is gk_q8x_pos(t) + 2), so the
 * pair swaps 4 words. Every thread of the group calls it. */
template <int Bits, int S = 1, bool Fast = false>
GK_DEV void gk_q8x_round_half(const float *__restrict__ src, int h, uint32_t codes[4],
                              float *dx, float *sb) {
  constexpr bool Nan = Fast && GK_FMAX_NAN;
  float v[16];
  uint32_t wl[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t sum;
  float a = gk_q8x_load<16, S, Nan>(src, v);
  if (Nan) {
    /* The clamps change nothing where the block's 32 floats are finite
     * and 127 / a is: then |x_t * inv| <= 127 (1 + 2^-24)^2 < 127.5, so
     * rint gives -127 .. 127 as it does from the clamped value. The max
     * that keeps a NaN (the same one instruction as fmaxf) tells whether
     * the block has one; the group takes the branch together (a vote), so
     * that the other takes the shuffle it needs. It is the definition as
     * written where x has a NaN or an infinity (which the definition
     * excludes), or a < 127 / FLT_MAX (127 / a is infinite, 0 * inv a
     * NaN, which the clamps make -127). 2 of the 6 instructions a column
     * (ptxas 13.0, sm_90a): Fast, q8x_batch.cuh's tile (GK_Q8B_FAST),
     * whose every block rounds its 16 rows of x again; the m <= 4 tiles
     * (gk_q8x_round_x) round x once a block and keep one path. */
    a = gk_fmax_nan(a, GK_SHFL_XOR(a, 1));
    const float inv = a > 0.0f ? 127.0f / a : 0.0f;
    if (gk_group_all(a <= 3.40282347e38f && inv <= 3.40282347e38f)) {
      sum = gk_q8x_quantize<Bits, 16, false>(v, inv, wl);
    } else {
      a = fabsf(v[0]);
#pragma unroll
      for (int t = 1; t < 16; t++) a = fmaxf(a, fabsf(v[t]));
      a = fmaxf(a, GK_SHFL_XOR(a, 1));
      sum = gk_q8x_quantize<Bits, 16>(v, a > 0.0f ? 127.0f / a : 0.0f, wl);
    }
  } else {
    a = fmaxf(a, GK_SHFL_XOR(a, 1));
    sum = gk_q8x_quantize<Bits, 16>(v, a > 0.0f ? 127.0f / a : 0.0f, wl);
  }
  sum += GK_SHFL_XOR(sum, 1);
  if (Bits == 1) {
    /* Each keeps its half's 4 words (4 h + u) and gives the other
     * thread the other 4: 4 shuffles, not 8. The choice is between values
     * read at fixed places: `h ? wl[4 + u] : wl[u]` after the shuffles
     * became a load at a computed index in hipcc 5.2's code, with wl in
     * scratch memory (48 bytes a lane on gfx906, gfx90a and gfx1030, until
     * 2026-12-02; rocm.cli checks). */
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t lo = wl[u] << (16 * h), hi = wl[4 + u] << (16 * h);
      const uint32_t keep = h ? hi : lo, give = h ? lo : hi;
      codes[u] = keep | GK_SHFL_XOR(give, 1);
    }
  } else {
#pragma unroll
    for (int u = 0; u < 4; u++) codes[u] = wl[u];
  }
  gk_q8x_scales(a, sum, dx, sb);
}

/* The dp4a tile's shared memory: Q8X_XROWS rows of x, a chunk of blocks,
 * rounded (xq: 8 words a block in gk_q8x_pos order, read as uint4). */
struct gk_q8x_dsmem {
  uint32_t xq[Q8X_XROWS][Q8X_CHUNK * 8];
  float dx[Q8X_XROWS][Q8X_CHUNK], sb[Q8X_XROWS][Q8X_CHUNK];
  int g; /* m == 1: tiles a block takes (gk_walk_rows_start) */
};

/* Rounds rows i0 .. i0 + xrows - 1 of x, blocks c0 .. c0 + cb - 1, into
 * sm: two threads a block of x (gk_q8x_round_half), the whole block in
 * the same number of rounds so that every pair's group shuffles together
 * (a pair past the last block rounds block c0 of row i0 again and keeps
 * nothing). A thread a block, as before, held 32 floats beside the next
 * step's W words and left half the threads idle at m = 1; the caller puts
 * barriers around it. Row i's block b lies at xq word (i * Q8X_CHUNK + b)
 * * 8, its scales at dx and sb entry i * Q8X_CHUNK + b: with xrows > 1, cb
 * <= Q8X_CHUNK (the arrays' rows); one row may take the whole space,
 * Q8X_VEC_X blocks (gk_q8x_vec). */
#define Q8X_VEC_X (Q8X_XROWS * Q8X_CHUNK) /* blocks of one row gk_q8x_dsmem holds */
template <int Bits>
GK_DEV void gk_q8x_round_x(gk_q8x_dsmem &sm, const float *__restrict__ x, int64_t k,
                           int64_t i0, int xrows, int64_t c0, int cb) {
  const int halves = 2 * xrows * cb, h = (int)threadIdx.x & 1;
  uint32_t *const xq = &sm.xq[0][0];
  float *const dx = &sm.dx[0][0], *const sb = &sm.sb[0][0];
  for (int e0 = 0; e0 < halves; e0 += QM_THREADS) {
    const int e = e0 + (int)threadIdx.x, in = e < halves;
    const int i = in ? (e >> 1) / cb : 0, b = in ? (e >> 1) % cb : 0;
    uint32_t c[4];
    float dxv, sbv;
    gk_q8x_round_half<Bits>(x + (i0 + i) * k + (c0 + b) * GK_QBLOCK + 16 * h, h, c, &dxv, &sbv);
    if (in) {
      const int at = i * Q8X_CHUNK + b;
      const uint4 cw = {c[0], c[1], c[2], c[3]};
      *(uint4 *)&xq[at * 8 + 4 * h] = cw;
      if (h == 0) dx[at] = dxv, sb[at] = sbv;
    }
  }
}

/* The same from records (gk_q8x_rec): the codes and scales copied, two
 * threads a record (a half's 16 bytes of codes each, the first thread
 * dx and sb). */
template <int Bits>
GK_DEV void gk_q8x_round_x(gk_q8x_dsmem &sm, gk_q8x_rec x, int64_t k, int64_t i0, int xrows,
                           int64_t c0, int cb) {
  const int64_t nb = k / GK_QBLOCK;
  const int halves = 2 * xrows * cb;
  uint32_t *const xq = &sm.xq[0][0];
  float *const dx = &sm.dx[0][0], *const sb = &sm.sb[0][0];
  for (int e = (int)threadIdx.x; e < halves; e += QM_THREADS) {
    const int h = e & 1, i = (e >> 1) / cb, b = (e >> 1) % cb;
    const unsigned char *rec = x.q + ((i0 + i) * nb + c0 + b) * Q8X_REC;
    const int at = i * Q8X_CHUNK + b;
    *(uint4 *)&xq[at * 8 + 4 * h] = *(const uint4 *)(rec + 16 * h);
    if (h == 0) {
      const float *f = (const float *)(rec + 32);
      dx[at] = f[0], sb[at] = f[1];
    }
  }
}

/* One block's tile on dp4a: rows j0 .. j0 + Q8X_COLS - 1 of W (those < n)
 * against rows i0 .. i0 + MT - 1 of x (those < m), MT <= Q8X_XROWS.
 *
 * W is read straight from global memory: a group's load of a code word
 * takes 4 bytes of 16 blocks 20 bytes apart in each of 2 rows, ~7 cache
 * lines, two cycles of L1's tag stage (4 lines a cycle) for 128 bytes.
 * Copying W through shared memory first would cost as much (a cycle to
 * copy 128 bytes, one to read them back), so this tile does not. Each row
 * of W has its branch (j < n) and each row of x its own (i < xrows), so
 * in the machine code a row's 1 + Bits loads wait in a run of their own
 * (gk_q8x_vec, below, says what that cost at m = 1). Without them, all
 * the rows' words beside 4 rows of x codes made ptxas spill (sm_90a, 12 to
 * 148 bytes: 2026-11-30), so m = 2 .. 4 keep this tile for now. */
template <int Bits, int MT, class X>
GK_DEV void gk_q8x_tile(gk_q8x_dsmem &sm, X x,
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

/* What a lane reads of W for one step (one block of each of its
 * Q8X_HROWS rows): the block's header word (d, m as binary16), then its
 * Bits code words. */
#define Q8X_HROWS (Q8X_WROWS / 2) /* rows of W a half group */
template <int Bits>
struct gk_q8x_words {
  uint32_t v[Q8X_HROWS][1 + Bits];
};

/* f: the words at `at` words past each row's pointer (0: this step's,
 * Q8X_LANES blocks on: the next one's). */
template <int Bits>
GK_DEV void gk_q8x_wload(const uint32_t *const p[Q8X_HROWS], gk_q8x_words<Bits> &f, int at) {
#pragma unroll
  for (int r = 0; r < Q8X_HROWS; r++)
#pragma unroll
    for (int u = 0; u <= Bits; u++) f.v[r][u] = p[r][at + u];
}

/* One step of a lane at m = 1: block b of the rounded row (f: its words,
 * one block a row of W) against its x codes and scales, each row of W
 * adding the block into its own part, as the definition's lane does. */
template <int Bits>
GK_DEV void gk_q8x_step(const gk_q8x_dsmem &sm, int b, const gk_q8x_words<Bits> &f,
                        float part[Q8X_HROWS]) {
#if GK_QM_LOADS_ONLY /* qmatmul.cuh: W's words folded, no x */
  (void)sm, (void)b;
#pragma unroll
  for (int r = 0; r < Q8X_HROWS; r++)
    for (int u = 0; u <= Bits; u++) part[r] = gk_qm_fold(part[r], f.v[r][u]);
  return;
#endif
  const int P = 8 / Bits;
  const uint32_t rep = GK_QMASK(Bits) * 0x01010101u;
  /* b's x codes (two 16-byte loads) and scales, read once for the rows;
   * the row may fill the whole space (gk_q8x_round_x). */
  const uint4 *xp = (const uint4 *)(&sm.xq[0][0] + b * 8);
  const uint4 lo = xp[0], hi = xp[1];
  const uint32_t xw[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const float dx = (&sm.dx[0][0])[b], sb = (&sm.sb[0][0])[b];
#pragma unroll
  for (int r = 0; r < Q8X_HROWS; r++) {
    const uint32_t head = f.v[r][0];
    const float d = gk_h2f((uint16_t)(head & 0xffffu));
    const float mo = gk_h2f((uint16_t)(head >> 16));
    /* The sum starts at the bits of 1.5 * 2^23, so that it ends as the
     * float 1.5 * 2^23 + i_b (|i_b| < 2^21): one subtraction, exact,
     * instead of a conversion instruction (see gk_q8x_round_block). */
    int is = Q8X_MAGIC;
#pragma unroll
    for (int u = 0; u < Bits; u++)
#pragma unroll
      for (int s = 0; s < P; s++)
        is = gk_dp4a_us<Bits>((f.v[r][1 + u] >> (Bits * s)) & rep, xw[u * P + s], is);
    const float ib = gk_q_f32_from_bits((uint32_t)is) - 12582912.0f;
    const float l1 = gk_fadd(part[r], gk_fmul(ib, gk_fmul(d, dx)));
    part[r] = gk_fadd(l1, gk_fmul(mo, sb));
  }
}

/* How many steps' words gk_q8x_vec keeps in registers, a ring of sets:
 * while one step is used, the loads of the next Sets - 1 are in flight.
 * A step of a warp is 32 lanes x 4 rows x one block: 2560 bytes at BITS 4,
 * 4608 at 8, 1536 at 2, 1024 at 1. On the H200 (2026-11-30) two sets gave
 * BITS 8 0.91 of the copy bandwidth and BITS 4 0.85, BITS 2 0.71 and 1
 * 0.60: with fewer bytes a step the narrow codes kept fewer in flight.
 * So BITS 2 keeps 4 sets (48 registers of words, 6 KB a warp) and BITS 1
 * 8 (64 registers, 8 KB), about what BITS 8 keeps with two (72 registers,
 * 9 KB); BITS 4 keeps two (40 registers, 5 KB: with 4, ptxas 13.0 spilled
 * 28 bytes a tile in the walk). In the sm_90a cubin a trip of the ring
 * issues 1124 instructions at BITS 1 (1024 weights) and 572 at BITS 2
 * (512), where two sets took 305 and 298 for 256 (tests/backends/cuda/
 * test_ptxas.sh). A count divides the 8 steps of a whole chunk
 * (Q8X_CHUNK / Q8X_LANES), so that every chunk but the last starts with the
 * ring in the same place. HIP keeps two but at BITS 8 (72 registers of
 * words; gfx906's 128 VGPRs then took 140 bytes of scratch), which loads a
 * step's words and uses them: one set. The emulator's runs without the
 * mma.sync tile (Sm80 = 0: as sm_75 and HIP) take HIP's counts, so that it
 * checks those rings too. */
#define GK_Q8X_SETS_NV(Bits) ((Bits) == 1 ? 8 : (Bits) == 2 ? 4 : 2)
#define GK_Q8X_SETS_HIP(Bits) ((Bits) <= 4 ? 2 : 1)
#if defined(__HIPCC__)
#define GK_Q8X_SETS(Bits, Sm80) GK_Q8X_SETS_HIP(Bits)
#elif defined(GK_GPU_EMULATE)
#define GK_Q8X_SETS(Bits, Sm80) ((Sm80) ? GK_Q8X_SETS_NV(Bits) : GK_Q8X_SETS_HIP(Bits))
#else
#define GK_Q8X_SETS(Bits, Sm80) GK_Q8X_SETS_NV(Bits)
#endif

/* m = 1 (a decode): one block's rows jb .. jb + Q8X_COLS - 1 of W (those
 * < n) against x. Half h of group g takes rows j0 + 2 r (j0 = jb + g *
 * Q8X_WROWS + h, r < Q8X_HROWS), lane l of the half (the definition's
 * float lane l) blocks l, l + 16, ...: one block a row a step.
 *
 * Bound by DRAM's latency: what matters is the bytes a warp keeps in
 * flight. gk_q8x_tile (above), which took m = 1 until 2026-11-30, was
 * measured on an H200 at 0.49 of the copy bandwidth (BITS 4): 0.72
 * instructions a cycle, 21 cycles a warp between issues, DRAM 43% busy.
 * Its rows of W each have a branch (j < n), and in the sm_90a cubin each
 * row's 1 + Bits loads are a straight run of their own, used in that run:
 * a warp waits for DRAM 4 times a step, 640 bytes in flight at a time
 * (BITS 4). Here, as in gk_qmatmul_vec:
 * - rows past n read row n - 1 again (their sums are not stored): no
 *   branch inside a step;
 * - a pointer a row, moved by a constant;
 * - a ring of Sets sets of words (GK_Q8X_SETS): the loads of the next
 *   Sets - 1 steps are issued before this step's words are used, across
 *   the barriers and x's rounding too (W does not depend on x): at BITS 4
 *   two steps, 5 KB a warp, 80 KB an SM at 16 warps, in flight;
 * - x rounded once for k up to Q8X_VEC_X blocks (16384 columns: the 4
 *   rows of gk_q8x_dsmem taken as one), else Q8X_VEC_X blocks at a time:
 *   between two chunks of the definition the warps no longer meet at a
 *   barrier and wait for the next chunk of x from L2 with only the ring's
 *   loads in flight (at k = 8192 that was once a tile, halfway); and once
 *   a block, not a tile, where x fits (at the block's first tile:
 *   gk_q8x_walk1, gk_walk_rows_first), each rounding read x from L2, 32
 *   KB at k = 8192 where a tile reads 328 KB of W at BITS 4 and 131 KB at
 *   BITS 1.
 * W is read straight from global memory: a load of a code word takes 4
 * bytes of 16 blocks 20 bytes apart in each of 2 rows, ~7 cache lines,
 * and the block's other words hit L1 (80% of L1's hits in the profile
 * above). The order of the sums is the definition's, as gk_q8x_tile's:
 * the same bits. */
template <int Bits, int Sets, class X>
GK_DEV void gk_q8x_vec(gk_q8x_dsmem &sm, X x,
                       const void *__restrict__ w, float *__restrict__ y, int64_t n,
                       int64_t k, int64_t jb) {
  enum { BW = GK_QBLOCK_BYTES(Bits) / 4, /* words a block: 1 + Bits */
         SW = Q8X_LANES * BW,            /* words a step of a row */
         CS = Q8X_CHUNK / Q8X_LANES };   /* a lane's steps in a whole chunk */
  static_assert(Sets >= 1 && CS % Sets == 0, "a whole chunk is whole trips of the ring");
  const int lane = gk_lane(), hl = lane % Q8X_LANES;
  const int64_t nb = k / GK_QBLOCK;
  const int64_t j0 = jb + (int64_t)gk_group() * Q8X_WROWS + lane / Q8X_LANES;
  const uint32_t *p[Q8X_HROWS]; /* each row's block of step t */
#pragma unroll
  for (int r = 0; r < Q8X_HROWS; r++) {
    const int64_t j = j0 + 2 * r < n ? j0 + 2 * r : n - 1;
    p[r] = (const uint32_t *)w + (j * nb + hl) * BW;
  }
  /* The lane's steps, all chunks together; 32-bit (k < 2^40). */
  const int steps = hl < nb ? (int)((nb - 1 - hl) / Q8X_LANES) + 1 : 0;

  float acc[Q8X_HROWS];
  for (int r = 0; r < Q8X_HROWS; r++) acc[r] = 0.0f;
  /* The ring: step t's words in f[t % Sets]. Steps 0 .. Sets - 2 now. */
  gk_q8x_words<Bits> f[Sets];
#pragma unroll
  for (int u = 0; u + 1 < Sets; u++)
    if (u < steps) gk_q8x_wload<Bits>(p, f[u], u * SW);
  int t = 0; /* the lane's next step */
  for (int64_t x0 = 0; x0 < nb; x0 += Q8X_VEC_X) {
    const int xb = nb - x0 < Q8X_VEC_X ? (int)(nb - x0) : Q8X_VEC_X;
    /* At the block's first tile, else that one rounded all of x. */
    if (jb == (int64_t)gk_walk_rows_first(&sm.g) * Q8X_COLS || nb > Q8X_VEC_X) {
      __syncthreads();             /* the previous blocks of x are read */
      gk_q8x_round_x<Bits>(sm, x, k, 0, 1, x0, xb);
      __syncthreads();
    }
    for (int64_t c0 = x0; c0 < x0 + xb; c0 += Q8X_CHUNK) {
      float part[Q8X_HROWS];
      for (int r = 0; r < Q8X_HROWS; r++) part[r] = 0.0f;
      /* The lane's steps up to the chunk's end: CS in a whole chunk,
       * fewer only in the last of all. b: step t's block in the row. */
      const int64_t ce = (c0 + Q8X_CHUNK) / Q8X_LANES;
      const int te = ce < steps ? (int)ce : steps;
      int b = (int)(c0 - x0) + hl;
      /* A trip: Sets steps, each loading the step Sets - 1 on into the
       * set the step before it used. */
      for (; t + Sets <= te; t += Sets, b += Sets * Q8X_LANES) {
#pragma unroll
        for (int u = 0; u < Sets; u++) {
          if (t + u + Sets - 1 < steps)
            gk_q8x_wload<Bits>(p, f[(u + Sets - 1) % Sets], (Sets - 1) * SW);
          gk_q8x_step<Bits>(sm, b + u * Q8X_LANES, f[u], part);
#pragma unroll
          for (int r = 0; r < Q8X_HROWS; r++) p[r] += SW;
        }
      }
      /* The last steps of all (fewer than Sets), whose words are loaded:
       * t is a multiple of Sets here, so step t + u is in f[u]. */
#pragma unroll
      for (int u = 0; u + 1 < Sets; u++)
        if (t + u < te) gk_q8x_step<Bits>(sm, b + u * Q8X_LANES, f[u], part);
      if (t < te) t = te;
#pragma unroll
      for (int r = 0; r < Q8X_HROWS; r++) {
        /* The fold of the 16 lanes (every lane shuffles, those without a
         * block of the chunk too), then the chunk sum into y's sum. */
        float v = part[r];
        for (int h = Q8X_LANES / 2; h > 0; h /= 2) v = gk_fadd(v, GK_SHFL_XOR(v, h));
        acc[r] = gk_fadd(acc[r], v);
      }
    }
  }
  if (hl == 0)
    for (int r = 0; r < Q8X_HROWS; r++)
      if (j0 + 2 * r < n) y[j0 + 2 * r] = acc[r];
}

/* qmatmul_q8x's walk over the grid at m = 1 (gk_qmatmul_q8x,
 * q8x_batch.cuh): a block takes up to 4 consecutive tiles where that does
 * not lengthen the launch (gk_walk_rows_group), x rounded at its first. A
 * function of its own on CUDA: inlined beside the other tiles, ptxas
 * spilled (the same kernel's 128 registers, allocated as one). On HIP a
 * call costs scratch memory (the callee's saved registers), so there it is
 * inlined. */
#if defined(__HIPCC__)
#define GK_Q8X_APART GK_DEV
#else
#define GK_Q8X_APART GK_DEV_NOINLINE
#endif
template <int Bits, int Sets, class X>
GK_Q8X_APART void gk_q8x_walk1(gk_q8x_dsmem &sm, X x, const void *w, float *y,
                               int64_t n, int64_t k) {
  const int t0 = gk_walk_rows_start(n, Q8X_COLS, 4, QM_MIN_BLOCKS, &sm.g);
  if (blockIdx.x != 0 || t0 < 0) return;
  for (int t = t0; (int64_t)t * Q8X_COLS < n;
       t = gk_walk_rows_next(t, n, Q8X_COLS, &sm.g))
    gk_q8x_vec<Bits, Sets>(sm, x, w, y, n, k, (int64_t)t * Q8X_COLS);
}

#endif /* GK_Q8X_CUH */
