// rmsnorm.comp - y[r][j] = x[r][j] / sqrt(mean_j x[r][j]^2 + eps) * w[j]
// (docs/kernels.md).
//
// Bindings (set 0): 0 x (rows*dim f32), 1 w (dim f32), 2 y (rows*dim f32).
// Push constants: rows, dim (uint), eps (float).
// Dispatch: groups (rows, 1, 1), clamped; a workgroup loops over its rows.
// One workgroup per row: 64 partial sums of squares, a shared-memory tree,
// then every invocation scales its share of the row.
#version 450

#define WG 64u
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 1, std430) readonly buffer Wt { float w[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant, std430) uniform Params { uint rows; uint dim; float eps; } p;

shared float partial[WG];

void main() {
  uint lid = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    uint base = r * p.dim;
    float ss = 0.0;
    for (uint j = lid; j < p.dim; j += WG) ss = fma(x[base + j], x[base + j], ss);
    partial[lid] = ss;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
      if (lid < s) partial[lid] += partial[lid + s];
      barrier();
    }
    // 1/sqrt as a division by sqrt: inversesqrt may be 2 ulp, sqrt and a
    // division are each within Vulkan's tighter bounds.
    float inv = 1.0 / sqrt(partial[0] / float(p.dim) + p.eps);
    for (uint j = lid; j < p.dim; j += WG) y[base + j] = x[base + j] * inv * w[j];
    barrier(); // partial[] is reused by the next row
  }
}
