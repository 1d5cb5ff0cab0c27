// gk_common.glsl - arithmetic every Vulkan kernel shares, written so that it
// needs no device feature beyond Vulkan 1.1 core: binary16 and bfloat16
// travel in uint words (no 16-bit storage extension), NaN tests look at bits (fast-math
// compilers may fold isnan away), and sin/cos have their own range reduction
// (the Vulkan spec promises only 2^-11 absolute error for the built-ins,
// and only on [-pi, pi]).
#ifndef GK_COMMON_GLSL
#define GK_COMMON_GLSL

// IEEE binary16 (low 16 bits of h) -> binary32, exact for every pattern:
// the same integer algorithm as kernelsrc/common/gk_quant.h. A subnormal
// binary16 is mant * 2^-24, computed as one exact product.
float gk_f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu;
  uint mant = h & 0x3ffu;
  if (e == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mant << 13));
  if (e == 0u) return uintBitsToFloat(sign | floatBitsToUint(float(mant) * 5.9604644775390625e-8));
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (mant << 13));
}

// binary32 -> binary16 bits, rounded to nearest even, in integer arithmetic
// so that the result does not depend on how a driver implements
// packHalf2x16. Overflow gives infinity; NaN stays a quiet NaN.
uint gk_f32_to_f16(float f) {
  uint u = floatBitsToUint(f);
  uint sign = (u >> 16) & 0x8000u;
  uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) return sign | 0x7c00u; // rounds to >= 65520: infinity
  if (a < 0x38800000u) {                        // below 2^-14: subnormal or zero
    if (a < 0x33000000u) return sign;           // below half the smallest subnormal
    uint e = a >> 23;
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;                      // 14 + (113 - e) ... places to drop
    uint r = m >> shift;
    uint rem = m & ((1u << shift) - 1u);
    uint half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) r += 1u;
    return sign | r;
  }
  uint r = a - 0x38000000u;                      // rebias 127 -> 15, still 13 extra bits
  uint rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) r += 1u;
  return sign | r;
}

// A NaN by its bits: exponent all ones and a non-zero mantissa.
bool gk_isnan(float f) {
  return (floatBitsToUint(f) & 0x7fffffffu) > 0x7f800000u;
}

// bfloat16 is the high half of a binary32: the low 16 bits of h, shifted
// into place, are the float exactly.
float gk_bf16_to_f32(uint h) {
  return uintBitsToFloat(h << 16);
}

// binary32 -> bfloat16 bits, rounded to nearest even in integer arithmetic:
// adding 0x7fff plus the lowest kept bit carries into the kept half exactly
// when the dropped half is above the tie, or on it with an odd kept half
// (a carry into the exponent gives the next binade or infinity). A NaN
// becomes the quiet NaN 0x7fc0 with its sign (the carry could make it an
// infinity).
uint gk_f32_to_bf16(float f) {
  uint u = floatBitsToUint(f);
  if (gk_isnan(f)) return ((u >> 16) & 0x8000u) | 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// Two floats rounded to bfloat16 in one word, a in the low half.
uint gk_pack_bf16x2(float a, float b) {
  return gk_f32_to_bf16(a) | (gk_f32_to_bf16(b) << 16);
}

// An infinity by its bits.
bool gk_isinf(float f) {
  return (floatBitsToUint(f) & 0x7fffffffu) == 0x7f800000u;
}

// sin and cos of a in one call, to about 2 ulp for |a| up to ~1e5: Cody-Waite
// reduction by pi/2 in three parts (each product exact or fused), then the
// minimax polynomials of Cephes' sinf/cosf on [-pi/4, pi/4].
void gk_sincos(float a, out float s, out float c) {
  precise float k = floor(a * 0.636619772367581343 + 0.5);
  precise float r = fma(k, -1.5703125, a);
  r = fma(k, -4.837512969970703125e-4, r);
  r = fma(k, -7.54978995489188216e-8, r);
  float r2 = r * r;
  float ps = ((-1.9515295891e-4 * r2 + 8.3321608736e-3) * r2 - 1.6666654611e-1) * r2 * r + r;
  float pc = ((2.443315711809948e-5 * r2 - 1.388731625493765e-3) * r2 + 4.166664568298827e-2) * r2 * r2
             - 0.5 * r2 + 1.0;
  int q = int(k) & 3;
  if (q == 0) { s = ps; c = pc; }
  else if (q == 1) { s = pc; c = -ps; }
  else if (q == 2) { s = -ps; c = -pc; }
  else { s = -pc; c = ps; }
}

// ---- float-float: a value as hi + lo, about 48 significant bits ----------
// For rope's angle pos * theta^(-2p/d), which the spec forms in double:
// WGSL and Metal have no f64 and Vulkan has it only as an optional feature,
// so every GPU backend forms the angle in float-float instead: Dekker's and
// Knuth's error-free transformations. Products are split Veltkamp-style
// rather than taken from fma: Vulkan does not promise a fused fma (its
// precision is "inherited from a multiply and an add", and lavapipe indeed
// rounds twice). `precise` keeps the compiler from contracting or
// reassociating; Vulkan's add and multiply are correctly rounded.
vec2 gk_ff_two_sum(float a, float b) {
  precise float s = a + b;
  precise float bb = s - a;
  precise float e = (a - (s - bb)) + (b - bb);
  return vec2(s, e);
}
vec2 gk_ff_split(float a) { // a = hi + lo, each of 12 bits
  precise float c = 4097.0 * a;
  precise float hi = c - (c - a);
  precise float lo = a - hi;
  return vec2(hi, lo);
}
vec2 gk_ff_two_prod(float a, float b) { // a * b = p + e exactly
  precise float p = a * b;
  vec2 x = gk_ff_split(a), y = gk_ff_split(b);
  precise float e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return vec2(p, e);
}
vec2 gk_ff_add(vec2 x, vec2 y) {
  vec2 s = gk_ff_two_sum(x.x, y.x);
  precise float lo = s.y + x.y + y.y;
  return gk_ff_two_sum(s.x, lo);
}
vec2 gk_ff_mul(vec2 x, vec2 y) {
  vec2 p = gk_ff_two_prod(x.x, y.x);
  precise float lo = p.y + (x.x * y.y + x.y * y.x);
  return gk_ff_two_sum(p.x, lo);
}
// x^n for n >= 0, by squaring: about 2 log2(n) products.
vec2 gk_ff_pow(vec2 x, uint n) {
  vec2 r = vec2(1.0, 0.0);
  while (n != 0u) {
    if ((n & 1u) != 0u) r = gk_ff_mul(r, x);
    x = gk_ff_mul(x, x);
    n >>= 1;
  }
  return r;
}

// theta^(-2/d) to float-float: exp2/log2 give ~22 bits, one Newton step on
// b^(d/2) = 1/theta, with the residual formed in float-float, gives ~44.
vec2 gk_rope_base(float theta, uint d) {
  uint h = d / 2u;
  float b0 = exp2(-log2(theta) / float(h));
  vec2 g = gk_ff_pow(vec2(b0, 0.0), h);           // b0^h
  float it = 1.0 / theta;                          // 1/theta as float-float:
  vec2 pe = gk_ff_two_prod(it, theta);             // it * theta = p + e exactly,
  precise float res = (1.0 - pe.x) - pe.y;         // 1 - p is exact (p ~ 1)
  vec2 t = vec2(it, res / theta);
  vec2 r = gk_ff_add(g, -t);                       // g - 1/theta
  float delta = (r.x + r.y) / (g.x * float(h));    // the Newton step, relative
  return gk_ff_add(vec2(b0, 0.0), vec2(-b0 * delta, 0.0));
}

// sin and cos of a float-float angle: reduced by pi/2 in float-float (pi/2
// as three floats, each product with k exact), then the float polynomials
// on the high part, corrected to first order by the low part.
void gk_sincos_ff(vec2 a, out float s, out float c) {
  float k = floor(a.x * 0.636619772367581343 + 0.5);
  vec2 r = gk_ff_add(a, -gk_ff_two_prod(k, 1.5707963705062866));   // float(pi/2)
  r = gk_ff_add(r, -gk_ff_two_prod(k, -4.3711388286737929e-08));   // the next 24 bits
  r = gk_ff_add(r, vec2(-k * -1.7151245100058819e-15, 0.0));       // the rest
  float rs, rc;
  gk_sincos(r.x, rs, rc); // |r.x| <= pi/4: its own reduction does nothing
  precise float s1 = rs + r.y * rc;
  precise float c1 = rc - r.y * rs;
  int q = int(mod(k, 4.0));
  if (q == 0) { s = s1; c = c1; }
  else if (q == 1) { s = c1; c = -s1; }
  else if (q == 2) { s = -s1; c = -c1; }
  else { s = -c1; c = s1; }
}

#endif
