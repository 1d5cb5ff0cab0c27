/*
 * qmatmul_blk.cuh - qmatmul at BITS 1 and 2: a whole block a lane. Part of
 * qmatmul.cuh, which includes it before gk_qmatmul (it uses QM_*,
 * gk_qm_rows and gk_qm_code); the launch, grid and requirements are
 * qmatmul.cuh's.
 *
 * Why the narrow codes have a layout of their own. A block is 4 bytes of
 * header (d and m as binary16) and 4 * Bits of codes, code t at bit Bits *
 * (t % (32 / Bits)) of code word t / (32 / Bits). In the octet layout of
 * qmatmul.cuh (4 lanes a block) each lane also loads the block's header,
 * converts d and m and shifts its codes out, for 8 weights: at BITS 1 (a
 * select and the product's fmaf a weight, 2 instructions) that made 3.84
 * instructions a weight in all (sm_90a), at BITS 2 (mask, subtract and two
 * fmaf, 4) 5.34, where memory takes 2 and 3 instructions' time a weight
 * (n = 32768, k = 8192: W 16 and 24 us at copy speed, the loops' issue 31
 * and 43 us). A lane with a whole block pays those once for 32 weights,
 * and the group's loads of a row (32 lanes x 4 bytes, 8 or 12 bytes apart:
 * W need only be 4-byte aligned) read 256 or 384 consecutive bytes.
 * (BITS 4 and 8 keep the octets: their blocks, 20 and 36 bytes, would
 * take 5 and 9 such loads a row, each touching 5 to 10 cache lines.)
 *
 * x then goes through shared memory: a lane's 32 values lie 128 bytes
 * from the next lane's, so each 16-byte load of a warp from global memory
 * would touch 32 cache lines. The block copies x there first, coalesced
 * (gk_qmb_stage), each block of 32 floats padded to QMB_PAD = 36: a
 * quarter warp's 16-byte loads (lanes l .. l + 7, 36 floats apart) then
 * fall in 8 different groups of 4 banks, with no conflict.
 *
 * Sum order (fixed, the same bits on every run, for any grid and batch):
 * lane l of a group takes blocks l, l + 32, l + 64, ... of each row of W
 * and adds its products fmaf(x, w, acc) into one accumulator per (row of
 * x, row of W), block after block and in column order inside a block;
 * then the 32 lanes are added in the fixed butterfly (gk_group_sum). It
 * depends on k only: m = 1 (gk_qmb_vec) and the tiles of m > 1
 * (gk_qmb_tile) give a row of x the same bits.
 */
#ifndef GK_QMATMUL_BLK_CUH
#define GK_QMATMUL_BLK_CUH

#define QMB_PAD 36         /* floats a block of x takes in shared memory */
#define QMB_VEC_CHUNK 256  /* blocks of x in shared memory at m == 1 */
#define QMB_STEP 32        /* blocks of a row of W a group's step: a lane each */
/* m == 1: steps ahead of the loads that L2 fetches W at BITS 1 (lane l a
 * 32-byte sector: row l / 8, the step's 256 bytes of it). At BITS 2 the
 * loads alone keep 2 steps of 1.5 KB a group in flight, 48 KB an SM at 16
 * groups, past the ~25 to 32 KB that DRAM's latency times its bandwidth
 * asks (gk_qmatmul_vec; an estimate); BITS 1, 32 KB. */
#define QMB_AHEAD(Bits) ((Bits) == 1 ? 4 : 0)

/* x in shared memory: 256 blocks of one row (m == 1) or 32 blocks of 8
 * rows (a tile of m > 1): 36 KB either way. */
struct gk_qmb_smem {
  float xs[QMB_VEC_CHUNK * QMB_PAD];
  int g; /* m == 1: tiles a block takes (gk_walk_rows_start) */
};

/*
 * Copies blocks c0 .. c0 + cb - 1 (cb <= CH) of rows i0 .. i0 + xrows - 1
 * of x into xs: block b of row i at (i * CH + b) * QMB_PAD. By the whole
 * thread block, 16 bytes a thread in turn; the caller puts the barriers
 * around it. Rows past xrows are not copied (nor read). A whole chunk
 * (CH blocks of MT rows: 8 pieces a thread) goes at constant offsets from
 * one address in x and one in xs, moved by k a row.
 */
template <int MT, int CH>
GK_DEV void gk_qmb_stage(float *xs, const float *__restrict__ x, int64_t k, int64_t i0,
                         int xrows, int64_t c0, int cb) {
  enum { R = CH * 8 / QM_THREADS }; /* a row's pieces a thread: 1 or 8 */
  static_assert(CH * 8 % QM_THREADS == 0, "a chunk's row is whole pieces of every thread");
  const int tid = (int)threadIdx.x;
  if (cb == CH && xrows == MT) {
    const float *src = x + i0 * k + c0 * GK_QBLOCK + 4 * tid;
    float *dst = xs + (tid / 8) * QMB_PAD + 4 * (tid % 8);
#pragma unroll
    for (int i = 0; i < MT; i++) {
#pragma unroll
      for (int v = 0; v < R; v++)
        *(float4 *)(dst + (i * CH + v * (QM_THREADS / 8)) * QMB_PAD) =
            ((const float4 *)src)[v * QM_THREADS];
      src += k;
    }
  } else {
    for (int e = tid; e < xrows * cb * 8; e += QM_THREADS) {
      const int i = e / (cb * 8), f = e % (cb * 8);
      const float4 v = ((const float4 *)(x + (i0 + i) * k + c0 * GK_QBLOCK))[f];
      *(float4 *)(xs + (i * CH + f / 8) * QMB_PAD + 4 * (f % 8)) = v;
    }
  }
}

/* A block's scales from its header word: BITS 1, its two weights
 * fmaf(d, 0, m) and fmaf(d, 1, m) (the same floats as every weight's
 * fmaf, NaN and infinities included); BITS 2, d and m. */
template <int Bits>
GK_DEV void gk_qmb_scales(uint32_t head, float *a, float *b) {
  const float d = gk_h2f((uint16_t)(head & 0xffffu)), mo = gk_h2f((uint16_t)(head >> 16));
  *a = Bits == 1 ? fmaf(d, 0.0f, mo) : d;
  *b = Bits == 1 ? fmaf(d, 1.0f, mo) : mo;
}

/* The weight of code u of h (at bit Bits * u, below bit 16 - Bits at
 * BITS 2: gk_qm_code's range) from the block's scales a, b: BITS 1, one of
 * the two picked by its bit (a select); BITS 2, fmaf(d, q, m). */
template <int Bits>
GK_DEV float gk_qmb_weight(uint32_t h, int u, float a, float b) {
  if (Bits == 1) return (h >> u) & 1u ? b : a;
  return fmaf(a, gk_qm_code<Bits>(h, Bits * u), b);
}

/* Codes t, t + 1, ... of a block (at BITS 2 no further than the end of
 * t's half word) from its code words c, shifted so that code t + u sits
 * at bit Bits * u: gk_qmb_weight's h. The word by a select, not an index,
 * so that t need not be known at compile time (the tile's is not). */
template <int Bits>
GK_DEV uint32_t gk_qmb_run(const uint32_t *c, int t) {
  return (t < 32 / Bits ? c[0] : c[Bits - 1]) >> (Bits * (t % (32 / Bits)));
}

/* m == 1: one step of the group's QM_WROWS rows. f: the lane's block of
 * each row (header, code words); xs: its 32 values of x. */
template <int Bits>
GK_DEV void gk_qmb_vec_step(const uint32_t (*f)[1 + Bits], const float *xs,
                            float acc[QM_WROWS]) {
#if GK_QM_LOADS_ONLY /* qmatmul.cuh: W's words folded, no x */
  (void)xs;
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++)
    for (int u = 0; u <= Bits; u++) acc[r] = gk_qm_fold(acc[r], f[r][u]);
  return;
#endif
  float xv[GK_QBLOCK];
#pragma unroll
  for (int u = 0; u < GK_QBLOCK / 4; u++) {
    const float4 v = ((const float4 *)xs)[u];
    xv[4 * u] = v.x, xv[4 * u + 1] = v.y, xv[4 * u + 2] = v.z, xv[4 * u + 3] = v.w;
  }
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++) {
    float sa, sb;
    gk_qmb_scales<Bits>(f[r][0], &sa, &sb);
    float a = acc[r];
#pragma unroll
    for (int t0 = 0; t0 < GK_QBLOCK; t0 += 8) {
      /* BITS 1: the bits tested where they lie, with no shift a run. */
      const uint32_t h = Bits == 1 ? f[r][1] : gk_qmb_run<Bits>(f[r] + 1, t0);
#pragma unroll
      for (int u = 0; u < 8; u++)
        a = fmaf(xv[t0 + u], gk_qmb_weight<Bits>(h, Bits == 1 ? t0 + u : u, sa, sb), a);
    }
    acc[r] = a;
  }
}

/* m == 1: the lane's block of each row at p[r] + at (words). */
template <int Bits>
GK_DEV void gk_qmb_vec_load(const uint32_t *const p[QM_WROWS], int at, uint32_t (*f)[1 + Bits]) {
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++)
    for (int u = 0; u <= Bits; u++) f[r][u] = p[r][at + u];
}

/*
 * m == 1: the tiles of W (QM_COLS rows), one group QM_WROWS rows of a
 * tile, a block up to 4 consecutive tiles where that does not lengthen
 * the launch (gk_walk_rows_group: at n = 32768 on 132 SMs, 256 blocks of 4
 * tiles where 1024 blocks took one). x goes into shared memory once a
 * block when it fits (k <= 8192), else a chunk of QMB_VEC_CHUNK blocks at
 * a time for each tile: at k = 8192 each copy reads 32 KB of x from L2,
 * and a tile 32 KB of W at BITS 1 (48 KB at BITS 2), so a copy a tile
 * doubled what BITS 1 read and made each block wait for x before its first
 * product. A lane's steps go as in gk_qmatmul_vec: a pointer a row,
 * rows past n reading row n - 1 (their sums not stored), two sets of
 * words in turn with nothing tested inside, and at BITS 1 the L2
 * prefetch of the step QMB_AHEAD on (lane l: row l / 8, sector l % 8 of
 * its 256 bytes; at most a last sector of a step not 32-byte aligned is
 * left to the loads).
 * Every thread of the block reaches the barriers: the loops' bounds are
 * the block's.
 */
template <int Bits>
GK_DEV void gk_qmb_vec(gk_qmb_smem &sm, const float *__restrict__ x, const void *__restrict__ w,
                       float *__restrict__ y, int64_t n, int64_t k) {
  enum { BB = GK_QBLOCK_BYTES(Bits), SW = QMB_STEP * BB / 4 }; /* words a step of a row */
  const int lane = gk_lane();
  const int64_t nb = k / GK_QBLOCK;
  const int chunks = (int)((nb + QMB_VEC_CHUNK - 1) / QMB_VEC_CHUNK);
  /* Steps before pf_steps hint step + QMB_AHEAD, a whole step of W. */
  const int pf_steps = QMB_AHEAD(Bits) ? (int)(nb / QMB_STEP) - QMB_AHEAD(Bits) : 0;
  const int t0 = gk_walk_rows_start(n, QM_COLS, 4, QM_MIN_BLOCKS, &sm.g);
  if (t0 < 0) return;
  for (int by = t0; (int64_t)by * QM_COLS < n;
       by = gk_walk_rows_next(by, n, QM_COLS, &sm.g)) {
    const int64_t j0 = (int64_t)by * QM_COLS + (int64_t)gk_group() * QM_WROWS;
    /* rows <= 0: a group past n, reading row n - 1, storing nothing. */
    const int rows = n - j0 < QM_WROWS ? (int)(n - j0) : QM_WROWS;
    const uint32_t *p[QM_WROWS];
    gk_qm_rows<Bits>(w, j0, rows, nb, lane, p);
    /* The prefetch: row lane / 8 of the group's (its last below n past
     * them; row n - 1 for a group past n, where p[0] is), from block 0. */
    const char *pf = (const char *)p[0] - (int64_t)lane * BB +
                     (int64_t)(lane / 8 < rows ? lane / 8 : (rows > 0 ? rows - 1 : 0)) * nb * BB +
                     (int64_t)QMB_STEP * QMB_AHEAD(Bits) * BB + 32 * (lane % 8);
    /* The first QMB_AHEAD steps, which no step hints (where a row holds
     * that many whole steps): now, before the copy of x, as the first
     * step's loads are. */
    if (QMB_AHEAD(Bits) && pf_steps >= 0) /* W holds QMB_AHEAD whole steps */
#pragma unroll
      for (int s = 1; s <= QMB_AHEAD(Bits); s++) gk_prefetch_l2(pf - s * QMB_STEP * BB);
    float acc[QM_WROWS];
    for (int r = 0; r < QM_WROWS; r++) acc[r] = 0.0f;
    int sg = 0; /* steps done in all, for the prefetch's count */
    for (int c = 0; c < chunks; c++) {
      const int64_t c0 = (int64_t)c * QMB_VEC_CHUNK;
      const int cb = nb - c0 < QMB_VEC_CHUNK ? (int)(nb - c0) : QMB_VEC_CHUNK;
      const int steps = lane < cb ? (cb - 1 - lane) / QMB_STEP + 1 : 0;
      uint32_t a[QM_WROWS][1 + Bits], b[QM_WROWS][1 + Bits];
      if (steps > 0) gk_qmb_vec_load<Bits>(p, 0, a); /* in flight during the copy */
      if (by == gk_walk_rows_first(&sm.g) || chunks > 1) { /* else the block's first tile copied x */
        __syncthreads();           /* the last chunk's x is read */
        gk_qmb_stage<1, QMB_VEC_CHUNK>(sm.xs, x, k, 0, 1, c0, cb);
        __syncthreads();
      }
      const float *xs = sm.xs + lane * QMB_PAD;
      int i = 0;
#if GK_QM_LOADS_ONLY
#pragma unroll 1 /* the loads in flight as the kernel has them (qmatmul.cuh) */
#endif
      for (; i + 2 < steps; i += 2) {
        gk_qmb_vec_load<Bits>(p, SW, b);
        if (QMB_AHEAD(Bits) && sg + i < pf_steps) gk_prefetch_l2(pf);
        gk_qmb_vec_step<Bits>(a, xs, acc);
        gk_qmb_vec_load<Bits>(p, 2 * SW, a);
        if (QMB_AHEAD(Bits) && sg + i + 1 < pf_steps) gk_prefetch_l2(pf + QMB_STEP * BB);
        gk_qmb_vec_step<Bits>(b, xs + QMB_STEP * QMB_PAD, acc);
        for (int r = 0; r < QM_WROWS; r++) p[r] += 2 * SW;
        xs += 2 * QMB_STEP * QMB_PAD;
        pf += 2 * QMB_STEP * BB;
      }
      if (i + 1 < steps) {
        gk_qmb_vec_load<Bits>(p, SW, b);
        gk_qmb_vec_step<Bits>(a, xs, acc);
        gk_qmb_vec_step<Bits>(b, xs + QMB_STEP * QMB_PAD, acc);
      } else if (i < steps) {
        gk_qmb_vec_step<Bits>(a, xs, acc);
      }
      /* On to the next chunk: the lane's steps of this one, all of them
       * (its blocks past the chunk's end are the next chunk's). */
      const int whole = cb / QMB_STEP; /* < steps only in a last chunk */
      for (int r = 0; r < QM_WROWS; r++) p[r] += (int64_t)(whole - i) * SW;
      pf += (int64_t)(whole - i) * QMB_STEP * BB;
      sg += whole;
    }
#pragma unroll
    for (int r = 0; r < QM_WROWS; r++) {
      const float s = gk_group_sum(acc[r]);
      if (lane == 0 && r < rows) y[j0 + r] = s;
    }
  }
}

/*
 * m > 1: rows j0 .. j0 + QM_WROWS - 1 of W (those < n) against rows i0 ..
 * i0 + xrows - 1 of x (Full: xrows == QM_XROWS), a step (a block a lane,
 * 32 of each row) at a time: the lane's words of W are loaded, then the
 * block copies the step's 32 blocks of the 8 rows of x into shared memory
 * (under the loads), and each lane decodes its block 4 columns at a time
 * (the selects, once for the 8 rows of x) and streams the rows of x
 * through them. Called by every group of the block, those past n too
 * (rows <= 0: reading row n - 1, storing nothing), for the barriers.
 */
template <int Bits, bool Full>
GK_DEV void gk_qmb_tile(gk_qmb_smem &sm, const float *__restrict__ x, const void *__restrict__ w,
                        float *__restrict__ y, int64_t n, int64_t k, int64_t j0, int64_t i0,
                        int xrows) {
  enum { SW = QMB_STEP * GK_QBLOCK_BYTES(Bits) / 4, MT = QM_XROWS };
  const int lane = gk_lane();
  const int64_t nb = k / GK_QBLOCK;
  const int rows = n - j0 < QM_WROWS ? (int)(n - j0) : QM_WROWS;
  const uint32_t *p[QM_WROWS];
  gk_qm_rows<Bits>(w, j0, rows, nb, lane, p);

  float acc[QM_WROWS][MT];
  for (int r = 0; r < QM_WROWS; r++)
    for (int i = 0; i < MT; i++) acc[r][i] = 0.0f;

  for (int64_t c0 = 0; c0 < nb; c0 += QMB_STEP) {
    const int cb = nb - c0 < QMB_STEP ? (int)(nb - c0) : QMB_STEP;
    const bool mine = lane < cb; /* the lane has a block in this step */
    uint32_t f[QM_WROWS][1 + Bits];
#pragma unroll
    for (int r = 0; r < QM_WROWS; r++) {
      for (int u = 0; u <= Bits; u++) f[r][u] = mine ? p[r][u] : 0u;
      p[r] += SW;
    }
    __syncthreads(); /* the last step's x is read */
    gk_qmb_stage<MT, QMB_STEP>(sm.xs, x, k, i0, Full ? MT : xrows, c0, cb);
    __syncthreads();
    if (mine) {
      float sa[QM_WROWS], sb[QM_WROWS];
#pragma unroll
      for (int r = 0; r < QM_WROWS; r++) gk_qmb_scales<Bits>(f[r][0], &sa[r], &sb[r]);
#pragma unroll 1
      for (int q = 0; q < GK_QBLOCK / 4; q++) {
        /* Columns 4q .. 4q + 3 of the lane's block of each row of W.
         * ptxas 13.0 spilled (sm_90a) with 8 columns at a time, and with
         * this loop unrolled twice: it keeps rows of x ahead in
         * registers. Not unrolled, a trip issues 191 instructions for 128
         * products at BITS 1, 213 at BITS 2. */
        float wv[QM_WROWS][4];
#pragma unroll
        for (int r = 0; r < QM_WROWS; r++) {
          const uint32_t h = gk_qmb_run<Bits>(f[r] + 1, 4 * q);
          for (int u = 0; u < 4; u++) wv[r][u] = gk_qmb_weight<Bits>(h, u, sa[r], sb[r]);
        }
#pragma unroll
        for (int i = 0; i < MT; i++) {
          if (Full || i < xrows) { /* the block's bound: every lane branches alike */
            const float4 a = *(const float4 *)(sm.xs + (i * QMB_STEP + lane) * QMB_PAD + 4 * q);
            const float xv[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
            for (int r = 0; r < QM_WROWS; r++) {
              float v = acc[r][i];
              for (int t = 0; t < 4; t++) v = fmaf(xv[t], wv[r][t], v);
              acc[r][i] = v;
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < QM_WROWS; r++)
#pragma unroll
    for (int i = 0; i < MT; i++) {
      if (Full || i < xrows) {
        const float v = gk_group_sum(acc[r][i]);
        if (lane == 0 && r < rows) y[(i0 + i) * n + j0 + r] = v;
      }
    }
}

#endif /* GK_QMATMUL_BLK_CUH */
