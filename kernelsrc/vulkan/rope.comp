// rope.comp - rotary position embedding of interleaved pairs, in place
// (docs/kernels.md): for token t, head h, pair p < head_dim/2,
//   a = pos[t] * theta_base^(-2p/head_dim), (x0, x1) rotated by a.
//
// Bindings (set 0): 0 x ([n_tokens][n_heads][head_dim] f32, read and
// written), 1 pos (n_tokens int32).
// Push constants: n_tokens, n_heads, head_dim (uint), theta_base (float).
// Dispatch: groups (n_tokens, n_heads, 1), clamped; workgroups loop.
//
// Precision: docs/kernels.md forms the angle in double; Vulkan has f64 only
// as an optional feature, so the angle is formed in float-float (~45 bits,
// gk_common.glsl): base = theta^(-2/head_dim) refined by Newton, base^p by
// squaring, times pos split exactly into two halves, reduced by pi/2 in
// float-float. Its error is about |angle| * 2^-40 radians, not the
// |angle| * 2^-24 of a float angle (0.06 radians at position 10^6).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "gk_common.glsl"

#define WG 64u
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) buffer Xb { float x[]; };
layout(set = 0, binding = 1, std430) readonly buffer Pos { int pos[]; };
layout(push_constant, std430) uniform Params {
  uint n_tokens; uint n_heads; uint head_dim; float theta_base;
} p;

void main() {
  uint half_dim = p.head_dim / 2u;
  vec2 b = gk_rope_base(p.theta_base, p.head_dim);
  for (uint t = gl_WorkGroupID.x; t < p.n_tokens; t += gl_NumWorkGroups.x) {
    // pos exactly as float-float: its high 16 bits and the rest.
    int pt = pos[t];
    float ph = float(pt & ~0xffff), pl = float(pt & 0xffff);
    for (uint h = gl_WorkGroupID.y; h < p.n_heads; h += gl_NumWorkGroups.y) {
      uint base = (t * p.n_heads + h) * p.head_dim;
      for (uint q = gl_LocalInvocationID.x; q < half_dim; q += WG) {
        vec2 inv = gk_ff_pow(b, q);
        vec2 a = gk_ff_add(gk_ff_mul(vec2(ph, 0.0), inv), gk_ff_mul(vec2(pl, 0.0), inv));
        float s, c;
        gk_sincos_ff(a, s, c);
        float x0 = x[base + 2u * q], x1 = x[base + 2u * q + 1u];
        x[base + 2u * q] = x0 * c - x1 * s;
        x[base + 2u * q + 1u] = x0 * s + x1 * c;
      }
    }
  }
}
