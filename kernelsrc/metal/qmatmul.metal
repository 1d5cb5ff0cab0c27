// qmatmul.metal - fused dequantize + matmul, y = x W^T (docs/kernels.md,
// docs/weights.md). ONE source: -DBITS=1, 2, 4 or 8. The algorithm of
// kernelsrc/vulkan/qmatmul.comp: threadgroups of 8 rows x 8 lanes.
// Buffers: 0 x (f32), 1 w (blocks as uint words), 2 y (f32), 3 params
// (m, n, k as uint; setBytes). Dispatch: (ceil(n/8), m, 1) threadgroups of
// (8, 8, 1) threads; any count >= 1 is correct.
#include "gk_common.h"

#if !defined(BITS) || (BITS != 1 && BITS != 2 && BITS != 4 && BITS != 8)
#error "qmatmul.metal needs -DBITS=1, 2, 4 or 8"
#endif
constant constexpr uint MASK = (1u << BITS) - 1u;
constant constexpr uint PER_WORD = 32u / BITS;
constant constexpr uint LANES = 8u, ROWS = 8u;

struct Params { uint m, n, k; };

kernel void qmatmul(device const float *x [[buffer(0)]], device const uint *w [[buffer(1)]],
                    device float *y [[buffer(2)]], constant Params &p [[buffer(3)]],
                    uint3 lid [[thread_position_in_threadgroup]],
                    uint3 wid [[threadgroup_position_in_grid]],
                    uint3 nwg [[threadgroups_per_grid]]) {
  threadgroup float partial[ROWS][LANES];
  uint lx = lid.x, ly = lid.y;
  uint nb = p.k / 32u;
  const uint bw = 1u + BITS;
  for (uint j0 = wid.x * ROWS; j0 < p.n; j0 += nwg.x * ROWS) {
    uint j = j0 + ly;
    for (uint i = wid.y; i < p.m; i += nwg.y) {
      float acc = 0.0f;
      if (j < p.n) {
        for (uint b = lx; b < nb; b += LANES) {
          uint base = (j * nb + b) * bw;
          uint dm = w[base];
          float d = gk_f16_to_f32(dm & 0xffffu), mo = gk_f16_to_f32(dm >> 16);
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
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = LANES / 2u; s > 0u; s >>= 1) {
        if (lx < s) partial[ly][lx] += partial[ly][lx + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      if (lx == 0u && j < p.n) y[i * p.n + j] = partial[ly][0];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}
