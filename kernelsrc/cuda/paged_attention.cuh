/*
 * paged_attention.cuh - attention over a paged KV cache, and kv_append,
 * which writes new rows into its pages (docs/kernels.md), on GPUs.
 * Template: element type (gk_f32, gk_f16 or gk_bf16: gk_gpu.cuh's tags),
 * head dimension D, page size Page. The layout and the one validity rule are
 * kernelsrc/common/gk_paged.h's.
 *
 * paged_attention is flash_attention (causal) run per sequence with its
 * keys and values found through its block table: the same schedules and
 * tile steps (flash_attention.cuh, fa_mma.cuh), with a gk_kv_paged locator
 * where flash_attention has contiguous rows. A sequence is checked by the
 * whole block before any page is read; an invalid one gets NaN rows.
 * Launch: blocks of FA_THREADS, grid (ceil(sq / FA_BLOCK_ROWS), n_heads,
 * n_seqs) or smaller: sequences z, z + gridDim.z, ...; inside a sequence
 * the blocks share the queries as flash_attention's do.
 *
 * kv_append: blocks of KV_THREADS, grid (sq, n_kv_heads, n_seqs) or
 * smaller; a block copies row i of KV head hk of sequence s, 16 bytes a
 * thread, to position seq_lens[s] - sq + i of its pages (skipped when the
 * sequence is invalid or shorter than sq).
 */
#ifndef GK_PAGED_ATTENTION_CUH
#define GK_PAGED_ATTENTION_CUH

#include "flash_attention.cuh"

#define KV_THREADS 64

/* A thread's first KV_EARLY entries of a table row (bt[threadIdx.x +
 * blockDim.x e], 0 past max_pages), loaded before the sequence's length
 * arrives: every entry below max_pages lies inside the table whatever the
 * length, so the length's load and these are in flight together. The
 * check used to wait for the length, then load the entries it asks for:
 * two round trips to memory before a block's first tile, where the
 * contiguous decode has none (paged decodes took 19.3 us at 8192 tokens
 * against flash_attention's 17.4, H200, 2026-11-30). Up to KV_EARLY x 128
 * entries (8192 tokens in pages of 16) are so checked in one round trip. */
#define KV_EARLY 4
struct gk_paged_early {
  int32_t e[KV_EARLY];
};
GK_DEV gk_paged_early gk_paged_load_early(const int32_t *bt, int64_t max_pages) {
  gk_paged_early r;
#pragma unroll
  for (int i = 0; i < KV_EARLY; i++) {
    const int64_t j = threadIdx.x + (int64_t)blockDim.x * i;
    r.e[i] = j < max_pages ? bt[j] : 0;
  }
  return r;
}

/* gk_paged_seq_ok by the whole block: the table entries are checked by
 * every thread a few each (the first KV_EARLY of them already loaded:
 * gk_paged_load_early), then agreed on by a vote of the block. */
GK_DEV bool gk_paged_block_ok(const int32_t *bt, const gk_paged_early &early, int32_t len,
                              int64_t page, int64_t max_pages, int64_t n_pages) {
  if (len < 0) return false; /* uniform */
  const int64_t used = gk_paged_used(len, page);
  if (used > max_pages) return false; /* uniform */
  bool bad = false;
#pragma unroll
  for (int i = 0; i < KV_EARLY; i++) {
    const int64_t j = threadIdx.x + (int64_t)blockDim.x * i;
    if (j < used && !gk_paged_id_ok(early.e[i], n_pages)) bad = true;
  }
  for (int64_t j = threadIdx.x + (int64_t)blockDim.x * KV_EARLY; j < used; j += blockDim.x)
    if (!gk_paged_id_ok(bt[j], n_pages)) bad = true;
  return !gk_block_any(bad);
}


template <class Dt, int D, int Page>
GK_DEV void gk_paged_attention(const void *q, const void *k_pool, const void *v_pool,
                               const int32_t *block_table, const int32_t *seq_lens, void *o,
                               int64_t n_seqs, int64_t n_heads, int64_t n_kv_heads,
                               int64_t sq, int64_t max_pages, int64_t n_pages, float scale,
                               void *ws, int64_t ws_bytes) {
  if (n_seqs <= 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 ||
      sq <= 0 || max_pages < 0 || n_pages < 0)
    return; /* uniform over the grid */
  typedef typename Dt::elem T;
  const int64_t rows = n_heads * sq * D; /* elements of a sequence's q, o */
  const gk_fa_ws wsall = gk_fa_ws_of<D>(ws, ws_bytes, n_seqs * n_kv_heads);
  for (int64_t s = blockIdx.z; s < n_seqs; s += gridDim.z) {
    const int32_t *bt = block_table + s * max_pages;
    const int32_t len = seq_lens[s];
    const gk_paged_early early = gk_paged_load_early(bt, max_pages); /* beside len */
    T *os = (T *)o + s * rows;
    if (!gk_paged_block_ok(bt, early, len, Page, max_pages, n_pages)) {
      /* Every block of the sequence writes its share of the NaN rows: the
       * quiet NaN rounded to the element type. */
      const T nan = Dt::store(gk_q_f32_from_bits(0x7fc00000u));
      const int64_t nb = (int64_t)gridDim.x * gridDim.y;
      const int64_t b = (int64_t)blockIdx.y * gridDim.x + blockIdx.x;
      for (int64_t e = b * blockDim.x + threadIdx.x; e < rows; e += nb * blockDim.x)
        os[e] = nan; /* f32 0x7fc00000, f16 0x7e00, bf16 0x7fc0 */
      continue;
    }
    const gk_kv_paged<T, Page> kv = {(const T *)k_pool, (const T *)v_pool, len, D, bt,
                                     n_kv_heads};
    gk_fa_walk<1, D, Dt>((const T *)q + s * rows, kv, os, n_heads, n_kv_heads, sq, scale,
                         gk_fa_ws_seq<D>(wsall, s, n_kv_heads));
  }
}

template <class Dt, int D, int Page>
GK_DEV void gk_kv_append(const void *k_new, const void *v_new, void *k_pool, void *v_pool,
                         const int32_t *block_table, const int32_t *seq_lens, int64_t n_seqs,
                         int64_t n_kv_heads, int64_t sq, int64_t max_pages, int64_t n_pages) {
  if (n_seqs <= 0 || n_kv_heads <= 0 || sq <= 0 || max_pages < 0 || n_pages < 0) return;
  typedef typename Dt::elem T;
  constexpr int CHUNKS = D * (int)sizeof(T) / 16; /* 16-byte pieces of a row */
  for (int64_t s = blockIdx.z; s < n_seqs; s += gridDim.z) {
    const int32_t *bt = block_table + s * max_pages;
    const int32_t len = seq_lens[s];
    const gk_paged_early early = gk_paged_load_early(bt, max_pages); /* beside len */
    if (len < sq || !gk_paged_block_ok(bt, early, len, Page, max_pages, n_pages)) continue;
    for (int64_t hk = blockIdx.y; hk < n_kv_heads; hk += gridDim.y)
      for (int64_t i = blockIdx.x; i < sq; i += gridDim.x) {
        const int64_t src = ((s * n_kv_heads + hk) * sq + i) * D;
        const int64_t dst = gk_paged_row(bt, len - sq + i, hk, Page, n_kv_heads, D);
        for (int c = (int)threadIdx.x; c < 2 * CHUNKS; c += KV_THREADS) {
          const bool is_v = c >= CHUNKS;
          const int at = (is_v ? c - CHUNKS : c) * (16 / (int)sizeof(T));
          const T *from = (const T *)(is_v ? v_new : k_new) + src + at;
          T *to = (T *)(is_v ? v_pool : k_pool) + dst + at;
          *(uint4 *)to = *(const uint4 *)from;
        }
      }
  }
}

#endif /* GK_PAGED_ATTENTION_CUH */
