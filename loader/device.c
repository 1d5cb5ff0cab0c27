/*
 * device.c - the table of backends, and devices as values: backend names,
 * detection in order of preference, and the text form
 * "backend:arch[,key=value]".
 *
 * What a backend is lives in its descriptor (gk__backend, in the
 * backend's own file); this file only walks the table. Parsing never
 * touches a driver (except for a bare backend name, which asks for the
 * device detected here): a user may describe a machine they are not on,
 * e.g. to ask an archive what it would load there.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

/* Every backend, in the order gk_device_detect() prefers them (gk.h): one
 * line each. */
static const gk__backend *const backends[] = {
    &gk__cuda_backend, &gk__rocm_backend, &gk__metal_backend,
    &gk__vk_backend,   &gk__cpu_backend,  &gk__wgsl_backend,
};
enum { NBACKENDS = sizeof backends / sizeof backends[0] };

const gk__backend *gk__backend_of(gk_backend b) {
  for (size_t i = 0; i < NBACKENDS; i++)
    if (backends[i]->id == b) return backends[i];
  return NULL;
}

const gk__backend *gk__backend_named(const char *name) {
  for (size_t i = 0; name && i < NBACKENDS; i++)
    if (strcmp(name, backends[i]->name) == 0) return backends[i];
  return NULL;
}

GK_API const char *gk_backend_name(gk_backend b) {
  const gk__backend *d = gk__backend_of(b);
  return d ? d->name : NULL;
}

GK_API gk_backend gk_backend_from_name(const char *name) {
  const gk__backend *d = gk__backend_named(name);
  return d ? d->id : GK_BACKEND_NONE;
}

GK_API int gk_device_detect_backend(gk_backend backend, gk_device *out,
                                    char *why, size_t why_size) {
  if (why && why_size) why[0] = '\0';
  if (!out) {
    gk__say(why, why_size, "gk_device_detect_backend: out is NULL");
    return GK_EINVAL;
  }
  const gk__backend *b = gk__backend_of(backend);
  if (!b) {
    gk__say(why, why_size, "unknown backend %d", (int)backend);
    return GK_EINVAL;
  }
  return b->detect(out, 1, why, why_size);
}

GK_API int gk_device_detect(gk_device *out) {
  if (!out) return GK_EINVAL;
  for (size_t i = 0; i < NBACKENDS; i++)
    if (backends[i]->detect(out, 0, NULL, 0) == GK_OK) return GK_OK;
  return GK_ENODEVICE;
}

/* ---- parsing ----------------------------------------------------------- */

/* Metal and Vulkan name devices freely ("apple9", a Vulkan device name);
 * only keep the text printable and free of our separators. */
static int plain_arch(const char *a, const char *backend, char *why, size_t size) {
  const char *p = a;
  while (isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.') p++;
  if (*p == '\0' && p != a) return 1;
  gk__say(why, size, "%s arch '%s' may hold only letters, digits, '_', '-', '.'",
      backend, a);
  return 0;
}

/* The spec with its backend spelt out, for the short forms people type:
 * a bare arch ("sm_89", "gfx942:xnack-", "x86-64-v3") names its backend
 * (the descriptors' `bare`). Anything else is copied as it is. 0 when it
 * does not fit in size. */
static int spell_out(const char *spec, char *out, size_t size) {
  const char *prefix = "";
  for (size_t i = 0; i < NBACKENDS; i++) {
    const char *bare = backends[i]->bare;
    if (bare && strncmp(spec, bare, strlen(bare)) == 0) {
      prefix = backends[i]->name;
      break;
    }
  }
  return snprintf(out, size, "%s%s%s", prefix, *prefix ? ":" : "", spec) < (int)size;
}

/* The spec a mistyped one most likely meant, from the first backend with
 * a guess (its own, when b is not NULL); 0 when there is none. */
static int guess_spec(const gk__backend *b, const char *spec, char *out, size_t size) {
  for (size_t i = 0; i < NBACKENDS; i++) {
    const gk__backend *g = b ? b : backends[i];
    if (g->guess && g->guess(spec, out, size)) return 1;
    if (b) break;
  }
  return 0;
}

/* One ",key=value" of the spec, read by the backend; an unknown key
 * names the backend it belongs to when there is one ("driver= is for
 * cuda only"). */
static int read_option(const gk__backend *b, gk_device *d, const char *opt,
                       const char *spec, char *why, size_t why_size) {
  int r = b->option ? b->option(d, opt, spec, why, why_size) : -1;
  if (r > 0) return 1;
  if (r == 0) return 0;
  const char *owner = NULL;
  const size_t keylen = strcspn(opt, "=");
  for (size_t i = 0; i < NBACKENDS && !owner && opt[keylen] == '='; i++) {
    gk_device scratch = *d;
    if (backends[i] != b && backends[i]->option &&
        backends[i]->option(&scratch, opt, spec, NULL, 0) >= 0)
      owner = backends[i]->name;
  }
  if (owner)
    gk__say(why, why_size, "unknown option '%s' in device spec '%s' (%.*s= is for %s only)",
            opt, spec, (int)keylen, opt, owner);
  else
    gk__say(why, why_size, "unknown option '%s' in device spec '%s'", opt, spec);
  return 0;
}

/* "cuda, rocm, metal, vulkan, cpu or wgsl": every backend's name. */
static void name_list(char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < NBACKENDS && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s",
                             i == 0 ? "" : i + 1 < NBACKENDS ? ", " : " or ",
                             backends[i]->name);
}

GK_API int gk_device_parse(const char *spec, gk_device *out, char *why,
                           size_t why_size) {
  if (why && why_size) why[0] = '\0';
  if (!spec || !out) {
    gk__say(why, why_size, "gk_device_parse: %s is NULL", spec ? "out" : "spec");
    return GK_EINVAL;
  }
  /* Work on a copy: "backend" ':' "arch" { ',' "key=value" }. The arch of
   * rocm holds ':' itself, so only the first ':' separates the backend. */
  char buf[256];
  if (strlen(spec) >= sizeof buf || !spell_out(spec, buf, sizeof buf)) {
    gk__say(why, why_size, "device spec is too long (%zu characters)",
        strlen(spec));
    return GK_EINVAL;
  }
  char *opts = strchr(buf, ',');
  if (opts) *opts++ = '\0';
  char *arch = strchr(buf, ':');
  if (arch) *arch++ = '\0';

  const gk__backend *b = gk__backend_named(buf);
  char guess[96];
  if (!b) {
    if (guess_spec(NULL, spec, guess, sizeof guess)) {
      gk__say(why, why_size, "device spec '%s' is not BACKEND:ARCH; did you mean %s?", spec,
              guess);
      return GK_EINVAL;
    }
    char names[96];
    name_list(names, sizeof names);
    gk__say(why, why_size, "unknown backend '%s' in device spec '%s'; expected %s", buf, spec,
            names);
    return GK_EINVAL;
  }

  gk_device d;
  memset(&d, 0, sizeof d);
  if (!arch) {
    if (opts) {
      gk__say(why, why_size, "device spec '%s' has options but no arch", spec);
      return GK_EINVAL;
    }
    /* A bare backend name is the device detected here. */
    int rc = b->detect(&d, 1, why, why_size);
    if (rc != GK_OK) return rc;
    *out = d;
    return GK_OK;
  }

  d.backend = b->id;
  if (*arch == '\0' || strlen(arch) >= sizeof d.arch) {
    gk__say(why, why_size, "device spec '%s' has %s arch", spec,
        *arch ? "a too long" : "an empty");
    return GK_EINVAL;
  }
  memcpy(d.arch, arch, strlen(arch) + 1);
  if (b->arch ? !b->arch(d.arch, sizeof d.arch, spec, why, why_size)
              : !plain_arch(d.arch, b->name, why, why_size)) {
    /* The exact spec, when the mistake is a common one ("cuda:89"). */
    size_t len = why ? strlen(why) : 0;
    if (why && guess_spec(b, spec, guess, sizeof guess))
      snprintf(why + len, why_size - len, "; did you mean %s?", guess);
    return GK_EINVAL;
  }

  while (opts) {
    char *next = strchr(opts, ',');
    if (next) *next++ = '\0';
    if (*opts == '\0') {
      gk__say(why, why_size, "empty option in device spec '%s'", spec);
      return GK_EINVAL;
    }
    if (!read_option(b, &d, opts, spec, why, why_size)) return GK_EINVAL;
    opts = next;
  }
  snprintf(d.name, sizeof d.name, "%s (from a spec)", spec);
  *out = d;
  return GK_OK;
}

const char *gk__device_text(const gk_device *dev, char *buf, size_t size) {
  gk_device_format(dev, buf, size);
  return buf;
}

GK_API void gk_device_format(const gk_device *dev, char *buf, size_t size) {
  if (!buf || size == 0) return;
  if (!dev) {
    buf[0] = '\0';
    return;
  }
  const char *b = gk_backend_name(dev->backend);
  /* arch is a fixed array the caller may have filled: never read past it. */
  int alen = (int)strnlen(dev->arch, sizeof dev->arch);
  if (dev->driver_version > 0)
    snprintf(buf, size, "%s:%.*s,driver=%d.%d", b ? b : "none", alen, dev->arch,
             dev->driver_version / 1000, dev->driver_version % 1000 / 10);
  else
    snprintf(buf, size, "%s:%.*s", b ? b : "none", alen, dev->arch);
}
