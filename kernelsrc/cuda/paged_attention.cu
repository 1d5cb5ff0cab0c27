/*
 * paged_attention.cu - the cuda entry point of paged_attention
 * (docs/kernels.md), one image per variant: -DDTYPE=f16|bf16|f32,
 * -DHEAD_DIM=64|128, -DPAGE=16|64 (kv_append.cu takes the same). The body
 * is paged_attention.cuh.
 */
#include "paged_attention.cuh"

#define GK_DT_f16 1
#define GK_DT_f32 2
#define GK_DT_bf16 3
#define GK_DT_(x) GK_DT_##x
#define GK_DT(x) GK_DT_(x)

#if !defined(HEAD_DIM) || (HEAD_DIM != 64 && HEAD_DIM != 128)
#error "paged_attention.cu: compile with -DHEAD_DIM=64 or 128"
#endif
#if !defined(PAGE) || (PAGE != 16 && PAGE != 64)
#error "paged_attention.cu: compile with -DPAGE=16 or 64"
#endif
#if !defined(DTYPE)
#error "paged_attention.cu: compile with -DDTYPE=f16, bf16 or f32"
#elif GK_DT(DTYPE) == 1
typedef gk_f16 pa_dtype;
#elif GK_DT(DTYPE) == 2
typedef gk_f32 pa_dtype;
#elif GK_DT(DTYPE) == 3
typedef gk_bf16 pa_dtype;
#else
#error "paged_attention.cu: DTYPE must be f16, bf16 or f32"
#endif

extern "C" GK_KERNEL void __launch_bounds__(FA_MAX_THREADS, FA_MIN_BLOCKS)
paged_attention(const void *q, const void *k_pool, const void *v_pool,
                const int32_t *block_table, const int32_t *seq_lens, void *o, int64_t n_seqs,
                int64_t n_heads, int64_t n_kv_heads, int64_t sq, int64_t max_pages,
                int64_t n_pages, float scale, void *ws, int64_t ws_bytes) {
  gk_paged_attention<pa_dtype, HEAD_DIM, PAGE>(q, k_pool, v_pool, block_table, seq_lens, o,
                                              n_seqs, n_heads, n_kv_heads, sq, max_pages,
                                              n_pages, scale, ws, ws_bytes);
}
