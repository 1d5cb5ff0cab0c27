/*
 * test_gpu.c ARCHIVE [CPU_ARCHIVE] [--small] [--probe] [--libcuda PATH] -
 * every cuda kernel x variant x entry point of a real archive, run on a
 * real NVIDIA GPU and compared with the CPU image of the same kernel and
 * variant (from CPU_ARCHIVE, default ARCHIVE: one archive may hold both),
 * on awkward shapes: n not a multiple of the tile, m = 1, 3, 17, 130, k = 32 and
 * 4096, attention rows not a multiple of the query tile, skv < sq causal,
 * one KV head, grouped heads, no keys.
 *
 * Images: the one libgk selects and loads for the detected device
 * (gk_module_load), and every other cuda row this card can run
 * (gk_archive_explain says which; on an H100: sm_90 beside the chosen
 * sm_90a, and the compute_75 PTX, which the driver JIT-compiles). gk.h has
 * no call to load a chosen row, and selection never picks PTX where a
 * cubin fits, so those rows are read through gk_archive_read (their
 * SHA-256 and header checked) and loaded here with cuModuleLoadDataEx:
 * libgk's own PTX path (cuLibraryLoadData of PTX) runs only on cards that
 * no cubin fits. Every launch follows its row's `launch` JSON
 * (tests/common/launch.c), and each case runs twice more: with the grid
 * cut to 2 x 1 x 1 blocks (the kernels loop over the rest; the same bits
 * are required) and, for qmatmul, the batch's last row alone (the same
 * bits: docs/kernels.md). Outputs start as 0xff bytes (NaN, -1) and are
 * followed by guard bytes a write past the end would change. The harness
 * (images, device memory, launches) is gpu_run.c.
 *
 * Tolerances against the CPU image. Each side is within its error model of
 * the exact result (tests/kernels, tests/backends/cuda/test_emu.cpp), so they may
 * differ by the sum of the two: qmatmul 1e-5 * sum_t |x_t w_t| (the bound
 * of docs/weights.md, which the CPU kernel meets with 250x to spare; the
 * GPU sums in another order), qmatmul_q8x the CPU's q8x bit for bit (the
 * arithmetic is defined operation by operation: docs/weights.md);
 * flash_attention the sum of both sides' error models (kref_attention_
 * tolerance: the GPU's f16 and bf16 path rounds p to its type for the tensor cores);
 * rmsnorm 1e-5 relative + 1e-6 (tests/backends/vulkan's); rope twice the emulator's
 * model (the angle in double on both); argmax and sample exact (sample's
 * data keeps every decision 1e-4 from flipping).
 *
 * --small: small shapes and the selected image only, for compute-sanitizer
 * (memcheck, racecheck), which slows kernels 10-100x. --probe: only look
 * for the GPU. --libcuda: the driver library (default libcuda.so.1).
 * Exit 0, 1 after any failure, 77 (SKIP, saying why) without a usable
 * NVIDIA GPU: no libcuda.so.1, cuInit failed, no device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_run.h"
#include "kref.h"
#include "qref.h"

/* ---- qmatmul ------------------------------------------------------------------ */

static void qmatmul_args(args *a, cu_deviceptr x, cu_deviceptr w, cu_deviceptr y,
                         int64_t m, int64_t n, int64_t k) {
  memset(a, 0, sizeof *a);
  add_arg(a, gk_arg_ptr(x)), add_arg(a, gk_arg_ptr(w)), add_arg(a, gk_arg_ptr(y));
  add_arg(a, gk_arg_i64(m)), add_arg(a, gk_arg_i64(n)), add_arg(a, gk_arg_i64(k));
}

/* The CPU image's y for `entry`: qmatmul on W as it is; qmatmul_q8x (x
 * rounded to int8 per block, docs/weights.md) on W repacked by the CPU
 * image, the layout its q8x reads, while the GPU entry takes the original
 * blocks. 0, or -1 when the CPU image has no such entry. */
static int qmatmul_ref(const kv *t, const char *entry, const float *x, const unsigned char *w,
                       size_t wb, float *y, int64_t m, int64_t n, int64_t k) {
  if (strcmp(entry, "qmatmul") == 0) {
    gk_qmatmul_fn f = (gk_qmatmul_fn)gk_module_symbol(t->cpu, "qmatmul");
    if (!f) return -1;
    f(x, w, y, m, n, k);
    return 0;
  }
  if (strcmp(entry, "qmatmul_q8x") == 0) {
    gk_qmatmul_repack_fn pack = (gk_qmatmul_repack_fn)gk_module_symbol(t->cpu, "qmatmul_repack");
    gk_qmatmul_fn f = (gk_qmatmul_fn)gk_module_symbol(t->cpu, "qmatmul_q8x");
    unsigned char *packed = malloc(wb);
    int rc = -1;
    if (pack && f && packed && pack(w, packed, n, k) == 0) {
      f(x, packed, y, m, n, k);
      rc = 0;
    }
    free(packed);
    return rc;
  }
  return -1;
}

/* qmatmul_q8x_x then `mul` (GPU images only), on every image, and the
 * same with a grid cut: qmatmul_q8x_mm (int8 tensor cores) with
 * tests/common's qref_q8x_mm bits (the arithmetic docs/weights.md defines
 * for it), qmatmul_q8x_rec with the CPU image's qmatmul_q8x bits (wants:
 * the caller's, from that image). */
static void check_q8x_pair(kv *t, const char *mul, int bits, const float *x,
                           const unsigned char *w, const float *wants, cu_deviceptr dx,
                           cu_deviceptr dw, cu_deviceptr dy, int64_t m, int64_t n, int64_t k) {
  const size_t yb = (size_t)(m * n) * sizeof(float), xqb = (size_t)(m * (k / 32)) * 48;
  const int mm = strcmp(mul, "qmatmul_q8x_mm") == 0;
  float *want = malloc(yb + 1), *got = malloc(yb + 1), *again = malloc(yb + 1);
  if (!want || !got || !again || (mm && qref_q8x_mm(bits, x, w, m, n, k, want) != 0)) {
    failf("%s: out of host memory", mul);
    free(want), free(got), free(again);
    return;
  }
  if (!mm) memcpy(want, wants, yb);
  cu_deviceptr dxq = dnew(NULL, xqb);
  for (int i = 0; i < t->nimages; i++) {
    const image *im = &t->img[i];
    const int ex = entry_of(im, "qmatmul_q8x_x"), em = entry_of(im, mul);
    char what[240];
    snprintf(what, sizeof what, "qmatmul_q8x_x + %s bits=%d m=%lld n=%lld k=%lld on %s",
             mul + strlen("qmatmul_q8x"), bits, (long long)m, (long long)n, (long long)k,
             im->label);
    if (ex < 0 || em < 0) {
      failf("%s: the row lacks one of the pair", what);
      continue;
    }
    cases++;
    for (int cut = 0; cut < 2; cut++) {
      args a;
      memset(&a, 0, sizeof a);
      add_arg(&a, gk_arg_ptr(dx)), add_arg(&a, gk_arg_ptr(dxq));
      add_arg(&a, gk_arg_i64(m)), add_arg(&a, gk_arg_i64(k));
      dclear(dxq, xqb);
      if (run(im, ex, &a, cut ? CAP : NULL, what)) break;
      qmatmul_args(&a, dxq, dw, dy, m, n, k);
      dclear(dy, yb);
      if (run(im, em, &a, cut ? CAP : NULL, what) || dget(cut ? again : got, dy, yb, what)) break;
      if (cut)
        same_bits(got, again, yb, what, "grids cut to 2 x 1 x 1 blocks");
      else
        same_bits(want, got, yb, what,
                  mm ? "qref_q8x_mm's arithmetic (docs/weights.md)"
                     : "the CPU image's qmatmul_q8x (docs/weights.md)");
    }
  }
  dfree(dxq);
  free(want), free(got), free(again);
}

static void check_qmatmul(kv *t) {
  /* m = 130: both halves of qmatmul_q8x_mm's 128-row tile and a second
   * tile (each warp's 4 ldmatrix row tiles hold real rows). */
  static const int64_t full[][3] = {{1, 37, 32},     {3, 37, 32},     {17, 37, 32},
                                    {1, 1000, 4096}, {3, 1000, 4096}, {17, 1000, 4096},
                                    {5, 129, 1024},  {1, 3, 4128},    {4, 8, 64},
                                    {130, 37, 64}};
  static const int64_t tiny[][3] = {{1, 37, 32}, {3, 9, 64}, {17, 10, 256}, {130, 9, 64}};
  const int64_t(*shapes)[3] = small_shapes ? tiny : full;
  const size_t nshapes =
      small_shapes ? sizeof tiny / sizeof tiny[0] : sizeof full / sizeof full[0];
  int bits = 0;
  if (sscanf(t->variant, "bits=%d", &bits) != 1) {
    failf("qmatmul: variant '%s' is not bits=N", t->variant);
    return;
  }
  for (size_t s = 0; s < nshapes; s++) {
    const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    const size_t wb = qref_w_bytes(bits, n, k), yb = (size_t)(m * n) * sizeof(float);
    qref_rng r;
    qref_seed(&r, (uint64_t)(bits * 1000003 + m * 7919 + n * 31 + k));
    float *x = malloc((size_t)(m * k) * sizeof *x), *want = malloc(yb), *got = malloc(yb),
          *again = malloc(yb);
    unsigned char *w = malloc(wb);
    double *exact = malloc((size_t)(m * n) * sizeof *exact),
           *mag = malloc((size_t)(m * n) * sizeof *mag);
    qref_fill_x(&r, x, (size_t)(m * k));
    qref_fill_w(&r, bits, n, k, w);
    qref_matmul(bits, x, w, m, n, k, exact, mag);
    cu_deviceptr dx = dnew(x, (size_t)(m * k) * sizeof *x), dw = dnew(w, wb), dy = dnew(NULL, yb);
    for (int e0 = 0; e0 < t->img[0].nentries; e0++) {
      const char *entry = t->img[0].entry[e0];
      if (strcmp(entry, "qmatmul_q8x_x") == 0) continue; /* with _mm and _rec, below */
      if (strcmp(entry, "qmatmul_q8x_mm") == 0) {
        check_q8x_pair(t, entry, bits, x, w, NULL, dx, dw, dy, m, n, k);
        continue;
      }
      if (strcmp(entry, "qmatmul_q8x_rec") == 0) {
        if (qmatmul_ref(t, "qmatmul_q8x", x, w, wb, want, m, n, k) != 0)
          failf("qmatmul_q8x_rec: the CPU image has no qmatmul_q8x to compare with");
        else
          check_q8x_pair(t, entry, bits, x, w, want, dx, dw, dy, m, n, k);
        continue;
      }
      char what[160];
      snprintf(what, sizeof what, "qmatmul bits=%d %s m=%lld n=%lld k=%lld", bits, entry,
               (long long)m, (long long)n, (long long)k);
      if (qmatmul_ref(t, entry, x, w, wb, want, m, n, k) != 0) {
        failf("%s: no test for this entry (the CPU image has none of that name to compare with)",
              what);
        continue;
      }
      for (int i = 0; i < t->nimages; i++) {
        const image *im = &t->img[i];
        const int e = entry_of(im, entry);
        char where[240];
        snprintf(where, sizeof where, "%s on %s", what, im->label);
        if (e < 0) {
          failf("%s: the row lacks this entry (the chosen row has it)", where);
          continue;
        }
        args a;
        cases++;
        dclear(dy, yb);
        qmatmul_args(&a, dx, dw, dy, m, n, k);
        if (run(im, e, &a, NULL, what) || dget(got, dy, yb, where)) continue;
        /* qmatmul_q8x's arithmetic is defined operation by operation, and
         * the GPU body follows it: the CPU image's bits exactly. */
        const int q8x = strcmp(entry, "qmatmul_q8x") == 0;
        for (int64_t j = 0; j < m * n; j++)
          if (q8x ? memcmp(&got[j], &want[j], sizeof got[j]) != 0
                  : !(fabs((double)got[j] - want[j]) <= 1e-5 * mag[j] + 1e-30)) {
            failf("%s: y[%lld] = %.9g, CPU image %.9g, exact %.9g (%s)", where, (long long)j,
                  got[j], want[j], exact[j], q8x ? "the same bits required" : "tolerance 1e-5 * sum |x w|");
            break;
          }
        dclear(dy, yb);
        qmatmul_args(&a, dx, dw, dy, m, n, k);
        if (!run(im, e, &a, CAP, what) && !dget(again, dy, yb, where))
          same_bits(got, again, yb, where, "a grid cut to 2 x 1 x 1 blocks");
        if (m > 1) { /* the last row alone: its bits in the batch, and y's other rows untouched */
          dclear(dy, yb);
          qmatmul_args(&a, dx + (size_t)((m - 1) * k) * sizeof(float), dw, dy, 1, n, k);
          if (!run(im, e, &a, NULL, what) && !dget(again, dy, yb, where) &&
              !same_bits(got + (m - 1) * n, again, (size_t)n * sizeof(float), where,
                         "the last row of x alone")) {
            const unsigned char *rest = (const unsigned char *)(again + n);
            for (size_t j = 0; j < (size_t)((m - 1) * n) * sizeof(float); j++)
              if (rest[j] != 0xff) {
                failf("%s: with m = 1 it wrote past row 0 of y", where);
                break;
              }
          }
        }
      }
    }
    dfree(dx), dfree(dw), dfree(dy);
    free(x), free(want), free(got), free(again), free(w), free(exact), free(mag);
  }
}

/* ---- flash_attention ------------------------------------------------------------ */

/* The workspace of attention's cross-block split (docs/kernels.md): a
 * zeroed buffer with counters for `units` (sequence, KV head) pairs and a
 * slot per 256 keys of each. */
typedef struct fa_ws {
  cu_deviceptr p;
  size_t bytes;
  int64_t units;
} fa_ws;

static fa_ws fa_ws_new(int64_t units, int64_t keys, int64_t rows, int d) {
  fa_ws w = {0, kref_attention_ws_bytes(units, keys, rows, d), units};
  void *zero = calloc(1, w.bytes);
  w.p = dnew(zero, w.bytes);
  free(zero);
  return w;
}

/* Each call must leave the counters zero, as it found them, and write
 * nothing past the workspace. */
static void fa_ws_check(const fa_ws *w, const char *what) {
  unsigned *c = malloc(w->bytes);
  if (!c) {
    failf("out of host memory");
    return;
  }
  if (dget(c, w->p, w->bytes, what) == 0)
    for (int64_t i = 0; i < w->units; i++)
      if (c[i] != 0) {
        failf("%s: workspace counter %lld left at %u (must be 0 after each call)", what,
              (long long)i, c[i]);
        break;
      }
  free(c);
}

static void fa_args(args *a, cu_deviceptr q, cu_deviceptr k, cu_deviceptr v,
                    cu_deviceptr o, int64_t h, int64_t hk, int64_t sq, int64_t skv, float scale,
                    const fa_ws *ws) {
  memset(a, 0, sizeof *a);
  add_arg(a, gk_arg_ptr(q)), add_arg(a, gk_arg_ptr(k)), add_arg(a, gk_arg_ptr(v)), add_arg(a, gk_arg_ptr(o));
  add_arg(a, gk_arg_i64(h)), add_arg(a, gk_arg_i64(hk));
  add_arg(a, gk_arg_i64(sq)), add_arg(a, gk_arg_i64(skv));
  add_arg(a, gk_arg_f32(scale));
  add_arg(a, gk_arg_ptr(ws->p)), add_arg(a, gk_arg_i64((int64_t)ws->bytes));
}

static void check_attention(kv *t) {
  typedef struct {
    int64_t h, hk, sq, skv;
    double scale_mul;
  } shape;
  static const shape full[] = {
      {4, 1, 1, 200, 1.0},   /* decode, one KV head */
      {4, 2, 37, 37, 1.0},   /* rows not a multiple of the query tile */
      {8, 2, 50, 20, 1.0},   /* skv < sq: causal rows with no key are zeros */
      {4, 4, 100, 300, 1.0}, /* equal heads, several key tiles */
      {32, 8, 70, 129, 1.0}, /* grouped heads 4:1 */
      {2, 1, 33, 33, 8.0},   /* peaked softmax */
      {2, 2, 3, 0, 1.0},     /* no keys: zeros */
      {2, 1, 17, 1000, 1.0}, /* long keys */
      {32, 8, 1, 4100, 1.0}, /* decode split across 17 blocks a KV head */
      {8, 2, 3, 1500, 1.0},  /* speculative decode, split */
      {8, 2, 3, 200, 1.0},   /* rows g + 8 before rows g; the last step ends at skv */
      {32, 8, 16, 2000, 1.0}, /* speculative decode of 16: 4 fragments a KV head, split */
  };
  static const shape tiny[] = {{4, 2, 17, 33, 1.0}, {2, 1, 5, 3, 1.0}};
  const shape *shapes = small_shapes ? tiny : full;
  const size_t nshapes = small_shapes ? 2 : sizeof full / sizeof full[0];
  int causal, d;
  char dts[8];
  kref_dtype dt;
  if (sscanf(t->variant, "causal=%d,dtype=%7[^,],head_dim=%d", &causal, dts, &d) != 3 ||
      kref_dtype_parse(dts, &dt) != 0) {
    failf("flash_attention: variant '%s' is not causal=C,dtype=T,head_dim=D", t->variant);
    return;
  }
  gk_flash_attention_fn cpu = (gk_flash_attention_fn)gk_module_symbol(t->cpu, "flash_attention");
  const int e0 = entry_of(&t->img[0], "flash_attention");
  if (!cpu || e0 < 0 || t->img[0].nentries != 1) {
    failf("flash_attention %s: entries differ from docs/kernels.md's one", t->variant);
    return;
  }
  for (size_t s = 0; s < nshapes; s++) {
    const shape *c = &shapes[s];
    const size_t es = kref_dtype_size(dt), qn = (size_t)(c->h * c->sq * d),
                 kn = (size_t)(c->hk * c->skv * d);
    unsigned char *q = malloc(qn * es + 1), *k = malloc(kn * es + 1), *v = malloc(kn * es + 1),
                  *want = malloc(qn * es + 1), *got = malloc(qn * es + 1),
                  *again = malloc(qn * es + 1);
    qref_rng r;
    qref_seed(&r, (uint64_t)(77 + c->sq * 131 + c->skv + d + c->h));
    kref_fill(&r, dt, q, qn, -1.0, 1.0);
    kref_fill(&r, dt, k, kn, -1.0, 1.0);
    kref_fill(&r, dt, v, kn, -1.0, 1.0);
    const float scale = (float)(c->scale_mul / sqrt((double)d));
    cpu(q, k, v, want, c->h, c->hk, c->sq, c->skv, scale);
    /* Each side's error model (kref): the CPU's, and the GPU's, whose f16
     * and bf16 path rounds p to that type on tensor cores (sm_75's bf16
     * runs the f32 path: the bound holds a fortiori); they may differ by
     * the sum. */
    double vmax = 0.0, atol, rtol, atol_cpu, rtol_cpu;
    for (size_t i = 0; i < kn; i++) vmax = fmax(vmax, fabs(kref_get(dt, v, i)));
    kref_attention_tolerance(dt, d, c->scale_mul, c->skv, vmax, dt != KREF_F32, &atol, &rtol);
    kref_attention_tolerance(dt, d, c->scale_mul, c->skv, vmax, 0, &atol_cpu, &rtol_cpu);
    atol += atol_cpu;
    cu_deviceptr dq = dnew(q, qn * es), dk = dnew(k, kn * es), dv = dnew(v, kn * es),
                 dout = dnew(NULL, qn * es);
    fa_ws ws = fa_ws_new(c->hk, c->skv, c->h / c->hk * c->sq, d);
    for (int i = 0; i < t->nimages; i++) {
      const image *im = &t->img[i];
      char what[200];
      snprintf(what, sizeof what, "flash_attention %s h=%lld/%lld sq=%lld skv=%lld on %s",
               t->variant, (long long)c->h, (long long)c->hk, (long long)c->sq,
               (long long)c->skv, im->label);
      const int e = entry_of(im, "flash_attention");
      args a;
      cases++;
      dclear(dout, qn * es);
      fa_args(&a, dq, dk, dv, dout, c->h, c->hk, c->sq, c->skv, scale, &ws);
      if (e < 0 || run(im, e, &a, NULL, what) || dget(got, dout, qn * es, what)) {
        if (e < 0) failf("%s: no entry flash_attention", what);
        continue;
      }
      failures += kref_check(what, dt, got, want, (int64_t)qn, atol, rtol, NULL);
      fa_ws_check(&ws, what);
      dclear(dout, qn * es);
      fa_args(&a, dq, dk, dv, dout, c->h, c->hk, c->sq, c->skv, scale, &ws);
      if (!run(im, e, &a, CAP, what) && !dget(again, dout, qn * es, what))
        same_bits(got, again, qn * es, what, "a grid cut to 2 x 1 x 1 blocks");
      fa_ws_check(&ws, what);
      /* No workspace: no split across blocks, the same error model. */
      const fa_ws none = {0, 0, 0};
      dclear(dout, qn * es);
      fa_args(&a, dq, dk, dv, dout, c->h, c->hk, c->sq, c->skv, scale, &none);
      if (!run(im, e, &a, NULL, what) && !dget(again, dout, qn * es, what))
        failures += kref_check(what, dt, again, want, (int64_t)qn, atol, rtol, NULL);
    }
    dfree(dq), dfree(dk), dfree(dv), dfree(dout), dfree(ws.p);
    free(q), free(k), free(v), free(want), free(got), free(again);
  }
}

/* ---- paged_attention, kv_append ------------------------------------------------ */

/* A batch of the paged cache: a decode-sized group, a prefill chunk, a
 * length 0, one shorter than sq and an invalid sequence (NaN rows, nothing
 * appended) between valid ones, pages scattered over the pool. */
typedef struct paged {
  int64_t n_seqs, h, hk, sq, max_pages, n_pages;
  int32_t lens[4], *table;
  size_t es, qn, pn, nn;
  unsigned char *q, *kp, *vp, *kn, *vn;
} paged;

static int paged_make(paged *p, kref_dtype dt, int d, int page, int64_t n_seqs, int64_t h,
                      int64_t hk, int64_t sq, const int32_t *lens,
                      const kref_paged_kind *kind, uint64_t seed) {
  qref_rng r;
  memset(p, 0, sizeof *p);
  qref_seed(&r, seed);
  p->n_seqs = n_seqs, p->h = h, p->hk = hk, p->sq = sq;
  memcpy(p->lens, lens, (size_t)n_seqs * sizeof *lens);
  p->table = kref_make_paged_table(&r, page, n_seqs, p->lens, kind, 3, &p->max_pages,
                                   &p->n_pages);
  p->es = kref_dtype_size(dt);
  p->qn = (size_t)(n_seqs * h * sq * d);
  p->pn = (size_t)(p->n_pages * hk * page * d);
  p->nn = (size_t)(n_seqs * hk * sq * d);
  p->q = malloc(p->qn * p->es + 1), p->kp = malloc(p->pn * p->es + 1);
  p->vp = malloc(p->pn * p->es + 1), p->kn = malloc(p->nn * p->es + 1);
  p->vn = malloc(p->nn * p->es + 1);
  if (!p->table || !p->q || !p->kp || !p->vp || !p->kn || !p->vn) return -1;
  kref_fill(&r, dt, p->q, p->qn, -1.0, 1.0);
  kref_fill(&r, dt, p->kp, p->pn, -1.0, 1.0);
  kref_fill(&r, dt, p->vp, p->pn, -1.0, 1.0);
  kref_fill(&r, dt, p->kn, p->nn, -1.0, 1.0);
  kref_fill(&r, dt, p->vn, p->nn, -1.0, 1.0);
  return 0;
}

static void paged_free(paged *p) {
  free(p->table), free(p->q), free(p->kp), free(p->vp), free(p->kn), free(p->vn);
}

static int paged_variant(const char *kernel, const char *variant, kref_dtype *dt, int *d,
                         int *page) {
  char dts[8];
  if (sscanf(variant, "dtype=%7[^,],head_dim=%d,page=%d", dts, d, page) != 3 ||
      kref_dtype_parse(dts, dt) != 0) {
    failf("%s: variant '%s' is not dtype=T,head_dim=D,page=P", kernel, variant);
    return -1;
  }
  return 0;
}

static const struct {
  int64_t n_seqs, h, hk, sq;
  int32_t lens[4];
  kref_paged_kind kind[4];
} paged_cases[] = {
    {3, 32, 8, 1, {1, 0, 1000}, {KREF_PAGED_OK, KREF_PAGED_OK, KREF_PAGED_OK}},
    {4, 4, 2, 37, {300, 20, 37, 90},
     {KREF_PAGED_OK, KREF_PAGED_OK, KREF_PAGED_PAGE_PAST_POOL, KREF_PAGED_OK}},
};

static void check_paged(kv *t) {
  kref_dtype dt;
  int d, page;
  if (paged_variant("paged_attention", t->variant, &dt, &d, &page) != 0) return;
  gk_paged_attention_fn cpu = (gk_paged_attention_fn)gk_module_symbol(t->cpu, "paged_attention");
  if (!cpu || entry_of(&t->img[0], "paged_attention") < 0) {
    failf("paged_attention %s: no entry paged_attention", t->variant);
    return;
  }
  const size_t ncases = small_shapes ? 1 : sizeof paged_cases / sizeof paged_cases[0];
  for (size_t c = 0; c < ncases; c++) {
    paged p;
    if (paged_make(&p, dt, d, page, paged_cases[c].n_seqs, paged_cases[c].h, paged_cases[c].hk,
                   paged_cases[c].sq, paged_cases[c].lens, paged_cases[c].kind, 900 + c) != 0) {
      failf("paged_attention: out of memory");
      paged_free(&p);
      return;
    }
    const size_t ob = p.qn * p.es;
    unsigned char *want = malloc(ob + 1), *got = malloc(ob + 1), *again = malloc(ob + 1);
    const float scale = (float)(1.0 / sqrt((double)d));
    cpu(p.q, p.kp, p.vp, p.table, p.lens, want, p.n_seqs, p.h, p.hk, p.sq, p.max_pages,
        p.n_pages, scale);
    double vmax = 0.0, atol, rtol, atol_cpu, rtol_cpu;
    int32_t longest = 0;
    for (size_t i = 0; i < p.pn; i++) vmax = fmax(vmax, fabs(kref_get(dt, p.vp, i)));
    for (int64_t i = 0; i < p.n_seqs; i++) longest = p.lens[i] > longest ? p.lens[i] : longest;
    kref_attention_tolerance(dt, d, 1.0, longest, vmax, dt != KREF_F32, &atol, &rtol);
    kref_attention_tolerance(dt, d, 1.0, longest, vmax, 0, &atol_cpu, &rtol_cpu);
    atol += atol_cpu;
    fa_ws ws = fa_ws_new(p.n_seqs * p.hk, p.max_pages * page, p.h / p.hk * p.sq, d);
    cu_deviceptr dq = dnew(p.q, p.qn * p.es), dk = dnew(p.kp, p.pn * p.es),
                 dv = dnew(p.vp, p.pn * p.es), dt_ = dnew(p.table, (size_t)(p.n_seqs * p.max_pages) * 4),
                 dl = dnew(p.lens, (size_t)p.n_seqs * 4), dout = dnew(NULL, ob);
    for (int i = 0; i < t->nimages; i++) {
      const image *im = &t->img[i];
      char what[200];
      snprintf(what, sizeof what, "paged_attention %s n_seqs=%lld h=%lld/%lld sq=%lld on %s",
               t->variant, (long long)p.n_seqs, (long long)p.h, (long long)p.hk,
               (long long)p.sq, im->label);
      const int e = entry_of(im, "paged_attention");
      for (int cut = 0; cut < 2 && e >= 0; cut++) {
        args a;
        memset(&a, 0, sizeof a);
        add_arg(&a, gk_arg_ptr(dq)), add_arg(&a, gk_arg_ptr(dk)), add_arg(&a, gk_arg_ptr(dv));
        add_arg(&a, gk_arg_ptr(dt_)), add_arg(&a, gk_arg_ptr(dl)), add_arg(&a, gk_arg_ptr(dout));
        add_arg(&a, gk_arg_i64(p.n_seqs)), add_arg(&a, gk_arg_i64(p.h));
        add_arg(&a, gk_arg_i64(p.hk)), add_arg(&a, gk_arg_i64(p.sq));
        add_arg(&a, gk_arg_i64(p.max_pages)), add_arg(&a, gk_arg_i64(p.n_pages));
        add_arg(&a, gk_arg_f32(scale));
        add_arg(&a, gk_arg_ptr(ws.p)), add_arg(&a, gk_arg_i64((int64_t)ws.bytes));
        cases += !cut;
        dclear(dout, ob);
        if (run(im, e, &a, cut ? CAP : NULL, what) || dget(cut ? again : got, dout, ob, what))
          break;
        if (!cut)
          failures += kref_check(what, dt, got, want, (int64_t)p.qn, atol, rtol, NULL);
        else
          same_bits(got, again, ob, what, "a grid cut to 2 x 1 x 1 blocks");
        fa_ws_check(&ws, what);
      }
      if (e < 0) failf("%s: no entry paged_attention", what);
    }
    dfree(dq), dfree(dk), dfree(dv), dfree(dt_), dfree(dl), dfree(dout), dfree(ws.p);
    free(want), free(got), free(again);
    paged_free(&p);
  }
}

/* kv_append: the pools equal to the CPU image's after the same call. */
static void check_append(kv *t) {
  kref_dtype dt;
  int d, page;
  if (paged_variant("kv_append", t->variant, &dt, &d, &page) != 0) return;
  gk_kv_append_fn cpu = (gk_kv_append_fn)gk_module_symbol(t->cpu, "kv_append");
  if (!cpu || entry_of(&t->img[0], "kv_append") < 0) {
    failf("kv_append %s: no entry kv_append", t->variant);
    return;
  }
  const size_t ncases = small_shapes ? 1 : sizeof paged_cases / sizeof paged_cases[0];
  for (size_t c = 0; c < ncases; c++) {
    paged p;
    if (paged_make(&p, dt, d, page, paged_cases[c].n_seqs, paged_cases[c].h, paged_cases[c].hk,
                   paged_cases[c].sq, paged_cases[c].lens, paged_cases[c].kind, 950 + c) != 0) {
      failf("kv_append: out of memory");
      paged_free(&p);
      return;
    }
    const size_t pb = p.pn * p.es;
    unsigned char *kwant = malloc(pb + 1), *vwant = malloc(pb + 1), *got = malloc(pb + 1);
    memcpy(kwant, p.kp, pb), memcpy(vwant, p.vp, pb);
    cpu(p.kn, p.vn, kwant, vwant, p.table, p.lens, p.n_seqs, p.hk, p.sq, p.max_pages, p.n_pages);
    cu_deviceptr dkn = dnew(p.kn, p.nn * p.es), dvn = dnew(p.vn, p.nn * p.es),
                 dt_ = dnew(p.table, (size_t)(p.n_seqs * p.max_pages) * 4),
                 dl = dnew(p.lens, (size_t)p.n_seqs * 4);
    for (int i = 0; i < t->nimages; i++) {
      const image *im = &t->img[i];
      char what[200];
      snprintf(what, sizeof what, "kv_append %s n_seqs=%lld sq=%lld on %s", t->variant,
               (long long)p.n_seqs, (long long)p.sq, im->label);
      const int e = entry_of(im, "kv_append");
      if (e < 0) {
        failf("%s: no entry kv_append", what);
        continue;
      }
      cu_deviceptr dk = dnew(p.kp, pb), dv = dnew(p.vp, pb);
      args a;
      memset(&a, 0, sizeof a);
      add_arg(&a, gk_arg_ptr(dkn)), add_arg(&a, gk_arg_ptr(dvn)), add_arg(&a, gk_arg_ptr(dk));
      add_arg(&a, gk_arg_ptr(dv)), add_arg(&a, gk_arg_ptr(dt_)), add_arg(&a, gk_arg_ptr(dl));
      add_arg(&a, gk_arg_i64(p.n_seqs)), add_arg(&a, gk_arg_i64(p.hk));
      add_arg(&a, gk_arg_i64(p.sq)), add_arg(&a, gk_arg_i64(p.max_pages));
      add_arg(&a, gk_arg_i64(p.n_pages));
      cases++;
      if (!run(im, e, &a, CAP, what)) {
        if (!dget(got, dk, pb, what) && memcmp(got, kwant, pb) != 0)
          failf("%s: k_pool differs from the CPU image's", what);
        if (!dget(got, dv, pb, what) && memcmp(got, vwant, pb) != 0)
          failf("%s: v_pool differs from the CPU image's", what);
      }
      dfree(dk), dfree(dv);
    }
    dfree(dkn), dfree(dvn), dfree(dt_), dfree(dl);
    free(kwant), free(vwant), free(got);
    paged_free(&p);
  }
}

/* ---- rmsnorm, rope ----------------------------------------------------------------- */

static void rmsnorm_args(args *a, cu_deviceptr x, cu_deviceptr w, cu_deviceptr y,
                         int64_t rows, int64_t dim, float eps) {
  memset(a, 0, sizeof *a);
  add_arg(a, gk_arg_ptr(x)), add_arg(a, gk_arg_ptr(w)), add_arg(a, gk_arg_ptr(y));
  add_arg(a, gk_arg_i64(rows)), add_arg(a, gk_arg_i64(dim));
  add_arg(a, gk_arg_f32(eps));
}

static void check_rmsnorm(kv *t) {
  static const int64_t full[] = {1, 33, 1000, 4097}, tiny[] = {33, 1000};
  gk_rmsnorm_fn cpu = (gk_rmsnorm_fn)gk_module_symbol(t->cpu, "rmsnorm");
  if (!cpu) {
    failf("rmsnorm: the CPU image has no entry rmsnorm");
    return;
  }
  for (size_t s = 0; s < (small_shapes ? 2u : 4u); s++) {
    const int64_t rows = 3, dim = small_shapes ? tiny[s] : full[s];
    const size_t bytes = (size_t)(rows * dim) * sizeof(float);
    float *x = malloc(bytes), *w = malloc((size_t)dim * sizeof *w), *want = malloc(bytes),
          *got = malloc(bytes), *again = malloc(bytes);
    qref_rng r;
    qref_seed(&r, (uint64_t)(500 + dim));
    kref_fill(&r, KREF_F32, x, (size_t)(rows * dim), -2.0, 2.0);
    kref_fill(&r, KREF_F32, w, (size_t)dim, -1.5, 1.5);
    cpu(x, w, want, rows, dim, 1e-5f);
    cu_deviceptr dx = dnew(x, bytes), dw = dnew(w, (size_t)dim * sizeof *w), dy = dnew(NULL, bytes);
    for (int i = 0; i < t->nimages; i++) {
      const image *im = &t->img[i];
      const int e = entry_of(im, "rmsnorm");
      char what[128];
      snprintf(what, sizeof what, "rmsnorm rows=%lld dim=%lld on %s", (long long)rows,
               (long long)dim, im->label);
      args a;
      cases++;
      dclear(dy, bytes);
      rmsnorm_args(&a, dx, dw, dy, rows, dim, 1e-5f);
      if (e < 0 || run(im, e, &a, NULL, what) || dget(got, dy, bytes, what)) {
        if (e < 0) failf("%s: no entry rmsnorm", what);
        continue;
      }
      failures += kref_check(what, KREF_F32, got, want, rows * dim, 1e-6, 1e-5, NULL);
      dclear(dy, bytes);
      rmsnorm_args(&a, dx, dw, dy, rows, dim, 1e-5f);
      if (!run(im, e, &a, CAP, what) && !dget(again, dy, bytes, what))
        same_bits(got, again, bytes, what, "a grid cut to 2 x 1 x 1 blocks");
      /* In place (y is x): the same bits. */
      cu_deviceptr dxy = dnew(x, bytes);
      rmsnorm_args(&a, dxy, dw, dxy, rows, dim, 1e-5f);
      if (!run(im, e, &a, NULL, what) && !dget(again, dxy, bytes, what))
        same_bits(got, again, bytes, what, "in place (y == x)");
      dfree(dxy);
    }
    dfree(dx), dfree(dw), dfree(dy);
    free(x), free(w), free(want), free(got), free(again);
  }
}

static void rope_args(args *a, cu_deviceptr x, cu_deviceptr pos, int64_t t, int64_t h,
                      int64_t hd, float theta) {
  memset(a, 0, sizeof *a);
  add_arg(a, gk_arg_ptr(x)), add_arg(a, gk_arg_ptr(pos));
  add_arg(a, gk_arg_i64(t)), add_arg(a, gk_arg_i64(h)), add_arg(a, gk_arg_i64(hd));
  add_arg(a, gk_arg_f32(theta));
}

static void check_rope(kv *t) {
  static const struct {
    int64_t t, h, hd;
    int32_t lo, hi;
    float theta;
  } cases_[] = {{5, 3, 64, 0, 100000, 10000.0f},
                {3, 2, 128, 0, 2147483647, 500000.0f},
                {300, 1, 2, 0, 50, 10000.0f},
                {17, 3, 96, -1000, 1 << 24, 10000.0f}};
  gk_rope_fn cpu = (gk_rope_fn)gk_module_symbol(t->cpu, "rope");
  if (!cpu) {
    failf("rope: the CPU image has no entry rope");
    return;
  }
  for (size_t s = 0; s < (small_shapes ? 2u : 4u); s++) {
    const int64_t T = cases_[s].t, H = cases_[s].h, D = cases_[s].hd;
    const size_t n = (size_t)(T * H * D), bytes = n * sizeof(float);
    float *x = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes), *again = malloc(bytes);
    int32_t *pos = malloc((size_t)T * sizeof *pos);
    qref_rng r;
    qref_seed(&r, (uint64_t)(600 + D + T));
    kref_fill(&r, KREF_F32, x, n, -3.0, 3.0);
    kref_fill_pos(&r, pos, (size_t)T, cases_[s].lo, cases_[s].hi);
    pos[0] = cases_[s].lo, pos[T - 1] = cases_[s].hi;
    memcpy(want, x, bytes);
    cpu(want, pos, T, H, D, cases_[s].theta);
    double xmax = 0, pmax = 0;
    for (size_t i = 0; i < n; i++) xmax = fmax(xmax, fabs(x[i]));
    for (int64_t i = 0; i < T; i++) pmax = fmax(pmax, fabs((double)pos[i]));
    const double atol = 2.0 * xmax * (8.0 * 0x1p-24 + pmax * 1e-15);
    cu_deviceptr dpos = dnew(pos, (size_t)T * sizeof *pos), dx = dnew(x, bytes);
    for (int i = 0; i < t->nimages; i++) {
      const image *im = &t->img[i];
      const int e = entry_of(im, "rope");
      char what[128];
      snprintf(what, sizeof what, "rope tokens=%lld heads=%lld head_dim=%lld on %s",
               (long long)T, (long long)H, (long long)D, im->label);
      args a;
      cases++;
      cu_ok(gpu.cuMemcpyHtoD(dx, x, bytes), "cuMemcpyHtoD");
      rope_args(&a, dx, dpos, T, H, D, cases_[s].theta);
      if (e < 0 || run(im, e, &a, NULL, what) || dget(got, dx, bytes, what)) {
        if (e < 0) failf("%s: no entry rope", what);
        continue;
      }
      failures += kref_check(what, KREF_F32, got, want, (int64_t)n, atol, 0x1p-23, NULL);
      cu_ok(gpu.cuMemcpyHtoD(dx, x, bytes), "cuMemcpyHtoD");
      rope_args(&a, dx, dpos, T, H, D, cases_[s].theta);
      if (!run(im, e, &a, CAP, what) && !dget(again, dx, bytes, what))
        same_bits(got, again, bytes, what, "a grid cut to 2 x 1 x 1 blocks");
    }
    dfree(dpos), dfree(dx);
    free(x), free(want), free(got), free(again), free(pos);
  }
}

/* ---- argmax, sample: exact --------------------------------------------------------- */

/* Runs a kernel whose output is rows int32 (argmax, sample) on every
 * image, against `want`, with the full and the cut grid. `set` fills the
 * launch values for output `out`. */
typedef void (*args_fn)(args *a, const void *ctx, cu_deviceptr out);
static void check_i32(kv *t, const char *entry, const char *what0, const int32_t *want,
                      int64_t rows, args_fn set, const void *ctx) {
  const size_t bytes = (size_t)rows * sizeof(int32_t);
  int32_t *got = malloc(bytes);
  cu_deviceptr dout = dnew(NULL, bytes);
  for (int i = 0; i < t->nimages; i++) {
    const image *im = &t->img[i];
    const int e = entry_of(im, entry);
    char what[240];
    snprintf(what, sizeof what, "%s on %s", what0, im->label);
    if (e < 0) {
      failf("%s: no entry %s", what, entry);
      continue;
    }
    for (int cut = 0; cut < 2; cut++) {
      args a;
      cases++;
      dclear(dout, bytes);
      set(&a, ctx, dout);
      if (cut) strcat(what, ", grid cut to 2 x 1 x 1 blocks");
      if (!run(im, e, &a, cut ? CAP : NULL, what) && !dget(got, dout, bytes, what))
        failures += kref_check_i32(what, got, want, rows);
    }
  }
  dfree(dout);
  free(got);
}

typedef struct argmax_ctx {
  cu_deviceptr x;
  int64_t rows, n;
} argmax_ctx;
static void argmax_set(args *a, const void *ctx, cu_deviceptr out) {
  const argmax_ctx *c = ctx;
  memset(a, 0, sizeof *a);
  add_arg(a, gk_arg_ptr(c->x)), add_arg(a, gk_arg_ptr(out));
  add_arg(a, gk_arg_i64(c->rows)), add_arg(a, gk_arg_i64(c->n));
}

/* Rows: random, with NaNs, all NaN, all -inf, ties at the top. */
static void check_argmax(kv *t) {
  static const int64_t full[] = {1, 7, 1000, 3000, 100000}, tiny[] = {7, 1000};
  gk_argmax_fn cpu = (gk_argmax_fn)gk_module_symbol(t->cpu, "argmax");
  if (!cpu) {
    failf("argmax: the CPU image has no entry argmax");
    return;
  }
  for (size_t s = 0; s < (small_shapes ? 2u : 5u); s++) {
    const int64_t rows = 5, n = small_shapes ? tiny[s] : full[s];
    float *x = malloc((size_t)(rows * n) * sizeof *x);
    int32_t want[5];
    qref_rng r;
    qref_seed(&r, (uint64_t)(700 + n));
    kref_fill(&r, KREF_F32, x, (size_t)(rows * n), -4.0, 4.0);
    for (int64_t j = 0; j < n; j += 3) x[1 * n + j] = NAN;
    for (int64_t j = 0; j < n; j++) x[2 * n + j] = NAN, x[3 * n + j] = -INFINITY;
    x[4 * n + n / 2] = x[4 * n + n - 1] = x[4 * n + n / 3] = 9.0f;
    cpu(x, want, rows, n);
    argmax_ctx c = {dnew(x, (size_t)(rows * n) * sizeof *x), rows, n};
    char what[64];
    snprintf(what, sizeof what, "argmax rows=%lld n=%lld", (long long)rows, (long long)n);
    check_i32(t, "argmax", what, want, rows, argmax_set, &c);
    dfree(c.x);
    free(x);
  }
}

typedef struct sample_ctx {
  cu_deviceptr logits, u;
  int64_t rows, n;
  float temperature, top_p;
  int32_t top_k;
} sample_ctx;
static void sample_set(args *a, const void *ctx, cu_deviceptr out) {
  const sample_ctx *c = ctx;
  memset(a, 0, sizeof *a);
  add_arg(a, gk_arg_ptr(c->logits)), add_arg(a, gk_arg_ptr(c->u)), add_arg(a, gk_arg_ptr(out));
  add_arg(a, gk_arg_i64(c->rows)), add_arg(a, gk_arg_i64(c->n));
  add_arg(a, gk_arg_f32(c->temperature)), add_arg(a, gk_arg_i32(c->top_k));
  add_arg(a, gk_arg_f32(c->top_p));
}

/* The cases of every sample test (tests/common: kref_sample_cases). */
static void check_sample(kv *t) {
  gk_sample_fn cpu = (gk_sample_fn)gk_module_symbol(t->cpu, "sample");
  if (!cpu) {
    failf("sample: the CPU image has no entry sample");
    return;
  }
  const size_t ncfg = small_shapes ? 3 : kref_nsample_cases;
  for (size_t ci = 0; ci < ncfg; ci++) {
    const kref_sample_case *sc = &kref_sample_cases[ci];
    const int64_t rows = sc->rows, n = sc->n;
    float *logits = malloc((size_t)(rows * n) * sizeof *logits), u[KREF_SAMPLE_MAX_ROWS], top_p;
    int32_t want[KREF_SAMPLE_MAX_ROWS];
    if (kref_sample_data(sc, 900 + ci, logits, u, &top_p) != 0) {
      failures++;
      free(logits);
      continue;
    }
    cpu(logits, u, want, rows, n, sc->temperature, sc->top_k, top_p);
    sample_ctx c = {dnew(logits, (size_t)(rows * n) * sizeof *logits),
                    dnew(u, (size_t)rows * sizeof *u), rows, n, sc->temperature, top_p,
                    sc->top_k};
    char what[128];
    snprintf(what, sizeof what, "sample n=%lld T=%g top_k=%d top_p=%g%s", (long long)n,
             sc->temperature, sc->top_k, top_p, sc->nans ? " NaNs" : "");
    check_i32(t, "sample", what, want, rows, sample_set, &c);
    dfree(c.logits), dfree(c.u);
    free(logits);
  }
}

/* ---- main ------------------------------------------------------------------------- */

static const struct {
  const char *kernel;
  void (*check)(kv *t);
} checks[] = {
    {"qmatmul", check_qmatmul}, {"flash_attention", check_attention}, {"rmsnorm", check_rmsnorm},
    {"rope", check_rope},       {"argmax", check_argmax},             {"sample", check_sample},
    {"paged_attention", check_paged}, {"kv_append", check_append},
};

static void check_kv(const char *kernel, const char *variant) {
  size_t c = 0;
  while (c < sizeof checks / sizeof checks[0] && strcmp(checks[c].kernel, kernel) != 0) c++;
  if (c == sizeof checks / sizeof checks[0]) {
    failf("cuda kernel '%s' has no test here (tests/gpu/test_gpu.c)", kernel);
    return;
  }
  kv t;
  memset(&t, 0, sizeof t);
  t.kernel = kernel, t.variant = variant;
  const int before = failures, cases0 = cases;
  if (kv_load(&t) > 0) checks[c].check(&t);
  kv_unload(&t);
  if (failures == before)
    printf("ok: %s %s: %d cases\n", kernel, variant[0] ? variant : "(no variant)",
           cases - cases0);
}

#define USAGE "usage: test_gpu ARCHIVE [CPU_ARCHIVE] [--small] [--probe] [--libcuda PATH]\n"

int main(int argc, char **argv) {
  const char *path = NULL, *cpu_path = NULL, *libcuda = NULL;
  int probe = 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf(USAGE "Runs every cuda kernel x variant x entry point of ARCHIVE on this machine's\n"
                   "NVIDIA GPU and compares it with the CPU image of CPU_ARCHIVE (default\n"
                   "ARCHIVE), on awkward shapes; SKIP (exit 77) without a usable GPU.\n"
                   "  --small          small shapes, the selected image only (compute-sanitizer)\n"
                   "  --probe          only look for the GPU\n"
                   "  --libcuda PATH   the driver library (default: libcuda.so.1 by dlopen)\n");
      return 0;
    }
    if (strcmp(argv[i], "--small") == 0) small_shapes = 1;
    else if (strcmp(argv[i], "--probe") == 0) probe = 1;
    else if (strcmp(argv[i], "--libcuda") == 0 && i + 1 < argc) libcuda = argv[++i];
    else if (argv[i][0] != '-' && !path) path = argv[i];
    else if (argv[i][0] != '-' && !cpu_path) cpu_path = argv[i];
    else {
      fprintf(stderr, USAGE);
      return 2;
    }
  }
  if (!path && !probe) {
    fprintf(stderr, USAGE);
    return 2;
  }
  /* The GPU first: without one nothing else matters, and the SKIP is fast. */
  char why[256];
  if (cudrv_open(&gpu, libcuda, 0, why, sizeof why) != 0) {
    printf("SKIP: no usable NVIDIA GPU: %s\n", why);
    cudrv_close(&gpu);
    return 77;
  }
  printf("gpu: %s, sm_%d%d, %d SMs, %.1f GiB, driver %d.%d\n", gpu.name, gpu.cc_major,
         gpu.cc_minor, gpu.sms, gpu.mem_bytes / 1073741824.0, gpu.driver_version / 1000,
         gpu.driver_version % 1000 / 10);
  if (probe) {
    cudrv_close(&gpu);
    return 0;
  }
  int rc = gk_device_detect_backend(GK_BACKEND_CUDA, &gpu_dev, why, sizeof why);
  if (rc != GK_OK) {
    printf("FAIL: the driver works but libgk finds no cuda device: %s: %s\n", gk_strerror(rc), why);
    return 1;
  }
  if ((rc = gk_device_parse("cpu", &cpu_dev, why, sizeof why)) != GK_OK) {
    printf("FAIL: no cpu device for the reference images: %s\n", why);
    return 1;
  }
  char spec[96];
  gk_device_format(&gpu_dev, spec, sizeof spec);
  printf("libgk: %s (%s)%s\n", spec, gpu_dev.name,
         small_shapes ? "; --small: small shapes, the selected image only" : "");
  if (gk_archive_open(path, &gpu_archive) != GK_OK) {
    printf("FAIL: %s\n", gk_last_error());
    return 1;
  }
  if (!cpu_path || strcmp(cpu_path, path) == 0) {
    cpu_archive = gpu_archive;
  } else if (gk_archive_open(cpu_path, &cpu_archive) != GK_OK) {
    printf("FAIL: %s\n", gk_last_error());
    return 1;
  }
  size_t count = 0;
  gk_image_info info, prev = {0};
  if (gk_archive_count(gpu_archive, &count) != GK_OK) {
    printf("FAIL: %s\n", gk_archive_errmsg(gpu_archive));
    return 1;
  }
  int pairs = 0;
  /* Rows come in (kernel, backend, variant, target) order: each kernel x
   * variant's cuda rows are together. */
  for (size_t i = 0; i < count; i++) {
    if (gk_archive_image(gpu_archive, i, &info) != GK_OK || strcmp(info.backend, "cuda") != 0)
      continue;
    if (prev.kernel && strcmp(prev.kernel, info.kernel) == 0 &&
        strcmp(prev.variant, info.variant) == 0)
      continue;
    prev = info;
    pairs++;
    check_kv(info.kernel, info.variant);
  }
  if (pairs == 0) failf("archive '%s' has no cuda image", path);
  if (cpu_archive != gpu_archive) gk_archive_close(cpu_archive);
  gk_archive_close(gpu_archive);
  cudrv_close(&gpu);
  printf("%d kernel x variant pairs, %d cases, %d launches, %d failures\n", pairs, cases,
         launches, failures);
  return failures ? 1 : 0;
}
