/*
 * test_metal_rules.c - what of the Metal backend runs without a Mac: the
 * selection rule (an image for macOS / Metal X.Y runs on a Mac whose OS
 * supports Metal >= X.Y; the newest wins), the metallib checks of gk
 * build, pack and verify (header, function list, entries), and, off Apple, detection and loading saying that Metal needs
 * macOS. The driver side (loader/metal.m) cannot be built or run here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../loader/fixture.h"
#include "gk.h"

/* A small file of the metallib layout loader/metal_target.c reads (no
 * metallib can be built here, and none from a Mac was checked): the 88-byte
 * header, and a function list of (NAME, TYPE) entries. type < 0 leaves TYPE
 * out. Returns the size written into out. */
typedef struct fn_spec {
  const char *name;
  int type;
} fn_spec;

static void put16(unsigned char *p, unsigned v) { p[0] = v & 0xff, p[1] = v >> 8 & 0xff; }
static void put32(unsigned char *p, uint32_t v) { put16(p, v & 0xffff), put16(p + 2, v >> 16); }
static void put64(unsigned char *p, uint64_t v) { put32(p, (uint32_t)v), put32(p + 4, v >> 32); }

static size_t metallib(unsigned char *out, size_t cap, const fn_spec *fns, int n) {
  memset(out, 0, cap);
  memcpy(out, "MTLB\x01\x80\x02\x00", 8);
  size_t at = 88 + 4;
  for (int i = 0; i < n; i++) {
    size_t start = at, len = strlen(fns[i].name) + 1;
    at += 4;
    memcpy(out + at, "NAME", 4), put16(out + at + 4, (unsigned)len);
    memcpy(out + at + 6, fns[i].name, len);
    at += 6 + len;
    if (fns[i].type >= 0) {
      memcpy(out + at, "TYPE", 4), put16(out + at + 4, 1), out[at + 6] = (unsigned char)fns[i].type;
      at += 7;
    }
    memcpy(out + at, "HASH", 4), put16(out + at + 4, 32);
    at += 6 + 32;
    memcpy(out + at, "ENDT", 4);
    at += 4;
    put32(out + start, (uint32_t)(at - start));
  }
  put32(out + 88, (uint32_t)n);
  put64(out + 16, at);          /* file size */
  put64(out + 24, 88);          /* function list offset */
  put64(out + 32, at - 88 - 4); /* its size, without the count */
  assert_true(at <= cap);
  return at;
}

static unsigned char lib[512];
static size_t lib_size;

/* Every entry of a row is a kernel of the function list, at every read
 * (gk_image_check is what gk build, pack and verify run). */
static void test_entries(void **state) {
  (void)state;
  static const fn_spec fns[] = {{"k", 2}, {"k_helper", -1}, {"vert", 0}};
  unsigned char b[512];
  size_t n = metallib(b, sizeof b, fns, 3);
  static const struct { const char *entry; const char *why; } table[] = {
      {"[\"k\"]", NULL},
      {"[\"k\",\"k_helper\"]", NULL}, /* no TYPE tag: not refused */
      {"[]", NULL},
      {"[\"kk\"]", "the metallib has no kernel 'kk' (not in its function list)"},
      {"[\"k_\"]", "no kernel 'k_'"},
      {"[\"vert\"]", "the metallib's function 'vert' is not a kernel (TYPE 0; kernels are 2)"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    gk_image_info row = {.backend = "metal", .format = "metallib", .target = "macos-metal3.0",
                         .entry = table[i].entry, .toolchain = ""};
    char why[256] = "";
    int rc = gk_image_check(b, n, &row, why, sizeof why);
    if (!table[i].why && rc != GK_OK) fail_msg("%s refused: %s", table[i].entry, why);
    if (table[i].why && (rc != GK_EFORMAT || !strstr(why, table[i].why)))
      fail_msg("%s: rc %d, '%s', expected '%s'", table[i].entry, rc, why, table[i].why);
  }
  /* Damaged containers: every read stays inside the image. */
  gk_image_info row = {.backend = "metal", .format = "metallib", .target = "macos-metal3.0",
                       .entry = "[\"k\"]", .toolchain = ""};
  char why[256];
  assert_int_equal(gk_image_check(b, 40, &row, why, sizeof why), GK_EFORMAT);
  assert_non_null(strstr(why, "too short for its 88-byte header"));
  for (size_t cut = 88; cut < n; cut++) { /* truncated anywhere in the list */
    int rc = gk_image_check(b, cut, &row, why, sizeof why);
    if (rc != GK_EFORMAT) fail_msg("cut at %zu: rc %d", cut, rc);
  }
  unsigned char c[512];
  memcpy(c, b, n);
  put64(c + 24, n);
  assert_int_equal(gk_image_check(c, n, &row, why, sizeof why), GK_EFORMAT);
  assert_non_null(strstr(why, "function list"));
  memcpy(c, b, n);
  put32(c + 88, 1000); /* more functions than the list holds */
  assert_int_equal(gk_image_check(c, n, &row, why, sizeof why), GK_EFORMAT);
  assert_non_null(strstr(why, "malformed"));
  memcpy(c, b, n);
  put16(c + 88 + 4 + 4 + 4, 0xffff); /* the first NAME runs past the list */
  assert_int_equal(gk_image_check(c, n, &row, why, sizeof why), GK_EFORMAT);
}

static void test_select(void **state) {
  (void)state;
  static const fn_spec k_only[] = {{"k", 2}};
  lib_size = metallib(lib, sizeof lib, k_only, 1);
  fx_image im[] = {
      {"k", "metal", "macos-metal2.4", "", "metallib", NULL, NULL, NULL, lib, lib_size},
      {"k", "metal", "macos-metal3.0", "", "metallib", NULL, NULL, NULL, lib, lib_size},
      {"k", "metal", "macos-metal3.2", "", "metallib", NULL, NULL, NULL, lib, lib_size},
      {"k", "metal", "ios-metal3.0", "", "metallib", NULL, NULL, NULL, lib, lib_size},
      {"bad", "metal", "macos-metal3.0", "", "metallib", NULL, NULL, NULL, "ELF\0not a metallib", 19},
  };
  char *path = fx_path("m.gkfat");
  fx_write(path, im, 5);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  static const struct { const char *dev, *want; } table[] = {
      {"metal:macos-metal2.4", "macos-metal2.4"}, {"metal:macos-metal3.0", "macos-metal3.0"},
      {"metal:macos-metal3.1", "macos-metal3.0"}, {"metal:macos-metal3.2", "macos-metal3.2"},
      {"metal:ios-metal3.1", "ios-metal3.0"},     {"metal:macos-metal2.3", NULL},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    gk_device d;
    size_t idx;
    gk_image_info info;
    assert_int_equal(gk_device_parse(table[i].dev, &d, NULL, 0), GK_OK);
    int rc = gk_archive_select(ar, &d, "k", "", &idx);
    if (!table[i].want) {
      assert_int_equal(rc, GK_ENOIMAGE);
      continue;
    }
    assert_int_equal(rc, GK_OK);
    assert_int_equal(gk_archive_image(ar, idx, &info), GK_OK);
    if (strcmp(info.target, table[i].want) != 0)
      fail_msg("%s chose %s, expected %s", table[i].dev, info.target, table[i].want);
  }
  gk_device d;
  gk_candidate c[8];
  size_t n, idx;
  assert_int_equal(gk_device_parse("metal:macos-metal3.0", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_explain(ar, &d, "k", "", 0, c, 8, &n), GK_OK);
  int saw_os = 0, saw_newer = 0;
  for (size_t i = 0; i < n; i++) {
    saw_os |= strstr(c[i].why, "built for ios, device runs macos") != NULL;
    saw_newer |= strstr(c[i].why, "needs macos-metal3.2, device has macos-metal3.0") != NULL;
  }
  assert_true(saw_os && saw_newer);
  /* The header check: verify refuses bytes that are not a metallib. */
  void *bytes;
  size_t size;
  assert_int_equal(gk_archive_select(ar, &d, "bad", "", &idx), GK_OK);
  assert_int_equal(gk_archive_read(ar, idx, &bytes, &size), GK_EFORMAT);
  assert_non_null(strstr(gk_archive_errmsg(ar), "not a metallib"));
  assert_int_equal(gk_archive_select(ar, &d, "k", "", &idx), GK_OK);
  assert_int_equal(gk_archive_read(ar, idx, &bytes, &size), GK_OK);
  gk_free(bytes);
  /* A metal device whose arch is not "OS-metalX.Y". */
  assert_int_equal(gk_device_parse("metal:apple9", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_select(ar, &d, "k", "", &idx), GK_EINVAL);
#ifndef __APPLE__
  /* Off Apple: no device, and loading says why. */
  gk_module *m;
  char why[256];
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_METAL, &d, why, sizeof why), GK_ENODEVICE);
  assert_non_null(strstr(why, "Apple"));
  assert_int_equal(gk_device_parse("metal:macos-metal3.0", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &d, "k", "", &m), GK_ENODEVICE);
  assert_null(m);
  assert_non_null(strstr(gk_archive_errmsg(ar), "Apple"));
#endif
  gk_archive_close(ar);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_select), cmocka_unit_test(test_entries)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
