/*
 * cuda.c - the CUDA backend's driver side: finding NVIDIA GPUs through the
 * driver API (libcuda, dlopen()ed, never linked; no toolkit needed) and
 * loading cubins or PTX into the device's primary context.
 *
 * Entry points: dlopen("libcuda.so.1"), then "libcuda.so" (volk's order),
 * or a test's resolver. Every function is asked of cuGetProcAddress_v2
 * (CUDA 12.0+; cuGetProcAddress of 11.3 without it) for the exact ABI
 * version cuda_drv.h declares, so a newer driver's changed entry points
 * never reach an older prototype; a driver without cuGetProcAddress, or a
 * resolver, answers by exported name (cuCtxPushCurrent_v2, ...).
 *
 * Detection: cuDriverGetVersion, cuInit, cuDeviceGetCount, device 0's
 * compute capability (attributes 75/76) and name. The toolkit's stub
 * libcuda (lib64/stubs) answers cuInit with CUDA_ERROR_STUB_LIBRARY (34):
 * that is "no CUDA device", with the reason, as is a machine without a
 * driver or without a GPU.
 *
 * Loading: the device's primary context (cuDevicePrimaryCtxRetain), made
 * current for the load only (push/pop); cuLibraryLoadData (12.0+) with
 * cuLibraryGetKernel + cuKernelGetFunction, else cuModuleLoadDataEx with
 * cuModuleGetFunction. Every entry point the row lists is resolved at load,
 * so a module either has all its kernels or does not load; one whose
 * launch needs more than 48 KB of shared memory is opted in there, or
 * refused when the device cannot give it. PTX gets a JIT error log, quoted
 * in the message when the driver cannot compile it.
 *
 * libcuda starts threads in cuInit and is not written to be unloaded: once
 * opened it is pinned (RTLD_NODELETE), so closing our handle only drops a
 * count.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_drv.h"
#include "gk_internal.h"

static const char *const CUDA_NAMES[] = {"libcuda.so.1", "libcuda.so", NULL};

/* The driver's entry points, resolved per use into a table the caller holds
 * (no globals: a test's resolver and the real library never mix). */
typedef struct cu {
  gk__driver drv;
  int version; /* cuDriverGetVersion: 13000 for 13.0 */
#define GK__CU_FIELD(name, dl, since, req, ret, params) ret(*name) params;
  GK__CU_FUNCS(GK__CU_FIELD)
#undef GK__CU_FIELD
} cu;

/* Names of the results libgk's messages meet most, for drivers (and the
 * stub) whose cuGetErrorName does not answer. */
static const char *known_name(gk__cu_result r) {
  switch (r) {
  case GK__CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case GK__CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case GK__CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case GK__CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
  case GK__CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case GK__CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
  case GK__CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
  case GK__CUDA_ERROR_NO_BINARY_FOR_GPU: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case GK__CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
  case GK__CUDA_ERROR_JIT_COMPILER_NOT_FOUND: return "CUDA_ERROR_JIT_COMPILER_NOT_FOUND";
  case GK__CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case GK__CUDA_ERROR_JIT_COMPILATION_DISABLED: return "CUDA_ERROR_JIT_COMPILATION_DISABLED";
  case GK__CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
  case GK__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case GK__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  case GK__CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
  default: return NULL;
  }
}

/* "CUDA_ERROR_NO_DEVICE (100)" */
static const char *result_text(const cu *c, gk__cu_result r, char *buf, size_t size) {
  const char *n = NULL;
  if (c->cuGetErrorName && c->cuGetErrorName(r, &n) != GK__CUDA_SUCCESS) n = NULL;
  if (!n) n = known_name(r);
  snprintf(buf, size, "%s (%d)", n ? n : "CUresult", r);
  return buf;
}

static void cu_close(cu *c) {
  gk__driver_close(&c->drv);
  memset(c, 0, sizeof *c);
}

/* One entry point: cuGetProcAddress for the ABI version `since`, else the
 * exported name. NULL when the driver has neither. */
static void *lookup(const cu *c, void *gpa2, void *gpa1, const char *name,
                    const char *dl_name, int since) {
  void *p = NULL;
  if (gpa2) {
    int status = -1;
    if (((gk__cu_get_proc_address_v2)gpa2)(name, &p, since,
                                           GK__CU_GET_PROC_ADDRESS_DEFAULT,
                                           &status) != GK__CUDA_SUCCESS ||
        status != GK__CU_GET_PROC_ADDRESS_SUCCESS)
      p = NULL;
  } else if (gpa1) {
    if (((gk__cu_get_proc_address_v1)gpa1)(name, &p, since,
                                           GK__CU_GET_PROC_ADDRESS_DEFAULT) !=
        GK__CUDA_SUCCESS)
      p = NULL;
  }
  return p ? p : gk__driver_sym(&c->drv, dl_name);
}

/* Where the opened libcuda lives, for messages ("" when unknown). */
static void library_path(const cu *c, char *buf, size_t size) {
  Dl_info info;
  buf[0] = '\0';
  if (c->drv.dl && c->cuInit && dladdr((void *)c->cuInit, &info) && info.dli_fname)
    snprintf(buf, size, "%s", info.dli_fname);
}

/* Opens the driver (or the test's resolver), resolves the entry points,
 * reads the driver version and calls cuInit. GK_OK, or GK_ENODEVICE with
 * the reason in why. */
static int cu_open(cu *c, char *why, size_t size) {
  char st[96], where[512];
  memset(c, 0, sizeof *c);
  int rc = gk__driver_open(GK_BACKEND_CUDA, CUDA_NAMES, &c->drv, why, size);
  if (rc != GK_OK) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", why ? why : "");
    gk__say(why, size, "no CUDA driver: %s", tmp);
    return rc;
  }
  if (c->drv.dl)
    for (const char *const *n = CUDA_NAMES; *n; n++) {
      void *pin = dlopen(*n, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
      if (pin) {
        dlclose(pin);
        break;
      }
    }
  void *gpa2 = gk__driver_sym(&c->drv, "cuGetProcAddress_v2");
  void *gpa1 = gpa2 ? NULL : gk__driver_sym(&c->drv, "cuGetProcAddress");
#define GK__CU_RESOLVE(name, dl, since, req, ret, params)                       \
  c->name = (ret(*) params)lookup(c, gpa2, gpa1, #name, dl, since);            \
  if (!c->name && req) {                                                       \
    gk__say(why, size, "no usable CUDA driver: libcuda lacks %s (a driver older "  \
                   "than CUDA %d.%d?)",                                        \
        dl, since / 1000, since % 1000 / 10);                                  \
    cu_close(c);                                                               \
    return GK_ENODEVICE;                                                       \
  }
  GK__CU_FUNCS(GK__CU_RESOLVE)
#undef GK__CU_RESOLVE
  library_path(c, where, sizeof where);
  gk__cu_result r = c->cuInit(0);
  if (r != GK__CUDA_SUCCESS) {
    if (r == GK__CUDA_ERROR_STUB_LIBRARY)
      gk__say(why, size,
          "no CUDA device: the libcuda found%s%s is the CUDA toolkit's stub, "
          "not a driver (cuInit: %s); install the NVIDIA driver",
          *where ? " at " : "", where, result_text(c, r, st, sizeof st));
    else if (r == GK__CUDA_ERROR_NO_DEVICE)
      gk__say(why, size, "no CUDA device: the driver sees no NVIDIA GPU (cuInit: %s)",
          result_text(c, r, st, sizeof st));
    else
      gk__say(why, size, "no CUDA device: cuInit failed with %s",
          result_text(c, r, st, sizeof st));
    cu_close(c);
    return GK_ENODEVICE;
  }
  /* 0 when the driver will not say: then no image is refused for it. */
  if (c->cuDriverGetVersion(&c->version) != GK__CUDA_SUCCESS || c->version < 0)
    c->version = 0;
  return GK_OK;
}

/* Device `index`: its handle and "sm_XY". GK_OK, GK_ENODEVICE (no such
 * device) or GK_EDRIVER, with why. */
static int find_device(const cu *c, int index, gk__cu_device *dev, char *arch,
                       size_t arch_size, char *why, size_t size) {
  char st[96];
  int count = 0, major = 0, minor = 0;
  gk__cu_result r = c->cuDeviceGetCount(&count);
  if (r != GK__CUDA_SUCCESS) {
    gk__say(why, size, "cuDeviceGetCount failed with %s", result_text(c, r, st, sizeof st));
    return GK_EDRIVER;
  }
  if (index < 0 || index >= count) {
    if (count == 0)
      gk__say(why, size, "no CUDA device: the driver reports no GPU");
    else
      gk__say(why, size, "no CUDA device %d: the driver reports %d", index, count);
    return GK_ENODEVICE;
  }
  if ((r = c->cuDeviceGet(dev, index)) != GK__CUDA_SUCCESS ||
      (r = c->cuDeviceGetAttribute(&major, GK__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   *dev)) != GK__CUDA_SUCCESS ||
      (r = c->cuDeviceGetAttribute(&minor, GK__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                   *dev)) != GK__CUDA_SUCCESS) {
    gk__say(why, size, "cannot read the compute capability of CUDA device %d: %s", index,
        result_text(c, r, st, sizeof st));
    return GK_EDRIVER;
  }
  if (major < 1 || major > 99 || minor < 0 || minor > 9) {
    gk__say(why, size, "CUDA device %d reports compute capability %d.%d", index, major, minor);
    return GK_EDRIVER;
  }
  snprintf(arch, arch_size, "sm_%d%d", major, minor);
  return GK_OK;
}

int gk__cuda_detect(gk_device *out, int asked, char *why, size_t why_size) {
  cu c;
  gk__cu_device dev;
  gk_device d;
  memset(&d, 0, sizeof d);
  int rc = cu_open(&c, why, why_size);
  if (rc != GK_OK) return rc;
  rc = find_device(&c, 0, &dev, d.arch, sizeof d.arch, why, why_size);
  if (rc == GK_OK) {
    char name[128] = "";
    if (c.cuDeviceGetName(name, (int)sizeof name, dev) != GK__CUDA_SUCCESS) name[0] = '\0';
    name[sizeof name - 1] = '\0';
    d.backend = GK_BACKEND_CUDA;
    d.index = 0;
    d.driver_version = c.version;
    gk__strlcpy(d.name, name[0] ? name : d.arch, sizeof d.name);
    *out = d;
  } else if (rc == GK_EDRIVER) {
    rc = GK_ENODEVICE; /* detection answers "is there a device", nothing else */
  }
  cu_close(&c);
  return rc;
}

/* ---- modules ------------------------------------------------------------- */

typedef struct cuda_module {
  cu c;
  gk__cu_device dev;
  int index;          /* the device's ordinal */
  gk__cu_context ctx; /* the primary context, retained */
  int have_ctx;
  gk__cu_library lib; /* one of lib and mod */
  gk__cu_module mod;
  gk__entries e;       /* the row's, each resolved to a function at load */
  gk__cu_function fns[GK__ENTRY_MAX];
} cuda_module;

static void cuda_unload(void *state) {
  cuda_module *cm = state;
  if (!cm) return;
  if (cm->have_ctx) {
    gk__cu_context popped;
    int pushed = cm->c.cuCtxPushCurrent(cm->ctx) == GK__CUDA_SUCCESS;
    if (cm->lib) cm->c.cuLibraryUnload(cm->lib);
    if (cm->mod) cm->c.cuModuleUnload(cm->mod);
    if (pushed) cm->c.cuCtxPopCurrent(&popped);
    cm->c.cuDevicePrimaryCtxRelease(cm->dev);
  }
  cu_close(&cm->c);
  free(cm);
}

/* The driver's failure to load an image, in words a user can act on. */
static int load_fail(gk_archive *ar, const cuda_module *cm, const gk_image_info *row,
                     const char *step, gk__cu_result r, const char *log) {
  char st[96], a[16], b[16];
  int tk = gk__cuda_toolkit_version(row->toolchain), drv = cm->c.version;
  snprintf(a, sizeof a, "%d.%d", tk / 1000, tk % 1000 / 10);
  snprintf(b, sizeof b, "%d.%d", drv / 1000, drv % 1000 / 10);
  result_text(&cm->c, r, st, sizeof st);
  if (r == GK__CUDA_ERROR_UNSUPPORTED_PTX_VERSION && tk)
    return gk__fail(ar, GK_EDRIVER,
                    "cannot load image %s: PTX from CUDA %s needs a driver >= %s; "
                    "this driver is %s (%s: %s)",
                    GK__WHAT(row), a, a, b, step, st);
  if (r == GK__CUDA_ERROR_JIT_COMPILATION_DISABLED)
    return gk__fail(ar, GK_EDRIVER,
                    "cannot load image %s: it is PTX and the driver's JIT is disabled "
                    "in this process (CUDA_DISABLE_PTX_JIT?); use an archive with a "
                    "cubin for this GPU (%s: %s)",
                    GK__WHAT(row), step, st);
  if (r == GK__CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
    return gk__fail(ar, GK_EDRIVER,
                    "cannot load image %s: the driver's PTX JIT compiler "
                    "(libnvidia-ptxjitcompiler) is not installed (%s: %s)",
                    GK__WHAT(row), step, st);
  return gk__fail(ar, GK_EDRIVER, "cannot load image %s on CUDA device %d: %s failed with %s%s%s",
                  GK__WHAT(row), cm->index, step, st, log && *log ? "; JIT log: " : "",
                  log ? log : "");
}

/* What every block may use without asking: static + dynamic shared memory
 * up to CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 KB on every GPU
 * since sm_20. Past it a function must be opted in. */
#define SHARED_DEFAULT 49152

/* The dynamic shared memory of each entry whose launch has some (e->shared):
 * static + dynamic must fit the device's opt-in limit, else the load is
 * refused here, naming the entry and the device, rather than every launch
 * failing with CUDA_ERROR_INVALID_VALUE; past 48 KB the function is opted
 * in once (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES), so that
 * launches need no call of their own, libgk's or a caller's with the
 * CUfunction of gk_module_symbol. The module's context is current. */
static int opt_in_shared(gk_archive *ar, const cuda_module *cm, const gk_image_info *row,
                         const char *arch) {
  char st[96], name[128] = "", device[200];
  int optin = -1;
  for (int i = 0; i < cm->e.n; i++) {
    uint32_t dyn = cm->e.shared[i];
    int stat = 0;
    if (dyn == 0) continue;
    const char *step = "cuFuncGetAttribute(SHARED_SIZE_BYTES)";
    gk__cu_result r =
        cm->c.cuFuncGetAttribute(&stat, GK__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, cm->fns[i]);
    if (r == GK__CUDA_SUCCESS && optin < 0) {
      step = "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)";
      r = cm->c.cuDeviceGetAttribute(
          &optin, GK__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, cm->dev);
    }
    if (r == GK__CUDA_SUCCESS && (uint64_t)stat + dyn > (uint64_t)optin) {
      if (cm->c.cuDeviceGetName(name, (int)sizeof name, cm->dev) != GK__CUDA_SUCCESS)
        name[0] = '\0';
      name[sizeof name - 1] = '\0';
      snprintf(device, sizeof device, "CUDA device %d (%s%s%s)", cm->index, name,
               *name ? ", " : "", arch);
      return gk__shared_refused(ar, row, cm->e.name[i], (uint64_t)stat, dyn, (uint64_t)optin,
                                device);
    }
    if (r == GK__CUDA_SUCCESS && (uint64_t)stat + dyn > SHARED_DEFAULT) {
      step = "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)";
      r = cm->c.cuFuncSetAttribute(cm->fns[i], GK__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   (int)dyn);
    }
    if (r != GK__CUDA_SUCCESS)
      return gk__fail(ar, GK_EDRIVER, "cannot load image %s: kernel '%s' (%u bytes of dynamic "
                      "shared memory): %s failed with %s", GK__WHAT(row), cm->e.name[i], dyn,
                      step, result_text(&cm->c, r, st, sizeof st));
  }
  return GK_OK;
}

static int cuda_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                     const gk__entries *e, void *bytes, size_t size, void **state) {
  char why[512], st[96];
  cuda_module *cm = calloc(1, sizeof *cm);
  int is_ptx = strcmp(row->format, "ptx") == 0;
  int rc;
  if (!cm) {
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  }
  cm->e = *e; /* checked by the read (gk__image_check) */
  /* The driver reads PTX as a C string; the image has no terminator. */
  if (is_ptx) {
    char *text = realloc(bytes, size + 1);
    if (!text) {
      free(bytes);
      free(cm);
      return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
    }
    text[size] = '\0';
    bytes = text;
  }
  rc = cu_open(&cm->c, why, sizeof why);
  if (rc != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s: %s", GK__WHAT(row), why);
    goto fail;
  }
  gk_device here;
  memset(&here, 0, sizeof here);
  here.backend = GK_BACKEND_CUDA;
  here.driver_version = cm->c.version;
  cm->index = dev->index;
  rc = find_device(&cm->c, dev->index, &cm->dev, here.arch, sizeof here.arch, why,
                   sizeof why);
  if (rc != GK_OK) {
    rc = gk__fail(ar, rc, "cannot load image %s for '%s': %s", GK__WHAT(row), GK__DEVICE(dev),
                  why);
    goto fail;
  }
  /* The device may come from a spec ("cuda:sm_86"): the image must fit the
   * GPU and driver that are really here, by the rule that chose it. */
  long score;
  if (!gk__cuda_fits(&here, row, 0, &score, why, sizeof why)) {
    gk_device_format(&here, st, sizeof st);
    rc = gk__fail(ar, GK_ENODEVICE,
                  "cannot load image %s: it was chosen for '%s', but CUDA device %d "
                  "here is %s (%s)",
                  GK__WHAT(row), GK__DEVICE(dev), dev->index, st, why);
    goto fail;
  }

  gk__cu_result r;
  gk__cu_context popped;
  if ((r = cm->c.cuDevicePrimaryCtxRetain(&cm->ctx, cm->dev)) != GK__CUDA_SUCCESS) {
    rc = load_fail(ar, cm, row, "cuDevicePrimaryCtxRetain", r, NULL);
    goto fail;
  }
  cm->have_ctx = 1;
  if ((r = cm->c.cuCtxPushCurrent(cm->ctx)) != GK__CUDA_SUCCESS) {
    rc = load_fail(ar, cm, row, "cuCtxPushCurrent", r, NULL);
    goto fail;
  }
  char log[2048] = "";
  int opts[2] = {GK__CU_JIT_ERROR_LOG_BUFFER, GK__CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  const char *step;
  int use_lib = cm->c.cuLibraryLoadData && cm->c.cuLibraryGetKernel &&
                cm->c.cuKernelGetFunction && cm->c.cuLibraryUnload;
  if (use_lib) {
    step = "cuLibraryLoadData";
    r = cm->c.cuLibraryLoadData(&cm->lib, bytes, opts, vals, 2, NULL, NULL, 0);
  } else {
    step = "cuModuleLoadDataEx";
    r = cm->c.cuModuleLoadDataEx(&cm->mod, bytes, 2, opts, vals);
  }
  log[sizeof log - 1] = '\0';
  for (int i = 0; r == GK__CUDA_SUCCESS && i < cm->e.n; i++) {
    if (use_lib) {
      gk__cu_kernel k;
      step = "cuLibraryGetKernel";
      r = cm->c.cuLibraryGetKernel(&k, cm->lib, cm->e.name[i]);
      if (r == GK__CUDA_SUCCESS) {
        step = "cuKernelGetFunction";
        r = cm->c.cuKernelGetFunction(&cm->fns[i], k);
      }
    } else {
      step = "cuModuleGetFunction";
      r = cm->c.cuModuleGetFunction(&cm->fns[i], cm->mod, cm->e.name[i]);
    }
    if (r != GK__CUDA_SUCCESS) {
      cm->c.cuCtxPopCurrent(&popped);
      rc = gk__fail(ar, r == GK__CUDA_ERROR_NOT_FOUND ? GK_ENOSYMBOL : GK_EDRIVER,
                    "cannot load image %s: kernel '%s': %s failed with %s", GK__WHAT(row),
                    cm->e.name[i], step, result_text(&cm->c, r, st, sizeof st));
      goto fail;
    }
  }
  if (r == GK__CUDA_SUCCESS && (rc = opt_in_shared(ar, cm, row, here.arch)) != GK_OK) {
    cm->c.cuCtxPopCurrent(&popped);
    goto fail;
  }
  cm->c.cuCtxPopCurrent(&popped);
  if (r != GK__CUDA_SUCCESS) {
    rc = load_fail(ar, cm, row, step, r, log);
    goto fail;
  }
  free(bytes); /* the driver keeps its own copy */
  *state = cm;
  return GK_OK;

fail:
  free(bytes);
  cuda_unload(cm);
  return rc;
}

static int entry_index(const cuda_module *cm, const char *name) {
  for (int i = 0; i < cm->e.n; i++)
    if (strcmp(cm->e.name[i], name) == 0) return i;
  return -1;
}

static void *cuda_symbol(void *state, const char *name) {
  const cuda_module *cm = state;
  int i = entry_index(cm, name);
  return i < 0 ? NULL : (void *)cm->fns[i];
}

static int cuda_kernel_info(void *state, const char *name, gk_kernel_info *out) {
  const cuda_module *cm = state;
  int i = entry_index(cm, name), shared = 0, local = 0;
  if (i < 0) return GK_ENOSYMBOL;
  gk__cu_function f = cm->fns[i];
  if (cm->c.cuFuncGetAttribute(&shared, GK__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) !=
          GK__CUDA_SUCCESS ||
      cm->c.cuFuncGetAttribute(&local, GK__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) !=
          GK__CUDA_SUCCESS)
    return GK_EDRIVER;
  gk_kernel_info k;
  memset(&k, 0, sizeof k);
  k.object = (uint64_t)(uintptr_t)f;
  k.group_segment_size = (uint32_t)shared;
  k.private_segment_size = (uint32_t)local;
  /* The parameter block, when the driver can tell (12.4+): the end of the
   * last parameter, aligned as its widest one. */
  if (cm->c.cuFuncGetParamInfo) {
    size_t off, sz, end = 0, align = 1;
    for (size_t p = 0; p < 256 && cm->c.cuFuncGetParamInfo(f, p, &off, &sz) ==
                                      GK__CUDA_SUCCESS;
         p++) {
      if (off + sz > end) end = off + sz;
      if (sz > align && sz <= 16) align = sz;
    }
    k.kernarg_size = (uint32_t)end;
    k.kernarg_align = end ? (uint32_t)align : 0;
  }
  *out = k;
  return GK_OK;
}

/* The device's grid and block limits and its multiprocessors. */
static int cuda_limits(void *state, gk_device_limits *out) {
  const cuda_module *cm = state;
  static const int attrs[5] = {GK__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                               GK__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                               GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                               GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                               GK__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  int v[5];
  for (int i = 0; i < 5; i++)
    if (cm->c.cuDeviceGetAttribute(&v[i], attrs[i], cm->dev) != GK__CUDA_SUCCESS || v[i] < 1)
      return GK_EDRIVER;
  out->compute_units = v[0];
  out->max_threads = v[1];
  for (int k = 0; k < 3; k++) out->max_groups[k] = (uint32_t)v[2 + k];
  return GK_OK;
}

/* cuLaunchKernel in the module's context: kernelParams[i] points at the
 * value of args[i], which gk_launch_eval checked against the row. */
static int cuda_launch(void *state, const char *name, const gk_launch *L,
                       const gk_launch_dims *d, const gk_arg *args, size_t nargs,
                       const gk_launch_options *opts) {
  const cuda_module *cm = state;
  int i = entry_index(cm, name);
  char st[96];
  void *params[GK_LAUNCH_MAX_PARAMS];
  if (i < 0)
    return gk__set_last_error(GK_ENOSYMBOL, "%s: the module has no kernel '%s'",
                              gk__launch_what(L), name);
  for (size_t k = 0; k < nargs; k++) params[k] = (void *)&args[k].v;
  gk__cu_context popped;
  gk__cu_result r = cm->c.cuCtxPushCurrent(cm->ctx);
  const char *step = "cuCtxPushCurrent";
  if (r == GK__CUDA_SUCCESS) {
    step = "cuLaunchKernel";
    r = cm->c.cuLaunchKernel(cm->fns[i], d->grid[0], d->grid[1], d->grid[2], d->block[0],
                             d->block[1], d->block[2], d->shared,
                             opts ? (gk__cu_stream)opts->stream : NULL, params, NULL);
    cm->c.cuCtxPopCurrent(&popped);
  }
  if (r != GK__CUDA_SUCCESS)
    return gk__set_last_error(GK_EDRIVER, "%s on CUDA device %d: %s (grid %u x %u x %u, "
                              "block %u x %u x %u, %u bytes shared) failed with %s",
                              gk__launch_what(L), cm->index, step, d->grid[0], d->grid[1],
                              d->grid[2], d->block[0], d->block[1], d->block[2], d->shared,
                              result_text(&cm->c, r, st, sizeof st));
  gk__clear_last_error();
  return GK_OK;
}

const gk__ops gk__cuda_ops = {
    .load = cuda_load, .symbol = cuda_symbol, .kernel_info = cuda_kernel_info,
    .unload = cuda_unload, .limits = cuda_limits, .launch = cuda_launch, .launches = 1};
