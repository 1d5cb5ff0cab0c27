/*
 * test_hsa_abi.c - loader/rocm_hsa.h against the real <hsa/hsa.h> of the
 * installed ROCm (libhsa-runtime-dev): every status, attribute and enum
 * value libgk passes, and the layout of every handle. Checked by the
 * compiler (static assertions); this file also holds main() for
 * test_hsa_proto.c, which compares the prototypes.
 */
#include <stddef.h>
#include <stdio.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "rocm_hsa.h"

/* Compared as integers: the enums are of different types on purpose. */
#define SAME(ours, theirs) \
  _Static_assert((long long)(ours) == (long long)(theirs), #ours " != " #theirs)
SAME(GK__HSA_STATUS_SUCCESS, HSA_STATUS_SUCCESS);
SAME(GK__HSA_STATUS_INFO_BREAK, HSA_STATUS_INFO_BREAK);
SAME(GK__HSA_STATUS_ERROR_OUT_OF_RESOURCES, HSA_STATUS_ERROR_OUT_OF_RESOURCES);
SAME(GK__HSA_STATUS_ERROR_INVALID_CODE_OBJECT, HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
SAME(GK__HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
SAME(GK__HSA_AGENT_INFO_NAME, HSA_AGENT_INFO_NAME);
SAME(GK__HSA_AGENT_INFO_DEVICE, HSA_AGENT_INFO_DEVICE);
SAME(GK__HSA_AMD_AGENT_INFO_PRODUCT_NAME, HSA_AMD_AGENT_INFO_PRODUCT_NAME);
SAME(GK__HSA_DEVICE_TYPE_GPU, HSA_DEVICE_TYPE_GPU);
SAME(GK__HSA_ISA_INFO_NAME_LENGTH, HSA_ISA_INFO_NAME_LENGTH);
SAME(GK__HSA_ISA_INFO_NAME, HSA_ISA_INFO_NAME);
SAME(GK__HSA_PROFILE_FULL, HSA_PROFILE_FULL);
SAME(GK__HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT);
SAME(GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
     HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE);
SAME(GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT,
     HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT);
SAME(GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
     HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE);
SAME(GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
     HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE);
SAME(GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);

/* The status type and the enums passed as unsigned: same size, and (GCC,
 * clang) the same type as far as calls are concerned. */
SAME(sizeof(gk__hsa_status), sizeof(hsa_status_t));
_Static_assert(__builtin_types_compatible_p(gk__hsa_status, hsa_status_t),
               "hsa_status_t is not an unsigned int here");
_Static_assert(__builtin_types_compatible_p(unsigned, hsa_agent_info_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_isa_info_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_executable_symbol_info_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_profile_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_default_float_rounding_mode_t),
               "an HSA enum passed as unsigned is not an unsigned int here");

#define HANDLE(ours, theirs)                                      \
  SAME(sizeof(ours), sizeof(theirs));                             \
  SAME(offsetof(ours, handle), offsetof(theirs, handle));         \
  SAME(sizeof(((ours *)0)->handle), sizeof(((theirs *)0)->handle))
HANDLE(gk__hsa_agent, hsa_agent_t);
HANDLE(gk__hsa_isa, hsa_isa_t);
HANDLE(gk__hsa_code_object_reader, hsa_code_object_reader_t);
HANDLE(gk__hsa_executable, hsa_executable_t);
HANDLE(gk__hsa_executable_symbol, hsa_executable_symbol_t);
HANDLE(gk__hsa_loaded_code_object, hsa_loaded_code_object_t);

/* test_hsa_proto.c */
int gk_test_hsa_protos(void);

int main(void) {
  printf("loader/rocm_hsa.h matches <hsa/hsa.h>: %d prototypes, every value and "
         "handle layout\n", gk_test_hsa_protos());
  return 0;
}
