/*
 * test_launch.c - libgk's launch evaluator through gk.h: count expressions
 * (precedence, round-up division, device properties, and every error:
 * overflow, division by zero, unknown names, nesting, length), the launch
 * JSON of every backend (docs/kernels.md's shapes, per-entry objects, bad
 * shapes), typed arguments (order, types, the scalar block's bytes, u32
 * range) and the clamps. Then every launch row of the real archives given
 * on the command line (cuda, rocm, vulkan, wgsl: the recipes' own rows),
 * each entry evaluated for awkward values against the reference evaluator
 * of tests/common/launch.c, which reads the grammar apart from libgk.
 *
 * Usage: test_loader_launch [ARCHIVE...]; a missing archive is skipped
 * with a line saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gk.h"
#include "launch.h"

static char **archives;
static int narchives;

static const char *const example =
    "{\"block\": [256, 1, 1], \"grid\": [\"n / 8\", \"m / 4\", 1], \"shared\": 0,"
    " \"params\": [\"x:ptr\", \"w:ptr\", \"y:ptr\", \"m:i64\", \"n:i64\", \"k:i64\"]}";

static gk_launch *parse_as(const char *backend, const char *json, const char *entry) {
  gk_image_info row = {.kernel = "k", .backend = backend, .target = "t", .variant = "",
                       .launch = json};
  gk_launch *L = NULL;
  if (gk_launch_parse(&row, entry, &L) != GK_OK)
    fail_msg("%s launch '%s': %s", backend, json, gk_last_error());
  return L;
}

/* The message of a parse that must fail. */
static const char *parse_err(const char *backend, const char *json) {
  gk_image_info row = {.kernel = "k", .backend = backend, .target = "t", .variant = "",
                       .launch = json};
  gk_launch *L = (gk_launch *)1;
  int rc = gk_launch_parse(&row, NULL, &L);
  if (rc == GK_OK) fail_msg("%s launch '%s' parsed", backend, json);
  assert_null(L);
  return gk_last_error();
}

#define ASSERT_HAS(text, part)                                                  \
  do {                                                                          \
    if (!strstr((text), (part))) fail_msg("'%s' lacks '%s'", (text), (part));   \
  } while (0)

/* A launch of one count expression over integer parameters a, b, c. */
static char one_json[1200];
static gk_launch *one(const char *expr) {
  snprintf(one_json, sizeof one_json,
           "{\"block\": [32, 1, 1], \"grid\": [\"%s\", 1, 1], \"shared\": 0,"
           " \"params\": [\"a:i64\", \"b:i64\", \"c:i32\", \"s:f32\", \"p:ptr\"]}",
           expr);
  gk_image_info row = {.kernel = "k", .backend = "cuda", .target = "t", .launch = one_json};
  gk_launch *L = NULL;
  gk_launch_parse(&row, NULL, &L);
  return L;
}

/* Evaluates expr with a, b, c; no clamp (limits wide open). */
static int eval1(const char *expr, int64_t a, int64_t b, int32_t c, int64_t *out) {
  gk_launch *L = one(expr);
  if (!L) return -2;
  gk_arg args[5] = {gk_arg_i64(a), gk_arg_i64(b), gk_arg_i32(c), gk_arg_f32(0.5f),
                    gk_arg_ptr(0)};
  gk_device_limits lim = {.compute_units = 132, .max_threads = 1024,
                          .max_groups = {4000000000u, 1, 1}};
  gk_launch_dims d;
  int rc = gk_launch_eval(L, &lim, args, 5, &d);
  gk_launch_free(L);
  *out = d.grid[0];
  return rc == GK_OK ? 0 : -1;
}

static int64_t ok(const char *expr, int64_t a, int64_t b) {
  int64_t v;
  if (eval1(expr, a, b, 3, &v) != 0) fail_msg("'%s': %s", expr, gk_last_error());
  return v;
}

static void expressions(void **state) {
  (void)state;
  assert_int_equal(ok("7", 0, 0), 7);
  assert_int_equal(ok("a", 37, 0), 37);
  assert_int_equal(ok("a / 8", 37, 0), 5); /* rounds up */
  assert_int_equal(ok("32 / 8", 0, 0), 4);
  assert_int_equal(ok("0 / 8 + 1", 0, 0), 1);
  assert_int_equal(ok("2 + 3 * 4", 0, 0), 14);
  assert_int_equal(ok("(2 + 3) * 4", 0, 0), 20);
  assert_int_equal(ok("20 - 5 - 3", 0, 0), 12);
  assert_int_equal(ok("100 / 7 / 2", 0, 0), 8); /* ceil(ceil(100/7)/2) */
  assert_int_equal(ok("  a*(b/2)/256 ", 5, 128), 2); /* rope's grid */
  assert_int_equal(ok("c * 2", 0, 0), 6);           /* i32 parameters count */
  assert_int_equal(ok("dev.compute_units * 2", 0, 0), 264);
  assert_int_equal(ok("dev.max_threads / 256", 0, 0), 4);
  assert_int_equal(ok("9223372036854775807 / 4611686018427387904", 0, 0), 2);
  assert_int_equal(ok("((((((((((a))))))))))", 9, 0), 9);
  /* Below 1 is 1, past the limit the limit. */
  assert_int_equal(ok("a - 40", 37, 0), 1);
  assert_int_equal(ok("a", 1LL << 40, 0), 4000000000u);

  int64_t v;
  static const struct { const char *expr, *why; } bad[] = {
      {"a /", "unexpected end"},
      {"", "unexpected end"},
      {"(a + 1", "missing ')'"},
      {"a 8", "unexpected character"},
      {"a $ 8", "unexpected character"},
      {"-a", "expected a number"},
      {"rows / 2", "unknown name 'rows'"},
      {"s * 2", "'s' is f32, not an integer"},
      {"p + 1", "'p' is ptr, not an integer"},
      {"dev.sms", "unknown name 'dev.sms'"},
      {"99999999999999999999", "64 bits"},
      {"((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))", "deeper than 32"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_null(one(bad[i].expr));
    ASSERT_HAS(gk_last_error(), bad[i].why);
    ASSERT_HAS(gk_last_error(), "launch of 'k'");
  }
  char longer[300];
  memset(longer, '1', 299);
  longer[299] = 0;
  assert_null(one(longer));
  ASSERT_HAS(gk_last_error(), "299 bytes (at most 255)");
  /* Errors of the values: the message quotes the expression. */
  static const struct { const char *expr; int64_t a, b; const char *why; } run[] = {
      {"a / b", 5, 0, "division of 5 by 0"},
      {"a / (b - 2)", 5, 1, "division of 5 by -1"},
      {"(a - 2) / 4", 1, 0, "division of -1 by 4"},
      {"a + 1", INT64_MAX, 0, "'a + 1' overflows 64 bits"},
      {"0 - a - 2", INT64_MAX, 0, "overflows"},
      {"a * b", 4294967296LL, 4294967296LL, "overflows"},
  };
  for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
    assert_int_equal(eval1(run[i].expr, run[i].a, run[i].b, 0, &v), -1);
    ASSERT_HAS(gk_last_error(), run[i].why);
  }
  /* A property the device does not report. */
  gk_launch *L = one("dev.compute_units");
  gk_arg args[5] = {gk_arg_i64(1), gk_arg_i64(1), gk_arg_i32(1), gk_arg_f32(1), gk_arg_ptr(0)};
  gk_launch_dims d;
  gk_device dev = {.backend = GK_BACKEND_CUDA};
  gk_device_limits known;
  assert_int_equal(gk_device_limits_known(&dev, &known), GK_OK);
  assert_int_equal(gk_launch_eval(L, &known, args, 5, &d), GK_EINVAL);
  ASSERT_HAS(gk_last_error(), "the device does not report dev.compute_units");
  gk_launch_free(L);
}

static void shapes(void **state) {
  (void)state;
  gk_launch *L = parse_as("cuda", example, NULL);
  assert_int_equal(gk_launch_nparams(L), 6);
  const char *name;
  gk_arg_type t;
  assert_int_equal(gk_launch_param(L, 5, &name, &t), GK_OK);
  assert_string_equal(name, "k");
  assert_int_equal(t, GK_ARG_I64);
  assert_int_equal(gk_launch_param(L, 6, &name, &t), GK_ERANGE);
  gk_arg a[6] = {gk_arg_ptr(0x1000), gk_arg_ptr(0x2000), gk_arg_ptr(0x3000),
                 gk_arg_i64(17), gk_arg_i64(1000), gk_arg_i64(4096)};
  gk_launch_dims d;
  assert_int_equal(gk_launch_eval(L, NULL, a, 6, &d), GK_OK);
  assert_int_equal(d.grid[0], 125);
  assert_int_equal(d.grid[1], 5);
  assert_int_equal(d.grid[2], 1);
  assert_int_equal(d.block[0], 256);
  assert_int_equal(d.scalar_size, 0);
  /* CUDA's clamps (no limits given: the backend's known ones). */
  a[3] = gk_arg_i64(1LL << 40), a[4] = gk_arg_i64(1LL << 40);
  assert_int_equal(gk_launch_eval(L, NULL, a, 6, &d), GK_OK);
  assert_int_equal(d.grid[0], 2147483647u);
  assert_int_equal(d.grid[1], 65535);
  /* Wrong number, wrong type: named. */
  assert_int_equal(gk_launch_eval(L, NULL, a, 5, &d), GK_EINVAL);
  ASSERT_HAS(gk_last_error(), "5 values given for its 6 parameters (x:ptr, w:ptr, y:ptr, "
                              "m:i64, n:i64, k:i64)");
  a[3] = gk_arg_f32(1);
  assert_int_equal(gk_launch_eval(L, NULL, a, 6, &d), GK_EINVAL);
  ASSERT_HAS(gk_last_error(), "parameter 3 'm' is i64; the value given is f32");
  gk_launch_free(L);

  /* Blocks larger than the device runs. */
  L = parse_as("cuda", example, NULL);
  gk_device_limits small = {0, 128, {10, 10, 10}};
  a[3] = gk_arg_i64(1);
  assert_int_equal(gk_launch_eval(L, &small, a, 6, &d), GK_EINVAL);
  ASSERT_HAS(gk_last_error(), "blocks of 256 threads; the device runs at most 128");
  gk_launch_free(L);

  /* Per-entry objects. */
  const char *per = "{\"qmatmul\": {\"block\": [256,1,1], \"grid\": [\"n / 8\",\"m / 4\",1],"
                    " \"shared\": 0, \"params\": [\"m:i64\", \"n:i64\"]},"
                    " \"qmatmul_q8x\": {\"block\": [128,1,1], \"grid\": [\"n\",1,1],"
                    " \"shared\": 4096, \"params\": [\"n:i64\", \"top_k:i32\", \"t:f32\"]}}";
  L = parse_as("cuda", per, "qmatmul_q8x");
  assert_int_equal(gk_launch_nparams(L), 3);
  gk_arg b[3] = {gk_arg_i64(9), gk_arg_i32(-3), gk_arg_f32(0.5f)};
  assert_int_equal(gk_launch_eval(L, NULL, b, 3, &d), GK_OK);
  assert_int_equal(d.grid[0], 9);
  assert_int_equal(d.shared, 4096);
  gk_launch_free(L);
  /* The most shared memory any GPU gives a block parses (227 KB on CUDA,
   * 320 KB on ROCm); a byte more is refused below. */
  L = parse_as("cuda", "{\"block\": [32,1,1], \"shared\": 232448, \"params\": [], "
                       "\"grid\": [1,1,1]}", NULL);
  gk_launch_free(L);
  L = parse_as("rocm", "{\"block\": [32,1,1], \"shared\": 327680, \"params\": [], "
                       "\"grid\": [1,1,1]}", NULL);
  gk_launch_free(L);

  /* Vulkan: buffers, then push constants laid out at their offsets. */
  const char *vk =
      "{\"local_size\": [128, 1, 1], \"groups\": [\"rows\", 1, 1], \"bindings\": ["
      "{\"set\": 0, \"binding\": 0, \"type\": \"storage_buffer\", \"name\": \"logits\"},"
      "{\"set\": 0, \"binding\": 1, \"type\": \"storage_buffer\", \"name\": \"out\"}],"
      "\"push_constants\": [{\"name\": \"rows\", \"offset\": 0, \"type\": \"u32\"},"
      "{\"name\": \"temperature\", \"offset\": 8, \"type\": \"f32\"},"
      "{\"name\": \"top_k\", \"offset\": 4, \"type\": \"i32\"}]}";
  L = parse_as("vulkan", vk, NULL);
  assert_int_equal(gk_launch_nparams(L), 5);
  gk_arg v[5] = {gk_arg_ptr(1), gk_arg_ptr(2), gk_arg_i64(70000), gk_arg_f32(1.0f),
                 gk_arg_i32(-2)};
  assert_int_equal(gk_launch_eval(L, NULL, v, 5, &d), GK_OK);
  assert_int_equal(d.grid[0], 65535); /* Vulkan's guaranteed limit */
  assert_int_equal(d.nbuffers, 2);
  assert_int_equal(d.scalar_size, 12);
  static const unsigned char want[12] = {0x70, 0x11, 0x01, 0, 0xfe, 0xff, 0xff, 0xff,
                                         0, 0, 0x80, 0x3f};
  assert_memory_equal(d.scalars, want, 12);
  v[2] = gk_arg_i64(1LL << 32);
  assert_int_equal(gk_launch_eval(L, NULL, v, 5, &d), GK_EINVAL);
  ASSERT_HAS(gk_last_error(), "'rows' is passed as u32; 4294967296 does not fit");
  gk_launch_free(L);

  /* WGSL: the uniform binding is the block, not a parameter. */
  L = parse_as("wgsl",
               "{\"workgroup_size\": [64,1,1], \"groups\": [\"n/8\", \"m\", 1], \"bindings\": ["
               "{\"group\": 0, \"binding\": 0, \"type\": \"storage\", \"name\": \"x\"},"
               "{\"group\": 0, \"binding\": 1, \"type\": \"uniform\", \"name\": \"params\"}],"
               "\"params\": [{\"name\": \"m\", \"offset\": 0, \"type\": \"u32\"},"
               "{\"name\": \"n\", \"offset\": 4, \"type\": \"u32\"}]}",
               NULL);
  assert_int_equal(gk_launch_nparams(L), 3);
  gk_arg w[3] = {gk_arg_ptr(0), gk_arg_i64(3), gk_arg_i64(17)};
  assert_int_equal(gk_launch_eval(L, NULL, w, 3, &d), GK_OK);
  assert_int_equal(d.grid[0], 3);
  assert_int_equal(d.grid[1], 3);
  assert_int_equal(d.scalar_size, 8);
  gk_launch_free(L);
  /* Metal: the "bytes" buffer is the block. */
  L = parse_as("metal",
               "{\"threads_per_threadgroup\": [64,1,1], \"groups\": [\"rows\", 1, 1],"
               "\"buffers\": [{\"index\": 0, \"name\": \"x\", \"access\": \"read\"},"
               "{\"index\": 1, \"name\": \"params\", \"access\": \"bytes\"}],"
               "\"params\": [{\"name\": \"rows\", \"offset\": 0, \"type\": \"u32\"}]}",
               NULL);
  assert_int_equal(gk_launch_nparams(L), 2);
  gk_launch_free(L);

  static const struct { const char *backend, *json, *why; } bad[] = {
      {"cuda", "not json", "not JSON"},
      {"cuda", "[1, 2]", "not a JSON object"},
      {"cuda", "{}", "'block' must be an array of 3"},
      {"cuda", "{\"block\": [0, 1, 1]}", "block[0] must be a number in 1..1024"},
      {"cuda", "{\"block\": [64, 64, 1]}", "4096 threads"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": -1}", "'shared'"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 232449}",
       "'shared' is 232449 bytes, more than any NVIDIA GPU gives one block (232448, sm_90 and "
       "sm_100 opted in); make it smaller"},
      {"rocm", "{\"block\": [32,1,1], \"shared\": 327681}",
       "more than any AMD GPU gives one block (327680, gfx1250's LDS)"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0}", "'params' must be an array"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0, \"params\": [\"x\"]}", "NAME:TYPE"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0, \"params\": [\"x:f64\"]}", "NAME:TYPE"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0, \"params\": [\":ptr\"]}", "not an identifier"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0, \"params\": [\"x:ptr\", \"x:i64\"]}",
       "declared twice"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0, \"params\": [], \"grid\": [1, -1, 1]}",
       "grid[1] must be a count"},
      {"cuda", "{\"block\": [32,1,1], \"shared\": 0, \"params\": [], \"grid\": [1, 1]}",
       "'grid' must be an array of 3"},
      {"cuda", "{\"block\": [32,1,1], \"block\": [32,1,1]}", "not JSON"},
      {"vulkan", "{\"local_size\": [8,8,1], \"bindings\": [], \"push_constants\": "
                 "[{\"name\": \"n\", \"offset\": 2, \"type\": \"u32\"}]}", "not a multiple of 4"},
      {"vulkan", "{\"local_size\": [8,8,1], \"bindings\": [], \"push_constants\": "
                 "[{\"name\": \"n\", \"offset\": 0, \"type\": \"u32\"},"
                 "{\"name\": \"m\", \"offset\": 0, \"type\": \"u32\"}]}", "overlaps"},
      {"vulkan", "{\"local_size\": [8,8,1], \"bindings\": [], \"push_constants\": "
                 "[{\"name\": \"n\", \"offset\": 0, \"type\": \"u64\"}]}", "not u32, i32 or f32"},
      {"vulkan", "{\"local_size\": [8,8,1], \"bindings\": [{\"set\": 0}]}", "with a name"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ASSERT_HAS(parse_err(bad[i].backend, bad[i].json), bad[i].why);
  gk_image_info cpu = {.backend = "cpu", .launch = "{}"};
  gk_launch *none = NULL;
  assert_int_equal(gk_launch_parse(&cpu, NULL, &none), GK_EINVAL);
  ASSERT_HAS(gk_last_error(), "cpu rows have no launch");
}

/* ---- every real row against the reference evaluator ----------------------- */

static const int64_t AWKWARD[] = {0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 255, 257, 1000,
                                  4096, 65535, 65536, 1000003, 2147483647LL, 4294967297LL};
#define NAWK (sizeof AWKWARD / sizeof AWKWARD[0])

/* The reference's answer for axis k: the expression text from the row's
 * JSON, evaluated by ref_count, then clamped as docs/kernels.md says. */
static int64_t reference(const char *text, const char *const *names, const int64_t *vals, int n,
                         uint64_t max, int *failed) {
  int64_t v;
  char err[256];
  *failed = ref_count(text, names, vals, n, &v, err, sizeof err) != 0;
  if (*failed) return 0;
  return v < 1 ? 1 : (uint64_t)v > max ? (int64_t)max : v;
}

/* The count expressions of one row (grid or groups), as text. */
static int row_counts(const char *json, const char *entry, char texts[3][300]) {
  /* A minimal reading: find "grid" or "groups", then three items. The
   * recipes write them as numbers or strings without escapes. */
  const char *p = strstr(json, "\"grid\"");
  if (!p) p = strstr(json, "\"groups\"");
  (void)entry;
  if (!p || !(p = strchr(p, '['))) return -1;
  p++;
  for (int k = 0; k < 3; k++) {
    while (*p == ' ' || *p == ',') p++;
    size_t n = 0;
    if (*p == '"') {
      p++;
      while (p[n] && p[n] != '"') n++;
      snprintf(texts[k], 300, "%.*s", (int)n, p);
      p += n + 1;
    } else {
      while (p[n] >= '0' && p[n] <= '9') n++;
      snprintf(texts[k], 300, "%.*s", (int)n, p);
      p += n;
    }
  }
  return 0;
}

static void real_rows(void **state) {
  (void)state;
  int rows = 0, evals = 0;
  for (int ai = 0; ai < narchives; ai++) {
    gk_archive *ar;
    if (access(archives[ai], R_OK) != 0 || gk_archive_open(archives[ai], &ar) != GK_OK) {
      printf("SKIP: %s: no such archive here (its fixture needs its toolchain)\n", archives[ai]);
      continue;
    }
    size_t count;
    assert_int_equal(gk_archive_count(ar, &count), GK_OK);
    for (size_t i = 0; i < count; i++) {
      gk_image_info row;
      assert_int_equal(gk_archive_image(ar, i, &row), GK_OK);
      if (strcmp(row.backend, "cpu") == 0) continue;
      gk_launch *L;
      if (gk_launch_parse(&row, NULL, &L) != GK_OK)
        fail_msg("%s: %s %s %s: %s", archives[ai], row.kernel, row.target, row.variant,
                 gk_last_error());
      rows++;
      char texts[3][300];
      assert_int_equal(row_counts(row.launch, NULL, texts), 0);
      size_t np = gk_launch_nparams(L);
      const char *names[GK_LAUNCH_MAX_PARAMS];
      gk_arg_type types[GK_LAUNCH_MAX_PARAMS];
      for (size_t k = 0; k < np; k++) gk_launch_param(L, k, &names[k], &types[k]);
      gk_device dev = {.backend = gk_backend_from_name(row.backend)};
      gk_device_limits lim;
      assert_int_equal(gk_device_limits_known(&dev, &lim), GK_OK);
      /* Each integer parameter takes each awkward value, the others a
       * rotation of them: NAWK cases per parameter. */
      for (size_t pick = 0; pick < np; pick++)
        for (size_t w = 0; w < NAWK; w++) {
          gk_arg args[GK_LAUNCH_MAX_PARAMS];
          int64_t vals[GK_LAUNCH_MAX_PARAMS];
          for (size_t k = 0; k < np; k++) {
            int64_t v = k == pick ? AWKWARD[w] : AWKWARD[(w + 3 * k + 1) % NAWK];
            if (types[k] == GK_ARG_I32 && v > INT32_MAX) v = INT32_MAX;
            /* Vulkan, WGSL, Metal pass sizes as u32. */
            if (dev.backend != GK_BACKEND_CUDA && dev.backend != GK_BACKEND_ROCM &&
                v > (int64_t)UINT32_MAX)
              v = UINT32_MAX;
            vals[k] = v;
            args[k] = types[k] == GK_ARG_PTR   ? gk_arg_ptr(0x1000 * (k + 1))
                      : types[k] == GK_ARG_I64 ? gk_arg_i64(v)
                      : types[k] == GK_ARG_I32 ? gk_arg_i32((int32_t)v)
                                               : gk_arg_f32(0.5f);
          }
          gk_launch_dims d;
          int rc = gk_launch_eval(L, &lim, args, np, &d);
          for (int ax = 0; ax < 3; ax++) {
            uint64_t max = lim.max_groups[ax];
            if (dev.backend == GK_BACKEND_ROCM && max > UINT32_MAX / d.block[ax])
              max = UINT32_MAX / d.block[ax];
            int failed;
            int64_t want = reference(texts[ax], names, vals, (int)np, max, &failed);
            if (failed != (rc != GK_OK))
              fail_msg("%s %s %s: '%s' with value %lld: libgk %s, the reference %s",
                       row.kernel, row.backend, row.target, texts[ax], (long long)AWKWARD[w],
                       rc == GK_OK ? "evaluates" : gk_last_error(),
                       failed ? "fails" : "evaluates");
            if (!failed && rc == GK_OK && (int64_t)d.grid[ax] != want)
              fail_msg("%s %s %s: grid[%d] '%s': libgk %u, the reference %lld", row.kernel,
                       row.backend, row.target, ax, texts[ax], d.grid[ax], (long long)want);
            evals++;
          }
        }
      gk_launch_free(L);
    }
    gk_archive_close(ar);
  }
  printf("%d launch rows, %d counts checked against the reference\n", rows, evals);
}

int main(int argc, char **argv) {
  archives = argv + 1;
  narchives = argc - 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(expressions),
      cmocka_unit_test(shapes),
      cmocka_unit_test(real_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
