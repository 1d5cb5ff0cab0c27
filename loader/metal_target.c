/*
 * metal_target.c - the parts of the Metal backend that need no Apple
 * system, built everywhere: target names and the selection rule, the
 * metallib header check of `gk verify`, and (off Apple) the stand-ins that
 * say Metal needs macOS. The driver side is metal.m, built only on Apple.
 *
 * Targets are "OS-metalX.Y": the OS ("macos") and the Metal language
 * version the image was compiled for (AIR is not per GPU). A device's arch
 * has the same form, with the newest language version its OS supports
 * (macOS 12: 2.4, 13: 3.0, 14: 3.1, 15: 3.2). An image fits a device of
 * the same OS whose version is not older; the newest fitting image wins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

/* "macos-metal3.1" -> os "macos" (os_len 5), version 301. */
static int parse(const char *s, size_t *os_len, int *version) {
  const char *m = s ? strstr(s, "-metal") : NULL;
  if (!m || m == s) return 0;
  for (const char *p = s; p < m; p++)
    if (!(*p >= 'a' && *p <= 'z')) return 0;
  const char *v = m + 6;
  if (v[0] < '1' || v[0] > '9' || v[1] != '.' || v[2] < '0' || v[2] > '9' || v[3]) return 0;
  *os_len = (size_t)(m - s);
  *version = (v[0] - '0') * 100 + (v[2] - '0');
  return 1;
}

int gk__metal_valid(const gk_device *dev, char *why, size_t why_size) {
  size_t n;
  int v;
  if (parse(dev->arch, &n, &v)) return 1;
  gk__say(why, why_size, "has arch '%s'; a metal device's arch is its OS and Metal version, "
      "like macos-metal3.1", dev->arch);
  return 0;
}

int gk__metal_fits(const gk_device *dev, const gk_image_info *row, unsigned flags,
                   long *score, char *why, size_t why_size) {
  size_t dn, rn;
  int dv, rv;
  (void)flags;
  if (strcmp(row->format, "metallib") != 0 || !parse(row->target, &rn, &rv)) {
    gk__say(why, why_size, "not a metallib for a target like macos-metal3.0 ('%s', '%s')",
        row->format, row->target);
    return 0;
  }
  if (!parse(dev->arch, &dn, &dv)) {
    gk__say(why, why_size, "device arch '%s' is not like macos-metal3.1", dev->arch);
    return 0;
  }
  if (rn != dn || strncmp(row->target, dev->arch, rn) != 0) {
    gk__say(why, why_size, "built for %.*s, device runs %.*s", (int)rn, row->target, (int)dn,
        dev->arch);
    return 0;
  }
  if (rv > dv) {
    gk__say(why, why_size, "needs %s, device has %s", row->target, dev->arch);
    return 0;
  }
  *score = rv;
  gk__say(why, why_size, "%s runs on %s", row->target, dev->arch);
  return 1;
}

/* A metallib starts with "MTLB". The rest of its header is not documented
 * by Apple; the SHA-256 vouches for it, and the driver parses it. */
int gk__metallib_check(const void *bytes, size_t size, char *why, size_t why_size) {
  if (size < 16 || memcmp(bytes, "MTLB", 4) != 0) {
    gk__say(why, why_size, "the image is not a metallib (no 'MTLB' header)");
    return GK_EFORMAT;
  }
  return GK_OK;
}

#ifndef __APPLE__
/* Off Apple: there is no Metal. Say so plainly (the archive may still hold
 * metallibs for the Macs it is shipped to). */
#define NO_METAL "Metal runs on Apple systems only; this libgk has no Metal backend"

int gk__metal_detect(gk_device *out, char *why, size_t why_size) {
  (void)out;
  gk__say(why, why_size, "%s", NO_METAL);
  return GK_ENODEVICE;
}

static int metal_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                      void *bytes, size_t size, void **state) {
  (void)dev, (void)row, (void)size, (void)state;
  free(bytes);
  return gk__fail(ar, GK_ENODEVICE, "cannot load a metallib: %s", NO_METAL);
}
static void *metal_symbol(void *s, const char *n) { (void)s, (void)n; return NULL; }
static int metal_kernel_info(void *s, const char *n, gk_kernel_info *o) {
  (void)s, (void)n, (void)o;
  return GK_ENOSYMBOL;
}
static void metal_unload(void *s) { (void)s; }

const gk__gpu_ops gk__metal_ops = {GK_BACKEND_METAL, metal_load, metal_symbol,
                                   metal_kernel_info, metal_unload, NULL, NULL};
#endif
