// flash_attention.comp - o = softmax(scale * q k^T) v per query row, with
// grouped-query heads and an optional bottom-right causal mask, online
// softmax over key tiles: the score matrix is never materialized
// (docs/kernels.md). ONE source for the variant: -DCAUSAL=0|1,
// -DDTYPE=f16|bf16|f32, -DHEAD_DIM=64|128.
//
// Bindings (set 0), all of DTYPE, read as uint words (f16, bf16: two
// elements per word, low half first, so no 16-bit storage feature is needed):
//   0 q [n_heads][sq][D], 1 k [n_kv_heads][skv][D], 2 v [n_kv_heads][skv][D],
//   3 o [n_heads][sq][D].
// Push constants: n_heads, n_kv_heads, sq, skv (uint), scale (float).
// Dispatch: groups (sq, n_heads, 1), clamped; workgroups loop.
//
// A workgroup owns one query row. Per tile of 64 keys, invocation t scores
// key t of the tile against q (held in shared memory), the tile's maximum
// updates the running maximum, invocation t turns its score into a weight,
// and every invocation accumulates the weighted values of the D/64
// dimensions it owns. The running sum l is formed by every invocation in
// the same order, so all agree on it. Output is rounded to DTYPE once
// (f16, bf16: to nearest even, in integer arithmetic).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "gk_common.glsl"

#define f16 1
#define f32 2
#define bf16 3
#if !defined(CAUSAL) || !defined(DTYPE) || !defined(HEAD_DIM)
#error "flash_attention.comp needs -DCAUSAL=0|1 -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128"
#endif
#if DTYPE != f16 && DTYPE != bf16 && DTYPE != f32
#error "DTYPE must be f16, bf16 or f32"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128
#error "HEAD_DIM must be 64 or 128"
#endif

#define WG 64u
#define D uint(HEAD_DIM)
#define PER (D / WG) // dimensions per invocation: 1 or 2

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer Q { uint qw[]; };
layout(set = 0, binding = 1, std430) readonly buffer K { uint kw[]; };
layout(set = 0, binding = 2, std430) readonly buffer V { uint vw[]; };
layout(set = 0, binding = 3, std430) buffer O { uint ow[]; };
layout(push_constant, std430) uniform Params {
  uint n_heads; uint n_kv_heads; uint sq; uint skv; float scale;
} p;

shared float qs[HEAD_DIM];
shared float ps[WG];   // the tile's scores, then its weights
shared float res[HEAD_DIM];

// Element e (in elements) of a DTYPE tensor held in uint words.
#if DTYPE == f16
#define LOAD(buf, e) gk_f16_to_f32((buf[(e) >> 1] >> (((e) & 1u) * 16u)) & 0xffffu)
#elif DTYPE == bf16
#define LOAD(buf, e) gk_bf16_to_f32((buf[(e) >> 1] >> (((e) & 1u) * 16u)) & 0xffffu)
#else
#define LOAD(buf, e) uintBitsToFloat(buf[e])
#endif

void main() {
  uint t = gl_LocalInvocationID.x;
  uint group = p.n_heads / max(p.n_kv_heads, 1u);
  for (uint h = gl_WorkGroupID.y; h < p.n_heads; h += gl_NumWorkGroups.y) {
    uint hk = h / max(group, 1u);
    uint kbase = hk * p.skv * D;
    for (uint i = gl_WorkGroupID.x; i < p.sq; i += gl_NumWorkGroups.x) {
      uint qbase = (h * p.sq + i) * D;
      for (uint e = t; e < D; e += WG) qs[e] = LOAD(qw, qbase + e);
      // Keys j < limit are allowed: j <= i + (skv - sq) when causal.
      int limit = int(p.skv);
#if CAUSAL
      limit = min(limit, int(i) + int(p.skv) - int(p.sq) + 1);
#endif
      float m = -3.402823466e38; // no key seen yet (set from the first tile)
      float l = 0.0;
      float acc[PER];
      for (uint d = 0u; d < PER; d++) acc[d] = 0.0;
      barrier();
      for (int j0 = 0; j0 < limit; j0 += int(WG)) {
        int j = j0 + int(t);
        float s = -3.402823466e38; // lanes past the limit never win the max
        if (j < limit) {
          uint kb = kbase + uint(j) * D;
          float dot_ = 0.0;
          for (uint e = 0u; e < D; e++) dot_ = fma(qs[e], LOAD(kw, kb + e), dot_);
          s = p.scale * dot_;
        }
        ps[t] = s;
        barrier();
        float tmax = ps[0];
        for (uint u = 1u; u < WG; u++) tmax = max(tmax, ps[u]);
        float mnew = j0 == 0 ? tmax : max(m, tmax);
        // No exp(-inf) on the first tile: drivers need not honour infinities.
        float alpha = j0 == 0 ? 0.0 : exp(m - mnew);
        barrier();
        ps[t] = j < limit ? exp(s - mnew) : 0.0;
        barrier();
        int nt = min(int(WG), limit - j0);
        float tsum = 0.0;
        for (int u = 0; u < nt; u++) tsum += ps[u];
        l = l * alpha + tsum;
        for (uint d = 0u; d < PER; d++) {
          uint e = t + d * WG;
          float a = acc[d] * alpha;
          for (int u = 0; u < nt; u++) a = fma(ps[u], LOAD(vw, kbase + uint(j0 + u) * D + e), a);
          acc[d] = a;
        }
        m = mnew;
        barrier(); // ps[] is rewritten by the next tile
      }
      for (uint d = 0u; d < PER; d++) res[t + d * WG] = l > 0.0 ? acc[d] / l : 0.0;
      barrier();
#if DTYPE == f16
      for (uint e = t; e < D / 2u; e += WG)
        ow[qbase / 2u + e] = gk_f32_to_f16(res[2u * e]) | (gk_f32_to_f16(res[2u * e + 1u]) << 16);
#elif DTYPE == bf16
      for (uint e = t; e < D / 2u; e += WG)
        ow[qbase / 2u + e] = gk_pack_bf16x2(res[2u * e], res[2u * e + 1u]);
#else
      for (uint e = t; e < D; e += WG) ow[qbase + e] = floatBitsToUint(res[e]);
#endif
      barrier(); // qs[] and res[] are reused by the next row
    }
  }
}
