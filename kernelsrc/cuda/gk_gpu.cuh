/*
 * gk_gpu.cuh - the little the GPU kernel bodies need from their compiler,
 * behind one set of names, so that the same bodies (kernelsrc/cuda/NAME.cuh)
 * compile as CUDA (nvcc), as HIP (hipcc, AMD) and as plain C++ on the host
 * under the test emulator (tests/backends/cuda/emu, GK_GPU_EMULATE).
 *
 * Conventions every body follows, and why:
 * - Cooperation below the block goes through a "group" of GK_GROUP = 32
 *   consecutive threads, never through "the warp". A group fits in a warp of
 *   32 (NVIDIA, AMD RDNA wave32) and in a wavefront of 64 (AMD gfx9/CDNA),
 *   so a shuffle of width GK_GROUP means the same on every vendor, and no
 *   result depends on GK_WARP_SIZE. Block sizes are multiples of GK_GROUP.
 * - A group shuffle is executed by all 32 threads of the group together
 *   (CUDA's full mask): bodies never return early from inside a group, they
 *   clamp indices and mask the result instead.
 * - No dynamic shared memory yet: every __shared__ array has a size known
 *   at compile time, 48 KB at most (what every device gives without opting
 *   in), and every launch row's `shared` is 0. libgk would opt a row's
 *   `shared` past 48 KB in at load (docs/kernels.md, "Launching on GPUs").
 * - Arithmetic the CPU backend shares (binary16 codes, the quantized block
 *   format) comes from kernelsrc/common/gk_quant.h.
 * - Entry points are `extern "C" GK_KERNEL void name(...)` in the thin .cu
 *   files, with the parameters of docs/kernels.md in the same order.
 */
#ifndef GK_GPU_CUH
#define GK_GPU_CUH

#include <stdint.h>

/* Threads that cooperate through shuffles (see above). */
#define GK_GROUP 32

#if defined(GK_GPU_EMULATE)
/* The emulator (tests/backends/cuda/emu/gk_emu.h) defines threadIdx, __syncthreads,
 * __shared__, GK_SHFL_XOR, ... for host C++. */
#include "gk_emu.h"

#elif defined(__HIPCC__)
#include <hip/hip_runtime.h>
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define GK_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define GK_WARP_SIZE 64
#endif
#define GK_KERNEL __global__
#define GK_DEV __device__ static inline
#define GK_DEV_NOINLINE __device__ static __attribute__((noinline))
/* HIP's shuffles take no mask; width 32 stays inside a 64-wide wavefront. */
#define GK_SHFL_XOR(v, lane_mask) __shfl_xor((v), (lane_mask), GK_GROUP)
#define GK_SHFL(v, src_lane) __shfl((v), (src_lane), GK_GROUP)

#elif defined(__CUDACC__)
#define GK_GPU_NVIDIA 1
#define GK_WARP_SIZE 32
#define GK_KERNEL __global__
#define GK_DEV __device__ static inline
/* A device function compiled on its own, for one of a kernel's alternative
 * bodies: ptxas allocates its registers apart from the others' (qmatmul_q8x's
 * mma.sync tile fits 128 registers alone, and inlined beside the dp4a tiles
 * came to the limit or past it). */
#define GK_DEV_NOINLINE __device__ static __noinline__
#define GK_SHFL_XOR(v, lane_mask) \
  __shfl_xor_sync(0xffffffffu, (v), (lane_mask), GK_GROUP)
#define GK_SHFL(v, src_lane) __shfl_sync(0xffffffffu, (v), (src_lane), GK_GROUP)

#else
#error "gk_gpu.cuh: compile with nvcc, hipcc, or define GK_GPU_EMULATE"
#endif

#if GK_WARP_SIZE % GK_GROUP != 0
#error "gk_gpu.cuh: a warp must hold whole groups"
#endif

/* After the vendor's header: HIP declares device-side memcpy there. */
#include "../common/gk_quant.h"

/* threadIdx.x, read where it is used: on NVIDIA through an asm volatile,
 * which the compiler neither merges with another read nor hoists out of a
 * loop, so that addresses computed from it in a loop body are computed
 * there again instead of held in registers across the loop (for tiles at
 * their register limit: q8x_batch.cuh's copies). */
GK_DEV int gk_tid_here(void) {
#if defined(GK_GPU_NVIDIA)
  int t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
#else
  return (int)threadIdx.x;
#endif
}

/* blockIdx.y, read where it is used, as gk_tid_here reads threadIdx.x (a
 * test on it inside a tile is not a value held across the tile). */
GK_DEV int gk_block_y_here(void) {
#if defined(GK_GPU_NVIDIA)
  int t;
  asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(t));
  return t;
#else
  return (int)blockIdx.y;
#endif
}

/* This thread's lane in its group, and its group in the block. */
GK_DEV int gk_lane(void) { return (int)(threadIdx.x % GK_GROUP); }
GK_DEV int gk_group(void) { return (int)(threadIdx.x / GK_GROUP); }

/*
 * N values (4 or 8 bytes each) a lane, read across the group: every lane
 * of the group makes a gk_lanes of its values together, and get(i, src)
 * gives value i of lane src, every lane asking for the same i together. On
 * a GPU a get is a shuffle. In the emulator the group meets once, when it
 * is made (gk_emu_meet), and a get reads the meeting's table until the
 * lane's next shuffle: a shuffle each would switch the group's 32 fibers
 * each time, and the mma twins' 32 shuffles took most of cuda.emu's time.
 */
template <class T, int N>
struct gk_lanes {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "values of 4 or 8 bytes");
#if defined(GK_GPU_EMULATE)
  static_assert(N <= GK_EMU_MEET_WORDS, "one meeting's words");
  const uint64_t *t;
  explicit gk_lanes(const T *v) {
    uint64_t w[N] = {0};
    for (int i = 0; i < N; i++) memcpy(&w[i], &v[i], sizeof(T));
    t = gk_emu_meet(w, N);
  }
  T get(int i, int src) const {
    T r;
    memcpy(&r, &t[(src & (GK_GROUP - 1)) * GK_EMU_MEET_WORDS + i], sizeof(T));
    return r;
  }
#else
  T v[N];
  __device__ explicit gk_lanes(const T *p) {
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = p[i];
  }
  __device__ T get(int i, int src) const { return shfl(v[i], src); }
  template <class U>
  __device__ static U shfl(U x, int src) { return GK_SHFL(x, src); }
  template <class U>
  __device__ static U *shfl(U *x, int src) { return (U *)GK_SHFL((uintptr_t)x, src); }
#endif
};

/* The GPU's SMs as the hardware numbers them (NVIDIA: %nsmid, the bound of
 * the SM ids, the SM count on the GPUs made so far): the input of a
 * heuristic, never of a bound or an index. 0 where not known (HIP: no
 * such register; not written for AMD). The emulator's is gk_emu_sms. Read
 * where it is used (asm volatile), so that what is computed from it is
 * computed there, not held in registers across a loop. */
GK_DEV int gk_sm_count(void) {
#if defined(GK_GPU_NVIDIA)
  int n;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(n));
  return n;
#elif defined(GK_GPU_EMULATE)
  return gk_emu_sms;
#else
  return 0;
#endif
}

/*
 * A walk over `tiles` tiles along the grid's y axis (the tiles of W of a
 * matmul with one row of x) in which a block takes up to `most`
 * consecutive tiles, so that what it prepares once (x, rounded or copied
 * into shared memory) serves them all. A launch row's grid gives a block
 * a tile (it is sized for every m), so when the grid holds every tile,
 * block y takes tiles G y .. G y + G - 1 and the blocks past the last
 * tile take nothing; G (gk_walk_rows_group) is the largest count up to
 * `most` that does not lengthen the launch: with `resident` blocks an SM,
 * its waves of G tiles take no more tiles a block than the waves of one
 * tile do (n = 32768 on 132 SMs, two blocks an SM: 1024 tiles of 32 rows,
 * 3.9 waves of one, one wave of 4; 512 tiles of 64 rows, 1.9 waves of one,
 * one of 2). The working blocks are the grid's first, which the GPU
 * dispatches first, and the idle ones come behind them: with the blocks
 * whose y is a multiple of G working (as first written, 2026-12-01), 3 of
 * every 4 blocks dispatched first returned at once and the last working
 * ones came after 768 idle ones (not measured: the cost is the GPU's
 * dispatch). A smaller grid, and a GPU whose SM count the code cannot
 * read, keep G = 1: each block walks tiles y, y + gridDim.y, ...
 *
 * The caller writes the loop over its n rows in tiles of `rows`, a tile a
 * trip; `gs`, an int of its shared memory, holds G:
 *   const int t0 = gk_walk_rows_start(n, rows, most, resident, &sm.g);
 *   if (t0 < 0) return;  (the block takes no tile)
 *   for (int t = t0; (int64_t)t * rows < n; t = gk_walk_rows_next(t, n, rows, &sm.g))
 * (a whole block returns or loops: the bounds are the block's), its first
 * tile the one t == gk_walk_rows_first(&sm.g). Each thread stores the G it
 * worked out (every thread's is the same) and reads it back where it is
 * used, so that the tile's body keeps one value of the walk beside its
 * own: a walk that held its bounds in registers made ptxas 13.0 spill 4 to
 * 28 bytes in qmatmul's BITS 1 and 2 tiles, at the 128 registers two
 * blocks an SM leave (so did one that worked G out again at each trip's
 * end, and one whose loop began at gk_walk_rows_first: 4 bytes at BITS 1
 * on sm_100). A tile index is 32-bit: past 2^31 - 1 (a W of 2^36 rows) the
 * walk stops; so is G's arithmetic past its test (G > 1 only where the
 * grid's y, below 2^31, holds every tile).
 */
GK_DEV int gk_walk_rows_group(int64_t n, int rows, int most, int resident) {
  const int64_t tiles64 = (n + rows - 1) / rows;
  const int slots = gk_sm_count() * resident;
  int g = 1;
  if (slots > 0 && (int64_t)gridDim.y >= tiles64) {
    const unsigned tiles = (unsigned)tiles64, us = (unsigned)slots;
    const unsigned waves = (tiles + us - 1) / us; /* of one tile a block */
    for (int c = 2; c <= most; c++)
      if (((tiles + c - 1) / c + us - 1) / us * c <= waves) g = c;
  }
  return g;
}
#if defined(GK_GPU_NVIDIA) || defined(GK_GPU_EMULATE)
GK_DEV int gk_walk_rows_start(int64_t n, int rows, int most, int resident, int *gs) {
  const int g = gk_walk_rows_group(n, rows, most, resident);
  *(volatile int *)gs = g;
  return g > 1 && (int64_t)blockIdx.y * g >= (n + rows - 1) / rows ? -1 : (int)blockIdx.y * g;
}
GK_DEV int gk_walk_rows_first(const int *gs) {
  return *(const volatile int *)gs * gk_block_y_here();
}
GK_DEV int gk_walk_rows_next(int t, int64_t n, int rows, const int *gs) {
  const int g = *(const volatile int *)gs;
  /* After a group's last tile: the first past n, which ends the walk. */
  const int64_t next = g > 1 ? ((t + 1) % g != 0 ? t + 1 : (n + rows - 1) / rows)
                             : (int64_t)t + gridDim.y;
  return next < 0x7fffffff ? (int)next : 0x7fffffff;
}
#else /* no SM count (HIP): G = 1, the plain walk, with nothing kept in shared memory */
GK_DEV int gk_walk_rows_start(int64_t, int, int, int, int *) { return (int)blockIdx.y; }
GK_DEV int gk_walk_rows_first(const int *) { return gk_block_y_here(); }
GK_DEV int gk_walk_rows_next(int t, int64_t, int, const int *) {
  const int64_t next = (int64_t)t + gridDim.y;
  return next < 0x7fffffff ? (int)next : 0x7fffffff;
}
#endif

/* The walk of a matmul's tx x ty tiles (x: rows of x, y: rows of W) in
 * groups of `group` tiles of x: a group's tiles numbered x first, then y,
 * the last group narrower (CUTLASS's threadblock swizzle, Triton's
 * GROUP_SIZE_M). Block (x, y) calls tile(bx, by) for tiles x + gridDim.x
 * y, then + gridDim.x gridDim.y, ..., so any grid covers them all. Blocks
 * that run at once then share a few tiles of both operands, which L2
 * holds, where numbering all of x first would stream the whole of x once
 * for every tile of W. Every bound is per block. */
template <class F>
GK_DEV void gk_grouped_tiles(int64_t tx, int64_t ty, int64_t group, F tile) {
  for (int64_t t = (int64_t)blockIdx.y * gridDim.x + blockIdx.x; t < tx * ty;
       t += (int64_t)gridDim.x * gridDim.y) {
    const int64_t x0 = t / (group * ty) * group, r = t % (group * ty);
    const int64_t cols = tx - x0 < group ? tx - x0 : group; /* tiles of x in this group */
    tile(x0 + r % cols, r / cols);
  }
}

/* Sum, max of a value over the 32 threads of a group; every thread gets
 * the result. The butterfly gives all lanes the same bits (each lane adds
 * the same pairs in the same order). */
GK_DEV float gk_group_sum(float v) {
  for (int m = GK_GROUP / 2; m > 0; m /= 2) v += GK_SHFL_XOR(v, m);
  return v;
}
GK_DEV float gk_group_max(float v) {
  for (int m = GK_GROUP / 2; m > 0; m /= 2) v = fmaxf(v, GK_SHFL_XOR(v, m));
  return v;
}
/* Whether pred holds in every thread of the group (every thread calls
 * it): one vote on NVIDIA, a butterfly of shuffles elsewhere. */
GK_DEV bool gk_group_all(bool pred) {
#if defined(GK_GPU_NVIDIA)
  return __all_sync(0xffffffffu, pred) != 0;
#else
  int v = pred ? 1 : 0;
  for (int m = GK_GROUP / 2; m > 0; m /= 2) v &= GK_SHFL_XOR(v, m);
  return v != 0;
#endif
}

/* Sum over a whole block of NGROUPS groups; every thread gets the result.
 * `scratch` is __shared__ float[NGROUPS] of the caller. Ends with a barrier,
 * so scratch may be reused right after. */
template <int NGROUPS>
GK_DEV float gk_block_sum(float v, float *scratch) {
  v = gk_group_sum(v);
  if (gk_lane() == 0) scratch[gk_group()] = v;
  __syncthreads();
  float t = 0.0f;
  for (int g = 0; g < NGROUPS; g++) t += scratch[g]; /* same order everywhere */
  __syncthreads();
  return t;
}

template <int NGROUPS>
GK_DEV float gk_block_max(float v, float *scratch) {
  v = gk_group_max(v);
  if (gk_lane() == 0) scratch[gk_group()] = v;
  __syncthreads();
  float t = scratch[0];
  for (int g = 1; g < NGROUPS; g++) t = fmaxf(t, scratch[g]);
  __syncthreads();
  return t;
}

/*
 * The (value, index) pair argmax keeps: the larger value wins, the lower
 * index on equal values; index -1 stands for "nothing yet" (every value was
 * NaN), which any real candidate beats.
 */
GK_DEV void gk_argmax_merge(float *v, int64_t *i, float ov, int64_t oi) {
  if (oi < 0) return;
  if (*i < 0 || ov > *v || (ov == *v && oi < *i)) {
    *v = ov;
    *i = oi;
  }
}

/* Block-wide argmax of per-thread candidates; every thread gets the
 * winner. `sv`, `si` are __shared__ arrays of NGROUPS of the caller. */
template <int NGROUPS>
GK_DEV void gk_block_argmax(float *v, int64_t *i, float *sv, int64_t *si) {
  for (int m = GK_GROUP / 2; m > 0; m /= 2) {
    float ov = GK_SHFL_XOR(*v, m);
    /* Shuffle 64-bit indices as two halves: not every vendor shuffles
     * 64-bit integers. */
    int lo = GK_SHFL_XOR((int)(*i & 0xffffffff), m);
    int hi = GK_SHFL_XOR((int)(*i >> 32), m);
    int64_t oi = (int64_t)(((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo);
    gk_argmax_merge(v, i, ov, oi);
  }
  if (gk_lane() == 0) {
    sv[gk_group()] = *v;
    si[gk_group()] = *i;
  }
  __syncthreads();
  float bv = sv[0];
  int64_t bi = si[0];
  for (int g = 1; g < NGROUPS; g++) gk_argmax_merge(&bv, &bi, sv[g], si[g]);
  __syncthreads();
  *v = bv;
  *i = bi;
}

/* binary16 -> f32, exact and rounding-mode free, so every vendor and the
 * emulator produce the same bits (f32 -> binary16 is gk_pack_h2, below,
 * two at a time). The conversion is exact for every code
 * (binary16 is a subset of binary32): NVIDIA's one cvt instruction gives the
 * bits of gk_quant.h's integer decode (15 or so instructions, which cost
 * qmatmul 2 instructions a weight) for every code but a NaN's payload; a
 * NaN stays a NaN. So does AMD's v_cvt_f32_f16 (kernels keep binary16
 * subnormals: .amdhsa_float_denorm_mode_16_64 3), where the integer
 * decode's branches for subnormal and NaN codes cut the int8 prefill
 * tile's loop into blocks that clang 19 scheduled across, holding every
 * step's words at once. The emulator keeps the integer decode. */
GK_DEV float gk_h2f(uint16_t h) {
#if defined(GK_GPU_NVIDIA)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#elif defined(__HIPCC__)
  return (float)__builtin_bit_cast(_Float16, h);
#else
  return gk_q_f16_to_f32(h);
#endif
}

/*
 * The special instructions, one inline function each, with the emulator's
 * (and HIP's, where no AMD path is written: all but dp4a's) plain twin,
 * written from the PTX ISA's definition, so that tests/backends/cuda checks
 * the algorithm around them and a real GPU checks the instruction.
 */

/*
 * AMD's byte dot products (the processors clang names; none of the generic
 * targets has one, nor gfx1010):
 * - GK_AMD_SUDOT4: v_dot4_i32_iu8 (gfx11, gfx12), each operand's bytes
 *   signed or not as asked: dp4a.u32.s32 in one instruction.
 * - GK_AMD_SDOT4: v_dot4_i32_i8 (gfx906, CDNA, gfx1011/1012, gfx103x),
 *   signed bytes only.
 * hipcc 5.2 (clang 15) has no sudot4 builtin; it builds no gfx11 here.
 */
#if defined(__HIPCC__) && !defined(GK_GPU_EMULATE)
#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || \
    defined(__gfx1103__) || defined(__gfx1150__) || defined(__gfx1151__) || \
    defined(__gfx1152__) || defined(__gfx1200__) || defined(__gfx1201__)
#define GK_AMD_SUDOT4 1
#elif defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || \
    defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || \
    defined(__gfx1011__) || defined(__gfx1012__) || defined(__gfx1030__) || \
    defined(__gfx1031__) || defined(__gfx1032__) || defined(__gfx1033__) || \
    defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__)
#define GK_AMD_SDOT4 1
#endif
#endif

/* v_dot4_i32_i8: c + the sum of the 4 products of a's signed bytes with
 * b's signed bytes, wrapping in 32 bits (no clamp). The twin runs
 * everywhere else, so that the emulator checks gk_dp4a_us_sdot4 below. */
GK_DEV int gk_sdot4(uint32_t a, uint32_t b, int c) {
#if defined(GK_AMD_SDOT4)
  return __builtin_amdgcn_sdot4((int)a, (int)b, c, false);
#else
  uint32_t s = (uint32_t)c;
  for (int i = 0; i < 4; i++)
    s += (uint32_t)((int)(int8_t)(uint8_t)(a >> (8 * i)) * (int)(int8_t)(uint8_t)(b >> (8 * i)));
  return (int)s;
#endif
}

/* dp4a.u32.s32 from v_dot4_i32_i8: with a's bytes below 2^ABits <= 2^7
 * they are the same signed, one instruction; else a's bytes less 128
 * (a ^ 0x80808080) are signed bytes, and the 128 b_i they lose come back
 * as minus the dot product of b with bytes of -128:
 *   sum a_i b_i = sdot4(a ^ 0x80808080, b) - sdot4(0x80808080, b). */
template <int ABits>
GK_DEV int gk_dp4a_us_sdot4(uint32_t a, uint32_t b, int c) {
  if (ABits < 8) return gk_sdot4(a, b, c);
  return gk_sdot4(a ^ 0x80808080u, b, c - gk_sdot4(0x80808080u, b, 0));
}

/* dp4a.u32.s32: c + the sum of the 4 products of a's unsigned bytes with
 * b's signed bytes (byte i with byte i), exact in 32-bit integers. ABits:
 * every byte of a is below 2^ABits (the codes of BITS-bit weights), which
 * the emulator checks; AMD's signed-only dot product needs one instruction
 * instead of two where ABits < 8. */
template <int ABits = 8>
GK_DEV int gk_dp4a_us(uint32_t a, uint32_t b, int c) {
  static_assert(ABits >= 1 && ABits <= 8, "gk_dp4a_us: a's bytes have 1 to 8 bits");
#if defined(GK_GPU_NVIDIA)
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#elif defined(GK_AMD_SUDOT4)
  return __builtin_amdgcn_sudot4(false, (int)a, true, (int)b, c, false);
#elif defined(GK_AMD_SDOT4)
  return gk_dp4a_us_sdot4<ABits>(a, b, c);
#else
#if defined(GK_GPU_EMULATE)
  if (ABits < 8 && (a & (0x01010101u * (0xffu & ~((1u << ABits) - 1u)))) != 0)
    gk_emu_fault("gk_dp4a_us<ABits>: a byte of a is 2^ABits or more", a);
#endif
  for (int i = 0; i < 4; i++)
    c += (int)((a >> (8 * i)) & 0xffu) * (int)(int8_t)(uint8_t)(b >> (8 * i));
  return c;
#endif
}

/* (a & b) | c in one instruction (lop3): ptxas 13.0 split the plain
 * expression into two logic instructions, one a constant, where b and c
 * are both constants (qmatmul's decode: a mask and an exponent), and
 * given as lop3 it keeps them in registers across the loop. */
GK_DEV uint32_t gk_and_or(uint32_t a, uint32_t b, uint32_t c) {
#if defined(GK_GPU_NVIDIA)
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  return (a & b) | c;
#endif
}

/* max(a, b), and NaN where either is: PTX max.NaN (sm_80 and newer), one
 * FMNMX as fmaxf is, where fmaxf drops a NaN operand. GK_FMAX_NAN says
 * whether the target has it in one instruction (the emulator's twin stands
 * in for it); elsewhere it takes compares and callers keep fmaxf. */
#if (defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || \
    defined(GK_GPU_EMULATE)
#define GK_FMAX_NAN 1
#else
#define GK_FMAX_NAN 0
#endif
GK_DEV float gk_fmax_nan(float a, float b) {
#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a || b != b ? __builtin_nanf("") : fmaxf(a, b);
#endif
}

/* Float multiply and add, each rounded to nearest even and never fused
 * into an fma by the compiler (nvcc contracts a * b + c by default, hipcc
 * too): for arithmetic that the docs define operation by operation. */
GK_DEV float gk_fmul(float a, float b) {
#if defined(GK_GPU_NVIDIA)
  return __fmul_rn(a, b);
#elif defined(__HIPCC__)
#pragma clang fp contract(off)
  return a * b;
#else
  return a * b;
#endif
}
GK_DEV float gk_fadd(float a, float b) {
#if defined(GK_GPU_NVIDIA)
  return __fadd_rn(a, b);
#elif defined(__HIPCC__)
#pragma clang fp contract(off)
  return a + b;
#else
  return a + b;
#endif
}

/* Two floats rounded to binary16 (nearest even), packed: lo in bits 0-15.
 * NVIDIA's cvt.rn and AMD's v_cvt_f16_f32 (round to nearest even, binary16
 * subnormals kept: the kernels' default modes) give gk_quant.h's bits but
 * for a NaN's payload. */
GK_DEV uint32_t gk_pack_h2(float lo, float hi) {
#if defined(GK_GPU_NVIDIA)
  uint16_t a, b;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(a) : "f"(lo));
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(hi));
  return (uint32_t)a | (uint32_t)b << 16;
#elif defined(__HIPCC__)
  return (uint32_t)__builtin_bit_cast(uint16_t, (_Float16)lo) |
         (uint32_t)__builtin_bit_cast(uint16_t, (_Float16)hi) << 16;
#else
  return (uint32_t)gk_q_f32_to_f16(lo) | (uint32_t)gk_q_f32_to_f16(hi) << 16;
#endif
}

/* Two floats rounded to bfloat16 (nearest even), packed: lo in bits 0-15.
 * sm_80 and newer: one cvt (its NaN is 0x7fff, still a NaN). */
GK_DEV uint32_t gk_pack_bf2(float lo, float hi) {
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return (uint32_t)gk_q_f32_to_bf16(lo) | (uint32_t)gk_q_f32_to_bf16(hi) << 16;
#endif
}

/* 2^x as the softmax of attention takes it: the hardware's approximation
 * (ex2.approx, 2 ulp, as exp2f) with subnormal results flushed to 0 (.ftz:
 * MUFU.EX2 alone, where exp2f adds three instructions to scale subnormal
 * results, per score). A weight below 2^-126 of its row's largest is 0
 * either way once rounded to f16 or bf16 for P V. The emulator's twin
 * flushes the same; HIP keeps exp2f. */
GK_DEV float gk_exp2(float x) {
#if defined(GK_GPU_NVIDIA)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#elif defined(__HIPCC__)
  return exp2f(x);
#else
  const float y = exp2f(x);
  return y < 1.17549435e-38f ? 0.0f : y; /* FLT_MIN; a NaN stays */
#endif
}

/* Whether flash_attention's prefill runs on wgmma (fa_wgmma.cuh): only in
 * an sm_90a compilation, and only with -DGK_FA_WGMMA=1, which no recipe
 * sets until the path has run on a GPU (ci/gpu builds a second archive
 * with it, tested and timed beside the default). */
#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(GK_FA_WGMMA) && \
    GK_FA_WGMMA
#define GK_FA_WGMMA_ON 1
#else
#define GK_FA_WGMMA_ON 0
#endif
/* -DGK_FA_WGMMA=2: the same, on the warp-specialized schedule only
 * (fa_wgmma.cuh: blocks of 384, a producer warpgroup and two consumers,
 * registers moved between them by setmaxnreg), which ci/gpu builds as an
 * experiment of its own. -DGK_FA_WGMMA=3: that schedule with each
 * consumer's S of a tile computed while its P V of the one before is
 * (GK_FA_WS_OVERLAP_ON 1: two stages of V, 64 KB of dynamic shared memory,
 * so a launch row whose `shared` says so), another experiment.
 * -DGK_FA_WGMMA=4: the overlapped schedule with Q in shared memory and
 * longer tiles (GK_FA_WS_OVERLAP_ON 2, FlashAttention-3's shape: 128 KB
 * of dynamic shared memory at head_dim 128), a third. */
#if GK_FA_WGMMA_ON && (GK_FA_WGMMA == 2 || GK_FA_WGMMA == 3 || GK_FA_WGMMA == 4)
#define GK_FA_WS_ON 1
#else
#define GK_FA_WS_ON 0
#endif
#if GK_FA_WS_ON && GK_FA_WGMMA >= 3
#define GK_FA_WS_OVERLAP_ON (GK_FA_WGMMA - 2)
#else
#define GK_FA_WS_OVERLAP_ON 0
#endif
/* -DGK_FA_TMA=1 with -DGK_FA_WGMMA=4: that schedule's producer loads K
 * and V by TMA (gk_tma.cuh: one thread issues a tile's boxes, the
 * consumers wait on mbarriers), where it has a slot for the tensor maps it
 * builds; else, and in decodes, by cp.async as -DGK_FA_WGMMA=4 alone
 * does. An experiment of its own (ci/gpu: wgmma5t.gkfat). */
#if GK_FA_WS_OVERLAP_ON == 2 && defined(GK_FA_TMA) && GK_FA_TMA
#define GK_FA_TMA_ON 1
#else
#define GK_FA_TMA_ON 0
#endif
/* -DGK_FA_ABLATE=N with -DGK_FA_WGMMA=4: a diagnosis, not a kernel (its o
 * is not attention's; ci/gpu's wsnosoft.gkfat and wsbare.gkfat, timed
 * without test_gpu): the overlapped schedule's prefill with parts of its
 * work left out, so that a GPU says what holds the rest. Bit 1: no
 * softmax (each consumer's P is its scores S rounded, no maxima, sums,
 * exponentials nor rescales: gk_fa_wo_consume); bit 2: no copies of K and
 * V (the producer's cp.async path keeps its commits, waits and barriers
 * and copies nothing: the tensor cores read stale stages). The products,
 * the barriers, the turns and the stores stay as they are. 0 (default):
 * nothing left out. */
#ifndef GK_FA_ABLATE
#define GK_FA_ABLATE 0
#endif
#if GK_FA_ABLATE < 0 || GK_FA_ABLATE > 3
#error "gk_gpu.cuh: GK_FA_ABLATE must be 0 to 3"
#endif
#if GK_FA_ABLATE && defined(GK_GPU_NVIDIA) && !defined(GK_GPU_EMULATE) && \
    defined(__CUDA_ARCH__) && GK_FA_WS_OVERLAP_ON != 2
#error "gk_gpu.cuh: GK_FA_ABLATE needs -DGK_FA_WGMMA=4 (an sm_90a image)"
#endif
#if (GK_FA_ABLATE & 2) && GK_FA_TMA_ON
#error "gk_gpu.cuh: GK_FA_ABLATE=2 and 3 leave out the cp.async producer's copies, not TMA's"
#endif
/* Whether the TMA producer's code is compiled (its images, the emulator). */
#if GK_FA_TMA_ON || defined(GK_GPU_EMULATE)
#define GK_FA_TMA_CODE 1
#else
#define GK_FA_TMA_CODE 0
#endif
/* Keys a tile of the head_dim-128 prefill with Q in shared memory
 * (fa_mma.cuh's QSMEM, the mma.sync path): 32 (Q 32 KB and a tile each of
 * K and V, 8 KB, the 48 KB of static shared memory), or, with
 * -DGK_FA_QS_KEYS=64, FlashAttention-2's 128 x 64 for head_dim 128 on A100
 * and H100 (its sm_86/89 cards, 99 KB an SM, take 128 x 32): 64 KB, so
 * dynamic shared memory and a launch row whose `shared` gives it
 * (gk_fa_sm). ci/gpu builds it as an experiment (k64.gkfat). */
#if !defined(GK_FA_QS_KEYS)
#define GK_FA_QS_KEYS 32
#endif
#if GK_FA_QS_KEYS != 32 && GK_FA_QS_KEYS != 64
#error "gk_gpu.cuh: GK_FA_QS_KEYS must be 32 or 64"
#endif
/* Tiles of 16 KB (K and V) a decode's ring holds in shared memory
 * (fa_mma.cuh's gk_fa_dsmem; STAGES - 1 of them in flight while one is
 * worked on): 3, the 48 KB of static shared memory, or, with
 * -DGK_FA_DEC_STAGES=N, N of them in dynamic shared memory, N x 16 KB (and
 * at least what the rest of gk_fa_smem takes) that the launch row's
 * `shared` must give. sm_90a's flash_attention takes 4 (its 64 KB for the
 * 64-key prefill hold them: recipes/flash_attention.lua); ci/gpu builds 6 as
 * an experiment (dec6.gkfat). */
#if !defined(GK_FA_DEC_STAGES)
#define GK_FA_DEC_STAGES 3
#endif
#if GK_FA_DEC_STAGES < 3 || GK_FA_DEC_STAGES > 8
#error "gk_gpu.cuh: GK_FA_DEC_STAGES must be 3 to 8"
#endif
/* Whether the attention kernels' shared memory is dynamic (over 48 KB). */
#define GK_FA_DYN_SMEM (GK_FA_WS_OVERLAP_ON || GK_FA_QS_KEYS > 32 || GK_FA_DEC_STAGES > 3)

/* A compile-time bool as a type, to pick an overload (C++14: no if constexpr
 * outside nvcc's branches). */
template <bool B>
struct gk_bool {};
/* The same for an int. */
template <int N>
struct gk_int {};

#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define GK_BF16_MMA 0
#else
#define GK_BF16_MMA 1
#endif
/* Whether the tensor-core paths' products run as dot products of shared
 * memory in the mma fragments' layout instead of through the twins of
 * mma.sync and ldmatrix (HIP: no AMD matrix path, MFMA or WMMA, is written
 * yet, and the twins' shuffles, 32 an instruction, kept up to 2.9 KB of
 * scratch a thread). The emulator runs both (cuda.emu's paths). */
#if defined(__HIPCC__) && !defined(GK_GPU_EMULATE)
#define GK_MMA_DIRECT 1
#else
#define GK_MMA_DIRECT 0
#endif
/*
 * Attention's element types, as tags: Dt::elem is how a tensor holds one
 * (f16 and bf16: uint16_t bits), Dt::load reads one exactly into a float,
 * Dt::store rounds a float to it (nearest even), Dt::pack2 rounds two into
 * one 32-bit word (lo first), Dt::half says whether the tensor-core
 * path (fa_mma.cuh) takes it, Dt::wgmma whether its prefill runs on
 * wgmma (fa_wgmma.cuh) and Dt::ws_overlap whether the warp-specialized
 * schedule overlaps S and P V, and how (GK_FA_WS_OVERLAP_ON: 0, 1 or 2),
 * Dt::tma whether that schedule's producer loads by TMA (GK_FA_TMA_ON),
 * Dt::direct whether the tensor-core path multiplies in dot products
 * (GK_MMA_DIRECT), Dt::qs_keys how many keys a tile of the prefill with Q
 * in shared memory takes (GK_FA_QS_KEYS), Dt::dec_stages how many tiles a
 * decode's ring holds (GK_FA_DEC_STAGES), Dt::ablate what the overlapped
 * schedule's prefill leaves out (GK_FA_ABLATE: a diagnosis). GK_BF16_MMA:
 * whether this device has bf16 mma (sm_80 and newer; the twins everywhere
 * else but sm_75's code).
 */
struct gk_f32 {
  typedef float elem;
  enum {
    half = 0,
    bf16 = 0,
    wgmma = 0,
    ws_overlap = 0,
    tma = 0,
    direct = 0,
    qs_keys = 32,
    dec_stages = 3,
    ablate = 0
  };
  GK_DEV float load(float x) { return x; }
  GK_DEV float store(float x) { return x; }
};
struct gk_f16 {
  typedef uint16_t elem;
  enum {
    half = 1,
    bf16 = 0,
    wgmma = GK_FA_WGMMA_ON,
    ws_overlap = GK_FA_WS_OVERLAP_ON,
    tma = GK_FA_TMA_ON,
    direct = GK_MMA_DIRECT,
    qs_keys = GK_FA_QS_KEYS,
    dec_stages = GK_FA_DEC_STAGES,
    ablate = GK_FA_ABLATE
  };
  GK_DEV float load(uint16_t x) { return gk_h2f(x); }
  GK_DEV uint16_t store(float x) { return gk_q_f32_to_f16(x); }
  GK_DEV uint32_t pack2(float lo, float hi) { return gk_pack_h2(lo, hi); }
};
struct gk_bf16 {
  typedef uint16_t elem;
  enum {
    half = GK_BF16_MMA,
    bf16 = 1,
    wgmma = GK_FA_WGMMA_ON,
    ws_overlap = GK_FA_WS_OVERLAP_ON,
    tma = GK_FA_TMA_ON,
    direct = GK_MMA_DIRECT,
    qs_keys = GK_FA_QS_KEYS,
    dec_stages = GK_FA_DEC_STAGES,
    ablate = GK_FA_ABLATE
  };
  GK_DEV float load(uint16_t x) { return gk_q_bf16_to_f32(x); }
  GK_DEV uint16_t store(float x) { return gk_q_f32_to_bf16(x); }
  GK_DEV uint32_t pack2(float lo, float hi) { return gk_pack_bf2(lo, hi); }
};

/*
 * The emulated twins' gather (gk_mma_16816, gk_mma_s8u8_16832: their
 * fragments lie alike in 32-bit words): lane 4g + t receives the 8 words of
 * rows g and g + 8 of A (ar[r]: words 0..3 from a[r] of lanes 4g .. 4g+3,
 * words 4..7 from a[2 + r]) and of columns 2t and 2t + 1 of B (bc[col]:
 * from b[0] and b[1] of lanes 4(2t + col) .. +3), in k order. gk_mma_twin_rows is
 * the A half alone (gk_wgmma's twin reads B from shared memory).
 */
template <int N>
GK_DEV void gk_mma_twin_rows(const gk_lanes<uint32_t, N> &w, uint32_t ar[2][8]) {
  const int g = gk_lane() / 4;
  for (int u = 0; u < 4; u++) {
    const int src = 4 * g + u;
    ar[0][u] = w.get(0, src), ar[0][4 + u] = w.get(2, src);
    ar[1][u] = w.get(1, src), ar[1][4 + u] = w.get(3, src);
  }
}
GK_DEV void gk_mma_twin_rows(const uint32_t a[4], uint32_t ar[2][8]) {
  gk_mma_twin_rows(gk_lanes<uint32_t, 4>(a), ar);
}
GK_DEV void gk_mma_twin_gather(const uint32_t a[4], const uint32_t b[2], uint32_t ar[2][8],
                               uint32_t bc[2][8]) {
  const int t = gk_lane() % 4;
  const uint32_t ab[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  const gk_lanes<uint32_t, 6> w(ab);
  gk_mma_twin_rows(w, ar);
  for (int col = 0; col < 2; col++)
    for (int u = 0; u < 4; u++) {
      const int src = 4 * (2 * t + col) + u;
      bc[col][u] = w.get(4, src), bc[col][4 + u] = w.get(5, src);
    }
}

/*
 * mma.sync m16n8k16, f16 (H = gk_f16) or bf16 (gk_bf16) inputs, f32
 * accumulators: C += A B for the 32
 * lanes of a group together, A 16 x 16 (row-major), B 16 x 8 (column-major),
 * C 16 x 8. The fragments are the PTX ISA's ("Matrix Fragments for
 * mma.m16n8k16 with floating point type"), the same for both types: lane
 * 4g + t holds
 *   a[0] = A[g][2t, 2t+1]   a[1] = A[g+8][2t, 2t+1]
 *   a[2] = A[g][2t+8, +9]   a[3] = A[g+8][2t+8, +9]   (16-bit pairs, low first)
 *   b[0] = B[2t, 2t+1][g]   b[1] = B[2t+8, 2t+9][g]
 *   c[0], c[1] = C[g][2t, 2t+1]   c[2], c[3] = C[g+8][2t, 2t+1].
 * sm_80 and newer: one instruction; sm_75 (Turing): two m16n8k8 (the k
 * halves, same fragments), f16 only (Turing has no bf16 mma). The twin (the
 * emulator, and HIP until an AMD
 * matrix path is written) gathers the operands with 32 shuffles (one
 * meeting in the emulator: gk_lanes) and sums
 * the 16 products of each element in k order with fmaf: the products are
 * exact in f32 (11 or 8 significant bits each), the hardware's summation
 * order inside one instruction is
 * not specified, so the two may differ in the last bits of c.
 */
template <class H = gk_f16>
GK_DEV void gk_mma_16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  if constexpr (H::bf16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(GK_GPU_NVIDIA)
  static_assert(!H::bf16, "no bf16 mma before sm_80");
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#else
  /* Pairs p = 0..7 (k = 2p, 2p+1) of rows g and g + 8 of A and of columns
   * 2t and 2t + 1 of B. */
  uint32_t ar[2][8], bc[2][8];
  gk_mma_twin_gather(a, b, ar, bc);
  for (int r = 0; r < 2; r++)
    for (int col = 0; col < 2; col++) {
      float acc = c[2 * r + col];
      for (int p = 0; p < 8; p++)
        for (int e = 0; e < 2; e++)
          acc = fmaf(H::load((uint16_t)(ar[r][p] >> (16 * e))),
                     H::load((uint16_t)(bc[col][p] >> (16 * e))), acc);
      c[2 * r + col] = acc;
    }
#endif
}

/* mma.sync m16n8k8, f16 (sm_75 and newer) or bf16 (sm_80 and newer)
 * inputs, f32 accumulators: the first half of gk_mma_16816, with its
 * fragments a[0], a[1] and b[0]. */
template <class H = gk_f16>
GK_DEV void gk_mma_1688(float c[4], const uint32_t a[2], uint32_t b) {
#if defined(GK_GPU_NVIDIA)
  static_assert(!H::bf16 || GK_BF16_MMA, "no bf16 mma before sm_80");
  if constexpr (H::bf16)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
  else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
#else
  const uint32_t a4[4] = {a[0], a[1], 0u, 0u}, b2[2] = {b, 0u};
  gk_mma_16816<H>(c, a4, b2); /* the zero half adds exact zeros */
#endif
}

/*
 * mma.sync m16n8k32, 8-bit A (row-major 16 x 32) and B (column-major 32 x
 * 8), one signed and the other unsigned, s32 accumulators: d = c + A B,
 * with c the same value in all four (a bias, so a caller may start every
 * element at a constant). gk_mma_s8u8_16832: A signed, B unsigned;
 * gk_mma_u8s8_16832: A unsigned, B signed. Fragments (the PTX ISA's
 * "Matrix Fragments for mma.m16n8k32"): lane 4g + t holds
 *   a[0] = A[g][4t .. 4t+3]    a[1] = A[g+8][4t .. 4t+3]
 *   a[2] = A[g][16+4t .. +3]   a[3] = A[g+8][16+4t .. +3]   (bytes, low first)
 *   b[0] = B[4t .. 4t+3][g]    b[1] = B[16+4t .. +3][g]
 *   d[0], d[1] = D[g][2t, 2t+1]   d[2], d[3] = D[g+8][2t, 2t+1].
 * sm_80 and newer: one instruction; sm_75: four m8n8k16 (rows g and g + 8,
 * k halves), the same fragments. The sums are exact integers either way, so
 * the twin (the emulator, and HIP: no AMD matrix path is written yet), which
 * gathers the operands with shuffles, gives the same d.
 */
template <bool SignedA>
GK_DEV void gk_mma_i8_16832(int d[4], const uint32_t a[4], const uint32_t b[2], int c) {
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  if constexpr (SignedA)
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c));
  else
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c));
#elif defined(GK_GPU_NVIDIA)
  for (int r = 0; r < 2; r++) {
    int e0 = c, e1 = c;
    for (int h = 0; h < 2; h++) {
      if constexpr (SignedA)
        asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.u8.s32 "
                     "{%0, %1}, {%2}, {%3}, {%0, %1};"
                     : "+r"(e0), "+r"(e1)
                     : "r"(a[2 * h + r]), "r"(b[h]));
      else
        asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.u8.s8.s32 "
                     "{%0, %1}, {%2}, {%3}, {%0, %1};"
                     : "+r"(e0), "+r"(e1)
                     : "r"(a[2 * h + r]), "r"(b[h]));
    }
    d[2 * r] = e0, d[2 * r + 1] = e1;
  }
#else
  /* Rows g and g + 8 of A and columns 2t and 2t + 1 of B, 4 bytes a word:
   * each byte as the type's signedness asks. */
  uint32_t ar[2][8], bc[2][8];
  gk_mma_twin_gather(a, b, ar, bc);
  for (int r = 0; r < 2; r++)
    for (int col = 0; col < 2; col++) {
      int acc = c;
      for (int w = 0; w < 8; w++)
        for (int e = 0; e < 4; e++) {
          const uint32_t ea = (ar[r][w] >> (8 * e)) & 0xffu, eb = (bc[col][w] >> (8 * e)) & 0xffu;
          acc += (SignedA ? (int)(signed char)ea : (int)ea) * (SignedA ? (int)eb : (int)(signed char)eb);
        }
      d[2 * r + col] = acc;
    }
#endif
}
GK_DEV void gk_mma_s8u8_16832(int d[4], const uint32_t a[4], const uint32_t b[2], int c) {
  gk_mma_i8_16832<true>(d, a, b, c);
}
GK_DEV void gk_mma_u8s8_16832(int d[4], const uint32_t a[4], const uint32_t b[2], int c) {
  gk_mma_i8_16832<false>(d, a, b, c);
}

/*
 * ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: four 8 x 8 matrices of
 * 16-bit elements from shared memory, by the 32 lanes of a group together.
 * Lane L gives the address of row L % 8 of matrix L / 8 (16 bytes, 16-byte
 * aligned) and receives, of each matrix i, r[i] = elements (L / 4, 2(L % 4))
 * and (L / 4, 2(L % 4) + 1): an mma fragment. With .trans it receives the
 * transposed matrix's: (2(L % 4), L / 4) and (2(L % 4) + 1, L / 4). The twin
 * gathers the 32 row addresses (gk_lanes) and reads them; under the
 * emulator it also counts their bank conflicts.
 */
GK_DEV void gk_ldmatrix_x4(uint32_t r[4], const uint16_t *row) {
#if defined(GK_GPU_NVIDIA)
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
#else
  const gk_lanes<const uint16_t *, 1> rows(&row);
#if defined(GK_GPU_EMULATE)
  gk_emu_ldmatrix_banks(rows.t);
#endif
  const int lane = gk_lane();
  for (int i = 0; i < 4; i++) {
    const uint16_t *p = rows.get(0, 8 * i + lane / 4);
    r[i] = (uint32_t)p[2 * (lane % 4)] | (uint32_t)p[2 * (lane % 4) + 1] << 16;
  }
#endif
}
GK_DEV void gk_ldmatrix_x4_trans(uint32_t r[4], const uint16_t *row) {
#if defined(GK_GPU_NVIDIA)
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
#else
  const gk_lanes<const uint16_t *, 1> rows(&row);
#if defined(GK_GPU_EMULATE)
  gk_emu_ldmatrix_banks(rows.t);
#endif
  const int lane = gk_lane();
  for (int i = 0; i < 4; i++) {
    const uint16_t *p0 = rows.get(0, 8 * i + 2 * (lane % 4));
    const uint16_t *p1 = rows.get(0, 8 * i + 2 * (lane % 4) + 1);
    r[i] = (uint32_t)p0[lane / 4] | (uint32_t)p1[lane / 4] << 16;
  }
#endif
}

/*
 * cp.async.cg.shared.global, 16 bytes (sm_80 and newer): a copy from global
 * to shared memory that completes in the background; `full` false fills
 * the 16 bytes with zeros instead (src is not read). A thread's copies are
 * grouped by gk_cp_async_commit and waited for by gk_cp_async_wait<N> (at
 * most N of its groups still in flight); a barrier then makes them visible
 * to the block. Before sm_80 the copy happens at once. The emulator lands
 * it as late as the PTX ISA allows: at the gk_cp_async_wait that must see
 * it (tests/backends/cuda/emu), so a missing wait reads stale data there.
 * L1: through L1 (cp.async.ca), for data that the SM's other blocks read
 * too (q8x_batch.cuh's rows of x).
 */
template <bool L1 = false>
GK_DEV void gk_cp_async16(void *dst, const void *src, bool full) {
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  if (L1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;"
                 :: "r"(a), "l"(src), "r"(full ? 16 : 0) : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(a), "l"(src), "r"(full ? 16 : 0) : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_cp_async(dst, full ? src : nullptr, 16);
#else
  uint4 v = {0u, 0u, 0u, 0u};
  if (full) v = *(const uint4 *)src;
  *(uint4 *)dst = v;
#endif
}
/* The same for 4 or 8 bytes (cp.async.ca: through L1; the .cg form takes
 * 16 only), for data that is not 16-byte aligned (W's blocks: 4) or
 * pieces that size (a record's dx and sb: 8), aligned to their size. */
template <int Bytes>
GK_DEV void gk_cp_async_ca(void *dst, const void *src, bool full) {
  static_assert(Bytes == 4 || Bytes == 8, "cp.async.ca's copies below 16 bytes");
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
               :: "r"(a), "l"(src), "n"(Bytes), "r"(full ? Bytes : 0) : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_cp_async(dst, full ? src : nullptr, Bytes);
#else
  if (Bytes == 4)
    *(uint32_t *)dst = full ? *(const uint32_t *)src : 0u;
  else
    *(uint64_t *)dst = full ? *(const uint64_t *)src : 0u;
#endif
}
GK_DEV void gk_cp_async4(void *dst, const void *src, bool full) {
  gk_cp_async_ca<4>(dst, src, full);
}
GK_DEV void gk_cp_async8(void *dst, const void *src, bool full) {
  gk_cp_async_ca<8>(dst, src, full);
}
/* A barrier among the group's lanes, with the ordering of their shared
 * memory accesses: what a lane wrote before it (its cp.async copies too,
 * once its own gk_cp_async_wait saw them land) the others read after it,
 * and what they read before it is read before any lane writes again. For
 * data a group copies for itself in another lane order than it reads
 * (q8x_batch.cuh's rows of x), where a block barrier would wait for every
 * group. __syncwarp on NVIDIA; on AMD a wavefront's lanes run together,
 * so a fence orders the accesses; the emulator's lanes meet. */
GK_DEV void gk_group_sync(void) {
#if defined(GK_GPU_NVIDIA)
  __syncwarp();
#elif defined(GK_GPU_EMULATE)
  gk_emu_group_sync();
#else
  __threadfence_block();
#endif
}
GK_DEV void gk_cp_async_commit(void) {
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_cp_async_commit();
#endif
}
template <int N>
GK_DEV void gk_cp_async_wait(void) {
#if defined(GK_GPU_NVIDIA) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_cp_async_wait(N);
#endif
}

/* Whether pred holds in any thread of the block: a barrier that every
 * thread of the block reaches (__syncthreads_or; no shared variable). */
GK_DEV bool gk_block_any(bool pred) { return __syncthreads_or(pred ? 1 : 0) != 0; }

/* A barrier among Count threads of the block (Count a multiple of 32),
 * for work that part of a block does while the rest of it is elsewhere:
 * PTX's named barrier `id` (1 .. 15; 0 is __syncthreads'; the same value
 * in a warp), bar.sync id, Count. gk_bar_any also says whether pred holds
 * in any of them (bar.red.or). gk_bar_arrive counts the calling warp in
 * without waiting (bar.arrive): a producer's signal to the threads that
 * wait with gk_bar_sync, its memory accesses before it visible to them
 * after. HIP has no named barrier: there the block must be the Count
 * threads (its launches are the cuda rows', which never exceed them where
 * these are used), and these are __syncthreads (gk_bar_arrive: never
 * used there). */
template <int Count>
GK_DEV void gk_bar_sync(int id) {
  static_assert(Count % 32 == 0, "whole groups");
#if defined(GK_GPU_NVIDIA)
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(Count) : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_bar_sync(id, Count);
#else
  (void)id;
  __syncthreads();
#endif
}
template <int Count>
GK_DEV void gk_bar_arrive(int id) {
  static_assert(Count % 32 == 0, "whole groups");
#if defined(GK_GPU_NVIDIA)
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(Count) : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_bar_arrive(id, Count);
#else
  static_assert(Count < 0, "no bar.arrive on HIP");
#endif
}
template <int Count>
GK_DEV bool gk_bar_any(int id, bool pred) {
  static_assert(Count % 32 == 0, "whole groups");
#if defined(GK_GPU_NVIDIA)
  unsigned r;
  asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\t"
               "bar.red.or.pred q, %2, %3, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
               : "=r"(r)
               : "r"(pred ? 1u : 0u), "r"(id), "n"(Count)
               : "memory");
  return r != 0;
#elif defined(GK_GPU_EMULATE)
  return gk_emu_bar_or(id, Count, pred ? 1 : 0) != 0;
#else
  (void)id;
  return __syncthreads_or(pred ? 1 : 0) != 0;
#endif
}

/* A float rounded to the nearest integer, ties to even (|v| < 2^31). */
GK_DEV int gk_rint(float v) {
#if defined(GK_GPU_NVIDIA)
  return __float2int_rn(v);
#else
  return (int)rintf(v);
#endif
}

/*
 * Order between the blocks of one launch (attention's cross-block split:
 * each block publishes a partial result, then counts itself in with an
 * atomic; the last one reads them all). gk_threadfence: this thread's
 * writes before it are seen by every block before its writes after it (a
 * device-scope fence); the last block fences too before it reads.
 * gk_ld_cg: a load from L2, past the SM's L1, which does not follow the
 * other SMs' writes (on AMD the fence invalidates L1 itself). The
 * emulator runs one block after another: nothing to order.
 */
GK_DEV void gk_threadfence(void) {
#if !defined(GK_GPU_EMULATE)
  __threadfence();
#endif
}
/*
 * A hint: the L2 sector (32 bytes) holding global address p is fetched
 * from memory now, so that a load of it later finds it in L2
 * (prefetch.global.L2: no register waits for it; callers keep p inside
 * the tensor all the same). HIP: nothing (AMD has no such instruction
 * before gfx12). The emulator reads a byte at p, so that the tests'
 * AddressSanitizer build sees a prefetch outside the tensor.
 */
GK_DEV void gk_prefetch_l2(const void *p) {
#if defined(GK_GPU_NVIDIA)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#elif defined(GK_GPU_EMULATE)
  (void)*(const volatile unsigned char *)p;
#else
  (void)p;
#endif
}

GK_DEV float gk_ld_cg(const float *p) {
#if defined(GK_GPU_NVIDIA)
  return __ldcg(p);
#else
  return *(const volatile float *)p;
#endif
}
/* The same for two floats, p 8-byte aligned: one load. */
struct gk_f2 {
  float x, y;
};
GK_DEV gk_f2 gk_ld_cg2(const float *p) {
#if defined(GK_GPU_NVIDIA)
  const float2 v = __ldcg((const float2 *)p);
  return {v.x, v.y};
#else
  const volatile float *v = p;
  return {v[0], v[1]};
#endif
}

#endif /* GK_GPU_CUH */
