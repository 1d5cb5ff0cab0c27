/*
 * cudrv.c - libcuda.so.1 by dlopen, for the programs that drive a real GPU
 * next to libgk (cudrv.h).
 */
#include "cudrv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int why_fail(char *why, size_t n, const char *fmt, const char *a, const char *b) {
  if (why && n) snprintf(why, n, fmt, a, b);
  return -1;
}

const char *cudrv_err(cudrv *d, cu_result r) {
  const char *name = NULL;
  if (!d->cuGetErrorName || d->cuGetErrorName(r, &name) != CUDRV_SUCCESS || !name)
    name = "CUDA error";
  snprintf(d->errbuf, sizeof d->errbuf, "%s (%d)", name, (int)r);
  return d->errbuf;
}

int cudrv_open(cudrv *d, const char *path, int ordinal, char *why, size_t why_size) {
  memset(d, 0, sizeof *d);
  const char *lib = path ? path : "libcuda.so.1";
  d->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *e = dlerror();
    return why_fail(why, why_size, "cannot load the NVIDIA driver library %s (%s)", lib,
                    e ? e : "not found");
  }
  /* dlsym returns void *; POSIX guarantees it converts to a function
   * pointer, which the memcpy says without a cast ISO C lacks. */
#define CUDRV_RESOLVE(field, symbol, params)                                   \
  {                                                                            \
    void *p = dlsym(d->lib, #symbol);                                          \
    if (!p)                                                                    \
      return why_fail(why, why_size, "%s has no entry point %s (driver too old?)", lib, \
                      #symbol);                                                \
    memcpy(&d->field, &p, sizeof p);                                           \
  }
  CUDRV_FUNCS(CUDRV_RESOLVE)
#undef CUDRV_RESOLVE
  cu_result r;
  int count = 0;
  if ((r = d->cuInit(0)) != CUDRV_SUCCESS)
    return why_fail(why, why_size, "cuInit failed: %s%s", cudrv_err(d, r),
                    r == 34 ? " - the toolkit's stub libcuda, not a driver" : "");
  if ((r = d->cuDeviceGetCount(&count)) != CUDRV_SUCCESS || count <= ordinal) {
    char n[32];
    snprintf(n, sizeof n, "%d", count);
    return why_fail(why, why_size, "no CUDA device (cuDeviceGetCount: %s, %s devices)",
                    r ? cudrv_err(d, r) : "ok", n);
  }
  if ((r = d->cuDeviceGet(&d->dev, ordinal)) != CUDRV_SUCCESS ||
      (r = d->cuDevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDRV_SUCCESS) {
    d->ctx = NULL;
    return why_fail(why, why_size, "cannot open CUDA device: %s%s", cudrv_err(d, r), "");
  }
  if ((r = d->cuCtxSetCurrent(d->ctx)) != CUDRV_SUCCESS)
    return why_fail(why, why_size, "cuCtxSetCurrent: %s%s", cudrv_err(d, r), "");
  int clock_khz = 0, bus_bits = 0;
  d->cuDriverGetVersion(&d->driver_version);
  d->cuDeviceGetName(d->name, (int)sizeof d->name, d->dev);
  d->cuDeviceGetAttribute(&d->cc_major, CUDRV_ATTR_CC_MAJOR, d->dev);
  d->cuDeviceGetAttribute(&d->cc_minor, CUDRV_ATTR_CC_MINOR, d->dev);
  d->cuDeviceGetAttribute(&d->sms, CUDRV_ATTR_MULTIPROCESSOR_COUNT, d->dev);
  d->cuDeviceGetAttribute(&d->sm_clock_khz, CUDRV_ATTR_CLOCK_RATE, d->dev);
  d->cuDeviceGetAttribute(&d->l2_bytes, CUDRV_ATTR_L2_CACHE_SIZE, d->dev);
  d->cuDeviceGetAttribute(&clock_khz, CUDRV_ATTR_MEMORY_CLOCK_RATE, d->dev);
  d->cuDeviceGetAttribute(&bus_bits, CUDRV_ATTR_GLOBAL_MEMORY_BUS_WIDTH, d->dev);
  d->cuDeviceTotalMem(&d->mem_bytes, d->dev);
  d->spec_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8) / 1e9;
  return 0;
}

/* The default allows 48 KB less the function's static shared memory, so
 * `shared` alone cannot tell whether the opt-in is needed; setting the
 * attribute to what the launch takes is right at any size the device
 * allows. */
cu_result cudrv_allow_shared(cudrv *d, cu_function f, unsigned shared) {
  if (shared == 0) return CUDRV_SUCCESS;
  return d->cuFuncSetAttribute(f, CUDRV_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared);
}

void cudrv_close(cudrv *d) {
  if (d->ctx) {
    d->cuCtxSetCurrent(NULL);
    d->cuDevicePrimaryCtxRelease(d->dev);
  }
  if (d->lib) dlclose(d->lib);
  memset(d, 0, sizeof *d);
}
