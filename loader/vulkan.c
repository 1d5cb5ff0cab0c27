/*
 * vulkan.c - the Vulkan backend's device side: libvulkan, the instance, the
 * devices and their order, detection, and gk_vk (an opened device). Modules,
 * buffers and dispatch are in vulkan_module.c, SPIR-V parsing and the
 * selection rule in vulkan_spirv.c.
 *
 * volk's pattern: libvulkan is dlopen()ed through gk__driver_open (a test
 * may install a resolver instead), vkGetInstanceProcAddr gives the global
 * and instance functions, vkGetDeviceProcAddr the device functions, all
 * into a table held by the handle that needs them (no global function
 * pointers). The only process-wide state is the detection cache below.
 *
 * Only the Vulkan headers are needed to build this file (for the types;
 * VK_NO_PROTOTYPES); without them it builds the stubs at the end, which
 * report that libgk was built without Vulkan.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"
#include "gk_vulkan.h"

#if GK_HAVE_VULKAN_H
#include "vulkan_internal.h"

const char *gk__vk_result_name(VkResult r) {
  switch (r) {
#define R(x) case x: return #x;
    R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
    R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST)
    R(VK_ERROR_MEMORY_MAP_FAILED) R(VK_ERROR_LAYER_NOT_PRESENT)
    R(VK_ERROR_EXTENSION_NOT_PRESENT) R(VK_ERROR_FEATURE_NOT_PRESENT)
    R(VK_ERROR_INCOMPATIBLE_DRIVER) R(VK_ERROR_TOO_MANY_OBJECTS)
    R(VK_ERROR_FORMAT_NOT_SUPPORTED) R(VK_ERROR_FRAGMENTED_POOL)
    R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_INVALID_SHADER_NV)
    R(VK_ERROR_UNKNOWN)
#undef R
  default: return "VkResult";
  }
}

static const char *const lib_names[] = {"libvulkan.so.1", "libvulkan.so", NULL};

static void inst_close(gk__vkinst *vi) {
  if (vi->inst && vi->f.vkDestroyInstance) vi->f.vkDestroyInstance(vi->inst, NULL);
  gk__driver_close(&vi->drv);
  memset(vi, 0, sizeof *vi);
}

/* Opens libvulkan and creates an instance for the newest version both the
 * loader and libgk know (1.3): a device's usable version is the lower of
 * its own and the instance's. */
static int inst_open(gk__vkinst *vi, char *why, size_t why_size) {
  memset(vi, 0, sizeof *vi);
  int rc = gk__driver_open(GK_BACKEND_VULKAN, lib_names, &vi->drv, why, why_size);
  if (rc != GK_OK) return rc;
  vi->f.vkGetInstanceProcAddr =
      (PFN_vkGetInstanceProcAddr)gk__driver_sym(&vi->drv, "vkGetInstanceProcAddr");
  if (!vi->f.vkGetInstanceProcAddr) {
    gk__say(why, why_size, "libvulkan has no vkGetInstanceProcAddr");
    gk__driver_close(&vi->drv);
    return GK_ENODEVICE;
  }
  PFN_vkGetInstanceProcAddr gipa = vi->f.vkGetInstanceProcAddr;
  vi->f.vkEnumerateInstanceVersion =
      (PFN_vkEnumerateInstanceVersion)gipa(NULL, "vkEnumerateInstanceVersion");
  vi->f.vkCreateInstance = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
  if (!vi->f.vkCreateInstance) {
    gk__say(why, why_size, "libvulkan has no vkCreateInstance");
    gk__driver_close(&vi->drv);
    return GK_ENODEVICE;
  }
  uint32_t api = VK_API_VERSION_1_0;
  if (vi->f.vkEnumerateInstanceVersion &&
      vi->f.vkEnumerateInstanceVersion(&api) != VK_SUCCESS)
    api = VK_API_VERSION_1_0;
  if (api > VK_API_VERSION_1_3) api = VK_API_VERSION_1_3;
  vi->api = VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api), 0);

  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "libgk";
  app.pEngineName = "gllm-kernels";
  app.apiVersion = vi->api;
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkResult r = vi->f.vkCreateInstance(&ci, NULL, &vi->inst);
  if (r != VK_SUCCESS) {
    gk__say(why, why_size, "vkCreateInstance failed: %s%s", gk__vk_result_name(r),
        r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver (ICD) is installed)" : "");
    vi->inst = NULL;
    gk__driver_close(&vi->drv);
    return GK_ENODEVICE;
  }
  const char *missing = NULL;
#define GK__VK_LOAD(name)                                                      \
  if (!(vi->f.name = (PFN_##name)gipa(vi->inst, #name)) && !missing) missing = #name;
  GK__VK_INSTANCE(GK__VK_LOAD)
#undef GK__VK_LOAD
  if (missing) {
    gk__say(why, why_size, "libvulkan does not give %s", missing);
    if (!vi->f.vkDestroyInstance) vi->inst = NULL; /* cannot destroy it */
    inst_close(vi);
    return GK_EDRIVER;
  }
  return GK_OK;
}

/* ---- devices ------------------------------------------------------------ */

static int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
  default: return 0;
  }
}

static const char *type_name(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
  default: return "other";
  }
}

static int phys_cmp(const void *a, const void *b) {
  const gk__vkphys *x = a, *y = b;
  if (x->rank != y->rank) return y->rank - x->rank;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* The compute queue family: one without graphics if there is one (it may
 * run beside a renderer), else any with compute. UINT32_MAX when none. */
static uint32_t compute_family(const gk__vkinst *vi, VkPhysicalDevice pd) {
  VkQueueFamilyProperties q[32];
  uint32_t n = 32, best = UINT32_MAX;
  vi->f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
  for (uint32_t i = 0; i < n && i < 32; i++) {
    if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || q[i].queueCount == 0) continue;
    if (!(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return i;
    if (best == UINT32_MAX) best = i;
  }
  return best;
}

#define MAX_PHYS 16

/* The instance's devices that have a compute queue, best first. */
static int enumerate(const gk__vkinst *vi, gk__vkphys *out, uint32_t *n, char *why,
                     size_t why_size) {
  VkPhysicalDevice pd[MAX_PHYS];
  uint32_t count = MAX_PHYS;
  VkResult r = vi->f.vkEnumeratePhysicalDevices(vi->inst, &count, pd);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    gk__say(why, why_size, "vkEnumeratePhysicalDevices failed: %s", gk__vk_result_name(r));
    return GK_EDRIVER;
  }
  uint32_t k = 0;
  for (uint32_t i = 0; i < count; i++) {
    gk__vkphys *p = &out[k];
    p->pd = pd[i];
    vi->f.vkGetPhysicalDeviceProperties(pd[i], &p->props);
    p->qfam = compute_family(vi, pd[i]);
    if (p->qfam == UINT32_MAX) continue;
    p->rank = type_rank(p->props.deviceType);
    p->order = i;
    k++;
  }
  qsort(out, k, sizeof *out, phys_cmp);
  *n = k;
  return GK_OK;
}

/* A device's usable version: the lower of its own and the instance's. */
static void describe(const gk__vkinst *vi, const gk__vkphys *p, int index, gk_device *d) {
  uint32_t v = p->props.apiVersion < vi->api ? p->props.apiVersion : vi->api;
  memset(d, 0, sizeof *d);
  d->backend = GK_BACKEND_VULKAN;
  snprintf(d->arch, sizeof d->arch, "vulkan%u.%u", VK_API_VERSION_MAJOR(v),
           VK_API_VERSION_MINOR(v));
  snprintf(d->name, sizeof d->name, "%.96s (%s)", p->props.deviceName,
           type_name(p->props.deviceType));
  d->index = index;
}

/*
 * Detection cache. Creating an instance loads every installed driver (about
 * 80 ms with Mesa's four ICDs here), and gk_device_detect() runs for every
 * gk_module_load(dev = NULL): the answer of the dlopen path is kept for the
 * life of the process (a device plugged in later is not seen). A resolver
 * installed by a test is never cached.
 */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int valid, status;
  uint32_t n;
  gk_device dev[MAX_PHYS];
  int cpu_type[MAX_PHYS];
  char why[256];
} cache;

static void fill_cache_locked(void) {
  gk__vkinst vi;
  gk__vkphys p[MAX_PHYS];
  uint32_t n = 0;
  memset(&cache, 0, sizeof cache);
  cache.status = inst_open(&vi, cache.why, sizeof cache.why);
  if (cache.status == GK_OK) {
    cache.status = enumerate(&vi, p, &n, cache.why, sizeof cache.why);
    for (uint32_t i = 0; i < n && cache.status == GK_OK; i++) {
      describe(&vi, &p[i], (int)i, &cache.dev[i]);
      cache.cpu_type[i] = p[i].props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    }
    cache.n = cache.status == GK_OK ? n : 0;
    inst_close(&vi);
  }
  cache.valid = 1;
}

/* Copies the device list (and the reason when there is none) under the
 * lock; fills it on first use. A resolver installed by a test is asked
 * afresh every time and never cached. */
static int device_list(gk_device *dev, int *cpu_type, uint32_t *n, char *why,
                       size_t why_size) {
  pthread_mutex_lock(&cache_mu);
  int resolver = gk__driver_has_resolver(GK_BACKEND_VULKAN);
  if (!cache.valid || resolver) fill_cache_locked();
  int status = cache.status;
  *n = cache.n;
  memcpy(dev, cache.dev, sizeof cache.dev);
  if (cpu_type) memcpy(cpu_type, cache.cpu_type, sizeof cache.cpu_type);
  if (status != GK_OK) gk__say(why, why_size, "%s", cache.why);
  if (resolver) cache.valid = 0;
  pthread_mutex_unlock(&cache_mu);
  return status;
}

int gk__vk_detect(gk_device *out, int asked, char *why, size_t why_size) {
  gk_device dev[MAX_PHYS];
  int cpu_type[MAX_PHYS];
  uint32_t n;
  int rc = device_list(dev, cpu_type, &n, why, why_size);
  if (rc != GK_OK) return rc == GK_EDRIVER ? GK_ENODEVICE : rc;
  for (uint32_t i = 0; i < n; i++)
    if (asked || !cpu_type[i]) {
      *out = dev[i];
      return GK_OK;
    }
  if (n == 0)
    gk__say(why, why_size, "Vulkan has no device with a compute queue here");
  else
    gk__say(why, why_size,
        "the only Vulkan device%s here %s of type CPU (%s); ask for it by "
        "name (\"vulkan\") to use it",
        n > 1 ? "s" : "", n > 1 ? "are" : "is", dev[0].name);
  return GK_ENODEVICE;
}

GK_API int gk_vk_devices(gk_device *out, size_t cap, size_t *count, char *why,
                         size_t why_size) {
  gk_device dev[MAX_PHYS];
  uint32_t n;
  if (why && why_size) why[0] = '\0';
  if (!count || (!out && cap)) {
    gk__say(why, why_size, "gk_vk_devices: %s is NULL", !count ? "count" : "out");
    return GK_EINVAL;
  }
  *count = 0;
  int rc = device_list(dev, NULL, &n, why, why_size);
  if (rc != GK_OK) return rc == GK_EDRIVER ? GK_ENODEVICE : rc;
  for (uint32_t i = 0; i < n && i < cap; i++) out[i] = dev[i];
  *count = n;
  return GK_OK;
}

/* ---- an open device ----------------------------------------------------- */

int gk__vkc_fail(const gk_vk *vkc, int status, const char *fmt, ...) {
  gk_vk *vk = (gk_vk *)vkc; /* the message is the handle's mutable part */
  va_list ap;
  va_start(ap, fmt);
  gk__vsetmsg(&vk->msg, status, fmt, ap);
  va_end(ap);
  return status;
}

void gk__vkc_ok(gk_vk *vk) {
  free(vk->msg);
  vk->msg = NULL;
}

static void vk_destroy(gk_vk *vk) {
  gk__vkfn *f = &vk->vi.f;
  if (vk->dev) {
    if (vk->fence) f->vkDestroyFence(vk->dev, vk->fence, NULL);
    if (vk->dpool) f->vkDestroyDescriptorPool(vk->dev, vk->dpool, NULL);
    if (vk->cmdpool) f->vkDestroyCommandPool(vk->dev, vk->cmdpool, NULL);
    if (f->vkDestroyDevice) f->vkDestroyDevice(vk->dev, NULL);
  }
  inst_close(&vk->vi);
  pthread_mutex_destroy(&vk->mu);
  free(vk->msg);
  free(vk);
}

void gk__vkc_ref(gk_vk *vk) { atomic_fetch_add(&vk->refs, 1); }
void gk__vkc_unref(gk_vk *vk) {
  if (vk && atomic_fetch_sub(&vk->refs, 1) == 1) vk_destroy(vk);
}

/* Creates the logical device, its queue and what every dispatch reuses. */
static int vk_create_device(gk_vk *vk, char *why, size_t why_size) {
  gk__vkfn *f = &vk->vi.f;
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = vk->phys.qfam;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkResult r = f->vkCreateDevice(vk->phys.pd, &di, NULL, &vk->dev);
  const char *what = "vkCreateDevice";
  if (r != VK_SUCCESS) {
    vk->dev = NULL;
    goto fail;
  }
  const char *missing = NULL;
#define GK__VK_LOAD(name)                                                      \
  if (!(f->name = (PFN_##name)f->vkGetDeviceProcAddr(vk->dev, #name)) && !missing) \
    missing = #name;
  GK__VK_DEVICE(GK__VK_LOAD)
#undef GK__VK_LOAD
  if (missing) {
    gk__say(why, why_size, "the Vulkan driver of '%s' does not give %s",
        vk->desc.name, missing);
    if (!f->vkDestroyDevice) vk->dev = NULL;
    return GK_EDRIVER;
  }
  f->vkGetDeviceQueue(vk->dev, vk->phys.qfam, 0, &vk->queue);

  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = vk->phys.qfam;
  what = "vkCreateCommandPool";
  if ((r = f->vkCreateCommandPool(vk->dev, &pi, NULL, &vk->cmdpool)) != VK_SUCCESS) goto fail;
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = vk->cmdpool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  what = "vkAllocateCommandBuffers";
  if ((r = f->vkAllocateCommandBuffers(vk->dev, &ai, &vk->cmd)) != VK_SUCCESS) goto fail;
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  what = "vkCreateFence";
  if ((r = f->vkCreateFence(vk->dev, &fi, NULL, &vk->fence)) != VK_SUCCESS) goto fail;
  /* One set per dispatch, the pool reset before each. */
  VkDescriptorPoolSize sizes[2] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, GK__SPIRV_MAX_BINDINGS},
      {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, GK__SPIRV_MAX_BINDINGS}};
  VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 2;
  dpi.pPoolSizes = sizes;
  what = "vkCreateDescriptorPool";
  if ((r = f->vkCreateDescriptorPool(vk->dev, &dpi, NULL, &vk->dpool)) != VK_SUCCESS) goto fail;
  f->vkGetPhysicalDeviceMemoryProperties(vk->phys.pd, &vk->mem);
  return GK_OK;
fail:
  gk__say(why, why_size, "cannot open Vulkan device '%s': %s failed: %s",
      vk->desc.name, what, gk__vk_result_name(r));
  return r == VK_ERROR_OUT_OF_HOST_MEMORY ? GK_ENOMEM : GK_EDRIVER;
}

GK_API int gk_vk_open(const gk_device *dev, gk_vk **out, char *why,
                      size_t why_size) {
  if (why && why_size) why[0] = '\0';
  if (!out) {
    gk__say(why, why_size, "gk_vk_open: out is NULL");
    return GK_EINVAL;
  }
  *out = NULL;
  int want_ma = 1, want_mi = 0, index = 0;
  if (dev) {
    if (dev->backend != GK_BACKEND_VULKAN) {
      gk__say(why, why_size, "gk_vk_open: the device is a %s device, not vulkan",
          gk_backend_name(dev->backend) ? gk_backend_name(dev->backend) : "invalid");
      return GK_EINVAL;
    }
    if (!gk__vk_version_parse(dev->arch, &want_ma, &want_mi)) {
      gk__say(why, why_size, "gk_vk_open: arch '%.64s' is not a Vulkan version like vulkan1.3",
          dev->arch);
      return GK_EINVAL;
    }
    index = dev->index;
  }
  gk_vk *vk = calloc(1, sizeof *vk);
  if (!vk) {
    gk__say(why, why_size, "out of memory opening a Vulkan device");
    return GK_ENOMEM;
  }
  pthread_mutex_init(&vk->mu, NULL);
  atomic_init(&vk->refs, 1);
  int rc = inst_open(&vk->vi, why, why_size);
  if (rc != GK_OK) goto fail;
  gk__vkphys p[MAX_PHYS];
  uint32_t n = 0;
  if ((rc = enumerate(&vk->vi, p, &n, why, why_size)) != GK_OK) goto fail;
  if (index < 0 || (uint32_t)index >= n) {
    gk__say(why, why_size, "no Vulkan device %d here (%u with a compute queue)", index, n);
    rc = GK_ENODEVICE;
    goto fail;
  }
  vk->phys = p[index];
  describe(&vk->vi, &vk->phys, index, &vk->desc);
  int ma, mi;
  gk__vk_version_parse(vk->desc.arch, &ma, &mi);
  if (ma < want_ma || (ma == want_ma && mi < want_mi)) {
    gk__say(why, why_size, "device 'vulkan:%.64s' asks for more than Vulkan device %d has (%s, %s)",
        dev->arch, index, vk->desc.arch, vk->desc.name);
    rc = GK_ENODEVICE;
    goto fail;
  }
  if ((rc = vk_create_device(vk, why, why_size)) != GK_OK) goto fail;
  *out = vk;
  return GK_OK;
fail:
  vk_destroy(vk);
  return rc;
}

GK_API void gk_vk_close(gk_vk *vk) { gk__vkc_unref(vk); }

GK_API const gk_device *gk_vk_device(const gk_vk *vk) { return vk ? &vk->desc : NULL; }

GK_API const char *gk_vk_errmsg(const gk_vk *vk) {
  if (!vk) return "gk_vk_errmsg: the handle is NULL";
  return vk->msg ? vk->msg : "";
}

GK_API int gk_vk_native_handles(const gk_vk *vk, gk_vk_native *out) {
  if (!vk || !out) return GK_EINVAL;
  out->instance = vk->vi.inst;
  out->physical_device = vk->phys.pd;
  out->device = vk->dev;
  out->queue = vk->queue;
  out->queue_family = vk->phys.qfam;
  out->get_instance_proc_addr = (void *)vk->vi.f.vkGetInstanceProcAddr;
  return GK_OK;
}

#else /* !GK_HAVE_VULKAN_H: built without the Vulkan headers */

#define NO_VULKAN "libgk was built without the Vulkan headers (libvulkan-dev)"

static void say0(char *why, size_t size) {
  if (why && size) snprintf(why, size, "%s", NO_VULKAN);
}

int gk__vk_detect(gk_device *out, int asked, char *why, size_t why_size) {
  (void)out, (void)asked;
  say0(why, why_size);
  return GK_ENODEVICE;
}

static int vk_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                   const gk__entries *e, void *bytes, size_t size, void **state) {
  (void)dev, (void)row, (void)size, (void)state;
  free(bytes);
  return gk__fail(ar, GK_ENODEVICE, "cannot load a vulkan image: %s", NO_VULKAN);
}
static void *vk_symbol(void *s, const char *n) { (void)s, (void)n; return NULL; }
static int vk_kernel_info(void *s, const char *n, gk_kernel_info *o) {
  (void)s, (void)n, (void)o;
  return GK_ENOSYMBOL;
}
static void vk_unload(void *s) { (void)s; }
const gk__ops gk__vk_ops = {.load = vk_load, .symbol = vk_symbol, .kernel_info = vk_kernel_info,
                            .unload = vk_unload, .launches = 1};

GK_API int gk_vk_devices(gk_device *out, size_t cap, size_t *count, char *why,
                         size_t why_size) {
  (void)out, (void)cap;
  if (count) *count = 0;
  say0(why, why_size);
  return GK_ENODEVICE;
}
GK_API int gk_vk_open(const gk_device *dev, gk_vk **out, char *why, size_t why_size) {
  (void)dev;
  if (out) *out = NULL;
  say0(why, why_size);
  return GK_ENODEVICE;
}
GK_API void gk_vk_close(gk_vk *vk) { (void)vk; }
GK_API const gk_device *gk_vk_device(const gk_vk *vk) { (void)vk; return NULL; }
GK_API const char *gk_vk_errmsg(const gk_vk *vk) { (void)vk; return NO_VULKAN; }
GK_API int gk_vk_module_load(gk_archive *ar, gk_vk *vk, const char *kernel,
                             const char *variant, unsigned flags, gk_module **out) {
  (void)vk, (void)kernel, (void)variant, (void)flags;
  if (out) *out = NULL;
  return ar ? gk__fail(ar, GK_ENODEVICE, "%s", NO_VULKAN) : GK_EINVAL;
}
GK_API gk_vk *gk_vk_of(const gk_module *m) { (void)m; return NULL; }
GK_API const gk_vk_entry *gk_vk_entry_of(const gk_module *m, const char *e) {
  (void)m, (void)e;
  return NULL;
}
GK_API int gk_vk_buffer_create(gk_vk *vk, size_t size, gk_vk_buffer **out) {
  (void)vk, (void)size;
  if (out) *out = NULL;
  return GK_ENODEVICE;
}
GK_API void *gk_vk_buffer_map(gk_vk_buffer *b) { (void)b; return NULL; }
GK_API size_t gk_vk_buffer_size(const gk_vk_buffer *b) { (void)b; return 0; }
GK_API int gk_vk_buffer_write(gk_vk_buffer *b, size_t o, const void *s, size_t n) {
  (void)b, (void)o, (void)s, (void)n;
  return GK_EINVAL;
}
GK_API int gk_vk_buffer_read(const gk_vk_buffer *b, size_t o, void *d, size_t n) {
  (void)b, (void)o, (void)d, (void)n;
  return GK_EINVAL;
}
GK_API void gk_vk_buffer_destroy(gk_vk_buffer *b) { (void)b; }
GK_API int gk_vk_dispatch(const gk_module *m, const char *entry,
                          gk_vk_buffer *const *buffers, size_t nbuffers,
                          const void *push, size_t push_size, const uint32_t groups[3]) {
  (void)m, (void)entry, (void)buffers, (void)nbuffers, (void)push, (void)push_size,
      (void)groups;
  return GK_EINVAL;
}
GK_API int gk_vk_native_handles(const gk_vk *vk, gk_vk_native *out) {
  (void)vk, (void)out;
  return GK_EINVAL;
}
#endif
