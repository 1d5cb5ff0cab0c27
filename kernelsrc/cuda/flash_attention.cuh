/*
 * flash_attention.cuh - attention with an online softmax over key tiles
 * (docs/kernels.md), on GPUs. Template: causal mask, element type (float,
 * or uint16_t holding binary16), head dimension D (64 or 128).
 *
 * Launch: blocks of FA_THREADS threads, grid (ceil(sq / FA_ROWS), n_heads),
 * or smaller (blocks loop over the query blocks and heads it leaves).
 * Block (x, h) owns query rows [x*FA_ROWS, x*FA_ROWS + FA_ROWS) of head h;
 * each of its 4 groups owns FA_ROWS/4 of those rows. Keys and values come in
 * tiles of FA_KEYS = 32 rows into shared memory, converted to f32 once; lane
 * j of a group scores key j of the tile, and lane l accumulates output
 * dimensions l, l+32, ... So the score matrix never exists beyond one row
 * of one tile (32 floats in registers).
 *
 * Online softmax per query row: running max mx, running sum l and output
 * accumulator o; a tile with new maximum mx' rescales l and o by
 * exp(mx - mx') before adding exp(s - mx') and exp(s - mx') * v. At the end
 * o / l is rounded to the element type once; a row with no allowed key
 * (causal and sq > skv) has l = 0 and is written as zeros.
 *
 * Causal (bottom-right aligned): query row i may see key j <= i + skv - sq.
 * Key tiles past the last key any row of the block may see are not loaded.
 *
 * Shared memory (static): Q tile FA_ROWS x D, K tile 32 x (D+1) (the +1
 * keeps lane j's reads of key row j on distinct banks), V tile 32 x D:
 * 40.6 KB for D = 128, 20.4 KB for D = 64.
 */
#ifndef GK_FLASH_ATTENTION_CUH
#define GK_FLASH_ATTENTION_CUH

#include "gk_gpu.cuh"

#define FA_THREADS 128
#define FA_GROUPS (FA_THREADS / GK_GROUP)
#define FA_ROWS 16                 /* query rows per block */
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
    for (int64_t qb = blockIdx.x; qb * FA_ROWS < sq; qb += gridDim.x)
      gk_fa_block<Causal, T, D>((const T *)q, (const T *)k, (const T *)v, (T *)o, n_heads,
                                n_kv_heads, sq, skv, scale, h, qb * FA_ROWS);
}

#endif /* GK_FLASH_ATTENTION_CUH */
