/*
 * argmax.c - out[r] = the lowest index of the largest x[r][j] (docs/
 * kernels.md): f32 rows, NaNs ignored, 0 for a row of only NaNs.
 *
 * One source, built once per x86-64 level (no variant). Two passes per
 * row (gk_cpu.h gk_argmax_row): the maximum over vectors, then the first
 * index holding it. The x86 max instruction returns its second operand
 * when the first is a NaN, so max(x, m) never lets a NaN into m; starting
 * from -inf, a row of NaNs and -infs keeps m = -inf, and the second pass
 * then finds the first -inf, or nothing at all (all NaN: 0).
 */
#include "gk_cpu.h"

/* The entry point (gk.h gk_argmax_fn). Nothing is done for rows <= 0;
 * n <= 0 gives 0 for every row. Indices fit int32 (n < 2^31). */
GK_KERNEL_EXPORT void argmax(const float *x, int32_t *out, int64_t rows,
                             int64_t n) {
  for (int64_t r = 0; r < rows; r++)
    out[r] = gk_argmax_row(x + r * (n > 0 ? n : 0), n);
}
