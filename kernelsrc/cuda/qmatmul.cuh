/*
 * qmatmul.cuh - y = x * W^T for the quantized weight format of
 * docs/weights.md, on GPUs: y[i*n + j] = sum_t x[i*k + t] * W[j][t].
 * One template for every code width (Bits = 1, 2, 4, 8).
 *
 * Launch (the recipe's `launch`, docs/kernels.md "Launching on GPUs"):
 * blocks of QM_THREADS threads, grid (ceil(m / QM_XROWS), ceil(n / QM_COLS)),
 * or any smaller grid (the blocks loop over what it leaves). The tiles go
 * in groups of 32 tiles of x (256 rows), a group's x first, so that the
 * blocks running at once share rows of W and of x, and L2 holds both.
 *
 * The work of a group of 32 threads: QM_WROWS rows of W (output columns j)
 * against MT rows of x (1 when m == 1, else up to QM_XROWS = 8), walking
 * k in steps of 8 blocks (256 columns). In a step, lane l takes "octet"
 * s = l % 4 (columns 8s .. 8s+7) of block 8*step + l / 4: the group reads 8 whole consecutive blocks of each W row
 * and 1 KB of consecutive x per row of x, so every load is coalesced and
 * x, held in registers, is reused for QM_WROWS rows of W (the old kernel
 * gave each lane whole blocks, and read 6x more x than W, strided: L1-bound
 * at 0.13 of the copy bandwidth on an H200). A step decodes the lane's
 * octet of each of the QM_WROWS rows once (8 registers a row), then streams
 * the rows of x through it one at a time (8 registers): the decode, ~3.6
 * instructions a weight, is paid once per 8 rows of x, so at m >= 8 the
 * fmaf are 2/3 of what the group issues (with 4 rows of x a tile, 1/2).
 * 16 rows (3/4) spill past the 128 registers two blocks an SM leave; 12
 * fit (126) but cut m = 16 in two tiles, as 8 do.
 *
 * Decoding a code costs no int-to-float conversion (a quarter-rate
 * instruction) and no scaling: the code q, still in place at bit p of a
 * 16-bit half of its word, is masked into the mantissa of a float whose
 * exponent makes that bit worth 1, 2^(23-p); so the float
 * (2^(23-p) + q) - 2^(23-p) is q exactly (two instructions, the exponent
 * and the constant chosen per position at compile time), and each weight
 * is the one-rounding fmaf(d, q, m) of docs/kernels.md as written.
 *
 * Sum order (fixed, so the same bits on every run and for any grid): lane l
 * adds its products fmaf(x, w, acc) into one accumulator per (row of x, row
 * of W), octet by octet in step order and column order inside an octet;
 * then the 32 lanes are added in a fixed butterfly. The order depends on k
 * only, not on m, MT or the grid: a row of x gives the same y bits in any
 * batch (tests/backends/cuda checks this).
 *
 * Requirements (device pointers from cuMemAlloc/hipMalloc satisfy them):
 * x 16-byte aligned with k % 4 == 0 (rows are read as float4), w 4-byte
 * aligned (blocks as 32-bit words). k % 32 columns at the end are ignored;
 * k < 32 gives zeros.
 */
#ifndef GK_QMATMUL_CUH
#define GK_QMATMUL_CUH

#include "gk_gpu.cuh"

#define QM_THREADS 256
#define QM_GROUPS (QM_THREADS / GK_GROUP)
#define QM_WROWS 4                      /* rows of W per group */
#define QM_COLS (QM_GROUPS * QM_WROWS)  /* output columns per block */
#define QM_XROWS 8                      /* rows of x per block when m > 1 */
#define QM_MIN_BLOCKS 2                 /* per SM: at most 128 registers a thread */
#define QM_STEP 8                       /* blocks of a W row per group step */
#define QM_GROUP 32                     /* tiles of x a group of tiles walks W with */

/*
 * Where lane s's octet of a block lies: QM_HALVES 16-bit halves of code
 * words, each holding QM_PER_HALF codes at bit positions 0, Bits, 2*Bits...
 * (the lower 16 bits of the value the half is shifted to; higher bits are
 * masked off). A code at position p <= 16 - Bits is below 2^16, far inside
 * the 23-bit mantissa the decode needs.
 */
template <int Bits>
struct gk_qm_octet {
  enum {
    HALVES = Bits <= 2 ? 1 : Bits / 2, /* 1, 1, 2, 4 */
    PER_HALF = 8 / HALVES,             /* 8, 8, 4, 2 */
    WORDS = Bits == 8 ? 2 : 1,         /* code words holding the octet */
  };
  /* The code words of lane s's octet, from a block's code words. */
  GK_DEV void fetch(const uint32_t *__restrict__ codes, int s, uint32_t *c) {
    if (Bits == 1) {
      c[0] = codes[0];
    } else if (Bits == 2) {
      c[0] = codes[s >> 1];
    } else if (Bits == 4) {
      c[0] = codes[s];
    } else {
      c[0] = codes[2 * s];
      c[1] = codes[2 * s + 1];
    }
  }
  /* Those words as HALVES values, code 0 in the lowest bits. */
  GK_DEV void halves(const uint32_t *c, int s, uint32_t *h) {
    if (Bits == 1) {
      h[0] = c[0] >> (8 * s);
    } else if (Bits == 2) {
      h[0] = c[0] >> (16 * (s & 1));
    } else if (Bits == 4) {
      h[0] = c[0];
      h[1] = c[0] >> 16;
    } else {
      h[0] = c[0];
      h[1] = c[0] >> 16;
      h[2] = c[1];
      h[3] = c[1] >> 16;
    }
  }
};

/* What a lane reads of W in a step, as loaded: each row's block header
 * (d, m as binary16) and the code words of its octet. */
template <int Bits>
struct gk_qm_words {
  uint32_t head[QM_WROWS], c[QM_WROWS][gk_qm_octet<Bits>::WORDS];
};

/* Lane s's words of block b of row j of W. */
template <int Bits>
GK_DEV void gk_qm_fetch_row(const uint32_t *__restrict__ w32, int64_t j, int64_t nb, int64_t b,
                            int s, gk_qm_words<Bits> &f, int r) {
  const uint32_t *blk = w32 + (j * nb + b) * (GK_QBLOCK_BYTES(Bits) / 4);
  f.head[r] = blk[0]; /* d in bytes 0-1, m in bytes 2-3 */
  gk_qm_octet<Bits>::fetch(blk + 1, s, f.c[r]);
}

/* The same for rows j0 .. j0 + rows - 1. */
template <int Bits>
GK_DEV void gk_qm_fetch(const uint32_t *__restrict__ w32, int64_t j0, int rows, int64_t nb,
                        int64_t b, int s, gk_qm_words<Bits> &f) {
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    if (r < rows) gk_qm_fetch_row<Bits>(w32, j0 + r, nb, b, s, f, r);
  }
}

/* m == 1: how many steps ahead of its loads a group has L2 fetch W
 * (gk_qm_prefetch): 2560 bytes a group, 40 KB an SM at 16 groups. The
 * loads themselves keep two steps in flight (cur and nxt below), 1024
 * blocks an SM: 8 KB at BITS 1, 12 at 2, 20 at 4, 36 at 8, where DRAM's
 * latency times its bandwidth asks ~25 to 32 KB an SM (4.24 TB/s over 132
 * SMs, 0.8 to 1 us under load: an estimate, not measured). */
#define QM_AHEAD(Bits) (2560 / (32 * GK_QBLOCK_BYTES(Bits))) /* 10, 6, 4, 2 steps */

/* Lane l's part of that: the bytes of blocks bs .. bs + QM_STEP - 1 (those
 * < nb) of row j0 + l % 4, one L2 sector a lane: lane l / 4 = q hints the
 * sector 32 q bytes past the first one the blocks touch (the blocks' first
 * byte for q = 0), where that is still one of their bytes. 8 lanes cover
 * the 6 sectors or fewer that 8 blocks touch up to BITS 4 (160 bytes); at
 * BITS 8 (288 bytes, up to 10 sectors) the last one or two are left to the
 * load. Every address lies in W. */
template <int Bits>
GK_DEV void gk_qm_prefetch(const void *w, int64_t j0, int rows, int64_t nb, int64_t bs,
                           int lane) {
  static_assert(QM_WROWS == 4 && GK_GROUP == 32, "a lane per row of W and sector");
  const int r = lane % 4, q = lane / 4;
  if (r >= rows || bs >= nb) return;
  const int64_t n_b = nb - bs < QM_STEP ? nb - bs : QM_STEP;
  const uintptr_t first = (uintptr_t)w + (uintptr_t)(((j0 + r) * nb + bs) * GK_QBLOCK_BYTES(Bits));
  const uintptr_t end = first + (uintptr_t)(n_b * GK_QBLOCK_BYTES(Bits));
  const uintptr_t at = q == 0 ? first : (first & ~(uintptr_t)31) + 32 * (uintptr_t)q;
  if (at < end) gk_prefetch_l2((const void *)at);
}

/* The code at bit p of half h, as a float, exactly (see the top): the
 * mask keeps it and drops every other bit; the exponent 150 - p (127 +
 * 23 - p) makes the mantissa's bit p worth 1. */
template <int Bits>
GK_DEV float gk_qm_code(uint32_t h, int p) {
  return gk_q_f32_from_bits((h & (GK_QMASK(Bits) << p)) | (150u - (uint32_t)p) << 23) -
         (float)(1u << (23 - p));
}

/* The octet's 8 weights, each fmaf(d, q, m) (see the top). BITS 1: a
 * weight is one of the block's two, fmaf(d, 0, m) or fmaf(d, 1, m) (the
 * same floats, NaN and infinities included), picked by its bit: a select
 * instead of the mask, subtract and fmaf (1 and 2 bits are bound by these
 * instructions, not by memory: docs/kernels.md, "Speed on GPUs"). */
template <int Bits>
GK_DEV void gk_qm_weights(const uint32_t *h, float d, float mo, float wv[8]) {
  typedef gk_qm_octet<Bits> octet;
  if (Bits == 1) {
    const float w0 = fmaf(d, 0.0f, mo), w1 = fmaf(d, 1.0f, mo);
    for (int u = 0; u < 8; u++) wv[u] = (h[0] >> u) & 1u ? w1 : w0;
  } else { /* not after a return: nvcc warns of an unreachable loop at BITS 1 */
    for (int hh = 0; hh < octet::HALVES; hh++)
      for (int u = 0; u < octet::PER_HALF; u++)
        wv[hh * octet::PER_HALF + u] = fmaf(d, gk_qm_code<Bits>(h[hh], Bits * u), mo);
  }
}

/*
 * One group: rows j0 .. j0 + QM_WROWS - 1 of W (those < n) against rows
 * i0 .. i0 + MT - 1 of x (those < m).
 */
template <int Bits, int MT>
GK_DEV void gk_qmatmul_tile(const float *__restrict__ x, const void *__restrict__ w,
                            float *__restrict__ y, int64_t m, int64_t n, int64_t k,
                            int64_t j0, int64_t i0) {
  typedef gk_qm_octet<Bits> octet;
  const int lane = gk_lane(), s = lane % 4;
  const int64_t nb = k / GK_QBLOCK;
  const uint32_t *w32 = (const uint32_t *)w;
  int rows = QM_WROWS;
  if (j0 + rows > n) rows = (int)(n - j0);
  int xrows = MT;
  if (i0 + xrows > m) xrows = (int)(m - i0);

  float acc[QM_WROWS][MT];
  for (int r = 0; r < QM_WROWS; r++)
    for (int i = 0; i < MT; i++) acc[r][i] = 0.0f;

  /* m == 1 is bound by memory: the next step's words of W are loaded
   * before this step's are decoded, so that a warp has two steps of W in
   * flight, not one, and L2 is asked for the step QM_AHEAD steps on
   * (gk_qm_prefetch), which the loads then find there: together 48 to 73
   * KB an SM, over what DRAM's latency times its bandwidth asks (x, read
   * by every group, comes from L2). m > 1 is bound by issue, and spends
   * the registers on rows of x. */
  gk_qm_words<Bits> cur = {}, nxt = {};
  const int64_t b0 = lane / 4;
  if (MT == 1 && b0 < nb) gk_qm_fetch<Bits>(w32, j0, rows, nb, b0, s, cur);
  for (int64_t b = b0; b < nb; b += QM_STEP) {
    if (MT == 1 && b + QM_STEP < nb) gk_qm_fetch<Bits>(w32, j0, rows, nb, b + QM_STEP, s, nxt);
    if (MT == 1) gk_qm_prefetch<Bits>(w, j0, rows, nb, b - b0 + QM_STEP * QM_AHEAD(Bits), lane);
    /* This lane's octet of block b of each row of W, decoded. */
    float wv[QM_WROWS][8];
#pragma unroll
    for (int r = 0; r < QM_WROWS; r++) {
      if (r < rows) {
        if (MT > 1) gk_qm_fetch_row<Bits>(w32, j0 + r, nb, b, s, cur, r); /* row by row */
        uint32_t h[octet::HALVES];
        octet::halves(cur.c[r], s, h);
        gk_qm_weights<Bits>(h, gk_h2f((uint16_t)(cur.head[r] & 0xffffu)),
                            gk_h2f((uint16_t)(cur.head[r] >> 16)), wv[r]);
      }
    }
    /* Each row of x's 8 columns of the octet, against every row of W. */
#pragma unroll
    for (int i = 0; i < MT; i++) {
      if (i < xrows) {
        const float4 *xp = (const float4 *)(x + (i0 + i) * k + b * GK_QBLOCK + 8 * s);
        const float4 a = xp[0], c = xp[1];
        const float xv[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
#pragma unroll
        for (int r = 0; r < QM_WROWS; r++) {
          if (r < rows) {
            float v = acc[r][i];
            for (int t = 0; t < 8; t++) v = fmaf(xv[t], wv[r][t], v);
            acc[r][i] = v;
          }
        }
      }
    }
    if (MT == 1) cur = nxt;
  }
  /* Every lane reaches the butterflies: the bounds above are per group. */
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++)
#pragma unroll
    for (int i = 0; i < MT; i++) {
      if (i < xrows) { /* xrows is the group's: all 32 lanes take the branch */
        const float v = gk_group_sum(acc[r][i]);
        if (lane == 0 && r < rows) y[(i0 + i) * n + j0 + r] = v;
      }
    }
}

/* m > 1: the tiles (QM_XROWS rows of x by QM_COLS of W) in groups of
 * QM_GROUP tiles of x (gk_grouped_tiles), so a grid smaller
 * than ceil(m / QM_XROWS) x ceil(n / QM_COLS) (one clamped to a device
 * limit) is still correct. The ~264 blocks a card runs at once (two an SM)
 * share 256 rows of x (8 MB at k = 8192) and ~8 tiles of W, so x comes
 * from memory about once and W m / 256 times; walking all of x for each
 * tile of W, as before, read x n / 32 times from memory once x outgrew L2
 * (at m = 4096, n = k = 8192: 34 GB, 8 ms at 4.24 TB/s, as long as the
 * call's FMAs take at their peak; now about 0.8 GB: a model, not
 * measured). At m <= 16 (tiles of x: 2 at most) the order is as before.
 * The bounds are the same for the 32 threads of a group, which leave a
 * loop together: no shuffle is left half-attended. */
template <int Bits>
GK_DEV void gk_qmatmul(const float *x, const void *w, float *y, int64_t m,
                       int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k < 0) return;
  /* m == 1 (decode) keeps one row of x: memory bound, its registers spent
   * on loads in flight. Two loop nests, not one with a branch inside:
   * ptxas then allocates each tile's registers on its own (in one nest,
   * BITS 8 spilled where either alone fits). */
  if (m == 1) {
    if (blockIdx.x != 0) return; /* the one tile of x is column 0's */
    for (int64_t by = blockIdx.y; by * QM_COLS < n; by += gridDim.y) {
      const int64_t j0 = by * QM_COLS + (int64_t)gk_group() * QM_WROWS;
      if (j0 < n) gk_qmatmul_tile<Bits, 1>(x, w, y, m, n, k, j0, 0);
    }
    return;
  }
  gk_grouped_tiles((m + QM_XROWS - 1) / QM_XROWS, (n + QM_COLS - 1) / QM_COLS, QM_GROUP,
                   [&](int64_t bx, int64_t by) {
                     const int64_t j0 = by * QM_COLS + (int64_t)gk_group() * QM_WROWS;
                     if (j0 < n)
                       gk_qmatmul_tile<Bits, QM_XROWS>(x, w, y, m, n, k, j0, bx * QM_XROWS);
                   });
}

#endif /* GK_QMATMUL_CUH */
