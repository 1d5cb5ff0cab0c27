/*
 * fuzz_elf.c - fuzz target for libgk's image readers, one per backend and
 * format: the ELF checks of cpu shared objects, CUDA cubins (sections,
 * .nv.compat, .note.nv.tkinfo, kernel sections) and AMD code objects, the
 * PTX directive scan, the SPIR-V header check and reflection (entry points,
 * local sizes, bindings, push constants), WGSL text and the metallib header.
 * It also feeds the row's strings to the parsers that read them (targets,
 * toolchain, entry list) and to each backend's selection rule.
 *
 * An input is either an image alone, tried against a fixed row of every
 * format, or "GKROW backend|format|target|entry|toolchain\n" followed by the
 * image: the row then comes from the input too, so the fuzzer reaches the
 * checks that only run once the target matches (a cubin's SM, an AMD
 * processor). The seeds in tests/fuzz/corpus/elf are real images with their
 * real rows (tests/fuzz/make_seeds.py).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"
#include "gk_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const gk_image_info fixed_rows[] = {
    {.backend = "cpu", .format = "so", .target = "x86-64-v3", .entry = "[\"k\"]"},
    {.backend = "cuda", .format = "cubin", .target = "sm_90", .entry = "[\"k\"]",
     .toolchain = "nvcc 13.0.88"},
    {.backend = "cuda", .format = "cubin", .target = "sm_90a", .entry = "[]",
     .toolchain = "nvcc 13.0.88"},
    {.backend = "cuda", .format = "cubin", .target = "sm_100f", .entry = "[\"k\"]",
     .toolchain = ""},
    {.backend = "cuda", .format = "ptx", .target = "compute_75", .entry = "[\"k\"]",
     .toolchain = "nvcc 13.0.88"},
    {.backend = "rocm", .format = "hsaco", .target = "gfx90a:xnack-", .entry = "[\"k\"]"},
    {.backend = "rocm", .format = "hsaco", .target = "gfx11-generic", .entry = "[\"k\"]"},
    {.backend = "vulkan", .format = "spirv", .target = "vulkan1.1", .entry = "[\"k\"]"},
    {.backend = "wgsl", .format = "wgsl", .target = "webgpu", .entry = "[\"k\"]"},
    {.backend = "metal", .format = "metallib", .target = "macos-metal3.1",
     .entry = "[\"k\"]"},
};

/* Devices whose rules read the row's target. */
static const char *const device_specs[] = {
    "cuda:sm_90,driver=13.0", "cuda:sm_120", "rocm:gfx90a:sramecc+:xnack-",
    "rocm:gfx1100", "vulkan:vulkan1.3", "wgsl:webgpu", "metal:macos-metal3.1"};

static void one_row(const gk_image_info *row, const uint8_t *data, size_t size) {
  char why[256];
  int rc = gk__image_check(data, size, row, NULL, why, sizeof why);
  if (rc != GK_OK && rc != GK_EFORMAT && rc != GK_ENOMEM) abort();
  if (rc != GK_OK && why[0] == '\0') abort(); /* a refusal says why */
  if (strcmp(row->format, "spirv") == 0) {
    gk__spirv_info info;
    gk__spirv_reflect(data, size, &info, why, sizeof why);
  }

  /* The row's strings, as the selection rules and parsers read them. */
  gk__cuda_target ct;
  gk__amd_target at;
  int major, minor;
  gk__entries entries;
  gk__cuda_parse_target(row->target, &ct);
  gk__cuda_toolkit_version(row->toolchain);
  gk__entries_parse(row->entry, &entries);
  gk__amd_parse(row->target, &at, why, sizeof why);
  gk__vk_version_parse(row->target, &major, &minor);
  gk__wgsl_arch_ok(row->target, why, sizeof why);
  for (size_t d = 0; d < sizeof device_specs / sizeof device_specs[0]; d++) {
    gk_device dev;
    long score;
    if (gk_device_parse(device_specs[d], &dev, NULL, 0) != GK_OK) abort();
    if (strcmp(gk_backend_name(dev.backend), row->backend) != 0) continue;
    gk__backend_of(dev.backend)->fits(&dev, row, 0, &score, why, sizeof why);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char tag[] = "GKROW ";
  if (size >= sizeof tag - 1 && memcmp(data, tag, sizeof tag - 1) == 0) {
    const uint8_t *nl = memchr(data, '\n', size < 512 ? size : 512);
    if (!nl) return 0;
    /* Fields split at '|'; the strings are copied so that each is a C
     * string, as the archive's index gives them. */
    char line[512], *field[5] = {"", "", "", "", ""};
    size_t len = (size_t)(nl - data) - (sizeof tag - 1);
    memcpy(line, data + sizeof tag - 1, len);
    line[len] = '\0';
    char *p = line;
    for (int i = 0; i < 5 && p; i++) {
      field[i] = p;
      p = strchr(p, '|');
      if (p) *p++ = '\0';
    }
    gk_image_info row = {.kernel = "k", .variant = "", .launch = "{}",
                         .backend = field[0], .format = field[1],
                         .target = field[2], .entry = field[3],
                         .toolchain = field[4]};
    /* The image in a buffer of its own size, so ASan sees any overread. */
    size_t n = size - (size_t)(nl + 1 - data);
    uint8_t *img = malloc(n ? n : 1);
    if (!img) abort();
    memcpy(img, nl + 1, n);
    one_row(&row, img, n);
    free(img);
    return 0;
  }
  for (size_t i = 0; i < sizeof fixed_rows / sizeof fixed_rows[0]; i++) {
    gk_image_info row = fixed_rows[i];
    row.kernel = "k";
    row.variant = "";
    row.launch = "{}";
    if (!row.toolchain) row.toolchain = "";
    one_row(&row, data, size);
  }
  return 0;
}
