/*
 * test_ac.c - the action-cache entries of the remote cache (cache/remote.h):
 * what gkc__ac_encode writes decodes back, and gkc__ac_decode, which reads
 * bytes from a server, survives every truncation and random damage
 * (run under the sanitizer build too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "remote.h"

static void two_outputs(gkc__output o[2]) {
  memset(o, 0, 2 * sizeof *o);
  strcpy(o[0].path, "image");
  memset(o[0].hash, 'a', 64);
  o[0].size = 15008;
  strcpy(o[1].path, "deps.json");
  memset(o[1].hash, '0', 64);
  o[1].size = 1ull << 40; /* a multi-byte varint */
}

static void round_trip(void **state) {
  (void)state;
  gkc__output in[2], out[4];
  two_outputs(in);
  unsigned char *buf;
  size_t len;
  assert_int_equal(gkc__ac_encode(in, 2, &buf, &len), 0);
  assert_int_equal(gkc__ac_decode(buf, len, out, 4), 2);
  for (int i = 0; i < 2; i++) {
    assert_string_equal(out[i].path, in[i].path);
    assert_string_equal(out[i].hash, in[i].hash);
    assert_int_equal(out[i].size, in[i].size);
  }
  /* The first bytes are field 2, length-delimited: an ActionResult's
   * output_files, what bazel-remote parses. */
  assert_int_equal(buf[0], 0x12);
  free(buf);
}

static void unknown_fields_are_skipped(void **state) {
  (void)state;
  gkc__output in[2], out[4];
  two_outputs(in);
  unsigned char *buf;
  size_t len;
  assert_int_equal(gkc__ac_encode(in, 2, &buf, &len), 0);
  /* exit_code = 3 (field 4, varint) and a fixed64 field 9 in front. */
  unsigned char *more = malloc(len + 11);
  more[0] = 4 << 3 | 0, more[1] = 3;
  more[2] = 9 << 3 | 1;
  memset(more + 3, 0xff, 8);
  memcpy(more + 11, buf, len);
  assert_int_equal(gkc__ac_decode(more, len + 11, out, 4), 2);
  assert_string_equal(out[1].path, "deps.json");
  free(more);
  free(buf);
}

static void truncations_and_damage_are_refused_safely(void **state) {
  (void)state;
  gkc__output in[2], out[4];
  two_outputs(in);
  unsigned char *buf;
  size_t len;
  assert_int_equal(gkc__ac_encode(in, 2, &buf, &len), 0);
  for (size_t n = 0; n < len; n++) {
    /* Exact copies, so a sanitizer sees any read past the end. */
    unsigned char *cut = malloc(n ? n : 1);
    memcpy(cut, buf, n);
    int r = gkc__ac_decode(cut, n, out, 4);
    assert_true(r >= -1 && r <= 2);
    free(cut);
  }
  srand(7);
  for (int round = 0; round < 20000; round++) {
    unsigned char *m = malloc(len);
    memcpy(m, buf, len);
    for (int k = 0; k < 1 + rand() % 4; k++) m[rand() % len] = (unsigned char)rand();
    int r = gkc__ac_decode(m, len, out, 4);
    assert_true(r >= -1 && r <= 4);
    for (int i = 0; i < r; i++) {
      assert_true(strlen(out[i].path) < sizeof out[i].path);
      assert_true(strlen(out[i].hash) < sizeof out[i].hash);
    }
    free(m);
  }
  /* Not a message at all. */
  static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  assert_int_equal(gkc__ac_decode(junk, sizeof junk, out, 4), -1);
  static const unsigned char group[] = {2 << 3 | 3};
  assert_int_equal(gkc__ac_decode(group, sizeof group, out, 4), -1);
  static const unsigned char too_long[] = {0x12, 0x7f, 0x0a};
  assert_int_equal(gkc__ac_decode(too_long, sizeof too_long, out, 4), -1);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(round_trip),
    cmocka_unit_test(unknown_fields_are_skipped),
    cmocka_unit_test(truncations_and_damage_are_refused_safely),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
