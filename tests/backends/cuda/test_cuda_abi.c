/*
 * test_cuda_abi.c [STUB] - loader/cuda_drv.h (libgk's own declarations of the
 * driver API, so that it builds without the toolkit) against the real
 * <cuda.h> and <cudaTypedefs.h>: every value libgk passes or compares, the
 * sizes of the types it passes by value, and, for every entry point, that
 * the CUDA version libgk asks cuGetProcAddress for is one that has a
 * PFN_name_vVERSION typedef (so libgk asks for an ABI that exists). Most of
 * it is checked by the compiler; with STUB (the toolkit's stub libcuda) the
 * exported names libgk falls back to are checked to exist.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>

#include "cuda_drv.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(GK__CUDA_SUCCESS, CUDA_SUCCESS);
SAME(GK__CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME(GK__CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(GK__CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME(GK__CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME(GK__CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY);
SAME(GK__CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(GK__CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME(GK__CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE);
SAME(GK__CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU);
SAME(GK__CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX);
SAME(GK__CUDA_ERROR_JIT_COMPILER_NOT_FOUND, CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
SAME(GK__CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
SAME(GK__CUDA_ERROR_JIT_COMPILATION_DISABLED, CUDA_ERROR_JIT_COMPILATION_DISABLED);
SAME(GK__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
SAME(GK__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE);
SAME(GK__CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN);
SAME(GK__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
SAME(GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
SAME(GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
SAME(GK__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(GK__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(GK__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(GK__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME(GK__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(GK__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
SAME(GK__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
SAME(GK__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(GK__CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME(GK__CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
SAME(GK__CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
SAME(GK__CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT);

/* Types passed by value or through pointers libgk declares as int. */
#define SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), "sizeof " #a " != sizeof " #b)
SIZE(gk__cu_result, CUresult);
SIZE(gk__cu_device, CUdevice);
SIZE(gk__cu_context, CUcontext);
SIZE(gk__cu_module, CUmodule);
SIZE(gk__cu_function, CUfunction);
SIZE(gk__cu_library, CUlibrary);
SIZE(gk__cu_kernel, CUkernel);
SIZE(gk__cu_stream, CUstream);
SIZE(int, CUjit_option);
SIZE(int, CUlibraryOption);
SIZE(int, CUdevice_attribute);
SIZE(int, CUfunction_attribute);
SIZE(int, CUdriverProcAddressQueryResult);
SIZE(uint64_t, cuuint64_t);
_Static_assert(__builtin_types_compatible_p(uint64_t, cuuint64_t), "cuuint64_t is not uint64_t");

/* The ABI version asked for each entry point names an existing typedef
 * (cudaTypedefs.h has one per ABI version of each entry point). */
#define GK__CU_CHECK(name, dl, since, req, ret, params) typedef PFN_##name##_v##since check_##name;
GK__CU_FUNCS(GK__CU_CHECK)
#undef GK__CU_CHECK
_Static_assert(__builtin_types_compatible_p(
                   PFN_cuGetProcAddress_v12000,
                   CUresult (*)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *)),
               "cuGetProcAddress_v2");

static const struct {
  const char *name, *dl;
} names[] = {
#define GK__CU_NAME(name, dl, since, req, ret, params) {#name, dl},
    GK__CU_FUNCS(GK__CU_NAME)
#undef GK__CU_NAME
};

int main(int argc, char **argv) {
  int bad = 0;
  printf("cuda_drv.h agrees with <cuda.h> %d.%d (checked by the compiler)\n",
         CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
  if (argc < 2) return 0;
  void *stub = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!stub) {
    printf("no stub library at %s: exported names not checked\n", argv[1]);
    return 0;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!dlsym(stub, names[i].dl)) {
      printf("FAIL: libcuda exports no %s (the name libgk uses for %s)\n", names[i].dl,
             names[i].name);
      bad = 1;
    }
  if (!dlsym(stub, "cuGetProcAddress_v2") || !dlsym(stub, "cuGetProcAddress")) {
    printf("FAIL: libcuda exports no cuGetProcAddress_v2 / cuGetProcAddress\n");
    bad = 1;
  }
  if (!bad) printf("ok: the stub exports all %zu names\n", sizeof names / sizeof names[0]);
  dlclose(stub);
  return bad;
}
