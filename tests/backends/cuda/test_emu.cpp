/*
 * test_emu.cpp ARCHIVE - the GPU kernel bodies (kernelsrc/cuda/NAME.cuh, the
 * very text nvcc compiles) run on an EMULATED GPU (tests/backends/cuda/emu: threads
 * as fibers, barriers and group shuffles) against the scalar references of
 * tests/common, launched the way a program launches the real images: block
 * and grid from the index's `launch` metadata of the archive's cuda rows,
 * its `params` checked against docs/kernels.md.
 *
 * What this proves: the algorithms (tiling, online softmax, reductions,
 * radix select, barrier placement, the waits for cp.async and wgmma, which
 * complete as late as the PTX ISA allows, and the async-proxy fences
 * before a wgmma reads what a cp.async wrote) compute the kernel set's
 * semantics for the launch the metadata describes. What it cannot: timing, memory
 * coalescing, or what nvcc makes of the text for a real GPU (no GPU here;
 * numbers on a real GPU are not checked).
 *
 * Exit 77 (SKIP) without the archive of real cuda images (it holds the
 * launch metadata).
 */
#define GK_GPU_EMULATE 1
/* A causal prefill's L2 sections (gk_fa_section_heads) of one KV head's
 * heads past 64 keys at head_dim 64 (a KV head's K and V in f16: 256
 * bytes a key), so that the walk crosses sections (the images' own
 * budget, megabytes, would make every shape here one section). */
#define GK_FA_L2_BYTES (16 << 10)
#include "argmax.cuh"
#include "flash_attention.cuh"
#include "paged_attention.cuh"
#include "q8x_batch.cuh"
#include "q8x_mma.cuh"
#include "qmatmul.cuh"
#include "rmsnorm.cuh"
#include "rope.cuh"
#include "sample.cuh"
#include "../../gpu/wgmma_probe.cuh"
#include "../../gpu/wgmma_probe_data.h"

extern "C" {
#include "kref.h"
#include "qref.h"
}
#include <jansson.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "gk.h"

static int failures;

/* "ok: ..." only when the section added no failure. */
#define SECTION_OK(before, ...)                 \
  do {                                          \
    if (failures == (before)) printf(__VA_ARGS__); \
  } while (0)
#define CHECK(cond, ...)                \
  do {                                  \
    if (!(cond)) {                      \
      printf("FAIL: " __VA_ARGS__);     \
      printf("\n");                     \
      failures++;                       \
    }                                   \
  } while (0)

/* The ldmatrix reads since the last call, which must have met no bank
 * conflict (gk_emu.h): shared memory serves each 8 x 8 matrix in one pass,
 * the rate the mma paths' design counts on (docs/kernels.md). */
static void check_banks(const char *what) {
  unsigned long long matrices, extra;
  gk_emu_ldmatrix_stats(&matrices, &extra);
  CHECK(extra == 0, "%s: %llu bank conflicts (passes beyond one) over %llu ldmatrix matrices",
        what, extra, matrices);
}

/* ---- launch metadata ------------------------------------------------------ */

/* The launch of a row, evaluated by libgk (gk.h, "Launching GPU kernels"):
 * the same evaluator a program's gk_module_launch uses. */
struct launch {
  gk_launch *L = nullptr;
  launch() = default;
  launch(const launch &) = delete;
  launch &operator=(const launch &) = delete;
  ~launch() { gk_launch_free(L); }
};

static gk_archive *archive;

/* What launches `entry` in a row's launch JSON: the entry's own object
 * where the row gives one, else the row's top-level fields (block, grid,
 * shared, params: the objects of the other entries left out). NULL when
 * the text is not JSON. */
static json_t *entry_launch(const char *text, const char *entry) {
  json_t *root = json_loads(text, 0, NULL);
  if (!root) return NULL;
  json_t *own = entry ? json_object_get(root, entry) : NULL;
  json_t *out = json_object();
  const char *key;
  json_t *v;
  json_object_foreach(own && json_is_object(own) ? own : root, key, v)
    if (!json_is_object(v)) json_object_set(out, key, v);
  json_decref(root);
  return out;
}

/* The launch of kernel/variant (of `entry`, when its row gives it its own):
 * every cuda row of it (those whose target `pick` takes, where given)
 * must launch the entry alike. (qmatmul's rows of sm_75 and of sm_80 and
 * newer differ in qmatmul_q8x_mm's shared memory: its stages, q8x_mma.cuh.) */
static bool read_launch(const char *kernel, const char *variant, launch *L,
                        const char *entry = NULL, bool (*pick)(const char *) = NULL) {
  size_t n = 0;
  json_t *want = NULL;
  gk_image_info first = {};
  gk_archive_count(archive, &n);
  for (size_t i = 0; i < n; i++) {
    gk_image_info im;
    gk_archive_image(archive, i, &im);
    if (strcmp(im.backend, "cuda") || strcmp(im.kernel, kernel) || strcmp(im.variant, variant) ||
        (pick && !pick(im.target)))
      continue;
    json_t *got = entry_launch(im.launch, entry);
    CHECK(got, "%s %s: launch of %s is not JSON: %s", kernel, variant, im.target, im.launch);
    if (!want) {
      want = got, first = im;
      continue;
    }
    CHECK(!got || json_equal(want, got),
          "%s %s: launch of %s%s%s differs from %s's (%s vs %s)", kernel, variant,
          entry ? entry : "", entry ? " on " : "", im.target, first.target, im.launch,
          first.launch);
    json_decref(got);
  }
  if (!want) {
    printf("FAIL: the archive has no cuda %s %s%s\n", kernel, variant,
           pick ? " for these targets" : "");
    failures++;
    return false;
  }
  json_decref(want);
  const bool ok = gk_launch_parse(&first, entry, &L->L) == GK_OK;
  CHECK(ok, "%s %s: launch '%s': %s", kernel, variant, first.launch, gk_last_error());
  return ok;
}

template <class F>
static void trampoline(void *f) {
  (*(F *)f)();
}

/* Launches body on the emulator with the grid libgk computes from `vars`
 * (integer parameters not named there are 0, pointers 0, floats 0.5), after
 * checking the row's parameter list against `params` (docs/kernels.md's
 * signature). With `small`, each grid count is cut to at most 2 (x) and 1
 * (y, z), as a device limit would clamp it: the blocks must loop over the
 * rest (docs/kernels.md, "Launching on GPUs"). `threads`, where not 0, is the
 * block's size instead of the row's (the attention kernels' wgmma image,
 * which takes blocks of 128 or 256). `shared`: the dynamic shared memory
 * the body takes on a GPU (the emulator's is static), which the row must
 * give, and no more than the 99 KB a block of sm_86, sm_89 and sm_120 may
 * take (sm_90a's rows could take 227, but none does); 0: the row gives none. */
template <class F>
static bool run(const char *what, const launch &L, const std::vector<std::string> &params,
                const std::map<std::string, long long> &vars, F body, bool small = false,
                unsigned threads = 0, size_t shared = 0) {
  static const char *const types[] = {"?", "ptr", "i64", "i32", "f32"};
  std::vector<std::string> got;
  std::vector<gk_arg> args;
  for (size_t i = 0; i < gk_launch_nparams(L.L); i++) {
    const char *name;
    gk_arg_type t;
    gk_launch_param(L.L, i, &name, &t);
    got.push_back(std::string(name) + ":" + types[t]);
    auto v = vars.find(name);
    const long long x = v == vars.end() ? 0 : v->second;
    args.push_back(t == GK_ARG_PTR   ? gk_arg_ptr(0)
                   : t == GK_ARG_I64 ? gk_arg_i64(x)
                   : t == GK_ARG_I32 ? gk_arg_i32((int32_t)x)
                                     : gk_arg_f32(0.5f));
  }
  CHECK(got == params, "%s: launch params differ from docs/kernels.md", what);
  gk_launch_dims d;
  gk_device_limits lim = {0, 1024, {0x7fffffff, 0x7fffffff, 0x7fffffff}};
  if (gk_launch_eval(L.L, &lim, args.data(), args.size(), &d) != GK_OK) {
    printf("FAIL: %s: %s\n", what, gk_last_error());
    failures++;
    return false;
  }
  if (shared == 0)
    CHECK(d.shared == 0, "%s: dynamic shared memory %u (the body uses none)", what, d.shared);
  else
    CHECK(d.shared >= shared && d.shared <= 101376,
          "%s: dynamic shared memory %u, where the body takes %zu (at most 101376)", what,
          d.shared, shared);
  CHECK(d.block[1] == 1 && d.block[2] == 1 && d.block[0] % GK_GROUP == 0 && d.block[0] <= 1024,
        "%s: block %u x %u x %u", what, d.block[0], d.block[1], d.block[2]);
  gk_emu_dim3 grid = {d.grid[0], d.grid[1], d.grid[2]}, block = {d.block[0], d.block[1], d.block[2]};
  if (threads) block.x = threads;
  unsigned *g[3] = {&grid.x, &grid.y, &grid.z};
  for (int k = 0; small && k < 3; k++)
    if (*g[k] > (k ? 1u : 2u)) *g[k] = k ? 1u : 2u;
  if (gk_emu_launch(grid, block, trampoline<F>, &body) != 0) {
    printf("FAIL: %s: the emulator stopped\n", what);
    failures++;
    return false;
  }
  return true;
}

/* ---- qmatmul ---------------------------------------------------------------- */

static void check_qmatmul(void) {
  const int before = failures;
  static const std::vector<std::string> params = {"x:ptr", "w:ptr", "y:ptr",
                                                  "m:i64", "n:i64", "k:i64"};
  /* m = 17 and n = 70: several tiles of x rows and of W rows, partly filled;
   * k = 288: a step of 8 blocks and one more; m = 260, n = 40: a whole
   * group of 32 tiles of x and one of 1, 2 tiles of W each (gk_qmatmul);
   * k = 9248 (289 blocks): at BITS 1 and 2, x in two chunks of shared memory at
   * m = 1 (256 blocks, then 33: a last step of one block) and the L2
   * prefetch on (qmatmul_blk.cuh); m = 1, n = 500: 16 tiles of W, which the
   * emulated GPU's 2 SMs (gk_emu_sms) take 4 a block at BITS 1 and 2
   * (gk_walk_rows_group; x copied at a block's first tile only), the last
   * tile 20 rows. */
  static const long long shapes[][3] = {{1, 19, 96},   {5, 10, 256}, {1, 3, 4128},
                                        {7, 9, 80},    {17, 70, 288}, {1, 70, 288},
                                        {260, 40, 32}, {1, 5, 9248},  {9, 6, 9248},
                                        {1, 500, 1056}};
  for (int bits : {1, 2, 4, 8}) {
    launch L;
    char variant[16];
    snprintf(variant, sizeof variant, "bits=%d", bits);
    if (!read_launch("qmatmul", variant, &L)) continue;
    for (auto &s : shapes) {
      const long long m = s[0], n = s[1], k = s[2];
      qref_rng r;
      qref_seed(&r, 1000 * bits + m + n + k);
      std::vector<unsigned char> w(qref_w_bytes(bits, n, k));
      float *x = (float *)aligned_alloc(64, (size_t)(m * k) * sizeof(float) + 64);
      std::vector<float> y(m * n + 8, NAN), y1(n + 8);
      std::vector<double> want(m * n), mag(m * n);
      qref_fill_x(&r, x, (size_t)(m * k));
      qref_fill_w(&r, bits, n, k, w.data());
      qref_matmul(bits, x, w.data(), m, n, k, want.data(), mag.data());
      char what[96];
      snprintf(what, sizeof what, "qmatmul bits=%d m=%lld n=%lld k=%lld", bits, m, n, k);
      float *yp = y.data();
      const void *wp = w.data();
      auto body = [&]() {
        switch (bits) {
        case 1: gk_qmatmul<1>(x, wp, yp, m, n, k); break;
        case 2: gk_qmatmul<2>(x, wp, yp, m, n, k); break;
        case 4: gk_qmatmul<4>(x, wp, yp, m, n, k); break;
        default: gk_qmatmul<8>(x, wp, yp, m, n, k); break;
        }
      };
      if (!run(what, L, params, {{"m", m}, {"n", n}, {"k", k}}, body)) continue;
      int bad = 0;
      for (long long i = 0; i < m * n && !bad; i++)
        if (!(fabs(y[i] - want[i]) <= 1e-5 * mag[i] + 1e-30)) {
          printf("FAIL: %s: y[%lld] = %.9g, expected %.9g (tolerance %.3g)\n", what, i, y[i],
                 want[i], 1e-5 * mag[i]);
          bad = 1;
        }
      for (int i = 0; i < 8 && !bad; i++)
        if (!std::isnan(y[m * n + i])) {
          printf("FAIL: %s: wrote past y\n", what);
          bad = 1;
        }
      /* A clamped grid gives the same bits. */
      std::vector<float> full = y;
      run(what, L, params, {{"m", m}, {"n", n}, {"k", k}}, body, true);
      if (!bad && memcmp(full.data(), y.data(), (size_t)(m * n) * sizeof(float)) != 0) {
        printf("FAIL: %s: a clamped grid gives other results\n", what);
        bad = 1;
      }
      /* Batch invariance: each row alone gives the same bits. */
      for (long long i = 0; i < m && !bad && m > 1; i++) {
        float *xi = x + i * k, *y1p = y1.data();
        auto one = [&]() {
          switch (bits) {
          case 1: gk_qmatmul<1>(xi, wp, y1p, 1, n, k); break;
          case 2: gk_qmatmul<2>(xi, wp, y1p, 1, n, k); break;
          case 4: gk_qmatmul<4>(xi, wp, y1p, 1, n, k); break;
          default: gk_qmatmul<8>(xi, wp, y1p, 1, n, k); break;
          }
        };
        run(what, L, params, {{"m", 1}, {"n", n}, {"k", k}}, one);
        if (memcmp(y1.data(), &y[i * n], (size_t)n * sizeof(float)) != 0) {
          printf("FAIL: %s: row %lld alone gives other bits than in the batch\n", what, i);
          bad = 1;
        }
      }
      failures += bad;
      free(x);
    }
  }
  SECTION_OK(before, "ok: qmatmul bits 1, 2, 4, 8 x %zu shapes, batch invariant\n",
         sizeof shapes / sizeof shapes[0]);
}

/* ---- qmatmul_q8x ------------------------------------------------------------ */

/* AMD's forms of dp4a.u32.s32 (gk_gpu.cuh) through v_dot4_i32_i8's twin:
 * the same sums on the bytes that break a wrong sign convention (0x7f,
 * 0x80, 0xff) and on pseudo-random words. The GPU checks the instruction. */
static void check_dp4a_forms(void) {
  static const uint32_t edge[] = {0u, 0xffffffffu, 0x80808080u, 0x7f7f7f7fu,
                                  0x01020304u, 0x80ff017fu, 0x0f0f0f0fu, 0x00ff0080u};
  uint32_t words[64];
  uint64_t z = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 64; i++) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    words[i] = i < 8 ? edge[i] : (uint32_t)(z >> 32);
  }
  int bad = 0;
  for (uint32_t a : words)
    for (uint32_t b : words) {
      const int c = (int)(a ^ (b >> 3)) / 4, want = gk_dp4a_us<8>(a, b, c);
      bad += gk_dp4a_us_sdot4<8>(a, b, c) != want;
      bad += gk_dp4a_us_sdot4<7>(a & 0x7f7f7f7fu, b, c) != gk_dp4a_us<7>(a & 0x7f7f7f7fu, b, c);
      bad += gk_dp4a_us_sdot4<1>(a & 0x01010101u, b, c) != gk_dp4a_us<1>(a & 0x01010101u, b, c);
    }
  CHECK(bad == 0, "dp4a.u32.s32 from v_dot4_i32_i8 (gk_dp4a_us_sdot4): %d of %d sums differ",
        bad, 3 * 64 * 64);
}

/* qmatmul_q8x_x's body for `bits`: x rounded into records at xq. */
static void q8x_round_x(int bits, const float *x, void *xq, long long m, long long k) {
  switch (bits) {
  case 1: gk_q8x_x<1>(x, xq, m, k); break;
  case 2: gk_q8x_x<2>(x, xq, m, k); break;
  case 4: gk_q8x_x<4>(x, xq, m, k); break;
  default: gk_q8x_x<8>(x, xq, m, k); break;
  }
}

/* The GPU's qmatmul_q8x gives the bits of tests/common's qref_q8x, the CPU
 * images' arithmetic, on the original layout, launched by its own row: as
 * sm_80 and newer run it (past 4 rows of x on int8 mma.sync, q8x_batch.cuh)
 * and as sm_75 and HIP do (q8x.cuh's dp4a tile for every m). And so does
 * qmatmul_q8x_rec on the records qmatmul_q8x_x rounds x into, launched by
 * their rows, on the same tiles. */
static void check_q8x(void) {
  const int before = failures;
  check_dp4a_forms();
  static const std::vector<std::string> params = {"x:ptr", "w:ptr", "y:ptr",
                                                  "m:i64", "n:i64", "k:i64"},
                                        rparams = {"xq:ptr", "w:ptr", "y:ptr",
                                                   "m:i64", "n:i64", "k:i64"},
                                        xparams = {"x:ptr", "xq:ptr", "m:i64", "k:i64"};
  /* The batch tile (m > 4 on sm_80 and newer) takes W whose rows are
   * 16-byte aligned (k a multiple of 128), else the 4-row tiles do. k =
   * 4224: a chunk of 128 blocks and 4 more (the batch tile's 17th stage,
   * in its first buffer); m = 6: a partial x tile; m = 17, k = 544: 17
   * blocks, rows not aligned: the 4-row tiles past 4 rows too; n = 70: a
   * second W tile of 6 rows; k = 4480: 140 blocks, a last stage of 4 in
   * the second buffer, m = 5: a pair's second row past m; m = 3: the tiles
   * of 4 rows, partial; m = 1 and 4 over 130 and 137 blocks: chunks,
   * partial at the end; m = 262, n = 70, k = 128: a whole group of 16
   * batch tiles and one of 1, 2 tiles of W each, one stage of 4 blocks; m
   * = 1, k = 8800: 275 blocks, two whole chunks (the next chunk's W loaded
   * across the rounding) and 19 blocks, lanes 0 .. 2 of each half two
   * steps (a pair), the others one; n = 9: every group but the first reads
   * row 8 again; m = 1, k = 17504: 547 blocks, x rounded twice (512
   * blocks, gk_q8x_vec's whole space, then 35), the ring of sets across
   * the second rounding and a last chunk of 35 blocks (lanes 0 .. 2 three
   * steps, the others two: fewer than a trip); m = 1, n = 520: 9 tiles of
   * W, which the emulated GPU's 2 SMs take 3 a block (gk_walk_rows_group;
   * x rounded at a block's first tile only), the last 8 rows; m = 20,
   * n = 70, k = 1024: 4 whole stages a batch tile (copied from the tile's
   * rows, gk_q8b_w_full), two tiles of x, the second 4 rows, and of W,
   * which a small grid walks with one block (the rows written anew each
   * tile); the fourth number, where
   * there is one, puts W that many bytes into its buffer (4: not 16-byte
   * aligned, the 4-row tiles'). */
  static const long long shapes[][4] = {{1, 37, 96},    {6, 35, 4224}, {1, 3, 32},
                                        {9, 5, 0},      {17, 70, 544}, {5, 20, 4480},
                                        {3, 9, 64},     {1, 70, 4160}, {4, 66, 4384},
                                        {262, 70, 128}, {1, 9, 8800},  {6, 35, 128, 4},
                                        {1, 5, 17504}, {1, 520, 1056},
                                        {20, 70, 1024}};
  for (int bits : {1, 2, 4, 8}) {
    launch L, Lx, Lr;
    char variant[16];
    snprintf(variant, sizeof variant, "bits=%d", bits);
    if (!read_launch("qmatmul", variant, &L, "qmatmul_q8x") ||
        !read_launch("qmatmul", variant, &Lx, "qmatmul_q8x_x") ||
        !read_launch("qmatmul", variant, &Lr, "qmatmul_q8x_rec"))
      continue;
    for (auto &s : shapes) {
      const long long m = s[0], n = s[1], k = s[2], woff = s[3], nb = k / 32;
      qref_rng r;
      qref_seed(&r, 7000 * bits + m + n + k);
      std::vector<unsigned char> wbuf(qref_w_bytes(bits, n, k) + 1 + woff);
      unsigned char *const w0 = wbuf.data() + woff;
      std::vector<float> x(m * k + 1), y(m * n + 8, NAN), want(m * n + 1);
      std::vector<double> bound(m * n + 1);
      qref_fill_x(&r, x.data(), (size_t)(m * k));
      /* Blocks that the rounding's shortcut (gk_q8x_round_half: no clamps
       * where they change nothing) must leave to the definition as
       * written: row m - 1's block 1 below 127 / FLT_MAX, one value 0
       * (127 / a is infinite, 0 * inv a NaN, which the clamps make -127),
       * and a NaN in row 0's block 0 (outside the definition, which asks
       * for finite x, but given its bits: the max drops it, the clamps
       * make it -127). */
      if (k >= 64) {
        float *b1 = &x[(m - 1) * k + 32];
        for (int t = 0; t < 32; t++) b1[t] *= 1e-39f;
        b1[8] = 0.0f;
      }
      if (k >= 32) x[5] = NAN;
      qref_fill_w(&r, bits, n, k, w0);
      if (qref_q8x(bits, x.data(), w0, m, n, k, want.data(), bound.data()) != 0) {
        CHECK(false, "out of memory for the q8x reference");
        return;
      }
      char what[96];
      snprintf(what, sizeof what, "qmatmul_q8x bits=%d m=%lld n=%lld k=%lld%s", bits, m, n, k,
               woff ? " (W 4 bytes into its buffer)" : "");
      const float *xp = x.data();
      float *yp = y.data();
      const void *wp = w0;
      /* x's records (qmatmul_q8x_x's), for the runs of qmatmul_q8x_rec. */
      std::vector<unsigned char> xq((size_t)(m * nb) * Q8X_REC + 16);
      void *xqp = xq.data();
      const gk_q8x_rec xr = {xq.data()};
      auto round = [&]() { q8x_round_x(bits, xp, xqp, m, k); };
      if (!run(what, Lx, xparams, {{"m", m}, {"k", k}}, round)) continue;
      /* Runs 0 .. 3 from x, 4 .. 7 from the records; each the tiles of
       * sm_80 and newer, then dp4a's alone, each on the row's grid and a
       * clamped one. */
      for (int run_case = 0; run_case < 8; run_case++) {
        const int sm80 = run_case % 4 < 2;
        const bool small = run_case % 2, rec = run_case >= 4;
        /* x as floats (xp) or as records (xr), the same tiles. */
        auto mul = [&](auto src) {
          switch (bits * 2 + sm80) {
          case 3: gk_qmatmul_q8x<1, 1>(src, wp, yp, m, n, k); break;
          case 2: gk_qmatmul_q8x<1, 0>(src, wp, yp, m, n, k); break;
          case 5: gk_qmatmul_q8x<2, 1>(src, wp, yp, m, n, k); break;
          case 4: gk_qmatmul_q8x<2, 0>(src, wp, yp, m, n, k); break;
          case 9: gk_qmatmul_q8x<4, 1>(src, wp, yp, m, n, k); break;
          case 8: gk_qmatmul_q8x<4, 0>(src, wp, yp, m, n, k); break;
          case 17: gk_qmatmul_q8x<8, 1>(src, wp, yp, m, n, k); break;
          default: gk_qmatmul_q8x<8, 0>(src, wp, yp, m, n, k); break;
          }
        };
        auto body = [&]() { mul(xp); };
        auto rbody = [&]() { mul(xr); };
        std::fill(y.begin(), y.end(), NAN);
        const std::map<std::string, long long> vars = {{"m", m}, {"n", n}, {"k", k}};
        if (!(rec ? run(what, Lr, rparams, vars, rbody, small)
                  : run(what, L, params, vars, body, small)))
          break;
        int bad = 0;
        for (long long i = 0; i < m * n && !bad; i++)
          if (memcmp(&y[i], &want[i], sizeof(float)) != 0) {
            printf("FAIL: %s%s%s%s: y[%lld] = %.9g, the q8x arithmetic gives %.9g\n", what,
                   rec ? " (qmatmul_q8x_rec, from qmatmul_q8x_x's records)" : "",
                   sm80 ? "" : " (dp4a only)", small ? " (clamped grid)" : "", i, y[i],
                   want[i]);
            bad = 1;
          }
        for (int i = 0; i < 8 && !bad; i++)
          if (!std::isnan(y[m * n + i])) {
            printf("FAIL: %s: wrote past y\n", what);
            bad = 1;
          }
        failures += bad;
      }
    }
  }
  SECTION_OK(before,
             "ok: qmatmul_q8x and qmatmul_q8x_x + _rec bits 1, 2, 4, 8 x %zu shapes, mma.sync "
             "and dp4a, the CPU's bits, any grid; dp4a's AMD form\n",
             sizeof shapes / sizeof shapes[0]);
}

/* ---- qmatmul_q8x_x + qmatmul_q8x_mm (int8 tensor cores) --------------------- */

/* The records of qmatmul_q8x_x hold qref_q8x_round's codes (in the image's
 * operand order), dx and sb bits; qmatmul_q8x_mm's y has qref_q8x_mm's
 * bits, whatever the grid, and stays within qref_q8x's bound of the exact
 * product. */
static void check_q8x_mm(void) {
  const int before = failures;
  static const std::vector<std::string> xparams = {"x:ptr", "xq:ptr", "m:i64", "k:i64"};
  static const std::vector<std::string> mparams = {"xq:ptr", "w:ptr", "y:ptr",
                                                   "m:i64",  "n:i64", "k:i64"};
  /* m = 70, n = 150: partial tiles of both; k = 96: a half stage at the
   * end; k = 31: no block, zeros; m = 1030, n = 130: a whole group of 8
   * tiles of x's rows and one of 1, 2 tiles of W each (gk_q8x_mm); m = 130,
   * n = 129, k = 160: a first tile inside both tensors, whose whole stages
   * (gk_q8m_load_full) copy every row as its own, then partial ones, whose
   * rows past m and n copy the last row. */
  static const long long shapes[][3] = {{70, 150, 96}, {3, 9, 288},    {1, 130, 64},
                                        {5, 3, 31},    {1030, 130, 32}, {130, 129, 160}};
  for (int bits : {1, 2, 4, 8}) {
    launch Lx, Lm2, Lm4;
    char variant[16];
    snprintf(variant, sizeof variant, "bits=%d", bits);
    /* sm_75's rows and compute_75's (2 stages in static shared memory) and
     * the others' (4, in dynamic shared memory: the row's `shared`). */
    auto sm75 = [](const char *t) { return !strcmp(t, "sm_75") || !strcmp(t, "compute_75"); };
    auto sm80 = [](const char *t) { return strcmp(t, "sm_75") && strcmp(t, "compute_75"); };
    if (!read_launch("qmatmul", variant, &Lx, "qmatmul_q8x_x") ||
        !read_launch("qmatmul", variant, &Lm2, "qmatmul_q8x_mm", sm75) ||
        !read_launch("qmatmul", variant, &Lm4, "qmatmul_q8x_mm", sm80))
      continue;
    for (auto &s : shapes) {
      const long long m = s[0], n = s[1], k = s[2], nb = k / 32;
      qref_rng r;
      qref_seed(&r, 9100 * bits + m + n + k);
      std::vector<unsigned char> w(qref_w_bytes(bits, n, k) + 1),
          xq((size_t)(m * nb) * Q8X_REC + 16, 0xee);
      std::vector<float> x(m * k + 1), y(m * n + 8, NAN), want(m * n + 1), q8(m * n + 1);
      std::vector<double> exact(m * n + 1), mag(m * n + 1), bound(m * n + 1);
      qref_fill_x(&r, x.data(), (size_t)(m * k));
      qref_fill_w(&r, bits, n, k, w.data());
      if (qref_q8x_mm(bits, x.data(), w.data(), m, n, k, want.data()) != 0 ||
          qref_q8x(bits, x.data(), w.data(), m, n, k, q8.data(), bound.data()) != 0) {
        CHECK(false, "out of memory for the q8x references");
        return;
      }
      qref_matmul(bits, x.data(), w.data(), m, n, k, exact.data(), mag.data());
      char what[112];
      snprintf(what, sizeof what, "qmatmul_q8x_x + _mm bits=%d m=%lld n=%lld k=%lld", bits, m,
               n, k);
      const float *xp = x.data();
      void *xqp = xq.data();
      float *yp = y.data();
      const void *wp = w.data();
      auto round = [&]() { q8x_round_x(bits, xp, xqp, m, k); };
      /* The tiles: 0, HIP's (GK_MMA_DIRECT, 2 stages); 1, mma.sync's on 2
       * stages (sm_75); 2, on 4 (sm_80 and newer). */
      int tile = 0;
      auto mul = [&]() {
        switch (bits * 4 + tile) {
        case 4: gk_q8x_mm<1, true, 2>(xqp, wp, yp, m, n, k); break;
        case 5: gk_q8x_mm<1, false, 2>(xqp, wp, yp, m, n, k); break;
        case 6: gk_q8x_mm<1, false, 4>(xqp, wp, yp, m, n, k); break;
        case 8: gk_q8x_mm<2, true, 2>(xqp, wp, yp, m, n, k); break;
        case 9: gk_q8x_mm<2, false, 2>(xqp, wp, yp, m, n, k); break;
        case 10: gk_q8x_mm<2, false, 4>(xqp, wp, yp, m, n, k); break;
        case 16: gk_q8x_mm<4, true, 2>(xqp, wp, yp, m, n, k); break;
        case 17: gk_q8x_mm<4, false, 2>(xqp, wp, yp, m, n, k); break;
        case 18: gk_q8x_mm<4, false, 4>(xqp, wp, yp, m, n, k); break;
        case 32: gk_q8x_mm<8, true, 2>(xqp, wp, yp, m, n, k); break;
        case 33: gk_q8x_mm<8, false, 2>(xqp, wp, yp, m, n, k); break;
        default: gk_q8x_mm<8, false, 4>(xqp, wp, yp, m, n, k); break;
        }
      };
      /* What the 4 stages take on a GPU (gk_q8m_at), which the rows of
       * sm_80 and newer must give. */
      const size_t shared4 = bits == 1   ? sizeof(gk_q8m_smem<1, 128, 4>)
                             : bits == 2 ? sizeof(gk_q8m_smem<2, 128, 4>)
                             : bits == 4 ? sizeof(gk_q8m_smem<4, 128, 4>)
                                         : sizeof(gk_q8m_smem<8, 128, 4>);
      const std::map<std::string, long long> vars = {{"m", m}, {"n", n}, {"k", k}};
      if (!run(what, Lx, xparams, vars, round)) continue;
      /* The records: codes where gk_q8x_pos puts them, dx, sb, zeros. */
      std::vector<int8_t> rq(nb * 32 + 1);
      std::vector<float> rdx(nb + 1), rsb(nb + 1);
      int bad = 0;
      for (long long i = 0; i < m && !bad; i++) {
        qref_q8x_round(x.data() + i * k, nb, rq.data(), rdx.data(), rsb.data());
        for (long long b = 0; b < nb && !bad; b++) {
          const unsigned char *rec = &xq[(size_t)(i * nb + b) * Q8X_REC];
          float f[4];
          memcpy(f, rec + 32, sizeof f);
          for (int t = 0; t < 32; t++) {
            const int at = bits == 1 ? gk_q8x_pos<1>(t) : bits == 2 ? gk_q8x_pos<2>(t)
                           : bits == 4 ? gk_q8x_pos<4>(t) : gk_q8x_pos<8>(t);
            bad |= (int8_t)rec[at] != rq[b * 32 + t];
          }
          bad |= memcmp(&f[0], &rdx[b], 4) != 0 || memcmp(&f[1], &rsb[b], 4) != 0 ||
                 f[2] != 0.0f || f[3] != 0.0f;
          if (bad) printf("FAIL: %s: record of row %lld block %lld differs\n", what, i, b);
        }
      }
      for (size_t i = (size_t)(m * nb) * Q8X_REC; i < xq.size() && !bad; i++)
        if (xq[i] != 0xee) printf("FAIL: %s: wrote past xq\n", what), bad = 1;
      static const char *const tiles[] = {" (HIP's tile)", " (sm_75's 2 stages)", ""};
      for (int tl : {0, 1, 2}) /* the mma tile's y last: the bound below */
        for (bool small : {false, true}) {
          tile = tl;
          std::string how = std::string(tiles[tl]) + (small ? " (clamped grid)" : "");
          std::fill(y.begin(), y.end(), NAN);
          if (bad || !run(what, tl == 2 ? Lm4 : Lm2, mparams, vars, mul, small, 0,
                          tl == 2 ? shared4 : 0))
            break;
          for (long long i = 0; i < m * n && !bad; i++)
            if (memcmp(&y[i], &want[i], sizeof(float)) != 0) {
              printf("FAIL: %s%s: y[%lld] = %.9g, qref_q8x_mm gives %.9g\n", what, how.c_str(),
                     i, y[i], want[i]);
              bad = 1;
            }
          for (int i = 0; i < 8 && !bad; i++)
            if (!std::isnan(y[m * n + i]))
              printf("FAIL: %s%s: wrote past y\n", what, how.c_str()), bad = 1;
        }
      for (long long i = 0; i < m * n && !bad; i++)
        if (!(fabs(y[i] - exact[i]) <= bound[i] + 1e-5 * mag[i] + 1e-30)) {
          printf("FAIL: %s: y[%lld] = %.9g, exact %.9g: beyond the int8 bound %.3g\n", what, i,
                 y[i], exact[i], bound[i]);
          bad = 1;
        }
      failures += bad;
    }
  }
  SECTION_OK(before, "ok: qmatmul_q8x_x + qmatmul_q8x_mm bits 1, 2, 4, 8 x %zu shapes, "
             "qref_q8x_mm's bits on mma.sync's tile (2 and 4 stages) and HIP's, any grid\n",
             sizeof shapes / sizeof shapes[0]);
}

/* ---- flash_attention ------------------------------------------------------- */

/* A zeroed workspace for the cross-block split of attention (docs/
 * kernels.md): counters for `units` (sequence, KV head) pairs, then slots
 * for the splits `keys` keys may take (one per 256), per unit. */
/* Whether h query heads over hk KV heads with sq rows each take the split
 * decode (FA_DECODE_ROWS packed rows a KV head at most), not the prefill. */
static bool fa_decode(long long h, long long hk, long long sq) {
  return h / hk * sq <= FA_DECODE_ROWS;
}

static std::vector<unsigned char> fa_workspace(long long units, long long keys, long long rows,
                                               int d) {
  return std::vector<unsigned char>(kref_attention_ws_bytes(units, keys, rows, d), 0);
}

/* A call leaves the counters of `units` as it found them, zero; with
 * `split`, it went through the slots (they are not all zero). */
static void fa_workspace_check(const char *what, const std::vector<unsigned char> &ws,
                               long long units, bool split) {
  const size_t cbytes = (size_t)(units * 4 + 15) / 16 * 16;
  for (size_t i = 0; i < (size_t)units * 4 && i + 4 <= ws.size(); i += 4) {
    unsigned c;
    memcpy(&c, &ws[i], 4);
    if (c != 0) {
      printf("FAIL: %s: workspace counter %zu left at %u\n", what, i / 4, c);
      failures++;
      return;
    }
  }
  bool used = false;
  for (size_t i = cbytes; i < ws.size() && !used; i++) used = ws[i] != 0;
  if (used != split) {
    printf("FAIL: %s: the split %s\n", what, split ? "did not run" : "ran");
    failures++;
  }
}

/* bf16 as sm_75's image takes it: the scalar FMA path (its Dt::half is 0
 * there, GK_BF16_MMA), which the emulator would not run otherwise. */
struct bf16_fma : gk_bf16 {
  enum { half = 0 };
};
/* f16 and bf16 with the prefill on wgmma (fa_wgmma.cuh), as an sm_90a
 * image built with -DGK_FA_WGMMA=1 takes them: through gk_wgmma.cuh's
 * twins here. */
struct f16_wg : gk_f16 {
  enum { wgmma = 1 };
};
struct bf16_wg : gk_bf16 {
  enum { wgmma = 1 };
};
/* The same with the warp-specialized schedule overlapped (GK_FA_WS_OVERLAP_ON's
 * images: blocks of 384 only). */
struct f16_wgo : gk_f16 {
  enum { wgmma = 1, ws_overlap = 1 };
};
struct bf16_wgo : gk_bf16 {
  enum { wgmma = 1, ws_overlap = 1 };
};
/* And with Q in shared memory, in longer tiles (-DGK_FA_WGMMA=4's images:
 * GK_FA_WS_OVERLAP_ON 2), with sm_90a's decode ring of 4 tiles a consumer
 * warpgroup (-DGK_FA_DEC_STAGES=4), as ci/gpu/prepare.sh builds them, and
 * those below. */
struct f16_wgq : gk_f16 {
  enum { wgmma = 1, ws_overlap = 2, dec_stages = 4 };
};
struct bf16_wgq : gk_bf16 {
  enum { wgmma = 1, ws_overlap = 2, dec_stages = 4 };
};
/* And with its producer loading by TMA (-DGK_FA_TMA=1 beside it:
 * GK_FA_TMA_ON, gk_tma.cuh's twins here). */
struct f16_wgt : gk_f16 {
  enum { wgmma = 1, ws_overlap = 2, tma = 1, dec_stages = 4 };
};
struct bf16_wgt : gk_bf16 {
  enum { wgmma = 1, ws_overlap = 2, tma = 1, dec_stages = 4 };
};

/* f16 as 8's image with parts of its prefill left out, a diagnosis
 * (-DGK_FA_ABLATE: ci/gpu's wsnosoft.gkfat and wsbare.gkfat): no softmax
 * (1), and no copies of K and V either (3). */
struct f16_wgn : gk_f16 {
  enum { wgmma = 1, ws_overlap = 2, ablate = 1, dec_stages = 4 };
};
struct f16_wgb : gk_f16 {
  enum { wgmma = 1, ws_overlap = 2, ablate = 3, dec_stages = 4 };
};

/* f16 and bf16 as ROCm's images take them: the tensor-core schedule with
 * its products in dot products of shared memory (GK_MMA_DIRECT). */
struct f16_dir : gk_f16 {
  enum { direct = 1 };
};
struct bf16_dir : gk_bf16 {
  enum { direct = 1 };
};

/* f16 and bf16 as sm_90a's image takes them: the head_dim-128 prefill's
 * tiles of 64 keys (Q in shared memory: -DGK_FA_QS_KEYS=64) and a decode's
 * ring of 4 tiles (-DGK_FA_DEC_STAGES=4), in its 64 KB. */
struct f16_k64 : gk_f16 {
  enum { qs_keys = 64, dec_stages = 4 };
};
struct bf16_k64 : gk_bf16 {
  enum { qs_keys = 64, dec_stages = 4 };
};
/* A decode's ring of 6 tiles (-DGK_FA_DEC_STAGES=6: ci/gpu's dec6.gkfat). */
struct f16_d6 : gk_f16 {
  enum { dec_stages = 6 };
};
struct bf16_d6 : gk_bf16 {
  enum { dec_stages = 6 };
};

/* Calls f(Dt(), C, D) with the element tag of dtype dt on `path` (0: the
 * default, 1: sm_75's scalar path, 2: wgmma, 3 and 4: wgmma on blocks of
 * 256 and 384 threads, 6: 384 overlapped, 8: overlapped with Q in shared
 * memory, 10: ROCm's dot products, 11: sm_90a's image, 64-key tiles of
 * the prefill with Q in shared memory and a decode's ring of 4 tiles, 12:
 * a decode's ring of 6, 13: 8 with its producer loading by TMA, 16 and
 * 17: 8 without softmax, and without copies too (f16), f32 as ever) and the
 * compile-time causal flag and head_dim (std::integral_constant). */
template <class F>
static void fa_variant(kref_dtype dt, int path, int causal, int d, F f) {
  auto dims = [&](auto t) {
    using std::integral_constant;
    typedef integral_constant<int, 0> c0;
    typedef integral_constant<int, 1> c1;
    if (d == 64)
      causal ? f(t, c1(), integral_constant<int, 64>()) : f(t, c0(), integral_constant<int, 64>());
    else
      causal ? f(t, c1(), integral_constant<int, 128>()) : f(t, c0(), integral_constant<int, 128>());
  };
  if (dt == KREF_F16)
    path == 17   ? dims(f16_wgb())
    : path == 16 ? dims(f16_wgn())
    : path >= 13 ? dims(f16_wgt()) /* 15: with no slot free */
    : path == 12 ? dims(f16_d6())
    : path == 11 ? dims(f16_k64())
    : path == 10 ? dims(f16_dir())
    : path >= 8  ? dims(f16_wgq())
    : path >= 6  ? dims(f16_wgo())
    : path >= 2  ? dims(f16_wg())
                 : dims(gk_f16());
  else if (dt == KREF_BF16)
    path >= 13   ? dims(bf16_wgt())
    : path == 12 ? dims(bf16_d6())
    : path == 11 ? dims(bf16_k64())
    : path == 10 ? dims(bf16_dir())
    : path >= 8  ? dims(bf16_wgq())
    : path >= 6  ? dims(bf16_wgo())
    : path >= 2  ? dims(bf16_wg())
    : path == 1  ? dims(bf16_fma())
                 : dims(gk_bf16());
  else
    dims(gk_f32());
}

static const char *fa_path_name(int path) {
  static const char *const names[] = {"", " (sm_75's scalar path)", " (wgmma)", " (256 threads)",
                                      " (384 threads)", " (384 threads, last first)",
                                      " (384 threads, overlapped)",
                                      " (384 threads, overlapped, last first)",
                                      " (384 threads, overlapped, Q in shared memory)",
                                      " (384 threads, overlapped, Q in shared memory, last first)",
                                      " (ROCm's dot products)",
                                      " (sm_90a: 64-key tiles, 4-stage decode ring)",
                                      " (6-stage decode ring)",
                                      " (384 threads, Q in shared memory, TMA)",
                                      " (384 threads, Q in shared memory, TMA, last first)",
                                      " (384 threads, Q in shared memory, TMA, no slot free)",
                                      " (384 threads, Q in shared memory, no softmax)",
                                      " (384 threads, Q in shared memory, no softmax, no copies)"};
  return names[path];
}

/* Path 16's o (-DGK_FA_ABLATE=1: no softmax, a diagnosis): each row 1/4
 * of the sum, over the keys of the tiles its consumer multiplies, of the
 * scores S = q k (unscaled, unmasked) rounded to f16 times V (the tiles a
 * consumer of 64 rows multiplies: all causal ones of 128 keys that start
 * before its last row's limit). Within the rounding of S to f16 (2^-11)
 * and of o, and f32's sums. Returns the failures. */
static int fa_nosoft_check(const char *what, int causal, int d, const unsigned char *q,
                           const unsigned char *k, const unsigned char *v,
                           const unsigned char *o, long long h, long long hk, long long sq,
                           long long skv) {
  unsigned char p16[2];
  std::vector<double> acc((size_t)d), mag((size_t)d);
  for (long long hh = 0; hh < h; hh++)
    for (long long i = 0; i < sq; i++) {
      const long long kh = hh / (h / hk), r0 = i / 64 * 64;
      long long ke = skv;
      if (causal) {
        const long long last = std::min(r0 + 64, sq) - 1,
                        mine = std::max(0LL, std::min(skv, last + skv - sq + 1));
        ke = std::min(skv, (mine + 127) / 128 * 128);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      for (long long j = 0; j < ke; j++) {
        double sc = 0.0;
        for (int e = 0; e < d; e++)
          sc += kref_get(KREF_F16, q, (size_t)((hh * sq + i) * d + e)) *
                kref_get(KREF_F16, k, (size_t)((kh * skv + j) * d + e));
        kref_set(KREF_F16, p16, 0, sc);
        const double pv = kref_get(KREF_F16, p16, 0);
        for (int e = 0; e < d; e++) {
          const double x = pv * kref_get(KREF_F16, v, (size_t)((kh * skv + j) * d + e));
          acc[(size_t)e] += x;
          mag[(size_t)e] += fabs(x);
        }
      }
      for (int e = 0; e < d; e++) {
        const size_t at = (size_t)((hh * sq + i) * d + e);
        const double want = 0.25 * acc[(size_t)e], got = kref_get(KREF_F16, o, at);
        /* S in f32 and in double may round to neighbouring f16s (2^-10
         * of P at most, each key): twice that, and o's own rounding */
        const double tol = 0.25 * mag[(size_t)e] * 0x1p-9 + fabs(want) * 0x1p-10 + 1e-6;
        if (!(fabs(got - want) <= tol)) {
          printf("FAIL: %s: o[%lld][%lld][%d] = %g, not 1/4 of the products' sum %g (+- %g)\n",
                 what, hh, i, e, got, want, tol);
          return 1;
        }
      }
    }
  return 0;
}

/* gk_fa_lpt_item: every (head, query block) of a causal prefill once, for
 * any grid, heaviest first within a section, sections of whole KV heads'
 * groups in head order, the last holding the heads left. */
static void check_lpt_order(void) {
  const int before = failures;
  long cases = 0;
  for (int64_t hk = 1; hk <= 5; hk++)
    for (int64_t g : {1, 4})
      for (int64_t nqb = 1; nqb <= 9; nqb++)
        for (int64_t skv : {0, 8, 20, 32, 5000}) { /* 16 KB: all, 8, 3, 2, 1 KV heads */
          const int64_t nh = hk * g, sec = gk_fa_section_heads<64, 2>(nh, hk, skv);
          const int64_t fit = skv ? (16 << 10) / (2 * skv * 64 * 2) : hk; /* KV heads */
          const int64_t want = g * std::min(hk, std::max<int64_t>(1, fit));
          if (sec != want) {
            printf("FAIL: gk_fa_section_heads(%lld, %lld, %lld) = %lld, not %lld\n",
                   (long long)nh, (long long)hk, (long long)skv, (long long)sec,
                   (long long)want);
            failures++;
          }
          for (int64_t blocks : {1, 3, 7, 1000}) {
            std::vector<int> seen((size_t)(nh * nqb), 0);
            bool ok = true;
            for (int64_t first = 0; first < blocks && ok; first++) {
              int64_t last_h0 = -1, last_qb = nqb;
              for (int64_t t = first; t < nh * nqb; t += blocks) {
                const gk_fa_qblock b = gk_fa_lpt_item(t, nqb, nh, sec);
                if (b.h < 0 || b.h >= nh || b.qb < 0 || b.qb >= nqb) {
                  ok = false;
                  break;
                }
                seen[(size_t)(b.h * nqb + b.qb)]++;
                /* one walker's items: sections in order, in a section its
                 * query blocks never heavier than the one before */
                const int64_t h0 = b.h / sec * sec;
                if (h0 < last_h0 || (h0 == last_h0 && b.qb > last_qb)) ok = false;
                last_h0 = h0, last_qb = b.qb;
              }
            }
            cases++;
            if (!ok || std::count(seen.begin(), seen.end(), 1) != (long)seen.size()) {
              printf("FAIL: gk_fa_lpt_item: heads %lld (sections of %lld), %lld query blocks, "
                     "%lld blocks: not every item once in order\n",
                     (long long)nh, (long long)sec, (long long)nqb, (long long)blocks);
              failures++;
            }
          }
        }
  /* The whole order of 2 sections (2 KV heads' 8 heads, sections of 4, 3
   * query blocks): each section's heads at query block 2, then 1, then 0. */
  static const int want[][2] = {{0, 2}, {1, 2}, {2, 2}, {3, 2}, {0, 1}, {1, 1}, {2, 1}, {3, 1},
                                {0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 2}, {5, 2}, {6, 2}, {7, 2},
                                {4, 1}, {5, 1}, {6, 1}, {7, 1}, {4, 0}, {5, 0}, {6, 0}, {7, 0}};
  for (int t = 0; t < 24; t++) {
    const gk_fa_qblock b = gk_fa_lpt_item(t, 3, 8, 4);
    if (b.h != want[t][0] || b.qb != want[t][1]) {
      printf("FAIL: gk_fa_lpt_item(%d) = head %lld block %lld, not %d %d\n", t,
             (long long)b.h, (long long)b.qb, want[t][0], want[t][1]);
      failures++;
    }
  }
  if (failures == before) printf("ok: a causal prefill's order, %ld walks\n", cases);
}

static void check_attention(void) {
  const int before = failures;
  check_lpt_order();
  static const std::vector<std::string> params = {
      "q:ptr",  "k:ptr",   "v:ptr",   "o:ptr",    "n_heads:i64",
      "n_kv_heads:i64", "sq:i64", "skv:i64", "scale:f32", "ws:ptr", "ws_bytes:i64"};
  struct shape {
    long long h, hk, sq, skv;
    double scale_mul;
    bool one = false; /* f16, head_dim 128, not causal, the default path only */
    bool frags = false; /* a block of fragments: the mma.sync paths (0, 10 to 12) and 8, 9 */
  };
  static const shape shapes[] = {
      {2, 1, 1, 70, 1.0},  /* decode with a KV cache, GQA */
      {4, 2, 20, 37, 1.0}, /* two key tiles, partial */
      {2, 1, 33, 33, 8.0}, /* peaked, three query blocks */
      {2, 2, 6, 3, 1.0},   /* sq > skv: causal rows see no key */
      {2, 2, 3, 0, 1.0},   /* no keys: zeros */
      /* 3 query blocks of 64 rows, 2 of 128 (the second partial: every
       * group's rows of the mma prefill at head_dim 64), 2 or 3 key tiles;
       * causal: the first 70 rows see no key, and the walk crosses two
       * sections of 2 heads (a KV head's 70 keys are past GK_FA_L2_BYTES
       * here), the heaviest query block of each head first */
      {4, 2, 140, 70, 2.0},
      {8, 2, 4, 200, 1.0},  /* speculative decode: 4 heads x 4 rows fill a fragment */
      /* 4 heads x 3 rows: a lane's row g + 8 is an earlier query than its
       * row g (10 % 3 < 2), so a step the first may see whole (200 keys: the
       * last step ends at skv) is masked for the second */
      {8, 2, 3, 200, 1.0},
      /* speculative decode of 12 tokens: 4 heads x 12 rows, 3 fragments of
       * 16 (a unit of blocks each), 5 splits of a KV head, merged in two
       * levels (gk_fa_merge_p: groups of 2, 2 and 1 pieces) */
      {8, 2, 12, 1100, 1.0},
      {4, 1, 1, 300, 4.0},  /* decode, 4 heads on one KV head, peaked, 2 splits */
      /* speculative decode, 5 splits of a KV head: 2 rows a group, merged
       * in two levels */
      {8, 2, 2, 1100, 1.0},
      /* a prefill over 7 (head_dim 64) or 13 (128) key tiles: the stages'
       * ring wraps, and the single buffers are reused 13 times (2 x 40
       * rows: past a decode's 64); 3 tiles of the widest, 176 and 192 keys */
      {2, 1, 40, 400, 1.0},
      /* a decode of 33 splits: the last block reads each row's max over more
       * slots than a group has lanes */
      {4, 1, 1, 8448, 1.0, true},
      /* logits in the hundreds (scale * log2(e) > 100): exp2 overflows
       * unless each row's max is taken and subtracted in the scaled domain,
       * where the softmax's fast path scales the raw max once */
      {2, 1, 40, 100, 300.0},
      /* causal: a 128-row block whose first 64 rows see one 64-key tile and
       * the last 64 two, so a schedule that splits the block's rows (two
       * warpgroups, wgmma) skips a tile for the first half alone */
      {2, 1, 130, 130, 1.0},
      /* speculative decodes whose fragments share a block on mma.sync
       * (gk_fa_mma_decode's FB 4): 4 x 6 rows, 2 fragments (2 groups with
       * no rows), 3 splits; 4 x 16 rows, all 4 fragments, 2 splits */
      {4, 1, 6, 520, 1.0, false, true},
      {8, 2, 16, 300, 1.0, false, true},
  };
  /* GK_EMU_QUICK (the sanitizer stage: ASan slows the fibers several
   * times): the shapes marked here, once each, and the other paths at
   * head_dim 64 only; every variant still runs. */
  static const bool in_quick[] = {true,  true,  false, true, true,  true,  false, false, true,
                                  true,  false, false, false, true, false, false, true};
  static_assert(sizeof in_quick == sizeof shapes / sizeof shapes[0], "a mark a shape");
  const bool quick = getenv("GK_EMU_QUICK") != nullptr;
  check_banks("before flash_attention");
  for (int causal = 0; causal <= 1; causal++)
    for (kref_dtype dt : KREF_DTYPES)
      for (int path : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
      for (int d : {64, 128}) {
        /* Path 0: the default. 1: bf16 on the scalar path that sm_75's
         * image runs (no bf16 mma on Turing). 2: f16 and bf16 prefill on
         * wgmma. 3: the same on blocks of 256 threads: a prefill's two
         * warpgroups share each tile, everything else is the first
         * warpgroup's while the second skips it (f32's scalar path too).
         * 4: blocks of 384, the warp-specialized image's: a producer
         * warpgroup feeds the two through named barriers. 5: the same with
         * the emulator running the last threads first (gk_emu_order): the
         * producer as far ahead of the consumers as the barriers let it,
         * where 4 has the consumers run ahead. 6 and 7: 4 and 5 with each
         * consumer's S and P V overlapped (the image of -DGK_FA_WGMMA=3).
         * 8 and 9: the same with Q in shared memory, 128-key tiles causal
         * and 176 not, 192 at head_dim 64 (-DGK_FA_WGMMA=4). 10: f16 and
         * bf16 as ROCm runs them, the tensor-core schedule in dot products
         * (GK_MMA_DIRECT). 11: the head_dim-128 prefill with Q in shared
         * memory on 64-key tiles (-DGK_FA_QS_KEYS=64) and decodes through a
         * ring of 4 tiles (-DGK_FA_DEC_STAGES=4): sm_90a's image (f16 and
         * bf16; at head_dim 64 only the decodes differ). 12: decodes
         * through a ring of 6 tiles (ci/gpu's dec6.gkfat, whose launch
         * row prepare.sh writes: checked against the other targets'). 13
         * and 14: 8 and 9 with the producer loading K and V by TMA
         * (-DGK_FA_TMA=1: ci/gpu's wgmma5t.gkfat), its maps built in a
         * slot and its stages' mbarriers waited for by the consumers. 15:
         * 13 with every slot of the SM taken (gk_tma_claim finds none):
         * the TMA image's cp.async path, head_dim 64. 16 and 17: 8 with
         * parts of its prefill left out, a diagnosis (-DGK_FA_ABLATE=1
         * and 3: ci/gpu's wsnosoft.gkfat and wsbare.gkfat), f16: without
         * softmax its o is checked against its own reference
         * (fa_nosoft_check); without copies too, the tensor cores read
         * whatever the stages hold, so only that it ran, with its barriers
         * and turns, and wrote within o. */
        const bool ws384 = (path >= 4 && path < 10) || path >= 13;
        const bool ablate = path >= 16;
        if (path == 15 && d != 64) continue;
        if (ablate && dt != KREF_F16) continue;
        const bool fma = path == 1, wide = (path >= 3 && path < 10) || path >= 13,
                   last_first = path == 5 || path == 7 || path == 9 || path == 14;
        if (last_first && quick) continue;
        if ((fma && dt != KREF_BF16) || (path == 2 && dt == KREF_F32)) continue;
        /* f32's blocks of 384: paths 4 to 7; it has no mma to take apart (10) */
        if (path >= 8 && dt == KREF_F32) continue;
        if (quick && path != 0 && d != 64) continue;
        char variant[64];
        snprintf(variant, sizeof variant, "causal=%d,dtype=%s,head_dim=%d", causal,
                 kref_dtype_name(dt), d);
        /* Path 11 is the sm_90a image's (recipes/flash_attention.lua: its
         * own section, 64 KB of dynamic shared memory); the others are
         * checked against the other targets' rows. */
        auto is_sm90a = [](const char *t) { return !strcmp(t, "sm_90a"); };
        auto not_sm90a = [](const char *t) { return strcmp(t, "sm_90a") != 0; };
        launch L;
        if (!read_launch("flash_attention", variant, &L, NULL,
                         path == 11 ? +is_sm90a : +not_sm90a))
          continue;
        for (const shape &s : shapes) {
          /* A decode never takes the prefill on wgmma; blocks of 256 take
           * it on the first warpgroup. */
          /* 11 at head_dim 64 and 12: only the decodes differ (f16's: the ring
           * does not depend on the element type, and cuda.emu's time is CI's) */
          const bool dec = fa_decode(s.h, s.hk, s.sq);
          if ((path == 2 || path >= 13) && dec) continue; /* 13, 14: as 8, 9's decodes */
          if (((path == 11 && d == 64) || path == 12) && (!dec || dt != KREF_F16)) continue;
          if (quick && !in_quick[&s - shapes]) continue;
          if (s.one && (dt != KREF_F16 || d != 128 || causal || path != 0)) continue;
          /* a block a fragment there (8 and 9: the fragments share one, as
           * on mma.sync; 13 to 15 run no decode) */
          if (s.frags && ((path >= 1 && path < 8) || path >= 13)) continue;
          const size_t es = kref_dtype_size(dt), qn = (size_t)(s.h * s.sq * d),
                       kn = (size_t)(s.hk * s.skv * d);
          std::vector<unsigned char> q(qn * es + 1), k(kn * es + 1), v(kn * es + 1),
              want(qn * es + 1), o((qn + 64) * es, 0xff);
          qref_rng r;
          qref_seed(&r, 77 + s.sq + s.skv + d);
          kref_fill(&r, dt, q.data(), qn, -1.0, 1.0);
          kref_fill(&r, dt, k.data(), kn, -1.0, 1.0);
          kref_fill(&r, dt, v.data(), kn, -1.0, 1.0);
          const float scale = (float)(s.scale_mul / sqrt((double)d));
          ref_flash_attention(causal, dt, d, q.data(), k.data(), v.data(), want.data(), s.h,
                              s.hk, s.sq, s.skv, scale);
          char what[160];
          snprintf(what, sizeof what, "flash_attention %s%s h=%lld kvh=%lld sq=%lld skv=%lld",
                   variant, fa_path_name(path), s.h, s.hk,
                   s.sq, s.skv);
          const void *qp = q.data(), *kp = k.data(), *vp = v.data();
          void *op = o.data();
          /* The workspace for every split this shape may take, and more. */
          std::vector<unsigned char> wsv = fa_workspace(s.hk, s.skv, s.h / s.hk * s.sq, d);
          void *wsp = wsv.data();
          long long ws_bytes = (long long)wsv.size();
          auto body = [&]() {
            fa_variant(dt, path, causal, d, [&](auto t, auto c, auto dd) {
              gk_flash_attention<decltype(c)::value, decltype(t), decltype(dd)::value>(
                  qp, kp, vp, op, s.h, s.hk, s.sq, s.skv, scale, wsp, ws_bytes);
            });
          };
          const std::map<std::string, long long> vars = {
              {"n_heads", s.h}, {"n_kv_heads", s.hk}, {"sq", s.sq}, {"skv", s.skv}};
          const unsigned threads = ws384 ? 384 : wide ? 256 : 0;
          /* sm_90a's: the head_dim-128 prefill's Q and 64-key tiles
           * (gk_fa_smem's qs), a decode's ring of 4 */
          const size_t shared =
              path != 11 ? 0
              : d == 64  ? sizeof(gk_fa_dsmem<64, 4>)
                         : std::max(sizeof(gk_fa_smem<128>::qs), sizeof(gk_fa_dsmem<128, 4>));
          gk_emu_order(last_first);
          for (unsigned &slot : gk_tma_owner) slot = path == 15; /* 15: none free */
          const bool ran = run(what, L, params, vars, body, false, threads, shared);
          gk_emu_order(0);
          /* Every slot a block took is given back (gk_fa_tma_end). */
          const int kept = (int)std::count(std::begin(gk_tma_owner), std::end(gk_tma_owner),
                                           1u);
          if (kept != (path == 15 ? GK_TMA_SMS * GK_TMA_SLOTS : 0)) {
            printf("FAIL: %s: %d TMA slots taken after the launch\n", what, kept);
            failures++;
          }
          for (unsigned &slot : gk_tma_owner) slot = path == 15;
          if (!ran) continue;
          if (path == 16)
            failures += fa_nosoft_check(what, causal, d, q.data(), k.data(), v.data(), o.data(),
                                        s.h, s.hk, s.sq, s.skv);
          /* kref's error model; f16 and bf16 run on tensor cores, with p
           * rounded to their type. */
          const bool mma = dt != KREF_F32 && !fma;
          double vmax = 0.0, atol, rtol;
          for (size_t i = 0; i < kn; i++) vmax = fmax(vmax, fabs(kref_get(dt, v.data(), i)));
          kref_attention_tolerance(dt, d, s.scale_mul, s.skv, vmax, mma, &atol, &rtol);
          if (!ablate)
            failures += kref_check(what, dt, o.data(), want.data(), (int64_t)qn, atol, rtol, NULL);
          /* f16 and bf16 decodes over more than 256 keys split across blocks. */
          const bool split = mma && fa_decode(s.h, s.hk, s.sq) && s.skv > 256;
          fa_workspace_check(what, wsv, s.hk, split);
          /* The clamped grid; on blocks of 256 and 384 with the threads in
           * turn (GK_EMU_CYCLIC) where the first or last did not run ahead:
           * each warpgroup that walks a decode a block of its own, which a
           * shared stage or barrier between them would break. */
          std::vector<unsigned char> full = o;
          gk_emu_order(last_first ? 1 : threads ? GK_EMU_CYCLIC : 0);
          if (!quick) run(what, L, params, vars, body, true, threads, shared);
          gk_emu_order(0);
          if (o != full && path != 17) {
            printf("FAIL: %s: a clamped grid gives other results\n", what);
            failures++;
          }
          fa_workspace_check(what, wsv, s.hk, split);
          /* No workspace, and one for 2 splits: no split, or fewer; the same
           * error model. The split does not depend on the element type:
           * checked on f16 and f32 (the emulator's time is CI's). */
          for (long long units : {0LL, 2LL}) {
            if (path != 0 || dt == KREF_BF16 || quick || s.one) break;
            std::vector<unsigned char> small =
                fa_workspace(s.hk, units * 256 - 255, s.h / s.hk * s.sq, d);
            wsp = units ? small.data() : nullptr;
            ws_bytes = units ? (long long)small.size() : 0;
            char what2[200];
            snprintf(what2, sizeof what2, "%s, workspace for %lld splits", what, units);
            run(what2, L, params, vars, body, true);
            failures += kref_check(what2, dt, o.data(), want.data(), (int64_t)qn, atol, rtol,
                                   NULL);
            fa_workspace_check(what2, small, s.hk, split && units);
          }
          for (size_t i = qn * es; i < o.size(); i++)
            if (o[i] != 0xff) {
              printf("FAIL: %s: wrote past o\n", what);
              failures++;
              break;
            }
        }
      }
  check_banks("flash_attention");
  SECTION_OK(before, "ok: flash_attention 12 variants (bf16 also on sm_75's path, f16 and bf16 "
                     "also on wgmma, and all on blocks of 256 and 384, the last overlapped "
                     "or not, with Q in registers or shared memory, loaded by cp.async or "
                     "TMA (or its image's cp.async where no slot is free), in both orders; "
                     "f16 and "
                     "bf16 also in ROCm's dot products, on sm_90a's 64-key tiles at head_dim "
                     "128 but in quick runs, and decodes through rings of 4 and 6 tiles; f16's "
                     "overlapped prefill without softmax and copies, a diagnosis) x "
                     "%zu shapes%s\n",
             quick ? (size_t)std::count(std::begin(in_quick), std::end(in_quick), true)
                   : sizeof shapes / sizeof shapes[0],
             quick ? " (GK_EMU_QUICK, once each)" : "");
}

/* ---- paged_attention, kv_append --------------------------------------------- */

/* Calls f(Dt(), D, P) with the element type's tag and the compile-time head_dim
 * and page (std::integral_constant) of a paged variant. */
template <class F>
static void paged_variant(kref_dtype dt, int d, int page, int path, F f) {
  auto dims = [&](auto t) {
    using std::integral_constant;
    if (d == 64)
      page == 16 ? f(t, integral_constant<int, 64>(), integral_constant<int, 16>())
                 : f(t, integral_constant<int, 64>(), integral_constant<int, 64>());
    else
      page == 16 ? f(t, integral_constant<int, 128>(), integral_constant<int, 16>())
                 : f(t, integral_constant<int, 128>(), integral_constant<int, 64>());
  };
  if (dt == KREF_F16)
    path == 4   ? dims(f16_d6())
    : path == 3 ? dims(f16_dir())
    : path >= 1 ? dims(f16_wg())
                : dims(gk_f16());
  else if (dt == KREF_BF16)
    path == 4   ? dims(bf16_d6())
    : path == 3 ? dims(bf16_dir())
    : path >= 1 ? dims(bf16_wg())
                : dims(gk_bf16());
  else
    dims(gk_f32());
}

/* The GPU bodies against tests/common's references on a batch that mixes
 * decode-sized groups, prefill chunks, lengths 0 and below sq, and invalid
 * sequences (NaN rows, nothing appended) between valid ones, pages
 * scattered over the pool in random order. */
static void check_paged(void) {
  const int before = failures;
  static const std::vector<std::string> pa_params = {
      "q:ptr", "k_pool:ptr", "v_pool:ptr", "block_table:ptr", "seq_lens:ptr", "o:ptr",
      "n_seqs:i64", "n_heads:i64", "n_kv_heads:i64", "sq:i64", "max_pages:i64",
      "n_pages:i64", "scale:f32", "ws:ptr", "ws_bytes:i64"};
  static const std::vector<std::string> kv_params = {
      "k_new:ptr", "v_new:ptr", "k_pool:ptr", "v_pool:ptr", "block_table:ptr",
      "seq_lens:ptr", "n_seqs:i64", "n_kv_heads:i64", "sq:i64", "max_pages:i64",
      "n_pages:i64"};
  struct pcase {
    long long n_seqs, h, hk, sq;
    int32_t lens[4];
    kref_paged_kind kind[4];
  };
  static const pcase cases[] = {
      /* decode: 4 heads over 1 KV head (one fragment), lengths 1, 0, 600
       * (3 splits across blocks) */
      {3, 4, 1, 1, {1, 0, 600}, {KREF_PAGED_OK, KREF_PAGED_OK, KREF_PAGED_OK}},
      /* prefill chunks of 40 (80 rows a KV head: past a decode's 64), one
       * shorter than sq, an invalid sequence between valid ones; 230 keys: 4
       * or 8 tiles, so that the stages' ring wraps */
      {3, 2, 1, 40, {230, 7, 40},
       {KREF_PAGED_OK, KREF_PAGED_OK, KREF_PAGED_PAGE_PAST_POOL}},
      /* speculative decode of 8 tokens: 4 heads x 8 rows, two fragments of
       * 16; lengths 1100 (5 splits, each 2 slots, merged in two levels) and 9 */
      {2, 4, 1, 8, {1100, 9}, {KREF_PAGED_OK, KREF_PAGED_OK}},
  };
  for (kref_dtype dt : KREF_DTYPES)
    /* the prefill on wgmma (f16_wg) too, on 128 or 256 threads (paths 1,
     * 2), ROCm's images' products (path 3, f16_dir: GK_MMA_DIRECT), and
     * decodes through a ring of 6 tiles (path 4, f16_d6: ci/gpu's dec6.gkfat) */
    for (int path : {0, 1, 2, 3, 4})
    for (int d : {64, 128})
      for (int page : {16, 64}) {
        const bool wg = path == 1 || path == 2, wide = path == 2;
        if ((path == 1 || path >= 3) && dt == KREF_F32) continue;
        if (wide && page == 16) continue;
        char variant[64];
        snprintf(variant, sizeof variant, "dtype=%s,head_dim=%d,page=%d", kref_dtype_name(dt),
                 d, page);
        launch Lp, Lk;
        if (!read_launch("paged_attention", variant, &Lp) ||
            !read_launch("kv_append", variant, &Lk))
          continue;
        for (const pcase &c : cases) {
          /* wgmma is the prefill's: its batch, on one page size; on blocks
           * of 256 both batches (a decode is the first warpgroup's). */
          if (path == 1 && (page == 16 || fa_decode(c.h, c.hk, c.sq))) continue;
          if (path == 4 && !fa_decode(c.h, c.hk, c.sq)) continue;
          qref_rng r;
          qref_seed(&r, 4242 + c.sq + d + page);
          int32_t lens[4];
          memcpy(lens, c.lens, sizeof lens);
          int64_t max_pages = 0, n_pages = 0;
          int32_t *table = kref_make_paged_table(&r, page, c.n_seqs, lens, c.kind, 2,
                                                 &max_pages, &n_pages);
          const size_t es = kref_dtype_size(dt), qn = (size_t)(c.n_seqs * c.h * c.sq * d),
                       pn = (size_t)(n_pages * c.hk * page * d),
                       nn = (size_t)(c.n_seqs * c.hk * c.sq * d);
          std::vector<unsigned char> q(qn * es + 1), kp(pn * es + 1), vp(pn * es + 1),
              kn(nn * es + 1), vn(nn * es + 1), want(qn * es + 1), o((qn + 64) * es, 0xff);
          kref_fill(&r, dt, q.data(), qn, -1.0, 1.0);
          kref_fill(&r, dt, kp.data(), pn, -1.0, 1.0);
          kref_fill(&r, dt, vp.data(), pn, -1.0, 1.0);
          kref_fill(&r, dt, kn.data(), nn, -1.0, 1.0);
          kref_fill(&r, dt, vn.data(), nn, -1.0, 1.0);
          char what[160];
          snprintf(what, sizeof what, "kv_append %s n_seqs=%lld sq=%lld", variant, c.n_seqs,
                   c.sq);
          /* kv_append: the same pool bytes as the reference's. */
          std::vector<unsigned char> kp2 = kp, vp2 = vp;
          ref_kv_append(dt, d, page, kn.data(), vn.data(), kp.data(), vp.data(), table, lens,
                        c.n_seqs, c.hk, c.sq, max_pages, n_pages);
          void *kpp = kp2.data(), *vpp = vp2.data();
          const void *knp = kn.data(), *vnp = vn.data();
          auto append = [&]() {
            paged_variant(dt, d, page, path, [&](auto t, auto dd, auto pp) {
              gk_kv_append<decltype(t), decltype(dd)::value, decltype(pp)::value>(
                  knp, vnp, kpp, vpp, table, lens, c.n_seqs, c.hk, c.sq, max_pages, n_pages);
            });
          };
          const std::map<std::string, long long> kv_vars = {
              {"n_seqs", c.n_seqs}, {"n_kv_heads", c.hk}, {"sq", c.sq}};
          if (run(what, Lk, kv_params, kv_vars, append) && (kp2 != kp || vp2 != vp)) {
            printf("FAIL: %s: the pools differ from the reference's\n", what);
            failures++;
          }
          /* paged_attention on the appended pools. */
          snprintf(what, sizeof what, "paged_attention %s%s n_seqs=%lld h=%lld kvh=%lld sq=%lld",
                   variant,
                   path == 4   ? " (6-stage decode ring)"
                   : path == 3 ? " (ROCm's dot products)"
                   : wide    ? " (256 threads)"
                   : wg      ? " (wgmma)"
                             : "",
                   c.n_seqs, c.h, c.hk,
                   c.sq);
          const float scale = (float)(1.0 / sqrt((double)d));
          ref_paged_attention(dt, d, page, q.data(), kp.data(), vp.data(), table, lens,
                              want.data(), c.n_seqs, c.h, c.hk, c.sq, max_pages, n_pages, scale);
          const void *qp = q.data(), *kpc = kp.data(), *vpc = vp.data();
          void *op = o.data();
          std::vector<unsigned char> wsv =
              fa_workspace(c.n_seqs * c.hk, max_pages * page, c.h / c.hk * c.sq, d);
          void *wsp = wsv.data();
          const long long ws_bytes = (long long)wsv.size();
          auto attend = [&]() {
            paged_variant(dt, d, page, path, [&](auto t, auto dd, auto pp) {
              gk_paged_attention<decltype(t), decltype(dd)::value, decltype(pp)::value>(
                  qp, kpc, vpc, table, lens, op, c.n_seqs, c.h, c.hk, c.sq, max_pages, n_pages,
                  scale, wsp, ws_bytes);
            });
          };
          const std::map<std::string, long long> pa_vars = {
              {"n_seqs", c.n_seqs}, {"n_heads", c.h}, {"n_kv_heads", c.hk}, {"sq", c.sq},
              {"max_pages", max_pages}, {"ws_bytes", ws_bytes}};
          if (run(what, Lp, pa_params, pa_vars, attend, false, wide ? 256 : 0)) {
            /* f16 and bf16 decodes over more than 256 keys split across
             * blocks. */
            const bool mma = dt != KREF_F32;
            fa_workspace_check(what, wsv, c.n_seqs * c.hk, mma && fa_decode(c.h, c.hk, c.sq));
            double vmax = 0.0, atol, rtol;
            int32_t longest = 0;
            for (size_t i = 0; i < pn; i++) vmax = fmax(vmax, fabs(kref_get(dt, vp.data(), i)));
            for (long long i = 0; i < c.n_seqs; i++) longest = std::max(longest, lens[i]);
            kref_attention_tolerance(dt, d, 1.0, longest, vmax, mma, &atol, &rtol);
            failures += kref_check(what, dt, o.data(), want.data(), (int64_t)qn, atol, rtol,
                                   NULL);
            for (size_t i = qn * es; i < o.size(); i++)
              if (o[i] != 0xff) {
                printf("FAIL: %s: wrote past o\n", what);
                failures++;
                break;
              }
          }
          free(table);
        }
      }
  check_banks("paged_attention");
  /* The block's table check (gk_paged_block_ok) past the entries each
   * thread loads before the length arrives (KV_EARLY a thread, 4 x 128):
   * 600 pages of 1 token, a bad id at entry 5 (loaded early), at 590 (in
   * the loop after them), or at 599 of a sequence that uses 599 (not read
   * as a page: fine). Blocks of 128. */
  {
    static int32_t bt[600];
    static int got[4];
    struct tcase { int bad_at; int32_t len; int ok; };
    static const tcase tc[] = {{-1, 600, 1}, {5, 600, 0}, {590, 600, 0}, {599, 599, 1}};
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < 600; j++) bt[j] = j % 10;
      if (tc[i].bad_at >= 0) bt[tc[i].bad_at] = i == 1 ? -1 : 10;
      static int32_t len;
      static int slot;
      len = tc[i].len, slot = i;
      gk_emu_dim3 g1 = {1, 1, 1}, b128 = {128, 1, 1};
      CHECK(gk_emu_launch(g1, b128, [](void *) {
              const gk_paged_early e = gk_paged_load_early(bt, 600);
              const bool ok = gk_paged_block_ok(bt, e, len, 1, 600, 10);
              if (threadIdx.x == 0) got[slot] = ok;
            }, NULL) == 0, "paged table check %d: the emulator stopped", i);
      CHECK(got[i] == tc[i].ok, "paged table check: bad id at %d of %d used: %s, want %s",
            tc[i].bad_at, tc[i].len, got[i] ? "valid" : "invalid", tc[i].ok ? "valid" : "invalid");
    }
  }
  SECTION_OK(before, "ok: paged_attention and kv_append 12 variants x %zu batches (invalid "
             "sequences included; decodes of one fragment and of two); the table check past "
             "its early loads\n",
             sizeof cases / sizeof cases[0]);
}

/* ---- rmsnorm, rope, argmax ------------------------------------------------- */

static void check_rmsnorm(void) {
  const int before = failures;
  static const std::vector<std::string> params = {"x:ptr", "w:ptr", "y:ptr",
                                                  "rows:i64", "dim:i64", "eps:f32"};
  launch L;
  if (!read_launch("rmsnorm", "", &L)) return;
  for (long long dim : {1LL, 33LL, 1000LL, 4097LL}) {
    const long long rows = 3;
    std::vector<float> x(rows * dim), w(dim), y(rows * dim + 8, NAN), want(rows * dim);
    qref_rng r;
    qref_seed(&r, 500 + dim);
    kref_fill(&r, KREF_F32, x.data(), x.size(), -2.0, 2.0);
    kref_fill(&r, KREF_F32, w.data(), w.size(), -1.5, 1.5);
    ref_rmsnorm(x.data(), w.data(), want.data(), rows, dim, 1e-5f);
    char what[64];
    snprintf(what, sizeof what, "rmsnorm rows=%lld dim=%lld", rows, dim);
    const float *xp = x.data(), *wp = w.data();
    float *yp = y.data();
    auto body = [&]() { gk_rmsnorm(xp, wp, yp, rows, dim, 1e-5f); };
    if (!run(what, L, params, {{"rows", rows}, {"dim", dim}}, body)) continue;
    /* Each thread sums dim/256 squares in order, then a tree of 256. */
    const double rtol = 0x1p-24 * ((double)dim / 256.0 / 2.0 + 16.0);
    failures += kref_check(what, KREF_F32, y.data(), want.data(), rows * dim, 1e-37, rtol, NULL);
    std::vector<float> full = y;
    run(what, L, params, {{"rows", rows}, {"dim", dim}}, body, true);
    failures += kref_check(what, KREF_F32, y.data(), full.data(), rows * dim, 0.0, 0.0, NULL);
    /* In place gives the same bits. */
    std::vector<float> xy = x;
    float *xyp = xy.data();
    auto inplace = [&]() { gk_rmsnorm(xyp, wp, xyp, rows, dim, 1e-5f); };
    run(what, L, params, {{"rows", rows}, {"dim", dim}}, inplace);
    failures += kref_check(what, KREF_F32, xy.data(), y.data(), rows * dim, 0.0, 0.0, NULL);
  }
  SECTION_OK(before, "ok: rmsnorm 4 widths, in place too\n");
}

static void check_rope(void) {
  const int before = failures;
  static const std::vector<std::string> params = {"x:ptr",         "pos:ptr",
                                                  "n_tokens:i64",  "n_heads:i64",
                                                  "head_dim:i64",  "theta_base:f32"};
  launch L;
  if (!read_launch("rope", "", &L)) return;
  struct c {
    long long t, h, hd;
    int lo, hi;
    float theta;
  } cases[] = {{5, 3, 64, 0, 100000, 10000.0f}, {3, 2, 128, 0, 2000000000, 500000.0f},
               {300, 1, 2, 0, 50, 10000.0f}};
  for (auto &rc : cases) {
    const size_t n = (size_t)(rc.t * rc.h * rc.hd);
    std::vector<float> x(n + 8, NAN), want(n);
    std::vector<int32_t> pos(rc.t);
    qref_rng r;
    qref_seed(&r, 600 + rc.hd);
    kref_fill(&r, KREF_F32, x.data(), n, -3.0, 3.0);
    kref_fill_pos(&r, pos.data(), pos.size(), rc.lo, rc.hi);
    pos[0] = rc.lo;
    pos[rc.t - 1] = rc.hi;
    memcpy(want.data(), x.data(), n * sizeof(float));
    std::vector<float> x0(x.begin(), x.begin() + (long)n);
    ref_rope(want.data(), pos.data(), rc.t, rc.h, rc.hd, rc.theta);
    double xmax = 0, pmax = 0;
    for (size_t i = 0; i < n; i++) xmax = fmax(xmax, fabs(x[i]));
    for (int32_t p : pos) pmax = fmax(pmax, fabs((double)p));
    char what[96];
    snprintf(what, sizeof what, "rope tokens=%lld heads=%lld head_dim=%lld", rc.t, rc.h, rc.hd);
    float *xp = x.data();
    const int32_t *pp = pos.data();
    auto body = [&]() { gk_rope(xp, pp, rc.t, rc.h, rc.hd, rc.theta); };
    if (!run(what, L, params, {{"n_tokens", rc.t}, {"n_heads", rc.h}, {"head_dim", rc.hd}},
             body))
      continue;
    failures += kref_check(what, KREF_F32, x.data(), want.data(), (int64_t)n,
                           xmax * (8.0 * 0x1p-24 + pmax * 1e-15), 0x1p-24, NULL);
    std::vector<float> full = x;
    memcpy(x.data(), x0.data(), n * sizeof(float));
    run(what, L, params, {{"n_tokens", rc.t}, {"n_heads", rc.h}, {"head_dim", rc.hd}}, body,
        true);
    failures += kref_check(what, KREF_F32, x.data(), full.data(), (int64_t)n, 0.0, 0.0, NULL);
    for (int i = 0; i < 8; i++)
      if (!std::isnan(x[n + i])) {
        printf("FAIL: %s: wrote past x\n", what);
        failures++;
        break;
      }
  }
  SECTION_OK(before, "ok: rope 3 shapes\n");
}

/* Row kinds: random, with NaNs, all NaN, all -inf, ties at the top. */
static void argmax_row(qref_rng *r, float *x, long long n, int kind) {
  kref_fill(r, KREF_F32, x, (size_t)n, -4.0, 4.0);
  switch (kind) {
  case 1:
    for (long long j = 0; j < n; j += 3) x[j] = NAN;
    break;
  case 2:
    for (long long j = 0; j < n; j++) x[j] = NAN;
    break;
  case 3:
    for (long long j = 0; j < n; j++) x[j] = -INFINITY;
    break;
  case 4:
    x[n / 2] = x[n - 1] = 9.0f;
    if (n > 2) x[n / 3] = 9.0f;
    break;
  }
}

static void check_argmax(void) {
  const int before = failures;
  static const std::vector<std::string> params = {"x:ptr", "out:ptr", "rows:i64", "n:i64"};
  launch L;
  if (!read_launch("argmax", "", &L)) return;
  for (long long n : {1LL, 7LL, 1000LL, 3000LL}) {
    const long long rows = 5;
    std::vector<float> x(rows * n);
    std::vector<int32_t> out(rows, -7), want(rows);
    qref_rng r;
    qref_seed(&r, 700 + n);
    for (long long row = 0; row < rows; row++) argmax_row(&r, &x[row * n], n, (int)row);
    ref_argmax(x.data(), want.data(), rows, n);
    char what[64];
    snprintf(what, sizeof what, "argmax n=%lld", n);
    const float *xp = x.data();
    int32_t *op = out.data();
    auto body = [&]() { gk_argmax(xp, op, rows, n); };
    if (!run(what, L, params, {{"rows", rows}, {"n", n}}, body)) continue;
    failures += kref_check_i32(what, out.data(), want.data(), rows);
    std::fill(out.begin(), out.end(), -7);
    run(what, L, params, {{"rows", rows}, {"n", n}}, body, true);
    failures += kref_check_i32(what, out.data(), want.data(), rows);
  }
  SECTION_OK(before, "ok: argmax 4 widths x 5 kinds of row\n");
}

/* ---- sample ------------------------------------------------------------------ */

static void check_sample(void) {
  const int before = failures;
  static const std::vector<std::string> params = {
      "logits:ptr", "u:ptr", "out:ptr", "rows:i64", "n:i64",
      "temperature:f32", "top_k:i32", "top_p:f32"};
  launch L;
  if (!read_launch("sample", "", &L)) return;
  int ci = 0;
  for (size_t k = 0; k < kref_nsample_cases; k++) {
    const kref_sample_case &sc = kref_sample_cases[k];
    std::vector<float> logits(sc.rows * sc.n), u(sc.rows);
    std::vector<int32_t> out(sc.rows, -7), want(sc.rows);
    float top_p;
    if (kref_sample_data(&sc, 900 + ci++, logits.data(), u.data(), &top_p) != 0) {
      failures++;
      continue;
    }
    if (ref_sample(logits.data(), u.data(), want.data(), sc.rows, sc.n, sc.temperature,
                   sc.top_k, top_p) != 0) {
      printf("FAIL: ref_sample ran out of memory\n");
      failures++;
      continue;
    }
    char what[128];
    snprintf(what, sizeof what, "sample n=%lld T=%g top_k=%d top_p=%g%s", (long long)sc.n,
             sc.temperature, sc.top_k, top_p, sc.nans ? " NaNs" : "");
    const float *lp = logits.data(), *up = u.data();
    int32_t *op = out.data();
    auto body = [&]() {
      gk_sample(lp, up, op, sc.rows, sc.n, sc.temperature, sc.top_k, top_p);
    };
    if (!run(what, L, params, {{"rows", sc.rows}, {"n", sc.n}}, body)) continue;
    failures += kref_check_i32(what, out.data(), want.data(), sc.rows);
    std::fill(out.begin(), out.end(), -7);
    run(what, L, params, {{"rows", sc.rows}, {"n", sc.n}}, body, true);
    failures += kref_check_i32(what, out.data(), want.data(), sc.rows);
  }
  SECTION_OK(before, "ok: sample %zu cases\n", kref_nsample_cases);
}

/* The instrument itself: barriers that not every thread reaches are
 * reported, not passed; a shuffle exchanges within a group. */
static void divergent_barrier(void) {
  if (threadIdx.x < 32) __syncthreads();
}
static void early_return(void) {
  if (threadIdx.x == 5) return;
  __syncthreads();
}
static int shuffled[64];
static void shuffle(void) {
  shuffled[threadIdx.x] =
      GK_SHFL_XOR((int)threadIdx.x, 1) + 1000 * GK_SHFL((int)threadIdx.x + 7, 31);
}
/* A meeting of 3 words a lane (gk_lanes), read after the group's last lane
 * (the first to run on) has gone on to the next meeting, then that one. */
static uint32_t met[64][2];
static void meeting(void) {
  const uint32_t t = threadIdx.x, lane = t % 32, s = (lane + 5) % 32;
  const uint32_t w[3] = {t, 100 + t, 200 + t}, v[1] = {300 + t};
  const gk_lanes<uint32_t, 3> a(w);
  met[t][0] = a.get(0, (int)s) + a.get(2, (int)s);
  const gk_lanes<uint32_t, 1> b(v);
  met[t][1] = b.get(0, (int)(31 - lane));
}
/* cp.async lands at the wait that must see it, not before; a vote. */
static int votes[64][3];
static uint32_t seen[64][4];
static void async_copies(void) {
  __shared__ __attribute__((aligned(16))) uint32_t st[64][2][4];
  static const uint32_t src[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  const unsigned t = threadIdx.x;
  for (int i = 0; i < 4; i++) st[t][0][i] = st[t][1][i] = 0;
  gk_cp_async16(st[t][0], src[0], true);
  gk_cp_async_commit();
  gk_cp_async16(st[t][1], src[1], true);
  gk_cp_async_commit();
  seen[t][0] = st[t][0][0]; /* 0: in flight */
  gk_cp_async_wait<1>();
  seen[t][1] = st[t][0][0] + 10 * st[t][1][0]; /* 1: the older group only */
  gk_cp_async_wait<0>();
  seen[t][2] = st[t][1][3]; /* 8 */
  gk_cp_async16(st[t][0], src[1], false); /* zeros, never committed: lands at the end */
  gk_cp_async_wait<0>();
  seen[t][3] = st[t][0][1]; /* 2 */
  votes[t][0] = __syncthreads_or(t == 37);
  votes[t][1] = __syncthreads_or(0);
  votes[t][2] = __syncthreads_or(t < 64);
}
/* ldmatrix's bank count: rows 16 bytes apart (one pass a matrix), then
 * 128 bytes apart (all 8 rows of a matrix in one bank group: 8 passes). */
static unsigned long long bank_extra[2];
static void banks(void) {
  __shared__ __attribute__((aligned(16))) uint16_t t[32 * 64];
  const int lane = gk_lane();
  uint32_t r[4];
  for (int stride = 0; stride < 2; stride++) {
    gk_ldmatrix_x4(r, &t[lane * (stride ? 64 : 8)]);
    unsigned long long m;
    if (lane == 0) gk_emu_ldmatrix_stats(&m, &bank_extra[stride]);
    (void)GK_SHFL(0, 0); /* lane 0 has read the count */
  }
}

/* Named barriers (gk_bar_sync, gk_bar_any): threads 0 .. 31 meet at
 * barrier 1 (count 32) while 32 .. 63 take barrier 2 twice and vote, so a
 * barrier waits for its count, not for the block; then all meet at
 * __syncthreads. A count that disagrees with the waiting threads' fails. */
static int named_seen[64], named_votes[64][2];
static void named_barriers(void) {
  static int flag[2];
  const unsigned t = threadIdx.x;
  if (t < 32) {
    if (t == 0) flag[0] = 1;
    gk_bar_sync<32>(1);
    named_seen[t] = flag[0];
  } else {
    if (t == 40) flag[1] = 7;
    named_votes[t][0] = gk_bar_any<32>(2, t == 63);
    named_votes[t][1] = gk_bar_any<32>(2, false);
    named_seen[t] = flag[1];
  }
  __syncthreads();
}
/* bar.arrive: warp 1 (the producer) writes, then arrives; warp 0 waits at
 * the same barrier and reads what it wrote, in either scheduling order. */
static int handed[64];
static void named_arrive(void) {
  static int box;
  if (threadIdx.x >= 32) {
    if (threadIdx.x == 32) box = 42;
    gk_bar_arrive<64>(3);
  } else {
    gk_bar_sync<64>(3);
    handed[threadIdx.x] = box;
  }
}
/* An arrival no wait matches: the barrier is left part-filled. */
static void named_unmatched(void) {
  if (threadIdx.x < 32) gk_bar_arrive<64>(4);
}
static void named_mismatch(void) {
  if (threadIdx.x < 32)
    gk_bar_sync<64>(1);
  else
    gk_bar_sync<32>(1);
}

/* A cp.async to an address the GPU would fault on. */
static void misaligned_copy(void) {
  __shared__ __attribute__((aligned(16))) uint32_t st[64][5];
  static const uint32_t src[8] = {0};
  gk_cp_async16(&st[threadIdx.x][1], src, true); /* 4 bytes past 16-byte alignment */
  gk_cp_async_commit();
  gk_cp_async_wait<0>();
}

/* A dp4a whose operand breaks the byte bound its caller claims. */
static int dp4a_sum;
static void dp4a_claims(void) {
  dp4a_sum = gk_dp4a_us<4>(0x0f0f0f0fu, 0x01010101u, 0); /* within 4 bits: fine */
  dp4a_sum += gk_dp4a_us<4>(threadIdx.x == 37 ? 0x0f100f0fu : 0u, 0x01010101u, 0);
}

static void check_emulator(void) {
  const int before = failures;
  gk_emu_dim3 g = {1, 1, 1}, b = {64, 1, 1};
  printf("(two deadlocks, a misaligned copy, a dp4a operand past its bound, a named barrier "
         "of two counts and one left part-filled on purpose:)\n");
  CHECK(gk_emu_launch(g, b, [](void *) { misaligned_copy(); }, NULL) == -1,
        "emulator: a cp.async of 16 bytes to a 4-byte-aligned address passed");
  CHECK(gk_emu_launch(g, b, [](void *) { dp4a_claims(); }, NULL) == -1,
        "emulator: gk_dp4a_us<4> of a byte 16 passed");
  CHECK(gk_emu_launch(g, b, [](void *) { divergent_barrier(); }, NULL) == -1,
        "emulator: a __syncthreads reached by half the block passed");
  CHECK(gk_emu_launch(g, b, [](void *) { early_return(); }, NULL) == -1,
        "emulator: a __syncthreads after a thread returned passed");
  CHECK(gk_emu_launch(g, b, [](void *) { named_mismatch(); }, NULL) == -1,
        "emulator: a named barrier reached with two counts passed");
  CHECK(gk_emu_launch(g, b, [](void *) { named_barriers(); }, NULL) == 0,
        "emulator: named barriers");
  for (int order = 0; order <= GK_EMU_CYCLIC; order++) {
    gk_emu_order(order);
    memset(handed, 0, sizeof handed);
    CHECK(gk_emu_launch(g, b, [](void *) { named_arrive(); }, NULL) == 0,
          "emulator: bar.arrive (order %d)", order);
    for (int t = 0; t < 32; t++)
      CHECK(handed[t] == 42, "emulator: thread %d after bar.sync saw %d, not the 42 written "
            "before bar.arrive (order %d)", t, handed[t], order);
  }
  gk_emu_order(0);
  CHECK(gk_emu_launch(g, b, [](void *) { named_unmatched(); }, NULL) == -1,
        "emulator: a block that ended with arrivals at a named barrier passed");
  for (int t = 0; t < 64; t++)
    CHECK(named_seen[t] == (t < 32 ? 1 : 7) &&
              (t < 32 || (named_votes[t][0] == 1 && named_votes[t][1] == 0)),
          "emulator: thread %d past its named barrier saw %d (votes %d %d)", t, named_seen[t],
          named_votes[t][0], named_votes[t][1]);
  CHECK(gk_emu_launch(g, b, [](void *) { shuffle(); }, NULL) == 0, "emulator: shuffles");
  for (int t = 0; t < 64; t++)
    CHECK(shuffled[t] == (t ^ 1) + 1000 * (t / 32 * 32 + 31 + 7), "emulator: shuffle of thread %d",
          t);
  CHECK(gk_emu_launch(g, b, [](void *) { meeting(); }, NULL) == 0, "emulator: meetings");
  for (uint32_t t = 0; t < 64; t++) {
    const uint32_t base = t / 32 * 32, s = base + (t % 32 + 5) % 32;
    CHECK(met[t][0] == 2 * s + 200 && met[t][1] == 300 + base + 31 - t % 32,
          "emulator: thread %u read %u and %u from two meetings, want %u and %u", t, met[t][0],
          met[t][1], 2 * s + 200, 300 + base + 31 - t % 32);
  }
  CHECK(gk_emu_launch(g, b, [](void *) { async_copies(); }, NULL) == 0, "emulator: cp.async");
  for (int t = 0; t < 64; t++) {
    CHECK(seen[t][0] == 0 && seen[t][1] == 1 && seen[t][2] == 8 && seen[t][3] == 2,
          "emulator: thread %d's cp.async landed at the wrong wait (saw %u %u %u %u, want 0 1 8 2)",
          t, seen[t][0], seen[t][1], seen[t][2], seen[t][3]);
    CHECK(votes[t][0] == 1 && votes[t][1] == 0 && votes[t][2] == 1,
          "emulator: thread %d's __syncthreads_or gave %d %d %d, want 1 0 1", t, votes[t][0],
          votes[t][1], votes[t][2]);
  }
  unsigned long long m, x;
  gk_emu_ldmatrix_stats(&m, &x);
  CHECK(gk_emu_launch(g, {32, 1, 1}, [](void *) { banks(); }, NULL) == 0, "emulator: banks");
  CHECK(bank_extra[0] == 0 && bank_extra[1] == 4 * 7,
        "emulator: ldmatrix bank conflicts counted %llu and %llu, want 0 and 28", bank_extra[0],
        bank_extra[1]);
  SECTION_OK(before, "ok: the emulator stops at divergent barriers, misaligned copies and dp4a "
                     "operands past their bound, shuffles and meets by group, lands cp.async at "
                     "its wait, votes, waits at a named barrier for its count, hands over by "
                     "bar.arrive in either order and counts ldmatrix's bank conflicts\n");
}

/* tests/gpu's wgmma probe (one wgmma per shape, D against A B, which
 * test_wgmma_probe runs on a Hopper GPU), here through gk_wgmma's twin:
 * the probe's own staging and fragments agree with the layout the twin
 * reads. Small integers: exact in any order. */
template <int N, int T>
static void wgmma_probe_one(void) {
  static uint16_t ha[64 * 16], hb[16 * N];
  static float a[64 * 16], b[16 * N], want[64 * N], got[64 * N];
  wgmma_probe_data(N, T, a, ha, b, hb); /* test_wgmma_probe.c's inputs */
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < 16; k++) acc += a[i * 16 + k] * b[k * N + j];
      want[i * N + j] = acc;
    }
  gk_emu_dim3 g = {1, 1, 1}, bl = {128, 1, 1};
  CHECK(gk_emu_launch(g, bl, [](void *) { gk_wgmma_probe<N, T>(ha, hb, got); }, NULL) == 0,
        "wgmma probe n%d t%d: the launch", N, T);
  int bad = 0;
  for (int i = 0; i < 64 * N; i++) bad += got[i] != want[i];
  CHECK(bad == 0, "wgmma probe n%d t%d: %d of %d elements of D differ from A B", N, T, bad,
        64 * N);
}
static void check_wgmma_probe(void) {
  const int before = failures;
  wgmma_probe_one<32, 0>();
  wgmma_probe_one<32, 1>();
  wgmma_probe_one<64, 0>();
  wgmma_probe_one<64, 1>();
  wgmma_probe_one<128, 0>();
  wgmma_probe_one<128, 1>();
  wgmma_probe_one<96, 2>(); /* A from shared memory too */
  wgmma_probe_one<128, 2>();
  wgmma_probe_one<176, 2>();
  wgmma_probe_one<192, 2>();
  wgmma_probe_one<64, 3>(); /* the 128-byte swizzle: B N-major */
  wgmma_probe_one<128, 3>();
  wgmma_probe_one<128, 4>(); /* A and B K-major, at piece pairs 3 and 1 */
  wgmma_probe_one<176, 4>();
  wgmma_probe_one<192, 4>();
  SECTION_OK(before, "ok: tests/gpu's wgmma probe, 15 shapes, D = A B through the twins\n");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2 || access(argv[1], R_OK) != 0) {
    printf("SKIP: no archive of real cuda images (%s): its launch metadata drives "
           "the launches; the fixture needs nvcc\n",
           argc > 1 ? argv[1] : "none given");
    return 77;
  }
  if (gk_archive_open(argv[1], &archive) != GK_OK) {
    printf("FAIL: %s\n", gk_last_error());
    return 1;
  }
  printf("cuda.emu: the kernel bodies on an EMULATED GPU (tests/backends/cuda/emu), not a real one\n");
  /* GK_EMU_ONLY=NAME runs the sections whose name contains NAME (while
   * working on one kernel; ctest runs them all). */
  const char *only = getenv("GK_EMU_ONLY");
  /* reverse: the section's launches run their blocks last first
   * (gk_emu_reverse), where a walk gives a block several tiles and shared
   * memory prepared at the first (qmatmul's and q8x's m = 1): a block that
   * skipped it would read what another launch left, not what the block
   * before it in grid order left (x, prepared the same). */
  static const struct {
    const char *name;
    void (*check)(void);
    int reverse;
  } sections[] = {{"emulator", check_emulator, 0}, {"qmatmul", check_qmatmul, 1},
                  {"q8x", check_q8x, 1},           {"q8x_mm", check_q8x_mm, 0},
                  {"rmsnorm", check_rmsnorm, 0},   {"rope", check_rope, 0},
                  {"argmax", check_argmax, 0},     {"sample", check_sample, 0},
                  {"attention", check_attention, 0}, {"paged", check_paged, 0},
                  {"wgmma_probe", check_wgmma_probe, 0}};
  for (const auto &sec : sections)
    if (!only || strstr(sec.name, only)) {
      gk_emu_reverse = sec.reverse;
      sec.check();
    }
  gk_emu_reverse = 0;
  gk_archive_close(archive);
  if (failures) {
    printf("%d check(s) failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
