/*
 * gk_vulkan.h - running libgk's Vulkan (SPIR-V) images: open a device, load
 * modules onto it, allocate buffers, dispatch. A small synchronous helper,
 * enough for tests and for programs that want the kernels without writing
 * Vulkan code; programs that have their own Vulkan code take the native
 * handles instead (gk_vk_native, gk_vk_entry_of).
 *
 * libvulkan is dlopen()ed ("libvulkan.so.1", then "libvulkan.so"), never
 * linked; without it every call here returns GK_ENODEVICE with the reason.
 *
 * Devices. A vulkan gk_device's arch is the Vulkan version it supports,
 * "vulkan1.3" (the lower of the device's and the loader's version), the
 * form of the archive's vulkan targets: an image built for target
 * "vulkan1.1" (SPIR-V 1.3) runs on any device whose arch is vulkan1.1 or
 * later, and the newest such image is chosen. `index` is the device's
 * position in gk_vk_devices' order (discrete > integrated > virtual > cpu).
 * gk_device_detect() passes over devices of type CPU (Mesa's lavapipe):
 * the native CPU backend is faster. Ask for them by name:
 * gk_device_detect_backend(GK_BACKEND_VULKAN, ...) or gk_device_parse("vulkan")
 * give the best Vulkan device of any type.
 *
 * Launch metadata. Each vulkan row's `launch` JSON (gk_image_info.launch)
 * says how to call the entry point (docs/kernels.md, "Vulkan"):
 *   local_size      [x, y, z]
 *   bindings        [{set, binding, type, name, access, elem}] - storage
 *                   buffers of set 0 in the order of the C signature's
 *                   pointers: buffer i of gk_vk_dispatch goes to binding i
 *   push_constants  [{name, offset, type}] - the C signature's scalars, sizes
 *                   as u32, floats as f32; std430 offsets
 *   groups          [gx, gy, gz] - count expressions over the push
 *                   constants (gk.h, "Launching GPU kernels"); gk_vk_dispatch
 *                   evaluates them when given no groups, and clamps each
 *                   count to the device's limit: every kernel loops over
 *                   what a smaller grid leaves, so any count >= 1 is
 *                   correct.
 * libgk reads the bindings, push-constant size and local size from the
 * SPIR-V module and the groups and push-constant layout from the JSON; the
 * tests check both agree. gk_module_launch (gk.h) runs an entry from
 * tagged values: the buffers as gk_arg_buffer(b), then the scalars.
 *
 * Threads. A gk_vk may be used from several threads: dispatches on one
 * gk_vk are serialized by its lock (one queue). Buffers may be mapped and
 * written from any thread, but not while a dispatch that uses them runs.
 * gk_vk_errmsg is per gk_vk: with several threads, read it under your own
 * lock.
 */
#ifndef GK_VULKAN_H
#define GK_VULKAN_H

#include "gk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A Vulkan device opened for compute: instance, logical device, one
 * compute queue, a command buffer and a descriptor pool. Reference counted:
 * modules and buffers made on it keep it alive after gk_vk_close. */
typedef struct gk_vk gk_vk;
/* A buffer in host-visible, host-coherent memory (device-local too when the
 * device has such memory: integrated GPUs, resizable BAR), mapped for the
 * buffer's whole life. */
typedef struct gk_vk_buffer gk_vk_buffer;

/*
 * Every Vulkan device with a compute queue, best first: discrete >
 * integrated > virtual > cpu > other, enumeration order within a type.
 * Fills at most `cap` entries of `out` (index = position) and sets *count
 * to the number found (which may exceed cap). GK_OK (count may be 0),
 * GK_EINVAL, or GK_ENODEVICE when libvulkan or its instance is unusable,
 * with the reason in `why` (may be NULL).
 */
GK_API int gk_vk_devices(gk_device *out, size_t cap, size_t *count, char *why,
                         size_t why_size);

/*
 * Opens device `dev` (NULL: the best Vulkan device of any type, CPU ones
 * included). dev->backend must be GK_BACKEND_VULKAN; dev->index picks the
 * device in gk_vk_devices' order; a device whose Vulkan version is below
 * dev->arch is refused (GK_ENODEVICE), so a described device
 * (gk_device_parse("vulkan:vulkan1.3")) cannot load what the real one
 * cannot run. On failure *out is NULL and `why` (may be NULL) says why.
 * Errors: GK_EINVAL, GK_ENODEVICE, GK_EDRIVER, GK_ENOMEM.
 */
GK_API int gk_vk_open(const gk_device *dev, gk_vk **out, char *why,
                      size_t why_size);

/* Drops the caller's reference; the device is destroyed when no module or
 * buffer uses it either. NULL is a no-op. */
GK_API void gk_vk_close(gk_vk *vk);

/* The device as libgk describes it (arch, name, index). NULL for NULL. */
GK_API const gk_device *gk_vk_device(const gk_vk *vk);

/* The failure of the latest call on vk (or on its buffers and modules);
 * "" after a success. NULL gives a fixed text. */
GK_API const char *gk_vk_errmsg(const gk_vk *vk);

/*
 * gk_module_load_ex onto an open device: selects, verifies and loads the
 * image for vk's device, creating one compute pipeline per entry point, so
 * that its dispatches can share buffers with every other module of vk.
 * (gk_module_load with a vulkan device opens a private gk_vk instead; get it
 * with gk_vk_of.) Errors and messages as gk_module_load (in
 * gk_archive_errmsg(ar)).
 */
GK_API int gk_vk_module_load(gk_archive *ar, gk_vk *vk, const char *kernel,
                             const char *variant, unsigned flags,
                             gk_module **out);

/* The device a vulkan module runs on (borrowed: valid while the module
 * is loaded); NULL for a module of another backend or NULL. */
GK_API gk_vk *gk_vk_of(const gk_module *m);

/*
 * A buffer of `size` bytes (> 0) on vk, mapped; its contents start
 * undefined. *out is NULL on failure. Errors: GK_EINVAL, GK_ENOMEM (no
 * host-visible memory type, or the allocation failed), GK_EDRIVER.
 */
GK_API int gk_vk_buffer_create(gk_vk *vk, size_t size, gk_vk_buffer **out);
/* The mapped bytes (size gk_vk_buffer_size), valid until destroy; what is
 * written here is seen by the next dispatch, and what a dispatch wrote is
 * here when gk_vk_dispatch returns. NULL for NULL. */
GK_API void *gk_vk_buffer_map(gk_vk_buffer *b);
GK_API size_t gk_vk_buffer_size(const gk_vk_buffer *b);
/* memcpy into / out of the buffer at `offset`, bounds-checked (GK_ERANGE). */
GK_API int gk_vk_buffer_write(gk_vk_buffer *b, size_t offset, const void *src,
                              size_t n);
GK_API int gk_vk_buffer_read(const gk_vk_buffer *b, size_t offset, void *dst,
                             size_t n);
/* NULL is a no-op. Must not be in use by a running dispatch. */
GK_API void gk_vk_buffer_destroy(gk_vk_buffer *b);

/*
 * Runs entry point `entry` of module m once and waits for it: binds
 * buffers[i] to binding i of set 0 (nbuffers must equal the entry's binding
 * count), pushes `push_size` bytes of push constants (must equal the
 * entry's block size; the layout is the launch metadata's), dispatches
 * groups[0..2] workgroups, each clamped to the device's
 * maxComputeWorkGroupCount (and raised to 1), then makes the results
 * visible in the mapped buffers. groups NULL: the row's `groups`,
 * evaluated with the values in `push` (gk_module_launch_dims). Every buffer must belong to m's gk_vk.
 * GK_OK, GK_EINVAL (wrong counts or sizes, foreign buffer, the row's
 * groups do not evaluate), GK_ECORRUPT (the row's launch), GK_ENOSYMBOL
 * (no such entry), GK_EDRIVER (a Vulkan call failed: gk_vk_errmsg says which
 * and its VkResult).
 */
GK_API int gk_vk_dispatch(const gk_module *m, const char *entry,
                          gk_vk_buffer *const *buffers, size_t nbuffers,
                          const void *push, size_t push_size,
                          const uint32_t groups[3]);

/* A buffer as the pointer argument of gk_module_launch. */
static inline gk_arg gk_arg_buffer(gk_vk_buffer *b) {
  return gk_arg_ptr((uint64_t)(uintptr_t)b);
}

/* ---- native handles, for programs with their own Vulkan code ----------- */

/* What gk_module_symbol(m, entry) returns for a vulkan module: owned by the
 * module. Handles are the Vulkan objects' values (non-dispatchable handles
 * as 64-bit integers). */
typedef struct gk_vk_entry {
  uint64_t pipeline;        /* VkPipeline (compute) */
  uint64_t pipeline_layout; /* VkPipelineLayout: set 0 + push range */
  uint64_t set_layout;      /* VkDescriptorSetLayout of set 0 */
  uint32_t local_size[3];
  uint32_t nbindings;  /* bindings 0..nbindings-1 of set 0 */
  uint32_t push_size;  /* bytes of push constants (stage COMPUTE) */
} gk_vk_entry;

/* The entry of a vulkan module, as gk_module_symbol; NULL when absent. */
GK_API const gk_vk_entry *gk_vk_entry_of(const gk_module *m,
                                         const char *entry);

typedef struct gk_vk_native {
  void *instance;        /* VkInstance */
  void *physical_device; /* VkPhysicalDevice */
  void *device;          /* VkDevice */
  void *queue;           /* VkQueue (externally synchronized: lock via
                            gk_vk_dispatch's users, or use your own queue) */
  uint32_t queue_family;
  void *get_instance_proc_addr; /* PFN_vkGetInstanceProcAddr of the loader */
} gk_vk_native;

/* The handles behind vk. GK_OK or GK_EINVAL. Owned by vk. */
GK_API int gk_vk_native_handles(const gk_vk *vk, gk_vk_native *out);

#ifdef __cplusplus
}
#endif
#endif /* GK_VULKAN_H */
