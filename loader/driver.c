/*
 * driver.c - finding a GPU driver's entry points: dlopen of the vendor's
 * library (never a link-time dependency, volk's pattern), or a resolver a
 * test installed to stand in for a driver that cannot exist on the machine.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gk_internal.h"

/* One resolver per backend, indexed by gk_backend. Set before use, from
 * one thread (documented in gk.h). */
static struct {
  gk_resolver_fn fn;
  void *ctx;
} resolvers[GK_BACKEND_CPU + 1];

GK_API int gk_driver_set_resolver(gk_backend backend, gk_resolver_fn fn,
                                  void *ctx) {
  if (backend <= GK_BACKEND_NONE || backend >= GK_BACKEND_CPU) return GK_EINVAL;
  resolvers[backend].fn = fn;
  resolvers[backend].ctx = fn ? ctx : NULL;
  return GK_OK;
}

int gk__driver_open(gk_backend backend, const char *const *names,
                    gk__driver *out, char *why, size_t why_size) {
  memset(out, 0, sizeof *out);
  if (backend > GK_BACKEND_NONE && backend < GK_BACKEND_CPU &&
      resolvers[backend].fn) {
    out->fn = resolvers[backend].fn;
    out->ctx = resolvers[backend].ctx;
    return GK_OK;
  }
  for (const char *const *n = names; *n; n++) {
    out->dl = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (out->dl) return GK_OK;
  }
  if (why && why_size) {
    const char *e = dlerror();
    snprintf(why, why_size, "%s not found (%s)", names[0],
             e ? e : "dlopen failed");
  }
  return GK_ENODEVICE;
}

int gk__driver_has_resolver(gk_backend backend) {
  return backend > GK_BACKEND_NONE && backend < GK_BACKEND_CPU &&
         resolvers[backend].fn != NULL;
}

void *gk__driver_sym(const gk__driver *d, const char *name) {
  if (d->fn) return d->fn(d->ctx, name);
  return d->dl ? dlsym(d->dl, name) : NULL;
}

void gk__driver_close(gk__driver *d) {
  if (d->dl) dlclose(d->dl);
  memset(d, 0, sizeof *d);
}
