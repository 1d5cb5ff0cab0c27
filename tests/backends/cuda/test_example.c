/*
 * test_example.c ARCHIVE - examples/launch_cuda built as it is (its main
 * renamed) and run against TEST DOUBLES: libgk talks to driver_double.c
 * through the resolver hook, and the few driver calls the example makes
 * itself (cuInit, cuMemAlloc, streams) are defined here. No GPU runs
 * anything; the test checks the launches the double receives: both
 * kernels, grids from the rows, the example's stream.
 */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "driver_double.h"
#include "gk.h"

int launch_cuda_main(int argc, char **argv);

/* ---- the example's own driver calls, doubled ------------------------------ */

static CUdeviceptr next_ptr = 0x100000;
static int streams, frees, allocs;
static char the_stream;

CUresult cuInit(unsigned flags) { return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)&the_stream;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)&the_stream;
  streams++;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
CUresult cuStreamDestroy(CUstream s) { (void)s; streams--; return CUDA_SUCCESS; }
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  *p = next_ptr;
  next_ptr += (n + 255) & ~(size_t)255;
  allocs++;
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) { (void)p; frees++; return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "doubled"; return CUDA_SUCCESS; }

int main(int argc, char **argv) {
  if (argc < 2 || access(argv[1], R_OK) != 0) {
    printf("SKIP: no archive of real cuda images (%s); the fixture needs nvcc\n",
           argc > 1 ? argv[1] : "none given");
    return 77;
  }
  cud d;
  cud_defaults(&d);
  d.major = 9, d.minor = 0, d.sms = 132; /* an H100's capability and SMs */
  d.launch_nparams = 6; /* qmatmul has 6, flash_attention 11 */
  cud_install(&d);
  char *args[] = {"launch_cuda", argv[1], NULL};
  int rc = launch_cuda_main(2, args);
  int bad = rc != 0;
  if (d.launches != 2) printf("FAIL: %d launches; want qmatmul and flash_attention\n", d.launches), bad = 1;
  /* The last launch: flash_attention, grid ["sq / 64 - 1 + skv / (1024 * (sq /
   * 16) + 1)", "n_heads", 1]: 4 - 1 + 1 for sq = 200, skv = 1024. */
  if (d.grid[0] != 4 || d.grid[1] != 32 || d.grid[2] != 1 || d.block[0] != 128)
    printf("FAIL: flash_attention launched with grid %u x %u x %u, block %u\n", d.grid[0],
           d.grid[1], d.grid[2], d.block[0]), bad = 1;
  if (d.stream != (void *)&the_stream) printf("FAIL: not on the example's stream\n"), bad = 1;
  if (allocs != 7 || frees != 7 || streams != 0) printf("FAIL: buffers or stream leaked\n"), bad = 1;
  if (d.retains != d.releases) printf("FAIL: libgk's context references do not balance\n"), bad = 1;
  cud_remove();
  printf("%s: the example launched both kernels on the test double\n", bad ? "FAIL" : "ok");
  return bad;
}
