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
    targets = { "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
                "sm_100", "sm_120", "compute_75" },
    launch  = {
      block  = { 256, 1, 1 },
      grid   = { "rows", 1, 1 },
      shared = 0,
      params = { "x:ptr", "out:ptr", "rows:i64", "n:i64" },
    },
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/argmax.hip includes it), so it launches the same way.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030; the newer targets are
  -- skipped with the reason until a newer ROCm builds them.
  rocm {
    source  = "../kernelsrc/hip/argmax.hip",
    entry   = { "argmax" },
    targets = { "gfx906", "gfx908", "gfx90a", "gfx940", "gfx942", "gfx1010", "gfx1030",
                "gfx1100", "gfx1101", "gfx1102", "gfx1201", "gfx10-3-generic", "gfx11-generic" },
    launch  = {
      block  = { 256, 1, 1 },
      grid   = { "rows", 1, 1 },
      shared = 0,
      params = { "x:ptr", "out:ptr", "rows:i64", "n:i64" },
    },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/argmax.comp",
    entry   = { "argmax" },
    targets = { "vulkan1.1" },
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
    targets = { "webgpu" },
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
    targets = { "macos-metal3.0" },
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
