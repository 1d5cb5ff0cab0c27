/*
 * gk_paged.h - the paged KV cache's addressing and its one validity rule,
 * shared by the paged_attention and kv_append kernels of every backend
 * that compiles C (CPU, CUDA, HIP; docs/kernels.md, "paged_attention").
 *
 * Layout: k_pool and v_pool are [n_pages][n_kv_heads][page][head_dim];
 * token position j of a sequence is slot j % page of page block_table[s]
 * [j / page]. A sequence of length len uses the first ceil(len / page)
 * entries of its table row; entries past those are never read (vLLM pads
 * them with -1, or leaves them stale).
 *
 * A sequence is valid when 0 <= len, ceil(len / page) <= max_pages, and
 * each page id it uses is in [0, n_pages). The kernels test exactly this
 * before touching a page, so bad input is never read or written out of
 * bounds. libgk's gk_paged_check (loader/gk.h) applies the same rule on
 * the host and says which sequence and which entry are wrong.
 */
#ifndef GK_PAGED_H
#define GK_PAGED_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#  define GK_PFN __host__ __device__ static inline
#else
#  define GK_PFN static inline
#endif

/* Table entries a sequence of len >= 0 tokens uses: ceil(len / page). */
GK_PFN int64_t gk_paged_used(int32_t len, int64_t page) {
  return ((int64_t)len + page - 1) / page;
}

/* 1 when a table entry names a page of the pool of n_pages. */
GK_PFN int gk_paged_id_ok(int32_t id, int64_t n_pages) {
  return id >= 0 && id < n_pages;
}

/* 1 when the sequence with table row bt and length len is valid. */
GK_PFN int gk_paged_seq_ok(const int32_t *bt, int32_t len, int64_t page,
                           int64_t max_pages, int64_t n_pages) {
  if (len < 0)
    return 0;
  const int64_t used = gk_paged_used(len, page);
  if (used > max_pages)
    return 0;
  for (int64_t j = 0; j < used; j++)
    if (!gk_paged_id_ok(bt[j], n_pages))
      return 0;
  return 1;
}

/* Element offset of position j's row of KV head hk in a pool (j below the
 * length of a valid sequence): [page][hk][slot][0]. */
GK_PFN int64_t gk_paged_row(const int32_t *bt, int64_t j, int64_t hk,
                            int64_t page, int64_t n_kv_heads, int64_t head_dim) {
  return (((int64_t)bt[j / page] * n_kv_heads + hk) * page + j % page) * head_dim;
}

#endif /* GK_PAGED_H */
