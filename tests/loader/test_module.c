/*
 * test_module.c - loading images into the process and calling them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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
#include "gk_internal.h"

typedef int (*id_fn)(void);

enum { IMG_A = 1, IMG_B, IMG_C, IMG_D, IMG_STICKY, IMG_UNRESOLVED, NIMG };
static const char *const image_files[NIMG] = {NULL,
                                              GK_TEST_IMAGE_1,
                                              GK_TEST_IMAGE_2,
                                              GK_TEST_IMAGE_3,
                                              GK_TEST_IMAGE_4,
                                              GK_TEST_IMAGE_5,
                                              GK_TEST_IMAGE_6};
static void *img[NIMG];
static size_t img_size[NIMG];
static char *archive_path;

static int setup(void **state) {
  (void)state;
  for (int i = 1; i < NIMG; i++)
    img[i] = fx_image_bytes(image_files[i], &img_size[i]);
#define IM(k, t, v, i) {k, "cpu", t, v, .data = img[i], .size = img_size[i]}
  fx_image rows[] = {
      IM("qmatmul", "x86-64", "bits=4", IMG_A),
      IM("other", "x86-64", "", IMG_B),
      IM("sticky", "x86-64", "", IMG_STICKY),
      IM("broken", "x86-64", "", IMG_UNRESOLVED),
      /* A recipe's misspelt entry: the image exports qmatmul, not qmatmu. */
      {"misspelt", "cpu", "x86-64", "", .entry = "[\"qmatmul\",\"qmatmu\"]", .data = img[IMG_A],
       .size = img_size[IMG_A]},
      /* One image per level: the id tells which level was chosen. */
      IM("best", "x86-64", "", IMG_A),
      IM("best", "x86-64-v2", "", IMG_B),
      IM("best", "x86-64-v3", "", IMG_C),
      IM("best", "x86-64-v4", "", IMG_D),
  };
#undef IM
  archive_path = fx_path("modules.gkfat");
  fx_write(archive_path, rows, sizeof rows / sizeof rows[0]);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int i = 1; i < NIMG; i++) free(img[i]);
  free(archive_path);
  return 0;
}

static gk_archive *open_archive(void) {
  gk_archive *ar;
  if (gk_archive_open(archive_path, &ar) != GK_OK)
    fail_msg("%s", gk_last_error());
  return ar;
}

static int image_id(const gk_module *m) {
  id_fn f = (id_fn)gk_module_symbol(m, "gk_test_image_id");
  assert_non_null(f);
  return f();
}

static int detected_level(void) {
  gk_device d;
  assert_int_equal(gk_device_detect(&d), GK_OK);
  return gk__x86_level_from_name(d.arch);
}

/* ---- load, call, unload ---------------------------------------------------
 */

static void put_block(unsigned char *b, uint16_t d, uint16_t m,
                      unsigned char code) {
  b[0] = (unsigned char)d;
  b[1] = (unsigned char)(d >> 8);
  b[2] = (unsigned char)m;
  b[3] = (unsigned char)(m >> 8);
  memset(b + 4, code, 16);
}

static void load_and_call_qmatmul(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m = NULL;
  int rc = gk_module_load(ar, NULL, "qmatmul", "bits=4", &m);
  if (rc != GK_OK) fail_msg("%s", gk_archive_errmsg(ar));
  assert_string_equal(gk_archive_errmsg(ar), "");
  assert_int_equal(image_id(m), IMG_A);

  gk_qmatmul_fn f = (gk_qmatmul_fn)gk_module_symbol(m, "qmatmul");
  assert_non_null(f);
  /* Two weight rows of one block each (docs/weights.md, 4 bits): codes 1
   * and 2 alternate (byte 0x21, low nibble first). Row 0: d = 1, m = 0.5;
   * row 1: d = 2, m = 0. x = 1 everywhere, then x = t. */
  unsigned char w[2 * 20];
  put_block(w, 0x3c00, 0x3800, 0x21);
  put_block(w + 20, 0x4000, 0x0000, 0x21);
  float x[2 * 32], y[4] = {0};
  for (int t = 0; t < 32; t++) {
    x[t] = 1.0f;
    x[32 + t] = (float)t;
  }
  f(x, w, y, 2, 2, 32);
  /* Row 0 weights: 1.5 (even t), 2.5 (odd t); row 1: 2, 4. */
  assert_true(y[0] == 16 * 1.5f + 16 * 2.5f);
  assert_true(y[1] == 16 * 2.0f + 16 * 4.0f);
  float even = 0, odd = 0; /* sums of t over even and odd t < 32 */
  for (int t = 0; t < 32; t++) *(t % 2 ? &odd : &even) += (float)t;
  assert_true(y[2] == 1.5f * even + 2.5f * odd);
  assert_true(y[3] == 2.0f * even + 4.0f * odd);

  /* The info and device of the module. */
  const gk_image_info *info = gk_module_info(m);
  assert_non_null(info);
  assert_string_equal(info->kernel, "qmatmul");
  assert_string_equal(info->variant, "bits=4");
  assert_string_equal(info->target, "x86-64");
  assert_string_equal(info->entry, "[\"qmatmul\"]");
  assert_int_equal(info->raw_size, img_size[IMG_A]);
  gk_device here;
  assert_int_equal(gk_device_detect(&here), GK_OK);
  assert_string_equal(gk_module_device(m)->arch, here.arch);
  assert_int_equal(gk_module_device(m)->backend, GK_BACKEND_CPU);

  assert_null(gk_module_symbol(m, "no_such_symbol"));
  assert_null(gk_module_symbol(m, NULL));
  gk_module_unload(m);
  gk_archive_close(ar);
}

/* The image is mapped from a memfd, not from any file on disk; or, built
 * without memfd_create (GK_PORTABLE_ONLY, as on macOS), from a temporary
 * file that is already unlinked. */
static void loaded_from_memfd(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m;
  assert_int_equal(gk_module_load(ar, NULL, "other", NULL, &m), GK_OK);
  /* /proc files report size 0: read line by line. */
  FILE *f = fopen("/proc/self/maps", "r");
  assert_non_null(f);
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
#if GK_HAVE_MEMFD_CREATE
    found |= strstr(line, "/memfd:gk:other:x86-64 (deleted)") != NULL;
#else
    char *name = strstr(line, "/gk-other-x86-64-");
    found |= name && strstr(name, " (deleted)") != NULL;
#endif
  }
  fclose(f);
  assert_true(found);
  gk_module_unload(m);
  gk_archive_close(ar);
}

/* Both stay usable while loaded together. If a module's memfd were closed
 * after dlopen, the second image would get the same fd number, and glibc
 * would return the first library for "/proc/self/fd/N". */
static void two_modules_at_once(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *a, *b, *a2;
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &a), GK_OK);
  assert_int_equal(gk_module_load(ar, NULL, "other", "", &b), GK_OK);
  assert_int_equal(image_id(a), IMG_A);
  assert_int_equal(image_id(b), IMG_B);
  assert_ptr_not_equal(gk_module_symbol(a, "qmatmul"),
                       gk_module_symbol(b, "qmatmul"));
  /* The same image twice: two independent modules. */
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &a2), GK_OK);
  assert_int_equal(image_id(a2), IMG_A);
  assert_ptr_not_equal(gk_module_symbol(a, "qmatmul"),
                       gk_module_symbol(a2, "qmatmul"));
  gk_module_unload(a);
  assert_int_equal(image_id(b), IMG_B); /* unaffected by the other's unload */
  assert_int_equal(image_id(a2), IMG_A);
  gk_module_unload(a2);
  gk_module_unload(b);
  gk_archive_close(ar);
}

/* An image that stays mapped after dlclose (-z nodelete): its fd number
 * must not be handed to the next image, which would then be "found". */
static void unload_of_sticky_image(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *s, *o;
  assert_int_equal(gk_module_load(ar, NULL, "sticky", NULL, &s), GK_OK);
  assert_int_equal(image_id(s), IMG_STICKY);
  gk_module_unload(s);
  assert_int_equal(gk_module_load(ar, NULL, "other", NULL, &o), GK_OK);
  assert_int_equal(image_id(o), IMG_B);
  gk_module_unload(o);
  gk_archive_close(ar);
}

static void module_outlives_archive(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m;
  gk_device dev;
  assert_int_equal(gk_device_parse("cpu:x86-64", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_OK);
  gk_archive_close(ar);
  const gk_image_info *info = gk_module_info(m);
  assert_string_equal(info->kernel, "qmatmul");
  assert_string_equal(info->backend, "cpu");
  assert_string_equal(info->format, "so");
  assert_string_equal(info->launch, "{}");
  assert_string_equal(info->toolchain, "cc test");
  assert_string_equal(gk_module_device(m)->arch, "x86-64");
  assert_int_equal(image_id(m), IMG_A);
  gk_module_unload(m);
}

static void load_from_memory_archive(void **state) {
  (void)state;
  size_t n;
  void *bytes = fx_read_file(archive_path, &n);
  gk_archive *ar;
  gk_module *m;
  assert_int_equal(gk_archive_open_memory(bytes, n, &ar), GK_OK);
  assert_int_equal(gk_module_load(ar, NULL, "other", NULL, &m), GK_OK);
  gk_archive_close(ar);
  free(bytes);
  assert_int_equal(image_id(m), IMG_B);
  gk_module_unload(m);
}

/* ---- which image, and refusals ------------------------------------------- */

static void best_level_for_this_cpu(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  int real = detected_level();
  /* Detected: the image of the CPU's own level. Capped: the cap's. */
  for (int cap = 0; cap <= 4; cap++) {
    gk__cpu_set_level_cap(cap);
    int want = cap && cap < real ? cap : real;
    gk_module *m;
    int rc = gk_module_load(ar, NULL, "best", NULL, &m);
    if (rc != GK_OK) fail_msg("cap %d: %s", cap, gk_archive_errmsg(ar));
    assert_int_equal(image_id(m), want);
    assert_int_equal(gk__x86_level_from_name(gk_module_device(m)->arch), want);
    gk_module_unload(m);
  }
  gk__cpu_set_level_cap(0);
  /* A named device at or below the CPU: its level. */
  for (int level = 1; level <= real; level++) {
    char spec[32];
    gk_device dev;
    gk_module *m;
    snprintf(spec, sizeof spec, "cpu:%s", gk__x86_level_name(level));
    assert_int_equal(gk_device_parse(spec, &dev, NULL, 0), GK_OK);
    assert_int_equal(gk_module_load(ar, &dev, "best", NULL, &m), GK_OK);
    assert_int_equal(image_id(m), level);
    gk_module_unload(m);
  }
  gk_archive_close(ar);
}

static void refuse_device_above_cpu(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_device dev;
  gk_module *m = (gk_module *)1;
  /* Play a v2 CPU, asked for v3 code. */
  gk__cpu_set_level_cap(2);
  assert_int_equal(gk_device_parse("cpu:x86-64-v3", &dev, NULL, 0), GK_OK);
  int rc = gk_module_load(ar, &dev, "best", NULL, &m);
  gk__cpu_set_level_cap(0);
  assert_int_equal(rc, GK_ENODEVICE);
  assert_null(m);
  assert_contains(gk_archive_errmsg(ar), "device 'cpu:x86-64-v3' asks for more "
                                         "than this CPU has (x86-64-v2");
  assert_contains(gk_archive_errmsg(ar), "illegal instruction");
  /* On a real CPU below v4, v4 is refused the same way. */
  if (detected_level() < 4) {
    assert_int_equal(gk_device_parse("cpu:x86-64-v4", &dev, NULL, 0), GK_OK);
    assert_int_equal(gk_module_load(ar, &dev, "best", NULL, &m), GK_ENODEVICE);
  }
  gk_archive_close(ar);
}

static void gpu_devices_not_loadable_yet(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_device dev;
  gk_module *m = (gk_module *)1;
  /* An archive without images for a GPU says so before any driver is
   * asked (tests/backends/cuda loads cuda images). */
  assert_int_equal(gk_device_parse("cuda:sm_86", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m),
                   GK_ENOIMAGE);
  assert_null(m);
  assert_non_null(strstr(gk_archive_errmsg(ar),
                         "fits cuda:sm_86; archive"));
  dev.backend = (gk_backend)0;
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m),
                   GK_EINVAL);
  gk_archive_close(ar);
}

static void dlopen_failure(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m = (gk_module *)1;
  assert_int_equal(gk_module_load(ar, NULL, "broken", NULL, &m), GK_EDRIVER);
  assert_null(m);
  assert_contains(gk_archive_errmsg(ar),
                  "cannot load image 'broken' cpu x86-64: dlopen: ");
  assert_contains(gk_archive_errmsg(ar), "gk_test_no_such_function");
  /* The archive still works after a failed load. */
  assert_int_equal(gk_module_load(ar, NULL, "other", NULL, &m), GK_OK);
  assert_int_equal(image_id(m), IMG_B);
  gk_module_unload(m);
  gk_archive_close(ar);
}

/* Every entry the row lists must be a function the shared object exports:
 * a misspelt one fails the load, not a later gk_module_symbol. */
static void misspelt_entry(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m = (gk_module *)1;
  assert_int_equal(gk_module_load(ar, NULL, "misspelt", NULL, &m), GK_EFORMAT);
  assert_null(m);
  assert_contains(gk_archive_errmsg(ar),
                  "entry 'qmatmu' is not a function the image exports (its dynamic symbol table)");
  gk_archive_close(ar);
}

static void load_forwards_errors(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m = (gk_module *)1;
  assert_int_equal(gk_module_load(ar, NULL, "nope", NULL, &m), GK_ENOKERNEL);
  assert_null(m);
  assert_contains(gk_archive_errmsg(ar), "has no kernel 'nope'");
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=3", &m),
                   GK_ENOKERNEL);
  assert_contains(gk_archive_errmsg(ar), "no variant 'bits=3'");
  gk_archive_close(ar);

  /* A damaged image is never loaded. */
  char *path = fx_path("damaged-modules.gkfat");
  unsigned char *other = malloc(img_size[IMG_A]);
  memcpy(other, img[IMG_A], img_size[IMG_A]);
  other[100] ^= 0x40;
  size_t zn;
  void *z = fx_zstd(other, img_size[IMG_A], &zn);
  const char text[] = "not a shared object";
  fx_image rows[] = {
      {"qmatmul", "cpu", "x86-64", "bits=4", .data = img[IMG_A],
       .size = img_size[IMG_A]},
      {"text", "cpu", "x86-64", "", .data = text, .size = sizeof text},
      {"lvl", "cpu", "x86-64-v3", "", .data = img[IMG_A],
       .size = img_size[IMG_A]},
  };
  fx_write(path, rows, 3);
  fx_exec(path,
          "UPDATE blob SET data = ?1 WHERE id = "
          "(SELECT blob FROM image WHERE kernel = 'qmatmul')",
          z, zn);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_EHASH);
  assert_null(m);
  assert_contains(gk_archive_errmsg(ar), "does not match its SHA-256");
  assert_int_equal(gk_module_load(ar, NULL, "text", NULL, &m), GK_EFORMAT);
  assert_contains(gk_archive_errmsg(ar), "not an ELF file");
  gk_device dev;
  assert_int_equal(gk_device_parse("cpu:x86-64-v2", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "lvl", NULL, &m), GK_ENOIMAGE);
  assert_contains(gk_archive_errmsg(ar),
                  "no image of 'lvl' fits cpu:x86-64-v2; ");
  gk_archive_close(ar);
  free(z);
  free(other);
  free(path);
}

static void module_bad_args(void **state) {
  (void)state;
  gk_archive *ar = open_archive();
  gk_module *m = (gk_module *)1;
  assert_int_equal(gk_module_load(NULL, NULL, "qmatmul", "bits=4", &m),
                   GK_EINVAL);
  assert_null(m);
  m = (gk_module *)1;
  assert_int_equal(gk_module_load(ar, NULL, NULL, "bits=4", &m), GK_EINVAL);
  assert_null(m);
  assert_string_equal(gk_archive_errmsg(ar), "gk_module_load: kernel is NULL");
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", NULL),
                   GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar), "gk_module_load: out is NULL");
  assert_null(gk_module_info(NULL));
  assert_null(gk_module_device(NULL));
  assert_null(gk_module_symbol(NULL, "qmatmul"));
  gk_module_unload(NULL);
  gk_archive_close(ar);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(load_and_call_qmatmul),
      cmocka_unit_test(loaded_from_memfd),
      cmocka_unit_test(two_modules_at_once),
      cmocka_unit_test(unload_of_sticky_image),
      cmocka_unit_test(module_outlives_archive),
      cmocka_unit_test(load_from_memory_archive),
      cmocka_unit_test(best_level_for_this_cpu),
      cmocka_unit_test(refuse_device_above_cpu),
      cmocka_unit_test(gpu_devices_not_loadable_yet),
      cmocka_unit_test(dlopen_failure),
      cmocka_unit_test(misspelt_entry),
      cmocka_unit_test(load_forwards_errors),
      cmocka_unit_test(module_bad_args),
  };
  return cmocka_run_group_tests_name("loader.module", tests, setup, teardown);
}
