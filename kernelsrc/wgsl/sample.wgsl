// sample.wgsl - one token per row of logits: temperature, top-k, top-p, a
// walk in index order with the caller's u[r] (docs/kernels.md); the
// algorithm of kernelsrc/vulkan/sample.comp (keys, bitwise search, no sort).
// Reduced values are read with workgroupUniformLoad, so that the branches
// and loops they steer stay uniform, as WGSL requires around barriers.
// Bindings (group 0): 0 logits (f32), 1 u (f32), 2 out (i32), 3 params
// (uniform: rows, n as u32, temperature f32, top_k i32, top_p f32).
// Dispatch: (rows, 1, 1) workgroups; any count >= 1.
#include "gk_common.wgsl"

const WG: u32 = 128u;

struct Params { rows: u32, n: u32, temperature: f32, top_k: i32, top_p: f32 }

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> uv: array<f32>;
@group(0) @binding(2) var<storage, read_write> outv: array<i32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> rs: array<f32, 129>;
var<workgroup> rc: array<u32, 128>;
var<workgroup> ri: array<i32, 128>;
var<workgroup> uf: f32;  // a reduced float, read back uniformly
var<workgroup> uu: u32;  // a reduced count
var<workgroup> ui: i32;  // a reduced index

var<private> g_base: u32;
var<private> g_max: f32;
var<private> g_temp: f32;
var<private> g_lid: u32;

fn prob(j: u32) -> f32 {
  let l = logits[g_base + j];
  if (gk_isnan(l)) { return 0.0; }
  return exp((l - g_max) / g_temp);
}

fn key_ge(h: u32, lo: u32, kh: u32, kl: u32) -> bool {
  return h > kh || (h == kh && lo >= kl);
}

struct CountSum { c: u32, s: f32 }

// Keys >= (kh, kl): how many, and the sum of their p.
fn count_ge(kh: u32, kl: u32) -> CountSum {
  var c = 0u;
  var s = 0.0;
  for (var j = g_lid; j < p.n; j = j + WG) {
    let pj = prob(j);
    if (key_ge(bitcast<u32>(pj), p.n - 1u - j, kh, kl)) { c = c + 1u; s = s + pj; }
  }
  rc[g_lid] = c;
  rs[g_lid] = s;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st >> 1u) {
    if (g_lid < st) {
      rc[g_lid] = rc[g_lid] + rc[g_lid + st];
      rs[g_lid] = rs[g_lid] + rs[g_lid + st];
    }
    workgroupBarrier();
  }
  if (g_lid == 0u) { uu = rc[0]; uf = rs[0]; }
  let cu = workgroupUniformLoad(&uu);
  let su = workgroupUniformLoad(&uf);
  return CountSum(cu, su);
}

// Would a token with key (kh, kl) be kept? (see sample.comp)
fn kept_above(kh: u32, kl: u32, kk: u32, use_p: bool, x: f32) -> bool {
  let r = count_ge(kh, kl + 1u);
  return r.c < kk && (!use_p || r.c == 0u || r.s < x);
}

// The smallest key at which a token would be kept; (0, 0) when all are.
fn search(kk: u32, use_p: bool, x: f32, lo_bits: u32) -> vec2<u32> {
  var kh = 0u;
  var kl = 0u;
  if (kept_above(0u, 0u, kk, use_p, x)) { return vec2<u32>(0u, 0u); }
  for (var b = 30; b >= 0; b = b - 1) {
    let c = kh | (1u << u32(b));
    if (!kept_above(c, 0u, kk, use_p, x)) { kh = c; }
  }
  for (var b = i32(lo_bits) - 1; b >= 0; b = b - 1) {
    let c = kl | (1u << u32(b));
    if (!kept_above(kh, c, kk, use_p, x)) { kl = c; }
  }
  return vec2<u32>(kh, kl + 1u);
}

@compute @workgroup_size(128, 1, 1)
fn sample(@builtin(local_invocation_index) lid: u32,
          @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
  g_lid = lid;
  let n = p.n;
  for (var r = wid.x; r < p.rows; r = r + nwg.x) {
    g_base = r * n;
    var best = 0.0;
    var besti = -1;
    for (var j = lid; j < n; j = j + WG) {
      let v = logits[g_base + j];
      if (!gk_isnan(v) && (besti < 0 || v > best)) { best = v; besti = i32(j); }
    }
    rs[lid] = best;
    ri[lid] = besti;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st = st >> 1u) {
      if (lid < st) {
        let v = rs[lid + st];
        let i = ri[lid + st];
        if (i >= 0 && (ri[lid] < 0 || v > rs[lid] || (v == rs[lid] && i < ri[lid]))) {
          rs[lid] = v;
          ri[lid] = i;
        }
      }
      workgroupBarrier();
    }
    if (lid == 0u) { uf = rs[0]; ui = ri[0]; }
    let lmax = workgroupUniformLoad(&uf); // uniform; g_max (private) is not, to WGSL
    g_max = lmax;
    let amax = workgroupUniformLoad(&ui);
    if (amax < 0 || !(p.temperature > 0.0) || gk_isinf(lmax)) {
      if (lid == 0u) { outv[r] = max(amax, 0); }
      continue;
    }
    g_temp = p.temperature;

    var lo_bits = 0u;
    if (n > 1u) { lo_bits = u32(firstLeadingBit(n - 1u)) + 1u; }
    var kk = n;
    if (p.top_k > 0 && u32(p.top_k) < n) { kk = u32(p.top_k); }
    let use_p = p.top_p < 1.0;
    var kmin = vec2<u32>(0u, 0u);
    if (use_p) {
      var sk: f32;
      if (kk < n) {
        let kt = search(kk, false, 0.0, lo_bits);
        sk = count_ge(kt.x, kt.y).s;
      } else {
        sk = count_ge(0u, 0u).s;
      }
      kmin = search(kk, true, p.top_p * sk, lo_bits);
    } else if (kk < n) {
      kmin = search(kk, false, 0.0, lo_bits);
    }

    // The walk: chunk sums in index order, scanned by invocation 0.
    let chunk = (n + WG - 1u) / WG;
    let j0 = min(n, lid * chunk);
    let j1 = min(n, j0 + chunk);
    var cs = 0.0;
    var last = -1;
    for (var j = j0; j < j1; j = j + 1u) {
      let pj = prob(j);
      if (key_ge(bitcast<u32>(pj), n - 1u - j, kmin.x, kmin.y)) { cs = cs + pj; last = i32(j); }
    }
    rs[lid] = cs;
    ri[lid] = last;
    workgroupBarrier();
    if (lid == 0u) {
      var run = 0.0;
      for (var t = 0u; t < WG; t = t + 1u) { let c = rs[t]; rs[t] = run; run = run + c; }
      rs[WG] = run;
      var lk = -1;
      for (var t = 0u; t < WG; t = t + 1u) { lk = max(lk, ri[t]); }
      ri[0] = lk;
    }
    workgroupBarrier();
    let target_ = uv[r] * rs[WG];
    var run = rs[lid];
    let lastkept = ri[0];
    var found = 0x7fffffff;
    for (var j = j0; j < j1 && run <= target_; j = j + 1u) {
      let pj = prob(j);
      if (key_ge(bitcast<u32>(pj), n - 1u - j, kmin.x, kmin.y)) {
        run = run + pj;
        if (run > target_) { found = i32(j); }
      }
    }
    workgroupBarrier();
    ri[lid] = found;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st = st >> 1u) {
      if (lid < st) { ri[lid] = min(ri[lid], ri[lid + st]); }
      workgroupBarrier();
    }
    if (lid == 0u) {
      if (ri[0] != 0x7fffffff) { outv[r] = ri[0]; } else { outv[r] = max(lastkept, 0); }
    }
    workgroupBarrier();
  }
}
