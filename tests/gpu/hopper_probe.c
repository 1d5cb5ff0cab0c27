/*
 * hopper_probe.c - hopper_probe_open (hopper_probe.h).
 */
#include "hopper_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hopper_probe_open(int argc, char **argv, const char *prog, const char *what,
                      const char *source, cudrv *gpu, cu_module *mod, int *rc) {
  const char *cubin = NULL, *libcuda = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--libcuda") == 0 && i + 1 < argc)
      libcuda = argv[++i];
    else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: %s CUBIN [--libcuda PATH]\n  %s\n"
             "  exit 0 ok, 1 mismatch, 77 no Hopper GPU\n", prog, what);
      *rc = 0;
      return 0;
    } else if (!cubin && argv[i][0] != '-')
      cubin = argv[i];
    else {
      fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", prog, argv[i]);
      *rc = 2;
      return 0;
    }
  }
  if (!cubin) {
    fprintf(stderr, "usage: %s CUBIN [--libcuda PATH]\n", prog);
    *rc = 2;
    return 0;
  }
  char why[256];
  *rc = 77;
  if (cudrv_open(gpu, libcuda, 0, why, sizeof why) != 0) {
    printf("SKIP: no usable NVIDIA GPU: %s\n", why);
    cudrv_close(gpu);
    return 0;
  }
  if (gpu->cc_major != 9 || gpu->cc_minor != 0) {
    printf("SKIP: %s is sm_%d%d; the probe's sm_90a cubin runs on compute capability 9.0 only\n",
           gpu->name, gpu->cc_major, gpu->cc_minor);
    cudrv_close(gpu);
    return 0;
  }
  *rc = 1;
  FILE *fp = fopen(cubin, "rb");
  char *image = NULL;
  long size = -1;
  if (fp && fseek(fp, 0, SEEK_END) == 0 && (size = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0 &&
      (image = malloc((size_t)size)) != NULL && fread(image, 1, (size_t)size, fp) != (size_t)size)
    size = -1;
  if (fp) fclose(fp);
  if (!image || size <= 0) {
    printf("FAIL: cannot read %s (build it: nvcc -cubin -arch=sm_90a -I kernelsrc/cuda "
           "tests/gpu/%s)\n", cubin, source);
    free(image);
    cudrv_close(gpu);
    return 0;
  }
  cu_result r = gpu->cuModuleLoadDataEx(mod, image, 0, NULL, NULL);
  free(image);
  if (r != CUDRV_SUCCESS) {
    printf("FAIL: cuModuleLoadDataEx(%s) failed with %s\n", cubin, cudrv_err(gpu, r));
    cudrv_close(gpu);
    return 0;
  }
  return 1;
}
