/*
 * test_driver.c - the ROCm driver path of libgk (detection, loading,
 * symbols, unloading) against a TEST DOUBLE of the HSA runtime
 * (hsa_double.c), installed through gk_driver_set_resolver: these machines
 * have no AMD GPU, so the real runtime can only say "no device"
 * (test_hsa_real.c checks that). The double refuses what ROCr would refuse
 * and reads symbols from the code object it is given, so a wrong image or a
 * wrong call order fails here.
 *
 * With an archive of real hipcc images (argument 1, from the fixture
 * rocm_archive) every rocm row is also loaded through the double on an
 * agent of its processor; so is every row of the archives of clang-19
 * images that follow (arguments 2..., fixture rocm_clang_archive), a
 * generic target's on a member of its family that has no exact image.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "amd_elf.h"
#include "fixture.h"
#include "gk.h"
#include "hsa_double.h"

static const char *real_archive; /* argv[1], may be absent */
static char **clang_archives;     /* argv[2...], NULL-terminated */

#define MI210 "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"

static void say_double(const char *what) {
  print_message("TEST DOUBLE: libhsa-runtime64 is played by tests/rocm/hsa_double.c (%s)\n",
                what);
}

/* The log shows every hsa_init matched by hsa_shut_down and nothing left. */
static void assert_balanced(void) {
  const hd_log *l = hd_get_log();
  assert_int_equal(l->live_inits, 0);
  assert_int_equal(l->readers_live, 0);
  assert_int_equal(l->executables_live, 0);
}

static void detect(void **state) {
  (void)state;
  say_double("one CPU agent, one MI210");
  hd_config c = {.nagents = 2,
                 .agents = {{0, "", ""}, {1, MI210, "AMD Instinct MI210"}}};
  hd_install(&c);
  gk_device d;
  char why[256] = "";
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_ROCM, &d, why, sizeof why), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_ROCM);
  assert_string_equal(d.arch, "gfx90a:sramecc+:xnack-");
  assert_string_equal(d.name, "AMD Instinct MI210");
  assert_int_equal(d.index, 0);
  assert_int_equal(d.driver_version, 0);
  assert_balanced();
  assert_int_equal(hd_get_log()->init_calls, 1);

  /* CUDA first, then ROCm: with no CUDA device here, ROCm is the device. */
  if (gk_device_detect_backend(GK_BACKEND_CUDA, &d, NULL, 0) != GK_OK) {
    assert_int_equal(gk_device_detect(&d), GK_OK);
    assert_int_equal(d.backend, GK_BACKEND_ROCM);
  }

  /* Without a product name, the agent's name. */
  c.agents[1].product = "";
  hd_install(&c);
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_ROCM, &d, why, sizeof why), GK_OK);
  assert_string_equal(d.name, "gfx90a");
  hd_remove();
}

static void detect_none(void **state) {
  (void)state;
  say_double("hsa_init fails / only a CPU agent");
  gk_device d;
  memset(&d, 0x5a, sizeof d);
  gk_device copy = d;
  char why[256];
  hd_config c = {.init_status = 0x1008, .nagents = 1, .agents = {{1, MI210, "x"}}};
  hd_install(&c);
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_ROCM, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_string_equal(why, "no ROCm device: hsa_init failed with "
                           "HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
  assert_memory_equal(&d, &copy, sizeof d);
  assert_balanced();

  c = (hd_config){.nagents = 1, .agents = {{0, "", ""}}};
  hd_install(&c);
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_ROCM, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_string_equal(why, "no ROCm device: HSA found no GPU agent");
  assert_balanced();
  /* The CPU is the device then. */
  assert_int_equal(gk_device_detect(&d), GK_OK);
  assert_true(d.backend != GK_BACKEND_ROCM);
  hd_remove();
}

/* An archive of synthetic code objects, each with e_flags right for its row. */
static char *synthetic_archive(void) {
  static const char *const k[] = {"qmatmul", NULL};
  static const struct {
    const char *target;
    unsigned abiv;
    uint32_t flags;
  } rows[] = {
      {"gfx906", AE_V4, 0x2f | 0x500},
      {"gfx90a", AE_V4, 0x3f | 0x500},
      {"gfx90a:xnack-", AE_V4, 0x3f | 0x600},
      {"gfx1030", AE_V4, 0x36},
      {"gfx10-3-generic", AE_V6, 0x01000053},
      /* Mislabelled on purpose: a gfx906 code object in a gfx908 row. */
      {"gfx908", AE_V4, 0x2f | 0x500},
  };
  fx_image im[6];
  unsigned char *co[6];
  for (int i = 0; i < 6; i++) {
    size_t n;
    co[i] = ae_make(rows[i].abiv, rows[i].flags, k, &n);
    im[i] = (fx_image){"qmatmul", "rocm", rows[i].target, "bits=4", .format = "hsaco",
                       .data = co[i], .size = n};
  }
  char *path = fx_path("synthetic.gkfat");
  fx_write(path, im, 6);
  for (int i = 0; i < 6; i++) free(co[i]);
  return path;
}

static void load_symbols_unload(void **state) {
  (void)state;
  say_double("MI210 with xnack off");
  char *path = synthetic_archive();
  hd_config c = {.nagents = 1, .agents = {{1, MI210, "AMD Instinct MI210"}}};
  hd_install(&c);
  gk_archive *ar;
  gk_module *m;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  /* NULL device: detected, which is the double's MI210. */
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_OK);
  assert_string_equal(gk_module_info(m)->target, "gfx90a:xnack-");
  assert_int_equal(gk_module_device(m)->backend, GK_BACKEND_ROCM);
  const hd_log *l = hd_get_log();
  assert_int_equal(l->loads, 1);
  assert_int_equal(l->freezes, 1);
  assert_int_equal(l->co_machine, 224);
  assert_int_equal(l->co_flags, 0x3f | 0x600);
  assert_string_equal(l->agent_isa, MI210);
  assert_string_equal(l->refused, "");
  assert_int_equal(l->live_inits, 1); /* the module holds one */

  /* The kernel object of "qmatmul.kd", with its descriptor's sizes. */
  uint64_t obj = hd_kernel_object(0x1000);
  assert_ptr_equal(gk_module_symbol(m, "qmatmul"), (void *)(uintptr_t)obj);
  assert_ptr_equal(gk_module_symbol(m, "qmatmul.kd"), (void *)(uintptr_t)obj);
  assert_null(gk_module_symbol(m, "nope"));
  assert_null(gk_module_symbol(m, NULL));
  gk_kernel_info k;
  assert_int_equal(gk_module_kernel_info(m, "qmatmul", &k), GK_OK);
  assert_int_equal(k.object, obj);
  assert_int_equal(k.kernarg_size, AE_KERNARG);
  assert_int_equal(k.kernarg_align, 8);
  assert_int_equal(k.group_segment_size, AE_GROUP);
  assert_int_equal(k.private_segment_size, AE_PRIVATE);
  assert_int_equal(gk_module_kernel_info(m, "nope", &k), GK_ENOSYMBOL);
  assert_int_equal(gk_module_kernel_info(m, "qmatmul", NULL), GK_EINVAL);
  assert_int_equal(gk_module_kernel_info(NULL, "qmatmul", &k), GK_EINVAL);

  /* The module outlives the archive, and unloading releases everything. */
  gk_archive_close(ar);
  assert_non_null(gk_module_symbol(m, "qmatmul"));
  gk_module_unload(m);
  assert_balanced();

  /* xnack on: the "any" image; a gfx1031 takes the generic one. */
  c.agents[0].isa = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+";
  hd_install(&c);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_OK);
  assert_string_equal(gk_module_info(m)->target, "gfx90a");
  gk_module_unload(m);
  c.agents[0].isa = "amdgcn-amd-amdhsa--gfx1031";
  hd_install(&c);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_OK);
  assert_string_equal(gk_module_info(m)->target, "gfx10-3-generic");
  assert_int_equal(hd_get_log()->co_flags, 0x01000053);
  gk_module_unload(m);
  assert_balanced();
  gk_archive_close(ar);
  hd_remove();
  free(path);
}

static void load_refusals(void **state) {
  (void)state;
  say_double("refusals");
  char *path = synthetic_archive();
  gk_archive *ar;
  gk_module *m = (gk_module *)1;
  gk_device dev;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);

  /* A device described by a spec must be the one that is here. */
  hd_config c = {.nagents = 1, .agents = {{1, MI210, "AMD Instinct MI210"}}};
  hd_install(&c);
  assert_int_equal(gk_device_parse("rocm:gfx1030", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_ENODEVICE);
  assert_null(m);
  assert_string_equal(gk_archive_errmsg(ar),
                      "cannot load image 'qmatmul' bits=4 rocm gfx1030: it was chosen for "
                      "'rocm:gfx1030', but ROCm device 0 here is gfx90a:sramecc+:xnack- "
                      "(built for gfx1030, device is gfx90a)");
  assert_int_equal(hd_get_log()->loads, 0);
  assert_balanced();

  /* ... but a spec whose image also fits the real GPU loads. */
  assert_int_equal(gk_device_parse("rocm:gfx90a", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_OK);
  assert_string_equal(gk_module_info(m)->target, "gfx90a");
  gk_module_unload(m);

  /* A mislabelled image never reaches the driver: the ELF check stops it. */
  hd_install(&c);
  assert_int_equal(gk_device_parse("rocm:gfx908:sramecc+:xnack-", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_EFORMAT);
  assert_contains(gk_archive_errmsg(ar), "the code object is for gfx906 (e_flags 0x52f), not gfx908");
  assert_int_equal(hd_get_log()->loads, 0);
  assert_int_equal(hd_get_log()->init_calls, 0);

  /* The driver's refusal is reported with its status. */
  c.load_status = 0x100D;
  hd_install(&c);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_EDRIVER);
  assert_string_equal(gk_archive_errmsg(ar),
                      "cannot load image 'qmatmul' bits=4 rocm gfx90a:xnack- on ROCm device 0 "
                      "(gfx90a:sramecc+:xnack-): hsa_executable_load_agent_code_object failed "
                      "with HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS (0x100d)");
  assert_balanced();

  /* Devices are picked by index among the GPU agents. */
  c = (hd_config){.nagents = 3,
                  .agents = {{1, "amdgcn-amd-amdhsa--gfx1030", "RX 6800"},
                             {0, "", ""},
                             {1, MI210, "MI210"}}};
  hd_install(&c);
  assert_int_equal(gk_device_parse("rocm:gfx90a:sramecc+:xnack-", &dev, NULL, 0), GK_OK);
  dev.index = 1;
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_OK);
  assert_string_equal(hd_get_log()->agent_isa, MI210);
  gk_module_unload(m);
  dev.index = 5;
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_ENODEVICE);
  assert_contains(gk_archive_errmsg(ar), "no ROCm device 5: HSA found 2 GPU agents");
  assert_balanced();

  /* No runtime at all. */
  c = (hd_config){.init_status = 0x1008, .nagents = 1, .agents = {{1, MI210, ""}}};
  hd_install(&c);
  dev.index = 0;
  assert_int_equal(gk_module_load(ar, &dev, "qmatmul", "bits=4", &m), GK_ENODEVICE);
  assert_contains(gk_archive_errmsg(ar), "no ROCm device: hsa_init failed with "
                                         "HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
  gk_archive_close(ar);
  hd_remove();
  free(path);
}

/* The agent ISA whose best image is `target`: its processor with the
 * settings the target pins, the others set the way no pinned image wants. */
static void agent_for(const char *target, char *isa, size_t n) {
  char proc[64];
  snprintf(proc, sizeof proc, "%.*s", (int)strcspn(target, ":"), target);
  /* A generic target: a processor of its family that the archives have no
   * exact image for (gfx12-generic's archive holds generic targets only). */
  static const char *const member[][2] = {{"gfx9-generic", "gfx900"},
                                          {"gfx10-3-generic", "gfx1031"},
                                          {"gfx11-generic", "gfx1103"},
                                          {"gfx12-generic", "gfx1200"}};
  for (size_t i = 0; i < sizeof member / sizeof member[0]; i++)
    if (!strcmp(proc, member[i][0])) snprintf(proc, sizeof proc, "%s", member[i][1]);
  const char *x = strstr(target, ":xnack"), *s = strstr(target, ":sramecc");
  int has_x = !strncmp(proc, "gfx90", 5) || !strncmp(proc, "gfx94", 5) ||
              !strncmp(proc, "gfx101", 6);
  int has_s = !strcmp(proc, "gfx906") || !strcmp(proc, "gfx908") ||
              !strcmp(proc, "gfx90a") || !strncmp(proc, "gfx94", 5);
  snprintf(isa, n, "amdgcn-amd-amdhsa--%s%s%s%s%s", proc,
           has_s ? ":sramecc" : "", has_s ? (s ? (s[8] == '+' ? "+" : "-") : "+") : "",
           has_x ? ":xnack" : "", has_x ? (x ? (x[6] == '+' ? "+" : "-") : "+") : "");
}

/* Loads every rocm row of the archive at `path` through the double on an
 * agent whose best image is that row. Returns the number loaded. */
static size_t load_every_row(const char *path) {
  gk_archive *ar;
  size_t count, done = 0;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  for (size_t i = 0; i < count; i++) {
    gk_image_info row;
    assert_int_equal(gk_archive_image(ar, i, &row), GK_OK);
    if (strcmp(row.backend, "rocm") != 0) continue;
    char isa[128], entry[160];
    agent_for(row.target, isa, sizeof isa);
    hd_config c = {.nagents = 1, .agents = {{1, isa, "TEST DOUBLE agent"}}};
    hd_install(&c);
    gk_module *m;
    if (gk_module_load(ar, NULL, row.kernel, row.variant, &m) != GK_OK)
      fail_msg("%s %s %s on %s: %s (double: %s)", row.kernel, row.variant, row.target, isa,
               gk_archive_errmsg(ar), hd_get_log()->refused);
    if (strcmp(gk_module_info(m)->target, row.target))
      fail_msg("%s %s on %s chose %s, expected %s", row.kernel, row.variant, isa,
               gk_module_info(m)->target, row.target);
    /* What the driver got is an AMDGPU code object the double accepted for
     * this processor, and the entry point is a kernel with a descriptor. */
    assert_int_equal(hd_get_log()->co_machine, 224);
    assert_string_equal(hd_get_log()->refused, "");
    /* qmatmul images carry its int8-x twin as a second entry point. */
    const int q8x = strcmp(row.kernel, "qmatmul") == 0;
    snprintf(entry, sizeof entry, q8x ? "[\"%s\",\"%s_q8x\"]" : "[\"%s\"]", row.kernel,
             row.kernel);
    assert_string_equal(row.entry, entry);
    for (int e = 0; e <= q8x; e++) {
      char name[64];
      snprintf(name, sizeof name, e ? "%s_q8x" : "%s", row.kernel);
      gk_kernel_info k;
      if (gk_module_kernel_info(m, name, &k) != GK_OK)
        fail_msg("%s %s %s: no kernel '%s.kd'", row.kernel, row.variant, row.target, name);
      assert_true(k.kernarg_size >= 24); /* the parameters, plus hidden ones */
      assert_true(k.object != 0);
    }
    gk_module_unload(m);
    assert_balanced();
    done++;
  }
  gk_archive_close(ar);
  hd_remove();
  return done;
}

static void real_images(void **state) {
  (void)state;
  if (!real_archive || access(real_archive, R_OK) != 0) {
    print_message("SKIP: no archive of real hipcc images (the rocm_archive fixture "
                  "needs hipcc)\n");
    skip();
  }
  size_t done = load_every_row(real_archive);
  print_message("loaded %zu real code objects through the test double\n", done);
  assert_true(done > 0);
}

/* The clang-19 images: gfx942, gfx1100-1102, gfx1200/1201 and the generic
 * targets, every one loaded. */
static void clang_images(void **state) {
  (void)state;
  if (!clang_archives || !clang_archives[0] || access(clang_archives[0], R_OK) != 0) {
    print_message("SKIP: no archive of clang-19 images (the rocm_clang_archive fixture "
                  "needs clang-19 and lld-19)\n");
    skip();
  }
  size_t done = 0;
  for (char **a = clang_archives; *a; a++) {
    size_t n = load_every_row(*a);
    print_message("%s: loaded %zu clang-19 code objects through the test double\n", *a, n);
    assert_true(n > 0);
    done += n;
  }
  assert_true(done > 0);
}

int main(int argc, char **argv) {
  real_archive = argc > 1 ? argv[1] : NULL;
  clang_archives = argc > 2 ? argv + 2 : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(detect),
      cmocka_unit_test(detect_none),
      cmocka_unit_test(load_symbols_unload),
      cmocka_unit_test(load_refusals),
      cmocka_unit_test(real_images),
      cmocka_unit_test(clang_images),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
