/*
 * gk_quant.h - the arithmetic of the quantized weight format, shared by
 * every backend (docs/weights.md is the specification).
 *
 * A row of W is K/32 blocks. A block is GK_QBLOCK_BYTES(bits) bytes:
 *   offset 0: d, IEEE binary16 scale, little endian
 *   offset 2: m, IEEE binary16 offset, little endian
 *   offset 4: 32 codes of `bits` bits, one little-endian bit stream
 * and weight t of the block is d * q_t + m.
 *
 * Everything here is header-only and free of library calls so that the same
 * text compiles as C11 (CPU kernels, tests) and as CUDA/HIP device code,
 * where each function becomes __host__ __device__. Nothing here depends on
 * _Float16 or on the floating-point environment: the binary16 decode is done
 * with integer operations plus one exact multiplication, so it gives the
 * same bits under any rounding mode and with flush-to-zero enabled.
 *
 * Every function takes bytes (`const unsigned char *`) at any alignment and
 * reads them in little-endian order whatever the host's byte order.
 */
#ifndef GK_QUANT_H
#define GK_QUANT_H

#if defined(__CUDACC__) || defined(__HIPCC__)
#  define GK_QFN __host__ __device__ static inline
#else
#  define GK_QFN static inline
#endif

#include <stdint.h>
#include <string.h> /* memcpy, which CUDA and HIP also accept in device code */

/* Weights per block, and bytes per block for a code width of `bits`
 * (1, 2, 4 or 8): two binary16 values then 32*bits/8 bytes of codes. */
#define GK_QBLOCK 32
#define GK_QBLOCK_BYTES(bits) (4 + 4 * (bits))
/* Offset of the code bytes inside a block. */
#define GK_QCODES_OFFSET 4
/* Largest code for a width: codes are unsigned, 0 .. 2^bits - 1. */
#define GK_QMASK(bits) ((1u << (bits)) - 1u)

/* Bytes of one row of W with k columns (k a multiple of GK_QBLOCK). */
GK_QFN int64_t gk_q_row_bytes(int bits, int64_t k) {
  return (k / GK_QBLOCK) * (int64_t)GK_QBLOCK_BYTES(bits);
}

/* Little-endian reads, byte by byte: no alignment or byte-order assumption
 * (compilers turn these into one load on little-endian targets). */
GK_QFN uint16_t gk_q_le16(const unsigned char *p) {
  return (uint16_t)(p[0] | ((unsigned)p[1] << 8));
}

GK_QFN uint32_t gk_q_le32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

/* Reinterprets bits as a float and back. memcpy is the one form that is
 * defined behaviour in both C and C++, works in host and device code alike
 * (unlike __uint_as_float, which is device-only) and compiles to a move. */
GK_QFN float gk_q_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

GK_QFN uint32_t gk_q_f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/*
 * IEEE binary16 -> binary32, exact for every one of the 65536 patterns:
 * normals, subnormals, +-0, +-inf, and NaNs (payload kept, shifted into the
 * top of the binary32 mantissa, so a quiet NaN stays quiet).
 *
 * A binary16 subnormal is mant * 2^-24 with mant < 1024; it is a normal
 * binary32, computed as (float)mant times a power of two. Both steps are
 * exact, so the result does not depend on the rounding mode, and no
 * subnormal binary32 is ever involved (safe under flush-to-zero).
 */
GK_QFN float gk_q_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) /* inf and NaN keep their payload */
    return gk_q_f32_from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) { /* zero and subnormals: 2^-24 = 5.9604644775390625e-8 */
    float mag = (float)mant * 5.9604644775390625e-8f;
    return gk_q_f32_from_bits(sign | gk_q_f32_to_bits(mag));
  }
  /* Normal: rebias the exponent from 15 to 127. */
  return gk_q_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

/*
 * binary32 -> IEEE binary16, rounded to nearest, ties to even, on the bits
 * alone (same answer under any rounding mode or flush-to-zero): values from
 * 65520 up overflow to inf, values in the binary16 subnormal range become
 * subnormals (2^-25 and below become zero, 2^-25 itself being a tie to the
 * even zero), infinities stay infinities and a NaN becomes a quiet NaN of
 * the same sign keeping the top of its payload. Kernels with f16 outputs
 * use it where the hardware has no conversion (below F16C).
 */
GK_QFN uint16_t gk_q_f32_to_f16(float f) {
  const uint32_t x = gk_q_f32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN: set the quiet bit */
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) /* 65520 (the tie above 65504) and beyond: inf */
    return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) { /* below 2^-14: a binary16 subnormal or zero */
    if (ax <= 0x33000000u) /* 2^-25 and below round to zero */
      return (uint16_t)sign;
    /* ax is a normal binary32 m * 2^(e-150); in units of 2^-24 that is
     * m >> (126 - e), shift 14..24. A carry out gives 0x400, which is
     * exactly the encoding of the smallest normal. */
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    uint32_t h = m >> shift;
    h += (rem > half || (rem == half && (h & 1u))) ? 1u : 0u;
    return (uint16_t)(sign | h);
  }
  /* Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits; a
   * carry out of the mantissa correctly bumps the exponent. */
  const uint32_t rem = ax & 0x1fffu;
  uint32_t h = (ax >> 13) - (112u << 10);
  h += (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ? 1u : 0u;
  return (uint16_t)(sign | h);
}

/*
 * bfloat16 (the high half of a binary32) -> binary32: a shift, exact for
 * every pattern (a NaN stays a NaN).
 */
GK_QFN float gk_q_bf16_to_f32(uint16_t h) { return gk_q_f32_from_bits((uint32_t)h << 16); }

/*
 * binary32 -> bfloat16, rounded to nearest, ties to even, on the bits alone:
 * adding 0x7fff plus the lowest kept bit carries into the kept half exactly
 * when the dropped half is above the tie, or on it with an odd kept half (a
 * carry into the exponent gives the next binade, or infinity). A NaN
 * becomes the quiet NaN 0x7fc0 with its sign (the carry could make it an
 * infinity). Every backend's bf16 output follows this rule (docs/
 * kernels.md); the vector units and shaders write it in their own
 * instructions.
 */
GK_QFN uint16_t gk_q_f32_to_bf16(float f) {
  const uint32_t u = gk_q_f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16 & 0x8000u) | 0x7fc0u);
  return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}

/*
 * Code j (0..31) of a block whose code bytes start at `codes`: bits
 * [j*bits, j*bits + bits) of the little-endian bit stream. Because bits
 * divides 8, a code never straddles a byte.
 */
GK_QFN unsigned gk_q_code(const unsigned char *codes, int bits, int j) {
  return ((unsigned)codes[(j * bits) >> 3] >> ((j * bits) & 7)) &
         GK_QMASK(bits);
}

/*
 * The same code read through 32-bit words: word u = le32(codes + 4u) holds
 * codes u*32/bits .. (u+1)*32/bits - 1, code j at bit (j*bits) % 32. This is
 * the form vector units like (broadcast a word, shift each lane by its own
 * amount); `words` are the block's bits little-endian words, already read.
 */
GK_QFN unsigned gk_q_code_w32(const uint32_t *words, int bits, int j) {
  return (unsigned)(words[(j * bits) >> 5] >> ((j * bits) & 31)) &
         GK_QMASK(bits);
}

#endif /* GK_QUANT_H */
