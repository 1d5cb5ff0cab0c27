/*
 * flash_attention.cuh - attention with an online softmax over key tiles
 * (docs/kernels.md), on GPUs. Template: causal mask, element type (gk_f32,
 * gk_f16 or gk_bf16: gk_gpu.cuh's tags), head dimension D (64 or 128).
 *
 * Launch: blocks of FA_THREADS threads (or FA_MAX_THREADS, where an image
 * takes more: below), grid (ceil(sq / FA_BLOCK_ROWS), n_heads), or
 * smaller (blocks loop over the query blocks and heads it leaves). Block
 * (x, h) owns query block x of head h, rows
 * [x*FA_BLOCK_ROWS, +FA_BLOCK_ROWS), counted from the end when causal (the
 * heaviest first). Causal (bottom-right aligned): query row i may see key
 * j <= i + skv - sq; key tiles past the last key any row of the block may
 * see are not loaded.
 *
 * Online softmax per query row: running max mx, running sum l and output
 * accumulator o; a tile with new maximum mx' rescales l and o by
 * exp(mx - mx') before adding exp(s - mx') and exp(s - mx') * v. At the end
 * o / l is rounded to the element type once; a row with no allowed key
 * (causal and sq > skv) has l = 0 and is written as zeros.
 *
 * f16 and bf16: tensor cores, FlashAttention-2's schedule, and for decode
 * (a KV head's queries in one 16-row fragment) the heads sharing a KV head
 * packed together and the keys split over the block's warps: fa_mma.cuh.
 * Turing (sm_75) has no bf16 mma: its bf16 image runs the scalar path.
 *
 * f32: no tensor-core path keeps f32's precision (tf32 rounds inputs to 10
 * bits), so the f32 variant runs the scalar FMA path (elements converted
 * to f32 as they are loaded, rounded once as they are stored): groups of 32 lanes,
 * lane j scores key j of a 32-key tile, lane l accumulates output
 * dimensions l, l+32, ...; Q tile FA_ROWS x D, K tile 32 x (D+1) and V
 * tile 32 x D in shared memory (40.6 KB for D = 128, 20.4 KB for D = 64).
 */
#ifndef GK_FLASH_ATTENTION_CUH
#define GK_FLASH_ATTENTION_CUH

#include "gk_gpu.cuh"

#define FA_THREADS 128
/* The largest block an image takes. The prefill on wgmma (fa_wgmma.cuh)
 * runs a warpgroup a 128 threads of the block, up to two (blocks of 256,
 * where its launch row asks for them), and in the warp-specialized image
 * (GK_FA_WS_ON) a producer warpgroup past them (blocks of 384). Every
 * other schedule (decode, the mma.sync prefill, the scalar path) is the
 * first FA_THREADS threads' alone, whatever the block: the others skip it
 * (gk_fa_walk), and its barriers are gk_fa_sync's, among FA_THREADS
 * threads (a named barrier where blocks may be larger), so that they do
 * not wait for the threads that skip. */
#if GK_FA_WS_ON || defined(GK_GPU_EMULATE)
#define FA_WS_ANY 1 /* blocks of FA_WS_THREADS may come */
#define FA_MAX_THREADS (3 * FA_THREADS) /* FA_WS_THREADS */
#elif GK_FA_WGMMA_ON
#define FA_WS_ANY 0
#define FA_MAX_THREADS (2 * FA_THREADS)
#else
#define FA_WS_ANY 0
#define FA_MAX_THREADS FA_THREADS
#endif
/* Blocks an SM should hold, __launch_bounds__'s second argument: 2 leaves
 * ptxas up to 255 registers a thread, where without it ptxas 13.0 kept
 * the sm_90a non-causal image at 168 and spilled (cuda.ptxas); blocks of
 * 256 get 255 with 1, blocks of 384 168 (which setmaxnreg redistributes:
 * fa_wgmma.cuh). HIP reads the argument as waves per execution
 * unit: 1 there. */
#if defined(GK_GPU_NVIDIA) && FA_MAX_THREADS == FA_THREADS
#define FA_MIN_BLOCKS 2
#else
#define FA_MIN_BLOCKS 1
#endif
#define FA_GROUPS (FA_THREADS / GK_GROUP)
#define FA_BLOCK_ROWS 64           /* query rows per block (the launch's) */
#define FA_ROWS 16                 /* query rows per pass, f32 path */
#define FA_RPG (FA_ROWS / FA_GROUPS) /* query rows per group */
#define FA_KEYS GK_GROUP           /* keys per tile: one per lane */

/* A thread's warpgroup (FA_THREADS threads) and its index in it: the
 * schedules of one warpgroup (above) run on the first, and a decode on
 * each warpgroup that walks (gk_fa_walk_mma), each as a block of its own. */
GK_DEV int gk_fa_wg(void) { return (int)(threadIdx.x / FA_THREADS); }
GK_DEV int gk_fa_tid(void) { return (int)(threadIdx.x % FA_THREADS); }

/* The barrier of the calling thread's warpgroup, and whether pred holds in
 * any of its threads (a barrier too): named barrier FA_BAR_FIRST + its
 * warpgroup where blocks may be larger (fa_wgmma.cuh numbers the others
 * from FA_BAR_FIRST + 1, for its own schedules: a launch takes either). */
#define FA_BAR_FIRST 1
GK_DEV void gk_fa_sync(void) {
#if FA_MAX_THREADS > FA_THREADS
  gk_bar_sync<FA_THREADS>(FA_BAR_FIRST + gk_fa_wg());
#else
  __syncthreads();
#endif
}
GK_DEV bool gk_fa_any(bool pred) {
#if FA_MAX_THREADS > FA_THREADS
  return gk_bar_any<FA_THREADS>(FA_BAR_FIRST + gk_fa_wg(), pred);
#else
  return gk_block_any(pred);
#endif
}

/* Causal: the keys that query rows [row0, row0 + rows) may see are [0, kend). */
GK_DEV int64_t gk_fa_kend(int Causal, int64_t sq, int64_t skv, int64_t row0, int rows) {
  if (!Causal) return skv;
  const int64_t last = (row0 + rows < sq ? row0 + rows : sq) - 1;
  const int64_t lim = last + (skv - sq) + 1;
  return lim < 0 ? 0 : (lim < skv ? lim : skv);
}

#include "fa_mma.cuh"
#include "fa_wgmma.cuh"

/* The prefill's schedules on wgmma, by the block's size (gk_fa_walk_mma):
 * one warpgroup (128 threads, 64 query rows), two (256, 128 rows: the
 * block's barriers), two fed by a producer warpgroup (FA_WS_THREADS, 128
 * rows: named barriers). Over pages, one warpgroup: the table's addressing
 * leaves no registers for a second schedule in the same kernel (ptxas
 * spills), and a paged prefill is the rarer case (decodes take
 * gk_fa_mma_decode). */
enum { FA_WG_ONE = 1, FA_WG_TWO = 2, FA_WG_WS = 3 };
template <class H, class KV>
GK_DEV int gk_fa_wg_schedule(void) {
  if (!H::wgmma || KV::paged) return FA_WG_ONE;
  if (GK_FA_WS_ON) return FA_WG_WS; /* the image's only blocks (gk_flash_attention) */
  if (FA_WS_ANY && blockDim.x >= FA_WS_THREADS) return FA_WG_WS;
  return blockDim.x >= 2 * FA_THREADS ? FA_WG_TWO : FA_WG_ONE;
}

/* The consumers' side of the warp-specialized schedule, overlapped
 * (H::ws_overlap) or not: one of the two is instantiated, as only the
 * overlapped image has its stages. */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_ws_consumer(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                              int64_t sq, float scale, int64_t h, int64_t row0, gk_bool<true>) {
  gk_fa_wo_consume<Causal, D, H>(sm, q, kv, o, sq, scale, h, row0);
}
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_ws_consumer(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                              int64_t sq, float scale, int64_t h, int64_t row0, gk_bool<false>) {
  gk_fa_ws_consume<Causal, D, H>(sm, q, kv, o, sq, scale, h, row0);
}

/* A prefill block on wgmma (H::wgmma, schedule `sched`) or on mma.sync. */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                          int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale, int64_t h,
                          int64_t row0, int sched, gk_bool<true>) {
  /* Uniform over the grid; the paged kernels instantiate one schedule. */
  if (FA_WS_ANY && !KV::paged && sched == FA_WG_WS) /* the consumers' side */
    gk_fa_ws_consumer<Causal, D, H>(sm, q, kv, o, sq, scale, h, row0,
                                    gk_bool<(bool)H::ws_overlap>());
  else if (!KV::paged && sched == FA_WG_TWO)
    gk_fa_wg_prefill<Causal, D, KV::paged ? 1 : 2, H>(sm, q, kv, o, n_heads, n_kv_heads, sq,
                                                       scale, h, row0);
  else
    gk_fa_wg_prefill<Causal, D, 1, H>(sm, q, kv, o, n_heads, n_kv_heads, sq, scale, h, row0);
}
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_prefill(gk_fa_smem<D> &sm, const uint16_t *q, const KV &kv, uint16_t *o,
                          int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale, int64_t h,
                          int64_t row0, int, gk_bool<false>) {
  gk_fa_mma_prefill<Causal, D, H>(sm, q, kv, o, n_heads, n_kv_heads, sq, scale, h, row0,
                                  gk_bool<(bool)gk_fa_mma_shape<D, KV>::QSMEM>());
}

/* The block's shared memory as a T, one object per T and kernel (the
 * tensor-core paths' gk_fa_smem, the f32 path's gk_fa_f32_smem). Static,
 * but in the images whose shared memory is over static shared memory's
 * 48 KB (GK_FA_DYN_SMEM: the overlapped warp-specialized ones, up to 208
 * KB, and 64-key tiles of the prefill with Q in shared memory): there the
 * launch row's `shared` gives it, and a launch that gives less traps
 * (%dynamic_smem_size). The f32 path's 41 KB lie there too, so that they
 * and the launch row's `shared` need not fit a block's 227 KB together. */
template <class T>
GK_DEV T &gk_fa_shared(void) {
#if GK_FA_DYN_SMEM
  /* 1024: the 128-byte swizzle's atoms (-DGK_FA_WGMMA=4's stages,
   * fa_wgmma.cuh's gk_fa_wo<D, 2, C>) start on 1024-byte boundaries. */
  extern __shared__ __attribute__((aligned(GK_FA_WS_OVERLAP_ON == 2 ? 1024 : 16)))
      unsigned char gk_fa_dyn[];
  uint32_t dyn;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  if (dyn < sizeof(T)) __trap(); /* its launch row's `shared` only */
  return *reinterpret_cast<T *>(gk_fa_dyn);
#else
  __shared__ __attribute__((aligned(16))) T sm;
  return sm;
#endif
}

/* The f32 path's tiles (gk_fa_block). */
template <int D>
struct gk_fa_f32_smem {
  float q[FA_ROWS][D], k[FA_KEYS][D + 1], v[FA_KEYS][D];
};

/* Query rows [row0, row0 + FA_ROWS) of head h against kv (fa_mma.cuh's
 * locators), by the whole block; elements of type Dt. */
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_block(const typename Dt::elem *q, const KV &kv, typename Dt::elem *o,
                        int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale, int64_t h,
                        int64_t row0) {
  static_assert(D % GK_GROUP == 0, "head_dim must be a multiple of 32");
  constexpr int DPL = D / GK_GROUP; /* output dimensions per lane */
  gk_fa_f32_smem<D> &f32 = gk_fa_shared<gk_fa_f32_smem<D>>();
  float(&sq_t)[FA_ROWS][D] = f32.q;
  float(&sk_t)[FA_KEYS][D + 1] = f32.k;
  float(&sv_t)[FA_KEYS][D] = f32.v;

  const int tid = (int)threadIdx.x, lane = gk_lane(), grp = gk_group();
  const int64_t hk = h / (n_heads / n_kv_heads), skv = kv.n;
  const int64_t off = skv - sq; /* causal: row i sees keys j <= i + off */

  const int64_t kend = gk_fa_kend(Causal, sq, skv, row0, FA_ROWS);

  gk_fa_sync(); /* the previous block's rows are no longer read */
  for (int e = tid; e < FA_ROWS * D; e += FA_THREADS) {
    const int r = e / D, c = e % D;
    const int64_t row = row0 + r;
    sq_t[r][c] = row < sq ? Dt::load(q[(h * sq + row) * D + c]) : 0.0f;
  }

  float mx[FA_RPG], l[FA_RPG], acc[FA_RPG][DPL];
  for (int rr = 0; rr < FA_RPG; rr++) {
    mx[rr] = -INFINITY;
    l[rr] = 0.0f;
    for (int c = 0; c < DPL; c++) acc[rr][c] = 0.0f;
  }

  for (int64_t k0 = 0; k0 < kend; k0 += FA_KEYS) {
    gk_fa_sync(); /* the previous tile is no longer read */
    for (int e = tid; e < FA_KEYS * D; e += FA_THREADS) {
      const int r = e / D, c = e % D;
      const int64_t key = k0 + r;
      const bool in = key < skv;
      const int64_t at = in ? gk_kv_row(kv, hk, key) + c : 0;
      sk_t[r][c] = in ? Dt::load(kv.k[at]) : 0.0f;
      sv_t[r][c] = in ? Dt::load(kv.v[at]) : 0.0f;
    }
    gk_fa_sync();

#pragma unroll
    for (int rr = 0; rr < FA_RPG; rr++) {
      const int r = grp * FA_RPG + rr;
      const int64_t row = row0 + r;
      if (row >= sq) continue; /* uniform over the group */
      const int64_t key = k0 + lane;
      const bool allowed = key < skv && (!Causal || key <= row + off);
      float s = 0.0f;
      for (int c = 0; c < D; c++) s = fmaf(sq_t[r][c], sk_t[lane][c], s);
      s = allowed ? s * scale : -INFINITY;
      const float tmax = gk_group_max(s);
      if (tmax == -INFINITY) continue; /* no allowed key here; uniform */
      const float mnew = fmaxf(mx[rr], tmax);
      const float p = allowed ? expf(s - mnew) : 0.0f;
      const float alpha = expf(mx[rr] - mnew); /* 0 on the first tile */
      l[rr] = l[rr] * alpha + gk_group_sum(p);
      for (int c = 0; c < DPL; c++) acc[rr][c] *= alpha;
      const gk_lanes<float, 1> pl(&p);
#pragma unroll 8
      for (int j = 0; j < FA_KEYS; j++) {
        const float pj = pl.get(0, j);
        for (int c = 0; c < DPL; c++)
          acc[rr][c] = fmaf(pj, sv_t[j][lane + c * GK_GROUP], acc[rr][c]);
      }
      mx[rr] = mnew;
    }
  }

#pragma unroll
  for (int rr = 0; rr < FA_RPG; rr++) {
    const int64_t row = row0 + grp * FA_RPG + rr;
    if (row >= sq) continue;
    const float inv = l[rr] > 0.0f ? 1.0f / l[rr] : 0.0f;
    for (int c = 0; c < DPL; c++)
      o[(h * sq + row) * D + lane + c * GK_GROUP] = Dt::store(acc[rr][c] * inv);
  }
}


/*
 * The workspace a call gives the cross-block split of decodes (docs/
 * kernels.md): `units` counters (one per sequence and KV head; zero before
 * the first call, and each call leaves them zero), padded to 16 bytes, then
 * `splits` slots of GK_FA_SLOT(D) floats per unit, as many as ws_bytes
 * holds. splits 0: no workspace (NULL, or too small for one slot a unit),
 * so no split across blocks.
 */
struct gk_fa_ws {
  unsigned *count;
  float *slots;
  int64_t splits;
};
template <int D>
GK_DEV gk_fa_ws gk_fa_ws_of(void *ws, int64_t ws_bytes, int64_t units) {
  gk_fa_ws w = {nullptr, nullptr, 0};
  const int64_t cbytes = (units * 4 + 15) / 16 * 16, slot = (int64_t)GK_FA_SLOT(D) * 4;
  if (ws == nullptr || units <= 0 || ws_bytes < cbytes + units * slot) return w;
  w.count = (unsigned *)ws;
  w.slots = (float *)((char *)ws + cbytes);
  w.splits = (ws_bytes - cbytes) / (units * slot);
  return w;
}
/* Sequence s's part of it (n_kv_heads units a sequence). */
template <int D>
GK_DEV gk_fa_ws gk_fa_ws_seq(const gk_fa_ws &w, int64_t s, int64_t n_kv_heads) {
  if (w.splits == 0) return w;
  const gk_fa_ws r = {w.count + s * n_kv_heads,
                      w.slots + s * n_kv_heads * w.splits * GK_FA_SLOT(D), w.splits};
  return r;
}

/* Keys a block of a split decode takes at least (whole tiles): enough to
 * keep the merge's bytes a few percent of the K and V it reads. */
#define FA_SPLIT_KEYS 256
/* The most splits of a KV head (2^24 x 256 keys, far past any context). */
#define FA_SPLITS_MAX (1 << 24)

/* A decode: a KV head's packed query rows (every head that shares it, sq
 * each) fit 4 fragments of 16 rows (decode, and speculative decode of up
 * to 16 tokens at GQA 4:1), each a unit of blocks of its own; past that a
 * prefill's query blocks of 64 or 128 rows waste less. */
#define FA_DECODE_ROWS 64
GK_DEV bool gk_fa_is_decode(int64_t n_heads, int64_t n_kv_heads, int64_t sq) {
  return (n_heads / n_kv_heads) * sq <= FA_DECODE_ROWS;
}
/* The fragments of 16 rows a decode's state takes (a split's slots). */
GK_DEV int gk_fa_decode_frags(int64_t n_heads, int64_t n_kv_heads, int64_t sq) {
  return (int)(((n_heads / n_kv_heads) * sq + 15) / 16);
}

/* A causal prefill's query blocks in the order the grid takes them
 * (gk_fa_lpt_on: over a contiguous cache; the other walks take query
 * blocks x, x + gridDim.x, ... of heads y, y + gridDim.y, ...). The last query
 * blocks see the most keys, and the GPU starts blocks in blockIdx order:
 * item t = y gridDim.x + x, t + gridDim.x gridDim.y, ...
 * of the nqb x n_heads, the heaviest query block of every head of a
 * section first, then the next lighter of each, ..., so the light ones fill
 * the launch's tail (FlashAttention's "longest processing time first",
 * its SingleTileLPTScheduler). Walking head after head, each heaviest
 * first, left the last heads' heavy blocks to start when the others were
 * nearly done: a list-scheduling model of 32 query blocks x 32 heads on
 * 132 SMs puts that at 0.88 of the launch busy, 0.99 in this order (8
 * blocks x 32 heads, a 1024-token prefill: 0.62 and 0.97). A section is
 * `sec` heads whose K and V L2 holds together (gk_fa_section_heads), so
 * that the blocks in flight, which all read their heads' keys from the
 * first, share them there; the last section has the heads left. */
struct gk_fa_qblock {
  int64_t h, qb;
};
GK_DEV gk_fa_qblock gk_fa_lpt_item(uint32_t t, uint32_t nqb, uint32_t n_heads, uint32_t sec) {
  const uint32_t h0 = t / (sec * nqb) * sec;                    /* t's section's first head */
  const uint32_t ns = n_heads - h0 < sec ? n_heads - h0 : sec; /* its heads */
  const uint32_t r = t - h0 * nqb;                              /* t's place in it */
  const gk_fa_qblock b = {(int64_t)(h0 + r % ns), (int64_t)(nqb - 1 - r / ns)};
  return b;
}

/* What the blocks in flight of a causal prefill should read of K and V
 * together, so that L2 keeps it for the lighter query blocks after:
 * about half the L2 of the parts an image runs on (40 to 50 MB on A100,
 * H100 and H200, 48 to 126 MB on sm_89, sm_100 and sm_120 parts; 4 to 6 MB
 * on T4, A10, RTX 30 and Orin, the sm_75 and sm_86 images, and 4 to 8 MB
 * of L2 an XCD on ROCm). A wrong guess costs DRAM reads, never a result. */
#ifndef GK_FA_L2_BYTES
#if defined(__HIPCC__) || \
    (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800 || __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870))
#define GK_FA_L2_BYTES (3 << 20)
#else
#define GK_FA_L2_BYTES (24 << 20)
#endif
#endif
/* The heads of a section: the query heads of as many KV heads as
 * GK_FA_L2_BYTES holds the keys and values of (ES bytes an element), at
 * least one, at most all. */
template <int D, int ES>
GK_DEV int64_t gk_fa_section_heads(int64_t n_heads, int64_t n_kv_heads, int64_t skv) {
  constexpr int64_t ROW = 2 * D * ES; /* a key's K and V */
  int64_t k = skv == 0                             ? n_kv_heads
              : skv > (int64_t)GK_FA_L2_BYTES / ROW ? 1
                                                   : (int64_t)GK_FA_L2_BYTES / (skv * ROW);
  if (k > n_kv_heads) k = n_kv_heads;
  if (k < 1) k = 1;
  return k * (n_heads / n_kv_heads);
}
/* Whether a prefill walks in gk_fa_lpt_item's order: causal, over one
 * contiguous cache. Not causal, every block does the same work, and the
 * walks keep their nested loops over heads and query blocks. A paged
 * prefill (paged_attention: sq tokens appended to each sequence's cache)
 * keeps them too, each head's heaviest first: its rows see nearly the
 * same keys where the cache is long, and the order's state cost sm_90,
 * sm_90a and sm_120's head_dim-128 paged images 16 bytes of spill each
 * (ptxas 13.0). */
template <int Causal, class KV>
GK_DEV constexpr bool gk_fa_lpt_on(void) {
  return Causal && !KV::paged;
}
/* A causal prefill's walk over its nqb x n_heads items: this block's
 * first item and the heads of a section; the step, the grid's blocks
 * (gk_fa_lpt_step). The producer's walk (gk_fa_ws_walk) and the
 * consumers' (gk_fa_walk_mma) take the same items in the same order
 * through them. In 32 bits, since 64-bit indices and divisions cost
 * sm_100's head_dim-128 images 36 to 52 bytes of spill (ptxas 13.0; what
 * the loop keeps across a query block pushed them past 255 registers, so
 * the count and step are recomputed, not kept): the grid's first 2^30
 * blocks walk (the others, if any, none), so that no index passes 2^32,
 * and a prefill of 2^31 query blocks or more (n_heads x sq past 2^37
 * rows, 16 TB of Q at head_dim 64 in f16: past any GPU's memory) is
 * walked by none (first 2^32 - 1, past every item). */
#define FA_LPT_WALKERS ((int64_t)1 << 30)
GK_DEV uint32_t gk_fa_lpt_step(void) {
  const int64_t grid = (int64_t)gridDim.x * gridDim.y;
  return (uint32_t)(grid < FA_LPT_WALKERS ? grid : FA_LPT_WALKERS);
}
struct gk_fa_lpt {
  uint32_t first, sec;
};
template <int D, int ES>
GK_DEV gk_fa_lpt gk_fa_lpt_of(int64_t n_heads, int64_t n_kv_heads, int64_t skv, int64_t nqb) {
  constexpr int64_t MAX = (int64_t)1 << 31;
  const int64_t first = (int64_t)blockIdx.y * gridDim.x + blockIdx.x;
  gk_fa_lpt w = {0xffffffffu, 1}; /* no item */
  if (n_heads < MAX && nqb < MAX && nqb * n_heads < MAX && first < FA_LPT_WALKERS) {
    w.first = (uint32_t)first;
    w.sec = (uint32_t)gk_fa_section_heads<D, ES>(n_heads, n_kv_heads, skv);
  }
  return w;
}

/* The block's shared memory for the tensor-core paths (gk_fa_shared),
 * which the producer's walk and the others' share. */
template <int D>
GK_DEV gk_fa_smem<D> &gk_fa_sm(void) {
  return gk_fa_shared<gk_fa_smem<D>>();
}

/* The warpgroups of a block that run a decode, each a block of its own
 * (gk_fa_walk_mma): those that reach the walk (the warp-specialized
 * image's two consumers, not its producer: gk_flash_attention), as many
 * as the image's shared memory holds decode stages for (gk_fa_dsmem: 48
 * KB each; two in the 208 KB of -DGK_FA_WGMMA=4's image, one elsewhere).
 * There one block an SM runs, and on one warpgroup a decode took 25.0 us
 * where the default image's two blocks an SM take 18.5 (H200,
 * 2026-11-29): so a decode does not slow the image that has the fastest
 * prefill. */
template <int D, int ST>
GK_DEV int gk_fa_decode_wgs(void) {
  constexpr int fit = (int)(sizeof(gk_fa_smem<D>) / sizeof(gk_fa_dsmem<D, ST>));
  const int walk = FA_WS_ANY && blockDim.x == FA_WS_THREADS ? 2 : (int)blockDim.x / FA_THREADS;
  return walk < fit ? walk : fit;
}

/* The grid's walk over one sequence's queries q and o ([n_heads][sq][D])
 * and its keys and values kv, on tensor cores (fa_mma.cuh; H gk_f16 or
 * gk_bf16): a prefill's query blocks x, x + gridDim.x, ... of heads y,
 * y + gridDim.y, ... (causal, each head's heaviest first), or where
 * gk_fa_lpt_on, gk_fa_lpt_item's (the heaviest of all heads first). A
 * decode (every query of a KV head's heads in at most 4 fragments of 16
 * rows, gk_fa_is_decode) is cut into units instead,
 * (KV head, split, block of fragments: all of them on mma.sync and in the
 * images of -DGK_FA_WGMMA=4, one in the other wgmma images,
 * gk_fa_mma_decode): n splits of at least FA_SPLIT_KEYS keys each,
 * as many as the keys and the workspace (frags slots a split) allow (never
 * more, whatever the grid: the results do not depend on it), unit u to
 * block u, u + blocks, ... in the x-fastest order of (x, y).
 * Uniform over the block, so every barrier inside is reached by all. */
template <int Causal, int D, class H, class KV>
GK_DEV void gk_fa_walk_mma(const uint16_t *q, const KV &kv, uint16_t *o, int64_t n_heads,
                           int64_t n_kv_heads, int64_t sq, float scale, const gk_fa_ws &ws) {
  typedef gk_fa_dsmem<D, H::dec_stages> S;
  gk_fa_smem<D> &sm = gk_fa_sm<D>();
  if (gk_fa_is_decode(n_heads, n_kv_heads, sq)) {
    /* Each walking warpgroup (gk_fa_decode_wgs) a block of its own: its
     * share of the shared memory, its barrier, its units. */
    const int wgs = gk_fa_decode_wgs<D, H::dec_stages>(), wg = gk_fa_wg();
    if (wg >= wgs) return;
    S &dm = gk_fa_dsm<H::dec_stages>(sm, wg); /* sm.d, and as many again past it */
    const int frags = gk_fa_decode_frags(n_heads, n_kv_heads, sq);
    const int64_t kend = gk_fa_kend(Causal, sq, kv.n, 0, (int)sq);
    const int64_t tiles = (kend + S::KEYS - 1) / S::KEYS;
    const int64_t per = FA_SPLIT_KEYS / S::KEYS; /* tiles a split takes at least */
    int64_t n = (tiles + per - 1) / per;
    if (n > ws.splits / frags) n = ws.splits / frags;
    if (n > FA_SPLITS_MAX) n = FA_SPLITS_MAX;
    if (n < 1) n = 1;
    /* Fragments a block: all (mma.sync, and the warp-specialized images
     * with Q in shared memory, whose consumers have 232 registers), or
     * one (the other wgmma images: gk_fa_mma_decode) */
    constexpr bool ONE = H::wgmma && H::ws_overlap != 2;
    const int fb = ONE ? 1 : frags, blocks = frags / fb;
    const int64_t units = n_kv_heads * n * blocks,
                  walkers = (int64_t)gridDim.x * gridDim.y * wgs;
    for (int64_t u = ((int64_t)blockIdx.y * gridDim.x + blockIdx.x) * wgs + wg; u < units;
         u += walkers) {
      /* (split, block of fragments) in 32 bits: a 64-bit division is a call */
      const unsigned sb = (unsigned)(u / n_kv_heads);
      const int64_t hk = u % n_kv_heads, i = sb / (unsigned)blocks;
      const int f0 = (int)(sb % (unsigned)blocks) * fb;
      const int64_t kb = tiles * i / n * S::KEYS, ke = tiles * (i + 1) / n * S::KEYS;
      const gk_fa_split sp = {n, i, ws.count ? ws.count + hk : nullptr,
                              ws.slots ? ws.slots + hk * ws.splits * GK_FA_SLOT(D) : nullptr,
                              blocks};
      const int64_t e = ke < kend ? ke : kend;
      if (fb == 1) /* ONE's images; the others' decodes of up to 16 rows */
        gk_fa_mma_decode<Causal, D, H, 1>(dm, q, kv, o, n_heads, n_kv_heads, sq, scale, hk, kb,
                                          e, sp, f0, 1);
      else if (!ONE)
        gk_fa_mma_decode<Causal, D, H, FA_GROUPS>(dm, q, kv, o, n_heads, n_kv_heads, sq, scale,
                                                  hk, kb, e, sp, f0, fb);
      if (n > 1) gk_fa_split_done<D, H>(sp, o, hk, n_heads / n_kv_heads, sq); /* uniform */
    }
    return;
  }
  const int sched = gk_fa_wg_schedule<H, KV>();
  /* The threads of the schedule (the producer's walk is gk_fa_ws_walk). */
  const int used = sched == FA_WG_WS ? 2 * FA_THREADS : sched * FA_THREADS;
  if ((int)threadIdx.x >= used) return; /* past the schedule's threads */
  const int R = !H::wgmma ? (int)gk_fa_mma_shape<D, KV>::ROWS /* a block's rows */
                          : sched == FA_WG_ONE ? FA_BLOCK_ROWS : 2 * FA_BLOCK_ROWS;
  const int64_t nqb = (sq + R - 1) / R;
  if (!gk_fa_lpt_on<Causal, KV>()) {
    for (int64_t h = blockIdx.y; h < n_heads; h += gridDim.y)
      for (int64_t x = blockIdx.x; x < nqb; x += gridDim.x) {
        const int64_t qb = Causal ? nqb - 1 - x : x; /* each head's heaviest first */
        gk_fa_prefill<Causal, D, H>(sm, q, kv, o, n_heads, n_kv_heads, sq, scale, h, qb * R,
                                    sched, gk_bool<(bool)H::wgmma>());
      }
    return;
  }
  const gk_fa_lpt w = gk_fa_lpt_of<D, 2>(n_heads, n_kv_heads, kv.n, nqb);
  for (uint32_t t = w.first; t < (uint32_t)nqb * (uint32_t)n_heads; t += gk_fa_lpt_step()) {
    const gk_fa_qblock b = gk_fa_lpt_item(t, (uint32_t)nqb, (uint32_t)n_heads, w.sec);
    gk_fa_prefill<Causal, D, H>(sm, q, kv, o, n_heads, n_kv_heads, sq, scale, b.h, b.qb * R,
                                sched, gk_bool<(bool)H::wgmma>());
  }
}
/* The scalar path (f32, and bf16 on sm_75), without a cross-block split
 * (the workspace is not used). */
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_walk_fma(const typename Dt::elem *q, const KV &kv, typename Dt::elem *o,
                           int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale) {
  if (threadIdx.x >= FA_THREADS) return; /* the first warpgroup's */
  for (int64_t h = blockIdx.y; h < n_heads; h += gridDim.y)
    for (int64_t qb = blockIdx.x; qb * FA_BLOCK_ROWS < sq; qb += gridDim.x)
      for (int64_t r = qb * FA_BLOCK_ROWS; r < (qb + 1) * FA_BLOCK_ROWS && r < sq; r += FA_ROWS)
        gk_fa_block<Causal, D, Dt>(q, kv, o, n_heads, n_kv_heads, sq, scale, h, r);
}
/* Tensor cores for the 16-bit types that have them here (Dt::half), the
 * scalar path for the rest: one of the two is instantiated. */
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_walk(const typename Dt::elem *q, const KV &kv, typename Dt::elem *o,
                       int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                       const gk_fa_ws &ws, gk_bool<true>) {
  gk_fa_walk_mma<Causal, D, Dt>(q, kv, o, n_heads, n_kv_heads, sq, scale, ws);
}
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_walk(const typename Dt::elem *q, const KV &kv, typename Dt::elem *o,
                       int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                       const gk_fa_ws &, gk_bool<false>) {
  gk_fa_walk_fma<Causal, D, Dt>(q, kv, o, n_heads, n_kv_heads, sq, scale);
}
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_walk(const typename Dt::elem *q, const KV &kv, typename Dt::elem *o,
                       int64_t n_heads, int64_t n_kv_heads, int64_t sq, float scale,
                       const gk_fa_ws &ws) {
  gk_fa_walk<Causal, D, Dt>(q, kv, o, n_heads, n_kv_heads, sq, scale, ws,
                            gk_bool<(bool)Dt::half>());
}

/* The producer's side, overlapped (OV 1 or 2, gk_fa_wo) or not (as
 * gk_fa_ws_consumer). */
template <int Causal, int D, int ABL, class KV, int OV, int TMA>
GK_DEV void gk_fa_ws_producer(gk_fa_smem<D> &sm, const KV &kv, int64_t hk, int64_t sq,
                              int64_t row0, gk_int<OV>, gk_int<TMA>) {
  gk_fa_wo_produce<Causal, D, OV, KV, TMA, ABL>(sm, kv, hk, sq, row0);
}
template <int Causal, int D, int ABL, class KV, int TMA>
GK_DEV void gk_fa_ws_producer(gk_fa_smem<D> &sm, const KV &kv, int64_t hk, int64_t sq,
                              int64_t row0, gk_int<0>, gk_int<TMA>) {
  gk_fa_ws_produce<Causal, D>(sm, kv, hk, sq, row0);
}

/* The producer warpgroup's walk (blocks of FA_WS_THREADS, fa_wgmma.cuh):
 * the query blocks of gk_fa_walk_mma's, in its order, each a
 * gk_fa_ws_produce beside the consumers' gk_fa_ws_consume. Nothing for a
 * decode (the first warpgroup's) nor the scalar path. */
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_ws_walk(const KV &kv, int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                          gk_bool<true>) {
  if (gk_fa_is_decode(n_heads, n_kv_heads, sq)) return;
  gk_fa_smem<D> &sm = gk_fa_sm<D>();
  constexpr int R = 2 * FA_BLOCK_ROWS;
  const int64_t nqb = (sq + R - 1) / R;
  if (!gk_fa_lpt_on<Causal, KV>()) {
    for (int64_t h = blockIdx.y; h < n_heads; h += gridDim.y)
      for (int64_t x = blockIdx.x; x < nqb; x += gridDim.x)
        gk_fa_ws_producer<Causal, D, (int)Dt::ablate>(sm, kv, h / (n_heads / n_kv_heads), sq,
                                                      (Causal ? nqb - 1 - x : x) * R,
                                                      gk_int<(int)Dt::ws_overlap>(),
                                                      gk_int<(int)Dt::tma>());
    return;
  }
  const gk_fa_lpt w = gk_fa_lpt_of<D, 2>(n_heads, n_kv_heads, kv.n, nqb);
  for (uint32_t t = w.first; t < (uint32_t)nqb * (uint32_t)n_heads; t += gk_fa_lpt_step()) {
    const gk_fa_qblock b = gk_fa_lpt_item(t, (uint32_t)nqb, (uint32_t)n_heads, w.sec);
    gk_fa_ws_producer<Causal, D, (int)Dt::ablate>(sm, kv, b.h / (n_heads / n_kv_heads), sq,
                                                  b.qb * R, gk_int<(int)Dt::ws_overlap>(),
                                                  gk_int<(int)Dt::tma>());
  }
}
template <int Causal, int D, class Dt, class KV>
GK_DEV void gk_fa_ws_walk(const KV &, int64_t, int64_t, int64_t, gk_bool<false>) {}

/* The end of a block, by every thread: gives back the TMA producer's slot
 * where it took one (gk_fa_tma_end; nothing where tma_slot is -1). */
GK_DEV void gk_fa_ws_end(int tma_slot) {
#if GK_FA_TMA_CODE
  gk_fa_tma_end(tma_slot);
#endif
  (void)tma_slot;
}

template <int Causal, class Dt, int D>
GK_DEV void gk_flash_attention(const void *q, const void *k, const void *v, void *o,
                               int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                               int64_t skv, float scale, void *ws, int64_t ws_bytes) {
  if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || sq <= 0 ||
      skv < 0)
    return; /* uniform over the grid */
  typedef typename Dt::elem T;
  const gk_kv_contig<T> kv = {(const T *)k, (const T *)v, skv, D};
  /* Blocks of FA_WS_THREADS: the producer warpgroup walks apart from the
   * start, so that ptxas compiles its code within the registers it keeps
   * and the rest within the consumers' (a path that joined both would get
   * the fewer). The warp-specialized image takes no other block size. */
  typedef gk_bool<(bool)(Dt::half && Dt::wgmma)> ws_path;
  /* The TMA producer's slot (GK_FA_TMA_ON; the emulator's blocks of
   * FA_WS_THREADS whose Dt has tma): -1 where it copies by cp.async. */
  int tma_slot = -1;
#if GK_FA_TMA_CODE
  if constexpr ((bool)Dt::tma) {
    if (blockDim.x == FA_WS_THREADS) /* uniform */
      tma_slot = gk_fa_tma_begin<Causal, D>(gk_fa_sm<D>(), kv, n_kv_heads,
                                            !gk_fa_is_decode(n_heads, n_kv_heads, sq));
  }
#endif
#if GK_FA_WS_ON
  if (blockDim.x != FA_WS_THREADS) __trap(); /* its launch row's blocks only */
  if (gk_group() >= 2 * FA_GROUPS) {
    gk_setmaxnreg_dec<FA_WS_PRODUCER_REGS>();
    gk_fa_ws_walk<Causal, D, Dt>(kv, n_heads, n_kv_heads, sq, ws_path());
    gk_fa_ws_end(tma_slot);
    return;
  }
  gk_setmaxnreg_inc<FA_WS_CONSUMER_REGS>();
#elif defined(GK_GPU_EMULATE)
  if (blockDim.x == FA_WS_THREADS && gk_group() >= 2 * FA_GROUPS) {
    gk_fa_ws_walk<Causal, D, Dt>(kv, n_heads, n_kv_heads, sq, ws_path());
    gk_fa_ws_end(tma_slot);
    return;
  }
#endif
  gk_fa_walk<Causal, D, Dt>((const T *)q, kv, (T *)o, n_heads, n_kv_heads, sq, scale,
                            gk_fa_ws_of<D>(ws, ws_bytes, n_kv_heads));
  gk_fa_ws_end(tma_slot);
}

#endif /* GK_FLASH_ATTENTION_CUH */
