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
#include "rocm_hsa.h"

static const char *real_archive; /* argv[1], may be absent */
static char **clang_archives;     /* argv[2...], NULL-terminated */

#define MI210 "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"

static void say_double(const char *what) {
  print_message("TEST DOUBLE: libhsa-runtime64 is played by tests/backends/rocm/hsa_double.c (%s)\n",
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

/* The kernarg segment the AMDGPU kernel ABI gives these arguments: each
 * at its natural alignment, in order. Returns the explicit part's end. */
static uint32_t expected_kernarg(const gk_arg *a, size_t n, unsigned char *seg) {
  uint32_t off = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t size = a[i].type == GK_ARG_I32 || a[i].type == GK_ARG_F32 ? 4 : 8;
    off = (off + size - 1) / size * size;
    if (a[i].type == GK_ARG_I32) memcpy(seg + off, &a[i].v.i32, 4);
    else if (a[i].type == GK_ARG_F32) memcpy(seg + off, &a[i].v.f32, 4);
    else memcpy(seg + off, &a[i].v.ptr, 8);
    off += size;
  }
  return off;
}

/* Launches entry `name` of m through gk_module_launch (on `queue`, or the
 * module's own queue when NULL) and checks the packet and the kernarg bytes
 * the double took against the arguments, the row's geometry and the kernel
 * descriptor. */
static void launch_and_check(const gk_module *m, const char *name, void *queue) {
  const gk_image_info *row = gk_module_info(m);
  gk_launch *L;
  gk_arg args[GK_LAUNCH_MAX_PARAMS];
  assert_int_equal(gk_launch_parse(row, name, &L), GK_OK);
  size_t n = gk_launch_nparams(L);
  for (size_t i = 0; i < n; i++) {
    const char *pname;
    gk_arg_type t;
    assert_int_equal(gk_launch_param(L, i, &pname, &t), GK_OK);
    /* Distinct values, so a swapped or misplaced argument shows. */
    args[i] = t == GK_ARG_PTR   ? gk_arg_ptr(0x7f0000001000ull + 0x100000ull * i)
              : t == GK_ARG_I64 ? gk_arg_i64(1000 + 37 * (int64_t)i)
              : t == GK_ARG_I32 ? gk_arg_i32(100 + 3 * (int32_t)i)
                                : gk_arg_f32(0.5f + (float)i);
  }
  gk_launch_dims d;
  gk_kernel_info k;
  assert_int_equal(gk_module_launch_dims(m, name, args, n, &d), GK_OK);
  assert_int_equal(gk_module_kernel_info(m, name, &k), GK_OK);

  /* A wrong type is refused before anything reaches the queue, naming the
   * parameter. */
  if (n > 0) {
    const char *pname;
    gk_arg_type t;
    gk_launch_param(L, n - 1, &pname, &t);
    gk_arg saved = args[n - 1];
    args[n - 1] = t == GK_ARG_F32 ? gk_arg_i32(1) : gk_arg_f32(1.0f);
    int before = hd_get_log()->dispatches;
    assert_int_equal(gk_module_launch(m, name, args, n, NULL), GK_EINVAL);
    if (!strstr(gk_last_error(), pname))
      fail_msg("%s: the message does not name '%s': %s", name, pname, gk_last_error());
    assert_int_equal(hd_get_log()->dispatches, before);
    args[n - 1] = saved;
  }

  const uint64_t signal = 0x516e41;
  gk_launch_options o = {.stream = queue, .signal = queue ? signal : 0};
  int before = hd_get_log()->dispatches;
  if (gk_module_launch(m, name, args, n, &o) != GK_OK)
    fail_msg("%s %s %s: launch of '%s': %s (double: %s)", row->kernel, row->variant, row->target,
             name, gk_last_error(), hd_get_log()->bad_packet);
  const hd_log *l = hd_get_log();
  assert_string_equal(l->bad_packet, "");
  assert_int_equal(l->dispatches, before + 1);
  if (queue) assert_ptr_equal(l->queue, queue);

  gk__hsa_dispatch_packet p;
  memcpy(&p, l->packet, sizeof p);
  unsigned dims = d.grid[2] > 1 || d.block[2] > 1 ? 3 : d.grid[1] > 1 || d.block[1] > 1 ? 2 : 1;
  assert_int_equal(p.header & 0xff, 2);       /* kernel dispatch */
  assert_int_equal((p.header >> 8) & 1, 1);    /* barrier: in order, as a stream */
  assert_int_equal((p.header >> 9) & 3, 2);    /* system-scope acquire */
  assert_int_equal((p.header >> 11) & 3, 2);   /* and release */
  assert_int_equal(p.setup, dims);
  assert_int_equal(p.workgroup_size_x, d.block[0]);
  assert_int_equal(p.workgroup_size_y, d.block[1]);
  assert_int_equal(p.workgroup_size_z, d.block[2]);
  assert_int_equal(p.grid_size_x, (uint64_t)d.grid[0] * d.block[0]);
  assert_int_equal(p.grid_size_y, (uint64_t)d.grid[1] * d.block[1]);
  assert_int_equal(p.grid_size_z, (uint64_t)d.grid[2] * d.block[2]);
  assert_int_equal(p.private_segment_size, k.private_segment_size);
  assert_int_equal(p.group_segment_size, k.group_segment_size + d.shared);
  assert_int_equal(p.kernel_object, k.object);
  assert_int_equal(p.completion_signal, queue ? signal : 0);
  assert_int_equal(l->kernarg_size, k.kernarg_size);

  unsigned char want[1024];
  memset(want, 0, sizeof want);
  uint32_t end = expected_kernarg(args, n, want);
  assert_true(end <= k.kernarg_size);
  /* Code object v5 and v6: HIP reads blockDim and gridDim from the hidden
   * arguments after the explicit ones (rounded up to 8). */
  uint32_t at = (end + 7) & ~7u;
  if (l->co_abiversion >= AE_V5 && k.kernarg_size >= at + 66) {
    for (int a = 0; a < 3; a++) {
      uint16_t b = (uint16_t)d.block[a];
      memcpy(want + at + 4 * a, &d.grid[a], 4);
      memcpy(want + at + 12 + 2 * a, &b, 2);
    }
    uint16_t dm = (uint16_t)dims;
    memcpy(want + at + 64, &dm, 2);
  }
  for (uint32_t b = 0; b < k.kernarg_size; b++)
    if (want[b] != l->kernarg[b])
      fail_msg("%s %s %s '%s': kernarg byte %u is 0x%02x, expected 0x%02x (explicit part %u "
               "bytes of %u)", row->kernel, row->variant, row->target, name, b, l->kernarg[b],
               want[b], end, k.kernarg_size);
  gk_launch_free(L);
}

/* Loads every rocm row of the archive at `path` through the double on an
 * agent whose best image is that row, and launches each entry point: on
 * the module's own queue, and on a queue of the caller's. Returns the
 * number loaded. */
static size_t load_every_row(const char *path, size_t *launches) {
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
    /* qmatmul images carry its int8-x twin, x's rounding into records and
     * the two entries that multiply them as more entry points. */
    static const char *const q8x_entries[] = {"", "_q8x", "_q8x_x", "_q8x_rec", "_q8x_mm"};
    const int q8x = strcmp(row.kernel, "qmatmul") == 0 ? 4 : 0;
    snprintf(entry, sizeof entry,
             q8x ? "[\"%s\",\"%s_q8x\",\"%s_q8x_x\",\"%s_q8x_rec\",\"%s_q8x_mm\"]"
                 : "[\"%s\"]",
             row.kernel, row.kernel, row.kernel, row.kernel, row.kernel);
    assert_string_equal(row.entry, entry);
    for (int e = 0; e <= q8x; e++) {
      char name[64];
      snprintf(name, sizeof name, "%s%s", row.kernel, q8x_entries[e]);
      gk_kernel_info k;
      if (gk_module_kernel_info(m, name, &k) != GK_OK)
        fail_msg("%s %s %s: no kernel '%s.kd'", row.kernel, row.variant, row.target, name);
      assert_true(k.kernarg_size >= 24); /* the parameters, plus hidden ones */
      assert_true(k.object != 0);
      launch_and_check(m, name, NULL);
      void *q = hd_queue_create(64);
      assert_non_null(q);
      launch_and_check(m, name, q);
      hd_queue_destroy(q);
      (*launches)++;
    }
    gk_module_unload(m);
    assert_int_equal(hd_get_log()->queues_live, 0);
    assert_int_equal(hd_get_log()->kernarg_allocs_live, 0);
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
  size_t launches = 0, done = load_every_row(real_archive, &launches);
  print_message("loaded %zu real code objects through the test double and launched their "
                "%zu entry points through gk_module_launch (packet and kernarg bytes checked)\n",
                done, launches);
  assert_true(done > 0);
}

/* The clang-19 images: gfx942, gfx1100, gfx1200 and the generic
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
    size_t launches = 0, n = load_every_row(*a, &launches);
    print_message("%s: loaded %zu clang-19 code objects through the test double, launched "
                  "%zu entry points\n", *a, n, launches);
    assert_true(n > 0);
    done += n;
  }
  assert_true(done > 0);
}

/* A row whose launch has dynamic shared memory: the packet's group segment
 * is the descriptor's static part (AE_GROUP) plus it, and an agent whose
 * LDS cannot hold both refuses the load, naming the entry and the agent. */
static void dynamic_shared_memory(void **state) {
  (void)state;
  say_double("MI210, 64 KB of LDS and then 63 KB");
  static const char *const k[] = {"qmatmul", NULL};
  size_t n;
  unsigned char *co = ae_make(AE_V4, 0x3f | 0x500, k, &n);
  fx_image im = {"qmatmul", "rocm", "gfx90a", "bits=4", .format = "hsaco",
                 .launch = "{\"block\": [256, 1, 1], \"grid\": [\"n\", 1, 1], "
                           "\"shared\": 64000, \"params\": [\"x:ptr\", \"n:i64\"]}",
                 .data = co, .size = n};
  char *path = fx_path("shared.gkfat");
  fx_write(path, &im, 1);
  free(co);
  hd_config c = {.nagents = 1, .agents = {{1, MI210, "AMD Instinct MI210"}}};
  hd_install(&c);
  gk_archive *ar;
  gk_module *m;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_OK);
  launch_and_check(m, "qmatmul", NULL);
  gk__hsa_dispatch_packet p;
  memcpy(&p, hd_get_log()->packet, sizeof p);
  assert_int_equal(p.group_segment_size, AE_GROUP + 64000);
  gk_module_unload(m);

  c.group_size = 64512; /* the dynamic part alone would fit */
  hd_install(&c);
  assert_int_equal(gk_module_load(ar, NULL, "qmatmul", "bits=4", &m), GK_EINVAL);
  assert_string_equal(gk_archive_errmsg(ar),
                      "cannot load image 'qmatmul' bits=4 rocm gfx90a: entry 'qmatmul' needs "
                      "65024 bytes of shared memory per block (1024 static + 64000 dynamic, the "
                      "launch's `shared`), and ROCm device 0 (AMD Instinct MI210, "
                      "gfx90a:sramecc+:xnack-) allows at most 64512; use an image built for a "
                      "GPU with more shared memory, or a smaller `shared` in the recipe's launch");
  assert_balanced();
  gk_archive_close(ar);
  hd_remove();
  free(path);
}

int main(int argc, char **argv) {
  real_archive = argc > 1 ? argv[1] : NULL;
  clang_archives = argc > 2 ? argv + 2 : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(detect),
      cmocka_unit_test(detect_none),
      cmocka_unit_test(load_symbols_unload),
      cmocka_unit_test(load_refusals),
      cmocka_unit_test(dynamic_shared_memory),
      cmocka_unit_test(real_images),
      cmocka_unit_test(clang_images),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
