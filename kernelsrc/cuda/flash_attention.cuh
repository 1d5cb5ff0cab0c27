/*
 * flash_attention.cuh - attention with an online softmax over key tiles
 * (docs/kernels.md), on GPUs. Template: causal mask, element type (float,
 * or uint16_t holding binary16), head dimension D (64 or 128).
 *
 * Launch: blocks of FA_THREADS threads, grid (ceil(sq / FA_BLOCK_ROWS),
 * n_heads), or smaller (blocks loop over the query blocks and heads it
 * leaves). Block (x, h) owns query rows [x*FA_BLOCK_ROWS, +FA_BLOCK_ROWS)
 * of head h. Causal (bottom-right aligned): query row i may see key
 * j <= i + skv - sq; key tiles past the last key any row of the block may
 * see are not loaded.
 *
 * Online softmax per query row: running max mx, running sum l and output
 * accumulator o; a tile with new maximum mx' rescales l and o by
 * exp(mx - mx') before adding exp(s - mx') and exp(s - mx') * v. At the end
 * o / l is rounded to the element type once; a row with no allowed key
 * (causal and sq > skv) has l = 0 and is written as zeros.
 *
 * f16: tensor cores (FlashAttention-2's schedule). Each of the 4 groups
 * (warps) owns 16 query rows, held as mma A fragments for the whole call;
 * K and V come in tiles of FA_MMA_KEYS = 64 keys into shared memory (K as
 * it lies, V transposed, both padded so that the fragment reads hit 32
 * distinct banks). S = Q K^T is 8 mma tiles of 16 x 8 per group, the
 * softmax runs on those fragments in f32 registers (a row is shared by the
 * 4 lanes of a quad: two xor shuffles), and P, rounded to f16, is reused
 * in registers as the A operand of O += P V: the score matrix never leaves
 * registers. Shared memory: 35 KB for D = 128, 18 KB for D = 64.
 *
 * f32: no tensor-core path keeps f32's precision (tf32 rounds inputs to 10
 * bits), so the f32 variant runs the scalar FMA path: groups of 32 lanes,
 * lane j scores key j of a 32-key tile, lane l accumulates output
 * dimensions l, l+32, ...; Q tile FA_ROWS x D, K tile 32 x (D+1) and V
 * tile 32 x D in shared memory (40.6 KB for D = 128, 20.4 KB for D = 64).
 */
#ifndef GK_FLASH_ATTENTION_CUH
#define GK_FLASH_ATTENTION_CUH

#include "gk_gpu.cuh"

#define FA_THREADS 128
#define FA_GROUPS (FA_THREADS / GK_GROUP)
#define FA_BLOCK_ROWS 64           /* query rows per block (the launch's) */
#define FA_MMA_KEYS 64             /* keys per tile, f16 path */
#define FA_ROWS 16                 /* query rows per pass, f32 path */
#define FA_RPG (FA_ROWS / FA_GROUPS) /* query rows per group */
#define FA_KEYS GK_GROUP           /* keys per tile: one per lane */

GK_DEV float gk_fa_load(const float *p, int64_t i) { return p[i]; }
GK_DEV float gk_fa_load(const uint16_t *p, int64_t i) { return gk_h2f(p[i]); }
GK_DEV void gk_fa_store(float *p, int64_t i, float v) { p[i] = v; }
GK_DEV void gk_fa_store(uint16_t *p, int64_t i, float v) { p[i] = gk_f2h(v); }

/* Query rows [row0, row0 + FA_ROWS) of head h, by the whole block. */
template <int Causal, typename T, int D>
GK_DEV void gk_fa_block(const T *q, const T *k, const T *v, T *o, int64_t n_heads,
                        int64_t n_kv_heads, int64_t sq, int64_t skv, float scale,
                        int64_t h, int64_t row0) {
  static_assert(D % GK_GROUP == 0, "head_dim must be a multiple of 32");
  constexpr int DPL = D / GK_GROUP; /* output dimensions per lane */
  __shared__ float sq_t[FA_ROWS][D];
  __shared__ float sk_t[FA_KEYS][D + 1];
  __shared__ float sv_t[FA_KEYS][D];

  const int tid = (int)threadIdx.x, lane = gk_lane(), grp = gk_group();
  const int64_t hk = h / (n_heads / n_kv_heads);
  const int64_t off = skv - sq; /* causal: row i sees keys j <= i + off */

  /* Keys any row of this block may see. */
  int64_t kend = skv;
  if (Causal) {
    const int64_t last = (row0 + FA_ROWS < sq ? row0 + FA_ROWS : sq) - 1;
    const int64_t lim = last + off + 1;
    kend = lim < 0 ? 0 : (lim < skv ? lim : skv);
  }

  __syncthreads(); /* the previous block's rows are no longer read */
  for (int e = tid; e < FA_ROWS * D; e += FA_THREADS) {
    const int r = e / D, c = e % D;
    const int64_t row = row0 + r;
    sq_t[r][c] = row < sq ? gk_fa_load(q, (h * sq + row) * D + c) : 0.0f;
  }

  float mx[FA_RPG], l[FA_RPG], acc[FA_RPG][DPL];
  for (int rr = 0; rr < FA_RPG; rr++) {
    mx[rr] = -INFINITY;
    l[rr] = 0.0f;
    for (int c = 0; c < DPL; c++) acc[rr][c] = 0.0f;
  }

  for (int64_t k0 = 0; k0 < kend; k0 += FA_KEYS) {
    __syncthreads(); /* the previous tile is no longer read */
    for (int e = tid; e < FA_KEYS * D; e += FA_THREADS) {
      const int r = e / D, c = e % D;
      const int64_t key = k0 + r;
      const bool in = key < skv;
      sk_t[r][c] = in ? gk_fa_load(k, (hk * skv + key) * D + c) : 0.0f;
      sv_t[r][c] = in ? gk_fa_load(v, (hk * skv + key) * D + c) : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int rr = 0; rr < FA_RPG; rr++) {
      const int r = grp * FA_RPG + rr;
      const int64_t row = row0 + r;
      if (row >= sq) continue; /* uniform over the group */
      const int64_t key = k0 + lane;
      const bool allowed = key < skv && (!Causal || key <= row + off);
      float s = 0.0f;
      for (int c = 0; c < D; c++) s = fmaf(sq_t[r][c], sk_t[lane][c], s);
      s = allowed ? s * scale : -INFINITY;
      const float tmax = gk_group_max(s);
      if (tmax == -INFINITY) continue; /* no allowed key here; uniform */
      const float mnew = fmaxf(mx[rr], tmax);
      const float p = allowed ? expf(s - mnew) : 0.0f;
      const float alpha = expf(mx[rr] - mnew); /* 0 on the first tile */
      l[rr] = l[rr] * alpha + gk_group_sum(p);
      for (int c = 0; c < DPL; c++) acc[rr][c] *= alpha;
#pragma unroll 8
      for (int j = 0; j < FA_KEYS; j++) {
        const float pj = GK_SHFL(p, j);
        for (int c = 0; c < DPL; c++)
          acc[rr][c] = fmaf(pj, sv_t[j][lane + c * GK_GROUP], acc[rr][c]);
      }
      mx[rr] = mnew;
    }
  }

#pragma unroll
  for (int rr = 0; rr < FA_RPG; rr++) {
    const int64_t row = row0 + grp * FA_RPG + rr;
    if (row >= sq) continue;
    const float inv = l[rr] > 0.0f ? 1.0f / l[rr] : 0.0f;
    for (int c = 0; c < DPL; c++)
      gk_fa_store(o, (h * sq + row) * D + lane + c * GK_GROUP, acc[rr][c] * inv);
  }
}

/* The keys rows [row0, row0 + rows) of a causal block may see: [0, kend). */
GK_DEV int64_t gk_fa_kend(int Causal, int64_t sq, int64_t skv, int64_t row0, int rows) {
  if (!Causal) return skv;
  const int64_t last = (row0 + rows < sq ? row0 + rows : sq) - 1;
  const int64_t lim = last + (skv - sq) + 1;
  return lim < 0 ? 0 : (lim < skv ? lim : skv);
}

/* Query rows [row0, row0 + FA_BLOCK_ROWS) of head h, f16, on tensor cores
 * (see the top). Lane 4g + t of group w holds rows row0 + 16w + g and
 * + 8 (index r = 0, 1 below) and, in each 8-wide tile of S or O, columns
 * 2t and 2t + 1: gk_mma_16816's C layout. */
template <int Causal, int D>
GK_DEV void gk_fa_mma_block(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                            uint16_t *o, int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                            int64_t skv, float scale, int64_t h, int64_t row0) {
  static_assert(D % 16 == 0, "head_dim must be a multiple of 16");
  constexpr int KP = D + 8, VP = FA_MMA_KEYS + 8; /* padded rows, in halves */
  constexpr int NT = FA_MMA_KEYS / 8, DT = D / 8;  /* 8-wide tiles of S, O */
  __shared__ __attribute__((aligned(16))) uint16_t ks[FA_MMA_KEYS * KP];
  __shared__ __attribute__((aligned(16))) uint16_t vt[D * VP];

  const int tid = (int)threadIdx.x, lane = gk_lane(), g = lane / 4, t = lane % 4;
  const int64_t hk = h / (n_heads / n_kv_heads);
  const int64_t off = skv - sq; /* causal: row i sees keys j <= i + off */
  const int64_t kend = gk_fa_kend(Causal, sq, skv, row0, FA_BLOCK_ROWS);
  const int64_t rbase = row0 + 16 * gk_group() + g; /* rows rbase, rbase + 8 */
  /* Scores in log2 units: exp(s * scale - m) = exp2(s * scale * log2(e) - m'). */
  const float sl = scale * 1.4426950408889634f;

  /* This lane's part of its group's 16 query rows, as A fragments. */
  uint32_t qa[D / 16][4];
  for (int kk = 0; kk < D / 16; kk++)
    for (int u = 0; u < 4; u++) {
      const int64_t row = rbase + 8 * (u & 1);
      const int col = kk * 16 + 2 * t + 8 * (u >> 1);
      qa[kk][u] = row < sq ? *(const uint32_t *)(q + (h * sq + row) * D + col) : 0u;
    }

  float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, acc[DT][4];
  for (int d = 0; d < DT; d++)
    for (int e = 0; e < 4; e++) acc[d][e] = 0.0f;

  for (int64_t k0 = 0; k0 < kend; k0 += FA_MMA_KEYS) {
    __syncthreads(); /* the previous tile is no longer read */
    /* K as it lies, 8 halves (16 bytes) a load; V transposed, a lane a key. */
    for (int e = tid; e < FA_MMA_KEYS * (D / 8); e += FA_THREADS) {
      const int r = e / (D / 8), c = e % (D / 8) * 8;
      const int64_t key = k0 + r;
      uint4 val = {0u, 0u, 0u, 0u};
      if (key < skv) val = *(const uint4 *)(k + (hk * skv + key) * D + c);
      *(uint4 *)&ks[r * KP + c] = val;
    }
    for (int e = tid; e < FA_MMA_KEYS * (D / 8); e += FA_THREADS) {
      const int r = e % FA_MMA_KEYS, c = e / FA_MMA_KEYS * 8;
      const int64_t key = k0 + r;
      uint4 val = {0u, 0u, 0u, 0u};
      if (key < skv) val = *(const uint4 *)(v + (hk * skv + key) * D + c);
      const uint32_t w4[4] = {val.x, val.y, val.z, val.w};
      for (int i = 0; i < 8; i++) vt[(c + i) * VP + r] = (uint16_t)(w4[i / 2] >> (16 * (i & 1)));
    }
    __syncthreads();

    /* S = Q K^T: 16 rows x 64 keys per group. B[k][n] = K[n][k]: K's rows
     * are B's columns as they lie. */
    float s[NT][4];
    for (int nt = 0; nt < NT; nt++) {
      for (int e = 0; e < 4; e++) s[nt][e] = 0.0f;
      const uint16_t *kr = &ks[(nt * 8 + g) * KP + 2 * t];
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
        const int64_t key = k0 + nt * 8 + 2 * t + (e & 1), row = rbase + 8 * r;
        const bool allowed = key < skv && (!Causal || key <= row + off);
        s[nt][e] = allowed ? s[nt][e] * sl : -INFINITY;
        tmax[r] = fmaxf(tmax[r], s[nt][e]);
      }
    float alpha[2], psum[2] = {0.0f, 0.0f};
    for (int r = 0; r < 2; r++) {
      tmax[r] = fmaxf(tmax[r], GK_SHFL_XOR(tmax[r], 1));
      tmax[r] = fmaxf(tmax[r], GK_SHFL_XOR(tmax[r], 2));
      const float mnew = fmaxf(mx[r], tmax[r]);
      /* No allowed key yet: nothing to rescale, every p is 0. */
      alpha[r] = mnew == -INFINITY ? 1.0f : exp2f(mx[r] - mnew);
      tmax[r] = mnew == -INFINITY ? 0.0f : mnew; /* exp2(-inf - 0) = 0 */
      mx[r] = mnew;
    }
    for (int nt = 0; nt < NT; nt++)
      for (int e = 0; e < 4; e++) {
        s[nt][e] = exp2f(s[nt][e] - tmax[e >> 1]);
        psum[e >> 1] += s[nt][e];
      }
    for (int r = 0; r < 2; r++) {
      psum[r] += GK_SHFL_XOR(psum[r], 1);
      psum[r] += GK_SHFL_XOR(psum[r], 2);
      l[r] = l[r] * alpha[r] + psum[r];
    }
    for (int d = 0; d < DT; d++)
      for (int e = 0; e < 4; e++) acc[d][e] *= alpha[e >> 1];

    /* O += P V: two S tiles (16 keys) make one A fragment, in registers. */
    for (int kk = 0; kk < FA_MMA_KEYS / 16; kk++) {
      const uint32_t pa[4] = {gk_pack_h2(s[2 * kk][0], s[2 * kk][1]),
                              gk_pack_h2(s[2 * kk][2], s[2 * kk][3]),
                              gk_pack_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              gk_pack_h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      for (int d = 0; d < DT; d++) {
        const uint16_t *vr = &vt[(d * 8 + g) * VP + kk * 16 + 2 * t];
        const uint32_t b[2] = {*(const uint32_t *)vr, *(const uint32_t *)(vr + 8)};
        gk_mma_16816(acc[d], pa, b);
      }
    }
  }

  for (int r = 0; r < 2; r++) {
    const int64_t row = rbase + 8 * r;
    if (row >= sq) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int d = 0; d < DT; d++)
      *(uint32_t *)(o + (h * sq + row) * D + d * 8 + 2 * t) =
          gk_pack_h2(acc[d][2 * r] * inv, acc[d][2 * r + 1] * inv);
  }
}

/* The f16 path on tensor cores, the f32 path on FMAs (see the top). */
template <int Causal, int D>
GK_DEV void gk_fa_rows(const uint16_t *q, const uint16_t *k, const uint16_t *v, uint16_t *o,
                       int64_t n_heads, int64_t n_kv_heads, int64_t sq, int64_t skv,
                       float scale, int64_t h, int64_t row0) {
  gk_fa_mma_block<Causal, D>(q, k, v, o, n_heads, n_kv_heads, sq, skv, scale, h, row0);
}
template <int Causal, int D>
GK_DEV void gk_fa_rows(const float *q, const float *k, const float *v, float *o,
                       int64_t n_heads, int64_t n_kv_heads, int64_t sq, int64_t skv,
                       float scale, int64_t h, int64_t row0) {
  for (int64_t r = row0; r < row0 + FA_BLOCK_ROWS && r < sq; r += FA_ROWS)
    gk_fa_block<Causal, float, D>(q, k, v, o, n_heads, n_kv_heads, sq, skv, scale, h, r);
}

template <int Causal, typename T, int D>
GK_DEV void gk_flash_attention(const void *q, const void *k, const void *v, void *o,
                               int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                               int64_t skv, float scale) {
  if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || sq <= 0 ||
      skv < 0)
    return; /* uniform over the grid */
  /* Query blocks x, x + gridDim.x, ... of heads y, y + gridDim.y, ...:
   * uniform over the block, so every barrier inside is reached by all. */
  for (int64_t h = blockIdx.y; h < n_heads; h += gridDim.y)
    for (int64_t qb = blockIdx.x; qb * FA_BLOCK_ROWS < sq; qb += gridDim.x)
      gk_fa_rows<Causal, D>((const T *)q, (const T *)k, (const T *)v, (T *)o, n_heads,
                            n_kv_heads, sq, skv, scale, h, qb * FA_BLOCK_ROWS);
}

#endif /* GK_FLASH_ATTENTION_CUH */
