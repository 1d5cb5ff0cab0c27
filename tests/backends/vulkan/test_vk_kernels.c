/*
 * test_vk_kernels.c ARCHIVE - every vulkan kernel x variant of a real
 * archive, selected, verified and loaded by libgk onto a real Vulkan device
 * (here Mesa's lavapipe, which runs SPIR-V on the CPU), dispatched through
 * gk_vulkan.h's helper, and compared with the scalar references of
 * tests/common (qref.h, kref.h).
 *
 * SKIP (77) when the archive has no vulkan image (its toolchain was
 * absent) or no Vulkan device exists, saying which. Exits 1 after the first
 * bad element of each failing case. Tolerances, and why, are next to each
 * kernel's cases.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"
#include "gk_vulkan.h"
#include "kref.h"
#include "qref.h"

static gk_archive *ar;
static gk_vk *vk;
static int failures, cases;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL: " __VA_ARGS__);                                            \
      printf("\n");                                                            \
      failures++;                                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

/* A buffer holding `size` bytes copied from src (NULL: zeros). Exits on
 * failure: nothing can be tested without buffers. */
static gk_vk_buffer *buf(const void *src, size_t size) {
  gk_vk_buffer *b;
  if (size == 0) size = 4;
  if (gk_vk_buffer_create(vk, size, &b) != GK_OK) {
    printf("FAIL: gk_vk_buffer_create(%zu): %s\n", size, gk_vk_errmsg(vk));
    exit(1);
  }
  if (src)
    memcpy(gk_vk_buffer_map(b), src, size);
  else
    memset(gk_vk_buffer_map(b), 0, size);
  return b;
}

static gk_module *load(const char *kernel, const char *variant) {
  gk_module *m;
  if (gk_vk_module_load(ar, vk, kernel, variant, 0, &m) != GK_OK) {
    printf("FAIL: load '%s' %s: %s\n", kernel, variant, gk_archive_errmsg(ar));
    failures++;
    return NULL;
  }
  return m;
}

static int run(gk_module *m, const char *entry, gk_vk_buffer **b, size_t nb,
               const void *push, size_t push_size, uint32_t gx, uint32_t gy) {
  uint32_t g[3] = {gx, gy, 1};
  int rc = gk_vk_dispatch(m, entry, b, nb, push, push_size, g);
  if (rc != GK_OK) printf("FAIL: dispatch %s: %s\n", entry, gk_vk_errmsg(vk));
  return rc;
}

/* ---- qmatmul ------------------------------------------------------------ */

/* Tolerance: the reference is exact (double); the kernel forms each weight
 * with one fma and adds k/8 products per lane, then 8 lanes in a tree, so
 * its error is a small multiple of 2^-24 * sum_t |x_t w_t| (the CPU kernel's
 * bound, 1e-5 of that sum, is kept: measured here below 1e-7). */
static void qmatmul_case(gk_module *m, int bits, int64_t M, int64_t N, int64_t K,
                         uint32_t gx) {
  qref_rng r;
  qref_seed(&r, (uint64_t)(bits * 1000003 + M * 7919 + N * 31 + K));
  size_t wb = qref_w_bytes(bits, N, K);
  float *x = malloc((size_t)(M * K) * sizeof *x);
  unsigned char *w = malloc(wb);
  double *y = malloc((size_t)(M * N) * sizeof *y), *mag = malloc((size_t)(M * N) * sizeof *mag);
  qref_fill_x(&r, x, (size_t)(M * K));
  qref_fill_w(&r, bits, N, K, w);
  qref_matmul(bits, x, w, M, N, K, y, mag);
  /* One extra float after y: the kernel must not write past m*n. */
  gk_vk_buffer *b[3] = {buf(x, (size_t)(M * K) * 4), buf(w, wb), buf(NULL, (size_t)(M * N + 1) * 4)};
  float *gy = gk_vk_buffer_map(b[2]);
  gy[M * N] = 12345.0f;
  uint32_t push[3] = {(uint32_t)M, (uint32_t)N, (uint32_t)K};
  cases++;
  if (run(m, "qmatmul", b, 3, push, sizeof push, gx, (uint32_t)M) != GK_OK) {
    failures++;
  } else {
    for (int64_t i = 0; i < M * N; i++) {
      double err = fabs(gy[i] - y[i]), tol = 1e-5 * mag[i] + 1e-30;
      if (!(err <= tol)) {
        printf("FAIL: qmatmul bits=%d m=%lld n=%lld k=%lld groups.x=%u: y[%lld] = %.9g, "
               "expected %.9g (error %.3g, tolerance %.3g)\n",
               bits, (long long)M, (long long)N, (long long)K, gx, (long long)i, gy[i], y[i],
               err, tol);
        failures++;
        break;
      }
    }
    if (gy[M * N] != 12345.0f) {
      printf("FAIL: qmatmul bits=%d wrote past y\n", bits);
      failures++;
    }
  }
  for (int i = 0; i < 3; i++) gk_vk_buffer_destroy(b[i]);
  free(x), free(w), free(y), free(mag);
}

static void test_qmatmul(void) {
  static const int64_t shapes[][3] = {{1, 1, 32},   {1, 37, 64},    {3, 17, 256},
                                      {2, 5, 32},   {5, 129, 1024}, {1, 300, 4128},
                                      {4, 9, 8224}, {1, 4096, 4096}};
  for (int bits = 1; bits <= 8; bits *= 2) {
    char variant[16];
    snprintf(variant, sizeof variant, "bits=%d", bits);
    gk_module *m = load("qmatmul", variant);
    if (!m) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      int64_t n = shapes[s][1];
      qmatmul_case(m, bits, shapes[s][0], n, shapes[s][2], (uint32_t)((n + 7) / 8));
    }
    /* Fewer groups than rows: the kernel's loops must cover the rest. */
    qmatmul_case(m, bits, 3, 77, 256, 2);
    gk_module_unload(m);
  }
}

/* ---- flash_attention ------------------------------------------------------ */

/* Tolerance. Scores are f32 dot products (D terms), weights f32 exp
 * (Vulkan: within 3 + 2|x| ulp), sums in f32: on data in [-1, 1) the
 * output (a convex combination of v rows, |o| <= 1) is off by a few 1e-7.
 * f32 outputs: 1e-5 absolute. f16 and bf16 outputs are rounded once from
 * f32, so a value near a rounding boundary may round the other way: one ulp
 * of the dtype plus the f32 error (f16 2^-10 relative, 2^-24 for
 * subnormals; bf16 2^-7 relative, as kref_attention_tolerance says: it
 * keeps f32's exponent range, so no subnormal is reached here). */
static void attn_tolerance(kref_dtype dt, double *atol, double *rtol) {
  *atol = dt == KREF_F16 ? 1e-5 + 5.9604644775390625e-8 : 1e-5;
  *rtol = dt == KREF_F16 ? 0x1p-10 : dt == KREF_BF16 ? 0x1p-7 : 0;
}

/* bf16's o is the f32 arithmetic rounded once to nearest even, which the
 * tolerance above (one bf16 ulp) cannot tell from truncation: so o is also
 * compared with the f32 variant's o on the same inputs (widened exactly),
 * rounded here. Both are one driver's code for the same operations, but it
 * may fuse or order them differently, so an f32 value within 16 f32 ulps
 * of the midpoint between two bf16 values may round either way. */
static void bf16_rounding_case(gk_module *m32, const char *what, const void *q, const void *k,
                               const void *v, const uint16_t *got, int64_t H, int64_t HK,
                               int64_t SQ, int64_t SKV, float scale, size_t nq, size_t nk) {
  float *w = malloc((2 * nq + 2 * nk + 1) * sizeof *w);
  float *qf = w, *kf = qf + nq, *vf = kf + nk;
  for (size_t i = 0; i < nq; i++) qf[i] = (float)kref_get(KREF_BF16, q, i);
  for (size_t i = 0; i < nk; i++) {
    kf[i] = (float)kref_get(KREF_BF16, k, i);
    vf[i] = (float)kref_get(KREF_BF16, v, i);
  }
  gk_vk_buffer *b[4] = {buf(qf, nq * 4), buf(kf, nk * 4), buf(vf, nk * 4), buf(NULL, nq * 4)};
  struct {
    uint32_t n_heads, n_kv_heads, sq, skv;
    float scale;
  } push = {(uint32_t)H, (uint32_t)HK, (uint32_t)SQ, (uint32_t)SKV, scale};
  cases++;
  if (run(m32, "flash_attention", b, 4, &push, sizeof push, (uint32_t)SQ, (uint32_t)H) != GK_OK) {
    failures++;
  } else {
    const float *o = gk_vk_buffer_map(b[3]);
    for (size_t i = 0; i < nq; i++) {
      uint32_t u;
      memcpy(&u, &o[i], 4);
      const uint32_t low = u & 0xffffu;
      const uint32_t off_tie = low > 0x8000u ? low - 0x8000u : 0x8000u - low;
      uint16_t want;
      kref_set(KREF_BF16, &want, 0, o[i]);
      if (got[i] != want && off_tie > 16u) {
        printf("FAIL: %s: o[%zu] = bf16 0x%04x, the f32 variant's 0x%08x rounded to nearest "
               "even is 0x%04x\n", what, i, got[i], u, want);
        failures++;
        break;
      }
    }
  }
  for (int i = 0; i < 4; i++) gk_vk_buffer_destroy(b[i]);
  free(w);
}

static void fa_case(gk_module *m, gk_module *m32, int causal, kref_dtype dt, int D, int64_t H,
                    int64_t HK, int64_t SQ, int64_t SKV) {
  qref_rng r;
  qref_seed(&r, (uint64_t)(causal * 7 + dt * 131 + D * 17 + H * 5 + SQ * 1009 + SKV));
  size_t es = kref_dtype_size(dt);
  size_t nq = (size_t)(H * SQ * D), nk = (size_t)(HK * SKV * D);
  void *q = malloc(nq * es + 4), *k = malloc(nk * es + 4), *v = malloc(nk * es + 4),
       *want = malloc(nq * es + 4);
  kref_fill(&r, dt, q, nq, -1, 1);
  kref_fill(&r, dt, k, nk, -1, 1);
  kref_fill(&r, dt, v, nk, -1, 1);
  float scale = (float)(1.0 / sqrt((double)D));
  cases++;
  if (ref_flash_attention(causal, dt, D, q, k, v, want, H, HK, SQ, SKV, scale) != 0) {
    printf("FAIL: ref_flash_attention refused its arguments\n");
    failures++;
    goto out;
  }
  gk_vk_buffer *b[4] = {buf(q, nq * es), buf(k, nk * es), buf(v, nk * es), buf(NULL, nq * es)};
  struct {
    uint32_t n_heads, n_kv_heads, sq, skv;
    float scale;
  } push = {(uint32_t)H, (uint32_t)HK, (uint32_t)SQ, (uint32_t)SKV, scale};
  if (run(m, "flash_attention", b, 4, &push, sizeof push, (uint32_t)SQ, (uint32_t)H) != GK_OK) {
    failures++;
  } else {
    char what[128];
    snprintf(what, sizeof what, "flash_attention causal=%d dtype=%s head_dim=%d h=%lld/%lld sq=%lld skv=%lld",
             causal, kref_dtype_name(dt), D, (long long)H, (long long)HK, (long long)SQ,
             (long long)SKV);
    double atol, rtol;
    attn_tolerance(dt, &atol, &rtol);
    failures += kref_check(what, dt, gk_vk_buffer_map(b[3]), want, (int64_t)nq, atol, rtol, NULL);
    if (m32)
      bf16_rounding_case(m32, what, q, k, v, gk_vk_buffer_map(b[3]), H, HK, SQ, SKV, scale, nq,
                         nk);
  }
  for (int i = 0; i < 4; i++) gk_vk_buffer_destroy(b[i]);
out:
  free(q), free(k), free(v), free(want);
}

static void test_flash_attention(void) {
  /* n_heads, n_kv_heads, sq, skv: grouped heads, decode (sq = 1), a square
   * causal block spanning tiles, sq > skv (causal rows with no key are
   * zeros), equal heads with skv past two tiles. */
  static const int64_t shapes[][4] = {
      {4, 2, 5, 37}, {4, 1, 1, 200}, {2, 2, 70, 70}, {2, 1, 9, 4}, {2, 2, 3, 130}};
  const kref_dtype dts[] = KREF_DTYPES;
  for (int causal = 0; causal <= 1; causal++)
    for (int dti = 0; dti < KREF_N_DTYPES; dti++)
      for (int D = 64; D <= 128; D *= 2) {
        kref_dtype dt = dts[dti];
        char variant[64];
        snprintf(variant, sizeof variant, "causal=%d,dtype=%s,head_dim=%d", causal,
                 kref_dtype_name(dt), D);
        gk_module *m = load("flash_attention", variant), *m32 = NULL;
        if (!m) continue;
        if (dt == KREF_BF16) {
          snprintf(variant, sizeof variant, "causal=%d,dtype=f32,head_dim=%d", causal, D);
          m32 = load("flash_attention", variant);
        }
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
          fa_case(m, m32, causal, dt, D, shapes[s][0], shapes[s][1], shapes[s][2],
                  shapes[s][3]);
        gk_module_unload(m);
        gk_module_unload(m32);
      }
}

/* ---- paged_attention, kv_append -------------------------------------------- */

/* Batches: a decode step (1 KV head for 4 heads; lengths 1, 0, past a page
 * and a 64-key tile), and a prefill chunk of 3 with GQA, a sequence shorter
 * than sq, and invalid sequences (negative length, a page id past the pool,
 * INT32_MAX) next to valid ones. Page tables in random order over a pool
 * with spare pages (kref_make_paged_table). */
typedef struct vk_pcase {
  int64_t n_seqs, n_heads, n_kv_heads, sq;
  int32_t lens[5];
  kref_paged_kind kind[5];
  uint32_t groups[3]; /* 0: as the launch row says (sq, n_heads, n_seqs) */
} vk_pcase;

static const vk_pcase vk_pcases[] = {
    {4, 4, 1, 1, {1, 0, 37, 130}, {0}, {0, 0, 0}},
    {5, 4, 2, 3, {20, 0, 70, 40, 2},
     {KREF_PAGED_OK, KREF_PAGED_NEG_LEN, KREF_PAGED_OK, KREF_PAGED_PAGE_PAST_POOL,
      KREF_PAGED_OK},
     {0, 0, 0}},
    /* fewer workgroups than (rows, heads, sequences): the loops cover them */
    {3, 4, 2, 3, {9, 70, 66}, {KREF_PAGED_OK, KREF_PAGED_PAGE_HUGE, KREF_PAGED_OK}, {2, 1, 2}},
};

static int dispatch3(gk_module *m, const char *entry, gk_vk_buffer **b, size_t nb,
                     const void *push, size_t push_size, const uint32_t g[3]) {
  uint32_t gg[3] = {g[0], g[1], g[2]};
  int rc = gk_vk_dispatch(m, entry, b, nb, push, push_size, gg);
  if (rc != GK_OK) printf("FAIL: dispatch %s: %s\n", entry, gk_vk_errmsg(vk));
  return rc;
}

/* Tolerance: flash_attention's (above): f32 scores, exps and sums on keys
 * in [-1, 1) over at most ~130 keys: 1e-5 absolute; f16, bf16 one ulp
 * more. Invalid sequences: every element the quiet NaN, bit for bit (f16
 * 0x7e00, bf16 0x7fc0, f32 0x7fc00000). kv_append: the pools byte for byte as ref_kv_append leaves
 * them; then paged_attention on them against ref_flash_attention (causal)
 * on each valid sequence's K/V gathered contiguous. */
static void paged_case(gk_module *pa, gk_module *ka, kref_dtype dt, int D, int P,
                       const vk_pcase *c) {
  qref_rng r;
  qref_seed(&r, (uint64_t)(dt * 131 + D * 17 + P * 7 + c->n_seqs * 1009 + c->sq));
  const size_t es = kref_dtype_size(dt);
  int32_t lens[5];
  memcpy(lens, c->lens, sizeof lens);
  int64_t max_pages, n_pages;
  int32_t *table = kref_make_paged_table(&r, P, c->n_seqs, lens, c->kind, 2, &max_pages,
                                         &n_pages);
  const size_t nq = (size_t)(c->n_seqs * c->n_heads * c->sq * D);
  const size_t npool = (size_t)(n_pages * c->n_kv_heads * P * D);
  const size_t nnew = (size_t)(c->n_seqs * c->n_kv_heads * c->sq * D);
  void *q = malloc(nq * es), *kp = malloc(npool * es), *vp = malloc(npool * es),
       *kn = malloc(nnew * es), *vn = malloc(nnew * es), *want = malloc(nq * es);
  kref_fill(&r, dt, q, nq, -1, 1);
  kref_fill(&r, dt, kp, npool, -1, 1);
  kref_fill(&r, dt, vp, npool, -1, 1);
  kref_fill(&r, dt, kn, nnew, -1, 1);
  kref_fill(&r, dt, vn, nnew, -1, 1);
  const float scale = (float)(1.0 / sqrt((double)D));
  double atol, rtol;
  attn_tolerance(dt, &atol, &rtol);
  char what[200];
  int n = snprintf(what, sizeof what, "dtype=%s head_dim=%d page=%d seqs=%lld h=%lld/%lld sq=%lld lens",
                   kref_dtype_name(dt), D, P, (long long)c->n_seqs, (long long)c->n_heads,
                   (long long)c->n_kv_heads, (long long)c->sq);
  for (int64_t s = 0; s < c->n_seqs; s++)
    n += snprintf(what + n, sizeof what - (size_t)n, "%s%d%s", s ? "," : "=", lens[s],
                  c->kind[s] == KREF_PAGED_OK ? "" : "!");
  gk_vk_buffer *b[6] = {buf(q, nq * es),
                        buf(kp, npool * es),
                        buf(vp, npool * es),
                        buf(table, (size_t)(c->n_seqs * max_pages) * 4),
                        buf(lens, (size_t)c->n_seqs * 4),
                        buf(NULL, nq * es)};
  struct {
    uint32_t n_seqs, n_heads, n_kv_heads, sq, max_pages, n_pages;
    float scale;
  } push = {(uint32_t)c->n_seqs, (uint32_t)c->n_heads, (uint32_t)c->n_kv_heads,
            (uint32_t)c->sq,     (uint32_t)max_pages,  (uint32_t)n_pages, scale};
  uint32_t g[3] = {(uint32_t)c->sq, (uint32_t)c->n_heads, (uint32_t)c->n_seqs};
  if (c->groups[0]) memcpy(g, c->groups, sizeof g);
  char lab[260];
  cases++;
  ref_paged_attention(dt, D, P, q, kp, vp, table, lens, want, c->n_seqs, c->n_heads,
                      c->n_kv_heads, c->sq, max_pages, n_pages, scale);
  snprintf(lab, sizeof lab, "paged_attention %s", what);
  if (dispatch3(pa, "paged_attention", b, 6, &push, sizeof push, g) != GK_OK)
    failures++;
  else {
    failures += kref_check(lab, dt, gk_vk_buffer_map(b[5]), want, (int64_t)nq, atol, rtol, NULL);
    const uint32_t qnan = dt == KREF_F16 ? 0x7e00u : dt == KREF_BF16 ? 0x7fc0u : 0x7fc00000u;
    const size_t per = nq / (size_t)c->n_seqs;
    const unsigned char *o = gk_vk_buffer_map(b[5]);
    for (int64_t s = 0; s < c->n_seqs; s++)
      for (size_t e = (size_t)s * per; c->kind[s] != KREF_PAGED_OK && e < (size_t)(s + 1) * per;
           e++) {
        uint32_t bits = 0;
        memcpy(&bits, o + e * es, es);
        if (bits != qnan) {
          printf("FAIL: %s: invalid sequence %lld, element %zu = 0x%x, not the quiet NaN\n", lab,
                 (long long)s, e, bits);
          failures++;
          break;
        }
      }
  }

  /* kv_append into the same pool buffers; the reference on host copies. */
  ref_kv_append(dt, D, P, kn, vn, kp, vp, table, lens, c->n_seqs, c->n_kv_heads, c->sq,
                max_pages, n_pages);
  gk_vk_buffer *ab[6] = {buf(kn, nnew * es), buf(vn, nnew * es), b[1], b[2], b[3], b[4]};
  struct {
    uint32_t n_seqs, n_kv_heads, sq, max_pages, n_pages;
  } apush = {(uint32_t)c->n_seqs, (uint32_t)c->n_kv_heads, (uint32_t)c->sq,
             (uint32_t)max_pages, (uint32_t)n_pages};
  uint32_t ag[3] = {(uint32_t)c->sq, (uint32_t)c->n_kv_heads, (uint32_t)c->n_seqs};
  if (c->groups[0]) memcpy(ag, c->groups, sizeof ag);
  cases++;
  snprintf(lab, sizeof lab, "kv_append %s", what);
  if (dispatch3(ka, "kv_append", ab, 6, &apush, sizeof apush, ag) != GK_OK) {
    failures++;
  } else if (memcmp(gk_vk_buffer_map(b[1]), kp, npool * es) != 0 ||
             memcmp(gk_vk_buffer_map(b[2]), vp, npool * es) != 0) {
    printf("FAIL: %s: the pools differ from ref_kv_append's\n", lab);
    failures++;
  } else {
    /* Then attention on the appended pools: each valid sequence as
     * ref_flash_attention (causal) on its K/V gathered contiguous. */
    for (int64_t s = 0; s < c->n_seqs; s++) {
      const size_t per = (size_t)(c->n_heads * c->sq * D);
      if (c->kind[s] != KREF_PAGED_OK) {
        for (size_t e = 0; e < per; e++) kref_set(dt, want, (size_t)s * per + e, NAN);
        continue;
      }
      const int64_t len = lens[s];
      const size_t nkv = (size_t)(c->n_kv_heads * len * D);
      unsigned char *k = malloc(nkv * es + 4), *v = malloc(nkv * es + 4);
      for (int64_t hk = 0; hk < c->n_kv_heads; hk++)
        for (int64_t j = 0; j < len; j++) {
          const int64_t pg = table[s * max_pages + j / P];
          const size_t from = (size_t)(((pg * c->n_kv_heads + hk) * P + j % P) * D) * es;
          const size_t to = (size_t)((hk * len + j) * D) * es;
          memcpy(k + to, (unsigned char *)kp + from, (size_t)D * es);
          memcpy(v + to, (unsigned char *)vp + from, (size_t)D * es);
        }
      ref_flash_attention(1, dt, D, (unsigned char *)q + (size_t)s * per * es, k, v,
                          (unsigned char *)want + (size_t)s * per * es, c->n_heads,
                          c->n_kv_heads, c->sq, len, scale);
      free(k), free(v);
    }
    cases++;
    snprintf(lab, sizeof lab, "kv_append + paged_attention %s", what);
    if (dispatch3(pa, "paged_attention", b, 6, &push, sizeof push, g) != GK_OK)
      failures++;
    else
      failures += kref_check(lab, dt, gk_vk_buffer_map(b[5]), want, (int64_t)nq, atol, rtol,
                             NULL);
  }
  for (int i = 0; i < 6; i++) gk_vk_buffer_destroy(b[i]);
  gk_vk_buffer_destroy(ab[0]);
  gk_vk_buffer_destroy(ab[1]);
  free(table), free(q), free(kp), free(vp), free(kn), free(vn), free(want);
}

static void test_paged(void) {
  const kref_dtype dts[] = KREF_DTYPES;
  for (int dti = 0; dti < KREF_N_DTYPES; dti++)
    for (int D = 64; D <= 128; D *= 2)
      for (int P = 16; P <= 64; P *= 4) {
        kref_dtype dt = dts[dti];
        char variant[64];
        snprintf(variant, sizeof variant, "dtype=%s,head_dim=%d,page=%d", kref_dtype_name(dt),
                 D, P);
        gk_module *pa = load("paged_attention", variant), *ka = load("kv_append", variant);
        if (pa && ka)
          for (size_t c = 0; c < sizeof vk_pcases / sizeof vk_pcases[0]; c++)
            paged_case(pa, ka, dt, D, P, &vk_pcases[c]);
        gk_module_unload(pa);
        gk_module_unload(ka);
      }
}

/* ---- rmsnorm ------------------------------------------------------------- */

/* Tolerance: the sum of squares is formed per lane then in a 64-way tree
 * (error a few 2^-24 relative for positive terms), then a sqrt, a division
 * and two products: 1e-5 relative, with 1e-6 absolute for outputs near 0. */
static void test_rmsnorm(void) {
  static const int64_t shapes[][2] = {{1, 4096}, {3, 100}, {5, 4097}, {2, 1}, {70, 64}};
  gk_module *m = load("rmsnorm", "");
  if (!m) return;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t rows = shapes[s][0], dim = shapes[s][1];
    qref_rng r;
    qref_seed(&r, (uint64_t)(rows * 31 + dim));
    float *x = malloc((size_t)(rows * dim) * 4), *w = malloc((size_t)dim * 4),
          *want = malloc((size_t)(rows * dim) * 4);
    kref_fill(&r, KREF_F32, x, (size_t)(rows * dim), -2, 2);
    kref_fill(&r, KREF_F32, w, (size_t)dim, -1, 1);
    float eps = 1e-6f;
    ref_rmsnorm(x, w, want, rows, dim, eps);
    gk_vk_buffer *b[3] = {buf(x, (size_t)(rows * dim) * 4), buf(w, (size_t)dim * 4),
                          buf(NULL, (size_t)(rows * dim) * 4)};
    struct {
      uint32_t rows, dim;
      float eps;
    } push = {(uint32_t)rows, (uint32_t)dim, eps};
    cases++;
    /* Half the groups asked for (at least 1): rows loop inside. */
    if (run(m, "rmsnorm", b, 3, &push, sizeof push, (uint32_t)(rows + 1) / 2, 1) != GK_OK) {
      failures++;
    } else {
      char what[64];
      snprintf(what, sizeof what, "rmsnorm rows=%lld dim=%lld", (long long)rows, (long long)dim);
      failures += kref_check(what, KREF_F32, gk_vk_buffer_map(b[2]), want, rows * dim, 1e-6,
                             1e-5, NULL);
    }
    for (int i = 0; i < 3; i++) gk_vk_buffer_destroy(b[i]);
    free(x), free(w), free(want);
  }
  gk_module_unload(m);
}

/* ---- rope ------------------------------------------------------------------ */

/* Tolerance. The kernel forms the angle in float-float (about 44 bits; see
 * rope.comp), so an angle a is off by about |a| * 2^-42 radians, plus the
 * f32 sin/cos and rotation (a few 2^-24). An output moves by at most |x|
 * (< 1 here) times the angle error: atol = 1e-6 + max_pos * 2^-40, 4 times
 * the errors measured on lavapipe (1.2e-7 at positions <= 2048, 3.6e-6 at
 * 2^24, 1.2e-4 at 2^31 - 1). A float angle would be off by max_pos * 2^-24:
 * a whole radian at 2^24, which is why the spec forms it in double. */
static void test_rope(void) {
  static const struct {
    int64_t t, h, d;
    int32_t max_pos;
  } shapes[] = {{3, 4, 64, 2048},      {5, 2, 128, 2048}, {1, 1, 2, 2048},
                {17, 3, 96, 1 << 24},  {9, 2, 128, 1 << 20}, {4, 2, 64, 2147483647}};
  gk_module *m = load("rope", "");
  if (!m) return;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t T = shapes[s].t, H = shapes[s].h, D = shapes[s].d;
    size_t n = (size_t)(T * H * D);
    qref_rng r;
    qref_seed(&r, (uint64_t)(T * 131 + H * 7 + D));
    float *x = malloc(n * 4), *want = malloc(n * 4);
    int32_t *pos = malloc((size_t)T * 4);
    kref_fill(&r, KREF_F32, x, n, -1, 1);
    kref_fill_pos(&r, pos, (size_t)T, 0, shapes[s].max_pos);
    if (T > 1) pos[0] = 0, pos[1] = shapes[s].max_pos;
    memcpy(want, x, n * 4);
    float theta = s % 2 ? 500000.0f : 10000.0f;
    ref_rope(want, pos, T, H, D, theta);
    gk_vk_buffer *b[2] = {buf(x, n * 4), buf(pos, (size_t)T * 4)};
    struct {
      uint32_t n_tokens, n_heads, head_dim;
      float theta_base;
    } push = {(uint32_t)T, (uint32_t)H, (uint32_t)D, theta};
    cases++;
    if (run(m, "rope", b, 2, &push, sizeof push, (uint32_t)T, (uint32_t)H) != GK_OK) {
      failures++;
    } else {
      char what[96];
      snprintf(what, sizeof what, "rope tokens=%lld heads=%lld head_dim=%lld max_pos=%d",
               (long long)T, (long long)H, (long long)D, shapes[s].max_pos);
      double atol = 1e-6 + shapes[s].max_pos * 9.094947017729282e-13; /* 2^-40 */
      double worst = 0;
      failures += kref_check(what, KREF_F32, gk_vk_buffer_map(b[0]), want, (int64_t)n, atol, 0,
                             &worst);
      printf("%s: worst error %.3g of the tolerance %.3g\n", what, worst, atol);
    }
    for (int i = 0; i < 2; i++) gk_vk_buffer_destroy(b[i]);
    free(x), free(want), free(pos);
  }
  gk_module_unload(m);
}

/* ---- argmax ------------------------------------------------------------------ */

/* Exact: an index. Rows with NaNs, exact ties (lowest index wins), -0 vs
 * +0 (equal), all-NaN (0), all -inf, and one row longer than a workgroup's
 * stride. */
static void test_argmax(void) {
  gk_module *m = load("argmax", "");
  if (!m) return;
  const int64_t rows = 9, n = 1000;
  float *x = malloc((size_t)(rows * n) * 4);
  int32_t want[9];
  qref_rng r;
  qref_seed(&r, 42);
  kref_fill(&r, KREF_F32, x, (size_t)(rows * n), -3, 3);
  float nan = NAN, inf = INFINITY;
  for (int64_t j = 0; j < n; j += 3) x[0 * n + j] = nan;    /* NaNs ignored */
  x[1 * n + 10] = 5, x[1 * n + 700] = 5, x[1 * n + 3] = 5; /* ties: 3 */
  for (int64_t j = 0; j < n; j++) x[2 * n + j] = nan;       /* all NaN: 0 */
  for (int64_t j = 0; j < n; j++) x[3 * n + j] = -inf;      /* all -inf: 0 */
  for (int64_t j = 0; j < n; j++) x[4 * n + j] = -1.0f;
  x[4 * n + 500] = -0.0f, x[4 * n + 400] = 0.0f;            /* -0 == +0: 400 */
  x[5 * n + 999] = 100;                                     /* the last one */
  x[6 * n + 0] = inf;                                       /* +inf wins */
  for (int64_t j = 0; j < n; j++) x[7 * n + j] = nan;
  x[7 * n + 640] = -7;                                      /* one number */
  ref_argmax(x, want, rows, n);
  gk_vk_buffer *b[2] = {buf(x, (size_t)(rows * n) * 4), buf(NULL, (size_t)rows * 4)};
  uint32_t push[2] = {(uint32_t)rows, (uint32_t)n};
  cases++;
  if (run(m, "argmax", b, 2, push, sizeof push, 4, 1) != GK_OK)
    failures++;
  else
    failures += kref_check_i32("argmax", gk_vk_buffer_map(b[1]), want, rows);
  for (int i = 0; i < 2; i++) gk_vk_buffer_destroy(b[i]);
  free(x);
  gk_module_unload(m);
}

/* ---- sample ------------------------------------------------------------------ */

/* Exact: a token. The rows come from kref_make_sample_rows, which keeps
 * every u and top_p at least 1e-4 (relative) away from a boundary where
 * the answer changes, so f32 sums in another order than the reference's
 * double ones cannot change it. */
static void test_sample(void) {
  static const struct {
    float temperature;
    int32_t top_k;
    float top_p;
    int64_t n;
  } cfg[] = {
      {0.0f, 0, 1.0f, 1000},   {1.0f, 0, 1.0f, 1000},   {0.7f, 40, 1.0f, 5000},
      {1.3f, 0, 0.9f, 3000},   {0.8f, 50, 0.95f, 32000}, {1.0f, 1, 1.0f, 700},
      {1.0f, 0, 0.0f, 700},    {2.0f, 5000, 0.5f, 4000}, {0.5f, 3, 0.99f, 17},
  };
  gk_module *m = load("sample", "");
  if (!m) return;
  for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
    const int64_t rows = 3, n = cfg[c].n;
    float *logits = malloc((size_t)(rows * n) * 4), u[3];
    int32_t want[3];
    qref_rng r;
    qref_seed(&r, 1000 + c);
    if (kref_make_sample_rows(&r, logits, u, rows, n, 8.0, cfg[c].temperature, cfg[c].top_k,
                              cfg[c].top_p, 1e-4) != 0 ||
        ref_sample(logits, u, want, rows, n, cfg[c].temperature, cfg[c].top_k,
                   cfg[c].top_p) != 0) {
      printf("FAIL: sample case %zu: no test data\n", c);
      failures++;
      free(logits);
      continue;
    }
    gk_vk_buffer *b[3] = {buf(logits, (size_t)(rows * n) * 4), buf(u, sizeof u),
                          buf(NULL, sizeof want)};
    struct {
      uint32_t rows, n;
      float temperature;
      int32_t top_k;
      float top_p;
    } push = {(uint32_t)rows, (uint32_t)n, cfg[c].temperature, cfg[c].top_k, cfg[c].top_p};
    cases++;
    if (run(m, "sample", b, 3, &push, sizeof push, (uint32_t)rows, 1) != GK_OK) {
      failures++;
    } else {
      char what[96];
      snprintf(what, sizeof what, "sample T=%g top_k=%d top_p=%g n=%lld", cfg[c].temperature,
               cfg[c].top_k, cfg[c].top_p, (long long)n);
      failures += kref_check_i32(what, gk_vk_buffer_map(b[2]), want, rows);
    }
    for (int i = 0; i < 3; i++) gk_vk_buffer_destroy(b[i]);
    free(logits);
  }
  gk_module_unload(m);
}

/* The edge cases of docs/kernels.md: a row of -inf and a row holding +inf
 * give the argmax, as does a NaN temperature; top_p <= 0 keeps only the top
 * token. Compared with ref_sample, exactly. */
static void test_sample_edges(void) {
  gk_module *m = load("sample", "");
  if (!m) return;
  const int64_t rows = 4, n = 300;
  float *l = malloc((size_t)(rows * n) * 4), u[4] = {0.3f, 0.6f, 0.9f, 0.5f};
  qref_rng r;
  qref_seed(&r, 7);
  kref_fill_logits(&r, l, (size_t)(rows * n), 4.0);
  for (int64_t j = 0; j < n; j++) l[0 * n + j] = -INFINITY;
  l[1 * n + 5] = INFINITY;
  l[2 * n + 9] = NAN, l[2 * n + 10] = NAN;
  static const float temps[] = {1.0f, NAN};
  static const float top_ps[] = {1.0f, -1.0f, 0.0f};
  for (size_t t = 0; t < 2; t++)
    for (size_t q = 0; q < 3; q++) {
      int32_t want[4];
      if (ref_sample(l, u, want, rows, n, temps[t], 0, top_ps[q]) != 0) continue;
      gk_vk_buffer *b[3] = {buf(l, (size_t)(rows * n) * 4), buf(u, sizeof u), buf(NULL, sizeof want)};
      struct {
        uint32_t rows, n;
        float temperature;
        int32_t top_k;
        float top_p;
      } push = {(uint32_t)rows, (uint32_t)n, temps[t], 0, top_ps[q]};
      cases++;
      if (run(m, "sample", b, 3, &push, sizeof push, (uint32_t)rows, 1) != GK_OK) {
        failures++;
      } else {
        char what[80];
        snprintf(what, sizeof what, "sample edges T=%g top_p=%g", temps[t], top_ps[q]);
        failures += kref_check_i32(what, gk_vk_buffer_map(b[2]), want, rows);
      }
      for (int i = 0; i < 3; i++) gk_vk_buffer_destroy(b[i]);
    }
  free(l);
  gk_module_unload(m);
}

/* rmsnorm in place (y is x): one buffer bound to bindings 0 and 2. */
static void test_rmsnorm_in_place(void) {
  gk_module *m = load("rmsnorm", "");
  if (!m) return;
  const int64_t rows = 3, dim = 1000;
  float *x = malloc((size_t)(rows * dim) * 4), *w = malloc((size_t)dim * 4),
        *want = malloc((size_t)(rows * dim) * 4);
  qref_rng r;
  qref_seed(&r, 99);
  kref_fill(&r, KREF_F32, x, (size_t)(rows * dim), -2, 2);
  kref_fill(&r, KREF_F32, w, (size_t)dim, -1, 1);
  ref_rmsnorm(x, w, want, rows, dim, 1e-5f);
  gk_vk_buffer *bx = buf(x, (size_t)(rows * dim) * 4), *bw = buf(w, (size_t)dim * 4);
  gk_vk_buffer *b[3] = {bx, bw, bx};
  struct {
    uint32_t rows, dim;
    float eps;
  } push = {(uint32_t)rows, (uint32_t)dim, 1e-5f};
  cases++;
  if (run(m, "rmsnorm", b, 3, &push, sizeof push, (uint32_t)rows, 1) != GK_OK)
    failures++;
  else
    failures += kref_check("rmsnorm in place", KREF_F32, gk_vk_buffer_map(bx), want, rows * dim,
                           1e-6, 1e-5, NULL);
  gk_vk_buffer_destroy(bx);
  gk_vk_buffer_destroy(bw);
  free(x), free(w), free(want);
  gk_module_unload(m);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_vk_kernels ARCHIVE\n");
    return 2;
  }
  if (gk_archive_open(argv[1], &ar) != GK_OK) {
    printf("SKIP: no vulkan archive: %s\n", gk_last_error());
    return 77;
  }
  size_t count = 0, nvk = 0;
  gk_archive_count(ar, &count);
  for (size_t i = 0; i < count; i++) {
    gk_image_info info;
    if (gk_archive_image(ar, i, &info) == GK_OK && strcmp(info.backend, "vulkan") == 0) nvk++;
  }
  if (nvk == 0) {
    printf("SKIP: archive '%s' has no vulkan image (glslang or spirv-val was missing at build)\n",
           argv[1]);
    return 77;
  }
  gk_device dev;
  char why[256];
  int rc = gk_device_detect_backend(GK_BACKEND_VULKAN, &dev, why, sizeof why);
  if (rc != GK_OK) {
    printf("SKIP: no Vulkan device: %s (Debian: apt-get install mesa-vulkan-drivers)\n", why);
    return 77;
  }
  if ((rc = gk_vk_open(&dev, &vk, why, sizeof why)) != GK_OK) {
    printf("FAIL: gk_vk_open(%s): %s\n", dev.name, why);
    return 1;
  }
  printf("device: vulkan:%s, %s; %zu vulkan images\n", dev.arch, dev.name, nvk);
  test_qmatmul();
  test_flash_attention();
  test_paged();
  test_rmsnorm();
  test_rope();
  test_argmax();
  test_sample();
  test_sample_edges();
  test_rmsnorm_in_place();
  gk_vk_close(vk);
  gk_archive_close(ar);
  printf("%d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
