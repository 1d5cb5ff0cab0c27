/*
 * module.c - loading a selected, verified image into the process: a
 * module is the row it came from, its device, and the state its backend's
 * load made of the image (gk__ops: cpu.c dlopens a shared object, cuda.c
 * loads a cubin into a CUDA context, rocm.c a code object into an HSA
 * executable, ...); this file calls the descriptor's ops and keeps what
 * every backend's module shares: the row, and the launches of its entries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

struct gk_module {
  gk_image_info
      info; /* strings in `strings`: the module outlives the archive */
  char *strings;
  gk_device dev;
  const gk__ops *ops; /* its backend's, and the state its load made */
  void *state;
  /* Modules of backends with launches: each entry's launch, parsed at load
   * (NULL when its JSON did not parse: launch_err says why), and the
   * device's limits. */
  gk__entries e;
  gk_launch *launch[GK__ENTRY_MAX];
  char *launch_err[GK__ENTRY_MAX];
  gk_device_limits lim;
};

/* Parses each entry's launch, once, so that a loaded module stays
 * immutable (and its launches thread-safe), and before the backend's load,
 * which reads each entry's dynamic shared memory from e->shared (CUDA opts
 * a function in past 48 KB there; both GPU backends refuse what the device
 * cannot give). A launch that does not parse does not stop the load: the
 * module's symbols are still good, and the launch calls report why. */
static void parse_launches(gk_module *m, gk__entries *e) {
  char saved[1024];
  gk__strlcpy(saved, gk_last_error(), sizeof saved); /* an open's message */
  for (int i = 0; i < e->n; i++) {
    if (gk_launch_parse(&m->info, e->name[i], &m->launch[i]) != GK_OK)
      m->launch_err[i] = strdup(gk_last_error());
    e->shared[i] = m->launch[i] ? gk__launch_shared(m->launch[i]) : 0;
  }
  m->e = *e;
  gk__set_last_error(GK_OK, "%s", saved);
}

/* The device's limits, asked once the backend has loaded the image. */
static void ask_limits(gk_module *m) {
  gk_device_limits_known(&m->dev, &m->lim);
  if (m->ops->limits) {
    gk_device_limits l;
    if (m->ops->limits(m->state, &l) == GK_OK) m->lim = l;
  }
}

int gk__shared_refused(gk_archive *ar, const gk_image_info *row, const char *entry,
                       uint64_t static_bytes, uint32_t dynamic, uint64_t limit,
                       const char *device) {
  return gk__fail(ar, GK_EINVAL,
                  "cannot load image %s: entry '%s' needs %llu bytes of shared memory per "
                  "block (%llu static + %u dynamic, the launch's `shared`), and %s allows "
                  "at most %llu; use an image built for a GPU with more shared memory, or "
                  "a smaller `shared` in the recipe's launch",
                  GK__WHAT(row), entry, (unsigned long long)(static_bytes + dynamic),
                  (unsigned long long)static_bytes, dynamic, device,
                  (unsigned long long)limit);
}

const gk_launch *gk__module_launch(const gk_module *m, const char *name,
                                   const gk_device_limits **lim, int *status) {
  for (int i = 0; m && name && i < m->e.n; i++) {
    if (strcmp(m->e.name[i], name) != 0) continue;
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
            : m->ops->launches
                ? gk__set_last_error(GK_ENOSYMBOL, "no entry '%s' in the launch of '%s' %s",
                                     name, m->info.kernel, m->info.target)
                : gk__set_last_error(GK_EINVAL, "'%s' is a %s module: call the function "
                                     "(gk_module_symbol), there is no launch", m->info.kernel,
                                     m->info.backend);
  return NULL;
}

GK_API int gk_module_limits(const gk_module *m, gk_device_limits *out) {
  if (!m || !out || !m->ops->launches) return GK_EINVAL;
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
  if (!m->ops->launch)
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
  return m->ops->launch(m->state, entry, L, &d, args, nargs, opts);
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
  const gk__backend *b = gk__backend_of(dev->backend);
  if (!b)
    return gk__fail(ar, GK_EINVAL, "gk_module_load: the device is not valid (backend %d)",
                    (int)dev->backend);
  const gk__ops *ops = b->ops;
  int rc = ops->ready ? ops->ready(ar, dev) : GK_OK;
  if (rc != GK_OK) return rc;
  /* The row the selection chose is the one read and loaded: no index to
   * look it up by again, and its entry list read once for the image check,
   * the backend's load and the launches. */
  const gk__row *r;
  if ((rc = gk__select(ar, dev, kernel, variant, flags, &r)) != GK_OK) return rc;
  gk__entries e;
  gk__entries_parse(r->info.entry, &e);
  void *bytes = NULL;
  size_t size = 0;
  if ((rc = gk__read(ar, r, &e, &bytes, &size)) != GK_OK) return rc;
  const gk_image_info *row = &r->info;
  gk_module *m = calloc(1, sizeof *m);
  if (!m || gk__info_copy(&m->info, row, &m->strings) != GK_OK) {
    free(m);
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  }
  m->dev = *dev;
  m->ops = ops;
  if (ops->launches) parse_launches(m, &e);
  if ((rc = ops->load(ar, dev, row, &e, bytes, size, &m->state)) != GK_OK) { /* takes bytes */
    gk_module_unload(m);
    return rc;
  }
  if (ops->launches) ask_limits(m);
  *out = m;
  return GK_OK;
}

void *gk__module_state(const gk_module *m, const gk__ops *ops) {
  return m && m->ops == ops ? m->state : NULL;
}

GK_API const gk_image_info *gk_module_info(const gk_module *m) {
  return m ? &m->info : NULL;
}

GK_API const gk_device *gk_module_device(const gk_module *m) {
  return m ? &m->dev : NULL;
}

GK_API void *gk_module_symbol(const gk_module *m, const char *name) {
  if (!m || !name || !m->state) return NULL;
  return m->ops->symbol(m->state, name);
}

GK_API int gk_module_kernel_info(const gk_module *m, const char *name,
                                 gk_kernel_info *out) {
  if (!m || !name || !out) return GK_EINVAL;
  return m->state ? m->ops->kernel_info(m->state, name, out) : GK_ENOSYMBOL;
}

GK_API void gk_module_unload(gk_module *m) {
  if (!m) return;
  if (m->state) m->ops->unload(m->state);
  for (int i = 0; i < m->e.n; i++) {
    gk_launch_free(m->launch[i]);
    free(m->launch_err[i]);
  }
  free(m->strings);
  free(m);
}
