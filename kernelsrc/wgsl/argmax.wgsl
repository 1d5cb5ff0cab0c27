// argmax.wgsl - the lowest index of the largest x[r][j], NaNs ignored, 0
// for a row of NaNs (docs/kernels.md); the algorithm of
// kernelsrc/vulkan/argmax.comp.
// Bindings (group 0): 0 x (f32), 1 out (i32), 2 params (uniform: rows, n
// as u32). Dispatch: (rows, 1, 1) workgroups; any count >= 1.
#include "gk_common.wgsl"

const WG: u32 = 64u;

struct Params { rows: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> outv: array<i32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> bv: array<f32, 64>;
var<workgroup> bi: array<i32, 64>;

fn better(v: f32, i: i32, w: f32, j: i32) -> bool {
  if (i < 0) { return false; }
  if (j < 0) { return true; }
  return v > w || (v == w && i < j);
}

@compute @workgroup_size(64, 1, 1)
fn argmax(@builtin(local_invocation_index) lid: u32,
          @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = wid.x; r < p.rows; r = r + nwg.x) {
    var best = 0.0;
    var besti = -1;
    for (var j = lid; j < p.n; j = j + WG) {
      let v = x[r * p.n + j];
      if (!gk_isnan(v) && (besti < 0 || v > best)) { best = v; besti = i32(j); }
    }
    bv[lid] = best;
    bi[lid] = besti;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
      if (lid < s && better(bv[lid + s], bi[lid + s], bv[lid], bi[lid])) {
        bv[lid] = bv[lid + s];
        bi[lid] = bi[lid + s];
      }
      workgroupBarrier();
    }
    if (lid == 0u) { outv[r] = max(bi[0], 0); }
    workgroupBarrier();
  }
}
