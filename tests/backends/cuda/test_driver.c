/*
 * test_driver.c - libgk's CUDA driver path against a TEST DOUBLE of libcuda
 * (driver_double.c, installed through gk_driver_set_resolver): how entry
 * points are found, detection, and loading every real image of the fixture
 * archive (nvcc's cubins and PTX) on doubles of several capabilities, with
 * the double refusing bytes that would not run on the capability it
 * reports. No GPU runs anything here; numbers on a real GPU are not checked.
 *
 * Usage: test_cuda_driver [ARCHIVE]; cases that need the archive of real
 * images skip without it.
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

#include "driver_double.h"
#include "fixture.h" /* assert_contains */
#include "gk.h"

static const char *archive_path;
static cud D;

static int setup_each(void **state) {
  (void)state;
  cud_defaults(&D);
  cud_install(&D);
  return 0;
}
static int teardown_each(void **state) {
  (void)state;
  cud_remove();
  return 0;
}

static gk_archive *real_archive(void) {
  gk_archive *ar = NULL;
  if (!archive_path || access(archive_path, R_OK) != 0) {
    printf("SKIP: no archive of real cuda images (%s); the fixture needs nvcc\n",
           archive_path ? archive_path : "none given");
    return NULL;
  }
  assert_int_equal(gk_archive_open(archive_path, &ar), GK_OK);
  return ar;
}

/* ---- finding the entry points --------------------------------------------- */

static void detect_through_get_proc_address(void **state) {
  (void)state;
  gk_device d;
  char why[256] = "";
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_CUDA);
  assert_string_equal(d.arch, "sm_86");
  assert_int_equal(d.driver_version, 13000);
  assert_string_equal(d.name, "Test Double GPU (not a real device)");
  assert_int_equal(d.index, 0);
  /* Each entry point at the ABI version libgk declares (cuda_drv.h), which
   * is what makes a driver hand out e.g. cuCtxPushCurrent_v2. */
  assert_int_equal(cud_asked_version(&D, "cuInit"), 2000);
  assert_int_equal(cud_asked_version(&D, "cuCtxPushCurrent"), 4000);
  assert_int_equal(cud_asked_version(&D, "cuDevicePrimaryCtxRelease"), 11000);
  assert_int_equal(cud_asked_version(&D, "cuLibraryLoadData"), 12000);
  assert_int_equal(cud_asked_version(&D, "cuFuncGetParamInfo"), 12040);
  /* CUDA is preferred over every other backend. */
  assert_int_equal(gk_device_detect(&d), GK_OK);
  assert_int_equal(d.backend, GK_BACKEND_CUDA);
}

static void detect_by_exported_names(void **state) {
  (void)state;
  gk_device d;
  D.gpa2 = 0;
  D.by_name = 1;
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, NULL, 0), GK_OK);
  assert_string_equal(d.arch, "sm_86");
  /* Without cuGetProcAddress, the versioned exports by name. */
  int seen = 0;
  for (int i = 0; i < D.nby_name; i++)
    seen += !strcmp(D.by_name_asked[i], "cuCtxPushCurrent_v2") ||
            !strcmp(D.by_name_asked[i], "cuDevicePrimaryCtxRelease_v2");
  assert_int_equal(seen, 2);
  assert_int_equal(D.nasked, 0);
}

static void detect_through_v1_get_proc_address(void **state) {
  (void)state;
  gk_device d;
  D.gpa2 = 0;
  D.gpa1 = 1;
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, NULL, 0), GK_OK);
  assert_int_equal(cud_asked_version(&D, "cuDevicePrimaryCtxRelease"), 11000);
}

static void detect_failures(void **state) {
  (void)state;
  gk_device d;
  char why[256];
  D.hide = "cuModuleLoadDataEx";
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_string_equal(why, "no usable CUDA driver: libcuda lacks cuModuleLoadDataEx (a "
                           "driver older than CUDA 2.1?)");
  /* An optional entry point missing changes nothing. */
  D.hide = "cuLibraryLoadData";
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why), GK_OK);
  D.hide = NULL;
  D.init_result = 100;
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_string_equal(why, "no CUDA device: the driver sees no NVIDIA GPU (cuInit: "
                           "CUDA_ERROR_NO_DEVICE (100))");
  D.init_result = 999;
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_string_equal(why, "no CUDA device: cuInit failed with CUDA_ERROR_UNKNOWN (999)");
  D.init_result = 0;
  D.count = 0;
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_string_equal(why, "no CUDA device: the driver reports no GPU");
  /* Nothing at all: neither cuGetProcAddress nor names. */
  D.count = 1;
  D.gpa2 = 0;
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_contains(why, "libcuda lacks cuInit");
}

/* ---- loading the real images ---------------------------------------------- */

/* The distinct (kernel, variant) pairs of the archive's cuda rows. */
static size_t kernels_of(gk_archive *ar, const char *out[][2], size_t cap) {
  size_t n = 0, count = 0;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  for (size_t i = 0; i < count; i++) {
    gk_image_info im;
    assert_int_equal(gk_archive_image(ar, i, &im), GK_OK);
    if (strcmp(im.backend, "cuda")) continue;
    int dup = 0;
    for (size_t j = 0; j < n && !dup; j++)
      dup = !strcmp(out[j][0], im.kernel) && !strcmp(out[j][1], im.variant);
    if (!dup && n < cap) {
      out[n][0] = im.kernel;
      out[n][1] = im.variant;
      n++;
    }
  }
  return n;
}

static void load_every_kernel(void **state) {
  (void)state;
  gk_archive *ar = real_archive();
  if (!ar) skip();
  static const struct {
    int major, minor;
    int library; /* the 12.0 library API, else modules */
    const char *want;
  } devs[] = {
      {7, 5, 1, "sm_75"},  {8, 6, 1, "sm_86"},  {8, 9, 0, "sm_89"},
      {9, 0, 1, "sm_90a"}, {10, 3, 1, "sm_100"}, {12, 1, 0, "sm_120"},
      {11, 0, 1, "compute_75"}, /* no SASS of major 11: the PTX */
  };
  const char *kv[64][2];
  size_t nk = kernels_of(ar, kv, 64);
  assert_int_equal(nk, 44); /* qmatmul 4, flash_attention 12, paged_attention 12, kv_append 12, 4 more */
  for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++) {
    cud_defaults(&D);
    D.major = devs[d].major;
    D.minor = devs[d].minor;
    D.library = devs[d].library;
    cud_install(&D);
    for (size_t k = 0; k < nk; k++) {
      gk_module *m = NULL;
      int rc = gk_module_load(ar, NULL, kv[k][0], kv[k][1], &m);
      if (rc != GK_OK)
        fail_msg("%d.%d %s %s: %s: %s (double: %s)", devs[d].major, devs[d].minor,
                 kv[k][0], kv[k][1], gk_strerror(rc), gk_archive_errmsg(ar), D.refused);
      const gk_image_info *info = gk_module_info(m);
      assert_string_equal(info->target, devs[d].want);
      assert_int_equal(D.loaded_ptx, !strncmp(devs[d].want, "compute_", 8));
      assert_int_equal(D.used_library, devs[d].library);
      assert_int_equal(gk_module_device(m)->driver_version, 13000);
      /* The entry point is the CUfunction; kernel_info agrees. */
      void *f = gk_module_symbol(m, kv[k][0]);
      assert_non_null(f);
      assert_null(gk_module_symbol(m, "no_such_kernel"));
      gk_kernel_info ki;
      assert_int_equal(gk_module_kernel_info(m, kv[k][0], &ki), GK_OK);
      assert_int_equal(ki.object, (uint64_t)(uintptr_t)f);
      assert_int_equal(ki.group_segment_size, 123);
      assert_int_equal(ki.kernarg_size, 16);
      assert_int_equal(ki.kernarg_align, 8);
      assert_int_equal(gk_module_kernel_info(m, "nope", &ki), GK_ENOSYMBOL);
      gk_module_unload(m);
    }
    /* Every context made current was popped, every retain released, every
     * image unloaded. */
    assert_int_equal(D.pushes, D.pops);
    assert_int_equal(D.retains, D.releases);
    assert_int_equal(D.loads, (int)nk);
    assert_int_equal(D.unloads, (int)nk);
    cud_remove();
  }
  gk_archive_close(ar);
}

static void load_refusals(void **state) {
  (void)state;
  gk_archive *ar = real_archive();
  if (!ar) skip();
  gk_module *m = (gk_module *)1;
  gk_device dev;

  /* JIT forbidden on a device only the PTX fits. */
  D.major = 11;
  D.minor = 0;
  assert_int_equal(gk_module_load_ex(ar, NULL, "rmsnorm", NULL, GK_LOAD_NO_JIT, &m),
                   GK_ENOIMAGE);
  assert_null(m);
  assert_contains(gk_archive_errmsg(ar), "fits cuda:sm_110,driver=13.0; archive");
  assert_contains(gk_archive_errmsg(ar), "PTX not considered (GK_LOAD_NO_JIT)");
  assert_int_equal(D.loads, 0);

  /* A device described by a spec that is not the one here. */
  D.major = 8;
  D.minor = 6;
  assert_int_equal(gk_device_parse("cuda:sm_90", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "rmsnorm", NULL, &m), GK_ENODEVICE);
  assert_contains(gk_archive_errmsg(ar),
                  "it was chosen for 'cuda:sm_90', but CUDA device 0 here is "
                  "cuda:sm_86,driver=13.0 (sm_90a runs on 9.0 only, device is sm_86)");

  /* A driver older than the toolkit: found when selecting for the device
   * detected, and when loading for a spec that claimed a newer driver. */
  D.driver_version = 12040;
  assert_int_equal(gk_module_load(ar, NULL, "argmax", NULL, &m), GK_ENOIMAGE);
  assert_contains(gk_archive_errmsg(ar),
                  "cubins from CUDA 13.0 need a driver >= 13.0, this driver is 12.4");
  assert_int_equal(gk_device_parse("cuda:sm_86,driver=13.0", &dev, NULL, 0), GK_OK);
  assert_int_equal(gk_module_load(ar, &dev, "argmax", NULL, &m), GK_ENODEVICE);
  assert_contains(gk_archive_errmsg(ar), "but CUDA device 0 here is cuda:sm_86,driver=12.4");
  assert_int_equal(D.loads, 0);

  /* The driver's own refusals, in words: an unsupported PTX version. */
  D.driver_version = 13000;
  D.major = 11;
  D.minor = 0;
  D.load_result = 222;
  assert_int_equal(gk_module_load(ar, NULL, "rope", NULL, &m), GK_EDRIVER);
  assert_contains(gk_archive_errmsg(ar),
                  "cannot load image 'rope' cuda compute_75: PTX from CUDA 13.0 needs a "
                  "driver >= 13.0; this driver is 13.0 (cuLibraryLoadData: "
                  "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222))");
  /* PTX the JIT rejects: its log is quoted. */
  D.load_result = 218;
  D.jit_log = "ptxas fatal   : (test double) unknown directive";
  assert_int_equal(gk_module_load(ar, NULL, "rope", NULL, &m), GK_EDRIVER);
  assert_contains(gk_archive_errmsg(ar),
                  "cuLibraryLoadData failed with CUDA_ERROR_INVALID_PTX (218); JIT log: "
                  "ptxas fatal   : (test double) unknown directive");
  /* A kernel the driver cannot find. */
  D.load_result = 0;
  D.get_kernel_result = 500;
  assert_int_equal(gk_module_load(ar, NULL, "rope", NULL, &m), GK_ENOSYMBOL);
  assert_contains(gk_archive_errmsg(ar),
                  "kernel 'rope': cuLibraryGetKernel failed with CUDA_ERROR_NOT_FOUND (500)");
  assert_int_equal(D.pushes, D.pops);
  assert_int_equal(D.retains, D.releases);
  assert_int_equal(D.loads, D.unloads + 2); /* the two refused loads made nothing */
  gk_archive_close(ar);
}

/* ---- launching ------------------------------------------------------------ */

/* gk_module_launch on the double: every entry of qmatmul bits=4 and of a
 * flash_attention variant, the grid from the row, kernelParams in the
 * row's types, the module's context current, the caller's stream. */
static void launch_kernels(void **state) {
  (void)state;
  gk_archive *ar = real_archive();
  if (!ar) return;
  gk_module *m;
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_OK);
  gk_device_limits lim;
  assert_int_equal(gk_module_limits(m, &lim), GK_OK);
  assert_int_equal(lim.compute_units, 46);
  assert_int_equal(lim.max_threads, 1024);
  assert_int_equal(lim.max_groups[1], 65535);
  gk_arg a[6] = {gk_arg_ptr(0x10000), gk_arg_ptr(0x20000), gk_arg_ptr(0x30000),
                 gk_arg_i64(17), gk_arg_i64(11008), gk_arg_i64(4096)};
  static const char *const entries[] = {"qmatmul", "qmatmul_q8x"};
  for (int e = 0; e < 2; e++) {
    D.launch_nparams = 6;
    int before = D.launches, pushes = D.pushes;
    gk_launch_options o = {.stream = (void *)0x5e};
    assert_int_equal(gk_module_launch(m, entries[e], a, 6, &o), GK_OK);
    assert_int_equal(D.launches, before + 1);
    assert_int_equal(D.launch_ctx_depth, 1); /* inside the module's context */
    assert_int_equal(D.pushes, pushes + 1);
    assert_int_equal(D.pops, D.pushes);
    assert_ptr_equal(D.stream, (void *)0x5e);
    /* grid ["m / 8", "n / 32", 1] (qmatmul), ["m / 16", "n / 64", 1]
     * (qmatmul_q8x: its own row), block [256, 1, 1] */
    assert_int_equal(D.grid[0], e == 0 ? 3 : 2);
    assert_int_equal(D.grid[1], e == 0 ? 344 : 172);
    assert_int_equal(D.grid[2], 1);
    assert_int_equal(D.block[0], 256);
    assert_int_equal(D.shared, 0);
    uint64_t p;
    int64_t v;
    memcpy(&p, D.params[1], 8);
    assert_int_equal(p, 0x20000);
    memcpy(&v, D.params[4], 8);
    assert_int_equal(v, 11008);
  }
  /* A wrong argument is named; nothing reaches the driver. */
  int before = D.launches;
  a[4] = gk_arg_f32(1.0f);
  assert_int_equal(gk_module_launch(m, "qmatmul", a, 6, NULL), GK_EINVAL);
  assert_contains(gk_last_error(), "parameter 4 'n' is i64; the value given is f32");
  assert_int_equal(gk_module_launch(m, "qmatmul", a, 5, NULL), GK_EINVAL);
  assert_contains(gk_last_error(), "5 values given for its 6 parameters");
  assert_int_equal(gk_module_launch(m, "nope", a, 6, NULL), GK_ENOSYMBOL);
  assert_int_equal(D.launches, before);
  /* The driver's refusal, in words. */
  a[4] = gk_arg_i64(64);
  D.launch_result = 1;
  assert_int_equal(gk_module_launch(m, "qmatmul", a, 6, NULL), GK_EDRIVER);
  assert_contains(gk_last_error(), "cuLaunchKernel (grid 3 x 2 x 1, block 256 x 1 x 1");
  D.launch_result = 0;
  /* The caller's grid, clamped. */
  uint32_t g[3] = {0, 70000, 3};
  gk_launch_options o = {.grid = g};
  assert_int_equal(gk_module_launch(m, "qmatmul", a, 6, &o), GK_OK);
  assert_int_equal(D.grid[0], 1);
  assert_int_equal(D.grid[1], 65535);
  assert_int_equal(D.grid[2], 3);
  gk_module_unload(m);

  assert_int_equal(gk_module_load(ar, NULL, "flash_attention",
                                  "causal=1,dtype=f16,head_dim=128", &m), GK_OK);
  gk_arg f[11] = {gk_arg_ptr(0x1000), gk_arg_ptr(0x2000), gk_arg_ptr(0x3000),
                  gk_arg_ptr(0x4000), gk_arg_i64(32),   gk_arg_i64(8),
                  gk_arg_i64(130),    gk_arg_i64(4096), gk_arg_f32(0.125f),
                  gk_arg_ptr(0x5000), gk_arg_i64(1 << 20)};
  D.launch_nparams = 11;
  assert_int_equal(gk_module_launch(m, "flash_attention", f, 11, NULL), GK_OK);
  /* ["sq / 64 - 1 + skv / (1024 * (sq / 16) + 1)", "n_heads", 1]: the 3
   * query blocks of 64 rows, the split's column counting for the last */
  assert_int_equal(D.grid[0], 3 - 1 + 1);
  assert_int_equal(D.grid[1], 32);
  assert_int_equal(D.block[0], 128);
  float scale;
  memcpy(&scale, D.params[8], 4);
  assert_true(scale == 0.125f);
  int64_t ws_bytes;
  memcpy(&ws_bytes, D.params[10], 8);
  assert_int_equal(ws_bytes, 1 << 20);
  gk_launch_dims d;
  assert_int_equal(gk_module_launch_dims(m, "flash_attention", f, 11, &d), GK_OK);
  assert_int_equal(d.grid[0], 3);
  /* A decode: sq = 1, a column per 1024 keys: a block per 256 keys of
   * each of the 8 KV heads. */
  f[6] = gk_arg_i64(1);
  f[7] = gk_arg_i64(8192);
  assert_int_equal(gk_module_launch_dims(m, "flash_attention", f, 11, &d), GK_OK);
  assert_int_equal(d.grid[0], 8); /* the split's columns alone: 1 / 64 - 1 = 0 */
  assert_int_equal(d.grid[0] * d.grid[1], 8 * 32); /* 8 KV heads x 32 splits */
  /* A speculative decode of 16 tokens (4 heads x 16 rows a KV head): the
   * same columns, where sq itself in the divisor gave 1. */
  f[6] = gk_arg_i64(16);
  assert_int_equal(gk_module_launch_dims(m, "flash_attention", f, 11, &d), GK_OK);
  assert_int_equal(d.grid[0], 8);
  gk_module_unload(m);
  gk_archive_close(ar);
}

/* ---- dynamic shared memory ----------------------------------------------- */

/* An archive of one row: the real sm_86 cubin of qmatmul bits=4 (its four
 * entries) with a hand-written launch of `shared` bytes of dynamic shared
 * memory, except for qmatmul_q8x_x, whose own launch has none. */
static char *shared_archive(gk_archive *real, unsigned shared) {
  size_t count, row = (size_t)-1;
  gk_image_info im;
  assert_int_equal(gk_archive_count(real, &count), GK_OK);
  for (size_t i = 0; i < count && row == (size_t)-1; i++) {
    assert_int_equal(gk_archive_image(real, i, &im), GK_OK);
    if (!strcmp(im.kernel, "qmatmul") && !strcmp(im.variant, "bits=4") &&
        !strcmp(im.target, "sm_86"))
      row = i;
  }
  assert_true(row != (size_t)-1);
  void *bytes;
  size_t size;
  assert_int_equal(gk_archive_read(real, row, &bytes, &size), GK_OK);
  char launch[512], name[64];
  snprintf(launch, sizeof launch,
           "{\"block\": [128, 1, 1], \"grid\": [1, 1, 1], \"shared\": %u, \"params\": [],"
           " \"qmatmul_q8x_x\": {\"block\": [128, 1, 1], \"grid\": [1, 1, 1], \"shared\": 0,"
           " \"params\": []}}", shared);
  fx_image row_im = {im.kernel, im.backend, im.target, im.variant, .format = im.format,
                     .entry = im.entry, .launch = launch, .toolchain = im.toolchain,
                     .data = bytes, .size = size};
  snprintf(name, sizeof name, "shared%u.gkfat", shared);
  char *path = fx_path(name);
  fx_write(path, &row_im, 1);
  gk_free(bytes);
  return path;
}

/* Past 48 KB (static + dynamic) each function is opted in once at load,
 * to exactly its launch's bytes; below, nothing is asked; past the
 * device's opt-in limit the load is refused, saying what to do. The
 * double's launches fail when a function was not opted in. */
static void dynamic_shared_memory(void **state) {
  (void)state;
  gk_archive *real = real_archive();
  if (!real) skip();
  static const char *const opted[] = {"qmatmul", "qmatmul_q8x", "qmatmul_q8x_rec",
                                      "qmatmul_q8x_mm"};
  static const struct {
    unsigned shared;
    int calls; /* cuFuncSetAttribute calls at load */
  } cases[] = {
      {49152 - 123, 0}, /* 48 KB with the double's 123 static bytes: the default */
      {49152 - 122, 4}, /* one byte more */
      {101376 - 123, 4}, /* all of sm_86's 99 KB */
  };
  gk_archive *ar;
  gk_module *m;
  gk_launch_dims d;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char *path = shared_archive(real, cases[c].shared);
    D.nset_attr = 0;
    assert_int_equal(gk_archive_open(path, &ar), GK_OK);
    if (gk_module_load(ar, NULL, "qmatmul", "bits=4", &m) != GK_OK)
      fail_msg("shared %u: %s", cases[c].shared, gk_archive_errmsg(ar));
    assert_int_equal(D.nset_attr, cases[c].calls);
    for (int i = 0; i < cases[c].calls; i++) {
      assert_ptr_equal(D.set_attr[i].fn, gk_module_symbol(m, opted[i]));
      assert_int_equal(D.set_attr[i].attrib, 8); /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
      assert_int_equal(D.set_attr[i].value, cases[c].shared);
    }
    /* Launches pass the bytes (and only the load opts in). */
    assert_int_equal(gk_module_launch(m, "qmatmul_q8x_mm", NULL, 0, NULL), GK_OK);
    assert_int_equal(D.shared, cases[c].shared);
    assert_int_equal(gk_module_launch(m, "qmatmul_q8x_x", NULL, 0, NULL), GK_OK);
    assert_int_equal(D.shared, 0);
    assert_int_equal(gk_module_launch_dims(m, "qmatmul", NULL, 0, &d), GK_OK);
    assert_int_equal(d.shared, cases[c].shared);
    assert_int_equal(D.nset_attr, cases[c].calls);
    gk_module_unload(m);
    gk_archive_close(ar);
    free(path);
  }

  /* One byte past the opt-in limit: refused at load, before any opt-in. */
  char *path = shared_archive(real, 101376 - 122);
  D.nset_attr = 0;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_EINVAL);
  const char *msg = gk_archive_errmsg(ar);
  assert_contains(msg, "cannot load image 'qmatmul' bits=4 cuda sm_86: entry 'qmatmul' needs "
                       "101377 bytes of shared memory per block (123 static + 101254 dynamic");
  assert_contains(msg, "CUDA device 0 (Test Double GPU (not a real device), sm_86) allows at "
                       "most 101376");
  assert_contains(msg, "use an image built for a GPU with more shared memory, or a smaller "
                       "`shared` in the recipe's launch");
  assert_int_equal(D.nset_attr, 0);
  /* ... which a device with more (sm_90's 227 KB, say) gives. */
  D.optin = 232448;
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_OK);
  assert_int_equal(D.nset_attr, 4);
  gk_module_unload(m);
  /* The driver refusing the opt-in: its status, in words. */
  D.set_attr_result = 1;
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_EDRIVER);
  assert_contains(gk_archive_errmsg(ar),
                  "kernel 'qmatmul' (101254 bytes of dynamic shared memory): "
                  "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) failed with "
                  "CUDA_ERROR_INVALID_VALUE (1)");
  assert_int_equal(D.pushes, D.pops);
  assert_int_equal(D.retains, D.releases);
  assert_int_equal(D.loads, D.unloads);
  gk_archive_close(ar);
  free(path);
  gk_archive_close(real);
}

int main(int argc, char **argv) {
  archive_path = argc > 1 ? argv[1] : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(detect_through_get_proc_address, setup_each,
                                      teardown_each),
      cmocka_unit_test_setup_teardown(detect_by_exported_names, setup_each, teardown_each),
      cmocka_unit_test_setup_teardown(detect_through_v1_get_proc_address, setup_each,
                                      teardown_each),
      cmocka_unit_test_setup_teardown(detect_failures, setup_each, teardown_each),
      cmocka_unit_test_setup_teardown(load_every_kernel, setup_each, teardown_each),
      cmocka_unit_test_setup_teardown(load_refusals, setup_each, teardown_each),
      cmocka_unit_test_setup_teardown(launch_kernels, setup_each, teardown_each),
      cmocka_unit_test_setup_teardown(dynamic_shared_memory, setup_each, teardown_each),
  };
  printf("cuda.driver_double: libcuda is a TEST DOUBLE here (driver_double.c)\n");
  return cmocka_run_group_tests_name("cuda.driver_double", tests, NULL, NULL);
}
