-- flash_attention.lua - attention with online softmax over key tiles
-- (docs/kernels.md): o = softmax(scale * q k^T) v, grouped-query heads,
-- optional bottom-right causal mask; f16, bf16 or f32 tensors.

-- The cuda sections' launch rows: blocks of 128 threads, query blocks of 64
-- rows (FA_THREADS, FA_BLOCK_ROWS), `shared` bytes of dynamic shared memory.
--
-- Grid x: the query blocks of a prefill, plus columns for a decode's
-- cross-block split, which cuts each KV head's keys in pieces of 256: a
-- column per 1024 keys gives the 4 query heads of a KV head (GQA 4:1)
-- one block per piece, for any sq up to 16 (a decode, or a speculative
-- one: sq / 16 rounds up to 1); other ratios loop or leave blocks idle,
-- both correct. Divided by the multiples of 16 in sq past that, so that
-- a prefill gets one idle column at most where skv <= 64 sq; no product
-- of two parameters and no divisor that can be 0, so that no value of
-- theirs makes the count fail. The query blocks are counted one short,
-- `sq / 64 - 1`, since the split's term is at least 1 wherever there are
-- keys: so a decode (sq <= 16) gets the split's columns alone, 8 at
-- skv = 8192, 256 blocks for 256 pieces (`sq / 64` added a ninth of idle
-- blocks), and a prefill of skv <= 64 sq its query blocks exactly (a count
-- below 1, sq = 0 or no keys, is raised to 1). A decode splits through the
-- workspace `ws` (docs/kernels.md: NULL runs without the split).
local function cuda_launch(shared)
  return {
    block  = { 128, 1, 1 },
    grid   = { "sq / 64 - 1 + skv / (1024 * (sq / 16) + 1)", "n_heads", 1 },
    shared = shared,
    params = { "q:ptr", "k:ptr", "v:ptr", "o:ptr", "n_heads:i64", "n_kv_heads:i64",
               "sq:i64", "skv:i64", "scale:f32", "ws:ptr", "ws_bytes:i64" },
  }
end

kernel "flash_attention" {
  params = { causal = { 0, 1 }, dtype = { "f16", "bf16", "f32" }, head_dim = { 64, 128 } },
  cpu {
    source  = "../kernelsrc/cpu/flash_attention.c",
    entry   = { "flash_attention" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
  -- sm_90a: the head_dim-128 prefill (Q in shared memory) on tiles of 64
  -- keys, FlashAttention-2's 128 x 64 for H100, in 64 KB of dynamic shared
  -- memory (-DGK_FA_QS_KEYS=64, kernelsrc/cuda/gk_gpu.cuh): on an H200,
  -- 325 to 328 TFLOP/s not causal against 32-key tiles' 286 to 288, 234 to
  -- 236 causal against 209 to 211, head_dim 64 within 1% (docs/gpu-speed.md,
  -- "Measured on an H200"). Measured on Hopper alone, where two such
  -- blocks an SM fit as before (sm_86 and sm_89 have 100 KB an SM).
  -- The same 64 KB hold a decode's ring of 4 tiles of 16 KB where the
  -- static 48 KB of the other targets hold 3 (-DGK_FA_DEC_STAGES=4: three
  -- tiles in flight while one is worked on). On an H200 (2026-11-30) a
  -- ring of 6 timed within 2% of it: what a block keeps in flight is not
  -- what holds the decode.
  cuda {
    source  = "../kernelsrc/cuda/flash_attention.cu",
    entry   = { "flash_attention" },
    targets = { "sm_90a" },
    flags   = { "-DGK_FA_QS_KEYS=64", "-DGK_FA_DEC_STAGES=4" },
    launch  = cuda_launch(65536),
  },
  -- Every other target (toolchains/nvcc.lua's defaults): tiles of 32 keys
  -- in static shared memory.
  cuda {
    source  = "../kernelsrc/cuda/flash_attention.cu",
    entry   = { "flash_attention" },
    launch  = cuda_launch(0),
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/flash_attention.hip includes it), so it launches as the cuda
  -- targets but sm_90a do, and its targets are hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030, Debian's clang-19 the newer
  -- targets (toolchains/hipclang.lua).
  rocm {
    source  = "../kernelsrc/hip/flash_attention.hip",
    entry   = { "flash_attention" },
    launch  = cuda_launch(0),
  },
  vulkan {
    source  = "../kernelsrc/vulkan/flash_attention.comp",
    entry   = { "flash_attention" },
    launch  = { -- tensors of dtype in u32 words (f16, bf16: two per word, low half first)
      local_size = { 64, 1, 1 },
      groups = { "sq", "n_heads", 1 },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "q", access = "read", elem = "dtype" },
        { set = 0, binding = 1, type = "storage_buffer", name = "k", access = "read", elem = "dtype" },
        { set = 0, binding = 2, type = "storage_buffer", name = "v", access = "read", elem = "dtype" },
        { set = 0, binding = 3, type = "storage_buffer", name = "o", access = "write", elem = "dtype" },
      },
      push_constants = {
        { name = "n_heads", offset = 0, type = "u32" },
        { name = "n_kv_heads", offset = 4, type = "u32" },
        { name = "sq", offset = 8, type = "u32" },
        { name = "skv", offset = 12, type = "u32" },
        { name = "scale", offset = 16, type = "f32" },
      },
    },
  },
  wgsl {
    source  = "../kernelsrc/wgsl/flash_attention.wgsl",
    entry   = { "flash_attention" },
    launch  = {
      workgroup_size = { 64, 1, 1 },
      groups = { "sq", "n_heads", 1 },
      bindings = {
        { group = 0, binding = 0, type = "storage", name = "q", access = "read", elem = "dtype" },
        { group = 0, binding = 1, type = "storage", name = "k", access = "read", elem = "dtype" },
        { group = 0, binding = 2, type = "storage", name = "v", access = "read", elem = "dtype" },
        { group = 0, binding = 3, type = "storage", name = "o", access = "read_write", elem = "dtype" },
        { group = 0, binding = 4, type = "uniform", name = "params" },
      },
      params = {
        { name = "n_heads", offset = 0, type = "u32" },
        { name = "n_kv_heads", offset = 4, type = "u32" },
        { name = "sq", offset = 8, type = "u32" },
        { name = "skv", offset = 12, type = "u32" },
        { name = "scale", offset = 16, type = "f32" },
      },
    },
  },
  metal {
    source  = "../kernelsrc/metal/flash_attention.metal",
    entry   = { "flash_attention" },
    launch  = {
      threads_per_threadgroup = { 64, 1, 1 },
      groups = { "sq", "n_heads", 1 },
      buffers = {
        { index = 0, name = "q", access = "read", elem = "dtype" },
        { index = 1, name = "k", access = "read", elem = "dtype" },
        { index = 2, name = "v", access = "read", elem = "dtype" },
        { index = 3, name = "o", access = "write", elem = "dtype" },
        { index = 4, name = "params", access = "bytes" },
      },
      params = {
        { name = "n_heads", offset = 0, type = "u32" },
        { name = "n_kv_heads", offset = 4, type = "u32" },
        { name = "sq", offset = 8, type = "u32" },
        { name = "skv", offset = 12, type = "u32" },
        { name = "scale", offset = 16, type = "f32" },
      },
    },
  },
}
