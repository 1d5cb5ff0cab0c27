// gk_common.wgsl - arithmetic every WGSL kernel shares (the same algorithms
// as kernelsrc/vulkan/gk_common.glsl): binary16 and bfloat16 in u32 words
// decoded and encoded with integer operations (core WebGPU, no shader-f16
// feature, and exact whatever a driver does with f16 subnormals), NaN tests on bits, and
// sin/cos with their own range reduction.
// Included by the C preprocessor (recipes/toolchains/wgsl.lua).

fn gk_f16_to_f32(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (mant << 13u)); }
  if (e == 0u) { return bitcast<f32>(sign | bitcast<u32>(f32(mant) * 5.9604644775390625e-8)); }
  return bitcast<f32>(sign | ((e + 112u) << 23u) | (mant << 13u));
}

fn gk_f32_to_f16(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  let sign = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  if (a > 0x7f800000u) { return sign | 0x7e00u | ((a >> 13u) & 0x3ffu); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    if (a < 0x33000000u) { return sign; }
    let e = a >> 23u;
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    var r = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) { r = r + 1u; }
    return sign | r;
  }
  var r = a - 0x38000000u;
  let rem = r & 0x1fffu;
  r = r >> 13u;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) { r = r + 1u; }
  return sign | r;
}

fn gk_isnan(f: f32) -> bool {
  return (bitcast<u32>(f) & 0x7fffffffu) > 0x7f800000u;
}

// bfloat16 (low 16 bits of h) -> f32: the high half of a binary32, exact.
fn gk_bf16_to_f32(h: u32) -> f32 {
  return bitcast<f32>(h << 16u);
}

// f32 -> bfloat16 bits, nearest even: 0x7fff plus the lowest kept bit
// carries into the kept half exactly when it should; a NaN becomes the
// quiet NaN 0x7fc0 with its sign.
fn gk_f32_to_bf16(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  if (gk_isnan(f)) { return ((u >> 16u) & 0x8000u) | 0x7fc0u; }
  return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}

// Two floats rounded to bfloat16 in one word, a in the low half.
fn gk_pack_bf16x2(a: f32, b: f32) -> u32 {
  return gk_f32_to_bf16(a) | (gk_f32_to_bf16(b) << 16u);
}

fn gk_isinf(f: f32) -> bool {
  return (bitcast<u32>(f) & 0x7fffffffu) == 0x7f800000u;
}

// sin and cos: Cody-Waite reduction by pi/2 in three parts, then Cephes'
// sinf/cosf polynomials on [-pi/4, pi/4]. Returns vec2(sin, cos).
fn gk_sincos(a: f32) -> vec2<f32> {
  let k = floor(a * 0.636619772367581343 + 0.5);
  var r = fma(k, -1.5703125, a);
  r = fma(k, -4.837512969970703125e-4, r);
  r = fma(k, -7.54978995489188216e-8, r);
  let r2 = r * r;
  let ps = ((-1.9515295891e-4 * r2 + 8.3321608736e-3) * r2 - 1.6666654611e-1) * r2 * r + r;
  let pc = ((2.443315711809948e-5 * r2 - 1.388731625493765e-3) * r2 + 4.166664568298827e-2) * r2 * r2
           - 0.5 * r2 + 1.0;
  let q = i32(k) & 3;
  if (q == 0) { return vec2<f32>(ps, pc); }
  if (q == 1) { return vec2<f32>(pc, -ps); }
  if (q == 2) { return vec2<f32>(-ps, -pc); }
  return vec2<f32>(-pc, ps);
}

// ---- float-float (hi + lo, ~44 bits) for rope's angle: the algorithms of
// kernelsrc/vulkan/gk_common.glsl (Veltkamp split instead of fma, which is
// not promised to be fused). WGSL has no `precise`: this relies on the
// compiler keeping IEEE add and multiply as written (no reassociation, no
// contraction), which Dawn's validation here cannot show; only a device
// run can. The Vulkan path (same algorithm) is measured on lavapipe.
fn gk_ff_two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  let e = (a - (s - bb)) + (b - bb);
  return vec2<f32>(s, e);
}
fn gk_ff_split(a: f32) -> vec2<f32> {
  let c = 4097.0 * a;
  let hi = c - (c - a);
  return vec2<f32>(hi, a - hi);
}
fn gk_ff_two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = a * b;
  let x = gk_ff_split(a);
  let y = gk_ff_split(b);
  let e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return vec2<f32>(p, e);
}
fn gk_ff_add(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
  let s = gk_ff_two_sum(x.x, y.x);
  return gk_ff_two_sum(s.x, s.y + x.y + y.y);
}
fn gk_ff_mul(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
  let p = gk_ff_two_prod(x.x, y.x);
  return gk_ff_two_sum(p.x, p.y + (x.x * y.y + x.y * y.x));
}
fn gk_ff_pow(x0: vec2<f32>, n0: u32) -> vec2<f32> {
  var r = vec2<f32>(1.0, 0.0);
  var x = x0;
  var n = n0;
  while (n != 0u) {
    if ((n & 1u) != 0u) { r = gk_ff_mul(r, x); }
    x = gk_ff_mul(x, x);
    n = n >> 1u;
  }
  return r;
}
fn gk_rope_base(theta: f32, d: u32) -> vec2<f32> {
  let h = d / 2u;
  let b0 = exp2(-log2(theta) / f32(h));
  let g = gk_ff_pow(vec2<f32>(b0, 0.0), h);
  let it = 1.0 / theta;
  let pe = gk_ff_two_prod(it, theta);
  let res = (1.0 - pe.x) - pe.y;
  let t = vec2<f32>(it, res / theta);
  let r = gk_ff_add(g, -t);
  let delta = (r.x + r.y) / (g.x * f32(h));
  return gk_ff_add(vec2<f32>(b0, 0.0), vec2<f32>(-b0 * delta, 0.0));
}
// vec2(sin a, cos a) of a float-float angle.
fn gk_sincos_ff(a: vec2<f32>) -> vec2<f32> {
  let k = floor(a.x * 0.636619772367581343 + 0.5);
  var r = gk_ff_add(a, -gk_ff_two_prod(k, 1.5707963705062866));
  r = gk_ff_add(r, -gk_ff_two_prod(k, -4.3711388286737929e-08));
  r = gk_ff_add(r, vec2<f32>(-k * -1.7151245100058819e-15, 0.0));
  let sc = gk_sincos(r.x);
  let s1 = sc.x + r.y * sc.y;
  let c1 = sc.y - r.y * sc.x;
  let q = i32(k - 4.0 * floor(k / 4.0));
  if (q == 0) { return vec2<f32>(s1, c1); }
  if (q == 1) { return vec2<f32>(c1, -s1); }
  if (q == 2) { return vec2<f32>(-s1, -c1); }
  return vec2<f32>(-c1, s1);
}
