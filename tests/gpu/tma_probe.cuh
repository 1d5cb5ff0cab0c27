/*
 * tma_probe.cuh - the Tensor Memory Accelerator (TMA, sm_90a), alone, to
 * check on a real Hopper GPU the layout docs/gpu-speed.md proposes for
 * loading the wgmma prefill's K and V stages by TMA instead of cp.async
 * ("Next steps"): no swizzle, each box 8 elements (16 bytes) wide and KEYS
 * rows tall, so that a box lands as KEYS x 16 contiguous bytes: one column
 * of wgmma's 8 x 8 core matrices. D / 8 boxes (d = 8c .. 8c + 7 at c KEYS
 * 8 halves) make a tile whose element (key n, d) lies at, in halves,
 *   d / 8 * 8 KEYS + n / 8 * 64 + n % 8 * 8 + d % 8,
 * which wgmma reads as K-major B (S = Q K^T: LBO 16 KEYS bytes from d to
 * d + 8, SBO 128 from n to n + 8) and as N-major B (O = P V, k = key: LBO
 * 128, SBO 16 KEYS). With `swz` the map has the 128-byte swizzle and each
 * box is 64 elements (128 bytes) wide: D / 64 boxes, box c at c KEYS 64
 * halves, each key's 128 bytes a row, 8 rows an atom, piece p of key n at
 * piece p ^ (n % 8): the layout of wgmma5's stages (fa_wgmma.cuh's
 * gk_fa_sw_at), read by gk_wgmma_desc_sw128 descriptors as that kernel
 * reads K and V. With `swz` 2, the same map built on the device by
 * gk_tmap_build (tensormap.replace from zeros, in a slot of this SM's),
 * as wgmma5t's producer builds its own (fa_wgmma.cuh, GK_FA_TMA_ON): the
 * GPU's word on those maps before that kernel is timed. The wrappers are
 * gk_tma.cuh's, whose twins the emulator runs in that kernel.
 *
 * The probe, a block of 128 threads (one warpgroup), KEYS = 64, D = 128:
 * thread 0 starts an mbarrier expecting the tile's bytes and issues the 16
 * loads of keys k0 .. k0 + 63 of KV head hk from a 3-D map (d, key, head)
 * of K; every thread waits for the barrier's phase; then the block writes
 *   raw (KEYS x D halves): the stage as it landed,
 *   s   (64 x 64 f32): A (64 x 128, row-major halves) times the tile's
 *       K^T, 8 wgmma m64n64k16 reading the stage K-major,
 *   o   (64 x 128 f32): P (64 x 64, row-major halves, P[i][n] times key
 *       n) times the tile as V, 4 wgmma m64n128k16 reading it N-major.
 * test_tma_probe.c builds the map (cuTensorMapEncodeTiled) and checks all
 * three against what it computes, keys past the tensor read as zeros.
 * With swz 2 the kernel also writes the map it built to dmap (128 bytes),
 * which the test prints beside the driver's on a mismatch; status 3: no
 * free slot.
 */
#ifndef GK_TMA_PROBE_CUH
#define GK_TMA_PROBE_CUH

#include <cuda.h> /* CUtensorMap */

#include "gk_tma.cuh" /* the mbarriers, the loads, gk_tmap_build */


enum { TMA_PROBE_KEYS = 64, TMA_PROBE_D = 128 };

/* A warp's m16n8k16 A fragment of rows 16w .. 16w + 15, k = 16kk .. + 15,
 * of a row-major matrix of `cols` halves (gk_wgmma.cuh's layout). */
GK_DEV void gk_tma_probe_afrag(const uint16_t *a, int cols, int kk, uint32_t fa[4]) {
  const int tid = (int)threadIdx.x, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  for (int u = 0; u < 4; u++) {
    const int row = 16 * w + g + 8 * (u & 1), col = 16 * kk + 2 * t + 8 * (u >> 1);
    fa[u] = (uint32_t)a[row * cols + col] | (uint32_t)a[row * cols + col + 1] << 16;
  }
}

#if GK_WGMMA_HW
GK_DEV void gk_tma_probe(const CUtensorMap *map, int swz, int k0, int hk, const uint16_t *a,
                         const uint16_t *p, uint16_t *raw, float *s, float *o, int *status,
                         const uint16_t *kbase, int skv, int kvh, unsigned char *dmap) {
  constexpr int KEYS = TMA_PROBE_KEYS, D = TMA_PROBE_D;
  /* 1024: the swizzle's atoms, on the shared window's addresses. */
  __shared__ __attribute__((aligned(1024))) uint16_t st[KEYS * D];
  __shared__ __attribute__((aligned(8))) uint64_t bar;
  const int tid = (int)threadIdx.x, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  if ((uint32_t)__cvta_generic_to_shared(st) % 1024u != 0u) { /* the same for every thread */
    if (tid == 0) *status = 2;
    return;
  }
  __shared__ __attribute__((aligned(128))) unsigned char mstage[128];
  __shared__ int slot;
  if (tid == 0) {
    gk_mbar_init(&bar, 1);
    gk_mbar_init_fence();
    slot = swz == 2 ? gk_tma_claim() : -1;
  }
  __syncthreads();
  if (swz == 2 && slot < 0) { /* the same for every thread */
    if (tid == 0) *status = 3;
    return;
  }
  const void *m = map;
  if (swz == 2) { /* the map built here by fa_wgmma.cuh's gk_fa_tma_begin's calls */
    if (tid < 32) {
      gk_tmap_build(slot, 0, mstage,
                    gk_tmap_rows_sw128(kbase, D, (uint32_t)skv, (uint32_t)kvh, KEYS));
      if (tid == 0)
        for (int b = 0; b < 128; b++) dmap[b] = ((const unsigned char *)gk_tmap(slot, 0))[b];
    }
    m = gk_tmap(slot, 0);
  }
  if (tid == 0) {
    gk_mbar_arrive_expect_tx(&bar, KEYS * D * 2);
    if (swz)
      for (int c = 0; c < D / 64; c++) gk_tma_load_3d(&st[c * KEYS * 64], m, 64 * c, k0, hk, &bar);
    else
      for (int c = 0; c < D / 8; c++) gk_tma_load_3d(&st[c * KEYS * 8], m, 8 * c, k0, hk, &bar);
  }
  /* Bounded, so that bytes that never come (a wrong count, a copy that
   * faulted) end the probe with a word instead of a hang. */
  bool landed = false;
  for (long i = 0; i < (1l << 22) && !landed; i++) landed = gk_mbar_try_wait(&bar, 0);
  if (!__syncthreads_and(landed)) { /* the same answer for every thread */
    if (tid == 0) *status = 1;
    return; /* a slot taken stays taken: the copies may still read its map */
  }
  if (swz == 2 && tid == 0) gk_tma_release(slot);
  for (int e = tid; e < KEYS * D; e += 128) raw[e] = st[e];
  /* S = A K^T: K-major, d steps of 16 are 2 box columns (2 x 16 KEYS bytes). */
  /* A's fragments all loaded before the fence (written after it, ptxas
   * would insert a warpgroup arrive of its own: C7519). */
  float acc[KEYS / 2];
  uint32_t fa[D / 16][4];
  for (int kk = 0; kk < D / 16; kk++) gk_tma_probe_afrag(a, D, kk, fa[kk]);
  gk_wgmma_fence();
  /* Swizzled (swz 1 and 2): each 16 of d the start 32 bytes on in a row's 64 elements,
   * the next 64 a box on (SBO 1024: 8 keys). */
  for (int kk = 0; kk < D / 16; kk++)
    gk_wgmma<gk_f16, KEYS, 0>(
        acc, fa[kk],
        swz ? gk_wgmma_desc_sw128(st, &st[kk / 4 * KEYS * 64 + kk % 4 * 16], 16, 1024)
            : gk_wgmma_desc(st, &st[kk * 2 * KEYS * 8], 16 * KEYS, 128),
        st, kk > 0);
  gk_wgmma_commit();
  gk_wgmma_wait<0>();
  for (int j = 0; j < KEYS / 8; j++)
    for (int e = 0; e < 4; e++)
      s[(16 * w + g + 8 * (e >> 1)) * KEYS + 8 * j + 2 * t + (e & 1)] = acc[4 * j + e];
  /* O = P V: N-major, key steps of 16 are 2 core matrices (256 bytes). */
  float oacc[D / 2];
  uint32_t fp[KEYS / 16][4];
  for (int kk = 0; kk < KEYS / 16; kk++) gk_tma_probe_afrag(p, KEYS, kk, fp[kk]);
  gk_wgmma_fence();
  /* Swizzled: 16 keys two atoms on (SBO 1024), d 64 .. 127 a box on (LBO). */
  for (int kk = 0; kk < KEYS / 16; kk++)
    gk_wgmma<gk_f16, D, 1>(oacc, fp[kk],
                           swz ? gk_wgmma_desc_sw128(st, &st[1024 * kk], 128 * KEYS, 1024)
                               : gk_wgmma_desc(st, &st[kk * 2 * 64], 128, 16 * KEYS),
                           st, kk > 0);
  gk_wgmma_commit();
  gk_wgmma_wait<0>();
  for (int j = 0; j < D / 8; j++)
    for (int e = 0; e < 4; e++)
      o[(16 * w + g + 8 * (e >> 1)) * D + 8 * j + 2 * t + (e & 1)] = oacc[4 * j + e];
}
#endif

#endif /* GK_TMA_PROBE_CUH */
