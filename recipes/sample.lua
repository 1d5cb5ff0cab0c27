-- sample.lua - one token per row of logits: temperature, top-k, top-p, and
-- a walk in index order with the caller's uniform numbers (docs/kernels.md).
kernel "sample" {
  cpu {
    source  = "../kernelsrc/cpu/sample.c",
    entry   = { "sample" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
  cuda {
    source  = "../kernelsrc/cuda/sample.cu",
    entry   = { "sample" },
    launch  = {
      block  = { 256, 1, 1 },
      grid   = { "rows", 1, 1 },
      shared = 0,
      params = { "logits:ptr", "u:ptr", "out:ptr", "rows:i64", "n:i64", "temperature:f32",
                  "top_k:i32", "top_p:f32" },
    },
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/sample.hip includes it), so it launches the same way: it
  -- takes the cuda section's launch, and its targets are hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030; the newer targets are
  -- skipped with the reason until a newer ROCm builds them.
  rocm {
    source  = "../kernelsrc/hip/sample.hip",
    entry   = { "sample" },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/sample.comp",
    entry   = { "sample" },
    launch  = {
      local_size = { 128, 1, 1 },
      groups = { "rows", 1, 1 },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "logits", access = "read", elem = "f32" },
        { set = 0, binding = 1, type = "storage_buffer", name = "u", access = "read", elem = "f32" },
        { set = 0, binding = 2, type = "storage_buffer", name = "out", access = "write", elem = "i32" },
      },
      push_constants = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
        { name = "temperature", offset = 8, type = "f32" },
        { name = "top_k", offset = 12, type = "i32" },
        { name = "top_p", offset = 16, type = "f32" },
      },
    },
  },
  wgsl {
    source  = "../kernelsrc/wgsl/sample.wgsl",
    entry   = { "sample" },
    launch  = {
      workgroup_size = { 128, 1, 1 },
      groups = { "rows", 1, 1 },
      bindings = {
        { group = 0, binding = 0, type = "storage", name = "logits", access = "read", elem = "f32" },
        { group = 0, binding = 1, type = "storage", name = "u", access = "read", elem = "f32" },
        { group = 0, binding = 2, type = "storage", name = "out", access = "read_write", elem = "i32" },
        { group = 0, binding = 3, type = "uniform", name = "params" },
      },
      params = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
        { name = "temperature", offset = 8, type = "f32" },
        { name = "top_k", offset = 12, type = "i32" },
        { name = "top_p", offset = 16, type = "f32" },
      },
    },
  },
  metal {
    source  = "../kernelsrc/metal/sample.metal",
    entry   = { "sample" },
    launch  = {
      threads_per_threadgroup = { 128, 1, 1 },
      groups = { "rows", 1, 1 },
      buffers = {
        { index = 0, name = "logits", access = "read", elem = "f32" },
        { index = 1, name = "u", access = "read", elem = "f32" },
        { index = 2, name = "out", access = "write", elem = "i32" },
        { index = 3, name = "params", access = "bytes" },
      },
      params = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
        { name = "temperature", offset = 8, type = "f32" },
        { name = "top_k", offset = 12, type = "i32" },
        { name = "top_p", offset = 16, type = "f32" },
      },
    },
  },
}
