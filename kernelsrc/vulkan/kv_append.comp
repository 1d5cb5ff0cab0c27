// kv_append.comp - writes each sequence's sq new K/V rows into its pages
// (docs/kernels.md, "kv_append"): row i of sequence s, KV head hk, goes to
// position seq_lens[s] - sq + i, slot pos % PAGE of page block_table[s]
// [pos / PAGE]. A sequence that is invalid (kernelsrc/common/gk_paged.h) or
// shorter than sq is skipped. ONE source for the variant:
// -DDTYPE=f16|bf16|f32, -DHEAD_DIM=64|128, -DPAGE=16|64 (DTYPE only sets
// the row's size: this is a copy of uint words, f16 and bf16 two per word).
//
// Bindings (set 0): 0 k_new, 1 v_new [n_seqs][n_kv_heads][sq][D], 2 k_pool,
// 3 v_pool [n_pages][n_kv_heads][PAGE][D], 4 block_table [n_seqs]
// [max_pages] int, 5 seq_lens [n_seqs] int.
// Push constants: n_seqs, n_kv_heads, sq, max_pages, n_pages (uint).
// Dispatch: groups (sq, n_kv_heads, n_seqs), clamped; workgroups loop.
// A workgroup checks its sequence (each invocation a share of the pages),
// then copies its rows, one word per invocation at a time.
#version 450

#define f16 1
#define f32 2
#define bf16 3
#if !defined(DTYPE) || !defined(HEAD_DIM) || !defined(PAGE)
#error "kv_append.comp needs -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128 -DPAGE=16|64"
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
#define P uint(PAGE)
#if DTYPE == f16 || DTYPE == bf16
#define WORDS uint(HEAD_DIM / 2) // uint words per row
#else
#define WORDS uint(HEAD_DIM)
#endif

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer KN { uint knw[]; };
layout(set = 0, binding = 1, std430) readonly buffer VN { uint vnw[]; };
layout(set = 0, binding = 2, std430) writeonly buffer KP { uint kpw[]; };
layout(set = 0, binding = 3, std430) writeonly buffer VP { uint vpw[]; };
layout(set = 0, binding = 4, std430) readonly buffer BT { int bt[]; };
layout(set = 0, binding = 5, std430) readonly buffer SL { int seq_lens[]; };
layout(push_constant, std430) uniform Params {
  uint n_seqs; uint n_kv_heads; uint sq; uint max_pages; uint n_pages;
} p;

shared uint bad; // the sequence is invalid or shorter than sq

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint s = gl_WorkGroupID.z; s < p.n_seqs; s += gl_NumWorkGroups.z) {
    int len = seq_lens[s];
    uint tb = s * p.max_pages;
    uint used = len < 0 ? 0u : uint(len) / P + (uint(len) % P != 0u ? 1u : 0u);
    if (t == 0u) bad = len < 0 || uint(len) < p.sq || used > p.max_pages ? 1u : 0u;
    barrier();
    if (bad == 0u)
      for (uint j = t; j < used; j += WG)
        if (bt[tb + j] < 0 || uint(bt[tb + j]) >= p.n_pages) atomicOr(bad, 1u);
    barrier();
    bool skip = bad != 0u;
    barrier(); // bad is reset by the next sequence
    if (skip) continue;
    for (uint hk = gl_WorkGroupID.y; hk < p.n_kv_heads; hk += gl_NumWorkGroups.y)
      for (uint i = gl_WorkGroupID.x; i < p.sq; i += gl_NumWorkGroups.x) {
        uint pos = uint(len) - p.sq + i;
        uint pg = uint(bt[tb + pos / P]);
        uint dst = ((pg * p.n_kv_heads + hk) * P + pos % P) * WORDS;
        uint src = ((s * p.n_kv_heads + hk) * p.sq + i) * WORDS;
        for (uint e = t; e < WORDS; e += WG) {
          kpw[dst + e] = knw[src + e];
          vpw[dst + e] = vnw[src + e];
        }
      }
  }
}
