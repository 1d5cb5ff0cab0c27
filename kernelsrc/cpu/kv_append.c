/*
 * kv_append.c - writes the new K/V rows of a batch of sequences into their
 * pages of the paged KV cache (docs/kernels.md, "kv_append"): row i < sq of
 * sequence s, KV head hk, goes to position seq_lens[s] - sq + i, i.e. slot
 * (pos % P) of page block_table[s][pos / P], in k_pool and v_pool
 * ([n_pages][n_kv_heads][P][D]). k_new, v_new: [n_seqs][n_kv_heads][sq][D].
 * A sequence that is invalid (kernelsrc/common/gk_paged.h) or shorter than
 * sq is skipped: nothing of it is written.
 *
 * Built per (DTYPE, HEAD_DIM, PAGE, x86-64 level) like paged_attention,
 * with the same variant, so a host loads the pair with one variant string.
 * A row is D elements of 2 or 4 bytes copied with the level's widest
 * vectors (a multiple of 64 bytes): this is a copy, no arithmetic.
 */
#include "gk_cpu.h"
#include "../common/gk_paged.h"

#if !defined(HEAD_DIM) || (HEAD_DIM != 64 && HEAD_DIM != 128)
#error "kv_append.c: compile with -DHEAD_DIM=64 or 128"
#endif
#if !defined(PAGE) || (PAGE != 16 && PAGE != 64)
#error "kv_append.c: compile with -DPAGE=16 or 64"
#endif
#define KA_DTYPE_f16 2
#define KA_DTYPE_bf16 2
#define KA_DTYPE_f32 4
#define KA_CAT2(a, b) a##b
#define KA_CAT(a, b) KA_CAT2(a, b)
#if !defined(DTYPE) || (KA_CAT(KA_DTYPE_, DTYPE) != 2 && KA_CAT(KA_DTYPE_, DTYPE) != 4)
#error "kv_append.c: compile with -DDTYPE=f16, bf16 or f32"
#endif

#define D HEAD_DIM
#define ES KA_CAT(KA_DTYPE_, DTYPE) /* bytes per element */
#define ROW_F ((D * ES) / 4)       /* a row, as 32-bit words moved as floats */

/* One row: bits moved through float vectors (loads and stores do not touch
 * a NaN's payload), so f16 and bf16 pairs travel unchanged too. */
static inline void copy_row(void *restrict dst, const void *restrict src) {
  float *d = (float *)dst;
  const float *s = (const float *)src;
  for (int e = 0; e < ROW_F; e += GK_VL)
    vf_store(d + e, vf_load(s + e));
}

/* The entry point (gk.h gk_kv_append_fn). Nothing is done when n_seqs,
 * n_kv_heads or sq is not positive, or max_pages or n_pages is negative. */
GK_KERNEL_EXPORT void kv_append(const void *k_new, const void *v_new, void *k_pool,
                                void *v_pool, const int32_t *block_table,
                                const int32_t *seq_lens, int64_t n_seqs,
                                int64_t n_kv_heads, int64_t sq, int64_t max_pages,
                                int64_t n_pages) {
  if (n_seqs <= 0 || n_kv_heads <= 0 || sq <= 0 || max_pages < 0 || n_pages < 0)
    return;
  const unsigned char *kn = k_new, *vn = v_new;
  unsigned char *kp = k_pool, *vp = v_pool;
  for (int64_t s = 0; s < n_seqs; s++) {
    const int32_t *bt = block_table + s * max_pages;
    const int32_t len = seq_lens[s];
    if (len < sq || !gk_paged_seq_ok(bt, len, PAGE, max_pages, n_pages))
      continue;
    for (int64_t hk = 0; hk < n_kv_heads; hk++)
      for (int64_t i = 0; i < sq; i++) {
        const int64_t src = ((s * n_kv_heads + hk) * sq + i) * D * ES;
        const int64_t dst =
            gk_paged_row(bt, len - sq + i, hk, PAGE, n_kv_heads, D) * ES;
        copy_row(kp + dst, kn + src);
        copy_row(vp + dst, vn + src);
      }
  }
}
