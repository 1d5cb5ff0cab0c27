/*
 * test_qmatmul.c ARCHIVE - the qmatmul images of a real archive, picked and
 * loaded by libgk through its public API only, against the scalar
 * reference of tests/common/qref.h.
 *
 * For every code width (bits=1, 2, 4, 8) and every x86-64 level this CPU
 * can run, it loads the image for "cpu:LEVEL", checks that libgk chose
 * exactly that level, and compares y for shapes with m = 1 and m > 1, odd
 * n, several chunks of k, and the m = 1, 11008 x 4096 case the CPU kernel
 * is tuned for, plus n below the thread count. The images split calls over
 * their own threads (gk_pool.h); ctest also runs this test with
 * GK_NUM_THREADS=3 GK_PARALLEL_MIN=0 (kernels.qmatmul_threads), which
 * splits every call, small n included. Levels above this CPU are skipped,
 * saying so.
 *
 * The packed layout (docs/weights.md, "Packed layout"): every image's
 * qmatmul_repack must produce exactly the bytes of this test's own packer,
 * written from the documentation alone, out of place and in place; and
 * qmatmul_packed on them must give y bit-identical to qmatmul on the
 * original W (hence also within the reference's tolerance). qmatmul_q8x
 * (x rounded to int8 per block, docs/weights.md "int8 x") on the packed W
 * must give exactly the bits of tests/common's qref_q8x, which is
 * within the int8 rounding bound of the exact product. x and W end
 * right before an inaccessible page, so reading past them faults. Exits 1
 * on any failure, after printing the first bad element of each failing
 * case.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS, clock_gettime */

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gk.h"
#include "qref.h"

#define NLEVELS 4
static const char *const levels[NLEVELS] = {"x86-64", "x86-64-v2", "x86-64-v3",
                                            "x86-64-v4"};
static const int widths[] = {1, 2, 4, 8};

/* A float kernel may differ from the double reference by rounding in each
 * of its k terms: the error bound is relative to sum_t |x_t * w_t|. */
#define REL_TOL 1e-5

typedef struct shape {
  int64_t m, n, k;
} shape;

static const shape shapes[] = {
    {1, 1, 32},    {1, 37, 64},    {3, 17, 256},   {2, 5, 32},
    {7, 3, 96},    {5, 129, 1024}, {1, 300, 4128}, {4, 9, 8224},
    {32, 64, 4096}, {1, 11008, 4096}, {1, 2, 64},  {3, 2, 128},
    {1, 4097, 1024}, {1, 5, 1440},   {2, 7, 1440},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Guard floats after y: the kernel must not write past m*n. */
#define GUARD 16
#define GUARD_VALUE 12345.0f

static int level_of(const char *arch) {
  for (int l = 0; l < NLEVELS; l++)
    if (strcmp(arch, levels[l]) == 0)
      return l;
  return -1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/*
 * Memory whose last byte is followed by an inaccessible page: a kernel that
 * reads past the end of x or W faults here instead of reading whatever
 * follows (the images must load exactly the bytes of the format).
 */
static void *guarded_alloc(size_t size) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t span = (size + page - 1) / page * page;
  unsigned char *base = mmap(NULL, span + page, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  if (mprotect(base + span, page, PROT_NONE) != 0) {
    munmap(base, span + page);
    return NULL;
  }
  return base + span - size;
}

static void guarded_free(void *p, size_t size) {
  if (!p)
    return;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t span = (size + page - 1) / page * page;
  munmap((unsigned char *)p + size - span, span + page);
}

/* The case being run, for the fault handler (a test may keep a global). */
static char running[160] = "setup";

static void on_fault(int sig) {
  static const char head[] = "FAIL: memory fault in ";
  static const char tail[] = " (read past the end of x or W?)\n";
  (void)sig;
  /* Only async-signal-safe calls here. */
  if (write(STDOUT_FILENO, head, sizeof head - 1) < 0 ||
      write(STDOUT_FILENO, running, strlen(running)) < 0 ||
      write(STDOUT_FILENO, tail, sizeof tail - 1) < 0)
    _exit(1);
  _exit(1);
}

/*
 * The packed layout, from docs/weights.md alone: per row, every d, then
 * every m, then the codes: groups of G = 16/bits blocks as 16 words, word l holding in bits
 * [s*bits, (s+1)*bits) the code of block G*g + s/2, weight 2l + s%2 (bits
 * 4) or 16*(s%2) + l (bits 1, 2); then the codes of the nb % G blocks
 * left, as in the original. Bits 8 keeps every block's code bytes in block
 * order.
 */
static void pack_reference(int bits, const unsigned char *w, int64_t n, int64_t k,
                           unsigned char *out) {
  const int64_t nb = k / 32, bb = 4 + 4 * bits, g_blocks = 16 / bits;
  const int64_t ng = bits == 8 ? 0 : nb / g_blocks; /* bits 8: block order */
  for (int64_t j = 0; j < n; j++) {
    const unsigned char *src = w + j * nb * bb;
    unsigned char *ds = out + j * nb * bb, *ms = ds + 2 * nb, *dst = ds + 4 * nb;
    for (int64_t g = 0; g < ng; g++)
      for (int l = 0; l < 16; l++) {
        uint32_t word = 0;
        for (int s = 0; s < 32 / bits; s++) {
          const int t = bits == 4 ? 2 * l + s % 2 : 16 * (s % 2) + l;
          const unsigned char *blk = src + (g * g_blocks + s / 2) * bb;
          word |= (uint32_t)qref_code(blk + 4, bits, t) << (s * bits);
        }
        for (int byte = 0; byte < 4; byte++)
          dst[64 * g + 4 * l + byte] = (unsigned char)(word >> (8 * byte));
      }
    for (int64_t b = ng * g_blocks; b < nb; b++)
      memcpy(dst + 64 * ng + (b - ng * g_blocks) * 4 * bits, src + b * bb + 4,
             (size_t)(4 * bits));
    for (int64_t b = 0; b < nb; b++) {
      memcpy(ds + 2 * b, src + b * bb, 2);
      memcpy(ms + 2 * b, src + b * bb + 2, 2);
    }
  }
}

/* One test case: random x and W for (bits, shape) and the reference y. */
typedef struct testcase {
  shape s;
  size_t x_bytes, w_bytes;
  float *x;
  unsigned char *w;
  unsigned char *wp, *wp_ref; /* packed by the image, by this test */
  double *ref, *mag;
  float *y; /* m*n + GUARD */
} testcase;

static void testcase_free(testcase *t) {
  guarded_free(t->x, t->x_bytes);
  guarded_free(t->w, t->w_bytes);
  guarded_free(t->wp, t->w_bytes);
  free(t->wp_ref);
  free(t->ref);
  free(t->mag);
  free(t->y);
}

static int testcase_make(testcase *t, int bits, size_t index) {
  const shape s = shapes[index];
  const size_t mn = (size_t)(s.m * s.n);
  qref_rng r;
  memset(t, 0, sizeof *t);
  t->s = s;
  t->x_bytes = (size_t)(s.m * s.k) * sizeof *t->x;
  t->w_bytes = qref_w_bytes(bits, s.n, s.k);
  t->x = guarded_alloc(t->x_bytes);
  t->w = guarded_alloc(t->w_bytes);
  t->wp = guarded_alloc(t->w_bytes);
  t->wp_ref = malloc(t->w_bytes + 1);
  t->ref = malloc(mn * sizeof *t->ref);
  t->mag = malloc(mn * sizeof *t->mag);
  t->y = malloc((mn + GUARD) * sizeof *t->y);
  if (!t->x || !t->w || !t->wp || !t->wp_ref || !t->ref || !t->mag || !t->y)
    return -1;
  /* The seed depends only on (bits, shape): every run sees the same data. */
  qref_seed(&r, 1000u * (unsigned)bits + index);
  qref_fill_x(&r, t->x, (size_t)(s.m * s.k));
  qref_fill_w(&r, bits, s.n, s.k, t->w);
  pack_reference(bits, t->w, s.n, s.k, t->wp_ref);
  return qref_matmul(bits, t->x, t->w, s.m, s.n, s.k, t->ref, t->mag);
}

/* qmatmul_q8x on the packed W: exactly q8x_reference's bits, within its
 * rounding bound of the double reference, nothing written past y. */
static int check_q8x(gk_qmatmul_fn fn, const unsigned char *wp, const char *what,
                     const testcase *t, int bits) {
  const shape s = t->s;
  const size_t mn = (size_t)(s.m * s.n);
  float *want = malloc(mn * sizeof *want + 1);
  double *bound = malloc(mn * sizeof *bound + 1);
  int bad = 0;
  if (!want || !bound || qref_q8x(bits, t->x, t->w, s.m, s.n, s.k, want, bound) != 0) {
    printf("FAIL: out of memory for the q8x reference\n");
    free(want), free(bound);
    return 1;
  }
  for (size_t i = 0; i < mn + GUARD; i++)
    t->y[i] = i < mn ? NAN : GUARD_VALUE;
  snprintf(running, sizeof running, "%s m=%lld n=%lld k=%lld", what, (long long)s.m,
           (long long)s.n, (long long)s.k);
  fn(t->x, wp, t->y, s.m, s.n, s.k);
  for (size_t i = 0; i < mn && !bad; i++) {
    const double err = fabs((double)want[i] - t->ref[i]);
    if (memcmp(&want[i], &t->y[i], sizeof want[i]) != 0) {
      printf("FAIL: %s m=%lld n=%lld k=%lld: y[%zu] = %.9g, the exact q8x arithmetic "
             "gives %.9g: must be identical\n", what, (long long)s.m, (long long)s.n,
             (long long)s.k, i, (double)t->y[i], (double)want[i]);
      bad = 1;
    } else if (!(err <= bound[i] * 1.0001 + 2 * REL_TOL * t->mag[i] + 1e-30)) {
      printf("FAIL: %s m=%lld n=%lld k=%lld: y[%zu] = %.9g is %.3g from the exact "
             "product %.9g, more than rounding x to int8 allows (%.3g)\n", what,
             (long long)s.m, (long long)s.n, (long long)s.k, i, (double)want[i], err,
             t->ref[i], bound[i]);
      bad = 1;
    }
  }
  for (size_t i = mn; i < mn + GUARD && !bad; i++)
    if (t->y[i] != GUARD_VALUE) {
      printf("FAIL: %s: wrote past the end of y (y[%zu])\n", what, i);
      bad = 1;
    }
  free(want), free(bound);
  return bad;
}

/* Runs one kernel on one case; 0 when every element is within tolerance,
 * else prints the first bad one and returns 1. *worst receives the largest
 * error relative to the element's scale. */
static int check_case(gk_qmatmul_fn fn, const unsigned char *w, const char *what,
                      const testcase *t, double *worst) {
  const shape s = t->s;
  const size_t mn = (size_t)(s.m * s.n);
  for (size_t i = 0; i < mn + GUARD; i++)
    t->y[i] = i < mn ? NAN : GUARD_VALUE;
  snprintf(running, sizeof running, "%s m=%lld n=%lld k=%lld", what,
           (long long)s.m, (long long)s.n, (long long)s.k);
  fn(t->x, w, t->y, s.m, s.n, s.k);
  for (size_t i = 0; i < mn; i++) {
    const double err = fabs((double)t->y[i] - t->ref[i]);
    const double tol = REL_TOL * t->mag[i] + 1e-30;
    if (!(err <= tol)) { /* also catches NaN: an element never written */
      printf("FAIL: %s m=%lld n=%lld k=%lld: y[%zu] (row %zu, col %zu) = %.9g, "
             "expected %.9g (error %.3g, tolerance %.3g)\n",
             what, (long long)s.m, (long long)s.n, (long long)s.k, i,
             i / (size_t)s.n, i % (size_t)s.n, (double)t->y[i], t->ref[i], err,
             tol);
      return 1;
    }
    if (t->mag[i] > 0 && err / t->mag[i] > *worst)
      *worst = err / t->mag[i];
  }
  for (size_t i = mn; i < mn + GUARD; i++)
    if (t->y[i] != GUARD_VALUE) {
      printf("FAIL: %s m=%lld n=%lld k=%lld: wrote past the end of y (y[%zu])\n",
             what, (long long)s.m, (long long)s.n, (long long)s.k, i);
      return 1;
    }
  return 0;
}

/* Best of a few runs, for the record (not checked: machines differ). */
static double best_ms(gk_qmatmul_fn fn, const unsigned char *w, const testcase *t) {
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    const double t0 = now();
    fn(t->x, w, t->y, t->s.m, t->s.n, t->s.k);
    const double dt = now() - t0;
    best = dt < best ? dt : best;
  }
  return 1e3 * best;
}

/*
 * The CPU kernel promises that a row of x gives the same bits whether it
 * is computed alone or in a batch (kernelsrc/cpu/qmatmul.c): inference
 * results must not depend on what else was batched with them.
 */
static int check_batch_invariance(gk_qmatmul_fn fn, const unsigned char *w,
                                  const char *what, const testcase *t) {
  const shape s = t->s;
  float *one = malloc((size_t)s.n * sizeof *one);
  int bad = 0;
  if (!one)
    return 1;
  fn(t->x, w, t->y, s.m, s.n, s.k);
  for (int64_t i = 0; i < s.m && !bad; i++) {
    fn(t->x + i * s.k, w, one, 1, s.n, s.k);
    for (int64_t j = 0; j < s.n; j++)
      if (memcmp(&one[j], &t->y[i * s.n + j], sizeof one[j]) != 0) {
        printf("FAIL: %s m=%lld n=%lld k=%lld: row %lld alone gives y[%lld] = "
               "%.9g, in the batch %.9g\n",
               what, (long long)s.m, (long long)s.n, (long long)s.k,
               (long long)i, (long long)j, (double)one[j],
               (double)t->y[i * s.n + j]);
        bad = 1;
        break;
      }
  }
  free(one);
  return bad;
}

/*
 * The image's repack against this test's packer, out of place (into t->wp,
 * first filled with junk) and in place (t->wp holding a copy of W); t->wp
 * ends up packed.
 */
static int check_repack(gk_qmatmul_repack_fn repack, const char *what, const testcase *t) {
  const shape s = t->s;
  for (int in_place = 0; in_place < 2; in_place++) {
    if (in_place)
      memcpy(t->wp, t->w, t->w_bytes);
    else
      memset(t->wp, 0xa5, t->w_bytes);
    snprintf(running, sizeof running, "%s repack%s n=%lld k=%lld", what,
             in_place ? " in place" : "", (long long)s.n, (long long)s.k);
    const int rc = repack(in_place ? t->wp : t->w, t->wp, s.n, s.k);
    if (rc != 0) {
      printf("FAIL: %s: qmatmul_repack%s n=%lld k=%lld returned %d\n", what,
             in_place ? " (in place)" : "", (long long)s.n, (long long)s.k, rc);
      return 1;
    }
    for (size_t i = 0; i < t->w_bytes; i++)
      if (t->wp[i] != t->wp_ref[i]) {
        printf("FAIL: %s: qmatmul_repack%s n=%lld k=%lld: byte %zu (row %zu) is 0x%02x, "
               "docs/weights.md's packed layout says 0x%02x\n",
               what, in_place ? " (in place)" : "", (long long)s.n, (long long)s.k, i,
               i / (t->w_bytes / (size_t)s.n), t->wp[i], t->wp_ref[i]);
        return 1;
      }
  }
  return 0;
}

/* y of qmatmul_packed on the packed W must be qmatmul's on W, bit for bit
 * (`orig`, m*n floats). */
static int check_identical(const char *what, const testcase *t, const float *orig) {
  const shape s = t->s;
  for (size_t i = 0; i < (size_t)(s.m * s.n); i++)
    if (memcmp(&orig[i], &t->y[i], sizeof orig[i]) != 0) {
      printf("FAIL: %s m=%lld n=%lld k=%lld: y[%zu] = %.9g on the packed W, %.9g "
             "from qmatmul on the original: must be identical\n",
             what, (long long)s.m, (long long)s.n, (long long)s.k, i,
             (double)t->y[i], (double)orig[i]);
      return 1;
    }
  return 0;
}

/* Loads the image for `spec`, checks the row libgk chose; NULL on failure
 * (reported). */
static gk_module *load(gk_archive *ar, const gk_device *dev, const char *variant,
                       const char *want_target) {
  gk_module *mod = NULL;
  int rc = gk_module_load(ar, dev, "qmatmul", variant, &mod);
  if (rc != GK_OK) {
    printf("FAIL: loading qmatmul %s for %s: %s: %s\n", variant,
           dev ? dev->arch : "the detected device", gk_strerror(rc),
           gk_archive_errmsg(ar));
    return NULL;
  }
  const gk_image_info *info = gk_module_info(mod);
  if (strcmp(info->kernel, "qmatmul") != 0 || strcmp(info->backend, "cpu") != 0 ||
      strcmp(info->variant, variant) != 0 || strcmp(info->target, want_target) != 0) {
    printf("FAIL: qmatmul %s for %s: libgk chose %s %s %s %s, expected cpu %s\n",
           variant, dev ? dev->arch : "the detected device", info->kernel,
           info->backend, info->target, info->variant, want_target);
    gk_module_unload(mod);
    return NULL;
  }
  return mod;
}

/* With dev == NULL libgk uses the detected device: on a machine whose best
 * device is this CPU, the image of the CPU's own level. */
static int check_default_device(gk_archive *ar, const gk_device *host) {
  gk_device best;
  int rc = gk_device_detect(&best);
  if (rc != GK_OK) {
    printf("FAIL: gk_device_detect: %s\n", gk_strerror(rc));
    return 1;
  }
  if (best.backend != GK_BACKEND_CPU) {
    printf("SKIP: dev == NULL: the detected device here is %s, not the cpu\n",
           gk_backend_name(best.backend));
    return 0;
  }
  gk_module *mod = load(ar, NULL, "bits=4", host->arch);
  if (!mod)
    return 1;
  const gk_device *dev = gk_module_device(mod);
  int bad = dev->backend != GK_BACKEND_CPU || strcmp(dev->arch, host->arch) != 0;
  if (bad)
    printf("FAIL: dev == NULL: module device is %s:%s, expected cpu:%s\n",
           gk_backend_name(dev->backend), dev->arch, host->arch);
  else
    printf("ok: dev == NULL loads qmatmul bits=4 for cpu:%s\n", host->arch);
  gk_module_unload(mod);
  return bad;
}

/* All shapes for one code width on every level that runs here. */
static int check_width(gk_archive *ar, int bits, int host_level) {
  char variant[16], what[64];
  gk_module *mods[NLEVELS] = {0};
  gk_qmatmul_fn fns[NLEVELS] = {0}, pfns[NLEVELS] = {0}, qfns[NLEVELS] = {0};
  gk_qmatmul_repack_fn reps[NLEVELS] = {0};
  double worst[NLEVELS] = {0}, big_ms[NLEVELS] = {0}, big_packed_ms[NLEVELS] = {0};
  double big_q8x_ms[NLEVELS] = {0};
  int failures = 0;
  snprintf(variant, sizeof variant, "bits=%d", bits);

  for (int l = 0; l <= host_level; l++) {
    char spec[32], why[256] = "";
    gk_device dev;
    snprintf(spec, sizeof spec, "cpu:%s", levels[l]);
    int rc = gk_device_parse(spec, &dev, why, sizeof why);
    if (rc != GK_OK) {
      printf("FAIL: gk_device_parse(\"%s\"): %s: %s\n", spec, gk_strerror(rc), why);
      failures++;
      continue;
    }
    mods[l] = load(ar, &dev, variant, levels[l]);
    if (!mods[l]) {
      failures++;
      continue;
    }
    fns[l] = (gk_qmatmul_fn)gk_module_symbol(mods[l], "qmatmul");
    pfns[l] = (gk_qmatmul_fn)gk_module_symbol(mods[l], "qmatmul_packed");
    reps[l] = (gk_qmatmul_repack_fn)gk_module_symbol(mods[l], "qmatmul_repack");
    qfns[l] = (gk_qmatmul_fn)gk_module_symbol(mods[l], "qmatmul_q8x");
    if (!fns[l] || !pfns[l] || !reps[l] || !qfns[l]) {
      printf("FAIL: qmatmul %s %s: the image lacks one of the symbols 'qmatmul' (%s), "
             "'qmatmul_packed' (%s), 'qmatmul_repack' (%s), 'qmatmul_q8x' (%s)\n",
             variant, levels[l], fns[l] ? "ok" : "missing", pfns[l] ? "ok" : "missing",
             reps[l] ? "ok" : "missing", qfns[l] ? "ok" : "missing");
      failures++;
      fns[l] = NULL;
    }
  }

  for (size_t c = 0; c < NSHAPES; c++) {
    testcase t;
    if (testcase_make(&t, bits, c) != 0) {
      printf("FAIL: out of memory making test data\n");
      testcase_free(&t);
      return failures + 1;
    }
    const size_t mn = (size_t)(t.s.m * t.s.n);
    float *orig = malloc(mn * sizeof *orig);
    if (!orig) {
      printf("FAIL: out of memory making test data\n");
      testcase_free(&t);
      return failures + 1;
    }
    for (int l = 0; l <= host_level; l++) {
      if (!fns[l])
        continue;
      snprintf(what, sizeof what, "qmatmul %s %s", variant, levels[l]);
      failures += check_case(fns[l], t.w, what, &t, &worst[l]);
      memcpy(orig, t.y, mn * sizeof *orig);
      if (t.s.n == 11008)
        big_ms[l] = best_ms(fns[l], t.w, &t);
      if (t.s.m > 1)
        failures += check_batch_invariance(fns[l], t.w, what, &t);
      /* The packed layout, through the same image. */
      snprintf(what, sizeof what, "qmatmul_packed %s %s", variant, levels[l]);
      if (check_repack(reps[l], what, &t) != 0) {
        failures++;
        continue;
      }
      const int bad = check_case(pfns[l], t.wp, what, &t, &worst[l]);
      failures += bad;
      if (!bad)
        failures += check_identical(what, &t, orig);
      if (t.s.n == 11008)
        big_packed_ms[l] = best_ms(pfns[l], t.wp, &t);
      if (t.s.m > 1)
        failures += check_batch_invariance(pfns[l], t.wp, what, &t);
      /* int8 x on the packed W, through the same image. */
      snprintf(what, sizeof what, "qmatmul_q8x %s %s", variant, levels[l]);
      failures += check_q8x(qfns[l], t.wp, what, &t, bits);
      if (t.s.n == 11008)
        big_q8x_ms[l] = best_ms(qfns[l], t.wp, &t);
      if (t.s.m > 1)
        failures += check_batch_invariance(qfns[l], t.wp, what, &t);
    }
    free(orig);
    testcase_free(&t);
  }

  for (int l = 0; l <= host_level; l++) {
    if (fns[l])
      printf("ok: qmatmul %s %-9s %zu shapes, original and packed layout (identical "
             "y), qmatmul_q8x (exact), worst error %.2g of scale; 1x11008x4096 in %.2f ms, "
             "packed %.2f ms, q8x %.2f ms\n",
             variant, levels[l], NSHAPES, worst[l], big_ms[l], big_packed_ms[l], big_q8x_ms[l]);
    gk_module_unload(mods[l]);
  }
  return failures;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_qmatmul ARCHIVE\n");
    return 2;
  }
  /* Line-buffered, so that what was printed survives a fault (_exit). */
  setvbuf(stdout, NULL, _IOLBF, 0);
  gk_archive *ar = NULL;
  int rc = gk_archive_open(argv[1], &ar);
  if (rc != GK_OK) {
    printf("FAIL: cannot open archive '%s': %s: %s\n", argv[1], gk_strerror(rc),
           gk_last_error());
    return 1;
  }

  gk_device host;
  char why[256] = "";
  rc = gk_device_detect_backend(GK_BACKEND_CPU, &host, why, sizeof why);
  const int host_level = rc == GK_OK ? level_of(host.arch) : -1;
  if (host_level < 0) {
    printf("FAIL: cannot tell this CPU's x86-64 level: %s %s\n",
           rc == GK_OK ? host.arch : gk_strerror(rc), why);
    gk_archive_close(ar);
    return 1;
  }
  printf("cpu: %s (%s)\n", host.arch, host.name);
  signal(SIGSEGV, on_fault);
  signal(SIGBUS, on_fault);
  for (int l = host_level + 1; l < NLEVELS; l++)
    printf("SKIP: %s images: this CPU is %s\n", levels[l], host.arch);

  int failures = 0;
  for (size_t b = 0; b < sizeof widths / sizeof widths[0]; b++)
    failures += check_width(ar, widths[b], host_level);
  failures += check_default_device(ar, &host);
  gk_archive_close(ar);

  if (failures)
    printf("test_qmatmul: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
