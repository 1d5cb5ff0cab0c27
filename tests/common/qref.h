/*
 * qref.h - a deliberately plain scalar reference of the quantized weight
 * format (docs/weights.md), for testing the kernels.
 *
 * It is written from the specification alone and shares no code with
 * kernelsrc/common/gk_quant.h: codes are read one bit at a time, binary16 is
 * decoded with ldexp, sums are taken in double. Speed is not a goal; being
 * obviously right is.
 *
 * It also makes test data: a binary16 encoder (round to nearest even), a
 * small deterministic PRNG and generators of random x and random W, so that
 * every test run sees the same numbers on every machine.
 */
#ifndef QREF_H
#define QREF_H

#include <stddef.h>
#include <stdint.h>

/* ---- deterministic random numbers (splitmix64) ---- */

typedef struct qref_rng {
  uint64_t state;
} qref_rng;

void qref_seed(qref_rng *r, uint64_t seed);
uint64_t qref_next(qref_rng *r);
/* Uniform in [0, 1), 53 random bits. */
double qref_uniform(qref_rng *r);

/* ---- binary16 ---- */

/* binary16 -> float through ldexp; every NaN pattern gives a NaN. */
float qref_f16_decode(uint16_t h);
/* float -> binary16, round to nearest even, overflow to inf, subnormals
 * kept; a NaN becomes a quiet NaN of the same sign. */
uint16_t qref_f16_encode(float f);

/* ---- the block format ---- */

/* Code j (0..31) of a block's code bytes, read bit by bit from the
 * little-endian bit stream. */
unsigned qref_code(const unsigned char *codes, int bits, int j);
/* Bytes of an n x k matrix W (k a multiple of 32) for a code width. */
size_t qref_w_bytes(int bits, int64_t n, int64_t k);
/* Weight W[row][col] = d*q + m, computed in double. */
double qref_weight(int bits, const unsigned char *w, int64_t k, int64_t row,
                   int64_t col);

/* ---- test data ---- */

/* count floats uniform in [-1, 1). */
void qref_fill_x(qref_rng *r, float *x, size_t count);
/* A random W of qref_w_bytes(bits, n, k) bytes: scales and offsets of
 * realistic size (a few blocks get a zero, negative or subnormal scale)
 * and uniformly random codes. Never inf or NaN. */
void qref_fill_w(qref_rng *r, int bits, int64_t n, int64_t k,
                 unsigned char *w);

/* ---- the matmul ---- */

/*
 * y[i*n + j] = sum_t x[i*k + t] * W[j][t] in double, and, when mag is not
 * NULL, mag[i*n + j] = sum_t |x[i*k + t] * W[j][t]|, the scale an error
 * bound for a float kernel is relative to. Rows of x are k floats apart;
 * W has k/32 blocks per row (trailing k % 32 columns are ignored, as the
 * kernels do). Returns 0, or -1 when out of memory (it needs k doubles).
 */
int qref_matmul(int bits, const float *x, const unsigned char *w, int64_t m,
                int64_t n, int64_t k, double *y, double *mag);

/*
 * qmatmul_q8x's exact arithmetic (docs/weights.md, "int8 x"), in plain C
 * from the original layout: x rounded to int8 per block of 32, integer
 * products, then per chunk of 128 blocks 16 float lanes (block b into lane
 * b % 16, each operation rounded to float), a fixed tree, and the chunk
 * sums added in order. Every image's qmatmul_q8x (CPU and GPU) must give
 * exactly these bits in y. bound[i*n + j] receives how far y may be from
 * the exact product because x was rounded: sum over blocks of |w| *
 * (largest |x| / 254), plus float rounding. Returns 0, or -1 when out of
 * memory. x must be finite.
 */
int qref_q8x(int bits, const float *x, const unsigned char *w, int64_t m, int64_t n,
             int64_t k, float *y, double *bound);

/* One row of qref_q8x from x already rounded (qref_q8x_round): y[0 .. n),
 * and bound[0 .. n) where bound is not NULL. */
void qref_q8x_row(int bits, const int8_t *xq, const float *dx, const float *sb,
                  const unsigned char *w, int64_t n, int64_t nb, float *y, double *bound);

/* x's rounding of qmatmul_q8x, for one row of nb blocks: xq[32 b + t] the
 * int8 code of column t of block b, dx[b] and sb[b] (docs/weights.md). */
void qref_q8x_round(const float *x, int64_t nb, int8_t *xq, float *dx, float *sb);

/*
 * qmatmul_q8x_mm's arithmetic (GPU images, docs/weights.md, "int8 x on
 * tensor cores"): qref_q8x's rounding of x and integer block products, then
 * y = sum over blocks in order from 0 of acc = fma((float)i_b, d * dx, acc);
 * acc = fma(m, sb, acc), with d * dx rounded. Its y differs from qref_q8x's
 * in the float order only (within qref_q8x's bound). 0, or -1 when out of
 * memory.
 */
int qref_q8x_mm(int bits, const float *x, const unsigned char *w, int64_t m, int64_t n,
                int64_t k, float *y);
/* One row of it from x already rounded (qref_q8x_round): y[0 .. n). */
void qref_q8x_mm_row(int bits, const int8_t *xq, const float *dx, const float *sb,
                     const unsigned char *w, int64_t n, int64_t nb, float *y);

#endif /* QREF_H */
