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
 * rows x Q8S_KB = 4 blocks) is copied by cp.async in pieces of 16 bytes of
 * a row a group instruction (gk_q8x_w_stage), about one wavefront per 128
 * bytes, and each word is then read once from shared memory, conflict-free:
 * two wavefronts per 128 bytes of W where there were ~6.
 *
 * A ring of Q8S_RING stages (4; 8 at BITS 1 and 2, whose stages are
 * small): while one is multiplied the next Q8S_RING - 1 are in flight, 15
 * KB a block at BITS 4 (27 at BITS 8, 14 at BITS 1), two blocks an SM:
 * above DRAM's latency times its bandwidth (~4.4 TB/s x ~0.7 us / 132 SMs,
 * ~23 KB an SM). One barrier a stage: it publishes the stage that landed
 * and frees the one multiplied before, which the next copy then fills.
 *
 * Work of a thread: block kb = lane % 4 of each stage of row 8 g + lane / 4
 * of the block's 64 rows of W (g its group), against each row of x: 8 dp4a
 * a block and row of x, then the definition's float epilogue. Stage s feeds
 * chunk lane (4 s + kb) % 16 = 4 (s % 4) + kb: each thread keeps four float
 * lanes a row of x, one per s % 4, so the fold's h = 8 and h = 4 are sums
 * in the thread and h = 2, 1 xor shuffles over kb, the lanes the CPU's fold
 * pairs. x is rounded into shared memory Q8S_PIECE blocks at a time (one
 * block a thread, gk_q8x_round_block) while W's stages are in flight.
 */
#ifndef GK_Q8X_STREAM_CUH
#define GK_Q8X_STREAM_CUH

#include "q8x.cuh"

#define Q8X_KB 8     /* blocks of W a stage in q8x_batch.cuh's ring */
#define Q8S_KB 4     /* blocks of W a stage in this file's ring */
#define Q8S_PIECE 64 /* blocks of x rounded at a time: Q8X_XROWS * 64 = one a thread */

/* Starts copying blocks b0 .. b0 + KB - 1 of W rows j0 .. j0 + Q8X_COLS - 1
 * into dst (a row every WS words; zeros past n and nb), one cp.async group
 * a thread, by the whole block. Four threads a row: thread c copies words
 * c, c + 4, ..., so it needs one source pointer and constant offsets, and a
 * group instruction takes 16 bytes of each of 8 rows. */
template <int Bits, int KB, int WS>
GK_DEV void gk_q8x_w_stage(uint32_t *dst, const uint32_t *__restrict__ w, int64_t n,
                           int64_t nb, int64_t j0, int64_t b0) {
  constexpr int BW = 1 + Bits, SEG = KB * BW, TPR = QM_THREADS / Q8X_COLS;
  static_assert(SEG % TPR == 0, "a row's stage splits evenly");
  const int r = (int)threadIdx.x / TPR, c = (int)threadIdx.x % TPR;
  const int have = nb - b0 < KB ? (int)(nb - b0) * BW : SEG; /* words in range */
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
  /* Rows unpadded: a group reads rows 8 g + lane / 4 at block lane % 4,
   * words BW (32 g + lane) + u: for BW odd (BITS 2, 4, 8) 32 distinct
   * banks; BITS 1 (BW = 2) has two-way conflicts on its two words. */
  enum { BW = 1 + Bits, WS = Q8S_KB * BW, RING = Bits <= 2 ? 8 : 4 };
  uint32_t w[RING][Q8X_COLS * WS];
  uint32_t xq[Q8X_XROWS][Q8S_PIECE * 8];
  float dx[Q8X_XROWS][Q8S_PIECE], sb[Q8X_XROWS][Q8S_PIECE];
};

/* What a tile's steps share: x, W, the sizes, the tile's first rows of x
 * (i0, xrows of them) and W (j0). */
struct gk_q8s_job {
  const float *x;
  const uint32_t *w;
  int64_t n, k, nb, i0, j0;
  int xrows;
};

/* Stage s of the tile (its buffer s % RING): waits for it, starts the copy
 * of stage s + RING - 1 into the buffer stage s - 1 used, multiplies into
 * the float lanes ln[0] (the caller rotates ln, so that ln[j] holds slot
 * (s + j) % 4), and folds where s ends a chunk. */
template <int Bits, int MT>
GK_DEV void gk_q8s_step(gk_q8s_smem<Bits> &sm, const gk_q8s_job &a, int64_t s, float (*ln)[MT],
                        float *acc) {
  typedef gk_q8s_smem<Bits> S;
  const float *__restrict__ x = a.x;
  const uint32_t *__restrict__ w = a.w;
  const int64_t n = a.n, k = a.k, nb = a.nb, i0 = a.i0, j0 = a.j0;
  const int xrows = a.xrows;
  constexpr int P = 8 / Bits, RING = S::RING;
  const uint32_t rep = GK_QMASK(Bits) * 0x01010101u;
  const int64_t stages = (nb + Q8S_KB - 1) / Q8S_KB;
  const int lane = gk_lane(), kb = lane % Q8S_KB;
  /* Stages 0 .. s + RING - 2 are issued, one group each: stage s is in
   * when RING - 2 are left in flight. */
  gk_cp_async_wait<RING - 2>();
  __syncthreads(); /* stage s is everyone's; stage s - 1 is read */
  if (s + RING - 1 < stages)
    gk_q8x_w_stage<Bits, Q8S_KB, S::WS>(sm.w[(s + RING - 1) % RING], w, n, nb, j0,
                                        (s + RING - 1) * Q8S_KB);
  else
    gk_cp_async_commit(); /* an empty group: the count above stays right */
  const int64_t b = s * Q8S_KB + kb, p0 = b - b % Q8S_PIECE; /* this block, its piece */
  if (b < nb) {
    const int xb = (int)(b - p0);
    const uint32_t *blk =
        &sm.w[s % RING][(8 * gk_group() + lane / Q8S_KB) * S::WS + kb * S::BW];
    const uint32_t head = blk[0];
    const float d = gk_h2f((uint16_t)(head & 0xffffu)), mo = gk_h2f((uint16_t)(head >> 16));
    int is[MT]; /* from the bits of 1.5 * 2^23, as in q8x.cuh */
    for (int i = 0; i < MT; i++) is[i] = 0x4b400000;
    /* Operand words o = u P + sh (code word u, shift sh), in two halves of
     * 4, each half's x words one 16-byte load a row of x (from shared
     * memory, where the 8 threads of a block's x broadcast). */
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
      float &l = ln[0][i];
      l = gk_fadd(gk_fadd(l, gk_fmul(ib, gk_fmul(d, sm.dx[i][xb]))), gk_fmul(mo, sm.sb[i][xb]));
    }
  }
  if ((s + 1) % (Q8X_CHUNK / Q8S_KB) == 0 || s + 1 == stages) {
    /* The fold: h = 8 and 4 in the thread (lane 4 j + kb is slot j: (0 +
     * 2) + (1 + 3), the same floats whatever the rotation of ln, as float
     * addition commutes), h = 2 and 1 over kb; then the chunk's sum into
     * y's. Every thread of the group shuffles. */
#pragma unroll
    for (int i = 0; i < MT; i++) {
      float v = gk_fadd(gk_fadd(ln[0][i], ln[2][i]), gk_fadd(ln[1][i], ln[3][i]));
      for (int h = Q8S_KB / 2; h > 0; h /= 2) v = gk_fadd(v, GK_SHFL_XOR(v, h));
      acc[i] = gk_fadd(acc[i], v);
      ln[0][i] = ln[1][i] = ln[2][i] = ln[3][i] = 0.0f;
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
  typedef gk_q8s_smem<Bits> S;
  static_assert(MT <= Q8X_XROWS && Q8X_XROWS * Q8S_PIECE <= QM_THREADS,
                "a piece of x is one block a thread");
  static_assert(Q8X_CHUNK % (S::RING * Q8S_KB) == 0 && Q8S_PIECE % (S::RING * Q8S_KB) == 0 &&
                    S::RING % 4 == 0 && QM_THREADS / GK_GROUP * 8 == Q8X_COLS &&
                    GK_GROUP == 8 * Q8S_KB,
                "a group: 8 rows of W by 4 blocks; chunks and pieces whole turns of the ring");
  const uint32_t *w32 = (const uint32_t *)w;
  const int64_t nb = k / GK_QBLOCK, stages = (nb + Q8S_KB - 1) / Q8S_KB;
  const int xrows = m - i0 < MT ? (int)(m - i0) : MT;
  float ln[4][MT], acc[MT];
  for (int i = 0; i < MT; i++) ln[0][i] = ln[1][i] = ln[2][i] = ln[3][i] = acc[i] = 0.0f;

  __syncthreads(); /* the previous tile is done with sm */
  if (stages > 0) {
#pragma unroll
    for (int r = 0; r < S::RING - 1; r++) { /* a group each, empty past the end */
      if (r < stages)
        gk_q8x_w_stage<Bits, Q8S_KB, S::WS>(sm.w[r], w32, n, nb, j0, r * Q8S_KB);
      else
        gk_cp_async_commit();
    }
    gk_q8x_round_rows<Bits, Q8S_PIECE>(sm.xq, sm.dx, sm.sb, x, k, i0, xrows, 0,
                                       nb < Q8S_PIECE ? (int)nb : Q8S_PIECE);
  }
  const gk_q8s_job job = {x, w32, n, k, nb, i0, j0, xrows};
  /* Not unrolled: ptxas for sm_100 and sm_120 kept four unrolled steps'
   * registers apart and spilled; the rotation of ln is 4 MT moves a step. */
#pragma unroll 1
  for (int64_t s = 0; s < stages; s++) {
    if (s > 0 && s % (Q8S_PIECE / Q8S_KB) == 0) {
      /* A new piece of x. It waits for the last piece's readers; step s's
       * barrier publishes it, with the next stages of W in flight. */
      const int64_t p0 = s * Q8S_KB;
      __syncthreads();
      gk_q8x_round_rows<Bits, Q8S_PIECE>(sm.xq, sm.dx, sm.sb, x, k, i0, xrows, p0,
                                         nb - p0 < Q8S_PIECE ? (int)(nb - p0) : Q8S_PIECE);
    }
    gk_q8s_step<Bits, MT>(sm, job, s, ln, acc);
#pragma unroll
    for (int i = 0; i < MT; i++) {
      const float l0 = ln[0][i];
      ln[0][i] = ln[1][i], ln[1][i] = ln[2][i], ln[2][i] = ln[3][i], ln[3][i] = l0;
    }
  }
  const int lane = gk_lane();
  if (lane % Q8S_KB == 0) {
    const int64_t j = j0 + 8 * gk_group() + lane / Q8S_KB;
#pragma unroll
    for (int i = 0; i < MT; i++)
      if (i < xrows && j < n) y[(i0 + i) * n + j] = acc[i];
  }
}

#endif /* GK_Q8X_STREAM_CUH */
