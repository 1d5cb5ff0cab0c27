// rmsnorm.wgsl - y[r][j] = x[r][j] / sqrt(mean_j x[r][j]^2 + eps) * w[j]
// (docs/kernels.md); the algorithm of kernelsrc/vulkan/rmsnorm.comp.
// Bindings (group 0): 0 x, 1 w, 2 y (f32), 3 params (uniform: rows, dim as
// u32, eps as f32). Dispatch: (rows, 1, 1) workgroups; any count >= 1.
const WG: u32 = 64u;

struct Params { rows: u32, dim: u32, eps: f32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64, 1, 1)
fn rmsnorm(@builtin(local_invocation_index) lid: u32,
           @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = wid.x; r < p.rows; r = r + nwg.x) {
    let base = r * p.dim;
    var ss = 0.0;
    for (var j = lid; j < p.dim; j = j + WG) { ss = fma(x[base + j], x[base + j], ss); }
    partial[lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
      if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
      workgroupBarrier();
    }
    let inv = 1.0 / sqrt(partial[0] / f32(p.dim) + p.eps);
    for (var j = lid; j < p.dim; j = j + WG) { y[base + j] = x[base + j] * inv * w[j]; }
    workgroupBarrier();
  }
}
