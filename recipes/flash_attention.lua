-- flash_attention.lua - attention with online softmax over key tiles
-- (docs/kernels.md): o = softmax(scale * q k^T) v, grouped-query heads,
-- optional bottom-right causal mask; f16, bf16 or f32 tensors.
kernel "flash_attention" {
  params = { causal = { 0, 1 }, dtype = { "f16", "bf16", "f32" }, head_dim = { 64, 128 } },
  cpu {
    source  = "../kernelsrc/cpu/flash_attention.c",
    entry   = { "flash_attention" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
  -- Grid x: the query blocks of a prefill, plus columns for a decode's
  -- cross-block split, which cuts each KV head's keys in pieces of 256: a
  -- column per 1024 keys gives the 4 query heads of a KV head (GQA 4:1)
  -- one block per piece, for any sq up to 16 (a decode, or a speculative
  -- one: sq / 16 rounds up to 1); other ratios loop or leave blocks idle,
  -- both correct. Divided by the multiples of 16 in sq past that, so that
  -- a prefill gets one idle column at most where skv <= 64 sq; no product
  -- of two parameters and no divisor that can be 0, so that no value of
  -- theirs makes the count fail. A decode splits through the workspace
  -- `ws` (docs/kernels.md: NULL runs without the split).
  cuda {
    source  = "../kernelsrc/cuda/flash_attention.cu",
    entry   = { "flash_attention" },
    launch  = {
      block  = { 128, 1, 1 },
      grid   = { "sq / 64 + skv / (1024 * (sq / 16) + 1)", "n_heads", 1 },
      shared = 0,
      params = { "q:ptr", "k:ptr", "v:ptr", "o:ptr", "n_heads:i64", "n_kv_heads:i64",
                  "sq:i64", "skv:i64", "scale:f32", "ws:ptr", "ws_bytes:i64" },
    },
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/flash_attention.hip includes it), so it launches the same way: it
  -- takes the cuda section's launch, and its targets are hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030, Debian's clang-19 the newer
  -- targets (toolchains/hipclang.lua).
  rocm {
    source  = "../kernelsrc/hip/flash_attention.hip",
    entry   = { "flash_attention" },
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
