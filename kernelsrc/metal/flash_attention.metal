// flash_attention.metal - o = softmax(scale * q k^T) v per query row,
// grouped heads, optional bottom-right causal mask, online softmax over key
// tiles (docs/kernels.md); the algorithm of
// kernelsrc/vulkan/flash_attention.comp. ONE source: -DCAUSAL=0|1
// -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128.
// Buffers, tensors of DTYPE as uint words (f16, bf16: two per word, low
// half first): 0 q, 1 k, 2 v, 3 o, 4 params (n_heads, n_kv_heads, sq, skv as
// uint, scale float). Dispatch: (sq, n_heads, 1) threadgroups of 64.
#include "gk_common.h"

// DTYPE is a bare word: test it by pasting (f16, bf16 and f32 are not
// defined).
#define GK_CAT2(a, b) a##b
#define GK_CAT(a, b) GK_CAT2(a, b)
#define GK_DT_f16 1
#define GK_DT_bf16 2
#define GK_DT_f32 3
#define GK_DT GK_CAT(GK_DT_, DTYPE)
#if !defined(CAUSAL) || !defined(DTYPE) || !defined(HEAD_DIM)
#error "flash_attention.metal needs -DCAUSAL=0|1 -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128"
#endif
#if GK_DT != 1 && GK_DT != 2 && GK_DT != 3
#error "DTYPE must be f16, bf16 or f32"
#endif

constant constexpr uint WG = 64u;
constant constexpr uint D = HEAD_DIM;
constant constexpr uint PER = HEAD_DIM / 64;
struct Params { uint n_heads, n_kv_heads, sq, skv; float scale; };

#if GK_DT == 1
static inline float load(device const uint *b, uint e) {
  return gk_f16_to_f32((b[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu);
}
#elif GK_DT == 2
static inline float load(device const uint *b, uint e) {
  return gk_bf16_to_f32(ushort((b[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu));
}
#else
static inline float load(device const uint *b, uint e) { return as_type<float>(b[e]); }
#endif

kernel void flash_attention(device const uint *qw [[buffer(0)]], device const uint *kw [[buffer(1)]],
                            device const uint *vw [[buffer(2)]], device uint *ow [[buffer(3)]],
                            constant Params &p [[buffer(4)]],
                            uint t [[thread_index_in_threadgroup]],
                            uint3 wid [[threadgroup_position_in_grid]],
                            uint3 nwg [[threadgroups_per_grid]]) {
  threadgroup float qs[HEAD_DIM];
  threadgroup float ps[WG];
  threadgroup float res[HEAD_DIM];
  uint group = p.n_heads / max(p.n_kv_heads, 1u);
  for (uint h = wid.y; h < p.n_heads; h += nwg.y) {
    uint hk = h / max(group, 1u);
    uint kbase = hk * p.skv * D;
    for (uint i = wid.x; i < p.sq; i += nwg.x) {
      uint qbase = (h * p.sq + i) * D;
      for (uint e = t; e < D; e += WG) qs[e] = load(qw, qbase + e);
      int limit = int(p.skv);
#if CAUSAL
      limit = min(limit, int(i) + int(p.skv) - int(p.sq) + 1);
#endif
      float m = -3.402823466e38f, l = 0.0f;
      float acc[PER];
      for (uint d = 0u; d < PER; d++) acc[d] = 0.0f;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (int j0 = 0; j0 < limit; j0 += int(WG)) {
        int j = j0 + int(t);
        float s = -3.402823466e38f;
        if (j < limit) {
          uint kb = kbase + uint(j) * D;
          float dot_ = 0.0f;
          for (uint e = 0u; e < D; e++) dot_ = fma(qs[e], load(kw, kb + e), dot_);
          s = p.scale * dot_;
        }
        ps[t] = s;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float tmax = ps[0];
        for (uint u = 1u; u < WG; u++) tmax = max(tmax, ps[u]);
        float mnew = j0 == 0 ? tmax : max(m, tmax);
        float alpha = j0 == 0 ? 0.0f : exp(m - mnew);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        ps[t] = j < limit ? exp(s - mnew) : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        int nt = min(int(WG), limit - j0);
        float tsum = 0.0f;
        for (int u = 0; u < nt; u++) tsum += ps[u];
        l = l * alpha + tsum;
        for (uint d = 0u; d < PER; d++) {
          uint e = t + d * WG;
          float a = acc[d] * alpha;
          for (int u = 0; u < nt; u++) a = fma(ps[u], load(vw, kbase + uint(j0 + u) * D + e), a);
          acc[d] = a;
        }
        m = mnew;
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      for (uint d = 0u; d < PER; d++) res[t + d * WG] = l > 0.0f ? acc[d] / l : 0.0f;
      threadgroup_barrier(mem_flags::mem_threadgroup);
#if GK_DT == 1
      for (uint e = t; e < D / 2u; e += WG)
        ow[qbase / 2u + e] = gk_f32_to_f16(res[2u * e]) | (gk_f32_to_f16(res[2u * e + 1u]) << 16);
#elif GK_DT == 2
      for (uint e = t; e < D / 2u; e += WG)
        ow[qbase / 2u + e] =
            uint(gk_f32_to_bf16(res[2u * e])) | (uint(gk_f32_to_bf16(res[2u * e + 1u])) << 16);
#else
      for (uint e = t; e < D; e += WG) ow[qbase + e] = as_type<uint>(res[e]);
#endif
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}
