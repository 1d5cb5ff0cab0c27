/*
 * fa_wgmma.cuh - flash_attention's prefill on Hopper's warpgroup matrix
 * multiply (gk_wgmma.cuh), FlashAttention-3's first step, included by
 * flash_attention.cuh after fa_mma.cuh, whose schedule it keeps: a block
 * of 4 warps owns 64 query rows, warp w rows 16w .. 16w + 15 as mma
 * fragments (Q in registers for the whole call), K and V stream through
 * two shared-memory stages by cp.async, the online softmax runs on the
 * score fragments in f32 registers (gk_fa_softmax) and P, rounded to H,
 * stays in registers as the A operand of O += P V.
 *
 * What changes is who multiplies. The 4 warps are one warpgroup, and each
 * product is one wgmma for all 64 rows: S (64 x KEYS) += Q (64 x 16) K^T
 * for each 16 columns of d, then O (64 x D) += P (64 x 16) V for each 16
 * keys. The tensor cores read K and V from shared memory once for the
 * block, where mma.sync has every warp read all of them through ldmatrix
 * (the bound of the mma.sync schedule at 16 rows a warp, docs/kernels.md).
 *
 * The stages hold K and V as wgmma's core matrices without swizzle
 * (gk_fa_smem's `wg`): element (key n, d) at n / 8 * 8D + d / 8 * 64 +
 * n % 8 * 8 + d % 8 (in elements; a core matrix, 8 keys x 8 d, is 128
 * contiguous bytes). The same tile is K-major B for S (k = d: LBO 128
 * bytes, SBO 16 D) and N-major B for P V (k = key: LBO 16 D, SBO 128).
 * cp.async fills it 16 bytes a thread, consecutive threads writing
 * consecutive bytes (the 8 keys of a core matrix, then the next d).
 *
 * Built where GK_FA_WGMMA_ON (gk_gpu.cuh): an sm_90a compilation with
 * -DGK_FA_WGMMA=1. The emulator runs it through gk_wgmma.cuh's twins.
 */
#ifndef GK_FA_WGMMA_CUH
#define GK_FA_WGMMA_CUH

#include "gk_wgmma.cuh"

/* Starts copying keys [k0, k0 + KEYS) of KV head hk into `stage` of the
 * wgmma layout (zeros past kv.n), by the whole block, as one cp.async
 * group per thread. Chunk e (16 bytes) lands at element 8 e. */
template <int D, class KV>
GK_DEV void gk_fa_wg_load(gk_fa_smem<D> &sm, int stage, const KV &kv, int64_t hk, int64_t k0) {
  typedef gk_fa_smem<D> S;
  static_assert(S::KEYS * (D / 8) % FA_THREADS == 0, "whole rounds of 16-byte chunks");
  for (int i = 0; i < S::KEYS * (D / 8) / FA_THREADS; i++) { /* the same count everywhere */
    const int e = i * FA_THREADS + (int)threadIdx.x;
    const int r = 8 * (e / D) + e % 8, c = (e / 8) % (D / 8) * 8;
    const int64_t key = k0 + r;
    const bool in = key < kv.n;
    const int64_t at = in ? gk_kv_row(kv, hk, key) + c : 0;
    gk_cp_async16(&sm.wg.k[stage][8 * e], kv.k + at, in);
    gk_cp_async16(&sm.wg.v[stage][8 * e], kv.v + at, in);
  }
  gk_cp_async_commit();
}

/* The block's step over the KEYS keys from k0 in `stage`: S by wgmma, the
 * online softmax, O += P V by wgmma. Every thread of the block calls it. */
template <int Causal, int D, class H>
GK_DEV void gk_fa_wg_step(const gk_fa_smem<D> &sm, int stage, const uint32_t (*qa)[4],
                          int64_t k0, int64_t skv, int64_t sq, const int64_t qpos[2], float sl,
                          gk_fa_state<D> &st) {
  typedef gk_fa_smem<D> S;
  constexpr int NT = S::KEYS / 8;
  constexpr uint32_t CM = 128, ROW8 = 16 * D; /* bytes: a core matrix, 8 keys */
  float s[NT][4];
  for (int nt = 0; nt < NT; nt++)
    for (int e = 0; e < 4; e++) s[nt][e] = 0.0f;
  gk_wgmma_fence();
  for (int kk = 0; kk < D / 16; kk++) /* d = 16 kk .. + 15: core matrices 2 kk, 2 kk + 1 */
    gk_wgmma<H, S::KEYS, 0>(&s[0][0], qa[kk],
                            gk_wgmma_desc(&sm, &sm.wg.k[stage][128 * kk], CM, ROW8), &sm);
  gk_wgmma_commit();
  gk_wgmma_wait<0>();
  gk_fa_softmax<Causal, D, NT>(s, k0, skv, sq, qpos, sl, st);
  uint32_t pa[S::KEYS / 16][4];
  for (int kk = 0; kk < S::KEYS / 16; kk++) gk_fa_p_frag<H>(s, kk, pa[kk]);
  gk_wgmma_fence(); /* the output was rescaled, P written */
  for (int kk = 0; kk < S::KEYS / 16; kk++) /* keys 16 kk .. 16 kk + 15 */
    gk_wgmma<H, D, 1>(&st.acc[0][0], pa[kk],
                      gk_wgmma_desc(&sm, &sm.wg.v[stage][16 * kk * D], ROW8, CM), &sm);
  gk_wgmma_commit();
  gk_wgmma_wait<0>();
}

/* Prefill as gk_fa_mma_prefill, on wgmma: query rows [row0, row0 +
 * FA_BLOCK_ROWS) of head h against kv, through the two stages. */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_wg_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                             int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                             int64_t h, int64_t row0) {
  typedef gk_fa_smem<D> S;
  const int64_t hk = h / (n_heads / n_kv_heads), skv = kv.n;
  int64_t qpos[2], rows[2];
  gk_fa_prefill_rows(h, sq, row0, qpos, rows);
  uint32_t qa[D / 16][4];
  gk_fa_mma_q<D>(q, rows, qa);
  gk_fa_state<D> st;
  gk_fa_state_init<D>(st);
  const float sl = scale * 1.4426950408889634f;
  const int64_t ke = gk_fa_kend(Causal, sq, skv, row0, FA_BLOCK_ROWS);
  __syncthreads(); /* the previous use of the stages is over */
  if (ke > 0) gk_fa_wg_load<D>(sm, 0, kv, hk, 0);
  for (int64_t k0 = 0, j = 0; k0 < ke; k0 += S::KEYS, j++) {
    if (k0 + S::KEYS < ke) {
      gk_fa_wg_load<D>(sm, (int)((j + 1) & 1), kv, hk, k0 + S::KEYS);
      gk_cp_async_wait<1>(); /* this tile's group has landed */
    } else {
      gk_cp_async_wait<0>();
    }
    gk_fence_proxy_async(); /* this thread's copies, for the tensor cores */
    __syncthreads();
    gk_fa_wg_step<Causal, D, H>(sm, (int)(j & 1), qa, k0, skv, sq, qpos, sl, st);
    __syncthreads(); /* read (waited for) before the copy after next overwrites it */
  }
  gk_fa_mma_store<D, H>(o, rows, st);
}

#endif /* GK_FA_WGMMA_CUH */
