/*
 * image.c - a tiny cpu image for the loader tests, built several times as
 * shared objects with different GK_TEST_IMAGE_ID values (so tests can tell
 * which one got loaded) and packed by the fixture.
 *
 * qmatmul follows docs/weights.md for BITS = 4, scalar and slow: the tests
 * call it through the loader to show the loaded code really runs.
 */
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#ifdef GK_TEST_IMAGE_UNRESOLVED
/* Defined nowhere: dlopen(RTLD_NOW) of this image must fail. */
extern int gk_test_no_such_function(void);
#endif

EXPORT int gk_test_image_id(void) {
#ifdef GK_TEST_IMAGE_UNRESOLVED
  return gk_test_no_such_function();
#else
  return GK_TEST_IMAGE_ID;
#endif
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31,
           man = h & 1023, bits;
  if (exp == 0 && man == 0) {
    bits = sign;
  } else if (exp == 0) { /* subnormal: normalise */
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

EXPORT void qmatmul(const float *x, const void *w, float *y, int64_t m,
                    int64_t n, int64_t k) {
  enum { BITS = 4, BLOCK = 4 + 4 * BITS };
  const unsigned char *wb = w;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      const unsigned char *row = wb + j * (k / 32) * BLOCK;
      float acc = 0;
      for (int64_t t = 0; t < k; t++) {
        const unsigned char *b = row + (t / 32) * BLOCK;
        int c = (int)(t % 32);
        float d = half_to_float((uint16_t)(b[0] | b[1] << 8));
        float off = half_to_float((uint16_t)(b[2] | b[3] << 8));
        int q = (b[4 + c * BITS / 8] >> (c * BITS % 8)) & ((1 << BITS) - 1);
        acc += x[i * k + t] * (d * (float)q + off);
      }
      y[i * n + j] = acc;
    }
}
