/*
 * kv_append.hip - the rocm entry point of kv_append (docs/kernels.md), one image per DTYPE, HEAD_DIM, PAGE.
 *
 * The kernel is the CUDA backend's, unchanged: its entry point
 * (kernelsrc/cuda/kv_append.cu) and body (kernelsrc/cuda/paged_attention.cuh) are written
 * against kernelsrc/cuda/gk_gpu.cuh, which maps them onto HIP (as flash_attention.hip
 * says), so it launches as on CUDA.
 *
 * <hip/hip_runtime.h> first: gk_quant.h's helpers call memcpy, which HIP
 * declares for device code in its runtime header.
 */
#include <hip/hip_runtime.h>

#include "../cuda/kv_append.cu"
