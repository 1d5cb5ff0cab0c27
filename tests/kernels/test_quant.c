/*
 * test_quant.c - kernelsrc/common/gk_quant.h, the arithmetic every backend
 * shares, against computations that do not use it: binary16 through ldexp
 * (tests/common/qref.c) for all 65536 patterns, code unpacking against a
 * reader that takes the bit stream one bit at a time.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "gk_quant.h"
#include "qref.h"

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Every binary16 pattern decodes to the same float bits as ldexp gives
 * (so +0 and -0 are told apart); every NaN pattern to a NaN. */
static void f16_all_patterns(void **state) {
  (void)state;
  int bad = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    const float got = gk_q_f16_to_f32((uint16_t)h);
    const float want = qref_f16_decode((uint16_t)h);
    const int ok = isnan(want) ? isnan(got) : bits_of(got) == bits_of(want);
    if (!ok && bad++ < 5)
      print_error("binary16 0x%04x: got %a (0x%08x), expected %a (0x%08x)\n",
                  (unsigned)h, (double)got, (unsigned)bits_of(got),
                  (double)want, (unsigned)bits_of(want));
  }
  assert_int_equal(bad, 0);
}

/* Known values, written out, so that a shared mistake of gk_quant.h and
 * qref cannot hide: the edges of each class of binary16. */
static void f16_known_values(void **state) {
  (void)state;
  static const struct {
    uint16_t h;
    float f;
  } cases[] = {
      {0x0000, 0.0f},           {0x3c00, 1.0f},
      {0xc000, -2.0f},          {0x3555, 0x1.554p-2f},
      {0x7bff, 65504.0f},       {0xfbff, -65504.0f},
      {0x0400, 0x1p-14f},       {0x03ff, 0x1.ff8p-15f},
      {0x0001, 0x1p-24f},       {0x8001, -0x1p-24f},
      {0x7c00, INFINITY},       {0xfc00, -INFINITY},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    assert_int_equal(bits_of(gk_q_f16_to_f32(cases[i].h)), bits_of(cases[i].f));
  /* Negative zero keeps its sign; NaNs stay NaN, quiet or signalling. */
  assert_int_equal(bits_of(gk_q_f16_to_f32(0x8000)), 0x80000000u);
  assert_true(isnan(gk_q_f16_to_f32(0x7e00)));
  assert_true(isnan(gk_q_f16_to_f32(0x7c01)));
  assert_true(isnan(gk_q_f16_to_f32(0xffff)));
}

/* The test-data encoder inverts the decoder on every non-NaN pattern and
 * rounds halfway cases to even, overflowing to inf past 65520. */
static void f16_encoder(void **state) {
  (void)state;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    const float f = gk_q_f16_to_f32((uint16_t)h);
    if (!isnan(f))
      assert_int_equal(qref_f16_encode(f), h);
  }
  assert_int_equal(qref_f16_encode(1.0f + 0x1p-11f), 0x3c00);     /* tie: even */
  assert_int_equal(qref_f16_encode(1.0f + 0x3p-11f), 0x3c02);     /* tie: even */
  assert_int_equal(qref_f16_encode(1.0f + 0x1.8p-11f), 0x3c01);   /* above tie */
  assert_int_equal(qref_f16_encode(65519.0f), 0x7bff);
  assert_int_equal(qref_f16_encode(65520.0f), 0x7c00);
  assert_int_equal(qref_f16_encode(-1e9f), 0xfc00);
  assert_int_equal(qref_f16_encode(0x1p-25f), 0x0000);            /* tie: even */
  assert_int_equal(qref_f16_encode(0x3p-25f), 0x0002);            /* tie: even */
  assert_int_equal(qref_f16_encode(0x1.ffcp-15f), 0x0400);        /* rounds up to normal */
  assert_true((qref_f16_encode(NAN) & 0x7fff) > 0x7c00);
}

static void little_endian_reads(void **state) {
  (void)state;
  const unsigned char b[5] = {0x34, 0x12, 0x78, 0x56, 0x9a};
  assert_int_equal(gk_q_le16(b), 0x1234);
  assert_int_equal(gk_q_le32(b), 0x56781234u);
  /* Any alignment: reads at an odd address too. */
  assert_int_equal(gk_q_le32(b + 1), 0x9a567812u);
}

static void block_sizes(void **state) {
  (void)state;
  assert_int_equal(GK_QBLOCK, 32);
  assert_int_equal(GK_QBLOCK_BYTES(1), 8);
  assert_int_equal(GK_QBLOCK_BYTES(2), 12);
  assert_int_equal(GK_QBLOCK_BYTES(4), 20);
  assert_int_equal(GK_QBLOCK_BYTES(8), 36);
  assert_int_equal(gk_q_row_bytes(4, 4096), 128 * 20);
  assert_int_equal(gk_q_row_bytes(1, 64), 2 * 8);
  for (int bits = 1; bits <= 8; bits *= 2)
    assert_int_equal(qref_w_bytes(bits, 3, 96), (size_t)GK_QBLOCK_BYTES(bits) * 9);
}

/* Both forms of code unpacking against the bit-by-bit reader, for random
 * code bytes and for every single set bit (which must land in exactly one
 * code, at the right place). */
static void check_codes(int bits) {
  unsigned char codes[32];
  uint32_t words[8];
  const int nbytes = 4 * bits;
  qref_rng r;
  qref_seed(&r, 0x5eed0000u + (unsigned)bits);
  for (int round = 0; round < 2000 + 8 * nbytes; round++) {
    memset(codes, 0, sizeof codes);
    if (round < 8 * nbytes)
      codes[round / 8] = (unsigned char)(1u << (round % 8));
    else
      for (int i = 0; i < nbytes; i++)
        codes[i] = (unsigned char)(qref_next(&r) >> 56);
    for (int u = 0; u < bits; u++)
      words[u] = gk_q_le32(codes + 4 * u);
    for (int j = 0; j < GK_QBLOCK; j++) {
      const unsigned want = qref_code(codes, bits, j);
      if (gk_q_code(codes, bits, j) != want || gk_q_code_w32(words, bits, j) != want)
        fail_msg("bits=%d round %d code %d: gk_q_code %u, gk_q_code_w32 %u, "
                 "bit reader %u",
                 bits, round, j, gk_q_code(codes, bits, j),
                 gk_q_code_w32(words, bits, j), want);
    }
  }
  /* All ones: every code is the largest. */
  memset(codes, 0xff, sizeof codes);
  for (int j = 0; j < GK_QBLOCK; j++)
    assert_int_equal(gk_q_code(codes, bits, j), GK_QMASK(bits));
}

static void codes_bits1(void **state) { (void)state; check_codes(1); }
static void codes_bits2(void **state) { (void)state; check_codes(2); }
static void codes_bits4(void **state) { (void)state; check_codes(4); }
static void codes_bits8(void **state) { (void)state; check_codes(8); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(f16_all_patterns),
      cmocka_unit_test(f16_known_values),
      cmocka_unit_test(f16_encoder),
      cmocka_unit_test(little_endian_reads),
      cmocka_unit_test(block_sizes),
      cmocka_unit_test(codes_bits1),
      cmocka_unit_test(codes_bits2),
      cmocka_unit_test(codes_bits4),
      cmocka_unit_test(codes_bits8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
