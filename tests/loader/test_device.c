/*
 * test_device.c - status texts, backend names, device parse/format/detect,
 * and the x86-64 level rule on synthetic CPUs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h" /* assert_contains */
#include "gk.h"
#include "gk_internal.h"

/* ---- gk_strerror -----------------------------------------------------------
 */

static void strerror_every_code(void **state) {
  (void)state;
  static const struct {
    int code;
    const char *text;
  } want[] = {
      {GK_OK, "success"},
      {GK_EINVAL, "invalid argument"},
      {GK_ENOMEM, "out of memory"},
      {GK_EIO, "I/O error"},
      {GK_ENOTARCHIVE, "not a gllm-kernels archive"},
      {GK_EVERSION, "unsupported archive format version"},
      {GK_ECORRUPT, "archive is corrupt"},
      {GK_ENOKERNEL, "no such kernel or variant in the archive"},
      {GK_ENOIMAGE, "no image in the archive fits the device"},
      {GK_ENODEVICE, "no device of the requested kind"},
      {GK_EDRIVER, "the device driver reported an error"},
      {GK_ENOSYMBOL, "no such symbol in the module"},
      {GK_EHASH, "image SHA-256 does not match the index"},
      {GK_EFORMAT, "image does not match its index row (ELF header)"},
      {GK_ETOOBIG, "image exceeds the size limit"},
      {GK_ERANGE, "index out of range"},
      {GK_ESIGNATURE, "archive signature missing or not valid"},
  };
  /* Every value from 0 down to the last code is listed: none forgotten. */
  assert_int_equal(sizeof want / sizeof want[0], 1 - GK_ESIGNATURE);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_int_equal(want[i].code, -(int)i);
    assert_string_equal(gk_strerror(want[i].code), want[i].text);
  }
}

static void strerror_unknown(void **state) {
  (void)state;
  int unknown[] = {1, 2, GK_ESIGNATURE - 1, -1000, 12345, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    assert_string_equal(gk_strerror(unknown[i]), "unknown status");
}

/* ---- backends --------------------------------------------------------------
 */

static void backend_names(void **state) {
  (void)state;
  const char *names[] = {NULL, "cuda", "rocm", "metal", "vulkan", "cpu"};
  for (int b = GK_BACKEND_CUDA; b <= GK_BACKEND_CPU; b++) {
    assert_string_equal(gk_backend_name((gk_backend)b), names[b]);
    assert_int_equal(gk_backend_from_name(names[b]), b);
  }
  assert_null(gk_backend_name(GK_BACKEND_NONE));
  assert_null(gk_backend_name((gk_backend)7)); /* 6 is wgsl */
  assert_null(gk_backend_name((gk_backend)-1));
  assert_int_equal(gk_backend_from_name(NULL), GK_BACKEND_NONE);
  assert_int_equal(gk_backend_from_name(""), GK_BACKEND_NONE);
  assert_int_equal(gk_backend_from_name("CUDA"), GK_BACKEND_NONE);
  assert_int_equal(gk_backend_from_name("cpux"), GK_BACKEND_NONE);
  assert_int_equal(gk_backend_from_name("webgpu"), GK_BACKEND_NONE);
}

/* ---- detection -------------------------------------------------------------
 */

static void detect_cpu(void **state) {
  (void)state;
  gk_device d, c;
  char why[256] = "untouched";
  assert_int_equal(gk_device_detect(&d), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_CPU); /* no GPU backend exists yet */
  assert_true(gk__x86_level_from_name(d.arch) >= 1);
  assert_true(strlen(d.name) > 0);
  assert_int_equal(d.driver_version, 0);
  assert_int_equal(
      gk_device_detect_backend(GK_BACKEND_CPU, &c, why, sizeof why), GK_OK);
  assert_string_equal(why, "");
  assert_string_equal(c.arch, d.arch);
  assert_int_equal(gk_device_detect(NULL), GK_EINVAL);
}

/* An independent oracle: GCC's own level check (GCC 12+; clang lacks it). */
static void detect_matches_gcc(void **state) {
  (void)state;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    __GNUC__ >= 12
  gk_device d;
  assert_int_equal(gk_device_detect(&d), GK_OK);
  int gcc = __builtin_cpu_supports("x86-64-v4")   ? 4
            : __builtin_cpu_supports("x86-64-v3") ? 3
            : __builtin_cpu_supports("x86-64-v2") ? 2
                                                  : 1;
  assert_string_equal(d.arch, gk__x86_level_name(gcc));
#else
  skip();
#endif
}

static void detect_gpu_backends_say_why(void **state) {
  (void)state;
  const char *names[] = {NULL, "cuda", "rocm", "metal", "vulkan"};
  for (int b = GK_BACKEND_CUDA; b <= GK_BACKEND_VULKAN; b++) {
    if (b == GK_BACKEND_CUDA || b == GK_BACKEND_ROCM || b == GK_BACKEND_VULKAN ||
        b == GK_BACKEND_METAL)
      continue; /* implemented: tests/backends/cuda, tests/backends/rocm, tests/backends/vulkan, tests/backends/metal */
    gk_device d;
    memset(&d, 0x5a, sizeof d);
    gk_device copy = d;
    char why[256] = "";
    assert_int_equal(
        gk_device_detect_backend((gk_backend)b, &d, why, sizeof why),
        GK_ENODEVICE);
    assert_contains(why, names[b]);
    assert_contains(why, "not implemented yet");
    assert_memory_equal(&d, &copy, sizeof d); /* out untouched on failure */
    /* why may be NULL. */
    assert_int_equal(gk_device_detect_backend((gk_backend)b, &d, NULL, 0),
                     GK_ENODEVICE);
  }
}

static void detect_backend_bad_args(void **state) {
  (void)state;
  gk_device d;
  char why[64];
  assert_int_equal(
      gk_device_detect_backend(GK_BACKEND_NONE, &d, why, sizeof why),
      GK_EINVAL);
  assert_contains(why, "unknown backend");
  assert_int_equal(gk_device_detect_backend((gk_backend)42, &d, NULL, 0),
                   GK_EINVAL);
  assert_int_equal(
      gk_device_detect_backend(GK_BACKEND_CPU, NULL, why, sizeof why),
      GK_EINVAL);
  assert_contains(why, "out is NULL");
  /* A tiny why buffer is truncated, never overrun. */
  char small[8];
  memset(small, 'x', sizeof small);
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, small, 5),
                   GK_ENODEVICE);
  assert_int_equal(strlen(small), 4);
  assert_int_equal(small[5], 'x');
}

/* ---- the level rule on synthetic CPUs -------------------------------------
 */

/* Feature words of each level (see cpu.c); macros, as bit 31 does not fit
 * an enumeration constant. */
#define V2_L1 (1u << 0 | 1u << 9 | 1u << 13 | 1u << 19 | 1u << 20 | 1u << 23)
#define V2_E1 (1u << 0)
#define V3_L1 (V2_L1 | 1u << 12 | 1u << 22 | 1u << 27 | 1u << 28 | 1u << 29)
#define V3_L7 (1u << 3 | 1u << 5 | 1u << 8)
#define V3_E1 (V2_E1 | 1u << 5)
#define V3_X 0x6u
#define V4_L7 (V3_L7 | 1u << 16 | 1u << 17 | 1u << 28 | 1u << 30 | 1u << 31)
#define V4_X 0xe6u

static void level_rule_table(void **state) {
  (void)state;
  static const struct {
    gk__x86_cpuid c;
    int level;
    const char *what;
  } cases[] = {
      {{0, 0, 0, 0}, 1, "nothing beyond the baseline"},
      {{V2_L1, 0, V2_E1, 0}, 2, "exactly v2"},
      {{V2_L1 & ~(1u << 23), 0, V2_E1, 0}, 1, "v2 without popcnt"},
      {{V2_L1, 0, 0, 0}, 1, "v2 without lahf"},
      {{V2_L1 & ~(1u << 13), 0, V2_E1, 0}, 1, "v2 without cx16"},
      {{V3_L1, V3_L7, V3_E1, V3_X}, 3, "exactly v3"},
      {{V3_L1, V3_L7, V3_E1, 0x2}, 2, "v3 whose OS does not save AVX state"},
      {{V3_L1 & ~(1u << 27), V3_L7, V3_E1, V3_X}, 2, "v3 without osxsave"},
      {{V3_L1, V3_L7, V2_E1, V3_X}, 2, "v3 without lzcnt"},
      {{V3_L1 & ~(1u << 22), V3_L7, V3_E1, V3_X}, 2, "v3 without movbe"},
      {{V3_L1, V3_L7 & ~(1u << 8), V3_E1, V3_X}, 2, "v3 without bmi2"},
      {{V3_L1, V4_L7, V3_E1, V4_X}, 4, "exactly v4"},
      {{V3_L1, V4_L7, V3_E1, V3_X}, 3, "v4 whose OS does not save ZMM state"},
      {{V3_L1, V4_L7, V3_E1, 0xe6 & ~0x20}, 3, "v4 without opmask state"},
      {{V3_L1, V4_L7 & ~(1u << 31), V3_E1, V4_X}, 3, "v4 without avx512vl"},
      {{V3_L1, V4_L7 & ~(1u << 30), V3_E1, V4_X}, 3, "v4 without avx512bw"},
      {{V2_L1, V4_L7, V3_E1, V4_X}, 2, "avx512 but no avx: still v2"},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, ~0ull}, 4, "every bit set"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (gk__x86_level_of(&cases[i].c) != cases[i].level)
      fail_msg("%s: level %d, expected %d", cases[i].what,
               gk__x86_level_of(&cases[i].c), cases[i].level);
}

static void level_names(void **state) {
  (void)state;
  assert_int_equal(gk__x86_level_from_name("x86-64"), 1);
  assert_int_equal(gk__x86_level_from_name("x86-64-v4"), 4);
  assert_int_equal(gk__x86_level_from_name("x86-64-v1"), 0);
  assert_int_equal(gk__x86_level_from_name("x86-64-v5"), 0);
  assert_int_equal(gk__x86_level_from_name("X86-64-V3"), 0);
  assert_int_equal(gk__x86_level_from_name(NULL), 0);
  assert_null(gk__x86_level_name(0));
  assert_null(gk__x86_level_name(5));
  assert_string_equal(gk__x86_level_name(2), "x86-64-v2");
}

static void level_cap_lowers_detection(void **state) {
  (void)state;
  gk_device real, capped;
  assert_int_equal(gk_device_detect(&real), GK_OK);
  gk__cpu_set_level_cap(1);
  assert_int_equal(gk_device_detect(&capped), GK_OK);
  gk__cpu_set_level_cap(0);
  assert_string_equal(capped.arch, "x86-64");
  assert_int_equal(gk_device_detect(&capped), GK_OK);
  assert_string_equal(capped.arch, real.arch);
}

/* ---- parse and format ------------------------------------------------------
 */

static void parse_good(void **state) {
  (void)state;
  static const struct {
    const char *spec;
    gk_backend backend;
    const char *arch;
    int driver;
    const char *formatted;
  } cases[] = {
      {"cpu:x86-64", GK_BACKEND_CPU, "x86-64", 0, "cpu:x86-64"},
      {"cpu:x86-64-v2", GK_BACKEND_CPU, "x86-64-v2", 0, "cpu:x86-64-v2"},
      {"cpu:x86-64-v3", GK_BACKEND_CPU, "x86-64-v3", 0, "cpu:x86-64-v3"},
      {"cpu:x86-64-v4", GK_BACKEND_CPU, "x86-64-v4", 0, "cpu:x86-64-v4"},
      {"cuda:sm_86", GK_BACKEND_CUDA, "sm_86", 0, "cuda:sm_86"},
      {"cuda:sm_120", GK_BACKEND_CUDA, "sm_120", 0, "cuda:sm_120"},
      {"cuda:sm_90,driver=12.4", GK_BACKEND_CUDA, "sm_90", 12040,
       "cuda:sm_90,driver=12.4"},
      {"cuda:sm_75,driver=13", GK_BACKEND_CUDA, "sm_75", 13000,
       "cuda:sm_75,driver=13.0"},
      {"rocm:gfx90a:sramecc+:xnack-", GK_BACKEND_ROCM, "gfx90a:sramecc+:xnack-",
       0, "rocm:gfx90a:sramecc+:xnack-"},
      {"rocm:gfx1030", GK_BACKEND_ROCM, "gfx1030", 0, "rocm:gfx1030"},
      {"rocm:gfx11-generic", GK_BACKEND_ROCM, "gfx11-generic", 0,
       "rocm:gfx11-generic"},
      {"metal:apple9", GK_BACKEND_METAL, "apple9", 0, "metal:apple9"},
      {"vulkan:llvmpipe", GK_BACKEND_VULKAN, "llvmpipe", 0, "vulkan:llvmpipe"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gk_device d;
    char why[256] = "x", buf[160];
    int rc = gk_device_parse(cases[i].spec, &d, why, sizeof why);
    if (rc != GK_OK)
      fail_msg("'%s': %s (%s)", cases[i].spec, gk_strerror(rc), why);
    assert_string_equal(why, "");
    assert_int_equal(d.backend, cases[i].backend);
    assert_string_equal(d.arch, cases[i].arch);
    assert_int_equal(d.driver_version, cases[i].driver);
    assert_int_equal(d.index, 0);
    assert_contains(d.name, cases[i].spec);
    gk_device_format(&d, buf, sizeof buf);
    assert_string_equal(buf, cases[i].formatted);
    /* The formatted text parses back to the same device. */
    gk_device again;
    assert_int_equal(gk_device_parse(buf, &again, NULL, 0), GK_OK);
    assert_string_equal(again.arch, d.arch);
    assert_int_equal(again.driver_version, d.driver_version);
  }
}

static void parse_bare_backend(void **state) {
  (void)state;
  gk_device d, detected;
  char why[256];
  assert_int_equal(gk_device_parse("cpu", &d, why, sizeof why), GK_OK);
  assert_int_equal(gk_device_detect(&detected), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_CPU);
  assert_string_equal(d.arch, detected.arch);
  /* A bare GPU backend asks for that device, which does not exist here. */
  assert_int_equal(gk_device_parse("cuda", &d, why, sizeof why), GK_ENODEVICE);
  assert_contains(why, "cuda");
}

static void parse_bad(void **state) {
  (void)state;
  static const struct {
    const char *spec, *why;
  } cases[] = {
      {"", "unknown backend ''"},
      {"gpu:sm_86", "unknown backend 'gpu'"},
      {"CPU:x86-64", "unknown backend 'CPU'"},
      {"cpu:", "empty arch"},
      {"cpu:x86-64-v5", "x86-64, x86-64-v2, x86-64-v3, x86-64-v4"},
      {"cpu:haswell", "unknown cpu level 'haswell'"},
      {"cpu,driver=1", "options but no arch"},
      {"cpu:x86-64-v3,driver=1.0", "driver= is for cuda only"},
      {"cpu:x86-64-v3,", "empty option"},
      {"cuda:86", "not a compute capability"},
      {"cuda:sm_", "not a compute capability"},
      {"cuda:sm_8", "not a compute capability"},
      {"cuda:sm_90a", "no 'a' or 'f' suffix"},
      {"cuda:sm_1000", "not a compute capability"},
      {"cuda:compute_90", "not a compute capability"},
      {"cuda:sm_90,driver=", "bad driver version ''"},
      {"cuda:sm_90,driver=12.x", "bad driver version '12.x'"},
      {"cuda:sm_90,driver=-1", "bad driver version"},
      {"cuda:sm_90,driver=12.4.1", "bad driver version"},
      {"cuda:sm_90,turbo=1", "unknown option 'turbo=1'"},
      {"rocm:gfx", "not like gfx90a"},
      {"rocm:sm_86", "not like gfx90a"},
      {"rocm:gfx90a:xnack", "each feature ends in + or -"},
      {"rocm:gfx90a:+", "not like gfx90a"},
      {"rocm:gfx90a:xnack+:", "not like gfx90a"},
      {"metal:", "empty arch"},
      {"vulkan:has space", "may hold only"},
      {"cpu:x86-64-v3-with-a-very-long-name-that-does-not-fit-in-arch-field-at-"
       "all",
       "too long"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gk_device d;
    memset(&d, 0x77, sizeof d);
    gk_device copy = d;
    char why[256] = "";
    int rc = gk_device_parse(cases[i].spec, &d, why, sizeof why);
    if (rc != GK_EINVAL)
      fail_msg("'%s' gave %s, expected GK_EINVAL", cases[i].spec,
               gk_strerror(rc));
    if (!strstr(why, cases[i].why))
      fail_msg("'%s': why '%s' lacks '%s'", cases[i].spec, why, cases[i].why);
    assert_memory_equal(&d, &copy, sizeof d);
    assert_int_equal(gk_device_parse(cases[i].spec, &d, NULL, 0), GK_EINVAL);
  }
}

static void parse_null_args(void **state) {
  (void)state;
  gk_device d;
  char why[128];
  assert_int_equal(gk_device_parse(NULL, &d, why, sizeof why), GK_EINVAL);
  assert_contains(why, "spec is NULL");
  assert_int_equal(gk_device_parse("cpu:x86-64", NULL, why, sizeof why),
                   GK_EINVAL);
  assert_contains(why, "out is NULL");
  char big[400];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big, "cuda:", 5);
  assert_int_equal(gk_device_parse(big, &d, why, sizeof why), GK_EINVAL);
  assert_contains(why, "too long");
}

static void format_edges(void **state) {
  (void)state;
  gk_device d;
  char buf[32];
  memset(buf, 'x', sizeof buf);
  gk_device_format(NULL, buf, sizeof buf);
  assert_string_equal(buf, "");
  gk_device_format(NULL, NULL, 0); /* no crash */
  assert_int_equal(gk_device_parse("cuda:sm_90,driver=12.4", &d, NULL, 0),
                   GK_OK);
  gk_device_format(&d, NULL, 10);
  memset(buf, 'x', sizeof buf);
  gk_device_format(&d, buf, 0);
  assert_int_equal(buf[0], 'x');
  gk_device_format(&d, buf, 8);
  assert_string_equal(buf, "cuda:sm");
  /* A device filled by hand without a terminator is read to its size only. */
  memset(&d, 0, sizeof d);
  d.backend = GK_BACKEND_CPU;
  memset(d.arch, 'v', sizeof d.arch);
  char wide[128];
  gk_device_format(&d, wide, sizeof wide);
  assert_int_equal(strlen(wide), 4 + sizeof d.arch);
  d.backend = (gk_backend)99;
  strcpy(d.arch, "x");
  gk_device_format(&d, wide, sizeof wide);
  assert_string_equal(wide, "none:x");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(strerror_every_code),
      cmocka_unit_test(strerror_unknown),
      cmocka_unit_test(backend_names),
      cmocka_unit_test(detect_cpu),
      cmocka_unit_test(detect_matches_gcc),
      cmocka_unit_test(detect_gpu_backends_say_why),
      cmocka_unit_test(detect_backend_bad_args),
      cmocka_unit_test(level_rule_table),
      cmocka_unit_test(level_names),
      cmocka_unit_test(level_cap_lowers_detection),
      cmocka_unit_test(parse_good),
      cmocka_unit_test(parse_bare_backend),
      cmocka_unit_test(parse_bad),
      cmocka_unit_test(parse_null_args),
      cmocka_unit_test(format_edges),
  };
  return cmocka_run_group_tests_name("loader.device", tests, NULL, NULL);
}
