/*
 * test_isa.c - the ROCm rules without a driver, as tables:
 *   target IDs: text -> processor and feature settings, or the error;
 *   selection: device ISA string x archive -> chosen target, or the status
 *     and the exact message (the rule of comgr's isCompatibleIsaName:
 *     exact processor, +/- features equal to the device's, then generic);
 *   ELF check: code object header x index row -> accepted, or the reason
 *     (EM_AMDGPU, EI_OSABI 64, e_flags processor, xnack/sramecc fields of
 *     code object v4+ and v3, generic version of v6).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "amd_elf.h"
#include "fixture.h"
#include "gk.h"
#include "gk_internal.h"

static void target_ids(void **state) {
  (void)state;
  static const struct {
    const char *id;
    int ok;
    const char *proc; /* or a part of the error when !ok */
    char xnack, sramecc;
  } cases[] = {
      {"gfx90a", 1, "gfx90a", 0, 0},
      {"gfx90a:xnack+", 1, "gfx90a", '+', 0},
      {"gfx90a:sramecc+:xnack-", 1, "gfx90a", '-', '+'},
      {"gfx90a:xnack-:sramecc+", 1, "gfx90a", '-', '+'}, /* any order */
      {"amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", 1, "gfx942", '-', '+'},
      {"amdgcn-amd-amdhsa--gfx1030", 1, "gfx1030", 0, 0},
      {"gfx11-generic", 1, "gfx11-generic", 0, 0},
      {"gfx10-3-generic", 1, "gfx10-3-generic", 0, 0},
      {"gfx9-4-generic:xnack-", 1, "gfx9-4-generic", '-', 0},
      {"gfx", 0, "is not an AMD target ID", 0, 0},
      {"sm_90", 0, "is not an AMD target ID", 0, 0},
      {"GFX90A", 0, "is not an AMD target ID", 0, 0},
      {"gfx90a-", 0, "is not an AMD target ID", 0, 0},
      {"gfx90a:xnack", 0, "unknown feature 'xnack'", 0, 0},
      {"gfx90a:xnick+", 0, "unknown feature 'xnick+'", 0, 0},
      {"gfx90a:xnack+:xnack-", 0, "repeated feature 'xnack-'", 0, 0},
      {"gfx90a:", 0, "unknown feature ''", 0, 0},
      {"", 0, "is not an AMD target ID", 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    gk__amd_target t;
    char why[256] = "";
    int ok = gk__amd_parse(cases[c].id, &t, why, sizeof why);
    if (ok != cases[c].ok)
      fail_msg("case %zu '%s': parse gave %d (%s)", c, cases[c].id, ok, why);
    if (ok) {
      assert_string_equal(t.proc, cases[c].proc);
      assert_int_equal(t.xnack, cases[c].xnack);
      assert_int_equal(t.sramecc, cases[c].sramecc);
    } else if (!strstr(why, cases[c].proc)) {
      fail_msg("case %zu '%s': '%s' lacks '%s'", c, cases[c].id, why, cases[c].proc);
    }
  }
}

/* ---- selection ----------------------------------------------------------- */

typedef struct row {
  const char *backend, *target;
} row;

static const struct {
  const char *name;
  row rows[20];
} archives[] = {
    {"gfx",
     {{"rocm", "gfx906"},
      {"rocm", "gfx908"},
      {"rocm", "gfx90a"},
      {"rocm", "gfx90a:xnack-"},
      {"rocm", "gfx90a:sramecc+:xnack-"},
      {"rocm", "gfx1030"},
      {"rocm", "gfx10-3-generic"},
      {"rocm", "gfx11-generic"},
      {"cpu", "x86-64"}}},
    /* A generic image pinned to the device's setting still loses to an
     * exact processor built for "any". */
    {"generic",
     {{"rocm", "gfx906"}, {"rocm", "gfx9-generic"}, {"rocm", "gfx9-generic:xnack-"}}},
    {"generic_only", {{"rocm", "gfx9-generic"}, {"rocm", "gfx9-generic:xnack-"}}},
    /* The rocm rows of a release (hipcc.lua's default_targets): hipcc 5.2
     * builds the first six, clang-19 (hipclang.lua) the rest. */
    {"release",
     {{"rocm", "gfx906"}, {"rocm", "gfx908"}, {"rocm", "gfx90a"}, {"rocm", "gfx940"},
      {"rocm", "gfx1010"}, {"rocm", "gfx1030"}, {"rocm", "gfx942"}, {"rocm", "gfx1100"},
      {"rocm", "gfx1101"}, {"rocm", "gfx1102"}, {"rocm", "gfx1200"}, {"rocm", "gfx1201"},
      {"rocm", "gfx9-generic"}, {"rocm", "gfx10-3-generic"}, {"rocm", "gfx11-generic"},
      {"rocm", "gfx12-generic"}}},
};
#define NARCHIVES (sizeof archives / sizeof archives[0])
static char *paths[NARCHIVES];
static unsigned char *img;
static size_t img_size;

static int setup(void **state) {
  (void)state;
  static const char *const k[] = {"qmatmul", NULL};
  img = ae_make(AE_V4, 0x3f, k, &img_size); /* selection reads no bytes */
  for (size_t a = 0; a < NARCHIVES; a++) {
    fx_image im[20];
    size_t n = 0;
    for (; archives[a].rows[n].backend; n++) {
      const row *r = &archives[a].rows[n];
      im[n] = (fx_image){"qmatmul", r->backend, r->target, "bits=4",
                         .format = strcmp(r->backend, "rocm") ? "so" : "hsaco",
                         .data = img, .size = img_size};
    }
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
  free(img);
  return 0;
}

static const char *archive_path(const char *name) {
  for (size_t a = 0; a < NARCHIVES; a++)
    if (!strcmp(archives[a].name, name)) return paths[a];
  fail_msg("no archive %s", name);
  return NULL;
}

static void selection_table(void **state) {
  (void)state;
  /* want: the chosen target when GK_OK, else the exact message with %s for
   * the archive's path. */
  static const struct {
    const char *archive, *device;
    int status;
    const char *want;
  } cases[] = {
      /* Exact processor; features pinned to the device's settings win. */
      {"gfx", "rocm:gfx90a:sramecc+:xnack-", GK_OK, "gfx90a:sramecc+:xnack-"},
      {"gfx", "rocm:gfx90a:sramecc-:xnack-", GK_OK, "gfx90a:xnack-"},
      {"gfx", "rocm:gfx90a:sramecc+:xnack+", GK_OK, "gfx90a"},
      /* A device that reports no setting takes only "any" images. */
      {"gfx", "rocm:gfx90a", GK_OK, "gfx90a"},
      {"gfx", "rocm:gfx908:sramecc+:xnack-", GK_OK, "gfx908"},
      {"gfx", "rocm:gfx906:sramecc-:xnack+", GK_OK, "gfx906"},
      /* Exact beats generic; generic covers the family. */
      {"gfx", "rocm:gfx1030", GK_OK, "gfx1030"},
      {"gfx", "rocm:gfx1031", GK_OK, "gfx10-3-generic"},
      {"gfx", "rocm:gfx1036", GK_OK, "gfx10-3-generic"},
      {"gfx", "rocm:gfx1100", GK_OK, "gfx11-generic"},
      {"gfx", "rocm:gfx1151", GK_OK, "gfx11-generic"},
      {"gfx", "cpu:x86-64-v3", GK_OK, "x86-64"},
      /* Nothing fits: the message lists what the archive holds. */
      {"gfx", "rocm:gfx1201", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits rocm:gfx1201; archive '%s' has cpu x86-64, rocm "
       "gfx10-3-generic, rocm gfx1030, rocm gfx11-generic, rocm gfx906, rocm gfx908, rocm "
       "gfx90a, rocm gfx90a:sramecc+:xnack-, rocm gfx90a:xnack-"},
      {"gfx", "rocm:gfx942:sramecc+:xnack-", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits rocm:gfx942:sramecc+:xnack-; archive '%s' has cpu "
       "x86-64, rocm gfx10-3-generic, rocm gfx1030, rocm gfx11-generic, rocm gfx906, rocm "
       "gfx908, rocm gfx90a, rocm gfx90a:sramecc+:xnack-, rocm gfx90a:xnack-"},
      /* Devices are processors: a generic name or a feature the processor
       * lacks is refused. */
      {"gfx", "rocm:gfx11-generic", GK_EINVAL,
       "device 'rocm:gfx11-generic' names the generic target gfx11-generic; a device is a "
       "processor such as gfx1100"},
      {"gfx", "rocm:gfx1030:xnack-", GK_EINVAL,
       "device 'rocm:gfx1030:xnack-' sets xnack, which gfx1030 does not have"},
      {"generic", "rocm:gfx906:sramecc+:xnack-", GK_OK, "gfx906"},
      {"generic", "rocm:gfx900:xnack-", GK_OK, "gfx9-generic:xnack-"},
      {"generic", "rocm:gfx900:xnack+", GK_OK, "gfx9-generic"},
      {"generic_only", "rocm:gfx906:sramecc+:xnack-", GK_OK, "gfx9-generic:xnack-"},
      {"generic_only", "rocm:gfx90c:xnack+", GK_OK, "gfx9-generic"},
      /* gfx908 and gfx90a belong to no generic family. */
      {"generic_only", "rocm:gfx90a:sramecc+:xnack-", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits rocm:gfx90a:sramecc+:xnack-; archive '%s' has rocm "
       "gfx9-generic, rocm gfx9-generic:xnack-"},
      /* A release: every processor with an image takes it, the rest of
       * each family its generic target. */
      {"release", "rocm:gfx942:sramecc+:xnack-", GK_OK, "gfx942"},
      {"release", "rocm:gfx942:sramecc-:xnack+", GK_OK, "gfx942"},
      {"release", "rocm:gfx940:sramecc+:xnack-", GK_OK, "gfx940"},
      {"release", "rocm:gfx1100", GK_OK, "gfx1100"},
      {"release", "rocm:gfx1101", GK_OK, "gfx1101"},
      {"release", "rocm:gfx1102", GK_OK, "gfx1102"},
      {"release", "rocm:gfx1103", GK_OK, "gfx11-generic"},
      {"release", "rocm:gfx1150", GK_OK, "gfx11-generic"},
      {"release", "rocm:gfx1151", GK_OK, "gfx11-generic"},
      {"release", "rocm:gfx1200", GK_OK, "gfx1200"},
      {"release", "rocm:gfx1201", GK_OK, "gfx1201"},
      {"release", "rocm:gfx1030", GK_OK, "gfx1030"},
      {"release", "rocm:gfx1032", GK_OK, "gfx10-3-generic"},
      {"release", "rocm:gfx1010:xnack-", GK_OK, "gfx1010"},
      {"release", "rocm:gfx906:sramecc+:xnack-", GK_OK, "gfx906"},
      {"release", "rocm:gfx900:xnack-", GK_OK, "gfx9-generic"},
      {"release", "rocm:gfx90c:xnack+", GK_OK, "gfx9-generic"},
      /* gfx9-4-generic is not built (clang 19 does not know it): gfx941
       * has nothing. */
      {"release", "rocm:gfx941:sramecc+:xnack-", GK_ENOIMAGE,
       "no image of 'qmatmul' bits=4 fits rocm:gfx941:sramecc+:xnack-; archive '%s' has rocm "
       "gfx10-3-generic, rocm gfx1010, rocm gfx1030, rocm gfx11-generic, rocm gfx1100, rocm "
       "gfx1101, rocm gfx1102, rocm gfx12-generic, rocm gfx1200, rocm gfx1201, rocm "
       "gfx9-generic, rocm gfx906, rocm gfx908, rocm gfx90a, rocm gfx940, rocm gfx942"},
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
    int rc = gk_archive_select(ar, &dev, "qmatmul", "bits=4", &index);
    if (rc != cases[c].status)
      fail_msg("case %zu (%s, %s): %s '%s', expected %s", c, cases[c].archive,
               cases[c].device, gk_strerror(rc), gk_archive_errmsg(ar),
               gk_strerror(cases[c].status));
    if (rc == GK_OK) {
      gk_image_info info;
      assert_int_equal(gk_archive_image(ar, index, &info), GK_OK);
      if (strcmp(info.target, cases[c].want))
        fail_msg("case %zu (%s on %s): chose %s, expected %s", c, cases[c].device,
                 cases[c].archive, info.target, cases[c].want);
    } else {
      char want[1024];
      snprintf(want, sizeof want, cases[c].want, path);
      if (strcmp(gk_archive_errmsg(ar), want))
        fail_msg("case %zu:\n got  '%s'\n want '%s'", c, gk_archive_errmsg(ar), want);
    }
    gk_archive_close(ar);
  }
}

/* gk_archive_explain gives each candidate the rule's reason. */
static void explain_reasons(void **state) {
  (void)state;
  gk_archive *ar;
  gk_device dev;
  gk_candidate cand[16];
  size_t n = 0;
  assert_int_equal(gk_archive_open(archive_path("gfx"), &ar), GK_OK);
  assert_int_equal(gk_device_parse("rocm:gfx90a:sramecc+:xnack+", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, cand, 16, &n), GK_OK);
  assert_int_equal(n, 9);
  static const struct {
    const char *target;
    int fits, chosen;
    const char *why;
  } want[] = {
      {"x86-64", 0, 0, "built for cpu, device is rocm"},
      {"gfx10-3-generic", 0, 0, "gfx10-3-generic does not cover gfx90a"},
      {"gfx1030", 0, 0, "built for gfx1030, device is gfx90a"},
      {"gfx11-generic", 0, 0, "gfx11-generic does not cover gfx90a"},
      {"gfx906", 0, 0, "built for gfx906, device is gfx90a"},
      {"gfx908", 0, 0, "built for gfx908, device is gfx90a"},
      {"gfx90a", 1, 1, "gfx90a runs on gfx90a:sramecc+:xnack+"},
      {"gfx90a:sramecc+:xnack-", 0, 0, "needs xnack-, device has xnack+"},
      {"gfx90a:xnack-", 0, 0, "needs xnack-, device has xnack+"},
  };
  for (size_t i = 0; i < n; i++) {
    gk_image_info info;
    assert_int_equal(gk_archive_image(ar, cand[i].index, &info), GK_OK);
    assert_string_equal(info.target, want[i].target);
    assert_int_equal(cand[i].fits, want[i].fits);
    assert_int_equal(cand[i].chosen, want[i].chosen);
    assert_string_equal(cand[i].why, want[i].why);
  }
  /* A device reporting no settings cannot take a pinned image. */
  assert_int_equal(gk_device_parse("rocm:gfx90a", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, cand, 16, &n), GK_OK);
  assert_string_equal(cand[8].why, "needs xnack-, device has no xnack setting");
  /* Generic covering is by table: gfx1036 yes, gfx1100 no. */
  assert_int_equal(gk_device_parse("rocm:gfx1036", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_explain(ar, &dev, "qmatmul", "bits=4", 0, cand, 16, &n), GK_OK);
  assert_string_equal(cand[1].why, "generic gfx10-3-generic covers gfx1036");
  gk_archive_close(ar);
}

/* ---- ELF check ----------------------------------------------------------- */

static void elf_table(void **state) {
  (void)state;
  enum { ANY = 0x100 | 0x400, V4 = AE_V4, V6 = AE_V6, V3 = AE_V3 };
  /* osabi/abiv 0xff: as ae_make writes (64, the given version). want NULL:
   * accepted; else a part of the message. */
  static const struct {
    const char *target;
    unsigned abiv;
    uint32_t flags;
    int osabi;
    const char *want;
  } cases[] = {
      {"gfx90a", V4, 0x3f | ANY, -1, NULL},
      {"gfx90a", AE_V5, 0x3f | ANY, -1, NULL},
      {"gfx90a:xnack-", V4, 0x3f | 0x200 | 0x400, -1, NULL},
      {"gfx90a:sramecc+:xnack+", V4, 0x3f | 0x300 | 0xc00, -1, NULL},
      {"gfx906", V4, 0x2f | ANY, -1, NULL},
      {"gfx1030", V4, 0x36, -1, NULL},
      {"gfx1100", AE_V5, 0x41, -1, NULL},
      {"gfx11-generic", V6, 0x01000054, -1, NULL},
      {"gfx10-3-generic", V6, 0x01000053, -1, NULL},
      {"gfx906:xnack+", V3, 0x2f | 0x100, -1, NULL},
      {"gfx906", V3, 0x2f, -1, NULL},
      /* The processor. */
      {"gfx908", V4, 0x2f | ANY, -1, "the code object is for gfx906 (e_flags 0x52f), not gfx908"},
      {"gfx1030", V4, 0x99, -1, "the code object is for an unknown processor (e_flags 0x99), not gfx1030"},
      {"gfx1250", V4, 0x99, -1, "libgk does not know the ELF machine of processor 'gfx1250'"},
      /* Feature fields (v4+): + on, - off, unset any, absent unsupported. */
      {"gfx90a:xnack-", V4, 0x3f | ANY, -1,
       "the code object has xnack any (e_flags 0x53f), the row's target gfx90a:xnack- means off"},
      {"gfx90a", V4, 0x3f | 0x300 | 0x400, -1,
       "the code object has xnack on (e_flags 0x73f), the row's target gfx90a means any"},
      {"gfx90a:sramecc-", V4, 0x3f | 0x100 | 0xc00, -1,
       "the code object has sramecc on (e_flags 0xd3f), the row's target gfx90a:sramecc- means off"},
      {"gfx1030", V4, 0x36 | 0x100, -1,
       "the code object has xnack any (e_flags 0x136), the row's target gfx1030 means unsupported"},
      {"gfx906:xnack+", V3, 0x2f, -1, "the code object has xnack off, the row says gfx906:xnack+"},
      /* Generic versions (v6 only). */
      {"gfx11-generic", AE_V5, 0x54, -1, "no generic version (code object v5, e_flags 0x54); gfx11-generic needs code object v6"},
      {"gfx1100", V6, 0x01000041, -1, "marked generic (version 1), but gfx1100 is a processor"},
      {"gfx11-generic", V6, 0x01000053, -1, "the code object is for gfx10-3-generic"},
      /* The HSA ABI. */
      {"gfx90a", V4, 0x3f | ANY, 0, "not an HSA code object (EI_OSABI 0, not 64)"},
      {"gfx90a", 0, 0x3f | ANY, -1, "AMD code object v2; libgk reads v3 to v6"},
      {"gfx90a", 5, 0x3f | ANY, -1, "AMD code object v7; libgk reads v3 to v6"},
      /* The row's own target. */
      {"gfx90a:xnick+", V4, 0x3f | ANY, -1, "rocm target: 'gfx90a:xnick+' has an unknown feature"},
  };
  static const char *const k[] = {"qmatmul", NULL};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t size;
    unsigned char *co = ae_make(cases[c].abiv, cases[c].flags, k, &size);
    assert_non_null(co);
    if (cases[c].osabi >= 0) co[7] = (unsigned char)cases[c].osabi;
    fx_image im = {"qmatmul", "rocm", cases[c].target, "bits=4", .format = "hsaco",
                   .data = co, .size = size};
    char *path = fx_path("elf.gkfat");
    fx_write(path, &im, 1);
    gk_archive *ar;
    void *bytes = NULL;
    size_t n = 0;
    assert_int_equal(gk_archive_open(path, &ar), GK_OK);
    int rc = gk_archive_read(ar, 0, &bytes, &n);
    if (!cases[c].want) {
      if (rc != GK_OK)
        fail_msg("case %zu (%s, 0x%x): %s", c, cases[c].target, cases[c].flags,
                 gk_archive_errmsg(ar));
      assert_int_equal(n, size);
      assert_memory_equal(bytes, co, size);
    } else {
      if (rc != GK_EFORMAT || !strstr(gk_archive_errmsg(ar), cases[c].want))
        fail_msg("case %zu (%s, 0x%x): %s '%s', expected EFORMAT with '%s'", c,
                 cases[c].target, cases[c].flags, gk_strerror(rc), gk_archive_errmsg(ar),
                 cases[c].want);
      assert_null(bytes);
    }
    gk_free(bytes);
    gk_archive_close(ar);
    free(path);
    free(co);
  }
}

/* An x86-64 object in a rocm row is refused by its machine. */
static void elf_wrong_machine(void **state) {
  (void)state;
  size_t size;
  static const char *const k[] = {"qmatmul", NULL};
  unsigned char *co = ae_make(AE_V4, 0x3f, k, &size);
  co[18] = 62; /* EM_X86_64 */
  fx_image im = {"qmatmul", "rocm", "gfx90a", "bits=4", .format = "hsaco", .data = co,
                 .size = size};
  char *path = fx_path("machine.gkfat");
  fx_write(path, &im, 1);
  gk_archive *ar;
  void *bytes;
  size_t n;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_read(ar, 0, &bytes, &n), GK_EFORMAT);
  assert_non_null(strstr(gk_archive_errmsg(ar), "built for x86-64 (e_machine 62), not AMDGPU"));
  gk_archive_close(ar);
  free(path);
  free(co);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(target_ids),
      cmocka_unit_test(selection_table),
      cmocka_unit_test(explain_reasons),
      cmocka_unit_test(elf_table),
      cmocka_unit_test(elf_wrong_machine),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
