/*
 * gk_tma.cuh - Hopper's Tensor Memory Accelerator (TMA, sm_90a) and the
 * mbarriers that count its bytes, one inline function per instruction
 * with the emulator's twin, as gk_wgmma.cuh does for wgmma: the emulator
 * (tests/backends/cuda) checks the boxes, the swizzle and the phases
 * around them, a real H100/H200 checks the instructions (tests/gpu's
 * tma_probe, which also runs a map built as gk_tmap_build builds it).
 *
 * What a caller relies on (PTX ISA: "Tensor Memory Accelerator",
 * "mbarrier", "tensormap.replace"):
 * - A tensor map describes a tiled tensor in global memory: here 3-D,
 *   16-bit elements, dims (d0, d1, d2) innermost first, the byte strides
 *   of dims 1 and 2 (multiples of 16), a box (b0, b1, b2) and optionally
 *   the 128-byte swizzle (b0 x 2 bytes = 128). cp.async.bulk.tensor
 *   copies the box at coordinates (c0, c1, c2) into shared memory, rows
 *   of b0 elements one after another, elements past a dim read as zeros,
 *   and counts its bytes (the whole box's, the zeros included) against an
 *   mbarrier's phase. With the swizzle, the 16-byte piece p of the row
 *   at byte a of shared memory lands at piece p ^ ((a >> 7) % 8): the
 *   layout wgmma's 128-byte swizzle reads (gk_wgmma.cuh), so a box's
 *   first row must start 1024-byte aligned.
 * - The map must lie in global (or param, const) memory, 64-byte aligned,
 *   and be made visible to the "tensormap proxy" before use. The host
 *   usually encodes it (cuTensorMapEncodeTiled) and passes it as a
 *   __grid_constant__ parameter; that would change a kernel's launch row,
 *   so gk_tmap_build builds it on the device instead, as Triton's device
 *   descriptors do: 128 zero bytes in shared memory, each field set by
 *   tensormap.replace, the object copied to global memory with a release
 *   fence of the tensormap proxy (tensormap.cp_fenceproxy), and an
 *   acquire fence before the first copy that reads it.
 * - Where the map lives: gk_tma_claim takes one of GK_TMA_SLOTS slots of
 *   this SM (%smid) in a table of the module's global memory, by an atomic
 *   compare-and-swap, and gk_tma_release gives it back once every copy
 *   that read the map has landed. A block on another SM, or another
 *   resident block of this SM, never has the same slot, so no map is
 *   rewritten while a copy may read it; where no slot is free (more
 *   resident blocks than slots, an SM id past the table) the caller
 *   copies by cp.async instead.
 * - An mbarrier (8 bytes of shared memory) completes a phase when its
 *   `count` arrivals have come and the bytes they announced
 *   (arrive.expect_tx) have landed; gk_mbar_wait(bar, parity) returns once
 *   the phase of that parity has completed (phases alternate 0, 1, 0, ...
 *   from the init). A thread that waits tracks the parity itself.
 * GK_TMA_HW is 1 where the instructions exist (an sm_90a compilation).
 * The emulator's twins: the map is a plain struct (gk_tmap_emu) in the
 * slot; a copy reads its box at issue and lands it, swizzled, when a
 * thread waits for the phase it counts against (the latest the PTX ISA
 * allows), so a stage read before its wait holds its old bytes there.
 */
#ifndef GK_TMA_CUH
#define GK_TMA_CUH

#include "gk_wgmma.cuh"

#if defined(GK_GPU_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GK_TMA_HW 1
#else
#define GK_TMA_HW 0
#endif

#define GK_TMA_SMS 256  /* SM ids the slot table covers */
#define GK_TMA_SLOTS 4  /* resident blocks an SM that may load by TMA */
#define GK_TMA_MAPS 2   /* maps a slot holds (K and V) */

/* What gk_tmap_build is given: a 3-D tiled map of 16-bit elements. */
struct gk_tmap_fields {
  const void *base;     /* 16-byte aligned */
  uint32_t dim[3];      /* innermost first, each 1 .. 2^32 - 1 */
  uint64_t stride[2];   /* bytes from one index of dim 1 (2) to the next */
  uint32_t box[3];      /* elements, each 1 .. 256; box[0] * 2 = 128 with swizzle */
  uint32_t swizzle128;  /* 1: the 128-byte swizzle; 0: none */
};

/* The map of a [heads][rows][d] tensor of 16-bit elements read in boxes
 * of 64 elements of d (128 bytes) by box_rows rows of one head, in the
 * 128-byte swizzle: fa_wgmma.cuh's K and V stages, and tests/gpu's
 * tma_probe, which checks this map on a GPU. */
GK_DEV gk_tmap_fields gk_tmap_rows_sw128(const void *base, uint32_t d, uint32_t rows,
                                         uint32_t heads, uint32_t box_rows) {
  gk_tmap_fields f;
  f.base = base;
  f.dim[0] = d, f.dim[1] = rows, f.dim[2] = heads;
  f.stride[0] = 2ull * d, f.stride[1] = 2ull * d * rows;
  f.box[0] = 64, f.box[1] = box_rows, f.box[2] = 1;
  f.swizzle128 = 1;
  return f;
}

/* A slot: GK_TMA_MAPS maps of 128 bytes (64-byte aligned). */
struct gk_tma_slot {
  __attribute__((aligned(128))) unsigned char map[GK_TMA_MAPS][128];
};
static __device__ gk_tma_slot gk_tma_slots[GK_TMA_SMS * GK_TMA_SLOTS];
static __device__ unsigned gk_tma_owner[GK_TMA_SMS * GK_TMA_SLOTS];

/* This SM's id (%smid; 0 in the emulator, which runs one block at a time). */
GK_DEV unsigned gk_smid(void) {
#if defined(GK_GPU_NVIDIA)
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
#else
  return 0u;
#endif
}

/* A free slot of this SM, taken (by one thread); -1 where none is. */
GK_DEV int gk_tma_claim(void) {
  const unsigned sm = gk_smid();
  if (sm >= GK_TMA_SMS) return -1;
  for (int s = 0; s < GK_TMA_SLOTS; s++)
    if (atomicCAS(&gk_tma_owner[sm * GK_TMA_SLOTS + s], 0u, 1u) == 0u)
      return (int)(sm * GK_TMA_SLOTS + (unsigned)s);
  return -1;
}

/* Gives slot back (by one thread, once the copies that read its maps have
 * landed: their mbarrier phases waited for). */
GK_DEV void gk_tma_release(int slot) {
  gk_threadfence();
  atomicExch(&gk_tma_owner[slot], 0u);
}

/* The emulator's map: the fields as given. */
struct gk_tmap_emu {
  gk_tmap_fields f;
};

/* Builds map i of slot `slot` from f, by one whole warp (every lane calls
 * it with the same f), through `stage` (128 bytes of shared memory,
 * 128-byte aligned); the map may be read by this warp's copies once it
 * returns (each lane has run the acquire fence). */
GK_DEV void gk_tmap_build(int slot, int i, unsigned char *stage, const gk_tmap_fields &f) {
  unsigned char *map = gk_tma_slots[slot].map[i];
#if GK_TMA_HW
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(stage);
  const int lane = (int)(threadIdx.x % 32);
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(s + 4u * (uint32_t)lane), "r"(0u) : "memory");
  gk_group_sync();
  if (lane == 0) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n" ::"r"(s),
                 "l"((uint64_t)f.base)
                 : "memory");
    asm volatile("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 2;\n" ::"r"(s) : "memory");
#define GK_TMAP_DIM(ord)                                                                          \
  asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], " #ord ", %1;\n" ::"r"( \
                   s),                                                                            \
               "r"(f.box[ord])                                                                    \
               : "memory");                                                                      \
  asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], " #ord ", %1;\n" ::  \
                   "r"(s),                                                                        \
               "r"(f.dim[ord])                                                                    \
               : "memory");                                                                      \
  asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], " #ord ", 1;\n" :: \
                   "r"(s)                                                                         \
               : "memory")
    GK_TMAP_DIM(0);
    GK_TMAP_DIM(1);
    GK_TMAP_DIM(2);
#undef GK_TMAP_DIM
    asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %1;\n" ::"r"(s),
                 "l"(f.stride[0])
                 : "memory");
    asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 1, %1;\n" ::"r"(s),
                 "l"(f.stride[1])
                 : "memory");
    /* 1: u16 (CU_TENSOR_MAP_DATA_TYPE_UINT16: the bits copied as they are) */
    asm volatile("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], 1;\n" ::"r"(s)
                 : "memory");
    asm volatile("tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;\n" ::"r"(s)
                 : "memory");
    /* 3: 128 bytes (CU_TENSOR_MAP_SWIZZLE_128B) */
    if (f.swizzle128)
      asm volatile("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 3;\n" ::"r"(s)
                   : "memory");
    else
      asm volatile("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 0;\n" ::"r"(s)
                   : "memory");
    /* 0: zeros past the dims */
    asm volatile("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;\n" ::"r"(s)
                 : "memory");
  }
  gk_group_sync();
  asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
               " [%0], [%1], 128;\n" ::"l"((uint64_t)map),
               "r"(s)
               : "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"((uint64_t)map)
               : "memory");
#else
  (void)stage;
  if (threadIdx.x % 32 == 0) {
    gk_tmap_emu e;
    e.f = f;
    memcpy(map, &e, sizeof e);
  }
  gk_group_sync();
#endif
}
#if defined(GK_GPU_EMULATE)
static_assert(sizeof(gk_tmap_emu) <= 128, "the emulator's map fits a slot's");
#endif

/* Map i of slot `slot` (gk_tmap_build's), as the copies take it. */
GK_DEV const void *gk_tmap(int slot, int i) { return gk_tma_slots[slot].map[i]; }

/* An mbarrier in shared memory, `count` arrivals a phase (one thread). */
GK_DEV void gk_mbar_init(uint64_t *bar, unsigned count) {
#if GK_TMA_HW
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                   (uint32_t)__cvta_generic_to_shared(bar)),
               "r"(count)
               : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_mbar_init(bar, count);
#else
  (void)bar, (void)count;
#endif
}
/* The inits of this thread, visible to the async proxy (the TMA unit);
 * the block's barrier after it makes them visible to the other threads. */
GK_DEV void gk_mbar_init_fence(void) {
#if GK_TMA_HW
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
/* One arrival, and `bytes` more that the phase waits for. */
GK_DEV void gk_mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
#if GK_TMA_HW
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   (uint32_t)__cvta_generic_to_shared(bar)),
               "r"(bytes)
               : "memory");
#elif defined(GK_GPU_EMULATE)
  gk_emu_mbar_arrive_expect_tx(bar, bytes);
#else
  (void)bar, (void)bytes;
#endif
}
/* Whether the phase of parity `phase` has completed, after waiting for it
 * a while (try_wait suspends the thread up to a time the hardware picks). */
GK_DEV bool gk_mbar_try_wait(uint64_t *bar, uint32_t phase) {
#if GK_TMA_HW
  uint32_t done;
  asm volatile("{\n.reg .pred p;\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"((uint32_t)__cvta_generic_to_shared(bar)), "r"(phase)
               : "memory");
  return done != 0;
#elif defined(GK_GPU_EMULATE)
  gk_emu_mbar_wait(bar, phase);
  return true;
#else
  (void)bar, (void)phase;
  return true;
#endif
}
/* Waits until the phase of parity `phase` has completed. */
GK_DEV void gk_mbar_wait(uint64_t *bar, uint32_t phase) {
  while (!gk_mbar_try_wait(bar, phase)) {
  }
}

/* Box (c0, c1, c2) of map `map` into shared memory at dst (128-byte
 * aligned; 1024 with the swizzle), its bytes counted against bar's phase
 * (one thread). */
GK_DEV void gk_tma_load_3d(void *dst, const void *map, int c0, int c1, int c2, uint64_t *bar) {
#if GK_TMA_HW
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
                   (uint32_t)__cvta_generic_to_shared(dst)),
               "l"((uint64_t)map), "r"((uint32_t)__cvta_generic_to_shared(bar)), "r"(c0),
               "r"(c1), "r"(c2)
               : "memory");
#elif defined(GK_GPU_EMULATE)
  /* The box as the TMA unit writes it: rows of box[0] elements, in order
   * of (c1, c2); zeros past the dims; with the swizzle, piece p of row r
   * (r counted from dst, which the caller keeps on a 1024-byte atom of
   * its struct, as gk_wgmma_desc_sw128's twin counts from the struct) at
   * piece p ^ (r % 8). */
  gk_tmap_emu e;
  memcpy(&e, map, sizeof e);
  const gk_tmap_fields &f = e.f;
  if ((uintptr_t)dst % 128u != 0u) gk_emu_fault("TMA destination not 128-byte aligned", (uintptr_t)dst);
  if (f.swizzle128 && f.box[0] * 2u != 128u) gk_emu_fault("TMA swizzle with rows not of 128 bytes", f.box[0]);
  const size_t row = (size_t)f.box[0] * 2u, n = row * f.box[1] * f.box[2];
  unsigned char *box = (unsigned char *)calloc(n, 1);
  for (uint32_t z = 0; z < f.box[2]; z++)
    for (uint32_t y = 0; y < f.box[1]; y++) {
      const size_t r = (size_t)z * f.box[1] + y;
      for (uint32_t x = 0; x < f.box[0]; x++) {
        const int64_t g0 = (int64_t)c0 + x, g1 = (int64_t)c1 + y, g2 = (int64_t)c2 + z;
        if (g0 < 0 || g1 < 0 || g2 < 0 || g0 >= f.dim[0] || g1 >= f.dim[1] || g2 >= f.dim[2])
          continue;
        size_t at = r * row + 2u * x;
        if (f.swizzle128) at = r * row + ((at % row / 16u) ^ (r % 8u)) * 16u + at % 16u;
        memcpy(box + at,
               (const unsigned char *)f.base + g2 * f.stride[1] + g1 * f.stride[0] + 2 * g0, 2);
      }
    }
  gk_emu_tma(dst, box, (unsigned)n, bar);
  free(box);
#else
  (void)dst, (void)map, (void)c0, (void)c1, (void)c2, (void)bar;
#endif
}

#endif /* GK_TMA_CUH */
