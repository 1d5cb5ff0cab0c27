/*
 * rocm.c - the ROCm backend's driver side: finding AMD GPUs through the HSA
 * runtime (libhsa-runtime64, dlopen()ed, never linked) and loading code
 * objects into an HSA executable.
 *
 * Detection: hsa_init, the GPU agents in HSA's order, each agent's ISA name
 * ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", whose target ID becomes the
 * device's arch), hsa_shut_down. Loading: the same up to the agent, then
 * code object reader (from memory) -> executable -> load for the agent ->
 * freeze. A module keeps its own hsa_init reference (HSA counts them), its
 * executable and the image bytes, until it is unloaded.
 *
 * Launching (gk_module_launch): the kernarg segment in a slot of a ring the
 * module allocates from the agent's kernarg region, an AQL kernel dispatch
 * packet on the caller's queue or one the module creates, header stored
 * last, doorbell rung.
 *
 * On a machine without an AMD GPU, hsa_init itself fails (ROCr 5.x returns
 * HSA_STATUS_ERROR_OUT_OF_RESOURCES when /dev/kfd is absent): that is the
 * ordinary "no ROCm device" answer, not an error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gk_internal.h"
#include "rocm_hsa.h"

/* The most GPU agents one process looks at; more are not reachable by
 * index (a machine with more than 64 GPUs in one process is not a case). */
#define MAX_AGENTS 64

static const char *const HSA_NAMES[] = {"libhsa-runtime64.so.1",
                                        "libhsa-runtime64.so", NULL};

/* The HSA entry points, resolved once per use into a table the caller
 * holds (no globals: a test's resolver and the real library never mix). */
typedef struct hsa {
  gk__driver drv;
  int inited; /* this table holds one hsa_init reference */
#define GK__HSA_FIELD(name, ret, params) ret(*name) params;
  GK__HSA_FUNCS(GK__HSA_FIELD)
#undef GK__HSA_FIELD
} hsa;

/* "HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)": the name part of
 * hsa_status_string's sentence, which is enough to search for. */
static const char *status_text(const hsa *h, gk__hsa_status s, char *buf,
                               size_t size) {
  const char *t = NULL;
  if (!h->hsa_status_string || h->hsa_status_string(s, &t) != 0 || !t)
    t = "unknown HSA status";
  snprintf(buf, size, "%.*s (0x%x)", (int)strcspn(t, ":"), t, s);
  return buf;
}

static void hsa_close(hsa *h) {
  if (h->inited && h->hsa_shut_down) h->hsa_shut_down();
  gk__driver_close(&h->drv);
  memset(h, 0, sizeof *h);
}

/* Opens the runtime (or the test's resolver), resolves every entry point
 * and calls hsa_init. GK_OK, or GK_ENODEVICE with the reason in why. */
static int hsa_open(hsa *h, char *why, size_t size) {
  memset(h, 0, sizeof *h);
  int rc = gk__driver_open(GK_BACKEND_ROCM, HSA_NAMES, &h->drv, why, size);
  if (rc != GK_OK) return rc;
  if (h->drv.dl) {
    /* ROCr starts threads and registers handlers; it is not written to be
     * unloaded and loaded again within a process. Pin it (RTLD_NODELETE
     * on the already loaded object) so our dlclose only drops a count. */
    for (const char *const *n = HSA_NAMES; *n; n++) {
      void *pin = dlopen(*n, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
      if (pin) {
        dlclose(pin);
        break;
      }
    }
  }
#define GK__HSA_RESOLVE(name, ret, params)                                    \
  if (!(h->name = (ret(*) params)gk__driver_sym(&h->drv, #name))) {           \
    gk__say(why, size, "%s lacks %s (ROCm older than 3.5?)", HSA_NAMES[0],        \
        #name);                                                               \
    hsa_close(h);                                                             \
    return GK_ENODEVICE;                                                      \
  }
  GK__HSA_FUNCS(GK__HSA_RESOLVE)
#undef GK__HSA_RESOLVE
  gk__hsa_status s = h->hsa_init();
  if (s != GK__HSA_STATUS_SUCCESS) {
    char st[160];
    /* Without the kernel driver's device node there is nothing to find;
     * say so, as that is what the user can act on. */
    int kfd = h->drv.dl && access("/dev/kfd", R_OK | W_OK) != 0;
    gk__say(why, size, "no ROCm device: hsa_init failed with %s%s",
        status_text(h, s, st, sizeof st),
        kfd ? "; /dev/kfd is not accessible (no AMD GPU, amdgpu driver not "
              "loaded, or no permission)"
            : "");
    hsa_close(h);
    return GK_ENODEVICE;
  }
  h->inited = 1;
  return GK_OK;
}

typedef struct agent_list {
  const hsa *h;
  gk__hsa_agent a[MAX_AGENTS];
  int n;
} agent_list;

static gk__hsa_status on_agent(gk__hsa_agent agent, void *data) {
  agent_list *l = data;
  unsigned type = 0; /* hsa_device_type_t */
  if (l->h->hsa_agent_get_info(agent, GK__HSA_AGENT_INFO_DEVICE, &type) ==
          GK__HSA_STATUS_SUCCESS &&
      type == GK__HSA_DEVICE_TYPE_GPU && l->n < MAX_AGENTS)
    l->a[l->n++] = agent;
  return GK__HSA_STATUS_SUCCESS;
}

static gk__hsa_status on_isa(gk__hsa_isa isa, void *data) {
  /* The first ISA is the agent's own; ROCr reports exactly one. */
  *(gk__hsa_isa *)data = isa;
  return GK__HSA_STATUS_INFO_BREAK;
}

/* GPU agent `index` and its target ID ("gfx90a:sramecc+:xnack-") into arch.
 * GK_OK, GK_ENODEVICE (no such agent) or GK_EDRIVER, with why. */
static int find_agent(const hsa *h, int index, gk__hsa_agent *out, char *arch,
                      size_t arch_size, char *why, size_t size) {
  agent_list l = {.h = h};
  char st[160];
  gk__hsa_status s = h->hsa_iterate_agents(on_agent, &l);
  if (s != GK__HSA_STATUS_SUCCESS) {
    gk__say(why, size, "hsa_iterate_agents failed with %s",
        status_text(h, s, st, sizeof st));
    return GK_EDRIVER;
  }
  if (index < 0 || index >= l.n) {
    if (l.n == 0)
      gk__say(why, size, "no ROCm device: HSA found no GPU agent");
    else
      gk__say(why, size, "no ROCm device %d: HSA found %d GPU agent%s", index, l.n,
          l.n == 1 ? "" : "s");
    return GK_ENODEVICE;
  }
  gk__hsa_isa isa = {0};
  s = h->hsa_agent_iterate_isas(l.a[index], on_isa, &isa);
  if ((s != GK__HSA_STATUS_SUCCESS && s != GK__HSA_STATUS_INFO_BREAK) ||
      !isa.handle) {
    gk__say(why, size, "hsa_agent_iterate_isas found no ISA for GPU %d (%s)", index,
        status_text(h, s, st, sizeof st));
    return GK_EDRIVER;
  }
  uint32_t len = 0;
  char name[256];
  /* The name attribute writes NAME_LENGTH bytes (a NUL may or may not be
   * among them): ask the length first so the buffer is never overrun. */
  s = h->hsa_isa_get_info_alt(isa, GK__HSA_ISA_INFO_NAME_LENGTH, &len);
  if (s == GK__HSA_STATUS_SUCCESS && len > 0 && len < sizeof name) {
    memset(name, 0, sizeof name);
    s = h->hsa_isa_get_info_alt(isa, GK__HSA_ISA_INFO_NAME, name);
  }
  gk__amd_target t;
  char text[160];
  if (s != GK__HSA_STATUS_SUCCESS || len == 0 || len >= sizeof name) {
    gk__say(why, size, "cannot read the ISA name of GPU %d (length %u, %s)", index,
        (unsigned)len, status_text(h, s, st, sizeof st));
    return GK_EDRIVER;
  }
  name[len < sizeof name ? len : sizeof name - 1] = '\0';
  if (!gk__amd_parse(name, &t, text, sizeof text)) {
    gk__say(why, size, "GPU %d reports ISA '%s': %s", index, name, text);
    return GK_EDRIVER;
  }
  /* Keep the target ID, without the "amdgcn-amd-amdhsa--" triple. */
  const char *id = strstr(name, t.proc);
  if (strlen(id) >= arch_size) {
    gk__say(why, size, "GPU %d reports a too long ISA name '%s'", index, name);
    return GK_EDRIVER;
  }
  memcpy(arch, id, strlen(id) + 1);
  *out = l.a[index];
  return GK_OK;
}

/* The marketing name when the runtime has one ("AMD Instinct MI210"),
 * else the agent's name ("gfx90a"); "" when neither answers. */
static void agent_name(const hsa *h, gk__hsa_agent agent, char name[GK__HSA_NAME_SIZE + 1]) {
  memset(name, 0, GK__HSA_NAME_SIZE + 1);
  if (h->hsa_agent_get_info(agent, GK__HSA_AMD_AGENT_INFO_PRODUCT_NAME, name) !=
          GK__HSA_STATUS_SUCCESS ||
      !name[0])
    h->hsa_agent_get_info(agent, GK__HSA_AGENT_INFO_NAME, name);
  name[GK__HSA_NAME_SIZE] = '\0';
}

int gk__rocm_detect(gk_device *out, int asked, char *why, size_t why_size) {
  hsa h;
  gk__hsa_agent agent;
  gk_device d;
  memset(&d, 0, sizeof d);
  int rc = hsa_open(&h, why, why_size);
  if (rc != GK_OK) return rc;
  rc = find_agent(&h, 0, &agent, d.arch, sizeof d.arch, why, why_size);
  if (rc == GK_OK) {
    char name[GK__HSA_NAME_SIZE + 1];
    agent_name(&h, agent, name);
    d.backend = GK_BACKEND_ROCM;
    d.index = 0;
    gk__strlcpy(d.name, name[0] ? name : d.arch, sizeof d.name);
    *out = d;
  } else if (rc == GK_EDRIVER) {
    rc = GK_ENODEVICE; /* detection answers "is there a device", nothing else */
  }
  hsa_close(&h);
  return rc;
}

/* ---- modules ------------------------------------------------------------- */

/* Kernarg segments: KERNARG_SLOTS slots of KERNARG_SLOT bytes each, one
 * per launch in turn. A launch's segment must stay untouched until its
 * kernel has finished, so a slot is reused KERNARG_SLOTS launches of the
 * module later (gk.h states the rule; wait_slot checks what it can). 1 KiB
 * holds GK_LAUNCH_MAX_PARAMS explicit arguments and the 256 bytes of
 * hidden arguments of code object v5 with room to spare. */
#define KERNARG_SLOTS 64
#define KERNARG_SLOT 1024u
/* Packets of the queue a module creates when the caller passes none. */
#define OWN_QUEUE_SIZE 1024u

typedef struct kernarg_use {
  const gk__hsa_queue *queue; /* NULL: the slot was never used */
  uint64_t packet;
} kernarg_use;

typedef struct rocm_module {
  hsa h;
  gk__hsa_agent agent;
  gk__hsa_code_object_reader reader;
  gk__hsa_executable exe;
  int have_reader, have_exe;
  void *bytes; /* the code object: must outlive the reader (hsa.h) */
  unsigned abiversion; /* EI_ABIVERSION: code object version - 2 */
  /* Launch state, made at the first launch, under `lock`. */
  pthread_mutex_t lock;
  gk__hsa_queue *queue; /* libgk's own, NULL until needed */
  unsigned char *kernarg; /* KERNARG_SLOTS * KERNARG_SLOT, kernarg region */
  kernarg_use used[KERNARG_SLOTS];
  unsigned next_slot;
} rocm_module;

static void rocm_unload(void *state) {
  rocm_module *rm = state;
  if (!rm) return;
  if (rm->queue) rm->h.hsa_queue_destroy(rm->queue);
  if (rm->kernarg) rm->h.hsa_memory_free(rm->kernarg);
  pthread_mutex_destroy(&rm->lock);
  if (rm->have_exe) rm->h.hsa_executable_destroy(rm->exe);
  if (rm->have_reader) rm->h.hsa_code_object_reader_destroy(rm->reader);
  hsa_close(&rm->h);
  free(rm->bytes);
  free(rm);
}

static int check_shared(gk_archive *ar, const rocm_module *rm, const gk_image_info *row,
                        const gk__entries *e, int index, const char *arch);

static int rocm_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                     const gk__entries *e, void *bytes, size_t size, void **state) {
  char why[512], st[160];
  rocm_module *rm = calloc(1, sizeof *rm);
  if (!rm) {
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  }
  rm->bytes = bytes;
  pthread_mutex_init(&rm->lock, NULL);
  rm->abiversion = size > 8 ? ((const unsigned char *)bytes)[8] : 0;
  int rc = hsa_open(&rm->h, why, sizeof why);
  if (rc != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s: %s", GK__WHAT(row), why);
    goto fail;
  }
  const hsa *h = &rm->h;
  gk_device here;
  memset(&here, 0, sizeof here);
  here.backend = GK_BACKEND_ROCM;
  rc = find_agent(h, dev->index, &rm->agent, here.arch, sizeof here.arch, why,
                  sizeof why);
  if (rc != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s for '%s': %s", GK__WHAT(row), GK__DEVICE(dev),
                  why);
    goto fail;
  }
  /* The device may come from a spec ("rocm:gfx90a:xnack-"): the image must
   * fit the GPU that is really there, by the same rule that chose it. */
  long score;
  if (!gk__rocm_fits(&here, row, 0, &score, why, sizeof why)) {
    rc = gk__fail(ar, GK_ENODEVICE,
                  "cannot load image %s: it was chosen for '%s', but ROCm "
                  "device %d here is %s (%s)",
                  GK__WHAT(row), GK__DEVICE(dev), dev->index, here.arch, why);
    goto fail;
  }

  gk__hsa_status s;
  const char *step;
  step = "hsa_code_object_reader_create_from_memory";
  s = h->hsa_code_object_reader_create_from_memory(bytes, size, &rm->reader);
  if (s != GK__HSA_STATUS_SUCCESS) goto driver_fail;
  rm->have_reader = 1;
  step = "hsa_executable_create_alt";
  s = h->hsa_executable_create_alt(GK__HSA_PROFILE_FULL,
                                   GK__HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                   NULL, &rm->exe);
  if (s != GK__HSA_STATUS_SUCCESS) goto driver_fail;
  rm->have_exe = 1;
  step = "hsa_executable_load_agent_code_object";
  s = h->hsa_executable_load_agent_code_object(rm->exe, rm->agent, rm->reader,
                                               NULL, NULL);
  if (s != GK__HSA_STATUS_SUCCESS) goto driver_fail;
  step = "hsa_executable_freeze";
  s = h->hsa_executable_freeze(rm->exe, NULL);
  if (s != GK__HSA_STATUS_SUCCESS) goto driver_fail;
  if ((rc = check_shared(ar, rm, row, e, dev->index, here.arch)) != GK_OK) goto fail;
  *state = rm;
  return GK_OK;

driver_fail:
  rc = gk__fail(ar, GK_EDRIVER, "cannot load image %s on ROCm device %d (%s): %s failed with %s",
                GK__WHAT(row), dev->index, here.arch, step, status_text(h, s, st, sizeof st));
fail:
  rocm_unload(rm);
  return rc;
}

/* A kernel's symbol: code objects v3+ name the kernel descriptor
 * "NAME.kd"; the plain name is accepted too. */
static int find_kernel(const rocm_module *rm, const char *name,
                       gk__hsa_executable_symbol *sym) {
  char kd[256];
  size_t n = strlen(name);
  if (n >= 3 && strcmp(name + n - 3, ".kd") == 0)
    snprintf(kd, sizeof kd, "%s", name);
  else if (snprintf(kd, sizeof kd, "%s.kd", name) >= (int)sizeof kd)
    return 0;
  return rm->h.hsa_executable_get_symbol_by_name(rm->exe, kd, &rm->agent, sym) ==
         GK__HSA_STATUS_SUCCESS;
}

static int rocm_kernel_info(void *state, const char *name,
                            gk_kernel_info *out) {
  const rocm_module *rm = state;
  gk__hsa_executable_symbol sym;
  gk_kernel_info k;
  memset(&k, 0, sizeof k);
  if (!find_kernel(rm, name, &sym)) return GK_ENOSYMBOL;
  const struct {
    unsigned attr;
    void *dst;
  } q[] = {
      {GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k.object},
      {GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &k.kernarg_size},
      {GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT, &k.kernarg_align},
      {GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &k.group_segment_size},
      {GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &k.private_segment_size},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
    if (rm->h.hsa_executable_symbol_get_info(sym, q[i].attr, q[i].dst) !=
        GK__HSA_STATUS_SUCCESS)
      return GK_EDRIVER;
  *out = k;
  return GK_OK;
}

static void *rocm_symbol(void *state, const char *name) {
  gk_kernel_info k;
  if (rocm_kernel_info(state, name, &k) != GK_OK) return NULL;
  return (void *)(uintptr_t)k.object;
}

/* ---- launches ------------------------------------------------------------ */

/* The agent's first region of segment `segment`: a global one must also
 * carry the kernarg flag (the kernarg ring's), the group one is the LDS. */
typedef struct region_pick {
  const hsa *h;
  unsigned segment;
  gk__hsa_region found;
} region_pick;

static gk__hsa_status on_region(gk__hsa_region r, void *data) {
  region_pick *p = data;
  unsigned segment = ~0u;
  uint32_t flags = 0;
  if (p->h->hsa_region_get_info(r, GK__HSA_REGION_INFO_SEGMENT, &segment) !=
          GK__HSA_STATUS_SUCCESS ||
      segment != p->segment)
    return GK__HSA_STATUS_SUCCESS;
  if (segment == GK__HSA_REGION_SEGMENT_GLOBAL &&
      (p->h->hsa_region_get_info(r, GK__HSA_REGION_INFO_GLOBAL_FLAGS, &flags) !=
           GK__HSA_STATUS_SUCCESS ||
       !(flags & GK__HSA_REGION_GLOBAL_FLAG_KERNARG)))
    return GK__HSA_STATUS_SUCCESS;
  p->found = r;
  return GK__HSA_STATUS_INFO_BREAK;
}

/* Region `segment` of rm's agent into *out; SUCCESS when found, else the
 * iteration's status (SUCCESS with no region: out stays 0). */
static gk__hsa_status find_region(const rocm_module *rm, unsigned segment,
                                  gk__hsa_region *out) {
  region_pick p = {.h = &rm->h, .segment = segment};
  gk__hsa_status s = rm->h.hsa_agent_iterate_regions(rm->agent, on_region, &p);
  *out = p.found;
  return s == GK__HSA_STATUS_INFO_BREAK ? GK__HSA_STATUS_SUCCESS : s;
}

/* The group segment (LDS) a launch asks for, the kernel descriptor's
 * static part plus the row's dynamic `shared`, must fit the agent's: the
 * size of its group region, what HIP reports as sharedMemPerBlock (ROCr
 * answers 0 for that region's ALLOC_MAX_SIZE). Checked at load for each
 * entry that has dynamic shared memory, so that a row for a bigger GPU is
 * refused by name rather than as a dispatch the packet processor fails. */
static int check_shared(gk_archive *ar, const rocm_module *rm, const gk_image_info *row,
                        const gk__entries *e, int index, const char *arch) {
  char st[160], name[GK__HSA_NAME_SIZE + 1], device[200];
  size_t limit = 0;
  for (int i = 0; i < e->n; i++) {
    gk_kernel_info k;
    int rc;
    if (e->shared[i] == 0) continue;
    if ((rc = rocm_kernel_info((void *)rm, e->name[i], &k)) != GK_OK)
      return gk__fail(ar, rc, "cannot load image %s: kernel '%s': %s", GK__WHAT(row),
                      e->name[i], rc == GK_ENOSYMBOL ? "the code object has no descriptor of it"
                                                     : "its descriptor cannot be read");
    if (!limit) {
      gk__hsa_region group;
      gk__hsa_status s = find_region(rm, GK__HSA_REGION_SEGMENT_GROUP, &group);
      if (s == GK__HSA_STATUS_SUCCESS && group.handle)
        s = rm->h.hsa_region_get_info(group, GK__HSA_REGION_INFO_SIZE, &limit);
      if (s != GK__HSA_STATUS_SUCCESS || !group.handle || !limit)
        return gk__fail(ar, GK_EDRIVER, "cannot load image %s on ROCm device %d (%s): the GPU "
                        "agent reports no group segment size (%s)", GK__WHAT(row), index, arch,
                        status_text(&rm->h, s, st, sizeof st));
    }
    if ((uint64_t)k.group_segment_size + e->shared[i] > limit) {
      agent_name(&rm->h, rm->agent, name);
      snprintf(device, sizeof device, "ROCm device %d (%s%s%s)", index, name, *name ? ", " : "",
               arch);
      return gk__shared_refused(ar, row, e->name[i], k.group_segment_size, e->shared[i], limit,
                                device);
    }
  }
  return GK_OK;
}

/* The kernarg ring, and the module's queue when the caller brings none.
 * Under rm->lock. GK_OK, or a status with gk_last_error() set. */
static int launch_setup(rocm_module *rm, const gk_launch *L, int own_queue) {
  const hsa *h = &rm->h;
  char st[160];
  gk__hsa_status s;
  if (!rm->kernarg) {
    gk__hsa_region kernarg;
    s = find_region(rm, GK__HSA_REGION_SEGMENT_GLOBAL, &kernarg);
    if (s != GK__HSA_STATUS_SUCCESS || !kernarg.handle)
      return gk__set_last_error(GK_EDRIVER, "%s: the GPU agent has no kernarg memory region "
                                "(hsa_agent_iterate_regions: %s)",
                                gk__launch_what(L), status_text(h, s, st, sizeof st));
    void *mem = NULL;
    s = h->hsa_memory_allocate(kernarg, (size_t)KERNARG_SLOTS * KERNARG_SLOT, &mem);
    if (s != GK__HSA_STATUS_SUCCESS || !mem)
      return gk__set_last_error(GK_EDRIVER, "%s: hsa_memory_allocate of %u bytes of kernarg "
                                "memory failed with %s", gk__launch_what(L),
                                KERNARG_SLOTS * KERNARG_SLOT, status_text(h, s, st, sizeof st));
    rm->kernarg = mem;
  }
  if (own_queue && !rm->queue) {
    uint32_t max = 0;
    if (h->hsa_agent_get_info(rm->agent, GK__HSA_AGENT_INFO_QUEUE_MAX_SIZE, &max) !=
            GK__HSA_STATUS_SUCCESS ||
        max == 0)
      max = OWN_QUEUE_SIZE;
    /* UINT32_MAX segment sizes: "whatever a kernel needs" (hsa.h). */
    s = h->hsa_queue_create(rm->agent, max < OWN_QUEUE_SIZE ? max : OWN_QUEUE_SIZE,
                            GK__HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX,
                            &rm->queue);
    if (s != GK__HSA_STATUS_SUCCESS || !rm->queue) {
      rm->queue = NULL;
      return gk__set_last_error(GK_EDRIVER, "%s: hsa_queue_create failed with %s",
                                gk__launch_what(L), status_text(h, s, st, sizeof st));
    }
  }
  return GK_OK;
}

/* Waits until slot u's last launch no longer needs its segment, as far as
 * libgk can see. On the module's own queue every packet carries the
 * barrier bit, so once the packet processor has taken the packet after
 * it, that launch has finished; when it was the last one written, its own
 * packet being taken is all there is to wait for. A caller's queue is not
 * read at all (it may be gone): gk.h makes finishing the caller's part. */
static void wait_slot(const rocm_module *rm, const kernarg_use *u) {
  if (!u->queue || u->queue != rm->queue) return;
  const hsa *h = &rm->h;
  /* The write index is one past the last packet reserved. */
  uint64_t until = u->packet + 1;
  if (h->hsa_queue_add_write_index_screlease(u->queue, 0) > u->packet + 1) until++;
  while (h->hsa_queue_load_read_index_scacquire(u->queue) < until) sched_yield();
}

/* The explicit arguments in signature order, each at its natural
 * alignment (the AMDGPU kernel ABI for pointers, 64- and 32-bit scalars);
 * their end in *end. */
static void put_args(unsigned char *seg, const gk_arg *args, size_t nargs, uint32_t *end) {
  uint32_t off = 0;
  for (size_t i = 0; i < nargs; i++) {
    uint32_t n = args[i].type == GK_ARG_I32 || args[i].type == GK_ARG_F32 ? 4 : 8;
    off = (off + n - 1) & ~(n - 1);
    memcpy(seg + off, &args[i].v, n);
    off += n;
  }
  *end = off;
}

/* Code object v5's hidden arguments, which start at the explicit ones' end
 * rounded up to 8 (LLVM's implicit-argument pointer): HIP's blockDim and
 * gridDim read them there rather than from the packet. libgk fills the
 * block counts, group sizes, remainders (0: the grid is whole groups) and
 * grid dimensions; the rest (global offsets, heap, printf, hostcall and
 * queue pointers) stays 0, which no kernel of the set reads. Older code
 * objects read the packet, and their hidden arguments stay 0 too. */
static void put_hidden_v5(unsigned char *seg, uint32_t at, uint32_t size,
                          const gk_launch_dims *d, uint16_t dims) {
  at = (at + 7) & ~7u;
  if (size < at + 66) return; /* the kernel takes no hidden arguments */
  for (int k = 0; k < 3; k++) {
    uint32_t groups = d->grid[k];
    uint16_t block = (uint16_t)d->block[k], zero = 0;
    memcpy(seg + at + 4 * k, &groups, 4);
    memcpy(seg + at + 12 + 2 * k, &block, 2);
    memcpy(seg + at + 18 + 2 * k, &zero, 2);
  }
  memcpy(seg + at + 64, &dims, 2);
}

static int rocm_launch(void *state, const char *name, const gk_launch *L,
                       const gk_launch_dims *d, const gk_arg *args, size_t nargs,
                       const gk_launch_options *opts) {
  rocm_module *rm = state;
  const hsa *h = &rm->h;
  gk_kernel_info k;
  int rc = rocm_kernel_info(rm, name, &k);
  if (rc != GK_OK)
    return gk__set_last_error(rc, "%s: %s", gk__launch_what(L),
                              rc == GK_ENOSYMBOL ? "the code object has no such kernel"
                                                 : "the kernel descriptor cannot be read");
  if (k.kernarg_size > KERNARG_SLOT || (k.kernarg_align && KERNARG_SLOT % k.kernarg_align))
    return gk__set_last_error(GK_ECORRUPT, "%s: a kernarg segment of %u bytes aligned to %u "
                              "does not fit libgk's %u-byte slots", gk__launch_what(L),
                              k.kernarg_size, k.kernarg_align, KERNARG_SLOT);
  for (int i = 0; i < 3; i++)
    if (d->block[i] > 0xffff)
      return gk__set_last_error(GK_ECORRUPT, "%s: a workgroup of %u work-items on axis %d",
                                gk__launch_what(L), d->block[i], i);
  unsigned char seg[KERNARG_SLOT];
  uint32_t end;
  memset(seg, 0, sizeof seg);
  put_args(seg, args, nargs, &end);
  if (end > k.kernarg_size)
    return gk__set_last_error(GK_ECORRUPT, "%s: the row's parameters take %u bytes, the "
                              "kernel descriptor's kernarg segment only %u",
                              gk__launch_what(L), end, k.kernarg_size);
  uint16_t dims = d->grid[2] > 1 || d->block[2] > 1   ? 3
                  : d->grid[1] > 1 || d->block[1] > 1 ? 2
                                                      : 1;
  if (rm->abiversion >= 3) put_hidden_v5(seg, end, k.kernarg_size, d, dims);

  gk__hsa_queue *q = opts ? opts->stream : NULL;
  pthread_mutex_lock(&rm->lock);
  if ((rc = launch_setup(rm, L, !q)) != GK_OK) goto out;
  if (!q) q = rm->queue;
  kernarg_use *u = &rm->used[rm->next_slot];
  unsigned char *ka = rm->kernarg + (size_t)rm->next_slot * KERNARG_SLOT;
  rm->next_slot = (rm->next_slot + 1) % KERNARG_SLOTS;
  wait_slot(rm, u);
  memcpy(ka, seg, k.kernarg_size);

  /* Reserve a packet, wait for its slot in the ring to be free, fill all
   * but the first 32 bits, then publish them with one release store. */
  uint64_t id = h->hsa_queue_add_write_index_screlease(q, 1);
  while (id - h->hsa_queue_load_read_index_scacquire(q) >= q->size) sched_yield();
  gk__hsa_dispatch_packet *p = (gk__hsa_dispatch_packet *)q->base_address + (id & (q->size - 1));
  p->workgroup_size_x = (uint16_t)d->block[0];
  p->workgroup_size_y = (uint16_t)d->block[1];
  p->workgroup_size_z = (uint16_t)d->block[2];
  p->reserved0 = 0;
  /* HSA counts the grid in work-items; gk_launch_eval kept it in 32 bits. */
  p->grid_size_x = d->grid[0] * d->block[0];
  p->grid_size_y = d->grid[1] * d->block[1];
  p->grid_size_z = d->grid[2] * d->block[2];
  p->private_segment_size = k.private_segment_size;
  p->group_segment_size = k.group_segment_size + d->shared;
  p->kernel_object = k.object;
  p->kernarg_address = ka;
  p->reserved2 = 0;
  p->completion_signal = opts ? opts->signal : 0;
  uint16_t header = (uint16_t)(GK__HSA_PACKET_TYPE_KERNEL_DISPATCH |
                               1u << GK__HSA_PACKET_HEADER_BARRIER |
                               GK__HSA_FENCE_SCOPE_SYSTEM << GK__HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE |
                               GK__HSA_FENCE_SCOPE_SYSTEM << GK__HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE);
  uint16_t setup = (uint16_t)(dims << GK__HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
  __atomic_store_n((uint32_t *)p, header | (uint32_t)setup << 16, __ATOMIC_RELEASE);
  h->hsa_signal_store_screlease(q->doorbell_signal, (int64_t)id);
  u->queue = q;
  u->packet = id;
  gk__clear_last_error();
out:
  pthread_mutex_unlock(&rm->lock);
  return rc;
}

const gk__ops gk__rocm_ops = {
    .load = rocm_load, .symbol = rocm_symbol, .kernel_info = rocm_kernel_info,
    .unload = rocm_unload, .launch = rocm_launch, .launches = 1};
