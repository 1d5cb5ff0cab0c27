/*
 * rope.hip - the rocm entry point of rope (docs/kernels.md), no params.
 *
 * The kernel is the CUDA backend's, unchanged: its entry point
 * (kernelsrc/cuda/rope.cu) and body (kernelsrc/cuda/rope.cuh) are written
 * against kernelsrc/cuda/gk_gpu.cuh, which maps them onto HIP under hipcc
 * (groups of 32 lanes, so one body fits wave32 and wave64 alike). Launch
 * geometry and arithmetic are therefore the same as on CUDA.
 *
 * <hip/hip_runtime.h> comes first: gk_quant.h's __host__ __device__ helpers
 * call memcpy, which HIP declares for device code in its runtime header,
 * and gk_gpu.cuh includes gk_quant.h before that header.
 */
#include <hip/hip_runtime.h>

#include "../cuda/rope.cu"
