/*
 * test_mutate.c - deterministic mutations of a good archive and of a good
 * ELF image, fed to the fuzz entry point (fuzz.c). Nothing is asserted about
 * each result except that libgk survives it; under the sanitizer build
 * any memory error or undefined behaviour fails the test. The counts at the
 * end check the mutations exercised both the accepting and refusing paths.
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

int gk_fuzz_one(const uint8_t *data, size_t size);

static uint32_t rng = 0x9e3779b9u;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return rng;
}

static void mutate_archive(void **state) {
  (void)state;
  size_t na, nb;
  void *a = fx_image_bytes(GK_TEST_IMAGE_1, &na);
  void *b = fx_image_bytes(GK_TEST_IMAGE_2, &nb);
  fx_image im[] = {
      {"qmatmul", "cpu", "x86-64-v3", "bits=4", .data = a, .size = na},
      {"qmatmul", "cpu", "x86-64-v4", "bits=4", .data = b, .size = nb},
      {"softmax", "cpu", "x86-64", "", .data = a, .size = na},
      {"qmatmul", "cuda", "sm_90", "bits=4", .format = "cubin", .data = b,
       .size = nb},
  };
  char *path = fx_path("seed.gkfat");
  fx_write(path, im, sizeof im / sizeof im[0]);
  size_t n;
  uint8_t *seed = fx_read_file(path, &n);
  uint8_t *buf = malloc(n);
  assert_true(gk_fuzz_one(seed, n) == 1); /* the seed itself is good */

  /* The first pages hold the header, schema and index; most damage there
   * reaches libgk's own code rather than zstd's or the hash check. */
  size_t hot = n < 3 * 4096 ? n : 3 * 4096;
  int opened = 0, refused = 0;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, seed, n);
    int flips = 1 + (int)(next() % 8);
    for (int f = 0; f < flips; f++) {
      size_t pos = next() % 2 ? next() % hot : next() % n;
      buf[pos] = next() % 3 ? (uint8_t)(buf[pos] ^ (1u << (next() % 8)))
                            : (uint8_t)next();
    }
    size_t len = next() % 16 == 0 ? next() % n : n; /* sometimes truncated */
    if (gk_fuzz_one(buf, len))
      opened++;
    else
      refused++;
  }
  printf("  archive mutations: %d opened, %d refused\n", opened, refused);
  assert_true(opened > 100);
  assert_true(refused > 100);
  free(buf);
  free(seed);
  free(path);
  free(a);
  free(b);
}

static void mutate_elf_header(void **state) {
  (void)state;
  size_t n;
  uint8_t *img = fx_image_bytes(GK_TEST_IMAGE_1, &n);
  uint8_t *buf = malloc(n);
  for (int iter = 0; iter < 20000; iter++) {
    memcpy(buf, img, n);
    int flips = 1 + (int)(next() % 4);
    for (int f = 0; f < flips; f++) buf[next() % 64] = (uint8_t)next();
    gk_fuzz_one(buf, next() % 8 == 0 ? next() % 128 : n);
  }
  free(buf);
  free(img);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mutate_archive),
      cmocka_unit_test(mutate_elf_header),
  };
  return cmocka_run_group_tests_name("loader.mutate", tests, NULL, NULL);
}
