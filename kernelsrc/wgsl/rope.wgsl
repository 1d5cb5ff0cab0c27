// rope.wgsl - rotary position embedding of interleaved pairs, in place
// (docs/kernels.md); the algorithm of kernelsrc/vulkan/rope.comp.
// Bindings (group 0): 0 x (f32, read_write), 1 pos (i32), 2 params
// (uniform: n_tokens, n_heads, head_dim as u32, theta_base as f32).
// Dispatch: (n_tokens, n_heads, 1) workgroups; any count >= 1.
// The angle is formed in float-float (WGSL has no f64), as on Vulkan.
#include "gk_common.wgsl"

const WG: u32 = 64u;

struct Params { n_tokens: u32, n_heads: u32, head_dim: u32, theta_base: f32 }

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> pos: array<i32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64, 1, 1)
fn rope(@builtin(local_invocation_index) lid: u32,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let half_dim = p.head_dim / 2u;
  let b = gk_rope_base(p.theta_base, p.head_dim);
  for (var t = wid.x; t < p.n_tokens; t = t + nwg.x) {
    let pt = pos[t];
    let ph = f32(pt & ~0xffff);
    let pl = f32(pt & 0xffff);
    for (var h = wid.y; h < p.n_heads; h = h + nwg.y) {
      let base = (t * p.n_heads + h) * p.head_dim;
      for (var q = lid; q < half_dim; q = q + WG) {
        let inv = gk_ff_pow(b, q);
        let a = gk_ff_add(gk_ff_mul(vec2<f32>(ph, 0.0), inv), gk_ff_mul(vec2<f32>(pl, 0.0), inv));
        let sc = gk_sincos_ff(a);
        let x0 = x[base + 2u * q];
        let x1 = x[base + 2u * q + 1u];
        x[base + 2u * q] = x0 * sc.y - x1 * sc.x;
        x[base + 2u * q + 1u] = x0 * sc.x + x1 * sc.y;
      }
    }
  }
}
