/*
 * module.c - loading a selected, verified image into the process.
 *
 * CPU images are shared objects. They are loaded from memory: the bytes go
 * into an anonymous memfd and dlopen() opens "/proc/self/fd/N"; nothing is
 * written to any file system. The memfd stays open as long as the module is
 * loaded. glibc matches an already loaded object by the name it was opened
 * under, so if fd N were closed and reused by the next image while the
 * first is still loaded, dlopen("/proc/self/fd/N") would hand back the old
 * library. Holding the fd keeps every name unique among loaded modules.
 *
 * Without memfd_create (macOS, whose dlopen needs a path; or a build with
 * GK_PORTABLE_ONLY) the bytes go to a file created 0600 in $TMPDIR, which
 * is unlinked as soon as dlopen has mapped it. Its name holds this
 * process's id and a counter that never repeats, so no two loads in one
 * process ever use the same name and the name-matching problem above
 * cannot arise.
 *
 * GPU images go to their backend (gk__gpu_ops: rocm.c hands code objects to
 * the HSA runtime); this file only dispatches to it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gk_internal.h"

struct gk_module {
  gk_image_info
      info; /* strings in `strings`: the module outlives the archive */
  char *strings;
  gk_device dev;
  void *dl;
  int fd;     /* the memfd; -1 for a temporary file (unlinked at load) */
  char *path; /* the name the dynamic linker knows it by */
  const gk__gpu_ops *gpu; /* GPU modules: their backend and its state */
  void *gpu_state;
  /* GPU modules: each entry's launch, parsed at load (NULL when its JSON
   * did not parse: launch_err says why), and the device's limits. */
  int nentries;
  char entries[GK_LAUNCH_MAX_PARAMS][GK__CUDA_NAME_MAX];
  gk_launch *launch[GK_LAUNCH_MAX_PARAMS];
  char *launch_err[GK_LAUNCH_MAX_PARAMS];
  gk_device_limits lim;
};

/* The GPU backends that load modules: one line each. */
static const gk__gpu_ops *const gpu_backends[] = {&gk__rocm_ops, &gk__vk_ops,
                                                  &gk__cuda_ops, &gk__wgsl_ops,
                                                  &gk__metal_ops};

static const gk__gpu_ops *gpu_ops(gk_backend b) {
  for (size_t i = 0; i < sizeof gpu_backends / sizeof gpu_backends[0]; i++)
    if (gpu_backends[i]->backend == b) return gpu_backends[i];
  return NULL;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Refuses a cpu device that claims a level this CPU lacks: code built for
 * it could die of SIGILL far from the cause. */
static int check_cpu_device(gk_archive *ar, const gk_device *dev) {
  gk_device here;
  char why[256], devtext[160];
  gk_device_format(dev, devtext, sizeof devtext);
  int rc = gk__cpu_detect(&here, 1, why, sizeof why);
  if (rc != GK_OK)
    return gk__fail(ar, rc, "cannot load for device '%s': %s", devtext, why);
  int want = gk__x86_level_from_name(dev->arch);
  int have = gk__x86_level_from_name(here.arch);
  if (want > have)
    return gk__fail(ar, GK_ENODEVICE,
                    "device '%s' asks for more than this CPU has (%s, %s); its "
                    "code could stop on an illegal instruction",
                    devtext, here.arch, here.name);
  return GK_OK;
}

/* "kernel:target" for names: the strings come from the archive, an
 * untrusted file, so anything but [A-Za-z0-9._-] becomes '_' (no '/' can
 * lead a temporary file out of its folder). */
static void image_tag(const gk_module *m, char sep, char *out, size_t size) {
  snprintf(out, size, "%s%c%s", m->info.kernel, sep, m->info.target);
  for (char *p = out; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-' ||
          *p == sep))
      *p = '_';
}

#if GK_HAVE_MEMFD_CREATE
/* The image as an anonymous memfd, named by its /proc path; the module
 * keeps the fd (see the top of this file). */
static int write_image(gk_archive *ar, gk_module *m, const void *bytes,
                       size_t size, const char *what) {
  char name[64], ebuf[128];
  /* The memfd's name shows in /proc/PID/maps next to the code. */
  image_tag(m, ':', name + 3, sizeof name - 3);
  memcpy(name, "gk:", 3);
  m->fd = memfd_create(name, MFD_CLOEXEC);
  if (m->fd < 0)
    return gk__fail(ar, GK_EDRIVER, "cannot load image %s: memfd_create: %s",
                    what, gk__errno_text(errno, ebuf, sizeof ebuf));
  if (write_all(m->fd, bytes, size) != 0)
    return gk__fail(ar, GK_EDRIVER,
                    "cannot load image %s: writing the memfd: %s", what,
                    gk__errno_text(errno, ebuf, sizeof ebuf));
  char path[32];
  snprintf(path, sizeof path, "/proc/self/fd/%d", m->fd);
  if (!(m->path = strdup(path)))
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", what);
  return GK_OK;
}
#else
/* The image as a file of its own in $TMPDIR (mkstemp: mode 0600, O_EXCL),
 * closed and left for load_so to unlink once dlopen has mapped it. */
static int write_image(gk_archive *ar, gk_module *m, const void *bytes,
                       size_t size, const char *what) {
  static atomic_ulong serial;
  char tag[64], ebuf[128];
  image_tag(m, '-', tag, sizeof tag);
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  size_t dlen = strlen(dir);
  while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
  size_t n = dlen + strlen(tag) + 80;
  if (!(m->path = malloc(n)))
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", what);
  snprintf(m->path, n, "%.*s/gk-%s-%ld-%lu-XXXXXX", (int)dlen, dir, tag,
           (long)getpid(), (unsigned long)atomic_fetch_add(&serial, 1));
  int fd = mkstemp(m->path);
  if (fd < 0) {
    int e = errno;
    return gk__fail(ar, GK_EDRIVER,
                    "cannot load image %s: cannot create a temporary file in "
                    "'%.*s': %s (set TMPDIR to a writable folder)",
                    what, (int)dlen, dir, gk__errno_text(e, ebuf, sizeof ebuf));
  }
  int rc = write_all(fd, bytes, size);
  int e = errno;
  if (close(fd) != 0 && rc == 0) rc = -1, e = errno;
  if (rc != 0) {
    unlink(m->path);
    return gk__fail(ar, GK_EDRIVER, "cannot load image %s: writing '%s': %s",
                    what, m->path, gk__errno_text(e, ebuf, sizeof ebuf));
  }
  return GK_OK;
}
#endif

/* The image bytes as a loaded library: written where the dynamic linker
 * can open it by name, then dlopen. On success the module owns the name
 * (and the memfd) and the handle; a temporary file is already gone. */
static int load_so(gk_archive *ar, gk_module *m, const void *bytes, size_t size,
                   const char *what) {
  int rc = write_image(ar, m, bytes, size, what);
  if (rc != GK_OK) return rc;
  dlerror(); /* drop a stale message */
  m->dl = dlopen(m->path, RTLD_NOW | RTLD_LOCAL);
  const char *e = m->dl ? NULL : dlerror();
  char *msg = e ? strdup(e) : NULL; /* unlink may not touch it, but be sure */
  if (m->fd < 0) unlink(m->path); /* mapped (or failed): the file can go */
  if (!m->dl) {
    rc = gk__fail(ar, GK_EDRIVER, "cannot load image %s: dlopen: %s%s", what,
                  msg ? msg : "unknown error",
                  m->fd < 0 ? " (it was written to $TMPDIR, which must allow "
                              "running code: set TMPDIR to another folder if "
                              "it is mounted noexec)"
                            : "");
    free(msg);
    return rc;
  }
  return GK_OK;
}

/* Parses each entry's launch and asks the device's limits, once, so that a
 * loaded module stays immutable (and its launches thread-safe). A launch
 * that does not parse does not stop the load: the module's symbols are
 * still good, and the launch calls report why. */
static void prepare_launches(gk_module *m) {
  char saved[1024];
  gk__strlcpy(saved, gk_last_error(), sizeof saved); /* an open's message */
  gk_device_limits_known(&m->dev, &m->lim);
  if (m->gpu->limits && m->gpu_state) {
    gk_device_limits l;
    if (m->gpu->limits(m->gpu_state, &l) == GK_OK) m->lim = l;
  }
  int n = gk__cuda_entries(m->info.entry, m->entries, GK_LAUNCH_MAX_PARAMS);
  m->nentries = n < 0 ? 0 : n;
  for (int i = 0; i < m->nentries; i++)
    if (gk_launch_parse(&m->info, m->entries[i], &m->launch[i]) != GK_OK)
      m->launch_err[i] = strdup(gk_last_error());
  gk__set_last_error(GK_OK, "%s", saved);
}

const gk_launch *gk__module_launch(const gk_module *m, const char *name,
                                   const gk_device_limits **lim, int *status) {
  for (int i = 0; m && name && i < m->nentries; i++) {
    if (strcmp(m->entries[i], name) != 0) continue;
    if (!m->launch[i]) {
      *status = gk__set_last_error(GK_ECORRUPT, "%s",
                                   m->launch_err[i] ? m->launch_err[i] : "out of memory");
      return NULL;
    }
    *lim = &m->lim;
    return m->launch[i];
  }
  *status = !m || !name ? gk__set_last_error(GK_EINVAL, "gk_module_launch: %s is NULL",
                                             !m ? "the module" : "entry")
            : m->gpu ? gk__set_last_error(GK_ENOSYMBOL, "no entry '%s' in the launch of '%s' %s",
                                          name, m->info.kernel, m->info.target)
                     : gk__set_last_error(GK_EINVAL, "'%s' is a cpu module: call the function "
                                          "(gk_module_symbol), there is no launch", m->info.kernel);
  return NULL;
}

GK_API int gk_module_limits(const gk_module *m, gk_device_limits *out) {
  if (!m || !out || !m->gpu) return GK_EINVAL;
  *out = m->lim;
  return GK_OK;
}

GK_API int gk_module_launch_dims(const gk_module *m, const char *entry, const gk_arg *args,
                                 size_t nargs, gk_launch_dims *out) {
  const gk_device_limits *lim;
  int rc;
  const gk_launch *L = gk__module_launch(m, entry, &lim, &rc);
  return L ? gk_launch_eval(L, lim, args, nargs, out) : rc;
}

GK_API int gk_module_launch(const gk_module *m, const char *entry, const gk_arg *args,
                            size_t nargs, const gk_launch_options *opts) {
  const gk_device_limits *lim;
  int rc;
  const gk_launch *L = gk__module_launch(m, entry, &lim, &rc);
  if (!L) return rc;
  if (!m->gpu->launch)
    return gk__set_last_error(GK_EINVAL, "%s: libgk does not drive %s devices%s",
                              gk__launch_what(L), gk_backend_name(m->dev.backend),
                              m->dev.backend == GK_BACKEND_WGSL
                                  ? " (gk_module_launch_dims gives what dispatchWorkgroups "
                                    "and the uniform buffer take)"
                                  : "");
  gk_launch_dims d;
  if ((rc = gk_launch_eval(L, lim, args, nargs, &d)) != GK_OK) return rc;
  if (opts && opts->grid)
    for (int k = 0; k < 3; k++) {
      uint64_t g = opts->grid[k], max = lim->max_groups[k] ? lim->max_groups[k] : 1;
      if (m->dev.backend == GK_BACKEND_ROCM && max > UINT32_MAX / d.block[k])
        max = UINT32_MAX / d.block[k]; /* as gk_launch_eval: work-items in 32 bits */
      d.grid[k] = (uint32_t)(g < 1 ? 1 : g > max ? max : g);
    }
  return m->gpu->launch(m->gpu_state, entry, L, &d, args, nargs, opts);
}

GK_API int gk_module_load(gk_archive *ar, const gk_device *dev,
                          const char *kernel, const char *variant,
                          gk_module **out) {
  return gk_module_load_ex(ar, dev, kernel, variant, 0, out);
}

GK_API int gk_module_load_ex(gk_archive *ar, const gk_device *dev,
                             const char *kernel, const char *variant,
                             unsigned flags, gk_module **out) {
  if (out) *out = NULL;
  if (!ar) return GK_EINVAL;
  if (!kernel || !out)
    return gk__fail(ar, GK_EINVAL, "gk_module_load: %s is NULL",
                    !kernel ? "kernel" : "out");
  free(ar->msg);
  ar->msg = NULL;

  gk_device detected;
  if (!dev) {
    if (gk_device_detect(&detected) != GK_OK)
      return gk__fail(ar, GK_ENODEVICE, "no device found to load '%s' for",
                      kernel);
    dev = &detected;
  }
  const gk__gpu_ops *gpu = gpu_ops(dev->backend);
  if (dev->backend != GK_BACKEND_CPU && !gpu) {
    const char *b = gk_backend_name(dev->backend);
    return b ? gk__fail(
                   ar, GK_ENODEVICE,
                   "cannot load '%s': libgk was built without the %s backend "
                   "(not implemented yet)",
                   kernel, b)
             : gk__fail(ar, GK_EINVAL,
                        "gk_module_load: the device is not valid "
                        "(backend %d)",
                        (int)dev->backend);
  }
  size_t index;
  /* A GPU backend checks its device when it loads (it needs the driver). */
  int rc = gpu ? GK_OK : check_cpu_device(ar, dev);
  if (rc != GK_OK) return rc;
  if ((rc = gk_archive_select_ex(ar, dev, kernel, variant, flags, &index)) != GK_OK)
    return rc;

  void *bytes = NULL;
  size_t size = 0;
  if ((rc = gk_archive_read(ar, index, &bytes, &size)) != GK_OK) return rc;

  const gk__row *r = gk__index_row(ar, index, &rc);
  if (!r) {
    free(bytes);
    return rc;
  }
  const gk_image_info *row = &r->info;
  char what[256];
  gk__row_describe(row, what, sizeof what);
  gk_module *m = calloc(1, sizeof *m);
  if (!m || gk__info_copy(&m->info, row, &m->strings) != GK_OK) {
    free(m);
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", what);
  }
  m->dev = *dev;
  m->fd = -1;
  if (gpu) {
    m->gpu = gpu;
    rc = gpu->load(ar, dev, row, bytes, size, &m->gpu_state); /* takes bytes */
  } else {
    rc = load_so(ar, m, bytes, size, what);
    free(bytes);
  }
  if (rc != GK_OK) {
    gk_module_unload(m);
    return rc;
  }
  if (gpu) prepare_launches(m);
  *out = m;
  return GK_OK;
}

void *gk__module_gpu_state(const gk_module *m, const gk__gpu_ops *ops) {
  return m && m->gpu == ops ? m->gpu_state : NULL;
}

GK_API const gk_image_info *gk_module_info(const gk_module *m) {
  return m ? &m->info : NULL;
}

GK_API const gk_device *gk_module_device(const gk_module *m) {
  return m ? &m->dev : NULL;
}

GK_API void *gk_module_symbol(const gk_module *m, const char *name) {
  if (!m || !name) return NULL;
  if (m->gpu) return m->gpu_state ? m->gpu->symbol(m->gpu_state, name) : NULL;
  return m->dl ? dlsym(m->dl, name) : NULL;
}

GK_API int gk_module_kernel_info(const gk_module *m, const char *name,
                                 gk_kernel_info *out) {
  if (!m || !name || !out) return GK_EINVAL;
  if (m->gpu)
    return m->gpu_state ? m->gpu->kernel_info(m->gpu_state, name, out)
                        : GK_ENOSYMBOL;
  void *f = m->dl ? dlsym(m->dl, name) : NULL;
  if (!f) return GK_ENOSYMBOL;
  memset(out, 0, sizeof *out);
  out->object = (uint64_t)(uintptr_t)f;
  return GK_OK;
}

GK_API void gk_module_unload(gk_module *m) {
  if (!m) return;
  if (m->gpu && m->gpu_state) m->gpu->unload(m->gpu_state);
  for (int i = 0; i < m->nentries; i++) {
    gk_launch_free(m->launch[i]);
    free(m->launch_err[i]);
  }
  /* dlclose before close: the fd must not be reused while its name still
   * identifies a loaded object. dlclose may also leave the object mapped
   * (it was linked -z nodelete, has STB_GNU_UNIQUE symbols, or the host
   * dlopen()ed the same name itself); then the fd is kept for the life of
   * the process, as the mapping itself is, so no later image can get its
   * number and be mistaken for it. */
  int keep_fd = 0;
  if (m->dl) {
    dlclose(m->dl);
    void *still = m->fd >= 0 ? dlopen(m->path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (still) {
      dlclose(still);
      keep_fd = 1;
    }
  }
  if (m->fd >= 0 && !keep_fd) close(m->fd);
  free(m->path);
  free(m->strings);
  free(m);
}
