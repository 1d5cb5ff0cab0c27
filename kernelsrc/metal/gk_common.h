// gk_common.h - arithmetic every Metal kernel shares: the algorithms of
// kernelsrc/vulkan/gk_common.glsl in MSL. binary16 and bfloat16 travel in
// uint words and are decoded with integer operations (exact, and the same bits as every
// other backend), NaN tests look at bits, and sin/cos have their own range
// reduction. The toolchain builds with -fno-fast-math: Metal's default fast
// math would let the compiler assume no NaN or infinity.
#ifndef GK_COMMON_METAL_H
#define GK_COMMON_METAL_H

#include <metal_stdlib>
using namespace metal;

inline float gk_f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu;
  uint mant = h & 0x3ffu;
  if (e == 0x1fu) return as_type<float>(sign | 0x7f800000u | (mant << 13));
  if (e == 0u) return as_type<float>(sign | as_type<uint>(float(mant) * 5.9604644775390625e-8f));
  return as_type<float>(sign | ((e + 112u) << 23) | (mant << 13));
}

inline uint gk_f32_to_f16(float f) {
  uint u = as_type<uint>(f);
  uint sign = (u >> 16) & 0x8000u;
  uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return sign;
    uint e = a >> 23;
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;
    uint r = m >> shift;
    uint rem = m & ((1u << shift) - 1u);
    uint half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) r += 1u;
    return sign | r;
  }
  uint r = a - 0x38000000u;
  uint rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) r += 1u;
  return sign | r;
}

inline bool gk_isnan(float f) { return (as_type<uint>(f) & 0x7fffffffu) > 0x7f800000u; }

// bfloat16 with bit operations alone (Metal's `bfloat` type needs Metal
// 3.1): the pattern h is the high half of a binary32, exactly.
inline float gk_bf16_to_f32(ushort h) { return as_type<float>(uint(h) << 16); }

// float -> bfloat16 bits, nearest even: 0x7fff plus the lowest kept bit
// carries into the kept half exactly when it should; a NaN becomes the
// quiet NaN 0x7fc0 with its sign.
inline ushort gk_f32_to_bf16(float f) {
  uint u = as_type<uint>(f);
  if (gk_isnan(f)) return ushort(((u >> 16) & 0x8000u) | 0x7fc0u);
  return ushort((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline bool gk_isinf(float f) { return (as_type<uint>(f) & 0x7fffffffu) == 0x7f800000u; }

// float2(sin a, cos a): Cody-Waite by pi/2 in three parts, Cephes' sinf and
// cosf polynomials on [-pi/4, pi/4].
inline float2 gk_sincos(float a) {
  float k = floor(a * 0.636619772367581343f + 0.5f);
  float r = fma(k, -1.5703125f, a);
  r = fma(k, -4.837512969970703125e-4f, r);
  r = fma(k, -7.54978995489188216e-8f, r);
  float r2 = r * r;
  float ps = ((-1.9515295891e-4f * r2 + 8.3321608736e-3f) * r2 - 1.6666654611e-1f) * r2 * r + r;
  float pc = ((2.443315711809948e-5f * r2 - 1.388731625493765e-3f) * r2 + 4.166664568298827e-2f) *
                 r2 * r2 - 0.5f * r2 + 1.0f;
  int q = int(k) & 3;
  if (q == 0) return float2(ps, pc);
  if (q == 1) return float2(pc, -ps);
  if (q == 2) return float2(-ps, -pc);
  return float2(-pc, ps);
}


// ---- float-float (hi + lo, ~44 bits) for rope's angle: the algorithms of
// kernelsrc/vulkan/gk_common.glsl. Built with -fno-fast-math, so the
// compiler keeps IEEE adds and multiplies as written; products are split
// (Veltkamp) rather than taken from fma, like the other backends.
inline float2 gk_ff_two_sum(float a, float b) {
  float s = a + b, bb = s - a;
  return float2(s, (a - (s - bb)) + (b - bb));
}
inline float2 gk_ff_split(float a) {
  float c = 4097.0f * a, hi = c - (c - a);
  return float2(hi, a - hi);
}
inline float2 gk_ff_two_prod(float a, float b) {
  float p = a * b;
  float2 x = gk_ff_split(a), y = gk_ff_split(b);
  return float2(p, ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y);
}
inline float2 gk_ff_add(float2 x, float2 y) {
  float2 s = gk_ff_two_sum(x.x, y.x);
  return gk_ff_two_sum(s.x, s.y + x.y + y.y);
}
inline float2 gk_ff_mul(float2 x, float2 y) {
  float2 p = gk_ff_two_prod(x.x, y.x);
  return gk_ff_two_sum(p.x, p.y + (x.x * y.y + x.y * y.x));
}
inline float2 gk_ff_pow(float2 x, uint n) {
  float2 r = float2(1.0f, 0.0f);
  while (n != 0u) {
    if ((n & 1u) != 0u) r = gk_ff_mul(r, x);
    x = gk_ff_mul(x, x);
    n >>= 1;
  }
  return r;
}
inline float2 gk_rope_base(float theta, uint d) {
  uint h = d / 2u;
  float b0 = exp2(-log2(theta) / float(h));
  float2 g = gk_ff_pow(float2(b0, 0.0f), h);
  float it = 1.0f / theta;
  float2 pe = gk_ff_two_prod(it, theta);
  float res = (1.0f - pe.x) - pe.y;
  float2 r = gk_ff_add(g, -float2(it, res / theta));
  float delta = (r.x + r.y) / (g.x * float(h));
  return gk_ff_add(float2(b0, 0.0f), float2(-b0 * delta, 0.0f));
}
// float2(sin a, cos a) of a float-float angle.
inline float2 gk_sincos_ff(float2 a) {
  float k = floor(a.x * 0.636619772367581343f + 0.5f);
  float2 r = gk_ff_add(a, -gk_ff_two_prod(k, 1.5707963705062866f));
  r = gk_ff_add(r, -gk_ff_two_prod(k, -4.3711388286737929e-08f));
  r = gk_ff_add(r, float2(-k * -1.7151245100058819e-15f, 0.0f));
  float2 sc = gk_sincos(r.x);
  float s1 = sc.x + r.y * sc.y, c1 = sc.y - r.y * sc.x;
  int q = int(k - 4.0f * floor(k / 4.0f));
  if (q == 0) return float2(s1, c1);
  if (q == 1) return float2(c1, -s1);
  if (q == 2) return float2(-s1, -c1);
  return float2(-c1, s1);
}

#endif
