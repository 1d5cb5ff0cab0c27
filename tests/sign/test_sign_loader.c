/*
 * test_sign_loader.c DIR ARCHIVE - signed archives through libgk's public
 * API, on the files make_signed.sh made with the real gk from the fixture
 * archive (ARCHIVE, unsigned): verifying a signature, requiring one at open
 * (file and memory), and the tampering each check must catch - metadata and
 * index rows by the signature, image bytes by the SHA-256 at load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "gk.h"

static const char *dir, *unsigned_path;
static uint8_t key_k[32], key_other[32];

static char *path_of(const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

static void key_id(const uint8_t key[32], char out[17]) {
  sodium_bin2hex(out, 17, key, 8);
}

static gk_archive *open_plain(const char *path) {
  gk_archive *ar = NULL;
  int rc = gk_archive_open(path, &ar);
  if (rc != GK_OK) fail_msg("cannot open '%s': %s", path, gk_last_error());
  return ar;
}

static void expect_msg(const char *msg, const char *want) {
  if (!strstr(msg, want))
    fail_msg("message lacks '%s': %s", want, msg);
}

static void test_status_text(void **state) {
  (void)state;
  assert_int_equal(GK_ESIGNATURE, -16);
  assert_string_equal(gk_strerror(GK_ESIGNATURE),
                      "archive signature missing or not valid");
}

static void test_verify_good(void **state) {
  (void)state;
  gk_archive *ar = open_plain(path_of("signed.gkfat"));
  assert_int_equal(gk_archive_verify_signature(ar, key_k), GK_OK);
  assert_string_equal(gk_archive_errmsg(ar), "");
  uint8_t keys[4][32];
  size_t n = 99;
  assert_int_equal(gk_archive_signers(ar, NULL, 0, &n), GK_OK);
  assert_int_equal(n, 1);
  assert_int_equal(gk_archive_signers(ar, keys, 4, &n), GK_OK);
  assert_memory_equal(keys[0], key_k, 32);
  gk_archive_close(ar);
}

static void test_wrong_key(void **state) {
  (void)state;
  char other[17], k[17];
  key_id(key_other, other);
  key_id(key_k, k);
  gk_archive *ar = open_plain(path_of("signed.gkfat"));
  assert_int_equal(gk_archive_verify_signature(ar, key_other), GK_ESIGNATURE);
  expect_msg(gk_archive_errmsg(ar), "is not signed by key");
  expect_msg(gk_archive_errmsg(ar), other);
  expect_msg(gk_archive_errmsg(ar), k); /* who did sign it */
  gk_archive_close(ar);
}

static void test_unsigned(void **state) {
  (void)state;
  gk_archive *ar = open_plain(unsigned_path);
  size_t n = 99;
  assert_int_equal(gk_archive_signers(ar, NULL, 0, &n), GK_OK);
  assert_int_equal(n, 0);
  assert_int_equal(gk_archive_verify_signature(ar, key_k), GK_ESIGNATURE);
  expect_msg(gk_archive_errmsg(ar), "is not signed");
  expect_msg(gk_archive_errmsg(ar), "gk sign");
  gk_archive_close(ar);
}

/* The digest is of the logical content: adding the signature table does
 * not change it, a changed metadata value or index row does. */
static void test_digest(void **state) {
  (void)state;
  uint8_t d_unsigned[32], d_signed[32], d_meta[32], d_row[32];
  gk_archive *ar = open_plain(unsigned_path);
  assert_int_equal(gk_archive_digest(ar, d_unsigned), GK_OK);
  gk_archive_close(ar);
  const char *const names[] = {"signed.gkfat", "meta.gkfat", "row.gkfat"};
  uint8_t *const out[] = {d_signed, d_meta, d_row};
  for (int i = 0; i < 3; i++) {
    ar = open_plain(path_of(names[i]));
    assert_int_equal(gk_archive_digest(ar, out[i]), GK_OK);
    gk_archive_close(ar);
  }
  assert_memory_equal(d_unsigned, d_signed, 32);
  assert_memory_not_equal(d_signed, d_meta, 32);
  assert_memory_not_equal(d_signed, d_row, 32);
}

static void test_tampered_index(void **state) {
  (void)state;
  const char *const names[] = {"meta.gkfat", "row.gkfat"};
  for (int i = 0; i < 2; i++) {
    gk_archive *ar = open_plain(path_of(names[i]));
    assert_int_equal(gk_archive_verify_signature(ar, key_k), GK_ESIGNATURE);
    expect_msg(gk_archive_errmsg(ar), "does not match the archive's contents");
    expect_msg(gk_archive_errmsg(ar), names[i]);
    gk_archive_close(ar);
  }
}

static void test_open_require(void **state) {
  (void)state;
  gk_open_options o = {key_k, 1, 0};
  gk_archive *ar = (gk_archive *)&o; /* must be reset to NULL on failure */

  assert_int_equal(gk_archive_open_ex(unsigned_path, &o, &ar), GK_ESIGNATURE);
  assert_null(ar);
  expect_msg(gk_last_error(), "is not signed");

  const char *const bad[] = {"meta.gkfat", "row.gkfat"};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(gk_archive_open_ex(path_of(bad[i]), &o, &ar),
                     GK_ESIGNATURE);
    assert_null(ar);
    expect_msg(gk_last_error(), "does not match the archive's contents");
  }

  assert_int_equal(gk_archive_open_ex(path_of("signed.gkfat"), &o, &ar), GK_OK);
  assert_non_null(ar);
  assert_string_equal(gk_last_error(), "");
  /* A good archive is usable as usual: its image loads and runs. */
  gk_module *m = NULL;
  assert_int_equal(gk_module_load(ar, NULL, "rmsnorm", NULL, &m), GK_OK);
  gk_rmsnorm_fn rms = (gk_rmsnorm_fn)gk_module_symbol(m, "rmsnorm");
  assert_non_null(rms);
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, y[4];
  rms(x, w, y, 1, 4, 0.0f);
  /* rms = sqrt(30/4); y[3] = 4 / rms */
  assert_true(y[3] > 1.4605f && y[3] < 1.4606f);
  gk_module_unload(m);
  gk_archive_close(ar);

  /* Another key only: refused, naming the signer it does have. */
  gk_open_options other = {key_other, 1, 0};
  assert_int_equal(gk_archive_open_ex(path_of("signed.gkfat"), &other, &ar),
                   GK_ESIGNATURE);
  expect_msg(gk_last_error(), "is not signed by key");
  /* Several trusted keys: one valid signature is enough. */
  uint8_t two[64];
  memcpy(two, key_other, 32);
  memcpy(two + 32, key_k, 32);
  gk_open_options both = {two, 2, 0};
  assert_int_equal(gk_archive_open_ex(path_of("signed.gkfat"), &both, &ar),
                   GK_OK);
  gk_archive_close(ar);

  /* No keys: the plain open, signed or not. */
  gk_open_options none = {NULL, 0, 0};
  assert_int_equal(gk_archive_open_ex(unsigned_path, &none, &ar), GK_OK);
  gk_archive_close(ar);
  assert_int_equal(gk_archive_open_ex(unsigned_path, NULL, &ar), GK_OK);
  gk_archive_close(ar);
  gk_open_options broken = {NULL, 1, 0};
  assert_int_equal(gk_archive_open_ex(unsigned_path, &broken, &ar), GK_EINVAL);
  assert_null(ar);
  expect_msg(gk_last_error(), "trusted_keys is NULL");
}

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)n);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return p;
}

static void test_open_memory_require(void **state) {
  (void)state;
  gk_open_options o = {key_k, 1, 0};
  gk_archive *ar = NULL;
  size_t n;
  unsigned char *good = slurp(path_of("signed.gkfat"), &n);
  assert_int_equal(gk_archive_open_memory_ex(good, n, &o, &ar), GK_OK);
  assert_int_equal(gk_archive_verify_signature(ar, key_k), GK_OK);
  gk_archive_close(ar);
  free(good);

  unsigned char *bad = slurp(path_of("row.gkfat"), &n);
  assert_int_equal(gk_archive_open_memory_ex(bad, n, &o, &ar), GK_ESIGNATURE);
  assert_null(ar);
  expect_msg(gk_last_error(), "<memory,");
  expect_msg(gk_last_error(), "does not match the archive's contents");
  free(bad);
}

/* Image bytes are not in the signature's input; their SHA-256 is. Swapped
 * bytes leave the signature valid, and the load refuses them. */
static void test_tampered_image(void **state) {
  (void)state;
  gk_open_options o = {key_k, 1, 0};
  gk_archive *ar = NULL;
  assert_int_equal(gk_archive_open_ex(path_of("blob.gkfat"), &o, &ar), GK_OK);
  gk_module *m = (gk_module *)&o;
  assert_int_equal(gk_module_load(ar, NULL, "rmsnorm", NULL, &m), GK_EHASH);
  assert_null(m);
  expect_msg(gk_archive_errmsg(ar), "does not match its SHA-256");
  size_t count = 0, nrms = 0;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  for (size_t i = 0; i < count; i++) {
    gk_image_info im;
    assert_int_equal(gk_archive_image(ar, i, &im), GK_OK);
    if (strcmp(im.kernel, "rmsnorm") != 0) continue;
    void *bytes = (void *)&o;
    size_t size = 0;
    assert_int_equal(gk_archive_read(ar, i, &bytes, &size), GK_EHASH);
    assert_null(bytes);
    nrms++;
  }
  assert_true(nrms > 0);
  /* The untouched images still load. */
  assert_int_equal(gk_module_load(ar, NULL, "argmax", NULL, &m), GK_OK);
  gk_module_unload(m);
  gk_archive_close(ar);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_sign_loader DIR ARCHIVE\n");
    return 2;
  }
  dir = argv[1];
  unsigned_path = argv[2];
  if (sodium_init() < 0) return 1;
  /* The keys gk keygen wrote: "gk-ed25519-public" and 64 hex digits. */
  {
    char line[256];
    const char *const names[] = {"k.pub", "other.pub"};
    uint8_t *const keys[] = {key_k, key_other};
    for (int i = 0; i < 2; i++) {
      FILE *f = fopen(path_of(names[i]), "r");
      size_t got = 0;
      if (!f || !fgets(line, sizeof line, f) ||
          sodium_hex2bin(keys[i], 32, line + strlen("gk-ed25519-public "), 64,
                         NULL, &got, NULL) != 0 || got != 32) {
        fprintf(stderr, "FAIL: cannot read key '%s' (did make_signed.sh run?)\n",
                path_of(names[i]));
        return 1;
      }
      fclose(f);
    }
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_text),
      cmocka_unit_test(test_verify_good),    cmocka_unit_test(test_wrong_key),
      cmocka_unit_test(test_unsigned),       cmocka_unit_test(test_digest),
      cmocka_unit_test(test_tampered_index), cmocka_unit_test(test_open_require),
      cmocka_unit_test(test_open_memory_require),
      cmocka_unit_test(test_tampered_image),
  };
  return cmocka_run_group_tests_name("sign", tests, NULL, NULL);
}
