/*
 * test_select.c - NVIDIA's selection rule as a table: device capability x
 * driver version x archive contents x GK_LOAD_NO_JIT -> the image chosen,
 * or the status and the exact message. Selection reads no image bytes, so
 * the archives (written by tests/loader/fixture.c from docs/archive.md) all
 * carry the same few bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "gk.h"

#define TK13 "nvcc 13.0.88"
#define TK124 "nvcc 12.4.131"

typedef struct row {
  const char *target, *toolchain;
} row;

static const struct {
  const char *name;
  row rows[12];
} archives[] = {
    /* The recipes' list. */
    {"full",
     {{"sm_75", TK13}, {"sm_80", TK13}, {"sm_86", TK13}, {"sm_87", TK13},
      {"sm_89", TK13}, {"sm_90", TK13}, {"sm_90a", TK13}, {"sm_100", TK13},
      {"sm_120", TK13}, {"compute_75", TK13}}},
    /* Family and arch-specific images beside plain ones. */
    {"fam",
     {{"sm_80", TK13}, {"sm_100f", TK13}, {"sm_103", TK13}, {"sm_120a", TK13},
      {"compute_90", TK13}}},
    /* Made by an older toolkit. */
    {"old", {{"sm_80", TK124}, {"compute_80", TK124}}},
    {"ptxonly", {{"compute_75", TK13}}},
    /* A toolchain that does not say which CUDA it is. */
    {"unknowntk", {{"compute_80", "clang 18.1 cuda"}}},
    /* Rows that can never be chosen: a format that does not fit the target. */
    {"odd", {{"compute_80", TK13}, {"sm_89", TK13}}},
};
#define NARCHIVES (sizeof archives / sizeof archives[0])
static char *paths[NARCHIVES];

static int setup(void **state) {
  (void)state;
  static const char bytes[] = "selection reads no image";
  for (size_t a = 0; a < NARCHIVES; a++) {
    fx_image im[12];
    size_t n = 0;
    for (; archives[a].rows[n].target; n++) {
      const row *r = &archives[a].rows[n];
      int ptx = strncmp(r->target, "compute_", 8) == 0;
      /* "odd": the formats are swapped on purpose. */
      if (!strcmp(archives[a].name, "odd")) ptx = !ptx;
      im[n] = (fx_image){"k",
                         "cuda",
                         r->target,
                         "",
                         .format = ptx ? "ptx" : "cubin",
                         .toolchain = r->toolchain,
                         .data = bytes,
                         .size = sizeof bytes};
    }
    /* Every archive also holds a cpu image, which no cuda device takes. */
    im[n++] = (fx_image){"k", "cpu", "x86-64-v2", "", .data = bytes,
                         .size = sizeof bytes};
    char name[64];
    snprintf(name, sizeof name, "%s.gkfat", archives[a].name);
    paths[a] = fx_path(name);
    fx_write(paths[a], im, n);
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t a = 0; a < NARCHIVES; a++) free(paths[a]);
  return 0;
}

static const char *archive_path(const char *name) {
  for (size_t a = 0; a < NARCHIVES; a++)
    if (!strcmp(archives[a].name, name)) return paths[a];
  fail_msg("no archive %s in the table", name);
  return NULL;
}

static void selection_table(void **state) {
  (void)state;
  /* `want`: the chosen target when status is GK_OK, else the exact
   * message with %s standing for the archive's path. */
  static const struct {
    const char *archive, *device;
    unsigned flags;
    int status;
    const char *want;
  } cases[] = {
      /* Same-major SASS, the highest minor not above the device's. */
      {"full", "cuda:sm_75", 0, GK_OK, "sm_75"},
      {"full", "cuda:sm_80", 0, GK_OK, "sm_80"},
      {"full", "cuda:sm_86", 0, GK_OK, "sm_86"},
      {"full", "cuda:sm_87", 0, GK_OK, "sm_87"},
      {"full", "cuda:sm_88", 0, GK_OK, "sm_87"},
      {"full", "cuda:sm_89", 0, GK_OK, "sm_89"},
      {"full", "cuda:sm_100", 0, GK_OK, "sm_100"},
      {"full", "cuda:sm_103", 0, GK_OK, "sm_100"},
      {"full", "cuda:sm_120", 0, GK_OK, "sm_120"},
      {"full", "cuda:sm_121", 0, GK_OK, "sm_120"},
      /* An exact arch-specific image first. */
      {"full", "cuda:sm_90", 0, GK_OK, "sm_90a"},
      {"full", "cuda:sm_90,driver=13.0", GK_LOAD_NO_JIT, GK_OK, "sm_90a"},
      /* No SASS of the major: PTX, unless JIT is forbidden. */
      {"full", "cuda:sm_110", 0, GK_OK, "compute_75"},
      {"full", "cuda:sm_110,driver=13.1", 0, GK_OK, "compute_75"},
      {"full", "cuda:sm_110", GK_LOAD_NO_JIT, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_110; archive '%s' has cuda sm_75..sm_120 "
       "(9 cubins) + compute_75 PTX (CUDA 13.0), cpu x86-64-v2; PTX not "
       "considered (GK_LOAD_NO_JIT)"},
      /* Older than everything. */
      {"full", "cuda:sm_70", 0, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_70; archive '%s' has cuda sm_75..sm_120 "
       "(9 cubins) + compute_75 PTX (CUDA 13.0), cpu x86-64-v2"},
      /* A driver older than the toolkit: neither its SASS (another major)
       * nor its PTX. */
      {"full", "cuda:sm_86,driver=13.0", 0, GK_OK, "sm_86"},
      {"full", "cuda:sm_86,driver=12.4", 0, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_86,driver=12.4; archive '%s' has cuda "
       "sm_75..sm_120 (9 cubins) + compute_75 PTX (CUDA 13.0), cpu x86-64-v2; "
       "cubins from CUDA 13.0 need a driver >= 13.0, this driver is 12.4; PTX "
       "from CUDA 13.0 needs a driver >= 13.0, this driver is 12.4"},
      /* Family images: 10.x with minor >= 0, before plain SASS. */
      {"fam", "cuda:sm_100", 0, GK_OK, "sm_100f"},
      {"fam", "cuda:sm_103", 0, GK_OK, "sm_100f"},
      {"fam", "cuda:sm_110", 0, GK_OK, "compute_90"},
      {"fam", "cuda:sm_120", 0, GK_OK, "sm_120a"},
      {"fam", "cuda:sm_121", 0, GK_OK, "compute_90"},
      {"fam", "cuda:sm_86", 0, GK_OK, "sm_80"},
      {"fam", "cuda:sm_89", GK_LOAD_NO_JIT, GK_OK, "sm_80"},
      {"fam", "cuda:sm_90", 0, GK_OK, "compute_90"},
      {"fam", "cuda:sm_75", 0, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_75; archive '%s' has cuda sm_80..sm_120a "
       "(4 cubins) + compute_90 PTX (CUDA 13.0), cpu x86-64-v2"},
      /* CUDA 12.4 images: SASS on any 12.x driver, PTX from 12.4 on. */
      {"old", "cuda:sm_86,driver=12.2", 0, GK_OK, "sm_80"},
      {"old", "cuda:sm_86,driver=13.0", 0, GK_OK, "sm_80"},
      {"old", "cuda:sm_90,driver=12.4", 0, GK_OK, "compute_80"},
      {"old", "cuda:sm_90,driver=13.0", 0, GK_OK, "compute_80"},
      {"old", "cuda:sm_90,driver=12.2", 0, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_90,driver=12.2; archive '%s' has cuda "
       "sm_80 + compute_80 PTX (CUDA 12.4), cpu x86-64-v2; PTX from CUDA 12.4 "
       "needs a driver >= 12.4, this driver is 12.2"},
      {"old", "cuda:sm_86,driver=11.8", 0, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_86,driver=11.8; archive '%s' has cuda "
       "sm_80 + compute_80 PTX (CUDA 12.4), cpu x86-64-v2; cubins from CUDA "
       "12.4 need a driver >= 12.0, this driver is 11.8; PTX from CUDA 12.4 "
       "needs a driver >= 12.4, this driver is 11.8"},
      {"ptxonly", "cuda:sm_86", 0, GK_OK, "compute_75"},
      {"ptxonly", "cuda:sm_86", GK_LOAD_NO_JIT, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_86; archive '%s' has cuda compute_75 PTX "
       "(CUDA 13.0), cpu x86-64-v2; PTX not considered (GK_LOAD_NO_JIT)"},
      /* A toolkit the row does not name is not held against the driver. */
      {"unknowntk", "cuda:sm_86,driver=11.0", 0, GK_OK, "compute_80"},
      {"odd", "cuda:sm_89", 0, GK_ENOIMAGE,
       "no image of 'k' fits cuda:sm_89; archive '%s' has cuda sm_89 + "
       "compute_80 PTX (CUDA 13.0), cpu x86-64-v2"},
      /* cpu devices never take cuda images, and are told what there is. */
      {"ptxonly", "cpu:x86-64", 0, GK_ENOIMAGE,
       "no image of 'k' fits cpu:x86-64; archive '%s' has cpu x86-64-v2, cuda "
       "compute_75"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *path = archive_path(cases[c].archive);
    gk_archive *ar;
    gk_device dev;
    char why[256];
    assert_int_equal(gk_archive_open(path, &ar), GK_OK);
    if (gk_device_parse(cases[c].device, &dev, why, sizeof why) != GK_OK)
      fail_msg("case %zu: device %s: %s", c, cases[c].device, why);
    size_t index = 4242;
    int rc = gk_archive_select_ex(ar, &dev, "k", NULL, cases[c].flags, &index);
    if (rc != cases[c].status)
      fail_msg("case %zu (%s, %s, flags %u): %s '%s', expected %s", c,
               cases[c].archive, cases[c].device, cases[c].flags, gk_strerror(rc),
               gk_archive_errmsg(ar), gk_strerror(cases[c].status));
    if (rc == GK_OK) {
      gk_image_info info;
      assert_int_equal(gk_archive_image(ar, index, &info), GK_OK);
      if (strcmp(info.target, cases[c].want) || strcmp(info.backend, "cuda"))
        fail_msg("case %zu (%s, %s, flags %u): chose %s %s, expected cuda %s", c,
                 cases[c].archive, cases[c].device, cases[c].flags, info.backend,
                 info.target, cases[c].want);
    } else {
      char want[1024];
      snprintf(want, sizeof want, cases[c].want, path);
      if (strcmp(gk_archive_errmsg(ar), want))
        fail_msg("case %zu:\n got  '%s'\n want '%s'", c, gk_archive_errmsg(ar), want);
      assert_int_equal(index, 4242);
    }
    gk_archive_close(ar);
  }
}

/* gk_archive_explain gives each row's reason, as `gk probe` prints them. */
static void explain_reasons(void **state) {
  (void)state;
  static const struct {
    const char *archive, *device;
    unsigned flags;
    const char *target, *why;
    int fits;
  } cases[] = {
      {"full", "cuda:sm_86", 0, "sm_89", "sm_89 needs minor >= 9, device is sm_86", 0},
      {"full", "cuda:sm_86", 0, "sm_90a", "sm_90a runs on 9.0 only, device is sm_86", 0},
      {"full", "cuda:sm_86", 0, "sm_100", "sm_100 is SASS for major 10, device is sm_86", 0},
      {"full", "cuda:sm_86", 0, "sm_80", "sm_80 runs on sm_86 (SASS, same major)", 1},
      {"full", "cuda:sm_86", 0, "sm_86", "sm_86 runs on sm_86 (SASS, same capability)", 1},
      {"full", "cuda:sm_90", 0, "sm_90a", "sm_90a runs on sm_90 (arch-specific, exact match)", 1},
      {"full", "cuda:sm_86", 0, "compute_75",
       "compute_75 PTX, JIT-compiled for sm_86 by the driver (driver version "
       "unknown; it must be >= 13.0)",
       1},
      {"full", "cuda:sm_86,driver=13.0", 0, "compute_75",
       "compute_75 PTX, JIT-compiled for sm_86 by the driver", 1},
      {"full", "cuda:sm_86", GK_LOAD_NO_JIT, "compute_75",
       "PTX needs the driver's JIT compiler, which GK_LOAD_NO_JIT forbids", 0},
      {"fam", "cuda:sm_103", 0, "sm_100f", "sm_100f runs on sm_103 (family)", 1},
      {"fam", "cuda:sm_121", 0, "sm_120a", "sm_120a runs on 12.0 only, device is sm_121", 0},
      {"fam", "cuda:sm_86", 0, "compute_90",
       "compute_90 PTX needs a device of at least 9.0, device is sm_86", 0},
      {"odd", "cuda:sm_89", 0, "compute_80", "target compute_80 cannot be a cubin image", 0},
      {"old", "cuda:sm_90,driver=12.2", 0, "compute_80",
       "PTX from CUDA 12.4 needs a driver >= 12.4; this driver is 12.2", 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    gk_archive *ar;
    gk_device dev;
    gk_candidate cand[16];
    size_t n = 0;
    assert_int_equal(gk_archive_open(archive_path(cases[c].archive), &ar), GK_OK);
    assert_int_equal(gk_device_parse(cases[c].device, &dev, NULL, 0), GK_OK);
    assert_int_equal(
        gk_archive_explain(ar, &dev, "k", NULL, cases[c].flags, cand, 16, &n), GK_OK);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
      gk_image_info info;
      assert_int_equal(gk_archive_image(ar, cand[i].index, &info), GK_OK);
      if (strcmp(info.backend, "cuda") || strcmp(info.target, cases[c].target)) continue;
      found = 1;
      if (strcmp(cand[i].why, cases[c].why) || cand[i].fits != cases[c].fits)
        fail_msg("case %zu (%s on %s):\n got  '%s' (fits %d)\n want '%s' (fits %d)", c,
                 cases[c].target, cases[c].device, cand[i].why, cand[i].fits,
                 cases[c].why, cases[c].fits);
    }
    if (!found) fail_msg("case %zu: no candidate %s", c, cases[c].target);
    gk_archive_close(ar);
  }
}

/* A device filled in by hand must still be a compute capability. */
static void bad_devices(void **state) {
  (void)state;
  gk_archive *ar;
  gk_device dev;
  size_t index;
  assert_int_equal(gk_archive_open(archive_path("full"), &ar), GK_OK);
  assert_int_equal(gk_device_parse("cuda:sm_90", &dev, NULL, 0), GK_OK);
  const char *bad[] = {"sm_90a", "sm_100f", "compute_90", "sm_9", "gfx90a", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    strcpy(dev.arch, bad[i]);
    assert_int_equal(gk_archive_select(ar, &dev, "k", NULL, &index), GK_EINVAL);
    char want[256];
    snprintf(want, sizeof want,
             "device 'cuda:%s' is not a compute capability like sm_86 (a device "
             "has no 'a' or 'f' suffix and is no compute_XY)",
             bad[i]);
    assert_string_equal(gk_archive_errmsg(ar), want);
  }
  gk_archive_close(ar);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(selection_table),
      cmocka_unit_test(explain_reasons),
      cmocka_unit_test(bad_devices),
  };
  return cmocka_run_group_tests_name("cuda.select", tests, setup, teardown);
}
