/*
 * fake_cuda.c - a TEST DOUBLE of libcuda.so.1, for a dry run of tests/gpu
 * and bench/gpu on machines without an NVIDIA GPU (gpu.dryrun, bench.gpu):
 * built into a folder of its own as libcuda.so.1, found through
 * LD_LIBRARY_PATH by libgk's dlopen and by tests/common/cudrv.c alike.
 *
 * It checks the harness, not the kernels: device memory is host memory,
 * and a launch of a cubin or PTX runs the CPU image of the same kernel and
 * variant instead (the image is recognised by its SHA-256 among the cuda
 * rows of $FAKE_ARCHIVE; the CPU image comes from $FAKE_CPU_ARCHIVE, or
 * $FAKE_ARCHIVE). So a dry run proves that the programs load every image,
 * lay out every launch from its row, move the buffers and compare the
 * results as they will on a GPU; the kernel bodies themselves are checked
 * by the emulator (tests/backends/cuda) and, on a lent GPU, by ci/gpu/run.sh.
 * qmatmul_q8x's GPU entry reads W in the original block format and the CPU
 * entry the packed one: the double repacks W with the CPU image's
 * qmatmul_repack first. qmatmul_q8x_x, qmatmul_q8x_rec and qmatmul_q8x_mm
 * have no CPU entries: the double runs tests/common's reference of their
 * arithmetic (qref_q8x_round into records of its own order, qref_q8x_row
 * and qref_q8x_mm_row from them). Events read the host clock.
 */
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gk.h"
#include "qref.h"

#define EXPORT __attribute__((visibility("default")))
typedef int cu_result;
enum { OK = 0, E_INVALID = 1, E_MEMORY = 2, E_NOT_FOUND = 500, E_NO_IMAGE = 209 };

static gk_archive *gpu_ar, *cpu_ar;
static gk_device cpu_dev;

/* A loaded "module": the kernel and variant its image is a row of. */
typedef struct fn {
  char entry[64];
  gk_module *cpu;
  void *f;
} fn;
typedef struct mod {
  char kernel[64], variant[128];
  int n;
  fn fns[8];
} mod;

EXPORT cu_result cuInit(unsigned flags) {
  (void)flags;
  if (gpu_ar) return OK; /* every cuInit after the first, as the driver's */
  const char *g = getenv("FAKE_ARCHIVE"), *c = getenv("FAKE_CPU_ARCHIVE");
  char why[128];
  if (!g || gk_archive_open(g, &gpu_ar) != GK_OK ||
      gk_archive_open(c ? c : g, &cpu_ar) != GK_OK ||
      gk_device_parse("cpu", &cpu_dev, why, sizeof why) != GK_OK) {
    fprintf(stderr, "fake libcuda: set FAKE_ARCHIVE (cuda rows) and FAKE_CPU_ARCHIVE\n");
    return E_INVALID;
  }
  fprintf(stderr, "TEST DOUBLE: libcuda is played by tests/gpu/fake_cuda.c (launches run the "
                  "CPU images)\n");
  return OK;
}
/* The archives stay open for the process, and close with it. */
__attribute__((destructor)) static void fake_close(void) {
  if (cpu_ar != gpu_ar) gk_archive_close(cpu_ar);
  gk_archive_close(gpu_ar);
}

EXPORT cu_result cuDriverGetVersion(int *v) { *v = 13000; return OK; }
EXPORT cu_result cuDeviceGetCount(int *n) { *n = 1; return OK; }
EXPORT cu_result cuDeviceGet(int *d, int ordinal) { *d = ordinal; return OK; }
EXPORT cu_result cuDeviceGetName(char *name, int len, int dev) {
  (void)dev;
  snprintf(name, (size_t)len, "Fake H200 (test double)");
  return OK;
}
/* Compute capability 9.0, 132 SMs, 50 MB of L2, CUDA's launch limits and
 * sm_90's opt-in shared memory (libgk asks it when a row has `shared`). */
EXPORT cu_result cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  switch (attr) {
  case 75: *v = 9; break;                     /* COMPUTE_CAPABILITY_MAJOR */
  case 76: *v = 0; break;                     /* MINOR */
  case 13: *v = 1980000; break;               /* CLOCK_RATE (kHz) */
  case 16: *v = 132; break;                   /* MULTIPROCESSOR_COUNT */
  case 38: *v = 50 << 20; break;              /* L2_CACHE_SIZE */
  case 36: *v = 2619000; break;               /* MEMORY_CLOCK_RATE (kHz) */
  case 37: *v = 5120; break;                  /* GLOBAL_MEMORY_BUS_WIDTH */
  case 1: *v = 1024; break;                   /* MAX_THREADS_PER_BLOCK */
  case 5: *v = 2147483647; break;             /* MAX_GRID_DIM_X */
  case 6: case 7: *v = 65535; break;          /* Y, Z */
  case 97: *v = 232448; break;               /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 227 KB */
  default: *v = 0;
  }
  return OK;
}
EXPORT cu_result cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  (void)dev;
  *bytes = (size_t)140 << 30;
  return OK;
}
EXPORT cu_result cuGetErrorName(cu_result e, const char **s) {
  *s = e == E_INVALID ? "CUDA_ERROR_INVALID_VALUE"
       : e == E_NOT_FOUND ? "CUDA_ERROR_NOT_FOUND"
       : e == E_NO_IMAGE  ? "CUDA_ERROR_NO_BINARY_FOR_GPU"
                          : "CUDA_ERROR_UNKNOWN";
  return OK;
}
static int the_context;
EXPORT cu_result cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  *ctx = &the_context;
  return OK;
}
EXPORT cu_result cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
EXPORT cu_result cuCtxPushCurrent_v2(void *ctx) { (void)ctx; return OK; }
EXPORT cu_result cuCtxPopCurrent_v2(void **ctx) {
  if (ctx) *ctx = &the_context;
  return OK;
}
EXPORT cu_result cuCtxSetCurrent(void *ctx) { (void)ctx; return OK; }
EXPORT cu_result cuCtxSynchronize(void) { return OK; }

EXPORT cu_result cuMemAlloc_v2(uint64_t *p, size_t n) {
  void *q = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!q) return E_MEMORY;
  *p = (uint64_t)(uintptr_t)q;
  return OK;
}
EXPORT cu_result cuMemFree_v2(uint64_t p) {
  free((void *)(uintptr_t)p);
  return OK;
}
EXPORT cu_result cuMemsetD8_v2(uint64_t p, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)p, v, n);
  return OK;
}
EXPORT cu_result cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return OK;
}
EXPORT cu_result cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return OK;
}
EXPORT cu_result cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void *stream) {
  (void)stream;
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return OK;
}

/* The bytes a loader hands over: an ELF's extent from its headers, or
 * NUL-terminated PTX text. */
static size_t image_size(const unsigned char *b) {
  if (memcmp(b, "\177ELF", 4) != 0) return strlen((const char *)b);
  uint64_t phoff, shoff;
  uint16_t phentsize, phnum, shentsize, shnum;
  memcpy(&phoff, b + 0x20, 8), memcpy(&shoff, b + 0x28, 8);
  memcpy(&phentsize, b + 0x36, 2), memcpy(&phnum, b + 0x38, 2);
  memcpy(&shentsize, b + 0x3a, 2), memcpy(&shnum, b + 0x3c, 2);
  size_t end = shoff + (size_t)shentsize * shnum;
  if (phoff + (size_t)phentsize * phnum > end) end = phoff + (size_t)phentsize * phnum;
  for (int i = 0; i < shnum; i++) {
    const unsigned char *sh = b + shoff + (size_t)i * shentsize;
    uint32_t type;
    uint64_t off, size;
    memcpy(&type, sh + 4, 4), memcpy(&off, sh + 0x18, 8), memcpy(&size, sh + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */ && off + size > end) end = off + size;
  }
  return end;
}

EXPORT cu_result cuModuleLoadDataEx(void **out, const void *image, unsigned n, int *opts,
                                    void **vals) {
  (void)n, (void)opts, (void)vals;
  unsigned char h[32];
  size_t count = 0;
  crypto_hash_sha256(h, image, image_size(image));
  gk_archive_count(gpu_ar, &count);
  for (size_t i = 0; i < count; i++) {
    gk_image_info row;
    if (gk_archive_image(gpu_ar, i, &row) != GK_OK || strcmp(row.backend, "cuda") ||
        memcmp(row.sha256, h, 32))
      continue;
    mod *m = calloc(1, sizeof *m);
    if (!m) return E_MEMORY;
    snprintf(m->kernel, sizeof m->kernel, "%s", row.kernel);
    snprintf(m->variant, sizeof m->variant, "%s", row.variant);
    *out = m;
    return OK;
  }
  fprintf(stderr, "fake libcuda: an image that is no cuda row of $FAKE_ARCHIVE\n");
  return E_NO_IMAGE;
}
EXPORT cu_result cuModuleLoadData(void **out, const void *image) {
  return cuModuleLoadDataEx(out, image, 0, NULL, NULL);
}
/* GPU-only entries, run by the reference instead of a CPU image's. */
static int gpu_only(const char *name) {
  return !strcmp(name, "qmatmul_q8x_x") || !strcmp(name, "qmatmul_q8x_rec") ||
         !strcmp(name, "qmatmul_q8x_mm");
}

EXPORT cu_result cuModuleGetFunction(void **f, void *mp, const char *name) {
  mod *m = mp;
  if (m->n == (int)(sizeof m->fns / sizeof m->fns[0])) return E_MEMORY;
  fn *x = &m->fns[m->n];
  snprintf(x->entry, sizeof x->entry, "%s", name);
  if (gk_module_load(cpu_ar, &cpu_dev, m->kernel, m->variant, &x->cpu) != GK_OK ||
      !(x->f = gpu_only(name) ? (void *)x->entry : gk_module_symbol(x->cpu, name))) {
    gk_module_unload(x->cpu);
    return E_NOT_FOUND;
  }
  m->n++;
  *f = x;
  return OK;
}
EXPORT cu_result cuModuleUnload(void *mp) {
  mod *m = mp;
  for (int i = 0; i < m->n; i++) gk_module_unload(m->fns[i].cpu);
  free(m);
  return OK;
}
EXPORT cu_result cuFuncGetAttribute(int *v, int attr, void *f) {
  (void)attr, (void)f;
  *v = 0;
  return OK;
}
/* libgk opts a function in to more than 48 KB of dynamic shared memory at
 * load (MAX_DYNAMIC_SHARED_SIZE_BYTES); the CPU images need nothing. */
EXPORT cu_result cuFuncSetAttribute(void *f, int attr, int v) {
  (void)f, (void)attr, (void)v;
  return OK;
}

/* qmatmul_q8x from the original blocks: repack W for the CPU entry. */
static void q8x(fn *x, const float *xs, const void *w, float *y, int64_t m, int64_t n,
                int64_t k, size_t wbytes) {
  gk_qmatmul_repack_fn repack = (gk_qmatmul_repack_fn)gk_module_symbol(x->cpu, "qmatmul_repack");
  void *packed = malloc(wbytes ? wbytes : 1);
  if (repack && packed && repack(w, packed, n, k) == 0) ((gk_qmatmul_fn)x->f)(xs, packed, y, m, n, k);
  free(packed);
}

/* The double's records of qmatmul_q8x_x (48 bytes a block, as the GPU's):
 * the 32 codes in column order, dx, sb. */
static void q8x_x(const float *xs, unsigned char *xq, int64_t m, int64_t k) {
  const int64_t nb = k / 32;
  int8_t codes[32];
  for (int64_t i = 0; i < m; i++)
    for (int64_t b = 0; b < nb; b++) {
      unsigned char *rec = xq + (i * nb + b) * 48;
      float f[4] = {0};
      qref_q8x_round(xs + i * k + 32 * b, 1, codes, &f[0], &f[1]);
      memcpy(rec, codes, 32), memcpy(rec + 32, f, sizeof f);
    }
}
/* The records back into rows, then qref's row of qmatmul_q8x_mm (Rec 0) or
 * of qmatmul_q8x (Rec 1: qmatmul_q8x_rec). */
static void q8x_mm(int bits, const unsigned char *xq, const void *w, float *y, int64_t m,
                   int64_t n, int64_t k, int rec) {
  const int64_t nb = k / 32;
  int8_t *codes = malloc((size_t)(nb * 32) + 1);
  float *dx = malloc((size_t)nb * sizeof *dx + 1), *sb = malloc((size_t)nb * sizeof *sb + 1);
  for (int64_t i = 0; codes && dx && sb && i < m; i++) {
    for (int64_t b = 0; b < nb; b++) {
      const unsigned char *rec = xq + (i * nb + b) * 48;
      memcpy(codes + 32 * b, rec, 32), memcpy(&dx[b], rec + 32, 4), memcpy(&sb[b], rec + 36, 4);
    }
    if (rec)
      qref_q8x_row(bits, codes, dx, sb, w, n, nb, y + i * n, NULL);
    else
      qref_q8x_mm_row(bits, codes, dx, sb, w, n, nb, y + i * n);
  }
  free(codes), free(dx), free(sb);
}

#define P(i) (*(void **)params[i])
#define I(i) (*(int64_t *)params[i])
#define F(i) (*(float *)params[i])
EXPORT cu_result cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shared, void *stream,
                                void **params, void **extra) {
  (void)shared, (void)stream, (void)extra;
  fn *x = f;
  const char *e = x->entry;
  if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bx * by * bz > 1024)
    return E_INVALID;
  if (!strcmp(e, "qmatmul"))
    ((gk_qmatmul_fn)x->f)(P(0), P(1), P(2), I(3), I(4), I(5));
  else if (!strcmp(e, "qmatmul_q8x")) {
    int bits = 0;
    const gk_image_info *row = gk_module_info(x->cpu);
    sscanf(row->variant, "bits=%d", &bits);
    q8x(x, P(0), P(1), P(2), I(3), I(4), I(5), (size_t)(I(5) / 32 * (4 + 4 * bits)) * (size_t)I(4));
  } else if (!strcmp(e, "qmatmul_q8x_x")) {
    q8x_x(P(0), P(1), I(2), I(3));
  } else if (!strcmp(e, "qmatmul_q8x_mm") || !strcmp(e, "qmatmul_q8x_rec")) {
    int bits = 0;
    sscanf(gk_module_info(x->cpu)->variant, "bits=%d", &bits);
    q8x_mm(bits, P(0), P(1), P(2), I(3), I(4), I(5), !strcmp(e, "qmatmul_q8x_rec"));
  } else if (!strcmp(e, "flash_attention"))
    ((gk_flash_attention_fn)x->f)(P(0), P(1), P(2), P(3), I(4), I(5), I(6), I(7), F(8));
  else if (!strcmp(e, "paged_attention"))
    ((gk_paged_attention_fn)x->f)(P(0), P(1), P(2), P(3), P(4), P(5), I(6), I(7), I(8), I(9),
                                  I(10), I(11), F(12));
  else if (!strcmp(e, "kv_append"))
    ((gk_kv_append_fn)x->f)(P(0), P(1), P(2), P(3), P(4), P(5), I(6), I(7), I(8), I(9), I(10));
  else if (!strcmp(e, "rmsnorm"))
    ((gk_rmsnorm_fn)x->f)(P(0), P(1), P(2), I(3), I(4), F(5));
  else if (!strcmp(e, "rope"))
    ((gk_rope_fn)x->f)(P(0), P(1), I(2), I(3), I(4), F(5));
  else if (!strcmp(e, "argmax"))
    ((gk_argmax_fn)x->f)(P(0), P(1), I(2), I(3));
  else if (!strcmp(e, "sample"))
    ((gk_sample_fn)x->f)(P(0), P(1), P(2), I(3), I(4), F(5), *(int32_t *)params[6], F(7));
  else
    return E_INVALID;
  return OK;
}

typedef struct event {
  struct timespec t;
} event;
EXPORT cu_result cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  return (*e = calloc(1, sizeof(event))) ? OK : E_MEMORY;
}
EXPORT cu_result cuEventRecord(void *e, void *stream) {
  (void)stream;
  clock_gettime(CLOCK_MONOTONIC, &((event *)e)->t);
  return OK;
}
EXPORT cu_result cuEventSynchronize(void *e) { (void)e; return OK; }
EXPORT cu_result cuEventElapsedTime(float *ms, void *a, void *b) {
  const event *x = a, *y = b;
  *ms = (float)((y->t.tv_sec - x->t.tv_sec) * 1e3 + (y->t.tv_nsec - x->t.tv_nsec) / 1e6);
  return OK;
}
EXPORT cu_result cuEventDestroy_v2(void *e) {
  free(e);
  return OK;
}
