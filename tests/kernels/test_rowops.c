/*
 * test_rowops.c ARCHIVE - the rmsnorm, rope, argmax and sample images of a
 * real archive, loaded by libgk through its public API on every x86-64
 * level this CPU runs (levels above it SKIPped, saying so), against the
 * scalar references of tests/common/kref.h.
 *
 * rmsnorm: widths below, at and above every vector length, 4096 and 5120,
 * rows of very different magnitudes, eps dominating, and in place (y == x).
 * rope: one pair, head_dim 10 (not a vector multiple), 256 (two chunks of
 * pairs), negative, large (10^6) and huge (up to 2^31 - 1) positions,
 * several theta_base. argmax: ties, NaNs before and after the maximum,
 * all-NaN, all -inf, +inf, one element, tails shorter than a vector.
 * sample: temperature <= 0 (argmax), top_k = 1, top_p = 0 and small, top-k
 * then top-p, top_k >= n, NaN logits, very low temperature, a 32000-token
 * vocabulary; u is drawn at least 1e-4 away from every decision boundary
 * the reference computes (kref_make_sample_rows), so the exact answer is
 * the only right one. Inputs end right before an inaccessible page and
 * outputs are followed by guard values.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kref.h"
#include "ktest.h"

/* Guard floats after every output. */
#define GUARD 16
#define GUARD_VALUE 12345.0f

static int guard_ok(const char *what, const float *after) {
  for (int i = 0; i < GUARD; i++)
    if (after[i] != GUARD_VALUE) {
      printf("FAIL: %s: wrote past the end of its output (element %d after it)\n",
             what, i);
      return 0;
    }
  return 1;
}

static void set_guard(float *after) {
  for (int i = 0; i < GUARD; i++)
    after[i] = GUARD_VALUE;
}

/* Loads one kernel (no variant) on every level that runs here. */
typedef struct levels {
  gk_module *mod[KTEST_NLEVELS];
  void *fn[KTEST_NLEVELS];
} levels;

static void levels_load(ktest *kt, levels *lv, const char *kernel) {
  memset(lv, 0, sizeof *lv);
  for (int l = 0; l <= kt->host_level; l++)
    lv->fn[l] = ktest_load(kt, l, kernel, "", &lv->mod[l]);
}

static void levels_unload(levels *lv) {
  for (int l = 0; l < KTEST_NLEVELS; l++)
    gk_module_unload(lv->mod[l]);
}

/* ---- rmsnorm ---- */

typedef struct norm_case {
  int64_t rows, dim;
  float eps;
} norm_case;

static const norm_case norm_cases[] = {
    {1, 1, 1e-5f},  {3, 7, 1e-5f},    {2, 64, 1e-6f},   {1, 33, 1e-5f},
    {5, 1000, 1e-5f}, {4, 4096, 1e-5f}, {2, 5120, 1e-6f}, {3, 16, 1.0f},
};

/*
 * Tolerance, relative to each y. The kernel sums the squares in f32 over at
 * most 16 accumulator lanes and then a tree, so the sum is within
 * (dim/16 + 8) * 2^-24 relatively (each lane's terms are non-negative, so
 * no cancellation); the square root halves that; the scale is rounded once
 * and each y takes two products: 3 half-ulps; the reference's own rounding
 * is one more half-ulp.
 */
static double norm_rtol(int64_t dim) {
  return 0x1p-24 * ((double)(dim / 16 + 8) / 2.0 + 4.0);
}

static int check_rmsnorm(ktest *kt) {
  levels lv;
  int failures = 0;
  levels_load(kt, &lv, "rmsnorm");
  for (size_t c = 0; c < sizeof norm_cases / sizeof norm_cases[0]; c++) {
    const norm_case *nc = &norm_cases[c];
    const size_t n = (size_t)(nc->rows * nc->dim);
    float *x = kref_guarded_alloc(n * sizeof *x);
    float *w = kref_guarded_alloc((size_t)nc->dim * sizeof *w);
    float *y = malloc((n + GUARD) * sizeof *y);
    float *want = malloc(n * sizeof *want);
    if (!x || !w || !y || !want) {
      printf("FAIL: out of memory making test data\n");
      return failures + 1;
    }
    qref_rng r;
    qref_seed(&r, 300 + c);
    kref_fill(&r, KREF_F32, x, n, -1.0, 1.0);
    kref_fill(&r, KREF_F32, w, (size_t)nc->dim, -2.0, 2.0);
    /* Rows of very different size: 1e-3 makes eps matter, 1e3 large. */
    for (int64_t row = 0; row < nc->rows; row++) {
      const float mul = row % 3 == 1 ? 1e-3f : row % 3 == 2 ? 1e3f : 1.0f;
      for (int64_t j = 0; j < nc->dim; j++)
        x[row * nc->dim + j] *= mul;
    }
    ref_rmsnorm(x, w, want, nc->rows, nc->dim, nc->eps);
    for (int l = 0; l <= kt->host_level; l++) {
      gk_rmsnorm_fn fn = (gk_rmsnorm_fn)lv.fn[l];
      if (!fn)
        continue;
      char what[160];
      snprintf(what, sizeof what, "rmsnorm %s rows=%lld dim=%lld eps=%g",
               ktest_levels[l], (long long)nc->rows, (long long)nc->dim,
               (double)nc->eps);
      ktest_running("%s", what);
      for (size_t i = 0; i < n; i++)
        y[i] = NAN;
      set_guard(y + n);
      fn(x, w, y, nc->rows, nc->dim, nc->eps);
      int bad = kref_check(what, KREF_F32, y, want, (int64_t)n, 1e-37,
                           norm_rtol(nc->dim), NULL);
      bad = bad || !guard_ok(what, y + n);
      /* In place: y == x gives the same result. */
      if (!bad) {
        float *xy = malloc(n * sizeof *xy);
        if (!xy)
          return failures + 1;
        memcpy(xy, x, n * sizeof *xy);
        strncat(what, " in place", sizeof what - strlen(what) - 1);
        ktest_running("%s", what);
        fn(xy, w, xy, nc->rows, nc->dim, nc->eps);
        bad = kref_check(what, KREF_F32, xy, y, (int64_t)n, 0.0, 0.0, NULL);
        free(xy);
      }
      failures += bad;
    }
    kref_guarded_free(x, n * sizeof *x);
    kref_guarded_free(w, (size_t)nc->dim * sizeof *w);
    free(y);
    free(want);
  }
  for (int l = 0; l <= kt->host_level; l++)
    if (lv.fn[l])
      printf("ok: rmsnorm %-9s %zu shapes\n", ktest_levels[l],
             sizeof norm_cases / sizeof norm_cases[0]);
  levels_unload(&lv);
  return failures;
}

/* ---- rope ---- */

typedef struct rope_case {
  int64_t n_tokens, n_heads, head_dim;
  int32_t pos_lo, pos_hi;
  float theta;
} rope_case;

static const rope_case rope_cases[] = {
    {1, 1, 2, 0, 0, 10000.0f},
    {3, 4, 64, 0, 16, 10000.0f},
    {2, 3, 10, 0, 100, 10000.0f},
    {5, 2, 128, 0, 4096, 500000.0f},
    {4, 3, 64, -1000, 1000, 10000.0f},
    {7, 1, 256, 0, 1000000, 10000.0f},
    {6, 8, 128, 1000000, 2147483647, 1000000.0f},
};

/*
 * Tolerance, absolute, relative to the largest |x| of the case: sin and
 * cos rounded to f32 (half an ulp each), two products and a sum (three
 * more), so about 5 half-ulps of |x0| + |x1| <= 2 max|x|: 8 * 2^-24 * max|x|.
 * Both sides form the angle in double, each within a few 2^-53 relative,
 * so the angles may differ by |pos| * 1e-15 radians (2e-6 at 2^31), which
 * moves x by that much times |x|. The reference's own rounding: 2^-24
 * relative.
 */
static int check_rope(ktest *kt) {
  levels lv;
  int failures = 0;
  levels_load(kt, &lv, "rope");
  for (size_t c = 0; c < sizeof rope_cases / sizeof rope_cases[0]; c++) {
    const rope_case *rc = &rope_cases[c];
    const size_t n = (size_t)(rc->n_tokens * rc->n_heads * rc->head_dim);
    float *x0 = malloc(n * sizeof *x0);
    float *x = malloc((n + GUARD) * sizeof *x);
    float *want = malloc(n * sizeof *want);
    int32_t *pos = kref_guarded_alloc((size_t)rc->n_tokens * sizeof *pos);
    if (!x0 || !x || !want || !pos) {
      printf("FAIL: out of memory making test data\n");
      return failures + 1;
    }
    qref_rng r;
    qref_seed(&r, 400 + c);
    kref_fill(&r, KREF_F32, x0, n, -3.0, 3.0);
    kref_fill_pos(&r, pos, (size_t)rc->n_tokens, rc->pos_lo, rc->pos_hi);
    pos[0] = rc->pos_lo; /* the edges of the range, always */
    pos[rc->n_tokens - 1] = rc->pos_hi;
    memcpy(want, x0, n * sizeof *want);
    ref_rope(want, pos, rc->n_tokens, rc->n_heads, rc->head_dim, rc->theta);
    double xmax = 0.0, pmax = 0.0;
    for (size_t i = 0; i < n; i++)
      xmax = fmax(xmax, fabs(x0[i]));
    for (int64_t t = 0; t < rc->n_tokens; t++)
      pmax = fmax(pmax, fabs((double)pos[t]));
    const double atol = xmax * (8.0 * 0x1p-24 + pmax * 1e-15);
    for (int l = 0; l <= kt->host_level; l++) {
      gk_rope_fn fn = (gk_rope_fn)lv.fn[l];
      if (!fn)
        continue;
      char what[160];
      snprintf(what, sizeof what, "rope %s tokens=%lld heads=%lld head_dim=%lld pos<=%d",
               ktest_levels[l], (long long)rc->n_tokens, (long long)rc->n_heads,
               (long long)rc->head_dim, (int)rc->pos_hi);
      ktest_running("%s", what);
      memcpy(x, x0, n * sizeof *x);
      set_guard(x + n);
      fn(x, pos, rc->n_tokens, rc->n_heads, rc->head_dim, rc->theta);
      failures += kref_check(what, KREF_F32, x, want, (int64_t)n, atol, 0x1p-24, NULL) ||
                  !guard_ok(what, x + n);
    }
    free(x0);
    free(x);
    free(want);
    kref_guarded_free(pos, (size_t)rc->n_tokens * sizeof *pos);
  }
  for (int l = 0; l <= kt->host_level; l++)
    if (lv.fn[l])
      printf("ok: rope %-9s %zu shapes\n", ktest_levels[l],
             sizeof rope_cases / sizeof rope_cases[0]);
  levels_unload(&lv);
  return failures;
}

/* ---- argmax ---- */

#define ARGMAX_KINDS 12

/* Row kind k of length n: random values with the edge case k puts in. */
static void argmax_row(qref_rng *r, float *x, int64_t n, int kind) {
  kref_fill(r, KREF_F32, x, (size_t)n, -10.0, 10.0);
  const int64_t a = (int64_t)(qref_next(r) % (uint64_t)n);
  const int64_t b = (int64_t)(qref_next(r) % (uint64_t)n);
  switch (kind) {
  case 1: /* the maximum twice: the lower index wins */
    x[a] = x[b] = 50.0f;
    break;
  case 2: /* NaNs everywhere but a few values */
    for (int64_t j = 0; j < n; j++)
      if (j != a && j != b)
        x[j] = NAN;
    break;
  case 3: /* all NaN: 0 */
    for (int64_t j = 0; j < n; j++)
      x[j] = (j % 2) ? NAN : -NAN;
    break;
  case 4: /* all -inf: index 0 */
    for (int64_t j = 0; j < n; j++)
      x[j] = -INFINITY;
    break;
  case 5: /* -inf and NaN: the first -inf */
    for (int64_t j = 0; j < n; j++)
      x[j] = j < a ? NAN : (j % 3 ? NAN : -INFINITY);
    break;
  case 6: /* +inf twice */
    x[a] = x[b] = INFINITY;
    break;
  case 7: /* NaN at 0 and right before the maximum */
    x[0] = NAN;
    x[n - 1] = 100.0f;
    if (n > 2)
      x[n - 2] = NAN;
    break;
  case 8: /* the maximum in the last element (a vector tail) */
    x[n - 1] = 99.0f;
    break;
  case 9: /* negative only, ties at the top */
    for (int64_t j = 0; j < n; j++)
      x[j] = -1.0f - (float)(j % 7);
    break;
  case 10: /* all equal: 0 */
    for (int64_t j = 0; j < n; j++)
      x[j] = 3.0f;
    break;
  case 11: /* -0 and +0 compare equal: the first zero */
    for (int64_t j = 0; j < n; j++)
      x[j] = j % 2 ? 0.0f : -0.0f;
    x[a] = -1.0f;
    break;
  default:
    break;
  }
}

static int check_argmax(ktest *kt) {
  static const int64_t widths[] = {1, 3, 17, 64, 67, 1000, 32000};
  levels lv;
  int failures = 0;
  levels_load(kt, &lv, "argmax");
  for (size_t c = 0; c < sizeof widths / sizeof widths[0]; c++) {
    const int64_t n = widths[c], rows = ARGMAX_KINDS;
    float *x = kref_guarded_alloc((size_t)(rows * n) * sizeof *x);
    int32_t *out = malloc((size_t)(rows + GUARD) * sizeof *out);
    int32_t want[ARGMAX_KINDS];
    if (!x || !out) {
      printf("FAIL: out of memory making test data\n");
      return failures + 1;
    }
    qref_rng r;
    qref_seed(&r, 500 + c);
    for (int64_t row = 0; row < rows; row++)
      argmax_row(&r, x + row * n, n, (int)row);
    ref_argmax(x, want, rows, n);
    for (int l = 0; l <= kt->host_level; l++) {
      gk_argmax_fn fn = (gk_argmax_fn)lv.fn[l];
      if (!fn)
        continue;
      char what[128];
      snprintf(what, sizeof what, "argmax %s n=%lld", ktest_levels[l], (long long)n);
      ktest_running("%s", what);
      for (int i = 0; i < rows + GUARD; i++)
        out[i] = -7;
      fn(x, out, rows, n);
      int bad = kref_check_i32(what, out, want, rows);
      for (int i = rows; i < rows + GUARD && !bad; i++)
        if (out[i] != -7) {
          printf("FAIL: %s: wrote past the end of out\n", what);
          bad = 1;
        }
      failures += bad;
    }
    kref_guarded_free(x, (size_t)(rows * n) * sizeof *x);
    free(out);
  }
  for (int l = 0; l <= kt->host_level; l++)
    if (lv.fn[l])
      printf("ok: argmax %-9s %zu widths x %d kinds of row\n", ktest_levels[l],
             sizeof widths / sizeof widths[0], ARGMAX_KINDS);
  levels_unload(&lv);
  return failures;
}

/* ---- sample ---- */

/* The cases and their data: tests/common (kref_sample_cases, shared with
 * the GPU tests). */
static int check_sample(ktest *kt) {
  levels lv;
  int failures = 0;
  levels_load(kt, &lv, "sample");
  for (size_t c = 0; c < kref_nsample_cases; c++) {
    const kref_sample_case *sc = &kref_sample_cases[c];
    float top_p;
    const size_t n = (size_t)(sc->rows * sc->n);
    float *logits = kref_guarded_alloc(n * sizeof *logits);
    float *u = kref_guarded_alloc((size_t)sc->rows * sizeof *u);
    int32_t *out = malloc((size_t)(sc->rows + GUARD) * sizeof *out);
    int32_t *want = malloc((size_t)sc->rows * sizeof *want);
    if (!logits || !u || !out || !want) {
      printf("FAIL: out of memory making test data\n");
      return failures + 1;
    }
    if (kref_sample_data(sc, 600 + c, logits, u, &top_p) != 0 ||
        ref_sample(logits, u, want, sc->rows, sc->n, sc->temperature, sc->top_k,
                   top_p) != 0) {
      failures++;
    } else {
      for (int l = 0; l <= kt->host_level; l++) {
        gk_sample_fn fn = (gk_sample_fn)lv.fn[l];
        if (!fn)
          continue;
        char what[160];
        snprintf(what, sizeof what,
                 "sample %s rows=%lld n=%lld temperature=%g top_k=%d top_p=%g%s",
                 ktest_levels[l], (long long)sc->rows, (long long)sc->n,
                 (double)sc->temperature, (int)sc->top_k, (double)top_p,
                 sc->nans ? " with NaNs" : "");
        ktest_running("%s", what);
        for (int64_t i = 0; i < sc->rows + GUARD; i++)
          out[i] = -7;
        fn(logits, u, out, sc->rows, sc->n, sc->temperature, sc->top_k, top_p);
        int bad = kref_check_i32(what, out, want, sc->rows);
        for (int64_t i = sc->rows; i < sc->rows + GUARD && !bad; i++)
          if (out[i] != -7) {
            printf("FAIL: %s: wrote past the end of out\n", what);
            bad = 1;
          }
        failures += bad;
      }
    }
    kref_guarded_free(logits, n * sizeof *logits);
    kref_guarded_free(u, (size_t)sc->rows * sizeof *u);
    free(out);
    free(want);
  }
  for (int l = 0; l <= kt->host_level; l++)
    if (lv.fn[l])
      printf("ok: sample %-9s %zu cases\n", ktest_levels[l], kref_nsample_cases);
  levels_unload(&lv);
  return failures;
}

/* The edge cases of docs/kernels.md that turn sample into argmax, each in
 * a row of its own: all NaN, all -inf, NaNs then -inf, +inf twice, and a
 * NaN temperature; and NaN logits around a top_k = 2 cut. */
static int check_sample_edges(ktest *kt) {
  enum { N = 37, ROWS = 5 };
  static float logits[ROWS * N];
  const float u[ROWS] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  for (int j = 0; j < N; j++) {
    logits[0 * N + j] = NAN;
    logits[1 * N + j] = -INFINITY;
    logits[2 * N + j] = j < 5 ? NAN : -INFINITY;
    logits[3 * N + j] = j == 7 || j == 30 ? INFINITY : (float)(j % 5);
    logits[4 * N + j] = j % 3 ? NAN : (float)j / 8.0f; /* top 2: 36, 33 */
  }
  int failures = 0;
  levels lv;
  levels_load(kt, &lv, "sample");
  const float temps[] = {1.0f, NAN};
  for (int l = 0; l <= kt->host_level; l++) {
    gk_sample_fn fn = (gk_sample_fn)lv.fn[l];
    for (size_t t = 0; fn && t < sizeof temps / sizeof temps[0]; t++) {
      int32_t want[ROWS], got[ROWS];
      /* top_k = 2 on the last row: p(36) = 1, p(33) = exp(-3/8); u = 0.5
       * is far from the boundary 1 / (1 + exp(-3/8)) = 0.59. */
      if (ref_sample(logits, u, want, ROWS, N, temps[t], 2, 1.0f) != 0)
        return failures + 1;
      char what[96];
      snprintf(what, sizeof what, "sample %s edge rows, temperature %g", ktest_levels[l],
               (double)temps[t]);
      ktest_running("%s", what);
      fn(logits, u, got, ROWS, N, temps[t], 2, 1.0f);
      failures += kref_check_i32(what, got, want, ROWS);
    }
  }
  levels_unload(&lv);
  if (!failures)
    printf("ok: sample edge rows (NaN, -inf, +inf, NaN temperature)\n");
  return failures;
}

/* How long one sample row of a 128k vocabulary takes with top-k and top-p
 * (the most passes), per level; printed for the record, not judged. */
static void time_sample(ktest *kt) {
  const int64_t n = 128000;
  float *logits = malloc((size_t)n * sizeof *logits);
  if (!logits)
    return;
  qref_rng r;
  qref_seed(&r, 700);
  kref_fill_logits(&r, logits, (size_t)n, 8.0);
  const float u = 0.5f;
  for (int l = 0; l <= kt->host_level; l++) {
    gk_module *mod;
    gk_sample_fn fn = (gk_sample_fn)ktest_load(kt, l, "sample", "", &mod);
    if (!fn)
      continue;
    int32_t out;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
      const double t0 = ktest_now();
      fn(logits, &u, &out, 1, n, 0.8f, 40, 0.9f);
      best = fmin(best, ktest_now() - t0);
    }
    printf("time: sample %s n=128000 top_k=40 top_p=0.9: %.3f ms CPU\n", ktest_levels[l],
           1e3 * best);
    gk_module_unload(mod);
  }
  free(logits);
}

int main(int argc, char **argv) {
  ktest kt;
  int rc = ktest_open(&kt, argc, argv);
  if (rc != 0)
    return rc;
  int failures = check_rmsnorm(&kt) + check_rope(&kt) + check_argmax(&kt) +
                 check_sample(&kt) + check_sample_edges(&kt);
  time_sample(&kt);
  failures += kt.failures;
  ktest_close(&kt);
  if (failures)
    printf("test_rowops: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
