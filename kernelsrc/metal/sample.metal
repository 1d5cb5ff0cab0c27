// sample.metal - one token per row: temperature, top-k, top-p, a walk in
// index order with the caller's u[r] (docs/kernels.md); the algorithm of
// kernelsrc/vulkan/sample.comp (keys, bitwise search, no sort).
// Buffers: 0 logits (f32), 1 u (f32), 2 out (int), 3 params (rows, n as
// uint, temperature float, top_k int, top_p float). Dispatch: (rows, 1, 1)
// threadgroups of 128 threads.
#include "gk_common.h"

constant constexpr uint WG = 128u;
struct Params { uint rows, n; float temperature; int top_k; float top_p; };

// What every helper needs: the row, its maximum, the scratch, this thread.
struct Row {
  device const float *l;
  float lmax, temp;
  uint n, lid;
  threadgroup float *rs;
  threadgroup uint *rc;
};

static inline float prob(thread const Row &r, uint j) {
  float v = r.l[j];
  return gk_isnan(v) ? 0.0f : exp((v - r.lmax) / r.temp);
}

static inline bool key_ge(uint h, uint lo, uint kh, uint kl) {
  return h > kh || (h == kh && lo >= kl);
}

static void count_ge(thread const Row &r, uint kh, uint kl, thread uint &cnt, thread float &sum) {
  uint c = 0u;
  float s = 0.0f;
  for (uint j = r.lid; j < r.n; j += WG) {
    float pj = prob(r, j);
    if (key_ge(as_type<uint>(pj), r.n - 1u - j, kh, kl)) { c++; s += pj; }
  }
  r.rc[r.lid] = c;
  r.rs[r.lid] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint st = WG / 2u; st > 0u; st >>= 1) {
    if (r.lid < st) { r.rc[r.lid] += r.rc[r.lid + st]; r.rs[r.lid] += r.rs[r.lid + st]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  cnt = r.rc[0];
  sum = r.rs[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
}

static bool kept_above(thread const Row &r, uint kh, uint kl, uint kk, bool use_p, float x) {
  uint q;
  float s;
  count_ge(r, kh, kl + 1u, q, s);
  return q < kk && (!use_p || q == 0u || s < x);
}

static uint2 search(thread const Row &r, uint kk, bool use_p, float x, uint lo_bits) {
  uint kh = 0u, kl = 0u;
  if (kept_above(r, 0u, 0u, kk, use_p, x)) return uint2(0u, 0u);
  for (int b = 30; b >= 0; b--) {
    uint c = kh | (1u << uint(b));
    if (!kept_above(r, c, 0u, kk, use_p, x)) kh = c;
  }
  for (int b = int(lo_bits) - 1; b >= 0; b--) {
    uint c = kl | (1u << uint(b));
    if (!kept_above(r, kh, c, kk, use_p, x)) kl = c;
  }
  return uint2(kh, kl + 1u);
}

kernel void sample(device const float *logits [[buffer(0)]], device const float *uv [[buffer(1)]],
                   device int *outv [[buffer(2)]], constant Params &p [[buffer(3)]],
                   uint lid [[thread_index_in_threadgroup]],
                   uint3 wid [[threadgroup_position_in_grid]],
                   uint3 nwg [[threadgroups_per_grid]]) {
  threadgroup float rs[WG + 1u];
  threadgroup uint rc[WG];
  threadgroup int ri[WG];
  uint n = p.n;
  for (uint r = wid.x; r < p.rows; r += nwg.x) {
    device const float *row = logits + r * n;
    float best = 0.0f;
    int besti = -1;
    for (uint j = lid; j < n; j += WG) {
      float v = row[j];
      if (!gk_isnan(v) && (besti < 0 || v > best)) { best = v; besti = int(j); }
    }
    rs[lid] = best;
    ri[lid] = besti;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
      if (lid < st) {
        float v = rs[lid + st];
        int i = ri[lid + st];
        if (i >= 0 && (ri[lid] < 0 || v > rs[lid] || (v == rs[lid] && i < ri[lid]))) {
          rs[lid] = v;
          ri[lid] = i;
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float lmax = rs[0];
    int amax = ri[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (amax < 0 || !(p.temperature > 0.0f) || gk_isinf(lmax)) {
      if (lid == 0u) outv[r] = max(amax, 0);
      continue;
    }
    Row R = {row, lmax, p.temperature, n, lid, rs, rc};
    uint lo_bits = n > 1u ? 32u - clz(n - 1u) : 0u;
    uint kk = (p.top_k <= 0 || uint(p.top_k) >= n) ? n : uint(p.top_k);
    bool use_p = p.top_p < 1.0f;
    uint2 kmin = uint2(0u);
    if (use_p) {
      uint c;
      float sk;
      if (kk < n) {
        uint2 kt = search(R, kk, false, 0.0f, lo_bits);
        count_ge(R, kt.x, kt.y, c, sk);
      } else {
        count_ge(R, 0u, 0u, c, sk);
      }
      kmin = search(R, kk, true, p.top_p * sk, lo_bits);
    } else if (kk < n) {
      kmin = search(R, kk, false, 0.0f, lo_bits);
    }
    uint chunk = (n + WG - 1u) / WG;
    uint j0 = min(n, lid * chunk), j1 = min(n, j0 + chunk);
    float cs = 0.0f;
    int last = -1;
    for (uint j = j0; j < j1; j++) {
      float pj = prob(R, j);
      if (key_ge(as_type<uint>(pj), n - 1u - j, kmin.x, kmin.y)) { cs += pj; last = int(j); }
    }
    rs[lid] = cs;
    ri[lid] = last;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0u) {
      float run = 0.0f;
      for (uint t = 0u; t < WG; t++) { float c = rs[t]; rs[t] = run; run += c; }
      rs[WG] = run;
      int lk = -1;
      for (uint t = 0u; t < WG; t++) lk = max(lk, ri[t]);
      ri[0] = lk;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float target = uv[r] * rs[WG];
    float run = rs[lid];
    int lastkept = ri[0];
    int found = 0x7fffffff;
    for (uint j = j0; j < j1 && run <= target; j++) {
      float pj = prob(R, j);
      if (key_ge(as_type<uint>(pj), n - 1u - j, kmin.x, kmin.y)) {
        run += pj;
        if (run > target) found = int(j);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    ri[lid] = found;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
      if (lid < st) ri[lid] = min(ri[lid], ri[lid + st]);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0u) outv[r] = ri[0] != 0x7fffffff ? ri[0] : max(lastkept, 0);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
