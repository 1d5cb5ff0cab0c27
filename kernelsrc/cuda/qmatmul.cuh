/*
 * qmatmul.cuh - y = x * W^T for the quantized weight format of
 * docs/weights.md, on GPUs: y[i*n + j] = sum_t x[i*k + t] * W[j][t].
 * One template for the code widths Bits = 4 and 8 (the octets below);
 * Bits = 1 and 2 have a layout of their own, qmatmul_blk.cuh (a whole
 * block a lane).
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
 * s = l % 4 (columns 8s .. 8s+7) of block 8*step + l / 4: the group reads
 * 8 whole consecutive blocks of each W row and 1 KB of consecutive x per
 * row of x, so every load is coalesced and x, held in registers, is reused
 * for QM_WROWS rows of W (the old kernel gave each lane whole blocks, and
 * read 6x more x than W, strided: L1-bound at 0.13 of the copy bandwidth
 * on an H200). A step decodes the lane's octet of each of the QM_WROWS
 * rows once (8 registers a row), then streams the rows of x through it one
 * at a time (8 registers): the decode, 3 instructions a weight, is paid
 * once per 8 rows of x, so at m >= 8 the fmaf are most of what the group
 * issues (ptxas 13.0, sm_90a, a whole tile of 8 rows: 443 instructions a
 * step at BITS 4, 256 of them the products' fmaf). 16 rows spill past the 128 registers two
 * blocks an SM leave; 12 fit (126) but cut m = 16 in two tiles, as 8 do.
 *
 * Decoding a code costs no int-to-float conversion (a quarter-rate
 * instruction) and no scaling: the code q, still in place at bit p of a
 * 16-bit half of its word, is masked into the mantissa of a float whose
 * exponent makes that bit worth 1, 2^(23-p) (one lop3: gk_and_or); so the
 * float (2^(23-p) + q) - 2^(23-p) is q exactly (a subtraction), and each
 * weight is the one-rounding fmaf(d, q, m) of docs/kernels.md as written:
 * with the product's fmaf, 4 instructions a weight, the f32 contract's
 * floor.
 *
 * Sum order (fixed, so the same bits on every run and for any grid): lane l
 * adds its products fmaf(x, w, acc) into one accumulator per (row of x, row
 * of W), octet by octet in step order and column order inside an octet;
 * then the 32 lanes are added in a fixed butterfly. The order depends on k
 * only, not on m, MT or the grid: a row of x gives the same y bits in any
 * batch (tests/backends/cuda checks this). BITS 1 and 2 have their own,
 * as fixed (qmatmul_blk.cuh: block after block a lane).
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
/* Two experiments on the m > 1 tile (off in the recipes; ci/gpu's qmpf
 * and qmxs time them against the default): W's L2 prefetch
 * (gk_qmatmul_tile), and a whole tile of x through shared memory
 * (gk_qmatmul_tile_xs). */
#ifndef GK_QM_TILE_PF
#define GK_QM_TILE_PF 0
#endif
#ifndef GK_QM_TILE_XS
#define GK_QM_TILE_XS 0
#endif
#define QM_XS_STAGES 3 /* gk_qmatmul_tile_xs: steps of x in shared memory */
/* A diagnosis, not a kernel (ci/gpu/prepare.sh's qmload; off in the
 * recipes, and its y is not qmatmul's): with GK_QM_LOADS_ONLY the m = 1
 * loops of every entry (gk_qmatmul_vec, gk_qmb_vec, gk_q8x_vec) load W's
 * words as they do, the same loads in flight, and fold each into their
 * sums' bits (gk_qm_fold, an xor) instead of decoding and multiplying,
 * and read no x in them (what a block does around them, x's copy or
 * rounding included, stays): how fast each loop's access pattern of W
 * goes with next to nothing else issued, against the copy bandwidth.
 * cuda.ptxas holds its trips to the kernel's loads. On an H200
 * (2026-11-30) qmatmul at m = 1 reached 0.66 of copy at BITS 4 and
 * qmatmul_q8x 0.87: the profiles say issue and L2, and this says which
 * of the two a loop's loads alone leave room for. */
#ifndef GK_QM_LOADS_ONLY
#define GK_QM_LOADS_ONLY 0
#endif
GK_DEV float gk_qm_fold(float a, uint32_t w) {
  return gk_q_f32_from_bits(gk_q_f32_to_bits(a) ^ w);
}

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
    HALVES = Bits / 2,     /* BITS 4, 8: 2, 4 */
    PER_HALF = 8 / HALVES, /* 4, 2 */
    WORDS = Bits == 8 ? 2 : 1,         /* code words holding the octet */
  };
  /* Where lane s's octet's code words start, in words past the block's
   * first (its header): WORDS words from there. */
  GK_DEV int word(int s) {
    static_assert(Bits == 4 || Bits == 8, "BITS 1 and 2 are qmatmul_blk.cuh's");
    return Bits == 4 ? 1 + s : 1 + 2 * s;
  }
  /* Those words as HALVES values, code 0 in the lowest bits. */
  GK_DEV void halves(const uint32_t *c, int s, uint32_t *h) {
    if (Bits == 4) {
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

/* m == 1: how many steps ahead of its loads a group has L2 fetch W
 * (gk_qmatmul_vec): 2560 bytes a group, 40 KB an SM at 16 groups. The
 * loads themselves keep two steps in flight (the ping-pong of gk_qm_vec),
 * 1024 blocks an SM: 20 KB at BITS 4, 36 at 8, where
 * DRAM's latency times its bandwidth asks ~25 to 32 KB an SM (4.24 TB/s
 * over 132 SMs, 0.8 to 1 us under load: an estimate, not measured). */
#define QM_AHEAD(Bits) (2560 / (32 * GK_QBLOCK_BYTES(Bits))) /* BITS 4, 8: 4, 2 steps */

/* The code at bit p of half h, as a float, exactly (see the top): the
 * mask keeps it and drops every other bit; the exponent 150 - p (127 +
 * 23 - p) makes the mantissa's bit p worth 1. */
template <int Bits>
GK_DEV float gk_qm_code(uint32_t h, int p) {
  return gk_q_f32_from_bits(gk_and_or(h, GK_QMASK(Bits) << p, (150u - (uint32_t)p) << 23)) -
         (float)(1u << (23 - p));
}

/* Lane s's octet's 8 weights, each fmaf(d, q, m) (see the top), from its
 * words as loaded: the block's header (d, m as binary16) and code words c. */
template <int Bits>
GK_DEV void gk_qm_weights(uint32_t head, const uint32_t *c, int s, float wv[8]) {
  typedef gk_qm_octet<Bits> octet;
  uint32_t h[octet::HALVES];
  octet::halves(c, s, h);
  const float d = gk_h2f((uint16_t)(head & 0xffffu)), mo = gk_h2f((uint16_t)(head >> 16));
  for (int hh = 0; hh < octet::HALVES; hh++)
    for (int u = 0; u < octet::PER_HALF; u++)
      wv[hh * octet::PER_HALF + u] = fmaf(d, gk_qm_code<Bits>(h[hh], Bits * u), mo);
}

/*
 * m == 1, one group: rows j0 .. j0 + QM_WROWS - 1 of W (those < n)
 * against x. Bound by memory, and by issue close to it: the f32 contract
 * costs 4 instructions a weight (mask, subtract, two fmaf), so what a
 * step spends besides them is kept small, counted in
 * the sm_90a cubin (docs/gpu-speed.md):
 * - a pointer a row, moved by a constant each step: no 64-bit index
 *   arithmetic a step (the old loop's 72 instructions to address 8 loads),
 *   and one to the lane's code words in it (the header's pointer plus
 *   the lane's offset, a 64-bit add a row a step, cost ~6.5 instructions
 *   a step more than moving a second pointer);
 * - rows past n read row n - 1 again, and their sums are not stored: no
 *   branch a row;
 * - two sets of words, a and c, in turn (ping-pong): the next step's are
 *   loaded before this step's are decoded, with no copy between them;
 * - the L2 prefetch a pointer and a count (a step's 8 blocks of row
 *   lane % 4, a 32-byte sector a lane, QM_AHEAD steps on, full steps
 *   only), and the counts 32-bit: one compare a prefetch.
 * The order of the sums is the one of the top, as for m > 1.
 */
template <int Bits>
struct gk_qm_vec {
  enum {
    BB = GK_QBLOCK_BYTES(Bits), /* bytes a block */
    SW = QM_STEP * BB / 4,      /* words a step of a row */
  };
  const uint32_t *p[QM_WROWS]; /* row r's block of this step: its header word */
  const uint32_t *q[QM_WROWS]; /* and the lane's code words in it */
  const float *xp;             /* x at the lane's columns of this step */
  int s;                       /* the lane's octet */
};

/* Where block b0 of rows j0 .. j0 + QM_WROWS - 1 of W begins, rows past
 * the group's `rows` (past n) reading its last row again. */
template <int Bits>
GK_DEV void gk_qm_rows(const void *w, int64_t j0, int rows, int64_t nb, int64_t b0,
                       const uint32_t *p[QM_WROWS]) {
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    const int64_t j = j0 + (r < rows ? r : rows - 1);
    p[r] = (const uint32_t *)((const char *)w + (j * nb + b0) * GK_QBLOCK_BYTES(Bits));
  }
}

/* f: the words of this step (at = 0) or the next (at = SW). */
template <int Bits>
GK_DEV void gk_qm_vec_load(const gk_qm_vec<Bits> &v, gk_qm_words<Bits> &f, int at) {
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    f.head[r] = v.p[r][at];
    for (int u = 0; u < gk_qm_octet<Bits>::WORDS; u++) f.c[r][u] = v.q[r][at + u];
  }
}

/* This step's products (f: its words), then on to the next step. */
template <int Bits>
GK_DEV void gk_qm_vec_step(gk_qm_vec<Bits> &v, const gk_qm_words<Bits> &f,
                           float acc[QM_WROWS]) {
#if GK_QM_LOADS_ONLY
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    acc[r] = gk_qm_fold(acc[r], f.head[r]);
    for (int u = 0; u < gk_qm_octet<Bits>::WORDS; u++) acc[r] = gk_qm_fold(acc[r], f.c[r][u]);
    v.p[r] += gk_qm_vec<Bits>::SW;
    v.q[r] += gk_qm_vec<Bits>::SW;
  }
  v.xp += QM_STEP * GK_QBLOCK;
  return;
#endif
  const float4 a = ((const float4 *)v.xp)[0], c = ((const float4 *)v.xp)[1];
  const float xv[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    float wv[8];
    gk_qm_weights<Bits>(f.head[r], f.c[r], v.s, wv);
    float a_r = acc[r];
    for (int t = 0; t < 8; t++) a_r = fmaf(xv[t], wv[t], a_r);
    acc[r] = a_r;
    v.p[r] += gk_qm_vec<Bits>::SW;
    v.q[r] += gk_qm_vec<Bits>::SW;
  }
  v.xp += QM_STEP * GK_QBLOCK;
}

template <int Bits>
GK_DEV void gk_qmatmul_vec(const float *__restrict__ x, const void *__restrict__ w,
                           float *__restrict__ y, int64_t n, int64_t k, int64_t j0) {
  typedef gk_qm_vec<Bits> V;
  const int lane = gk_lane(), b0 = lane / 4;
  const int64_t nb = k / GK_QBLOCK;
  const int rows = j0 + QM_WROWS > n ? (int)(n - j0) : QM_WROWS;
  V v;
  v.s = lane % 4;
  gk_qm_rows<Bits>(w, j0, rows, nb, b0, v.p);
  for (int r = 0; r < QM_WROWS; r++) v.q[r] = v.p[r] + gk_qm_octet<Bits>::word(v.s);
  v.xp = x + b0 * GK_QBLOCK + 8 * v.s;
  /* The prefetch: lane l hints sector l / 4 of row l % 4's blocks (the
   * blocks' first byte for sector 0), while that sector is still one of
   * the step's 8 blocks' bytes (the same lanes every step: a step is a
   * multiple of 32 bytes). 8 lanes cover the 6 sectors or fewer that 8
   * blocks touch up to BITS 4; at BITS 8 (up to 10) the last ones are left
   * to the loads. Every address lies in W. */
  const int pr = lane % 4, q = lane / 4;
  const char *first = (const char *)w + ((j0 + pr) * nb + (int64_t)QM_STEP * QM_AHEAD(Bits)) * V::BB;
  const char *pf = q == 0 ? first : (const char *)((uintptr_t)first & ~(uintptr_t)31) + 32 * q;
  const bool pf_on = pr < rows && 32 * q < QM_STEP * V::BB + (int)((uintptr_t)first & 31);
  /* Steps: this lane's; and those before step pf_steps, whose step
   * QM_AHEAD on is a full one, hint it (none where the lane hints
   * nothing). 32-bit counts (k < 2^31 x 256): one compare each. */
  const int steps = b0 < nb ? (int)((nb - 1 - b0) / QM_STEP) + 1 : 0;
  const int pf_steps = pf_on ? (int)(nb / QM_STEP) - QM_AHEAD(Bits) : 0;

  float acc[QM_WROWS];
  for (int r = 0; r < QM_WROWS; r++) acc[r] = 0.0f;
  /* Two steps a trip, with nothing to test inside (the steps that load
   * the words of a next one), then the last one or two. */
  gk_qm_words<Bits> a, c;
  int i = 0;
  if (steps > 0) gk_qm_vec_load(v, a, 0);
#if GK_QM_LOADS_ONLY
#pragma unroll 1 /* the loads in flight as the kernel has them (nvcc unrolls the bare loop) */
#endif
  for (; i + 2 < steps; i += 2) {
    gk_qm_vec_load(v, c, V::SW);
    if (i < pf_steps) gk_prefetch_l2(pf);
    gk_qm_vec_step(v, a, acc);
    gk_qm_vec_load(v, a, V::SW);
    if (i + 1 < pf_steps) gk_prefetch_l2(pf + QM_STEP * V::BB);
    gk_qm_vec_step(v, c, acc);
    pf += 2 * QM_STEP * V::BB;
  }
  if (i + 1 < steps) {
    gk_qm_vec_load(v, c, V::SW);
    gk_qm_vec_step(v, a, acc);
    gk_qm_vec_step(v, c, acc);
  } else if (i < steps) {
    gk_qm_vec_step(v, a, acc);
  }
  /* Every lane reaches the butterflies: rows is the group's. */
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    const float s = gk_group_sum(acc[r]);
    if (lane == 0 && r < rows) y[j0 + r] = s;
  }
}

/* m > 1: row i of x's 8 columns of the lane's octet (a, c) against every
 * row of W's decoded weights wv, into acc[r][i] in column order. */
template <int MT>
GK_DEV void gk_qm_products(const float4 a, const float4 c, const float (*wv)[8],
                           float (*acc)[MT], int i) {
  const float xv[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    float v = acc[r][i];
    for (int t = 0; t < 8; t++) v = fmaf(xv[t], wv[r][t], v);
    acc[r][i] = v;
  }
}

/*
 * m > 1, one group: rows j0 .. j0 + QM_WROWS - 1 of W (those < n) against
 * rows i0 .. i0 + xrows - 1 of x (xrows <= MT; Full: xrows == MT). Bound by
 * issue: the fmaf of the products are what it is for (4 x MT x 8 a step),
 * and what else a step issues is kept small, as in gk_qmatmul_vec: a
 * pointer a row of W, moved by a constant, and rows of W past n read row
 * n - 1 again (their sums are not stored): no branch a row of W. A whole
 * tile of x (Full) has no branch a row of x either: a step is one straight
 * run of machine code (sm_90a, BITS 4: 443 instructions, where a branch a
 * row of x, around its loads and fmaf, made it 545: the predicate, the
 * branch and its reconvergence, and the row's address taken anew). The
 * last tile of x, when m % MT != 0, skips rows past m by a branch the
 * group takes together: read again from row m - 1 instead, their addresses
 * made ptxas spill in the kernel beside gk_qmatmul_vec.
 */
template <int Bits, int MT, bool Full>
GK_DEV void gk_qmatmul_tile(const float *__restrict__ x, const void *__restrict__ w,
                            float *__restrict__ y, int64_t n, int64_t k, int64_t j0,
                            int64_t i0, int xrows) {
  typedef gk_qm_octet<Bits> octet;
  typedef gk_qm_vec<Bits> V;
  const int lane = gk_lane(), s = lane % 4, b0 = lane / 4;
  const int64_t nb = k / GK_QBLOCK;
  const int rows = j0 + QM_WROWS > n ? (int)(n - j0) : QM_WROWS;
  const int off = octet::word(s);
  const uint32_t *p[QM_WROWS];
  gk_qm_rows<Bits>(w, j0, rows, nb, b0, p);
  const float *xp = x + i0 * k + b0 * GK_QBLOCK + 8 * s;

  float acc[QM_WROWS][MT];
  for (int r = 0; r < QM_WROWS; r++)
    for (int i = 0; i < MT; i++) acc[r][i] = 0.0f;

  auto step = [&]() {
    /* This lane's octet of the step's block of each row of W, decoded. */
    float wv[QM_WROWS][8];
#pragma unroll
    for (int r = 0; r < QM_WROWS; r++) {
      uint32_t c[octet::WORDS];
      const uint32_t head = p[r][0];
      for (int u = 0; u < octet::WORDS; u++) c[u] = p[r][off + u];
      gk_qm_weights<Bits>(head, c, s, wv[r]);
      p[r] += V::SW;
    }
    /* Each row of x's 8 columns of the octet, against every row of W. */
#pragma unroll
    for (int i = 0; i < MT; i++) {
      if (Full || i < xrows) { /* the group's bound: the 32 lanes branch together */
        const float4 *xq = (const float4 *)(xp + i * k);
        gk_qm_products<MT>(xq[0], xq[1], wv, acc, i);
      }
    }
    xp += QM_STEP * GK_QBLOCK;
  };
  const int steps = b0 < nb ? (int)((nb - 1 - b0) / QM_STEP) + 1 : 0;
  int st = 0;
#if GK_QM_TILE_PF
  /* The experiment GK_QM_TILE_PF (ci/gpu/prepare.sh's qmpf; off in the
   * recipes): W's L2 prefetch, QM_AHEAD steps on, as in gk_qmatmul_vec
   * (lane l: sector l / 4 of row l % 4's step; a lane that would hint
   * nothing hints its own block of the step, which it loads anyway), in
   * the steps whose step QM_AHEAD on is a full one, then the rest without,
   * every lane of the group alike. Whether the m = 16 profile's
   * long_scoreboard (48% of a warp's cycles on an H200) waits on W from
   * DRAM at the top of each step: 449 instructions a step at BITS 4
   * (sm_90a) where 440 do without; BITS 8 spills 40 bytes. */
  {
    const int pr = lane % 4, q = lane / 4;
    const char *first =
        (const char *)w + ((j0 + pr) * nb + (int64_t)QM_STEP * QM_AHEAD(Bits)) * V::BB;
    const char *pf = q == 0 ? first : (const char *)((uintptr_t)first & ~(uintptr_t)31) + 32 * q;
    if (!(pr < rows && 32 * q < QM_STEP * V::BB + (int)((uintptr_t)first & 31)))
      pf = (const char *)p[0];
    const int pf_all = (int)(nb / QM_STEP) - QM_AHEAD(Bits);
    const int pf_steps = pf_all < 0 ? 0 : (pf_all < steps ? pf_all : steps);
    for (; st < pf_steps; st++) {
      gk_prefetch_l2(pf);
      pf += QM_STEP * V::BB;
      step();
    }
  }
#endif
  for (; st < steps; st++) step();
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

#if GK_QM_TILE_XS
/*
 * The experiment GK_QM_TILE_XS (ci/gpu/prepare.sh's qmxs; off in the
 * recipes): a whole tile of x (QM_XROWS rows) through shared memory. The
 * H200's profile of m = 16 (2026-11-29: 379 us, 0.34 of the f32 FMA peak)
 * had warps waiting on loads 48% of their cycles with L1 77% busy: in
 * gk_qmatmul_tile each of the block's 8 groups loads the same 8 KB of x a
 * step from L1, or from L2 where L1 no longer holds it, and waits for it in
 * the step. Here the block copies each step's 8 rows of 256 columns once
 * (cp.async, 2 pieces a thread, 24 KB for QM_XS_STAGES steps), QM_XS_STAGES
 * - 1 steps ahead, and the groups read them back after the step's barrier;
 * W's words are loaded before it, so they are in flight across it. A step
 * is one straight run of 435 instructions at BITS 4, 442 at 8 (ptxas 13.0,
 * sm_90a; 443 and 450 from global memory: x's addresses are constant
 * offsets of one shared address), but beside it the kernel's m = 1 loop
 * takes 4 and 10 more moves a trip (342 and 362 instructions: the kernel's
 * 128 registers are allocated as one; with either in a function of its own,
 * a call, worse), which is why it is not the default until a GPU times
 * both. The same products in the same order as gk_qmatmul_tile: the same
 * bits (cuda.emu on a build of it, by hand). Called by every group of the
 * block (those past n read row n - 1 of W and store nothing), for the
 * barriers. A row's 256 floats lie as lane l reads them: floats 8l .. 8l +
 * 3 at 4l, 8l + 4 .. 8l + 7 at 128 + 4l, so that a quarter warp's 16-byte
 * loads are 128 consecutive bytes (no bank conflict).
 */
struct gk_qm_xs {
  float x[QM_XS_STAGES][QM_XROWS * QM_STEP * GK_QBLOCK]; /* 8 KB a step */
};

/* This thread's part of the copies: piece f (16 bytes) of row i of a
 * step (f = tid % 64, i = tid / 64) and of row i + 4, from src on and into
 * the stage `stage` at dst; a step's copy moves src by 256 columns and
 * the stage round the ring, nothing else (the addresses are set once a
 * tile). Blocks past nb are not copied (no lane reads them), which only a
 * last partial step tests. One group of copies a thread a step (empty
 * past the last step). */
struct gk_qm_xs_copy {
  const float *src;
  int64_t four; /* 4 rows of x, in floats */
  int dst, blk, stage;
};
enum { QM_XS_ROW = QM_STEP * GK_QBLOCK, QM_XS_PER = QM_XS_ROW / 4 }; /* floats, pieces */

GK_DEV gk_qm_xs_copy gk_qm_xs_copy_init(const float *x, int64_t k, int64_t i0) {
  static_assert(2 * QM_THREADS == QM_XROWS * QM_XS_PER, "two pieces a thread a step");
  const int t = (int)threadIdx.x, i = t / QM_XS_PER, f = t % QM_XS_PER;
  gk_qm_xs_copy c;
  c.src = x + (i0 + i) * k + 4 * f;
  c.four = 4 * k;
  c.dst = i * QM_XS_ROW + (f % 2) * (QM_XS_ROW / 2) + (f / 2) * 4;
  c.blk = f / 8;
  c.stage = 0;
  return c;
}

/* The copy of step st (full: the steps of QM_STEP whole blocks). */
GK_DEV void gk_qm_xs_copy_next(gk_qm_xs_copy &c, gk_qm_xs &sm, int st, int full, int steps,
                               int64_t nb) {
  float *d = sm.x[c.stage] + c.dst;
  if (st < full || (st < steps && (int64_t)st * QM_STEP + c.blk < nb)) {
    gk_cp_async16(d, c.src, true);
    gk_cp_async16(d + 4 * QM_XS_ROW, c.src + c.four, true);
  }
  gk_cp_async_commit();
  c.src += QM_XS_ROW;
  c.stage = c.stage == QM_XS_STAGES - 1 ? 0 : c.stage + 1;
}

template <int Bits>
GK_DEV void gk_qmatmul_tile_xs(gk_qm_xs &sm, const float *__restrict__ x,
                               const void *__restrict__ w, float *__restrict__ y, int64_t n,
                               int64_t k, int64_t j0, int64_t i0) {
  typedef gk_qm_octet<Bits> octet;
  typedef gk_qm_vec<Bits> V;
  enum { MT = QM_XROWS };
  const int lane = gk_lane(), s = lane % 4, b0 = lane / 4;
  const int64_t nb = k / GK_QBLOCK;
  const int rows = n - j0 < QM_WROWS ? (int)(n - j0) : QM_WROWS; /* <= 0 past n */
  const int off = octet::word(s);
  const uint32_t *p[QM_WROWS];
  gk_qm_rows<Bits>(w, j0, rows, nb, b0, p);
  /* The block's steps (the last one partial where nb % QM_STEP != 0: the
   * lanes past nb skip its products, as in gk_qmatmul_tile). */
  const int steps = (int)((nb + QM_STEP - 1) / QM_STEP), full = (int)(nb / QM_STEP);

  float acc[QM_WROWS][MT];
  for (int r = 0; r < QM_WROWS; r++)
    for (int i = 0; i < MT; i++) acc[r][i] = 0.0f;

  gk_qm_xs_copy cp = gk_qm_xs_copy_init(x, k, i0);
  __syncthreads(); /* the last tile's stages are read */
  for (int st = 0; st < QM_XS_STAGES - 1; st++) gk_qm_xs_copy_next(cp, sm, st, full, steps, nb);
  int rs = 0; /* the stage step st reads */
  /* Step st's x landed for the block, and the copy of the step
   * QM_XS_STAGES - 1 on started into the stage the last step read. */
  auto turn = [&](int st) {
    gk_cp_async_wait<QM_XS_STAGES - 2>(); /* this step's x, this thread's copies */
    __syncthreads(); /* everyone's; and the stage copied next is read */
    gk_qm_xs_copy_next(cp, sm, st + QM_XS_STAGES - 1, full, steps, nb);
  };
  /* live: this lane's blocks of the step lie inside k (all but the
   * partial last step's past nb); every thread reaches the one barrier. */
  auto step = [&](int st, bool live) {
    /* W's words first, in flight across the wait and the barrier. */
    uint32_t head[QM_WROWS], c[QM_WROWS][octet::WORDS];
#pragma unroll
    for (int r = 0; r < QM_WROWS; r++)
      if (live) {
        head[r] = p[r][0];
        for (int u = 0; u < octet::WORDS; u++) c[r][u] = p[r][off + u];
        p[r] += V::SW;
      }
    turn(st);
    if (!live) return;
    float wv[QM_WROWS][8];
#pragma unroll
    for (int r = 0; r < QM_WROWS; r++) gk_qm_weights<Bits>(head[r], c[r], s, wv[r]);
    const float *xs = sm.x[rs] + 4 * lane;
    rs = rs == QM_XS_STAGES - 1 ? 0 : rs + 1;
#pragma unroll
    for (int i = 0; i < MT; i++)
      gk_qm_products<MT>(*(const float4 *)(xs + i * QM_STEP * GK_QBLOCK),
                         *(const float4 *)(xs + i * QM_STEP * GK_QBLOCK + 128), wv, acc, i);
  };
  int st = 0;
  for (; st < full; st++) step(st, true);
  /* The partial last step: the lanes past nb skip its loads and products
   * but not its barrier. (Calling turn alone on their side of a branch put
   * a second barrier instruction in the code, reached by part of a warp:
   * __syncthreads is bar.sync.aligned, which a warp must reach as one, and
   * on the H200 the test of k = 32 hung, 2026-11-30.) */
  if (st < steps) step(st, b0 < nb - (int64_t)st * QM_STEP);
  gk_cp_async_wait<0>(); /* no copy left in flight past the tile (all empty by now) */
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++)
#pragma unroll
    for (int i = 0; i < MT; i++) {
      const float v = gk_group_sum(acc[r][i]);
      if (lane == 0 && r < rows) y[(i0 + i) * n + j0 + r] = v;
    }
}
#endif

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
#include "qmatmul_blk.cuh"

/* The tiles of m > 1 in their groups (gk_grouped_tiles), each group of
 * threads its rows of W: tile(j0, i0, xrows), the group's first row of W
 * (j0 >= n past n), the tile's first row of x and its rows of x. */
template <class F>
GK_DEV void gk_qm_tiles(int64_t m, int64_t n, F tile) {
  gk_grouped_tiles((m + QM_XROWS - 1) / QM_XROWS, (n + QM_COLS - 1) / QM_COLS, QM_GROUP,
                   [&](int64_t bx, int64_t by) {
                     const int64_t i0 = bx * QM_XROWS;
                     tile(by * QM_COLS + (int64_t)gk_group() * QM_WROWS, i0,
                          i0 + QM_XROWS > m ? (int)(m - i0) : QM_XROWS);
                   });
}

/* BITS 1 and 2: a whole block a lane (qmatmul_blk.cuh), x through shared
 * memory; every group of the block runs each tile, for the barriers. */
template <int Bits>
GK_DEV void gk_qmatmul(const float *x, const void *w, float *y, int64_t m, int64_t n,
                       int64_t k, gk_bool<true>) {
  __shared__ __attribute__((aligned(16))) gk_qmb_smem sm;
  if (m == 1) {
    if (blockIdx.x == 0) gk_qmb_vec<Bits>(sm, x, w, y, n, k); /* the one tile of x is column 0's */
    return;
  }
  gk_qm_tiles(m, n, [&](int64_t j0, int64_t i0, int xrows) {
    if (xrows == QM_XROWS) /* the block's: every group takes the same branch */
      gk_qmb_tile<Bits, true>(sm, x, w, y, n, k, j0, i0, xrows);
    else
      gk_qmb_tile<Bits, false>(sm, x, w, y, n, k, j0, i0, xrows);
  });
}

/* BITS 4 and 8: the octets. */
template <int Bits>
GK_DEV void gk_qmatmul(const float *x, const void *w, float *y, int64_t m, int64_t n,
                       int64_t k, gk_bool<false>) {
  /* m == 1 (decode) keeps one row of x: memory bound, its registers spent
   * on loads in flight. Two loop nests, not one with a branch inside:
   * ptxas then allocates each tile's registers on its own (in one nest,
   * BITS 8 spilled where either alone fits). */
  if (m == 1) {
    if (blockIdx.x != 0) return; /* the one tile of x is column 0's */
    for (int64_t by = blockIdx.y; by * QM_COLS < n; by += gridDim.y) {
      const int64_t j0 = by * QM_COLS + (int64_t)gk_group() * QM_WROWS;
      if (j0 < n) gk_qmatmul_vec<Bits>(x, w, y, n, k, j0);
    }
    return;
  }
#if GK_QM_TILE_XS
  __shared__ __attribute__((aligned(16))) gk_qm_xs sm;
#endif
  gk_qm_tiles(m, n, [&](int64_t j0, int64_t i0, int xrows) {
#if GK_QM_TILE_XS
    if (xrows == QM_XROWS) { /* the block's: every group, those past n too */
      gk_qmatmul_tile_xs<Bits>(sm, x, w, y, n, k, j0, i0);
      return;
    }
#endif
    if (j0 >= n) return; /* no barrier inside: a group past n leaves */
    if (xrows == QM_XROWS)
      gk_qmatmul_tile<Bits, QM_XROWS, true>(x, w, y, n, k, j0, i0, xrows);
    else
      gk_qmatmul_tile<Bits, QM_XROWS, false>(x, w, y, n, k, j0, i0, xrows);
  });
}

template <int Bits>
GK_DEV void gk_qmatmul(const float *x, const void *w, float *y, int64_t m,
                       int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k < 0) return;
  gk_qmatmul<Bits>(x, w, y, m, n, k, gk_bool<Bits <= 2>());
}

#endif /* GK_QMATMUL_CUH */
