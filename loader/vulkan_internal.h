/*
 * vulkan_internal.h - what vulkan.c (library, devices, gk_vk) shares with
 * vulkan_module.c (modules, buffers, dispatch). Not API; built only with
 * the Vulkan headers.
 */
#ifndef GK_VULKAN_INTERNAL_H
#define GK_VULKAN_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <pthread.h>
#include <stdatomic.h>
#include <vulkan/vulkan.h>

#include "gk_internal.h"
#include "gk_vulkan.h"

/* ---- the function table ------------------------------------------------ */

#define GK__VK_GLOBAL(X) X(vkCreateInstance)
#define GK__VK_INSTANCE(X)                                                     \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)
#define GK__VK_DEVICE(X)                                                       \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkResetDescriptorPool)                                                     \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdPushConstants)                                                        \
  X(vkCmdDispatch)                                                             \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkQueueSubmit)                                                             \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkResetFences)                                                             \
  X(vkWaitForFences)

typedef struct gk__vkfn {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion; /* 1.1+; may be NULL */
#define GK__VK_FIELD(name) PFN_##name name;
  GK__VK_GLOBAL(GK__VK_FIELD) GK__VK_INSTANCE(GK__VK_FIELD)
  GK__VK_DEVICE(GK__VK_FIELD)
#undef GK__VK_FIELD
} gk__vkfn;

/* A library and an instance. */
typedef struct gk__vkinst {
  gk__driver drv;
  gk__vkfn f;
  VkInstance inst;
  uint32_t api; /* the version the instance was created for */
} gk__vkinst;

typedef struct gk__vkphys {
  VkPhysicalDevice pd;
  VkPhysicalDeviceProperties props;
  uint32_t qfam;
  int rank;
  uint32_t order;
} gk__vkphys;

struct gk_vk {
  gk__vkinst vi;
  gk__vkphys phys;
  VkPhysicalDeviceMemoryProperties mem;
  VkDevice dev;
  VkQueue queue;
  VkCommandPool cmdpool;
  VkCommandBuffer cmd;
  VkFence fence;
  VkDescriptorPool dpool;
  gk_device desc;
  pthread_mutex_t mu; /* the queue, command buffer, pool and msg */
  atomic_int refs;
  char *msg;
};

/* "VK_ERROR_DEVICE_LOST" for r. */
const char *gk__vk_result_name(VkResult r);
/* Sets vk's message; returns status. */
int gk__vkc_fail(const gk_vk *vk, int status, const char *fmt, ...) GK__PRINTF(3, 4);
/* Clears vk's message (a call succeeded). */
void gk__vkc_ok(gk_vk *vk);
/* References held by modules and buffers; the last unref destroys vk. */
void gk__vkc_ref(gk_vk *vk);
void gk__vkc_unref(gk_vk *vk);

#endif /* GK_VULKAN_INTERNAL_H */
