// qmatmul.wgsl - fused dequantize + matmul, y = x W^T (docs/kernels.md,
// docs/weights.md). ONE source, specialized at build time by the C
// preprocessor: -DBITS=1, 2, 4 or 8. The same algorithm as
// kernelsrc/vulkan/qmatmul.comp: 8 rows x 8 lanes per workgroup.
//
// Bindings (group 0): 0 x (m*k f32), 1 w (blocks as u32 words), 2 y (m*n
// f32), 3 params (uniform: m, n, k as u32; WGSL has no push constants).
// Dispatch: (ceil(n/8), m, 1) workgroups; any count >= 1 is correct.
#include "gk_common.wgsl"

#if !defined(BITS) || (BITS != 1 && BITS != 2 && BITS != 4 && BITS != 8)
#error "qmatmul.wgsl needs -DBITS=1, 2, 4 or 8"
#endif

const B: u32 = BITS;
const MASK: u32 = (1u << B) - 1u;
const PER_WORD: u32 = 32u / B;
const LANES: u32 = 8u;
const ROWS: u32 = 8u;

struct Params { m: u32, n: u32, k: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<array<f32, 8>, 8>;

@compute @workgroup_size(8, 8, 1)
fn qmatmul(@builtin(local_invocation_id) lid: vec3<u32>,
           @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  let lx = lid.x;
  let ly = lid.y;
  let nb = p.k / 32u;
  let bw = 1u + B;
  for (var j0 = wid.x * ROWS; j0 < p.n; j0 = j0 + nwg.x * ROWS) {
    let j = j0 + ly;
    for (var i = wid.y; i < p.m; i = i + nwg.y) {
      var acc = 0.0;
      if (j < p.n) {
        for (var b = lx; b < nb; b = b + LANES) {
          let base = (j * nb + b) * bw;
          let dm = w[base];
          let d = gk_f16_to_f32(dm & 0xffffu);
          let mo = gk_f16_to_f32(dm >> 16u);
          let xb = i * p.k + b * 32u;
          for (var u = 0u; u < B; u = u + 1u) {
            let word = w[base + 1u + u];
            for (var c = 0u; c < PER_WORD; c = c + 1u) {
              let q = f32((word >> (c * B)) & MASK);
              acc = fma(fma(d, q, mo), x[xb + u * PER_WORD + c], acc);
            }
          }
        }
      }
      partial[ly][lx] = acc;
      workgroupBarrier();
      for (var s = LANES / 2u; s > 0u; s = s >> 1u) {
        if (lx < s) { partial[ly][lx] = partial[ly][lx] + partial[ly][lx + s]; }
        workgroupBarrier();
      }
      if (lx == 0u && j < p.n) { y[i * p.n + j] = partial[ly][0]; }
      workgroupBarrier();
    }
  }
}
