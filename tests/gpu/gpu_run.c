/*
 * gpu_run.c - images, device memory and launches for test_gpu.c (gpu_run.h).
 */
#include "gpu_run.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cudrv gpu;
gk_archive *gpu_archive, *cpu_archive;
gk_device gpu_dev, cpu_dev;
int small_shapes, failures, cases, launches;

void failf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  failures++;
}

void cu_ok(cu_result r, const char *fmt, ...) {
  if (r == CUDRV_SUCCESS) return;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf(": %s; stopping (the context may be unusable)\n", cudrv_err(&gpu, r));
  va_end(ap);
  exit(1);
}

/* ---- device memory ------------------------------------------------------ */

cu_deviceptr dnew(const void *src, size_t size) {
  cu_deviceptr p;
  cu_ok(gpu.cuMemAlloc(&p, size + GUARD), "cuMemAlloc(%zu bytes)", size + GUARD);
  if (size && src) cu_ok(gpu.cuMemcpyHtoD(p, src, size), "cuMemcpyHtoD(%zu bytes)", size);
  if (size && !src) cu_ok(gpu.cuMemsetD8(p, 0xff, size), "cuMemsetD8(%zu bytes)", size);
  cu_ok(gpu.cuMemsetD8(p + size, GUARD_BYTE, GUARD), "cuMemsetD8(guard)");
  return p;
}

void dclear(cu_deviceptr p, size_t size) {
  if (size) cu_ok(gpu.cuMemsetD8(p, 0xff, size), "cuMemsetD8(%zu bytes)", size);
}

int dget(void *dst, cu_deviceptr p, size_t size, const char *what) {
  unsigned char *tmp = malloc(size + GUARD);
  if (!tmp) {
    printf("FAIL: out of host memory\n");
    exit(1);
  }
  cu_ok(gpu.cuMemcpyDtoH(tmp, p, size + GUARD), "cuMemcpyDtoH(%zu bytes)", size + GUARD);
  memcpy(dst, tmp, size);
  int bad = 0;
  for (int i = 0; i < GUARD && !bad; i++) bad = tmp[size + i] != GUARD_BYTE;
  free(tmp);
  if (bad) failf("%s: wrote past the end of its output", what);
  return bad;
}

void dfree(cu_deviceptr p) { cu_ok(gpu.cuMemFree(p), "cuMemFree"); }

/* ---- images ----------------------------------------------------------------- */

/* Entry names of a row (its JSON array); -1 when malformed. */
static int read_entries(const gk_image_info *info, image *im) {
  json_t *a = json_loads(info->entry, 0, NULL);
  im->nentries = 0;
  for (size_t i = 0; json_is_array(a) && i < json_array_size(a) && i < MAX_ENTRIES; i++) {
    const char *e = json_string_value(json_array_get(a, i));
    if (!e || strlen(e) >= sizeof im->entry[0]) break;
    strcpy(im->entry[im->nentries++], e);
  }
  const int ok = json_is_array(a) && im->nentries == (int)json_array_size(a);
  json_decref(a);
  return ok ? 0 : -1;
}

/* Fills entries, functions (from libgk or from the module loaded here) and
 * launches of one image; 0, or -1 after a FAIL. */
static int setup_image(kv *t, image *im, const gk_image_info *info) {
  if (read_entries(info, im) != 0) {
    failf("%s %s %s: entry list '%s' is not an array of at most %d names", t->kernel,
          t->variant, info->target, info->entry, MAX_ENTRIES);
    return -1;
  }
  for (int e = 0; e < im->nentries; e++) {
    if (gk_launch_parse(info, im->entry[e], &im->launch[e]) != GK_OK) {
      failf("%s %s %s entry %s: %s", t->kernel, t->variant, info->target, im->entry[e],
            gk_last_error());
      return -1;
    }
    if (im->gm) {
      im->fn[e] = (cu_function)gk_module_symbol(im->gm, im->entry[e]);
      if (!im->fn[e]) {
        failf("%s %s: gk_module_symbol('%s') gave NULL", t->kernel, im->label, im->entry[e]);
        return -1;
      }
    } else {
      cu_result r = gpu.cuModuleGetFunction(&im->fn[e], im->own, im->entry[e]);
      if (r != CUDRV_SUCCESS) {
        failf("%s %s: cuModuleGetFunction('%s'): %s", t->kernel, im->label, im->entry[e],
              cudrv_err(&gpu, r));
        return -1;
      }
    }

  }
  return 0;
}

/* Row `idx` loaded here, as the driver would from a fatbin: its bytes
 * from libgk (hash and header checked), PTX NUL-terminated and
 * JIT-compiled with the error log kept. */
static void load_row(kv *t, size_t idx) {
  gk_image_info info;
  void *bytes;
  size_t size;
  image *im = &t->img[t->nimages];
  memset(im, 0, sizeof *im);
  if (gk_archive_image(gpu_archive, idx, &info) != GK_OK ||
      gk_archive_read(gpu_archive, idx, &bytes, &size) != GK_OK) {
    failf("%s %s: cannot read row %zu: %s", t->kernel, t->variant, idx,
          gk_archive_errmsg(gpu_archive));
    return;
  }
  const int ptx = strcmp(info.format, "ptx") == 0;
  snprintf(im->label, sizeof im->label, "%s (%s)", info.target,
           ptx ? "PTX, JIT by the driver" : info.format);
  char *text = malloc(size + 1), log[4096] = "";
  if (!text) {
    printf("FAIL: out of host memory\n");
    exit(1);
  }
  memcpy(text, bytes, size);
  text[size] = 0;
  gk_free(bytes);
  cu_jit_option opt[2] = {CUDRV_JIT_ERROR_LOG_BUFFER, CUDRV_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *val[2] = {log, (void *)(uintptr_t)sizeof log};
  cu_result r = gpu.cuModuleLoadDataEx(&im->own, text, 2, opt, val);
  free(text);
  if (r != CUDRV_SUCCESS) {
    failf("%s %s %s: cuModuleLoadDataEx: %s%s%s", t->kernel, t->variant, im->label,
          cudrv_err(&gpu, r), log[0] ? "; JIT log: " : "", log);
    return;
  }
  t->nimages++;
  if (setup_image(t, im, &info) != 0) {
    gpu.cuModuleUnload(im->own);
    t->nimages--;
  }
}

int kv_load(kv *t) {
  if (gk_module_load(cpu_archive, &cpu_dev, t->kernel, t->variant, &t->cpu) != GK_OK) {
    failf("%s %s: no CPU image to compare with: %s", t->kernel, t->variant,
          gk_archive_errmsg(cpu_archive));
    return 0;
  }
  image *im = &t->img[0];
  memset(im, 0, sizeof *im);
  if (gk_module_load(gpu_archive, &gpu_dev, t->kernel, t->variant, &im->gm) != GK_OK) {
    failf("%s %s: gk_module_load: %s", t->kernel, t->variant, gk_archive_errmsg(gpu_archive));
    return 0;
  }
  const gk_image_info *sel = gk_module_info(im->gm);
  snprintf(im->label, sizeof im->label, "%s (%s, libgk's choice)", sel->target, sel->format);
  if (setup_image(t, im, sel) != 0) {
    gk_module_unload(im->gm);
    return 0;
  }
  t->nimages = 1;
  gk_candidate c[64];
  size_t n = 0;
  if (gk_archive_explain(gpu_archive, &gpu_dev, t->kernel, t->variant, 0, c, 64, &n) != GK_OK) {
    failf("%s %s: gk_archive_explain: %s", t->kernel, t->variant, gk_archive_errmsg(gpu_archive));
    return t->nimages;
  }
  char unfit[512] = "";
  for (size_t i = 0; i < n && i < 64; i++) {
    gk_image_info info;
    if (gk_archive_image(gpu_archive, c[i].index, &info) != GK_OK ||
        strcmp(info.backend, "cuda") != 0)
      continue;
    if (c[i].chosen && strcmp(info.target, sel->target) != 0)
      failf("%s %s: explain chose %s, gk_module_load loaded %s", t->kernel, t->variant,
            info.target, sel->target);
    if (!c[i].fits)
      snprintf(unfit + strlen(unfit), sizeof unfit - strlen(unfit), "%s%s", unfit[0] ? " " : "",
               info.target);
    else if (!c[i].chosen && !small_shapes && t->nimages < MAX_IMAGES)
      load_row(t, c[i].index);
  }
  printf("%s %s: runs on", t->kernel, t->variant[0] ? t->variant : "(no variant)");
  for (int i = 0; i < t->nimages; i++) printf("%s %s", i ? "," : "", t->img[i].label);
  printf("; not for this card: %s\n", unfit[0] ? unfit : "none");
  return t->nimages;
}

void kv_unload(kv *t) {
  for (int i = 0; i < t->nimages; i++) {
    for (int e = 0; e < t->img[i].nentries; e++) gk_launch_free(t->img[i].launch[e]);
    if (t->img[i].gm) gk_module_unload(t->img[i].gm);
    if (t->img[i].own) gpu.cuModuleUnload(t->img[i].own);
  }
  gk_module_unload(t->cpu);
}

int entry_of(const image *im, const char *entry) {
  for (int e = 0; e < im->nentries; e++)
    if (strcmp(im->entry[e], entry) == 0) return e;
  return -1;
}

/* The selected image launches through gk_module_launch, as a downstream
 * program does; the rows loaded here take their geometry from
 * gk_launch_eval (the same evaluator) and go to cuLaunchKernel. */
int run(const image *im, int e, const args *a, const unsigned *cap, const char *what) {
  gk_launch_dims d;
  gk_device_limits lim;
  if (gk_device_limits_known(&gpu_dev, &lim) != GK_OK ||
      (im->gm ? gk_module_launch_dims(im->gm, im->entry[e], a->v, (size_t)a->n, &d)
              : gk_launch_eval(im->launch[e], &lim, a->v, (size_t)a->n, &d)) != GK_OK) {
    failf("%s on %s: %s", what, im->label, gk_last_error());
    return 1;
  }
  for (int k = 0; cap && k < 3; k++) d.grid[k] = d.grid[k] < cap[k] ? d.grid[k] : cap[k];
  cu_result r = cudrv_allow_shared(&gpu, im->fn[e], d.shared);
  if (r != CUDRV_SUCCESS) {
    failf("%s on %s: cuFuncSetAttribute(%u bytes of dynamic shared memory): %s", what,
          im->label, d.shared, cudrv_err(&gpu, r));
    return 1;
  }
  if (im->gm) {
    gk_launch_options o = {.grid = d.grid};
    if (gk_module_launch(im->gm, im->entry[e], a->v, (size_t)a->n, &o) != GK_OK) {
      failf("%s on %s: gk_module_launch: %s", what, im->label, gk_last_error());
      return 1;
    }
  } else {
    void *params[GK_LAUNCH_MAX_PARAMS];
    for (int k = 0; k < a->n; k++) params[k] = (void *)&a->v[k].v;
    r = gpu.cuLaunchKernel(im->fn[e], d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1],
                           d.block[2], d.shared, NULL, params, NULL);
    if (r != CUDRV_SUCCESS) {
      failf("%s on %s: cuLaunchKernel(grid %u x %u x %u, block %u x %u x %u): %s", what,
            im->label, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2],
            cudrv_err(&gpu, r));
      return 1;
    }
  }
  cu_ok(gpu.cuCtxSynchronize(), "%s on %s: the kernel failed", what, im->label);
  launches++;
  return 0;
}

const unsigned CAP[3] = {2, 1, 1};

int same_bits(const void *a, const void *b, size_t n, const char *what, const char *how) {
  if (memcmp(a, b, n) == 0) return 0;
  failf("%s: %s gives other bits", what, how);
  return 1;
}

