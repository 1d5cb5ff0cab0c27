/*
 * cuda_arch.c - the CUDA backend's descriptor, and what libgk knows about
 * CUDA without a driver (cuda.c is the driver side): the names of targets
 * ("sm_90a", "sm_100f", "compute_75") and of devices in a spec ("sm_86",
 * "8.6", ",driver=12.4"), NVIDIA's rule for which image runs on which
 * device, what to say when none does, and the offline checks of a cubin's
 * ELF (or a PTX text) against its index row (so `gk verify` and every
 * load).
 *
 * The rule (NVIDIA's binary and PTX compatibility, docs/archive.md):
 *   sm_XYa  SASS for exactly X.Y (arch-specific features)
 *   sm_XYf  SASS for the family: major X, any minor >= Y
 *   sm_XY   SASS for major X, any minor >= Y
 *   compute_XY  PTX, JIT-compiled by the driver for any capability >= X.Y
 * preferred in that order (within one kind, the highest minor, or for PTX
 * the highest compute_XY, not above the device). Two driver conditions
 * come from CUDA's compatibility rules: PTX needs a driver at least as new
 * as the toolkit that wrote it (else CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
 * and SASS needs a driver of at least the toolkit's major version (minor
 * version compatibility covers older drivers of the same major only). The
 * toolkit is read from the row's `toolchain` ("nvcc 13.0.88"); a driver
 * version of 0 (a device spec without ",driver=") is not held against any
 * image. GK_LOAD_NO_JIT rules PTX out.
 *
 * Cubin checks (all offsets bounds-checked; the header is untrusted):
 * e_machine EM_CUDA, ET_EXEC; the SM number from e_flags in either layout
 * (EI_ABIVERSION >= 8, CUDA 13: bits 8-15; older: bits 0-7); the 'a' flag
 * from the .nv.compat attribute EIATTR 0x09; the exact target and the
 * toolkit release from the .note.nv.tkinfo note ("-arch sm_100f", "V13.0.88")
 * when present; every entry point of the row as a ".text.NAME" section.
 * PTX: the .version and .target directives, the entries as ".entry NAME".
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

/* ---- names ---------------------------------------------------------------- */

int gk__cuda_parse_target(const char *t, gk__cuda_target *out) {
  gk__cuda_target r = {0, 0, 0};
  const char *p;
  if (!t) return 0;
  if (strncmp(t, "sm_", 3) == 0) {
    p = t + 3;
  } else if (strncmp(t, "compute_", 8) == 0) {
    p = t + 8;
    r.ptx = 1;
  } else {
    return 0;
  }
  int digits = 0;
  while (isdigit((unsigned char)p[digits])) digits++;
  if (digits < 2 || digits > 3 || p[0] == '0') return 0;
  for (int i = 0; i < digits; i++) r.cc = r.cc * 10 + (p[i] - '0');
  p += digits;
  if (*p == 'a' || *p == 'f') r.suffix = *p++;
  if (*p != '\0') return 0;
  *out = r;
  return 1;
}

/* The decimal number of 1 or 2 digits at *p, moving *p past it; -1 when
 * there is none or it is longer. */
static int two_digits(const char **p) {
  int v = 0, n = 0;
  while (**p >= '0' && **p <= '9' && n < 3) v = v * 10 + (*(*p)++ - '0'), n++;
  return n >= 1 && n <= 2 ? v : -1;
}

int gk__cuda_toolkit_version(const char *toolchain) {
  if (!toolchain || strncmp(toolchain, "nvcc ", 5) != 0) return 0;
  /* "nvcc 13.0.88": the release is major.minor, the patch does not matter
   * to compatibility. (No sscanf: a selection runs this on every row.) */
  const char *p = toolchain + 5;
  const int major = two_digits(&p);
  if (major < 1 || *p++ != '.') return 0;
  const int minor = two_digits(&p);
  if (minor < 0) return 0;
  return major * 1000 + minor * 10;
}

/* 13040 -> "13.4" */
static const char *ver_text(int v, char *buf, size_t size) {
  snprintf(buf, size, "%d.%d", v / 1000, v % 1000 / 10);
  return buf;
}

/* ---- device specs -------------------------------------------------------- */

/* "sm_86": a device is a compute capability, two or three digits. The
 * 'a'/'f' suffixes (sm_90a) name image targets, not devices. */
static int device_target(const char *arch, gk__cuda_target *d) {
  return gk__cuda_parse_target(arch, d) && !d->ptx && !d->suffix;
}

/* A spec's arch: "sm_86", or "8.6" as CUDA writes a compute capability
 * (respelt sm_86). */
static int spec_arch(char *arch, size_t size, const char *spec, char *why, size_t why_size) {
  int major, minor, k = 0;
  gk__cuda_target d;
  if (sscanf(arch, "%d.%d%n", &major, &minor, &k) == 2 && (size_t)k == strlen(arch) &&
      major > 0 && major < 100 && minor >= 0 && minor < 10 && arch[0] != '0')
    snprintf(arch, size, "sm_%d%d", major, minor);
  if (device_target(arch, &d)) return 1;
  gk__say(why, why_size,
          "cuda arch '%s' is not a compute capability like sm_86 or sm_90 "
          "(a device has no 'a' or 'f' suffix)",
          arch);
  return 0;
}

/* "12.4" -> 12040, CUDA's encoding (1000 * major + 10 * minor). */
static int parse_driver(const char *v, int *out) {
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

/* ",driver=X.Y": the driver's CUDA version, which the rule holds images to. */
static int spec_option(gk_device *d, const char *opt, const char *spec, char *why,
                       size_t why_size) {
  if (strncmp(opt, "driver=", 7) != 0) return -1;
  if (parse_driver(opt + 7, &d->driver_version)) return 1;
  gk__say(why, why_size, "bad driver version '%s' in device spec '%s'; write it like 12.4",
          opt + 7, spec);
  return 0;
}

/* The spec a mistyped one most likely meant ("sm89", "cuda:89",
 * "compute_89", "sm_90a" -> "cuda:sm_89" / "cuda:sm_90"). */
static int spec_guess(const char *spec, char *out, size_t size) {
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

/* ---- the selection rule -------------------------------------------------- */

static int valid(const gk_device *dev, char *why, size_t why_size) {
  gk__cuda_target d;
  if (device_target(dev->arch, &d)) return 1;
  gk__say(why, why_size,
           "is not a compute capability like sm_86 (a device has no 'a' or "
           "'f' suffix and is no compute_XY)");
  return 0;
}

int gk__cuda_fits(const gk_device *dev, const gk_image_info *row,
                  unsigned flags, long *score, char *why, size_t why_size) {
  gk__cuda_target d, t;
  char a[16], b[16];
  if (!device_target(dev->arch, &d)) { /* a selection checks valid() first */
    gk__say(why, why_size, "device arch '%s' is not a compute capability",
             dev->arch);
    return 0;
  }
  if (!gk__cuda_parse_target(row->target, &t)) {
    gk__say(why, why_size, "unknown cuda target '%s'", row->target);
    return 0;
  }
  if (strcmp(row->format, t.ptx ? "ptx" : "cubin") != 0) {
    gk__say(why, why_size, "target %s cannot be a %s image", row->target,
             row->format);
    return 0;
  }
  const int dmaj = d.cc / 10, dmin = d.cc % 10, tmaj = t.cc / 10,
            tmin = t.cc % 10;
  const int tk = gk__cuda_toolkit_version(row->toolchain);
  const int drv = dev->driver_version;

  if (t.ptx) {
    if (flags & GK_LOAD_NO_JIT) {
      gk__say(why, why_size,
               "PTX needs the driver's JIT compiler, which GK_LOAD_NO_JIT "
               "forbids");
      return 0;
    }
    if ((t.suffix == 'a' && t.cc != d.cc) ||
        (t.suffix == 'f' && (tmaj != dmaj || tmin > dmin)) ||
        (!t.suffix && t.cc > d.cc)) {
      gk__say(why, why_size, "%s PTX needs a device of %s %d.%d, device is %s",
               row->target,
               t.suffix == 'a' ? "exactly" : t.suffix == 'f' ? "family" : "at least",
               tmaj, tmin, dev->arch);
      return 0;
    }
    if (tk && drv && drv < tk) {
      gk__say(why, why_size,
               "PTX from CUDA %s needs a driver >= %s; this driver is %s",
               ver_text(tk, a, sizeof a), a, ver_text(drv, b, sizeof b));
      return 0;
    }
    *score = t.cc; /* below every SASS score */
    gk__say(why, why_size, "%s PTX, JIT-compiled for %s by the driver%s%s%s",
             row->target, dev->arch,
             tk && !drv ? " (driver version unknown; it must be >= " : "",
             tk && !drv ? ver_text(tk, a, sizeof a) : "", tk && !drv ? ")" : "");
    return 1;
  }

  if (t.suffix == 'a' ? t.cc != d.cc : tmaj != dmaj || tmin > dmin) {
    if (t.suffix == 'a')
      gk__say(why, why_size, "%s runs on %d.%d only, device is %s",
               row->target, tmaj, tmin, dev->arch);
    else if (tmaj != dmaj)
      gk__say(why, why_size, "%s is SASS for major %d, device is %s",
               row->target, tmaj, dev->arch);
    else
      gk__say(why, why_size, "%s needs minor >= %d, device is %s",
               row->target, tmin, dev->arch);
    return 0;
  }
  if (tk && drv && drv / 1000 < tk / 1000) {
    gk__say(why, why_size,
             "cubins from CUDA %s need a driver >= %d.0; this driver is %s",
             ver_text(tk, a, sizeof a), tk / 1000, ver_text(drv, b, sizeof b));
    return 0;
  }
  *score = t.suffix == 'a' ? 3000 : t.suffix == 'f' ? 2000 + tmin : 1000 + tmin;
  gk__say(why, why_size, "%s runs on %s (%s)", row->target, dev->arch,
           t.suffix == 'a'   ? "arch-specific, exact match"
           : t.suffix == 'f' ? "family"
           : tmin == dmin    ? "SASS, same capability"
                             : "SASS, same major");
  return 1;
}

/* Orders targets by capability, then '', 'a', 'f'. */
static int cmp_target(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  gk__cuda_target x = {0, 0, 0}, y = {0, 0, 0};
  gk__cuda_parse_target(a, &x);
  gk__cuda_parse_target(b, &y);
  if (x.cc != y.cc) return x.cc < y.cc ? -1 : 1;
  if (x.suffix != y.suffix) return x.suffix < y.suffix ? -1 : 1;
  return strcmp(a, b);
}

/* What the no-image message says the archive has ("cuda sm_75..sm_120 (9
 * cubins) + compute_75 PTX (CUDA 13.0)"), with in `note` why the driver
 * rules images out. */
static void holdings(gk__sb *has, gk__sb *note, const gk__row *rows, size_t from, size_t to,
                     const char *variant, const gk_device *dev, unsigned flags) {
  const char **sass = malloc((to - from + 1) * sizeof *sass);
  const char **ptx = malloc((to - from + 1) * sizeof *ptx);
  size_t ns = 0, np = 0;
  int ptx_tk = 0, sass_tk = 0, ptx_driver = 0, sass_driver = 0, ptx_nojit = 0;
  if (!sass || !ptx) {
    has->oom = 1;
    goto out;
  }
  for (size_t i = from; i < to; i++) {
    const gk_image_info *r = &rows[i].info;
    gk__cuda_target t;
    if (strcmp(r->variant, variant) != 0 || strcmp(r->backend, "cuda") != 0 ||
        !gk__cuda_parse_target(r->target, &t))
      continue;
    char why[160];
    long score;
    int tk = gk__cuda_toolkit_version(r->toolchain);
    int fits = gk__cuda_fits(dev, r, flags, &score, why, sizeof why);
    if (t.ptx) {
      ptx[np++] = r->target;
      if (tk > ptx_tk) ptx_tk = tk;
      if (!fits && strstr(why, "needs a driver")) ptx_driver = 1;
      if (!fits && strstr(why, "GK_LOAD_NO_JIT")) ptx_nojit = 1;
    } else {
      sass[ns++] = r->target;
      if (tk > sass_tk) sass_tk = tk;
      if (!fits && strstr(why, "need a driver")) sass_driver = 1;
    }
  }
  qsort(sass, ns, sizeof *sass, cmp_target);
  qsort(ptx, np, sizeof *ptx, cmp_target);
  if (ns + np == 0) gk__sb_printf(has, "no cuda image");
  if (ns >= 3)
    gk__sb_printf(has, "cuda %s..%s (%zu cubins)", sass[0], sass[ns - 1], ns);
  else
    for (size_t i = 0; i < ns; i++)
      gk__sb_printf(has, "%s%s", i ? ", " : "cuda ", sass[i]);
  for (size_t i = 0; i < np; i++)
    gk__sb_printf(has, "%s%s", i ? ", " : ns ? " + " : "cuda ", ptx[i]);
  if (np) {
    char v[16];
    gk__sb_printf(has, " PTX");
    if (ptx_tk) gk__sb_printf(has, " (CUDA %s)", ver_text(ptx_tk, v, sizeof v));
  }
  /* Other backends' rows, as the generic message lists them. */
  for (size_t i = from; i < to; i++) {
    const gk_image_info *r = &rows[i].info;
    if (strcmp(r->variant, variant) == 0 && strcmp(r->backend, "cuda") != 0)
      gk__sb_printf(has, ", %s %s", r->backend, r->target);
  }

  char a[16], b[16];
  int drv = dev->driver_version;
  if (sass_driver)
    gk__sb_printf(note, "%scubins from CUDA %s need a driver >= %d.0, this driver is %s",
                  note->len ? "; " : "", ver_text(sass_tk, a, sizeof a),
                  sass_tk / 1000, ver_text(drv, b, sizeof b));
  if (ptx_driver)
    gk__sb_printf(note, "%sPTX from CUDA %s needs a driver >= %s, this driver is %s",
                  note->len ? "; " : "", ver_text(ptx_tk, a, sizeof a), a,
                  ver_text(drv, b, sizeof b));
  if (ptx_nojit)
    gk__sb_printf(note, "%sPTX not considered (GK_LOAD_NO_JIT)", note->len ? "; " : "");
out:
  free(sass);
  free(ptx);
}

/* ---- cubin ELF ---------------------------------------------------------- */

static unsigned rd16(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) {
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) {
  return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

typedef struct section {
  const char *name; /* inside the image, NUL-terminated (checked) */
  const unsigned char *data;
  uint64_t size;
} section;

/* The sections of an ELF64 whose header gk__elf_read has checked (size >= 64,
 * the section table inside the image, entries of at least 64 bytes). Each
 * section's name must lie in the section-name table and end there; its data
 * inside the image (SHT_NOBITS sections have no data). Returns the count and
 * a new array in *out (to free), or -1 with why. */
static int read_sections(const unsigned char *b, size_t size, section **outp,
                         char *why, size_t wsize) {
  uint64_t shoff = rd64(b + 40);
  unsigned shentsize = rd16(b + 58), shnum = rd16(b + 60), shstrndx = rd16(b + 62);
  section *out;
  *outp = NULL;
  if (shnum == 0 || shstrndx >= shnum) {
    snprintf(why, wsize, "the cubin's section table is unusable (%u sections, names in %u)",
             shnum, shstrndx);
    return -1;
  }
  const unsigned char *strh = b + shoff + (uint64_t)shstrndx * shentsize;
  uint64_t str_off = rd64(strh + 24), str_size = rd64(strh + 32);
  if (str_off > size || str_size > size - str_off || str_size == 0 ||
      b[str_off + str_size - 1] != '\0') {
    snprintf(why, wsize, "the cubin's section-name table lies outside the image");
    return -1;
  }
  if (!(out = malloc(shnum * sizeof *out))) {
    snprintf(why, wsize, "out of memory reading the cubin's sections");
    return -1;
  }
  for (unsigned i = 0; i < shnum; i++) {
    const unsigned char *h = b + shoff + (uint64_t)i * shentsize;
    uint32_t name = rd32(h), type = rd32(h + 4);
    uint64_t off = rd64(h + 24), sz = rd64(h + 32);
    if (name >= str_size) {
      snprintf(why, wsize, "section %u of the cubin has a name outside its name table", i);
      free(out);
      return -1;
    }
    out[i].name = (const char *)b + str_off + name;
    out[i].data = NULL;
    out[i].size = 0;
    if (type != 8 /* SHT_NOBITS */ && sz) {
      if (off > size || sz > size - off) {
        snprintf(why, wsize, "section '%s' of the cubin lies outside the image",
                 out[i].name);
        free(out);
        return -1;
      }
      out[i].data = b + off;
      out[i].size = sz;
    }
  }
  *outp = out;
  return (int)shnum;
}

static const section *find_section(const section *s, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(s[i].name, name) == 0) return &s[i];
  return NULL;
}

/* .nv.compat holds EIATTR records: a format byte, an attribute byte, then
 * a 16-bit value (formats 1-3) or a 16-bit size and that many bytes (4).
 * Attribute 0x09 is 1 in arch-specific ('a') images. Returns the value, 0
 * when absent, -1 when the section is malformed. */
static int compat_arch_specific(const section *s) {
  uint64_t i = 0;
  int value = 0;
  while (i < s->size) {
    if (s->size - i < 4) return -1;
    unsigned fmt = s->data[i], attr = s->data[i + 1], v = rd16(s->data + i + 2);
    if (fmt == 4) {
      if (v > s->size - i - 4) return -1;
      i += 4 + v;
      continue;
    }
    if (fmt < 1 || fmt > 3) return -1;
    if (attr == 0x09) value = (int)v;
    i += 4;
  }
  return value;
}

/* .note.nv.tkinfo: one ELF note (owner "NVIDIA Corp") whose descriptor is
 * six 32-bit words - a format version, a reserved word, then offsets of the
 * tool name, the tool version, the build and the tool's options in a string
 * table that follows. ptxas writes "-arch sm_100f -m 64 " as its options and
 * "Cuda compilation tools, release 13.0, V13.0.88" as its version. Copies
 * the -arch value and the "V..." version; 0 when the note is not there or
 * not in that shape (then nothing can be checked from it). */
static int tkinfo(const section *s, char *arch, size_t asize, char *ver,
                  size_t vsize) {
  if (!s || s->size < 12) return 0;
  uint32_t namesz = rd32(s->data), descsz = rd32(s->data + 4);
  uint64_t desc = 12 + (((uint64_t)namesz + 3) & ~(uint64_t)3);
  if (desc > s->size || descsz > s->size - desc || descsz < 24) return 0;
  const unsigned char *d = s->data + desc;
  const char *strs = (const char *)d + 24;
  uint64_t ssize = descsz - 24;
  uint32_t vo = rd32(d + 12), oo = rd32(d + 20);
  if (vo >= ssize || oo >= ssize || memchr(strs + vo, '\0', ssize - vo) == NULL ||
      memchr(strs + oo, '\0', ssize - oo) == NULL)
    return 0;
  const char *opt = strstr(strs + oo, "-arch ");
  const char *v = strstr(strs + vo, ", V");
  arch[0] = ver[0] = '\0';
  if (opt) {
    opt += 6;
    size_t n = strcspn(opt, " ");
    if (n < asize) {
      memcpy(arch, opt, n);
      arch[n] = '\0';
    }
  }
  if (v) {
    v += 3;
    size_t n = strcspn(v, " ");
    if (n < vsize) {
      memcpy(ver, v, n);
      ver[n] = '\0';
    }
  }
  return 1;
}

/* The cubin's own checks, for bytes whose ELF header gk__elf_read has
 * validated. 1, or 0 with why. */
static int cubin_fits(const void *bytes, size_t size, const gk_image_info *row,
                      const gk__entries *e, char *why, size_t wsize) {
  const unsigned char *b = bytes;
  gk__cuda_target t;
  if (!gk__cuda_parse_target(row->target, &t) || t.ptx) {
    snprintf(why, wsize, "cuda target '%s' is not a cubin target like sm_86, sm_90a or sm_100f",
             row->target);
    return 0;
  }
  unsigned abiv = b[8];
  uint32_t flags = rd32(b + 48);
  unsigned sm = abiv >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  if ((int)sm != t.cc) {
    snprintf(why, wsize,
             "the cubin is built for sm_%u (e_flags 0x%08x, EI_ABIVERSION %u), "
             "not %s",
             sm, (unsigned)flags, abiv, row->target);
    return 0;
  }
  section *secs;
  int ok = 0, n = read_sections(b, size, &secs, why, wsize);
  if (n < 0) return 0;

  const section *compat = find_section(secs, n, ".nv.compat");
  int specific = compat ? compat_arch_specific(compat) : 0;
  if (specific < 0) {
    snprintf(why, wsize, "the cubin's .nv.compat section is malformed");
    goto out;
  }
  if ((specific != 0) != (t.suffix == 'a')) {
    snprintf(why, wsize,
             specific ? "the cubin is arch-specific (.nv.compat), but %s has no 'a'"
                      : "the cubin is not arch-specific (no flag in .nv.compat), "
                        "but %s asks for it",
             row->target);
    goto out;
  }
  /* The note is the only place that tells 'f' from plain; a toolkit that
   * does not write it leaves 'f' unchecked. */
  char arch[32], ver[32];
  if (tkinfo(find_section(secs, n, ".note.nv.tkinfo"), arch, sizeof arch, ver,
             sizeof ver)) {
    if (arch[0] && strcmp(arch, row->target) != 0) {
      snprintf(why, wsize, "the cubin was compiled for %s (ptxas -arch in .note.nv.tkinfo), not %s",
               arch, row->target);
      goto out;
    }
    /* The row says which toolkit made it ("nvcc 13.0.88"); so does ptxas. */
    if (ver[0] && strncmp(row->toolchain, "nvcc ", 5) == 0 &&
        strcmp(row->toolchain + 5, ver) != 0) {
      snprintf(why, wsize, "the cubin was made by CUDA %s (.note.nv.tkinfo), but the row says '%s'",
               ver, row->toolchain);
      goto out;
    }
  }

  for (int i = 0; i < e->n; i++) {
    char sec[GK__NAME_MAX + 8];
    snprintf(sec, sizeof sec, ".text.%.*s", GK__NAME_MAX - 1, e->name[i]);
    if (!find_section(secs, n, sec)) {
      snprintf(why, wsize, "the cubin has no kernel '%s' (no section %s)", e->name[i], sec);
      goto out;
    }
  }
  ok = 1;
out:
  free(secs);
  return ok;
}

static int cubin_check(const void *bytes, size_t size, const gk_image_info *row,
                       const gk__entries *e, char *why, size_t why_size) {
  gk__elf h;
  return gk__elf_read(bytes, size, GK__EM_CUDA, GK__ET_EXEC, &h, why, why_size) &&
                 cubin_fits(bytes, size, row, e, why, why_size)
             ? GK_OK
             : GK_EFORMAT;
}

/* ---- PTX ----------------------------------------------------------------- */

/* The value of directive `dir` (".target") at the start of a line of the
 * PTX text, up to the end of its first word. */
static int directive(const char *p, size_t size, const char *dir, char *out,
                     size_t osize) {
  size_t dl = strlen(dir);
  for (size_t i = 0; i + dl < size; i++) {
    if ((i == 0 || p[i - 1] == '\n') && memcmp(p + i, dir, dl) == 0 &&
        (p[i + dl] == ' ' || p[i + dl] == '\t')) {
      size_t s = i + dl;
      while (s < size && (p[s] == ' ' || p[s] == '\t')) s++;
      size_t e = s;
      while (e < size && !isspace((unsigned char)p[e]) && p[e] != ',') e++;
      if (e - s == 0 || e - s >= osize) return 0;
      memcpy(out, p + s, e - s);
      out[e - s] = '\0';
      return 1;
    }
  }
  return 0;
}

/* PTX text: the .version and .target directives, each entry an .entry.
 * 1, or 0 with why. */
static int ptx_fits(const void *bytes, size_t size, const gk_image_info *row,
                    const gk__entries *e, char *why, size_t wsize) {
  const char *p = bytes;
  gk__cuda_target t;
  if (!gk__cuda_parse_target(row->target, &t) || !t.ptx) {
    snprintf(why, wsize, "cuda target '%s' is not a PTX target like compute_75", row->target);
    return 0;
  }
  /* The driver takes PTX as a C string: an embedded NUL would cut it. */
  if (size == 0 || memchr(p, '\0', size) != NULL) {
    snprintf(why, wsize, "the PTX is %s", size ? "not text (it holds a NUL byte)" : "empty");
    return 0;
  }
  char version[16], target[32];
  if (!directive(p, size, ".version", version, sizeof version)) {
    snprintf(why, wsize, "the PTX has no .version directive");
    return 0;
  }
  if (!directive(p, size, ".target", target, sizeof target)) {
    snprintf(why, wsize, "the PTX has no .target directive");
    return 0;
  }
  /* compute_75 is written ".target sm_75". */
  char want[32];
  snprintf(want, sizeof want, "sm_%.24s", row->target + 8);
  if (strcmp(target, want) != 0) {
    snprintf(why, wsize, "the PTX targets %s (.target), not %s", target, row->target);
    return 0;
  }
  for (int i = 0; i < e->n; i++) {
    /* ".entry NAME(" at some point of the text. */
    const char *name = e->name[i];
    size_t nl = strlen(name);
    int found = 0;
    for (size_t k = 0; !found && k + 7 + nl < size; k++)
      found = memcmp(p + k, ".entry ", 7) == 0 && memcmp(p + k + 7, name, nl) == 0 &&
              (p[k + 7 + nl] == '(' || isspace((unsigned char)p[k + 7 + nl]));
    if (!found) {
      snprintf(why, wsize, "the PTX has no kernel '%s' (no .entry %s)", name, name);
      return 0;
    }
  }
  return 1;
}

static int ptx_check(const void *bytes, size_t size, const gk_image_info *row,
                     const gk__entries *e, char *why, size_t why_size) {
  return ptx_fits(bytes, size, row, e, why, why_size) ? GK_OK : GK_EFORMAT;
}

/* ---- the backend --------------------------------------------------------- */

const gk__backend gk__cuda_backend = {
    .id = GK_BACKEND_CUDA, .name = "cuda", .detect = gk__cuda_detect, /* cuda.c */
    .bare = "sm_", .arch = spec_arch, .option = spec_option, .guess = spec_guess,
    .valid = valid, .fits = gk__cuda_fits, .holdings = holdings,
    .formats = {{"cubin", cubin_check}, {"ptx", ptx_check}},
    .ops = &gk__cuda_ops, /* cuda.c */
};
