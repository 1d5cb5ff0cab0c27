/*
 * device.c - devices as values: names of backends, detection in order of
 * preference, and the text form "backend:arch[,driver=X.Y]".
 *
 * Parsing never touches a driver (except for a bare backend name, which
 * asks for the device detected here): a user may describe a machine they
 * are not on, e.g. to ask an archive what it would load there.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

static const char *const backend_names[] = {
    [GK_BACKEND_CUDA] = "cuda",   [GK_BACKEND_ROCM] = "rocm",
    [GK_BACKEND_METAL] = "metal", [GK_BACKEND_VULKAN] = "vulkan",
    [GK_BACKEND_CPU] = "cpu",       [GK_BACKEND_WGSL] = "wgsl",
};

GK_API const char *gk_backend_name(gk_backend b) {
  return b > GK_BACKEND_NONE && b <= GK_BACKEND_WGSL ? backend_names[b] : NULL;
}

GK_API gk_backend gk_backend_from_name(const char *name) {
  if (name)
    for (int b = GK_BACKEND_CUDA; b <= GK_BACKEND_WGSL; b++)
      if (strcmp(name, backend_names[b]) == 0) return (gk_backend)b;
  return GK_BACKEND_NONE;
}

GK_API int gk_device_detect_backend(gk_backend backend, gk_device *out,
                                    char *why, size_t why_size) {
  if (why && why_size) why[0] = '\0';
  if (!out) {
    gk__say(why, why_size, "gk_device_detect_backend: out is NULL");
    return GK_EINVAL;
  }
  switch (backend) {
  case GK_BACKEND_CPU: return gk__cpu_detect(out, why, why_size);
  case GK_BACKEND_ROCM: return gk__rocm_detect(out, why, why_size);
  case GK_BACKEND_VULKAN: return gk__vk_detect(out, 1, why, why_size);
  case GK_BACKEND_WGSL: return gk__wgsl_detect(out, why, why_size);
  case GK_BACKEND_METAL: return gk__metal_detect(out, why, why_size);
  case GK_BACKEND_CUDA: return gk__cuda_detect(out, why, why_size);
  default:
    gk__say(why, why_size, "unknown backend %d", (int)backend);
    return GK_EINVAL;
  }
}

GK_API int gk_device_detect(gk_device *out) {
  if (!out) return GK_EINVAL;
  for (int b = GK_BACKEND_CUDA; b <= GK_BACKEND_CPU; b++) {
    /* A Vulkan device of type CPU (lavapipe) is slower than the native
     * CPU backend: only an explicit request gets it (vulkan.c). */
    if (b == GK_BACKEND_VULKAN) {
      if (gk__vk_detect(out, 0, NULL, 0) == GK_OK) return GK_OK;
    } else if (gk_device_detect_backend((gk_backend)b, out, NULL, 0) == GK_OK) {
      return GK_OK;
    }
  }
  return GK_ENODEVICE;
}

/* ---- parsing ----------------------------------------------------------- */

/* "sm_86": a device is a compute capability, two or three digits. The
 * 'a'/'f' suffixes (sm_90a) name image targets, not devices. */
static int cuda_arch_ok(const char *a, char *why, size_t size) {
  size_t n = strlen(a), digits = 0;
  if (strncmp(a, "sm_", 3) == 0)
    while (isdigit((unsigned char)a[3 + digits])) digits++;
  if (n >= 5 && 3 + digits == n && digits <= 3 && a[3] != '0') return 1;
  gk__say(why, size,
      "cuda arch '%s' is not a compute capability like sm_86 or sm_90 "
      "(a device has no 'a' or 'f' suffix)",
      a);
  return 0;
}

/* "gfx90a", "gfx1030", "gfx11-generic", then ":feature+" / ":feature-"
 * settings as the device reports them ("gfx90a:sramecc+:xnack-"). */
static int rocm_arch_ok(const char *a, char *why, size_t size) {
  const char *p = a;
  if (strncmp(p, "gfx", 3) != 0) goto bad;
  p += 3;
  if (!isalnum((unsigned char)*p)) goto bad;
  while (isalnum((unsigned char)*p) || *p == '-') p++;
  while (*p == ':') {
    const char *f = ++p;
    while (islower((unsigned char)*p) || isdigit((unsigned char)*p)) p++;
    if (p == f || (*p != '+' && *p != '-')) goto bad;
    p++;
  }
  if (*p == '\0') return 1;
bad:
  gk__say(why, size,
      "rocm arch '%s' is not like gfx90a or gfx90a:sramecc+:xnack- "
      "(each feature ends in + or -)",
      a);
  return 0;
}

/* Metal and Vulkan name devices freely ("apple9", a Vulkan device name);
 * only keep the text printable and free of our separators. */
static int free_arch_ok(const char *a, const char *backend, char *why,
                        size_t size) {
  const char *p = a;
  while (isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.') p++;
  if (*p == '\0' && p != a) return 1;
  gk__say(why, size, "%s arch '%s' may hold only letters, digits, '_', '-', '.'",
      backend, a);
  return 0;
}

/* The spec with its backend spelt out, for the short forms people type:
 * a bare arch ("sm_89", "gfx942:xnack-", "x86-64-v3") names its backend,
 * and "cuda:8.9" is a compute capability (cuda:sm_89). Anything else is
 * copied as it is. 0 when it does not fit in size. */
static int spell_out(const char *spec, char *out, size_t size) {
  const char *opts = strchr(spec, ',');
  size_t an = opts ? (size_t)(opts - spec) : strlen(spec);
  const char *prefix = strncmp(spec, "sm_", 3) == 0 ? "cuda:"
                       : strncmp(spec, "gfx", 3) == 0 ? "rocm:"
                       : strncmp(spec, "x86-64", 6) == 0 ? "cpu:" : "";
  int major, minor, k = 0;
  char dot[8];
  if (strncmp(spec, "cuda:", 5) == 0 && sscanf(spec + 5, "%d.%d%n", &major, &minor, &k) == 2 &&
      (size_t)k == an - 5 && major > 0 && major < 100 && minor >= 0 && minor < 10 &&
      spec[5] != '0') {
    snprintf(dot, sizeof dot, "%d%d", major, minor);
    return snprintf(out, size, "cuda:sm_%s%s", dot, opts ? opts : "") < (int)size;
  }
  return snprintf(out, size, "%s%s", prefix, spec) < (int)size;
}

/* The spec a mistyped one most likely meant ("sm89", "cuda:89",
 * "compute_89", "sm_90a" -> "cuda:sm_89" / "cuda:sm_90"), in out; 0 when
 * there is no good guess. */
static int guess_spec(const char *spec, char *out, size_t size) {
  const char *p = spec;
  if (strncmp(p, "cuda:", 5) == 0) p += 5;
  if (strncmp(p, "compute_", 8) == 0) p += 8;
  else if (strncmp(p, "sm_", 3) == 0) p += 3;
  else if (strncmp(p, "sm", 2) == 0) p += 2;
  size_t digits = strspn(p, "0123456789");
  const char *end = p + digits;
  if (*end == 'a' || *end == 'f') end++; /* image targets, not devices */
  if (digits < 2 || digits > 3 || *p == '0' || (*end != '\0' && *end != ',')) return 0;
  return snprintf(out, size, "cuda:sm_%.*s%s", (int)digits, p, end) < (int)size;
}

/* "12.4" -> 12040, CUDA's encoding (1000 * major + 10 * minor). */
static int parse_cuda_driver(const char *v, int *out) {
  char *end;
  long major = strtol(v, &end, 10), minor = 0;
  if (end == v || !isdigit((unsigned char)*v) || major < 1 || major > 999)
    return 0;
  if (*end == '.') {
    const char *m = end + 1;
    if (!isdigit((unsigned char)*m)) return 0;
    minor = strtol(m, &end, 10);
    if (minor > 99) return 0;
  }
  if (*end != '\0') return 0;
  *out = (int)(major * 1000 + minor * 10);
  return 1;
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
  if (strlen(spec) >= sizeof buf) {
    gk__say(why, why_size, "device spec is too long (%zu characters)",
        strlen(spec));
    return GK_EINVAL;
  }
  if (!spell_out(spec, buf, sizeof buf)) {
    gk__say(why, why_size, "device spec is too long (%zu characters)", strlen(spec));
    return GK_EINVAL;
  }
  char *opts = strchr(buf, ',');
  if (opts) *opts++ = '\0';
  char *arch = strchr(buf, ':');
  if (arch) *arch++ = '\0';

  gk_backend b = gk_backend_from_name(buf);
  char guess[96];
  if (b == GK_BACKEND_NONE) {
    if (guess_spec(spec, guess, sizeof guess)) {
      gk__say(why, why_size, "device spec '%s' is not BACKEND:ARCH; did you mean %s?", spec,
              guess);
      return GK_EINVAL;
    }
    gk__say(why, why_size,
        "unknown backend '%s' in device spec '%s'; expected cuda, rocm, "
        "metal, vulkan, cpu or wgsl",
        buf, spec);
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
    int rc = gk_device_detect_backend(b, &d, why, why_size);
    if (rc != GK_OK) return rc;
    *out = d;
    return GK_OK;
  }

  d.backend = b;
  if (*arch == '\0' || strlen(arch) >= sizeof d.arch) {
    gk__say(why, why_size, "device spec '%s' has %s arch", spec,
        *arch ? "a too long" : "an empty");
    return GK_EINVAL;
  }
  int ok;
  switch (b) {
  case GK_BACKEND_CPU:
    ok = gk__x86_level_from_name(arch) != 0;
    if (!ok)
      gk__say(why, why_size,
          "unknown cpu level '%s' in device spec '%s'; valid: %s", arch, spec,
          gk__x86_level_list());
    break;
  case GK_BACKEND_CUDA: ok = cuda_arch_ok(arch, why, why_size); break;
  case GK_BACKEND_ROCM: ok = rocm_arch_ok(arch, why, why_size); break;
  case GK_BACKEND_WGSL: ok = gk__wgsl_arch_ok(arch, why, why_size); break;
  default: ok = free_arch_ok(arch, buf, why, why_size); break;
  }
  if (!ok) {
    /* The exact spec, when the mistake is a common one ("cuda:89"). */
    size_t len = why ? strlen(why) : 0;
    if (b == GK_BACKEND_CUDA && why && guess_spec(spec, guess, sizeof guess))
      snprintf(why + len, why_size - len, "; did you mean %s?", guess);
    return GK_EINVAL;
  }
  memcpy(d.arch, arch, strlen(arch) + 1);

  while (opts) {
    char *next = strchr(opts, ',');
    if (next) *next++ = '\0';
    if (*opts == '\0') {
      gk__say(why, why_size, "empty option in device spec '%s'", spec);
      return GK_EINVAL;
    }
    if (strncmp(opts, "driver=", 7) == 0 && b == GK_BACKEND_CUDA) {
      if (!parse_cuda_driver(opts + 7, &d.driver_version)) {
        gk__say(why, why_size,
            "bad driver version '%s' in device spec '%s'; write it like 12.4",
            opts + 7, spec);
        return GK_EINVAL;
      }
    } else {
      gk__say(why, why_size, "unknown option '%s' in device spec '%s'%s", opts,
          spec,
          strncmp(opts, "driver=", 7) == 0 ? " (driver= is for cuda only)"
                                           : "");
      return GK_EINVAL;
    }
    opts = next;
  }
  snprintf(d.name, sizeof d.name, "%s (from a spec)", spec);
  *out = d;
  return GK_OK;
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
