/*
 * driver_double.c - the TEST DOUBLE of libcuda described in driver_double.h.
 * Written from the CUDA driver API's documented prototypes (cuda.h), not
 * from libgk's declarations, so that a wrong prototype in libgk shows here
 * as a wrong argument.
 */
#include "driver_double.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"

static cud *D;

enum {
  SUCCESS = 0,
  INVALID_VALUE = 1,
  NOT_INITIALIZED = 3,
  INVALID_DEVICE = 101,
  INVALID_IMAGE = 200,
  INVALID_CONTEXT = 201,
  NO_BINARY_FOR_GPU = 209,
  INVALID_PTX = 218,
  UNSUPPORTED_PTX_VERSION = 222,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500
};

/* Handles: addresses inside these arrays, so libgk can only pass back what
 * it was given. Kernel and function KPI * i + k are kernel k of image i. */
#define KPI 16 /* kernels per image */
static char contexts[4], libraries[64], modules[64], kernels[64 * KPI], functions[64 * KPI];
static int ctx_depth;
/* Each function's MAX_DYNAMIC_SHARED_SIZE_BYTES. */
static int max_dynamic[64 * KPI];

/* The image of the library or module handle i, for kernel lookups. */
static struct {
  char *text; /* a copy: cubin bytes, or PTX text */
  size_t size;
  int ptx;
  char names[KPI][64]; /* its kernels looked up so far, in order */
} images[64];

/* ---- the image checks (what a driver would refuse) ------------------------ */

static unsigned rd16(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) {
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* The size of a cubin: the end of its furthest table or section (the
 * driver API passes no size; nvcc puts the program headers last). */
static size_t cubin_size(const unsigned char *b) {
  uint64_t shoff = rd64(b + 40), phoff = rd64(b + 32);
  unsigned phentsize = rd16(b + 54), phnum = rd16(b + 56);
  unsigned shentsize = rd16(b + 58), shnum = rd16(b + 60);
  uint64_t end = shoff + (uint64_t)shentsize * shnum;
  if (phoff + (uint64_t)phentsize * phnum > end) end = phoff + (uint64_t)phentsize * phnum;
  for (unsigned i = 0; i < shnum; i++) {
    const unsigned char *h = b + shoff + (uint64_t)i * shentsize;
    if (rd32(h + 4) != 8 && rd64(h + 24) + rd64(h + 32) > end) end = rd64(h + 24) + rd64(h + 32);
  }
  return (size_t)end;
}

static int check_image(const void *image, size_t *size, int *ptx) {
  const unsigned char *b = image;
  D->refused[0] = '\0';
  if (!b) return INVALID_VALUE;
  if (memcmp(b, "\177ELF", 4) == 0) {
    unsigned abiv = b[8];
    uint32_t flags = rd32(b + 48);
    unsigned sm = abiv >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
    *ptx = 0;
    D->loaded_sm = sm;
    if (b[4] != 2 || rd16(b + 18) != 190 || rd16(b + 16) != 2) {
      snprintf(D->refused, sizeof D->refused, "not a 64-bit EM_CUDA executable");
      return INVALID_IMAGE;
    }
    if ((int)sm / 10 != D->major || (int)sm % 10 > D->minor) {
      snprintf(D->refused, sizeof D->refused, "a cubin for sm_%u on a %d.%d device", sm,
               D->major, D->minor);
      return NO_BINARY_FOR_GPU;
    }
    *size = cubin_size(b);
    return SUCCESS;
  }
  /* PTX: a C string. */
  const char *t = image;
  const char *target = strstr(t, "\n.target sm_");
  const char *release = strstr(t, "Cuda compilation tools, release ");
  *ptx = 1;
  if (!target || !strstr(t, "\n.version ")) {
    snprintf(D->refused, sizeof D->refused, "neither a cubin nor PTX");
    return INVALID_PTX;
  }
  unsigned cc = (unsigned)strtoul(target + 12, NULL, 10);
  D->loaded_sm = cc;
  if ((int)cc > D->major * 10 + D->minor) {
    snprintf(D->refused, sizeof D->refused, "PTX for sm_%u on a %d.%d device", cc, D->major,
             D->minor);
    return INVALID_PTX;
  }
  if (release) {
    unsigned maj = 0, min = 0;
    sscanf(release + 32, "%u.%u", &maj, &min);
    if ((int)(maj * 1000 + min * 10) > D->driver_version) {
      snprintf(D->refused, sizeof D->refused, "PTX of CUDA %u.%u on driver %d", maj, min,
               D->driver_version);
      return UNSUPPORTED_PTX_VERSION;
    }
  }
  *size = strlen(t) + 1;
  return SUCCESS;
}

static int has_kernel(int slot, const char *name) {
  char pat[128];
  const char *hay = images[slot].text;
  size_t n = images[slot].size;
  snprintf(pat, sizeof pat, images[slot].ptx ? ".entry %s(" : ".text.%s", name);
  size_t pl = strlen(pat) + (images[slot].ptx ? 0 : 1); /* cubin: with the NUL */
  for (size_t i = 0; i + pl <= n; i++)
    if (memcmp(hay + i, pat, pl) == 0) return 1;
  return 0;
}

/* ---- the entry points ----------------------------------------------------- */

static int cuInit(unsigned flags) {
  D->inits++;
  return flags ? INVALID_VALUE : D->init_result;
}
static int cuDriverGetVersion(int *v) {
  *v = D->driver_version;
  return SUCCESS;
}
static int cuDeviceGetCount(int *n) {
  if (!D->inits) return NOT_INITIALIZED;
  *n = D->count;
  return SUCCESS;
}
static int cuDeviceGet(int *dev, int ordinal) {
  if (ordinal < 0 || ordinal >= D->count) return INVALID_DEVICE;
  *dev = ordinal;
  return SUCCESS;
}
static int cuDeviceGetAttribute(int *v, int attrib, int dev) {
  if (dev < 0 || dev >= D->count) return INVALID_DEVICE;
  if (attrib == 75) *v = D->major;
  else if (attrib == 76) *v = D->minor;
  else if (attrib == 16) *v = D->sms;     /* MULTIPROCESSOR_COUNT */
  else if (attrib == 1) *v = 1024;        /* MAX_THREADS_PER_BLOCK */
  else if (attrib == 5) *v = 2147483647;  /* MAX_GRID_DIM_X */
  else if (attrib == 6 || attrib == 7) *v = 65535;
  else if (attrib == 97) *v = D->optin; /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  else return INVALID_VALUE;
  return SUCCESS;
}
static int cuDeviceGetName(char *name, int len, int dev) {
  if (dev < 0 || dev >= D->count || len <= 0) return INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", D->name);
  return SUCCESS;
}
static int cuGetErrorName(int r, const char **s) {
  switch (r) {
  case UNSUPPORTED_PTX_VERSION: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; return SUCCESS;
  case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return SUCCESS;
  case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return SUCCESS;
  case NO_BINARY_FOR_GPU: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return SUCCESS;
  default: *s = NULL; return INVALID_VALUE;
  }
}
static int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  if (dev < 0 || dev >= D->count) return INVALID_DEVICE;
  D->retains++;
  *ctx = &contexts[dev % 4];
  return SUCCESS;
}
static int cuDevicePrimaryCtxRelease_v2(int dev) {
  if (dev < 0 || dev >= D->count) return INVALID_DEVICE;
  D->releases++;
  return SUCCESS;
}
static int cuCtxPushCurrent_v2(void *ctx) {
  if ((char *)ctx < contexts || (char *)ctx >= contexts + 4) return INVALID_CONTEXT;
  D->pushes++;
  ctx_depth++;
  return SUCCESS;
}
static int cuCtxPopCurrent_v2(void **ctx) {
  if (ctx_depth == 0) return INVALID_CONTEXT;
  D->pops++;
  ctx_depth--;
  if (ctx) *ctx = &contexts[0];
  return SUCCESS;
}

static int new_image(const void *image, char *table, void **out, int *forced_log,
                     char *log, size_t log_size) {
  size_t size = 0;
  int ptx = 0, r;
  if (ctx_depth == 0) return INVALID_CONTEXT; /* loads need a current context */
  D->loads++;
  if ((r = check_image(image, &size, &ptx)) != SUCCESS) return r;
  D->loaded_ptx = ptx;
  if (D->load_result) {
    if (D->jit_log && log) snprintf(log, log_size, "%s", D->jit_log);
    *forced_log = 1;
    return D->load_result;
  }
  for (int i = 0; i < 64; i++)
    if (!images[i].text) {
      images[i].text = malloc(size);
      memcpy(images[i].text, image, size);
      images[i].size = size;
      images[i].ptx = ptx;
      memset(images[i].names, 0, sizeof images[i].names);
      /* The driver's default: 48 KB in all, less the static part. */
      for (int k = 0; k < KPI; k++)
        max_dynamic[i * KPI + k] = D->static_shared < 49152 ? 49152 - D->static_shared : 0;
      *out = &table[i];
      return SUCCESS;
    }
  return INVALID_VALUE;
}

/* The JIT options libgk passes: the error log buffer and its size. */
static void jit_log(int n, const int *opts, void **vals, char **log, size_t *size) {
  *log = NULL;
  *size = 0;
  for (int i = 0; i < n; i++) {
    if (opts[i] == 5) *log = vals[i];
    if (opts[i] == 6) *size = (size_t)(uintptr_t)vals[i];
  }
}

static int cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts,
                              void **vals) {
  char *log;
  size_t lsize;
  int forced = 0;
  jit_log((int)n, opts, vals, &log, &lsize);
  D->used_library = 0;
  return new_image(image, modules, mod, &forced, log, lsize);
}
static int cuLibraryLoadData(void **lib, const void *code, int *jopts, void **jvals,
                             unsigned nj, int *lopts, void **lvals, unsigned nl) {
  char *log;
  size_t lsize;
  int forced = 0;
  (void)lopts, (void)lvals, (void)nl;
  jit_log((int)nj, jopts, jvals, &log, &lsize);
  D->used_library = 1;
  return new_image(code, libraries, lib, &forced, log, lsize);
}

static int slot_of(void *h, char *table) {
  if ((char *)h < table || (char *)h >= table + 64) return -1;
  int i = (int)((char *)h - table);
  return images[i].text ? i : -1;
}

static int lookup(void **out, void *h, char *table, const char *name) {
  int s = slot_of(h, table), k = 0;
  D->lookups++;
  if (s < 0) return INVALID_HANDLE;
  if (D->get_kernel_result) return D->get_kernel_result;
  if (!has_kernel(s, name)) return NOT_FOUND;
  while (k < KPI - 1 && images[s].names[k][0] && strcmp(images[s].names[k], name)) k++;
  snprintf(images[s].names[k], sizeof images[s].names[k], "%s", name);
  *out = &kernels[s * KPI + k];
  return SUCCESS;
}
static int cuModuleGetFunction(void **fn, void *mod, const char *name) {
  int r = lookup(fn, mod, modules, name);
  if (r == SUCCESS) *fn = &functions[(char *)*fn - kernels];
  return r;
}
static int function_of(void *fn) {
  return (char *)fn < functions || (char *)fn >= functions + sizeof functions
             ? -1
             : (int)((char *)fn - functions);
}
static int cuLibraryGetKernel(void **k, void *lib, const char *name) {
  return lookup(k, lib, libraries, name);
}
static int cuKernelGetFunction(void **fn, void *k) {
  if ((char *)k < kernels || (char *)k >= kernels + sizeof kernels) return INVALID_HANDLE;
  if (ctx_depth == 0) return INVALID_CONTEXT; /* per context: needs a current one */
  *fn = &functions[(char *)k - kernels];
  return SUCCESS;
}
static int unload(void *h, char *table) {
  int s = slot_of(h, table);
  if (s < 0) return INVALID_HANDLE;
  free(images[s].text);
  memset(&images[s], 0, sizeof images[s]);
  D->unloads++;
  return SUCCESS;
}
static int cuModuleUnload(void *mod) { return unload(mod, modules); }
static int cuLibraryUnload(void *lib) { return unload(lib, libraries); }
static int cuFuncGetAttribute(int *v, int attrib, void *fn) {
  int f = function_of(fn);
  if (f < 0) return INVALID_HANDLE;
  if (attrib == 1) *v = D->static_shared; /* SHARED_SIZE_BYTES */
  else if (attrib == 3) *v = 0;
  else if (attrib == 8) *v = max_dynamic[f]; /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
  else return INVALID_VALUE;
  return SUCCESS;
}
/* Only MAX_DYNAMIC_SHARED_SIZE_BYTES, up to the opt-in limit less static. */
static int cuFuncSetAttribute(void *fn, int attrib, int value) {
  int f = function_of(fn);
  if (f < 0) return INVALID_HANDLE;
  if (D->nset_attr < 16) {
    D->set_attr[D->nset_attr].fn = fn;
    D->set_attr[D->nset_attr].attrib = attrib;
    D->set_attr[D->nset_attr].value = value;
  }
  D->nset_attr++;
  if (attrib != 8 || value < 0 || (long long)D->static_shared + value > D->optin)
    return INVALID_VALUE;
  if (D->set_attr_result) return D->set_attr_result;
  max_dynamic[f] = value;
  return SUCCESS;
}
/* Two 8-byte parameters, for the kernarg arithmetic. */
static int cuFuncGetParamInfo(void *fn, size_t index, size_t *off, size_t *size) {
  if (function_of(fn) < 0) return INVALID_HANDLE;
  if (index >= 2) return INVALID_VALUE;
  *off = index * 8;
  *size = 8;
  return SUCCESS;
}

/* cuLaunchKernel(f, gridDimX..Z, blockDimX..Z, sharedMemBytes, hStream,
 * kernelParams, extra): checks what a driver checks without running
 * anything (a function handle, a current context, limits), and records. */
static int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, void *stream,
                          void **params, void **extra) {
  int f = function_of(fn);
  if (f < 0) return INVALID_HANDLE;
  if (ctx_depth == 0) return INVALID_CONTEXT;
  if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || gx > 2147483647u) return INVALID_VALUE;
  if (!bx || !by || !bz || (unsigned long long)bx * by * bz > 1024) return INVALID_VALUE;
  if (extra || (D->launch_nparams && !params)) return INVALID_VALUE;
  if (shared > (unsigned)max_dynamic[f]) return INVALID_VALUE; /* not opted in */
  D->launches++;
  D->launch_fn = f;
  D->launch_ctx_depth = ctx_depth;
  D->grid[0] = gx, D->grid[1] = gy, D->grid[2] = gz;
  D->block[0] = bx, D->block[1] = by, D->block[2] = bz;
  D->shared = shared;
  D->stream = stream;
  for (int i = 0; i < D->launch_nparams && i < 16; i++) memcpy(D->params[i], params[i], 8);
  return D->launch_result;
}

/* ---- finding them --------------------------------------------------------- */

static const struct {
  const char *name; /* cuGetProcAddress's base name */
  const char *dl;   /* the exported name */
  void *fn;
} table[] = {
    {"cuInit", "cuInit", (void *)cuInit},
    {"cuDriverGetVersion", "cuDriverGetVersion", (void *)cuDriverGetVersion},
    {"cuDeviceGetCount", "cuDeviceGetCount", (void *)cuDeviceGetCount},
    {"cuDeviceGet", "cuDeviceGet", (void *)cuDeviceGet},
    {"cuDeviceGetAttribute", "cuDeviceGetAttribute", (void *)cuDeviceGetAttribute},
    {"cuDeviceGetName", "cuDeviceGetName", (void *)cuDeviceGetName},
    {"cuGetErrorName", "cuGetErrorName", (void *)cuGetErrorName},
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",
     (void *)cuDevicePrimaryCtxRelease_v2},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", (void *)cuCtxPushCurrent_v2},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", (void *)cuCtxPopCurrent_v2},
    {"cuModuleLoadDataEx", "cuModuleLoadDataEx", (void *)cuModuleLoadDataEx},
    {"cuModuleGetFunction", "cuModuleGetFunction", (void *)cuModuleGetFunction},
    {"cuModuleUnload", "cuModuleUnload", (void *)cuModuleUnload},
    {"cuFuncGetAttribute", "cuFuncGetAttribute", (void *)cuFuncGetAttribute},
    {"cuFuncSetAttribute", "cuFuncSetAttribute", (void *)cuFuncSetAttribute},
    {"cuFuncGetParamInfo", "cuFuncGetParamInfo", (void *)cuFuncGetParamInfo},
    {"cuLibraryLoadData", "cuLibraryLoadData", (void *)cuLibraryLoadData},
    {"cuLibraryGetKernel", "cuLibraryGetKernel", (void *)cuLibraryGetKernel},
    {"cuKernelGetFunction", "cuKernelGetFunction", (void *)cuKernelGetFunction},
    {"cuLibraryUnload", "cuLibraryUnload", (void *)cuLibraryUnload},
    {"cuLaunchKernel", "cuLaunchKernel", (void *)cuLaunchKernel},
};

static void *find(const char *name, int by_dl) {
  if (D->hide && strcmp(name, D->hide) == 0) return NULL;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(by_dl ? table[i].dl : table[i].name, name) == 0) {
      if (!D->library && strncmp(table[i].name, "cuLibrary", 9) == 0) return NULL;
      if (!D->library && strcmp(table[i].name, "cuKernelGetFunction") == 0) return NULL;
      return table[i].fn;
    }
  return NULL;
}

static void note_asked(const char *name, int version) {
  if (D->nasked < 64) {
    snprintf(D->asked[D->nasked], sizeof D->asked[0], "%s", name);
    D->asked_version[D->nasked++] = version;
  }
}

/* cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus) */
static int gpa2(const char *symbol, void **pfn, int version, unsigned long long flags,
                int *status) {
  (void)flags;
  note_asked(symbol, version);
  if (version > D->driver_version) return INVALID_VALUE; /* as documented */
  *pfn = find(symbol, 0);
  if (status) *status = *pfn ? 0 : 1; /* SUCCESS / SYMBOL_NOT_FOUND */
  return SUCCESS;
}
static int gpa1(const char *symbol, void **pfn, int version, unsigned long long flags) {
  return gpa2(symbol, pfn, version, flags, NULL);
}

int cud_asked_version(const cud *d, const char *name) {
  for (int i = 0; i < d->nasked; i++)
    if (strcmp(d->asked[i], name) == 0) return d->asked_version[i];
  return -1;
}

static void *resolver(void *ctx, const char *symbol) {
  (void)ctx;
  if (D->nby_name < 64)
    snprintf(D->by_name_asked[D->nby_name++], sizeof D->by_name_asked[0], "%s", symbol);
  if (strcmp(symbol, "cuGetProcAddress_v2") == 0) return D->gpa2 ? (void *)gpa2 : NULL;
  if (strcmp(symbol, "cuGetProcAddress") == 0) return D->gpa1 ? (void *)gpa1 : NULL;
  return D->by_name ? find(symbol, 1) : NULL;
}

void cud_defaults(cud *d) {
  memset(d, 0, sizeof *d);
  d->major = 8;
  d->minor = 6;
  d->count = 1;
  d->driver_version = 13000;
  d->name = "Test Double GPU (not a real device)";
  d->sms = 46;
  d->optin = 101376; /* sm_86: 99 KB */
  d->static_shared = 123;
  d->gpa2 = 1;
  d->library = 1;
}

void cud_install(cud *d) {
  D = d;
  ctx_depth = 0;
  gk_driver_set_resolver(GK_BACKEND_CUDA, resolver, NULL);
}

void cud_remove(void) {
  gk_driver_set_resolver(GK_BACKEND_CUDA, NULL, NULL);
  for (int i = 0; i < 64; i++) {
    free(images[i].text);
    memset(&images[i], 0, sizeof images[i]);
  }
  D = NULL;
}
