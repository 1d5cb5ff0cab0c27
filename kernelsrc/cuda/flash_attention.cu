/*
 * flash_attention.cu - the cuda/rocm entry point of flash_attention
 * (docs/kernels.md), one image per variant: -DCAUSAL=0|1, -DDTYPE=f16|bf16|f32,
 * -DHEAD_DIM=64|128. The body is flash_attention.cuh.
 */
#include "flash_attention.cuh"

/* DTYPE is a bare word (f16, bf16, f32): map it to a number the
 * preprocessor can test, without defining macros named f16 or f32. */
#define GK_DT_f16 1
#define GK_DT_f32 2
#define GK_DT_bf16 3
#define GK_DT_(x) GK_DT_##x
#define GK_DT(x) GK_DT_(x)

#if !defined(CAUSAL) || (CAUSAL != 0 && CAUSAL != 1)
#error "flash_attention.cu: compile with -DCAUSAL=0 or 1"
#endif
#if !defined(HEAD_DIM) || (HEAD_DIM != 64 && HEAD_DIM != 128)
#error "flash_attention.cu: compile with -DHEAD_DIM=64 or 128"
#endif
#if !defined(DTYPE)
#error "flash_attention.cu: compile with -DDTYPE=f16, bf16 or f32"
#elif GK_DT(DTYPE) == 1
typedef gk_f16 fa_dtype;
#elif GK_DT(DTYPE) == 2
typedef gk_f32 fa_dtype;
#elif GK_DT(DTYPE) == 3
typedef gk_bf16 fa_dtype;
#else
#error "flash_attention.cu: DTYPE must be f16, bf16 or f32"
#endif

extern "C" GK_KERNEL void __launch_bounds__(FA_MAX_THREADS, FA_MIN_BLOCKS)
flash_attention(const void *q, const void *k, const void *v, void *o, int64_t n_heads,
                int64_t n_kv_heads, int64_t sq, int64_t skv, float scale, void *ws,
                int64_t ws_bytes) {
  gk_flash_attention<CAUSAL, fa_dtype, HEAD_DIM>(q, k, v, o, n_heads, n_kv_heads, sq, skv,
                                                scale, ws, ws_bytes);
}
