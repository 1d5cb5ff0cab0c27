/*
 * test_select.c - choosing an image, as a table: archive contents x device
 * -> chosen target, or status and the exact message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "gk.h"

/* Selection reads no image bytes, so every row may carry the same one. */
static void *img;
static size_t img_size;

typedef struct row {
  const char *kernel, *backend, *target, *variant;
} row;

/* The archives of the table, by name. */
static const struct {
  const char *name;
  row rows[12];
} archives[] = {
    {"levels34",
     {{"qmatmul", "cpu", "x86-64-v3", "bits=4"},
      {"qmatmul", "cpu", "x86-64-v4", "bits=4"}}},
    {"levels13",
     {{"qmatmul", "cpu", "x86-64", "bits=4"},
      {"qmatmul", "cpu", "x86-64-v3", "bits=4"}}},
    {"level2", {{"qmatmul", "cpu", "x86-64-v2", "bits=4"}}},
    {"mixed",
     {{"qmatmul", "cpu", "x86-64-v3", "bits=4"},
      {"qmatmul", "cuda", "sm_86", "bits=4"},
      {"qmatmul", "rocm", "gfx90a", "bits=4"}}},
    {"variants",
     {{"qmatmul", "cpu", "x86-64-v3", "bits=2"},
      {"qmatmul", "cpu", "x86-64-v3", "bits=4"},
      {"qmatmul", "cpu", "x86-64-v3", "bits=8"},
      {"qmatmul", "cpu", "x86-64", "bits=8"},
      {"softmax", "cpu", "x86-64", ""},
      {"gelu", "cpu", "x86-64-v4", ""},
      {"attn", "cpu", "x86-64-v2", "causal=1"},
      {"fa", "cpu", "x86-64-v3", "causal=0,dtype=f16,head_dim=64"}}},
    {"odd",
     {{"qmatmul", "cpu", "x86-64-v5", "bits=4"},
      {"qmatmul", "cpu", "znver4", "bits=4"},
      {"qmatmul", "cpu", "x86-64-v2", "bits=4"}}},
    {"empty", {{0}}},
};
#define NARCHIVES (sizeof archives / sizeof archives[0])
static char *paths[NARCHIVES];

static int setup(void **state) {
  (void)state;
  img = fx_image_bytes(GK_TEST_IMAGE_1, &img_size);
  for (size_t a = 0; a < NARCHIVES; a++) {
    fx_image im[12];
    size_t n = 0;
    for (; archives[a].rows[n].kernel; n++) {
      const row *r = &archives[a].rows[n];
      const char *format = !strcmp(r->backend, "cuda")   ? "cubin"
                           : !strcmp(r->backend, "rocm") ? "hsaco"
                                                         : "so";
      im[n] =
          (fx_image){r->kernel,        r->backend,  r->target,       r->variant,
                     .format = format, .data = img, .size = img_size};
    }
    char name[64];
    snprintf(name, sizeof name, "%s.gkfat", archives[a].name);
    paths[a] = fx_path(name);
    fx_write(paths[a], im, n);
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t a = 0; a < NARCHIVES; a++) free(paths[a]);
  free(img);
  return 0;
}

static size_t archive_index(const char *name) {
  for (size_t a = 0; a < NARCHIVES; a++)
    if (!strcmp(archives[a].name, name)) return a;
  fail_msg("no archive %s in the table", name);
  return 0;
}

static void selection_table(void **state) {
  (void)state;
  /* `want` is the chosen target when status is GK_OK, else the exact
   * message with %s standing for the archive's path. */
  static const struct {
    const char *archive, *device, *kernel, *variant;
    int status;
    const char *want;
  } cases[] = {
      /* The highest level not above the device's. */
      {"levels34", "cpu:x86-64-v4", "qmatmul", "bits=4", GK_OK, "x86-64-v4"},
      {"levels34", "cpu:x86-64-v3", "qmatmul", "bits=4", GK_OK, "x86-64-v3"},
      {"levels34", "cpu:x86-64-v2", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits cpu:x86-64-v2; archive '%s' has "
       "cpu x86-64-v3, cpu x86-64-v4"},
      {"levels34", "cpu:x86-64", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits cpu:x86-64; archive '%s' has "
       "cpu x86-64-v3, cpu x86-64-v4"},
      {"levels13", "cpu:x86-64-v4", "qmatmul", "bits=4", GK_OK, "x86-64-v3"},
      {"levels13", "cpu:x86-64-v3", "qmatmul", "bits=4", GK_OK, "x86-64-v3"},
      {"levels13", "cpu:x86-64-v2", "qmatmul", "bits=4", GK_OK, "x86-64"},
      {"levels13", "cpu:x86-64", "qmatmul", "bits=4", GK_OK, "x86-64"},
      {"level2", "cpu:x86-64-v4", "qmatmul", "bits=4", GK_OK, "x86-64-v2"},
      {"level2", "cpu:x86-64-v2", "qmatmul", "bits=4", GK_OK, "x86-64-v2"},
      {"level2", "cpu:x86-64", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits cpu:x86-64; archive '%s' has "
       "cpu x86-64-v2"},
      /* Other backends' rows are never chosen for a cpu device, but are
       * listed; GPU devices get no selection yet, and are told so. */
      {"mixed", "cpu:x86-64-v4", "qmatmul", "bits=4", GK_OK, "x86-64-v3"},
      {"mixed", "cpu:x86-64-v2", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits cpu:x86-64-v2; archive '%s' has "
       "cpu x86-64-v3, cuda sm_86, rocm gfx90a"},
      /* cuda selects (tests/backends/cuda); an sm_75 gets nothing here. */
      {"mixed", "cuda:sm_75,driver=12.4", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits cuda:sm_75,driver=12.4; archive '%s' "
       "has cuda sm_86, cpu x86-64-v3, rocm gfx90a"},
      /* rocm selects (tests/backends/rocm); a gfx1030 gets nothing here. */
      {"mixed", "rocm:gfx1030", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits rocm:gfx1030; archive '%s' has "
       "cpu x86-64-v3, cuda sm_86, rocm gfx90a"},
      /* Variants: named, or implied when the kernel has one. */
      {"variants", "cpu:x86-64-v4", "qmatmul", "bits=8", GK_OK, "x86-64-v3"},
      {"variants", "cpu:x86-64-v2", "qmatmul", "bits=8", GK_OK, "x86-64"},
      {"variants", "cpu:x86-64-v2", "qmatmul", "bits=2", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=2 fits cpu:x86-64-v2; archive '%s' has "
       "cpu x86-64-v3"},
      {"variants", "cpu:x86-64-v4", "qmatmul", NULL, GK_ENOKERNEL,
       "kernel 'qmatmul' has 3 variants in archive '%s' (bits=2, bits=4, "
       "bits=8); name one"},
      {"variants", "cpu:x86-64-v4", "qmatmul", "", GK_ENOKERNEL,
       "kernel 'qmatmul' has 3 variants in archive '%s' (bits=2, bits=4, "
       "bits=8); name one"},
      {"variants", "cpu:x86-64-v4", "qmatmul", "bits=3", GK_ENOKERNEL,
       "archive '%s' has no variant 'bits=3' of kernel 'qmatmul'; it has "
       "bits=2, bits=4, bits=8"},
      {"variants", "cpu:x86-64-v4", "qmatmul", "BITS=4", GK_ENOKERNEL,
       "archive '%s' has no variant 'BITS=4' of kernel 'qmatmul'; it has "
       "bits=2, bits=4, bits=8"},
      {"variants", "cpu:x86-64-v4", "softmax", NULL, GK_OK, "x86-64"},
      {"variants", "cpu:x86-64-v4", "softmax", "", GK_OK, "x86-64"},
      {"variants", "cpu:x86-64-v4", "softmax", "bits=4", GK_ENOKERNEL,
       "archive '%s' has no variant 'bits=4' of kernel 'softmax'; it has ''"},
      {"variants", "cpu:x86-64-v3", "gelu", NULL, GK_ENOIMAGE,
       "no image of 'gelu' fits cpu:x86-64-v3; archive '%s' has cpu x86-64-v4"},
      {"variants", "cpu:x86-64-v4", "attn", NULL, GK_OK, "x86-64-v2"},
      /* Parameters in any order: the loader puts them in the index's. */
      {"variants", "cpu:x86-64-v4", "fa", "head_dim=64,dtype=f16,causal=0", GK_OK, "x86-64-v3"},
      {"variants", "cpu:x86-64-v4", "fa", "dtype=f16,causal=0,head_dim=64", GK_OK, "x86-64-v3"},
      {"variants", "cpu:x86-64-v4", "fa", "causal=0,dtype=f16,head_dim=64", GK_OK, "x86-64-v3"},
      {"variants", "cpu:x86-64-v4", "attn", "", GK_OK, "x86-64-v2"},
      {"variants", "cpu:x86-64-v4", "attn", "causal=1", GK_OK, "x86-64-v2"},
      {"variants", "cpu:x86-64-v4", "attn", "causal=0", GK_ENOKERNEL,
       "archive '%s' has no variant 'causal=0' of kernel 'attn'; it has "
       "causal=1"},
      /* Kernels: exact names only. */
      {"variants", "cpu:x86-64-v4", "nope", NULL, GK_ENOKERNEL,
       "archive '%s' has no kernel 'nope'; it has attn, fa, gelu, qmatmul, "
       "softmax"},
      {"variants", "cpu:x86-64-v4", "Qmatmul", "bits=4", GK_ENOKERNEL,
       "archive '%s' has no kernel 'Qmatmul'; it has attn, fa, gelu, qmatmul, "
       "softmax"},
      {"variants", "cpu:x86-64-v4", "", NULL, GK_ENOKERNEL,
       "archive '%s' has no kernel ''; it has attn, fa, gelu, qmatmul, softmax"},
      {"empty", "cpu:x86-64-v4", "qmatmul", NULL, GK_ENOKERNEL,
       "archive '%s' has no kernel 'qmatmul'; it is empty"},
      /* Targets that are no x86-64 level are never chosen, but are listed. */
      {"odd", "cpu:x86-64-v4", "qmatmul", "bits=4", GK_OK, "x86-64-v2"},
      {"odd", "cpu:x86-64", "qmatmul", "bits=4", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits cpu:x86-64; archive '%s' has "
       "cpu x86-64-v2, cpu x86-64-v5, cpu znver4"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *path = paths[archive_index(cases[c].archive)];
    gk_archive *ar;
    gk_device dev;
    char why[256];
    assert_int_equal(gk_archive_open(path, &ar), GK_OK);
    if (gk_device_parse(cases[c].device, &dev, why, sizeof why) != GK_OK)
      fail_msg("case %zu: device %s: %s", c, cases[c].device, why);
    size_t index = 4242;
    int rc =
        gk_archive_select(ar, &dev, cases[c].kernel, cases[c].variant, &index);
    if (rc != cases[c].status)
      fail_msg("case %zu (%s, %s, %s %s): %s '%s', expected %s", c,
               cases[c].archive, cases[c].device, cases[c].kernel,
               cases[c].variant ? cases[c].variant : "(null)", gk_strerror(rc),
               gk_archive_errmsg(ar), gk_strerror(cases[c].status));
    if (rc == GK_OK) {
      gk_image_info info;
      assert_int_equal(gk_archive_image(ar, index, &info), GK_OK);
      if (strcmp(info.target, cases[c].want) || strcmp(info.backend, "cpu") ||
          strcmp(info.kernel, cases[c].kernel))
        fail_msg("case %zu: chose %s %s %s, expected cpu %s", c, info.kernel,
                 info.backend, info.target, cases[c].want);
      assert_string_equal(gk_archive_errmsg(ar), "");
    } else {
      char want[512];
      snprintf(want, sizeof want, cases[c].want, path);
      if (strcmp(gk_archive_errmsg(ar), want))
        fail_msg("case %zu:\n got  '%s'\n want '%s'", c, gk_archive_errmsg(ar),
                 want);
      assert_int_equal(index, 4242); /* untouched on failure */
    }
    gk_archive_close(ar);
  }
}

static void select_bad_args(void **state) {
  (void)state;
  gk_archive *ar;
  gk_device dev;
  size_t index = 7;
  assert_int_equal(gk_archive_open(paths[archive_index("levels34")], &ar),
                   GK_OK);
  assert_int_equal(gk_device_parse("cpu:x86-64-v4", &dev, NULL, 0), GK_OK);

  assert_int_equal(gk_archive_select(NULL, &dev, "qmatmul", "bits=4", &index),
                   GK_EINVAL);
  assert_int_equal(gk_archive_select(ar, NULL, "qmatmul", "bits=4", &index),
                   GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar), "gk_archive_select: dev is NULL");
  assert_int_equal(gk_archive_select(ar, &dev, NULL, "bits=4", &index),
                   GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar),
                      "gk_archive_select: kernel is NULL");
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", NULL),
                   GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar),
                      "gk_archive_select: index is NULL");

  /* Devices filled by hand must still be sane. */
  gk_device bad = dev;
  bad.backend = (gk_backend)99;
  assert_int_equal(gk_archive_select(ar, &bad, "qmatmul", "bits=4", &index),
                   GK_EINVAL);
  assert_true(strstr(gk_archive_errmsg(ar), "not valid") != NULL);
  bad = dev;
  strcpy(bad.arch, "skylake");
  assert_int_equal(gk_archive_select(ar, &bad, "qmatmul", "bits=4", &index),
                   GK_EINVAL);
  assert_string_equal(
      gk_archive_errmsg(ar),
      "device 'cpu:skylake' has an unknown x86-64 level; valid: "
      "x86-64, x86-64-v2, x86-64-v3, x86-64-v4");
  bad = dev;
  memset(bad.arch, 'x', sizeof bad.arch); /* no terminator */
  assert_int_equal(gk_archive_select(ar, &bad, "qmatmul", "bits=4", &index),
                   GK_EINVAL);
  assert_int_equal(index, 7);

  /* A good call after failures clears the message. */
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &index),
                   GK_OK);
  assert_string_equal(gk_archive_errmsg(ar), "");
  /* The detected device works too. */
  gk_device here;
  assert_int_equal(gk_device_detect(&here), GK_OK);
  int rc = gk_archive_select(ar, &here, "qmatmul", "bits=4", &index);
  assert_true(rc == GK_OK || rc == GK_ENOIMAGE);
  gk_archive_close(ar);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(selection_table),
      cmocka_unit_test(select_bad_args),
  };
  return cmocka_run_group_tests_name("loader.select", tests, setup, teardown);
}
