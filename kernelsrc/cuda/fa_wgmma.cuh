/*
 * fa_wgmma.cuh - flash_attention's prefill on Hopper's warpgroup matrix
 * multiply (gk_wgmma.cuh), FlashAttention-3's first step, included by
 * flash_attention.cuh after fa_mma.cuh, whose schedule it keeps: a block
 * of 4 warps owns 64 query rows, warp w rows 16w .. 16w + 15 as mma
 * fragments (Q in registers for the whole call), K and V stream through
 * shared memory by cp.async, the online softmax runs on the score
 * fragments in f32 registers (gk_fa_softmax) and P, rounded to H, stays
 * in registers as the A operand of O += P V.
 *
 * What changes is who multiplies. The 4 warps are one warpgroup, and each
 * product is one wgmma for all 64 rows: S (64 x KEYS) += Q (64 x 16) K^T
 * for each 16 columns of d, then O (64 x D) += P (64 x 16) V for each 16
 * keys, in tiles of WG_KEYS = 64 keys (D = 128) or 128 (D = 64), twice
 * the mma.sync path's: S is m64n64 or m64n128 a wgmma. The tensor cores
 * read K and V from shared memory once for the warpgroup, where mma.sync
 * has every warp read all of them through ldmatrix (the bound of the
 * mma.sync schedule at 16 rows a warp, docs/kernels.md).
 *
 * A block launched with 256 threads runs two warpgroups (FlashAttention-
 * 3's 128 rows a block, 64 a warpgroup) over the same stages, so that a
 * tile of K and V is read from L2 once for 128 query rows, half the bytes
 * a flop of 64-row blocks; with 128 threads, one. The launch row says
 * which (ci/gpu/prepare.sh builds both, for a GPU to time).
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
#if GK_FA_TMA_CODE
#include "gk_tma.cuh"
#endif

/* Where piece p (16 bytes: elements 8 p .. 8 p + 7) of row n of a stage
 * of ROWS rows lies in the 128-byte swizzle's layout (gk_wgmma.cuh), in
 * elements: the rows' first 64 elements (pieces 0 .. 7) in one column of
 * atoms, the next 64 in the next, ROWS * 64 elements on; row n at atom
 * n / 8, row n % 8 of it; piece p % 8 at (p % 8) ^ (n % 8). Both K-major
 * K (and Q) and N-major V read it (gk_fa_wo<D, 2, C>). */
template <int ROWS>
GK_DEV int gk_fa_sw_at(int n, int p) {
  return p / 8 * ROWS * 64 + n / 8 * 512 + n % 8 * 64 + ((p % 8) ^ (n % 8)) * 8;
}

/* Starts copying keys [k0, k0 + KEYS) of KV head hk of src (kv.k or
 * kv.v) into `stage` in the wgmma layout (zeros past kv.n), by THREADS
 * threads, this one number `tid` of them; the caller commits the group.
 * Without swizzle (SW false) chunk e (16 bytes) lands at element 8 e: e
 * = i THREADS + tid is key 8 (e / D) + e % 8 = STEP i + r, elements
 * c .. c + 7 of it, so that a quarter warp writes one core matrix (128
 * contiguous bytes), and a warp reads 64 bytes of each of 8 keys: 8
 * cache lines, each half read, for 512 bytes. With the 128-byte swizzle
 * (SW: gk_fa_sw_at), thread tid takes piece tid % (D / 8) of key STEP i +
 * tid / (D / 8): a warp reads whole rows (4 lines for 512 bytes, as a TMA
 * box would), and each quarter warp's 8 pieces of a row land in 8
 * distinct groups of banks. LEAN: the rounds in a loop (a producer's few
 * registers). */
template <int D, int THREADS, class KV, typename T, int KEYS = gk_fa_smem<D>::WG_KEYS,
          bool LEAN = false, bool SW = false>
GK_DEV void gk_fa_wg_load(uint16_t *stage, const T *src, const KV &kv, int64_t hk, int64_t k0,
                          int tid) {
  static_assert(KEYS * (D / 8) % THREADS == 0 && THREADS % D == 0, "whole rounds");
  constexpr int STEP = 8 * THREADS / D, ROUNDS = KEYS * (D / 8) / THREADS;
  /* Elements of the stage a round moves on: STEP keys, in either layout. */
  constexpr int DSTEP = SW ? 64 * STEP : 8 * THREADS;
  static_assert(!SW || STEP % 8 == 0, "a round's keys: whole atoms (its swizzle the same)");
  const int r = SW ? tid / (D / 8) : 8 * (tid / D) + tid % 8;
  const int c = SW ? 8 * (tid % (D / 8)) : (tid / 8) % (D / 8) * 8;
  const int d0 = SW ? gk_fa_sw_at<KEYS>(r, c / 8) : 8 * tid;
  /* A whole tile of contiguous rows: round i's chunk a constant step on
   * from the thread's first, in memory and in the stage, where the walk
   * below spends ~28 instructions a round on its 64-bit index, bound and
   * select: 44 rounds a producer thread a 176-key tile at head_dim 128,
   * more than a consumer issues (counted in the sm_90a cubin,
   * tests/backends/cuda/sass_mix.py). The producer's loop (LEAN) moves
   * two pointers by constants, unrolled by 4 (8 rounds a trip in 42, no
   * spill at its 32 registers); the unrolled copies of the other images
   * take constant offsets (3.3 a round), but in the warp-specialized
   * images, whose entry then spilled: there they keep the walk. */
  if constexpr (!KV::paged && (LEAN || !GK_FA_WS_ON)) {
    if (k0 + KEYS <= kv.n) {
      const T *s = src + gk_kv_row(kv, hk, k0 + r) + c;
      uint16_t *d = &stage[d0];
      if (LEAN) {
#pragma unroll 4
        for (int i = 0; i < ROUNDS; i++, s += STEP * D, d += DSTEP) gk_cp_async16(d, s, true);
      } else {
#pragma unroll
        for (int i = 0; i < ROUNDS; i++)
          gk_cp_async16(d + DSTEP * i, s + (int64_t)STEP * D * i, true);
      }
      return;
    }
  }
  const int64_t left = kv.n - k0 - r; /* round i's key is in if STEP i < left */
  auto round = [&](int i) {
    const bool in = STEP * i < left;
    gk_cp_async16(&stage[d0 + DSTEP * i],
                  src + (in ? gk_kv_row(kv, hk, k0 + r + STEP * i) + c : 0), in);
  };
  if (LEAN) {
#pragma unroll 1
    for (int i = 0; i < ROUNDS; i++) round(i);
  } else {
#pragma unroll
    for (int i = 0; i < ROUNDS; i++) round(i); /* the same count everywhere */
  }
}

/* A warpgroup's start on its 64 query rows from r0 of head h (warp w's 16
 * from r0 + 16 (w mod 4)): where they are, their Q fragments and a fresh
 * online-softmax state. */
template <int D>
GK_DEV void gk_fa_wg_begin(const uint16_t *q, int64_t h, int64_t sq, int64_t r0,
                           int64_t (&qpos)[2], int64_t (&rows)[2], uint32_t (&qa)[D / 16][4],
                           gk_fa_state<D> &st) {
  gk_fa_prefill_rows(h, sq, r0 + 16 * (gk_group() % 4), qpos, rows);
  gk_fa_mma_q<D>(q, rows, qa);
  gk_fa_state_init<D>(st);
}

/* The barrier of NWG warpgroups: the block's for two; for one, the first
 * warpgroup's (gk_fa_sync), as the others of a larger block skip it. */
template <int NWG>
GK_DEV void gk_fa_wg_sync(void) {
  if (NWG == 2)
    __syncthreads();
  else
    gk_fa_sync();
}

/* This thread's copies of the groups that must have landed (all but the
 * newest n), made visible to the NWG warpgroups and to the tensor cores. */
template <int N, int NWG>
GK_DEV void gk_fa_wg_landed(void) {
  gk_cp_async_wait<N>();
  gk_fence_proxy_async(); /* this thread's copies, for the tensor cores */
  gk_fa_wg_sync<NWG>();
}

/* S += Q K^T for the KEYS keys of the K stage at k (D / 16 wgmma
 * m64nKEYSk16), and O += P V for those of the V stage at v (KEYS / 16
 * wgmma m64nDk16, P's fragments pa): the instructions alone, after the
 * caller's fence, before its commit. base: the block's shared struct. */
template <int D, class H, int KEYS = gk_fa_smem<D>::WG_KEYS>
GK_DEV void gk_fa_wg_s_mma(const void *base, const uint16_t *k, const uint32_t (*qa)[4],
                           float (*s)[4]) {
  constexpr uint32_t CM = 128, ROW8 = 16 * D; /* bytes: a core matrix, 8 keys */
  for (int kk = 0; kk < D / 16; kk++) /* d = 16 kk .. + 15: core matrices 2 kk, 2 kk + 1 */
    gk_wgmma<H, KEYS, 0>(&s[0][0], qa[kk], gk_wgmma_desc(base, &k[128 * kk], CM, ROW8), base,
                         kk > 0);
}
template <int D, class H, int KEYS = gk_fa_smem<D>::WG_KEYS>
GK_DEV void gk_fa_wg_pv_mma(const void *base, const uint16_t *v, const uint32_t (*pa)[4],
                            gk_fa_state<D> &st) {
  constexpr uint32_t CM = 128, ROW8 = 16 * D;
  for (int kk = 0; kk < KEYS / 16; kk++) /* keys 16 kk .. 16 kk + 15 */
    gk_wgmma<H, D, 1>(&st.acc[0][0], pa[kk], gk_wgmma_desc(base, &v[16 * kk * D], ROW8, CM),
                      base);
}

/* The scores of a tile of KEYS keys issued as one group, not waited for:
 * the fence (which also covers what the caller wrote for the tensor cores
 * before: the output rescaled, P), `mma` issuing S = Q K^T, its first
 * wgmma with scale-d 0 (s is written, not read: no registers to clear). */
template <class Mma>
GK_DEV void gk_fa_s_issue(Mma mma) {
  gk_wgmma_fence();
  mma();
  gk_wgmma_commit();
}

/* The scores of the WG_KEYS keys in the K stage at k, Q's fragments in
 * registers: issued, not waited for. */
template <int D, class H, int KEYS = gk_fa_smem<D>::WG_KEYS>
GK_DEV void gk_fa_wg_scores_issue(const uint16_t *k, const void *base, const uint32_t (*qa)[4],
                                  float (*s)[4]) {
  gk_fa_s_issue([&] { gk_fa_wg_s_mma<D, H, KEYS>(base, k, qa, s); });
}

/* The same, waited for. */
template <int D, class H>
GK_DEV void gk_fa_wg_scores(const gk_fa_smem<D> &sm, int ks, const uint32_t (*qa)[4],
                            float (*s)[4]) {
  gk_fa_wg_scores_issue<D, H>(sm.wg.k[ks], &sm, qa, s);
  gk_wgmma_wait<0>();
}

/* O += P V for the V stage, P's fragments all rounded before the fence:
 * a register of a wgmma's A written after the fence makes ptxas insert a
 * warpgroup arrive of its own and, in a divergent path, wait on every
 * wgmma (C7520; tests/backends/cuda/test_ptxas.sh). Waited for. */
template <int D, class H>
GK_DEV void gk_fa_wg_pv(const gk_fa_smem<D> &sm, const float (*s)[4], gk_fa_state<D> &st) {
  uint32_t pa[gk_fa_smem<D>::WG_KEYS / 16][4];
  for (int kk = 0; kk < gk_fa_smem<D>::WG_KEYS / 16; kk++) gk_fa_p_frag<H>(s, kk, pa[kk]);
  gk_wgmma_fence(); /* the output was rescaled, P written */
  gk_fa_wg_pv_mma<D, H>(&sm, sm.wg.v, pa, st);
  gk_wgmma_commit();
  gk_wgmma_wait<0>();
}

/* Prefill as gk_fa_mma_prefill, on wgmma: query rows [row0, row0 + 64 NWG)
 * of head h against kv, by NWG warpgroups (blocks of 128 NWG threads),
 * warpgroup g rows row0 + 64 g .. + 63, in tiles of WG_KEYS keys that
 * every warpgroup reads from the same stages: two warpgroups read each
 * tile from L2 once for 128 rows, FlashAttention-3's block. K has two
 * stages, V one (48 KB in all): K of the next tile is copied while this
 * one is worked on; V of the next tile once P V has read this one, while
 * the next scores and softmax run. The cp.async groups of a thread, in
 * order: K0, V0, then K(j+1) at the start of step j and V(j+1) at its end
 * (empty past the last tile), so K(j) is in when 2 groups are left in
 * flight and V(j) when 1 is. Causal: the block copies the tiles that its
 * last rows see; a warpgroup multiplies those its own rows see (a
 * condition the same in its 4 warps, as wgmma requires) and takes part in
 * every copy and barrier. */
template <int Causal, int D, int NWG, class H, class KV>
GK_DEV void gk_fa_wg_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                             int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                             int64_t h, int64_t row0) {
  typedef gk_fa_smem<D> S;
  constexpr int KEYS = S::WG_KEYS, T = NWG * FA_THREADS;
  const int tid = (int)threadIdx.x;
  const int64_t hk = h / (n_heads / n_kv_heads), skv = kv.n;
  const int64_t r0 = row0 + FA_BLOCK_ROWS * (gk_group() / 4); /* this warpgroup's rows */
  int64_t qpos[2], rows[2];
  uint32_t qa[D / 16][4];
  gk_fa_state<D> st;
  gk_fa_wg_begin<D>(q, h, sq, r0, qpos, rows, qa, st);
  const float sl = scale * 1.4426950408889634f;
  const int64_t ke = gk_fa_kend(Causal, sq, skv, row0, NWG * FA_BLOCK_ROWS);
  const int64_t mine = NWG == 1 ? ke : gk_fa_kend(Causal, sq, skv, r0, FA_BLOCK_ROWS);
  gk_fa_wg_sync<NWG>(); /* the previous use of the stages is over */
  if (ke > 0) gk_fa_wg_load<D, T>(sm.wg.k[0], kv.k, kv, hk, 0, tid);
  gk_cp_async_commit();
  if (ke > 0) gk_fa_wg_load<D, T>(sm.wg.v, kv.v, kv, hk, 0, tid);
  gk_cp_async_commit();
  for (int64_t k0 = 0, j = 0; k0 < ke; k0 += KEYS, j++) {
    const int ks = (int)(j & 1);
    const bool next = k0 + KEYS < ke, work = k0 < mine;
    if (next) gk_fa_wg_load<D, T>(sm.wg.k[ks ^ 1], kv.k, kv, hk, k0 + KEYS, tid);
    gk_cp_async_commit();
    gk_fa_wg_landed<2, NWG>(); /* K(j) */
    float s[KEYS / 8][4];
    if (work) {
      gk_fa_wg_scores<D, H>(sm, ks, qa, s);
      gk_fa_softmax<Causal, D, KEYS / 8>(s, k0, skv, sq, qpos, sl, st);
    }
    gk_fa_wg_landed<1, NWG>(); /* V(j) */
    if (work) gk_fa_wg_pv<D, H>(sm, s, st);
    gk_fa_wg_sync<NWG>(); /* every warp's wgmma has read K(j) and V(j) */
    if (next) gk_fa_wg_load<D, T>(sm.wg.v, kv.v, kv, hk, k0 + KEYS, tid);
    gk_cp_async_commit();
  }
  gk_fa_mma_store<D, H>(o, rows, st);
}

/*
 * The same two warpgroups fed by a producer warpgroup (FlashAttention-3's
 * warp specialization; blocks of FA_WS_THREADS = 384: warpgroups 0 and 1
 * the consumers, 2 the producer): only the producer copies K and V, and
 * the stages pass between it and each consumer through named barriers
 * instead of the block's, so that one consumer's softmax may run while
 * the other's wgmma does (the block barriers of gk_fa_wg_prefill hold the
 * two in step three times a tile). At 384 threads a thread gets 168
 * registers; the producer gives most of its own to the consumers
 * (setmaxnreg: 72 and 216, gk_flash_attention; at 56 the producer
 * spills), as FlashAttention-3 does.
 * With K stage s = j mod 2 and the one V stage:
 *   consumer w, tile j: waits FULL_K(s, w), S = Q K^T; softmax; waits
 *             FULL_V(w), O += P V, arrives at EMPTY;
 *   producer, step j: waits EMPTY (both consumers' P V of tile j - 1 done,
 *             so their S of tile j - 1 too: V's stage and K(j + 1)'s are
 *             free) and copies V(j), then K(j + 1); as each lands (each
 *             thread's copies waited for and fenced for the tensor cores),
 *             arrives at both consumers' FULL barriers.
 * So K(j + 1) is copied while tile j is worked on, and V(j) while the
 * scores and softmax of tile j are. Every arrival at EMPTY has its wait
 * (a consumer arrives only where the producer copies again), so the
 * barriers are left as found. Causal: a consumer past its
 * rows' diagonal keeps the handshakes and skips the products. Each side
 * walks the same query blocks (gk_fa_walk_mma, gk_fa_ws_walk), meeting at
 * one block barrier a block, before the stages are reused.
 *
 * Ping-pong (FlashAttention-3's inter-warpgroup overlap; GK_FA_WS_PINGPONG,
 * 1 unless compiled with -DGK_FA_WS_PINGPONG=0): the consumers also take
 * turns at the tensor cores, so that one's softmax runs while the other's
 * wgmma do, instead of both asking for the tensor cores at once and then
 * both leaving them idle. A turn is consumer w's O += P V of tile j and
 * its S of tile j + 1, issued back to back: it starts at TURN(w), which
 * the other consumer passes by its arrival once it has issued its own S,
 * and ends when w has issued S of j + 1 and arrives at TURN(1 - w).
 * Consumer 0 takes its first turn (S of tile 0) without waiting, and
 * consumer 1 gives back no turn after its last, which nobody would take:
 * TURN(0) is waited for `tiles` times and passed `tiles` times, TURN(1)
 * both tiles + 1 times. Turns order only the issue: a consumer past its
 * diagonal passes them on without products.
 */
#ifndef GK_FA_WS_PINGPONG
#define GK_FA_WS_PINGPONG 1
#endif
#define FA_WS_THREADS (3 * FA_THREADS)
enum {
  FA_WS_FULL_K = FA_BAR_FIRST + 1, /* + 2 s + w */
  FA_WS_FULL_V = FA_WS_FULL_K + 4, /* + w */
  FA_WS_EMPTY = FA_WS_FULL_V + 2,
  FA_WS_TURN = FA_WS_EMPTY + 1, /* + w */
  FA_WS_SIGNAL = 2 * FA_THREADS, /* a consumer and the producer */
  /* 72 + 2 x 216 = 3 x 168; 32 + 2 x 232 = 496 <= 504. The 128- and
   * 176-key tiles of GK_FA_WS_OVERLAP_ON 2 take 232 (ptxas 13.0 compiles
   * its consumers in 192-200 causal, 232 not; 208 at head_dim 64's 192
   * keys), the producer's copies a loop (gk_fa_wg_load's LEAN) that fits
   * in 32 (at 24 it spilled 16 bytes). */
  FA_WS_PRODUCER_REGS = GK_FA_WS_OVERLAP_ON == 2 ? 32 : 72,
  FA_WS_CONSUMER_REGS = GK_FA_WS_OVERLAP_ON == 2 ? 232 : 216,
};
static_assert(FA_WS_TURN + 1 <= 15, "16 named barriers");

/* The producer's copies have landed but for the newest N groups: fenced
 * for the tensor cores, and each consumer's FULL barrier (full, full + 1)
 * told. */
template <int N>
GK_DEV void gk_fa_ws_landed(int full) {
  gk_cp_async_wait<N>();
  gk_fence_proxy_async();
  gk_bar_arrive<FA_WS_SIGNAL>(full);
  gk_bar_arrive<FA_WS_SIGNAL>(full + 1);
}

/* The producer's part of query rows [row0, row0 + 128) of a head whose
 * KV head is hk. */
template <int Causal, int D, class KV>
GK_DEV void gk_fa_ws_produce(gk_fa_smem<D> &sm, const KV &kv, int64_t hk, int64_t sq,
                             int64_t row0) {
  constexpr int KEYS = gk_fa_smem<D>::WG_KEYS;
  const int64_t ke = gk_fa_kend(Causal, sq, kv.n, row0, 2 * FA_BLOCK_ROWS);
  const int64_t tiles = (ke + KEYS - 1) / KEYS;
  const int tid = (int)threadIdx.x - 2 * FA_THREADS;
  __syncthreads(); /* the previous use of the stages is over */
  if (tiles > 0) {
    gk_fa_wg_load<D, FA_THREADS>(sm.wg.k[0], kv.k, kv, hk, 0, tid);
    gk_cp_async_commit();
    gk_fa_ws_landed<0>(FA_WS_FULL_K);
  }
  for (int64_t j = 0; j < tiles; j++) {
    const int kn = (int)((j + 1) & 1); /* K(j + 1)'s stage */
    if (j >= 1) gk_bar_sync<FA_WS_THREADS>(FA_WS_EMPTY);
    gk_fa_wg_load<D, FA_THREADS>(sm.wg.v, kv.v, kv, hk, j * KEYS, tid);
    gk_cp_async_commit();
    if (j + 1 < tiles) {
      gk_fa_wg_load<D, FA_THREADS>(sm.wg.k[kn], kv.k, kv, hk, (j + 1) * KEYS, tid);
      gk_cp_async_commit();
      gk_fa_ws_landed<1>(FA_WS_FULL_V);          /* V(j) */
      gk_fa_ws_landed<0>(FA_WS_FULL_K + 2 * kn); /* K(j + 1) */
    } else {
      gk_fa_ws_landed<0>(FA_WS_FULL_V);
    }
  }
}

/* A consumer's start on query rows [row0, row0 + 128) of head h in tiles
 * of KEYS keys: which consumer (w = 0, 1: rows row0 + 64 w .. + 63), the
 * block's tiles, the keys its own rows see (mine), gk_fa_wg_begin's rows
 * and Q, the scale times log2(e). */
template <int D>
struct gk_fa_ws_rows {
  int w;
  int64_t tiles, mine, qpos[2], rows[2];
  uint32_t qa[D / 16][4];
  float sl;
};
template <int Causal, int D, int KEYS, bool QREG = true>
GK_DEV void gk_fa_ws_begin(const uint16_t *q, int64_t skv, int64_t sq, float scale, int64_t h,
                           int64_t row0, gk_fa_ws_rows<D> &c, gk_fa_state<D> &st) {
  const int64_t ke = gk_fa_kend(Causal, sq, skv, row0, 2 * FA_BLOCK_ROWS);
  c.tiles = (ke + KEYS - 1) / KEYS;
  c.w = GK_SHFL(gk_group() / 4, 0); /* provably uniform: descriptors in uniform registers */
  const int64_t r0 = row0 + FA_BLOCK_ROWS * c.w; /* this warpgroup's rows */
  if (QREG) {
    gk_fa_wg_begin<D>(q, h, sq, r0, c.qpos, c.rows, c.qa, st);
  } else { /* Q is read from shared memory (gk_fa_wo's OV 2): qa unused */
    gk_fa_prefill_rows(h, sq, r0 + 16 * (gk_group() % 4), c.qpos, c.rows);
    gk_fa_state_init<D>(st);
  }
  c.sl = scale * 1.4426950408889634f;
  c.mine = gk_fa_kend(Causal, sq, skv, r0, FA_BLOCK_ROWS);
}

/* A consumer's part (warpgroup w = 0, 1: rows row0 + 64 w .. + 63). */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_ws_consume(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                             int64_t sq, float scale, int64_t h, int64_t row0) {
  constexpr int KEYS = gk_fa_smem<D>::WG_KEYS;
  const int64_t skv = kv.n;
  gk_fa_ws_rows<D> c;
  gk_fa_state<D> st;
  gk_fa_ws_begin<Causal, D, KEYS>(q, skv, sq, scale, h, row0, c, st);
  __syncthreads(); /* the previous use of the stages is over */
  if (GK_FA_WS_PINGPONG && c.w == 1) gk_bar_sync<FA_WS_SIGNAL>(FA_WS_TURN + 1);
  for (int64_t j = 0; j < c.tiles; j++) {
    const int ks = (int)(j & 1);
    const int64_t k0 = j * KEYS;
    const bool work = k0 < c.mine;
    float s[KEYS / 8][4];
    gk_bar_sync<FA_WS_SIGNAL>(FA_WS_FULL_K + 2 * ks + c.w);
    if (work) gk_fa_wg_scores_issue<D, H>(sm.wg.k[ks], &sm, c.qa, s);
    if (GK_FA_WS_PINGPONG) gk_bar_arrive<FA_WS_SIGNAL>(FA_WS_TURN + (c.w ^ 1)); /* its turn */
    gk_wgmma_wait<0>(); /* outside `work`: waited for in a branch, ptxas serializes (C7518) */
    if (work) gk_fa_softmax<Causal, D, KEYS / 8>(s, k0, skv, sq, c.qpos, c.sl, st);
    gk_bar_sync<FA_WS_SIGNAL>(FA_WS_FULL_V + c.w);
    if (GK_FA_WS_PINGPONG) gk_bar_sync<FA_WS_SIGNAL>(FA_WS_TURN + c.w); /* this one's turn */
    if (work) gk_fa_wg_pv<D, H>(sm, s, st);
    if (j + 1 < c.tiles) gk_bar_arrive<FA_WS_THREADS>(FA_WS_EMPTY);
  }
  if (GK_FA_WS_PINGPONG && c.w == 0) gk_bar_arrive<FA_WS_SIGNAL>(FA_WS_TURN + 1);
  gk_fa_mma_store<D, H>(o, c.rows, st);
}

/*
 * The warp-specialized schedule with each consumer's two products
 * overlapped (FlashAttention-3's intra-warpgroup pipelining; the image
 * of -DGK_FA_WGMMA=3, GK_FA_WS_OVERLAP_ON). Above, a consumer waits for S
 * of a tile before its softmax and for P V before the next S, so its
 * tensor cores idle through each softmax unless the other consumer fills
 * them. Here step j issues S of tile j and P V of tile j - 1 together,
 * two groups: S is waited for first and its softmax runs while P V still
 * runs; then P V is waited for and the output rescaled by the new
 * maxima. The output's operations come in the same order as above (its
 * rescale for tile j before P V of tile j is added), so the same bits.
 * Tiles + 1 steps: the first has S alone, the last P V alone.
 *
 * P of tile j - 1 (16 registers) is held across S of tile j, in tiles of
 * OV_KEYS = 64 keys at both head_dims (at head_dim 64, 128-key tiles
 * spilled at the consumers' 216 registers). V of tile j - 1 is read while
 * K of tile j is: two stages of K and two of V (`ov`, 64 KB at head_dim
 * 128: dynamic shared memory, so the image's launch row has `shared`).
 * Tile j's K and V lie in stage j mod 2. The producer copies K(j) once
 * both consumers' S of tile j - 2 is done (EMPTY_K) and V(j) once their
 * P V of tile j - 2 is (EMPTY_V), both before it waits for anything to
 * land, then tells the consumers of V(j - 1) and K(j) at once (step j
 * wants both). An EMPTY barrier a stage, not one: a consumer may arrive
 * for tiles j and j + 1 before the other arrives for j, and a barrier
 * counts arrivals, not whose (cuda.emu deadlocks with one). The turns of
 * the ping-pong are the steps (consumer 0 takes its first without
 * waiting, consumer 1 gives back no last one, as above).
 */
enum {
  FA_WO_FULL_K = FA_BAR_FIRST + 1, /* + 2 s + w */
  FA_WO_FULL_V = FA_WO_FULL_K + 4, /* + 2 s + w */
  FA_WO_EMPTY_K = FA_WO_FULL_V + 4, /* + s */
  FA_WO_EMPTY_V = FA_WO_EMPTY_K + 2, /* + s */
  FA_WO_TURN = FA_WO_EMPTY_V + 2,    /* + w */
};
static_assert(FA_WO_TURN + 1 <= 15, "16 named barriers");

/*
 * Where the overlapped schedule's operands lie, by OV (Dt::ws_overlap),
 * and its tile, by OV and Causal:
 *   1: Q in registers (gk_fa_ws_rows' qa), tiles of OV_KEYS = 64 keys,
 *      the stages `ov` (64 KB at head_dim 128);
 *   2: Q in shared memory, each consumer's 64 rows in the K stages' core
 *      matrices (`oq.q[w]`), read by wgmma's SS form (gk_wgmma_ss), and
 *      FlashAttention-3's tiles: OQ_KEYS = 128 keys causal, OQ_WIDE_KEYS
 *      = 176 not at head_dim 128 and 192 at 64 (the stages hold them:
 *      208 KB at head_dim 128, 112 KB at 64).
 *      FlashAttention-3 reads Q through a descriptor because
 *      "register bandwidth is actually a bottleneck" (its mainloop); the
 *      32 registers a thread that Q's fragments took at head_dim 128 hold
 *      the longer tile's scores and P instead (S 64 or 88, P 32 or 44,
 *      O 64 a thread at head_dim 128; at 64, 192 keys: S 96, P 48, O 32),
 *      with the consumers at 232 registers (FA_WS_CONSUMER_REGS; ptxas
 *      13.0 needs 200 causal, 232 not; 208 at head_dim 64). With tile
 *      0's S issued in a branch, 128-key tiles needed 256 and more (see
 *      gk_fa_wo_consume), and the tiles were 96 keys.
 * s_mma issues S += Q K^T of K stage ks (the instructions alone).
 */
template <int D, int OV, int Causal>
struct gk_fa_wo;
template <int D, int Causal>
struct gk_fa_wo<D, 1, Causal> {
  enum { KEYS = gk_fa_smem<D>::OV_KEYS, QREG = 1, SW = 0 };
  GK_DEV uint16_t *k(gk_fa_smem<D> &sm, int s) { return sm.ov.k[s]; }
  GK_DEV uint16_t *v(gk_fa_smem<D> &sm, int s) { return sm.ov.v[s]; }
  template <class H>
  GK_DEV void s_mma(gk_fa_smem<D> &sm, int ks, const gk_fa_ws_rows<D> &c, float (*s)[4]) {
    gk_fa_wg_s_mma<D, H, KEYS>(&sm, sm.ov.k[ks], c.qa, s);
  }
  template <class H>
  GK_DEV void pv_mma(gk_fa_smem<D> &sm, int vs, const uint32_t (*pa)[4], gk_fa_state<D> &st) {
    gk_fa_wg_pv_mma<D, H, KEYS>(&sm, sm.ov.v[vs], pa, st);
  }
};
/* OV 2's stages (Q, K and V) lie in the 128-byte swizzle's layout
 * (gk_fa_sw_at), which the copies fill a row at a time; every stage is a
 * whole number of 1024-byte atoms from the shared struct, which starts
 * 1024-byte aligned (gk_fa_shared; gk_wgmma_sw128_check). S: for each 16
 * of d, A (Q) and B (K) K-major, the start 32 bytes on in the row's 64
 * elements, the next 64 a column of atoms on; SBO 1024 (8 rows), LBO
 * unused. P V: B (V) N-major, 16 keys two atoms on; SBO 1024 (8 keys),
 * LBO the column of atoms (d 64 .. 127). */
template <int D, int Causal>
struct gk_fa_wo<D, 2, Causal> {
  enum { KEYS = Causal ? gk_fa_smem<D>::OQ_KEYS : gk_fa_smem<D>::OQ_WIDE_KEYS, QREG = 0, SW = 1 };
  static_assert(2 * FA_BLOCK_ROWS * D % 1024 == 0 &&
                    2 * gk_fa_smem<D>::OQ_WIDE_KEYS * D % 1024 == 0,
                "oq's stages: whole 1024-byte atoms from the struct's start");
  GK_DEV uint16_t *k(gk_fa_smem<D> &sm, int s) { return sm.oq.k[s]; }
  GK_DEV uint16_t *v(gk_fa_smem<D> &sm, int s) { return sm.oq.v[s]; }
  template <class H>
  GK_DEV void s_mma(gk_fa_smem<D> &sm, int ks, const gk_fa_ws_rows<D> &c, float (*s)[4]) {
    const uint16_t *q = sm.oq.q[c.w], *k = sm.oq.k[ks];
    for (int kk = 0; kk < D / 16; kk++)
      gk_wgmma_ss<H, KEYS, 0>(
          &s[0][0],
          gk_wgmma_desc_sw128(&sm, &q[kk / 4 * FA_BLOCK_ROWS * 64 + kk % 4 * 16], 16, 1024),
          gk_wgmma_desc_sw128(&sm, &k[kk / 4 * KEYS * 64 + kk % 4 * 16], 16, 1024), &sm, kk > 0);
  }
  template <class H>
  GK_DEV void pv_mma(gk_fa_smem<D> &sm, int vs, const uint32_t (*pa)[4], gk_fa_state<D> &st) {
    const uint16_t *v = sm.oq.v[vs];
    for (int kk = 0; kk < KEYS / 16; kk++) /* keys 16 kk .. 16 kk + 15 */
      gk_wgmma<H, D, 1>(&st.acc[0][0], pa[kk],
                        gk_wgmma_desc_sw128(&sm, &v[1024 * kk], 128 * KEYS, 1024), &sm);
  }
};

/* OV 2: consumer c.w's 64 query rows of head h (row0 + 64 c.w ..) copied
 * into its Q stage by its 128 threads (zeros past sq), landed and fenced for the
 * tensor cores; the caller's next barrier of the warpgroup (FULL_K of
 * tile 0) makes every thread's copies visible to the others. */
template <int D>
GK_DEV void gk_fa_wo_q(gk_fa_smem<D> &sm, const uint16_t *q, int64_t h, int64_t sq,
                       const gk_fa_ws_rows<D> &c, int64_t row0, gk_int<1>) {
  (void)sm, (void)q, (void)h, (void)sq, (void)c, (void)row0; /* Q is in registers */
}
template <int D>
GK_DEV void gk_fa_wo_q(gk_fa_smem<D> &sm, const uint16_t *q, int64_t h, int64_t sq,
                       const gk_fa_ws_rows<D> &c, int64_t row0, gk_int<2>) {
  gk_wgmma_sw128_check(&sm);
  const gk_kv_contig<uint16_t> rows = {q + h * sq * D, q + h * sq * D, sq, D};
  gk_fa_wg_load<D, FA_THREADS, gk_kv_contig<uint16_t>, uint16_t, FA_BLOCK_ROWS, false, true>(
      sm.oq.q[c.w], rows.k, rows, 0, row0 + FA_BLOCK_ROWS * c.w, (int)threadIdx.x % FA_THREADS);
  gk_cp_async_commit();
  gk_cp_async_wait<0>();
  gk_fence_proxy_async();
}

#if GK_FA_TMA_CODE
/*
 * The producer by TMA (GK_FA_TMA_ON, OV 2): its first thread issues each
 * stage's boxes, 64 elements of d (128 bytes, the 128-byte swizzle) by
 * KEYS keys of one KV head, D / 64 a stage, into the layout the copies
 * write (gk_fa_sw_at: box c at c KEYS 64 elements), and announces their
 * bytes to the stage's mbarrier (sm.oq.full: K stage 0, 1, V stage 0, 1),
 * on which both consumers wait (gk_fa_wo_full) instead of the FULL named
 * barriers; keys past skv land as zeros, as the copies' do. The EMPTY
 * barriers and the turns stay as they are, so a stage is loaded again
 * only once both consumers have waited for its last phase. 128 threads
 * issuing 44 cp.async each a stage (head_dim 128, 176 keys) become one
 * issuing 2 boxes, and each box reads whole lines of L2.
 *
 * The maps: built on the device (gk_tmap_build) into a slot of this SM
 * (gk_tma_claim) once a block, by the producer's first warp, from the
 * launch's own k, v, skv and n_kv_heads: the kernel's arguments and
 * launch row stay as they are. Where there is no slot (or k or v is not
 * 16-byte aligned, or skv is 0 or past 2^31 - 1, or the launch is a
 * decode), the block copies by cp.async as without TMA: the same bytes
 * in the same places, so the same bits.
 *
 * gk_fa_tma_begin, by every thread of the block before the schedules
 * part: returns the slot (or -1) to all; gk_fa_tma_end, by every thread
 * after them: gives the slot back once every copy has landed (the
 * consumers waited for each before they returned). Neither meets at a
 * barrier in a decode, whose producer warpgroup leaves at once.
 */
template <int Causal, int D, class KV>
GK_DEV int gk_fa_tma_begin(gk_fa_smem<D> &sm, const KV &kv, int64_t n_kv_heads, bool prefill) {
  typedef gk_fa_wo<D, 2, Causal> W;
  /* A decode's producer leaves at once, and its consumers meet at block
   * barriers of their own: no barrier here (uniform). */
  if (!prefill) return -1;
  const int tid = (int)threadIdx.x;
  sm.oq.ph[tid] = 0;
  if (tid == 2 * FA_THREADS) {
    int slot = -1;
    if (kv.n > 0 && kv.n < 2147483647 && n_kv_heads < 2147483647 &&
        (uintptr_t)kv.k % 16 == 0 && (uintptr_t)kv.v % 16 == 0)
      slot = gk_tma_claim();
    if (slot >= 0) {
      for (int b = 0; b < 4; b++) gk_mbar_init(&sm.oq.full[b], 1);
      gk_mbar_init_fence();
    }
    sm.oq.slot = slot;
  }
  __syncthreads();
  const int slot = sm.oq.slot;
  if (slot >= 0 && gk_group() == 2 * FA_GROUPS) { /* the producer's first warp */
    for (int i = 0; i < 2; i++)
      gk_tmap_build(slot, i, sm.oq.tstage,
                    gk_tmap_rows_sw128(i ? kv.v : kv.k, D, (uint32_t)kv.n,
                                       (uint32_t)n_kv_heads, W::KEYS));
  }
  return slot;
}
GK_DEV void gk_fa_tma_end(int slot) {
  if (slot < 0) return; /* uniform: a decode, or a prefill by cp.async */
  __syncthreads();
  if (threadIdx.x == 2 * FA_THREADS) gk_tma_release(slot);
}

/* The TMA producer's tiles (the caller's block barrier passed). */
template <int Causal, int D>
GK_DEV void gk_fa_wo_produce_tma(gk_fa_smem<D> &sm, int64_t hk, int tiles) {
  typedef gk_fa_wo<D, 2, Causal> W;
  constexpr int KEYS = W::KEYS;
  constexpr uint32_t BYTES = KEYS * D * 2;
  const bool lead = threadIdx.x == 2 * FA_THREADS;
  const int slot = sm.oq.slot;
  /* Tile j of map i (0: K, 1: V) into stage, its bytes to mbarrier b. */
  auto issue = [&](int j, int i, uint16_t *stage, int b) {
    if (!lead) return;
    gk_mbar_arrive_expect_tx(&sm.oq.full[b], BYTES);
    for (int c = 0; c < D / 64; c++)
      gk_tma_load_3d(stage + c * KEYS * 64, gk_tmap(slot, i), 64 * c, j * KEYS, (int)hk,
                     &sm.oq.full[b]);
  };
  for (int j = 0; j < tiles; j++) {
    const int st = (int)(j & 1);
    if (j >= 2) gk_bar_sync<FA_WS_THREADS>(FA_WO_EMPTY_K + st); /* S of tile j - 2 done */
    issue(j, 0, W::k(sm, st), st);
    if (j >= 2) gk_bar_sync<FA_WS_THREADS>(FA_WO_EMPTY_V + st); /* P V of tile j - 2 done */
    issue(j, 1, W::v(sm, st), 2 + st);
  }
}
#endif

/* A consumer's wait for K stage s (V: 2 + s) of the tile it multiplies
 * next: the producer's FULL named barrier, or with TMA the stage's
 * mbarrier, at the parity this thread tracks (ph). */
template <class H, int D>
GK_DEV void gk_fa_wo_full(gk_fa_smem<D> &sm, bool tma, unsigned &ph, int b, int w) {
#if GK_FA_TMA_CODE
  if constexpr ((bool)H::tma) {
    if (tma) {
      gk_mbar_wait(&sm.oq.full[b], ph >> b & 1u);
      ph ^= 1u << b;
      return;
    }
  }
#endif
  (void)sm, (void)tma, (void)ph;
  gk_bar_sync<FA_WS_SIGNAL>((b < 2 ? FA_WO_FULL_K + 2 * b : FA_WO_FULL_V + 2 * (b - 2)) + w);
}

/* The producer's part of query rows [row0, row0 + 128), overlapped. ABL:
 * Dt::ablate (GK_FA_ABLATE's bit 2: the copies left out, a diagnosis). */
template <int Causal, int D, int OV, class KV, int TMA = 0, int ABL = 0>
GK_DEV void gk_fa_wo_produce(gk_fa_smem<D> &sm, const KV &kv, int64_t hk, int64_t sq,
                             int64_t row0) {
  typedef gk_fa_wo<D, OV, Causal> W;
  constexpr int KEYS = W::KEYS;
  const int64_t ke = gk_fa_kend(Causal, sq, kv.n, row0, 2 * FA_BLOCK_ROWS);
  const int tiles = (int)((ke + KEYS - 1) / KEYS);
  const int tid = (int)threadIdx.x - 2 * FA_THREADS;
  __syncthreads(); /* the previous use of the stages is over */
#if GK_FA_TMA_CODE
  if constexpr (TMA && OV == 2) {
    if (sm.oq.slot >= 0) {
      gk_fa_wo_produce_tma<Causal, D>(sm, hk, tiles);
      return;
    }
  }
#endif
  constexpr bool COPY = !(ABL & 2);
  for (int j = 0; j < tiles; j++) {
    const int st = (int)(j & 1);
    if (j >= 2) gk_bar_sync<FA_WS_THREADS>(FA_WO_EMPTY_K + st); /* S of tile j - 2 done */
    if (COPY)
      gk_fa_wg_load<D, FA_THREADS, KV, uint16_t, KEYS, true, (bool)W::SW>(
          W::k(sm, st), kv.k, kv, hk, (int64_t)j * KEYS, tid);
    gk_cp_async_commit();
    if (j >= 2) gk_bar_sync<FA_WS_THREADS>(FA_WO_EMPTY_V + st); /* P V of tile j - 2 done */
    if (COPY)
      gk_fa_wg_load<D, FA_THREADS, KV, uint16_t, KEYS, true, (bool)W::SW>(
          W::v(sm, st), kv.v, kv, hk, (int64_t)j * KEYS, tid);
    gk_cp_async_commit();
    if (j >= 1) gk_fa_ws_landed<1>(FA_WO_FULL_V + 2 * (st ^ 1)); /* V(j - 1), */
    gk_fa_ws_landed<1>(FA_WO_FULL_K + 2 * st);                   /* K(j) */
  }
  if (tiles > 0) gk_fa_ws_landed<0>(FA_WO_FULL_V + 2 * (int)((tiles - 1) & 1));
}

/* P of a tile as wgmma's A fragments: the weights in s rounded to H, or
 * zeros for a tile past this consumer's rows (!work). */
template <class H, int KEYS>
GK_DEV void gk_fa_wo_p(bool work, const float (*s)[4], uint32_t (*pa)[4]) {
  for (int kk = 0; kk < KEYS / 16; kk++) {
    if (work)
      gk_fa_p_frag<H>(s, kk, pa[kk]);
    else
      pa[kk][0] = pa[kk][1] = pa[kk][2] = pa[kk][3] = 0u;
  }
}

/* The softmax of the first tile, its output rescale (of zeros: the same
 * bits as gk_fa_softmax's) and its P; without softmax (GK_FA_ABLATE's bit
 * 1, a diagnosis), P alone, of the scores as they are. */
template <int Causal, int D, class H, int KEYS>
GK_DEV void gk_fa_wo_softmax(bool work, float (*s)[4], int64_t kb, int64_t skv, int64_t sq,
                             const int64_t qpos[2], float sl, gk_fa_state<D> &st,
                             uint32_t (*pa)[4]) {
  if (!(H::ablate & 1)) {
    float alpha[2] = {1.0f, 1.0f};
    if (work) gk_fa_softmax_p<Causal, D, KEYS / 8>(s, kb, skv, sq, qpos, sl, st, alpha);
    gk_fa_rescale<D>(st, alpha);
  }
  gk_fa_wo_p<H, KEYS>(work, s, pa);
}

/* A consumer's part (warpgroup w = 0, 1: rows row0 + 64 w .. + 63),
 * overlapped (OV = H::ws_overlap: gk_fa_wo). */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_wo_consume(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                             int64_t sq, float scale, int64_t h, int64_t row0) {
  constexpr int OV = H::ws_overlap;
  typedef gk_fa_wo<D, OV, Causal> W;
  constexpr int KEYS = W::KEYS;
  constexpr bool NOSOFT = H::ablate & 1; /* GK_FA_ABLATE: a diagnosis */
  const int64_t skv = kv.n;
  gk_fa_ws_rows<D> c;
  gk_fa_state<D> st;
  gk_fa_ws_begin<Causal, D, KEYS, (bool)W::QREG>(q, skv, sq, scale, h, row0, c, st);
  uint32_t pa[KEYS / 16][4]; /* P of the tile before */
  float s[KEYS / 8][4];
  __syncthreads(); /* the previous use of the stages is over */
  if (c.tiles == 0) { /* the same for both consumers: no turns either */
    gk_fa_mma_store<D, H>(o, c.rows, st);
    return;
  }
  /* With TMA (gk_fa_wo_produce_tma), this thread's parities of the
   * stages' mbarriers, kept in shared memory from one query block to the
   * next. */
  bool tma = false;
  unsigned ph = 0;
#if GK_FA_TMA_CODE
  if constexpr ((bool)H::tma && OV == 2) {
    tma = sm.oq.slot >= 0;
    if (tma) ph = sm.oq.ph[threadIdx.x];
  }
#endif
  gk_fa_wo_q<D>(sm, q, h, sq, c, row0, gk_int<OV>());
  /* Q's copies, made visible to the warpgroup by FULL_K's named barrier
   * below; with TMA that is an mbarrier, which orders nothing between the
   * threads, so the warpgroup meets at the barrier's id alone. */
  if (tma) gk_bar_sync<FA_THREADS>(FA_WO_FULL_K + c.w);
  /* Step 0: S of tile 0 alone. */
  gk_fa_wo_full<H>(sm, tma, ph, 0, c.w);
  if (GK_FA_WS_PINGPONG && c.w == 1) gk_bar_sync<FA_WS_SIGNAL>(FA_WO_TURN + 1);
  /* Issued whether or not this consumer's rows see tile 0, as the steps
   * below issue theirs: in a branch, s was left undefined on the other
   * path, and inside the walk's loop over query blocks the compiler kept
   * those 64 registers (at 128 keys) live around it, from one block to the
   * next (ptxas 13.0: 256 registers and more a consumer, 192-200 so). */
  const bool work0 = 0 < c.mine;
  gk_fa_s_issue([&] { W::template s_mma<H>(sm, 0, c, s); });
  if (GK_FA_WS_PINGPONG) gk_bar_arrive<FA_WS_SIGNAL>(FA_WO_TURN + (c.w ^ 1));
  gk_wgmma_wait<0>();
  if (2 < c.tiles) gk_bar_arrive<FA_WS_THREADS>(FA_WO_EMPTY_K); /* stage 0 */
  gk_fa_wo_softmax<Causal, D, H, KEYS>(work0, s, 0, skv, sq, c.qpos, c.sl, st, pa);
  /* Steps 1 .. tiles - 1: S of tile j and P V of tile j - 1, both issued
   * whether or not this consumer's rows see the tile: a wgmma in a branch
   * of its own while the other group runs made ptxas serialize every
   * wgmma (C7520). Causal: 64 rows being at most one tile (of 64 or 128
   * keys), only the block's last tile can lie past this consumer's rows;
   * its S is issued and not read, and its P V, the last step's, skipped.
   * P is zeros past the rows all the same (gk_fa_wo_p), so that P V adds
   * zeros should the tiles shrink. The K and V stages read are loaded. */
  for (int64_t j = 1; j < c.tiles; j++) {
    const int cs = (int)(j & 1);
    gk_fa_wo_full<H>(sm, tma, ph, cs, c.w);
    gk_fa_wo_full<H>(sm, tma, ph, 2 + (cs ^ 1), c.w);
    if (GK_FA_WS_PINGPONG) gk_bar_sync<FA_WS_SIGNAL>(FA_WO_TURN + c.w); /* this one's turn */
    gk_fa_s_issue([&] { W::template s_mma<H>(sm, cs, c, s); });
    W::template pv_mma<H>(sm, cs ^ 1, pa, st);
    gk_wgmma_commit();
    if (GK_FA_WS_PINGPONG) gk_bar_arrive<FA_WS_SIGNAL>(FA_WO_TURN + (c.w ^ 1)); /* its turn */
    gk_wgmma_wait<1>(); /* S */
    if (j + 2 < c.tiles) gk_bar_arrive<FA_WS_THREADS>(FA_WO_EMPTY_K + cs);
    float alpha[2] = {1.0f, 1.0f};
    const bool work = j * KEYS < c.mine;
    if (work && !NOSOFT)
      gk_fa_softmax_p<Causal, D, KEYS / 8>(s, j * KEYS, skv, sq, c.qpos, c.sl, st, alpha);
    gk_wgmma_wait<0>(); /* P V */
    if (j + 1 < c.tiles) gk_bar_arrive<FA_WS_THREADS>(FA_WO_EMPTY_V + (cs ^ 1));
    if (!NOSOFT) gk_fa_rescale<D>(st, alpha);
    gk_fa_wo_p<H, KEYS>(work, s, pa);
  }
  /* Step `tiles`: P V of the last tile alone. */
  const int ls = (int)((c.tiles - 1) & 1);
  gk_fa_wo_full<H>(sm, tma, ph, 2 + ls, c.w);
  if (GK_FA_WS_PINGPONG) gk_bar_sync<FA_WS_SIGNAL>(FA_WO_TURN + c.w);
  if ((c.tiles - 1) * KEYS < c.mine) {
    gk_wgmma_fence();
    W::template pv_mma<H>(sm, ls, pa, st);
    gk_wgmma_commit();
    gk_wgmma_wait<0>();
  }
#if GK_FA_TMA_CODE
  if constexpr ((bool)H::tma && OV == 2) {
    if (tma) sm.oq.ph[threadIdx.x] = (unsigned char)ph;
  }
#endif
  if (GK_FA_WS_PINGPONG && c.w == 0) gk_bar_arrive<FA_WS_SIGNAL>(FA_WO_TURN + 1);
  /* Without softmax, no sums: o is 1/4 of the products' sums (a lane's
   * part of each row's sum 1, gk_fa_row_sum over its quad). */
  if (NOSOFT) st.l[0] = st.l[1] = 1.0f;
  gk_fa_mma_store<D, H>(o, c.rows, st);
}

#endif /* GK_FA_WGMMA_CUH */
