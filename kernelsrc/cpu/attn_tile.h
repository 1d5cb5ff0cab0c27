/*
 * attn_tile.h - the f32 arithmetic of one query row against one tile of
 * keys, shared by the attention kernels (flash_attention.c,
 * paged_attention.c), so that both compute a row the same way: scores of
 * BK keys, the online-softmax update and the weighted sum of the values.
 *
 * The includer compiles with -DDTYPE=f16|bf16|f32 and -DHEAD_DIM=64|128
 * (the recipe engine passes string values as bare tokens: -DDTYPE=f16) and
 * gets `elem` (the tensors' element type), IS_F32 (1 when elements are
 * f32 and can be used where they lie; f16 and bf16 are converted), D, BK
 * and these functions:
 *   to_f32    n elements of DTYPE as f32 times a factor (k, v tiles; q
 *             pre-multiplied by scale)
 *   row_tile  one row against the first nv (1..BK) keys of a tile held as
 *             f32 rows of D: with t = the tile's largest score,
 *               m' = max(m, t),  c = exp(m - m'),  p_j = exp(s_j - m')
 *               l' = l c + sum p_j,  acc' = acc c + sum p_j v_j
 *   row_out   o = acc / l (zeros when the row allowed no key), rounded once
 * and, over them, a block of BQ query rows that share each tile of keys:
 *   blk_begin q rows in f32 (times scale), their states, and how many keys
 *             each may see
 *   blk_tile  every row of the block against one tile (row_tile)
 *   blk_end   their rows of o (row_out)
 * The includer walks the tiles in between and says where each tile's f32
 * keys and values lie (flash_attention: converted or in place; paged:
 * gathered from pages).
 */
#ifndef GK_ATTN_TILE_H
#define GK_ATTN_TILE_H

#include "gk_cpu.h"

#if !defined(HEAD_DIM) || (HEAD_DIM != 64 && HEAD_DIM != 128)
#error "compile with -DHEAD_DIM=64 or 128"
#endif

/* DTYPE is a bare token (f16, bf16 or f32): paste it onto a prefix to test
 * it. vf_load_e and vf_store_e move GK_VL elements of DTYPE as f32 (the
 * 16-bit types converted exactly on the way in, rounded to nearest even on
 * the way out). */
#define FA_DTYPE_f16 1
#define FA_DTYPE_f32 2
#define FA_DTYPE_bf16 3
#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b) FA_CAT2(a, b)
#if !defined(DTYPE)
#error "compile with -DDTYPE=f16, bf16 or f32"
#elif FA_CAT(FA_DTYPE_, DTYPE) == 1
#define IS_F32 0
typedef uint16_t elem;
#define vf_load_e vf_load_h
#define vf_store_e vf_store_h
#define ELEM_QNAN 0x7e00 /* paged_attention's rows of an invalid sequence */
#elif FA_CAT(FA_DTYPE_, DTYPE) == 3
#define IS_F32 0
typedef uint16_t elem;
#define vf_load_e vf_load_b
#define vf_store_e vf_store_b
#define ELEM_QNAN 0x7fc0
#elif FA_CAT(FA_DTYPE_, DTYPE) == 2
#define IS_F32 1
typedef float elem;
#define vf_load_e vf_load
#define vf_store_e vf_store
#define ELEM_QNAN __builtin_nanf("")
#else
#error "DTYPE must be f16, bf16 or f32"
#endif

#define D HEAD_DIM
#define NVD (D / GK_VL) /* vectors per row */
#define BK 32           /* keys per tile: a multiple of every GK_VL */
#define KB 8            /* keys per score step */
/* Accumulator vectors held in registers at once: 8 leaves room for the
 * broadcast weight and the loaded values in 16 registers (xmm, ymm). */
#define ACC_CHUNK (NVD < 8 ? NVD : 8)

/* n elements of DTYPE from `src`, as f32 times `mul` (n a multiple of
 * GK_VL). */
static inline void to_f32(float *restrict dst, const elem *restrict src, int n,
                          float mul) {
  const vf vm = vf_set1(mul);
  for (int d = 0; d < n; d += GK_VL)
    vf_store(dst + d, vf_mul(vf_load_e(src + d), vm));
}

/* s[0..KB) = dot(q, key j) for the KB keys at kp (D floats apart). */
static inline void dot_kb(const float *restrict q, const float *restrict kp,
                          float *restrict s) {
  vf a[KB];
  for (int j = 0; j < KB; j++)
    a[j] = vf_zero();
  for (int v = 0; v < NVD; v++) {
    const vf qv = vf_load(q + v * GK_VL);
    for (int j = 0; j < KB; j++)
      a[j] = vf_fma(qv, vf_load(kp + j * D + v * GK_VL), a[j]);
  }
  for (int j = 0; j < KB; j++)
    s[j] = vf_hsum(a[j]);
}

static inline float dot1(const float *restrict q, const float *restrict kp) {
  vf a = vf_zero(), b = vf_zero();
  int v = 0;
  for (; v + 2 <= NVD; v += 2) {
    a = vf_fma(vf_load(q + v * GK_VL), vf_load(kp + v * GK_VL), a);
    b = vf_fma(vf_load(q + (v + 1) * GK_VL), vf_load(kp + (v + 1) * GK_VL), b);
  }
  for (; v < NVD; v++)
    a = vf_fma(vf_load(q + v * GK_VL), vf_load(kp + v * GK_VL), a);
  return vf_hsum(vf_add(a, b));
}

/* The running state of one query row. */
typedef struct row {
  float m; /* largest score so far (-inf before any key) */
  float l; /* sum of exp(s - m) so far */
} row;

/*
 * One row against the first nv (1..BK) keys of a tile: kp and vp hold the
 * tile's keys and values as f32 rows of D; q is pre-multiplied by scale.
 */
static void row_tile(const float *restrict q, const float *restrict kp,
                     const float *restrict vp, int nv, row *st,
                     float *restrict acc) {
  _Alignas(64) float s[BK];
  int j = 0;
  for (; j + KB <= nv; j += KB)
    dot_kb(q, kp + j * D, s + j);
  for (; j < nv; j++)
    s[j] = dot1(q, kp + j * D);
  /* Keys past nv weigh exp(-inf) = 0, so the exp runs over whole vectors. */
  for (; j < BK; j++)
    s[j] = -__builtin_inff();

  vf vmax = vf_load(s);
  for (int u = GK_VL; u < BK; u += GK_VL)
    vmax = vf_max(vf_load(s + u), vmax);
  const float tmax = vf_hmax(vmax);
  const float m = st->m > tmax ? st->m : tmax;
  /* First tile: m was -inf, c = 0 and acc (zeros) stays zeros. */
  const float c = gk_expf(st->m - m);
  const vf vmm = vf_set1(m);
  vf vsum = vf_zero();
  for (int u = 0; u < BK; u += GK_VL) {
    const vf p = vf_exp(vf_sub(vf_load(s + u), vmm));
    vf_store(s + u, p);
    vsum = vf_add(vsum, p);
  }
  st->l = st->l * c + vf_hsum(vsum);
  st->m = m;

  const vf vc = vf_set1(c);
  for (int d0 = 0; d0 < NVD; d0 += ACC_CHUNK) {
    vf a[ACC_CHUNK];
    for (int u = 0; u < ACC_CHUNK; u++)
      a[u] = vf_mul(vf_load(acc + (d0 + u) * GK_VL), vc);
    for (int jj = 0; jj < nv; jj++) {
      const vf p = vf_set1(s[jj]);
      const float *vr = vp + jj * D + d0 * GK_VL;
      for (int u = 0; u < ACC_CHUNK; u++)
        a[u] = vf_fma(p, vf_load(vr + u * GK_VL), a[u]);
    }
    for (int u = 0; u < ACC_CHUNK; u++)
      vf_store(acc + (d0 + u) * GK_VL, a[u]);
  }
}

/* o = acc / l rounded to DTYPE once; zeros when the row allowed no key (l
 * > 0 once any key was allowed: the largest weighs exp(0) = 1). */
static inline void row_out(elem *restrict orow, const float *restrict acc,
                           float l) {
  const vf vinv = vf_set1(l > 0.0f ? 1.0f / l : 0.0f);
  for (int d = 0; d < D; d += GK_VL) {
    vf_store_e(orow + d, vf_mul(vf_load(acc + d), vinv));
  }
}

#define BQ 16 /* query rows sharing one tile of keys */

/* A block of nr (1..BQ) query rows of one key/value head: all f32 scratch
 * of an attention call (about 16 KB at HEAD_DIM 128), on the caller's
 * stack. */
typedef struct blk {
  _Alignas(64) float qf[BQ][D];
  _Alignas(64) float acc[BQ][D];
  row st[BQ];
  int64_t nallow[BQ]; /* row r sees keys 0 .. nallow[r] - 1 */
  int64_t kend;       /* the largest nallow: tiles past it are not visited */
  int nr;
} blk;

/*
 * Starts a block: rows q[0 .. nr) (row r is query (r0 + r) % sq of its
 * head: the G*sq rows of the heads that share a KV head are taken as one
 * list) against skv keys. Causal is bottom-right aligned: query i sees
 * keys j <= i + skv - sq.
 */
static inline void blk_begin(blk *b, const elem *q, int nr, int64_t r0, int64_t sq,
                             int64_t skv, int causal, float scale) {
  b->nr = nr;
  b->kend = 0;
  for (int r = 0; r < nr; r++) {
    to_f32(b->qf[r], q + (int64_t)r * D, D, scale);
    for (int d = 0; d < D; d++)
      b->acc[r][d] = 0.0f;
    b->st[r].m = -__builtin_inff();
    b->st[r].l = 0.0f;
    int64_t n = skv;
    if (causal) {
      const int64_t lim = (r0 + r) % sq + skv - sq + 1;
      n = lim < 0 ? 0 : lim > skv ? skv : lim;
    }
    b->nallow[r] = n;
    b->kend = n > b->kend ? n : b->kend;
  }
}

/* Every row of the block against keys j0 .. j0 + nt - 1, held as f32 rows
 * of D at kp and vp. */
static inline void blk_tile(blk *b, int64_t j0, int nt, const float *kp, const float *vp) {
  for (int r = 0; r < b->nr; r++) {
    const int64_t left = b->nallow[r] - j0;
    if (left <= 0)
      continue;
    row_tile(b->qf[r], kp, vp, left < nt ? (int)left : nt, &b->st[r], b->acc[r]);
  }
}

/* The block's rows of o (o[0 .. nr)). */
static inline void blk_end(const blk *b, elem *o) {
  for (int r = 0; r < b->nr; r++)
    row_out(o + (int64_t)r * D, b->acc[r], b->st[r].l);
}

#endif /* GK_ATTN_TILE_H */
