// flash_attention.wgsl - o = softmax(scale * q k^T) v per query row, grouped
// heads, optional bottom-right causal mask, online softmax over key tiles
// (docs/kernels.md); the algorithm of kernelsrc/vulkan/flash_attention.comp.
// ONE source: -DCAUSAL=0|1 -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128.
// Bindings (group 0), tensors of DTYPE as u32 words (f16, bf16: two per
// word, low half first; core WebGPU needs no shader-f16 feature): 0 q, 1 k, 2 v,
// 3 o, 4 params (uniform: n_heads, n_kv_heads, sq, skv as u32, scale as
// f32). Dispatch: (sq, n_heads, 1) workgroups; any count >= 1.
#include "gk_common.wgsl"

// DTYPE is a bare word (f16, bf16 or f32; f16 and f32 are also WGSL type
// names): test it by pasting, never by defining f16/f32 themselves.
#define GK_CAT2(a, b) a##b
#define GK_CAT(a, b) GK_CAT2(a, b)
#define GK_DT_f16 1
#define GK_DT_bf16 2
#define GK_DT_f32 3
#define GK_DT GK_CAT(GK_DT_, DTYPE)
#if !defined(CAUSAL) || !defined(DTYPE) || !defined(HEAD_DIM)
#error "flash_attention.wgsl needs -DCAUSAL=0|1 -DDTYPE=f16|bf16|f32 -DHEAD_DIM=64|128"
#endif
#if GK_DT != 1 && GK_DT != 2 && GK_DT != 3
#error "DTYPE must be f16, bf16 or f32"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128
#error "HEAD_DIM must be 64 or 128"
#endif

const WG: u32 = 64u;
const D: u32 = HEAD_DIM;
const PER: u32 = HEAD_DIM / 64;

struct Params { n_heads: u32, n_kv_heads: u32, sq: u32, skv: u32, scale: f32 }

@group(0) @binding(0) var<storage, read> qw: array<u32>;
@group(0) @binding(1) var<storage, read> kw: array<u32>;
@group(0) @binding(2) var<storage, read> vw: array<u32>;
@group(0) @binding(3) var<storage, read_write> ow: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> qs: array<f32, HEAD_DIM>;
var<workgroup> ps: array<f32, 64>;
var<workgroup> res: array<f32, HEAD_DIM>;

#if GK_DT == 1
fn load_q(e: u32) -> f32 { return gk_f16_to_f32((qw[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
fn load_k(e: u32) -> f32 { return gk_f16_to_f32((kw[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
fn load_v(e: u32) -> f32 { return gk_f16_to_f32((vw[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
#elif GK_DT == 2
fn load_q(e: u32) -> f32 { return gk_bf16_to_f32((qw[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
fn load_k(e: u32) -> f32 { return gk_bf16_to_f32((kw[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
fn load_v(e: u32) -> f32 { return gk_bf16_to_f32((vw[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
#else
fn load_q(e: u32) -> f32 { return bitcast<f32>(qw[e]); }
fn load_k(e: u32) -> f32 { return bitcast<f32>(kw[e]); }
fn load_v(e: u32) -> f32 { return bitcast<f32>(vw[e]); }
#endif

@compute @workgroup_size(64, 1, 1)
fn flash_attention(@builtin(local_invocation_index) t: u32,
                   @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
  let group = p.n_heads / max(p.n_kv_heads, 1u);
  for (var h = wid.y; h < p.n_heads; h = h + nwg.y) {
    let hk = h / max(group, 1u);
    let kbase = hk * p.skv * D;
    for (var i = wid.x; i < p.sq; i = i + nwg.x) {
      let qbase = (h * p.sq + i) * D;
      for (var e = t; e < D; e = e + WG) { qs[e] = load_q(qbase + e); }
      var limit = i32(p.skv);
#if CAUSAL
      limit = min(limit, i32(i) + i32(p.skv) - i32(p.sq) + 1);
#endif
      var m = -3.402823466e38;
      var l = 0.0;
      var acc: array<f32, PER>;
      for (var d = 0u; d < PER; d = d + 1u) { acc[d] = 0.0; }
      workgroupBarrier();
      for (var j0 = 0; j0 < limit; j0 = j0 + i32(WG)) {
        let j = j0 + i32(t);
        var s = -3.402823466e38;
        if (j < limit) {
          let kb = kbase + u32(j) * D;
          var dot_ = 0.0;
          for (var e = 0u; e < D; e = e + 1u) { dot_ = fma(qs[e], load_k(kb + e), dot_); }
          s = p.scale * dot_;
        }
        ps[t] = s;
        workgroupBarrier();
        var tmax = ps[0];
        for (var u = 1u; u < WG; u = u + 1u) { tmax = max(tmax, ps[u]); }
        var mnew = tmax;
        var alpha = 0.0;
        if (j0 != 0) {
          mnew = max(m, tmax);
          alpha = exp(m - mnew);
        }
        workgroupBarrier();
        var pj = 0.0;
        if (j < limit) { pj = exp(s - mnew); }
        ps[t] = pj;
        workgroupBarrier();
        let nt = min(i32(WG), limit - j0);
        var tsum = 0.0;
        for (var u = 0; u < nt; u = u + 1) { tsum = tsum + ps[u]; }
        l = l * alpha + tsum;
        for (var d = 0u; d < PER; d = d + 1u) {
          let e = t + d * WG;
          var a = acc[d] * alpha;
          for (var u = 0; u < nt; u = u + 1) {
            a = fma(ps[u], load_v(kbase + u32(j0 + u) * D + e), a);
          }
          acc[d] = a;
        }
        m = mnew;
        workgroupBarrier();
      }
      for (var d = 0u; d < PER; d = d + 1u) {
        var r = 0.0;
        if (l > 0.0) { r = acc[d] / l; }
        res[t + d * WG] = r;
      }
      workgroupBarrier();
#if GK_DT == 1
      for (var e = t; e < D / 2u; e = e + WG) {
        ow[qbase / 2u + e] = gk_f32_to_f16(res[2u * e]) | (gk_f32_to_f16(res[2u * e + 1u]) << 16u);
      }
#elif GK_DT == 2
      for (var e = t; e < D / 2u; e = e + WG) {
        ow[qbase / 2u + e] = gk_pack_bf16x2(res[2u * e], res[2u * e + 1u]);
      }
#else
      for (var e = t; e < D; e = e + WG) { ow[qbase + e] = bitcast<u32>(res[e]); }
#endif
      workgroupBarrier();
    }
  }
}
