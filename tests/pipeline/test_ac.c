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
#include <sodium.h>

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

/* Signed entries (remote.h): accepted for their key by a trusted signer
 * only; anything else is refused with a reason, and damage never crashes. */
static void signed_entries(void **state) {
  (void)state;
  assert_true(sodium_init() >= 0);
  unsigned char pk[32], sk[64], pk2[32], sk2[64], seed[32];
  memset(seed, 1, sizeof seed);
  crypto_sign_seed_keypair(pk, sk, seed);
  memset(seed, 2, sizeof seed);
  crypto_sign_seed_keypair(pk2, sk2, seed);
  char key[65], other[65];
  gk_err why;
  memset(key, 'c', 64), key[64] = '\0';
  memset(other, 'd', 64), other[64] = '\0';
  gkc__output in[2], out[4];
  two_outputs(in);
  unsigned char *buf, *plain;
  size_t len, plen;
  assert_int_equal(gkc__ac_encode_signed(in, 2, key, sk, &buf, &len), 0);
  /* Still an ActionResult with the same two outputs for any reader. */
  assert_int_equal(gkc__ac_decode(buf, len, out, 4), 2);
  assert_string_equal(out[0].hash, in[0].hash);
  unsigned char keys[2][32];
  memcpy(keys[0], pk2, 32);
  memcpy(keys[1], pk, 32);
  const unsigned char(*trusted)[32] = (const unsigned char(*)[32])keys;
  assert_int_equal(gkc__ac_check(buf, len, key, trusted, 2, &why), 0);
  /* Another signer, another job key, an unsigned entry, another image. */
  assert_int_equal(gkc__ac_check(buf, len, key, trusted, 1, &why), -1);
  assert_non_null(strstr(why.msg, "not trusted"));
  assert_int_equal(gkc__ac_check(buf, len, other, trusted, 2, &why), -1);
  assert_non_null(strstr(why.msg, "does not match"));
  assert_int_equal(gkc__ac_encode(in, 2, &plain, &plen), 0);
  assert_int_equal(gkc__ac_check(plain, plen, key, trusted, 2, &why), -1);
  assert_string_equal(why.msg, "it is not signed");
  free(plain);
  in[0].hash[0] = 'b';
  assert_int_equal(gkc__ac_encode(in, 2, &plain, &plen), 0);
  unsigned char *forged = malloc(plen + len);
  memcpy(forged, plain, plen); /* the signed entry's signature after other outputs */
  size_t sig_at = 0;
  gkc__output tmp[2];
  two_outputs(tmp);
  unsigned char *orig;
  size_t olen;
  gkc__ac_encode(tmp, 2, &orig, &olen);
  sig_at = olen;
  memcpy(forged + plen, buf + sig_at, len - sig_at);
  assert_int_equal(gkc__ac_check(forged, plen + len - sig_at, key, trusted, 2, &why), -1);
  free(orig);
  free(forged);
  free(plain);
  /* Every truncation and random damage: refused or accepted, never a crash,
   * and a damaged signature or outputs are never accepted. */
  for (size_t n = 0; n < len; n++) {
    unsigned char *cut = malloc(n ? n : 1);
    memcpy(cut, buf, n);
    assert_int_equal(gkc__ac_check(cut, n, key, trusted, 2, &why), -1);
    free(cut);
  }
  srand(11);
  for (int round = 0; round < 20000; round++) {
    unsigned char *m = malloc(len);
    memcpy(m, buf, len);
    size_t at = (size_t)rand() % len;
    m[at] ^= (unsigned char)(1 + rand() % 255);
    assert_int_equal(gkc__ac_check(m, len, key, trusted, 2, &why), -1);
    free(m);
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(round_trip),
    cmocka_unit_test(unknown_fields_are_skipped),
    cmocka_unit_test(truncations_and_damage_are_refused_safely),
    cmocka_unit_test(signed_entries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
