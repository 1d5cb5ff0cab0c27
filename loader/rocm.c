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
 * On a machine without an AMD GPU, hsa_init itself fails (ROCr 5.x returns
 * HSA_STATUS_ERROR_OUT_OF_RESOURCES when /dev/kfd is absent): that is the
 * ordinary "no ROCm device" answer, not an error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
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

int gk__rocm_detect(gk_device *out, char *why, size_t why_size) {
  hsa h;
  gk__hsa_agent agent;
  gk_device d;
  memset(&d, 0, sizeof d);
  int rc = hsa_open(&h, why, why_size);
  if (rc != GK_OK) return rc;
  rc = find_agent(&h, 0, &agent, d.arch, sizeof d.arch, why, why_size);
  if (rc == GK_OK) {
    char name[GK__HSA_NAME_SIZE + 1] = "";
    /* The marketing name when the runtime has one ("AMD Instinct MI210"),
     * else the agent's name ("gfx90a"). */
    if (h.hsa_agent_get_info(agent, GK__HSA_AMD_AGENT_INFO_PRODUCT_NAME, name) !=
            GK__HSA_STATUS_SUCCESS ||
        !name[0])
      h.hsa_agent_get_info(agent, GK__HSA_AGENT_INFO_NAME, name);
    name[GK__HSA_NAME_SIZE] = '\0';
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

typedef struct rocm_module {
  hsa h;
  gk__hsa_agent agent;
  gk__hsa_code_object_reader reader;
  gk__hsa_executable exe;
  int have_reader, have_exe;
  void *bytes; /* the code object: must outlive the reader (hsa.h) */
} rocm_module;

static void rocm_unload(void *state) {
  rocm_module *rm = state;
  if (!rm) return;
  if (rm->have_exe) rm->h.hsa_executable_destroy(rm->exe);
  if (rm->have_reader) rm->h.hsa_code_object_reader_destroy(rm->reader);
  hsa_close(&rm->h);
  free(rm->bytes);
  free(rm);
}

static int rocm_load(gk_archive *ar, const gk_device *dev,
                     const gk_image_info *row, void *bytes, size_t size,
                     void **state) {
  char what[256], why[512], st[160], devtext[160];
  gk__row_describe(row, what, sizeof what);
  gk_device_format(dev, devtext, sizeof devtext);
  rocm_module *rm = calloc(1, sizeof *rm);
  if (!rm) {
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", what);
  }
  rm->bytes = bytes;
  int rc = hsa_open(&rm->h, why, sizeof why);
  if (rc != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s: %s", what, why);
    goto fail;
  }
  const hsa *h = &rm->h;
  gk_device here;
  memset(&here, 0, sizeof here);
  here.backend = GK_BACKEND_ROCM;
  rc = find_agent(h, dev->index, &rm->agent, here.arch, sizeof here.arch, why,
                  sizeof why);
  if (rc != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s for '%s': %s", what, devtext,
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
                  what, devtext, dev->index, here.arch, why);
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
  *state = rm;
  return GK_OK;

driver_fail:
  rc = gk__fail(ar, GK_EDRIVER, "cannot load image %s on ROCm device %d (%s): %s failed with %s",
                what, dev->index, here.arch, step, status_text(h, s, st, sizeof st));
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

const gk__gpu_ops gk__rocm_ops = {GK_BACKEND_ROCM, rocm_load, rocm_symbol,
                                  rocm_kernel_info, rocm_unload, NULL, NULL};
