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
SAME(GK__HSA_AGENT_INFO_QUEUE_MAX_SIZE, HSA_AGENT_INFO_QUEUE_MAX_SIZE);
SAME(GK__HSA_PACKET_TYPE_KERNEL_DISPATCH, HSA_PACKET_TYPE_KERNEL_DISPATCH);
SAME(GK__HSA_PACKET_HEADER_BARRIER, HSA_PACKET_HEADER_BARRIER);
SAME(GK__HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE, HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE);
SAME(GK__HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE, HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE);
SAME(GK__HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM);
SAME(GK__HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS, HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
SAME(GK__HSA_QUEUE_TYPE_MULTI, HSA_QUEUE_TYPE_MULTI);
SAME(GK__HSA_REGION_INFO_SEGMENT, HSA_REGION_INFO_SEGMENT);
SAME(GK__HSA_REGION_INFO_GLOBAL_FLAGS, HSA_REGION_INFO_GLOBAL_FLAGS);
SAME(GK__HSA_REGION_INFO_SIZE, HSA_REGION_INFO_SIZE);
SAME(GK__HSA_REGION_SEGMENT_GLOBAL, HSA_REGION_SEGMENT_GLOBAL);
SAME(GK__HSA_REGION_SEGMENT_GROUP, HSA_REGION_SEGMENT_GROUP);
SAME(GK__HSA_REGION_GLOBAL_FLAG_KERNARG, HSA_REGION_GLOBAL_FLAG_KERNARG);

/* The status type and the enums passed as unsigned: same size, and (GCC,
 * clang) the same type as far as calls are concerned. */
SAME(sizeof(gk__hsa_status), sizeof(hsa_status_t));
_Static_assert(__builtin_types_compatible_p(gk__hsa_status, hsa_status_t),
               "hsa_status_t is not an unsigned int here");
_Static_assert(__builtin_types_compatible_p(unsigned, hsa_agent_info_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_isa_info_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_executable_symbol_info_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_profile_t) &&
                   __builtin_types_compatible_p(unsigned, hsa_region_info_t) &&
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
HANDLE(gk__hsa_region, hsa_region_t);
HANDLE(gk__hsa_signal, hsa_signal_t);

/* The queue and the dispatch packet libgk reads and writes by hand. */
#define FIELD(ours, theirs, f)                       \
  SAME(offsetof(ours, f), offsetof(theirs, f));      \
  SAME(sizeof(((ours *)0)->f), sizeof(((theirs *)0)->f))
SAME(sizeof(gk__hsa_queue), sizeof(hsa_queue_t));
FIELD(gk__hsa_queue, hsa_queue_t, type);
FIELD(gk__hsa_queue, hsa_queue_t, base_address);
FIELD(gk__hsa_queue, hsa_queue_t, doorbell_signal);
FIELD(gk__hsa_queue, hsa_queue_t, size);
FIELD(gk__hsa_queue, hsa_queue_t, id);
SAME(sizeof(gk__hsa_dispatch_packet), sizeof(hsa_kernel_dispatch_packet_t));
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, header);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, setup);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, workgroup_size_x);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, workgroup_size_z);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, grid_size_x);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, grid_size_z);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, private_segment_size);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, group_segment_size);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, kernel_object);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, kernarg_address);
FIELD(gk__hsa_dispatch_packet, hsa_kernel_dispatch_packet_t, completion_signal);

/* test_hsa_proto.c */
int gk_test_hsa_protos(void);

int main(void) {
  printf("loader/rocm_hsa.h matches <hsa/hsa.h>: %d prototypes, every value and "
         "handle layout\n", gk_test_hsa_protos());
  return 0;
}
