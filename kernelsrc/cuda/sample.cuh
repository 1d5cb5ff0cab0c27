/*
 * sample.cuh - one token per row of logits with temperature, top-k and
 * top-p, walking the kept tokens in index order with the caller's uniform
 * number u[r] (docs/kernels.md, "sample"), on GPUs, without sorting and
 * without scratch memory beyond a few KB of shared memory.
 *
 * Launch: blocks of SM_THREADS threads, grid (rows): one block per row, or
 * fewer blocks, each taking rows r, r + gridDim.x, ...
 *
 * Why no sort is needed. Ranks are by p descending, ties by index
 * ascending, and both cuts keep a prefix of the ranks: top-k the first K_k,
 * top-p the first K_p, where K_p is the smallest K >= 1 whose top-K sum
 * reaches top_p * (sum of the top-K_k). The kept set is the first
 * K = min(K_k, K_p) ranks, which is: every token with p > v, plus the
 * first r tokens (by index) with p == v, for the value v at rank K - 1.
 * Both K_k's value and K_p are found by a radix select over the bits of p
 * (p >= 0, so its bits order like its values): four passes of 8 bits, each
 * a 256-bin histogram of counts and sums in shared memory. p is recomputed
 * from the logits in every pass (the same expression, so the same bits).
 *
 * The walk in index order: each thread takes a contiguous segment, the
 * block scans the segments' tie counts and kept sums, and the one thread
 * whose segment crosses u * (sum of kept p) walks it to the token. If
 * rounding leaves no token past the threshold, the last kept one is taken.
 *
 * NaN logits count as -inf (p = 0); a row with no finite-max logit (all
 * NaN or -inf) gives token 0. temperature <= 0 gives the argmax. Sums are
 * f32 (histogram sums in shared-memory atomics, in no fixed order): a u or
 * top_p within ~1e-6 of a decision boundary may be decided either way, as
 * between any two backends (docs/kernels.md). Rows must have n < 2^31.
 */
#ifndef GK_SAMPLE_CUH
#define GK_SAMPLE_CUH

#include "argmax.cuh"
#include "gk_gpu.cuh"

#define SM_THREADS 256
#define SM_GROUPS (SM_THREADS / GK_GROUP)
#define GK_SAMPLE_NONE 0xffffffffffffffffull

/* Everything the threads of a block share, in one struct. */
struct gk_sample_shared {
  unsigned hist_cnt[256];
  float hist_sum[256];
  float scan_f[SM_THREADS];
  unsigned scan_u[SM_THREADS];
  float red[SM_GROUPS];
  float am_v[SM_GROUPS];
  int64_t am_i[SM_GROUPS];
  /* Results thread 0 publishes to the block. */
  unsigned digit;
  int none; /* a sum select found no bin: the target is never reached */
  unsigned long long found; /* the chosen token; GK_SAMPLE_NONE until found */
};

/* p of one logit, the same bits in every pass. */
GK_DEV float gk_sample_p(float l, float mx, float temperature) {
  if (!(l == l)) return 0.0f; /* NaN counts as -inf */
  return expf((l - mx) / temperature);
}

/* The boundary of a prefix of ranks: every p > value is in, and the first
 * r tokens (by index) with p == value. all = 1: every token is in. */
struct gk_sample_cut {
  float value;
  unsigned above;  /* tokens with p > value */
  float sum_above; /* their sum */
  unsigned ties;   /* tokens with p == value */
  unsigned r;
  int all;
};

/*
 * Radix select over the bits of p. by_sum = 0: the cut of the first K
 * ranks (1 <= K < n). by_sum = 1: the shortest prefix whose sum reaches
 * `target` (at least one rank); all = 1 when even every token's sum stays
 * below it. Every thread gets the same cut.
 */
GK_DEV gk_sample_cut gk_sample_select(const float *lr, int64_t n, float mx,
                                      float temperature, int by_sum, unsigned K,
                                      float target, gk_sample_shared *sh) {
  const int tid = (int)threadIdx.x;
  uint32_t prefix = 0, mask = 0;
  unsigned above = 0;
  float sum_above = 0.0f;
  unsigned ties = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += SM_THREADS) {
      sh->hist_cnt[b] = 0;
      sh->hist_sum[b] = 0.0f;
    }
    __syncthreads();
    for (int64_t j = tid; j < n; j += SM_THREADS) {
      const float p = gk_sample_p(lr[j], mx, temperature);
      const uint32_t bits = gk_q_f32_to_bits(p);
      if ((bits & mask) == prefix) {
        const unsigned d = (bits >> shift) & 0xffu;
        atomicAdd(&sh->hist_cnt[d], 1u);
        atomicAdd(&sh->hist_sum[d], p);
      }
    }
    __syncthreads();
    if (tid == 0) {
      /* Bins from the largest p down. Every thread walks the same numbers
       * (above, sum_above) below, so thread 0 publishes only the digit. */
      int chosen = -1, last = -1;
      unsigned a = above;
      float s = sum_above;
      for (int d = 255; d >= 0; d--) {
        const unsigned c = sh->hist_cnt[d];
        if (c == 0) continue;
        last = d;
        if (by_sum ? s + sh->hist_sum[d] >= target : a + c >= K) {
          chosen = d;
          break;
        }
        a += c;
        s += sh->hist_sum[d];
      }
      /* By sum, no bin reaching the target means the whole row stays below
       * it (first pass), or that rounding made the sub-bins of the bin that
       * reached it add up to a little less (later passes): then the cut is
       * at the end of that bin, its last non-empty sub-bin. */
      sh->none = chosen < 0 && shift == 24;
      sh->digit = (unsigned)(chosen >= 0 ? chosen : (last >= 0 ? last : 0));
    }
    __syncthreads();
    const unsigned dsel = sh->digit;
    const int none = sh->none;
    if (none) {
      __syncthreads();
      gk_sample_cut all = {0.0f, 0, 0.0f, 0, 0, 1};
      return all;
    }
    for (int d = 255; d > (int)dsel; d--) {
      above += sh->hist_cnt[d];
      sum_above += sh->hist_sum[d];
    }
    ties = sh->hist_cnt[dsel];
    prefix |= dsel << shift;
    mask |= 0xffu << shift;
    __syncthreads(); /* the histogram is read; the next pass may clear it */
  }
  gk_sample_cut cut;
  cut.value = gk_q_f32_from_bits(prefix);
  cut.above = above;
  cut.sum_above = sum_above;
  cut.ties = ties;
  cut.all = 0;
  if (!by_sum) {
    cut.r = K - above;
  } else {
    /* The fewest ties that reach the target, at least one rank in all (a
     * chosen bin is never empty, so ties >= 1). */
    const float need = cut.value > 0.0f ? (target - sum_above) / cut.value : 0.0f;
    cut.r = need <= 1.0f ? 1u : need >= (float)ties ? ties : (unsigned)ceilf(need);
  }
  return cut;
}

/* Exclusive prefix sums over the threads (thread 0 adds them in order:
 * 256 values, cheaper than a tree at this size and fixed in order). */
GK_DEV void gk_sample_scan(float *vf, unsigned *vu, float *total_f,
                           unsigned *total_u, gk_sample_shared *sh) {
  const int tid = (int)threadIdx.x;
  sh->scan_f[tid] = *vf;
  sh->scan_u[tid] = *vu;
  __syncthreads();
  if (tid == 0) {
    float s = 0.0f;
    unsigned c = 0;
    for (int t = 0; t < SM_THREADS; t++) {
      const float f = sh->scan_f[t];
      const unsigned u = sh->scan_u[t];
      sh->scan_f[t] = s;
      sh->scan_u[t] = c;
      s += f;
      c += u;
    }
    sh->red[0] = s;
    sh->hist_cnt[0] = c;
  }
  __syncthreads();
  *vf = sh->scan_f[tid];
  *vu = sh->scan_u[tid];
  *total_f = sh->red[0];
  *total_u = sh->hist_cnt[0];
  __syncthreads();
}

/* One row, by the whole block; every return is uniform over the block. */
GK_DEV void gk_sample_row(const float *logits, const float *u, int32_t *out, int64_t row,
                          int64_t n, float temperature, int32_t top_k, float top_p,
                          gk_sample_shared &sh) {
  const int tid = (int)threadIdx.x;
  if (n <= 0) {
    if (tid == 0) out[row] = 0;
    return;
  }
  const float *lr = logits + row * n;
  if (!(temperature > 0.0f)) {
    const int64_t i = gk_row_argmax(lr, n, sh.am_v, sh.am_i);
    if (tid == 0) out[row] = (int32_t)i;
    return;
  }

  /* The largest logit, NaNs left out. */
  float mx = -INFINITY;
  for (int64_t j = tid; j < n; j += SM_THREADS)
    if (lr[j] == lr[j]) mx = fmaxf(mx, lr[j]);
  mx = gk_block_max<SM_GROUPS>(mx, sh.red);
  if (mx == -INFINITY) {
    if (tid == 0) out[row] = 0;
    return;
  }

  /* The top-k cut and the sum top-p is relative to. */
  const unsigned N = (unsigned)n;
  const int use_k = top_k > 0 && (int64_t)top_k < n;
  const int use_p = top_p < 1.0f;
  gk_sample_cut cut = {0.0f, 0, 0.0f, 0, 0, 1};
  float s_k;
  if (use_k) {
    cut = gk_sample_select(lr, n, mx, temperature, 0, (unsigned)top_k, 0.0f, &sh);
    s_k = cut.sum_above + (float)cut.r * cut.value;
  } else {
    float s = 0.0f;
    for (int64_t j = tid; j < n; j += SM_THREADS) s += gk_sample_p(lr[j], mx, temperature);
    s_k = gk_block_sum<SM_GROUPS>(s, sh.red);
  }
  if (use_p) {
    const gk_sample_cut pc =
        gk_sample_select(lr, n, mx, temperature, 1, 0, top_p * s_k, &sh);
    const unsigned kk = use_k ? (unsigned)top_k : N;
    if (!pc.all && pc.above + pc.r < kk) cut = pc;
  }

  /* Which tokens are kept, in index order: contiguous segments. */
  const int64_t seg = (n + SM_THREADS - 1) / SM_THREADS;
  const int64_t j0 = tid * seg < n ? tid * seg : n;
  const int64_t j1 = j0 + seg < n ? j0 + seg : n;
  unsigned my_ties = 0;
  float dummy = 0.0f, ftot;
  unsigned utot;
  if (!cut.all)
    for (int64_t j = j0; j < j1; j++)
      my_ties += gk_sample_p(lr[j], mx, temperature) == cut.value;
  gk_sample_scan(&dummy, &my_ties, &ftot, &utot, &sh);
  /* my_ties is now the number of ties before this segment. */
  float my_sum = 0.0f;
  unsigned my_kept = 0;
  {
    unsigned t = my_ties;
    for (int64_t j = j0; j < j1; j++) {
      const float p = gk_sample_p(lr[j], mx, temperature);
      const int kept = cut.all || p > cut.value || (p == cut.value && t++ < cut.r);
      if (kept) {
        my_sum += p;
        my_kept++;
      }
    }
  }
  float before = my_sum, total;
  unsigned kept_before = my_kept, kept_total;
  gk_sample_scan(&before, &kept_before, &total, &kept_total, &sh);

  if (tid == 0) sh.found = GK_SAMPLE_NONE;
  __syncthreads();
  const float thr = u[row] * total;
  if (my_kept > 0 && before + my_sum > thr) {
    /* This segment may hold the crossing; rounding may make two segments
     * think so, and the lower index wins. */
    float run = before;
    unsigned t = my_ties;
    for (int64_t j = j0; j < j1; j++) {
      const float p = gk_sample_p(lr[j], mx, temperature);
      const int kept = cut.all || p > cut.value || (p == cut.value && t++ < cut.r);
      if (!kept) continue;
      run += p;
      if (run > thr) {
        atomicMin(&sh.found, (unsigned long long)j);
        break;
      }
    }
  }
  __syncthreads();
  const int none_found = sh.found == GK_SAMPLE_NONE;
  __syncthreads(); /* every thread has read it before anyone writes it */
  if (none_found) {
    /* None past the threshold: the last kept token. Segments are in index
     * order, so it is the last one of the highest segment with any. */
    if (my_kept > 0 && kept_before + my_kept == kept_total) {
      unsigned t = my_ties;
      int64_t last = j0;
      for (int64_t j = j0; j < j1; j++) {
        const float p = gk_sample_p(lr[j], mx, temperature);
        if (cut.all || p > cut.value || (p == cut.value && t++ < cut.r)) last = j;
      }
      sh.found = last;
    }
    __syncthreads();
  }
  if (tid == 0) out[row] = (int32_t)(sh.found == GK_SAMPLE_NONE ? 0 : sh.found);
}

GK_DEV void gk_sample(const float *logits, const float *u, int32_t *out, int64_t rows,
                      int64_t n, float temperature, int32_t top_k, float top_p) {
  __shared__ gk_sample_shared sh;
  /* Rows r, r + gridDim.x, ...; the barrier keeps a row's first writes to
   * shared memory after every read of the previous row's. */
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    __syncthreads();
    gk_sample_row(logits, u, out, row, n, temperature, top_k, top_p, sh);
  }
}

#endif /* GK_SAMPLE_CUH */
