/*
 * test_stub.c STUB: libgk's CUDA detection against the CUDA toolkit's REAL
 * stub library (lib64/stubs/libcuda.so), whose cuInit answers
 * CUDA_ERROR_STUB_LIBRARY (34). The stub stands in for nothing: it is what
 * a machine with the toolkit but without the NVIDIA driver finds when a
 * build path leaks into the library path, and libgk must say "no CUDA
 * device" with that reason. The stub is reached through the resolver hook,
 * with dlsym on the file given (tests/backends/cuda/CMakeLists.txt also runs `gk probe`
 * with LD_LIBRARY_PATH pointing at it, through the ordinary dlopen).
 * Exit 77 (SKIP) when the stub is not there.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gk.h"

static void *stub;

static void *resolve(void *ctx, const char *symbol) {
  (void)ctx;
  return dlsym(stub, symbol);
}

int main(int argc, char **argv) {
  if (argc < 2 || !(stub = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
    printf("SKIP: no CUDA stub library at %s (%s)\n", argc > 1 ? argv[1] : "(none given)",
           dlerror());
    return 77;
  }
  gk_driver_set_resolver(GK_BACKEND_CUDA, resolve, NULL);
  gk_device d;
  memset(&d, 0x5a, sizeof d);
  gk_device copy = d;
  char why[512] = "";
  int rc = gk_device_detect_backend(GK_BACKEND_CUDA, &d, why, sizeof why);
  int bad = 0;
  printf("stub libcuda: %s: %s\n", gk_strerror(rc), why);
  if (rc != GK_ENODEVICE) {
    printf("FAIL: expected GK_ENODEVICE\n");
    bad = 1;
  }
  const char *want = "no CUDA device: the libcuda found is the CUDA toolkit's stub, not a "
                     "driver (cuInit: CUDA_ERROR_STUB_LIBRARY (34)); install the NVIDIA driver";
  if (strcmp(why, want) != 0) {
    printf("FAIL: reason\n got  '%s'\n want '%s'\n", why, want);
    bad = 1;
  }
  if (memcmp(&d, &copy, sizeof d) != 0) {
    printf("FAIL: the device was written on failure\n");
    bad = 1;
  }
  /* The best device is then another backend's. */
  if (gk_device_detect(&d) != GK_OK || d.backend == GK_BACKEND_CUDA) {
    printf("FAIL: gk_device_detect chose %s\n", gk_backend_name(d.backend));
    bad = 1;
  }
  gk_driver_set_resolver(GK_BACKEND_CUDA, NULL, NULL);
  dlclose(stub);
  return bad;
}
