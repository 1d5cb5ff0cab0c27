/*
 * gk_kernels.h - the C signatures of the kernel set's CPU entry points: what
 * to cast gk_module_symbol()'s address to (gk.h includes this header; a
 * program includes gk.h). Each comment gives the ABI's contract; the exact
 * semantics of each kernel are in docs/kernels.md, the weight formats in
 * docs/weights.md. Types only: nothing here is a libgk function.
 */
#ifndef GK_KERNELS_H
#define GK_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CPU ABI of the quantized matmul (kernel "qmatmul", variant "bits=N"):
 * y[i*n + j] = sum_t x[i*k + t] * W[j][t] for i < m, j < n, with W in the
 * block format of docs/weights.md (k a multiple of 32). The image splits a
 * call over its own persistent threads (all CPUs of the process, or
 * GK_NUM_THREADS; docs/kernels.md "CPU images"); y is the same whatever
 * the thread count. Calls from several threads at once are safe. */
typedef void (*gk_qmatmul_fn)(const float *x, const void *w, float *y,
                              int64_t m, int64_t n, int64_t k);

/* The same image's faster path takes W in its packed layout (docs/weights.md,
 * "Packed layout": the same bytes rearranged, scales apart from codes).
 * Entry "qmatmul_repack" (gk_qmatmul_repack_fn) rewrites an n x k matrix W
 * into it at `out` (out == w: in place; no other overlap), once per weight
 * matrix; it returns 0, or -1 (nothing written) for a NULL pointer, a
 * negative n or k, or no memory for its one-row buffer (in place). Entry
 * "qmatmul_packed" (gk_qmatmul_fn) then computes exactly what "qmatmul"
 * computes on the original W, bit for bit. The layout depends only on BITS:
 * a matrix packed by any level's image is read by every level's. Entry
 * "qmatmul_q8x" (gk_qmatmul_fn) also reads the packed W but rounds x to
 * int8 per block of 32 first (integer products, as ggml's q8 activations):
 * faster, not qmatmul's y; its exact arithmetic is in docs/weights.md
 * ("int8 x"), the same bits on every level. */
typedef int (*gk_qmatmul_repack_fn)(const void *w, void *out, int64_t n,
                                    int64_t k);

/* CPU ABIs of the rest of the kernel set; the exact semantics of each are
 * in docs/kernels.md. Single-threaded, reentrant (no global state, no heap),
 * and they write only their outputs.
 * flash_attention, variant "causal=C,dtype=T,head_dim=D": q, o are
 * [n_heads][sq][D], k, v [n_kv_heads][skv][D], all f16 (uint16_t bits) or
 * f32 as the variant says. */
typedef void (*gk_flash_attention_fn)(const void *q, const void *k,
                                      const void *v, void *o, int64_t n_heads,
                                      int64_t n_kv_heads, int64_t sq,
                                      int64_t skv, float scale);
/* paged_attention and kv_append, variant "dtype=T,head_dim=D,page=P" (one
 * recipe; load both with the same variant): a paged KV cache, k_pool and
 * v_pool [n_pages][n_kv_heads][P][D]; sequence s's token j is slot j % P of
 * page block_table[s * max_pages + j / P]; its length is seq_lens[s], and
 * the sq query (or new) rows are its last sq tokens. q, o are
 * [n_seqs][n_heads][sq][D]; k_new, v_new [n_seqs][n_kv_heads][sq][D].
 * paged_attention is causal (bottom-right) and writes every row of o: an
 * invalid sequence (see gk_paged_check in gk.h) gets NaN rows and is never read out
 * of bounds. kv_append writes the rows at positions seq_lens[s] - sq + i
 * (the caller counts the new tokens in seq_lens first) and skips an invalid
 * sequence or one with seq_lens[s] < sq. */
typedef void (*gk_paged_attention_fn)(const void *q, const void *k_pool,
                                      const void *v_pool,
                                      const int32_t *block_table,
                                      const int32_t *seq_lens, void *o,
                                      int64_t n_seqs, int64_t n_heads,
                                      int64_t n_kv_heads, int64_t sq,
                                      int64_t max_pages, int64_t n_pages,
                                      float scale);
typedef void (*gk_kv_append_fn)(const void *k_new, const void *v_new,
                                void *k_pool, void *v_pool,
                                const int32_t *block_table,
                                const int32_t *seq_lens, int64_t n_seqs,
                                int64_t n_kv_heads, int64_t sq,
                                int64_t max_pages, int64_t n_pages);
/* rmsnorm (no variant): y may be x. */
typedef void (*gk_rmsnorm_fn)(const float *x, const float *w, float *y,
                              int64_t rows, int64_t dim, float eps);
/* rope (no variant): in place on x [n_tokens][n_heads][head_dim]. */
typedef void (*gk_rope_fn)(float *x, const int32_t *pos, int64_t n_tokens,
                           int64_t n_heads, int64_t head_dim, float theta_base);
/* argmax (no variant). */
typedef void (*gk_argmax_fn)(const float *x, int32_t *out, int64_t rows,
                             int64_t n);
/* sample (no variant): u[r] uniform in [0, 1) from the caller, one per row. */
typedef void (*gk_sample_fn)(const float *logits, const float *u, int32_t *out,
                             int64_t rows, int64_t n, float temperature,
                             int32_t top_k, float top_p);

#ifdef __cplusplus
}
#endif
#endif /* GK_KERNELS_H */
