/*
 * cudrv.h - the CUDA driver API calls tests/gpu and bench/gpu.c make
 * themselves (memory, copies, launches, events), from libcuda.so.1 opened
 * with dlopen: nothing links the driver, so these programs build and SKIP
 * on machines without one. libgk does its own loading (loader/cuda_drv.h);
 * this is the host side a program using libgk's CUfunctions writes.
 *
 * X(field, symbol, params): `symbol` is the exported name of the ABI the
 * prototype is (cuMemAlloc_v2: 64-bit sizes and pointers), the name
 * <cuda.h> maps the plain one to. Built with CUDRV_USE_CUDA_H defined after
 * including <cuda.h>, the types are cuda.h's own: tests/gpu/test_cudrv_abi.c
 * checks every prototype and value here against the toolkit that way.
 */
#ifndef GK_TEST_CUDRV_H
#define GK_TEST_CUDRV_H

#include <stddef.h>
#include <stdint.h>

#ifdef CUDRV_USE_CUDA_H
typedef CUresult cu_result;
typedef CUdevice cu_device;
typedef CUcontext cu_context;
typedef CUmodule cu_module;
typedef CUfunction cu_function;
typedef CUevent cu_event;
typedef CUstream cu_stream;
typedef CUdeviceptr cu_deviceptr;
typedef CUdevice_attribute cu_attribute;
typedef CUjit_option cu_jit_option;
typedef CUfunction_attribute cu_func_attribute;
#else
typedef int cu_result;
typedef int cu_device;
typedef struct cu_ctx_st *cu_context;
typedef struct cu_mod_st *cu_module;
typedef struct cu_func_st *cu_function;
typedef struct cu_event_st *cu_event;
typedef struct cu_stream_st *cu_stream;
typedef unsigned long long cu_deviceptr;
typedef int cu_attribute;
typedef int cu_jit_option;
typedef int cu_func_attribute;
#endif

enum {
  CUDRV_SUCCESS = 0,
  CUDRV_ATTR_CLOCK_RATE = 13, /* kHz: the SMs' typical (boost) clock */
  CUDRV_ATTR_MULTIPROCESSOR_COUNT = 16,
  CUDRV_ATTR_MEMORY_CLOCK_RATE = 36, /* kHz */
  CUDRV_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37, /* bits */
  CUDRV_ATTR_L2_CACHE_SIZE = 38,
  CUDRV_ATTR_CC_MAJOR = 75,
  CUDRV_ATTR_CC_MINOR = 76,
  CUDRV_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CUDRV_JIT_ERROR_LOG_BUFFER = 5,
  CUDRV_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CUDRV_EVENT_DEFAULT = 0,
  /* cuTensorMapEncodeTiled's (tests/gpu/test_tma_probe.c) */
  CUDRV_TMAP_FLOAT16 = 6,
  CUDRV_TMAP_INTERLEAVE_NONE = 0,
  CUDRV_TMAP_SWIZZLE_NONE = 0,
  CUDRV_TMAP_SWIZZLE_128B = 3,
  CUDRV_TMAP_L2_PROMOTION_NONE = 0,
  CUDRV_TMAP_OOB_FILL_ZEROS = 0 /* CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE */
};

/* A tensor map (CUtensorMap: 128 opaque bytes, 128-byte aligned as cuda.h
 * declares it; the driver asks for 64) and the driver's encoder, which is
 * not in CUDRV_FUNCS: drivers before CUDA 12.0 lack it, and the programs
 * that need it look it up themselves (dlsym on cudrv.lib). */
typedef struct {
  _Alignas(128) unsigned long long opaque[16];
} cudrv_tmap;
typedef cu_result (*cudrv_tmap_encode_tiled)(cudrv_tmap *map, int dtype, unsigned rank,
                                              void *addr, const unsigned long long *dims,
                                              const unsigned long long *strides,
                                              const unsigned *box, const unsigned *elem_strides,
                                              int interleave, int swizzle, int l2, int oob);

#define CUDRV_FUNCS(X)                                                                \
  X(cuInit, cuInit, (unsigned flags))                                                 \
  X(cuDriverGetVersion, cuDriverGetVersion, (int *version))                           \
  X(cuDeviceGetCount, cuDeviceGetCount, (int *count))                                 \
  X(cuDeviceGet, cuDeviceGet, (cu_device * dev, int ordinal))                         \
  X(cuDeviceGetName, cuDeviceGetName, (char *name, int len, cu_device dev))           \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute,                                       \
    (int *value, cu_attribute attrib, cu_device dev))                                 \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, (size_t * bytes, cu_device dev))           \
  X(cuGetErrorName, cuGetErrorName, (cu_result error, const char **str))              \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain,                               \
    (cu_context * ctx, cu_device dev))                                                \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (cu_device dev))        \
  X(cuCtxSetCurrent, cuCtxSetCurrent, (cu_context ctx))                               \
  X(cuCtxSynchronize, cuCtxSynchronize, (void))                                       \
  X(cuMemAlloc, cuMemAlloc_v2, (cu_deviceptr * ptr, size_t bytes))                    \
  X(cuMemFree, cuMemFree_v2, (cu_deviceptr ptr))                                      \
  X(cuMemsetD8, cuMemsetD8_v2, (cu_deviceptr dst, unsigned char value, size_t n))     \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, (cu_deviceptr dst, const void *src, size_t n))     \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2, (void *dst, cu_deviceptr src, size_t n))           \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2,                                          \
    (cu_deviceptr dst, cu_deviceptr src, size_t n, cu_stream stream))                 \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx,                                           \
    (cu_module * mod, const void *image, unsigned n_options, cu_jit_option *options,  \
     void **values))                                                                  \
  X(cuModuleGetFunction, cuModuleGetFunction,                                         \
    (cu_function * fn, cu_module mod, const char *name))                              \
  X(cuModuleUnload, cuModuleUnload, (cu_module mod))                                  \
  X(cuFuncSetAttribute, cuFuncSetAttribute,                                           \
    (cu_function f, cu_func_attribute attrib, int value))                             \
  X(cuLaunchKernel, cuLaunchKernel,                                                   \
    (cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,  \
     unsigned bz, unsigned shared, cu_stream stream, void **params, void **extra))    \
  X(cuEventCreate, cuEventCreate, (cu_event * ev, unsigned flags))                    \
  X(cuEventRecord, cuEventRecord, (cu_event ev, cu_stream stream))                    \
  X(cuEventSynchronize, cuEventSynchronize, (cu_event ev))                            \
  X(cuEventElapsedTime, cuEventElapsedTime,                                           \
    (float *ms, cu_event start, cu_event end))                                        \
  X(cuEventDestroy, cuEventDestroy_v2, (cu_event ev))

/* One opened driver and device, its primary context current. */
typedef struct cudrv {
  void *lib;
#define CUDRV_FIELD(field, symbol, params) cu_result(*field) params;
  CUDRV_FUNCS(CUDRV_FIELD)
#undef CUDRV_FIELD
  cu_device dev;
  cu_context ctx;
  char name[128];
  int driver_version; /* 13000 for 13.0 */
  int cc_major, cc_minor, sms, l2_bytes, sm_clock_khz;
  size_t mem_bytes;
  double spec_gbps; /* 2 x memory clock x bus width: the data sheet's bandwidth */
  char errbuf[96];
} cudrv;

/*
 * Opens `path` (NULL: "libcuda.so.1"), resolves every entry point, runs
 * cuInit and makes device `ordinal`'s primary context current on this
 * thread. Returns 0, or -1 with `why` saying what is missing (no driver
 * library, a missing entry point, cuInit's status, no such device): a
 * program then has no GPU to use and says so (SKIP). cudrv_close undoes
 * it; it accepts a cudrv whose open failed.
 */
int cudrv_open(cudrv *d, const char *path, int ordinal, char *why, size_t why_size);
void cudrv_close(cudrv *d);

/* Lets f take `shared` bytes of dynamic shared memory (a launch row's
 * "shared"): past 48 KB, static + dynamic, a kernel must opt in, else its
 * launches fail; it opts in whenever shared > 0. */
cu_result cudrv_allow_shared(cudrv *d, cu_function f, unsigned shared);

/* "CUDA_ERROR_ILLEGAL_ADDRESS (700)", in d's buffer (valid until the next
 * call). */
const char *cudrv_err(cudrv *d, cu_result r);

#endif /* GK_TEST_CUDRV_H */
