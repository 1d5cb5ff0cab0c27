/*
 * kv_append.cu - the cuda entry point of kv_append (docs/kernels.md), one
 * image per variant: -DDTYPE=f16|bf16|f32, -DHEAD_DIM=64|128, -DPAGE=16|64 (as
 * paged_attention.cu). The body is paged_attention.cuh.
 */
#include "paged_attention.cuh"

#define GK_DT_f16 1
#define GK_DT_f32 2
#define GK_DT_bf16 3
#define GK_DT_(x) GK_DT_##x
#define GK_DT(x) GK_DT_(x)

#if !defined(HEAD_DIM) || (HEAD_DIM != 64 && HEAD_DIM != 128)
#error "kv_append.cu: compile with -DHEAD_DIM=64 or 128"
#endif
#if !defined(PAGE) || (PAGE != 16 && PAGE != 64)
#error "kv_append.cu: compile with -DPAGE=16 or 64"
#endif
#if !defined(DTYPE)
#error "kv_append.cu: compile with -DDTYPE=f16, bf16 or f32"
#elif GK_DT(DTYPE) == 1
typedef gk_f16 pa_dtype;
#elif GK_DT(DTYPE) == 2
typedef gk_f32 pa_dtype;
#elif GK_DT(DTYPE) == 3
typedef gk_bf16 pa_dtype;
#else
#error "kv_append.cu: DTYPE must be f16, bf16 or f32"
#endif

extern "C" GK_KERNEL void __launch_bounds__(KV_THREADS)
kv_append(const void *k_new, const void *v_new, void *k_pool, void *v_pool,
          const int32_t *block_table, const int32_t *seq_lens, int64_t n_seqs,
          int64_t n_kv_heads, int64_t sq, int64_t max_pages, int64_t n_pages) {
  gk_kv_append<pa_dtype, HEAD_DIM, PAGE>(k_new, v_new, k_pool, v_pool, block_table, seq_lens,
                                        n_seqs, n_kv_heads, sq, max_pages, n_pages);
}
