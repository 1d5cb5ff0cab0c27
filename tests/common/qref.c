/*
 * qref.c - the scalar reference. Written from docs/weights.md without
 * looking at the kernels, so that a shared misreading of the format cannot
 * make both sides agree.
 */
#include "qref.h"

#include <math.h>
#include <stdlib.h>

void qref_seed(qref_rng *r, uint64_t seed) { r->state = seed; }

/* splitmix64: tiny, fast, and its output depends only on the seed. */
uint64_t qref_next(qref_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double qref_uniform(qref_rng *r) {
  return (double)(qref_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

float qref_f16_decode(uint16_t h) {
  int exp = (h >> 10) & 31;
  int mant = h & 1023;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 31)
    return mant ? NAN : (float)(sign * INFINITY);
  /* Subnormals have no implicit leading one and the exponent of exp == 1. */
  if (exp == 0)
    return (float)(sign * ldexp(mant, -24));
  return (float)(sign * ldexp(1024 + mant, exp - 25));
}

uint16_t qref_f16_encode(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  if (isnan(f))
    return sign | 0x7e00;
  double a = fabs((double)f);
  /* 65520 is halfway between the largest finite (65504) and 65536; ties go
   * to the even significand, which is the overflow to inf. */
  if (a >= 65520.0)
    return sign | 0x7c00;
  /* Below the smallest normal the step is 2^-24; a result of 1024 steps is
   * the smallest normal, whose encoding is the same integer. */
  if (a < ldexp(1.0, -14))
    return sign | (uint16_t)nearbyint(ldexp(a, 24));
  int e;
  double sig = ldexp(frexp(a, &e), 11); /* in [1024, 2048) */
  double r = nearbyint(sig);            /* default mode: nearest even */
  if (r == 2048.0) {
    r = 1024.0;
    e++;
  }
  int biased = e - 1 + 15;
  if (biased >= 31)
    return sign | 0x7c00;
  return sign | (uint16_t)(biased << 10) | (uint16_t)(r - 1024.0);
}

unsigned qref_code(const unsigned char *codes, int bits, int j) {
  unsigned q = 0;
  for (int b = 0; b < bits; b++) {
    long bit = (long)j * bits + b; /* position in the whole stream */
    unsigned v = (codes[bit / 8] >> (bit % 8)) & 1u;
    q |= v << b;
  }
  return q;
}

static size_t block_bytes(int bits) { return 4 + 32 * (size_t)bits / 8; }

size_t qref_w_bytes(int bits, int64_t n, int64_t k) {
  return (size_t)n * (size_t)(k / 32) * block_bytes(bits);
}

static uint16_t read_le16(const unsigned char *p) {
  return (uint16_t)(p[0] + 256u * p[1]);
}

double qref_weight(int bits, const unsigned char *w, int64_t k, int64_t row,
                   int64_t col) {
  const unsigned char *blk =
      w + ((size_t)row * (size_t)(k / 32) + (size_t)(col / 32)) *
              block_bytes(bits);
  double d = qref_f16_decode(read_le16(blk));
  double m = qref_f16_decode(read_le16(blk + 2));
  return d * qref_code(blk + 4, bits, (int)(col % 32)) + m;
}

void qref_fill_x(qref_rng *r, float *x, size_t count) {
  for (size_t i = 0; i < count; i++)
    x[i] = (float)(2.0 * qref_uniform(r) - 1.0);
}

/* A scale like a real quantizer's: the row's range over 2^bits - 1 steps,
 * weights of order 0.05. Rare blocks take the edge cases of binary16. */
static uint16_t random_scale(qref_rng *r, int bits) {
  uint64_t pick = qref_next(r) % 64;
  if (pick == 0)
    return 0x0000; /* zero scale: the block is all m */
  if (pick == 1)
    return (uint16_t)(1 + qref_next(r) % 1023); /* subnormal */
  double d = (0.02 + 0.1 * qref_uniform(r)) / ((1u << bits) - 1);
  return qref_f16_encode((float)(pick == 2 ? -d : d));
}

void qref_fill_w(qref_rng *r, int bits, int64_t n, int64_t k,
                 unsigned char *w) {
  size_t blocks = (size_t)n * (size_t)(k / 32);
  for (size_t b = 0; b < blocks; b++) {
    unsigned char *blk = w + b * block_bytes(bits);
    uint16_t d = random_scale(r, bits);
    /* Centre the codes on zero as asymmetric quantizers do: m near
     * -d * 2^(bits-1), jittered so m is not a multiple of d. */
    double dv = qref_f16_decode(d);
    double mv = -dv * (1u << (bits - 1)) * (0.75 + 0.5 * qref_uniform(r));
    if (qref_next(r) % 64 == 0)
      mv = -0.0;
    uint16_t m = qref_f16_encode((float)mv);
    blk[0] = (unsigned char)(d & 0xff);
    blk[1] = (unsigned char)(d >> 8);
    blk[2] = (unsigned char)(m & 0xff);
    blk[3] = (unsigned char)(m >> 8);
    for (size_t i = 4; i < block_bytes(bits); i++)
      blk[i] = (unsigned char)(qref_next(r) >> 56);
  }
}

/* Row j of W in double: per block, d and m once, then each code. */
static void decode_row(int bits, const unsigned char *w, int64_t k, int64_t j,
                       double *row) {
  const unsigned char *blk = w + (size_t)j * (size_t)(k / 32) * block_bytes(bits);
  for (int64_t b = 0; b < k / 32; b++, blk += block_bytes(bits)) {
    const double d = qref_f16_decode(read_le16(blk));
    const double m = qref_f16_decode(read_le16(blk + 2));
    for (int t = 0; t < 32; t++)
      row[b * 32 + t] = d * qref_code(blk + 4, bits, t) + m;
  }
}

int qref_matmul(int bits, const float *x, const unsigned char *w, int64_t m,
                int64_t n, int64_t k, double *y, double *mag) {
  double *row = malloc((size_t)(k > 0 ? k : 1) * sizeof *row);
  if (!row)
    return -1;
  for (int64_t j = 0; j < n; j++) {
    decode_row(bits, w, k, j, row);
    for (int64_t i = 0; i < m; i++) {
      double s = 0.0, a = 0.0;
      for (int64_t t = 0; t < k / 32 * 32; t++) {
        double p = (double)x[i * k + t] * row[t];
        s += p;
        a += fabs(p);
      }
      y[i * n + j] = s;
      if (mag)
        mag[i * n + j] = a;
    }
  }
  free(row);
  return 0;
}

/* qref_q8x (qref.h): x rounded to nearest, ties to even, in [-127, 127]. */
static int q8x_round(float v) {
  v = v > -127.0f ? v : -127.0f;
  v = v < 127.0f ? v : 127.0f;
  const float r = nearbyintf(v); /* default mode: to nearest, ties to even */
  return (int)r;
}

/* Room for one row of x rounded (qref_q8x_round): 0, or -1 (nothing held). */
static int q8x_rows(int64_t nb, int8_t **xq, float **dx, float **sb) {
  *xq = malloc((size_t)(nb * 32) + 1);
  *dx = malloc((size_t)nb * sizeof **dx + 1), *sb = malloc((size_t)nb * sizeof **sb + 1);
  if (*xq && *dx && *sb) return 0;
  free(*xq), free(*dx), free(*sb);
  return -1;
}

void qref_q8x_round(const float *x, int64_t nb, int8_t *xq, float *dx, float *sb) {
  for (int64_t b = 0; b < nb; b++) {
    const float *xb = x + 32 * b;
    float a = 0.0f;
    for (int t = 0; t < 32; t++)
      a = fabsf(xb[t]) > a ? fabsf(xb[t]) : a;
    const float inv = a > 0.0f ? 127.0f / a : 0.0f;
    dx[b] = a / 127.0f;
    int32_t s = 0;
    for (int t = 0; t < 32; t++) {
      volatile float p = xb[t] * inv; /* one rounded multiply */
      xq[32 * b + t] = (int8_t)q8x_round(p);
      s += xq[32 * b + t];
    }
    sb[b] = dx[b] * (float)s;
  }
}

void qref_q8x_mm_row(int bits, const int8_t *xq, const float *dx, const float *sb,
                     const unsigned char *w, int64_t n, int64_t nb, float *y) {
  const int64_t bb = 4 + 4 * bits;
  for (int64_t j = 0; j < n; j++) {
    const unsigned char *row = w + j * nb * bb;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
      const unsigned char *blk = row + b * bb;
      const float d = qref_f16_decode((uint16_t)(blk[0] | blk[1] << 8));
      const float mm = qref_f16_decode((uint16_t)(blk[2] | blk[3] << 8));
      int32_t is = 0;
      for (int t = 0; t < 32; t++) is += (int)qref_code(blk + 4, bits, t) * xq[32 * b + t];
      volatile float dd = d * dx[b]; /* rounded, then two fused multiply-adds */
      acc = fmaf((float)is, dd, acc);
      acc = fmaf(mm, sb[b], acc);
    }
    y[j] = acc;
  }
}

int qref_q8x_mm(int bits, const float *x, const unsigned char *w, int64_t m, int64_t n,
                int64_t k, float *y) {
  const int64_t nb = k / 32;
  int8_t *xq;
  float *dx, *sb;
  if (q8x_rows(nb, &xq, &dx, &sb) != 0) return -1;
  for (int64_t i = 0; i < m; i++) {
    qref_q8x_round(x + i * k, nb, xq, dx, sb);
    qref_q8x_mm_row(bits, xq, dx, sb, w, n, nb, y + i * n);
  }
  free(xq), free(dx), free(sb);
  return 0;
}

void qref_q8x_row(int bits, const int8_t *xq, const float *dx, const float *sb,
                  const unsigned char *w, int64_t n, int64_t nb, float *y, double *bound) {
  const int64_t bb = 4 + 4 * bits;
  for (int64_t j = 0; j < n; j++) {
    const unsigned char *row = w + j * nb * bb;
    float acc = 0.0f;
    double err = 0.0;
    for (int64_t c = 0; c < nb; c += 128) {
      float lane[16] = {0};
      for (int64_t b = c; b < nb && b < c + 128; b++) {
        const unsigned char *blk = row + b * bb;
        const float d = qref_f16_decode((uint16_t)(blk[0] | blk[1] << 8));
        const float mm = qref_f16_decode((uint16_t)(blk[2] | blk[3] << 8));
        int32_t is = 0;
        double wabs = 0.0;
        for (int t = 0; t < 32; t++) {
          const int q = (int)qref_code(blk + 4, bits, t);
          is += q * xq[32 * b + t];
          wabs += fabs((double)d * q + mm);
        }
        /* volatile: each product and sum rounded to float, never fused */
        volatile float dd = d * dx[b];
        volatile float p1 = (float)is * dd;
        volatile float l1 = lane[(b - c) % 16] + p1;
        volatile float p2 = mm * sb[b];
        lane[(b - c) % 16] = l1 + p2;
        err += wabs * ((double)dx[b] * 127.0 / 254.0);
      }
      for (int h = 8; h >= 1; h /= 2)
        for (int l = 0; l < h; l++)
          lane[l] += lane[l + h];
      acc += lane[0];
    }
    y[j] = acc;
    if (bound) bound[j] = err;
  }
}

int qref_q8x(int bits, const float *x, const unsigned char *w, int64_t m,
                         int64_t n, int64_t k, float *y, double *bound) {
  const int64_t nb = k / 32;
  int8_t *xq;
  float *dx, *sb;
  if (q8x_rows(nb, &xq, &dx, &sb) != 0) return -1;
  for (int64_t i = 0; i < m; i++) {
    qref_q8x_round(x + i * k, nb, xq, dx, sb);
    qref_q8x_row(bits, xq, dx, sb, w, n, nb, y + i * n, bound + i * n);
  }
  free(xq), free(dx), free(sb);
  return 0;
}
