/*
 * test_explain.c - gk_archive_explain: every candidate row of a kernel's
 * variant, in index order, with the rule's verdict and reason, and the
 * chosen one equal to what gk_archive_select_ex returns. Archives are written
 * with the real packager; selection reads no image bytes, so every row
 * carries the same few bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gk.h"
#include "gkpack.h"

typedef struct row {
  const char *kernel, *backend, *target, *variant, *format;
} row;

static const row mixed_rows[] = {
    {"qmatmul", "cpu", "x86-64", "bits=4", "so"},
    {"qmatmul", "cpu", "x86-64-v3", "bits=4", "so"},
    {"qmatmul", "cpu", "x86-64-v4", "bits=4", "so"},
    {"qmatmul", "cuda", "sm_86", "bits=4", "cubin"},
    {"qmatmul", "cpu", "x86-64-v2", "bits=8", "so"},
    {"softmax", "cpu", "x86-64-v3", "", "so"},
    {"softmax", "cpu", "znver4", "", "so"},
};

static char dir[] = "/tmp/gk-explain-XXXXXX";
static char path[64];

static int setup(void **state) {
  (void)state;
  static const char bytes[] = "not read by selection";
  gkp_image im[sizeof mixed_rows / sizeof mixed_rows[0]];
  gk_err err;
  if (!mkdtemp(dir)) return -1;
  snprintf(path, sizeof path, "%s/mixed.gkfat", dir);
  for (size_t i = 0; i < sizeof im / sizeof im[0]; i++)
    im[i] = (gkp_image){mixed_rows[i].kernel, mixed_rows[i].backend,
                        mixed_rows[i].target, mixed_rows[i].variant,
                        mixed_rows[i].format, "[\"k\"]", "{}", "test",
                        bytes, sizeof bytes, NULL};
  if (gkp_write(path, im, sizeof im / sizeof im[0], 1, &err) != 0) {
    fprintf(stderr, "cannot write %s: %s\n", path, err.msg);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  rmdir(dir);
  return 0;
}

static gk_archive *open_mixed(void) {
  gk_archive *ar = NULL;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  return ar;
}

static gk_device device(const char *spec) {
  gk_device d;
  char why[256];
  if (gk_device_parse(spec, &d, why, sizeof why) != GK_OK) fail_msg("%s: %s", spec, why);
  return d;
}

/* The reasons, verdicts and order for one device, exactly. */
static void explains_each_row(void **state) {
  (void)state;
  gk_archive *ar = open_mixed();
  gk_device dev = device("cpu:x86-64-v3");
  gk_candidate c[8];
  size_t count = 99;
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, c, 8, &count), GK_OK);
  assert_string_equal(gk_archive_errmsg(ar), "");
  assert_int_equal(count, 4); /* every row of the variant, bits=8 left out */
  static const struct {
    const char *target;
    int fits, chosen;
    const char *why;
  } want[] = {
      {"x86-64", 1, 0, "x86-64 runs on x86-64-v3"},
      {"x86-64-v3", 1, 1, "x86-64-v3 runs on x86-64-v3"},
      {"x86-64-v4", 0, 0, "needs x86-64-v4, device is x86-64-v3"},
      {"sm_86", 0, 0, "built for cuda, device is cpu"},
  };
  for (size_t i = 0; i < count; i++) {
    gk_image_info im;
    assert_int_equal(gk_archive_image(ar, c[i].index, &im), GK_OK);
    assert_string_equal(im.target, want[i].target);
    assert_string_equal(im.variant, "bits=4");
    assert_int_equal(c[i].fits, want[i].fits);
    assert_int_equal(c[i].chosen, want[i].chosen);
    assert_string_equal(c[i].why, want[i].why);
    if (i) assert_true(c[i].index > c[i - 1].index); /* index order */
  }
  gk_archive_close(ar);
}

/* For every device, kernel and variant: the chosen candidate is the row
 * gk_archive_select_ex returns, and at most one is chosen; when select
 * finds nothing, explain still succeeds and nothing is chosen or fits. */
static void agrees_with_select(void **state) {
  (void)state;
  static const char *const devices[] = {"cpu:x86-64", "cpu:x86-64-v2", "cpu:x86-64-v3",
                                        "cpu:x86-64-v4"};
  static const struct {
    const char *kernel, *variant;
  } kv[] = {{"qmatmul", "bits=4"}, {"qmatmul", "bits=8"}, {"softmax", NULL}, {"softmax", ""}};
  gk_archive *ar = open_mixed();
  size_t checked = 0;
  for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++)
    for (size_t k = 0; k < sizeof kv / sizeof kv[0]; k++)
      for (unsigned flags = 0; flags <= GK_LOAD_NO_JIT; flags += GK_LOAD_NO_JIT) {
        gk_device dev = device(devices[d]);
        gk_candidate c[8];
        size_t count = 0, index = 4242, nchosen = 0, nfits = 0;
        int sel = gk_archive_select_ex(ar, &dev, kv[k].kernel, kv[k].variant, flags, &index);
        assert_int_equal(gk_archive_explain(ar, &dev, kv[k].kernel, kv[k].variant, flags, c,
                                            8, &count),
                         GK_OK);
        assert_true(count > 0 && count <= 8);
        for (size_t i = 0; i < count; i++) {
          nchosen += c[i].chosen;
          nfits += c[i].fits;
          assert_true(!c[i].chosen || c[i].fits);
          assert_true(c[i].why[0] != '\0');
          if (c[i].chosen) assert_int_equal(c[i].index, index);
        }
        if (sel == GK_OK) {
          assert_int_equal(nchosen, 1);
        } else {
          assert_int_equal(sel, GK_ENOIMAGE);
          assert_int_equal(nchosen, 0);
          assert_int_equal(nfits, 0);
        }
        checked++;
      }
  assert_int_equal(checked, 32);
  gk_archive_close(ar);
}

/* A short array gets what fits and the full count; cap 0 only counts. */
static void short_array(void **state) {
  (void)state;
  gk_archive *ar = open_mixed();
  gk_device dev = device("cpu:x86-64-v4");
  gk_candidate c[3];
  size_t count = 0;
  memset(c, 0x5a, sizeof c);
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, c, 2, &count), GK_OK);
  assert_int_equal(count, 4);
  assert_true(c[0].fits && c[1].fits);
  assert_int_equal(c[1].chosen, 0); /* the chosen v4 row lies past the array */
  unsigned char *tail = (unsigned char *)&c[2];
  for (size_t i = 0; i < sizeof c[2]; i++) assert_int_equal(tail[i], 0x5a);
  count = 0;
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, NULL, 0, &count), GK_OK);
  assert_int_equal(count, 4);
  gk_archive_close(ar);
}

/* Nothing fits: still the candidates, with the reasons. */
static void nothing_fits(void **state) {
  (void)state;
  gk_archive *ar = open_mixed();
  gk_device dev = device("cpu:x86-64");
  gk_candidate c[4];
  size_t count = 0;
  assert_int_equal(gk_archive_explain(ar, &dev, "softmax", NULL, 0, c, 4, &count), GK_OK);
  assert_int_equal(count, 2);
  assert_int_equal(c[0].fits + c[1].fits + c[0].chosen + c[1].chosen, 0);
  assert_string_equal(c[0].why, "needs x86-64-v3, device is x86-64");
  assert_string_equal(c[1].why, "unknown x86-64 level 'znver4'");
  /* A GPU device gets the cpu rows with the backend named as the reason
   * (the cuda row's own reason belongs to the cuda rule: not pinned here). */
  gk_device gpu = device("cuda:sm_86");
  assert_int_equal(gk_archive_explain(ar, &gpu, "qmatmul", "bits=4", 0, c, 4, &count), GK_OK);
  assert_int_equal(count, 4);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(c[i].fits, 0);
    assert_string_equal(c[i].why, "built for cpu, device is cuda");
  }
  gk_archive_close(ar);
}

static void errors(void **state) {
  (void)state;
  gk_archive *ar = open_mixed();
  gk_device dev = device("cpu:x86-64-v3");
  gk_candidate c[4];
  size_t count = 7;
  assert_int_equal(gk_archive_explain(NULL, &dev, "qmatmul", "bits=4", 0, c, 4, &count),
                   GK_EINVAL);
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, c, 4, NULL), GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar), "gk_archive_explain: count is NULL");
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, NULL, 4, &count),
                   GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar), "gk_archive_explain: out is NULL");
  assert_int_equal(gk_archive_explain(ar, NULL, "qmatmul", "bits=4", 0, c, 4, &count),
                   GK_EINVAL);
  assert_int_equal(gk_archive_explain(ar, &dev, "nope", NULL, 0, c, 4, &count), GK_ENOKERNEL);
  assert_non_null(strstr(gk_archive_errmsg(ar), "has no kernel 'nope'; it has qmatmul, softmax"));
  assert_int_equal(count, 0);
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", NULL, 0, c, 4, &count), GK_ENOKERNEL);
  assert_non_null(strstr(gk_archive_errmsg(ar), "has 2 variants"));
  gk_device bad = dev;
  strcpy(bad.arch, "skylake");
  assert_int_equal(gk_archive_explain(ar, &bad, "qmatmul", "bits=4", 0, c, 4, &count), GK_EINVAL);
  assert_non_null(strstr(gk_archive_errmsg(ar), "unknown x86-64 level"));
  /* Success clears the message again. */
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=8", 0, c, 4, &count), GK_OK);
  assert_string_equal(gk_archive_errmsg(ar), "");
  assert_int_equal(count, 1);
  gk_archive_close(ar);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(explains_each_row), cmocka_unit_test(agrees_with_select),
      cmocka_unit_test(short_array),       cmocka_unit_test(nothing_fits),
      cmocka_unit_test(errors),
  };
  return cmocka_run_group_tests_name("ops.explain", tests, setup, teardown);
}
