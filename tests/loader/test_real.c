/*
 * test_real.c ARCHIVE - the archive built from the real recipes by the real
 * compiler (tests/CMakeLists.txt, fixture "archive"): every qmatmul image
 * this CPU can run is loaded through libgk and checked against a scalar
 * reference of docs/weights.md written here, independently of kernelsrc/.
 * Exits 77 (SKIP) when the archive does not exist.
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

static const char *archive_path;

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31,
           man = h & 1023, bits;
  if (exp == 0 && man == 0) {
    bits = sign;
  } else if (exp == 0) {
    exp = 127 - 15 + 1;
    while (!(man & 1024)) {
      man <<= 1;
      exp--;
    }
    bits = sign | exp << 23 | (man & 1023) << 13;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* docs/weights.md, literally: weight = d * q + m, code j of a block at bits
 * [j*BITS, j*BITS + BITS) of the little-endian code stream. */
static void reference(const float *x, const unsigned char *w, double *y, int m,
                      int n, int k, int bits) {
  size_t block = 4 + 4 * (size_t)bits;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double acc = 0;
      for (int t = 0; t < k; t++) {
        const unsigned char *b = w + ((size_t)j * (k / 32) + t / 32) * block;
        int c = t % 32;
        int q = (b[4 + c * bits / 8] >> (c * bits % 8)) & ((1 << bits) - 1);
        double wt = (double)half_to_float((uint16_t)(b[0] | b[1] << 8)) * q +
                    half_to_float((uint16_t)(b[2] | b[3] << 8));
        acc += (double)x[(size_t)i * k + t] * wt;
      }
      y[(size_t)i * n + j] = acc;
    }
}

static uint32_t rng = 2463534242u;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return rng;
}

/* Runs one loaded qmatmul on several shapes; fails on any mismatch. */
static void check_module(gk_module *mod, int bits, const char *what) {
  gk_qmatmul_fn f = (gk_qmatmul_fn)gk_module_symbol(mod, "qmatmul");
  if (!f) fail_msg("%s: no symbol 'qmatmul'", what);
  static const int shapes[][3] = {
      {1, 1, 32}, {3, 5, 96}, {4, 17, 256}, {2, 64, 512}};
  /* Scales and offsets are exact binary16 values: 1/16, 1/8, -1/4, 0.5. */
  static const uint16_t scales[] = {0x2c00, 0x3000},
                        offsets[] = {0xb400, 0x3800};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    size_t block = 4 + 4 * (size_t)bits, nblocks = (size_t)n * (k / 32);
    unsigned char *w = malloc(nblocks * block);
    float *x = malloc(sizeof(float) * (size_t)m * k);
    float *y = malloc(sizeof(float) * (size_t)m * n);
    double *ref = malloc(sizeof(double) * (size_t)m * n);
    assert_true(w && x && y && ref);
    for (size_t b = 0; b < nblocks; b++) {
      unsigned char *p = w + b * block;
      uint16_t d = scales[next() % 2], o = offsets[next() % 2];
      p[0] = (unsigned char)d, p[1] = (unsigned char)(d >> 8);
      p[2] = (unsigned char)o, p[3] = (unsigned char)(o >> 8);
      for (size_t c = 4; c < block; c++) p[c] = (unsigned char)next();
    }
    for (size_t i = 0; i < (size_t)m * k; i++)
      x[i] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
    reference(x, w, ref, m, n, k, bits);
    f(x, w, y, m, n, k);
    for (size_t i = 0; i < (size_t)m * n; i++) {
      double err = y[i] - ref[i],
             tol = 1e-4 * (1.0 + (ref[i] < 0 ? -ref[i] : ref[i])) * k / 32;
      if (err > tol || err < -tol)
        fail_msg("%s: m=%d n=%d k=%d: y[%zu] = %.7g, reference %.7g", what, m,
                 n, k, i, y[i], ref[i]);
    }
    free(w);
    free(x);
    free(y);
    free(ref);
  }
}

static void every_runnable_qmatmul(void **state) {
  (void)state;
  gk_archive *ar;
  if (gk_archive_open(archive_path, &ar) != GK_OK)
    fail_msg("%s", gk_last_error());
  gk_device here;
  assert_int_equal(gk_device_detect(&here), GK_OK);
  size_t count, checked = 0;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  for (size_t i = 0; i < count; i++) {
    gk_image_info info;
    int bits;
    assert_int_equal(gk_archive_image(ar, i, &info), GK_OK);
    if (strcmp(info.kernel, "qmatmul") || strcmp(info.backend, "cpu") ||
        sscanf(info.variant, "bits=%d", &bits) != 1)
      continue;
    /* Load exactly this row: a device of its level picks it, unless that
     * level is above this CPU, which gk_module_load refuses. */
    char spec[96], what[160];
    gk_device dev;
    gk_module *mod;
    snprintf(spec, sizeof spec, "cpu:%s", info.target);
    snprintf(what, sizeof what, "qmatmul %s %s", info.variant, info.target);
    assert_int_equal(gk_device_parse(spec, &dev, NULL, 0), GK_OK);
    int rc = gk_module_load(ar, &dev, "qmatmul", info.variant, &mod);
    if (rc == GK_ENODEVICE) {
      printf("  %s: above this CPU (%s), not run\n", what, here.arch);
      continue;
    }
    if (rc != GK_OK) fail_msg("%s: %s", what, gk_archive_errmsg(ar));
    assert_string_equal(gk_module_info(mod)->target, info.target);
    check_module(mod, bits, what);
    printf("  %s: ok\n", what);
    gk_module_unload(mod);
    checked++;
  }
  if (checked == 0)
    fail_msg("'%s' has no qmatmul image this CPU can run", archive_path);
  gk_archive_close(ar);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ARCHIVE\n", argv[0]);
    return 2;
  }
  archive_path = argv[1];
  if (access(archive_path, F_OK) != 0) {
    printf("SKIP: %s does not exist (the 'archive' fixture did not build it)\n",
           archive_path);
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(every_runnable_qmatmul)};
  return cmocka_run_group_tests_name("loader.real", tests, NULL, NULL);
}
