/*
 * q8x_mma.cuh - qmatmul's int8 path for many rows of x (prefill) on tensor
 * cores, in two launches, as llama.cpp's quantize + mul_mat_q:
 *
 *   qmatmul_q8x_x(x, xq, m, k)         rounds x to int8 per block of 32
 *       columns exactly as qmatmul_q8x does (docs/weights.md, "int8 x": the
 *       same codes, dx and sb bits) into records of Q8X_REC bytes: the 32
 *       codes in this BITS's operand order (gk_q8x_pos), dx, sb, 8 bytes of
 *       zeros. xq is [m][k / 32] records, rounded once per call.
 *   qmatmul_q8x_mm(xq, w, y, m, n, k)  y = x W^T from those records and W
 *       in the original block format, on int8 mma.sync (m16n8k32, s8 x u8
 *       -> s32): an instruction's k = 32 is one block, so its sum is the
 *       block's integer i_b, exactly.
 *
 * y[i][j] is, over the blocks b in order from acc = 0,
 *     acc = fmaf((float)i_b, d_b * dx_b, acc);  acc = fmaf(m_b, sb_b, acc)
 * (d_b * dx_b rounded): qmatmul_q8x's integers and rounded x, not its
 * float order (16 lanes a chunk, no fma), so y differs from qmatmul_q8x's
 * in the last bits, within the same error bound, and does not depend on
 * the grid.
 *
 * Tiles: a block of QM_THREADS (8 groups of 32) computes 128 rows of x by
 * Q8M_COLS rows of W, group w a 64 x 32 corner of it (rows 64 (w % 2) of
 * x, rows 32 (w / 2) of W) as 4 x 4 mma tiles (HIP's dot products: 64 rows
 * of x, 32 x 32 corners; gk_q8m_geo). x's records and W's
 * blocks stream through GK_Q8M_STAGES shared-memory stages of Q8M_KB
 * blocks (cp.async: 16 bytes a piece for the records, 4 for W, whose
 * blocks are not 16-byte aligned): 4 on sm_80 and newer, the 3 next
 * stages in flight while this one is used (94 KB of dynamic shared
 * memory, the launch row's `shared`), 2 on sm_75 and in HIP (static, 48 KB
 * at most).
 * B fragments come from the code words as they lie: operand word o of a
 * block is code word o / P shifted by Bits * (o % P) and masked to one
 * code a byte (P = 8 / Bits), the order the records' codes are in, so one
 * shift and one and make a fragment register.
 *
 * (float)i_b costs one add: the accumulators start at 0x4B400000, the bits
 * of 1.5 * 2^23, so the mma leaves the bits of 1.5 * 2^23 + i_b (|i_b| <=
 * 32 * 255 * 127 < 2^22), and subtracting 1.5 * 2^23 gives i_b exactly.
 */
#ifndef GK_Q8X_MMA_CUH
#define GK_Q8X_MMA_CUH

#include "q8x.cuh"

#define Q8M_COLS 128    /* rows of W a block */
#define Q8M_KB 2        /* blocks of 32 columns a stage */
#define Q8M_GROUP 8     /* tiles of x's rows a group walks W together (gk_grouped_tiles) */
#define Q8M_XSTRIDE 112 /* bytes of a stage's row of x: its records + 16, so
                           that the 8 rows a fragment load reads hit
                           distinct banks */

/* The rows of x of a block's tile: MT 16-row mma tiles a group, and two
 * groups across them: 128 rows on mma.sync (a group's corner of y 64 x
 * 32), 64 in HIP's dot products (32 x 32), where a thread's 64
 * accumulators made clang 19 spill 96 to 432 bytes (gfx942, gfx11).
 * -DGK_Q8M_MT=2 builds the mma.sync tile of before (64 rows, 32 x 32
 * corners, two blocks an SM: qmatmul.cu), which was slower on an H200
 * (docs/gpu-speed.md, "Measured on an H200"). */
#ifndef GK_Q8M_MT
#define GK_Q8M_MT 4
#endif
template <bool Direct>
struct gk_q8m_geo {
  static_assert(GK_Q8M_MT == 2 || GK_Q8M_MT == 4, "GK_Q8M_MT: 2 or 4 tiles of 16 rows");
  enum { MT = Direct ? 2 : GK_Q8M_MT, ROWS = 2 * 16 * MT };
};

/* The stages x and W stream through. One block an SM runs the tile, so
 * while a stage is multiplied (~720 instructions a warp at BITS 4, about
 * 0.7 us of its scheduler's issue for the 2 warps on it) only the stages
 * in flight hide the copy's latency: with 2, one stage of ~17 KB an SM
 * (BITS 4) from L2 had that time to land, about what it takes at L2's
 * bandwidth per SM alone, before latency. With 4 (CUTLASS's multistage
 * mma.sync GEMMs take 3 to 5), three are in flight and a stage costs one
 * block barrier instead of two. Their 94 KB (BITS 8; 66 KB at BITS 1) are
 * dynamic shared memory, which sm_75 (64 KB a block) cannot give: sm_75's
 * images (and compute_75's PTX, and HIP) keep 2 stages in static shared
 * memory. The recipe's sections say so in their launch rows' `shared`. On
 * an H200 (2026-11-29) 4 stages were within 1% of 2 (the copy's stalls
 * were its instructions' queue, gk_q8m_load_full): kept, as the model asks. */
#ifndef GK_Q8M_STAGES
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__HIPCC__)
#define GK_Q8M_STAGES 4
#else
#define GK_Q8M_STAGES 2
#endif
#endif

/* qmatmul_q8x_x: thread t of block (x, y) rounds blocks x * QM_THREADS + t,
 * + gridDim.x * QM_THREADS, ... of rows y, y + gridDim.y, ... */
template <int Bits>
GK_DEV void gk_q8x_x(const float *x, void *xq, int64_t m, int64_t k) {
  const int64_t nb = k / GK_QBLOCK;
  if (m <= 0 || nb <= 0) return;
  for (int64_t i = blockIdx.y; i < m; i += gridDim.y)
    for (int64_t b = (int64_t)blockIdx.x * QM_THREADS + threadIdx.x; b < nb;
         b += (int64_t)gridDim.x * QM_THREADS) {
      unsigned char *rec = (unsigned char *)xq + (i * nb + b) * Q8X_REC;
      float *f = (float *)(rec + 32); /* dx, sb, zeros */
      gk_q8x_round_block<Bits>(x + i * k + b * GK_QBLOCK, (uint32_t *)rec, f, f + 1);
      f[2] = 0.0f, f[3] = 0.0f;
    }
}

/* A W row's d and m of a block, as floats (one 8-byte load). */
struct __attribute__((aligned(8))) gk_q8m_dm2 {
  float d, m;
};

template <int Bits, int Rows, int Stages>
struct gk_q8m_smem {
  enum { BW = 1 + Bits, WW = Q8M_KB * BW }; /* words of a W block, of a stage's W row */
  enum { ROWS = Rows, STAGES = Stages };
  static_assert(Stages >= 2, "a stage in flight while one is multiplied");
  unsigned char x[Stages][Rows * Q8M_XSTRIDE];
  uint32_t w[Stages][Q8M_COLS * WW];
  /* The stage's d and m of the 32 rows of W of pair q of groups (groups 2q
   * and 2q + 1, which share them) as floats (gk_q8m_dm), [q][kb][row]:
   * converted once by the pair, where each of the 8 lanes that read a row
   * converted them again. */
  gk_q8m_dm2 dm[QM_GROUPS / 2][Q8M_KB][32];
};

/* The pair of groups gw / 2 converts d and m of its 32 rows of W (from
 * wr), blocks 0 .. Q8M_KB - 1 of stage st, into sm.dm[gw / 2] (group 2q
 * the even blocks, 2q + 1 the odd ones: one a lane), and meets at named
 * barrier 1 + gw / 2 (64 threads): 2 conversions a lane a stage, where
 * each lane made 16 a block of k (a row's header was converted by the 8
 * lanes that read it; counted in the sm_90a cubin). The mma form only:
 * HIP's dot products read the block's header as it lies. */
template <class S>
GK_DEV void gk_q8m_dm(S &sm, int st, int wr, int gw) {
  static_assert(Q8M_KB % 2 == 0, "the blocks of a stage split between the pair");
#pragma unroll
  for (int e = gk_lane() + 32 * (gw % 2); e < 32 * Q8M_KB; e += 64) {
    const int kb = e / 32, r = e % 32;
    const uint32_t head = sm.w[st][(wr + r) * S::WW + kb * S::BW];
    sm.dm[gw / 2][kb][r] = {gk_h2f((uint16_t)(head & 0xffffu)), gk_h2f((uint16_t)(head >> 16))};
  }
  gk_bar_sync<2 * GK_GROUP>(1 + gw / 2);
}

/* Starts copying blocks b0 .. b0 + Q8M_KB - 1 of x rows i0 .. and W rows
 * j0 .. into `stage` (zeros past m, n and nb: they add nothing), by the
 * whole block, as one cp.async group per thread. The last stage's when it
 * is half a stage (odd nb); whole ones go through gk_q8m_load_full. Out of
 * line: inlined beside that, it made ptxas 13.0 spill (sm_80, sm_90a). */
template <class S>
GK_DEV_NOINLINE void gk_q8m_load(S &sm, int stage, const unsigned char *xq, const uint32_t *w,
                                 int64_t m, int64_t n, int64_t nb, int64_t i0, int64_t j0,
                                 int64_t b0) {
  constexpr int XP = Q8X_REC / 16; /* 16-byte pieces of a record */
  for (int e = (int)threadIdx.x; e < S::ROWS * Q8M_KB * XP; e += QM_THREADS) {
    const int r = e / (Q8M_KB * XP), c = e % (Q8M_KB * XP);
    const int64_t i = i0 + r, b = b0 + c / XP;
    const bool in = i < m && b < nb;
    gk_cp_async16(&sm.x[stage][r * Q8M_XSTRIDE + c * 16],
                  in ? xq + (i * nb + b) * Q8X_REC + (c % XP) * 16 : xq, in);
  }
  for (int e = (int)threadIdx.x; e < Q8M_COLS * S::WW; e += QM_THREADS) {
    const int r = e / S::WW, c = e % S::WW;
    const int64_t j = j0 + r, b = b0 + c / S::BW;
    const bool in = j < n && b < nb;
    gk_cp_async4(&sm.w[stage][r * S::WW + c], in ? w + (j * nb + b) * S::BW + c % S::BW : w,
                 in);
  }
  gk_cp_async_commit();
}

/* The same for a whole stage (b0 + Q8M_KB <= nb): its pieces (16 bytes of
 * x, 4 of W) in row-major order, piece e (and e + QM_THREADS, ...) a
 * thread's, so that a warp's cp.async takes 32 consecutive pieces of 2 to
 * 8 rows. The first form gave each row 2 threads, so that each instruction
 * touched 16 rows: on an H200 (Nsight Compute, 2026-11-29, m = 512, BITS
 * 4) the copies' LSU queue was full (lg_throttle) and the registers they
 * had read waited on it (long_scoreboard), a quarter of the stall samples.
 * gk_q8m_copy_at sets a thread's offsets from the tile's first rows at
 * block 0 once a tile, so that a stage costs a piece an add and a
 * cp.async. Rows past m and n copy row m - 1 and n - 1 (inside the
 * tensors): row i of x and row j of W meet in y's (i, j) alone, which is
 * not written past m and n. The offsets are 32-bit: rows of more than
 * Q8M_NB_MAX blocks (k past 2^25) take gk_q8m_load's walk. */
#define Q8M_NB_MAX (1 << 20)
template <class S>
struct gk_q8m_copy {
  enum {
    XP = Q8X_REC / 16,                 /* 16-byte pieces of a record */
    XN = S::ROWS * Q8M_KB * XP,        /* of a stage's x */
    XT = (XN + QM_THREADS - 1) / QM_THREADS, /* a thread's: 3 (128 rows), 2 */
    WT = Q8M_COLS * S::WW / QM_THREADS /* words of W a thread's: Bits + 1 */
  };
  static_assert(Q8M_COLS * S::WW % QM_THREADS == 0, "W's words split evenly");
  const unsigned char *x; /* row i0 of x at block 0 */
  const uint32_t *w;      /* row j0 of W at block 0 */
  uint32_t xo[XT], xd[XT]; /* a piece of x: its byte offset from x, and in the stage */
  uint32_t wo[WT];        /* a word of W: its offset from w (in the stage: piece e) */
};

template <class S>
GK_DEV gk_q8m_copy<S> gk_q8m_copy_at(const unsigned char *xq, const uint32_t *w, int64_t m,
                                     int64_t n, int64_t nb, int64_t i0, int64_t j0) {
  typedef gk_q8m_copy<S> C;
  constexpr int XR = Q8M_KB * C::XP; /* pieces of a row of x */
  const int t = (int)threadIdx.x;
  C c;
  c.x = xq + i0 * nb * Q8X_REC;
  c.w = w + j0 * nb * S::BW;
#pragma unroll
  for (int p = 0; p < C::XT; p++) {
    const int e = t + QM_THREADS * p, r = e / XR, q = e % XR;
    c.xo[p] = (uint32_t)((i0 + r < m ? r : m - 1 - i0) * nb * Q8X_REC + 16 * q);
    c.xd[p] = (uint32_t)(r * Q8M_XSTRIDE + 16 * q);
  }
#pragma unroll
  for (int p = 0; p < C::WT; p++) {
    const int e = t + QM_THREADS * p, r = e / S::WW, q = e % S::WW;
    c.wo[p] = (uint32_t)((j0 + r < n ? r : n - 1 - j0) * nb * S::BW + q);
  }
  return c;
}

template <class S>
GK_DEV void gk_q8m_load_full(S &sm, int stage, const gk_q8m_copy<S> &c, int64_t b0) {
  typedef gk_q8m_copy<S> C;
  const int t = (int)threadIdx.x;
  const unsigned char *xs = c.x + b0 * Q8X_REC;
#pragma unroll
  for (int p = 0; p < C::XT; p++)
    if (C::XN % QM_THREADS == 0 || t + QM_THREADS * p < C::XN)
      gk_cp_async16(&sm.x[stage][c.xd[p]], xs + c.xo[p], true);
  const uint32_t *ws = c.w + b0 * S::BW;
#pragma unroll
  for (int p = 0; p < C::WT; p++)
    gk_cp_async4(&sm.w[stage][t + QM_THREADS * p], ws + c.wo[p], true);
  gk_cp_async_commit();
}

/* Block kb of stage st into the group's 64 x 32 corner (rows xr of x, wr
 * of W): acc[mi][ni][e] as an mma D fragment (rows 16 mi + g, + 8;
 * columns 8 ni + 2t, + 1), on int8 mma.sync (NVIDIA, and the emulator
 * through gk_mma_s8u8_16832's twin). A's fragments come by ldmatrix, one
 * for each 16 rows: lane L gives the address of row L % 8 + 8 (L / 8 % 2)
 * of the tile, at byte 16 (L / 16) of its record, and the four 8 x 8
 * matrices of 16-bit pairs it returns are the m16n8k32 fragment's a[0] ..
 * a[3] (rows g and g + 8, codes 4t and 16 + 4t). Each B fragment (2 words
 * from the codes, a shift and an and each) and each W row's scales serve 4
 * mma tiles, where the 32 x 32 corner before served 2. HIP takes the
 * second form below, in byte dot products (GK_MMA_DIRECT: no AMD matrix
 * path is written yet; the twin's 32 shuffles an instruction, which clang
 * hoisted across the unrolled tile, kept 256 VGPRs and spilled 184 to 280
 * bytes of scratch). Both sum each block's integer i_b exactly, so y has
 * the same bits. */
template <int Bits, class S>
GK_DEV void gk_q8m_block(const S &sm, int st, int kb, int xr, int wr, float (*acc)[4][4],
                         gk_bool<false>) {
  constexpr int P = 8 / Bits;
  const uint32_t mask = GK_QMASK(Bits) * 0x01010101u;
  const int lane = gk_lane(), g = lane / 4, t = lane % 4;
  /* Operand words t and 4 + t of a block: their code words and shifts. */
  const int u0 = t / P, s0 = Bits * (t % P), u1 = (4 + t) / P, s1 = Bits * ((4 + t) % P);
  /* A fragments of the group's 16-row tiles, and their rows' dx, sb. */
  constexpr int MT = gk_q8m_geo<false>::MT;
  uint32_t a[MT][4];
  float dx[MT][2], sb[MT][2];
  const unsigned char *lx = &sm.x[st][(xr + lane % 8 + 8 * (lane / 8 % 2)) * Q8M_XSTRIDE +
                                       kb * Q8X_REC + 16 * (lane / 16)];
#pragma unroll
  for (int mi = 0; mi < MT; mi++) {
    gk_ldmatrix_x4(a[mi], (const uint16_t *)(lx + 16 * mi * Q8M_XSTRIDE));
    for (int r = 0; r < 2; r++) {
      const float *f =
          (const float *)&sm.x[st][(xr + 16 * mi + g + 8 * r) * Q8M_XSTRIDE + kb * Q8X_REC + 32];
      dx[mi][r] = f[0];
      sb[mi][r] = f[1];
    }
  }
#pragma unroll
  for (int ni = 0; ni < 4; ni++) {
    const uint32_t *blk = &sm.w[st][(wr + 8 * ni + g) * S::WW + kb * S::BW];
    const uint32_t b[2] = {(blk[1 + u0] >> s0) & mask, (blk[1 + u1] >> s1) & mask};
    /* The scales of this lane's two W rows (columns 2t, 2t + 1 of D),
     * converted by gk_q8m_dm. */
    float d[2], mo[2];
    for (int c = 0; c < 2; c++) {
      const gk_q8m_dm2 dm = sm.dm[gk_group() / 2][kb][8 * ni + 2 * t + c];
      d[c] = dm.d;
      mo[c] = dm.m;
    }
#pragma unroll
    for (int mi = 0; mi < MT; mi++) {
      int s[4];
      gk_mma_s8u8_16832(s, a[mi], b, Q8X_MAGIC);
      for (int e = 0; e < 4; e++) {
        const int r = e >> 1, c = e & 1;
        const float ib = gk_q_f32_from_bits((uint32_t)s[e]) - 12582912.0f; /* exact */
        float v = fmaf(ib, gk_fmul(d[c], dx[mi][r]), acc[mi][ni][e]);
        acc[mi][ni][e] = fmaf(mo[c], sb[mi][r], v);
      }
    }
  }
}

/* The same in dot products: the lane's rows of x (16 mi + g, + 8) and of
 * W (8 ni + 2t, + 1) read from the stage, operand word o of a block being
 * record word o and code word o / P shifted by Bits (o % P) and masked
 * (the words an mma fragment takes), i_b summed by gk_dp4a_us (AMD's
 * byte dot products): no scratch on any AMD processor target, 100 to 230
 * VGPRs (docs/weights.md). */
template <int Bits, class S>
GK_DEV void gk_q8m_block(const S &sm, int st, int kb, int xr, int wr, float (*acc)[4][4],
                         gk_bool<true>) {
  constexpr int P = 8 / Bits;
  const uint32_t mask = GK_QMASK(Bits) * 0x01010101u;
  const int lane = gk_lane(), g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < gk_q8m_geo<true>::MT; mi++) {
    uint32_t xw[2][8];
    float dx[2], sb[2];
    for (int r = 0; r < 2; r++) {
      const unsigned char *rec =
          &sm.x[st][(xr + 16 * mi + g + 8 * r) * Q8M_XSTRIDE + kb * Q8X_REC];
      for (int o = 0; o < 8; o++) xw[r][o] = ((const uint32_t *)rec)[o];
      dx[r] = ((const float *)(rec + 32))[0];
      sb[r] = ((const float *)(rec + 32))[1];
    }
#pragma unroll
    for (int ni = 0; ni < 4; ni++)
#pragma unroll
      for (int c = 0; c < 2; c++) {
        const uint32_t *blk = &sm.w[st][(wr + 8 * ni + 2 * t + c) * S::WW + kb * S::BW];
        const float d = gk_h2f((uint16_t)(blk[0] & 0xffffu)), mo = gk_h2f((uint16_t)(blk[0] >> 16));
        int ib[2] = {0, 0};
        for (int o = 0; o < 8; o++) {
          const uint32_t ww = (blk[1 + o / P] >> (Bits * (o % P))) & mask;
          for (int r = 0; r < 2; r++) ib[r] = gk_dp4a_us<Bits>(ww, xw[r][o], ib[r]);
        }
        for (int r = 0; r < 2; r++) {
          float v = fmaf((float)ib[r], gk_fmul(d, dx[r]), acc[mi][ni][2 * r + c]);
          acc[mi][ni][2 * r + c] = fmaf(mo, sb[r], v);
        }
        /* No load of the next (ni, c) above this one's math: without this
         * barrier clang hoists them all (hipcc 5.2 spilled 650 to 800
         * bytes; now 183 to 242 VGPRs instead of 81 to 179). */
        asm volatile("" ::: "memory");
      }
  }
}

/* Starts copying stage j of the tile (blocks Q8M_KB j ..) into slot `slot`
 * as one cp.async group: a whole stage by gk_q8m_load_full, the last half
 * one (odd nb) by gk_q8m_load's walk, and past the tile's blocks an empty
 * group, so that every trip of the loop commits one and its wait counts
 * the same. */
template <class S>
GK_DEV void gk_q8m_stage(S &sm, int slot, const gk_q8m_copy<S> &cp, const unsigned char *xq,
                         const uint32_t *w, int64_t m, int64_t n, int64_t nb, int64_t i0,
                         int64_t j0, int64_t j) {
  const int64_t b0 = j * Q8M_KB;
  if (b0 + Q8M_KB <= nb && nb <= Q8M_NB_MAX)
    gk_q8m_load_full(sm, slot, cp, b0);
  else if (b0 < nb)
    gk_q8m_load(sm, slot, xq, w, m, n, nb, i0, j0, b0);
  else
    gk_cp_async_commit();
}

/* Trip j of the tile's loop (below): stage j, in slot st (j % STAGES),
 * multiplied while stage j + STAGES - 1 starts into the slot before it. */
template <int Bits, bool Direct, class S>
GK_DEV void gk_q8m_trip(S &sm, int st, const gk_q8m_copy<S> &cp, const unsigned char *xq,
                        const uint32_t *w, int64_t m, int64_t n, int64_t nb, int64_t i0,
                        int64_t j0, int64_t j, int xr, int wr, int gw, float (*acc)[4][4]) {
  constexpr int NS = S::STAGES;
  gk_cp_async_wait<NS - 2>(); /* stage j's group has landed */
  __syncthreads();            /* everyone's; and stage j - 1's slot is read */
  gk_q8m_stage(sm, st == 0 ? NS - 1 : st - 1, cp, xq, w, m, n, nb, i0, j0, j + NS - 1);
  /* HIP's copies are loads and stores (no cp.async): none moved into the
   * products below, where clang 19 then held them and spilled
   * (gfx11-generic: 256 to 288 bytes of scratch, against 96 to 224 when a
   * block barrier stood between them). */
  if (Direct) asm volatile("" ::: "memory");
  if (!Direct) gk_q8m_dm(sm, st, wr, gw);
#pragma unroll
  for (int kb = 0; kb < Q8M_KB; kb++)
    gk_q8m_block<Bits>(sm, st, kb, xr, wr, acc, gk_bool<Direct>());
}

/* Trips j + St .. j + STAGES - 1 of the tile's loop (those < stages): the
 * ring unrolled, so that every slot index is a constant. With the slot a
 * variable, ptxas 13.0 (sm_90a, BITS 4) took each shared-memory address
 * of a trip anew from the thread's index, ~100 of its 772 instructions;
 * now the ring's first trip sets them (773), and the other three take
 * them with constant offsets (658 each): 687 a trip (BITS 1, 2, 8: 725,
 * 749, 729 before; 671, 694, 663 now), for 10 to 28 registers more (207
 * to 255, one block an SM either way; no spill). The mma form only: on
 * HIP (the dot products) clang 19 spilled 80 to 256 bytes unrolled. */
template <int Bits, bool Direct, int St, class S>
GK_DEV void gk_q8m_ring(S &, const gk_q8m_copy<S> &, const unsigned char *, const uint32_t *,
                        int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int,
                        int, int, float (*)[4][4], gk_bool<false>) {}
template <int Bits, bool Direct, int St, class S>
GK_DEV void gk_q8m_ring(S &sm, const gk_q8m_copy<S> &cp, const unsigned char *xq,
                        const uint32_t *w, int64_t m, int64_t n, int64_t nb, int64_t i0,
                        int64_t j0, int64_t j, int64_t stages, int xr, int wr, int gw,
                        float (*acc)[4][4], gk_bool<true>) {
  if (j + St >= stages) return; /* the block's: every thread leaves together */
  gk_q8m_trip<Bits, Direct>(sm, St, cp, xq, w, m, n, nb, i0, j0, j + St, xr, wr, gw, acc);
  gk_q8m_ring<Bits, Direct, St + 1>(sm, cp, xq, w, m, n, nb, i0, j0, j, stages, xr, wr, gw, acc,
                                    gk_bool<(St + 1 < S::STAGES)>());
}

/* One block's tile: rows i0 .. i0 + ROWS - 1 of x (those < m; ROWS by
 * gk_q8m_geo) against rows j0 .. j0 + Q8M_COLS - 1 of W (those < n),
 * through S::STAGES stages (CUTLASS's multistage loop): stages 0 ..
 * STAGES - 2 are started first; trip j waits for stage j (STAGES - 2
 * groups left in flight), meets the block at one barrier, after which
 * every thread's copies of stage j are in and stage j - 1's slot is read
 * by all, starts stage j + STAGES - 1 into that slot, and multiplies
 * stage j (gk_q8m_trip: STAGES trips a turn of the ring, unrolled). */
template <int Bits, bool Direct, class S>
GK_DEV void gk_q8m_tile(S &sm, const unsigned char *xq, const uint32_t *w, float *y, int64_t m,
                        int64_t n, int64_t k, int64_t i0, int64_t j0) {
  typedef gk_q8m_geo<Direct> G;
  static_assert((int)S::ROWS == (int)G::ROWS, "the stages hold the tile's rows of x");
  constexpr int NS = S::STAGES;
  const int64_t nb = k / GK_QBLOCK, stages = (nb + Q8M_KB - 1) / Q8M_KB;
  const int gw = gk_group(), lane = gk_lane(), g = lane / 4, t = lane % 4;
  static_assert(QM_GROUPS == 8 && 4 * 32 == Q8M_COLS,
                "the 8 groups: 2 halves of x's rows by 4 quarters of W's");
  const int xr = 16 * G::MT * (gw % 2), wr = 32 * (gw / 2);
  float acc[G::MT][4][4];
  for (int mi = 0; mi < G::MT; mi++)
    for (int ni = 0; ni < 4; ni++)
      for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;

  const gk_q8m_copy<S> cp = gk_q8m_copy_at<S>(xq, w, m, n, nb, i0, j0);
  __syncthreads(); /* the previous tile's stages are read */
  if (stages > 0)
#pragma unroll
    for (int s = 0; s < NS - 1; s++) gk_q8m_stage(sm, s, cp, xq, w, m, n, nb, i0, j0, s);
  if (!Direct) { /* the ring unrolled (gk_q8m_ring) */
    for (int64_t j = 0; j < stages; j += NS)
      gk_q8m_ring<Bits, Direct, 0>(sm, cp, xq, w, m, n, nb, i0, j0, j, stages, xr, wr, gw, acc,
                                   gk_bool<true>());
  } else { /* HIP: the slot a variable (unrolled, clang 19 spilled 80 to 256 bytes) */
    for (int64_t j = 0; j < stages; j++)
      gk_q8m_trip<Bits, Direct>(sm, (int)(j % NS), cp, xq, w, m, n, nb, i0, j0, j, xr, wr, gw,
                                acc);
  }
  gk_cp_async_wait<0>(); /* none left in flight past the tile (the empty groups) */
  for (int mi = 0; mi < G::MT; mi++)
    for (int ni = 0; ni < 4; ni++)
      for (int r = 0; r < 2; r++) {
        const int64_t i = i0 + xr + 16 * mi + g + 8 * r, jc = j0 + wr + 8 * ni + 2 * t;
        if (i >= m) continue;
        if (jc < n) y[i * n + jc] = acc[mi][ni][2 * r];
        if (jc + 1 < n) y[i * n + jc + 1] = acc[mi][ni][2 * r + 1];
      }
}

/* Where a block's stages S lie: gk_q8m_at<S, false>::get(), static
 * shared memory (2 stages, within its 48 KB; the emulator's and HIP's), or
 * gk_q8m_at<S, true>::get(), the launch's dynamic shared memory (more
 * stages, CUDA), which traps when the launch gives less than S takes
 * (%dynamic_smem_size), as flash_attention's gk_fa_shared does. The walk
 * below calls get() inside its lambda rather than capturing a reference:
 * captured, the stages were a flat pointer to HIP's clang 19, which then
 * spilled 288 bytes on gfx11-generic (BITS 1), against 112. */
template <class S, bool Dynamic>
struct gk_q8m_at {
  GK_DEV S &get(void) {
#if !defined(GK_GPU_EMULATE)
    static_assert(sizeof(S) <= 48 * 1024, "static shared memory: 48 KB");
#endif
    __shared__ __attribute__((aligned(16))) S sm;
    return sm;
  }
};
template <class S>
struct gk_q8m_at<S, true> {
  GK_DEV S &get(void) {
#if !defined(GK_GPU_EMULATE) && !defined(__HIPCC__)
    extern __shared__ __attribute__((aligned(16))) unsigned char gk_q8m_dyn[];
    uint32_t dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < sizeof(S)) __trap(); /* the launch row's `shared` is too small */
    return *reinterpret_cast<S *>(gk_q8m_dyn);
#else
    static_assert(sizeof(S) == 0, "HIP and the emulator take static shared memory");
#endif
  }
};

/* qmatmul_q8x_mm: the tiles of y in groups of Q8M_GROUP tiles of x's rows
 * (gk_grouped_tiles). Blocks run in about that order, so the ~132 a card
 * runs at once (one an SM) share 8 tiles of x and ~17 of W: at k = 8192
 * these are 13 and 11 MB, which L2 keeps while the group walks W, so x
 * comes from memory about once and W m / 1024 times. (Walking all of x for
 * each tile of W, as at first, read x n / 128 times: at m = 4096, n = k =
 * 8192, 3.2 GB of a 50 MB x that L2 cannot hold, 0.75 ms at 4.24 TB/s; now
 * about 0.2 GB. A model, not measured.) Every bound is per block: the
 * barriers are reached by all. */
template <int Bits, bool Direct = GK_MMA_DIRECT, int Stages = GK_Q8M_STAGES>
GK_DEV void gk_q8x_mm(const void *xq, const void *w, float *y, int64_t m, int64_t n,
                      int64_t k) {
  constexpr int R = gk_q8m_geo<Direct>::ROWS;
  typedef gk_q8m_smem<Bits, R, Stages> S;
#if defined(GK_GPU_EMULATE) || defined(__HIPCC__)
  typedef gk_q8m_at<S, false> At;
#else
  typedef gk_q8m_at<S, (Stages > 2)> At;
#endif
  if (m <= 0 || n <= 0 || k < 0) return;
  gk_grouped_tiles((m + R - 1) / R, (n + Q8M_COLS - 1) / Q8M_COLS, Q8M_GROUP,
                   [&](int64_t bx, int64_t by) {
                     gk_q8m_tile<Bits, Direct>(At::get(), (const unsigned char *)xq,
                                               (const uint32_t *)w, y, m, n, k, bx * R,
                                               by * Q8M_COLS);
                   });
}

#endif /* GK_Q8X_MMA_CUH */
