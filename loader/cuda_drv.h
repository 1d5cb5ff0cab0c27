/*
 * cuda_drv.h - the part of the CUDA driver API (libcuda) libgk calls,
 * declared here so that libgk builds and runs without the CUDA toolkit.
 * Not API. Names are gk__cu-prefixed so this header can sit beside the real
 * <cuda.h> in one file: tests/backends/cuda/test_cuda_abi.c includes both and checks
 * every value and prototype below against it.
 *
 * The prototypes are those of the CUDA 12.0 ABI (what cuGetProcAddress
 * returns when asked for version 12000): cuCtxPushCurrent is the _v2 entry
 * point, and so on. `dlsym_name` is that entry point's exported name, used
 * when the driver has no cuGetProcAddress (before 11.3) or a test's
 * resolver stands in for it.
 */
#ifndef GK_CUDA_DRV_H
#define GK_CUDA_DRV_H

#include <stddef.h>
#include <stdint.h>

typedef int gk__cu_result; /* CUresult: an enum; every value fits an int */
typedef int gk__cu_device; /* CUdevice */
typedef struct gk__cu_ctx_st *gk__cu_context;
typedef struct gk__cu_mod_st *gk__cu_module;
typedef struct gk__cu_func_st *gk__cu_function;
typedef struct gk__cu_lib_st *gk__cu_library;
typedef struct gk__cu_kern_st *gk__cu_kernel;
typedef struct gk__cu_stream_st *gk__cu_stream;

/* CUresult values libgk names in messages or acts on. */
enum {
  GK__CUDA_SUCCESS = 0,
  GK__CUDA_ERROR_INVALID_VALUE = 1,
  GK__CUDA_ERROR_OUT_OF_MEMORY = 2,
  GK__CUDA_ERROR_NOT_INITIALIZED = 3,
  GK__CUDA_ERROR_NOT_FOUND = 500,
  GK__CUDA_ERROR_STUB_LIBRARY = 34,
  GK__CUDA_ERROR_NO_DEVICE = 100,
  GK__CUDA_ERROR_INVALID_DEVICE = 101,
  GK__CUDA_ERROR_INVALID_IMAGE = 200,
  GK__CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  GK__CUDA_ERROR_INVALID_PTX = 218,
  GK__CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  GK__CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  GK__CUDA_ERROR_JIT_COMPILATION_DISABLED = 223,
  GK__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  GK__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
  GK__CUDA_ERROR_UNKNOWN = 999
};

/* CUdevice_attribute */
enum {
  GK__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  GK__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  GK__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  GK__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  GK__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
};
/* CUfunction_attribute */
enum {
  GK__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  GK__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  GK__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  GK__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
};
/* CUjit_option: the JIT's error log, for PTX that does not compile. */
enum {
  GK__CU_JIT_ERROR_LOG_BUFFER = 5,
  GK__CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
};
/* CUdriverProcAddressQueryResult, and cuGetProcAddress's flags */
enum { GK__CU_GET_PROC_ADDRESS_SUCCESS = 0 };
enum { GK__CU_GET_PROC_ADDRESS_DEFAULT = 0 };

/* cuGetProcAddress_v2 (CUDA 12.0+) and the 11.3 form without the status. */
typedef gk__cu_result (*gk__cu_get_proc_address_v2)(const char *symbol,
                                                    void **pfn, int cuda_version,
                                                    uint64_t flags,
                                                    int *symbol_status);
typedef gk__cu_result (*gk__cu_get_proc_address_v1)(const char *symbol,
                                                    void **pfn, int cuda_version,
                                                    uint64_t flags);

/*
 * X(name, dlsym_name, since, required, ret, params): every entry point, the
 * CUDA version that introduced this ABI of it (what cuGetProcAddress is
 * asked for, at least), and whether libgk can work without it (the library
 * API of 12.0 is optional: modules are the fallback).
 */
#define GK__CU_FUNCS(X)                                                         \
  X(cuInit, "cuInit", 2000, 1, gk__cu_result, (unsigned flags))                 \
  X(cuDriverGetVersion, "cuDriverGetVersion", 2020, 1, gk__cu_result,           \
    (int *version))                                                             \
  X(cuDeviceGetCount, "cuDeviceGetCount", 2000, 1, gk__cu_result, (int *count)) \
  X(cuDeviceGet, "cuDeviceGet", 2000, 1, gk__cu_result,                         \
    (gk__cu_device * device, int ordinal))                                      \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000, 1, gk__cu_result,       \
    (int *value, int attrib, gk__cu_device dev))                                \
  X(cuDeviceGetName, "cuDeviceGetName", 2000, 1, gk__cu_result,                 \
    (char *name, int len, gk__cu_device dev))                                   \
  X(cuGetErrorName, "cuGetErrorName", 6000, 0, gk__cu_result,                   \
    (gk__cu_result error, const char **str))                                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, 1,              \
    gk__cu_result, (gk__cu_context * ctx, gk__cu_device dev))                   \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 11000, 1,        \
    gk__cu_result, (gk__cu_device dev))                                         \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", 4000, 1, gk__cu_result,            \
    (gk__cu_context ctx))                                                       \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", 4000, 1, gk__cu_result,              \
    (gk__cu_context * ctx))                                                     \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx", 2010, 1, gk__cu_result,           \
    (gk__cu_module * module, const void *image, unsigned n_options,             \
     int *options, void **values))                                              \
  X(cuModuleGetFunction, "cuModuleGetFunction", 2000, 1, gk__cu_result,         \
    (gk__cu_function * fn, gk__cu_module module, const char *name))             \
  X(cuModuleUnload, "cuModuleUnload", 2000, 1, gk__cu_result,                   \
    (gk__cu_module module))                                                     \
  X(cuFuncGetAttribute, "cuFuncGetAttribute", 2020, 1, gk__cu_result,           \
    (int *value, int attrib, gk__cu_function fn))                               \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", 9000, 1, gk__cu_result,           \
    (gk__cu_function fn, int attrib, int value))                                \
  X(cuFuncGetParamInfo, "cuFuncGetParamInfo", 12040, 0, gk__cu_result,          \
    (gk__cu_function fn, size_t index, size_t *offset, size_t *size))           \
  X(cuLibraryLoadData, "cuLibraryLoadData", 12000, 0, gk__cu_result,            \
    (gk__cu_library * lib, const void *code, int *jit_options,                  \
     void **jit_values, unsigned n_jit, int *lib_options, void **lib_values,    \
     unsigned n_lib))                                                           \
  X(cuLibraryGetKernel, "cuLibraryGetKernel", 12000, 0, gk__cu_result,          \
    (gk__cu_kernel * kernel, gk__cu_library lib, const char *name))             \
  X(cuKernelGetFunction, "cuKernelGetFunction", 12000, 0, gk__cu_result,        \
    (gk__cu_function * fn, gk__cu_kernel kernel))                               \
  X(cuLibraryUnload, "cuLibraryUnload", 12000, 0, gk__cu_result,                \
    (gk__cu_library lib))                                                       \
  X(cuLaunchKernel, "cuLaunchKernel", 4000, 1, gk__cu_result,                   \
    (gk__cu_function f, unsigned grid_x, unsigned grid_y, unsigned grid_z,      \
     unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared,     \
     gk__cu_stream stream, void **params, void **extra))

#endif /* GK_CUDA_DRV_H */
