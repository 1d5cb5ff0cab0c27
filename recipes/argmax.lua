-- argmax.lua - index of the largest f32 per row, lowest on ties, NaNs
-- ignored (docs/kernels.md).
kernel "argmax" {
  cpu {
    source  = "../kernelsrc/cpu/argmax.c",
    entry   = { "argmax" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
  cuda {
    source  = "../kernelsrc/cuda/argmax.cu",
    entry   = { "argmax" },
    launch  = {
      block  = { 256, 1, 1 },
      grid   = { "rows", 1, 1 },
      shared = 0,
      params = { "x:ptr", "out:ptr", "rows:i64", "n:i64" },
    },
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/argmax.hip includes it), so it launches the same way: it
  -- takes the cuda section's launch, and its targets are hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030, Debian's clang-19 the newer
  -- targets (toolchains/hipclang.lua).
  rocm {
    source  = "../kernelsrc/hip/argmax.hip",
    entry   = { "argmax" },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/argmax.comp",
    entry   = { "argmax" },
    launch  = {
      local_size = { 64, 1, 1 },
      groups = { "rows", 1, 1 },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "x", access = "read", elem = "f32" },
        { set = 0, binding = 1, type = "storage_buffer", name = "out", access = "write", elem = "i32" },
      },
      push_constants = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
      },
    },
  },
  wgsl {
    source  = "../kernelsrc/wgsl/argmax.wgsl",
    entry   = { "argmax" },
    launch  = {
      workgroup_size = { 64, 1, 1 },
      groups = { "rows", 1, 1 },
      bindings = {
        { group = 0, binding = 0, type = "storage", name = "x", access = "read", elem = "f32" },
        { group = 0, binding = 1, type = "storage", name = "out", access = "read_write", elem = "i32" },
        { group = 0, binding = 2, type = "uniform", name = "params" },
      },
      params = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
      },
    },
  },
  metal {
    source  = "../kernelsrc/metal/argmax.metal",
    entry   = { "argmax" },
    launch  = {
      threads_per_threadgroup = { 64, 1, 1 },
      groups = { "rows", 1, 1 },
      buffers = {
        { index = 0, name = "x", access = "read", elem = "f32" },
        { index = 1, name = "out", access = "write", elem = "i32" },
        { index = 2, name = "params", access = "bytes" },
      },
      params = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
      },
    },
  },
}
