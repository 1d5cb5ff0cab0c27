/*
 * kref.c - the scalar references of docs/kernels.md. Written from the
 * document without looking at kernelsrc/, so that a shared misreading
 * cannot make both sides agree: double everywhere, libm for exp, pow, sin
 * and cos, a full sort for sample.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS */

#include "kref.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- element types ---- */

size_t kref_dtype_size(kref_dtype dtype) { return dtype == KREF_F32 ? 4 : 2; }

const char *kref_dtype_name(kref_dtype dtype) {
  return dtype == KREF_F16 ? "f16" : dtype == KREF_BF16 ? "bf16" : "f32";
}

int kref_dtype_parse(const char *name, kref_dtype *out) {
  static const kref_dtype all[] = KREF_DTYPES;
  for (int i = 0; name && i < KREF_N_DTYPES; i++)
    if (strcmp(name, kref_dtype_name(all[i])) == 0) {
      *out = all[i];
      return 0;
    }
  return -1;
}

/* bfloat16 is the high half of a binary32: decoding is a shift, exact. */
static float bf16_decode(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* A float rounded to bfloat16, nearest even; a NaN becomes the quiet NaN
 * 0x7fc0 with the float's sign. */
static uint16_t bf16_encode(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if (isnan(f))
    return (uint16_t)((u >> 16 & 0x8000u) | 0x7fc0u);
  return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}

/* Every binary16 code through qref_f16_decode (ldexp), once: the
 * attention references decode each element of K and V once a query row,
 * and ldexp took a quarter of cuda.emu's time (perf, 2026-12-01). */
static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;
static void f16_fill(void) {
  for (unsigned h = 0; h < 65536; h++)
    f16_table[h] = qref_f16_decode((uint16_t)h);
}

double kref_get(kref_dtype dtype, const void *a, size_t i) {
  if (dtype == KREF_F16) {
    pthread_once(&f16_once, f16_fill);
    return f16_table[((const uint16_t *)a)[i]];
  }
  if (dtype == KREF_BF16)
    return bf16_decode(((const uint16_t *)a)[i]);
  return ((const float *)a)[i];
}

/* Rounding a double to binary16 (or bfloat16) through float would round
 * twice; go through float only when that is exact enough: binary16 needs
 * 11 bits (bfloat16 8) and a float keeps 24, but a double that lies just off a binary16 tie could
 * land on the tie in float. So round to float with the sticky bit kept:
 * if the float is not exact, nudge it one ulp toward the double. */
static float to_float_sticky(double x) {
  float f = (float)x;
  if (isfinite(x) && (double)f != x) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 1u) == 0) { /* even float: move it toward x, making it odd */
      f = nextafterf(f, (double)f < x ? INFINITY : -INFINITY);
    }
  }
  return f;
}

void kref_set(kref_dtype dtype, void *a, size_t i, double value) {
  if (dtype == KREF_F16)
    ((uint16_t *)a)[i] = qref_f16_encode(to_float_sticky(value));
  else if (dtype == KREF_BF16)
    ((uint16_t *)a)[i] = bf16_encode(to_float_sticky(value));
  else
    ((float *)a)[i] = (float)value;
}

/* ---- flash_attention ---- */

/* Where key j's row of KV head hk lies: contiguous [n_kv_heads][skv][D]
 * (table NULL), or in the pages of a block-table row (paged_attention). */
typedef struct key_rows {
  const int32_t *table;
  int64_t hk, skv, page, n_kv_heads, D;
} key_rows;

static size_t key_row(const key_rows *kr, int64_t j) {
  if (!kr->table) return (size_t)((kr->hk * kr->skv + j) * kr->D);
  const int64_t pg = kr->table[j / kr->page], slot = j % kr->page;
  return (size_t)(((pg * kr->n_kv_heads + kr->hk) * kr->page + slot) * kr->D);
}

/* One query row (q and o at element qrow) against keys 0 .. last, in
 * double, rounded once; no key (last < 0): zeros. s holds last + 1 scores,
 * acc D sums. */
static void attend_row(kref_dtype dtype, const void *q, const void *k, const void *v,
                       void *o, size_t qrow, const key_rows *kr, int64_t last, float scale,
                       double *s, double *acc) {
  const int64_t D = kr->D;
  double mx = -INFINITY;
  for (int64_t j = 0; j <= last; j++) {
    const size_t krow = key_row(kr, j);
    double dot = 0.0;
    for (int64_t d = 0; d < D; d++)
      dot += kref_get(dtype, q, qrow + (size_t)d) * kref_get(dtype, k, krow + (size_t)d);
    s[j] = (double)scale * dot;
    if (s[j] > mx)
      mx = s[j];
  }
  double sum = 0.0;
  for (int64_t d = 0; d < D; d++)
    acc[d] = 0.0;
  for (int64_t j = 0; j <= last; j++) {
    const double w = exp(s[j] - mx);
    const size_t vrow = key_row(kr, j);
    sum += w;
    for (int64_t d = 0; d < D; d++)
      acc[d] += w * kref_get(dtype, v, vrow + (size_t)d);
  }
  for (int64_t d = 0; d < D; d++)
    kref_set(dtype, o, qrow + (size_t)d, last >= 0 ? acc[d] / sum : 0.0);
}

int ref_flash_attention(int causal, kref_dtype dtype, int head_dim,
                        const void *q, const void *k, const void *v, void *o,
                        int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                        int64_t skv, float scale) {
  if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || sq < 0 ||
      skv < 0 || head_dim <= 0)
    return -1;
  const int64_t D = head_dim, group = n_heads / n_kv_heads;
  double *s = malloc((size_t)(skv > 0 ? skv : 1) * sizeof *s);
  double *acc = malloc((size_t)D * sizeof *acc);
  if (!s || !acc) {
    free(s);
    free(acc);
    return -1;
  }
  for (int64_t h = 0; h < n_heads; h++) {
    const int64_t hk = h / group;
    for (int64_t i = 0; i < sq; i++) {
      /* Keys 0 .. last are allowed (bottom-right aligned when causal). */
      int64_t last = causal ? i + (skv - sq) : skv - 1;
      if (last > skv - 1)
        last = skv - 1;
      const size_t qrow = (size_t)((h * sq + i) * D);
      const key_rows kr = {NULL, hk, skv, 0, n_kv_heads, D};
      /* No allowed key (causal, sq > skv): a row of zeros. */
      attend_row(dtype, q, k, v, o, qrow, &kr, last, scale, s, acc);
    }
  }
  free(s);
  free(acc);
  return 0;
}

/* ---- paged KV cache ---- */

/* The validity rule of docs/kernels.md, spelled out: the length is not
 * negative, its pages fit the table row, and each page it uses exists. */
static int paged_seq_valid(const int32_t *row, int64_t len, int64_t page,
                           int64_t max_pages, int64_t n_pages) {
  if (len < 0)
    return 0;
  const int64_t used = len / page + (len % page != 0);
  if (used > max_pages)
    return 0;
  for (int64_t j = 0; j < used; j++)
    if (row[j] < 0 || row[j] >= n_pages)
      return 0;
  return 1;
}

int ref_paged_attention(kref_dtype dtype, int head_dim, int page, const void *q,
                        const void *k_pool, const void *v_pool,
                        const int32_t *block_table, const int32_t *seq_lens,
                        void *o, int64_t n_seqs, int64_t n_heads,
                        int64_t n_kv_heads, int64_t sq, int64_t max_pages,
                        int64_t n_pages, float scale) {
  if (n_seqs < 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 ||
      sq < 0 || max_pages < 0 || n_pages < 0 || head_dim <= 0 || page <= 0)
    return -1;
  const int64_t D = head_dim, group = n_heads / n_kv_heads;
  int64_t longest = 1;
  for (int64_t s = 0; s < n_seqs; s++)
    longest = seq_lens[s] > longest ? seq_lens[s] : longest;
  double *sc = malloc((size_t)longest * sizeof *sc);
  double *acc = malloc((size_t)D * sizeof *acc);
  if (!sc || !acc) {
    free(sc);
    free(acc);
    return -1;
  }
  for (int64_t s = 0; s < n_seqs; s++) {
    const int32_t *row = block_table + s * max_pages;
    const int64_t len = seq_lens[s];
    const int valid = paged_seq_valid(row, len, page, max_pages, n_pages);
    for (int64_t h = 0; h < n_heads; h++) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < sq; i++) {
        const size_t qrow = (size_t)(((s * n_heads + h) * sq + i) * D);
        if (!valid) {
          for (int64_t d = 0; d < D; d++)
            kref_set(dtype, o, qrow + (size_t)d, NAN);
          continue;
        }
        /* Keys 0 .. last: token len - sq + i sees itself and what precedes. */
        const key_rows kr = {row, hk, 0, page, n_kv_heads, D};
        attend_row(dtype, q, k_pool, v_pool, o, qrow, &kr, len - sq + i, scale, sc, acc);
      }
    }
  }
  free(sc);
  free(acc);
  return 0;
}

int ref_kv_append(kref_dtype dtype, int head_dim, int page, const void *k_new,
                  const void *v_new, void *k_pool, void *v_pool,
                  const int32_t *block_table, const int32_t *seq_lens,
                  int64_t n_seqs, int64_t n_kv_heads, int64_t sq,
                  int64_t max_pages, int64_t n_pages) {
  if (n_seqs < 0 || n_kv_heads <= 0 || sq < 0 || max_pages < 0 || n_pages < 0 ||
      head_dim <= 0 || page <= 0)
    return -1;
  const int64_t D = head_dim;
  const size_t es = kref_dtype_size(dtype);
  for (int64_t s = 0; s < n_seqs; s++) {
    const int32_t *row = block_table + s * max_pages;
    const int64_t len = seq_lens[s];
    if (len < sq || !paged_seq_valid(row, len, page, max_pages, n_pages))
      continue;
    for (int64_t hk = 0; hk < n_kv_heads; hk++)
      for (int64_t i = 0; i < sq; i++) {
        const size_t src = (size_t)(((s * n_kv_heads + hk) * sq + i) * D);
        const key_rows kr = {row, hk, 0, page, n_kv_heads, D};
        const size_t dst = key_row(&kr, len - sq + i);
        memcpy((char *)k_pool + dst * es, (const char *)k_new + src * es, (size_t)D * es);
        memcpy((char *)v_pool + dst * es, (const char *)v_new + src * es, (size_t)D * es);
      }
  }
  return 0;
}

/* ---- rmsnorm, rope, argmax ---- */

void ref_rmsnorm(const float *x, const float *w, float *y, int64_t rows,
                 int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0.0;
    for (int64_t j = 0; j < dim; j++)
      ss += (double)x[r * dim + j] * x[r * dim + j];
    const double rms = sqrt(ss / (double)dim + (double)eps);
    for (int64_t j = 0; j < dim; j++)
      y[r * dim + j] = (float)((double)x[r * dim + j] / rms * w[j]);
  }
}

void ref_rope(float *x, const int32_t *pos, int64_t n_tokens, int64_t n_heads,
              int64_t head_dim, float theta_base) {
  for (int64_t t = 0; t < n_tokens; t++)
    for (int64_t h = 0; h < n_heads; h++) {
      float *xh = x + (t * n_heads + h) * head_dim;
      for (int64_t p = 0; p < head_dim / 2; p++) {
        const double a =
            (double)pos[t] * pow((double)theta_base, -2.0 * (double)p / (double)head_dim);
        const double x0 = xh[2 * p], x1 = xh[2 * p + 1];
        xh[2 * p] = (float)(x0 * cos(a) - x1 * sin(a));
        xh[2 * p + 1] = (float)(x0 * sin(a) + x1 * cos(a));
      }
    }
}

static int32_t argmax_row(const float *x, int64_t n) {
  int32_t best = 0;
  int found = 0;
  for (int64_t j = 0; j < n; j++) {
    if (isnan(x[j]))
      continue;
    if (!found || x[j] > x[best]) { /* strictly greater: lowest index wins */
      best = (int32_t)j;
      found = 1;
    }
  }
  return best;
}

void ref_argmax(const float *x, int32_t *out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; r++)
    out[r] = argmax_row(x + r * (n > 0 ? n : 0), n);
}

/* ---- sample ---- */

typedef struct ranked {
  double p;
  int64_t index;
} ranked;

/* p descending, then index ascending: a total order, so qsort's lack of
 * stability does not matter. */
static int by_rank(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->p != y->p)
    return x->p > y->p ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* One row worked out: p, the ranking, the kept set and its sums. */
typedef struct row_work {
  double *p;        /* n */
  ranked *order;    /* n, rank order */
  unsigned char *kept; /* n, by index */
  int64_t n_topk;   /* ranks kept by top-k */
  int64_t n_kept;   /* ranks kept by both rules (a prefix of the ranking) */
  double sum_topk;  /* sum of p over the top-k set */
  double sum_kept;  /* sum of p over the kept set */
} row_work;

static int work_alloc(row_work *w, int64_t n) {
  const size_t m = (size_t)(n > 0 ? n : 1);
  w->p = malloc(m * sizeof *w->p);
  w->order = malloc(m * sizeof *w->order);
  w->kept = malloc(m);
  return w->p && w->order && w->kept ? 0 : -1;
}

static void work_free(row_work *w) {
  free(w->p);
  free(w->order);
  free(w->kept);
}

/* Steps 2 and 3 of docs/kernels.md for a row with temperature > 0 and a
 * finite largest logit (n > 0). */
static void work_row(row_work *w, const float *l, int64_t n, float temperature,
                     int32_t top_k, float top_p) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; j++)
    if (!isnan(l[j]) && l[j] > mx)
      mx = l[j];
  for (int64_t j = 0; j < n; j++) {
    w->p[j] = isnan(l[j]) ? 0.0 : exp(((double)l[j] - mx) / (double)temperature);
    w->order[j].p = w->p[j];
    w->order[j].index = j;
    w->kept[j] = 0;
  }
  qsort(w->order, (size_t)n, sizeof *w->order, by_rank);
  w->n_topk = top_k <= 0 || top_k > n ? n : top_k;
  w->sum_topk = 0.0;
  for (int64_t q = 0; q < w->n_topk; q++)
    w->sum_topk += w->order[q].p;
  /* Kept iff the mass ranked before it, over the top-k mass, is < top_p;
   * that mass only grows with the rank, so the kept set is a prefix. */
  double before = 0.0;
  int64_t q = 0;
  for (; q < w->n_topk; q++) {
    if (q > 0 && !(top_p >= 1.0f) && !(before / w->sum_topk < (double)top_p))
      break;
    before += w->order[q].p;
  }
  w->n_kept = q;
  w->sum_kept = 0.0;
  for (q = 0; q < w->n_kept; q++) {
    w->kept[w->order[q].index] = 1;
    w->sum_kept += w->order[q].p;
  }
}

/* Step 4: the walk in index order. */
static int32_t walk(const row_work *w, int64_t n, double u) {
  const double target = u * w->sum_kept;
  double run = 0.0;
  int32_t last = 0;
  for (int64_t j = 0; j < n; j++) {
    if (!w->kept[j])
      continue;
    run += w->p[j];
    last = (int32_t)j;
    if (run > target)
      return (int32_t)j;
  }
  return last;
}

/* The rows docs/kernels.md sends to argmax even at temperature > 0: the
 * largest non-NaN logit is not finite (all NaN, all -inf, or a +inf). */
static int max_not_finite(const float *l, int64_t n) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; j++)
    if (!isnan(l[j]) && l[j] > mx)
      mx = l[j];
  return !isfinite(mx);
}

int ref_sample(const float *logits, const float *u, int32_t *out, int64_t rows,
               int64_t n, float temperature, int32_t top_k, float top_p) {
  row_work w;
  if (work_alloc(&w, n) != 0) {
    work_free(&w);
    return -1;
  }
  for (int64_t r = 0; r < rows; r++) {
    const float *l = logits + r * (n > 0 ? n : 0);
    if (!(temperature > 0.0f) || n <= 0 || max_not_finite(l, n)) {
      out[r] = argmax_row(l, n);
      continue;
    }
    work_row(&w, l, n, temperature, top_k, top_p);
    out[r] = walk(&w, n, u[r]);
  }
  work_free(&w);
  return 0;
}

/* The margin of u against the cumulative boundaries of a worked row. */
static double u_margin(const row_work *w, int64_t n, double u) {
  double run = 0.0, margin = 1.0;
  for (int64_t j = 0; j < n; j++) {
    if (!w->kept[j])
      continue;
    run += w->p[j];
    const double d = fabs(u - run / w->sum_kept);
    margin = d < margin ? d : margin;
  }
  return margin;
}

/* The margin of top_p against the top-p boundaries of a worked row. */
static double top_p_margin(const row_work *w, float top_p) {
  if (!(top_p > 0.0f && top_p < 1.0f))
    return 1.0;
  double before = 0.0, margin = 1.0;
  for (int64_t q = 1; q < w->n_topk; q++) {
    before += w->order[q - 1].p;
    const double d = fabs((double)top_p - before / w->sum_topk);
    margin = d < margin ? d : margin;
  }
  return margin;
}

double ref_sample_margin(const float *logits_row, int64_t n, float temperature,
                         int32_t top_k, float top_p, float u) {
  if (!(temperature > 0.0f) || n <= 0 || max_not_finite(logits_row, n))
    return 1.0;
  row_work w;
  if (work_alloc(&w, n) != 0) {
    work_free(&w);
    return -1.0;
  }
  work_row(&w, logits_row, n, temperature, top_k, top_p);
  const double a = u_margin(&w, n, u), b = top_p_margin(&w, top_p);
  work_free(&w);
  return a < b ? a : b;
}

/* ---- test data ---- */

void kref_fill(qref_rng *r, kref_dtype dtype, void *a, size_t count, double lo,
               double hi) {
  for (size_t i = 0; i < count; i++)
    kref_set(dtype, a, i, lo + (hi - lo) * qref_uniform(r));
}

void kref_fill_pos(qref_rng *r, int32_t *pos, size_t count, int32_t lo,
                   int32_t hi) {
  const uint64_t span = (uint64_t)((int64_t)hi - lo) + 1;
  for (size_t i = 0; i < count; i++)
    pos[i] = (int32_t)(lo + (int64_t)(qref_next(r) % span));
}

void kref_fill_logits(qref_rng *r, float *logits, size_t count, double spread) {
  for (size_t i = 0; i < count; i++) {
    if (i > 0 && qref_next(r) % 16 == 0) {
      const size_t back = 1 + (size_t)(qref_next(r) % (i < 64 ? i : 64));
      logits[i] = logits[i - back];
      continue;
    }
    const double x = spread * (2.0 * qref_uniform(r) - 1.0);
    logits[i] = (float)(floor(x * 256.0 + 0.5) / 256.0);
  }
}

int kref_make_sample_rows(qref_rng *r, float *logits, float *u, int64_t rows,
                          int64_t n, double spread, float temperature,
                          int32_t top_k, float top_p, double margin) {
  row_work w;
  int rc = 0;
  if (n <= 0 || work_alloc(&w, n) != 0) {
    if (n > 0)
      work_free(&w);
    return -1;
  }
  for (int64_t row = 0; row < rows && rc == 0; row++) {
    float *l = logits + row * n;
    int done = 0;
    for (int attempt = 0; attempt < 1000 && !done; attempt++) {
      kref_fill_logits(r, l, (size_t)n, spread);
      if (!(temperature > 0.0f)) {
        u[row] = (float)qref_uniform(r);
        done = 1;
        break;
      }
      work_row(&w, l, n, temperature, top_k, top_p);
      if (top_p_margin(&w, top_p) < margin)
        continue; /* top_p sits on a boundary: other logits */
      for (int draw = 0; draw < 1000 && !done; draw++) {
        /* u as a float, since that is what the kernel gets. */
        const float uf = (float)qref_uniform(r);
        if (uf < 1.0f && u_margin(&w, n, uf) >= margin) {
          u[row] = uf;
          done = 1;
        }
      }
    }
    if (!done)
      rc = -1;
  }
  work_free(&w);
  return rc;
}

int32_t *kref_make_paged_table(qref_rng *r, int64_t page, int64_t n_seqs,
                               int32_t *lens, const kref_paged_kind *kind,
                               int64_t spare, int64_t *max_pages,
                               int64_t *n_pages) {
  int64_t longest = 0;
  for (int64_t s = 0; s < n_seqs; s++)
    if (kind[s] != KREF_PAGED_NEG_LEN && kind[s] != KREF_PAGED_PAST_TABLE &&
        lens[s] > longest)
      longest = lens[s];
  const int64_t mp = (longest + page - 1) / page + 1;
  int64_t need = spare;
  for (int64_t s = 0; s < n_seqs; s++) {
    if (kind[s] == KREF_PAGED_NEG_LEN)
      lens[s] = -3;
    else if (kind[s] == KREF_PAGED_PAST_TABLE)
      lens[s] = (int32_t)(mp * page + 1);
    need += kind[s] == KREF_PAGED_PAST_TABLE ? mp
            : lens[s] > 0                    ? (lens[s] + page - 1) / page
                                             : 0;
  }
  int32_t *table = malloc((size_t)(n_seqs * mp + 1) * sizeof *table);
  int32_t *perm = malloc((size_t)(need + 1) * sizeof *perm);
  if (!table || !perm) {
    free(table);
    free(perm);
    return NULL;
  }
  for (int64_t i = 0; i < need; i++)
    perm[i] = (int32_t)i;
  for (int64_t i = need - 1; i > 0; i--) { /* Fisher-Yates */
    const int64_t j = (int64_t)(qref_next(r) % (uint64_t)(i + 1));
    const int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t next = 0;
  for (int64_t s = 0; s < n_seqs; s++) {
    int32_t *row = table + s * mp;
    const int64_t used = kind[s] == KREF_PAGED_PAST_TABLE ? mp
                         : lens[s] > 0 ? (lens[s] + page - 1) / page
                                       : 0;
    for (int64_t j = 0; j < mp; j++)
      row[j] = j < used ? perm[next++] : -1;
    if (kind[s] == KREF_PAGED_PAGE_PAST_POOL && used > 0)
      row[used - 1] = (int32_t)need;
    else if (kind[s] == KREF_PAGED_PAGE_NEG && used > 0)
      row[0] = -1;
    else if (kind[s] == KREF_PAGED_PAGE_HUGE && used > 0)
      row[used / 2] = INT32_MAX;
  }
  free(perm);
  *max_pages = mp;
  *n_pages = need;
  return table;
}

/* ---- comparison ---- */

double kref_f16_ulp(double x) {
  const double a = fabs(x);
  if (!(a >= 0x1p-14))
    return 0x1p-24;
  if (a >= 65504.0)
    return 32.0;
  int e;
  frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): the ulp is 2^(e - 11) */
  return ldexp(1.0, e - 11);
}

static int within(double got, double want, double atol, double rtol,
                  double *ratio) {
  if (isnan(want) || isnan(got)) {
    *ratio = isnan(want) && isnan(got) ? 0.0 : INFINITY;
    return isnan(want) && isnan(got);
  }
  if (isinf(want) || isinf(got)) {
    *ratio = got == want ? 0.0 : INFINITY;
    return got == want;
  }
  const double tol = atol + rtol * fabs(want);
  const double err = fabs(got - want);
  *ratio = tol > 0 ? err / tol : (err > 0 ? INFINITY : 0.0);
  return err <= tol;
}

int64_t kref_first_bad(kref_dtype dtype, const void *got, const void *want,
                       int64_t count, double atol, double rtol) {
  double ratio;
  for (int64_t i = 0; i < count; i++)
    if (!within(kref_get(dtype, got, (size_t)i), kref_get(dtype, want, (size_t)i),
                atol, rtol, &ratio))
      return i;
  return -1;
}

int kref_check(const char *what, kref_dtype dtype, const void *got,
               const void *want, int64_t count, double atol, double rtol,
               double *worst) {
  double ratio, big = 0.0;
  for (int64_t i = 0; i < count; i++) {
    const double g = kref_get(dtype, got, (size_t)i);
    const double w = kref_get(dtype, want, (size_t)i);
    if (!within(g, w, atol, rtol, &ratio)) {
      printf("FAIL: %s: [%lld] = %.9g, expected %.9g (error %.3g, tolerance %.3g)\n",
             what, (long long)i, g, w, fabs(g - w), atol + rtol * fabs(w));
      if (worst)
        *worst = ratio;
      return 1;
    }
    big = ratio > big ? ratio : big;
  }
  if (worst && big > *worst)
    *worst = big;
  return 0;
}

int kref_check_i32(const char *what, const int32_t *got, const int32_t *want,
                   int64_t count) {
  for (int64_t i = 0; i < count; i++)
    if (got[i] != want[i]) {
      printf("FAIL: %s: [%lld] = %d, expected %d\n", what, (long long)i,
             (int)got[i], (int)want[i]);
      return 1;
    }
  return 0;
}

/* ---- memory ---- */

void *kref_guarded_alloc(size_t size) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t span = (size + page - 1) / page * page;
  unsigned char *base = mmap(NULL, span + page, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  if (mprotect(base + span, page, PROT_NONE) != 0) {
    munmap(base, span + page);
    return NULL;
  }
  return base + span - size;
}

void kref_guarded_free(void *p, size_t size) {
  if (!p)
    return;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t span = (size + page - 1) / page * page;
  munmap((unsigned char *)p + size - span, span + page);
}

int64_t kref_attention_frags(int64_t rows) {
  return rows > 16 && rows <= 64 ? (rows + 15) / 16 : 1;
}

size_t kref_attention_ws_bytes(int64_t units, int64_t keys, int64_t rows, int d) {
  const int64_t splits = keys > 0 ? (keys + 255) / 256 : 1;
  const int64_t frags = kref_attention_frags(rows);
  return (size_t)((units * 4 + 15) / 16 * 16 +
                  units * splits * frags * (32 + 16 * (int64_t)d) * 4);
}

void kref_attention_tolerance(kref_dtype dt, int d, double scale_mul, int64_t skv,
                              double vmax, int p_16, double *atol, double *rtol) {
  const double model = 0x1p-24 * (sqrt((double)d) * (1.0 + scale_mul) + 8.0 +
                                  sqrt((double)skv) + (double)skv / 32.0);
  *atol = 4.0 * model * vmax;
  *rtol = 0.0;
  if (dt == KREF_F16) {
    *atol += 0x1p-24;
    *rtol = 0x1p-10;
    if (p_16) *atol += 0x1p-11 * (1.0 + (double)skv * 0x1p-14) * vmax;
  } else if (dt == KREF_BF16) {
    *rtol = 0x1p-7;
    if (p_16) *atol += 0x1p-8 * vmax;
  }
}

const kref_sample_case kref_sample_cases[] = {
    {8, 1000, 0.0f, 40, 0.9f, 4.0, 0, "temperature 0: argmax"},
    {4, 300, -1.0f, 0, 1.0f, 4.0, 1, "negative, NaNs: argmax"},
    {8, 1000, 1.0f, 1, 1.0f, 4.0, 0, "top_k = 1"},
    {4, 300, 1.0f, 0, 0.0f, 4.0, 0, "top_p = 0: the top token"},
    {8, 500, 1.0f, 0, 0.05f, 1.0, 0, "small top_p over a flat row"},
    {8, 1000, 0.8f, 40, 0.9f, 4.0, 0, "top-k then top-p"},
    {8, 257, 1.0f, 0, 1.0f, 3.0, 0, "everything kept"},
    {4, 50, 1.5f, 100, 0.8f, 2.0, 0, "top_k > n"},
    {4, 64, 1.0f, 63, 0.99f, 1.0, 0, "top_k = n - 1"},
    {6, 400, 0.9f, 0, 1.0f, 4.0, 1, "NaN logits weigh 0"},
    {4, 1000, 0.05f, 100, 0.9f, 4.0, 0, "very low temperature"},
    /* A vocabulary with top-p. The gap between top-p boundaries at the cut
     * is p_cut / sum p ~ (1 - top_p) / (density * T) for logits spread
     * evenly (2000 per unit here): T must be low for a 1e-4 margin to
     * exist at all, as with the peaked logits of real models. */
    {2, 32000, 0.1f, 0, 0.9f, 8.0, 0, "a vocabulary with top-p"},
    {2, 32000, 1.0f, 50, 1.0f, 8.0, 0, "a vocabulary, top-k"},
};
const size_t kref_nsample_cases = sizeof kref_sample_cases / sizeof kref_sample_cases[0];

int kref_sample_data(const kref_sample_case *sc, uint64_t seed, float *logits, float *u,
                     float *top_p) {
  qref_rng r;
  qref_seed(&r, seed);
  *top_p = sc->nans ? 1.0f : sc->top_p;
  if (kref_make_sample_rows(&r, logits, u, sc->rows, sc->n, sc->spread, sc->temperature,
                            sc->top_k, *top_p, KREF_SAMPLE_MARGIN) != 0) {
    printf("FAIL: could not make sample data at margin %g (n=%lld)\n", KREF_SAMPLE_MARGIN,
           (long long)sc->n);
    return -1;
  }
  if (!sc->nans) return 0;
  for (int64_t row = 0; row < sc->rows; row++) {
    float *l = logits + row * sc->n;
    for (int64_t j = 0; j < sc->n; j++)
      if (qref_next(&r) % 8 == 0) l[j] = NAN;
    int tries = 0;
    while (ref_sample_margin(l, sc->n, sc->temperature, sc->top_k, *top_p, u[row]) <
           KREF_SAMPLE_MARGIN) {
      if (++tries > 1000) {
        printf("FAIL: could not draw u for a row with NaNs\n");
        return -1;
      }
      u[row] = (float)qref_uniform(&r);
    }
  }
  return 0;
}
