/*
 * flash_attention.c - attention with an online softmax over key tiles
 * (docs/kernels.md): for query row i of head h, with hk = h / (n_heads /
 * n_kv_heads),
 *   s_j = scale * dot(q[h][i], k[hk][j]),  allowed(j) = !causal || j <= i + skv - sq
 *   o[h][i] = sum over allowed j of softmax(s)_j * v[hk][j]
 * q, o: [n_heads][sq][D]; k, v: [n_kv_heads][skv][D]; all of DTYPE.
 *
 * One source, built once per (CAUSAL, DTYPE, HEAD_DIM, x86-64 level) by the
 * cpu recipe with -DCAUSAL=0|1 -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128 (the
 * recipe engine passes string values as bare tokens: -DDTYPE=f16).
 *
 * The algorithm. The query rows that share a key/value head are contiguous
 * in q (heads hk*G .. hk*G+G-1, G = n_heads / n_kv_heads), so they are
 * taken as one list of G*sq rows and cut into blocks of BQ rows. A block
 * walks the keys in tiles of BK; each row keeps a running maximum m, a
 * running sum l of exp(s - m) and an accumulator acc = sum exp(s - m) v,
 * all f32. For a tile, with t = the tile's largest allowed score:
 *   m' = max(m, t),  c = exp(m - m'),  p_j = exp(s_j - m')
 *   l' = l c + sum p_j,  acc' = acc c + sum p_j v_j
 * and at the end o = acc / l, rounded to DTYPE once (zeros when the row
 * allowed no key). No more than BK scores of a row exist at any time: the
 * sq x skv matrix is never formed. Tiles past every row's last allowed key
 * (causal) are not visited at all.
 *
 * Where the time goes. For f16 and bf16 a tile of k and v is converted to
 * f32 once per block (f16: F16C on x86-64-v3 and v4, gk_quant.h below;
 * bf16: a widening shift on every level) and used by all
 * BQ rows, so with grouped-query attention a decode step converts each key
 * once for all G heads. Scores take KB keys at a time (KB independent FMA
 * chains sharing each load of q); the accumulator of a row is held in
 * registers in chunks of at most 8 vectors while a tile's values are added.
 *
 * No heap, no global state: all scratch is on the stack of the call (about
 * 50 KB for f16 and bf16 at HEAD_DIM 128, 17 KB for f32), so concurrent calls are
 * safe; a thread running it needs that much stack.
 */
#if !defined(CAUSAL) || (CAUSAL != 0 && CAUSAL != 1)
#error "flash_attention.c: compile with -DCAUSAL=0 or 1"
#endif
/* elem, D, BK, BQ and the block of rows (blk_*): the arithmetic
 * paged_attention shares. */
#include "attn_tile.h"

/*
 * nr (1..BQ) consecutive query rows of one key/value head, the first being
 * row r0 of the head group's G*sq rows (so its query index is r0 % sq).
 */
static void attend_block(const elem *q, const elem *kh, const elem *vh,
                         elem *o, int64_t r0, int nr, int64_t sq,
                         int64_t skv, float scale) {
  blk b;
  blk_begin(&b, q, nr, r0, sq, skv, CAUSAL, scale);
#if !IS_F32
  _Alignas(64) float kt[BK * D];
  _Alignas(64) float vt[BK * D];
#endif
  for (int64_t j0 = 0; j0 < b.kend; j0 += BK) {
    const int nt = (int)(b.kend - j0 < BK ? b.kend - j0 : BK);
#if !IS_F32
    to_f32(kt, kh + j0 * D, nt * D, 1.0f);
    to_f32(vt, vh + j0 * D, nt * D, 1.0f);
    blk_tile(&b, j0, nt, kt, vt);
#else
    blk_tile(&b, j0, nt, kh + j0 * D, vh + j0 * D);
#endif
  }
  blk_end(&b, o);
}

/*
 * The entry point (gk.h gk_flash_attention_fn). Nothing is done when a
 * count is negative, n_heads or n_kv_heads is not positive, or n_heads is
 * not a multiple of n_kv_heads; skv == 0 gives zeros.
 */
GK_KERNEL_EXPORT void flash_attention(const void *q, const void *k, const void *v,
                                      void *o, int64_t n_heads, int64_t n_kv_heads,
                                      int64_t sq, int64_t skv, float scale) {
  if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || sq <= 0 ||
      skv < 0)
    return;
  const int64_t g = n_heads / n_kv_heads;
  const int64_t rows = g * sq; /* query rows per key/value head */
  for (int64_t hk = 0; hk < n_kv_heads; hk++) {
    const elem *qg = (const elem *)q + hk * rows * D;
    elem *og = (elem *)o + hk * rows * D;
    const elem *kh = (const elem *)k + hk * skv * D;
    const elem *vh = (const elem *)v + hk * skv * D;
    for (int64_t r0 = 0; r0 < rows; r0 += BQ) {
      const int nr = (int)(rows - r0 < BQ ? rows - r0 : BQ);
      attend_block(qg + r0 * D, kh, vh, og + r0 * D, r0, nr, sq, skv, scale);
    }
  }
}
