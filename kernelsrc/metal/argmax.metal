// argmax.metal - lowest index of the largest value per row, NaNs ignored,
// 0 for a row of NaNs (docs/kernels.md); the algorithm of
// kernelsrc/vulkan/argmax.comp. Buffers: 0 x (f32), 1 out (int),
// 2 params (rows, n as uint). Dispatch: (rows, 1, 1) threadgroups of 64.
#include "gk_common.h"

constant constexpr uint WG = 64u;
struct Params { uint rows, n; };

static bool better(float v, int i, float w, int j) {
  if (i < 0) return false;
  if (j < 0) return true;
  return v > w || (v == w && i < j);
}

kernel void argmax(device const float *x [[buffer(0)]], device int *outv [[buffer(1)]],
                   constant Params &p [[buffer(2)]],
                   uint lid [[thread_index_in_threadgroup]],
                   uint3 wid [[threadgroup_position_in_grid]],
                   uint3 nwg [[threadgroups_per_grid]]) {
  threadgroup float bv[WG];
  threadgroup int bi[WG];
  for (uint r = wid.x; r < p.rows; r += nwg.x) {
    float best = 0.0f;
    int besti = -1;
    for (uint j = lid; j < p.n; j += WG) {
      float v = x[r * p.n + j];
      if (!gk_isnan(v) && (besti < 0 || v > best)) { best = v; besti = int(j); }
    }
    bv[lid] = best;
    bi[lid] = besti;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
      if (lid < s && better(bv[lid + s], bi[lid + s], bv[lid], bi[lid])) {
        bv[lid] = bv[lid + s];
        bi[lid] = bi[lid + s];
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0u) outv[r] = max(bi[0], 0);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
