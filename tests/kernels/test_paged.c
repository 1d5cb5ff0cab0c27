/*
 * test_paged.c ARCHIVE - the paged KV cache's cpu images (paged_attention
 * and kv_append, docs/kernels.md) of a real archive, loaded by libgk,
 * against the scalar references of tests/common/kref.h, and libgk's
 * gk_paged_check against the same rule.
 *
 * Every variant (dtype f16/bf16/f32 x head_dim 64/128 x page 16/64) on every
 * x86-64 level this CPU runs, on batches that mix what a serving loop
 * meets: decode and prefill chunks (sq 1, 5, 7: not a multiple of any
 * tile), sequences of length 0, 1 and shorter than sq (rows with no key
 * are zeros), lengths across page and tile boundaries, 1 KV head and
 * grouped-query heads, page tables in random order over a pool with spare
 * pages, and invalid sequences (negative length, a length past the table,
 * page ids past the pool, negative, INT32_MAX) next to valid ones: their
 * rows must be NaN and the others right. The pools end right before an
 * inaccessible page, so a kernel that reads the page id n_pages faults.
 * Then kv_append: the same bytes as the reference, nothing else of the
 * pools touched; and after it, paged_attention equals flash_attention
 * (causal) on each valid sequence's K/V gathered into contiguous tensors,
 * bit for bit: both run the same row arithmetic (attn_tile.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kref.h"
#include "ktest.h"

#define MAXS 8

typedef struct pcase {
  int64_t n_seqs, n_heads, n_kv_heads, sq;
  int32_t lens[MAXS];
  kref_paged_kind kind[MAXS];
  double scale_mul; /* scale = scale_mul / sqrt(head_dim) */
} pcase;

#define OK KREF_PAGED_OK
static const pcase cases[] = {
    /* decode batch, 1 KV head for 4 heads, lengths 1, 0, 37, 130 */
    {4, 4, 1, 1, {1, 0, 37, 130}, {OK, OK, OK, OK}, 1.0},
    /* prefill chunks of 5: a length of exactly sq, one past a page, one
     * shorter than sq (its first rows see no key), GQA 8 over 2 */
    {3, 8, 2, 5, {5, 70, 3}, {OK, OK, OK}, 4.0},
    /* invalid sequences between valid ones */
    {7, 2, 2, 3, {20, 0, 33, 0, 40, 17, 65},
     {OK, KREF_PAGED_NEG_LEN, OK, KREF_PAGED_PAST_TABLE, KREF_PAGED_PAGE_PAST_POOL,
      KREF_PAGED_PAGE_NEG, KREF_PAGED_PAGE_HUGE},
     1.0},
    /* sq = 7, peaked softmax, 1 KV head, a long and a just-full sequence */
    {2, 2, 1, 7, {300, 7}, {OK, OK}, 8.0},
};
#undef OK
#define NCASES (sizeof cases / sizeof cases[0])
#define GUARD 64

static int is_valid(kref_paged_kind k) { return k == KREF_PAGED_OK; }

/* The tensors of one case; pools and inputs end at an inaccessible page. */
typedef struct data {
  kref_dtype dt;
  int d, page;
  size_t es, qo_n, pool_n, new_n;
  int64_t max_pages, n_pages;
  int32_t lens[MAXS];
  int32_t *table, *lens_g; /* guarded copies */
  size_t table_n;
  void *q, *k_pool, *v_pool, *k_new, *v_new, *want;
  unsigned char *o; /* (qo_n + GUARD) * es */
} data;

static void data_free(data *t) {
  kref_guarded_free(t->q, t->qo_n * t->es);
  kref_guarded_free(t->k_pool, t->pool_n * t->es);
  kref_guarded_free(t->v_pool, t->pool_n * t->es);
  kref_guarded_free(t->table, t->table_n * 4);
  kref_guarded_free(t->lens_g, MAXS * 4);
  free(t->k_new);
  free(t->v_new);
  free(t->want);
  free(t->o);
}

static int data_make(data *t, kref_dtype dt, int d, int page, const pcase *c,
                     uint64_t seed) {
  qref_rng r;
  memset(t, 0, sizeof *t);
  t->dt = dt, t->d = d, t->page = page;
  t->es = kref_dtype_size(dt);
  qref_seed(&r, seed);
  memcpy(t->lens, c->lens, sizeof t->lens);
  int32_t *table = kref_make_paged_table(&r, page, c->n_seqs, t->lens, c->kind, 3,
                                         &t->max_pages, &t->n_pages);
  if (!table)
    return -1;
  t->table_n = (size_t)(c->n_seqs * t->max_pages);
  t->table = kref_guarded_alloc(t->table_n * 4);
  t->lens_g = kref_guarded_alloc(MAXS * 4);
  t->qo_n = (size_t)(c->n_seqs * c->n_heads * c->sq * d);
  t->pool_n = (size_t)(t->n_pages * c->n_kv_heads * page * d);
  t->new_n = (size_t)(c->n_seqs * c->n_kv_heads * c->sq * d);
  t->q = kref_guarded_alloc(t->qo_n * t->es);
  t->k_pool = kref_guarded_alloc(t->pool_n * t->es);
  t->v_pool = kref_guarded_alloc(t->pool_n * t->es);
  t->k_new = malloc(t->new_n * t->es);
  t->v_new = malloc(t->new_n * t->es);
  t->want = malloc((t->qo_n + 1) * t->es);
  t->o = malloc((t->qo_n + GUARD) * t->es);
  if (!t->table || !t->lens_g || !t->q || !t->k_pool || !t->v_pool || !t->k_new ||
      !t->v_new || !t->want || !t->o) {
    free(table);
    return -1;
  }
  memcpy(t->table, table, t->table_n * 4);
  free(table);
  memcpy(t->lens_g, t->lens, MAXS * 4);
  kref_fill(&r, dt, t->q, t->qo_n, -1.0, 1.0);
  kref_fill(&r, dt, t->k_pool, t->pool_n, -1.0, 1.0);
  kref_fill(&r, dt, t->v_pool, t->pool_n, -1.0, 1.0);
  kref_fill(&r, dt, t->k_new, t->new_n, -1.0, 1.0);
  kref_fill(&r, dt, t->v_new, t->new_n, -1.0, 1.0);
  return 0;
}

static float case_scale(const pcase *c, int d) {
  return (float)(c->scale_mul / sqrt((double)d));
}

static void label(char *buf, size_t n, const char *what, const pcase *c,
                  const int32_t *lens) {
  int len = snprintf(buf, n, "%s seqs=%lld h=%lld/%lld sq=%lld lens", what,
                     (long long)c->n_seqs, (long long)c->n_heads,
                     (long long)c->n_kv_heads, (long long)c->sq);
  for (int64_t s = 0; s < c->n_seqs && len > 0 && (size_t)len < n; s++)
    len += snprintf(buf + len, n - (size_t)len, "%s%d%s", s ? "," : "=", lens[s],
                    is_valid(c->kind[s]) ? "" : "!");
}

/* paged_attention against the reference, and the NaN rows of invalid
 * sequences bit for bit (f16 0x7e00, bf16 0x7fc0, f32 0x7fc00000). 0 when
 * right. */
static int check_attention(gk_paged_attention_fn fn, const char *what, const pcase *c,
                           data *t, double *worst) {
  const float scale = case_scale(c, t->d);
  char lab[300];
  label(lab, sizeof lab, what, c, t->lens);
  memset(t->o, 0xff, t->qo_n * t->es); /* 0xff..: never written shows as NaN */
  for (size_t i = 0; i < GUARD * t->es; i++)
    t->o[t->qo_n * t->es + i] = (unsigned char)(0x5a + i);
  ktest_running("%s", lab);
  fn(t->q, t->k_pool, t->v_pool, t->table, t->lens_g, t->o, c->n_seqs, c->n_heads,
     c->n_kv_heads, c->sq, t->max_pages, t->n_pages, scale);
  if (ref_paged_attention(t->dt, t->d, t->page, t->q, t->k_pool, t->v_pool, t->table,
                          t->lens_g, t->want, c->n_seqs, c->n_heads, c->n_kv_heads, c->sq,
                          t->max_pages, t->n_pages, scale) != 0) {
    printf("FAIL: %s: ref_paged_attention refused its arguments\n", lab);
    return 1;
  }
  double vmax = 0.0;
  for (size_t i = 0; i < t->pool_n; i++)
    vmax = fmax(vmax, fabs(kref_get(t->dt, t->v_pool, i)));
  int64_t longest = 1;
  for (int64_t s = 0; s < c->n_seqs; s++)
    if (is_valid(c->kind[s]) && t->lens[s] > longest)
      longest = t->lens[s];
  double atol, rtol;
  kref_attention_tolerance(t->dt, t->d, c->scale_mul, longest, vmax, 0, &atol, &rtol);
  int bad = kref_check(lab, t->dt, t->o, t->want, (int64_t)t->qo_n, atol, rtol, worst);
  const size_t per_seq = t->qo_n / (size_t)c->n_seqs;
  const uint32_t qnan = t->dt == KREF_F16 ? 0x7e00u : t->dt == KREF_BF16 ? 0x7fc0u : 0x7fc00000u;
  for (int64_t s = 0; s < c->n_seqs && !bad; s++) {
    if (is_valid(c->kind[s]))
      continue;
    for (size_t e = (size_t)s * per_seq; e < (size_t)(s + 1) * per_seq && !bad; e++) {
      uint32_t bits = 0;
      memcpy(&bits, t->o + e * t->es, t->es);
      if (bits != qnan) {
        printf("FAIL: %s: invalid sequence %lld, element %zu = 0x%x, not the quiet NaN\n",
               lab, (long long)s, e, bits);
        bad = 1;
      }
    }
  }
  for (size_t i = 0; i < GUARD * t->es && !bad; i++)
    if (t->o[t->qo_n * t->es + i] != (unsigned char)(0x5a + i)) {
      printf("FAIL: %s: wrote past the end of o\n", lab);
      bad = 1;
    }
  return bad;
}

/* kv_append on copies of the pools against ref_kv_append on other copies:
 * the same bytes everywhere (what it writes, and nothing else). Leaves the
 * kernel's pools in t (for the flash_attention comparison). */
static int check_append(gk_kv_append_fn fn, const char *what, const pcase *c, data *t) {
  char lab[300];
  label(lab, sizeof lab, what, c, t->lens);
  const size_t bytes = t->pool_n * t->es;
  void *wk = malloc(bytes), *wv = malloc(bytes);
  if (!wk || !wv) {
    free(wk), free(wv);
    printf("FAIL: out of memory\n");
    return 1;
  }
  memcpy(wk, t->k_pool, bytes);
  memcpy(wv, t->v_pool, bytes);
  ref_kv_append(t->dt, t->d, t->page, t->k_new, t->v_new, wk, wv, t->table, t->lens_g,
                c->n_seqs, c->n_kv_heads, c->sq, t->max_pages, t->n_pages);
  ktest_running("%s", lab);
  fn(t->k_new, t->v_new, t->k_pool, t->v_pool, t->table, t->lens_g, c->n_seqs,
     c->n_kv_heads, c->sq, t->max_pages, t->n_pages);
  int bad = 0;
  for (int p = 0; p < 2 && !bad; p++) {
    const unsigned char *got = p ? t->v_pool : t->k_pool, *want = p ? wv : wk;
    for (size_t i = 0; i < bytes; i++)
      if (got[i] != want[i]) {
        printf("FAIL: %s: %s byte %zu = 0x%02x, expected 0x%02x\n", lab,
               p ? "v_pool" : "k_pool", i, got[i], want[i]);
        bad = 1;
        break;
      }
  }
  free(wk), free(wv);
  return bad;
}

/* After kv_append: each valid sequence's o rows (from paged_attention)
 * equal flash_attention causal=1 on its K/V gathered contiguous, bit for
 * bit. */
static int check_vs_flash(gk_paged_attention_fn pa, gk_flash_attention_fn fa,
                          const char *what, const pcase *c, data *t) {
  const float scale = case_scale(c, t->d);
  const int64_t D = t->d, P = t->page;
  char lab[300];
  label(lab, sizeof lab, what, c, t->lens);
  ktest_running("%s", lab);
  pa(t->q, t->k_pool, t->v_pool, t->table, t->lens_g, t->o, c->n_seqs, c->n_heads,
     c->n_kv_heads, c->sq, t->max_pages, t->n_pages, scale);
  const size_t per_seq = (size_t)(c->n_heads * c->sq * D);
  int bad = 0;
  for (int64_t s = 0; s < c->n_seqs && !bad; s++) {
    if (!is_valid(c->kind[s]))
      continue;
    const int64_t len = t->lens[s];
    const size_t kv_n = (size_t)(c->n_kv_heads * len * D);
    unsigned char *k = malloc(kv_n * t->es + 1), *v = malloc(kv_n * t->es + 1);
    unsigned char *o = malloc(per_seq * t->es);
    if (!k || !v || !o) {
      free(k), free(v), free(o);
      printf("FAIL: out of memory\n");
      return 1;
    }
    for (int64_t hk = 0; hk < c->n_kv_heads; hk++)
      for (int64_t j = 0; j < len; j++) {
        const int32_t pg = t->table[s * t->max_pages + j / P];
        const size_t from = (size_t)(((pg * c->n_kv_heads + hk) * P + j % P) * D) * t->es;
        const size_t to = (size_t)((hk * len + j) * D) * t->es;
        memcpy(k + to, (unsigned char *)t->k_pool + from, (size_t)D * t->es);
        memcpy(v + to, (unsigned char *)t->v_pool + from, (size_t)D * t->es);
      }
    fa((unsigned char *)t->q + (size_t)s * per_seq * t->es, k, v, o, c->n_heads,
       c->n_kv_heads, c->sq, len, scale);
    if (memcmp(o, t->o + (size_t)s * per_seq * t->es, per_seq * t->es) != 0) {
      printf("FAIL: %s: sequence %lld: paged_attention after kv_append differs from "
             "flash_attention on the gathered K/V\n",
             lab, (long long)s);
      bad = 1;
    }
    free(k), free(v), free(o);
  }
  return bad;
}

/* gk_paged_check agrees with the case's kinds, sequence by sequence and on
 * the whole batch (the first invalid one), and says why in words. */
static int check_checker(const pcase *c, const data *t) {
  int bad = 0;
  int64_t first = -1;
  char msg[256];
  for (int64_t s = 0; s < c->n_seqs; s++) {
    int64_t which = 7;
    const int rc = gk_paged_check(t->table + s * t->max_pages, t->lens_g + s, 1,
                                  t->max_pages, t->n_pages, t->page, 0, &which, msg,
                                  sizeof msg);
    const int want = is_valid(c->kind[s]) ? GK_OK : GK_EINVAL;
    if (rc != want || which != (rc == GK_OK ? -1 : 0)) {
      printf("FAIL: gk_paged_check page=%d sequence %lld: %d (%lld), expected %d: %s\n",
             t->page, (long long)s, rc, (long long)which, want, msg);
      bad = 1;
    }
    if (first < 0 && want != GK_OK)
      first = s;
  }
  int64_t which = 7;
  const int rc = gk_paged_check(t->table, t->lens_g, c->n_seqs, t->max_pages, t->n_pages,
                                t->page, 0, &which, msg, sizeof msg);
  if (which != first || rc != (first < 0 ? GK_OK : GK_EINVAL)) {
    printf("FAIL: gk_paged_check page=%d batch: %d, sequence %lld, expected %lld: %s\n",
           t->page, rc, (long long)which, (long long)first, msg);
    bad = 1;
  }
  return bad;
}

static int check_variant(ktest *kt, kref_dtype dt, int d, int page) {
  char variant[64], fvariant[64], what[160];
  snprintf(variant, sizeof variant, "dtype=%s,head_dim=%d,page=%d", kref_dtype_name(dt), d,
           page);
  snprintf(fvariant, sizeof fvariant, "causal=1,dtype=%s,head_dim=%d", kref_dtype_name(dt),
           d);
  int failures = 0;
  double worst[KTEST_NLEVELS] = {0};
  gk_module *mods[KTEST_NLEVELS][3] = {{0}};
  void *fns[KTEST_NLEVELS][3] = {{0}};
  for (int l = 0; l <= kt->host_level; l++) {
    fns[l][0] = ktest_load(kt, l, "paged_attention", variant, &mods[l][0]);
    fns[l][1] = ktest_load(kt, l, "kv_append", variant, &mods[l][1]);
    fns[l][2] = ktest_load(kt, l, "flash_attention", fvariant, &mods[l][2]);
  }
  for (size_t c = 0; c < NCASES; c++) {
    const uint64_t seed = 9100u + 100u * (unsigned)c + 10u * (unsigned)dt + (unsigned)d +
                          1000u * (unsigned)page;
    for (int l = 0; l <= kt->host_level; l++) {
      if (!fns[l][0] || !fns[l][1] || !fns[l][2])
        continue;
      data t; /* fresh pools per level: kv_append changes them */
      if (data_make(&t, dt, d, page, &cases[c], seed) != 0) {
        printf("FAIL: out of memory making test data\n");
        data_free(&t);
        return failures + 1;
      }
      if (l == 0)
        failures += check_checker(&cases[c], &t);
      snprintf(what, sizeof what, "paged_attention %s %s", variant, ktest_levels[l]);
      failures += check_attention((gk_paged_attention_fn)fns[l][0], what, &cases[c], &t,
                                  &worst[l]);
      snprintf(what, sizeof what, "kv_append %s %s", variant, ktest_levels[l]);
      failures += check_append((gk_kv_append_fn)fns[l][1], what, &cases[c], &t);
      snprintf(what, sizeof what, "kv_append + paged_attention %s %s", variant,
               ktest_levels[l]);
      failures += check_vs_flash((gk_paged_attention_fn)fns[l][0],
                                 (gk_flash_attention_fn)fns[l][2], what, &cases[c], &t);
      data_free(&t);
    }
  }
  for (int l = 0; l <= kt->host_level; l++) {
    if (fns[l][0])
      printf("ok: paged_attention+kv_append %s %-9s %zu batches, worst error %.2f of "
             "tolerance\n",
             variant, ktest_levels[l], NCASES, worst[l]);
    for (int i = 0; i < 3; i++)
      gk_module_unload(mods[l][i]);
  }
  return failures;
}

/* gk_paged_check's messages name the sequence and the entry, and its
 * arguments are checked. */
static int check_messages(void) {
  /* page 4, max_pages 3, a pool of 10 pages */
  static const int32_t table[] = {0, 1, -1, /* s0: 5 tokens, ok */
                                  2, 10, -1, /* s1: 6 tokens, entry 1 past the pool */
                                  3, 4, 5}; /* s2: 13 tokens: 4 pages > 3 */
  static const int32_t lens[] = {5, 6, 13};
  static const struct {
    int64_t n, min_len;
    int rc;
    int64_t which;
    const char *has;
  } want[] = {
      {1, 0, GK_OK, -1, ""},
      {2, 0, GK_EINVAL, 1, "sequence 1: block_table[1][1] = 10 (its page 1, tokens 4 .. 5)"},
      {1, 6, GK_EINVAL, 0, "sequence 0: seq_lens[0] = 5 is shorter than the 6 new rows"},
  };
  int bad = 0;
  char msg[256];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int64_t which = 7;
    const int rc = gk_paged_check(table, lens, want[i].n, 3, 10, 4, want[i].min_len, &which,
                                  msg, sizeof msg);
    if (rc != want[i].rc || which != want[i].which || !strstr(msg, want[i].has)) {
      printf("FAIL: gk_paged_check case %zu: %d, sequence %lld, '%s'; expected %d, %lld, "
             "'%s'\n",
             i, rc, (long long)which, msg, want[i].rc, (long long)want[i].which,
             want[i].has);
      bad = 1;
    }
  }
  int64_t which = 7;
  if (gk_paged_check(table + 6, lens + 2, 1, 3, 10, 4, 0, &which, msg, sizeof msg) !=
          GK_EINVAL ||
      which != 0 || !strstr(msg, "needs 4 pages of 4 tokens, past the table's max_pages = 3")) {
    printf("FAIL: gk_paged_check, a length past the table: '%s'\n", msg);
    bad = 1;
  }
  if (gk_paged_check(NULL, lens, 1, 3, 10, 4, 0, &which, msg, sizeof msg) != GK_EINVAL ||
      which != -1 || !strstr(msg, "block_table is NULL") ||
      gk_paged_check(table, lens, 1, 3, 10, 0, 0, NULL, NULL, 0) != GK_EINVAL ||
      gk_paged_check(NULL, NULL, 0, 0, 0, 16, 0, NULL, NULL, 0) != GK_OK) {
    printf("FAIL: gk_paged_check's argument checks\n");
    bad = 1;
  }
  printf("%s: gk_paged_check's messages and arguments\n", bad ? "FAIL" : "ok");
  return bad;
}

int main(int argc, char **argv) {
  ktest kt;
  int rc = ktest_open(&kt, argc, argv);
  if (rc != 0)
    return rc;
  int failures = check_messages();
  const kref_dtype dts[] = KREF_DTYPES;
  for (int i = 0; i < KREF_N_DTYPES; i++)
    for (int d = 64; d <= 128; d *= 2)
      for (int page = 16; page <= 64; page *= 4)
        failures += check_variant(&kt, dts[i], d, page);
  failures += kt.failures;
  ktest_close(&kt);
  if (failures)
    printf("test_paged: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
