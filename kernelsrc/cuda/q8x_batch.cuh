/*
 * q8x_batch.cuh - qmatmul_q8x for more than Q8X_XROWS rows of x (a decode
 * batch, speculative decoding, a prefill) on int8 tensor cores, with the
 * CPU images' bits: the arithmetic of q8x.cuh's top comment (docs/weights.md,
 * "int8 x"), operation by operation. And gk_qmatmul_q8x, the entry's walk
 * over the grid, which picks this tile (sm_80 and newer, past 4 rows of x)
 * or q8x.cuh's (up to 4 rows; sm_75 and HIP, every m).
 *
 * Why: the dp4a tile (q8x.cuh) takes 4 rows of x, so m = 16 reads W four
 * times, each load of a lane gathering words of 16 blocks 20 bytes apart,
 * and pays 8 dp4a per block, row of W and row of x. Here a block takes 16
 * rows of x by Q8X_COLS = 64 rows of W: W is read once for 16 rows, through
 * shared memory in 16-byte cp.async pieces (gk_q8x_w_stage; W's rows
 * 16-byte aligned, else q8x.cuh's tile takes every m), and
 * one mma.sync m16n8k32 (u8 codes as A, s8 x as B) gives a block's
 * integer sums i_b for 16 rows of W by 8 rows of x (its k = 32 is one
 * block). What remains per output and block is the definition's float
 * epilogue (6 operations, every one rounded: the floor of these bits).
 *
 * The 16 float lanes of a chunk (block b into lane b % 16, in block order):
 * group w of the block is pair p = w / 2 (rows 16 p .. 16 p + 15 of the
 * block's W rows, A of its two mma tiles, x's rows 0-7 and 8-15 their B)
 * and parity q = w % 2: it takes the
 * blocks b with b % 2 == q, so lane l = 2 s + q lives in its slot s. Each
 * thread keeps 8 slots x 2 tiles x 4 outputs = 64 floats. The fold
 * lane[l] += lane[l + h], h = 8, 4, 2, 1 is then slot[s] += slot[s + 4],
 * slot[s] += slot[s + 2], slot[0] += slot[1] inside each group, and only h
 * = 1 (lane 0 += lane 1) crosses from the odd group to the even one, one
 * float an output through shared memory, once a chunk.
 *
 * Stages of Q8X_KB = 8 blocks, two in a ring: while stage s is multiplied,
 * stage s + 1's W is in flight (cp.async) and its x is rounded into the
 * other buffer, two threads a block of x (gk_q8x_round_half); one barrier
 * a stage. Up to BITS 4, x's floats come a step ahead through shared
 * memory (gk_q8b_x_copy), in flight under the products as W is. A chunk
 * is 16 stages, so a stage's buffer (s % 2) is also which half of the
 * chunk's lanes it feeds: the ring is unrolled by two and every slot index
 * is a constant.
 *
 * Launch: qmatmul_q8x's row (grid m / 16 by n / 64, or smaller). Rows of x
 * past m are rounded as zeros (their outputs are not written); blocks past
 * k / 32 in the last stage are zeros, whose products change no sum.
 *
 * qmatmul_q8x_rec runs the same tile on x rounded once a call by
 * qmatmul_q8x_x (gk_q8x_rec, q8x.cuh): a stage's records are copied by
 * cp.async beside its W (gk_q8b_recs), into the same buffers the rounding
 * writes, and waited for at the same barrier; nothing else differs.
 */
#ifndef GK_Q8X_BATCH_CUH
#define GK_Q8X_BATCH_CUH

#include "q8x.cuh"

#define Q8B_ROWS 16 /* rows of x a block: mma's M */
#define Q8B_GROUP 16 /* tiles of x a group of tiles walks W with (gk_grouped_tiles) */

#define Q8X_KB 8 /* blocks of W a stage */
/* Whether the tile rounds x without the clamps where they change nothing
 * (gk_q8x_round_half's Fast): sm_80 to sm_90a, and the emulator. On sm_100
 * and sm_120 the tile's second path made ptxas 13.0 spill 24 to 116 bytes
 * in qmatmul_q8x around its call of the tile (once a tile); neither is a
 * target measured yet. */
#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define GK_Q8B_FAST 0
#else
#define GK_Q8B_FAST 1
#endif

/* Whether qmatmul_q8x takes this tile past Q8X_XROWS rows of x: on sm_80
 * and newer, and in the emulator, which runs both tiles. The others keep
 * q8x.cuh's dp4a tile for every m:
 * - sm_75: this tile's stages are 47 KB of shared memory at BITS 8, which
 *   every launch would reserve, m = 1 too; Turing has 64 KB an SM, so the
 *   decode would lose half its blocks an SM;
 * - HIP: gk_mma_s8u8_16832's HIP body is the emulator's twin (32 shuffles
 *   a call), and no AMD matrix path is written yet. */
#if defined(__HIPCC__) || (defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800)
#define GK_Q8X_SM80 0
#else
#define GK_Q8X_SM80 1
#endif

template <int Bits>
struct gk_q8b_smem {
  enum {
    BW = 1 + Bits,          /* words of a W block: the head, then the codes */
    SEG = Q8X_KB * BW,      /* words of a W row's stage: a multiple of 8 */
    /* A stage's W rows lie SEG words apart, with 4 words more after every
     * WG rows: each row starts 16-byte aligned (its 16-byte copies,
     * gk_q8x_w_stage), and the 8 rows of a fragment load start in
     * distinct groups of 4 banks (SEG = 8 mod 32: 4 rows 8 banks apart, the
     * next 4 shifted by 4; SEG = 16 mod 32 at BITS 1: 2 rows, then 4 on;
     * BITS 2's 24: 4 rows 24 apart, then 4 on), so that neither a code
     * load (words 1 .. 8 of the block at most) nor a head load conflicts.
     * The same words as 64 rows of SEG + 1 words, but at BITS 1. */
    WG = SEG % 32 == 16 ? 2 : 4,
    WSTAGE = Q8X_COLS * SEG + 4 * (Q8X_COLS / WG),
    XS = Q8X_KB * 8 + 4,    /* words of a stage's row of x: rows g and g + 8
                               of a fragment load 4 banks apart */
    /* Scales [block][row], blocks SS = 18 entries apart: a fragment's 8
     * rows of a block lie in 8 distinct bank pairs, and a group's write of
     * 2 rows x 8 blocks (gk_q8b_round) in 16 (pair 2 kb + r mod 16). With
     * blocks 16 entries apart those 16 writes fell on one bank pair: 16
     * passes a write (an H200, 2026-11-30, m = 16, BITS 4). */
    SS = Q8B_ROWS + 2,
    /* Whether x's floats come through shared memory (gk_q8b_x_copy): 16 KB
     * more, which static shared memory (48 KB a block) has room for up to
     * BITS 4 (48384 bytes in all); BITS 8's stages alone take 48384. */
    RAW = Bits <= 4
  };
  struct scale {
    float dx, sb;
  };
  uint32_t w[2][WSTAGE];
  uint32_t x[2][Q8B_ROWS * XS];
  scale s[2][Q8X_KB * SS];
  /* The floats of a stage of x, each rounding thread's 16 as 4 float4
   * QM_THREADS apart (so that a warp's loads take consecutive 16-byte
   * pieces); copied by its group (gk_q8b_x_copy). */
  float4 raw[RAW ? 4 * QM_THREADS : 1];
  /* The tile's rows, written once a tile (gk_q8b_rows) for the copies of
   * its whole stages (gk_q8b_w_full, gk_q8b_x_full): row r of the tile's
   * W (row n - 1 past n) and of its x (row m - 1 past m). */
  const uint32_t *wrow[Q8X_COLS];
  const float *xrow[Q8B_ROWS];
};

/* qmatmul_q8x's shared memory: one object for whichever tile a call
 * takes (static shared memory stays under 48 KB: BITS 8's stages are 47 KB). */
template <int Bits, int Sm80>
union gk_q8x_smem {
  gk_q8x_dsmem d;
  gk_q8b_smem<Bits> b;
};
template <int Bits>
union gk_q8x_smem<Bits, 0> {
  gk_q8x_dsmem d;
};

/* Where row r of a W stage starts in its buffer (the pads: gk_q8b_smem). */
template <int Bits>
GK_DEV int gk_q8b_wrow(int r) {
  typedef gk_q8b_smem<Bits> S;
  return r * S::SEG + 4 * (r / S::WG);
}

/* Starts copying blocks b0 .. b0 + Q8X_KB - 1 of W rows j0 .. j0 +
 * Q8X_COLS - 1 into stage buffer dst (zeros past n and nb), one cp.async
 * group a thread, by the whole block, in 16-byte pieces: where W and its
 * rows are 16-byte aligned (gk_q8b_w16: this tile's condition), which a
 * stage's blocks then are too (b0 is a multiple of 8). Four threads a
 * row: thread c of row r copies pieces c, c + 4, ... of its SEG / 4, from
 * one pointer at constant offsets; a warp instruction takes 64 bytes of
 * each of 8 rows and writes them in 4 passes, the fewest for 512 bytes.
 * The tile's earlier 4-byte copies took 32 bytes of each of 4 rows: on an
 * H200 (2026-11-30, m = 16, BITS 4) in 5 passes where 1 would do. A
 * thread a piece in piece order (512 consecutive bytes a warp) kept 3 to
 * 5 row pointers across the ring, and ptxas 13.0 spilled 44 bytes at
 * BITS 4. */
template <int Bits>
GK_DEV void gk_q8x_w_stage(uint32_t *dst, const uint32_t *__restrict__ w, int64_t n,
                           int64_t nb, int64_t j0, int64_t b0) {
  typedef gk_q8b_smem<Bits> S;
  constexpr int PR = S::SEG / 4, TPR = QM_THREADS / Q8X_COLS;
  static_assert(TPR == 4, "four threads a row");
  const int tid = gk_tid_here(); /* not hoisted: see there */
  const int r = tid / TPR, c = tid % TPR;
  /* Pieces of the row in range: nb and b0 are multiples of 4 here, so a
   * last stage's blocks fill whole pieces. */
  const int have = nb - b0 < Q8X_KB ? (int)(nb - b0) * S::BW / 4 : PR;
  const bool row = j0 + r < n;
  const uint32_t *src = row ? w + ((j0 + r) * nb + b0) * S::BW + 4 * c : w;
  uint32_t *to = dst + gk_q8b_wrow<Bits>(r) + 4 * c;
#pragma unroll
  for (int u = 0; u < (PR + TPR - 1) / TPR; u++) {
    if (PR % TPR != 0 && c + TPR * u >= PR) break;
    const bool in = row && c + TPR * u < have;
    gk_cp_async16(to + 4 * TPR * u, in ? src + 4 * TPR * u : w, in);
  }
  gk_cp_async_commit();
}

/*
 * The copies of a whole stage (all Q8X_KB blocks before nb), from the
 * tile's rows in shared memory (gk_q8b_rows): a pointer loaded and a
 * constant offset a piece, no test. Computed from threadIdx and the
 * tile's bounds each stage (gk_q8x_w_stage, gk_q8b_x_copy: 64-bit row
 * products, a test and a selected pointer a piece), a stage's copies took
 * 185 of its 736 instructions a thread (ptxas 13.0, sm_90a, BITS 4), as
 * many as x's rounding; held in registers across the ring, the pointers
 * made ptxas spill (the tile is at 124 of 128). Rows past n and m read
 * the last row again (gk_q8b_rows): their sums are not stored, and x's
 * rounding zeroes rows past m (gk_q8b_round). The last stage, when it is
 * short, takes the general copies (zeros past nb).
 */
template <int Bits>
GK_DEV void gk_q8b_w_full(const gk_q8b_smem<Bits> &sm, uint32_t *dst, int64_t b0) {
  typedef gk_q8b_smem<Bits> S;
  constexpr int PR = S::SEG / 4, TPR = QM_THREADS / Q8X_COLS;
  const int tid = gk_tid_here();
  const int r = tid / TPR, c = tid % TPR;
  const uint32_t *src = sm.wrow[r] + b0 * S::BW + 4 * c;
  uint32_t *to = dst + gk_q8b_wrow<Bits>(r) + 4 * c;
#pragma unroll
  for (int u = 0; u < (PR + TPR - 1) / TPR; u++) {
    if (PR % TPR != 0 && c + TPR * u >= PR) break;
    gk_cp_async16(to + 4 * TPR * u, src + 4 * TPR * u, true);
  }
  gk_cp_async_commit();
}

/* Whether this tile may take W: the buffer and each row (nb * BW words)
 * 16-byte aligned, for gk_q8x_w_stage's copies. Else gk_qmatmul_q8x takes
 * q8x.cuh's dp4a tile (4-byte loads) for every m: with 4-byte copies here
 * as well, the tile compiled twice, and ptxas 13.0 spilled in the kernel
 * at BITS 1 (sm_80 to sm_100). A k that is a multiple of 128 and a
 * buffer from cuMemAlloc (256-byte aligned) are 16-byte aligned. */
template <int Bits>
GK_DEV bool gk_q8b_w16(const void *w, int64_t nb) {
  return (uintptr_t)w % 16 == 0 && nb * (1 + Bits) % 4 == 0;
}

/* Which row of x (r) and block of the stage (kb) thread e rounds half h
 * of: two threads a block of x, a group two rows. */
struct gk_q8b_half {
  int h, r, kb;
};
GK_DEV gk_q8b_half gk_q8b_mine(void) {
  static_assert(QM_THREADS == 2 * Q8B_ROWS * Q8X_KB && 4 * Q8X_KB == GK_GROUP,
                "two threads a block of x, a group two rows");
  const int e = (int)threadIdx.x;
  return {e & 1, (e >> 1) / Q8X_KB, (e >> 1) % Q8X_KB};
}

/* Starts copying the group's half blocks of x for the stage at block b0
 * into sm.raw (zeros past m and nb), as a cp.async group of each thread's
 * own. The group's 32 half blocks (rows 2 gw and 2 gw + 1, 8 blocks each)
 * are 2 KB, 128 pieces of 16 bytes: instruction c takes 512 consecutive
 * bytes of row 2 gw + c / 2, lane l piece q = 32 (c % 2) + l of it (block
 * q / 8, half q % 8 / 4), which lane 8 c + l / 4 rounds (gk_q8b_mine) as
 * its piece l % 4. A thread copying its own half block took 16-byte pieces
 * 64 bytes apart, 16 cache lines a warp instruction: on an H200
 * (2026-11-30, m = 16, BITS 4) 32 sectors and 16 shared-memory passes
 * where 16 and 4 do. So the lanes read what others copied: gk_q8b_round
 * meets the group after each lane's wait, and this meets it before any
 * lane writes the buffer again. Through L1: every block of the grid reads
 * the same rows of x, and the SM's other block may be at a stage near this
 * one's (on an H200 at m = 16 the kernel's loads, these and W's, hit L1
 * 57% of the time). */
template <int Bits>
GK_DEV void gk_q8b_x_copy(gk_q8b_smem<Bits> &sm, const float *__restrict__ x, int64_t m,
                          int64_t k, int64_t nb, int64_t i0, int64_t b0) {
  const int tid = gk_tid_here(); /* not hoisted: see there */
  const int gw = tid / GK_GROUP, lane = tid % GK_GROUP;
  gk_group_sync(); /* the group has read the previous stage's floats */
  const int kbs = nb - b0 < Q8X_KB ? (int)(nb - b0) : Q8X_KB;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    const int64_t r = i0 + 2 * gw + c / 2;
    const bool in = r < m && 4 * (c % 2) + lane / 8 < kbs;
    /* The pointer selected, not its offset: an offset of 0 past m made
     * ptxas 13.0 spill 20 bytes at BITS 1 for sm_120. */
    const float *src = in ? x + r * k + b0 * GK_QBLOCK + 128 * (c % 2) + 4 * lane : x;
    gk_cp_async16<true>(&sm.raw[QM_THREADS * (lane % 4) + GK_GROUP * gw + 8 * c + lane / 4],
                        src, in);
  }
  gk_cp_async_commit();
}

/* gk_q8b_x_copy for a whole stage (b0 + Q8X_KB <= nb), from the tile's
 * rows (see gk_q8b_w_full): the same pieces into the same places. */
template <int Bits>
GK_DEV void gk_q8b_x_full(gk_q8b_smem<Bits> &sm, int64_t b0) {
  const int tid = gk_tid_here();
  const int gw = tid / GK_GROUP, lane = tid % GK_GROUP;
  gk_group_sync(); /* the group has read the previous stage's floats */
  const float *r0 = sm.xrow[2 * gw] + b0 * GK_QBLOCK + 4 * lane,
              *r1 = sm.xrow[2 * gw + 1] + b0 * GK_QBLOCK + 4 * lane;
#pragma unroll
  for (int c = 0; c < 4; c++)
    gk_cp_async16<true>(&sm.raw[QM_THREADS * (lane % 4) + GK_GROUP * gw + 8 * c + lane / 4],
                        (c / 2 ? r1 : r0) + 128 * (c % 2), true);
  gk_cp_async_commit();
}

/* Row r of the tile's x (row m - 1 past m) for gk_q8b_x_full's copies,
 * where x comes as floats; records need none. */
GK_DEV void gk_q8b_xrow(const float **row, const float *x, int64_t m, int64_t k, int64_t i0,
                        int r) {
  const int64_t i = i0 + r < m ? i0 + r : m - 1;
  *row = x + i * k;
}
GK_DEV void gk_q8b_xrow(const float **, gk_q8x_rec, int64_t, int64_t, int64_t, int) {}

/* Writes the tile's rows for gk_q8b_w_full and gk_q8b_x_full (read after
 * the block's next barrier). */
template <int Bits, class X>
GK_DEV void gk_q8b_rows(gk_q8b_smem<Bits> &sm, X x, const uint32_t *__restrict__ w, int64_t m,
                        int64_t n, int64_t k, int64_t nb, int64_t i0, int64_t j0) {
  const int tid = (int)threadIdx.x;
  if (tid < Q8X_COLS) {
    const int64_t j = j0 + tid < n ? j0 + tid : n - 1;
    sm.wrow[tid] = w + j * nb * gk_q8b_smem<Bits>::BW;
  } else if (tid < Q8X_COLS + Q8B_ROWS) {
    gk_q8b_xrow(&sm.xrow[tid - Q8X_COLS], x, m, k, i0, tid - Q8X_COLS);
  }
}

/* Rounds the stage at block b0 of x rows i0 .. i0 + 15 into stage `buf`
 * (zeros past m and nb), two threads a block of x: from sm.raw where the
 * stage has it (its copy landed: each lane's wait, then the group meets
 * here), else from x. By the whole block. */
template <int Bits>
GK_DEV void gk_q8b_round(gk_q8b_smem<Bits> &sm, int buf, const float *__restrict__ x,
                         int64_t m, int64_t k, int64_t nb, int64_t i0, int64_t b0) {
  typedef gk_q8b_smem<Bits> S;
  const gk_q8b_half me = gk_q8b_mine();
  const int h = me.h, r = me.r, kb = me.kb;
  const bool in = i0 + r < m && b0 + kb < nb;
  uint32_t codes[4] = {0u, 0u, 0u, 0u};
  float dx = 0.0f, sb = 0.0f;
  /* A group rounds rows 2 gw and 2 gw + 1: past m it only writes zeros
   * (the decode batches of 5 .. 15 rows round no padding). Inside, a pair
   * out of range rounds a valid address (nb >= 1 here; zeros in sm.raw)
   * and keeps zeros, so that the whole group shuffles together. */
  if (S::RAW) gk_group_sync(); /* every lane's copy of the stage landed (its wait) */
  if (i0 + 2 * gk_group() < m) {
    uint32_t c[4];
    float cdx, csb;
    if (S::RAW)
      gk_q8x_round_half<Bits, QM_THREADS, GK_Q8B_FAST>((const float *)&sm.raw[threadIdx.x], h, c,
                                                &cdx, &csb);
    else
      gk_q8x_round_half<Bits, 1, GK_Q8B_FAST>(
          x + (in ? (i0 + r) * k + (b0 + kb) * GK_QBLOCK : 0) + 16 * h, h, c, &cdx, &csb);
    if (in) codes[0] = c[0], codes[1] = c[1], codes[2] = c[2], codes[3] = c[3], dx = cdx, sb = csb;
  }
  const uint4 cw = {codes[0], codes[1], codes[2], codes[3]};
  *(uint4 *)&sm.x[buf][r * S::XS + kb * 8 + 4 * h] = cw;
  if (h == 0) sm.s[buf][kb * S::SS + r].dx = dx, sm.s[buf][kb * S::SS + r].sb = sb;
}

/* x from records (gk_q8x_rec): starts copying the stage at block b0 of
 * rows i0 .. i0 + 15 into stage `buf` as gk_q8b_round writes it (zeros
 * past m and nb), as a cp.async group of each thread's own: thread e takes
 * record (row e / 8 % 16, block e % 8), e < 128 its first 16 bytes of
 * codes and its scales, e >= 128 the other 16; a warp's instruction 4
 * records of each of 2 rows (384 consecutive bytes a row). */
template <int Bits>
GK_DEV void gk_q8b_recs(gk_q8b_smem<Bits> &sm, int buf, gk_q8x_rec x, int64_t m, int64_t nb,
                        int64_t i0, int64_t b0) {
  typedef gk_q8b_smem<Bits> S;
  static_assert(QM_THREADS == 2 * Q8B_ROWS * Q8X_KB, "two threads a record");
  const int e = (int)threadIdx.x, h = e / (Q8B_ROWS * Q8X_KB), r = e / Q8X_KB % Q8B_ROWS,
            kb = e % Q8X_KB;
  const bool in = i0 + r < m && b0 + kb < nb;
  const unsigned char *rec = in ? x.q + ((i0 + r) * nb + b0 + kb) * Q8X_REC : x.q;
  gk_cp_async16(&sm.x[buf][r * S::XS + kb * 8 + 4 * h], rec + 16 * h, in);
  if (h == 0) gk_cp_async8(&sm.s[buf][kb * S::SS + r], rec + 32, in);
  gk_cp_async_commit();
}

/* Multiplies stage `Buf` into this group's slots 4 Buf .. 4 Buf + 3:
 * block kb = 2 i + q of the stage is chunk lane 8 Buf + kb, slot 4 Buf +
 * i. Every stage whole, the short last one too: its blocks past nb are
 * zeros in both buffers (W's copy, x's rounding and the records' copy fill
 * them so), whose products are +0 and leave every lane as it was (a lane
 * starts at +0 and is never -0: x + -0 and exact cancellations give +0).
 * So a group's 4 blocks are one straight run of machine code, and ptxas
 * starts a block's loads and mma under the one before's epilogue (in the
 * sm_90a cubin, BITS 4, 4 runs of 86 to 120 instructions, each block's
 * epilogue waiting for its own mma, became one of 343 to 372 in
 * 2026-12-02's form; cuda.ptxas checks the run). Until 2026-12-03 the
 * short last stage kept a branch a block, a second copy of the products
 * in which ptxas 13.0 spilled up to 80 bytes on sm_80 to sm_89. */
template <int Bits, int Buf>
GK_DEV void gk_q8b_stage_mul(const gk_q8b_smem<Bits> &sm, float (*slot)[2][4]) {
  typedef gk_q8b_smem<Bits> S;
  constexpr int P = 8 / Bits;
  const uint32_t mask = GK_QMASK(Bits) * 0x01010101u;
  const int gw = gk_group(), p = gw / 2, q = gw % 2, lane = gk_lane(), g = lane / 4,
            t = lane % 4;
  /* Operand words t and 4 + t of a block: their code words and shifts. */
  const int u0 = t / P, s0 = Bits * (t % P), u1 = (4 + t) / P, s1 = Bits * ((4 + t) % P);
  /* A is W: rows g and g + 8 of this pair's 16 (rows 16 p + g and 16 p + g
   * + 8 of the tile), codes and heads, row g + 8 gk_q8b_wrow(8) words after
   * row g (8 and 16 p: whole runs of WG rows, so the offsets add). B is x,
   * two tiles of 8 rows: columns 2 t and 2 t + 1 of D are rows 8 ti + 2 t
   * and 8 ti + 2 t + 1 of x, whose scales lie side by side (one 16-byte
   * load a tile). So a lane converts the binary16 scales of 2 rows of W a
   * block; with x as A (2026-12-02: 16 rows of x by 8 of W a tile) it
   * converted 4, its two columns' rows in each tile, and loaded each row's
   * head alone: in the sm_90a cubin a stage's products issued 16 HADD2.F32
   * and 8 LDS a thread more (312 to 372 instructions; now 244 to 316
   * besides the next stage's copies, which share their run; BITS 1 to 8). */
  static_assert((2 * S::WSTAGE + 2 * Q8B_ROWS * S::XS) % 4 == 0 && S::SS % 2 == 0,
                "x's scales: two rows in one 16-byte load");
  const int og = gk_q8b_wrow<Bits>(16 * p + g), o8 = gk_q8b_wrow<Bits>(8);
  /* x's 16 rows of the block by one ldmatrix: its 4 matrices of 8 rows by
   * 16 bytes are the B fragments b[0], b[1] of tile 0 (rows 0-7, words 0-3
   * and 4-7), then of tile 1 (rows 8-15); lane l gives row l % 8 + 8 (l /
   * 16), words 4 ((l / 8) % 2) on. Rows XS words apart (4 banks): the 8
   * rows of a matrix in distinct banks. */
  const uint16_t *xa =
      (const uint16_t *)&sm.x[Buf][(lane % 8 + 8 * (lane / 16)) * S::XS + 4 * ((lane / 8) % 2)];
#pragma unroll
  for (int i = 0; i < Q8X_KB / 2; i++) {
    const int kb = 2 * i + q;
    uint32_t xb[4];
    gk_ldmatrix_x4(xb, xa + 16 * kb);
    const uint32_t *wt = &sm.w[Buf][og + kb * S::BW];
    const uint32_t a[4] = {(wt[1 + u0] >> s0) & mask, (wt[o8 + 1 + u0] >> s0) & mask,
                           (wt[1 + u1] >> s1) & mask, (wt[o8 + 1 + u1] >> s1) & mask};
    /* The scales of this lane's two W rows (rows g and g + 8 of D). */
    float d[2], mo[2];
    for (int r = 0; r < 2; r++) {
      const uint32_t head = wt[r * o8];
      d[r] = gk_h2f((uint16_t)(head & 0xffffu));
      mo[r] = gk_h2f((uint16_t)(head >> 16));
    }
#pragma unroll
    for (int ti = 0; ti < 2; ti++) {
      const uint32_t b[2] = {xb[2 * ti], xb[2 * ti + 1]};
      /* dx, sb of x rows 8 ti + 2 t and + 1 (columns 2t, 2t + 1 of D) */
      const typename S::scale *xr = &sm.s[Buf][kb * S::SS + 8 * ti + 2 * t];
      int s[4];
      gk_mma_u8s8_16832(s, a, b, Q8X_MAGIC);
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = e >> 1, c = e & 1;
        const float ib = gk_q_f32_from_bits((uint32_t)s[e]) - 12582912.0f; /* exact */
        float &l = slot[4 * Buf + i][ti][e];
        l = gk_fadd(gk_fadd(l, gk_fmul(ib, gk_fmul(d[r], xr[c].dx))), gk_fmul(mo[r], xr[c].sb));
      }
    }
  }
}

/* Where output e of tile ti of this thread lies in y: row i of x, row j
 * of W (gk_q8b_stage_mul: D's rows are W's, its columns x's). */
struct gk_q8b_out {
  int64_t i, j;
};
GK_DEV gk_q8b_out gk_q8b_place(int64_t i0, int64_t j0, int ti, int e) {
  const int gw = gk_group(), lane = gk_lane(), g = lane / 4, t = lane % 4;
  return {i0 + 8 * ti + 2 * t + (e & 1), j0 + 16 * (gw / 2) + g + 8 * (e >> 1)};
}

/* The chunk's end: folds the slots (see the top) and adds the chunk's sums
 * to y's in the even groups (the first chunk to 0), through `scratch` (a
 * stage the ring is done with). y holds the sums between chunks, which
 * in registers took 8 a thread across every stage (ptxas 13.0 then spilled
 * in the tile on sm_80 to sm_90a once W became the mma's A); a chunk is
 * 16 stages, so it is 8 loads and 8 stores an even thread every ~8000
 * instructions. Barriers by the whole block. */
GK_DEV void gk_q8b_fold(float (*slot)[2][4], float *scratch, float *__restrict__ y, int64_t m,
                        int64_t n, int64_t i0, int64_t j0, bool first) {
  const int gw = gk_group(), p = gw / 2, q = gw % 2;
  float v[2][4];
#pragma unroll
  for (int ti = 0; ti < 2; ti++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      float l[8];
#pragma unroll
      for (int s = 0; s < 8; s++) l[s] = slot[s][ti][e];
      for (int s = 0; s < 4; s++) l[s] = gk_fadd(l[s], l[s + 4]); /* h = 8 */
      for (int s = 0; s < 2; s++) l[s] = gk_fadd(l[s], l[s + 2]); /* h = 4 */
      v[ti][e] = gk_fadd(l[0], l[1]);                             /* h = 2 */
      for (int s = 0; s < 8; s++) slot[s][ti][e] = 0.0f;
    }
  float *mine = scratch + (p * GK_GROUP + gk_lane()) * 8;
  if (q)
    for (int ti = 0; ti < 2; ti++)
      for (int e = 0; e < 4; e++) mine[4 * ti + e] = v[ti][e];
  __syncthreads();
  if (!q) /* h = 1, then the chunk's sum into y's */
    for (int ti = 0; ti < 2; ti++)
      for (int e = 0; e < 4; e++) {
        const gk_q8b_out o = gk_q8b_place(i0, j0, ti, e);
        if (o.i < m && o.j < n) {
          float *to = y + o.i * n + o.j;
          *to = gk_fadd(first ? 0.0f : *to, gk_fadd(v[ti][e], mine[4 * ti + e]));
        }
      }
  __syncthreads(); /* read before the ring writes the stage again */
}

/* Starts stage s + 1's W into buffer Buf ^ 1: whole (from the tile's
 * rows) or the short last one. */
template <int Bits, int Buf>
GK_DEV void gk_q8b_w_next(gk_q8b_smem<Bits> &sm, const uint32_t *__restrict__ w, int64_t n,
                          int64_t nb, int64_t j0, int64_t s) {
  if ((s + 2) * Q8X_KB <= nb)
    gk_q8b_w_full<Bits>(sm, sm.w[Buf ^ 1], (s + 1) * Q8X_KB);
  else
    gk_q8x_w_stage<Bits>(sm.w[Buf ^ 1], w, n, nb, j0, (s + 1) * Q8X_KB);
}

/* Stage s + 1 coming in while stage s is multiplied (see below), x as
 * floats; whether stage s + 2's x is in flight (its copy started) past
 * the step's wait. */
template <int Bits, int Buf>
GK_DEV bool gk_q8b_next(gk_q8b_smem<Bits> &sm, const float *__restrict__ x,
                        const uint32_t *__restrict__ w, int64_t m, int64_t n, int64_t k,
                        int64_t nb, int64_t i0, int64_t j0, int64_t s, int64_t stages) {
  typedef gk_q8b_smem<Bits> S;
  const bool ahead = S::RAW && s + 2 < stages;
  if (s + 1 < stages && S::RAW) {
    gk_cp_async_wait<0>(); /* this thread's part of stage s + 1's x */
    gk_q8b_round<Bits>(sm, Buf ^ 1, x, m, k, nb, i0, (s + 1) * Q8X_KB);
    gk_q8b_w_next<Bits, Buf>(sm, w, n, nb, j0, s);
    if (ahead) {
      if ((s + 3) * Q8X_KB <= nb)
        gk_q8b_x_full<Bits>(sm, (s + 2) * Q8X_KB);
      else
        gk_q8b_x_copy<Bits>(sm, x, m, k, nb, i0, (s + 2) * Q8X_KB);
    }
  } else if (s + 1 < stages) { /* W's copy first, under x's loads */
    gk_q8b_w_next<Bits, Buf>(sm, w, n, nb, j0, s);
    gk_q8b_round<Bits>(sm, Buf ^ 1, x, m, k, nb, i0, (s + 1) * Q8X_KB);
  }
  return ahead;
}
/* The same from records: W's copy and x's, both in flight under the
 * products, both waited for at the step's end. */
template <int Bits, int Buf>
GK_DEV bool gk_q8b_next(gk_q8b_smem<Bits> &sm, gk_q8x_rec x, const uint32_t *__restrict__ w,
                        int64_t m, int64_t n, int64_t, int64_t nb, int64_t i0, int64_t j0,
                        int64_t s, int64_t stages) {
  if (s + 1 < stages) {
    gk_q8b_w_next<Bits, Buf>(sm, w, n, nb, j0, s);
    gk_q8b_recs<Bits>(sm, Buf ^ 1, x, m, nb, i0, (s + 1) * Q8X_KB);
  }
  return false;
}

/* One step of the ring: stage s (buffer Buf) multiplied while stage s + 1
 * comes in (gk_q8b_next), then the fold where s ends a chunk. Stage s +
 * 1's x is rounded before the products; where x comes through shared
 * memory (S::RAW), from its copy, started a step before, and stage s + 2's
 * copy starts behind it, so that x's loads are in flight under this step's
 * products as W's are (rounded from x itself, each thread waited for its
 * loads there, every warp of the block at once after the barrier). The
 * cp.async groups a thread has in flight: x (s + 1) at the top, then W
 * (s + 1) and x (s + 2); the bottom waits for W's only. x is rounded
 * before W's copy starts: after it, ptxas 13.0 spilled 16 bytes at BITS 1
 * (sm_90a). */
template <int Bits, int Buf, class X>
GK_DEV void gk_q8b_step(gk_q8b_smem<Bits> &sm, X x, const uint32_t *__restrict__ w, int64_t m,
                        int64_t n, int64_t k, int64_t nb, int64_t i0, int64_t j0, int64_t s,
                        float (*slot)[2][4], float *__restrict__ y) {
  const int64_t stages = (nb + Q8X_KB - 1) / Q8X_KB;
  const bool ahead = gk_q8b_next<Bits, Buf>(sm, x, w, m, n, k, nb, i0, j0, s, stages);
  gk_q8b_stage_mul<Bits, Buf>(sm, slot);
  if (ahead)
    gk_cp_async_wait<1>(); /* W (s + 1); x (s + 2) may stay in flight */
  else
    gk_cp_async_wait<0>();
  __syncthreads(); /* stage s + 1 is in; stage s is read */
  if ((s + 1) % (Q8X_CHUNK / Q8X_KB) == 0 || s + 1 == stages)
    gk_q8b_fold(slot, (float *)sm.w[Buf], y, m, n, i0, j0, s < Q8X_CHUNK / Q8X_KB);
}

/* The tile's first stage in (the caller's barrier after it), x as floats:
 * x (0) and W (0) in, x (0) rounded, and where x comes through shared
 * memory, x (1) started. */
template <int Bits>
GK_DEV void gk_q8b_first(gk_q8b_smem<Bits> &sm, const float *__restrict__ x,
                         const uint32_t *__restrict__ w32, int64_t m, int64_t n, int64_t k,
                         int64_t nb, int64_t i0, int64_t j0, int64_t stages) {
  if (gk_q8b_smem<Bits>::RAW) {
    gk_q8b_x_copy<Bits>(sm, x, m, k, nb, i0, 0);
    gk_q8x_w_stage<Bits>(sm.w[0], w32, n, nb, j0, 0);
    gk_cp_async_wait<0>();
    gk_q8b_round<Bits>(sm, 0, x, m, k, nb, i0, 0);
    if (stages > 1) gk_q8b_x_copy<Bits>(sm, x, m, k, nb, i0, Q8X_KB);
  } else {
    gk_q8x_w_stage<Bits>(sm.w[0], w32, n, nb, j0, 0);
    gk_q8b_round<Bits>(sm, 0, x, m, k, nb, i0, 0);
    gk_cp_async_wait<0>();
  }
}
/* The same from records: W (0) and x (0) in. */
template <int Bits>
GK_DEV void gk_q8b_first(gk_q8b_smem<Bits> &sm, gk_q8x_rec x, const uint32_t *__restrict__ w32,
                         int64_t m, int64_t n, int64_t, int64_t nb, int64_t i0, int64_t j0,
                         int64_t) {
  gk_q8x_w_stage<Bits>(sm.w[0], w32, n, nb, j0, 0);
  gk_q8b_recs<Bits>(sm, 0, x, m, nb, i0, 0);
  gk_cp_async_wait<0>();
}

/* One block's tile: rows j0 .. j0 + Q8X_COLS - 1 of W (those < n) against
 * rows i0 .. i0 + Q8B_ROWS - 1 of x (those < m). Not inlined: it fits 128
 * registers alone (124), and inlined beside q8x.cuh's tiles it came to the
 * limit or past it (GK_DEV_NOINLINE). W as gk_q8b_w16 asks. */
template <int Bits, class X>
GK_DEV_NOINLINE void gk_q8b_tile(gk_q8b_smem<Bits> &sm, X x, const void *__restrict__ w,
                                 float *__restrict__ y, int64_t m, int64_t n, int64_t k,
                                 int64_t j0, int64_t i0) {
  static_assert(Q8X_CHUNK % (2 * Q8X_KB) == 0, "a chunk is an even number of stages");
  static_assert(QM_THREADS / GK_GROUP == 2 * (Q8X_COLS / 16), "a pair of groups for 16 rows of W");
  const uint32_t *w32 = (const uint32_t *)w;
  const int64_t nb = k / GK_QBLOCK, stages = (nb + Q8X_KB - 1) / Q8X_KB;
  float slot[8][2][4];
  for (int s = 0; s < 8; s++)
    for (int ti = 0; ti < 2; ti++)
      for (int e = 0; e < 4; e++) slot[s][ti][e] = 0.0f;

  __syncthreads(); /* the previous tile is done with sm */
  gk_q8b_rows<Bits>(sm, x, w32, m, n, k, nb, i0, j0); /* read past the barrier below */
  if (stages > 0) {
    gk_q8b_first<Bits>(sm, x, w32, m, n, k, nb, i0, j0, stages);
    __syncthreads();
  }
  for (int64_t s = 0; s < stages; s += 2) {
    gk_q8b_step<Bits, 0>(sm, x, w32, m, n, k, nb, i0, j0, s, slot, y);
    if (s + 1 < stages)
      gk_q8b_step<Bits, 1>(sm, x, w32, m, n, k, nb, i0, j0, s + 1, slot, y);
  }
  if (stages == 0 && gk_group() % 2 == 0) /* k < 32: no chunk, y's sums are 0 */
    for (int ti = 0; ti < 2; ti++)
      for (int e = 0; e < 4; e++) {
        const gk_q8b_out o = gk_q8b_place(i0, j0, ti, e);
        if (o.i < m && o.j < n) y[o.i * n + o.j] = 0.0f;
      }
}

/* The batch tile where the build has it, picked by the shared memory's
 * type; never called where it has not (gk_qmatmul_q8x's walk). */
template <int Bits, class X>
GK_DEV void gk_q8x_batch_tile(gk_q8x_smem<Bits, 1> &sm, X x, const void *w, float *y, int64_t m,
                              int64_t n, int64_t k, int64_t j0, int64_t i0) {
  gk_q8b_tile<Bits>(sm.b, x, w, y, m, n, k, j0, i0);
}
template <int Bits, class X>
GK_DEV void gk_q8x_batch_tile(gk_q8x_smem<Bits, 0> &, X, const void *, float *, int64_t,
                              int64_t, int64_t, int64_t, int64_t) {}

/* qmatmul_q8x: the grid walk of gk_qmatmul (qmatmul.cuh) over tiles of
 * Q8X_COLS rows of W by one row of x when m == 1 (q8x.cuh), Q8X_XROWS rows
 * when m <= Q8X_XROWS, without this tile or where W is not 16-byte aligned
 * as it asks (gk_q8b_w16; q8x.cuh), else Q8B_ROWS rows
 * (this file's). Each in a loop nest of its own: in one, ptxas kept the
 * walk's values beside the batch tile's 64 lanes and spilled. Every bound
 * is per block: the barriers are reached by all. */
template <int Bits, int Sm80 = GK_Q8X_SM80, class X>
GK_DEV void gk_qmatmul_q8x(X x, const void *w, float *y, int64_t m, int64_t n, int64_t k) {
  __shared__ __attribute__((aligned(16))) gk_q8x_smem<Bits, Sm80> sm;
  if (m <= 0 || n <= 0 || k < 0) return;
  if (m == 1) {
    gk_q8x_walk1<Bits, GK_Q8X_SETS(Bits, Sm80)>(sm.d, x, w, y, n, k);
  } else if (!Sm80 || m <= Q8X_XROWS || !gk_q8b_w16<Bits>(w, k / GK_QBLOCK)) {
    for (int64_t by = blockIdx.y; by * Q8X_COLS < n; by += gridDim.y)
      for (int64_t bx = blockIdx.x; bx * Q8X_XROWS < m; bx += gridDim.x)
        gk_q8x_tile<Bits, Q8X_XROWS>(sm.d, x, w, y, m, n, k, by * Q8X_COLS, bx * Q8X_XROWS);
  } else { /* in groups of Q8B_GROUP tiles of x (gk_grouped_tiles) */
    gk_grouped_tiles((m + Q8B_ROWS - 1) / Q8B_ROWS, (n + Q8X_COLS - 1) / Q8X_COLS, Q8B_GROUP,
                     [&](int64_t bx, int64_t by) {
                       gk_q8x_batch_tile<Bits>(sm, x, w, y, m, n, k, by * Q8X_COLS,
                                               bx * Q8B_ROWS);
                     });
  }
}

#endif /* GK_Q8X_BATCH_CUH */
