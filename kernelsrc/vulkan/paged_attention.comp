// paged_attention.comp - attention over a paged KV cache (docs/kernels.md):
// for sequence s of length L = seq_lens[s], head h and query row i (token
// L - sq + i), o = softmax(scale * q k^T) v over the keys j < L with j <=
// i + L - sq, key j being slot j % PAGE of page block_table[s][j / PAGE] of
// the pools. ONE source for the variant: -DDTYPE=f16|bf16|f32,
// -DHEAD_DIM=64|128, -DPAGE=16|64.
//
// Bindings (set 0), tensors of DTYPE read as uint words (f16, bf16: two
// elements per word, low half first, so no 16-bit storage feature is needed):
//   0 q [n_seqs][n_heads][sq][D], 1 k_pool, 2 v_pool [n_pages][n_kv_heads]
//   [PAGE][D], 3 block_table [n_seqs][max_pages] int, 4 seq_lens [n_seqs]
//   int, 5 o [n_seqs][n_heads][sq][D].
// Push constants: n_seqs, n_heads, n_kv_heads, sq, max_pages, n_pages
// (uint), scale (float).
// Dispatch: groups (sq, n_heads, n_seqs), clamped; workgroups loop.
//
// flash_attention.comp's schedule, with keys found through the table: a
// workgroup owns one query row; per tile of 64 keys invocation t looks up
// key t's row (kept in shared memory for the value pass), scores it, and
// the online softmax proceeds as there. Before anything is read the
// workgroup checks its sequence (the rule of kernelsrc/common/gk_paged.h,
// each invocation a share of the pages): an invalid one gets NaN rows (f16
// 0x7e00, bf16 0x7fc0, f32 0x7fc00000).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "gk_common.glsl"

#define f16 1
#define f32 2
#define bf16 3
#if !defined(DTYPE) || !defined(HEAD_DIM) || !defined(PAGE)
#error "paged_attention.comp needs -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128 -DPAGE=16|64"
#endif
#if DTYPE != f16 && DTYPE != bf16 && DTYPE != f32
#error "DTYPE must be f16, bf16 or f32"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128
#error "HEAD_DIM must be 64 or 128"
#endif
#if PAGE != 16 && PAGE != 64
#error "PAGE must be 16 or 64"
#endif

#define WG 64u
#define D uint(HEAD_DIM)
#define P uint(PAGE)
#define PER (D / WG) // dimensions per invocation: 1 or 2

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer Q { uint qw[]; };
layout(set = 0, binding = 1, std430) readonly buffer K { uint kw[]; };
layout(set = 0, binding = 2, std430) readonly buffer V { uint vw[]; };
layout(set = 0, binding = 3, std430) readonly buffer BT { int bt[]; };
layout(set = 0, binding = 4, std430) readonly buffer SL { int seq_lens[]; };
layout(set = 0, binding = 5, std430) buffer O { uint ow[]; };
layout(push_constant, std430) uniform Params {
  uint n_seqs; uint n_heads; uint n_kv_heads; uint sq; uint max_pages; uint n_pages;
  float scale;
} p;

shared float qs[HEAD_DIM];
shared float ps[WG];    // the tile's scores, then its weights
shared uint rows[WG];   // element offset of the tile's key u in a pool
shared float res[HEAD_DIM];
shared uint bad;        // the sequence is invalid

#if DTYPE == f16
#define LOAD(buf, e) gk_f16_to_f32((buf[(e) >> 1] >> (((e) & 1u) * 16u)) & 0xffffu)
#define NAN_WORD 0x7e007e00u
#define WORDS (D / 2u)
#elif DTYPE == bf16
#define LOAD(buf, e) gk_bf16_to_f32((buf[(e) >> 1] >> (((e) & 1u) * 16u)) & 0xffffu)
#define NAN_WORD 0x7fc07fc0u
#define WORDS (D / 2u)
#else
#define LOAD(buf, e) uintBitsToFloat(buf[e])
#define NAN_WORD 0x7fc00000u
#define WORDS D
#endif

void main() {
  uint t = gl_LocalInvocationID.x;
  uint group = p.n_heads / max(p.n_kv_heads, 1u);
  if (p.n_kv_heads == 0u || group * p.n_kv_heads != p.n_heads) return; // uniform
  for (uint s = gl_WorkGroupID.z; s < p.n_seqs; s += gl_NumWorkGroups.z) {
    int len = seq_lens[s];
    uint tb = s * p.max_pages; // the sequence's table row
    // ceil(len / P) in uint: len + P - 1 could overflow an int.
    uint used = len < 0 ? 0u : uint(len) / P + (uint(len) % P != 0u ? 1u : 0u);
    if (t == 0u) bad = len < 0 || used > p.max_pages ? 1u : 0u;
    barrier();
    if (bad == 0u)
      for (uint j = t; j < used; j += WG)
        if (bt[tb + j] < 0 || uint(bt[tb + j]) >= p.n_pages) atomicOr(bad, 1u);
    barrier();
    bool invalid = bad != 0u;
    barrier(); // bad is reset by the next sequence
    for (uint h = gl_WorkGroupID.y; h < p.n_heads; h += gl_NumWorkGroups.y) {
      uint hk = h / group;
      for (uint i = gl_WorkGroupID.x; i < p.sq; i += gl_NumWorkGroups.x) {
        uint qbase = ((s * p.n_heads + h) * p.sq + i) * D;
        if (invalid) {
          for (uint e = t; e < WORDS; e += WG) ow[qbase / (D / WORDS) + e] = NAN_WORD;
          continue; // uniform: every invocation sees the same flag
        }
        for (uint e = t; e < D; e += WG) qs[e] = LOAD(qw, qbase + e);
        // Keys j < limit are allowed: j <= i + (len - sq), never past len.
        int limit = max(int(i) + len - int(p.sq) + 1, 0);
        float m = -3.402823466e38; // no key seen yet (set from the first tile)
        float l = 0.0;
        float acc[PER];
        for (uint d = 0u; d < PER; d++) acc[d] = 0.0;
        barrier();
        for (int j0 = 0; j0 < limit; j0 += int(WG)) {
          int j = j0 + int(t);
          float sc = -3.402823466e38; // lanes past the limit never win the max
          if (j < limit) {
            uint pg = uint(bt[tb + uint(j) / P]);
            uint kb = ((pg * p.n_kv_heads + hk) * P + uint(j) % P) * D;
            rows[t] = kb;
            float dot_ = 0.0;
            for (uint e = 0u; e < D; e++) dot_ = fma(qs[e], LOAD(kw, kb + e), dot_);
            sc = p.scale * dot_;
          }
          ps[t] = sc;
          barrier();
          float tmax = ps[0];
          for (uint u = 1u; u < WG; u++) tmax = max(tmax, ps[u]);
          float mnew = j0 == 0 ? tmax : max(m, tmax);
          // No exp(-inf) on the first tile: drivers need not honour infinities.
          float alpha = j0 == 0 ? 0.0 : exp(m - mnew);
          barrier();
          ps[t] = j < limit ? exp(sc - mnew) : 0.0;
          barrier();
          int nt = min(int(WG), limit - j0);
          float tsum = 0.0;
          for (int u = 0; u < nt; u++) tsum += ps[u];
          l = l * alpha + tsum;
          for (uint d = 0u; d < PER; d++) {
            uint e = t + d * WG;
            float a = acc[d] * alpha;
            for (int u = 0; u < nt; u++) a = fma(ps[u], LOAD(vw, rows[u] + e), a);
            acc[d] = a;
          }
          m = mnew;
          barrier(); // ps[] and rows[] are rewritten by the next tile
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
}
