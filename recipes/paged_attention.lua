-- paged_attention.lua - attention over a paged KV cache, and kv_append,
-- which writes new K/V rows into its pages (docs/kernels.md): K and V live
-- in a pool of pages of `page` tokens ([n_pages][n_kv_heads][page][D]),
-- addressed per sequence by a block table of int32 page ids and a length;
-- the sq query tokens are each sequence's last sq (causal, bottom-right).
-- Two kernels, one file: they share the layout and the variant, so a host
-- loads both with one variant string. f16, bf16 or f32 tensors.
local params = { dtype = { "f16", "bf16", "f32" }, head_dim = { 64, 128 }, page = { 16, 64 } }
local cpu_targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" }

kernel "paged_attention" {
  params = params,
  cpu {
    source  = "../kernelsrc/cpu/paged_attention.c",
    entry   = { "paged_attention" },
    targets = cpu_targets,
  },
  -- CUDA: flash_attention's schedules (tensor cores for f16 and bf16) with the keys
  -- found through the block table (kernelsrc/cuda/paged_attention.cuh).
  -- A decode splits a sequence's keys across blocks through the workspace
  -- `ws` (flash_attention's): grid x is flash_attention's, counting the
  -- max_pages * {page} tokens a table holds (the variant's page: "{page}"
  -- is replaced by it in each variant's row), a column per 1024 tokens,
  -- for any sq up to 16. Counted with the larger page for both, pages of
  -- 16 had 4 times the columns a decode uses: at 8 sequences of 1024
  -- tokens, 1024 of 1280 blocks idle, dispatched between the working ones.
  cuda {
    source  = "../kernelsrc/cuda/paged_attention.cu",
    entry   = { "paged_attention" },
    launch  = {
      block  = { 128, 1, 1 },
      grid   = { "sq / 64 - 1 + max_pages * {page} / (1024 * (sq / 16) + 1)", "n_heads",
                  "n_seqs" },
      shared = 0,
      params = { "q:ptr", "k_pool:ptr", "v_pool:ptr", "block_table:ptr", "seq_lens:ptr",
                  "o:ptr", "n_seqs:i64", "n_heads:i64", "n_kv_heads:i64", "sq:i64",
                  "max_pages:i64", "n_pages:i64", "scale:f32", "ws:ptr", "ws_bytes:i64" },
    },
  },
  -- ROCm: the CUDA kernel through kernelsrc/hip (as flash_attention.lua's
  -- rocm section): the cuda launch, hipcc.lua's default targets.
  rocm {
    source  = "../kernelsrc/hip/paged_attention.hip",
    entry   = { "paged_attention" },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/paged_attention.comp",
    entry   = { "paged_attention" },
    launch  = { -- tensors of dtype in u32 words (f16, bf16: two per word, low half first)
      local_size = { 64, 1, 1 },
      groups = { "sq", "n_heads", "n_seqs" },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "q", access = "read", elem = "dtype" },
        { set = 0, binding = 1, type = "storage_buffer", name = "k_pool", access = "read", elem = "dtype" },
        { set = 0, binding = 2, type = "storage_buffer", name = "v_pool", access = "read", elem = "dtype" },
        { set = 0, binding = 3, type = "storage_buffer", name = "block_table", access = "read", elem = "i32" },
        { set = 0, binding = 4, type = "storage_buffer", name = "seq_lens", access = "read", elem = "i32" },
        { set = 0, binding = 5, type = "storage_buffer", name = "o", access = "write", elem = "dtype" },
      },
      push_constants = {
        { name = "n_seqs", offset = 0, type = "u32" },
        { name = "n_heads", offset = 4, type = "u32" },
        { name = "n_kv_heads", offset = 8, type = "u32" },
        { name = "sq", offset = 12, type = "u32" },
        { name = "max_pages", offset = 16, type = "u32" },
        { name = "n_pages", offset = 20, type = "u32" },
        { name = "scale", offset = 24, type = "f32" },
      },
    },
  },
}

kernel "kv_append" {
  params = params,
  cpu {
    source  = "../kernelsrc/cpu/kv_append.c",
    entry   = { "kv_append" },
    targets = cpu_targets,
  },
  cuda {
    source  = "../kernelsrc/cuda/kv_append.cu",
    entry   = { "kv_append" },
    launch  = {
      block  = { 64, 1, 1 },
      grid   = { "sq", "n_kv_heads", "n_seqs" },
      shared = 0,
      params = { "k_new:ptr", "v_new:ptr", "k_pool:ptr", "v_pool:ptr", "block_table:ptr",
                  "seq_lens:ptr", "n_seqs:i64", "n_kv_heads:i64", "sq:i64", "max_pages:i64",
                  "n_pages:i64" },
    },
  },
  -- ROCm: the CUDA kernel through kernelsrc/hip (as flash_attention.lua's
  -- rocm section): the cuda launch, hipcc.lua's default targets.
  rocm {
    source  = "../kernelsrc/hip/kv_append.hip",
    entry   = { "kv_append" },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/kv_append.comp",
    entry   = { "kv_append" },
    launch  = {
      local_size = { 64, 1, 1 },
      groups = { "sq", "n_kv_heads", "n_seqs" },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "k_new", access = "read", elem = "dtype" },
        { set = 0, binding = 1, type = "storage_buffer", name = "v_new", access = "read", elem = "dtype" },
        { set = 0, binding = 2, type = "storage_buffer", name = "k_pool", access = "write", elem = "dtype" },
        { set = 0, binding = 3, type = "storage_buffer", name = "v_pool", access = "write", elem = "dtype" },
        { set = 0, binding = 4, type = "storage_buffer", name = "block_table", access = "read", elem = "i32" },
        { set = 0, binding = 5, type = "storage_buffer", name = "seq_lens", access = "read", elem = "i32" },
      },
      push_constants = {
        { name = "n_seqs", offset = 0, type = "u32" },
        { name = "n_kv_heads", offset = 4, type = "u32" },
        { name = "sq", offset = 8, type = "u32" },
        { name = "max_pages", offset = 12, type = "u32" },
        { name = "n_pages", offset = 16, type = "u32" },
      },
    },
  },
}
