/*
 * test_wgmma_probe.c - runs wgmma_probe.cu's fifteen entries (one wgmma
 * m64nNk16 f16 each: N 32, 64, 128 with B K-major and N-major and A in
 * registers; N 96, 128, 176 and 192 with A in shared memory too, the SS
 * form; and the 128-byte swizzle, B N-major at N 64 and 128, A and B
 * K-major at N 128, 176 and 192) on a real Hopper GPU and compares D with
 * A B computed here (the
 * entry issues its product twice, scale-d 0 then 1, and halves D: both
 * accumulator modes). The values are small integers, so every product and
 * sum is exact in f32 whatever order the tensor cores add in: D must be
 * equal, element for element.
 *
 * On a mismatch it says which reading of the stage the GPU's D matches
 * instead (the descriptor's two offsets swapped, B's major flipped; A's
 * offsets swapped for the SS form; for the swizzled shapes, the stage
 * read without the swizzle, or with it applied to the offset from the
 * start alone), so a wrong assumption in kernelsrc/cuda/gk_wgmma.cuh is
 * named, not just seen.
 *
 *   test_wgmma_probe CUBIN [--libcuda PATH]
 *
 * Exit 0 (all equal), 1 (a mismatch or a driver failure), 77 (SKIP: no
 * NVIDIA GPU, or not compute capability 9.0, the only one an sm_90a cubin
 * loads on).
 */
#include <stdio.h>
#include <string.h>

#include "cudrv.h"
#include "hopper_probe.h"
#include "wgmma_probe_data.h"

enum { M = 64, K = 16, NMAX = 192, STAGE = K * NMAX };

/* The stage's element (k, n) as the instruction reads it for offsets lbo
 * and sbo (in halves) and major t: gk_wgmma.cuh's rule. */
static int hw_at(int k, int n, int lbo, int sbo, int t) {
  return n / 8 * sbo + k / 8 * lbo + (t ? k % 8 * 8 + n % 8 : n % 8 * 8 + k % 8);
}

/* D = A B with B read from the stage through (lbo, sbo, t); 0 when an
 * address falls outside it. */
static int reading(const float *a, const float *stage, int n, int lbo, int sbo, int t, float *d) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < n; j++) {
      float s = 0.0f;
      for (int k = 0; k < K; k++) {
        const int at = hw_at(k, j, lbo, sbo, t);
        if (at < 0 || at >= STAGE) return 0;
        s += a[i * K + k] * stage[at];
      }
      d[i * n + j] = s;
    }
  return 1;
}

static int equal(const float *x, const float *y, int n) {
  return memcmp(x, y, sizeof(float) * (size_t)(M * n)) == 0;
}

/* How many elements of got (64 x n) differ from want, the first 3 said. */
static int differ(const char *name, const float *got, const float *want, int n) {
  int bad = 0;
  for (int i = 0; i < M * n; i++)
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 3)
      printf("FAIL: %s: D[%d][%d] = %g, A B has %g\n", name, i / n, i % n, got[i], want[i]);
  return bad;
}

/* A as the SS form reads it from its stage (wgmma_probe.cuh: LBO 64, SBO
 * 128 halves) when the two offsets mean the other thing. */
static void a_swapped(const float *a, float *alt) {
  static float stage[64 * 16];
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) stage[m / 8 * 128 + k / 8 * 64 + m % 8 * 8 + k % 8] = a[m * K + k];
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) alt[m * K + k] = stage[m / 8 * 64 + k / 8 * 128 + m % 8 * 8 + k % 8];
}

/* Runs entry `name` on A and B's bits (ha, hb: n columns) into got (64 x
 * n). 0, or 1 after saying which driver call failed. */
static int launch(cudrv *gpu, cu_module mod, const char *name, int n, const uint16_t *ha,
                  const uint16_t *hb, float *got) {
  const size_t abytes = sizeof(uint16_t) * M * K, bbytes = sizeof(uint16_t) * (size_t)(K * n),
               dbytes = sizeof(float) * (size_t)(M * n);
  cu_function f;
  cu_deviceptr da = 0, db = 0, dd = 0;
  cu_result r;
  const char *step = "cuModuleGetFunction";
  if ((r = gpu->cuModuleGetFunction(&f, mod, name)) != CUDRV_SUCCESS) goto driver;
  step = "cuMemAlloc";
  if ((r = gpu->cuMemAlloc(&da, abytes)) != CUDRV_SUCCESS ||
      (r = gpu->cuMemAlloc(&db, bbytes)) != CUDRV_SUCCESS ||
      (r = gpu->cuMemAlloc(&dd, dbytes)) != CUDRV_SUCCESS)
    goto driver;
  step = "cuMemcpyHtoD";
  if ((r = gpu->cuMemcpyHtoD(da, ha, abytes)) != CUDRV_SUCCESS ||
      (r = gpu->cuMemcpyHtoD(db, hb, bbytes)) != CUDRV_SUCCESS ||
      (r = gpu->cuMemsetD8(dd, 0xff, dbytes)) != CUDRV_SUCCESS)
    goto driver;
  void *params[] = {&da, &db, &dd};
  step = "cuLaunchKernel";
  if ((r = gpu->cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL)) != CUDRV_SUCCESS)
    goto driver;
  step = "cuCtxSynchronize";
  if ((r = gpu->cuCtxSynchronize()) != CUDRV_SUCCESS) goto driver;
  step = "cuMemcpyDtoH";
  if ((r = gpu->cuMemcpyDtoH(got, dd, dbytes)) != CUDRV_SUCCESS) goto driver;
  gpu->cuMemFree(da);
  gpu->cuMemFree(db);
  gpu->cuMemFree(dd);
  return 0;

driver:
  printf("FAIL: %s: %s failed with %s\n", name, step, cudrv_err(gpu, r));
  if (da) gpu->cuMemFree(da);
  if (db) gpu->cuMemFree(db);
  if (dd) gpu->cuMemFree(dd);
  return 1;
}

/* Shape n, t: 0 and 1 B K-major and N-major, A in registers; 2 A in
 * shared memory too, B K-major. */
static int probe(cudrv *gpu, cu_module mod, int n, int t) {
  char name[64];
  snprintf(name, sizeof name, "wgmma_probe_n%d_t%d", n, t);
  const char *what = t == 2 ? "K-major, A from shared memory" : t ? "N-major" : "K-major";
  const int ss = t == 2;
  t = t == 1;
  /* The layout wgmma_probe.cuh stages B in (offsets in halves). */
  const int lbo = t ? 8 * n : 64, sbo = t ? 64 : 128;
  static uint16_t ha[M * K], hb[K * NMAX];
  static float a[M * K], b[K * NMAX], stage[STAGE], want[M * NMAX], got[M * NMAX],
      alt[M * NMAX], a2[M * K];
  wgmma_probe_data(n, ss ? 2 : t, a, ha, b, hb);
  for (int i = 0; i < STAGE; i++) stage[i] = 1e30f; /* not written: never read */
  for (int k = 0; k < K; k++)
    for (int j = 0; j < n; j++) stage[hw_at(k, j, lbo, sbo, t)] = b[k * n + j];
  reading(a, stage, n, lbo, sbo, t, want);
  if (launch(gpu, mod, name, n, ha, hb, got)) return 1;

  if (equal(got, want, n)) {
    printf("ok: %s: m64n%dk16 f16, B %s (LBO %d, SBO %d bytes): D exact\n", name, n, what,
           2 * lbo, 2 * sbo);
    return 0;
  }
  const int bad = differ(name, got, want, n);
  printf("FAIL: %s: %d of %d elements of D differ from A B (B %s, LBO %d, SBO %d bytes)\n", name,
         bad, M * n, what, 2 * lbo, 2 * sbo);
  static const struct { int swap, flip; const char *why; } alts[] = {
      {1, 0, "the descriptor's LBO and SBO swapped (gk_wgmma_desc's order)"},
      {0, 1, "B's major flipped (the instruction's trans-b, or the stage's layout)"},
      {1, 1, "both LBO/SBO swapped and B's major flipped"}};
  for (size_t i = 0; i < sizeof alts / sizeof alts[0]; i++)
    if (reading(a, stage, n, alts[i].swap ? sbo : lbo, alts[i].swap ? lbo : sbo,
                alts[i].flip ? !t : t, alt) &&
        equal(got, alt, n))
      printf("    the GPU's D is A B read with %s\n", alts[i].why);
  if (ss) {
    a_swapped(a, a2);
    if (reading(a2, stage, n, lbo, sbo, t, alt) && equal(got, alt, n))
      printf("    the GPU's D is A B with A read with its descriptor's LBO and SBO swapped\n");
  }
  return 1;
}

/*
 * The swizzled shapes (wgmma_probe.cuh's T 3 and 4), staged as there, in
 * halves (`off`: the element's place before the swizzle, relative to the
 * stage's 1024-byte aligned start; `from`: the descriptor's start, where
 * the K-major steps begin 32 q bytes into a row). How the stage is read
 * when `how` is 0: the swizzle on the address (gk_wgmma.cuh's rule); 1:
 * none; 2: on the offset from the descriptor's start alone.
 */
enum { SW_MN = 3, SW_K = 4, QA = 3, QB = 1 }; /* wgmma_probe.cuh's T and q */
static int sw_read(int off, int from, int how) {
  const int a = 2 * (from + off); /* bytes from the aligned start */
  if (how == 1) return a / 2;
  if (how == 2) return from + (2 * off ^ (2 * off >> 7 & 7) << 4) / 2;
  return (a ^ (a >> 7 & 7) << 4) / 2;
}
/* Element (k, n) of B (t 3: N-major) or (row, k) of a K-major operand
 * (t 4), read the way `how` says. */
static int sw_b(int k, int n, int t, int how) {
  if (t == SW_MN) return sw_read(n / 64 * 1024 + k / 8 * 512 + k % 8 * 64 + n % 64, 0, how);
  return sw_read(n / 8 * 512 + n % 8 * 64 + k, 16 * QB, how);
}
static int sw_a(int m, int k, int how) {
  return sw_read(m / 8 * 512 + m % 8 * 64 + k, 16 * QA, how);
}

static int probe_sw(cudrv *gpu, cu_module mod, int n, int t) {
  enum { BSTAGE = 192 * 64, ASTAGE = 64 * 64 };
  char name[64];
  snprintf(name, sizeof name, "wgmma_probe_n%d_t%d", n, t);
  const char *what = t == SW_MN ? "B N-major" : "A and B K-major";
  static uint16_t ha[M * K], hb[K * NMAX];
  static float a[M * K], b[K * NMAX], bst[BSTAGE], ast[ASTAGE], want[M * NMAX], got[M * NMAX],
      alt[M * NMAX];
  wgmma_probe_data(n, t, a, ha, b, hb);
  for (int i = 0; i < BSTAGE; i++) bst[i] = 1e30f; /* not written: never read */
  for (int i = 0; i < ASTAGE; i++) ast[i] = 1e30f;
  for (int k = 0; k < K; k++)
    for (int j = 0; j < n; j++) bst[sw_b(k, j, t, 0)] = b[k * n + j];
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) ast[sw_a(m, k, 0)] = a[m * K + k];
  /* D as the stages read `how` give it (A from registers for t 3). */
  for (int how = 0; how < 3; how++) {
    float *d = how ? alt : want;
    int inside = 1;
    for (int i = 0; i < M && inside; i++)
      for (int j = 0; j < n && inside; j++) {
        float acc = 0.0f;
        for (int k = 0; k < K; k++) {
          const int bi = sw_b(k, j, t, how), ai = t == SW_K ? sw_a(i, k, how) : 0;
          if (bi < 0 || bi >= BSTAGE || ai < 0 || ai >= ASTAGE) inside = 0;
          else acc += (t == SW_K ? ast[ai] : a[i * K + k]) * bst[bi];
        }
        d[i * n + j] = acc;
      }
    if (how == 0 && !inside) {
      printf("FAIL: %s: the probe's own layout leaves its stage\n", name);
      return 1;
    }
    if (how == 0) {
      if (launch(gpu, mod, name, n, ha, hb, got)) return 1;
      if (equal(got, want, n)) {
        printf("ok: %s: m64n%dk16 f16, 128-byte swizzle, %s: D exact\n", name, n, what);
        return 0;
      }
      const int bad = differ(name, got, want, n);
      printf("FAIL: %s: %d of %d elements of D differ from A B (128-byte swizzle, %s)\n", name,
             bad, M * n, what);
    } else if (inside && equal(got, alt, n)) {
      printf("    the GPU's D is A B read %s\n",
             how == 1 ? "without the swizzle" : "with the swizzle on the offset from the start");
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  cudrv gpu;
  cu_module mod;
  int rc;
  if (!hopper_probe_open(argc, argv, "test_wgmma_probe",
                         "runs one wgmma per shape (tests/gpu/wgmma_probe.cu, built for sm_90a)\n"
                         "  and checks D = A B exactly;",
                         "wgmma_probe.cu", &gpu, &mod, &rc))
    return rc;
  printf("gpu: %s, sm_%d%d: one wgmma per shape, D against A B\n", gpu.name, gpu.cc_major,
         gpu.cc_minor);
  int failures = 0;
  for (int n = 32; n <= 128; n *= 2)
    for (int t = 0; t < 2; t++) failures += probe(&gpu, mod, n, t);
  failures += probe(&gpu, mod, 96, 2);
  failures += probe(&gpu, mod, 128, 2);
  failures += probe(&gpu, mod, 176, 2);
  failures += probe(&gpu, mod, 192, 2);
  failures += probe_sw(&gpu, mod, 64, SW_MN);
  failures += probe_sw(&gpu, mod, 128, SW_MN);
  failures += probe_sw(&gpu, mod, 128, SW_K);
  failures += probe_sw(&gpu, mod, 176, SW_K);
  failures += probe_sw(&gpu, mod, 192, SW_K);
  gpu.cuModuleUnload(mod);
  cudrv_close(&gpu);
  printf("%d of 15 shapes failed\n", failures);
  return failures ? 1 : 0;
}
