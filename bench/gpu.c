/*
 * gpu.c - gk_bench_gpu: the cuda kernels of an archive on this machine's
 * NVIDIA GPU, loaded through libgk and timed with CUDA events, against the
 * card's own device-to-device copy bandwidth measured in the same run
 * (bench/gpu.sh runs it, then PyTorch on the same shapes, and writes the
 * report).
 *
 * usage: gk_bench_gpu ARCHIVE --json FILE [--quick] [--runs N] [--filter TEXT]
 *                     [--ref ARCHIVE2] [--libcuda PATH]
 *
 * - copy: cuMemcpyDtoDAsync of 1 GiB; bytes read + written per second.
 * - qmatmul, every BITS: m = 1 and 16 at n = 32768, k = 8192, m = 512 and
 *   4096 at n = k = 8192; every entry of the row whose launch takes
 *   qmatmul's signature (qmatmul, and qmatmul_q8x where the row lists it).
 *   W rotates over enough copies that together they are at least 4x the
 *   L2 cache, so every call reads W from memory, as a decode step's layers
 *   do.
 * - flash_attention f16, 32 query / 8 KV heads: head_dim 128 decode
 *   (sq = 1, skv = 8192; causal=0, since with one query row the bottom-right
 *   causal mask allows every key, and PyTorch's is_causal would not) and
 *   prefill 4096 x 4096 causal and not, head_dim 64 prefill too; bf16
 *   prefill at head_dim 128, causal and not; a causal prefill of 1024 x
 *   1024. Inputs rotate like W.
 * - paged_attention f16 decodes (bench_paged).
 * - the decodes' workspace: for the pieces docs/kernels.md advises (one per
 *   256 keys, at most enough to give each of the card's blocks one:
 *   ws_pieces); split: those where that is fewer, timed again with one per
 *   256 keys (bench_split), beside the default's time.
 * Each case: two launches of warm-up (the second timed alone), then --runs
 * runs (default 10), each a batch of launches back to back between two
 * events (as many as take about 1 ms, at least one), so that the time of
 * one launch's submission is not counted; per-launch median and best.
 * --quick: small shapes, 3 runs (the tests). --filter: only the cases whose
 * name contains TEXT (ncu; given again, those that contain any of them).
 * --ref ARCHIVE2: each case is also timed on ARCHIVE2's image of the same
 * kernel, variant and entry, on the same inputs, the two taking turns run
 * by run (A B, B A, A B, ...: time_ab), so that an A/B of two archives
 * (ci/gpu/run.sh's experiments) is not the difference of two moments of a
 * card whose clocks drift; the case gets ref_us, ref_best_us, ref_batch and
 * ref_target. A case whose entry ARCHIVE2 lacks (or cannot launch) is
 * timed alone and says so.
 * Without a usable GPU: {"skipped": "why"}, exit 0.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudrv.h"
#include "gk.h"
#include "kref.h"
#include "qref.h"

static cudrv cu;
static gk_archive *ar, *ref_ar;
static gk_device dev;
static cu_event ev0, ev1;
static int runs = 10, quick;
static const char *filters[8];
static int nfilters;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "gk_bench_gpu: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static void ok(cu_result r, const char *what) {
  if (r != CUDRV_SUCCESS) die(what, cudrv_err(&cu, r));
}

static cu_deviceptr dalloc(size_t size) {
  cu_deviceptr p;
  ok(cu.cuMemAlloc(&p, size ? size : 16), "cuMemAlloc");
  return p;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- timing ------------------------------------------------------------- */

/* Issues launch number i (its inputs: copy i % copies) on the default stream. */
typedef void (*issue_fn)(void *ctx, long i);

typedef struct timing {
  double us, best_us; /* per launch: median over the runs, and the best run */
  int runs, batch;
} timing;

static double elapsed_us(void) {
  float ms = 0;
  ok(cu.cuEventSynchronize(ev1), "cuEventSynchronize");
  ok(cu.cuEventElapsedTime(&ms, ev0, ev1), "cuEventElapsedTime");
  return ms * 1e3;
}

/* Launches per run: as many as take about 1 ms, at least one, given one
 * launch's time. */
static int batch_for(double one_us) {
  return one_us >= 1000.0 ? 1 : one_us <= 16.0 ? 64 : (int)ceil(1000.0 / one_us);
}

/* One run: `batch` launches back to back between the two events, launch
 * numbers from *n on; the time a launch. */
static double run_batch(issue_fn issue, void *ctx, int batch, long *n) {
  ok(cu.cuEventRecord(ev0, NULL), "cuEventRecord");
  for (int b = 0; b < batch; b++) issue(ctx, (*n)++);
  ok(cu.cuEventRecord(ev1, NULL), "cuEventRecord");
  return elapsed_us() / batch;
}

static timing summarize(double *v, int batch) {
  timing t = {0, 0, runs, batch};
  qsort(v, (size_t)runs, sizeof *v, cmp_double);
  t.best_us = v[0];
  t.us = runs % 2 ? v[runs / 2] : 0.5 * (v[runs / 2 - 1] + v[runs / 2]);
  return t;
}

/*
 * The launches of ctx, and where b is not NULL those of b too, on the same
 * launch numbers' inputs: a warm-up launch each, one launch each timed alone
 * (the batch), then `runs` runs each, taking turns (A B, B A, A B, ...), so
 * that a drift of the card's clocks weighs on both alike. The launch number
 * runs on across both, so neither finds the other's last inputs in L2.
 */
static void time_ab(issue_fn issue, void *ctx, void *b, timing *ta, timing *tb) {
  long n = 0;
  issue(ctx, n++);
  if (b) issue(b, n++);
  ok(cu.cuCtxSynchronize(), "warm-up launch");
  const int batch_a = batch_for(run_batch(issue, ctx, 1, &n)),
            batch_b = b ? batch_for(run_batch(issue, b, 1, &n)) : 0;
  double *va = malloc(sizeof *va * (size_t)runs), *vb = malloc(sizeof *vb * (size_t)runs);
  for (int r = 0; r < runs; r++) {
    if (b && r % 2) vb[r] = run_batch(issue, b, batch_b, &n);
    va[r] = run_batch(issue, ctx, batch_a, &n);
    if (b && !(r % 2)) vb[r] = run_batch(issue, b, batch_b, &n);
  }
  *ta = summarize(va, batch_a);
  if (b) *tb = summarize(vb, batch_b);
  free(va), free(vb);
}

static timing time_it(issue_fn issue, void *ctx) {
  timing t;
  time_ab(issue, ctx, NULL, &t, NULL);
  return t;
}

static int wanted(const char *name) {
  for (int i = 0; i < nfilters; i++)
    if (strstr(name, filters[i])) return 1;
  return nfilters == 0;
}

/* Copies of `bytes` so that together they are at least 4x the L2 cache. */
static int copies_for(size_t bytes) {
  const double l2 = cu.l2_bytes > 0 ? cu.l2_bytes : 64 << 20;
  int c = (int)ceil(4.0 * l2 / (double)(bytes ? bytes : 1));
  return c < 1 ? 1 : c > 32 ? 32 : c;
}

/* ---- copy bandwidth ------------------------------------------------------- */

typedef struct copy_ctx {
  cu_deviceptr src, dst;
  size_t bytes;
} copy_ctx;
static void copy_issue(void *ctx, long i) {
  const copy_ctx *c = ctx;
  (void)i;
  ok(cu.cuMemcpyDtoDAsync(c->dst, c->src, c->bytes, NULL), "cuMemcpyDtoDAsync");
}

static json_t *bench_copy(void) {
  copy_ctx c = {0, 0, quick ? (size_t)64 << 20 : (size_t)1 << 30};
  c.src = dalloc(c.bytes), c.dst = dalloc(c.bytes);
  ok(cu.cuMemsetD8(c.src, 1, c.bytes), "cuMemsetD8");
  const timing t = time_it(copy_issue, &c);
  ok(cu.cuMemFree(c.src), "cuMemFree"), ok(cu.cuMemFree(c.dst), "cuMemFree");
  const double gbps = 2.0 * (double)c.bytes / (t.us * 1e3);
  fprintf(stderr, "copy %zu MiB: %.1f us, %.0f GB/s (read + written)\n", c.bytes >> 20, t.us, gbps);
  return json_pack("{s:I, s:f, s:f, s:i, s:f}", "bytes", (json_int_t)c.bytes, "us", t.us,
                   "best_us", t.best_us, "runs", t.runs, "gbps", gbps);
}

/* ---- launching through libgk ----------------------------------------------- */

/* The launches of one entry, one argument list per input copy: libgk
 * evaluates the row's launch (grid, block, shared) and checks the values
 * against its params, as a downstream program's launch would. */
typedef struct launches {
  const gk_module *m;
  const char *entry;
  int copies, nargs;
  gk_arg (*args)[GK_LAUNCH_MAX_PARAMS];
} launches;

/* 0 when every copy's arguments fit the entry's launch (its dynamic shared
 * memory allowed), else -1 with the reason in err. */
static int launches_ready(const launches *l, char *err, size_t size) {
  gk_launch_dims d;
  for (int c = 0; c < l->copies; c++)
    if (gk_module_launch_dims(l->m, l->entry, l->args[c], (size_t)l->nargs, &d) != GK_OK) {
      snprintf(err, size, "%s", gk_last_error());
      return -1;
    }
  cu_function fn = (cu_function)gk_module_symbol(l->m, l->entry);
  ok(cudrv_allow_shared(&cu, fn, d.shared), "cuFuncSetAttribute (dynamic shared memory)");
  return 0;
}

static void launch_issue(void *ctx, long i) {
  launches *l = ctx;
  if (gk_module_launch(l->m, l->entry, l->args[i % l->copies], (size_t)l->nargs, NULL) != GK_OK)
    die("gk_module_launch", gk_last_error());
}

/* --ref: ARCHIVE2's module of the kernel and variant, or NULL (without
 * --ref, or where ARCHIVE2 has none: said on stderr). */
static gk_module *ref_load(const char *kernel, const char *variant) {
  gk_module *m = NULL;
  if (ref_ar && gk_module_load(ref_ar, &dev, kernel, variant, &m) != GK_OK) {
    fprintf(stderr, "gk_bench_gpu: --ref: %s %s: %s; timed alone\n", kernel, variant,
            gk_archive_errmsg(ref_ar));
    m = NULL;
  }
  return m;
}

/* Whether the ref's launches (l's arguments on the ref's module) can be
 * timed beside the case's: its entry there fits them (else said). */
static int ref_ready(const launches *l, const char *what) {
  char err[512];
  if (!l->m) return 0;
  if (launches_ready(l, err, sizeof err) == 0) return 1;
  fprintf(stderr, "gk_bench_gpu: --ref: %s entry %s: %s; timed alone\n", what, l->entry, err);
  return 0;
}

/* The ref's time beside the case's, in the case's JSON object and on
 * stderr. */
static void ref_fields(json_t *c, const timing *t, const gk_module *rm, double us) {
  json_object_set_new(c, "ref_us", json_real(t->us));
  json_object_set_new(c, "ref_best_us", json_real(t->best_us));
  json_object_set_new(c, "ref_batch", json_integer(t->batch));
  json_object_set_new(c, "ref_target", json_string(gk_module_info(rm)->target));
  fprintf(stderr, "  --ref, in turns: %.1f us (this archive %.1f: %.2fx the ref's time)\n",
          t->us, us, us / t->us);
}

/* ---- qmatmul ------------------------------------------------------------------ */

/* W for n x k, `copies` times: random blocks (qref_fill_w) made on the host
 * for a slice of rows and repeated, so that making 300 MB takes no time. */
static cu_deviceptr make_w(int bits, int64_t n, int64_t k, int copies, size_t *wb) {
  const int64_t slice = n < 256 ? n : 256;
  const size_t sb = qref_w_bytes(bits, slice, k);
  *wb = qref_w_bytes(bits, n, k);
  unsigned char *host = malloc(sb);
  qref_rng r;
  qref_seed(&r, (uint64_t)(bits * 7919 + k));
  qref_fill_w(&r, bits, slice, k, host);
  cu_deviceptr w = dalloc(*wb * (size_t)copies);
  for (size_t off = 0; off < *wb; off += sb)
    ok(cu.cuMemcpyHtoD(w + off, host, off + sb <= *wb ? sb : *wb - off), "cuMemcpyHtoD");
  for (int c = 1; c < copies; c++)
    ok(cu.cuMemcpyDtoDAsync(w + *wb * (size_t)c, w, *wb, NULL), "cuMemcpyDtoDAsync");
  free(host);
  return w;
}

/* qmatmul_q8x_x then qmatmul_q8x_mm (or _rec), timed as one: what a
 * prefill (a decode batch) costs when its x serves one matmul. */
typedef struct pair {
  launches round, mm;
} pair;
static void pair_issue(void *ctx, long i) {
  pair *p = ctx;
  launch_issue(&p->round, i);
  launch_issue(&p->mm, i);
}

static void bench_qmatmul(json_t *out, double copy_gbps) {
  static const int64_t full[][3] = {{1, 32768, 8192}, {16, 32768, 8192}, {512, 8192, 8192},
                                    {4096, 8192, 8192}};
  static const int64_t small[][3] = {{1, 4096, 1024}, {16, 4096, 1024}, {64, 1024, 1024}};
  const int64_t(*shapes)[3] = quick ? small : full;
  const int nshapes = quick ? 3 : 4;
  for (int bits = 1; bits <= 8; bits *= 2) {
    char variant[24];
    gk_module *m;
    snprintf(variant, sizeof variant, "bits=%d", bits);
    if (gk_module_load(ar, &dev, "qmatmul", variant, &m) != GK_OK) {
      fprintf(stderr, "gk_bench_gpu: %s\n", gk_archive_errmsg(ar));
      continue;
    }
    const gk_image_info *info = gk_module_info(m);
    json_t *entries = json_loads(info->entry, 0, NULL);
    gk_module *rm = ref_load("qmatmul", variant);
    for (int s = 0; s < nshapes; s++) {
      const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
      char name[160];
      snprintf(name, sizeof name, "qmatmul bits=%d m=%lld n=%lld k=%lld ", bits, (long long)M,
               (long long)N, (long long)K);
      if (!wanted(name)) continue;
      size_t wb;
      const int copies = copies_for(qref_w_bytes(bits, N, K));
      cu_deviceptr w = make_w(bits, N, K, copies, &wb), x = dalloc((size_t)(M * K) * 4),
                   y = dalloc((size_t)(M * N) * 4);
      float *hx = malloc((size_t)(M * K) * sizeof *hx);
      qref_rng r;
      qref_seed(&r, (uint64_t)M);
      qref_fill_x(&r, hx, (size_t)(M * K));
      ok(cu.cuMemcpyHtoD(x, hx, (size_t)(M * K) * 4), "cuMemcpyHtoD");
      free(hx);
      /* The int8 tensor-core pair is for many rows of x: timed together,
       * from x, where m > 16. qmatmul_q8x_rec, for m <= 16, twice: from
       * records rounded once before (x shared by several matmuls, as a
       * layer's q, k and v projections share it: `qmatmul_q8x_rec`), and
       * with its qmatmul_q8x_x (`qmatmul_q8x_x+rec`). */
      const size_t xqb = (size_t)(M * (K / 32)) * 48;
      const cu_deviceptr xq = dalloc(xqb);
      /* Each entry once, form 0; qmatmul_q8x_rec again, form 1, with its
       * rounding. */
      for (size_t i = 0; i < 2 * json_array_size(entries); i++) {
        const int form = (int)(i % 2);
        const char *entry = json_string_value(json_array_get(entries, i / 2));
        launches l = {m, entry, copies, 6, NULL}, lr = {rm, entry, copies, 6, NULL};
        pair p = {{m, "qmatmul_q8x_x", copies, 4, NULL}, {m, entry, copies, 6, NULL}},
             pr = {{rm, "qmatmul_q8x_x", copies, 4, NULL}, {rm, entry, copies, 6, NULL}};
        const int is_rec = entry && strcmp(entry, "qmatmul_q8x_rec") == 0;
        const int is_pair = entry && (strcmp(entry, "qmatmul_q8x_mm") == 0 || (is_rec && form));
        const int uses_xq = is_pair || is_rec;
        char err[512];
        if (!entry || (form && !is_rec) || strcmp(entry, "qmatmul_q8x_x") == 0 ||
            (strcmp(entry, "qmatmul_q8x_mm") == 0 && M <= 16) || (is_rec && M > 16))
          continue;
        l.args = calloc((size_t)copies, sizeof *l.args);
        p.round.args = calloc((size_t)copies, sizeof *p.round.args);
        for (int c = 0; c < copies; c++) {
          gk_arg *a = l.args[c], *ra = p.round.args[c];
          a[0] = gk_arg_ptr(uses_xq ? xq : x), a[1] = gk_arg_ptr(w + wb * (size_t)c);
          a[2] = gk_arg_ptr(y), a[3] = gk_arg_i64(M), a[4] = gk_arg_i64(N), a[5] = gk_arg_i64(K);
          ra[0] = gk_arg_ptr(x), ra[1] = gk_arg_ptr(xq), ra[2] = gk_arg_i64(M), ra[3] = gk_arg_i64(K);
        }
        p.mm.args = lr.args = pr.mm.args = l.args;
        pr.round.args = p.round.args;
        if (launches_ready(&l, err, sizeof err) != 0 ||
            (uses_xq && launches_ready(&p.round, err, sizeof err) != 0)) {
          /* an entry with another signature: not qmatmul's to time */
          fprintf(stderr, "gk_bench_gpu: qmatmul %s entry %s skipped: %s\n", variant, entry, err);
          free(l.args), free(p.round.args);
          continue;
        }
        const int with_ref =
            ref_ready(&lr, variant) && (!uses_xq || ref_ready(&pr.round, variant));
        if (is_rec && !is_pair) launch_issue(&p.round, 0); /* the records, once */
        timing t, tr;
        if (is_pair) time_ab(pair_issue, &p, with_ref ? &pr : NULL, &t, &tr);
        else time_ab(launch_issue, &l, with_ref ? &lr : NULL, &t, &tr);
        free(l.args), free(p.round.args);
        if (is_pair) entry = is_rec ? "qmatmul_q8x_x+rec" : "qmatmul_q8x_x+mm";
        const double gbps = (double)wb / (t.us * 1e3), tflops = 2.0 * M * N * K / (t.us * 1e6);
        const double ratio = copy_gbps > 0 ? gbps / copy_gbps : 0;
        fprintf(stderr, "%sentry=%s %s: %.1f us, %.0f GB/s of W (%.2f of copy), %.2f TFLOP/s\n",
                name, entry, info->target, t.us, gbps, ratio, tflops);
        json_t *obj =
            json_pack("{s:s, s:i, s:I, s:I, s:I, s:s, s:s, s:f, s:f, s:i, s:i, s:i, s:I, "
                      "s:f, s:f, s:f}",
                      "kernel", "qmatmul", "bits", bits, "m", (json_int_t)M, "n",
                      (json_int_t)N, "k", (json_int_t)K, "entry", entry, "target",
                      info->target, "us", t.us, "best_us", t.best_us, "runs", t.runs,
                      "batch", t.batch, "copies", copies, "weight_bytes", (json_int_t)wb,
                      "weight_gbps", gbps, "copy_ratio", ratio, "tflops",
                      tflops);
        if (with_ref) ref_fields(obj, &tr, rm, t.us);
        json_array_append_new(out, obj);
      }
      ok(cu.cuMemFree(w), "cuMemFree"), ok(cu.cuMemFree(x), "cuMemFree");
      ok(cu.cuMemFree(y), "cuMemFree");
      ok(cu.cuMemFree(xq), "cuMemFree");
    }
    json_decref(entries);
    gk_module_unload(rm);
    gk_module_unload(m);
  }
}

/* ---- flash_attention ------------------------------------------------------------ */

/*
 * The pieces a unit (sequence x KV head) docs/kernels.md advises sizing the
 * workspace for: one per 256 keys (the most the kernels take), but no more
 * than give each of the card's blocks one (two an SM: the units share 2 x
 * SMs). At skv = 32768 on an H200 (8 KV heads, 2026-11-30): 33 pieces of
 * 1024 keys took 44.2 us where 128 of 256 took 65.6 (about 4 waves of
 * blocks, each filling its ring anew, and a merge of 128 states a KV head).
 */
static int64_t ws_pieces(int64_t units, int64_t keys) {
  const int64_t each = keys > 0 ? (keys + 255) / 256 : 1,
                fill = (2 * (int64_t)cu.sms + units - 1) / units; /* 0: SMs unknown */
  return fill < 1 || each < fill ? each : fill;
}

/* A zeroed workspace for attention's cross-block split (docs/kernels.md):
 * counters for `units` (sequence, KV head) pairs, the slots of `rows`
 * packed query rows for `pieces` pieces of each. Launches on one stream may
 * share it. */
static cu_deviceptr ws_new(int64_t units, int64_t pieces, int64_t rows, int d, int64_t *bytes) {
  *bytes = (int64_t)kref_attention_ws_bytes(units, pieces * 256, rows, d);
  const cu_deviceptr p = dalloc((size_t)*bytes);
  ok(cu.cuMemsetD8(p, 0, (size_t)*bytes), "cuMemsetD8");
  return p;
}

/*
 * The workspace's other size: the cases above take ws_pieces' (the docs'
 * advice); here the decodes where that is fewer than one piece per 256
 * keys are timed again with one per 256 keys (the advice until the H200
 * timed both, 2026-11-30), the A/B behind the advice. Appended to `split`,
 * beside the default's time.
 */
static void bench_split(json_t *split, launches *l, int ws_arg, const char *name,
                        int64_t units, int64_t keys, int64_t rows, int d, double kv_bytes,
                        double copy_gbps, double default_us) {
  const int64_t def = ws_pieces(units, keys), each = (keys + 255) / 256;
  if (each <= def) return; /* the default is one per 256 keys already */
  int64_t wsb;
  const cu_deviceptr ws = ws_new(units, each, rows, d, &wsb);
  for (int c = 0; c < l->copies; c++)
    l->args[c][ws_arg] = gk_arg_ptr(ws), l->args[c][ws_arg + 1] = gk_arg_i64(wsb);
  const timing t = time_it(launch_issue, l);
  const double gbps = kv_bytes / (t.us * 1e3);
  fprintf(stderr, "%s%lld pieces a unit (default %lld): %.1f us (default %.1f), K+V %.0f GB/s\n",
          name, (long long)each, (long long)def, t.us, default_us, gbps);
  char what[160];
  const size_t len = strlen(name); /* the case's name, without its trailing blank */
  snprintf(what, sizeof what, "%.*s", (int)(len && name[len - 1] == ' ' ? len - 1 : len), name);
  json_array_append_new(
      split, json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f}", "case", what, "pieces",
                       (json_int_t)each, "pieces_default", (json_int_t)def, "us", t.us,
                       "default_us", default_us, "kv_gbps", gbps, "copy_ratio",
                       copy_gbps > 0 ? gbps / copy_gbps : 0));
  ok(cu.cuMemFree(ws), "cuMemFree");
}

static void bench_attention(json_t *out, json_t *split, double copy_gbps) {
  static const struct {
    const char *kind, *dtype;
    int causal, d;
    int64_t sq, skv;
  } full[] = {{"decode", "f16", 0, 128, 1, 8192},      {"decode", "f16", 0, 128, 1, 32768},
              /* speculative decode: 16 tokens of each of 4 heads a KV head */
              {"decode", "f16", 1, 128, 16, 8192},
              {"prefill", "f16", 0, 128, 4096, 4096},  {"prefill", "f16", 1, 128, 4096, 4096},
              {"prefill", "f16", 0, 64, 4096, 4096},   {"prefill", "f16", 1, 64, 4096, 4096},
              {"prefill", "bf16", 0, 128, 4096, 4096}, {"prefill", "bf16", 1, 128, 4096, 4096},
              /* a prompt of 1024: 8 to 16 query blocks a head, where the order of a causal
               * prefill's blocks across the heads decides its launch's tail */
              {"prefill", "f16", 1, 128, 1024, 1024}},
    small[] = {{"decode", "f16", 0, 128, 1, 512}, {"prefill", "f16", 1, 128, 256, 256},
               {"prefill", "bf16", 1, 128, 256, 256}};
  const int ncases = quick ? (int)(sizeof small / sizeof small[0])
                           : (int)(sizeof full / sizeof full[0]);
  const int64_t H = 32, HK = 8;
  for (int c = 0; c < ncases; c++) {
    const int causal = quick ? small[c].causal : full[c].causal, D = quick ? small[c].d : full[c].d;
    const int64_t SQ = quick ? small[c].sq : full[c].sq, SKV = quick ? small[c].skv : full[c].skv;
    const char *kind = quick ? small[c].kind : full[c].kind;
    const char *dtype = quick ? small[c].dtype : full[c].dtype;
    kref_dtype dt = KREF_F16;
    kref_dtype_parse(dtype, &dt);
    char variant[64], name[160];
    snprintf(variant, sizeof variant, "causal=%d,dtype=%s,head_dim=%d", causal, dtype, D);
    snprintf(name, sizeof name, "flash_attention %s %s sq=%lld skv=%lld h=%lld/%lld ", kind,
             variant, (long long)SQ, (long long)SKV, (long long)H, (long long)HK);
    if (!wanted(name)) continue;
    gk_module *m;
    if (gk_module_load(ar, &dev, "flash_attention", variant, &m) != GK_OK) {
      fprintf(stderr, "gk_bench_gpu: %s\n", gk_archive_errmsg(ar));
      continue;
    }
    gk_module *rm = ref_load("flash_attention", variant);
    launches l = {m, "flash_attention", 0, 11, NULL};
    const size_t qb = (size_t)(H * SQ * D) * 2, kb = (size_t)(HK * SKV * D) * 2,
                 set = qb + 2 * kb;
    const int copies = copies_for(set);
    /* One set of q, k, v in [-1, 1) as f16 or bf16, then its copies. */
    uint16_t *h = malloc(set);
    qref_rng r;
    qref_seed(&r, (uint64_t)(SQ + SKV + D));
    kref_fill(&r, dt, h, set / 2, -1.0, 1.0);
    int64_t wsb;
    cu_deviceptr in = dalloc(set * (size_t)copies), o = dalloc(qb),
                 ws = ws_new(HK, ws_pieces(HK, SKV), H / HK * SQ, D, &wsb);
    ok(cu.cuMemcpyHtoD(in, h, set), "cuMemcpyHtoD");
    free(h);
    for (int k = 1; k < copies; k++)
      ok(cu.cuMemcpyDtoDAsync(in + set * (size_t)k, in, set, NULL), "cuMemcpyDtoDAsync");
    l.copies = copies;
    l.args = calloc((size_t)copies, sizeof *l.args);
    char err[512];
    for (int k = 0; k < copies; k++) {
      gk_arg *a = l.args[k];
      const cu_deviceptr base = in + set * (size_t)k;
      a[0] = gk_arg_ptr(base), a[1] = gk_arg_ptr(base + qb), a[2] = gk_arg_ptr(base + qb + kb);
      a[3] = gk_arg_ptr(o);
      a[4] = gk_arg_i64(H), a[5] = gk_arg_i64(HK), a[6] = gk_arg_i64(SQ), a[7] = gk_arg_i64(SKV);
      a[8] = gk_arg_f32((float)(1.0 / sqrt((double)D)));
      a[9] = gk_arg_ptr(ws), a[10] = gk_arg_i64(wsb);
    }
    if (launches_ready(&l, err, sizeof err) == 0) {
      launches lr = {rm, "flash_attention", copies, 11, l.args};
      const int with_ref = ref_ready(&lr, variant);
      timing t, tr;
      time_ab(launch_issue, &l, with_ref ? &lr : NULL, &t, &tr);
      /* 2 matmuls of sq x skv x D per head; causal: about half the pairs. */
      const double flops = 4.0 * SQ * SKV * D * H * (causal ? 0.5 : 1.0);
      const double tflops = flops / (t.us * 1e6), kv_gbps = 2.0 * kb / (t.us * 1e3);
      fprintf(stderr, "%s%s: %.1f us, %.2f TFLOP/s, K+V %.0f GB/s\n", name,
              gk_module_info(m)->target, t.us, tflops, kv_gbps);
      json_t *obj =
          json_pack("{s:s, s:s, s:i, s:s, s:i, s:I, s:I, s:I, s:I, s:s, s:f, s:f, s:i, "
                    "s:i, s:i, s:f, s:I, s:f, s:f}",
                    "kernel", "flash_attention", "kind", kind, "causal", causal, "dtype",
                    dtype, "head_dim", D, "heads", (json_int_t)H, "kv_heads",
                    (json_int_t)HK, "sq", (json_int_t)SQ, "skv", (json_int_t)SKV,
                    "target", gk_module_info(m)->target, "us", t.us, "best_us",
                    t.best_us, "runs", t.runs, "batch", t.batch, "copies", copies,
                    "tflops", tflops, "kv_bytes", (json_int_t)(2 * kb), "kv_gbps",
                    kv_gbps, "copy_ratio", copy_gbps > 0 ? kv_gbps / copy_gbps : 0);
      if (with_ref) ref_fields(obj, &tr, rm, t.us);
      json_array_append_new(out, obj);
      if (strcmp(kind, "decode") == 0)
        bench_split(split, &l, 9, name, HK, SKV, H / HK * SQ, D, 2.0 * kb, copy_gbps, t.us);
    } else {
      fprintf(stderr, "gk_bench_gpu: flash_attention %s: %s\n", variant, err);
    }
    free(l.args);
    ok(cu.cuMemFree(in), "cuMemFree"), ok(cu.cuMemFree(o), "cuMemFree");
    ok(cu.cuMemFree(ws), "cuMemFree");
    gk_module_unload(rm);
    gk_module_unload(m);
  }
}

/*
 * paged_attention f16 decode, 32 query / 8 KV heads, head_dim 128: the
 * same total context as flash_attention's decodes (8192 tokens, as one
 * sequence and as 8 of 1024, in pages of 64 and of 16; and 32768 tokens in
 * pages of 64), the pages scattered over the pool in random order. K+V
 * bytes read per second against the copy bandwidth; the report sets the
 * time beside SDPA's decode of the same skv.
 */
static void bench_paged(json_t *out, json_t *split, double copy_gbps) {
  static const struct {
    int64_t seqs, len;
    int page;
  } full[] = {{1, 8192, 64}, {8, 1024, 64}, {1, 8192, 16}, {8, 1024, 16}, {1, 32768, 64}},
    small[] = {{2, 256, 64}};
  const int ncases = quick ? (int)(sizeof small / sizeof small[0])
                           : (int)(sizeof full / sizeof full[0]);
  const int64_t H = 32, HK = 8, D = 128;
  for (int c = 0; c < ncases; c++) {
    const int64_t S = quick ? small[c].seqs : full[c].seqs, L = quick ? small[c].len : full[c].len;
    const int P = quick ? small[c].page : full[c].page;
    char variant[64], name[160];
    snprintf(variant, sizeof variant, "dtype=f16,head_dim=%lld,page=%d", (long long)D, P);
    snprintf(name, sizeof name, "paged_attention decode %s seqs=%lld len=%lld h=%lld/%lld ",
             variant, (long long)S, (long long)L, (long long)H, (long long)HK);
    if (!wanted(name)) continue;
    gk_module *m;
    if (gk_module_load(ar, &dev, "paged_attention", variant, &m) != GK_OK) {
      fprintf(stderr, "gk_bench_gpu: %s\n", gk_archive_errmsg(ar));
      continue;
    }
    /* The pool: every sequence's pages plus as many spare, in random order. */
    const int64_t per = (L + P - 1) / P, n_pages = 2 * S * per;
    const size_t page_bytes = (size_t)(HK * P * D) * 2, pool = (size_t)n_pages * page_bytes,
                 qb = (size_t)(S * H * D) * 2;
    int32_t *table = malloc((size_t)(S * per) * sizeof *table), *perm =
        malloc((size_t)n_pages * sizeof *perm), *lens = malloc((size_t)S * sizeof *lens);
    qref_rng r;
    qref_seed(&r, (uint64_t)(S * 7 + P));
    for (int64_t i = 0; i < n_pages; i++) perm[i] = (int32_t)i;
    for (int64_t i = n_pages - 1; i > 0; i--) {
      const int64_t j = (int64_t)(qref_next(&r) % (uint64_t)(i + 1));
      const int32_t x = perm[i];
      perm[i] = perm[j], perm[j] = x;
    }
    for (int64_t i = 0; i < S * per; i++) table[i] = perm[i];
    for (int64_t i = 0; i < S; i++) lens[i] = (int32_t)L;
    const int copies = copies_for(2 * (size_t)(S * per) * page_bytes);
    uint16_t *h = malloc(pool);
    for (size_t i = 0; i < pool / 2; i++)
      h[i] = qref_f16_encode((float)(2.0 * qref_uniform(&r) - 1.0));
    cu_deviceptr kv = dalloc(2 * pool * (size_t)copies), q = dalloc(qb), o = dalloc(qb),
                 dt = dalloc((size_t)(S * per) * 4), dl = dalloc((size_t)S * 4);
    ok(cu.cuMemcpyHtoD(kv, h, pool), "cuMemcpyHtoD");
    ok(cu.cuMemcpyHtoD(kv + pool, h, pool), "cuMemcpyHtoD");
    ok(cu.cuMemcpyHtoD(q, h, qb), "cuMemcpyHtoD");
    ok(cu.cuMemcpyHtoD(dt, table, (size_t)(S * per) * 4), "cuMemcpyHtoD");
    ok(cu.cuMemcpyHtoD(dl, lens, (size_t)S * 4), "cuMemcpyHtoD");
    free(h), free(table), free(perm), free(lens);
    for (int k = 1; k < copies; k++)
      ok(cu.cuMemcpyDtoDAsync(kv + 2 * pool * (size_t)k, kv, 2 * pool, NULL),
         "cuMemcpyDtoDAsync");
    int64_t wsb;
    const cu_deviceptr ws = /* decodes: sq 1 */
        ws_new(S * HK, ws_pieces(S * HK, per * P), H / HK, (int)D, &wsb);
    gk_module *rm = ref_load("paged_attention", variant);
    launches l = {m, "paged_attention", copies, 15, NULL};
    l.args = calloc((size_t)copies, sizeof *l.args);
    char err[512];
    for (int k = 0; k < copies; k++) {
      gk_arg *a = l.args[k];
      const cu_deviceptr base = kv + 2 * pool * (size_t)k;
      a[0] = gk_arg_ptr(q), a[1] = gk_arg_ptr(base), a[2] = gk_arg_ptr(base + pool);
      a[3] = gk_arg_ptr(dt), a[4] = gk_arg_ptr(dl), a[5] = gk_arg_ptr(o);
      a[6] = gk_arg_i64(S), a[7] = gk_arg_i64(H), a[8] = gk_arg_i64(HK), a[9] = gk_arg_i64(1);
      a[10] = gk_arg_i64(per), a[11] = gk_arg_i64(n_pages);
      a[12] = gk_arg_f32((float)(1.0 / sqrt((double)D)));
      a[13] = gk_arg_ptr(ws), a[14] = gk_arg_i64(wsb);
    }
    if (launches_ready(&l, err, sizeof err) == 0) {
      launches lr = {rm, "paged_attention", copies, 15, l.args};
      const int with_ref = ref_ready(&lr, variant);
      timing t, tr;
      time_ab(launch_issue, &l, with_ref ? &lr : NULL, &t, &tr);
      const double kvb = 2.0 * (double)(S * L * HK * D) * 2, kv_gbps = kvb / (t.us * 1e3);
      fprintf(stderr, "%s%s: %.1f us, K+V %.0f GB/s\n", name, gk_module_info(m)->target, t.us,
              kv_gbps);
      json_t *obj =
          json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:s, s:f, s:f, s:i, s:i, s:i, "
                    "s:f, s:f}",
                    "kernel", "paged_attention", "page", P, "seqs", (json_int_t)S, "len",
                    (json_int_t)L, "heads", (json_int_t)H, "kv_heads", (json_int_t)HK,
                    "head_dim", (json_int_t)D, "target", gk_module_info(m)->target, "us",
                    t.us, "best_us", t.best_us, "runs", t.runs, "batch", t.batch, "copies",
                    copies, "kv_gbps", kv_gbps, "copy_ratio",
                    copy_gbps > 0 ? kv_gbps / copy_gbps : 0);
      if (with_ref) ref_fields(obj, &tr, rm, t.us);
      json_array_append_new(out, obj);
      bench_split(split, &l, 13, name, S * HK, per * P, H / HK, (int)D, kvb, copy_gbps, t.us);
    } else {
      fprintf(stderr, "gk_bench_gpu: paged_attention %s: %s\n", variant, err);
    }
    free(l.args);
    ok(cu.cuMemFree(kv), "cuMemFree"), ok(cu.cuMemFree(q), "cuMemFree");
    ok(cu.cuMemFree(o), "cuMemFree"), ok(cu.cuMemFree(dt), "cuMemFree");
    ok(cu.cuMemFree(dl), "cuMemFree"), ok(cu.cuMemFree(ws), "cuMemFree");
    gk_module_unload(rm);
    gk_module_unload(m);
  }
}

#define USAGE                                                                            \
  "usage: gk_bench_gpu ARCHIVE --json FILE [--quick] [--runs N] [--filter TEXT]\n"      \
  "                    [--ref ARCHIVE2] [--libcuda PATH]\n"

int main(int argc, char **argv) {
  const char *path = NULL, *json_path = NULL, *libcuda = NULL, *ref_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf(USAGE
             "Times the cuda kernels of ARCHIVE on this machine's NVIDIA GPU through libgk\n"
             "(CUDA events; warm-up, then the median of N runs, default 10), beside the\n"
             "card's device-to-device copy, and writes FILE (JSON). bench/gpu.sh runs it\n"
             "and adds PyTorch. Without a usable GPU FILE is {\"skipped\": \"why\"}, exit 0.\n"
             "  --quick          small shapes, 3 runs (the tests)\n"
             "  --runs N         runs a case (default 10)\n"
             "  --filter TEXT    only the cases whose name contains TEXT (up to 8: any)\n"
             "  --ref ARCHIVE2   each case also timed on ARCHIVE2's image of it, on the same\n"
             "                   inputs, the two taking turns run by run (ref_us, ...)\n"
             "  --libcuda PATH   the driver library (default: libcuda.so.1 by dlopen)\n");
      return 0;
    }
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc && nfilters < 8)
      filters[nfilters++] = argv[++i];
    else if (strcmp(argv[i], "--libcuda") == 0 && i + 1 < argc) libcuda = argv[++i];
    else if (strcmp(argv[i], "--ref") == 0 && i + 1 < argc) ref_path = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0) quick = 1, runs = 3;
    else if (argv[i][0] != '-' && !path) path = argv[i];
    else path = NULL, i = argc;
  }
  if (!path || !json_path || runs < 1) {
    fprintf(stderr, USAGE);
    return 2;
  }
  json_t *root;
  char why[256];
  if (cudrv_open(&cu, libcuda, 0, why, sizeof why) != 0) {
    fprintf(stderr, "gk_bench_gpu: no usable NVIDIA GPU: %s\n", why);
    root = json_pack("{s:s}", "skipped", why);
  } else {
    int rc = gk_device_detect_backend(GK_BACKEND_CUDA, &dev, why, sizeof why);
    if (rc != GK_OK) die("the driver works but libgk finds no cuda device", why);
    if (gk_archive_open(path, &ar) != GK_OK) die("cannot open the archive", gk_last_error());
    if (ref_path && gk_archive_open(ref_path, &ref_ar) != GK_OK)
      die("cannot open the --ref archive", gk_last_error());
    ok(cu.cuEventCreate(&ev0, CUDRV_EVENT_DEFAULT), "cuEventCreate");
    ok(cu.cuEventCreate(&ev1, CUDRV_EVENT_DEFAULT), "cuEventCreate");
    char spec[96];
    gk_device_format(&dev, spec, sizeof spec);
    json_t *copy = wanted("copy") ? bench_copy() : json_pack("{s:f}", "gbps", 0.0);
    const double copy_gbps = json_real_value(json_object_get(copy, "gbps"));
    json_t *qm = json_array(), *fa = json_array(), *pa = json_array(), *sp = json_array();
    bench_qmatmul(qm, copy_gbps); /* 0 when not measured (--filter): no ratios */
    bench_attention(fa, sp, copy_gbps);
    bench_paged(pa, sp, copy_gbps);
    root = json_pack("{s:{s:s, s:s, s:i, s:i, s:i, s:i, s:I, s:f, s:s}, s:s, s:b, s:i, s:o, "
                     "s:o, s:o, s:o, s:o}",
                     "device", "name", cu.name, "sm", dev.arch, "driver_version",
                     cu.driver_version, "sms", cu.sms, "sm_clock_khz", cu.sm_clock_khz,
                     "l2_bytes", cu.l2_bytes, "mem_bytes", (json_int_t)cu.mem_bytes,
                     "spec_gbps", cu.spec_gbps, "libgk_device", spec,
                     "archive", path, "quick", quick, "runs", runs, "copy", copy, "qmatmul",
                     qm, "flash_attention", fa, "paged_attention", pa, "split", sp);
    json_object_set_new(root, "ref_archive", ref_path ? json_string(ref_path) : json_null());
    cu.cuEventDestroy(ev0), cu.cuEventDestroy(ev1);
    if (ref_ar) gk_archive_close(ref_ar);
    gk_archive_close(ar);
  }
  cudrv_close(&cu);
  if (!root || json_dump_file(root, json_path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
    die("cannot write", json_path);
  json_decref(root);
  return 0;
}
