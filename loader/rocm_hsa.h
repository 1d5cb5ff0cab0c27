/*
 * rocm_hsa.h - the part of the HSA runtime API (ROCr, libhsa-runtime64)
 * libgk calls, declared here so that libgk builds without ROCm installed.
 * Not API. Names are gk__hsa_-prefixed so this header can sit beside the
 * real <hsa/hsa.h> in one file: tests/backends/rocm/test_hsa_abi.c checks every
 * value and layout below against it, test_hsa_proto.c every prototype
 * (HSA 1.1+, ROCm >= 3.5).
 *
 * Values are fixed by the HSA specification and ROCr's hsa.h /
 * hsa_ext_amd.h; they never change.
 */
#ifndef GK_ROCM_HSA_H
#define GK_ROCM_HSA_H

#include <stddef.h>
#include <stdint.h>

#ifdef GK__HSA_REAL_TYPES
/* Only for tests/backends/rocm/test_hsa_proto.c: the real <hsa/hsa.h> types under
 * our names, so that each prototype of GK__HSA_FUNCS can be compared with
 * the real one by the compiler. */
typedef hsa_status_t gk__hsa_status;
typedef hsa_agent_t gk__hsa_agent;
typedef hsa_isa_t gk__hsa_isa;
typedef hsa_code_object_reader_t gk__hsa_code_object_reader;
typedef hsa_executable_t gk__hsa_executable;
typedef hsa_executable_symbol_t gk__hsa_executable_symbol;
typedef hsa_loaded_code_object_t gk__hsa_loaded_code_object;
typedef hsa_region_t gk__hsa_region;
typedef hsa_signal_t gk__hsa_signal;
typedef hsa_queue_t gk__hsa_queue;
#else
/* hsa_status_t: an enum whose values all fit an unsigned int. */
typedef unsigned gk__hsa_status;
/* Opaque handles: a struct of one uint64_t each, passed by value. */
typedef struct gk__hsa_agent { uint64_t handle; } gk__hsa_agent;
typedef struct gk__hsa_isa { uint64_t handle; } gk__hsa_isa;
typedef struct gk__hsa_code_object_reader { uint64_t handle; } gk__hsa_code_object_reader;
typedef struct gk__hsa_executable { uint64_t handle; } gk__hsa_executable;
typedef struct gk__hsa_executable_symbol { uint64_t handle; } gk__hsa_executable_symbol;
typedef struct gk__hsa_loaded_code_object { uint64_t handle; } gk__hsa_loaded_code_object;
typedef struct gk__hsa_region { uint64_t handle; } gk__hsa_region;
typedef struct gk__hsa_signal { uint64_t handle; } gk__hsa_signal;
/* hsa_queue_t as the 64-bit little-endian ABI lays it out (the only one
 * libgk builds for): the ring of 64-byte AQL packets at base_address,
 * `size` packets long, and the doorbell rung with the packet's index. */
typedef struct gk__hsa_queue {
  uint32_t type, features;
  void *base_address;
  gk__hsa_signal doorbell_signal;
  uint32_t size, reserved1;
  uint64_t id;
} gk__hsa_queue;
#endif

/* hsa_kernel_dispatch_packet_t (64 bytes). The first 32 bits, header and
 * setup, are written last with one atomic release store: until then the
 * packet processor sees the slot's old, INVALID header. */
typedef struct gk__hsa_dispatch_packet {
  uint16_t header, setup;
  uint16_t workgroup_size_x, workgroup_size_y, workgroup_size_z, reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z;
  uint32_t private_segment_size, group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  uint64_t completion_signal; /* hsa_signal_t's handle; 0: none */
} gk__hsa_dispatch_packet;

/* hsa_packet_type_t, hsa_packet_header_t (bit offsets), hsa_fence_scope_t,
 * hsa_kernel_dispatch_packet_setup_t, hsa_queue_type_t */
enum {
  GK__HSA_PACKET_TYPE_KERNEL_DISPATCH = 2,
  GK__HSA_PACKET_HEADER_BARRIER = 8,
  GK__HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE = 9,
  GK__HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE = 11,
  GK__HSA_FENCE_SCOPE_SYSTEM = 2,
  GK__HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS = 0,
  GK__HSA_QUEUE_TYPE_MULTI = 0
};
/* hsa_region_info_t, hsa_region_segment_t, hsa_region_global_flag_t */
enum {
  GK__HSA_REGION_INFO_SEGMENT = 0,
  GK__HSA_REGION_INFO_GLOBAL_FLAGS = 1,
  GK__HSA_REGION_INFO_SIZE = 2, /* size_t */
  GK__HSA_REGION_SEGMENT_GLOBAL = 0,
  GK__HSA_REGION_SEGMENT_GROUP = 3,
  GK__HSA_REGION_GLOBAL_FLAG_KERNARG = 1
};
enum {
  GK__HSA_STATUS_SUCCESS = 0x0,
  GK__HSA_STATUS_INFO_BREAK = 0x1,
  GK__HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
  GK__HSA_STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010,
  GK__HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013
};

/* hsa_agent_info_t, hsa_amd_agent_info_t (hsa_ext_amd.h) */
enum {
  GK__HSA_AGENT_INFO_NAME = 0,                /* char[64] */
  GK__HSA_AGENT_INFO_QUEUE_MAX_SIZE = 14,     /* uint32_t */
  GK__HSA_AGENT_INFO_DEVICE = 17,             /* hsa_device_type_t */
  GK__HSA_AMD_AGENT_INFO_PRODUCT_NAME = 0xA009 /* char[64] */
};
/* hsa_device_type_t */
enum { GK__HSA_DEVICE_TYPE_GPU = 1 };
/* hsa_isa_info_t */
enum { GK__HSA_ISA_INFO_NAME_LENGTH = 0, GK__HSA_ISA_INFO_NAME = 1 };
/* hsa_profile_t, hsa_default_float_rounding_mode_t */
enum { GK__HSA_PROFILE_FULL = 1 };
enum { GK__HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT = 0 };
/* hsa_executable_symbol_info_t */
enum {
  GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE = 11,      /* uint32_t */
  GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT = 12, /* uint32_t */
  GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE = 13,        /* uint32_t */
  GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE = 14,      /* uint32_t */
  GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT = 22                     /* uint64_t */
};

/* The length the agent name and product name attributes fill. */
#define GK__HSA_NAME_SIZE 64

typedef gk__hsa_status (*gk__hsa_agent_cb)(gk__hsa_agent agent, void *data);
typedef gk__hsa_status (*gk__hsa_isa_cb)(gk__hsa_isa isa, void *data);
typedef gk__hsa_status (*gk__hsa_region_cb)(gk__hsa_region region, void *data);
typedef void (*gk__hsa_queue_cb)(gk__hsa_status status, gk__hsa_queue *source,
                                 void *data);

/*
 * The entry points, once: X(name, return type, parameter list). rocm.c makes
 * the function-pointer table from it; the ABI test checks each against the
 * real prototype. Enum-typed parameters are passed as unsigned, which is how
 * the C ABI passes an enum whose values fit one.
 */
#define GK__HSA_FUNCS(X)                                                        \
  X(hsa_init, gk__hsa_status, (void))                                           \
  X(hsa_shut_down, gk__hsa_status, (void))                                      \
  X(hsa_status_string, gk__hsa_status,                                          \
    (gk__hsa_status status, const char **text))                                 \
  X(hsa_iterate_agents, gk__hsa_status, (gk__hsa_agent_cb cb, void *data))      \
  X(hsa_agent_get_info, gk__hsa_status,                                         \
    (gk__hsa_agent agent, unsigned attribute, void *value))                     \
  X(hsa_agent_iterate_isas, gk__hsa_status,                                     \
    (gk__hsa_agent agent, gk__hsa_isa_cb cb, void *data))                       \
  X(hsa_isa_get_info_alt, gk__hsa_status,                                       \
    (gk__hsa_isa isa, unsigned attribute, void *value))                         \
  X(hsa_code_object_reader_create_from_memory, gk__hsa_status,                  \
    (const void *code_object, size_t size,                                      \
     gk__hsa_code_object_reader *reader))                                       \
  X(hsa_code_object_reader_destroy, gk__hsa_status,                             \
    (gk__hsa_code_object_reader reader))                                        \
  X(hsa_executable_create_alt, gk__hsa_status,                                  \
    (unsigned profile, unsigned rounding_mode, const char *options,             \
     gk__hsa_executable *executable))                                           \
  X(hsa_executable_load_agent_code_object, gk__hsa_status,                      \
    (gk__hsa_executable executable, gk__hsa_agent agent,                        \
     gk__hsa_code_object_reader reader, const char *options,                    \
     gk__hsa_loaded_code_object *loaded))                                       \
  X(hsa_executable_freeze, gk__hsa_status,                                      \
    (gk__hsa_executable executable, const char *options))                       \
  X(hsa_executable_destroy, gk__hsa_status, (gk__hsa_executable executable))    \
  X(hsa_executable_get_symbol_by_name, gk__hsa_status,                          \
    (gk__hsa_executable executable, const char *name,                           \
     const gk__hsa_agent *agent, gk__hsa_executable_symbol *symbol))            \
  X(hsa_executable_symbol_get_info, gk__hsa_status,                             \
    (gk__hsa_executable_symbol symbol, unsigned attribute, void *value))        \
  X(hsa_agent_iterate_regions, gk__hsa_status,                                  \
    (gk__hsa_agent agent, gk__hsa_region_cb cb, void *data))                    \
  X(hsa_region_get_info, gk__hsa_status,                                        \
    (gk__hsa_region region, unsigned attribute, void *value))                   \
  X(hsa_memory_allocate, gk__hsa_status,                                        \
    (gk__hsa_region region, size_t size, void **ptr))                           \
  X(hsa_memory_free, gk__hsa_status, (void *ptr))                               \
  X(hsa_queue_create, gk__hsa_status,                                           \
    (gk__hsa_agent agent, uint32_t size, uint32_t type, gk__hsa_queue_cb cb,    \
     void *data, uint32_t private_segment_size, uint32_t group_segment_size,    \
     gk__hsa_queue **queue))                                                    \
  X(hsa_queue_destroy, gk__hsa_status, (gk__hsa_queue *queue))                  \
  X(hsa_queue_load_read_index_scacquire, uint64_t,                              \
    (const gk__hsa_queue *queue))                                               \
  X(hsa_queue_add_write_index_screlease, uint64_t,                              \
    (const gk__hsa_queue *queue, uint64_t value))                               \
  X(hsa_signal_store_screlease, void,                                           \
    (gk__hsa_signal signal, int64_t value))

#endif /* GK_ROCM_HSA_H */
