/*
 * test_metal_rules.c - what of the Metal backend runs without a Mac: the
 * selection rule (an image for macOS / Metal X.Y runs on a Mac whose OS
 * supports Metal >= X.Y; the newest wins), the metallib header check of
 * gk verify, and, off Apple, detection and loading saying that Metal needs
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

#include "../loader/fixture.h"
#include "gk.h"

/* Bytes with a metallib's magic: enough for the header check (the rest of
 * a metallib is for the driver, which is not here). */
static const char lib[32] = "MTLB\x01\x80\x02\x00";

static void test_select(void **state) {
  (void)state;
  fx_image im[] = {
      {"k", "metal", "macos-metal2.4", "", "metallib", NULL, NULL, NULL, lib, sizeof lib},
      {"k", "metal", "macos-metal3.0", "", "metallib", NULL, NULL, NULL, lib, sizeof lib},
      {"k", "metal", "macos-metal3.2", "", "metallib", NULL, NULL, NULL, lib, sizeof lib},
      {"k", "metal", "ios-metal3.0", "", "metallib", NULL, NULL, NULL, lib, sizeof lib},
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
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_select)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
