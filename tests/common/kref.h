/*
 * kref.h - plain scalar references of the kernel set of docs/kernels.md
 * (flash_attention, paged_attention, kv_append, rmsnorm, rope, argmax,
 * sample), the test data they are
 * run on, and comparison helpers. Every backend's numeric tests call these.
 *
 * Like qref.h, this is written from docs/kernels.md alone and shares no
 * code with kernelsrc/: binary16 goes through qref_f16_decode/encode, sums
 * are taken in double, transcendental functions come from libm in double,
 * attention materializes the whole score row. Speed is not a goal; being
 * obviously right is.
 *
 * Conventions:
 * - Each ref_* takes exactly the parameters of the kernel in docs/kernels.md,
 *   in the same order and of the same types (f16 tensors are uint16_t
 *   arrays of binary16 bits, passed as void * like the kernel); a kernel
 *   with a variant takes the variant's values first, in variant name order.
 * - Outputs are computed in double and rounded once to the output type
 *   (f16: round to nearest even, qref_f16_encode).
 * - Functions that need scratch memory return 0, or -1 when out of memory
 *   or when the arguments break a precondition of docs/kernels.md (they
 *   then write nothing).
 * - Everything is deterministic: the same seed gives the same data on every
 *   machine (qref_rng, splitmix64).
 *
 * Not thread-safe only in the sense that nothing here uses global state:
 * every function may be called from several threads on distinct data.
 */
#ifndef KREF_H
#define KREF_H

#include <stddef.h>
#include <stdint.h>

#include "qref.h"

/* ---- element types ---- */

typedef enum kref_dtype {
  KREF_F32 = 0, /* IEEE binary32, float */
  KREF_F16 = 1, /* IEEE binary16, uint16_t bits */
  KREF_BF16 = 2 /* bfloat16: the high half of a binary32, uint16_t bits */
} kref_dtype;

/* The dtypes of the attention variants, in the order tests walk them. */
#define KREF_DTYPES {KREF_F16, KREF_BF16, KREF_F32}
#define KREF_N_DTYPES 3

/* Bytes per element: 4 or 2 (f16, bf16). */
size_t kref_dtype_size(kref_dtype dtype);
/* "f32", "f16" or "bf16" (the variant values of docs/kernels.md). */
const char *kref_dtype_name(kref_dtype dtype);
/* Parses "f32"/"f16"/"bf16"; 0 on success, -1 for anything else. */
int kref_dtype_parse(const char *name, kref_dtype *out);
/* Element i of a dtype array, as a double (f16, bf16 decoded exactly). */
double kref_get(kref_dtype dtype, const void *a, size_t i);
/* Stores a double into element i, rounded once to dtype (nearest even). */
void kref_set(kref_dtype dtype, void *a, size_t i, double value);

/* ---- the references ---- */

/*
 * flash_attention, variant causal=CAUSAL, dtype=DTYPE, head_dim=HEAD_DIM:
 * q, o are [n_heads][sq][head_dim], k, v are [n_kv_heads][skv][head_dim],
 * all of dtype. For each query row the whole score row is formed in double,
 * the softmax taken over the allowed keys (causal: j <= i + skv - sq), the
 * weighted sum of v formed in double and rounded once into o. A row with no
 * allowed key is zeros. Returns -1 (writing nothing) when out of memory
 * (it needs skv doubles) or when n_heads, n_kv_heads <= 0, n_heads %
 * n_kv_heads != 0, sq or skv < 0, or head_dim <= 0.
 */
int ref_flash_attention(int causal, kref_dtype dtype, int head_dim,
                        const void *q, const void *k, const void *v, void *o,
                        int64_t n_heads, int64_t n_kv_heads, int64_t sq,
                        int64_t skv, float scale);

/*
 * paged_attention, variant dtype=DTYPE, head_dim=HEAD_DIM, page=PAGE: q, o
 * are [n_seqs][n_heads][sq][head_dim], k_pool, v_pool [n_pages][n_kv_heads]
 * [page][head_dim], block_table [n_seqs][max_pages], seq_lens [n_seqs].
 * Sequence s is invalid when seq_lens[s] < 0, ceil(seq_lens[s] / page) >
 * max_pages, or one of its first ceil(seq_lens[s] / page) table entries is
 * outside [0, n_pages): all its o rows are then NaN (f32 0x7fc00000, bf16 0x7fc0, f16
 * 0x7e00) and its pages are not read. Otherwise query row i (token
 * seq_lens[s] - sq + i) attends to the keys j < seq_lens[s] with j <= i +
 * seq_lens[s] - sq, key j being slot j % page of page block_table[s][j /
 * page]; scores, softmax and the weighted sum in double, rounded once; a
 * row with no key is zeros. Returns -1 (writing nothing) when out of memory
 * or when n_seqs < 0, n_heads, n_kv_heads <= 0, n_heads % n_kv_heads != 0,
 * sq < 0, max_pages, n_pages < 0, head_dim or page <= 0.
 */
int ref_paged_attention(kref_dtype dtype, int head_dim, int page, const void *q,
                        const void *k_pool, const void *v_pool,
                        const int32_t *block_table, const int32_t *seq_lens,
                        void *o, int64_t n_seqs, int64_t n_heads,
                        int64_t n_kv_heads, int64_t sq, int64_t max_pages,
                        int64_t n_pages, float scale);

/*
 * kv_append, the same variant: row i < sq of k_new, v_new [n_seqs]
 * [n_kv_heads][sq][head_dim] goes to position seq_lens[s] - sq + i of
 * sequence s in k_pool, v_pool (copied exactly); sequences that are invalid
 * (as above) or have seq_lens[s] < sq are skipped. Returns -1 (writing
 * nothing) when n_seqs < 0, n_kv_heads <= 0, sq < 0, max_pages, n_pages <
 * 0, head_dim or page <= 0.
 */
int ref_kv_append(kref_dtype dtype, int head_dim, int page, const void *k_new,
                  const void *v_new, void *k_pool, void *v_pool,
                  const int32_t *block_table, const int32_t *seq_lens,
                  int64_t n_seqs, int64_t n_kv_heads, int64_t sq,
                  int64_t max_pages, int64_t n_pages);

/* rmsnorm: y[r][j] = x[r][j] / sqrt(mean_j' x[r][j']^2 + eps) * w[j], in
 * double, rounded once to float. Same type as the kernel (gk_rmsnorm_fn). */
void ref_rmsnorm(const float *x, const float *w, float *y, int64_t rows,
                 int64_t dim, float eps);

/* rope, in place: angle pos[t] * theta_base^(-2p/head_dim) and the rotation
 * in double (libm pow, sin, cos), rounded once to float. head_dim must be
 * even (an odd head_dim leaves the last element alone). Same type as the
 * kernel.
 * An implementation that forms the angle in f32 is off by about
 * |angle| * 2^-24 radians: scale a tolerance with max |pos| accordingly. */
void ref_rope(float *x, const int32_t *pos, int64_t n_tokens, int64_t n_heads,
              int64_t head_dim, float theta_base);

/* argmax: lowest index of the largest non-NaN x[r][j]; 0 for an all-NaN
 * row (or n <= 0). Same type as the kernel. */
void ref_argmax(const float *x, int32_t *out, int64_t rows, int64_t n);

/*
 * sample, the rule of docs/kernels.md step by step: p_j = exp((l_j - max)
 * / temperature) in double, a full sort by (p desc, index asc), the top-k
 * then top-p cut, the walk in index order. A NaN logit counts as -inf
 * (p = 0); temperature NaN or <= 0, or a row whose largest non-NaN logit
 * is not finite, gives the argmax. Returns -1 when out of memory (it needs
 * n doubles and n indices).
 */
int ref_sample(const float *logits, const float *u, int32_t *out, int64_t rows,
               int64_t n, float temperature, int32_t top_k, float top_p);

/*
 * How far one row's sample decision is from flipping: the smallest of
 *   |u - c_i|      over the cumulative boundaries c_i = (sum of kept p up
 *                  to and including kept token i, in index order) / (sum
 *                  of kept p), i.e. the u at which the answer changes, and
 *   |top_p - b_q|  over the top-p boundaries b_q = (sum of p over ranks
 *                  < q) / (sum of p over the top-k set), q >= 1 within the
 *                  top-k set (only when 0 < top_p < 1),
 * and 1.0 when temperature <= 0 (no boundary). Tests keep it above 1e-4
 * so that summation order cannot change an answer (kref_make_sample_rows).
 * Returns -1.0 when out of memory.
 */
double ref_sample_margin(const float *logits_row, int64_t n, float temperature,
                         int32_t top_k, float top_p, float u);

/* ---- test data ---- */

/* count values uniform in [lo, hi), rounded to dtype. */
void kref_fill(qref_rng *r, kref_dtype dtype, void *a, size_t count, double lo,
               double hi);
/* count positions uniform in [lo, hi] (inclusive). */
void kref_fill_pos(qref_rng *r, int32_t *pos, size_t count, int32_t lo,
                   int32_t hi);
/*
 * count logits on a grid of 1/256 in [-spread, spread]: distinct values
 * differ by at least 2^-8, so their p = exp(l/T) differ by far more than
 * any f32 exp error (for T up to a few), while equal values tie exactly on
 * every backend. About one value in 16 copies an earlier one (exact ties
 * for the "ties by index" rule).
 */
void kref_fill_logits(qref_rng *r, float *logits, size_t count, double spread);
/*
 * rows x n logits (kref_fill_logits) and one u per row such that every
 * row's ref_sample_margin is >= margin: u is redrawn while too close to a
 * cumulative boundary, the row's logits redrawn while top_p is too close
 * to a top-p boundary. Returns 0, or -1 when out of memory or when 1000
 * attempts for a row fail (choose another top_p or spread).
 */
int kref_make_sample_rows(qref_rng *r, float *logits, float *u, int64_t rows,
                          int64_t n, double spread, float temperature,
                          int32_t top_k, float top_p, double margin);

/* The sample cases every sample test runs (CPU images, the emulated GPU,
 * a real GPU): rows <= KREF_SAMPLE_MAX_ROWS. */
#define KREF_SAMPLE_MAX_ROWS 8
#define KREF_SAMPLE_MARGIN 1e-4
typedef struct kref_sample_case {
  int64_t rows, n;
  float temperature;
  int32_t top_k;
  float top_p;    /* used as given; 1 for a case with NaNs (below) */
  double spread;  /* logits in [-spread, spread] */
  int nans;       /* sprinkle NaN logits */
  const char *what;
} kref_sample_case;
extern const kref_sample_case kref_sample_cases[];
extern const size_t kref_nsample_cases;
/*
 * The logits and u of a case (kref_make_sample_rows at KREF_SAMPLE_MARGIN):
 * with nans, one logit in 8 becomes NaN and u is redrawn until it is again
 * a margin away from its row's boundaries (top-p at 1: no top-p boundary to
 * keep away from). *top_p receives the top_p to call the kernel with.
 * Returns 0, or -1 after printing "FAIL: ..." to stdout.
 */
int kref_sample_data(const kref_sample_case *sc, uint64_t seed, float *logits, float *u,
                     float *top_p);

/*
 * A paged KV cache's block table for tests: n_seqs sequences of lengths
 * lens[] (lengths of PAST_TABLE and NEG_LEN sequences are set here), the
 * pages each valid-looking one uses drawn from a random permutation of the
 * pool (scattered, in random order), spare pages no sequence uses, and
 * entries past a sequence's pages set to -1 (vLLM's padding), except where
 * `kind` breaks the rule on purpose:
 *   NEG_LEN        lens[s] = -3
 *   PAST_TABLE     lens[s] = max_pages * page + 1 (all max_pages entries
 *                  are real pages: the length alone is wrong)
 *   PAGE_PAST_POOL its last used entry = n_pages (the first page past the
 *                  pool's end)
 *   PAGE_NEG       its first entry = -1 (lens[s] must be > 0)
 *   PAGE_HUGE      its middle entry = INT32_MAX
 * max_pages = ceil(longest OK length / page) + 1. Returns the table
 * (n_seqs * max_pages, malloc'd; free it), or NULL when out of memory.
 */
typedef enum kref_paged_kind {
  KREF_PAGED_OK = 0,
  KREF_PAGED_NEG_LEN,
  KREF_PAGED_PAST_TABLE,
  KREF_PAGED_PAGE_PAST_POOL,
  KREF_PAGED_PAGE_NEG,
  KREF_PAGED_PAGE_HUGE
} kref_paged_kind;
int32_t *kref_make_paged_table(qref_rng *r, int64_t page, int64_t n_seqs,
                               int32_t *lens, const kref_paged_kind *kind,
                               int64_t spare, int64_t *max_pages,
                               int64_t *n_pages);

/* ---- comparison ---- */

/* One unit in the last place of binary16 at |x| (2^-24 for subnormals and
 * zero; the ulp of 65504 beyond). A correctly rounded f16 output is within
 * half of this of the exact value. */
double kref_f16_ulp(double x);

/*
 * Index of the first element of got (count elements of dtype) that is not
 * within atol + rtol * |want[i]| of want[i] (also in dtype), or -1 when all
 * are. A NaN matches only a NaN; an infinity only the same infinity.
 */
int64_t kref_first_bad(kref_dtype dtype, const void *got, const void *want,
                       int64_t count, double atol, double rtol);
/*
 * kref_first_bad, and on a mismatch prints one line to stdout:
 *   FAIL: WHAT: [i] = GOT, expected WANT (error E, tolerance T)
 * Returns 0 when all match, 1 otherwise. *worst (may be NULL) receives the
 * largest error / tolerance seen (<= 1 when passing).
 */
int kref_check(const char *what, kref_dtype dtype, const void *got,
               const void *want, int64_t count, double atol, double rtol,
               double *worst);
/* Exact comparison of int32 outputs (argmax, sample); prints the first
 * mismatch as above. Returns 0 or 1. */
int kref_check_i32(const char *what, const int32_t *got, const int32_t *want,
                   int64_t count);

/*
 * How far flash_attention's o may be from the exact result (the reference
 * in double), as kref_check's atol and rtol. The f32 arithmetic errs in
 * three places: each score (a dot product of d terms, |error| ~ 2^-24
 * sqrt(d) |s|), each exp (2 ulp) and the running sums over skv keys with a
 * rescale per tile (~ 2^-24 (sqrt(skv) + skv/32)). A score error e shifts
 * the weights by a relative e, so all of it is relative to vmax = max|v|
 * (o is a convex combination of rows of v). atol is 4x that model, with |s|
 * the size the data reaches: q, k uniform in [-1, 1] make dot(q, k) of
 * standard deviation sqrt(d/9), so 3 sigma is sqrt(d) and |s| <= scale *
 * sqrt(d) = scale_mul. For f16 the output is rounded once (half an ulp) and
 * so is the reference (another half): one f16 ulp relative, 2^-24 absolute
 * for subnormals, on top; for bf16 (8 significant bits) one bf16 ulp,
 * 2^-7 relative. p_16: the weights p are rounded to the 16-bit dtype
 * before they multiply v (the GPUs' tensor-core path, as FlashAttention-2
 * does), and l >= 1: for f16 each p is off by 2^-11 relative, or 2^-25
 * absolute below f16's normals, so o moves by at most 2^-11 (1 + skv
 * 2^-14) vmax more; for bf16 (f32's exponent range: no subnormal that
 * matters) by 2^-8 relative, so 2^-8 vmax more. Ignored for f32.
 */
void kref_attention_tolerance(kref_dtype dt, int d, double scale_mul, int64_t skv,
                              double vmax, int p_16, double *atol, double *rtol);

/* Bytes of the workspace of attention's cross-block split on GPUs
 * (docs/kernels.md, flash_attention, "GPU images") for `units` (sequence,
 * KV head) pairs of up to `keys` keys each, `rows` packed query rows a
 * unit (n_heads / n_kv_heads * sq) and head_dim d: the 32-bit counters
 * padded to 16 bytes, then ceil(rows / 16) slots of (32 + 16 d) floats (one
 * past 64 rows, a prefill's, which takes none) per 256 keys of each unit
 * (one at least): room for every split the keys allow. */
size_t kref_attention_ws_bytes(int64_t units, int64_t keys, int64_t rows, int d);
/* The slots a piece's state takes for `rows` packed query rows: ceil(rows
 * / 16), one past 64 rows (a prefill's) and at 16 or fewer. */
int64_t kref_attention_frags(int64_t rows);

/* ---- memory ---- */

/* size bytes ending right before an inaccessible page, so that a kernel
 * reading or writing past the end of a tensor faults. NULL on failure.
 * Free with kref_guarded_free(p, size) (NULL is a no-op). */
void *kref_guarded_alloc(size_t size);
void kref_guarded_free(void *p, size_t size);

#endif /* KREF_H */
