/*
 * test_products.c - the CLI's table of products (cli/products.c): target to
 * products, product name to target, and --device values that are names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "products.h"

/* Whether a NULL-terminated list or an array of n holds s. */
static int has(const char *const *list, size_t n, const char *s) {
  for (size_t i = 0; i < n && list[i]; i++)
    if (strcmp(list[i], s) == 0) return 1;
  return 0;
}

static void target_to_products(void **state) {
  (void)state;
  const cli_target *t = cli_target_find("cuda", "sm_86");
  assert_non_null(t);
  assert_string_equal(t->target, "sm_86");
  assert_true(has(t->products, SIZE_MAX, "GeForce RTX 3090"));
  assert_true(has(t->products, SIZE_MAX, "NVIDIA A10"));
  assert_false(has(t->products, SIZE_MAX, "GeForce RTX 4090"));
  /* Images name a capability many ways; a device's ROCm arch has features. */
  const char *const same90[] = {"sm_90", "sm_90a", "sm_90f", "compute_90"};
  for (size_t i = 0; i < 4; i++)
    assert_ptr_equal(cli_target_find("cuda", same90[i]), cli_target_find("cuda", "sm_90"));
  assert_true(has(cli_target_find("cuda", "sm_90")->products, SIZE_MAX, "NVIDIA H100"));
  t = cli_target_find("rocm", "gfx90a:sramecc+:xnack-");
  assert_non_null(t);
  assert_true(has(t->products, SIZE_MAX, "AMD Instinct MI250X"));
  assert_true(has(cli_target_find("rocm", "gfx1100")->products, SIZE_MAX, "Radeon RX 7900 XTX"));
  /* Nothing is said where no vendor list names a product. */
  const char *const none[][2] = {{"cuda", "sm_88"},    {"cuda", "sm_9"},   {"cuda", "sm_90x"},
                                 {"cuda", "sm_090a1"}, {"rocm", "gfx940"}, {"cpu", "x86-64-v3"},
                                 {"metal", "apple9"},  {"cuda", "gfx1100"}};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    assert_null(cli_target_find(none[i][0], none[i][1]));
  const char *out[4];
  assert_int_equal(cli_target_products(NULL, out, 4), 0);
}

/* A generic target runs on several processors: their products are its. */
static void generic_target(void **state) {
  (void)state;
  const cli_target *g = cli_target_find("rocm", "gfx11-generic");
  assert_non_null(g);
  assert_null(g->products);
  assert_true(has(g->covers, SIZE_MAX, "gfx1100") && has(g->covers, SIZE_MAX, "gfx1151"));
  const char *out[64];
  size_t n = cli_target_products(g, out, 64), want = 0;
  for (const char *const *c = g->covers; *c; c++) {
    const cli_target *p = cli_target_find("rocm", *c);
    want += cli_target_products(p, out, 0);
  }
  assert_int_equal(n, want);
  n = cli_target_products(g, out, 64);
  assert_true(has(out, n, "Radeon RX 7900 XTX") && has(out, n, "Radeon 8060S"));
  assert_false(has(out, n, "Radeon RX 9070 XT"));
  /* A short array gets the first names and the full count. */
  assert_int_equal(cli_target_products(g, out, 2), n);
  assert_string_equal(out[0], "Radeon RX 7900 XTX");
  char text[64];
  cli_target_products_text(cli_target_find("cuda", "sm_80"), text, sizeof text);
  assert_string_equal(text, "NVIDIA A100, NVIDIA A30");
}

/* find(name) must give its product and target, or fail the test. */
static void expect_found(const char *query, const char *name, const char *target) {
  cli_product p[4];
  size_t n = 99;
  int r = cli_product_find(query, p, 4, &n);
  if (r != CLI_PRODUCT_FOUND || n != 1 || strcmp(p[0].name, name) ||
      strcmp(p[0].target->target, target))
    fail_msg("'%s': got %d, n %zu, %s %s; want %s %s", query, r, n, n ? p[0].name : "-",
             n ? p[0].target->target : "-", name, target);
}

static void name_to_target(void **state) {
  (void)state;
  /* Any case or spacing, with the vendor or without (a driver's name). */
  expect_found("RTX 4090", "GeForce RTX 4090", "sm_89");
  expect_found("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "sm_89");
  expect_found("rtx4090", "GeForce RTX 4090", "sm_89");
  expect_found("geforce rtx-4090", "GeForce RTX 4090", "sm_89");
  expect_found("MI300X", "AMD Instinct MI300X", "gfx942");
  expect_found("Radeon RX 7900 XTX", "Radeon RX 7900 XTX", "gfx1100");
  expect_found("AMD Radeon RX 7900 XT", "Radeon RX 7900 XT", "gfx1100");
  expect_found("A100", "NVIDIA A100", "sm_80");
  expect_found("T4", "NVIDIA T4", "sm_75");
  expect_found("L4", "NVIDIA L4", "sm_89");
  /* A driver's longer name: the product that takes the most of it. */
  expect_found("NVIDIA H100 80GB HBM3", "NVIDIA H100", "sm_90");
  expect_found("RTX 3090 Ti", "GeForce RTX 3090 Ti", "sm_86");
  /* Part of a name that several products of one target share is one
   * answer: the shortest of them. */
  expect_found("W7900", "Radeon PRO W7900", "gfx1100");
  expect_found("Jetson Orin", "Jetson AGX Orin", "sm_87");
  expect_found("GB10", "NVIDIA GB10 (DGX Spark)", "sm_121");
}

/* Every product of the table is found by its own name, as its target's. */
static void every_name_finds_itself(void **state) {
  (void)state;
  static const char *const targets[][2] = {
      {"cuda", "sm_75"},    {"cuda", "sm_80"},   {"cuda", "sm_86"},    {"cuda", "sm_87"},
      {"cuda", "sm_89"},    {"cuda", "sm_90"},   {"cuda", "sm_100"},   {"cuda", "sm_103"},
      {"cuda", "sm_110"},   {"cuda", "sm_120"},  {"cuda", "sm_121"},   {"rocm", "gfx900"},
      {"rocm", "gfx902"},   {"rocm", "gfx906"},  {"rocm", "gfx908"},   {"rocm", "gfx90a"},
      {"rocm", "gfx90c"},   {"rocm", "gfx942"},  {"rocm", "gfx950"},   {"rocm", "gfx1010"},
      {"rocm", "gfx1011"},  {"rocm", "gfx1012"}, {"rocm", "gfx1030"},  {"rocm", "gfx1031"},
      {"rocm", "gfx1032"},  {"rocm", "gfx1100"}, {"rocm", "gfx1101"},  {"rocm", "gfx1102"},
      {"rocm", "gfx1103"},  {"rocm", "gfx1150"}, {"rocm", "gfx1151"},  {"rocm", "gfx1152"},
      {"rocm", "gfx1200"},  {"rocm", "gfx1201"}};
  size_t names = 0;
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    const cli_target *t = cli_target_find(targets[i][0], targets[i][1]);
    assert_non_null(t);
    for (const char *const *p = t->products; *p; p++, names++)
      expect_found(*p, *p, targets[i][1]);
  }
  assert_true(names > 150);
}

static void ambiguous_and_unknown(void **state) {
  (void)state;
  cli_product p[8];
  size_t n;
  /* RTX 6000: a Quadro (sm_75), an Ada (sm_89), a Blackwell (sm_120)... */
  assert_int_equal(cli_product_find("RTX 6000", p, 8, &n), CLI_PRODUCT_AMBIGUOUS);
  const char *got[8];
  for (size_t i = 0; i < n; i++) got[i] = p[i].target->target;
  assert_true(has(got, n, "sm_75") && has(got, n, "sm_89") && has(got, n, "sm_120"));
  assert_true(n >= 3);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < i; j++) assert_ptr_not_equal(p[i].target, p[j].target);
  /* Two targets found with room for one: still ambiguous. */
  assert_int_equal(cli_product_find("RTX 6000", p, 1, &n), CLI_PRODUCT_AMBIGUOUS);
  assert_int_equal(n, 1);
  /* A typo: the nearest names, best first. */
  assert_int_equal(cli_product_find("RTX 4099", p, 3, &n), CLI_PRODUCT_NONE);
  assert_true(n >= 1);
  assert_string_equal(p[0].name, "GeForce RTX 4090");
  assert_int_equal(cli_product_find("mi300z", p, 3, &n), CLI_PRODUCT_NONE);
  assert_true(n >= 1 && strstr(p[0].name, "MI300"));
  /* Nothing near: no suggestion. */
  assert_int_equal(cli_product_find("zzzzzzzz", p, 3, &n), CLI_PRODUCT_NONE);
  assert_int_equal(n, 0);
  assert_int_equal(cli_product_find("", p, 3, &n), CLI_PRODUCT_NONE);
  assert_int_equal(n, 0);
}

static void device_values(void **state) {
  (void)state;
  gk_device d;
  const char *product = "unset";
  char why[512];
  /* A product stands for its target's spec. */
  assert_int_equal(cli_device_parse("RTX 4090", &d, &product, why, sizeof why), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_CUDA);
  assert_string_equal(d.arch, "sm_89");
  assert_string_equal(product, "GeForce RTX 4090");
  assert_string_equal(d.name, "RTX 4090 (from a spec)");
  assert_int_equal(cli_device_parse("MI300X", &d, &product, why, sizeof why), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_ROCM);
  assert_string_equal(d.arch, "gfx942");
  /* A spec is the loader's, product or not. */
  assert_int_equal(cli_device_parse("cuda:sm_86", &d, &product, why, sizeof why), GK_OK);
  assert_null(product);
  assert_string_equal(d.arch, "sm_86");
  /* A spec's near miss keeps the loader's answer. */
  assert_int_equal(cli_device_parse("sm89", &d, &product, why, sizeof why), GK_EINVAL);
  assert_null(product);
  assert_non_null(strstr(why, "did you mean cuda:sm_89?"));
  /* An unknown name: the closest products, with their targets. */
  assert_int_equal(cli_device_parse("RTX 4099", &d, &product, why, sizeof why), GK_EINVAL);
  assert_null(product);
  assert_non_null(strstr(why, "nor a product gk knows; closest: GeForce RTX 4090 (cuda:sm_89)"));
  assert_int_equal(cli_device_parse("RTX 6000", &d, &product, why, sizeof why), GK_EINVAL);
  assert_non_null(strstr(why, "'RTX 6000' could be "));
  assert_non_null(strstr(why, "(cuda:sm_75)"));
  /* why may be NULL. */
  assert_int_equal(cli_device_parse("RTX 4099", &d, &product, NULL, 0), GK_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(target_to_products),    cmocka_unit_test(generic_target),
      cmocka_unit_test(name_to_target),        cmocka_unit_test(every_name_finds_itself),
      cmocka_unit_test(ambiguous_and_unknown), cmocka_unit_test(device_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
