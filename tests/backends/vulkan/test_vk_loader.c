/*
 * test_vk_loader.c [ARCHIVE] - libgk's Vulkan backend apart from the
 * numbers: the SPIR-V header check (gk verify and every load), the
 * selection rule (image's Vulkan version <= the device's), detection policy
 * (gk_device_detect never prefers a CPU-type Vulkan device), the resolver
 * hook as a broken-driver TEST DOUBLE, and the dispatch helper's errors.
 * With the real vulkan archive (ARCHIVE), also: each image's launch JSON
 * agrees with what libgk reads from its SPIR-V, and modules load and run
 * through both gk_module_load (private device) and gk_vk_module_load.
 * Cases that need the archive or a device skip, saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../loader/fixture.h"
#include "gk.h"
#include "gk_internal.h"
#include "gk_vulkan.h"

static const char *real_archive; /* argv[1], may be NULL or absent */

/* A header-only SPIR-V module: magic, version, generator, bound, schema,
 * then OpCapability Shader. */
static void spirv_header(uint32_t *w, uint32_t version) {
  w[0] = 0x07230203u;
  w[1] = version;
  w[2] = 0x00080001u;
  w[3] = 10;
  w[4] = 0;
  w[5] = (2u << 16) | 17u; /* OpCapability */
  w[6] = 1;                /* Shader */
}

static int check_words(const uint32_t *w, size_t nbytes, const char *target, char *why) {
  gk_image_info row = {0};
  row.kernel = "k", row.backend = "vulkan", row.target = target, row.variant = "";
  row.format = "spirv", row.entry = "[]";
  return gk__image_check(w, nbytes, &row, NULL, why, 256);
}

static void test_spirv_header(void **state) {
  (void)state;
  uint32_t w[7];
  char why[256];
  spirv_header(w, 0x00010300u);
  assert_int_equal(check_words(w, sizeof w, "vulkan1.1", why), GK_OK);
  assert_int_equal(check_words(w, sizeof w, "vulkan1.3", why), GK_OK);
  /* SPIR-V 1.3 is too new for a Vulkan 1.0 image. */
  assert_int_equal(check_words(w, sizeof w, "vulkan1.0", why), GK_EFORMAT);
  assert_non_null(strstr(why, "newer than vulkan1.0"));
  spirv_header(w, 0x00010600u);
  assert_int_equal(check_words(w, sizeof w, "vulkan1.2", why), GK_EFORMAT);
  spirv_header(w, 0x00010300u);
  w[0] = 0x03022307u; /* byte-swapped: named, not misread */
  assert_int_equal(check_words(w, sizeof w, "vulkan1.1", why), GK_EFORMAT);
  assert_non_null(strstr(why, "big-endian"));
  w[0] = 0x464c457fu; /* an ELF file in a vulkan row */
  assert_int_equal(check_words(w, sizeof w, "vulkan1.1", why), GK_EFORMAT);
  assert_non_null(strstr(why, "not SPIR-V"));
  spirv_header(w, 0x00010300u);
  w[3] = 0;
  assert_int_equal(check_words(w, sizeof w, "vulkan1.1", why), GK_EFORMAT);
  assert_non_null(strstr(why, "bound"));
  spirv_header(w, 0x00010300u);
  w[4] = 1;
  assert_int_equal(check_words(w, sizeof w, "vulkan1.1", why), GK_EFORMAT);
  spirv_header(w, 0x00010301u);
  assert_int_equal(check_words(w, sizeof w, "vulkan1.1", why), GK_EFORMAT);
  spirv_header(w, 0x00010300u);
  assert_int_equal(check_words(w, 18, "vulkan1.1", why), GK_EFORMAT); /* not whole words */
  assert_int_equal(check_words(w, 16, "vulkan1.1", why), GK_EFORMAT); /* short header */
  assert_int_equal(check_words(w, sizeof w, "vulkan", why), GK_EFORMAT);  /* bad target */
  /* Reflection refuses a module without a compute entry point. */
  gk__spirv_info info;
  assert_int_equal(gk__spirv_reflect(w, sizeof w, &info, why, sizeof why), GK_EFORMAT);
  assert_non_null(strstr(why, "no compute"));
  /* A capability beyond core Shader (Float64) is refused by name. */
  w[6] = 10;
  assert_int_equal(gk__spirv_reflect(w, sizeof w, &info, why, sizeof why), GK_EFORMAT);
  assert_non_null(strstr(why, "capability 10"));
  w[6] = 1;
  /* An instruction that claims to run past the end. */
  w[5] = (9u << 16) | 17u;
  assert_int_equal(gk__spirv_reflect(w, sizeof w, &info, why, sizeof why), GK_EFORMAT);
  assert_non_null(strstr(why, "past the end"));
}

/* gk verify / gk_archive_read on an archive whose vulkan row holds bytes
 * that are not SPIR-V, and one that holds SPIR-V too new for its target. */
static void test_verify_rows(void **state) {
  (void)state;
  uint32_t good[7], old[7];
  spirv_header(good, 0x00010300u);
  spirv_header(old, 0x00010500u);
  const char elf[] = "\177ELF not spirv, just some bytes";
  fx_image im[] = {
      {"a", "vulkan", "vulkan1.1", "", "spirv", NULL, NULL, NULL, good, sizeof good},
      {"b", "vulkan", "vulkan1.1", "", "spirv", NULL, NULL, NULL, elf, 32},
      {"c", "vulkan", "vulkan1.1", "", "spirv", NULL, NULL, NULL, old, sizeof old},
      {"d", "vulkan", "vulkan1.1", "", "so", NULL, NULL, NULL, good, sizeof good},
  };
  char *path = fx_path("verify.gkfat");
  fx_write(path, im, 4);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  void *bytes;
  size_t size;
  assert_int_equal(gk_archive_read(ar, 0, &bytes, &size), GK_OK);
  gk_free(bytes);
  assert_int_equal(gk_archive_read(ar, 1, &bytes, &size), GK_EFORMAT);
  assert_non_null(strstr(gk_archive_errmsg(ar), "not SPIR-V"));
  assert_int_equal(gk_archive_read(ar, 2, &bytes, &size), GK_EFORMAT);
  assert_non_null(strstr(gk_archive_errmsg(ar), "SPIR-V 1.5, newer than vulkan1.1"));
  assert_int_equal(gk_archive_read(ar, 3, &bytes, &size), GK_EFORMAT);
  gk_archive_close(ar);
  free(path);
}

/* The rule: an image for Vulkan X.Y runs on a device of version >= X.Y;
 * the newest such image wins. */
static void test_select(void **state) {
  (void)state;
  uint32_t w[7];
  spirv_header(w, 0x00010000u);
  fx_image im[] = {
      {"k", "vulkan", "vulkan1.0", "", "spirv", NULL, NULL, NULL, w, sizeof w},
      {"k", "vulkan", "vulkan1.1", "", "spirv", NULL, NULL, NULL, w, sizeof w},
      {"k", "vulkan", "vulkan1.3", "", "spirv", NULL, NULL, NULL, w, sizeof w},
      {"only11", "vulkan", "vulkan1.1", "", "spirv", NULL, NULL, NULL, w, sizeof w},
  };
  char *path = fx_path("select.gkfat");
  fx_write(path, im, 4);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  static const struct {
    const char *dev, *kernel, *want; /* want NULL: GK_ENOIMAGE */
  } table[] = {
      {"vulkan:vulkan1.0", "k", "vulkan1.0"}, {"vulkan:vulkan1.1", "k", "vulkan1.1"},
      {"vulkan:vulkan1.2", "k", "vulkan1.1"}, {"vulkan:vulkan1.3", "k", "vulkan1.3"},
      {"vulkan:vulkan1.4", "k", "vulkan1.3"}, {"vulkan:vulkan1.0", "only11", NULL},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    gk_device d;
    char why[256];
    size_t idx;
    assert_int_equal(gk_device_parse(table[i].dev, &d, why, sizeof why), GK_OK);
    int rc = gk_archive_select(ar, &d, table[i].kernel, "", &idx);
    if (!table[i].want) {
      assert_int_equal(rc, GK_ENOIMAGE);
      continue;
    }
    assert_int_equal(rc, GK_OK);
    gk_image_info info;
    assert_int_equal(gk_archive_image(ar, idx, &info), GK_OK);
    if (strcmp(info.target, table[i].want) != 0)
      fail_msg("%s: chose %s, expected %s", table[i].dev, info.target, table[i].want);
  }
  /* Why each candidate was or was not taken. */
  gk_device d;
  gk_candidate c[4];
  size_t n;
  assert_int_equal(gk_device_parse("vulkan:vulkan1.0", &d, NULL, 0), GK_OK);
  assert_int_equal(gk_archive_explain(ar, &d, "k", "", 0, c, 4, &n), GK_OK);
  assert_int_equal(n, 3);
  assert_true(c[0].fits && c[0].chosen);
  assert_false(c[2].fits);
  assert_non_null(strstr(c[2].why, "needs vulkan1.3, device has vulkan1.0"));
  /* A vulkan device whose arch is not a version is refused. */
  assert_int_equal(gk_device_parse("vulkan:lavapipe", &d, NULL, 0), GK_OK);
  size_t idx;
  assert_int_equal(gk_archive_select(ar, &d, "k", "", &idx), GK_EINVAL);
  assert_non_null(strstr(gk_archive_errmsg(ar), "Vulkan version"));
  gk_archive_close(ar);
  free(path);
}

/* ---- with a device ------------------------------------------------------- */

static int have_device(gk_device *d) {
  char why[256];
  if (gk_device_detect_backend(GK_BACKEND_VULKAN, d, why, sizeof why) == GK_OK) return 1;
  printf("SKIP (this case): no Vulkan device: %s\n", why);
  return 0;
}

/* gk_device_detect() must not pick a Vulkan device of type CPU (lavapipe):
 * the native CPU backend is faster. Asking for vulkan gets it. */
static void test_detect_policy(void **state) {
  (void)state;
  gk_device all[16], d, autod;
  size_t n = 0;
  char why[256];
  if (gk_vk_devices(all, 16, &n, why, sizeof why) != GK_OK || n == 0) {
    printf("SKIP (this case): no Vulkan device: %s\n", why);
    skip();
  }
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_VULKAN, &d, why, sizeof why), GK_OK);
  assert_string_equal(d.arch, all[0].arch);
  assert_string_equal(d.name, all[0].name);
  assert_int_equal(d.index, 0);
  assert_int_equal(gk_device_parse("vulkan", &d, why, sizeof why), GK_OK);
  assert_string_equal(d.name, all[0].name);
  assert_int_equal(gk_device_detect(&autod), GK_OK);
  int only_cpu = 1;
  for (size_t i = 0; i < n && i < 16; i++)
    if (!strstr(all[i].name, "(cpu)")) only_cpu = 0;
  if (only_cpu)
    assert_int_not_equal(autod.backend, GK_BACKEND_VULKAN);
  for (size_t i = 0; i < n && i < 16; i++) {
    int ma, mi;
    assert_true(gk__vk_version_parse(all[i].arch, &ma, &mi));
    assert_int_equal(all[i].index, (int)i);
  }
}

/* TEST DOUBLE for a broken Vulkan driver: a resolver that finds nothing. */
static void *no_symbols(void *ctx, const char *name) {
  (void)ctx, (void)name;
  return NULL;
}

static void test_resolver_double(void **state) {
  (void)state;
  gk_device d;
  char why[256];
  assert_int_equal(gk_driver_set_resolver(GK_BACKEND_VULKAN, no_symbols, NULL), GK_OK);
  assert_int_equal(gk_device_detect_backend(GK_BACKEND_VULKAN, &d, why, sizeof why),
                   GK_ENODEVICE);
  assert_non_null(strstr(why, "vkGetInstanceProcAddr"));
  gk_vk *vk;
  assert_int_equal(gk_vk_open(NULL, &vk, why, sizeof why), GK_ENODEVICE);
  assert_null(vk);
  assert_int_equal(gk_driver_set_resolver(GK_BACKEND_VULKAN, NULL, NULL), GK_OK);
  /* The double's answer was not kept: the real driver answers again. */
  int real = gk_device_detect_backend(GK_BACKEND_VULKAN, &d, why, sizeof why);
  if (real == GK_OK) assert_null(strstr(why, "vkGetInstanceProcAddr"));
}

static void test_open_refuses(void **state) {
  (void)state;
  gk_device d, here;
  gk_vk *vk;
  char why[256];
  if (!have_device(&here)) skip();
  assert_int_equal(gk_device_parse("vulkan:vulkan9.9", &d, why, sizeof why), GK_OK);
  assert_int_equal(gk_vk_open(&d, &vk, why, sizeof why), GK_ENODEVICE);
  assert_non_null(strstr(why, "asks for more"));
  assert_int_equal(gk_device_parse("cpu:x86-64", &d, why, sizeof why), GK_OK);
  assert_int_equal(gk_vk_open(&d, &vk, why, sizeof why), GK_EINVAL);
  d = here;
  d.index = 99;
  assert_int_equal(gk_vk_open(&d, &vk, why, sizeof why), GK_ENODEVICE);
  assert_non_null(strstr(why, "no Vulkan device 99"));
}

/* ---- with the real archive -------------------------------------------- */

static gk_archive *open_real(void) {
  gk_archive *ar;
  if (!real_archive || gk_archive_open(real_archive, &ar) != GK_OK) {
    printf("SKIP (this case): no vulkan archive '%s'\n", real_archive ? real_archive : "");
    return NULL;
  }
  return ar;
}

/* What the recipes say in `launch` must be what the shaders declare. */
static void test_launch_matches_spirv(void **state) {
  (void)state;
  gk_archive *ar = open_real();
  if (!ar) skip();
  size_t count, nvk = 0;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  for (size_t i = 0; i < count; i++) {
    gk_image_info info;
    assert_int_equal(gk_archive_image(ar, i, &info), GK_OK);
    if (strcmp(info.backend, "vulkan") != 0) continue;
    nvk++;
    void *bytes;
    size_t size;
    char why[256];
    assert_int_equal(gk_archive_read(ar, i, &bytes, &size), GK_OK);
    gk__spirv_info sp;
    if (gk__spirv_reflect(bytes, size, &sp, why, sizeof why) != GK_OK)
      fail_msg("%s %s: %s", info.kernel, info.variant, why);
    gk_free(bytes);
    json_error_t jerr;
    json_t *launch = json_loads(info.launch, 0, &jerr), *entry = json_loads(info.entry, 0, &jerr);
    assert_non_null(launch);
    assert_non_null(entry);
    /* Entry names: the index's, the SPIR-V's. */
    assert_int_equal(json_array_size(entry), 1);
    assert_int_equal(sp.nentries, 1);
    assert_string_equal(json_string_value(json_array_get(entry, 0)), sp.entries[0].name);
    json_t *ls = json_object_get(launch, "local_size");
    for (int d = 0; d < 3; d++)
      if ((uint32_t)json_integer_value(json_array_get(ls, (size_t)d)) != sp.entries[0].local_size[d])
        fail_msg("%s %s: launch local_size[%d] = %lld, SPIR-V says %u", info.kernel, info.variant,
                 d, (long long)json_integer_value(json_array_get(ls, (size_t)d)),
                 sp.entries[0].local_size[d]);
    json_t *b = json_object_get(launch, "bindings");
    if ((int)json_array_size(b) != sp.nbindings)
      fail_msg("%s %s: launch lists %zu bindings, SPIR-V has %d", info.kernel, info.variant,
               json_array_size(b), sp.nbindings);
    for (size_t k = 0; k < json_array_size(b); k++) {
      json_t *e = json_array_get(b, k);
      assert_int_equal(json_integer_value(json_object_get(e, "set")), 0);
      assert_int_equal(json_integer_value(json_object_get(e, "binding")), (json_int_t)k);
      assert_string_equal(json_string_value(json_object_get(e, "type")), "storage_buffer");
      assert_true(sp.storage_mask >> k & 1);
    }
    json_t *pc = json_object_get(launch, "push_constants");
    uint32_t end = 0;
    for (size_t k = 0; k < json_array_size(pc); k++) {
      json_t *e = json_array_get(pc, k);
      uint32_t off = (uint32_t)json_integer_value(json_object_get(e, "offset"));
      const char *ty = json_string_value(json_object_get(e, "type"));
      assert_true(strcmp(ty, "u32") == 0 || strcmp(ty, "i32") == 0 || strcmp(ty, "f32") == 0);
      assert_int_equal(off, 4 * k); /* std430 scalars, in order */
      if (off + 4 > end) end = off + 4;
    }
    if (end != sp.push_size)
      fail_msg("%s %s: launch push constants end at %u, SPIR-V block is %u bytes", info.kernel,
               info.variant, end, sp.push_size);
    json_t *g = json_object_get(launch, "groups");
    assert_int_equal(json_array_size(g), 3);
    json_decref(launch);
    json_decref(entry);
  }
  assert_true(nvk > 0);
  gk_archive_close(ar);
}

static void test_modules_and_dispatch_errors(void **state) {
  (void)state;
  gk_device d;
  char why[256];
  gk_archive *ar = open_real();
  if (!ar) skip();
  if (!have_device(&d)) {
    gk_archive_close(ar);
    skip();
  }
  /* gk_module_load with a vulkan device: a private gk_vk. */
  gk_module *m;
  if (gk_module_load(ar, &d, "argmax", "", &m) != GK_OK) fail_msg("%s", gk_archive_errmsg(ar));
  assert_string_equal(gk_module_info(m)->format, "spirv");
  gk_vk *vk = gk_vk_of(m);
  assert_non_null(vk);
  const gk_vk_entry *e = gk_module_symbol(m, "argmax");
  assert_non_null(e);
  assert_ptr_equal(e, gk_vk_entry_of(m, "argmax"));
  assert_int_not_equal(e->pipeline, 0);
  assert_int_equal(e->nbindings, 2);
  assert_int_equal(e->push_size, 8);
  assert_int_equal(e->local_size[0], 64);
  assert_null(gk_module_symbol(m, "main"));
  gk_kernel_info ki;
  assert_int_equal(gk_module_kernel_info(m, "argmax", &ki), GK_OK);
  assert_int_equal(ki.object, e->pipeline);
  gk_vk_native nat;
  assert_int_equal(gk_vk_native_handles(vk, &nat), GK_OK);
  assert_non_null(nat.device);
  assert_non_null(nat.get_instance_proc_addr);

  gk_vk_buffer *x, *out;
  assert_int_equal(gk_vk_buffer_create(vk, 4 * 5, &x), GK_OK);
  assert_int_equal(gk_vk_buffer_create(vk, 4, &out), GK_OK);
  float xs[5] = {1, 9, 3, 9, -2};
  assert_int_equal(gk_vk_buffer_write(x, 0, xs, sizeof xs), GK_OK);
  assert_int_equal(gk_vk_buffer_write(x, 4, xs, sizeof xs), GK_ERANGE);
  gk_vk_buffer *bufs[2] = {x, out};
  uint32_t push[2] = {1, 5}, g[3] = {1, 1, 1};
  assert_int_equal(gk_vk_dispatch(m, "argmax", bufs, 2, push, 8, g), GK_OK);
  int32_t got = -1;
  assert_int_equal(gk_vk_buffer_read(out, 0, &got, 4), GK_OK);
  assert_int_equal(got, 1);
  /* Errors say what is wrong. */
  assert_int_equal(gk_vk_dispatch(m, "argmax", bufs, 1, push, 8, g), GK_EINVAL);
  assert_non_null(strstr(gk_vk_errmsg(vk), "binds 2 buffers; 1 given"));
  assert_int_equal(gk_vk_dispatch(m, "argmax", bufs, 2, push, 4, g), GK_EINVAL);
  assert_non_null(strstr(gk_vk_errmsg(vk), "8 bytes of push constants; 4 given"));
  assert_int_equal(gk_vk_dispatch(m, "nope", bufs, 2, push, 8, g), GK_ENOSYMBOL);
  /* No groups: the row's ("rows", 1, 1), from the push constants given;
   * and the typed launch, buffers and scalars as tagged values. */
  gk_vk_buffer *x3, *out3;
  assert_int_equal(gk_vk_buffer_create(vk, 4 * 6, &x3), GK_OK);
  assert_int_equal(gk_vk_buffer_create(vk, 4 * 3, &out3), GK_OK);
  const float rows3[6] = {1, 2, 5, 4, -1, -3};
  assert_int_equal(gk_vk_buffer_write(x3, 0, rows3, sizeof rows3), GK_OK);
  gk_vk_buffer *b3[2] = {x3, out3};
  uint32_t push3[2] = {3, 2};
  int32_t got3[3] = {-1, -1, -1};
  assert_int_equal(gk_vk_dispatch(m, "argmax", b3, 2, push3, 8, NULL), GK_OK);
  assert_int_equal(gk_vk_buffer_read(out3, 0, got3, sizeof got3), GK_OK);
  assert_true(got3[0] == 1 && got3[1] == 0 && got3[2] == 0);
  memset(gk_vk_buffer_map(out3), 0xff, 12);
  gk_arg args[4] = {gk_arg_buffer(x3), gk_arg_buffer(out3), gk_arg_i64(3), gk_arg_i64(2)};
  gk_launch_dims dims;
  assert_int_equal(gk_module_launch_dims(m, "argmax", args, 4, &dims), GK_OK);
  assert_int_equal(dims.grid[0], 3);
  assert_int_equal(dims.block[0], 64);
  assert_int_equal(dims.scalar_size, 8);
  assert_memory_equal(dims.scalars, push3, 8);
  gk_device_limits lim;
  assert_int_equal(gk_module_limits(m, &lim), GK_OK);
  assert_true(lim.max_threads >= 128 && lim.max_groups[0] >= 65535);
  assert_int_equal(gk_module_launch(m, "argmax", args, 4, NULL), GK_OK);
  assert_int_equal(gk_vk_buffer_read(out3, 0, got3, sizeof got3), GK_OK);
  assert_true(got3[0] == 1 && got3[1] == 0 && got3[2] == 0);
  args[3] = gk_arg_f32(2);
  assert_int_equal(gk_module_launch(m, "argmax", args, 4, NULL), GK_EINVAL);
  assert_non_null(strstr(gk_last_error(), "parameter 3 'n' is i64; the value given is f32"));
  assert_int_equal(gk_vk_dispatch(m, "argmax", b3, 2, push3, 4, NULL), GK_EINVAL);
  assert_non_null(strstr(gk_vk_errmsg(vk), "4 bytes of scalars given; the row's block is 8"));
  gk_vk_buffer_destroy(x3);
  gk_vk_buffer_destroy(out3);
  assert_int_equal(gk_vk_buffer_create(vk, 0, &x), GK_EINVAL);
  assert_null(x);
  x = bufs[0];

  /* A buffer of another gk_vk is refused. */
  gk_vk *other;
  assert_int_equal(gk_vk_open(&d, &other, why, sizeof why), GK_OK);
  gk_vk_buffer *foreign;
  assert_int_equal(gk_vk_buffer_create(other, 8, &foreign), GK_OK);
  gk_vk_buffer *mixed[2] = {x, foreign};
  assert_int_equal(gk_vk_dispatch(m, "argmax", mixed, 2, push, 8, g), GK_EINVAL);
  assert_non_null(strstr(gk_vk_errmsg(vk), "another gk_vk"));

  /* Modules of one gk_vk share buffers; the device outlives gk_vk_close
   * while a module or buffer uses it. */
  gk_module *m2;
  if (gk_vk_module_load(ar, other, "argmax", "", 0, &m2) != GK_OK)
    fail_msg("%s", gk_archive_errmsg(ar));
  assert_ptr_equal(gk_vk_of(m2), other);
  gk_vk_close(other);
  gk_vk_buffer *x2;
  assert_int_equal(gk_vk_buffer_create(other, sizeof xs, &x2), GK_OK);
  xs[4] = 50;
  memcpy(gk_vk_buffer_map(x2), xs, sizeof xs);
  gk_vk_buffer *bufs2[2] = {x2, foreign};
  assert_int_equal(gk_vk_dispatch(m2, "argmax", bufs2, 2, push, 8, g), GK_OK);
  assert_int_equal(*(int32_t *)gk_vk_buffer_map(foreign), 4);
  gk_vk_buffer_destroy(x2);
  gk_vk_buffer_destroy(foreign);
  gk_module_unload(m2);

  /* Not vulkan modules, NULLs. */
  assert_null(gk_vk_of(NULL));
  assert_null(gk_vk_entry_of(m, NULL));
  gk_vk_buffer_destroy(NULL);
  gk_vk_close(NULL);
  assert_int_equal(gk_vk_buffer_size(out), 4);

  gk_vk_buffer_destroy(x);
  gk_vk_buffer_destroy(out);
  gk_module_unload(m);
  gk_archive_close(ar);
}

int main(int argc, char **argv) {
  real_archive = argc > 1 ? argv[1] : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spirv_header),
      cmocka_unit_test(test_verify_rows),
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_detect_policy),
      cmocka_unit_test(test_resolver_double),
      cmocka_unit_test(test_open_refuses),
      cmocka_unit_test(test_launch_matches_spirv),
      cmocka_unit_test(test_modules_and_dispatch_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
