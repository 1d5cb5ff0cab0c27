/*
 * q8x_stream.cuh - qmatmul_q8x for up to Q8X_XROWS rows of x (the decode)
 * on sm_80 and newer: q8x.cuh's dp4a arithmetic, the CPU images' bits, with
 * W streamed through shared memory. And gk_q8x_w_stage, the copy of a
 * stage of W that this tile and q8x_batch.cuh's share.
 *
 * Why: q8x.cuh's tile gives each lane whole blocks, so a group's load of
 * one code word gathers 4 bytes from each of 16 blocks 20 bytes apart: 128
 * useful bytes from ~6 cache lines, a wavefront each in L1. That is the
 * pattern the first qmatmul had when an H200 profile found it L1-bound
 * (88.6% of L1 throughput, DRAM 9%; issue 18). Here each stage of W (64
 * rows x Q8X_KB = 8 blocks) is copied by cp.async in pieces of 16 bytes of
 * a row a group instruction (gk_q8x_w_stage), about one wavefront per 128
 * bytes, and each word is then read once from shared memory, conflict-free:
 * two wavefronts per 128 bytes of W where there were ~6. The stage in
 * flight while the one before is multiplied is 10 KB a block at BITS 4, two
 * blocks an SM: about DRAM's latency times its bandwidth.
 *
 * Work of a thread: block kb = lane % 8 of each stage, for rows 4 g + lane
 * / 8 and 32 + 4 g + lane / 8 of the block's 64 rows of W (g its group),
 * against each row of x: 8 dp4a a block, row of W and row of x, then the
 * definition's float epilogue. Stage s feeds chunk lane (8 s + kb) % 16 =
 * 8 (s % 2) + kb: each thread keeps two float lanes a (row of W, row of x),
 * for even and odd stages, the ring's two buffers, so the fold's h = 8 is
 * their sum and h = 4, 2, 1 are xor shuffles over kb, the lanes the CPU's
 * fold pairs. x is rounded into shared memory Q8S_PIECE blocks at a time
 * (one block a thread, gk_q8x_round_block), while the next stage of W is in
 * flight.
 */
#ifndef GK_Q8X_STREAM_CUH
#define GK_Q8X_STREAM_CUH

#include "q8x.cuh"

#define Q8X_KB 8     /* blocks of W a stage, in both sm_80 tiles */
#define Q8S_PIECE 64 /* blocks of x rounded at a time: Q8X_XROWS * 64 = one a thread */

/* Starts copying blocks b0 .. b0 + Q8X_KB - 1 of W rows j0 .. j0 +
 * Q8X_COLS - 1 into dst (a row every WS words; zeros past n and nb), one
 * cp.async group a thread, by the whole block. Four threads a row: thread c
 * copies words c, c + 4, ..., so it needs one source pointer and constant
 * offsets, and a group instruction takes 16 bytes of each of 8 rows. */
template <int Bits, int WS>
GK_DEV void gk_q8x_w_stage(uint32_t *dst, const uint32_t *__restrict__ w, int64_t n,
                           int64_t nb, int64_t j0, int64_t b0) {
  constexpr int BW = 1 + Bits, SEG = Q8X_KB * BW, TPR = QM_THREADS / Q8X_COLS;
  static_assert(SEG % TPR == 0, "a row's stage splits evenly");
  const int r = (int)threadIdx.x / TPR, c = (int)threadIdx.x % TPR;
  const int have = nb - b0 < Q8X_KB ? (int)(nb - b0) * BW : SEG; /* words in range */
  const bool row = j0 + r < n;
  const uint32_t *src = row ? w + ((j0 + r) * nb + b0) * BW + c : w;
  uint32_t *to = dst + r * WS + c;
  if (row && have == SEG) { /* every stage but a row's last: no per-word test */
#pragma unroll
    for (int u = 0; u < SEG / TPR; u++) gk_cp_async4(to + TPR * u, src + TPR * u, true);
  } else {
#pragma unroll
    for (int u = 0; u < SEG / TPR; u++) {
      const bool in = row && c + TPR * u < have;
      gk_cp_async4(to + TPR * u, in ? src + TPR * u : w, in);
    }
  }
  gk_cp_async_commit();
}

template <int Bits>
struct gk_q8s_smem {
  /* Rows unpadded: a group reads rows 4 g + q (q < 4) at block kb, words
   * BW (8 (4 g + q) + kb) + u: for BW odd (BITS 2, 4, 8) 32 distinct banks;
   * BITS 1 (BW = 2) has two-way conflicts on its two words. */
  enum { BW = 1 + Bits, WS = Q8X_KB * BW };
  uint32_t w[2][Q8X_COLS * WS];
  uint32_t xq[Q8X_XROWS][Q8S_PIECE * 8];
  float dx[Q8X_XROWS][Q8S_PIECE], sb[Q8X_XROWS][Q8S_PIECE];
};

/* Stage s (buffer Buf) of the tile: its W was copied by the step before;
 * this step starts the next one, rounds x where s starts a piece, then
 * multiplies, and folds where s ends a chunk. */
template <int Bits, int MT, int Buf>
GK_DEV void gk_q8s_step(gk_q8s_smem<Bits> &sm, const float *__restrict__ x,
                        const uint32_t *__restrict__ w, int64_t n, int64_t k, int64_t nb,
                        int64_t i0, int xrows, int64_t j0, int64_t s, float (*ln)[MT][2],
                        float (*acc)[MT]) {
  typedef gk_q8s_smem<Bits> S;
  constexpr int P = 8 / Bits;
  const uint32_t rep = GK_QMASK(Bits) * 0x01010101u;
  const int64_t stages = (nb + Q8X_KB - 1) / Q8X_KB;
  const int lane = gk_lane(), kb = lane % Q8X_KB, rq = lane / Q8X_KB;
  if (s + 1 < stages) gk_q8x_w_stage<Bits, S::WS>(sm.w[Buf ^ 1], w, n, nb, j0, (s + 1) * Q8X_KB);
  const int64_t b = s * Q8X_KB + kb, p0 = b - b % Q8S_PIECE; /* this block, its piece */
  if (s > 0 && s % (Q8S_PIECE / Q8X_KB) == 0) {
    /* The last piece was read before the barrier that ended step s - 1. */
    const int cb = nb - p0 < Q8S_PIECE ? (int)(nb - p0) : Q8S_PIECE;
    gk_q8x_round_rows<Bits, Q8S_PIECE>(sm.xq, sm.dx, sm.sb, x, k, i0, xrows, p0, cb);
    __syncthreads();
  }
  if (b < nb) {
    const int xb = (int)(b - p0);
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const uint32_t *blk =
          &sm.w[Buf][(4 * gk_group() + rq + r * (Q8X_COLS / 2)) * S::WS + kb * S::BW];
      const uint32_t head = blk[0];
      const float d = gk_h2f((uint16_t)(head & 0xffffu)), mo = gk_h2f((uint16_t)(head >> 16));
      int is[MT]; /* from the bits of 1.5 * 2^23, as in q8x.cuh */
      for (int i = 0; i < MT; i++) is[i] = 0x4b400000;
      /* Operand words o = u P + sh (code word u, shift sh), in two halves
       * of 4, each half's x words one 16-byte load a row of x: registers
       * for 4 words a row, not 8 (read once for each row of W, from
       * shared memory, where the 8 threads of a block's x broadcast). */
#pragma unroll
      for (int hf = 0; hf < 2; hf++) {
        uint32_t xw[MT][4];
#pragma unroll
        for (int i = 0; i < MT; i++) {
          if (i >= xrows) break;
          const uint4 v = ((const uint4 *)&sm.xq[i][xb * 8])[hf];
          xw[i][0] = v.x, xw[i][1] = v.y, xw[i][2] = v.z, xw[i][3] = v.w;
        }
#pragma unroll
        for (int o = 4 * hf; o < 4 * hf + 4; o++) {
          const uint32_t codes = (blk[1 + o / P] >> (Bits * (o % P))) & rep;
#pragma unroll
          for (int i = 0; i < MT; i++)
            if (i < xrows) is[i] = gk_dp4a_us(codes, xw[i][o - 4 * hf], is[i]);
        }
      }
#pragma unroll
      for (int i = 0; i < MT; i++) {
        if (i >= xrows) break;
        const float ib = gk_q_f32_from_bits((uint32_t)is[i]) - 12582912.0f; /* exact */
        float &l = ln[r][i][Buf];
        l = gk_fadd(gk_fadd(l, gk_fmul(ib, gk_fmul(d, sm.dx[i][xb]))),
                    gk_fmul(mo, sm.sb[i][xb]));
      }
    }
  }
  gk_cp_async_wait<0>();
  __syncthreads(); /* stage s + 1 is in; stage s is read */
  if ((s + 1) % (Q8X_CHUNK / Q8X_KB) == 0 || s + 1 == stages) {
    /* The fold (h = 8 in the thread, then over kb), the chunk's sum into
     * y's. Every thread of the group shuffles. */
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
      for (int i = 0; i < MT; i++) {
        float v = gk_fadd(ln[r][i][0], ln[r][i][1]);
        for (int h = Q8X_KB / 2; h > 0; h /= 2) v = gk_fadd(v, GK_SHFL_XOR(v, h));
        acc[r][i] = gk_fadd(acc[r][i], v);
        ln[r][i][0] = 0.0f, ln[r][i][1] = 0.0f;
      }
  }
}

/* One block's tile: rows j0 .. j0 + Q8X_COLS - 1 of W (those < n) against
 * rows i0 .. i0 + MT - 1 of x (those < m), MT <= Q8X_XROWS. Not inlined,
 * as q8x_batch.cuh's tile. */
template <int Bits, int MT>
GK_DEV_NOINLINE void gk_q8s_tile(gk_q8s_smem<Bits> &sm, const float *__restrict__ x,
                                 const void *__restrict__ w, float *__restrict__ y, int64_t m,
                                 int64_t n, int64_t k, int64_t j0, int64_t i0) {
  static_assert(MT <= Q8X_XROWS && Q8X_XROWS * Q8S_PIECE <= QM_THREADS,
                "a piece of x is one block a thread");
  static_assert(Q8X_CHUNK % (2 * Q8X_KB) == 0 && Q8S_PIECE % (2 * Q8X_KB) == 0 &&
                    QM_THREADS / GK_GROUP * 4 * 2 == Q8X_COLS && GK_GROUP == 4 * Q8X_KB,
                "a group: 4 rows of W by 8 blocks, twice");
  const uint32_t *w32 = (const uint32_t *)w;
  const int64_t nb = k / GK_QBLOCK, stages = (nb + Q8X_KB - 1) / Q8X_KB;
  const int xrows = m - i0 < MT ? (int)(m - i0) : MT;
  float ln[2][MT][2], acc[2][MT];
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < MT; i++) ln[r][i][0] = ln[r][i][1] = acc[r][i] = 0.0f;

  __syncthreads(); /* the previous tile is done with sm */
  if (stages > 0) {
    gk_q8x_w_stage<Bits, gk_q8s_smem<Bits>::WS>(sm.w[0], w32, n, nb, j0, 0);
    gk_q8x_round_rows<Bits, Q8S_PIECE>(sm.xq, sm.dx, sm.sb, x, k, i0, xrows, 0,
                                       nb < Q8S_PIECE ? (int)nb : Q8S_PIECE);
    gk_cp_async_wait<0>();
    __syncthreads();
  }
  for (int64_t s = 0; s < stages; s += 2) {
    gk_q8s_step<Bits, MT, 0>(sm, x, w32, n, k, nb, i0, xrows, j0, s, ln, acc);
    if (s + 1 < stages)
      gk_q8s_step<Bits, MT, 1>(sm, x, w32, n, k, nb, i0, xrows, j0, s + 1, ln, acc);
  }
  const int lane = gk_lane();
  if (lane % Q8X_KB == 0)
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const int64_t j = j0 + 4 * gk_group() + lane / Q8X_KB + r * (Q8X_COLS / 2);
#pragma unroll
      for (int i = 0; i < MT; i++)
        if (i < xrows && j < n) y[(i0 + i) * n + j] = acc[r][i];
    }
}

#endif /* GK_Q8X_STREAM_CUH */
