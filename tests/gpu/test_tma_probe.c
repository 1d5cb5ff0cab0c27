/*
 * test_tma_probe.c - runs tma_probe.cu on a real Hopper GPU: 3-D tensor
 * maps of K (d, key, KV head; f16) made by the driver's
 * cuTensorMapEncodeTiled, one without swizzle (boxes of 8 x 64 x 1: 16
 * into a 64-key tile) and one with the 128-byte swizzle (boxes of 64 x 64
 * x 1: 2 a tile, the layout of wgmma5's stages), and each tile read by
 * wgmma as K (S = A K^T) and as V (O = P V) in the layouts tma_probe.cuh
 * describes. Two tiles a map: keys 0 .. 63 of KV head 0, and keys 64 ..
 * 127 of KV head 1 of a tensor of 100 keys, whose last 28 rows lie past it
 * and must read as zeros. The values are small integers, so S and O are
 * exact in f32 whatever order the tensor cores add in: each must be equal,
 * element for element, as must the tile.
 *
 *   test_tma_probe CUBIN [--libcuda PATH]
 *
 * Exit 0 (all equal), 1 (a mismatch, a phase that never completed, or a
 * driver failure), 77 (SKIP: no NVIDIA GPU, not compute capability 9.0, or
 * a driver without cuTensorMapEncodeTiled).
 */
#include <dlfcn.h>
#include <stdio.h>

#include "../../kernelsrc/common/gk_quant.h"
#include "cudrv.h"
#include "hopper_probe.h"

enum { KEYS = 64, D = 128, SKV = 100, KVH = 2, M = 64 };

static float kval(int h, int n, int d) { return (float)((h * 7 + n * 3 + d * 5) % 9 - 4); }
/* K as a tile reads it: zeros past the tensor's SKV keys. */
static float ktile(int h, int n, int d) { return n < SKV ? kval(h, n, d) : 0.0f; }

/* Where key n's piece c (d = 8c .. 8c + 7) lies in the stage, in halves:
 * without swizzle box c at c KEYS 8 halves, key n's 8 elements at n 8 in
 * it; with it, box c / 8 at (c / 8) KEYS 64 halves, key n a 128-byte row
 * of it (n / 8 atoms of 512 halves, then n % 8 rows of 64), its piece
 * c % 8 at (c % 8) ^ (n % 8) (fa_wgmma.cuh's gk_fa_sw_at). */
static int stage_at(int swz, int n, int c) {
  return swz ? c / 8 * KEYS * 64 + n / 8 * 512 + n % 8 * 64 + ((c % 8) ^ (n % 8)) * 8
             : (c * KEYS + n) * 8;
}

static int check_tile(int swz, int k0, int hk, const uint16_t *raw, const float *s,
                      const float *o, const float *a, const float *p) {
  const char *map = swz == 2 ? "128-byte swizzle, the map built on the device"
                   : swz    ? "128-byte swizzle"
                            : "no swizzle";
  int bad = 0;
  for (int c = 0; c < D / 8; c++)
    for (int n = 0; n < KEYS; n++)
      for (int e = 0; e < 8; e++) {
        const int key = k0 + n, d = 8 * c + e;
        const float want = ktile(hk, key, d);
        const float got = gk_q_f16_to_f32(raw[stage_at(swz, n, c) + e]);
        if (got != want && bad++ < 3)
          printf("FAIL: %s, tile k0=%d hk=%d: key %d, d %d landed as %g, K has %g\n", map, k0,
                 hk, key, d, got, want);
      }
  if (bad) {
    printf("FAIL: %s, tile k0=%d hk=%d: %d of %d halves of the stage are not K's (box "
           "layout)\n", map, k0, hk, bad, KEYS * D);
    return 1;
  }
  int sbad = 0, obad = 0;
  for (int i = 0; i < M; i++)
    for (int n = 0; n < KEYS; n++) {
      float want = 0.0f;
      for (int d = 0; d < D; d++)
        want += a[i * D + d] * ktile(hk, k0 + n, d);
      if (s[i * KEYS + n] != want && sbad++ < 3)
        printf("FAIL: S[%d][%d] = %g, A K^T has %g\n", i, n, s[i * KEYS + n], want);
    }
  for (int i = 0; i < M; i++)
    for (int d = 0; d < D; d++) {
      float want = 0.0f;
      for (int n = 0; n < KEYS; n++)
        want += p[i * KEYS + n] * ktile(hk, k0 + n, d);
      if (o[i * D + d] != want && obad++ < 3)
        printf("FAIL: O[%d][%d] = %g, P V has %g\n", i, d, o[i * D + d], want);
    }
  if (sbad)
    printf("FAIL: %s, tile k0=%d hk=%d: %d of %d of S differ: K-major (%s) is not how wgmma "
           "reads the stage\n", map, k0, hk, sbad, M * KEYS,
           swz ? "SBO 1024 bytes, a step of 16 in d 32 bytes on" : "LBO 16 KEYS, SBO 128 bytes");
  if (obad)
    printf("FAIL: %s, tile k0=%d hk=%d: %d of %d of O differ: N-major (%s) is not how wgmma "
           "reads the stage\n", map, k0, hk, obad, M * D,
           swz ? "LBO 128 KEYS, SBO 1024 bytes" : "LBO 128, SBO 16 KEYS bytes");
  if (!sbad && !obad)
    printf("ok: %s, tile k0=%d hk=%d: %d boxes of %d x %d landed as %s%s; wgmma reads them as "
           "K (S exact) and as V (O exact)\n", map, k0, hk, swz ? D / 64 : D / 8,
           swz ? 64 : 8, KEYS, swz ? "swizzled atoms" : "core-matrix columns",
           k0 + KEYS > SKV ? ", keys past the tensor as zeros" : "");
  return sbad || obad;
}

int main(int argc, char **argv) {
  cudrv gpu;
  cu_module mod;
  int rc;
  if (!hopper_probe_open(argc, argv, "test_tma_probe",
                         "loads K tiles by TMA (tests/gpu/tma_probe.cu, built for sm_90a) and\n"
                         "  reads them by wgmma;",
                         "tma_probe.cu", &gpu, &mod, &rc))
    return rc;
  cudrv_tmap_encode_tiled encode =
      (cudrv_tmap_encode_tiled)dlsym(gpu.lib, "cuTensorMapEncodeTiled");
  if (!encode) {
    printf("SKIP: the driver has no cuTensorMapEncodeTiled (older than CUDA 12.0)\n");
    gpu.cuModuleUnload(mod);
    cudrv_close(&gpu);
    return 77;
  }
  printf("gpu: %s, sm_%d%d: K tiles by TMA, read by wgmma\n", gpu.name, gpu.cc_major,
         gpu.cc_minor);

  static uint16_t hk_[KVH * SKV * D], ha[M * D], hp[M * KEYS], raw[KEYS * D];
  static float a[M * D], p[M * KEYS], s[M * KEYS], o[M * D];
  for (int h = 0; h < KVH; h++)
    for (int n = 0; n < SKV; n++)
      for (int d = 0; d < D; d++) hk_[(h * SKV + n) * D + d] = gk_q_f32_to_f16(kval(h, n, d));
  for (int i = 0; i < M * D; i++)
    a[i] = (float)((i * 7 + i / D) % 5 - 2), ha[i] = gk_q_f32_to_f16(a[i]);
  for (int i = 0; i < M * KEYS; i++)
    p[i] = (float)((i * 3 + i / KEYS) % 3 - 1), hp[i] = gk_q_f32_to_f16(p[i]);

  /* K as (d, key, head): strides in bytes of dims 1 and 2. */
  static cudrv_tmap maps[2];
  const unsigned long long dims[3] = {D, SKV, KVH}, strides[2] = {2 * D, 2ull * D * SKV};
  const unsigned boxes[2][3] = {{8, KEYS, 1}, {64, KEYS, 1}}, es[3] = {1, 1, 1};
  static const int tiles[2][2] = {{0, 0}, {64, 1}};
  int failures = 0, status = 0;
  cu_function f;
  cu_deviceptr dk = 0, da = 0, dp = 0, draw = 0, ds = 0, dout = 0, dst = 0, dmap = 0;
  unsigned char hmap[128];
  int skv = SKV, kvh = KVH;
  cu_result r;
  const char *step = "cuModuleGetFunction";
  if ((r = gpu.cuModuleGetFunction(&f, mod, "tma_probe")) != CUDRV_SUCCESS) goto driver;
  step = "cuMemAlloc";
  if ((r = gpu.cuMemAlloc(&dk, sizeof hk_)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&da, sizeof ha)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&dp, sizeof hp)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&draw, sizeof raw)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&ds, sizeof s)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&dout, sizeof o)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&dst, sizeof status)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemAlloc(&dmap, sizeof hmap)) != CUDRV_SUCCESS)
    goto driver;
  step = "cuMemcpyHtoD";
  if ((r = gpu.cuMemcpyHtoD(dk, hk_, sizeof hk_)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemcpyHtoD(da, ha, sizeof ha)) != CUDRV_SUCCESS ||
      (r = gpu.cuMemcpyHtoD(dp, hp, sizeof hp)) != CUDRV_SUCCESS)
    goto driver;
  step = "cuTensorMapEncodeTiled (f16, rank 3, no swizzle, box 8 x 64 x 1)";
  if ((r = encode(&maps[0], CUDRV_TMAP_FLOAT16, 3, (void *)(uintptr_t)dk, dims, strides,
                    boxes[0], es, CUDRV_TMAP_INTERLEAVE_NONE, CUDRV_TMAP_SWIZZLE_NONE,
                    CUDRV_TMAP_L2_PROMOTION_NONE, CUDRV_TMAP_OOB_FILL_ZEROS)) !=
      CUDRV_SUCCESS)
    goto driver;
  step = "cuTensorMapEncodeTiled (f16, rank 3, 128-byte swizzle, box 64 x 64 x 1)";
  if ((r = encode(&maps[1], CUDRV_TMAP_FLOAT16, 3, (void *)(uintptr_t)dk, dims, strides,
                    boxes[1], es, CUDRV_TMAP_INTERLEAVE_NONE, CUDRV_TMAP_SWIZZLE_128B,
                    CUDRV_TMAP_L2_PROMOTION_NONE, CUDRV_TMAP_OOB_FILL_ZEROS)) !=
      CUDRV_SUCCESS)
    goto driver;
  /* swz 2: the kernel builds the swizzled map itself (gk_tmap_build). */
  for (int run = 0; run < 6; run++) {
    int swz = run / 2, k0 = tiles[run % 2][0], h = tiles[run % 2][1];
    void *params[] = {&maps[swz ? 1 : 0], &swz, &k0, &h,    &da,   &dp,  &draw,
                      &ds,                &dout, &dst, &dk, &skv, &kvh, &dmap};
    step = "cuMemsetD8";
    if ((r = gpu.cuMemsetD8(draw, 0xff, sizeof raw)) != CUDRV_SUCCESS ||
        (r = gpu.cuMemsetD8(dst, 0, sizeof status)) != CUDRV_SUCCESS)
      goto driver;
    step = "cuLaunchKernel";
    if ((r = gpu.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL)) != CUDRV_SUCCESS)
      goto driver;
    step = "cuCtxSynchronize";
    if ((r = gpu.cuCtxSynchronize()) != CUDRV_SUCCESS) goto driver;
    step = "cuMemcpyDtoH";
    if ((r = gpu.cuMemcpyDtoH(&status, dst, sizeof status)) != CUDRV_SUCCESS ||
        (r = gpu.cuMemcpyDtoH(raw, draw, sizeof raw)) != CUDRV_SUCCESS ||
        (r = gpu.cuMemcpyDtoH(s, ds, sizeof s)) != CUDRV_SUCCESS ||
        (r = gpu.cuMemcpyDtoH(o, dout, sizeof o)) != CUDRV_SUCCESS)
      goto driver;
    if (status == 2) {
      printf("FAIL: the probe's stage is not 1024-byte aligned in shared memory (the swizzle's "
             "atoms need it)\n");
      failures++;
      continue;
    }
    if (status == 3) {
      printf("FAIL: no free slot for the map built on the device (gk_tma_claim)\n");
      failures++;
      continue;
    }
    if (status) {
      printf("FAIL: %s, tile k0=%d hk=%d: the mbarrier's phase never completed (the bytes "
             "expected, %d, never all came: the TMA counts fewer for boxes past the tensor, or "
             "failed)\n", swz == 2 ? "128-byte swizzle, the map built on the device"
                         : swz    ? "128-byte swizzle"
                                  : "no swizzle", k0, h, KEYS * D * 2);
      failures++;
      continue;
    }
    const int bad = check_tile(swz, k0, h, raw, s, o, a, p);
    failures += bad;
    if (bad && swz == 2) { /* the two maps, for whoever reads the failure */
      step = "cuMemcpyDtoH";
      if ((r = gpu.cuMemcpyDtoH(hmap, dmap, sizeof hmap)) != CUDRV_SUCCESS) goto driver;
      printf("the driver's map (cuTensorMapEncodeTiled) and the device's (gk_tmap_build):\n");
      for (int row = 0; row < 8; row++) {
        printf("  %3d ", 16 * row);
        for (int b = 0; b < 16; b++) printf("%02x", ((const unsigned char *)&maps[1])[16 * row + b]);
        printf("  ");
        for (int b = 0; b < 16; b++) printf("%02x", hmap[16 * row + b]);
        printf("\n");
      }
    }
  }
  goto done;
driver:
  printf("FAIL: %s failed with %s\n", step, cudrv_err(&gpu, r));
  failures++;
done:
  if (dk) gpu.cuMemFree(dk);
  if (da) gpu.cuMemFree(da);
  if (dp) gpu.cuMemFree(dp);
  if (draw) gpu.cuMemFree(draw);
  if (ds) gpu.cuMemFree(ds);
  if (dout) gpu.cuMemFree(dout);
  if (dst) gpu.cuMemFree(dst);
  if (dmap) gpu.cuMemFree(dmap);
  gpu.cuModuleUnload(mod);
  cudrv_close(&gpu);
  printf("%s\n", failures ? "the TMA probe FAILED"
                          : "the TMA probe passed: 2 tiles, without and with the swizzle, "
                            "the latter also through a map built on the device");
  return failures ? 1 : 0;
}
