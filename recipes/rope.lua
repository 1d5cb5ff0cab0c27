-- rope.lua - rotary position embedding of interleaved pairs, in place, f32
-- (docs/kernels.md).
kernel "rope" {
  cpu {
    source  = "../kernelsrc/cpu/rope.c",
    entry   = { "rope" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
  cuda {
    source  = "../kernelsrc/cuda/rope.cu",
    entry   = { "rope" },
    launch  = {
      block  = { 256, 1, 1 },
      grid   = { "n_tokens * (head_dim / 2) / 256", 1, 1 },
      shared = 0,
      params = { "x:ptr", "pos:ptr", "n_tokens:i64", "n_heads:i64", "head_dim:i64",
                  "theta_base:f32" },
    },
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/rope.hip includes it), so it launches the same way: it
  -- takes the cuda section's launch, and its targets are hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030, Debian's clang-19 the newer
  -- targets (toolchains/hipclang.lua).
  rocm {
    source  = "../kernelsrc/hip/rope.hip",
    entry   = { "rope" },
  },
  vulkan {
    source  = "../kernelsrc/vulkan/rope.comp",
    entry   = { "rope" },
    launch  = {
      local_size = { 64, 1, 1 },
      groups = { "n_tokens", "n_heads", 1 },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "x", access = "read_write", elem = "f32" },
        { set = 0, binding = 1, type = "storage_buffer", name = "pos", access = "read", elem = "i32" },
      },
      push_constants = {
        { name = "n_tokens", offset = 0, type = "u32" },
        { name = "n_heads", offset = 4, type = "u32" },
        { name = "head_dim", offset = 8, type = "u32" },
        { name = "theta_base", offset = 12, type = "f32" },
      },
    },
  },
  wgsl {
    source  = "../kernelsrc/wgsl/rope.wgsl",
    entry   = { "rope" },
    launch  = {
      workgroup_size = { 64, 1, 1 },
      groups = { "n_tokens", "n_heads", 1 },
      bindings = {
        { group = 0, binding = 0, type = "storage", name = "x", access = "read_write", elem = "f32" },
        { group = 0, binding = 1, type = "storage", name = "pos", access = "read", elem = "i32" },
        { group = 0, binding = 2, type = "uniform", name = "params" },
      },
      params = {
        { name = "n_tokens", offset = 0, type = "u32" },
        { name = "n_heads", offset = 4, type = "u32" },
        { name = "head_dim", offset = 8, type = "u32" },
        { name = "theta_base", offset = 12, type = "f32" },
      },
    },
  },
  metal {
    source  = "../kernelsrc/metal/rope.metal",
    entry   = { "rope" },
    launch  = {
      threads_per_threadgroup = { 64, 1, 1 },
      groups = { "n_tokens", "n_heads", 1 },
      buffers = {
        { index = 0, name = "x", access = "read_write", elem = "f32" },
        { index = 1, name = "pos", access = "read", elem = "i32" },
        { index = 2, name = "params", access = "bytes" },
      },
      params = {
        { name = "n_tokens", offset = 0, type = "u32" },
        { name = "n_heads", offset = 4, type = "u32" },
        { name = "head_dim", offset = 8, type = "u32" },
        { name = "theta_base", offset = 12, type = "f32" },
      },
    },
  },
}
