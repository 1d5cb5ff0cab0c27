/*
 * test_cudrv_abi.c [STUB] - tests/common/cudrv.h (the driver calls tests/gpu
 * and bench/gpu.c make) against the toolkit's <cuda.h>: the compiler checks
 * every prototype, with cuda.h's own types, against the declaration of the
 * symbol the table resolves, and every value; then, with STUB (the toolkit's
 * stub libcuda), every symbol is looked up in it, so a misspelt or missing
 * export fails here rather than on the GPU machine.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#define CUDRV_USE_CUDA_H 1
#include "cudrv.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(CUDRV_SUCCESS, CUDA_SUCCESS);
SAME(CUDRV_ATTR_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
SAME(CUDRV_ATTR_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(CUDRV_ATTR_MEMORY_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
SAME(CUDRV_ATTR_GLOBAL_MEMORY_BUS_WIDTH, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
SAME(CUDRV_ATTR_L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
SAME(CUDRV_ATTR_CC_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(CUDRV_ATTR_CC_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(CUDRV_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(CUDRV_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME(CUDRV_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
SAME(CUDRV_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME(CUDRV_TMAP_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
SAME(CUDRV_TMAP_INTERLEAVE_NONE, CU_TENSOR_MAP_INTERLEAVE_NONE);
SAME(CUDRV_TMAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE);
SAME(CUDRV_TMAP_SWIZZLE_128B, CU_TENSOR_MAP_SWIZZLE_128B);
SAME(CUDRV_TMAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE);
SAME(CUDRV_TMAP_OOB_FILL_ZEROS, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
_Static_assert(sizeof(cudrv_tmap) == sizeof(CUtensorMap) &&
                   _Alignof(cudrv_tmap) == _Alignof(CUtensorMap),
               "cudrv_tmap is not CUtensorMap's size and alignment");
_Static_assert(sizeof(int) == sizeof(CUtensorMapDataType) &&
                   sizeof(int) == sizeof(CUtensorMapInterleave) &&
                   sizeof(int) == sizeof(CUtensorMapSwizzle) &&
                   sizeof(int) == sizeof(CUtensorMapL2promotion) &&
                   sizeof(int) == sizeof(CUtensorMapFloatOOBfill) &&
                   sizeof(unsigned) == sizeof(cuuint32_t) &&
                   sizeof(unsigned long long) == sizeof(cuuint64_t),
               "cuTensorMapEncodeTiled's parameter types");
/* The programs use int for these; the ABI passes them the same way. */
_Static_assert(sizeof(int) == sizeof(CUresult) && sizeof(int) == sizeof(CUdevice) &&
                   sizeof(int) == sizeof(CUdevice_attribute) &&
                   sizeof(int) == sizeof(CUjit_option) &&
                   sizeof(int) == sizeof(CUfunction_attribute),
               "enum sizes");
_Static_assert(sizeof(unsigned long long) == sizeof(CUdeviceptr), "CUdeviceptr");

#define PROTO(field, symbol, params)                                                   \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&symbol), cu_result(*) params), \
                 #symbol " is not " #params);
CUDRV_FUNCS(PROTO)
#undef PROTO

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("ok: prototypes and values match <cuda.h> (no stub libcuda given)\n");
    return 0;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("SKIP: cannot load the stub libcuda '%s': %s\n", argv[1], dlerror());
    return 77;
  }
  int missing = 0;
#define LOOKUP(field, symbol, params)                                          \
  if (!dlsym(lib, #symbol)) {                                                  \
    printf("FAIL: the stub libcuda exports no %s\n", #symbol);                 \
    missing++;                                                                 \
  }
  CUDRV_FUNCS(LOOKUP)
#undef LOOKUP
  dlclose(lib);
  if (missing) return 1;
  printf("ok: prototypes and values match <cuda.h>; every symbol is exported by %s\n", argv[1]);
  return 0;
}
