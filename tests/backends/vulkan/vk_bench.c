/*
 * vk_bench.c ARCHIVE [RUNS] - how long the Vulkan path takes on this
 * machine's Vulkan device (lavapipe here): opening the device, loading a
 * module (select + decompress + verify + vkCreateShaderModule + one
 * compute pipeline), and one dispatch of qmatmul m=1, n=4096, k=4096,
 * bits=4 through gk_vk_dispatch (descriptor set, push constants, submit,
 * wait). Prints medians of RUNS (default 15). Not a test: these machines
 * are noisy; run it by hand (README of tests/backends/vulkan).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gk.h"
#include "gk_vulkan.h"
#include "qref.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: vk_bench ARCHIVE [RUNS]\n");
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 15;
  if (runs < 1 || runs > 1000) runs = 15;
  gk_archive *ar;
  if (gk_archive_open(argv[1], &ar) != GK_OK) {
    fprintf(stderr, "vk_bench: %s\n", gk_last_error());
    return 1;
  }
  gk_device dev;
  char why[256];
  double t0 = now_ms();
  if (gk_device_detect_backend(GK_BACKEND_VULKAN, &dev, why, sizeof why) != GK_OK) {
    fprintf(stderr, "vk_bench: no Vulkan device: %s\n", why);
    return 1;
  }
  double t_detect = now_ms() - t0;
  gk_vk *vk;
  t0 = now_ms();
  if (gk_vk_open(&dev, &vk, why, sizeof why) != GK_OK) {
    fprintf(stderr, "vk_bench: %s\n", why);
    return 1;
  }
  double t_open = now_ms() - t0;
  double *load = malloc(sizeof(double) * (size_t)runs), *disp = malloc(sizeof(double) * (size_t)runs);
  gk_module *m = NULL;
  for (int i = 0; i < runs; i++) {
    if (m) gk_module_unload(m);
    t0 = now_ms();
    if (gk_vk_module_load(ar, vk, "qmatmul", "bits=4", 0, &m) != GK_OK) {
      fprintf(stderr, "vk_bench: %s\n", gk_archive_errmsg(ar));
      return 1;
    }
    load[i] = now_ms() - t0;
  }
  /* The part of a load that is not Vulkan: select, decompress, verify. */
  double *rd = malloc(sizeof(double) * (size_t)runs);
  for (int i = 0; i < runs; i++) {
    size_t idx, size;
    void *bytes;
    t0 = now_ms();
    if (gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx) != GK_OK ||
        gk_archive_read(ar, idx, &bytes, &size) != GK_OK) {
      fprintf(stderr, "vk_bench: %s\n", gk_archive_errmsg(ar));
      return 1;
    }
    rd[i] = now_ms() - t0;
    gk_free(bytes);
  }
  const int64_t M = 1, N = 4096, K = 4096;
  size_t wb = qref_w_bytes(4, N, K);
  gk_vk_buffer *b[3];
  if (gk_vk_buffer_create(vk, (size_t)(M * K) * 4, &b[0]) != GK_OK ||
      gk_vk_buffer_create(vk, wb, &b[1]) != GK_OK ||
      gk_vk_buffer_create(vk, (size_t)(M * N) * 4, &b[2]) != GK_OK) {
    fprintf(stderr, "vk_bench: %s\n", gk_vk_errmsg(vk));
    return 1;
  }
  qref_rng r;
  qref_seed(&r, 1);
  qref_fill_x(&r, gk_vk_buffer_map(b[0]), (size_t)(M * K));
  qref_fill_w(&r, 4, N, K, gk_vk_buffer_map(b[1]));
  uint32_t push[3] = {(uint32_t)M, (uint32_t)N, (uint32_t)K}, g[3] = {(uint32_t)(N + 7) / 8, 1, 1};
  double first = 0;
  for (int i = 0; i <= runs; i++) {
    t0 = now_ms();
    if (gk_vk_dispatch(m, "qmatmul", b, 3, push, sizeof push, g) != GK_OK) {
      fprintf(stderr, "vk_bench: %s\n", gk_vk_errmsg(vk));
      return 1;
    }
    if (i == 0)
      first = now_ms() - t0;
    else
      disp[i - 1] = now_ms() - t0;
  }
  printf("device            vulkan:%s, %s\n", dev.arch, dev.name);
  printf("detect            %8.2f ms (first call: instance + enumeration)\n", t_detect);
  printf("gk_vk_open        %8.2f ms (instance, device, queue, pools)\n", t_open);
  printf("module load       %8.2f ms median of %d (select, read, verify, shader module, pipeline)\n",
         median(load, runs), runs);
  printf("  of which libgk   %8.2f ms median (select, decompress, SHA-256, SPIR-V header): the\n"
         "  rest is vkCreateShaderModule + vkCreateComputePipelines\n", median(rd, runs));
  printf("qmatmul dispatch  %8.2f ms median of %d, first %.2f ms (m=1 n=4096 k=4096 bits=4, "
         "%.1f MB of weights: %.2f GB/s)\n",
         median(disp, runs), runs, first, wb / 1e6, wb / 1e6 / median(disp, runs));
  for (int i = 0; i < 3; i++) gk_vk_buffer_destroy(b[i]);
  gk_module_unload(m);
  gk_vk_close(vk);
  gk_archive_close(ar);
  free(load), free(disp), free(rd);
  return 0;
}
