/*
 * tma_probe.cuh - the Tensor Memory Accelerator (TMA, sm_90a), alone, to
 * check on a real Hopper GPU the layout docs/kernels.md proposes for
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
 * reads K and V. No kernel loads by TMA yet: these wrappers have no
 * emulator twin (tests/backends/cuda), which the kernel that takes them up
 * will need; this probe is the GPU's word on the layout first.
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
 */
#ifndef GK_TMA_PROBE_CUH
#define GK_TMA_PROBE_CUH

#include <cuda.h> /* CUtensorMap */

#include "gk_wgmma.cuh"

#if GK_WGMMA_HW
/* An mbarrier in shared memory, `count` arrivals a phase. */
GK_DEV void gk_mbar_init(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                   (uint32_t)__cvta_generic_to_shared(bar)),
               "r"(count)
               : "memory");
}
/* The inits of this thread, visible to the async proxy (the TMA unit). */
GK_DEV void gk_mbar_init_fence(void) {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* One arrival, and `bytes` more that the phase waits for. */
GK_DEV void gk_mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   (uint32_t)__cvta_generic_to_shared(bar)),
               "r"(bytes)
               : "memory");
}
/* Whether the phase of parity `phase` is complete, after waiting for it a
 * while (try_wait suspends the thread up to a time the hardware picks). */
GK_DEV bool gk_mbar_try_wait(uint64_t *bar, uint32_t phase) {
  uint32_t done;
  asm volatile("{\n.reg .pred p;\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"((uint32_t)__cvta_generic_to_shared(bar)), "r"(phase)
               : "memory");
  return done != 0;
}
/* Box (c0, c1, c2) of the 3-D map into shared memory at dst (128-byte
 * aligned), its bytes counted against bar's phase. */
GK_DEV void gk_tma_load_3d(void *dst, const CUtensorMap *map, int c0, int c1, int c2,
                           uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
                   (uint32_t)__cvta_generic_to_shared(dst)),
               "l"((uint64_t)map), "r"((uint32_t)__cvta_generic_to_shared(bar)), "r"(c0),
               "r"(c1), "r"(c2)
               : "memory");
}
#endif

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
                         const uint16_t *p, uint16_t *raw, float *s, float *o, int *status) {
  constexpr int KEYS = TMA_PROBE_KEYS, D = TMA_PROBE_D;
  /* 1024: the swizzle's atoms, on the shared window's addresses. */
  __shared__ __attribute__((aligned(1024))) uint16_t st[KEYS * D];
  __shared__ __attribute__((aligned(8))) uint64_t bar;
  const int tid = (int)threadIdx.x, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  if ((uint32_t)__cvta_generic_to_shared(st) % 1024u != 0u) { /* the same for every thread */
    if (tid == 0) *status = 2;
    return;
  }
  if (tid == 0) {
    gk_mbar_init(&bar, 1);
    gk_mbar_init_fence();
  }
  __syncthreads();
  if (tid == 0) {
    gk_mbar_arrive_expect_tx(&bar, KEYS * D * 2);
    if (swz)
      for (int c = 0; c < D / 64; c++)
        gk_tma_load_3d(&st[c * KEYS * 64], map, 64 * c, k0, hk, &bar);
    else
      for (int c = 0; c < D / 8; c++) gk_tma_load_3d(&st[c * KEYS * 8], map, 8 * c, k0, hk, &bar);
  }
  /* Bounded, so that bytes that never come (a wrong count, a copy that
   * faulted) end the probe with a word instead of a hang. */
  bool landed = false;
  for (long i = 0; i < (1l << 22) && !landed; i++) landed = gk_mbar_try_wait(&bar, 0);
  if (!__syncthreads_and(landed)) { /* the same answer for every thread */
    if (tid == 0) *status = 1;
    return;
  }
  for (int e = tid; e < KEYS * D; e += 128) raw[e] = st[e];
  /* S = A K^T: K-major, d steps of 16 are 2 box columns (2 x 16 KEYS bytes). */
  /* A's fragments all loaded before the fence (written after it, ptxas
   * would insert a warpgroup arrive of its own: C7519). */
  float acc[KEYS / 2];
  uint32_t fa[D / 16][4];
  for (int kk = 0; kk < D / 16; kk++) gk_tma_probe_afrag(a, D, kk, fa[kk]);
  gk_wgmma_fence();
  /* Swizzled: each 16 of d the start 32 bytes on in a row's 64 elements,
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
