/*
 * fa_mma.cuh - flash_attention's f16 path on tensor cores (FlashAttention-2's
 * schedule), included by flash_attention.cuh, which says the semantics.
 *
 * A block of FA_THREADS (4 groups of 32: warps) brings keys and values in
 * tiles of FA_MMA_KEYS = 64 into shared memory, K as it lies and V
 * transposed, both padded so that every fragment read hits 32 distinct
 * banks. A group multiplies 16 rows of queries, held as mma A fragments for
 * the whole call, by a slice of the tile: S = Q K^T on gk_mma_16816, the
 * online softmax on those fragments in f32 registers (a row is shared by the
 * 4 lanes of a quad: two xor shuffles), and P, rounded to f16, reused in
 * registers as the A operand of O += P V. The score matrix never leaves
 * registers. Lane 4g + t holds fragment rows g and g + 8 (r = 0, 1 below)
 * and, of each 8-wide tile of S or O, columns 2t and 2t + 1.
 *
 * Two schedules over the same tile step (gk_fa_mma_step):
 * - prefill (gk_fa_mma_prefill): the block owns 64 query rows of one head,
 *   each group 16 of them against all 64 keys of a tile;
 * - decode (gk_fa_mma_decode), when a KV head's queries fit one fragment
 *   (n_heads / n_kv_heads * sq <= 16: decode, speculative decode): the
 *   block owns a KV head and packs the queries of every head that shares it
 *   (GQA) into the 16 rows, so K and V are read once for all of them; each
 *   group takes 16 keys of every tile, and the 4 partial states (max, sum,
 *   output) are merged through shared memory at the end, FlashDecoding's
 *   merge inside one block.
 * Shared memory: 35 KB for D = 128, 18 KB for D = 64 (the decode merge
 * reuses it).
 */
#ifndef GK_FA_MMA_CUH
#define GK_FA_MMA_CUH

#include "gk_gpu.cuh"

#define FA_MMA_KEYS 64 /* keys per tile */

/* A block's shared memory (one, declared by the caller for both
 * schedules): the tile, or (decode, at the end) the merge. */
template <int D>
struct gk_fa_smem {
  enum { KP = D + 8, VP = FA_MMA_KEYS + 8 }; /* padded rows, in halves */
  union {
    struct {
      uint16_t k[FA_MMA_KEYS * KP]; /* k[key * KP + d] */
      uint16_t vt[D * VP];          /* vt[d * VP + key] */
    } tile;
    struct {
      float m[FA_GROUPS][16], l[FA_GROUPS][16], o[FA_GROUPS][16][D];
    } merge;
  };
};

/* Keys [k0, k0 + FA_MMA_KEYS) of KV head hk into the tile (zeros past skv),
 * by the whole block, between barriers. */
template <int D>
GK_DEV void gk_fa_mma_load(gk_fa_smem<D> &sm, const uint16_t *k, const uint16_t *v,
                           int64_t hk, int64_t skv, int64_t k0) {
  typedef gk_fa_smem<D> S;
  const int tid = (int)threadIdx.x;
  __syncthreads(); /* the previous tile is no longer read */
  /* K as it lies, 8 halves (16 bytes) a load; V transposed, a lane a key. */
  for (int e = tid; e < FA_MMA_KEYS * (D / 8); e += FA_THREADS) {
    const int r = e / (D / 8), c = e % (D / 8) * 8;
    const int64_t key = k0 + r;
    uint4 val = {0u, 0u, 0u, 0u};
    if (key < skv) val = *(const uint4 *)(k + (hk * skv + key) * D + c);
    *(uint4 *)&sm.tile.k[r * S::KP + c] = val;
  }
  for (int e = tid; e < FA_MMA_KEYS * (D / 8); e += FA_THREADS) {
    const int r = e % FA_MMA_KEYS, c = e / FA_MMA_KEYS * 8;
    const int64_t key = k0 + r;
    uint4 val = {0u, 0u, 0u, 0u};
    if (key < skv) val = *(const uint4 *)(v + (hk * skv + key) * D + c);
    const uint32_t w4[4] = {val.x, val.y, val.z, val.w};
    for (int i = 0; i < 8; i++)
      sm.tile.vt[(c + i) * S::VP + r] = (uint16_t)(w4[i / 2] >> (16 * (i & 1)));
  }
  __syncthreads();
}

/* One group's running state: per fragment row the max and the sum (in
 * log2 units), and the output fragments. */
template <int D>
struct gk_fa_state {
  float mx[2], l[2], acc[D / 8][4];
};

template <int D>
GK_DEV void gk_fa_state_init(gk_fa_state<D> &st) {
  for (int r = 0; r < 2; r++) st.mx[r] = -INFINITY, st.l[r] = 0.0f;
  for (int d = 0; d < D / 8; d++)
    for (int e = 0; e < 4; e++) st.acc[d][e] = 0.0f;
}

/*
 * The group's step over keys [k0 + 8 nt0, k0 + 8 (nt0 + NT)) of the tile:
 * S, the online softmax, O += P V. qpos[r]: the query position of fragment
 * row r (the causal mask: key j allowed when j <= qpos + skv - sq); sl: the
 * scale times log2(e), so that exp(s * scale - m) = exp2(s * sl - m').
 */
template <int Causal, int D, int NT>
GK_DEV void gk_fa_mma_step(const gk_fa_smem<D> &sm, const uint32_t (*qa)[4], int nt0,
                           int64_t k0, int64_t skv, int64_t sq, const int64_t qpos[2],
                           float sl, gk_fa_state<D> &st) {
  typedef gk_fa_smem<D> S;
  const int lane = gk_lane(), g = lane / 4, t = lane % 4;
  /* S = Q K^T. B[k][n] = K[n][k]: K's rows are B's columns as they lie. */
  float s[NT][4];
  for (int nt = 0; nt < NT; nt++) {
    for (int e = 0; e < 4; e++) s[nt][e] = 0.0f;
    const uint16_t *kr = &sm.tile.k[((nt0 + nt) * 8 + g) * S::KP + 2 * t];
    for (int kk = 0; kk < D / 16; kk++) {
      const uint32_t b[2] = {*(const uint32_t *)(kr + kk * 16),
                             *(const uint32_t *)(kr + kk * 16 + 8)};
      gk_mma_16816(s[nt], qa[kk], b);
    }
  }

  /* The online softmax on the fragments; -inf marks a key not allowed. */
  float tmax[2] = {-INFINITY, -INFINITY};
  for (int nt = 0; nt < NT; nt++)
    for (int e = 0; e < 4; e++) {
      const int r = e >> 1;
      const int64_t key = k0 + (nt0 + nt) * 8 + 2 * t + (e & 1);
      const bool allowed = key < skv && (!Causal || key <= qpos[r] + (skv - sq));
      s[nt][e] = allowed ? s[nt][e] * sl : -INFINITY;
      tmax[r] = fmaxf(tmax[r], s[nt][e]);
    }
  float alpha[2], psum[2] = {0.0f, 0.0f};
  for (int r = 0; r < 2; r++) {
    tmax[r] = fmaxf(tmax[r], GK_SHFL_XOR(tmax[r], 1));
    tmax[r] = fmaxf(tmax[r], GK_SHFL_XOR(tmax[r], 2));
    const float mnew = fmaxf(st.mx[r], tmax[r]);
    /* No allowed key yet: nothing to rescale, every p is 0. */
    alpha[r] = mnew == -INFINITY ? 1.0f : exp2f(st.mx[r] - mnew);
    tmax[r] = mnew == -INFINITY ? 0.0f : mnew; /* exp2(-inf - 0) = 0 */
    st.mx[r] = mnew;
  }
  for (int nt = 0; nt < NT; nt++)
    for (int e = 0; e < 4; e++) {
      s[nt][e] = exp2f(s[nt][e] - tmax[e >> 1]);
      psum[e >> 1] += s[nt][e];
    }
  for (int r = 0; r < 2; r++) {
    psum[r] += GK_SHFL_XOR(psum[r], 1);
    psum[r] += GK_SHFL_XOR(psum[r], 2);
    st.l[r] = st.l[r] * alpha[r] + psum[r];
  }
  for (int d = 0; d < D / 8; d++)
    for (int e = 0; e < 4; e++) st.acc[d][e] *= alpha[e >> 1];

  /* O += P V: two S tiles (16 keys) make one A fragment, in registers. */
  for (int kk = 0; kk < NT / 2; kk++) {
    const uint32_t pa[4] = {gk_pack_h2(s[2 * kk][0], s[2 * kk][1]),
                            gk_pack_h2(s[2 * kk][2], s[2 * kk][3]),
                            gk_pack_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                            gk_pack_h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
    for (int d = 0; d < D / 8; d++) {
      const uint16_t *vr = &sm.tile.vt[(d * 8 + g) * S::VP + nt0 * 8 + kk * 16 + 2 * t];
      const uint32_t b[2] = {*(const uint32_t *)vr, *(const uint32_t *)(vr + 8)};
      gk_mma_16816(st.acc[d], pa, b);
    }
  }
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

/* o row orow[r] (< 0: not stored) = the state's fragment row r / l. */
template <int D>
GK_DEV void gk_fa_mma_store(uint16_t *o, const int64_t orow[2], const float l[2],
                            const float (*acc)[4]) {
  const int t = gk_lane() % 4;
  for (int r = 0; r < 2; r++) {
    if (orow[r] < 0) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int d = 0; d < D / 8; d++)
      *(uint32_t *)(o + orow[r] * D + d * 8 + 2 * t) =
          gk_pack_h2(acc[d][2 * r] * inv, acc[d][2 * r + 1] * inv);
  }
}

/* Prefill: query rows [row0, row0 + FA_BLOCK_ROWS) of head h. */
template <int Causal, int D>
GK_DEV void gk_fa_mma_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const uint16_t *k,
                              const uint16_t *v, uint16_t *o, int64_t n_heads,
                              int64_t n_kv_heads, int64_t sq, int64_t skv, float scale,
                              int64_t h, int64_t row0) {
  const int64_t hk = h / (n_heads / n_kv_heads);
  const int64_t rbase = row0 + 16 * gk_group() + gk_lane() / 4;
  const int64_t qpos[2] = {rbase, rbase + 8};
  int64_t rows[2];
  for (int r = 0; r < 2; r++) rows[r] = qpos[r] < sq ? h * sq + qpos[r] : -1;
  uint32_t qa[D / 16][4];
  gk_fa_mma_q<D>(q, rows, qa);
  gk_fa_state<D> st;
  gk_fa_state_init<D>(st);
  const int64_t kend = gk_fa_kend(Causal, sq, skv, row0, FA_BLOCK_ROWS);
  for (int64_t k0 = 0; k0 < kend; k0 += FA_MMA_KEYS) {
    gk_fa_mma_load<D>(sm, k, v, hk, skv, k0);
    gk_fa_mma_step<Causal, D, FA_MMA_KEYS / 8>(sm, qa, 0, k0, skv, sq, qpos,
                                               scale * 1.4426950408889634f, st);
  }
  gk_fa_mma_store<D>(o, rows, st.l, st.acc);
}

/*
 * Decode: every query row of KV head hk's group of heads (group * sq <= 16
 * rows: fragment row r is head hk * group + r / sq, query r % sq). Group w
 * takes keys [16w, 16w + 16) of each tile; the block then merges the 4
 * partial states: m = max m_w, l = sum l_w 2^(m_w - m), o likewise.
 */
template <int Causal, int D>
GK_DEV void gk_fa_mma_decode(gk_fa_smem<D> &sm, const uint16_t *q, const uint16_t *k,
                             const uint16_t *v, uint16_t *o, int64_t n_heads,
                             int64_t n_kv_heads, int64_t sq, int64_t skv, float scale,
                             int64_t hk) {
  const int64_t group = n_heads / n_kv_heads, nrows = group * sq;
  const int w = gk_group(), lane = gk_lane(), g = lane / 4, t = lane % 4;
  int64_t qpos[2], rows[2];
  for (int r = 0; r < 2; r++) {
    const int64_t fr = g + 8 * r;
    qpos[r] = fr < nrows ? fr % sq : 0;
    rows[r] = fr < nrows ? (hk * group + fr / sq) * sq + fr % sq : -1;
  }
  uint32_t qa[D / 16][4];
  gk_fa_mma_q<D>(q, rows, qa);
  gk_fa_state<D> st;
  gk_fa_state_init<D>(st);
  const int64_t kend = gk_fa_kend(Causal, sq, skv, 0, (int)sq);
  for (int64_t k0 = 0; k0 < kend; k0 += FA_MMA_KEYS) {
    gk_fa_mma_load<D>(sm, k, v, hk, skv, k0);
    gk_fa_mma_step<Causal, D, 2>(sm, qa, 2 * w, k0, skv, sq, qpos,
                                 scale * 1.4426950408889634f, st);
  }

  /* The merge: each group's state into shared memory, then every group
   * combines rows 4w .. 4w + 3 of all four (the same order everywhere). */
  __syncthreads(); /* the last tile is no longer read */
  for (int r = 0; r < 2; r++) {
    const int fr = g + 8 * r;
    if (t == 0) sm.merge.m[w][fr] = st.mx[r], sm.merge.l[w][fr] = st.l[r];
    for (int d = 0; d < D / 8; d++) {
      sm.merge.o[w][fr][d * 8 + 2 * t] = st.acc[d][2 * r];
      sm.merge.o[w][fr][d * 8 + 2 * t + 1] = st.acc[d][2 * r + 1];
    }
  }
  __syncthreads();
  for (int fr = 4 * w; fr < 4 * w + 4; fr++) {
    if (fr >= nrows) break; /* uniform over the group */
    float m = -INFINITY;
    for (int u = 0; u < FA_GROUPS; u++) m = fmaxf(m, sm.merge.m[u][fr]);
    float scl[FA_GROUPS], l = 0.0f;
    for (int u = 0; u < FA_GROUPS; u++) {
      /* A group that saw no allowed key has m = -inf and weighs 0. */
      scl[u] = m == -INFINITY ? 0.0f : exp2f(sm.merge.m[u][fr] - m);
      l += sm.merge.l[u][fr] * scl[u];
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const int64_t row = (hk * group + fr / sq) * sq + fr % sq;
    for (int d = 2 * lane; d < D; d += 2 * GK_GROUP) {
      float a = 0.0f, b = 0.0f;
      for (int u = 0; u < FA_GROUPS; u++) {
        a += sm.merge.o[u][fr][d] * scl[u];
        b += sm.merge.o[u][fr][d + 1] * scl[u];
      }
      *(uint32_t *)(o + row * D + d) = gk_pack_h2(a * inv, b * inv);
    }
  }
}

#endif /* GK_FA_MMA_CUH */
