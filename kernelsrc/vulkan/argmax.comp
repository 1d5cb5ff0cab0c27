// argmax.comp - out[r] = the lowest index of the largest x[r][j], NaNs
// ignored, 0 for a row of only NaNs (docs/kernels.md).
//
// Bindings (set 0): 0 x (rows*n f32), 1 out (rows int32).
// Push constants: rows, n (uint).
// Dispatch: groups (rows, 1, 1), clamped; a workgroup loops over its rows.
// Each invocation keeps its best (value, index) over a strided share of the
// row; a shared-memory tree merges them with the same rule (larger value,
// then lower index), so the answer does not depend on the split.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "gk_common.glsl"

#define WG 64u
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { int outv[]; };
layout(push_constant, std430) uniform Params { uint rows; uint n; } p;

shared float bv[WG];
shared int bi[WG]; // -1: nothing but NaNs seen

// Does (v, i) beat (bv, bj)? An index of -1 loses to everything.
bool better(float v, int i, float w, int j) {
  if (i < 0) return false;
  if (j < 0) return true;
  return v > w || (v == w && i < j);
}

void main() {
  uint lid = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    float best = 0.0;
    int besti = -1;
    for (uint j = lid; j < p.n; j += WG) {
      float v = x[r * p.n + j];
      if (!gk_isnan(v) && (besti < 0 || v > best)) { best = v; besti = int(j); }
    }
    bv[lid] = best;
    bi[lid] = besti;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
      if (lid < s && better(bv[lid + s], bi[lid + s], bv[lid], bi[lid])) {
        bv[lid] = bv[lid + s];
        bi[lid] = bi[lid + s];
      }
      barrier();
    }
    if (lid == 0u) outv[r] = max(bi[0], 0);
    barrier();
  }
}
