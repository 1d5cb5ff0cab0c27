/*
 * gk_wgmma.cuh - Hopper's warpgroup matrix multiply (wgmma, sm_90a), one
 * inline function per instruction with the emulator's plain twin, as
 * gk_gpu.cuh does for mma.sync: the emulator (tests/backends/cuda) checks
 * the tiling and the shared-memory layout around them, a real H100/H200
 * checks the instructions (tests/gpu's wgmma rows).
 *
 * What a caller relies on (PTX ISA, "Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate"; CUTLASS's GMMA traits say the same):
 * - A warpgroup is 4 consecutive warps, the first one's index a multiple
 *   of 4 (here: a block of 128 threads is one warpgroup). All 128 threads
 *   execute each wgmma instruction together.
 * - D (m64nN, f32) += A (m64k16, in registers, or in shared memory:
 *   gk_wgmma_ss) x B (k16nN, shared memory).
 *   Warp w holds rows 16w .. 16w + 15 of A and D, in mma.sync's m16n8k16
 *   fragments: lane 4g + t holds A[16w + g][2t, 2t+1] (a[0]), row + 8
 *   (a[1]), and the same at k + 8 (a[2], a[3]); and of each 8 columns j of
 *   D, d[4j .. 4j+3] = D[16w + g][8j + 2t, +1] and D[16w + g + 8][...].
 *   So a warp's mma.sync fragments of 16 rows are its share of wgmma's.
 * - B is described by a 64-bit matrix descriptor (gk_wgmma_desc): start
 *   address, leading byte offset (LBO) and stride byte offset (SBO), each
 *   in 16-byte units, and a swizzle mode. B is stored as 8 x 8 "core
 *   matrices" of 128 contiguous bytes (8 rows of 16 bytes). Without
 *   swizzle, SBO is the step between core matrices along N and LBO along
 *   K, for both majors:
 *     K-major (TransB 0, B[k][n] with k contiguous): element (k, n) at
 *       start + (n / 8) SBO + (k / 8) LBO + (n % 8) 16 + (k % 8) 2
 *     N-major (TransB 1, n contiguous):
 *       start + (n / 8) SBO + (k / 8) LBO + (k % 8) 16 + (n % 8) 2
 *   With the 128-byte swizzle (gk_wgmma_desc_sw128; the PTX ISA's
 *   canonical layouts, CUTLASS's Layout_K_SW128_Atom and _MN_), rows are
 *   128 bytes, 8 of them an atom of 1024 bytes, and the 16-byte piece p of
 *   row r of an atom lies at piece p ^ (r % 8): the byte address a that
 *   the layout gives is read at a ^ ((a >> 7) % 8) << 4, on the shared
 *   window's addresses, so an atom must start 1024-byte aligned:
 *     K-major: start + (n / 8) SBO + (n % 8) 128 + k 2, k < 16 (LBO
 *       unused; a step of 16 in k is the start 32 bytes on, within the
 *       row's 64 elements)
 *     N-major: start + (n / 64) LBO + (n % 64) 2 + (k / 8) SBO + (k % 8) 128
 *   A row's 8 pieces land in 8 distinct groups of 4 banks whatever the
 *   row, so a row copied whole (16 lanes on 256 contiguous bytes of
 *   global memory) is written in the fewest passes; without swizzle, a
 *   core matrix's 8 rows are 8 rows of the tensor, 16 bytes of each.
 * - Ordering: wgmma runs asynchronously. gk_wgmma_fence before the first
 *   wgmma that reads registers written since (the accumulators, A);
 *   gk_wgmma_commit closes a group, gk_wgmma_wait<0> waits for all of them
 *   (before D is read or written by anything else, or B's shared memory is
 *   overwritten). Shared memory written by the threads (stores, cp.async)
 *   is read by wgmma through the async proxy: each writing thread runs
 *   gk_fence_proxy_async after its writes land, before the barrier that
 *   precedes the wgmma.
 * GK_WGMMA_HW is 1 where the instructions exist (an sm_90a compilation);
 * elsewhere the twins run (the emulator; nvcc for other targets compiles
 * them but no body calls them there). The emulator runs each twin at the
 * wait that covers it, not at issue (gk_wgmma_twin_issue), so a wait that
 * covers too little, D read before it, A or B's stage written before it,
 * all of which the hardware leaves undefined, give wrong numbers there.
 */
#ifndef GK_WGMMA_CUH
#define GK_WGMMA_CUH

#include "gk_gpu.cuh"

#if defined(GK_GPU_EMULATE)
#include <stdlib.h> /* abort: a twin given a layout no body takes */
#endif

#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GK_WGMMA_HW 1
#else
#define GK_WGMMA_HW 0
#endif

/*
 * The descriptor of B at p (16-byte aligned, in shared memory) with the
 * two offsets in bytes (multiples of 16, below 256 KB), no swizzle, base
 * offset 0. On the GPU the start is p's shared-window address; the
 * emulator has no shared window, so there the start is p's offset from
 * `base` (the block's shared struct, which the twin is given too).
 */
GK_DEV uint64_t gk_wgmma_desc(const void *base, const void *p, uint32_t lbo, uint32_t sbo) {
#if GK_WGMMA_HW
  (void)base;
  const uint32_t start = (uint32_t)__cvta_generic_to_shared(p);
#else
  const uint32_t start = (uint32_t)((const char *)p - (const char *)base);
#endif
  return (uint64_t)((start & 0x3ffffu) >> 4) | (uint64_t)((lbo & 0x3ffffu) >> 4) << 16 |
         (uint64_t)((sbo & 0x3ffffu) >> 4) << 32;
}

/* The same with the 128-byte swizzle (layout type 1, bits 62-63; base
 * offset 0: p's atom starts 1024-byte aligned, p itself up to 96 bytes
 * into its first row, a K-major step). The emulator's shared memory has
 * no window, so its twin swizzles p's offset from `base`: a caller keeps
 * its atoms 1024 bytes from base, and base 1024-byte aligned on the GPU
 * (gk_wgmma_sw128_check). */
GK_DEV uint64_t gk_wgmma_desc_sw128(const void *base, const void *p, uint32_t lbo,
                                    uint32_t sbo) {
  return gk_wgmma_desc(base, p, lbo, sbo) | (uint64_t)1 << 62;
}

/* Traps where base is not 1024-byte aligned in the shared window (the
 * swizzle's atoms would then not be where the twin and the copies put
 * them); nothing elsewhere. */
GK_DEV void gk_wgmma_sw128_check(const void *base) {
#if GK_WGMMA_HW
  if ((uint32_t)__cvta_generic_to_shared(base) % 1024u != 0u) __trap();
#else
  (void)base;
#endif
}

GK_DEV void gk_wgmma_fence(void) {
#if GK_WGMMA_HW
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
GK_DEV void gk_wgmma_commit(void) {
#if GK_WGMMA_HW
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_wgmma_commit();
#endif
}
template <int N>
GK_DEV void gk_wgmma_wait(void) {
#if GK_WGMMA_HW
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_wgmma_wait(N); /* runs the twins of the groups it covers */
#endif
}
/* This thread's shared-memory writes, made visible to the async proxy. */
GK_DEV void gk_fence_proxy_async(void) {
#if GK_WGMMA_HW
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_fence_proxy_async();
#endif
}

/* The calling warpgroup's registers a thread set to N (a multiple of 8,
 * 24 .. 256), every warp of it calling: given back to the block's pool
 * (dec) or taken from it (inc, which waits until the pool has them).
 * ptxas compiles the code that follows within N. No-ops in the twins. */
template <int N>
GK_DEV void gk_setmaxnreg_dec(void) {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg's range");
#if GK_WGMMA_HW
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
GK_DEV void gk_setmaxnreg_inc(void) {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg's range");
#if GK_WGMMA_HW
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

#if GK_WGMMA_HW
/* One instruction per shape, T the input type's PTX name ("f16", "bf16");
 * scale-d is `acc` (1: D += A B; 0: D = A B, the accumulators not read,
 * as CUTLASS's ScaleOut::Zero: a product's first wgmma needs no zeroed
 * registers), A and B unscaled. The accumulators d[16 i ..
 * 16 i + 15] are operands GK_WGMMA_D16(C, i), numbered GK_WGMMA_Ri in the
 * instruction's text; the operands after them follow. */
#define GK_WGMMA_R0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define GK_WGMMA_R1 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GK_WGMMA_R2 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define GK_WGMMA_R3 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GK_WGMMA_R4 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define GK_WGMMA_R5H "%80, %81, %82, %83, %84, %85, %86, %87" /* half a set: n = 176 */
#define GK_WGMMA_R5 GK_WGMMA_R5H ", %88, %89, %90, %91, %92, %93, %94, %95"
#define GK_WGMMA_D16(C, i)                                                                        \
  C(d[16 * (i) + 0]), C(d[16 * (i) + 1]), C(d[16 * (i) + 2]), C(d[16 * (i) + 3]),                 \
      C(d[16 * (i) + 4]), C(d[16 * (i) + 5]), C(d[16 * (i) + 6]), C(d[16 * (i) + 7]),             \
      C(d[16 * (i) + 8]), C(d[16 * (i) + 9]), C(d[16 * (i) + 10]), C(d[16 * (i) + 11]),           \
      C(d[16 * (i) + 12]), C(d[16 * (i) + 13]), C(d[16 * (i) + 14]), C(d[16 * (i) + 15])
/* A list of operands as one macro argument. */
#define GK_WGMMA_OUT(...) __VA_ARGS__
#define GK_WGMMA_D8(C, i)                                                                         \
  C(d[16 * (i) + 0]), C(d[16 * (i) + 1]), C(d[16 * (i) + 2]), C(d[16 * (i) + 3]),                 \
      C(d[16 * (i) + 4]), C(d[16 * (i) + 5]), C(d[16 * (i) + 6]), C(d[16 * (i) + 7])
/* Each instruction twice: reading the accumulators ("+f", scale-d 1) and
 * only writing them ("=f", scale-d 0), so that the compiler sees a
 * product's first wgmma define them (with "+f" on registers never
 * written, ptxas 13.0 serialized the overlapped schedules' wgmma: C7515). */
#define GK_WGMMA_ACC(M, T)                                                                        \
  do {                                                                                            \
    if (acc)                                                                                      \
      M(T, "+f", 1);                                                                              \
    else                                                                                          \
      M(T, "=f", 0);                                                                              \
  } while (0)
#define GK_WGMMA_RS_N32(T, C, S)                                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"                                       \
               "wgmma.mma_async.sync.aligned.m64n32k16.f32." T "." T                              \
               " {" GK_WGMMA_R0 "}, {%16, %17, %18, %19}, %20, p, 1, 1, %22;\n}\n"                \
               : GK_WGMMA_D16(C, 0)                                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(S), "n"(TransB))
#define GK_WGMMA_RS_N64(T, C, S)                                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                       \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." T "." T                              \
               " {" GK_WGMMA_R0 ", " GK_WGMMA_R1 "}, {%32, %33, %34, %35}, %36, p, 1, 1, "        \
               "%38;\n}\n"                                                                        \
               : GK_WGMMA_D16(C, 0), GK_WGMMA_D16(C, 1)                                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(S), "n"(TransB))
#define GK_WGMMA_RS_N128(T, C, S)                                                                 \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                       \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." T "." T                             \
               " {" GK_WGMMA_R0 ", " GK_WGMMA_R1 ", " GK_WGMMA_R2 ", " GK_WGMMA_R3                \
               "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"                                 \
               : GK_WGMMA_D16(C, 0), GK_WGMMA_D16(C, 1), GK_WGMMA_D16(C, 2), GK_WGMMA_D16(C, 3)   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(S), "n"(TransB))
template <class H, int N, int TransB>
GK_DEV void gk_wgmma_rs(float *d, const uint32_t a[4], uint64_t desc, int acc) {
  if constexpr (N == 32 && H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_RS_N32, "bf16");
  else if constexpr (N == 32)
    GK_WGMMA_ACC(GK_WGMMA_RS_N32, "f16");
  else if constexpr (N == 64 && H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_RS_N64, "bf16");
  else if constexpr (N == 64)
    GK_WGMMA_ACC(GK_WGMMA_RS_N64, "f16");
  else if constexpr (H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_RS_N128, "bf16");
  else
    GK_WGMMA_ACC(GK_WGMMA_RS_N128, "f16");
}

/* A by descriptor too (K-major, imm-trans-a 0): m64n96k16, m64n128k16,
 * m64n176k16 (88 accumulators: five sets of 16 and a half) and m64n192k16
 * (96: six sets). One text for all: REGS the accumulators' operand numbers,
 * OUTS their constraints, A the number of the first operand after them
 * (da; then db, scale-d, TransB). */
#define GK_WGMMA_SS_ASM(T, N, REGS, OUTS, A, B, SD, TB, C, S)                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SD ", 0;\n"                                 \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " {" REGS "}, %" #A      \
               ", %" #B ", p, 1, 1, 0, %" #TB ";\n}\n"                                            \
               : OUTS                                                                             \
               : "l"(da), "l"(db), "r"(S), "n"(TransB))
#define GK_WGMMA_SS_N96(T, C, S)                                                                  \
  GK_WGMMA_SS_ASM(T, 96, GK_WGMMA_R0 ", " GK_WGMMA_R1 ", " GK_WGMMA_R2,                           \
                  GK_WGMMA_OUT(GK_WGMMA_D16(C, 0), GK_WGMMA_D16(C, 1), GK_WGMMA_D16(C, 2)), 48,   \
                  49, 50, 51, C, S)
#define GK_WGMMA_SS_N128(T, C, S)                                                                 \
  GK_WGMMA_SS_ASM(T, 128, GK_WGMMA_R0 ", " GK_WGMMA_R1 ", " GK_WGMMA_R2 ", " GK_WGMMA_R3,         \
                  GK_WGMMA_OUT(GK_WGMMA_D16(C, 0), GK_WGMMA_D16(C, 1), GK_WGMMA_D16(C, 2),        \
                               GK_WGMMA_D16(C, 3)),                                               \
                  64, 65, 66, 67, C, S)
#define GK_WGMMA_SS_N176(T, C, S)                                                                 \
  GK_WGMMA_SS_ASM(T, 176,                                                                         \
                  GK_WGMMA_R0 ", " GK_WGMMA_R1 ", " GK_WGMMA_R2 ", " GK_WGMMA_R3 ", " GK_WGMMA_R4 \
                              ", " GK_WGMMA_R5H,                                                  \
                  GK_WGMMA_OUT(GK_WGMMA_D16(C, 0), GK_WGMMA_D16(C, 1), GK_WGMMA_D16(C, 2),        \
                               GK_WGMMA_D16(C, 3), GK_WGMMA_D16(C, 4), GK_WGMMA_D8(C, 5)),        \
                  88, 89, 90, 91, C, S)
#define GK_WGMMA_SS_N192(T, C, S)                                                                 \
  GK_WGMMA_SS_ASM(T, 192,                                                                         \
                  GK_WGMMA_R0 ", " GK_WGMMA_R1 ", " GK_WGMMA_R2 ", " GK_WGMMA_R3 ", " GK_WGMMA_R4 \
                              ", " GK_WGMMA_R5,                                                   \
                  GK_WGMMA_OUT(GK_WGMMA_D16(C, 0), GK_WGMMA_D16(C, 1), GK_WGMMA_D16(C, 2),        \
                               GK_WGMMA_D16(C, 3), GK_WGMMA_D16(C, 4), GK_WGMMA_D16(C, 5)),       \
                  96, 97, 98, 99, C, S)
#else
/* A twin's read of shared memory, through the async proxy: the emulator
 * fails a read of bytes a cp.async landed and its thread has not fenced
 * (gk_emu_async_read). */
GK_DEV void gk_wgmma_twin_ld(void *dst, const char *p, unsigned n) {
#if defined(GK_GPU_EMULATE)
  if (gk_emu_unfenced) gk_emu_async_read(p, n);
#endif
  memcpy(dst, p, n);
}

/* Where a descriptor's element (mn, k) lies, in bytes from base: the
 * layouts at the top, by the descriptor's swizzle mode (none or 128
 * bytes; the emulator aborts on the others, which no body takes),
 * mn_major as TransB 1. */
GK_DEV uint32_t gk_wgmma_twin_at(uint64_t desc, int mn, int k, bool mn_major) {
  const uint32_t start = (uint32_t)(desc & 0x3fffu) << 4;
  const uint32_t lbo = (uint32_t)((desc >> 16) & 0x3fffu) << 4;
  const uint32_t sbo = (uint32_t)((desc >> 32) & 0x3fffu) << 4;
  const uint32_t m = (uint32_t)mn, kk = (uint32_t)k;
  switch ((unsigned)(desc >> 62)) {
  case 0:
    return start + m / 8 * sbo + kk / 8 * lbo + (mn_major ? kk % 8 * 16 + m % 8 * 2
                                                           : m % 8 * 16 + kk % 8 * 2);
  case 1: {
    const uint32_t a = start + (mn_major ? m / 64 * lbo + m % 64 * 2 + kk / 8 * sbo + kk % 8 * 128
                                         : m / 8 * sbo + m % 8 * 128 + kk * 2);
    return a ^ (a >> 7 & 7u) << 4;
  }
  default: /* 64- and 32-byte swizzles: no body takes them */
#if defined(GK_GPU_EMULATE)
    abort();
#endif
    return 0;
  }
}

/* The twins' product: d += A B, with this thread's rows g and g + 8 of its
 * warp's 16 rows of A as k pairs (ar[r][p]: k = 2p low, 2p + 1 high) and B
 * read through the descriptor's layout from base. Each thread sums its
 * elements' 16 products in k order with fmaf (exact products, as
 * gk_mma_16816's twin). */
template <class H, int N, int TransB>
GK_DEV void gk_wgmma_twin(float *d, const uint32_t ar[2][8], uint64_t desc, const void *base,
                          int acc) {
  const int t = gk_lane() % 4;
  for (int j = 0; j < N / 8; j++)
    for (int e = 0; e < 4; e++) {
      const int r = e >> 1, n = 8 * j + 2 * t + (e & 1);
      float sum = acc ? d[4 * j + e] : 0.0f;
      for (int k = 0; k < 16; k++) {
        uint16_t b;
        gk_wgmma_twin_ld(&b, (const char *)base + gk_wgmma_twin_at(desc, n, k, TransB), 2);
        const uint16_t av = (uint16_t)(ar[r][k / 2] >> (16 * (k % 2)));
        sum = fmaf(H::load(av), H::load(b), sum);
      }
      d[4 * j + e] = sum;
    }
}

/* A twin's instruction: Op::run(op), in the emulator when the wait that
 * covers it comes (gk_emu.h's gk_emu_wgmma: A and B are read and D written
 * then, as late as the hardware may, so that a body reading D or writing
 * A or B's stage too early fails there), elsewhere at once (nvcc's and
 * hipcc's other targets compile the twins; no body calls them there). */
template <class Op>
GK_DEV void gk_wgmma_twin_issue(const Op &op) {
#if defined(GK_GPU_EMULATE)
  static_assert(sizeof(Op) <= GK_EMU_WGMMA_BYTES, "a wgmma's operands");
  gk_emu_wgmma([](const void *p) { Op::run(*(const Op *)p); }, &op, (unsigned)sizeof op);
#else
  Op::run(op);
#endif
}

/* A in registers (a: this thread's fragment, read when the twin runs). */
template <class H, int N, int TransB>
struct gk_wgmma_rs_twin {
  float *d;
  const uint32_t *a;
  uint64_t desc;
  const void *base;
  int acc;
  GK_DEV void run(const gk_wgmma_rs_twin &o) {
    uint32_t ar[2][8]; /* rows g, g + 8 of this warp's A: k pairs 0..7 */
    gk_mma_twin_rows(o.a, ar);
    gk_wgmma_twin<H, N, TransB>(o.d, ar, o.desc, o.base, o.acc);
  }
};

/* A by descriptor too (gk_wgmma_ss): this thread's two rows of A read
 * through it. */
template <class H, int N, int TransB>
struct gk_wgmma_ss_twin {
  float *d;
  uint64_t da, db;
  const void *base;
  int acc;
  GK_DEV void run(const gk_wgmma_ss_twin &o) {
    const int m0 = 16 * (gk_group() % 4) + gk_lane() / 4;
    uint32_t ar[2][8];
    for (int r = 0; r < 2; r++) {
      const int m = m0 + 8 * r;
      for (int p = 0; p < 8; p++) /* k = 2p, 2p + 1: adjacent within a 16-byte piece */
        gk_wgmma_twin_ld(&ar[r][p], (const char *)o.base + gk_wgmma_twin_at(o.da, m, 2 * p, false),
                         4);
    }
    gk_wgmma_twin<H, N, TransB>(o.d, ar, o.db, o.base, o.acc);
  }
};
#endif

/*
 * wgmma.mma_async m64nNk16, f32 accumulators, A (H: gk_f16 or gk_bf16
 * values) in registers, B by descriptor (TransB 0: K-major, 1: N-major), D
 * += A B with d this thread's N / 2 accumulators (above). The twin gathers
 * the rows of A from the quad that holds them (gk_mma_twin_rows).
 */
template <class H, int N, int TransB>
GK_DEV void gk_wgmma(float *d, const uint32_t a[4], uint64_t desc, const void *base,
                      int acc = 1) {
  static_assert(N == 32 || N == 64 || N == 128, "wgmma N: 32, 64 or 128");
#if GK_WGMMA_HW
  (void)base;
  gk_wgmma_rs<H, N, TransB>(d, a, desc, acc);
#else
  const gk_wgmma_rs_twin<H, N, TransB> op = {d, a, desc, base, acc};
  gk_wgmma_twin_issue(op);
#endif
}

/*
 * The same with A by descriptor as well (both operands in shared memory:
 * wgmma's "SS" form), A K-major: element (m, k) of the warpgroup's 64 x 16
 * at start + (m / 8) SBO + (k / 8) LBO + (m % 8) 16 + (k % 8) 2, B's
 * K-major layout with m for n. Warp w of the warpgroup multiplies rows
 * 16w .. 16w + 15, as above; d is the same fragments. N 96, 128, 176 or
 * 192. The twin reads this thread's two rows of A through the descriptor.
 */
template <class H, int N, int TransB>
GK_DEV void gk_wgmma_ss(float *d, uint64_t da, uint64_t db, const void *base, int acc = 1) {
  static_assert(N == 96 || N == 128 || N == 176 || N == 192, "wgmma SS: N 96, 128, 176 or 192");
#if GK_WGMMA_HW
  (void)base;
  if constexpr (N == 192 && H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_SS_N192, "bf16");
  else if constexpr (N == 192)
    GK_WGMMA_ACC(GK_WGMMA_SS_N192, "f16");
  else if constexpr (N == 176 && H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_SS_N176, "bf16");
  else if constexpr (N == 176)
    GK_WGMMA_ACC(GK_WGMMA_SS_N176, "f16");
  else if constexpr (N == 96 && H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_SS_N96, "bf16");
  else if constexpr (N == 96)
    GK_WGMMA_ACC(GK_WGMMA_SS_N96, "f16");
  else if constexpr (H::bf16)
    GK_WGMMA_ACC(GK_WGMMA_SS_N128, "bf16");
  else
    GK_WGMMA_ACC(GK_WGMMA_SS_N128, "f16");
#else
  const gk_wgmma_ss_twin<H, N, TransB> op = {d, da, db, base, acc};
  gk_wgmma_twin_issue(op);
#endif
}

#endif /* GK_WGMMA_CUH */
