/*
 * wgmma_probe.cuh - one wgmma, alone, to check what kernelsrc/cuda/
 * gk_wgmma.cuh assumes of the instruction against a real Hopper GPU before
 * a whole attention kernel depends on it: the register fragments of A and
 * D, and what the descriptor's two offsets (LBO, SBO) mean for B in shared
 * memory, K-major and N-major, each laid out as fa_wgmma.cuh lays out K and
 * V. test_wgmma_probe.c runs it on the GPU (nvcc -arch=sm_90a, one entry
 * per shape, wgmma_probe.cu); cuda.emu runs the same body on the emulator,
 * through gk_wgmma's twin, so the probe itself is checked here.
 *
 * D (64 x N, f32) = A (64 x 16) B (16 x N), f16, by one warpgroup (a block
 * of 128 threads); a, b and d row-major in global memory. B is staged as
 * wgmma's 8 x 8 core matrices (128 contiguous bytes: 8 rows of 8 halves),
 * element (k, n) at, in halves:
 *   K-major (TransB 0): n / 8 * 128 + k / 8 * 64 + n % 8 * 8 + k % 8
 *     (LBO 128 bytes from k to k + 8, SBO 256 from n to n + 8: K's layout
 *     in fa_wgmma.cuh at head_dim 16)
 *   N-major (TransB 1): k / 8 * 8N + n / 8 * 64 + k % 8 * 8 + n % 8
 *     (LBO 16N bytes from k to k + 8, SBO 128 from n to n + 8: V's)
 * Each product is issued twice (scale-d 0, then 1) and halved, so that
 * both of the accumulator's modes are checked.
 * T 2 reads A from shared memory as well (gk_wgmma_ss, N 96, 128, 176 and 192: the
 * S of fa_wgmma.cuh's overlapped schedule with Q in shared memory), B
 * K-major, A K-major in Q's layout: element (m, k) at
 *   m / 8 * 128 + k / 8 * 64 + m % 8 * 8 + k % 8
 *   (LBO 128 bytes from k to k + 8, SBO 256 from m to m + 8).
 * T 3 and 4 take the 128-byte swizzle (gk_wgmma_desc_sw128), as the
 * overlapped schedule with Q in shared memory lays out Q, K and V
 * (fa_wgmma.cuh's gk_fa_sw_at): rows of 128 bytes, 8 an atom of 1024, 16-
 * byte piece p of row r at piece p ^ (r % 8). In halves:
 *   T 3, B N-major (V's; N 64, 128): n / 64 * 1024 + k / 8 * 512 +
 *     k % 8 * 64 + ((n % 64 / 8) ^ (k % 8)) * 8 + n % 8
 *     (LBO 2048 bytes from n to n + 64, SBO 1024 from k to k + 8)
 *   T 4, A and B K-major (Q's and K's; N 128, 176, 192), each at a piece
 *     pair q of its rows (A at q 3, B at q 1: the start 32 q bytes on, as
 *     the attention's steps of 16 in d take it): B's (k, n) at
 *     n / 8 * 512 + n % 8 * 64 + ((2 q + k / 8) ^ (n % 8)) * 8 + k % 8,
 *     A's (m, k) the same with m for n (SBO 1024 bytes, LBO unused).
 */
#ifndef GK_WGMMA_PROBE_CUH
#define GK_WGMMA_PROBE_CUH

#include "gk_wgmma.cuh"

/* Where element (k, n) of B lies in the stage, in halves, and the
 * descriptor's offsets in bytes (see the top). */
template <int N, int TransB>
struct gk_wgmma_probe_layout {
  enum {
    LBO = TransB ? 16 * N : 128,
    SBO = TransB ? 128 : 256,
  };
  GK_DEV int at(int k, int n) {
    return TransB ? k / 8 * 8 * N + n / 8 * 64 + k % 8 * 8 + n % 8
                  : n / 8 * 128 + k / 8 * 64 + n % 8 * 8 + k % 8;
  }
};

/* The swizzled stages of T 3 and 4 (see the top), in halves: B N-major,
 * and a K-major row-set (B by n, A by m) at piece pair q. */
GK_DEV int gk_wgmma_probe_sw_mn(int k, int n) {
  return n / 64 * 1024 + k / 8 * 512 + k % 8 * 64 + ((n % 64 / 8) ^ (k % 8)) * 8 + n % 8;
}
GK_DEV int gk_wgmma_probe_sw_k(int row, int k, int q) {
  return row / 8 * 512 + row % 8 * 64 + ((2 * q + k / 8) ^ (row % 8)) * 8 + k % 8;
}
enum { GK_PROBE_QA = 3, GK_PROBE_QB = 1 }; /* T 4's piece pairs */

template <int N, int T>
GK_DEV void gk_wgmma_probe(const uint16_t *a, const uint16_t *b, float *d) {
  constexpr int TransB = T == 1 || T == 3, Sw = T >= 3, Ss = T == 2 || T == 4;
  typedef gk_wgmma_probe_layout<N, TransB> L;
  /* B's stage (at most 192 rows of 128 bytes: T 4), then A's (T 2 and 4:
   * 64 rows of 128 bytes at 24 KB, an atom boundary): one array, the
   * descriptors' base, 1024-byte aligned for the swizzle's atoms. */
  __shared__ __attribute__((aligned(1024))) uint16_t sb[192 * 64 + 64 * 64];
  uint16_t *sa = sb + 192 * 64;
  const int tid = (int)threadIdx.x, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  gk_wgmma_sw128_check(sb);
  for (int e = tid; e < 16 * N; e += 128) {
    const int k = e / N, n = e % N;
    sb[T == 3 ? gk_wgmma_probe_sw_mn(k, n)
       : T == 4 ? gk_wgmma_probe_sw_k(n, k, GK_PROBE_QB)
                : L::at(k, n)] = b[e];
  }
  if (Ss)
    for (int e = tid; e < 64 * 16; e += 128) {
      const int m = e / 16, k = e % 16;
      sa[T == 4 ? gk_wgmma_probe_sw_k(m, k, GK_PROBE_QA)
                : m / 8 * 128 + k / 8 * 64 + m % 8 * 8 + k % 8] = a[e];
    }
  gk_fence_proxy_async(); /* these stores, for the tensor cores */
  __syncthreads();
  /* A's fragment as mma.sync's m16n8k16 (gk_wgmma.cuh): rows 16w + g and
   * + 8, columns 2t, 2t + 1 and + 8. */
  uint32_t fa[4];
  for (int u = 0; u < 4; u++) {
    const int row = 16 * w + g + 8 * (u & 1), col = 2 * t + 8 * (u >> 1);
    fa[u] = (uint32_t)a[row * 16 + col] | (uint32_t)a[row * 16 + col + 1] << 16;
  }
  /* The product twice, its first wgmma with scale-d 0 (D = A B, the old D
   * not read), the second adding (D += A B): D is 2 A B, halved exactly
   * (small integers). acc is NaN first: a twin that read it at scale-d 0
   * leaves NaN; an accumulate ignored leaves A B / 2. (On the GPU the
   * compiler may give the first wgmma other registers than the NaNs', as it
   * reads none: there the check is that D is 2 A B.) */
  float acc[N / 2];
  const uint32_t nan = 0x7fc00000u;
  for (int i = 0; i < N / 2; i++) memcpy(&acc[i], &nan, sizeof nan);
  gk_wgmma_fence();
  const uint64_t db = T == 3   ? gk_wgmma_desc_sw128(sb, sb, 2048, 1024)
                      : T == 4 ? gk_wgmma_desc_sw128(sb, sb + 16 * GK_PROBE_QB, 16, 1024)
                               : gk_wgmma_desc(sb, sb, L::LBO, L::SBO);
  if constexpr (Ss) {
    const uint64_t da = Sw ? gk_wgmma_desc_sw128(sb, sa + 16 * GK_PROBE_QA, 16, 1024)
                           : gk_wgmma_desc(sb, sa, 128, 256);
    gk_wgmma_ss<gk_f16, N, 0>(acc, da, db, sb, 0);
    gk_wgmma_ss<gk_f16, N, 0>(acc, da, db, sb, 1);
  } else {
    gk_wgmma<gk_f16, N, TransB>(acc, fa, db, sb, 0);
    gk_wgmma<gk_f16, N, TransB>(acc, fa, db, sb, 1);
  }
  gk_wgmma_commit();
  gk_wgmma_wait<0>();
  for (int i = 0; i < N / 2; i++) acc[i] *= 0.5f;
  /* D's fragment: of each 8 columns j, rows 16w + g and + 8, columns
   * 8j + 2t and + 1. */
  for (int j = 0; j < N / 8; j++)
    for (int e = 0; e < 4; e++)
      d[(16 * w + g + 8 * (e >> 1)) * N + 8 * j + 2 * t + (e & 1)] = acc[4 * j + e];
}

#endif /* GK_WGMMA_PROBE_CUH */
