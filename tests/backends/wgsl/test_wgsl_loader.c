/*
 * test_wgsl_loader.c ARCHIVE - WGSL images through libgk: the "wgsl"
 * device (a WebGPU host; never detected automatically), selection by
 * target and features, the text check gk verify runs, and
 * gk_module_symbol returning the specialized text.
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

static const char *archive;

static void test_device(void **state) {
  (void)state;
  gk_device d;
  char why[256];
  assert_string_equal(gk_backend_name(GK_BACKEND_WGSL), "wgsl");
  assert_int_equal(gk_backend_from_name("wgsl"), GK_BACKEND_WGSL);
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_WGSL, &d, why, sizeof why), GK_OK);
  assert_string_equal(d.arch, "webgpu");
  assert_int_equal(gk_device_parse("wgsl", &d, why, sizeof why), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_WGSL);
  assert_int_equal(gk_device_parse("wgsl:webgpu+f16", &d, why, sizeof why), GK_OK);
  assert_int_equal(gk_device_parse("wgsl:vulkan1.1", &d, why, sizeof why), GK_EINVAL);
  assert_non_null(strstr(why, "webgpu"));
  /* Never what gk_device_detect() finds: it is not hardware. */
  assert_int_equal(gk_device_detect(&d), GK_OK);
  assert_int_not_equal(d.backend, GK_BACKEND_WGSL);
}

static const char text_core[] = "@compute @workgroup_size(1) fn k() {}\n";
static const char text_f16[] = "enable f16;\n@compute @workgroup_size(1) fn k() {}\n";

static void test_select_and_text_check(void **state) {
  (void)state;
  const char bad_utf8[] = "@compute fn k() {} \xff\xfe";
  fx_image im[] = {
      {"k", "wgsl", "webgpu", "", "wgsl", NULL, NULL, NULL, text_core, sizeof text_core - 1},
      {"k", "wgsl", "webgpu+f16", "", "wgsl", NULL, NULL, NULL, text_f16, sizeof text_f16 - 1},
      {"nul", "wgsl", "webgpu", "", "wgsl", NULL, NULL, NULL, "fn\0x", 4},
      {"utf", "wgsl", "webgpu", "", "wgsl", NULL, NULL, NULL, bad_utf8, sizeof bad_utf8 - 1},
  };
  char *path = fx_path("w.gkfat");
  fx_write(path, im, 4);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  gk_device d;
  size_t idx;
  gk_image_info info;
  assert_int_equal(gk_device_parse("wgsl:webgpu", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_select(ar, &d, "k", "", &idx), GK_OK);
  assert_int_equal(gk_archive_image(ar, idx, &info), GK_OK);
  assert_string_equal(info.target, "webgpu");
  assert_int_equal(gk_device_parse("wgsl:webgpu+f16", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_select(ar, &d, "k", "", &idx), GK_OK);
  assert_int_equal(gk_archive_image(ar, idx, &info), GK_OK);
  assert_string_equal(info.target, "webgpu+f16");
  void *bytes;
  size_t size;
  assert_int_equal(gk_archive_select(ar, &d, "nul", "", &idx), GK_OK);
  assert_int_equal(gk_archive_read(ar, idx, &bytes, &size), GK_EFORMAT);
  assert_non_null(strstr(gk_archive_errmsg(ar), "NUL"));
  assert_int_equal(gk_archive_select(ar, &d, "utf", "", &idx), GK_OK);
  assert_int_equal(gk_archive_read(ar, idx, &bytes, &size), GK_EFORMAT);
  assert_non_null(strstr(gk_archive_errmsg(ar), "UTF-8"));
  /* The text: what gk_module_symbol gives, for a declared entry only. */
  gk_module *m;
  assert_int_equal(gk_module_load(ar, &d, "k", "", &m), GK_OK);
  const char *t = gk_module_symbol(m, "k");
  assert_non_null(t);
  assert_string_equal(t, text_f16);
  assert_null(gk_module_symbol(m, "kk"));
  assert_null(gk_module_symbol(m, "main"));
  gk_module_unload(m);
  gk_archive_close(ar);
  free(path);
}

/* The entries of a row are @compute functions of the text: comments, other
 * functions and names after `fn` elsewhere do not count (gk_image_check, as
 * gk build, pack, verify and load run it). */
static void test_entries(void **state) {
  (void)state;
  static const char text[] =
      "// @compute @workgroup_size(1) fn in_line_comment() {}\n"
      "/* @compute fn in_block /* nested */ @compute fn still_in_block() {} */\n"
      "fn helper(v: f32) -> f32 { return v; }\n"
      "@workgroup_size(8, (2), 1) @compute fn order_swapped() {}\n"
      "@compute\n  @workgroup_size(64, 1, 1)\n/* between */ fn\n  main2 (@builtin(local_invocation_index) i: u32) {}\n"
      "@compute @workgroup_size(1) fn k() { let f = helper(1.0); }\n";
  static const struct { const char *entry; const char *why; } table[] = {
      {"[\"k\"]", NULL},
      {"[\"k\",\"order_swapped\",\"main2\"]", NULL},
      {"[]", NULL},
      {"[\"kk\"]", "the WGSL text has no kernel 'kk' (no @compute fn kk)"},
      {"[\"in_line_comment\"]", "no kernel 'in_line_comment' (no @compute fn in_line_comment)"},
      {"[\"in_block\"]", "no kernel 'in_block'"},
      {"[\"still_in_block\"]", "no kernel 'still_in_block'"},
      {"[\"helper\"]", "no kernel 'helper' (fn helper has no @compute attribute)"},
      {"[\"mai\"]", "no kernel 'mai'"},
      {"[\"workgroup_size\"]", "no kernel 'workgroup_size'"},
      {"k", "is not a JSON array"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    gk_image_info row = {.backend = "wgsl", .format = "wgsl", .target = "webgpu",
                         .entry = table[i].entry, .toolchain = ""};
    char why[256] = "";
    int rc = gk_image_check(text, sizeof text - 1, &row, why, sizeof why);
    if (!table[i].why && rc != GK_OK) fail_msg("%s refused: %s", table[i].entry, why);
    if (table[i].why && (rc != GK_EFORMAT || !strstr(why, table[i].why)))
      fail_msg("%s: rc %d, '%s', expected '%s'", table[i].entry, rc, why, table[i].why);
  }
  /* gk_module_symbol answers by the same reading. */
  fx_image im[] = {{"k", "wgsl", "webgpu", "", "wgsl", NULL, NULL, NULL, text, sizeof text - 1}};
  char *path = fx_path("we.gkfat");
  fx_write(path, im, 1);
  gk_archive *ar;
  gk_device d;
  gk_module *m;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_device_parse("wgsl", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &d, "k", "", &m), GK_OK);
  assert_non_null(gk_module_symbol(m, "main2"));
  assert_null(gk_module_symbol(m, "helper"));
  assert_null(gk_module_symbol(m, "in_line_comment"));
  assert_null(gk_module_symbol(m, "still_in_block"));
  gk_module_unload(m);
  gk_archive_close(ar);
  free(path);
}

static void test_real_archive(void **state) {
  (void)state;
  gk_archive *ar;
  if (!archive || gk_archive_open(archive, &ar) != GK_OK) {
    printf("SKIP (this case): no wgsl archive\n");
    skip();
  }
  gk_device d;
  assert_int_equal(gk_device_parse("wgsl", &d, NULL, 0), GK_OK);
  static const char *const kernels[][2] = {{"qmatmul", "bits=4"}, {"flash_attention", "causal=1,dtype=f16,head_dim=128"},
                                           {"rmsnorm", ""}, {"rope", ""}, {"argmax", ""}, {"sample", ""}};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    gk_module *m;
    if (gk_module_load(ar, &d, kernels[i][0], kernels[i][1], &m) != GK_OK)
      fail_msg("%s", gk_archive_errmsg(ar));
    const char *t = gk_module_symbol(m, kernels[i][0]);
    assert_non_null(t);
    assert_non_null(strstr(t, "@compute"));
    /* Specialized: no preprocessor line is left. */
    assert_null(strstr(t, "#include"));
    assert_null(strstr(t, "#if"));
    gk_module_unload(m);
  }
  gk_archive_close(ar);
}

int main(int argc, char **argv) {
  archive = argc > 1 ? argv[1] : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device),
      cmocka_unit_test(test_select_and_text_check),
      cmocka_unit_test(test_entries),
      cmocka_unit_test(test_real_archive),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
