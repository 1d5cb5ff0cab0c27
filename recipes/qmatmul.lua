-- qmatmul.lua - quantized matrix-vector product (docs/weights.md): y = W x
-- with W stored as `bits`-bit codes in blocks of 32 (kernelsrc/common/gk_quant.h).
-- The cuda sections' entry points and launch rows: qmatmul_q8x_mm with
-- `shared` bytes of dynamic shared memory (its stages: kernelsrc/cuda/q8x_mma.cuh).
local cuda_entry = { "qmatmul", "qmatmul_q8x", "qmatmul_q8x_x", "qmatmul_q8x_rec",
                     "qmatmul_q8x_mm" }
local function cuda_launch(shared)
  local params = { "x:ptr", "w:ptr", "y:ptr", "m:i64", "n:i64", "k:i64" }
  return {
    block  = { 256, 1, 1 },
    grid   = { "m / 8", "n / 32", 1 },
    shared = 0,
    params = params,
    qmatmul_q8x = {
      block  = { 256, 1, 1 },
      grid   = { "m / 16", "n / 64", 1 },
      shared = 0,
      params = params,
    },
    qmatmul_q8x_x = {
      block  = { 256, 1, 1 },
      grid   = { "k / 8192", "m", 1 },
      shared = 0,
      params = { "x:ptr", "xq:ptr", "m:i64", "k:i64" },
    },
    qmatmul_q8x_rec = {
      block  = { 256, 1, 1 },
      grid   = { "m / 16", "n / 64", 1 },
      shared = 0,
      params = { "xq:ptr", "w:ptr", "y:ptr", "m:i64", "n:i64", "k:i64" },
    },
    qmatmul_q8x_mm = {
      block  = { 256, 1, 1 },
      grid   = { "m / 128", "n / 128", 1 },
      shared = shared,
      params = { "xq:ptr", "w:ptr", "y:ptr", "m:i64", "n:i64", "k:i64" },
    },
  }
end

kernel "qmatmul" {
  params = { bits = { 1, 2, 4, 8 } },
  cpu {
    source  = "../kernelsrc/cpu/qmatmul.c",
    -- qmatmul_repack rewrites W into the image's packed layout, which
    -- qmatmul_packed reads (docs/weights.md, "Packed layout"); qmatmul_q8x
    -- reads it too, with x rounded to int8 per block (kernelsrc/cpu/q8x.h).
    entry   = { "qmatmul", "qmatmul_packed", "qmatmul_q8x", "qmatmul_repack" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
    -- The image splits a call over its own persistent threads (gk_pool.h).
    flags   = { "-pthread" },
  },
  -- CUDA: cubins for every supported SM plus compute_75 PTX as the fallback
  -- the driver JIT-compiles for GPUs newer than all of them. `launch` is
  -- how to call cuLaunchKernel (docs/kernels.md, "Launching on GPUs").
  -- qmatmul_q8x reads the original block format on GPUs (no repack), with
  -- the CPU images' arithmetic to the bit; it launches like qmatmul but
  -- for the rows a block takes: qmatmul 8 of x by 32 of W, qmatmul_q8x
  -- up to 16 of x (rounded into shared memory; past 4 on int8 mma.sync)
  -- by 64 of W (kernelsrc/cuda). For
  -- many rows of x, qmatmul_q8x_x rounds x once into records and
  -- qmatmul_q8x_mm multiplies them on int8 tensor cores; qmatmul_q8x_rec
  -- multiplies them as qmatmul_q8x does (its tiles, its launch, its bits),
  -- for a decode batch whose x several matmuls share: each has its own
  -- launch, keyed by its name (docs/weights.md, "int8 x on tensor cores").
  -- Two sections, which differ in qmatmul_q8x_mm's shared memory only:
  -- sm_75 (64 KB a block at most) and the PTX keep its 2 stages of x and W
  -- in static shared memory; the other targets (toolchains/nvcc.lua's
  -- defaults, and any --targets names that sm_75's section does not) are
  -- sm_80 and newer, which stream them through 4 stages, 96256 bytes of
  -- dynamic shared memory at BITS 8 (q8x_mma.cuh's GK_Q8M_STAGES, from
  -- __CUDA_ARCH__), within the 99 KB a block of sm_86, sm_89 and sm_120
  -- may take.
  cuda {
    source  = "../kernelsrc/cuda/qmatmul.cu",
    entry   = cuda_entry,
    targets = { "sm_75", "compute_75" },
    launch  = cuda_launch(0),
  },
  cuda {
    source  = "../kernelsrc/cuda/qmatmul.cu",
    entry   = cuda_entry,
    launch  = cuda_launch(96256),
  },
  -- ROCm: one code object per gfx target ID, from the CUDA kernel itself
  -- (kernelsrc/hip/qmatmul.hip includes it), so it launches the same way:
  -- sm_75's launch (no dynamic shared memory), and its targets are
  -- hipcc.lua's defaults.
  -- hipcc 5.2 (Debian) builds gfx906 ... gfx1030, Debian's clang-19 the newer
  -- targets (toolchains/hipclang.lua).
  rocm {
    source  = "../kernelsrc/hip/qmatmul.hip",
    entry   = cuda_entry,
    -- HIP keeps qmatmul_q8x_mm's 2 stages in static shared memory.
    launch  = cuda_launch(0),
  },
  -- Launch metadata of a vulkan image: descriptor bindings (set 0) in the
  -- order of the C signature's pointers, push constants in the order of its
  -- scalars (sizes as u32), the workgroup size and the workgroup counts
  -- ("n/8": ceil(n / 8) groups, clamped to the device's limit; the kernel
  -- loops over the rest). docs/kernels.md, "Vulkan".
  vulkan {
    source  = "../kernelsrc/vulkan/qmatmul.comp",
    entry   = { "qmatmul" },
    launch  = {
      local_size = { 8, 8, 1 },
      groups = { "n/8", "m", 1 },
      bindings = {
        { set = 0, binding = 0, type = "storage_buffer", name = "x", access = "read", elem = "f32" },
        { set = 0, binding = 1, type = "storage_buffer", name = "w", access = "read", elem = "u32" },
        { set = 0, binding = 2, type = "storage_buffer", name = "y", access = "write", elem = "f32" },
      },
      push_constants = {
        { name = "m", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
        { name = "k", offset = 8, type = "u32" },
      },
    },
  },
  -- wgsl: the shader text for WebGPU hosts; storage buffers in the order of
  -- the C signature's pointers, then the scalars in a uniform struct at the
  -- next binding (WGSL has no push constants). docs/kernels.md, "WGSL".
  wgsl {
    source  = "../kernelsrc/wgsl/qmatmul.wgsl",
    entry   = { "qmatmul" },
    launch  = {
      workgroup_size = { 8, 8, 1 },
      groups = { "n/8", "m", 1 },
      bindings = {
        { group = 0, binding = 0, type = "storage", name = "x", access = "read", elem = "f32" },
        { group = 0, binding = 1, type = "storage", name = "w", access = "read", elem = "u32" },
        { group = 0, binding = 2, type = "storage", name = "y", access = "read_write", elem = "f32" },
        { group = 0, binding = 3, type = "uniform", name = "params" },
      },
      params = {
        { name = "m", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
        { name = "k", offset = 8, type = "u32" },
      },
    },
  },
  -- metal: metallib per OS / Metal version (built on macOS only; skipped
  -- elsewhere). Buffers in the order of the C signature's pointers, the
  -- scalars as one struct at the next buffer index (setBytes).
  metal {
    source  = "../kernelsrc/metal/qmatmul.metal",
    entry   = { "qmatmul" },
    launch  = {
      threads_per_threadgroup = { 8, 8, 1 },
      groups = { "n/8", "m", 1 },
      buffers = {
        { index = 0, name = "x", access = "read", elem = "f32" },
        { index = 1, name = "w", access = "read", elem = "u32" },
        { index = 2, name = "y", access = "write", elem = "f32" },
        { index = 3, name = "params", access = "bytes" },
      },
      params = {
        { name = "m", offset = 0, type = "u32" },
        { name = "n", offset = 4, type = "u32" },
        { name = "k", offset = 8, type = "u32" },
      },
    },
  },
}
