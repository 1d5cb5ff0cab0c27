/*
 * paged_attention.c - attention over a paged KV cache (docs/kernels.md):
 * for sequence s of length L = seq_lens[s], head h (KV head hk = h /
 * (n_heads / n_kv_heads)) and query row i < sq (the last sq of its L
 * tokens),
 *   allowed(j) = j < L && j <= i + (L - sq)        (causal, bottom-right)
 *   key j      = slot j % P of page block_table[s][j / P] of the pools
 *   o[s][h][i] = sum over allowed j of softmax(scale * q.k)_j v_j
 * q, o: [n_seqs][n_heads][sq][D]; k_pool, v_pool: [n_pages][n_kv_heads][P]
 * [D]; all of DTYPE. An invalid sequence (a length below 0 or past the
 * table, or a page id outside the pool among the pages its length uses)
 * gets NaN rows and its pages are never read.
 *
 * One source, built per (DTYPE, HEAD_DIM, PAGE, x86-64 level) by the cpu
 * recipe with -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128 -DPAGE=16|64.
 *
 * The arithmetic of a row is flash_attention's (attn_tile.h): the online
 * softmax over tiles of BK = 32 keys in f32, rounded to DTYPE once, so
 * paged and contiguous K/V give the same bits for the same keys. Only the
 * tile's keys come from pages: the G*sq query rows that share a KV head
 * are taken in blocks of BQ, and each tile of keys is gathered once per
 * block (f16, bf16: converted to f32 while gathered; f32 with 64-token
 * pages: a tile lies inside one page and is read in place). Like
 * flash_attention it runs on the caller's thread with all scratch on the
 * stack (about 50 KB for f16 and bf16 at HEAD_DIM 128).
 */
#if !defined(PAGE) || (PAGE != 16 && PAGE != 64)
#error "paged_attention.c: compile with -DPAGE=16 or 64"
#endif
/* elem, D, BK, BQ, to_f32 and the block of rows (blk_*): flash_attention's
 * arithmetic. */
#include "attn_tile.h"
#include "../common/gk_paged.h"

#define P PAGE
/* A tile starts at a multiple of BK: with P a multiple of BK it never
 * spans two pages and f32 keys can be used where they lie. */
#define IN_PLACE (IS_F32 && P % BK == 0)

/* The key/value pools of one KV head, as a sequence's table sees them. */
typedef struct pages {
  const elem *k, *v;    /* pool bases */
  const int32_t *bt;    /* the sequence's table row */
  int64_t page_stride;  /* elements per page: n_kv_heads * P * D */
  int64_t head_off;     /* hk * P * D */
} pages;

/* Element offset of the row of key position j (its page is valid). */
static inline int64_t key_at(const pages *pg, int64_t j) {
  return (int64_t)pg->bt[j / P] * pg->page_stride + pg->head_off + (j % P) * D;
}

/*
 * nr (1..BQ) consecutive query rows of one (sequence, KV head), the first
 * being row r0 of its G*sq rows (query index r0 % sq); len keys.
 */
static void attend_block(const elem *q, const pages *pg, elem *o, int64_t r0,
                         int nr, int64_t sq, int64_t len, float scale) {
  /* Query i is token len - sq + i: it sees keys j <= i + len - sq. */
  blk b;
  blk_begin(&b, q, nr, r0, sq, len, 1, scale);

#if !IN_PLACE
  _Alignas(64) float kt[BK * D];
  _Alignas(64) float vt[BK * D];
#endif
  for (int64_t j0 = 0; j0 < b.kend; j0 += BK) {
    const int nt = (int)(b.kend - j0 < BK ? b.kend - j0 : BK);
#if IN_PLACE
    blk_tile(&b, j0, nt, pg->k + key_at(pg, j0), pg->v + key_at(pg, j0));
#else
    /* Runs of consecutive slots of one page, each converted (f16, bf16) or
     * copied (f32, 16-token pages) into the tile. */
    for (int u = 0; u < nt;) {
      const int64_t j = j0 + u, at = key_at(pg, j);
      int run = (int)(P - j % P);
      run = run < nt - u ? run : nt - u;
#if !IS_F32
      to_f32(kt + u * D, pg->k + at, run * D, 1.0f);
      to_f32(vt + u * D, pg->v + at, run * D, 1.0f);
#else
      for (int e = 0; e < run * D; e += GK_VL) {
        vf_store(kt + u * D + e, vf_load(pg->k + at + e));
        vf_store(vt + u * D + e, vf_load(pg->v + at + e));
      }
#endif
      u += run;
    }
    blk_tile(&b, j0, nt, kt, vt);
#endif
  }
  blk_end(&b, o);
}

/*
 * The entry point (gk.h gk_paged_attention_fn). Nothing is done when
 * n_seqs, n_heads, n_kv_heads or sq is not positive, n_heads is not a
 * multiple of n_kv_heads, or max_pages or n_pages is negative.
 */
GK_KERNEL_EXPORT void paged_attention(const void *q, const void *k_pool,
                                      const void *v_pool, const int32_t *block_table,
                                      const int32_t *seq_lens, void *o, int64_t n_seqs,
                                      int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                                      int64_t max_pages, int64_t n_pages, float scale) {
  if (n_seqs <= 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 ||
      sq <= 0 || max_pages < 0 || n_pages < 0)
    return;
  const int64_t g = n_heads / n_kv_heads;
  const int64_t rows = g * sq; /* query rows per KV head */
  const int64_t seq_elems = n_heads * sq * D;
  for (int64_t s = 0; s < n_seqs; s++) {
    const int32_t *bt = block_table + s * max_pages;
    const int32_t len = seq_lens[s];
    elem *os = (elem *)o + s * seq_elems;
    if (!gk_paged_seq_ok(bt, len, P, max_pages, n_pages)) {
      /* Quiet NaN, every row of the sequence: visibly not an answer (f32
       * 0x7fc00000, f16 0x7e00, bf16 0x7fc0). */
      for (int64_t e = 0; e < seq_elems; e++)
        os[e] = ELEM_QNAN;
      continue;
    }
    const elem *qs = (const elem *)q + s * seq_elems;
    for (int64_t hk = 0; hk < n_kv_heads; hk++) {
      const pages pg = {(const elem *)k_pool, (const elem *)v_pool, bt,
                        n_kv_heads * P * D, hk * P * D};
      for (int64_t r0 = 0; r0 < rows; r0 += BQ) {
        const int nr = (int)(rows - r0 < BQ ? rows - r0 : BQ);
        attend_block(qs + (hk * rows + r0) * D, &pg, os + (hk * rows + r0) * D, r0, nr,
                     sq, len, scale);
      }
    }
  }
}
