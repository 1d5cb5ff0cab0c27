/*
 * metal_target.c - the Metal backend's descriptor and the parts of the
 * backend that need no Apple system, built everywhere: target names and
 * the selection rule, the metallib checks (header, function list,
 * entries), and (off Apple) the stand-ins that say Metal needs macOS. The
 * driver side is metal.m, built only on Apple.
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

static int valid(const gk_device *dev, char *why, size_t why_size) {
  size_t n;
  int v;
  if (parse(dev->arch, &n, &v)) return 1;
  gk__say(why, why_size, "has arch '%s'; a metal device's arch is its OS and Metal version, "
      "like macos-metal3.1", dev->arch);
  return 0;
}

static int fits(const gk_device *dev, const gk_image_info *row, unsigned flags,
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

/* ---- metallib: the header and the function list -------------------------- */

/* Apple does not document the metallib container. Its layout here is the
 * one described publicly by those who read it (floor's metallib-dis, the
 * MetalLibraryArchive project): little endian throughout, an 88-byte
 * header
 *    0 "MTLB"        4 platform and container version (8 bytes)
 *   12 OS version    16 u64 file size
 *   24 u64 function list offset   32 u64 function list size
 *   40.. offsets and sizes of the public and private metadata and bitcode
 * and at the function list offset a u32 count, then for each function a
 * u32 length (counting itself) and tags: a four-character code, a u16 size
 * and that many bytes, up to "ENDT", which has no size. NAME holds the
 * function's name with its NUL; TYPE one byte, 2 for a kernel.
 * NO REAL METALLIB WAS CHECKED HERE: no Apple toolchain runs on these
 * machines, and tests/backends/metal writes small files of this layout itself. The
 * reader is strict only where a wrong guess cannot refuse a real image: it
 * bounds every read by the image, walks the tags rather than trusting the
 * lengths, and reads only NAME and TYPE. */
enum { MTLB_HEADER = 88, MTLB_KERNEL = 2 };

static uint32_t rd32(const unsigned char *p) {
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Looks `name` up in the function list [p, end): 1 found (*type its TYPE,
 * -1 when it has none), 0 not found, -1 when the list runs past its end.
 * With name NULL, only walks the list. */
static int function_list_find(const unsigned char *p, const unsigned char *end, const char *name,
                              int *type) {
  if (end - p < 4) return -1;
  uint32_t count = rd32(p);
  p += 4;
  for (uint32_t f = 0; f < count; f++) {
    if (end - p < 4) return -1;
    p += 4; /* the entry's length: the tags say where it ends */
    const unsigned char *fname = NULL;
    size_t fname_len = 0;
    int ftype = -1;
    for (;;) {
      if (end - p < 4) return -1;
      if (memcmp(p, "ENDT", 4) == 0) {
        p += 4;
        break;
      }
      if (end - p < 6) return -1;
      size_t len = p[4] | (size_t)p[5] << 8;
      const unsigned char *data = p + 6;
      if ((size_t)(end - data) < len) return -1;
      if (memcmp(p, "NAME", 4) == 0) {
        /* the name and its NUL; a name with no NUL ends at the tag */
        const unsigned char *nul = memchr(data, '\0', len);
        fname = data;
        fname_len = nul ? (size_t)(nul - data) : len;
      } else if (memcmp(p, "TYPE", 4) == 0 && len >= 1) {
        ftype = data[0];
      }
      p = data + len;
    }
    if (name && fname && fname_len == strlen(name) && memcmp(fname, name, fname_len) == 0) {
      *type = ftype;
      return 1;
    }
  }
  return 0;
}

/* "MTLB" magic, a function list inside the image, and each entry of the
 * row a kernel function of that list. GK_OK or GK_EFORMAT with why. */
static int metallib_check(const void *bytes, size_t size, const gk_image_info *row,
                          const gk__entries *e, char *why, size_t why_size) {
  const unsigned char *b = bytes;
  if (size < 4 || memcmp(bytes, "MTLB", 4) != 0) {
    gk__say(why, why_size, "the image is not a metallib (no 'MTLB' header)");
    return GK_EFORMAT;
  }
  if (size < MTLB_HEADER) {
    gk__say(why, why_size, "the metallib is %zu bytes, too short for its %d-byte header", size,
            MTLB_HEADER);
    return GK_EFORMAT;
  }
  /* Readers differ on whether the list's size counts its u32 count: allow
   * both, and never past the image. */
  uint64_t off = rd64(b + 24), len = rd64(b + 32);
  if (off < MTLB_HEADER || off > size || len > size - off) {
    gk__say(why, why_size, "the metallib's function list (offset %llu, %llu bytes) lies outside "
            "the image (%zu bytes)", (unsigned long long)off, (unsigned long long)len, size);
    return GK_EFORMAT;
  }
  const unsigned char *list = b + off;
  const unsigned char *end = list + (len + 4 <= size - off ? len + 4 : len);
  int type;
  if (function_list_find(list, end, NULL, &type) < 0) {
    gk__say(why, why_size, "the metallib's function list is malformed (a function or tag runs "
            "past its end)");
    return GK_EFORMAT;
  }
  for (int i = 0; i < e->n; i++) {
    if (function_list_find(list, end, e->name[i], &type) != 1) {
      gk__say(why, why_size, "the metallib has no kernel '%s' (not in its function list)",
              e->name[i]);
      return GK_EFORMAT;
    }
    if (type != -1 && type != MTLB_KERNEL) {
      gk__say(why, why_size, "the metallib's function '%s' is not a kernel (TYPE %d; kernels "
              "are %d)", e->name[i], type, MTLB_KERNEL);
      return GK_EFORMAT;
    }
  }
  return GK_OK;
}

#ifndef __APPLE__
/* Off Apple: there is no Metal. Say so plainly (the archive may still hold
 * metallibs for the Macs it is shipped to). */
#define NO_METAL "Metal runs on Apple systems only; this libgk has no Metal backend"

int gk__metal_detect(gk_device *out, int asked, char *why, size_t why_size) {
  (void)out;
  gk__say(why, why_size, "%s", NO_METAL);
  return GK_ENODEVICE;
}

static int metal_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                      const gk__entries *e, void *bytes, size_t size, void **state) {
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

const gk__ops gk__metal_ops = {.load = metal_load, .symbol = metal_symbol,
                               .kernel_info = metal_kernel_info, .unload = metal_unload,
                               .launches = 1};
#endif

/* ---- the backend --------------------------------------------------------- */

const gk__backend gk__metal_backend = {
    .id = GK_BACKEND_METAL, .name = "metal",
    .detect = gk__metal_detect, /* metal.m on Apple, above elsewhere */
    .valid = valid, .fits = fits,
    .formats = {{"metallib", metallib_check}},
    .ops = &gk__metal_ops, /* metal.m on Apple, above elsewhere */
};
