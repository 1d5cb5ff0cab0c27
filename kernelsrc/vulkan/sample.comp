// sample.comp - one token per row of logits: temperature, top-k, top-p,
// then a walk in index order with the caller's uniform u[r]
// (docs/kernels.md gives the rule; this file only says how it is computed).
//
// Bindings (set 0): 0 logits (rows*n f32), 1 u (rows f32), 2 out (rows int32).
// Push constants: rows, n (uint), temperature (float), top_k (int),
// top_p (float).
// Dispatch: groups (rows, 1, 1), clamped; a workgroup loops over its rows.
//
// No sort. Token j gets the key (bits of p_j, n-1-j): p_j >= 0, so its bits
// order like the value, and the second half breaks ties by lower index; the
// rank order is then "larger key first". The kept tokens are always the
// ranks below some count, i.e. every key >= the key of the last kept token.
// That key is found by a bitwise binary search: for a candidate K, one pass
// over the row counts the tokens above K (q) and sums their p (s); the
// token of rank q is kept iff q < top_k and (q == 0 or s < top_p * S_k).
// Both sides shrink as K grows, so the predicate is monotone. With top-k
// and top-p both active, a first search finds the top-k set to get S_k.
// Each pass recomputes p = exp((l - max) / T) rather than storing it: the
// kernel needs no scratch buffer. The walk gives each invocation a
// contiguous chunk of indices; chunk sums are scanned in order, and the
// chunk holding the crossing point finds the token.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "gk_common.glsl"

#define WG 128u
layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer L { float logits[]; };
layout(set = 0, binding = 1, std430) readonly buffer U { float uv[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Out { int outv[]; };
layout(push_constant, std430) uniform Params {
  uint rows; uint n; float temperature; int top_k; float top_p;
} p;

shared float rs[WG + 1u];
shared uint rc[WG];
shared int ri[WG];

uint g_base;   // first logit of the row
float g_max;   // largest non-NaN logit of the row
float g_temp;

float prob(uint j) {
  float l = logits[g_base + j];
  return gk_isnan(l) ? 0.0 : exp((l - g_max) / g_temp);
}

// Is key (h, lo) >= (kh, kl)?
bool key_ge(uint h, uint lo, uint kh, uint kl) {
  return h > kh || (h == kh && lo >= kl);
}

// Over the row: the number of keys >= (kh, kl) and the sum of their p.
void count_ge(uint kh, uint kl, out uint cnt, out float sum) {
  uint lid = gl_LocalInvocationID.x;
  uint c = 0u;
  float s = 0.0;
  for (uint j = lid; j < p.n; j += WG) {
    float pj = prob(j);
    if (key_ge(floatBitsToUint(pj), p.n - 1u - j, kh, kl)) { c++; s += pj; }
  }
  rc[lid] = c;
  rs[lid] = s;
  barrier();
  for (uint st = WG / 2u; st > 0u; st >>= 1) {
    if (lid < st) { rc[lid] += rc[lid + st]; rs[lid] += rs[lid + st]; }
    barrier();
  }
  cnt = rc[0];
  sum = rs[0];
  barrier();
}

// Would a token with key K be kept? Its rank q is the number of keys
// strictly above K, s their p sum: kept iff q < kk and, with top-p, q == 0
// or s < x (x = top_p * S_k).
bool kept_above(uint kh, uint kl, uint kk, bool use_p, float x) {
  // Keys strictly above (kh, kl) are the keys >= (kh, kl + 1); lo never
  // reaches 2^32 - 1, so kl + 1 does not wrap.
  uint q;
  float s;
  count_ge(kh, kl + 1u, q, s);
  return q < kk && (!use_p || q == 0u || s < x);
}

// The smallest key K at which a token would be kept: the kept tokens are
// exactly those with keys >= K. Greedy from the top bit for the largest key
// at which a token would NOT be kept, plus one; (0, 0) when all are kept.
uvec2 search(uint kk, bool use_p, float x, uint lo_bits) {
  uint kh = 0u, kl = 0u;
  if (kept_above(0u, 0u, kk, use_p, x)) return uvec2(0u, 0u);
  for (int b = 30; b >= 0; b--) {
    uint c = kh | (1u << uint(b));
    if (!kept_above(c, 0u, kk, use_p, x)) kh = c;
  }
  for (int b = int(lo_bits) - 1; b >= 0; b--) {
    uint c = kl | (1u << uint(b));
    if (!kept_above(kh, c, kk, use_p, x)) kl = c;
  }
  return uvec2(kh, kl + 1u);
}

void main() {
  uint lid = gl_LocalInvocationID.x;
  uint n = p.n;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    g_base = r * n;
    // The largest non-NaN logit and its lowest index (argmax).
    float best = 0.0;
    int besti = -1;
    for (uint j = lid; j < n; j += WG) {
      float v = logits[g_base + j];
      if (!gk_isnan(v) && (besti < 0 || v > best)) { best = v; besti = int(j); }
    }
    rs[lid] = best;
    ri[lid] = besti;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
      if (lid < st) {
        float v = rs[lid + st];
        int i = ri[lid + st];
        if (i >= 0 && (ri[lid] < 0 || v > rs[lid] || (v == rs[lid] && i < ri[lid]))) {
          rs[lid] = v;
          ri[lid] = i;
        }
      }
      barrier();
    }
    g_max = rs[0];
    int amax = ri[0];
    barrier();
    // Argmax also when the largest logit is not finite (+inf; all -inf)
    // and for a NaN temperature: docs/kernels.md's edge cases.
    if (amax < 0 || !(p.temperature > 0.0) || gk_isinf(g_max)) {
      if (lid == 0u) outv[r] = max(amax, 0);
      continue;
    }
    g_temp = p.temperature;

    uint lo_bits = n > 1u ? uint(findMSB(n - 1u)) + 1u : 0u;
    uint kk = (p.top_k <= 0 || uint(p.top_k) >= n) ? n : uint(p.top_k);
    bool use_p = p.top_p < 1.0;
    uvec2 kmin = uvec2(0u);
    if (use_p) {
      uint c;
      float sk;
      if (kk < n) {
        uvec2 kt = search(kk, false, 0.0, lo_bits);
        count_ge(kt.x, kt.y, c, sk);
      } else {
        count_ge(0u, 0u, c, sk);
      }
      kmin = search(kk, true, p.top_p * sk, lo_bits);
    } else if (kk < n) {
      kmin = search(kk, false, 0.0, lo_bits);
    }

    // The walk: chunk sums in index order, scanned by invocation 0.
    uint chunk = (n + WG - 1u) / WG;
    uint j0 = min(n, lid * chunk), j1 = min(n, j0 + chunk);
    float cs = 0.0;
    int last = -1;
    for (uint j = j0; j < j1; j++) {
      float pj = prob(j);
      if (key_ge(floatBitsToUint(pj), n - 1u - j, kmin.x, kmin.y)) { cs += pj; last = int(j); }
    }
    rs[lid] = cs;
    ri[lid] = last;
    barrier();
    if (lid == 0u) {
      float run = 0.0;
      for (uint t = 0u; t < WG; t++) { float c = rs[t]; rs[t] = run; run += c; }
      rs[WG] = run;
      int lk = -1;
      for (uint t = 0u; t < WG; t++) lk = max(lk, ri[t]);
      ri[0] = lk; // the last kept token, if rounding leaves no crossing
    }
    barrier();
    float target = uv[r] * rs[WG];
    float run = rs[lid];
    int lastkept = ri[0];
    int found = 0x7fffffff;
    for (uint j = j0; j < j1 && run <= target; j++) {
      float pj = prob(j);
      if (key_ge(floatBitsToUint(pj), n - 1u - j, kmin.x, kmin.y)) {
        run += pj;
        if (run > target) found = int(j);
      }
    }
    barrier();
    ri[lid] = found;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
      if (lid < st) ri[lid] = min(ri[lid], ri[lid + st]);
      barrier();
    }
    if (lid == 0u) outv[r] = ri[0] != 0x7fffffff ? ri[0] : max(lastkept, 0);
    barrier();
  }
}
