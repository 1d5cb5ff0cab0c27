// rmsnorm.metal - y = x / sqrt(mean(x^2) + eps) * w per row
// (docs/kernels.md); the algorithm of kernelsrc/vulkan/rmsnorm.comp.
// Buffers: 0 x, 1 w, 2 y (f32), 3 params (rows, dim as uint, eps float).
// Dispatch: (rows, 1, 1) threadgroups of 64 threads; any count >= 1.
#include "gk_common.h"

constant constexpr uint WG = 64u;
struct Params { uint rows, dim; float eps; };

kernel void rmsnorm(device const float *x [[buffer(0)]], device const float *w [[buffer(1)]],
                    device float *y [[buffer(2)]], constant Params &p [[buffer(3)]],
                    uint lid [[thread_index_in_threadgroup]],
                    uint3 wid [[threadgroup_position_in_grid]],
                    uint3 nwg [[threadgroups_per_grid]]) {
  threadgroup float partial[WG];
  for (uint r = wid.x; r < p.rows; r += nwg.x) {
    uint base = r * p.dim;
    float ss = 0.0f;
    for (uint j = lid; j < p.dim; j += WG) ss = fma(x[base + j], x[base + j], ss);
    partial[lid] = ss;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
      if (lid < s) partial[lid] += partial[lid + s];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float inv = 1.0f / sqrt(partial[0] / float(p.dim) + p.eps);
    for (uint j = lid; j < p.dim; j += WG) y[base + j] = x[base + j] * inv * w[j];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
