/*
 * test_kmath.c - the arithmetic the CPU kernels of the kernel set share,
 * against computations that do not use it: the binary16 encoder of
 * kernelsrc/common/gk_quant.h (gk_q_f32_to_f16, also used by GPU
 * backends) against qref_f16_encode, and kernelsrc/cpu/gk_cpu.h (vector
 * f16 and bf16 loads and stores, exp, and the double exp/log/sin/cos/sqrt
 * that keep the images free of libm) against libm. Built at this build's
 * default -march (the SSE2 layer of gk_cpu.h, the one with hand-written f16
 * loads) and again for x86-64-v3 and v4 (test_kmath_v3, _v4: their F16C,
 * FMA and vector bf16 code), which say SKIP on a CPU without those
 * instructions.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gk_cpu.h"
#include "qref.h"

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* 1 when the encoder agrees with the reference on f (NaNs: both NaN of
 * the same sign, quiet). */
static int encode_ok(float f) {
  const uint16_t got = gk_q_f32_to_f16(f), want = qref_f16_encode(f);
  if (isnan(f))
    return (got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0 && (got & 0x200) &&
           (got & 0x8000) == (want & 0x8000);
  return got == want;
}

static int check_encode(float f, int *bad) {
  if (encode_ok(f))
    return 1;
  if ((*bad)++ < 5)
    print_error("f32 %a (0x%08x): got 0x%04x, expected 0x%04x\n", (double)f,
                (unsigned)bits_of(f), (unsigned)gk_q_f32_to_f16(f),
                (unsigned)qref_f16_encode(f));
  return 0;
}

/* Every binary16 value, its float neighbours, and every midpoint between
 * two neighbouring binary16 values with its float neighbours: each
 * rounding decision, ties to even included, in both signs. */
static void encode_edges(void **state) {
  (void)state;
  int bad = 0;
  for (uint32_t h = 0; h < 0x7c00; h++) {
    const float a = qref_f16_decode((uint16_t)h);
    const float b = h + 1 < 0x7c00 ? qref_f16_decode((uint16_t)(h + 1)) : 65520.0f;
    const float mid = (float)(((double)a + (double)b) / 2); /* exact in float */
    const float pts[] = {a, mid};
    for (int s = 0; s < 2; s++)
      for (int i = 0; i < 2; i++) {
        const uint32_t u = bits_of(pts[i]);
        for (int d = -2; d <= 2; d++) {
          if (u == 0 && d < 0)
            continue;
          const float f = float_of(u + (uint32_t)d);
          check_encode(s ? -f : f, &bad);
        }
      }
  }
  assert_int_equal(bad, 0);
}

/* Known answers, written out, so that a shared mistake cannot hide. */
static void encode_known(void **state) {
  (void)state;
  assert_int_equal(gk_q_f32_to_f16(0.0f), 0x0000);
  assert_int_equal(gk_q_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(gk_q_f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(gk_q_f32_to_f16(-2.0f), 0xc000);
  assert_int_equal(gk_q_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(gk_q_f32_to_f16(65519.996f), 0x7bff);
  assert_int_equal(gk_q_f32_to_f16(65520.0f), 0x7c00);
  assert_int_equal(gk_q_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(gk_q_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(gk_q_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(gk_q_f32_to_f16(0x1p-25f), 0x0000);              /* tie to even 0 */
  assert_int_equal(gk_q_f32_to_f16(0x1.000002p-25f), 0x0001);       /* just above */
  assert_int_equal(gk_q_f32_to_f16(0x1.8p-24f), 0x0002);            /* tie to even 2 */
  assert_int_equal(gk_q_f32_to_f16(0x1.ff8p-15f), 0x03ff);          /* largest subnormal */
  assert_int_equal(gk_q_f32_to_f16(0x1.ffcp-15f), 0x0400);          /* tie: up to the smallest normal */
  assert_int_equal(gk_q_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);       /* tie to even */
  assert_int_equal(gk_q_f32_to_f16(1.0f + 0x1.8p-10f), 0x3c02);     /* tie up to even */
  assert_int_equal(gk_q_f32_to_f16(1e-10f), 0x0000);
  const uint16_t n = gk_q_f32_to_f16(-NAN);
  assert_true((n & 0x7e00) == 0x7e00 && (n & 0x8000));
  assert_true((gk_q_f32_to_f16(float_of(0x7f800001u)) & 0x7e00) == 0x7e00); /* sNaN quieted */
}

/* Random bit patterns over the whole float range. */
static void encode_random(void **state) {
  (void)state;
  qref_rng r;
  qref_seed(&r, 16);
  int bad = 0;
  for (int i = 0; i < 2000000; i++)
    check_encode(float_of((uint32_t)qref_next(&r)), &bad);
  /* Magnitudes near the binary16 range, where most decisions are. */
  for (int i = 0; i < 2000000; i++) {
    const uint32_t u = 0x32000000u + (uint32_t)(qref_next(&r) % 0x16000000u);
    check_encode(float_of(u | ((uint32_t)i & 1u) << 31), &bad);
  }
  assert_int_equal(bad, 0);
}

/* vf_load_h (the SSE2 integer conversion here) for all 65536 patterns. */
static void load_h_all(void **state) {
  (void)state;
  int bad = 0;
  for (uint32_t h0 = 0; h0 <= 0xffff; h0 += GK_VL) {
    uint16_t in[GK_VL];
    float out[GK_VL];
    for (int l = 0; l < GK_VL; l++)
      in[l] = (uint16_t)(h0 + (uint32_t)l);
    vf_store(out, vf_load_h(in));
    for (int l = 0; l < GK_VL; l++) {
      const float want = qref_f16_decode(in[l]);
      const int ok = isnan(want) ? isnan(out[l]) : bits_of(out[l]) == bits_of(want);
      if (!ok && bad++ < 5)
        print_error("binary16 0x%04x: got %a, expected %a\n", (unsigned)in[l],
                    (double)out[l], (double)want);
    }
  }
  assert_int_equal(bad, 0);
}

/* vf_store_h rounds like the encoder. */
static void store_h(void **state) {
  (void)state;
  qref_rng r;
  qref_seed(&r, 17);
  for (int i = 0; i < 100000; i++) {
    float in[GK_VL];
    uint16_t out[GK_VL];
    for (int l = 0; l < GK_VL; l++)
      in[l] = (float)((qref_uniform(&r) - 0.5) * 200000.0 * pow(2.0, -30.0 * qref_uniform(&r)));
    vf_store_h(out, vf_load(in));
    for (int l = 0; l < GK_VL; l++)
      assert_int_equal(out[l], qref_f16_encode(in[l]));
  }
}

/* vf_load_b for all 65536 patterns: exactly the pattern in the high half. */
static void load_b_all(void **state) {
  (void)state;
  int bad = 0;
  for (uint32_t h0 = 0; h0 <= 0xffff; h0 += GK_VL) {
    uint16_t in[GK_VL];
    float out[GK_VL];
    for (int l = 0; l < GK_VL; l++)
      in[l] = (uint16_t)(h0 + (uint32_t)l);
    vf_store(out, vf_load_b(in));
    for (int l = 0; l < GK_VL; l++)
      if (bits_of(out[l]) != (uint32_t)in[l] << 16 && bad++ < 5)
        print_error("bfloat16 0x%04x: got 0x%08x\n", (unsigned)in[l], (unsigned)bits_of(out[l]));
  }
  assert_int_equal(bad, 0);
}

/* f rounded to bfloat16 without the kernels' integer trick: the nearer of
 * the two bfloat16 values around it, compared in double, the even one on a
 * tie (past the largest finite value the next one up is 2^128: infinity). */
static uint16_t bf16_nearest(float f) {
  const uint32_t u = bits_of(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(sign | 0x7fc0u);
  if (a == 0x7f800000u)
    return (uint16_t)(sign | 0x7f80u);
  const uint32_t m = a >> 16;
  const double x = float_of(a), lo = float_of(m << 16);
  const double hi = m + 1 == 0x7f80u ? 0x1p128 : (double)float_of((m + 1) << 16);
  const uint32_t r = x - lo < hi - x ? m : x - lo > hi - x ? m + 1 : (m & 1u) ? m + 1 : m;
  return (uint16_t)(sign | r);
}

/* vf_store_b rounds to nearest even: random patterns (NaNs, infinities,
 * subnormals, values past the largest bfloat16 included) and exact ties. */
static void store_b(void **state) {
  (void)state;
  qref_rng r;
  qref_seed(&r, 23);
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    float in[GK_VL];
    uint16_t out[GK_VL];
    for (int l = 0; l < GK_VL; l++) {
      uint32_t u = (uint32_t)(qref_uniform(&r) * 4294967296.0);
      if (i % 4 == 1)
        u = (u & 0xffff0000u) | 0x8000u; /* a tie */
      else if (i % 4 == 2)
        u = (u & 0x80000000u) | 0x7f7f0000u | (u & 0xffffu); /* near the top */
      in[l] = float_of(u);
    }
    vf_store_b(out, vf_load(in));
    for (int l = 0; l < GK_VL; l++)
      if (out[l] != bf16_nearest(in[l]) && bad++ < 5)
        print_error("0x%08x: got bfloat16 0x%04x, expected 0x%04x\n",
                    (unsigned)bits_of(in[l]), (unsigned)out[l], (unsigned)bf16_nearest(in[l]));
  }
  assert_int_equal(bad, 0);
  assert_int_equal(gk_q_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(gk_q_f32_to_bf16(float_of(0x3f808000u)), 0x3f80); /* tie, even below */
  assert_int_equal(gk_q_f32_to_bf16(float_of(0x3f818000u)), 0x3f82); /* tie, even above */
  assert_int_equal(gk_q_f32_to_bf16(float_of(0x7f7f8000u)), 0x7f80); /* to infinity */
  assert_int_equal(gk_q_f32_to_bf16(float_of(0xffc00001u)), 0xffc0); /* NaN keeps its sign */
}

/* vf_exp and gk_expf: within 3 ulp of e^x where e^x is a normal float,
 * exactly 0 below that (and for -inf), exactly 1 at 0. */
static void exp_f32(void **state) {
  (void)state;
  double worst = 0.0;
  for (int i = 0; i <= 2000000; i++) {
    const float x = (float)(-100.0 + 101.0 * i / 2000000.0);
    float lanes[GK_VL], out[GK_VL];
    for (int l = 0; l < GK_VL; l++)
      lanes[l] = x;
    vf_store(out, vf_exp(vf_load(lanes)));
    const float s = gk_expf(x);
    if (x < -87.34f) {
      assert_true(out[0] == 0.0f && s == 0.0f);
      continue;
    }
    if (x < -87.33f)
      continue; /* the clamp's neighbourhood: either is fine */
    const double e = exp((double)x);
    const double ulp = ldexp(1.0, ilogb(e) - 23);
    const double err = fmax(fabs(out[0] - e), fabs(s - e)) / ulp;
    worst = fmax(worst, err);
    if (err > 3.0)
      print_error("exp(%a): vector %a, scalar %a, exact %a (%.2f ulp)\n", (double)x,
                  (double)out[0], (double)s, e, err);
    assert_true(err <= 3.0);
  }
  float lanes[GK_VL], out[GK_VL];
  for (int l = 0; l < GK_VL; l++)
    lanes[l] = l % 2 ? -INFINITY : 0.0f;
  vf_store(out, vf_exp(vf_load(lanes)));
  for (int l = 0; l < GK_VL; l++)
    assert_true(out[l] == (l % 2 ? 0.0f : 1.0f));
  assert_true(gk_expf(-INFINITY) == 0.0f && gk_expf(0.0f) == 1.0f);
  print_message("exp: worst %.2f ulp\n", worst);
}

/* The double helpers against libm. */
static void double_math(void **state) {
  (void)state;
  qref_rng r;
  qref_seed(&r, 18);
  for (int i = 0; i < 200000; i++) {
    const double x = -700.0 + 1400.0 * qref_uniform(&r);
    assert_true(fabs(gk_exp_d(x) - exp(x)) <= 4e-16 * exp(x));
    const double y = ldexp(0.5 + qref_uniform(&r), (int)(qref_next(&r) % 400) - 200);
    assert_true(fabs(gk_log_d(y) - log(y)) <= 4e-16 * fmax(1.0, fabs(log(y))));
    assert_true(gk_sqrt_d(y) == sqrt(y));
    /* Angles of rope: position (< 2^31) times a frequency (<= 1). */
    const double a = (qref_uniform(&r) - 0.5) * ldexp(1.0, (int)(qref_next(&r) % 33));
    double s, c;
    gk_sincos_d(a, &s, &c);
    if (!(fabs(s - sin(a)) <= 5e-16 && fabs(c - cos(a)) <= 5e-16))
      print_error("sincos(%a): %a %a, libm %a %a\n", a, s, c, sin(a), cos(a));
    assert_true(fabs(s - sin(a)) <= 5e-16 && fabs(c - cos(a)) <= 5e-16);
  }
  assert_true(gk_exp_d(0.0) == 1.0 && gk_log_d(1.0) == 0.0);
  assert_true(fabs(gk_log_d(10000.0) - log(10000.0)) <= 4e-16 * log(10000.0));
  assert_true(gk_exp_d(-800.0) == 0.0);
  assert_true(gk_log_d(0x1p-1070) == log(0x1p-1070)); /* subnormal input */
}

/* Kept out of main so that no instruction of the level runs before the
 * CPU check. */
static __attribute__((noinline)) int kmath_tests(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(encode_edges), cmocka_unit_test(encode_known),
      cmocka_unit_test(encode_random), cmocka_unit_test(load_h_all),
      cmocka_unit_test(store_h),      cmocka_unit_test(load_b_all),
      cmocka_unit_test(store_b),      cmocka_unit_test(exp_f32),
      cmocka_unit_test(double_math),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

int main(void) {
#if defined(__AVX512F__)
  if (!__builtin_cpu_supports("avx512f")) {
    printf("SKIP: this CPU has no AVX-512F (test_kmath_v4 is built for x86-64-v4)\n");
    return 77;
  }
#elif defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c")) {
    printf("SKIP: this CPU has no AVX2/FMA/F16C (test_kmath_v3 is built for x86-64-v3)\n");
    return 77;
  }
#endif
  return kmath_tests();
}
