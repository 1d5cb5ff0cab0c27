/*
 * fa_mma.cuh - flash_attention's f16 and bf16 path on tensor cores
 * (FlashAttention-2's schedule), included by flash_attention.cuh, which
 * says the semantics. H, the element type (gk_f16 or gk_bf16, gk_gpu.cuh),
 * picks the mma instruction and how P and o are rounded; K, V and Q move
 * as 16-bit bits whatever they mean.
 *
 * A block of FA_THREADS (4 groups of 32: warps) streams keys and values in
 * tiles (32 keys for D = 128, 64 for D = 64) through three shared-memory
 * stages: cp.async fills the next two tiles while the groups work on this
 * one. K and V lie in shared memory as in global memory but for the order
 * of each row's 16-byte chunks (gk_fa_swz), so that the 8 rows an ldmatrix
 * reads lie on distinct banks. A group multiplies fragments of 16
 * query rows (mma A fragments held in registers for the whole call, or
 * read from shared memory: gk_fa_qfrag) by a slice of the tile: S = Q K^T
 * on gk_mma_16816 (K's
 * fragments by ldmatrix), the online softmax on those fragments in f32
 * registers (a row is shared by the 4 lanes of a quad: two xor shuffles),
 * and P, rounded to H, reused in registers as the A operand of O += P V
 * (V's fragments by ldmatrix.trans). The score matrix never leaves
 * registers. Lane 4g + t holds fragment rows g and g + 8 (r = 0, 1 below)
 * and, of each 8-wide tile of S or O, columns 2t and 2t + 1.
 *
 * Two schedules over the same tile step (gk_fa_mma_step):
 * - prefill (gk_fa_mma_prefill): the block owns 128 query rows of one
 *   head (gk_fa_mma_shape), each group 32 of them against every key of a
 *   tile; at head_dim 128, Q in shared memory and one buffer each of K
 *   and V (FlashAttention-2's schedule and layout);
 * - decode (gk_fa_mma_decode), when a KV head's queries fit one fragment
 *   (n_heads / n_kv_heads * sq <= 16: decode, speculative decode): the
 *   block owns a KV head and packs the queries of every head that shares it
 *   (GQA) into the 16 rows, so K and V are read once for all of them; each
 *   group takes a quarter of every tile's keys, and the 4 partial states
 *   (max, sum, output) are merged through shared memory at the end,
 *   FlashDecoding's merge inside one block. Long contexts are split
 *   across blocks too (gk_fa_split): a KV head's keys go to n blocks in
 *   ranges of whole tiles, whose states meet in the caller's workspace
 *   and are merged by the last block to finish (a speculative decode's
 *   many rows in two levels: gk_fa_merge_p).
 *   Up to FA_DECODE_ROWS (64) packed rows (speculative decode of up to 16
 *   tokens at GQA 4:1, of 8 at 8:1) the fragments of 16 rows share a
 *   block, a group each (a block each on the wgmma images), over the same
 *   ranges of keys, and each has slots of its own.
 * Shared memory: 48 KB (the decode merge reuses it); a decode's ring of
 * more than 3 tiles (GK_FA_DEC_STAGES) 16 KB a tile more.
 */
#ifndef GK_FA_MMA_CUH
#define GK_FA_MMA_CUH

#include "../common/gk_paged.h"
#include "gk_gpu.cuh"

/* The mma prefill's shape for head_dim D and keys and values located by
 * KV (gk_kv_contig, gk_kv_paged below): MT fragments of 16 query rows a
 * group, ROWS a block, steps of NT n-tiles (8 keys each). A group takes 32
 * rows where registers allow, so that each K and V fragment read from
 * shared memory serves both halves (at 16 rows a group reads as many
 * shared-memory bytes as its tensor cores need cycles, docs/kernels.md):
 * - head_dim 64: Q stays in registers as A fragments;
 * - head_dim 128: 32 rows of Q would take 64 registers beside the 128 of
 *   the output (ptxas spills past 255), so Q lies in shared memory, read by
 *   ldmatrix at every tile (QSMEM: FlashAttention-2's layout), and a tile
 *   (32 keys) is one step;
 * - head_dim 128 over pages: the page table's addressing still spills
 *   there, so 16 rows a group, Q in registers (the paged prefill is the
 *   rarer case: decodes take gk_fa_mma_decode);
 * - head_dim 128 on Turing (sm_75): the same, as its cp.async is a copy
 *   through registers (gk_gpu.cuh) and QSMEM spilled there.
 * -DGK_FA_QSMEM=0 keeps Q in registers at head_dim 128 everywhere (16 rows
 * a group): ci/gpu/prepare.sh builds it beside the default, so that a GPU
 * run times both. */
#if !defined(GK_FA_QSMEM)
#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define GK_FA_QSMEM 0
#else
#define GK_FA_QSMEM 1
#endif
#endif
template <int D, class KV>
struct gk_fa_mma_shape {
  enum {
    QSMEM = D == 128 && !KV::paged && GK_FA_QSMEM,
    MT = D == 128 && !QSMEM ? 1 : 2,
    ROWS = FA_GROUPS * 16 * MT,
    NT = D == 128 ? 4 : 2,
  };
};

/* Where ldmatrix reads a tile of 16-bit rows of D elements: at(r, c) is
 * the offset, in elements, of the 16-byte chunk c of row r. A matrix's 8
 * rows must lie in distinct groups of 4 banks ((offset / 8) mod 8, 16-byte
 * units) to be read in one pass (cuda.emu counts it): rows are not padded,
 * chunk c of row r lies at c ^ (r mod 8) (the XOR swizzle of CUTLASS and
 * FlashAttention-2), so that three stages of K and V, or Q's 128 rows and
 * a tile of K and V at head_dim 128, fit 48 KB. */
template <int D>
struct gk_fa_swz {
  GK_DEV int at(int r, int c) { return r * D + 8 * (c ^ (r & 7)); }
};

/* ST stages of the tile (gk_fa_mma_keys: the mma.sync prefill's, 3, and a
 * decode's, Dt::dec_stages), or (a decode, at the end) the merge: 16 KB a
 * stage, 48 KB for 3. A block holds one in its shared memory (gk_fa_smem's
 * d, gk_fa_dsm), or one a warpgroup that runs a decode where that has room
 * (gk_fa_decode_wgs, flash_attention.cuh). */
template <int D, int ST = 3>
struct gk_fa_dsmem {
  enum {
    KEYS = D == 128 ? 32 : 64, /* keys a tile: 16 KB of K and V */
    STAGES = ST,               /* tiles in shared memory */
  };
  union {
    struct { /* gk_fa_swz */
      uint16_t k[STAGES][KEYS * D], v[STAGES][KEYS * D];
    } tile;
    struct {
      /* A row of o is D + 8 floats (32 bytes mod 128 apart), so that a
       * group's store of its fragment's 8 rows (2 floats of each of 4
       * lanes a row) takes 2 passes, the fewest for 256 bytes: rows D
       * floats apart fell on the same 8 banks, 8 passes (Nsight Compute
       * on an H200, 2026-11-30: the decode's 32 stores a warp, 6144 of
       * their 8192 passes excess). Within the tile stages' bytes. */
      float m[FA_GROUPS][16], l[FA_GROUPS][16], o[FA_GROUPS][16][D + 8];
    } merge;
  };
};

/* The block's shared memory (one, declared by the caller for both
 * schedules): the stages and merge above (d), or the prefill's Q and one
 * tile (QSMEM), or the wgmma prefill's stages (two of K, one of V, in
 * tiles twice as long). 48 KB at most: static shared memory, no opt-in
 * needed; but for the overlapped warp-specialized images' two stages of V
 * (`ov`, 64 KB; `oq`, 208 KB with Q), which take it as dynamic shared
 * memory (gk_fa_sm). */
template <int D>
struct gk_fa_smem {
  enum {
    KEYS = gk_fa_dsmem<D>::KEYS,
#if defined(GK_GPU_EMULATE)
    DEC_ROOM = 6, /* room for every Dt::dec_stages the emulator runs */
#else
    DEC_ROOM = GK_FA_DEC_STAGES, /* the decode's ring (Dt::dec_stages) */
#endif
    WG_KEYS = D == 128 ? 64 : 128, /* keys a wgmma tile: 3 x 16 KB */
    OV_KEYS = 64,                  /* the overlapped schedule's (registers) */
    OQ_KEYS = 128,                 /* the same with Q in shared memory, causal */
    OQ_WIDE_KEYS = D == 128 ? 176 : 192, /* not causal (FlashAttention-3's) */
#if defined(GK_GPU_EMULATE)
    QS_KEYS = 64, /* room for every Dt::qs_keys the emulator runs */
#else
    QS_KEYS = GK_FA_QS_KEYS, /* the QSMEM prefill's (Dt::qs_keys) */
#endif
  };
  union {
    gk_fa_dsmem<D, DEC_ROOM> d; /* as gk_fa_dsm takes it */
#if GK_FA_QSMEM /* not in sm_75's images, nor -DGK_FA_QSMEM=0's */
    struct { /* gk_fa_swz: 32 + 8 + 8 KB at head_dim 128 (+ 16 + 16: 64 keys) */
      uint16_t q[FA_GROUPS * 32 * D], k[QS_KEYS * D], v[QS_KEYS * D];
    } qs;
#endif
#if GK_FA_WGMMA_ON || defined(GK_GPU_EMULATE) /* only in the images that run it */
    struct { /* wgmma's core matrices (fa_wgmma.cuh) */
      uint16_t k[2][WG_KEYS * D], v[WG_KEYS * D];
    } wg;
#endif
#if GK_FA_WS_OVERLAP_ON == 1 || defined(GK_GPU_EMULATE)
    struct { /* the same, two stages of V (64 KB at head_dim 128: dynamic) */
      uint16_t k[2][OV_KEYS * D], v[2][OV_KEYS * D];
    } ov;
#endif
#if GK_FA_WS_OVERLAP_ON == 2 || defined(GK_GPU_EMULATE)
    struct { /* and each consumer's Q, longer tiles (208 KB at head_dim 128) */
      uint16_t q[2][FA_BLOCK_ROWS * D], k[2][OQ_WIDE_KEYS * D], v[2][OQ_WIDE_KEYS * D];
#if GK_FA_TMA_CODE
      /* The TMA producer's (fa_wgmma.cuh, GK_FA_TMA_ON): a tensor map's
       * staging (gk_tmap_build), the stages' mbarriers (K stage 0, 1,
       * then V's), the slot of the block's maps (-1: cp.async), and each
       * thread's parities of the 4 mbarriers (bit b: barrier b's next). */
      __attribute__((aligned(128))) unsigned char tstage[128];
      uint64_t full[4];
      int slot;
      unsigned char ph[3 * FA_THREADS];
#endif
    } oq;
#endif
  };
};

/* The stages of sm.d as a ring of ST (at most DEC_ROOM), and the i-th such
 * past it (a decode's warpgroups, gk_fa_decode_wgs). */
template <int ST, int D>
GK_DEV gk_fa_dsmem<D, ST> &gk_fa_dsm(gk_fa_smem<D> &sm, int i = 0) {
  static_assert(ST <= (int)gk_fa_smem<D>::DEC_ROOM, "the ring fits gk_fa_smem's d");
  return reinterpret_cast<gk_fa_dsmem<D, ST> *>(&sm.d)[i];
}

/* Where the keys and values of one sequence lie: kv.n keys, key j of KV
 * head hk at element gk_kv_row(kv, hk, j) of kv.k and kv.v (of type T).
 * flash_attention's are contiguous, [n_kv_heads][n][d]; paged_attention's
 * are in pages ([page id][n_kv_heads][page][d], kernelsrc/common/
 * gk_paged.h), found through the sequence's row of the block table. */
template <typename T>
struct gk_kv_contig {
  enum { paged = 0 };
  const T *k, *v;
  int64_t n, d;
};
template <typename T>
GK_DEV int64_t gk_kv_row(const gk_kv_contig<T> &kv, int64_t hk, int64_t key) {
  return (hk * kv.n + key) * kv.d;
}
template <typename T, int Page>
struct gk_kv_paged {
  enum { paged = 1 };
  const T *k, *v;
  int64_t n, d;
  const int32_t *bt; /* the sequence's table row: valid (gk_paged_seq_ok) */
  int64_t n_kv_heads;
};
/* gk_paged_row with the page a constant (a shift and a mask: nvcc had
 * carried the constant into the out-of-line copy before, but only there)
 * and the key in 32 bits (keys are below a sequence's int32 length). */
template <typename T, int Page>
GK_DEV int64_t gk_kv_row(const gk_kv_paged<T, Page> &kv, int64_t hk, int64_t key) {
  const uint32_t j = (uint32_t)key;
  return (((int64_t)kv.bt[j / Page] * kv.n_kv_heads + hk) * Page + j % Page) * kv.d;
}

/* Copies of keys [k0, k0 + n) of KV head hk (zeros past kv.n) into k and
 * v (gk_fa_swz), either of which may be null, by the whole block: one
 * cp.async each 16 bytes (the caller commits them as a group). It runs
 * for pages and for a last partial tile (gk_fa_kv_tile below), out of line
 * but in the warp-specialized images: ptxas 13.0 spilled the QSMEM
 * prefill's entry (12 bytes) with it inline beside gk_fa_kv_tile, and the
 * warp-specialized entry (4 bytes) with it out of line. kv by value: by
 * reference, the call put it in local memory, read there by the callers'
 * own copies too. */
#if GK_FA_WS_ON
#define GK_FA_WALK GK_DEV
#else
#define GK_FA_WALK GK_DEV_NOINLINE
#endif
template <int D, class KV>
GK_FA_WALK void gk_fa_kv_copy(uint16_t *k, uint16_t *v, int n, const KV kv, int64_t hk,
                              int64_t k0) {
  /* Not unrolled: in the QSMEM prefill this runs beside S and the output
   * in registers, and the unrolled copy's addresses made ptxas spill. */
#pragma unroll 1
  for (int e = gk_fa_tid(); e < n * (D / 8); e += FA_THREADS) {
    const int r = e / (D / 8), c = e % (D / 8);
    const int64_t key = k0 + r;
    const bool in = key < kv.n;
    const int64_t at = in ? gk_kv_row(kv, hk, key) + 8 * c : 0;
    if (k) gk_cp_async16(&k[gk_fa_swz<D>::at(r, c)], kv.k + at, in);
    if (v) gk_cp_async16(&v[gk_fa_swz<D>::at(r, c)], kv.v + at, in);
  }
}

/* A whole tile of N keys through the block table (gk_fa_kv_tile below):
 * each pass's row found through the table, the PASSES lookups independent
 * loads. Out of line as the walk is: inline, its addresses beside the
 * prefill's made ptxas 13.0 spill 16 to 60 bytes (sm_75, sm_80). */
template <int D, int N, class KV>
GK_FA_WALK void gk_fa_kv_pages(uint16_t *k, uint16_t *v, const KV kv, int64_t hk, int64_t k0) {
  constexpr int CH = D / 8, RP = FA_THREADS / CH, PASSES = N * CH / FA_THREADS;
  const int t = gk_fa_tid(), r0 = t / CH, c = t % CH;
  const int d0 = gk_fa_swz<D>::at(r0, c);
#pragma unroll
  for (int p = 0; p < PASSES; p++) {
    const int64_t at = gk_kv_row(kv, hk, k0 + r0 + RP * p) + 8 * c;
    if (k) gk_cp_async16(&k[d0 + RP * p * D], kv.k + at, true);
    if (v) gk_cp_async16(&v[d0 + RP * p * D], kv.v + at, true);
  }
}

/* The same for a tile of N keys, the prefill's and the decode's: a whole
 * tile (but the last tile's keys past kv.n) by each thread's fixed share
 * of it, chunk c = t % (D / 8) of rows t / (D / 8) + RP p (the swizzle
 * keeps its row mod 8), where gk_fa_kv_copy's walk spends ~20 instructions
 * a chunk on 64-bit indices and bounds (at head_dim 128, 8 chunks a thread
 * a tile: about a fifth of what a warp issues beside its mma; counted in
 * the sm_90a cubin, tests/backends/cuda/sass_mix.py):
 * - contiguous K and V (flash_attention's): one cp.async a chunk at a
 *   constant offset from one address;
 * - pages (paged_attention's): each pass's row found through the table,
 *   the PASSES lookups independent loads issued together. In the walk, a
 *   loop not unrolled, each chunk's cp.async waited for its own table
 *   load (~28 instructions a chunk in the sm_90a cubin of pages of 64),
 *   once a chunk of K and V.
 * A partial tile takes the walk. */
template <int D, int N, class KV>
GK_DEV void gk_fa_kv_tile(uint16_t *k, uint16_t *v, const KV &kv, int64_t hk, int64_t k0) {
  constexpr int CH = D / 8, RP = FA_THREADS / CH, PASSES = N * CH / FA_THREADS;
  if constexpr (N * CH % FA_THREADS == 0 && RP % 8 == 0) {
    if (k0 + N <= kv.n) {
      if constexpr (!KV::paged) {
        const int t = gk_fa_tid(), r0 = t / CH, c = t % CH;
        const int d0 = gk_fa_swz<D>::at(r0, c); /* row r0 + RP p: the same chunk order */
        const int64_t at = gk_kv_row(kv, hk, k0 + r0) + 8 * c;
#pragma unroll
        for (int p = 0; p < PASSES; p++) {
          if (k) gk_cp_async16(&k[d0 + RP * p * D], kv.k + at + (int64_t)RP * p * D, true);
          if (v) gk_cp_async16(&v[d0 + RP * p * D], kv.v + at + (int64_t)RP * p * D, true);
        }
      } else {
        gk_fa_kv_pages<D, N>(k, v, kv, hk, k0);
      }
      return;
    }
  }
  gk_fa_kv_copy<D>(k, v, N, kv, hk, k0);
}

/* One group's running state: per fragment row the max (in log2 units),
 * this lane's part of the sum (of its columns of every tile: the quad's
 * four parts are added once, at the end, by gk_fa_row_sum, as
 * FlashAttention-2 does), and the output fragments. */
template <int D>
struct gk_fa_state {
  float mx[2], l[2], acc[D / 8][4];
};

/* The sum of fragment row r: the quad's four parts. By every lane. */
template <int D>
GK_DEV float gk_fa_row_sum(const gk_fa_state<D> &st, int r) {
  float l = st.l[r];
  l += GK_SHFL_XOR(l, 1);
  l += GK_SHFL_XOR(l, 2);
  return l;
}

template <int D>
GK_DEV void gk_fa_state_init(gk_fa_state<D> &st) {
  for (int r = 0; r < 2; r++) st.mx[r] = -INFINITY, st.l[r] = 0.0f;
  for (int d = 0; d < D / 8; d++)
    for (int e = 0; e < 4; e++) st.acc[d][e] = 0.0f;
}

/* The group's A fragments of Q (16 rows, k = 16 d) for fragment m of its
 * rows and d step kk: from registers (qa[m][kk], gk_fa_mma_q), or by
 * ldmatrix from Q in shared memory (gk_fa_qsm: the group's first row r0
 * of a gk_fa_swz tile; matrix i = lane / 8 is rows 8 (i & 1) .. + 7, d
 * chunk i >> 1, so that r[i] is a[i] of gk_mma_16816). */
template <int D>
struct gk_fa_qsm {
  const uint16_t *q;
  int r0;
};
template <int D>
GK_DEV void gk_fa_qfrag(const uint32_t (*qa)[D / 16][4], int m, int kk, uint32_t a[4]) {
  for (int u = 0; u < 4; u++) a[u] = qa[m][kk][u];
}
template <int D>
GK_DEV void gk_fa_qfrag(const gk_fa_qsm<D> &qs, int m, int kk, uint32_t a[4]) {
  const int lane = gk_lane();
  gk_ldmatrix_x4(a, qs.q + gk_fa_swz<D>::at(qs.r0 + 16 * m + lane % 8 + 8 * (lane / 8 & 1),
                                            2 * kk + lane / 16));
}
/* The same words read as they lie, one by one (the dot-product path:
 * no ldmatrix). */
template <int D>
GK_DEV void gk_fa_qwords(const uint32_t (*qa)[D / 16][4], int m, int kk, uint32_t a[4]) {
  gk_fa_qfrag<D>(qa, m, kk, a);
}
template <int D>
GK_DEV void gk_fa_qwords(const gk_fa_qsm<D> &qs, int m, int kk, uint32_t a[4]) {
  const int lane = gk_lane();
  for (int u = 0; u < 4; u++)
    a[u] = *(const uint32_t *)(qs.q +
                               gk_fa_swz<D>::at(qs.r0 + 16 * m + lane / 4 + 8 * (u & 1),
                                                2 * kk + (u >> 1)) +
                               2 * (lane % 4));
}

/* S = Q K^T for the group's MT fragments of 16 query rows (A fragments
 * from qa: gk_fa_qfrag) and n-tiles nt0 .. nt0 + NT - 1 of the tile k
 * (gk_fa_swz): s[m][nt] the m16n8 fragment of keys 8 (nt0 + nt) .. + 7.
 * B[k][n] = K[n][k]: rows of K are B's columns as they lie. Each B
 * fragment serves every fragment of rows (K read once for 16 MT rows) and
 * each A fragment every n-tile: per 16-wide step of d, the MT A fragments,
 * then one ldmatrix.x4 for the B fragments of two n-tiles (matrix i: keys
 * 8 (i >> 1) .. + 7 of the pair, d chunk i & 1), 12 registers of operands
 * at a time. A step of one n-tile (NT = 1) takes two steps of d per
 * ldmatrix instead. */
template <int D, int NT, int MT, class H, class QA>
GK_DEV void gk_fa_scores_mma(const uint16_t *k, const QA &qa, int nt0, float (*s)[NT][4],
                             gk_bool<false>) {
  const int lane = gk_lane();
  for (int m = 0; m < MT; m++)
    for (int nt = 0; nt < NT; nt++)
      for (int e = 0; e < 4; e++) s[m][nt][e] = 0.0f;
  if (NT % 2 == 0) {
    for (int kk = 0; kk < D / 16; kk++) {
      uint32_t a[MT][4];
      for (int m = 0; m < MT; m++) gk_fa_qfrag<D>(qa, m, kk, a[m]);
      for (int nt = 0; nt < NT; nt += 2) {
        uint32_t b[4];
        gk_ldmatrix_x4(b, k + gk_fa_swz<D>::at((nt0 + nt + lane / 16) * 8 + lane % 8,
                                               2 * kk + lane / 8 % 2));
        for (int m = 0; m < MT; m++) {
          gk_mma_16816<H>(s[m][nt], a[m], b);
          gk_mma_16816<H>(s[m][nt + 1], a[m], b + 2);
        }
      }
    }
  } else {
    for (int kk = 0; kk < D / 16; kk += 2) {
      uint32_t a[MT][2][4];
      for (int m = 0; m < MT; m++) {
        gk_fa_qfrag<D>(qa, m, kk, a[m][0]);
        gk_fa_qfrag<D>(qa, m, kk + 1, a[m][1]);
      }
      for (int nt = 0; nt < NT; nt++) {
        uint32_t b[4];
        gk_ldmatrix_x4(b, k + gk_fa_swz<D>::at((nt0 + nt) * 8 + lane % 8, 2 * kk + lane / 8));
        for (int m = 0; m < MT; m++) {
          gk_mma_16816<H>(s[m][nt], a[m][0], b);
          gk_mma_16816<H>(s[m][nt], a[m][1], b + 2);
        }
      }
    }
  }
}

/* Of 8 values v[j] in the 4 lanes of a quad, lane t gets the quad's sums
 * of v[2t] and v[2t + 1] (a reduce-scatter: 6 shuffles where a butterfly
 * of each value takes 16), added in the same order by every lane. */
GK_DEV void gk_quad_sum_scatter(const float v[8], float out[2]) {
  const int t = gk_lane() % 4, h = t >> 1, q = t & 1;
  float w[4];
  for (int i = 0; i < 4; i++) { /* keep half h, send the other to lane t ^ 2 */
    const float lo = v[i], hi = v[4 + i]; /* selects of values, not of addresses: */
    w[i] = (h ? hi : lo) + GK_SHFL_XOR(h ? lo : hi, 2); /* the arrays stay registers */
  }
  for (int i = 0; i < 2; i++) { /* keep quarter q of it, send the other to t ^ 1 */
    const float lo = w[i], hi = w[2 + i];
    out[i] = (q ? hi : lo) + GK_SHFL_XOR(q ? lo : hi, 1);
  }
}

/* The same in dot products of shared memory (H::direct: HIP, no
 * AMD matrix path yet): for each n-tile, lane 4g + t sums over the d of
 * its A fragment words (16 kk + 2t, + 1, + 8, + 9) the products for all 8
 * keys of rows g and g + 8 of each fragment, and gk_quad_sum_scatter
 * leaves it the full sums of its columns 2t, 2t + 1: the same s, summed
 * in another order (products exact in f32, as the mma's). K's words are
 * read as they lie (gk_fa_swz), Q's are the fragments, read and converted
 * again for each n-tile: all of a row's would take 128 more registers at
 * head_dim 128. */
template <int D, int NT, int MT, class H, class QA>
GK_DEV void gk_fa_scores_mma(const uint16_t *k, const QA &qa, int nt0, float (*s)[NT][4],
                             gk_bool<true>) {
  const int t = gk_lane() % 4;
  for (int nt = 0; nt < NT; nt++) {
    float part[MT][2][8];
    for (int m = 0; m < MT; m++)
      for (int r = 0; r < 2; r++)
        for (int j = 0; j < 8; j++) part[m][r][j] = 0.0f;
    for (int kk = 0; kk < D / 16; kk++) {
      float qf[MT][2][4]; /* rows g, g + 8; d 16 kk + 2t, + 1, + 8, + 9 */
      for (int m = 0; m < MT; m++) {
        uint32_t a[4];
        gk_fa_qwords<D>(qa, m, kk, a);
        for (int r = 0; r < 2; r++)
          for (int e = 0; e < 4; e++)
            qf[m][r][e] = H::load((uint16_t)(a[r + 2 * (e >> 1)] >> (16 * (e & 1))));
      }
      for (int j = 0; j < 8; j++) {
        const int key = (nt0 + nt) * 8 + j;
        const uint32_t w0 = *(const uint32_t *)(k + gk_fa_swz<D>::at(key, 2 * kk) + 2 * t),
                       w1 = *(const uint32_t *)(k + gk_fa_swz<D>::at(key, 2 * kk + 1) + 2 * t);
        const float kf[4] = {H::load((uint16_t)w0), H::load((uint16_t)(w0 >> 16)),
                             H::load((uint16_t)w1), H::load((uint16_t)(w1 >> 16))};
        for (int m = 0; m < MT; m++)
          for (int r = 0; r < 2; r++)
            for (int e = 0; e < 4; e++) part[m][r][j] = fmaf(qf[m][r][e], kf[e], part[m][r][j]);
      }
    }
    for (int m = 0; m < MT; m++)
      for (int r = 0; r < 2; r++) gk_quad_sum_scatter(part[m][r], &s[m][nt][2 * r]);
  }
}
template <int D, int NT, int MT, class H, class QA>
GK_DEV void gk_fa_scores_mma(const uint16_t *k, const QA &qa, int nt0, float (*s)[NT][4]) {
  gk_fa_scores_mma<D, NT, MT, H>(k, qa, nt0, s, gk_bool<(bool)H::direct>());
}

/*
 * The online softmax on the scores s of keys kb .. kb + 8 NT - 1 (the
 * fragments of gk_fa_scores_mma): masks the keys not allowed (-inf), moves
 * the state's max, rescales its sum, says by how much the output is to be
 * rescaled (alpha, a factor a row of the fragment), and leaves the weights
 * p = exp2(s sl - max) in s. qpos[r]: the query position of fragment row r
 * (the causal mask: key j allowed when j <= qpos + skv - sq; row 8 no
 * earlier than row 0, as a prefill's rows and a decode's packing are);
 * sl: the scale
 * times log2(e), so that exp(s * scale - m) = exp2(s * sl - m'). A step
 * whose keys are all allowed to both rows of the lane (every step of a
 * prefill but those on the diagonal and the last) skips the mask, and
 * with sl > 0 (every real scale) takes the max of the raw scores, scaled
 * once (the same float as the max of the scaled ones: rounding is
 * monotonic), and each weight's exponent in one fma, as FlashAttention
 * does: one instruction a score fewer than scaling each score (the
 * multiply); gk_exp2 saves three more (exp2f's subnormal fix-up).
 */
template <int Causal, int D, int NT>
GK_DEV void gk_fa_softmax_p(float (*s)[4], int64_t kb, int64_t skv, int64_t sq,
                            const int64_t qpos[2], float sl, gk_fa_state<D> &st,
                            float alpha[2]) {
  const int t = gk_lane() % 4;
  float tmax[2] = {-INFINITY, -INFINITY};
  const int64_t ke = kb + 8 * NT; /* past the step's last key */
  const bool fold = sl > 0.0f && ke <= skv &&
                    (!Causal || ke - 1 <= qpos[0] + (skv - sq)); /* qpos[0] <= qpos[1] */
  if (fold) {
    for (int nt = 0; nt < NT; nt++)
      for (int e = 0; e < 4; e++) tmax[e >> 1] = fmaxf(tmax[e >> 1], s[nt][e]);
    tmax[0] *= sl;
    tmax[1] *= sl;
  } else {
    /* -inf marks a key not allowed. */
    for (int nt = 0; nt < NT; nt++)
      for (int e = 0; e < 4; e++) {
        const int r = e >> 1;
        const int64_t key = kb + nt * 8 + 2 * t + (e & 1);
        const bool allowed = key < skv && (!Causal || key <= qpos[r] + (skv - sq));
        s[nt][e] = allowed ? s[nt][e] * sl : -INFINITY;
        tmax[r] = fmaxf(tmax[r], s[nt][e]);
      }
  }
  float psum[2] = {0.0f, 0.0f};
  for (int r = 0; r < 2; r++) {
    tmax[r] = fmaxf(tmax[r], GK_SHFL_XOR(tmax[r], 1));
    tmax[r] = fmaxf(tmax[r], GK_SHFL_XOR(tmax[r], 2));
    const float mnew = fmaxf(st.mx[r], tmax[r]);
    /* No allowed key yet: nothing to rescale, every p is 0. */
    alpha[r] = mnew == -INFINITY ? 1.0f : gk_exp2(st.mx[r] - mnew);
    tmax[r] = mnew == -INFINITY ? 0.0f : mnew; /* exp2(-inf - 0) = 0 */
    st.mx[r] = mnew;
  }
  if (fold) /* two loops, not a select in one: one instruction a score */
    for (int nt = 0; nt < NT; nt++)
      for (int e = 0; e < 4; e++) {
        s[nt][e] = gk_exp2(fmaf(s[nt][e], sl, -tmax[e >> 1]));
        psum[e >> 1] += s[nt][e];
      }
  else
    for (int nt = 0; nt < NT; nt++)
      for (int e = 0; e < 4; e++) {
        s[nt][e] = gk_exp2(s[nt][e] - tmax[e >> 1]);
        psum[e >> 1] += s[nt][e];
      }
  for (int r = 0; r < 2; r++) st.l[r] = st.l[r] * alpha[r] + psum[r];
}

/* The output's rescale by the rows' alpha (gk_fa_softmax_p). Once the
 * rows' maxima settle, most steps leave them: the output's D / 2 products
 * by 1 are skipped (the same bits). Per lane: no shuffle inside. */
template <int D>
GK_DEV void gk_fa_rescale(gk_fa_state<D> &st, const float alpha[2]) {
  if (alpha[0] != 1.0f || alpha[1] != 1.0f)
    for (int d = 0; d < D / 8; d++)
      for (int e = 0; e < 4; e++) st.acc[d][e] *= alpha[e >> 1];
}

/* Both: the softmax of a step, its output rescaled at once. */
template <int Causal, int D, int NT>
GK_DEV void gk_fa_softmax(float (*s)[4], int64_t kb, int64_t skv, int64_t sq,
                          const int64_t qpos[2], float sl, gk_fa_state<D> &st) {
  float alpha[2];
  gk_fa_softmax_p<Causal, D, NT>(s, kb, skv, sq, qpos, sl, st, alpha);
  gk_fa_rescale<D>(st, alpha);
}

/* The A fragment of P (k = 16 keys) from the weights of n-tiles 2 kk and
 * 2 kk + 1, rounded to H: the m16n8 C fragments are A's halves. */
template <class H>
GK_DEV void gk_fa_p_frag(const float (*s)[4], int kk, uint32_t pa[4]) {
  pa[0] = H::pack2(s[2 * kk][0], s[2 * kk][1]);
  pa[1] = H::pack2(s[2 * kk][2], s[2 * kk][3]);
  pa[2] = H::pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  pa[3] = H::pack2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

/* O += P V for the group's MT fragments of rows (s[m], st[m]) and n-tiles
 * nt0 .. nt0 + NT - 1 of the tile v (gk_fa_swz): S tiles of 8 keys are
 * the A fragments of P in registers (two make one of k = 16); V's B
 * fragments by ldmatrix.trans, which transposes V's 8 x 8 blocks of
 * (keys, d) as they lie: lane L's row address is key 8 (i & 1) + L % 8 of
 * matrix i = L / 8, d tile i >> 1. Each B fragment serves the MT fragments
 * of rows. */
template <int D, int NT, int MT, class H>
GK_DEV void gk_fa_pv_mma(const uint16_t *v, const float (*s)[NT][4], int nt0,
                         gk_fa_state<D> *st, gk_bool<false>) {
  const int lane = gk_lane();
  if (NT == 1) {
    static_assert(NT != 1 || MT == 1, "steps of 8 keys take one fragment of rows");
    const uint32_t pa[2] = {H::pack2(s[0][0][0], s[0][0][1]), H::pack2(s[0][0][2], s[0][0][3])};
    for (int d = 0; d < D / 8; d += 4) {
      uint32_t b[4]; /* d tiles d .. d + 3, keys 0 .. 7 */
      gk_ldmatrix_x4_trans(b, v + gk_fa_swz<D>::at(nt0 * 8 + lane % 8, d + lane / 8));
      for (int u = 0; u < 4; u++) gk_mma_1688<H>(st[0].acc[d + u], pa, b[u]);
    }
  } else {
    for (int kk = 0; kk < NT / 2; kk++) {
      uint32_t pa[MT][4];
      for (int m = 0; m < MT; m++) gk_fa_p_frag<H>(s[m], kk, pa[m]);
      const int mi = lane / 8, row = (nt0 + 2 * kk) * 8 + 8 * (mi & 1) + lane % 8;
      for (int d = 0; d < D / 8; d += 2) {
        uint32_t b[4]; /* d tiles d, d + 1, keys 0 .. 7 and 8 .. 15 of each */
        gk_ldmatrix_x4_trans(b, v + gk_fa_swz<D>::at(row, d + (mi >> 1)));
        for (int m = 0; m < MT; m++) {
          gk_mma_16816<H>(st[m].acc[d], pa[m], b);
          gk_mma_16816<H>(st[m].acc[d + 1], pa[m], b + 2);
        }
      }
    }
  }
}

/* The same in dot products of shared memory (H::direct): P rounded
 * to H as the mma path rounds it, each lane's pair of an n-tile's row
 * handed round the quad (keys 2u, 2u + 1 from lane 4g + u), and every key
 * times V's words of the lane's columns (d 8 dt + 2t, + 1) as they lie:
 * the same sums in another order. */
template <int D, int NT, int MT, class H>
GK_DEV void gk_fa_pv_mma(const uint16_t *v, const float (*s)[NT][4], int nt0,
                         gk_fa_state<D> *st, gk_bool<true>) {
  const int lane = gk_lane(), g = lane / 4, t = lane % 4;
  for (int nt = 0; nt < NT; nt++) {
    uint32_t pw[MT][2]; /* rows g, g + 8: this lane's two weights, rounded */
    for (int m = 0; m < MT; m++)
      for (int r = 0; r < 2; r++) pw[m][r] = H::pack2(s[m][nt][2 * r], s[m][nt][2 * r + 1]);
    const gk_lanes<uint32_t, 2 * MT> pl(&pw[0][0]);
    for (int u = 0; u < 4; u++) {
      float p[MT][2][2]; /* keys 2u, 2u + 1 of the n-tile */
      for (int m = 0; m < MT; m++)
        for (int r = 0; r < 2; r++) {
          const uint32_t w = pl.get(2 * m + r, 4 * g + u);
          p[m][r][0] = H::load((uint16_t)w), p[m][r][1] = H::load((uint16_t)(w >> 16));
        }
      for (int e = 0; e < 2; e++) {
        const int key = (nt0 + nt) * 8 + 2 * u + e;
        for (int dt = 0; dt < D / 8; dt++) {
          const uint32_t w = *(const uint32_t *)(v + gk_fa_swz<D>::at(key, dt) + 2 * t);
          const float v0 = H::load((uint16_t)w), v1 = H::load((uint16_t)(w >> 16));
          for (int m = 0; m < MT; m++)
            for (int r = 0; r < 2; r++) {
              st[m].acc[dt][2 * r] = fmaf(p[m][r][e], v0, st[m].acc[dt][2 * r]);
              st[m].acc[dt][2 * r + 1] = fmaf(p[m][r][e], v1, st[m].acc[dt][2 * r + 1]);
            }
        }
      }
    }
  }
}
template <int D, int NT, int MT, class H>
GK_DEV void gk_fa_pv_mma(const uint16_t *v, const float (*s)[NT][4], int nt0,
                         gk_fa_state<D> *st) {
  gk_fa_pv_mma<D, NT, MT, H>(v, s, nt0, st, gk_bool<(bool)H::direct>());
}

/*
 * The group's step over keys [k0 + 8 nt0, k0 + 8 (nt0 + NT)) of the tile
 * (k, v) for its MT fragments of rows (qa: gk_fa_qfrag,
 * qpos[m], st[m]): S, the online softmax, O += P V. NT is 1, or even.
 */
template <int Causal, int D, int NT, int MT, class H, class QA>
GK_DEV void gk_fa_mma_step(const uint16_t *k, const uint16_t *v, const QA &qa, int nt0,
                           int64_t k0, int64_t skv, int64_t sq, const int64_t (*qpos)[2],
                           float sl, gk_fa_state<D> *st) {
  static_assert(NT == 1 || NT % 2 == 0, "a step is 8 keys or a multiple of 16");
  float s[MT][NT][4];
  gk_fa_scores_mma<D, NT, MT, H>(k, qa, nt0, s);
  for (int m = 0; m < MT; m++)
    gk_fa_softmax<Causal, D, NT>(s[m], k0 + 8 * nt0, skv, sq, qpos[m], sl, st[m]);
  gk_fa_pv_mma<D, NT, MT, H>(v, s, nt0, st);
}

/* This lane's part of 16 query rows as A fragments: fragment row r of the
 * group comes from q + qrow[r] * D (qrow[r] < 0: a row of zeros). */
template <int D>
GK_DEV void gk_fa_mma_q(const uint16_t *q, const int64_t qrow[2], uint32_t (*qa)[4]) {
  const int t = gk_lane() % 4;
  for (int kk = 0; kk < D / 16; kk++)
    for (int u = 0; u < 4; u++) {
      const int64_t row = qrow[u & 1];
      const int col = kk * 16 + 2 * t + 8 * (u >> 1);
      qa[kk][u] = row >= 0 ? *(const uint32_t *)(q + row * D + col) : 0u;
    }
}

/* o row orow[r] (< 0: not stored) = the state's fragment row r / l,
 * rounded to H. */
template <int D, class H>
GK_DEV void gk_fa_mma_store(uint16_t *o, const int64_t orow[2], const gk_fa_state<D> &st) {
  const int t = gk_lane() % 4;
  const float l[2] = {gk_fa_row_sum(st, 0), gk_fa_row_sum(st, 1)};
  for (int r = 0; r < 2; r++) {
    if (orow[r] < 0) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int d = 0; d < D / 8; d++)
      *(uint32_t *)(o + orow[r] * D + d * 8 + 2 * t) =
          H::pack2(st.acc[d][2 * r] * inv, st.acc[d][2 * r + 1] * inv);
  }
}

/*
 * Keys [kb, ke) of KV head hk through the STAGES stages of sm, by the
 * whole block (a decode: by the warpgroup)
 * (kb a multiple of the tile; keys past ke in ke's tile must be masked by
 * the step, as keys past the causal limit or kv.n are): each group runs
 * gk_fa_mma_step<NT, MT> on n-tiles nt0 + NT p .. + NT - 1 of every tile,
 * for p = 0 .. PARTS - 1 (steps shorter than the tile keep the score
 * fragments of MT fragments of rows in fewer registers; a decode's groups
 * take 1 or 4 steps a tile, gk_fa_mma_decode). The copies of the
 * next STAGES - 1 tiles are in flight while one is worked on: a thread
 * commits one cp.async group per tile (empty past ke), so tile j has
 * landed when STAGES - 2 of its groups are left; the one barrier a tile
 * then also says that every group has done with tile j - 1, whose stage
 * the copy of tile j + STAGES - 1 overwrites. Ends with a barrier.
 */
template <int Causal, int D, int NT, int PARTS, int MT, class H, int ST, class KV>
GK_DEV void gk_fa_mma_keys(gk_fa_dsmem<D, ST> &sm, const KV &kv, int64_t hk, int64_t kb,
                           int64_t ke, int64_t sq, const uint32_t (*qa)[D / 16][4], int nt0,
                           const int64_t (*qpos)[2], float scale, gk_fa_state<D> *st) {
  typedef gk_fa_dsmem<D, ST> S;
  const float sl = scale * 1.4426950408889634f;
  gk_fa_sync(); /* the previous use of the stages is over */
  for (int i = 0; i < S::STAGES - 1; i++) {
    const int64_t k0 = kb + (int64_t)i * S::KEYS;
    if (k0 < ke) gk_fa_kv_tile<D, S::KEYS>(sm.tile.k[i], sm.tile.v[i], kv, hk, k0);
    gk_cp_async_commit();
  }
  int stage = 0; /* tile j's: j mod STAGES */
  for (int64_t k0 = kb; k0 < ke; k0 += S::KEYS) {
    gk_cp_async_wait<S::STAGES - 2>(); /* this tile has landed */
    gk_fa_sync();
    const int next = stage == 0 ? S::STAGES - 1 : stage - 1; /* tile j - 1's */
    const int64_t kn = k0 + (int64_t)(S::STAGES - 1) * S::KEYS;
    if (kn < ke) gk_fa_kv_tile<D, S::KEYS>(sm.tile.k[next], sm.tile.v[next], kv, hk, kn);
    gk_cp_async_commit();
    for (int p = 0; p < PARTS; p++)
      gk_fa_mma_step<Causal, D, NT, MT, H>(sm.tile.k[stage], sm.tile.v[stage], qa, nt0 + NT * p,
                                           k0, kv.n, sq, qpos, sl, st);
    stage = stage == S::STAGES - 1 ? 0 : stage + 1;
  }
  gk_fa_sync(); /* the stages are no longer read */
}

/* The fragment rows of this lane in a fragment of 16 query rows of head h
 * from r0: their query positions, and their rows of q and o
 * ([n_heads][sq][D], from row h * sq + i; -1 past sq). */
GK_DEV void gk_fa_prefill_rows(int64_t h, int64_t sq, int64_t r0, int64_t qpos[2],
                               int64_t rows[2]) {
  const int64_t rbase = r0 + gk_lane() / 4;
  for (int r = 0; r < 2; r++) {
    qpos[r] = rbase + 8 * r;
    rows[r] = qpos[r] < sq ? h * sq + qpos[r] : -1;
  }
}

/* Prefill: query rows [row0, row0 + ROWS) of head h against kv, group w
 * rows row0 + 16 MT w .. as MT fragments of 16 (gk_fa_mma_shape), Q in
 * registers, through gk_fa_mma_keys' stages. */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_mma_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                              int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                              int64_t h, int64_t row0, gk_bool<false>) {
  typedef gk_fa_smem<D> S;
  typedef gk_fa_mma_shape<D, KV> P;
  const int64_t hk = h / (n_heads / n_kv_heads), skv = kv.n;
  int64_t qpos[P::MT][2], rows[P::MT][2];
  uint32_t qa[P::MT][D / 16][4];
  gk_fa_state<D> st[P::MT];
  for (int m = 0; m < P::MT; m++) {
    gk_fa_prefill_rows(h, sq, row0 + 16 * (P::MT * gk_group() + m), qpos[m], rows[m]);
    gk_fa_mma_q<D>(q, rows[m], qa[m]);
    gk_fa_state_init<D>(st[m]);
  }
  gk_fa_mma_keys<Causal, D, P::NT, S::KEYS / 8 / P::NT, P::MT, H>(
      gk_fa_dsm<3>(sm), kv, hk, 0, gk_fa_kend(Causal, sq, skv, row0, P::ROWS), sq, qa, 0, qpos,
      scale, st);
  for (int m = 0; m < P::MT; m++) gk_fa_mma_store<D, H>(o, rows[m], st[m]);
}

/*
 * The same with Q in shared memory (QSMEM; sm.qs, gk_fa_swz), on
 * FlashAttention-2's schedule: one buffer of K and one of V, each copied
 * while the other is multiplied. Per tile j, with every copy of a thread
 * waited for at each of the two barriers:
 *   barrier (K(j) in; V's buffer free) - copy V(j) - S = Q K(j)^T, softmax
 *   barrier (V(j) in; K's buffer free) - copy K(j + 1) - O += P V(j)
 * The whole tile is one step (NT = KEYS / 8): S waits in registers for V.
 * Tiles of H::qs_keys keys: 32, or 64 (GK_FA_QS_KEYS, gk_gpu.cuh).
 */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_mma_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                              int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                              int64_t h, int64_t row0, gk_bool<true>) {
  typedef gk_fa_smem<D> S;
  typedef gk_fa_mma_shape<D, KV> P;
  typedef gk_fa_swz<D> L;
  enum { KEYS = H::qs_keys, NT = KEYS / 8 }; /* a tile is one step */
  static_assert((int)KEYS <= (int)S::QS_KEYS, "the tile fits its buffers");
  const int64_t hk = h / (n_heads / n_kv_heads), skv = kv.n;
  const int64_t kend = gk_fa_kend(Causal, sq, skv, row0, P::ROWS);
  const float sl = scale * 1.4426950408889634f;
  /* Fragment row r of fragment m is query row qb + 16 m + 8 r (its rows
   * are recomputed where needed: registers are the limit here). */
  gk_fa_state<D> st[P::MT];
  const gk_fa_qsm<D> qs = {sm.qs.q, 16 * P::MT * gk_group()};
  const int64_t qb = row0 + qs.r0 + gk_lane() / 4;
#pragma unroll
  for (int m = 0; m < P::MT; m++) gk_fa_state_init<D>(st[m]);
  gk_fa_sync(); /* the previous use of shared memory is over */
  if (kend > 0) {
    /* Q's rows (zeros past sq) and K(0), one group. */
    for (int e = (int)threadIdx.x; e < P::ROWS * (D / 8); e += FA_THREADS) {
      const int r = e / (D / 8), c = e % (D / 8);
      const bool in = row0 + r < sq;
      gk_cp_async16(&sm.qs.q[L::at(r, c)], q + (in ? (h * sq + row0 + r) * D + 8 * c : 0), in);
    }
    gk_fa_kv_tile<D, KEYS>(sm.qs.k, nullptr, kv, hk, 0);
    gk_cp_async_commit();
  }
  for (int64_t k0 = 0; k0 < kend; k0 += KEYS) {
    gk_cp_async_wait<0>();
    gk_fa_sync();
    gk_fa_kv_tile<D, KEYS>(nullptr, sm.qs.v, kv, hk, k0);
    gk_cp_async_commit();
    float s[P::MT][NT][4];
    gk_fa_scores_mma<D, NT, P::MT, H>(sm.qs.k, qs, 0, s);
#pragma unroll
    for (int m = 0; m < P::MT; m++) {
      const int64_t qpos[2] = {qb + 16 * m, qb + 16 * m + 8};
      gk_fa_softmax<Causal, D, NT>(s[m], k0, skv, sq, qpos, sl, st[m]);
    }
    gk_cp_async_wait<0>();
    gk_fa_sync();
    if (k0 + KEYS < kend) {
      gk_fa_kv_tile<D, KEYS>(sm.qs.k, nullptr, kv, hk, k0 + KEYS);
      gk_cp_async_commit();
    }
    gk_fa_pv_mma<D, NT, P::MT, H>(sm.qs.v, s, 0, st);
  }
#pragma unroll
  for (int m = 0; m < P::MT; m++) {
    int64_t qpos[2], rows[2];
    gk_fa_prefill_rows(h, sq, row0 + qs.r0 + 16 * m, qpos, rows);
    gk_fa_mma_store<D, H>(o, rows, st[m]);
  }
}

/*
 * The cross-block split of a decode (FlashDecoding): a KV head's keys go to
 * `n` blocks in ranges of whole tiles. Each block publishes its partial
 * state (per fragment row: the max, the sum and the unnormalised output,
 * in log2 units as gk_fa_state) in its slot of the caller's workspace,
 * then counts itself in `*count`; the last to arrive merges the n slots in
 * slot order, so the result does not depend on which block is last, and
 * sets *count back to 0: the workspace is left as it was found.
 */
#define GK_FA_SLOT(D) (32 + 16 * (D)) /* floats: m[16], l[16], o[16][D] */
struct gk_fa_split {
  int64_t n, i;    /* splits of this KV head, and this block's */
  unsigned *count; /* this KV head's counter */
  float *slots;    /* its n * frags slots (n > 1): split s of fragment f at f * n + s
                      (frags: gk_fa_decode_frags) */
  int blocks;      /* blocks a split: 1, or frags (a block a fragment) */
};

/* The last block's merge of the n slots into o; rows as gk_fa_mma_decode's.
 * It is the launch's tail (one block per KV head, after the others), a
 * chain of round trips to L2, so it keeps as few as it can: group w takes
 * rows w, w + 4, ... (a decode's 4 rows of GQA 4:1 go to the 4 groups, not
 * all to the first; a speculative decode's 64 rows, 16 to each). Per row,
 * each lane needs the max and the sum of slot lane (the first 32 slots),
 * and the row's max over all slots (exact in any order); then, 32 slots at
 * a time, the slot's weight 2^(m_s - m) is computed once by the lane that
 * holds it and handed to every lane (GK_SHFL), and the outputs are summed
 * in slot order, a lane's two outputs of each 64 in one 8-byte load: 2
 * loads a slot, 64 in flight. The next row's max and sum are loaded with
 * this row's outputs, so that its max is known when this row is done: a
 * group's R rows of up to 32 slots (skv <= 8192 in pieces of 256 keys)
 * cost R + 1 round trips, where they cost 2R with each row's max and sum
 * loaded just before its outputs (and 3R with each slot's beside its
 * outputs): 17 for a speculative decode's 16 rows a group, 2 for a
 * decode's one. The products and sums, and their order, are the same as
 * in all of those: the same bits. Slots past the first 32 (longer keys, a
 * larger workspace) take a round trip more each 32, their maxima after
 * the row's outputs. (Keeping every row's max in shared memory instead,
 * loaded in one trip, cost ptxas 13.0 a 40-byte spill in
 * paged_attention's sm_80 to sm_90a images, at 255 registers; as it is,
 * sm_120's images alone spill, 8 and 32 bytes: tests/backends/cuda/
 * test_ptxas.sh.) */
template <int D, class H>
GK_DEV void gk_fa_split_merge(const gk_fa_split &sp, uint16_t *o, int64_t hk, int64_t group,
                              int64_t sq) {
  const int w = gk_group() % FA_GROUPS, lane = gk_lane();
  const int64_t nrows = group * sq;
  /* Row `row` is row row % 16 of fragment row / 16's n slots. */
  const auto head = [&](int64_t row) { /* slot lane's max and sum of the row */
    return sp.slots + ((row / 16) * sp.n + lane) * GK_FA_SLOT(D) + row % 16;
  };
  /* The row's max over the slots past the first 32, and over the lanes. */
  const auto rowmax = [&](int64_t row, float m) {
    const float *sl = head(row);
    for (int64_t s = GK_GROUP; s + lane < sp.n; s += GK_GROUP)
      m = fmaxf(m, gk_ld_cg(sl + s * GK_FA_SLOT(D)));
    return gk_group_max(m);
  };
  float ms = -INFINITY, ls = 0.0f, m = -INFINITY;
  if (w < nrows && lane < sp.n) {
    const float *sl = head(w);
    ms = gk_ld_cg(sl), ls = gk_ld_cg(sl + 16);
  }
  if (w < nrows) m = rowmax(w, ms); /* uniform over the group */
  for (int64_t row = w; row < nrows; row += FA_GROUPS) { /* uniform over the group */
    const float *slots = sp.slots + (row / 16) * sp.n * GK_FA_SLOT(D);
    const int fr = (int)(row % 16);
    /* The next row's max and sum, in flight with this row's outputs. */
    const int64_t next = row + FA_GROUPS;
    float nms = -INFINITY, nls = 0.0f;
    if (next < nrows && lane < sp.n) {
      const float *sl = head(next);
      nms = gk_ld_cg(sl), nls = gk_ld_cg(sl + 16);
    }
    float l = 0.0f, acc[D / 32];
    for (int e = 0; e < D / 32; e++) acc[e] = 0.0f;
    for (int64_t s0 = 0; s0 < sp.n; s0 += GK_GROUP) {
      if (s0 > 0) { /* the next 32 slots' max and sum */
        ms = -INFINITY, ls = 0.0f;
        if (s0 + lane < sp.n) {
          ms = gk_ld_cg(slots + (s0 + lane) * GK_FA_SLOT(D) + fr);
          ls = gk_ld_cg(slots + (s0 + lane) * GK_FA_SLOT(D) + 16 + fr);
        }
      }
      /* A split that saw no allowed key has m = -inf and weighs 0. */
      const float sc = m == -INFINITY ? 0.0f : exp2f(ms - m);
      const int cn = sp.n - s0 < GK_GROUP ? (int)(sp.n - s0) : GK_GROUP;
      /* This lane's outputs in slot s0 + j: a pointer moved by a constant. */
      const float *ol = slots + s0 * GK_FA_SLOT(D) + 32 + fr * D + 2 * lane;
#pragma unroll 32
      for (int j = 0; j < cn; j++, ol += GK_FA_SLOT(D)) {
        const float scl = GK_SHFL(sc, j);
        l += GK_SHFL(ls, j) * scl;
        for (int e = 0; e < D / 64; e++) {
          const gk_f2 ov = gk_ld_cg2(ol + 64 * e);
          acc[2 * e] += ov.x * scl;
          acc[2 * e + 1] += ov.y * scl;
        }
      }
    }
    const int64_t orow = (hk * group + row % group) * sq + row / group;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int e = 0; e < D / 64; e++)
      *(uint32_t *)(o + orow * D + 2 * lane + 64 * e) =
          H::pack2(acc[2 * e] * inv, acc[2 * e + 1] * inv);
    ms = nms, ls = nls;
    if (next < nrows) m = rowmax(next, ms); /* uniform over the group */
  }
}

/* The merge in two levels, for units whose rows are many (a speculative
 * decode: up to 16 a group, where the one-level merge above takes R + 1
 * round trips of up to 32 slots each, by one block a KV head while the
 * other SMs idle: the launch's tail). The n pieces fall into ng <= 4
 * groups of P (the last may be shorter); the last block of each group
 * merges its group's slots into the group's first slot (the same state:
 * max, sum and the unnormalised output, in log2 units), and the last
 * group to finish merges the ng group states into o. Each level holds a
 * batch of rows' loads at once (RB rows of up to MAXS slots each: the
 * row's maxima and sums beside its outputs, one round trip a batch: 64
 * floats a lane at head_dim 128, 2 rows of 8 slots, then 4 rows of 4),
 * so a group's 16 rows at n = 32 take 8 round trips of 8 slots and then 4
 * of 4 (half as many at head_dim 64), where the one level's 17 read 32
 * slots each, 2.6 times the bytes, in one block. (8 rows at the second
 * level, 128 floats, spilled 36 bytes more in sm_90a's shipped head_dim
 * 128 image, ptxas 13.0.) The bits depend on n only (P is ceil(n / 4)),
 * not on which block is last. The counter counts the groups' blocks
 * in its 4 bytes (group g: byte g), each group's one more when its state
 * is written: its last block sees the byte reach the group's blocks, and
 * the last group sees the word reach every byte's count plus one (a byte
 * never carries: at most P * blocks + 1 <= 255). The workspace's layout
 * is the one-level merge's. */
#define GK_FA_MERGE_GROUPS 4
#define GK_FA_MERGE_P 8 /* pieces a group at most (n <= 32) */
/* P, the pieces of a group, or 0 where the unit merges in one level: its
 * warps have one row each (a decode: two round trips of up to 32 slots,
 * where two levels would add a level's), n is under 4 or past 4 groups
 * of GK_FA_MERGE_P. The wgmma images (168 to 232 registers in the
 * warp-specialized ones) merge in one level, a level's batches there
 * spilling 12 to 28 bytes (ptxas 13.0), but for -DGK_FA_WGMMA=4's at
 * head_dim 128 (wgmma5, wgmma5t), which fit them without a spill: so
 * their speculative decodes merge as the default image's do, and the
 * next GPU call's comparison of the two (ci/gpu/experiments.py) weighs
 * their prefills alone. At head_dim 64 those spilled 20 to 68 bytes, some
 * of them reloaded outside the decode's tail: one level there. */
template <int D, class H>
GK_DEV int64_t gk_fa_merge_p(const gk_fa_split &sp, int64_t nrows) {
  if ((H::wgmma && (H::ws_overlap != 2 || D != 128)) || nrows <= FA_GROUPS || sp.n < 4) return 0;
  const int64_t p = (sp.n + GK_FA_MERGE_GROUPS - 1) / GK_FA_MERGE_GROUPS;
  return p <= GK_FA_MERGE_P && p * sp.blocks < 255 ? p : 0;
}

/* Merges slots first, first + stride, ... (cn <= MAXS of them) of every
 * row into slot `to` (to >= 0: the state, as a slot holds it) or into o
 * (to < 0: normalised). Group w takes rows w, w + 4, ..., RB of them a
 * batch: every load of a batch is issued before the first is used (RB *
 * MAXS * D / 32 registers a lane for the outputs; the slots of a row
 * past cn are not read), and the slot-order sums are the one-level
 * merge's. A slot written (`to`) is one of those read: a row is read
 * whole by its group before that group writes it. */
template <int D, class H, int RB, int MAXS>
GK_DEV void gk_fa_merge_batch(const gk_fa_split &sp, int64_t first, int cn, int64_t stride,
                              int64_t to, uint16_t *o, int64_t hk, int64_t group, int64_t sq) {
  const int w = gk_group() % FA_GROUPS, lane = gk_lane();
  const int64_t nrows = group * sq;
  for (int64_t r0 = w; r0 < nrows; r0 += RB * FA_GROUPS) { /* uniform over the group */
    float ms[RB], ls[RB];
    gk_f2 ov[RB][MAXS][D / 64];
#pragma unroll
    for (int b = 0; b < RB; b++) {
      const int64_t row = r0 + b * FA_GROUPS;
      const float *slots = sp.slots + (row / 16) * sp.n * GK_FA_SLOT(D);
      const int fr = (int)(row % 16);
      ms[b] = -INFINITY, ls[b] = 0.0f;
      if (row < nrows && lane < cn) {
        const float *sl = slots + (first + lane * stride) * GK_FA_SLOT(D);
        ms[b] = gk_ld_cg(sl + fr), ls[b] = gk_ld_cg(sl + 16 + fr);
      }
#pragma unroll
      for (int j = 0; j < MAXS; j++)
        for (int e = 0; e < D / 64; e++)
          ov[b][j][e] = row < nrows && j < cn
                            ? gk_ld_cg2(slots + (first + j * stride) * GK_FA_SLOT(D) + 32 +
                                        fr * D + 2 * lane + 64 * e)
                            : gk_f2{0.0f, 0.0f};
    }
#pragma unroll
    for (int b = 0; b < RB; b++) {
      const int64_t row = r0 + b * FA_GROUPS;
      if (row >= nrows) break; /* uniform over the group */
      const float m = gk_group_max(ms[b]);
      /* A slot that saw no allowed key has m = -inf and weighs 0. */
      const float sc = m == -INFINITY ? 0.0f : exp2f(ms[b] - m);
      float l = 0.0f, acc[D / 32];
      for (int e = 0; e < D / 32; e++) acc[e] = 0.0f;
#pragma unroll
      for (int j = 0; j < MAXS; j++) {
        if (j >= cn) break; /* uniform */
        const float scl = GK_SHFL(sc, j);
        l += GK_SHFL(ls[b], j) * scl;
        for (int e = 0; e < D / 64; e++) {
          acc[2 * e] += ov[b][j][e].x * scl;
          acc[2 * e + 1] += ov[b][j][e].y * scl;
        }
      }
      const int fr = (int)(row % 16);
      if (to >= 0) {
        float *sl = sp.slots + ((row / 16) * sp.n + to) * GK_FA_SLOT(D);
        if (lane == 0) sl[fr] = m, sl[16 + fr] = l;
        for (int e = 0; e < D / 64; e++)
          *(gk_f2 *)(sl + 32 + fr * D + 2 * lane + 64 * e) = gk_f2{acc[2 * e], acc[2 * e + 1]};
      } else {
        const int64_t orow = (hk * group + row % group) * sq + row / group;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int e = 0; e < D / 64; e++)
          *(uint32_t *)(o + orow * D + 2 * lane + 64 * e) =
              H::pack2(acc[2 * e] * inv, acc[2 * e + 1] * inv);
      }
    }
  }
}

/* Counts the block in to its KV head's split (after every thread's slot
 * writes); the last of the n * blocks merges the slots and sets the
 * counter back to 0 (in two levels where gk_fa_merge_p says so). Uniform
 * over the block. */
template <int D, class H>
GK_DEV void gk_fa_split_done(const gk_fa_split &sp, uint16_t *o, int64_t hk, int64_t group,
                             int64_t sq) {
  gk_threadfence(); /* this thread's slot writes before the count */
  gk_fa_sync();
  const int64_t p = gk_fa_merge_p<D, H>(sp, group * sq);
  if (p == 0) {
    const unsigned last = (unsigned)(sp.n * sp.blocks - 1);
    if (!gk_fa_any(gk_fa_tid() == 0 && atomicAdd(sp.count, 1u) == last))
      return; /* uniform */
    gk_threadfence(); /* the others' slots after their counts */
    gk_fa_split_merge<D, H>(sp, o, hk, group, sq);
    if (gk_fa_tid() == 0) *sp.count = 0u;
    return;
  }
  /* Group k's pieces: p, but the last group's may be fewer. */
  const auto pieces = [&](int k) { return (int)(sp.n - k * p < p ? sp.n - k * p : p); };
  const int g = (int)(sp.i / p), ng = (int)((sp.n + p - 1) / p), cn = pieces(g);
  const int64_t first = g * p;
  const unsigned blocks = (unsigned)(cn * sp.blocks);
  if (!gk_fa_any(gk_fa_tid() == 0 &&
                 ((atomicAdd(sp.count, 1u << (8 * g)) >> (8 * g)) & 255u) == blocks - 1))
    return; /* uniform: not the group's last block */
  gk_threadfence(); /* the group's slots after their counts */
  gk_fa_merge_batch<D, H, 256 / D, GK_FA_MERGE_P>(sp, first, cn, 1, first, o, hk, group, sq);
  gk_threadfence(); /* the group's state before its count */
  gk_fa_sync();
  /* Every group's bytes full and one more: the word the last group sees. */
  unsigned full = 0;
  for (int k = 0; k < ng; k++) full += (unsigned)(pieces(k) * sp.blocks + 1) << (8 * k);
  const unsigned one = 1u << (8 * g);
  if (!gk_fa_any(gk_fa_tid() == 0 && atomicAdd(sp.count, one) + one == full))
    return; /* uniform: not the last group */
  gk_threadfence(); /* the other groups' states after their counts */
  gk_fa_merge_batch<D, H, 512 / D, GK_FA_MERGE_GROUPS>(sp, 0, ng, p, -1, o, hk, group, sq);
  if (gk_fa_tid() == 0) *sp.count = 0u;
}

/*
 * Decode: the query rows of KV head hk's group of heads (group * sq <=
 * FA_DECODE_ROWS rows, packed query by query: row p of them is query
 * p / group of head hk * group + p % group, and row 16 f + r is row r of
 * fragment f; so a lane's row r = 1 is no earlier a query than its row 0,
 * as gk_fa_softmax_p asks), fragments f0 .. f0 + fb - 1 of them (fb = FB
 * = 1, or 2 to 4 where FB is 4), against keys [kb, ke), split sp.i of
 * sp.n. FB 1: each group takes a quarter of every tile's keys (n-tiles
 * [w NT, (w + 1) NT)), one step. FB 4: group w takes fragment f0 + w,
 * every key of the tile in 4 steps of NT n-tiles, and a group past fb
 * (rows past the queries) multiplies zeros and stores nothing (with 2
 * fragments a block, groups of 2 a fragment took 2 steps each, and ptxas
 * 13.0 spilled 4 bytes in sm_90a's default image). Then the block merges
 * each fragment's GPF = 4 / FB partial states, in group order: m = max
 * m_w, l = sum l_w 2^(m_w - m), o likewise, into o (one split) or into
 * slot f * sp.n + sp.i (gk_fa_split; then the caller counts the block in:
 * gk_fa_split_done). The mma.sync images take every
 * fragment in one block (fb = frags, gk_fa_walk_mma), so each tile of K
 * and V is read once a block for all of them, where a block a fragment
 * read it frags times (a speculative decode of 16 tokens at GQA 4:1: four
 * blocks a piece, each a quarter of the tile's work). So do the images of
 * -DGK_FA_WGMMA=4 (wgmma5, wgmma5t: their consumers have 232 registers;
 * no spill, ptxas 13.0, since stop 62). The other wgmma images keep a
 * block a fragment (fb = 1): there the consumers have 168 to 216
 * registers, and with fb a runtime value this spilled 4 to 24 bytes
 * (ptxas 13.0; and 4 on sm_80's default image), as did a fragment a group
 * in one step of a whole tile (4 to 144).
 */
template <int Causal, int D, class H, int FB, class KV>
GK_DEV void gk_fa_mma_decode(gk_fa_dsmem<D, H::dec_stages> &sm, const uint16_t *q, const KV &kv,
                             uint16_t *o, int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                             float scale, int64_t hk, int64_t kb, int64_t ke,
                             const gk_fa_split &sp, int f0, int fb) {
  typedef gk_fa_dsmem<D, H::dec_stages> S;
  static_assert(FB == 1 || FB == FA_GROUPS, "1 or 4 fragments a block");
  static_assert(sizeof(S::merge) <= sizeof(S::tile), "the merge adds no shared memory");
  constexpr int NT = S::KEYS / 8 / FA_GROUPS, GPF = FA_GROUPS / FB; /* NT: 1 or 2 */
  const int64_t group = n_heads / n_kv_heads, nrows = group * sq; /* packed rows, all */
  const int w = gk_group() % FA_GROUPS, lane = gk_lane(), g = lane / 4, t = lane % 4;
  const int f = f0 + w / GPF, c = w % GPF;
  int64_t qpos[2], rows[2];
  for (int r = 0; r < 2; r++) {
    const int64_t p = 16 * (int64_t)f + g + 8 * r;
    qpos[r] = p < nrows ? p / group : sq - 1; /* past the rows: the last query's */
    rows[r] = p < nrows ? (hk * group + p % group) * sq + p / group : -1;
  }
  uint32_t qa[D / 16][4];
  gk_fa_mma_q<D>(q, rows, qa);
  gk_fa_state<D> st;
  gk_fa_state_init<D>(st);
  gk_fa_mma_keys<Causal, D, NT, FB, 1, H>(sm, kv, hk, kb, ke, sq, &qa, NT * FB * c, &qpos,
                                          scale, &st);

  /* The merge: each group's state into shared memory (the stages are no
   * longer read: gk_fa_mma_keys ends with a barrier), then group w combines
   * rows c, c + GPF, ... of its fragment's GPF groups, in the same order
   * everywhere (with one fragment: rows w, w + 4, ... of all four). */
  for (int r = 0; r < 2; r++) {
    const int fr = g + 8 * r;
    const float l = gk_fa_row_sum(st, r);
    if (t == 0) sm.merge.m[w][fr] = st.mx[r], sm.merge.l[w][fr] = l;
    for (int d = 0; d < D / 8; d++) {
      sm.merge.o[w][fr][d * 8 + 2 * t] = st.acc[d][2 * r];
      sm.merge.o[w][fr][d * 8 + 2 * t + 1] = st.acc[d][2 * r + 1];
    }
  }
  gk_fa_sync();
  if (w / GPF >= fb) return; /* a group with no rows (fb 3) */
  float *slot = sp.n > 1 ? sp.slots + (f * sp.n + sp.i) * GK_FA_SLOT(D) : nullptr;
  const int u0 = w / GPF * GPF; /* the fragment's first group */
  for (int fr = c; fr < 16 && 16 * f + fr < nrows; fr += GPF) { /* uniform over the group */
    float m = -INFINITY;
    for (int j = 0; j < GPF; j++) m = fmaxf(m, sm.merge.m[u0 + j][fr]);
    float scl[GPF], l = 0.0f;
    for (int j = 0; j < GPF; j++) {
      /* A group that saw no allowed key has m = -inf and weighs 0. */
      scl[j] = m == -INFINITY ? 0.0f : exp2f(sm.merge.m[u0 + j][fr] - m);
      l += sm.merge.l[u0 + j][fr] * scl[j];
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const int64_t p = 16 * (int64_t)f + fr, row = (hk * group + p % group) * sq + p / group;
    if (slot && lane == 0) slot[fr] = m, slot[16 + fr] = l;
    for (int d = 2 * lane; d < D; d += 2 * GK_GROUP) {
      float a = 0.0f, b = 0.0f;
      for (int j = 0; j < GPF; j++) {
        a += sm.merge.o[u0 + j][fr][d] * scl[j];
        b += sm.merge.o[u0 + j][fr][d + 1] * scl[j];
      }
      if (slot)
        slot[32 + fr * D + d] = a, slot[32 + fr * D + d + 1] = b;
      else
        *(uint32_t *)(o + row * D + d) = H::pack2(a * inv, b * inv);
    }
  }
}

#endif /* GK_FA_MMA_CUH */
