-- rmsnorm.lua - root-mean-square normalization of f32 rows times a weight
-- vector (docs/kernels.md).
kernel "rmsnorm" {
  cpu {
    source  = "../kernelsrc/cpu/rmsnorm.c",
    entry   = { "rmsnorm" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
  cuda {
    source  = "../kernelsrc/cuda/rmsnorm.cu",
    entry   = { "rmsnorm" },
    launch  = {
      block  = { 256, 1, 1 },
      grid   = { "rows", 1, 1 },
      shared = 0,
      params = { "x:ptr", "w:ptr", "y:ptr", "rows:i64", "dim:i64", "eps:f32" },
    },
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/rmsnorm.hip includes it), so it launches the same way: it
  -- takes the cuda section's launch, and its targets are hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030, Debian's clang-19 the newer
  -- targets (toolchains/hipclang.lua).
  rocm {
    source  = "../kernelsrc/hip/rmsnorm.hip",
    entry   = { "rmsnorm" },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/rmsnorm.comp",
    entry   = { "rmsnorm" },
    launch  = {
      local_size = { 64, 1, 1 },
      groups = { "rows", 1, 1 },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "x", access = "read", elem = "f32" },
        { set = 0, binding = 1, type = "storage_buffer", name = "w", access = "read", elem = "f32" },
        { set = 0, binding = 2, type = "storage_buffer", name = "y", access = "write", elem = "f32" },
      },
      push_constants = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "dim", offset = 4, type = "u32" },
        { name = "eps", offset = 8, type = "f32" },
      },
    },
  },
  wgsl {
    source  = "../kernelsrc/wgsl/rmsnorm.wgsl",
    entry   = { "rmsnorm" },
    launch  = {
      workgroup_size = { 64, 1, 1 },
      groups = { "rows", 1, 1 },
      bindings = {
        { group = 0, binding = 0, type = "storage", name = "x", access = "read", elem = "f32" },
        { group = 0, binding = 1, type = "storage", name = "w", access = "read", elem = "f32" },
        { group = 0, binding = 2, type = "storage", name = "y", access = "read_write", elem = "f32" },
        { group = 0, binding = 3, type = "uniform", name = "params" },
      },
      params = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "dim", offset = 4, type = "u32" },
        { name = "eps", offset = 8, type = "f32" },
      },
    },
  },
  metal {
    source  = "../kernelsrc/metal/rmsnorm.metal",
    entry   = { "rmsnorm" },
    launch  = {
      threads_per_threadgroup = { 64, 1, 1 },
      groups = { "rows", 1, 1 },
      buffers = {
        { index = 0, name = "x", access = "read", elem = "f32" },
        { index = 1, name = "w", access = "read", elem = "f32" },
        { index = 2, name = "y", access = "write", elem = "f32" },
        { index = 3, name = "params", access = "bytes" },
      },
      params = {
        { name = "rows", offset = 0, type = "u32" },
        { name = "dim", offset = 4, type = "u32" },
        { name = "eps", offset = 8, type = "f32" },
      },
    },
  },
}
