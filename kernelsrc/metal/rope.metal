// rope.metal - rotary position embedding of interleaved pairs, in place
// (docs/kernels.md); the algorithm of kernelsrc/vulkan/rope.comp.
// Buffers: 0 x (f32), 1 pos (int), 2 params (n_tokens, n_heads, head_dim
// as uint, theta_base float). Dispatch: (n_tokens, n_heads, 1)
// threadgroups of 64 threads; any count >= 1. The angle is formed in
// float-float (Metal has no double), as on Vulkan.
#include "gk_common.h"

constant constexpr uint WG = 64u;
struct Params { uint n_tokens, n_heads, head_dim; float theta_base; };

kernel void rope(device float *x [[buffer(0)]], device const int *pos [[buffer(1)]],
                 constant Params &p [[buffer(2)]],
                 uint lid [[thread_index_in_threadgroup]],
                 uint3 wid [[threadgroup_position_in_grid]],
                 uint3 nwg [[threadgroups_per_grid]]) {
  uint half_dim = p.head_dim / 2u;
  float2 b = gk_rope_base(p.theta_base, p.head_dim);
  for (uint t = wid.x; t < p.n_tokens; t += nwg.x) {
    int pt = pos[t];
    float ph = float(pt & ~0xffff), pl = float(pt & 0xffff);
    for (uint h = wid.y; h < p.n_heads; h += nwg.y) {
      uint base = (t * p.n_heads + h) * p.head_dim;
      for (uint q = lid; q < half_dim; q += WG) {
        float2 inv = gk_ff_pow(b, q);
        float2 a = gk_ff_add(gk_ff_mul(float2(ph, 0.0f), inv), gk_ff_mul(float2(pl, 0.0f), inv));
        float2 sc = gk_sincos_ff(a);
        float x0 = x[base + 2u * q], x1 = x[base + 2u * q + 1u];
        x[base + 2u * q] = x0 * sc.y - x1 * sc.x;
        x[base + 2u * q + 1u] = x0 * sc.x + x1 * sc.y;
      }
    }
  }
}
