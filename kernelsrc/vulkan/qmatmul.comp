// qmatmul.comp - fused dequantize + matmul, y = x W^T (docs/kernels.md,
// weights in the block format of docs/weights.md). ONE source: the recipe
// builds it with -DBITS=1, 2, 4 or 8.
//
// Bindings (set 0): 0 x (m*k f32), 1 w (the blocks, read as uint words: a
// block is 1 + BITS words, word 0 = d | m << 16, rows start on a word since
// a block is 4 + 4*BITS bytes), 2 y (m*n f32).
// Push constants: m, n, k as uint (sizes count elements; buffers are
// addressed in 32-bit words, which covers any maxStorageBufferRange).
// Dispatch: groups (ceil(n/8), m, 1), clamped to the device's limits: each
// workgroup loops over the rows its group id stands for, so any count >= 1
// is correct.
//
// A workgroup is 8 rows of W x 8 lanes: lane x of row y takes blocks x,
// x+8, ... of W's row j0+y, so 8 neighbouring invocations read 8
// neighbouring blocks (coalesced on GPUs); the lanes' sums meet in a
// 3-step shared-memory tree. Measured on lavapipe (m=1, n=k=4096, 4-bit),
// one invocation per block and 64 lanes per row was 2-3x slower: each
// barrier costs a coroutine switch per 8 invocations there. Each weight is
// fma(d, q, m) then one fma into the lane's sum, as in the CPU kernel.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "gk_common.glsl"

#if !defined(BITS) || (BITS != 1 && BITS != 2 && BITS != 4 && BITS != 8)
#error "qmatmul.comp needs -DBITS=1, 2, 4 or 8"
#endif
#define MASK ((1u << BITS) - 1u)
#define PER_WORD (32u / BITS)
#define LANES 8u
#define ROWS 8u

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 1, std430) readonly buffer W { uint w[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant, std430) uniform Params { uint m; uint n; uint k; } p;

shared float partial[ROWS][LANES];

void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint nb = p.k / 32u;           // blocks per row; k % 32 columns are ignored
  const uint bw = 1u + BITS;     // words per block
  for (uint j0 = gl_WorkGroupID.x * ROWS; j0 < p.n; j0 += gl_NumWorkGroups.x * ROWS) {
    uint j = j0 + ly;
    for (uint i = gl_WorkGroupID.y; i < p.m; i += gl_NumWorkGroups.y) {
      float acc = 0.0;
      if (j < p.n) {
        for (uint b = lx; b < nb; b += LANES) {
          uint base = (j * nb + b) * bw;
          uint dm = w[base];
          float d = gk_f16_to_f32(dm & 0xffffu);
          float mo = gk_f16_to_f32(dm >> 16);
          uint xb = i * p.k + b * 32u;
          for (uint u = 0u; u < BITS; u++) {
            uint word = w[base + 1u + u];
            for (uint c = 0u; c < PER_WORD; c++) {
              float q = float((word >> (c * BITS)) & MASK);
              acc = fma(fma(d, q, mo), x[xb + u * PER_WORD + c], acc);
            }
          }
        }
      }
      partial[ly][lx] = acc;
      barrier();
      for (uint s = LANES / 2u; s > 0u; s >>= 1) {
        if (lx < s) partial[ly][lx] += partial[ly][lx + s];
        barrier();
      }
      if (lx == 0u && j < p.n) y[i * p.n + j] = partial[ly][0];
      barrier(); // partial[] is reused by the next output
    }
  }
}
