/*
 * launch_cuda - load two kernels from a gllm-kernels archive and launch them
 * on an NVIDIA GPU with no hand-written geometry: libgk picks the image for
 * this GPU, and gk_module_launch takes the grid, the block, the shared
 * memory and the parameter layout from the archive's launch rows.
 *
 *   cc main.c -I/usr/local/cuda/include $(pkg-config --cflags --libs gk) -lcuda
 *   ./a.out kernels.gkfat
 *
 * The buffers hold no data here: this shows the calls, not the numbers
 * (tests/gpu checks those). A test builds it against libcuda's test double.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>

#include <gk.h>

static int cu_fail(CUresult r, const char *call) {
  const char *name = NULL;
  cuGetErrorName(r, &name);
  fprintf(stderr, "launch_cuda: %s: %s\n", call, name ? name : "CUDA error");
  return 1;
}
#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) return cu_fail(r_, #call); } while (0)

/* Launches entry `entry` of m and says what libgk chose. */
static int launch(const gk_module *m, const char *entry, const gk_arg *args, size_t n,
                  CUstream stream) {
  gk_launch_dims d;
  gk_launch_options o = {.stream = stream};
  if (gk_module_launch_dims(m, entry, args, n, &d) != GK_OK ||
      gk_module_launch(m, entry, args, n, &o) != GK_OK) {
    fprintf(stderr, "launch_cuda: %s\n", gk_last_error());
    return 1;
  }
  printf("%s (%s): grid %u x %u x %u, block %u x %u x %u\n", entry, gk_module_info(m)->target,
         d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2]);
  return 0;
}

int main(int argc, char **argv) {
  gk_archive *ar;
  gk_module *qm, *fa;
  if (gk_archive_open(argc > 1 ? argv[1] : "kernels.gkfat", &ar) != GK_OK) {
    fprintf(stderr, "launch_cuda: %s\n", gk_last_error());
    return 1;
  }
  if (gk_module_load(ar, NULL, "qmatmul", "bits=4", &qm) != GK_OK ||
      gk_module_load(ar, NULL, "flash_attention", "causal=1,dtype=f16,head_dim=128", &fa) != GK_OK) {
    fprintf(stderr, "launch_cuda: %s\n", gk_archive_errmsg(ar));
    return 1;
  }
  gk_archive_close(ar); /* modules outlive their archive */
  if (gk_module_device(qm)->backend != GK_BACKEND_CUDA) {
    fprintf(stderr, "launch_cuda: no CUDA GPU here (libgk chose %s)\n",
            gk_backend_name(gk_module_device(qm)->backend));
    return 1;
  }

  /* libgk loaded the kernels into the device's primary context: allocate
   * and make the stream there. */
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, gk_module_device(qm)->index));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CU(cuStreamCreate(&stream, 0));

  /* y = x W^T: one row of x (a decode step), W 4096 x 4096 in BITS 4
   * blocks of 32 (docs/weights.md: 18 bytes per block). */
  const int64_t m = 1, n = 4096, k = 4096;
  CUdeviceptr x, w, y;
  CU(cuMemAlloc(&x, (size_t)(m * k) * 4));
  CU(cuMemAlloc(&w, (size_t)(n * k / 32) * 18));
  CU(cuMemAlloc(&y, (size_t)(m * n) * 4));
  const gk_arg qargs[] = {gk_arg_ptr(x), gk_arg_ptr(w), gk_arg_ptr(y),
                          gk_arg_i64(m), gk_arg_i64(n), gk_arg_i64(k)};
  if (launch(qm, "qmatmul", qargs, 6, stream)) return 1;

  /* Causal attention, 32 query heads over 8 key/value heads, f16. */
  const int64_t heads = 32, kv_heads = 8, sq = 200, skv = 1024, d = 128;
  CUdeviceptr q, kk, v, o;
  CU(cuMemAlloc(&q, (size_t)(heads * sq * d) * 2));
  CU(cuMemAlloc(&kk, (size_t)(kv_heads * skv * d) * 2));
  CU(cuMemAlloc(&v, (size_t)(kv_heads * skv * d) * 2));
  CU(cuMemAlloc(&o, (size_t)(heads * sq * d) * 2));
  /* A prefill needs no workspace (ws NULL, 0 bytes); a decode splits its
   * keys across blocks through one (docs/kernels.md, flash_attention). */
  const gk_arg fargs[] = {gk_arg_ptr(q),         gk_arg_ptr(kk),          gk_arg_ptr(v),
                          gk_arg_ptr(o),         gk_arg_i64(heads),       gk_arg_i64(kv_heads),
                          gk_arg_i64(sq),        gk_arg_i64(skv),
                          gk_arg_f32((float)(1.0 / sqrt((double)d))),
                          gk_arg_ptr(0),         gk_arg_i64(0)};
  if (launch(fa, "flash_attention", fargs, 11, stream)) return 1;

  CU(cuStreamSynchronize(stream));
  CU(cuStreamDestroy(stream));
  CUdeviceptr all[] = {x, w, y, q, kk, v, o};
  for (int i = 0; i < 7; i++) CU(cuMemFree(all[i]));
  CU(cuDevicePrimaryCtxRelease(dev));
  gk_module_unload(qm);
  gk_module_unload(fa);
  return 0;
}
