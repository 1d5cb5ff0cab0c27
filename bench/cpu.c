/*
 * cpu.c - gk_bench_cpu: qmatmul on this CPU against its own read bandwidth,
 * both measured in one run (bench/cpu.sh runs it and writes the report).
 *
 * - STREAM-style read: a sum over a buffer much larger than the last-level
 *   cache, on as many threads as the kernel uses, vectorized (AVX-512, AVX2
 *   or SSE2 chosen at run time), before and after the kernels; the median
 *   of all those runs is the baseline. Each run is followed by the same
 *   read with the kernels' software prefetches (sum_avx512_pf).
 * - qmatmul m = 1 through libgk from a real archive: the image libgk
 *   selects for this CPU and every other level this CPU can run, each BITS.
 *   Every call reads a different copy of W, cycling through the same big
 *   buffer, so that W comes from memory and not from a cache that a 28 MB
 *   matrix would fit in. Each call is paired with a read of as many bytes
 *   right before it, and the ratio is taken within each pair (steadier on a
 *   shared machine than medians taken seconds apart).
 * - The same images with W hot in cache (a small W, the same one each
 *   call): how fast the image decodes and multiplies when memory is not the
 *   limit. A kernel whose hot rate is near its memory rate is limited by
 *   its arithmetic, not by memory.
 * - qmatmul m = 32 in GFLOP/s (2*m*n*k per call).
 * - All of it for both layouts of W: the original (entry qmatmul), then,
 *   after qmatmul_repack of every copy in place (its time is reported), the
 *   packed one (entry qmatmul_packed; docs/weights.md "Packed layout"); and
 *   for the selected image qmatmul_q8x (x rounded to int8, packed W).
 * - m = 1 from memory is timed twice: paired (above) and steady state, calls
 *   back to back on successive copies (a decode step's layers).
 *
 * Times are medians of --runs runs (best also kept). Output: JSON (jansson)
 * on stdout or to --json FILE; progress on stderr. Threads for the kernel
 * come from the image's own pool (GK_NUM_THREADS, docs/kernels.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <immintrin.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../kernelsrc/cpu/gk_pool.h"
#include "gk.h"

static const char *const levels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
#define NLEVELS 4
static const int widths[] = {1, 2, 4, 8};
#define NWIDTHS 4

typedef struct opts {
  const char *archive, *json;
  size_t buffer_mb; /* STREAM buffer, also the pool of W copies */
  int runs, quick, only_selected, hot_only, huge;
  int64_t n, k, m_batch;
  size_t hot_kb;
} opts;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of the process, all threads. */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median and minimum of v[0..count); sorts v. */
static double median(double *v, int count, double *best) {
  qsort(v, (size_t)count, sizeof *v, cmp_double);
  if (best)
    *best = v[0];
  return count % 2 ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
}

/* ---- STREAM-style read ---------------------------------------------------- */

/* Eight independent accumulators: the adds never wait on each other, so the
 * loop runs at the speed memory delivers. They are eight named variables,
 * not an array: at -O2 (the RelWithDebInfo build bench/run.sh configures)
 * GCC kept an array of them on the stack, a load and a store per 64 bytes,
 * and the "STREAM" read 58 GB/s where the same loop in registers reads 76
 * (interleaved runs, same process, this machine): a baseline that low made
 * every ratio look 30% better than it is. */
#define SUM8(T, ZERO, ADD, LOAD, STEP, VLEN)                                  \
  T s0 = ZERO, s1 = ZERO, s2 = ZERO, s3 = ZERO, s4 = ZERO, s5 = ZERO,        \
    s6 = ZERO, s7 = ZERO;                                                    \
  for (size_t i = 0; i + STEP <= n; i += STEP) {                             \
    s0 = ADD(s0, LOAD(p + i));                                               \
    s1 = ADD(s1, LOAD(p + i + VLEN));                                        \
    s2 = ADD(s2, LOAD(p + i + 2 * VLEN));                                    \
    s3 = ADD(s3, LOAD(p + i + 3 * VLEN));                                    \
    s4 = ADD(s4, LOAD(p + i + 4 * VLEN));                                    \
    s5 = ADD(s5, LOAD(p + i + 5 * VLEN));                                    \
    s6 = ADD(s6, LOAD(p + i + 6 * VLEN));                                    \
    s7 = ADD(s7, LOAD(p + i + 7 * VLEN));                                    \
  }                                                                          \
  s0 = ADD(ADD(ADD(s0, s1), ADD(s2, s3)), ADD(ADD(s4, s5), ADD(s6, s7)))

__attribute__((target("avx512f"))) static float sum_avx512(const float *p, size_t n) {
  SUM8(__m512, _mm512_setzero_ps(), _mm512_add_ps, _mm512_load_ps, 128, 16);
  return _mm512_reduce_add_ps(s0);
}

/*
 * The same read with one software prefetch per 64-byte line, PF_AHEAD bytes
 * ahead: the prefetches the qmatmul kernels issue (prefetcht0, two BITS 4
 * rows ahead), with no arithmetic. The kernels need them (a BITS 4 q8x
 * build without them took 30% longer per call, interleaved with the kernel
 * as it is, on this machine), so this read is about the fastest such a
 * kernel can go. What the prefetches cost a read is the machine's to say: it is
 * measured beside the plain read, in the same run (AVX-512 only).
 */
#define PF_AHEAD 5120
_Static_assert(PF_AHEAD % 64 == 0, "whole lines");
/* One line's load (SUM8's LOAD: 64 bytes), its prefetch PF_AHEAD on. */
#define LOAD_PF(a) (__builtin_prefetch((const char *)(a) + PF_AHEAD, 0, 3), _mm512_load_ps(a))
__attribute__((target("avx512f"))) static float sum_avx512_pf(const float *p, size_t n) {
  SUM8(__m512, _mm512_setzero_ps(), _mm512_add_ps, LOAD_PF, 128, 16);
  return _mm512_reduce_add_ps(s0);
}

__attribute__((target("avx2"))) static float sum_avx2(const float *p, size_t n) {
  SUM8(__m256, _mm256_setzero_ps(), _mm256_add_ps, _mm256_load_ps, 64, 8);
  float t[8];
  _mm256_storeu_ps(t, s0);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

static float sum_sse2(const float *p, size_t n) {
  SUM8(__m128, _mm_setzero_ps(), _mm_add_ps, _mm_load_ps, 32, 4);
  float t[4];
  _mm_storeu_ps(t, s0);
  return t[0] + t[1] + t[2] + t[3];
}

/*
 * The read runs on the same kind of thread pool as the kernel (the images'
 * own gk_pool.h, compiled in here), split the same way into pieces, so the
 * two differ only in what a thread does with the bytes: workers that spin
 * between calls on one side and sleep on a barrier on the other would make
 * the ratio measure wake-up latency on a busy machine.
 */
GK_POOL_DEFINE(read_pool)
#define PIECE_BYTES (1u << 20)

typedef struct stream {
  const float *buf;
  size_t bytes, piece; /* whole buffer; bytes per piece of the current run */
  float (*sum)(const float *, size_t);
  float (*sum_pf)(const float *, size_t); /* sum_avx512_pf, or NULL */
  const char *isa;
  int threads;
  volatile float sink;
} stream;

static void read_pieces(void *arg, int64_t i0, int64_t i1) {
  stream *s = arg;
  const size_t per = s->piece / sizeof(float);
  s->sink = s->sum(s->buf + (size_t)i0 * per, (size_t)(i1 - i0) * per);
}

static void stream_start(stream *s, const float *buf, size_t bytes) {
  s->buf = buf;
  s->bytes = bytes;
  __builtin_cpu_init();
  s->sum_pf = NULL;
  if (__builtin_cpu_supports("avx512f"))
    s->sum = sum_avx512, s->sum_pf = sum_avx512_pf, s->isa = "avx512";
  else if (__builtin_cpu_supports("avx2"))
    s->sum = sum_avx2, s->isa = "avx2";
  else
    s->sum = sum_sse2, s->isa = "sse2";
  gk__pool_start(&read_pool);
  s->threads = read_pool.nthreads;
}

/* One run over `bytes` at `base` in whole pieces (1 MB, or 1/16 of a
 * small window, 512-byte multiples): GB/s. */
static double stream_run_window(stream *s, const float *base, size_t bytes) {
  s->piece = bytes >= 16 * (size_t)PIECE_BYTES ? PIECE_BYTES : bytes / 16 / 512 * 512;
  s->piece = s->piece < 512 ? 512 : s->piece;
  const int64_t pieces = (int64_t)(bytes / s->piece);
  const float *buf = s->buf;
  s->buf = base;
  const double t0 = now();
  gk_pool_run(&read_pool, read_pieces, s, pieces, INT64_MAX, 1);
  const double dt = now() - t0;
  s->buf = buf;
  return (double)pieces * (double)s->piece / dt / 1e9;
}

/* One run over the whole buffer. */
static double stream_run(stream *s) { return stream_run_window(s, s->buf, s->bytes); }

/* The same with the prefetching read (s->sum_pf must be set). */
static double stream_run_pf(stream *s) {
  float (*sum)(const float *, size_t) = s->sum;
  s->sum = s->sum_pf;
  const double gbps = stream_run(s);
  s->sum = sum;
  return gbps;
}

/* ---- test data -------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

/* Random codes everywhere, then every block of a `bits` layout gets a
 * normal binary16 d in [0.5, 1) and m in (-1, -0.5]: no inf, NaN or
 * subnormal (which could run slower than real weights). */
static void fill_w(unsigned char *w, size_t bytes, int bits) {
  const size_t bb = 4 + 4 * (size_t)bits;
  for (size_t off = 0; off + bb <= bytes; off += bb) {
    const uint64_t r = rng();
    const uint16_t d = (uint16_t)(0x3800 | (r & 0x3ff));
    const uint16_t m = (uint16_t)(0xb800 | ((r >> 10) & 0x3ff));
    w[off] = (unsigned char)d, w[off + 1] = (unsigned char)(d >> 8);
    w[off + 2] = (unsigned char)m, w[off + 3] = (unsigned char)(m >> 8);
  }
}

/* ---- qmatmul ---------------------------------------------------------------- */

typedef struct image {
  gk_module *mod;
  gk_qmatmul_fn fn, packed, q8x; /* qmatmul, qmatmul_packed, qmatmul_q8x */
  gk_qmatmul_repack_fn repack;
  char target[64];
} image;

static int load(gk_archive *ar, const char *level, int bits, image *img) {
  char variant[16], spec[32], why[256] = "";
  gk_device dev, *devp = NULL;
  snprintf(variant, sizeof variant, "bits=%d", bits);
  if (level) {
    snprintf(spec, sizeof spec, "cpu:%s", level);
    if (gk_device_parse(spec, &dev, why, sizeof why) != GK_OK) {
      fprintf(stderr, "gk_bench_cpu: device '%s': %s\n", spec, why);
      return -1;
    }
    devp = &dev;
  }
  int rc = gk_module_load(ar, devp, "qmatmul", variant, &img->mod);
  if (rc != GK_OK) {
    fprintf(stderr, "gk_bench_cpu: cannot load qmatmul %s for %s: %s (is the archive "
            "built with the cpu recipes? bench/cpu.sh builds one)\n",
            variant, level ? spec : "this machine", gk_archive_errmsg(ar));
    return -1;
  }
  img->fn = (gk_qmatmul_fn)gk_module_symbol(img->mod, "qmatmul");
  img->packed = (gk_qmatmul_fn)gk_module_symbol(img->mod, "qmatmul_packed");
  img->repack = (gk_qmatmul_repack_fn)gk_module_symbol(img->mod, "qmatmul_repack");
  img->q8x = (gk_qmatmul_fn)gk_module_symbol(img->mod, "qmatmul_q8x"); /* optional */
  snprintf(img->target, sizeof img->target, "%s", gk_module_info(img->mod)->target);
  if (!img->fn || !img->packed || !img->repack) {
    fprintf(stderr, "gk_bench_cpu: image qmatmul %s %s lacks 'qmatmul', 'qmatmul_packed' "
            "or 'qmatmul_repack' (an archive from before the packed layout? rebuild it)\n",
            variant, img->target);
    gk_module_unload(img->mod);
    return -1;
  }
  return 0;
}

typedef struct timing {
  double median_s, best_s;
  /* Paired runs only: the read bandwidth measured right before each call
   * (median), and the median over runs of (call's bytes/s) / (its read). */
  double stream_gbps, ratio;
  /* CPU time of the whole process per call (median): with one thread, the
   * time the call computed, however often the machine took the core away. */
  double cpu_s;
  /* Paired runs only: the median call of runs of calls back to back. */
  double steady_s;
} timing;

/*
 * m = 1 with W from memory, each call paired with a STREAM read of as many
 * bytes right before it, from another part of the buffer: on a shared
 * machine the load changes from one moment to the next, and a ratio taken
 * within one pair is much steadier than one between medians taken seconds
 * apart.
 */
static timing time_paired(gk_qmatmul_fn fn, const float *x, const unsigned char *arena,
                          size_t arena_bytes, size_t wbytes, float *y, int64_t n,
                          int64_t k, int runs, stream *st) {
  double t[64], bw[64], ratio[64];
  const size_t copies = arena_bytes / wbytes;
  const size_t windows = arena_bytes / wbytes;
  size_t c = 0;
  fn(x, arena, y, 1, n, k);
  runs = runs > 64 ? 64 : runs;
  for (int r = 0; r < runs; r++) {
    c = (c + 1) % copies;
    /* The read window is half the buffer away from the W copy used next. */
    const size_t win = (c + windows / 2) % windows;
    bw[r] = stream_run_window(st, (const float *)(arena + win * wbytes), wbytes);
    const double t0 = now();
    fn(x, arena + c * wbytes, y, 1, n, k);
    t[r] = now() - t0;
    ratio[r] = (double)wbytes / t[r] / 1e9 / bw[r];
  }
  timing out = {0};
  out.median_s = median(t, runs, &out.best_s);
  out.stream_gbps = median(bw, runs, NULL);
  out.ratio = median(ratio, runs, NULL);
  /* Steady state: calls back to back, each on the next copy (as the layers
   * of a decode step follow each other). A paired call starts right after
   * the read, whose pool's worker still spins (GK_POOL_SPIN_NS) and takes a
   * core from the call's own threads, 3 threads on 2 cores; the read is
   * slowed the same way by the kernel's pool. Both are reported. */
  for (int r = 0; r < runs; r++) {
    const double t0 = now();
    for (int i = 0; i < 4; i++) {
      c = (c + 1) % copies;
      fn(x, arena + c * wbytes, y, 1, n, k);
    }
    t[r] = (now() - t0) / 4;
  }
  out.steady_s = median(t, runs, NULL);
  return out;
}

/* `calls` calls per run, each on the next copy of W (copies of `wbytes`
 * bytes one after another in `arena`); one warm-up call first. */
static timing time_calls(gk_qmatmul_fn fn, const float *x, const unsigned char *arena,
                         size_t wbytes, size_t copies, float *y, int64_t m, int64_t n,
                         int64_t k, int runs, int calls) {
  double t[64], cpu[64];
  size_t c = 0;
  fn(x, arena, y, m, n, k);
  runs = runs > 64 ? 64 : runs;
  for (int r = 0; r < runs; r++) {
    const double t0 = now(), c0 = cpu_now();
    for (int i = 0; i < calls; i++) {
      c = (c + 1) % copies;
      fn(x, arena + c * wbytes, y, m, n, k);
    }
    t[r] = (now() - t0) / calls;
    cpu[r] = (cpu_now() - c0) / calls;
  }
  timing out = {0};
  out.median_s = median(t, runs, &out.best_s);
  out.cpu_s = median(cpu, runs, NULL);
  return out;
}

/* jansson has no inf or NaN: those (a zero-time run) become null. */
static json_t *jreal(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *timing_json(timing t, double bytes, double flops) {
  json_t *o = json_object();
  json_object_set_new(o, "median_us", jreal(t.median_s * 1e6));
  json_object_set_new(o, "best_us", jreal(t.best_s * 1e6));
  if (t.cpu_s > 0)
    json_object_set_new(o, "cpu_us", jreal(t.cpu_s * 1e6));
  if (bytes > 0 && t.cpu_s > 0)
    json_object_set_new(o, "gbps_per_cpu_second", jreal(bytes / t.cpu_s / 1e9));
  if (bytes > 0) {
    json_object_set_new(o, "gbps_median", jreal(bytes / t.median_s / 1e9));
    json_object_set_new(o, "gbps_best", jreal(bytes / t.best_s / 1e9));
  }
  if (flops > 0) {
    json_object_set_new(o, "gflops_median", jreal(flops / t.median_s / 1e9));
    json_object_set_new(o, "gflops_best", jreal(flops / t.best_s / 1e9));
  }
  return o;
}

/* The process's anonymous memory in transparent huge pages, in KB (the
 * kernel's own count, /proc/self/smaps_rollup); -1 when it cannot tell. */
static long long anon_huge_kb(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  char line[256];
  long long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: gk_bench_cpu ARCHIVE [--json FILE] [--buffer-mb N] [--runs N]\n"
          "                    [--n N] [--k K] [--m-batch M]\n"
          "                    [--only-selected] [--hot-kb KB] [--hot-only] [--huge-pages]\n"
          "                    [--quick]\n"
          "Measures this machine's read bandwidth (STREAM-style sum on the threads\n"
          "the kernel uses: the CPUs of this process, or GK_NUM_THREADS) and qmatmul from ARCHIVE\n"
          "(m = 1 with W from memory and hot in cache, m = M) for bits 1, 2, 4, 8 on\n"
          "every x86-64 level this CPU runs (qmatmul_q8x: the selected image only);\n"
          "m = 1 from memory both paired with a read and back to back. JSON on stdout or FILE.\n"
          "Defaults: --buffer-mb 1024 --runs 9 --n 11008 --k 4096 --m-batch 32,\n"
          "--hot-kb 1536 (the W of the in-cache runs: 32 fits L1, 512 L2).\n"
          "--hot-only: only the in-cache runs (arithmetic rates).\n"
          "--only-selected: only the image libgk selects for this CPU.\n"
          "--huge-pages: ask for transparent huge pages (madvise) on the buffer\n"
          "(W copies and the read alike); the report says whether the kernel gave them.\n"
          "--quick: tiny sizes, to check the benchmark runs (tests).\n");
}

static int parse(int argc, char **argv, opts *o) {
  static const struct option longs[] = {
      {"json", 1, 0, 'j'},    {"buffer-mb", 1, 0, 'b'}, {"runs", 1, 0, 'r'},
      {"n", 1, 0, 'n'},       {"k", 1, 0, 'k'},
      {"m-batch", 1, 0, 'm'}, {"quick", 0, 0, 'q'},     {"help", 0, 0, 'h'},
      {"only-selected", 0, 0, 's'}, {"hot-kb", 1, 0, 'H'}, {"hot-only", 0, 0, 'O'},
      {"huge-pages", 0, 0, 'P'},
      {0, 0, 0, 0}};
  *o = (opts){.buffer_mb = 1024, .runs = 9, .n = 11008, .k = 4096, .m_batch = 32,
              .hot_kb = 1536};
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case 'j': o->json = optarg; break;
    case 'b': o->buffer_mb = strtoul(optarg, NULL, 10); break;
    case 'r': o->runs = atoi(optarg); break;
    case 'n': o->n = atoll(optarg); break;
    case 'k': o->k = atoll(optarg); break;
    case 'm': o->m_batch = atoll(optarg); break;
    case 'q': o->quick = 1; break;
    case 's': o->only_selected = 1; break;
    case 'H': o->hot_kb = strtoul(optarg, NULL, 10); break;
    case 'O': o->hot_only = 1; break;
    case 'P': o->huge = 1; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); return 2;
    }
  }
  if (o->quick)
    o->buffer_mb = 16, o->runs = 3, o->n = 300, o->k = 256, o->m_batch = 4, o->hot_kb = 64;
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  o->archive = argv[optind];
  if (o->runs < 1 || o->n < 1 || o->k < 32 ||
      o->k % 32 || o->m_batch < 1 || o->buffer_mb < 1) {
    fprintf(stderr, "gk_bench_cpu: bad option value: runs >= 1, "
            "n >= 1, k a multiple of 32, m-batch >= 1, buffer-mb >= 1\n");
    return 2;
  }
  return 0;
}

/* All measurements for one code width; appends rows to the arrays. */
static int bench_width(gk_archive *ar, const opts *o, int bits, int host_level,
                       unsigned char *arena, size_t arena_bytes, const float *x,
                       float *y, stream *st, json_t *m1, json_t *hot, json_t *batch,
                       json_t *repacks) {
  const size_t wbytes = (size_t)o->n * (size_t)(o->k / 32) * (4 + 4 * (size_t)bits);
  size_t copies = arena_bytes / wbytes;
  if (copies < 2) {
    fprintf(stderr, "gk_bench_cpu: --buffer-mb too small for two copies of W (%zu bytes)\n",
            wbytes);
    return -1;
  }
  fill_w(arena, copies * wbytes, bits);
  /* The hot W: the first rows of copy 0, about hot_kb in all. */
  int64_t hot_n = (int64_t)(o->hot_kb * 1024 / (wbytes / (size_t)o->n));
  hot_n = hot_n < 1 ? 1 : hot_n > o->n ? o->n : hot_n;
  const double hot_bytes = (double)hot_n * (double)(wbytes / (size_t)o->n);
  image sel;
  if (load(ar, NULL, bits, &sel) != 0)
    return -1;
  const char *selected = sel.target;
  /* Pass 0: the original layout. Then every copy of W is repacked in place
   * (the layout depends only on BITS, so one repack serves every level)
   * and pass 1 runs qmatmul_packed on the same weights. */
  /* Pass 2: qmatmul_q8x (x rounded to int8 per block) on the packed W, the
   * selected image only (the other levels compute it in plain C). */
  for (int packed = 0; packed < 3; packed++) {
    if (packed == 1) {
      const double t0 = now();
      if (sel.repack(arena, arena, (int64_t)o->n, o->k) != 0) {
        fprintf(stderr, "gk_bench_cpu: qmatmul_repack bits=%d failed (out of memory?)\n", bits);
        gk_module_unload(sel.mod);
        return -1;
      }
      const double dt = now() - t0;
      for (size_t c = 1; c < copies; c++)
        sel.repack(arena + c * wbytes, arena + c * wbytes, (int64_t)o->n, o->k);
      json_t *row = json_object();
      json_object_set_new(row, "bits", json_integer(bits));
      json_object_set_new(row, "target", json_string(selected));
      json_object_set_new(row, "ms", jreal(dt * 1e3));
      json_object_set_new(row, "weight_bytes", json_integer((json_int_t)wbytes));
      json_array_append_new(repacks, row);
    }
    const char *layout = packed == 2 ? "q8x" : packed ? "packed" : "original";
    for (int l = 0; l <= host_level; l++) {
      image img;
      if ((o->only_selected || packed == 2) && strcmp(levels[l], selected) != 0)
        continue;
      if (load(ar, levels[l], bits, &img) != 0) {
        gk_module_unload(sel.mod);
        return -1;
      }
      if (packed == 2 && !img.q8x) { /* an archive from before qmatmul_q8x */
        gk_module_unload(img.mod);
        continue;
      }
      const gk_qmatmul_fn fn = packed == 2 ? img.q8x : packed ? img.packed : img.fn;
      const int is_sel = strcmp(img.target, selected) == 0;
      fprintf(stderr, "bench cpu: qmatmul bits=%d %s %s\n", bits, img.target, layout);
      json_t *row;
      if (!o->hot_only) {
        /* Three times the runs: single pairs scatter widely on a busy machine. */
        const timing tp = time_paired(fn, x, arena, copies * wbytes, wbytes, y, o->n,
                                      o->k, 3 * o->runs, st);
        row = timing_json(tp, (double)wbytes, 2.0 * (double)o->n * (double)o->k);
        json_object_set_new(row, "paired_stream_gbps", jreal(tp.stream_gbps));
        json_object_set_new(row, "paired_ratio", jreal(tp.ratio));
        json_object_set_new(row, "steady_us", jreal(tp.steady_s * 1e6));
        json_object_set_new(row, "steady_gbps", jreal((double)wbytes / tp.steady_s / 1e9));
        json_object_set_new(row, "bits", json_integer(bits));
        json_object_set_new(row, "target", json_string(img.target));
        json_object_set_new(row, "selected", json_boolean(is_sel));
        json_object_set_new(row, "layout", json_string(layout));
        json_object_set_new(row, "weight_bytes", json_integer((json_int_t)wbytes));
        json_array_append_new(m1, row);
      }

      /* Enough calls per run for about 5 ms: one call on a hot W is short.
       * The hot W is the first hot_n rows of copy 0, in either layout (a
       * packed row is packed on its own). */
      const int calls = (int)(5e-3 / (hot_bytes / 20e9)) + 1;
      row = timing_json(time_calls(fn, x, arena, wbytes, 1, y, 1, hot_n, o->k,
                                   o->runs, calls),
                        hot_bytes, 0);
      json_object_set_new(row, "bits", json_integer(bits));
      json_object_set_new(row, "target", json_string(img.target));
      json_object_set_new(row, "selected", json_boolean(is_sel));
      json_object_set_new(row, "layout", json_string(layout));
      json_object_set_new(row, "n", json_integer(hot_n));
      json_object_set_new(row, "weight_bytes", json_integer((json_int_t)hot_bytes));
      json_array_append_new(hot, row);

      if (o->hot_only) {
        gk_module_unload(img.mod);
        continue;
      }
      row = timing_json(time_calls(fn, x, arena, wbytes, copies, y, o->m_batch, o->n,
                                   o->k, o->runs < 5 ? o->runs : 5, 1),
                        0, 2.0 * (double)o->m_batch * (double)o->n * (double)o->k);
      json_object_set_new(row, "bits", json_integer(bits));
      json_object_set_new(row, "target", json_string(img.target));
      json_object_set_new(row, "selected", json_boolean(is_sel));
      json_object_set_new(row, "layout", json_string(layout));
      json_object_set_new(row, "m", json_integer(o->m_batch));
      json_array_append_new(batch, row);
      gk_module_unload(img.mod);
    }
  }
  gk_module_unload(sel.mod);
  return 0;
}

int main(int argc, char **argv) {
  opts o;
  int rc = parse(argc, argv, &o);
  if (rc)
    return rc;
  gk_archive *ar = NULL;
  if (gk_archive_open(o.archive, &ar) != GK_OK) {
    fprintf(stderr, "gk_bench_cpu: %s\n", gk_last_error());
    return 1;
  }
  gk_device host;
  char why[256] = "";
  if (gk_device_detect_backend(GK_BACKEND_CPU, &host, why, sizeof why) != GK_OK) {
    fprintf(stderr, "gk_bench_cpu: cannot describe this CPU: %s\n", why);
    return 1;
  }
  int host_level = -1;
  for (int l = 0; l < NLEVELS; l++)
    if (strcmp(host.arch, levels[l]) == 0)
      host_level = l;
  if (host_level < 0) {
    fprintf(stderr, "gk_bench_cpu: this CPU is '%s', not an x86-64 level\n", host.arch);
    return 1;
  }

  const size_t arena_bytes = o.buffer_mb << 20;
  unsigned char *arena = mmap(NULL, arena_bytes, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  float *x = malloc((size_t)(o.m_batch * o.k) * sizeof *x);
  float *y = malloc((size_t)(o.m_batch * o.n) * sizeof *y);
  if (arena == MAP_FAILED || !x || !y) {
    fprintf(stderr, "gk_bench_cpu: out of memory for a %zu MB buffer (try --buffer-mb)\n",
            o.buffer_mb);
    return 1;
  }
  /* Before the first touch: the pages are chosen then. */
  if (o.huge && madvise(arena, arena_bytes, MADV_HUGEPAGE) != 0)
    fprintf(stderr, "gk_bench_cpu: madvise(MADV_HUGEPAGE) refused (%s): measuring with "
            "small pages\n", strerror(errno));
  for (size_t i = 0; i < arena_bytes / 8; i++)
    ((uint64_t *)arena)[i] = rng();
  for (int64_t i = 0; i < o.m_batch * o.k; i++)
    x[i] = (float)((int64_t)(rng() >> 40) - (1 << 23)) / (float)(1 << 23);

  stream st;
  stream_start(&st, (const float *)arena, arena_bytes);
  /* Runs before and after the kernels: one baseline for the whole run. */
  /* Each plain run is followed by one of the prefetching read (when there
   * is one): pr[] and, per pair, prefetching over plain in pq[]. At most 64
   * runs before the kernels and 64 after, whatever --runs says. */
  double sr[128], pr[128], pq[128];
  int ns = 0, np = 0;
  fprintf(stderr, "bench cpu: read bandwidth, %d threads, %zu MB\n", st.threads, o.buffer_mb);
  stream_run(&st);
  for (int r = 0; r < o.runs && ns < 64; r++) {
    sr[ns++] = stream_run(&st);
    if (st.sum_pf)
      pr[np] = stream_run_pf(&st), pq[np] = pr[np] / sr[ns - 1], np++;
  }

  json_t *m1 = json_array(), *hot = json_array(), *batch = json_array();
  json_t *repacks = json_array();
  for (int b = 0; b < NWIDTHS && rc == 0; b++)
    if (bench_width(ar, &o, widths[b], host_level, arena, arena_bytes, x, y, &st, m1,
                    hot, batch, repacks) != 0)
      rc = 1;

  for (int r = 0; r < o.runs && ns < 128; r++) {
    sr[ns++] = stream_run(&st);
    if (st.sum_pf)
      pr[np] = stream_run_pf(&st), pq[np] = pr[np] / sr[ns - 1], np++;
  }
  const double smed = median(sr, ns, NULL);
  const double sbest = sr[ns - 1]; /* sorted ascending: the highest bandwidth */

  json_t *root = json_object();
  json_object_set_new(root, "cpu", json_string(host.name));
  json_object_set_new(root, "level", json_string(host.arch));
  json_object_set_new(root, "threads", json_integer(st.threads));
  const char *env = getenv("GK_NUM_THREADS");
  json_object_set_new(root, "gk_num_threads", env ? json_string(env) : json_null());
  json_object_set_new(root, "n", json_integer(o.n));
  json_object_set_new(root, "k", json_integer(o.k));
  json_object_set_new(root, "runs", json_integer(o.runs));
  json_t *s = json_object();
  json_object_set_new(s, "isa", json_string(st.isa));
  json_object_set_new(s, "buffer_mb", json_integer((json_int_t)o.buffer_mb));
  json_object_set_new(s, "huge_pages_asked", json_boolean(o.huge));
  json_object_set_new(s, "huge_pages_kb", json_integer(anon_huge_kb()));
  json_object_set_new(s, "runs", json_integer(ns));
  json_object_set_new(s, "gbps_median", jreal(smed));
  json_object_set_new(s, "gbps_best", jreal(sbest));
  if (np) {
    json_object_set_new(s, "prefetch_ahead_bytes", json_integer(PF_AHEAD));
    json_object_set_new(s, "prefetched_gbps_median", jreal(median(pr, np, NULL)));
    json_object_set_new(s, "prefetched_ratio", jreal(median(pq, np, NULL)));
  }
  json_object_set_new(root, "stream_read", s);
  json_object_set_new(root, "qmatmul_m1", m1);
  json_object_set_new(root, "qmatmul_m1_hot", hot);
  json_object_set_new(root, "qmatmul_batch", batch);
  json_object_set_new(root, "repack", repacks);
  if (rc == 0) {
    if (o.json ? json_dump_file(root, o.json, JSON_INDENT(2) | JSON_SORT_KEYS) != 0
               : json_dumpf(root, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
      fprintf(stderr, "gk_bench_cpu: cannot write '%s'\n", o.json ? o.json : "stdout");
      rc = 1;
    }
    if (!o.json)
      putchar('\n');
  }
  json_decref(root);
  munmap(arena, arena_bytes);
  free(x);
  free(y);
  gk_archive_close(ar);
  return rc;
}
