/*
 * vulkan_module.c - SPIR-V images as compute pipelines on a gk_vk, and the
 * buffer-and-dispatch helper of gk_vulkan.h. The device side (library,
 * instance, devices, gk_vk) is vulkan.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

#if GK_HAVE_VULKAN_H
#include "vulkan_internal.h"

/* ---- modules ------------------------------------------------------------ */

typedef struct vkentry {
  gk_vk_entry pub; /* first: gk_module_symbol's pointer is this struct's */
  char name[64];
  VkPipeline pipe;
} vkentry;

typedef struct vkmod {
  gk_vk *vk;
  VkShaderModule sm;
  VkDescriptorSetLayout dsl;
  VkPipelineLayout pl;
  gk__spirv_info info;
  int nentries;
  vkentry e[GK__SPIRV_MAX_ENTRIES];
} vkmod;

/* gk_vk_module_load's device for the load it starts: gk__ops.load has
 * no parameter for it, and the call happens on this thread, inside
 * gk_module_load_ex. */
static _Thread_local gk_vk *load_into;

static void mod_free(vkmod *md) {
  if (!md) return;
  gk_vk *vk = md->vk;
  if (vk && vk->dev) {
    gk__vkfn *f = &vk->vi.f;
    for (int i = 0; i < md->nentries; i++)
      if (md->e[i].pipe) f->vkDestroyPipeline(vk->dev, md->e[i].pipe, NULL);
    if (md->pl) f->vkDestroyPipelineLayout(vk->dev, md->pl, NULL);
    if (md->dsl) f->vkDestroyDescriptorSetLayout(vk->dev, md->dsl, NULL);
    if (md->sm) f->vkDestroyShaderModule(vk->dev, md->sm, NULL);
  }
  gk__vkc_unref(vk);
  free(md);
}

/* Shader module, set layout, pipeline layout, one pipeline per entry. */
static int mod_build(vkmod *md, const void *bytes, size_t size, const gk_image_info *row,
                     gk_archive *ar) {
  gk_vk *vk = md->vk;
  gk__vkfn *f = &vk->vi.f;
  const VkPhysicalDeviceLimits *lim = &vk->phys.props.limits;
  const gk__spirv_info *in = &md->info;
  if (in->push_size > lim->maxPushConstantsSize)
    return gk__fail(ar, GK_ENODEVICE, "image %s needs %u bytes of push constants; '%s' allows %u",
                    GK__WHAT(row), in->push_size, vk->desc.name, lim->maxPushConstantsSize);
  for (int i = 0; i < in->nentries; i++) {
    const uint32_t *ls = in->entries[i].local_size;
    if (ls[0] > lim->maxComputeWorkGroupSize[0] || ls[1] > lim->maxComputeWorkGroupSize[1] ||
        ls[2] > lim->maxComputeWorkGroupSize[2] ||
        (uint64_t)ls[0] * ls[1] * ls[2] > lim->maxComputeWorkGroupInvocations)
      return gk__fail(ar, GK_ENODEVICE, "image %s has workgroups of %ux%ux%u, more than '%s' runs",
                      GK__WHAT(row), ls[0], ls[1], ls[2], vk->desc.name);
  }
  VkResult r;
  const char *call = "vkCreateShaderModule";
  VkShaderModuleCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  si.codeSize = size;
  si.pCode = bytes; /* malloc'ed: aligned for uint32_t */
  if ((r = f->vkCreateShaderModule(vk->dev, &si, NULL, &md->sm)) != VK_SUCCESS) goto fail;

  VkDescriptorSetLayoutBinding b[GK__SPIRV_MAX_BINDINGS];
  for (int i = 0; i < in->nbindings; i++) {
    memset(&b[i], 0, sizeof b[i]);
    b[i].binding = (uint32_t)i;
    b[i].descriptorType = (in->storage_mask >> i & 1) ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                      : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = (uint32_t)in->nbindings;
  li.pBindings = b;
  call = "vkCreateDescriptorSetLayout";
  if ((r = f->vkCreateDescriptorSetLayout(vk->dev, &li, NULL, &md->dsl)) != VK_SUCCESS) goto fail;
  VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, in->push_size};
  VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &md->dsl;
  pli.pushConstantRangeCount = in->push_size ? 1 : 0;
  pli.pPushConstantRanges = &pr;
  call = "vkCreatePipelineLayout";
  if ((r = f->vkCreatePipelineLayout(vk->dev, &pli, NULL, &md->pl)) != VK_SUCCESS) goto fail;

  call = "vkCreateComputePipelines";
  for (int i = 0; i < in->nentries; i++) {
    vkentry *e = &md->e[i];
    memcpy(e->name, in->entries[i].name, sizeof e->name);
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = md->sm;
    ci.stage.pName = e->name;
    ci.layout = md->pl;
    if ((r = f->vkCreateComputePipelines(vk->dev, VK_NULL_HANDLE, 1, &ci, NULL, &e->pipe)) !=
        VK_SUCCESS) {
      e->pipe = VK_NULL_HANDLE;
      goto fail;
    }
    md->nentries = i + 1;
    e->pub.pipeline = (uint64_t)(uintptr_t)e->pipe;
    e->pub.pipeline_layout = (uint64_t)(uintptr_t)md->pl;
    e->pub.set_layout = (uint64_t)(uintptr_t)md->dsl;
    memcpy(e->pub.local_size, in->entries[i].local_size, sizeof e->pub.local_size);
    e->pub.nbindings = (uint32_t)in->nbindings;
    e->pub.push_size = in->push_size;
  }
  return GK_OK;
fail:
  return gk__fail(ar, r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                          ? GK_ENOMEM : GK_EDRIVER,
                  "cannot load image %s on '%s': %s failed: %s", GK__WHAT(row), vk->desc.name,
                  call, gk__vk_result_name(r));
}

static int vk_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                   const gk__entries *e, void *bytes, size_t size, void **state) {
  char why[256];
  vkmod *md = calloc(1, sizeof *md);
  int rc;
  if (!md) {
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  }
  if ((rc = gk__spirv_reflect(bytes, size, &md->info, why, sizeof why)) != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s: %s", GK__WHAT(row), why);
    goto out;
  }
  if (load_into) {
    md->vk = load_into;
    gk__vkc_ref(md->vk);
  } else if ((rc = gk_vk_open(dev, &md->vk, why, sizeof why)) != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s: %s", GK__WHAT(row), why);
    goto out;
  }
  rc = mod_build(md, bytes, size, row, ar);
out:
  free(bytes);
  if (rc != GK_OK) {
    mod_free(md);
    return rc;
  }
  *state = md;
  return GK_OK;
}

static vkentry *find_entry(vkmod *md, const char *name) {
  for (int i = 0; i < md->nentries; i++)
    if (strcmp(md->e[i].name, name) == 0) return &md->e[i];
  return NULL;
}

static void *vk_symbol(void *state, const char *name) {
  vkentry *e = find_entry(state, name);
  return e ? &e->pub : NULL;
}

static int vk_kernel_info(void *state, const char *name, gk_kernel_info *out) {
  vkentry *e = find_entry(state, name);
  if (!e) return GK_ENOSYMBOL;
  memset(out, 0, sizeof *out);
  out->object = e->pub.pipeline;
  out->kernarg_size = e->pub.push_size; /* what a dispatch pushes */
  out->kernarg_align = 4;
  return GK_OK;
}

static void vk_unload(void *state) { mod_free(state); }

static int vk_limits(void *state, gk_device_limits *out) {
  const vkmod *md = state;
  const VkPhysicalDeviceLimits *l = &md->vk->phys.props.limits;
  out->compute_units = 0; /* core Vulkan does not say */
  out->max_threads = l->maxComputeWorkGroupInvocations;
  for (int k = 0; k < 3; k++) out->max_groups[k] = l->maxComputeWorkGroupCount[k];
  return GK_OK;
}

/* The buffers are the pointer arguments (gk_vk_buffer *, gk_arg_buffer),
 * the push constants the scalars as the row lays them out. */
static int dispatch(vkmod *md, const char *entry, gk_vk_buffer *const *buffers, size_t nbuffers,
                    const void *push, size_t push_size, const uint32_t groups[3]);
static int vk_launch(void *state, const char *name, const gk_launch *L, const gk_launch_dims *d,
                     const gk_arg *args, size_t nargs, const gk_launch_options *opts) {
  vkmod *md = state;
  gk_vk_buffer *b[GK_LAUNCH_MAX_PARAMS];
  size_t nb = 0;
  (void)opts;
  for (size_t i = 0; i < nargs; i++)
    if (args[i].type == GK_ARG_PTR) b[nb++] = (gk_vk_buffer *)(uintptr_t)args[i].v.ptr;
  int rc = dispatch(md, name, b, nb, d->scalar_size ? d->scalars : NULL, d->scalar_size, d->grid);
  if (rc != GK_OK)
    return gk__set_last_error(rc, "%s: %s", gk__launch_what(L), gk_vk_errmsg(md->vk));
  gk__clear_last_error();
  return GK_OK;
}

const gk__ops gk__vk_ops = {.load = vk_load, .symbol = vk_symbol, .kernel_info = vk_kernel_info,
                            .unload = vk_unload, .limits = vk_limits, .launch = vk_launch,
                            .launches = 1};

static vkmod *mod_of(const gk_module *m) {
  return m ? gk__module_state(m, &gk__vk_ops) : NULL;
}

GK_API int gk_vk_module_load(gk_archive *ar, gk_vk *vk, const char *kernel,
                             const char *variant, unsigned flags, gk_module **out) {
  if (out) *out = NULL;
  if (!ar) return GK_EINVAL;
  if (!vk) return gk__fail(ar, GK_EINVAL, "gk_vk_module_load: vk is NULL");
  load_into = vk;
  int rc = gk_module_load_ex(ar, &vk->desc, kernel, variant, flags, out);
  load_into = NULL;
  return rc;
}

GK_API gk_vk *gk_vk_of(const gk_module *m) {
  vkmod *md = mod_of(m);
  return md ? md->vk : NULL;
}

GK_API const gk_vk_entry *gk_vk_entry_of(const gk_module *m, const char *entry) {
  vkmod *md = mod_of(m);
  vkentry *e = md && entry ? find_entry(md, entry) : NULL;
  return e ? &e->pub : NULL;
}

/* ---- buffers -------------------------------------------------------------- */

struct gk_vk_buffer {
  gk_vk *vk;
  VkBuffer buf;
  VkDeviceMemory mem;
  void *map;
  size_t size;
};

/* A host-visible, coherent memory type for `bits`: device-local too if the
 * device has one (unified memory, resizable BAR). UINT32_MAX when none. */
static uint32_t memory_type(const gk_vk *vk, uint32_t bits) {
  const VkMemoryPropertyFlags need =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t any = UINT32_MAX;
  for (uint32_t i = 0; i < vk->mem.memoryTypeCount; i++) {
    VkMemoryPropertyFlags fl = vk->mem.memoryTypes[i].propertyFlags;
    if (!(bits >> i & 1) || (fl & need) != need) continue;
    if (fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) return i;
    if (any == UINT32_MAX) any = i;
  }
  return any;
}

GK_API int gk_vk_buffer_create(gk_vk *vk, size_t size, gk_vk_buffer **out) {
  if (out) *out = NULL;
  if (!vk || !out || size == 0)
    return vk ? gk__vkc_fail(vk, GK_EINVAL, "gk_vk_buffer_create: %s",
                        !out ? "out is NULL" : "size is 0")
              : GK_EINVAL;
  gk__vkfn *f = &vk->vi.f;
  gk_vk_buffer *b = calloc(1, sizeof *b);
  if (!b) return gk__vkc_fail(vk, GK_ENOMEM, "out of memory for a buffer of %zu bytes", size);
  b->vk = vk;
  b->size = size;
  VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r;
  const char *call = "vkCreateBuffer";
  int status = GK_EDRIVER;
  if ((r = f->vkCreateBuffer(vk->dev, &bi, NULL, &b->buf)) != VK_SUCCESS) goto fail;
  VkMemoryRequirements req;
  f->vkGetBufferMemoryRequirements(vk->dev, b->buf, &req);
  uint32_t type = memory_type(vk, req.memoryTypeBits);
  if (type == UINT32_MAX) {
    status = gk__vkc_fail(vk, GK_ENOMEM, "'%s' has no host-visible, coherent memory for a buffer",
                     vk->desc.name);
    goto out;
  }
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  call = "vkAllocateMemory";
  if ((r = f->vkAllocateMemory(vk->dev, &ai, NULL, &b->mem)) != VK_SUCCESS) goto fail;
  call = "vkBindBufferMemory";
  if ((r = f->vkBindBufferMemory(vk->dev, b->buf, b->mem, 0)) != VK_SUCCESS) goto fail;
  call = "vkMapMemory";
  if ((r = f->vkMapMemory(vk->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map)) != VK_SUCCESS) goto fail;
  gk__vkc_ref(vk);
  gk__vkc_ok(vk);
  *out = b;
  return GK_OK;
fail:
  status = gk__vkc_fail(vk, r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                           ? GK_ENOMEM : GK_EDRIVER,
                   "cannot create a buffer of %zu bytes on '%s': %s failed: %s", size,
                   vk->desc.name, call, gk__vk_result_name(r));
out:
  if (b->buf) f->vkDestroyBuffer(vk->dev, b->buf, NULL);
  if (b->mem) f->vkFreeMemory(vk->dev, b->mem, NULL);
  free(b);
  return status;
}

GK_API void *gk_vk_buffer_map(gk_vk_buffer *b) { return b ? b->map : NULL; }
GK_API size_t gk_vk_buffer_size(const gk_vk_buffer *b) { return b ? b->size : 0; }

GK_API int gk_vk_buffer_write(gk_vk_buffer *b, size_t offset, const void *src, size_t n) {
  if (!b || (!src && n)) return GK_EINVAL;
  if (offset > b->size || n > b->size - offset)
    return gk__vkc_fail(b->vk, GK_ERANGE, "gk_vk_buffer_write: %zu bytes at %zu exceed the buffer's %zu",
                   n, offset, b->size);
  if (n) memcpy((char *)b->map + offset, src, n);
  return GK_OK;
}

GK_API int gk_vk_buffer_read(const gk_vk_buffer *b, size_t offset, void *dst, size_t n) {
  if (!b || (!dst && n)) return GK_EINVAL;
  if (offset > b->size || n > b->size - offset)
    return gk__vkc_fail(b->vk, GK_ERANGE, "gk_vk_buffer_read: %zu bytes at %zu exceed the buffer's %zu",
                   n, offset, b->size);
  if (n) memcpy(dst, (const char *)b->map + offset, n);
  return GK_OK;
}

GK_API void gk_vk_buffer_destroy(gk_vk_buffer *b) {
  if (!b) return;
  gk__vkfn *f = &b->vk->vi.f;
  /* Unmapped implicitly by vkFreeMemory. */
  f->vkDestroyBuffer(b->vk->dev, b->buf, NULL);
  f->vkFreeMemory(b->vk->dev, b->mem, NULL);
  gk__vkc_unref(b->vk);
  free(b);
}

/* ---- dispatch ------------------------------------------------------------- */

/* Records and runs one dispatch; the caller holds vk->mu. */
static int dispatch_locked(gk_vk *vk, vkmod *md, vkentry *e, gk_vk_buffer *const *bufs,
                           const void *push, const uint32_t g[3]) {
  gk__vkfn *f = &vk->vi.f;
  VkResult r;
  const char *call = "vkResetDescriptorPool";
  VkDescriptorSet set = VK_NULL_HANDLE;
  int nb = md->info.nbindings;
  if ((r = f->vkResetDescriptorPool(vk->dev, vk->dpool, 0)) != VK_SUCCESS) goto fail;
  VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = vk->dpool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &md->dsl;
  call = "vkAllocateDescriptorSets";
  if ((r = f->vkAllocateDescriptorSets(vk->dev, &ai, &set)) != VK_SUCCESS) goto fail;
  VkDescriptorBufferInfo bi[GK__SPIRV_MAX_BINDINGS];
  VkWriteDescriptorSet wr[GK__SPIRV_MAX_BINDINGS];
  for (int i = 0; i < nb; i++) {
    bi[i].buffer = bufs[i]->buf;
    bi[i].offset = 0;
    bi[i].range = VK_WHOLE_SIZE;
    memset(&wr[i], 0, sizeof wr[i]);
    wr[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    wr[i].dstSet = set;
    wr[i].dstBinding = (uint32_t)i;
    wr[i].descriptorCount = 1;
    wr[i].descriptorType = (md->info.storage_mask >> i & 1) ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                            : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    wr[i].pBufferInfo = &bi[i];
  }
  if (nb) f->vkUpdateDescriptorSets(vk->dev, (uint32_t)nb, wr, 0, NULL);

  VkCommandBufferBeginInfo cb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  cb.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  call = "vkBeginCommandBuffer";
  if ((r = f->vkBeginCommandBuffer(vk->cmd, &cb)) != VK_SUCCESS) goto fail;
  f->vkCmdBindPipeline(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe);
  f->vkCmdBindDescriptorSets(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, md->pl, 0, 1, &set, 0,
                             NULL);
  if (md->info.push_size)
    f->vkCmdPushConstants(vk->cmd, md->pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, md->info.push_size,
                          push);
  f->vkCmdDispatch(vk->cmd, g[0], g[1], g[2]);
  /* The shader's writes, made available to the host's reads of the maps.
   * (The host's writes before the submit need no barrier: vkQueueSubmit
   * makes them visible.) */
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  f->vkCmdPipelineBarrier(vk->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
  call = "vkEndCommandBuffer";
  if ((r = f->vkEndCommandBuffer(vk->cmd)) != VK_SUCCESS) goto fail;
  call = "vkResetFences";
  if ((r = f->vkResetFences(vk->dev, 1, &vk->fence)) != VK_SUCCESS) goto fail;
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &vk->cmd;
  call = "vkQueueSubmit";
  if ((r = f->vkQueueSubmit(vk->queue, 1, &si, vk->fence)) != VK_SUCCESS) goto fail;
  call = "vkWaitForFences";
  if ((r = f->vkWaitForFences(vk->dev, 1, &vk->fence, VK_TRUE, UINT64_MAX)) != VK_SUCCESS)
    goto fail;
  gk__vkc_ok(vk);
  return GK_OK;
fail:
  return gk__vkc_fail(vk, GK_EDRIVER, "dispatch of '%s' on '%s': %s failed: %s", e->name,
                 vk->desc.name, call, gk__vk_result_name(r));
}

/* One dispatch of entry e of md, arguments checked against the module. */
static int dispatch(vkmod *md, const char *entry, gk_vk_buffer *const *buffers, size_t nbuffers,
                    const void *push, size_t push_size, const uint32_t groups[3]) {
  gk_vk *vk = md->vk;
  vkentry *e = find_entry(md, entry);
  if (!e) return gk__vkc_fail(vk, GK_ENOSYMBOL, "gk_vk_dispatch: the module has no entry '%s'", entry);
  if (nbuffers != (size_t)md->info.nbindings || (nbuffers && !buffers))
    return gk__vkc_fail(vk, GK_EINVAL, "gk_vk_dispatch: '%s' binds %d buffers; %zu given", entry,
                   md->info.nbindings, nbuffers);
  if (push_size != md->info.push_size || (push_size && !push))
    return gk__vkc_fail(vk, GK_EINVAL,
                   "gk_vk_dispatch: '%s' takes %u bytes of push constants; %zu given", entry,
                   md->info.push_size, push_size);
  for (size_t i = 0; i < nbuffers; i++)
    if (!buffers[i] || buffers[i]->vk != vk)
      return gk__vkc_fail(vk, GK_EINVAL, "gk_vk_dispatch: buffer %zu of '%s' is %s", i, entry,
                     buffers[i] ? "from another gk_vk" : "NULL");
  uint32_t g[3];
  for (int i = 0; i < 3; i++) {
    uint32_t lim = vk->phys.props.limits.maxComputeWorkGroupCount[i];
    g[i] = groups[i] == 0 ? 1 : groups[i] > lim ? lim : groups[i];
  }
  pthread_mutex_lock(&vk->mu);
  int rc = dispatch_locked(vk, md, e, buffers, push, g);
  pthread_mutex_unlock(&vk->mu);
  return rc;
}

GK_API int gk_vk_dispatch(const gk_module *m, const char *entry,
                          gk_vk_buffer *const *buffers, size_t nbuffers,
                          const void *push, size_t push_size,
                          const uint32_t groups[3]) {
  vkmod *md = mod_of(m);
  if (!md) return GK_EINVAL;
  if (!entry) return gk__vkc_fail(md->vk, GK_EINVAL, "gk_vk_dispatch: entry is NULL");
  gk_launch_dims d;
  if (!groups) {
    /* The row's groups, evaluated with the values the push constants
     * carry: the same launch gk_module_launch makes from tagged values. */
    const gk_device_limits *lim;
    gk_arg args[GK_LAUNCH_MAX_PARAMS];
    int rc;
    const gk_launch *L = gk__module_launch(m, entry, &lim, &rc);
    if (!L || (rc = gk__launch_args_from_scalars(L, push, push_size, args)) != GK_OK ||
        (rc = gk_launch_eval(L, lim, args, gk_launch_nparams(L), &d)) != GK_OK)
      return gk__vkc_fail(md->vk, rc, "gk_vk_dispatch: %s", gk_last_error());
    groups = d.grid;
  }
  return dispatch(md, entry, buffers, nbuffers, push, push_size, groups);
}

#endif /* GK_HAVE_VULKAN_H */
