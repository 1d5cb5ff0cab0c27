/*
 * test_attention.c ARCHIVE - the flash_attention images of a real archive,
 * loaded by libgk through its public API, against the scalar reference of
 * tests/common/kref.h (full score rows in double).
 *
 * Every variant (causal 0/1 x dtype f16/bf16/f32 x head_dim 64/128) on every
 * x86-64 level this CPU runs (levels above it are SKIPped, saying so), on
 * shapes that take each path of the kernel: decode (sq = 1), sq = skv, sq <
 * skv, sq > skv (causal rows with no key are zeros), skv = 0, skv shorter
 * than, equal to and not a multiple of the 32-key tile, grouped-query heads
 * (8 over 2) with more query rows per key head than one 16-row block, long
 * skv (2048), and peaked softmaxes (large scale) where the running maximum
 * moves from tile to tile. Inputs end right before an inaccessible page and
 * the output is followed by guard values, so reading or writing past a
 * tensor fails. bf16 is also checked bit for bit against the f32 variant
 * of the same level on the same (widened) inputs, rounded to nearest even:
 * the bf16 arithmetic is f32's plus one rounding, and kref's tolerance
 * (one bf16 ulp) would let a truncating kernel pass. Finally the decode case the kernel is tuned for (32 heads,
 * skv 4096, head_dim 128, f16) is timed on each level and checked too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kref.h"
#include "ktest.h"

typedef struct shape {
  int64_t n_heads, n_kv_heads, sq, skv;
  double scale_mul; /* scale = scale_mul / sqrt(head_dim) */
} shape;

static const shape shapes[] = {
    {4, 4, 1, 1, 1.0},     /* one key */
    {4, 4, 1, 100, 1.0},   /* decode */
    {2, 2, 37, 37, 1.0},   /* sq == skv: causal is the triangle */
    {3, 3, 7, 300, 1.0},   /* sq < skv: bottom-right aligned */
    {8, 2, 3, 129, 1.0},   /* GQA, skv = 4 tiles + 1 */
    {8, 2, 9, 70, 4.0},    /* GQA: 36 rows per key head, 3 blocks */
    {1, 1, 2, 31, 1.0},    /* shorter than a tile */
    {1, 1, 4, 32, 1.0},    /* exactly a tile */
    {2, 1, 5, 33, 8.0},    /* a tile + 1, very peaked */
    {2, 2, 6, 3, 1.0},     /* sq > skv: causal rows 0..2 see no key */
    {2, 2, 3, 0, 1.0},     /* no keys at all: zeros */
    {4, 2, 1, 2048, 1.0},  /* long decode, GQA */
    {2, 2, 16, 2048, 4.0}, /* long prefill chunk, peaked */
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Guard elements after o: the kernel must not write past it. */
#define GUARD 64

typedef struct tensors {
  size_t qo_n, kv_n, es;
  void *q, *k, *v, *want;
  unsigned char *o; /* (qo_n + GUARD) * es */
} tensors;

static void tensors_free(tensors *t) {
  kref_guarded_free(t->q, t->qo_n * t->es);
  kref_guarded_free(t->k, t->kv_n * t->es);
  kref_guarded_free(t->v, t->kv_n * t->es);
  free(t->want);
  free(t->o);
}

static int tensors_make(tensors *t, kref_dtype dt, int causal, int d,
                        const shape *s, uint64_t seed) {
  qref_rng r;
  memset(t, 0, sizeof *t);
  t->es = kref_dtype_size(dt);
  t->qo_n = (size_t)(s->n_heads * s->sq * d);
  t->kv_n = (size_t)(s->n_kv_heads * s->skv * d);
  t->q = kref_guarded_alloc(t->qo_n * t->es);
  t->k = kref_guarded_alloc(t->kv_n * t->es);
  t->v = kref_guarded_alloc(t->kv_n * t->es);
  t->want = malloc((t->qo_n + 1) * t->es);
  t->o = malloc((t->qo_n + GUARD) * t->es);
  if (!t->q || !t->k || !t->v || !t->want || !t->o)
    return -1;
  qref_seed(&r, seed);
  kref_fill(&r, dt, t->q, t->qo_n, -1.0, 1.0);
  kref_fill(&r, dt, t->k, t->kv_n, -1.0, 1.0);
  kref_fill(&r, dt, t->v, t->kv_n, -1.0, 1.0);
  const float scale = (float)(s->scale_mul / sqrt((double)d));
  return ref_flash_attention(causal, dt, d, t->q, t->k, t->v, t->want,
                             s->n_heads, s->n_kv_heads, s->sq, s->skv, scale);
}

/* Runs fn on t and compares; 0 when right. */
static int run_case(gk_flash_attention_fn fn, const char *what, kref_dtype dt,
                    int d, const shape *s, const tensors *t, double *worst) {
  const float scale = (float)(s->scale_mul / sqrt((double)d));
  /* NaN in o (f32, f16 and bf16 alike: 0xff bytes) shows an element never
   * written; the guard must stay as it was. */
  memset(t->o, 0xff, t->qo_n * t->es);
  for (size_t i = 0; i < GUARD * t->es; i++)
    t->o[t->qo_n * t->es + i] = (unsigned char)(0x5a + i);
  ktest_running("%s h=%lld kvh=%lld sq=%lld skv=%lld", what, (long long)s->n_heads,
                (long long)s->n_kv_heads, (long long)s->sq, (long long)s->skv);
  fn(t->q, t->k, t->v, t->o, s->n_heads, s->n_kv_heads, s->sq, s->skv, scale);

  double vmax = 0.0;
  for (size_t i = 0; i < t->kv_n; i++)
    vmax = fmax(vmax, fabs(kref_get(dt, t->v, i)));
  double atol, rtol;
  kref_attention_tolerance(dt, d, s->scale_mul, s->skv, vmax, 0, &atol, &rtol);
  char label[200];
  snprintf(label, sizeof label, "%s h=%lld kvh=%lld sq=%lld skv=%lld", what,
           (long long)s->n_heads, (long long)s->n_kv_heads, (long long)s->sq,
           (long long)s->skv);
  int bad = kref_check(label, dt, t->o, t->want, (int64_t)t->qo_n, atol, rtol, worst);
  for (size_t i = 0; i < GUARD * t->es && !bad; i++)
    if (t->o[t->qo_n * t->es + i] != (unsigned char)(0x5a + i)) {
      printf("FAIL: %s: wrote past the end of o (byte %zu after it)\n", label, i);
      bad = 1;
    }
  return bad;
}

/* bf16: o must be the f32 kernel's o on the same inputs (widened exactly),
 * rounded once to nearest even (kref_set rounds a float exactly so). 0 when
 * it is. */
static int check_bf16_rounding(gk_flash_attention_fn fn32, const char *what, int d,
                               const shape *s, const tensors *t) {
  const float scale = (float)(s->scale_mul / sqrt((double)d));
  const size_t n = 2 * t->qo_n + 2 * t->kv_n;
  float *w = malloc((n + 1) * sizeof *w);
  if (!w) {
    printf("FAIL: out of memory making test data\n");
    return 1;
  }
  float *q = w, *k = q + t->qo_n, *v = k + t->kv_n, *o = v + t->kv_n;
  for (size_t i = 0; i < t->qo_n; i++)
    q[i] = (float)kref_get(KREF_BF16, t->q, i);
  for (size_t i = 0; i < t->kv_n; i++) {
    k[i] = (float)kref_get(KREF_BF16, t->k, i);
    v[i] = (float)kref_get(KREF_BF16, t->v, i);
  }
  fn32(q, k, v, o, s->n_heads, s->n_kv_heads, s->sq, s->skv, scale);
  int bad = 0;
  for (size_t i = 0; i < t->qo_n && !bad; i++) {
    uint16_t want, got;
    kref_set(KREF_BF16, &want, 0, o[i]);
    memcpy(&got, t->o + i * 2, 2);
    if (got != want) {
      printf("FAIL: %s h=%lld sq=%lld skv=%lld: o[%zu] = bf16 0x%04x, the f32 variant's %a "
             "rounded to nearest even is 0x%04x\n", what, (long long)s->n_heads,
             (long long)s->sq, (long long)s->skv, i, got, (double)o[i], want);
      bad = 1;
    }
  }
  free(w);
  return bad;
}

static int check_variant(ktest *kt, int causal, kref_dtype dt, int d) {
  char variant[64], what[128];
  snprintf(variant, sizeof variant, "causal=%d,dtype=%s,head_dim=%d", causal,
           kref_dtype_name(dt), d);
  gk_module *mods[KTEST_NLEVELS] = {0};
  gk_module *mods32[KTEST_NLEVELS] = {0};
  gk_flash_attention_fn fns[KTEST_NLEVELS] = {0}, fns32[KTEST_NLEVELS] = {0};
  double worst[KTEST_NLEVELS] = {0};
  int failures = 0;
  char variant32[64];
  snprintf(variant32, sizeof variant32, "causal=%d,dtype=f32,head_dim=%d", causal, d);
  for (int l = 0; l <= kt->host_level; l++) {
    fns[l] = (gk_flash_attention_fn)ktest_load(kt, l, "flash_attention", variant,
                                               &mods[l]);
    if (dt == KREF_BF16)
      fns32[l] = (gk_flash_attention_fn)ktest_load(kt, l, "flash_attention", variant32,
                                                   &mods32[l]);
  }
  for (size_t c = 0; c < NSHAPES; c++) {
    tensors t;
    const uint64_t seed = 7000u + 100u * (unsigned)c + 10u * (unsigned)dt +
                          (unsigned)d + 1000000u * (unsigned)causal;
    if (tensors_make(&t, dt, causal, d, &shapes[c], seed) != 0) {
      printf("FAIL: out of memory making test data\n");
      tensors_free(&t);
      return failures + 1;
    }
    for (int l = 0; l <= kt->host_level; l++) {
      if (!fns[l])
        continue;
      snprintf(what, sizeof what, "flash_attention %s %s", variant, ktest_levels[l]);
      failures += run_case(fns[l], what, dt, d, &shapes[c], &t, &worst[l]);
      if (fns32[l])
        failures += check_bf16_rounding(fns32[l], what, d, &shapes[c], &t);
    }
    tensors_free(&t);
  }
  for (int l = 0; l <= kt->host_level; l++) {
    if (fns[l])
      printf("ok: flash_attention %s %-9s %zu shapes, worst error %.2f of tolerance\n",
             variant, ktest_levels[l], NSHAPES, worst[l]);
    gk_module_unload(mods[l]);
    gk_module_unload(mods32[l]);
  }
  return failures;
}

/* The decode step the kernel is tuned for, timed (best of 5) and checked
 * on every level; the times are printed for the record, not judged. */
static int time_decode(ktest *kt, int causal) {
  const int d = 128;
  const shape s = {32, 32, 1, 4096, 1.0};
  char variant[64], what[128];
  snprintf(variant, sizeof variant, "causal=%d,dtype=f16,head_dim=%d", causal, d);
  tensors t;
  int failures = 0;
  if (tensors_make(&t, KREF_F16, causal, d, &s, 99 + (uint64_t)causal) != 0) {
    printf("FAIL: out of memory making test data\n");
    tensors_free(&t);
    return 1;
  }
  const float scale = (float)(1.0 / sqrt((double)d));
  for (int l = 0; l <= kt->host_level; l++) {
    gk_module *mod;
    gk_flash_attention_fn fn =
        (gk_flash_attention_fn)ktest_load(kt, l, "flash_attention", variant, &mod);
    if (!fn)
      continue;
    snprintf(what, sizeof what, "flash_attention %s %s", variant, ktest_levels[l]);
    double worst = 0.0;
    failures += run_case(fn, what, KREF_F16, d, &s, &t, &worst);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
      const double t0 = ktest_now();
      fn(t.q, t.k, t.v, t.o, s.n_heads, s.n_kv_heads, s.sq, s.skv, scale);
      best = fmin(best, ktest_now() - t0);
    }
    printf("time: %s h=32 sq=1 skv=4096: %.2f ms CPU (%.1f GB/s of k and v)\n", what,
           1e3 * best, 2.0 * (double)t.kv_n * 2.0 / best * 1e-9);
    gk_module_unload(mod);
  }
  tensors_free(&t);
  return failures;
}

int main(int argc, char **argv) {
  ktest kt;
  int rc = ktest_open(&kt, argc, argv);
  if (rc != 0)
    return rc;
  int failures = 0;
  const kref_dtype dts[] = KREF_DTYPES;
  for (int causal = 0; causal <= 1; causal++)
    for (int i = 0; i < KREF_N_DTYPES; i++)
      for (int d = 64; d <= 128; d *= 2)
        failures += check_variant(&kt, causal, dts[i], d);
  for (int causal = 0; causal <= 1; causal++)
    failures += time_decode(&kt, causal);
  failures += kt.failures;
  ktest_close(&kt);
  if (failures)
    printf("test_attention: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
