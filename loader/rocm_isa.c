/*
 * rocm_isa.c - the ROCm backend's descriptor (rocm.c is its driver side,
 * HSA) and AMD GPU target IDs: parsing "gfx90a:sramecc+:xnack-", the
 * processors libgk knows (their ELF machine numbers, target features and
 * generic families), the shape of a device spec, the ROCm selection rule,
 * and the check of a code object against its index row. No driver is
 * touched here: everything works on names and header bytes, so `gk
 * verify`, `gk probe --device rocm:...` and the tests run on machines
 * without an AMD GPU.
 *
 * Sources: LLVM's AMDGPUUsage ("Processors", "Target ID", "Generic
 * Processors", "ELF Header": EF_AMDGPU_MACH, the xnack/sramecc fields and
 * EF_AMDGPU_GENERIC_VERSION) and the compatibility rule of comgr's
 * isCompatibleIsaName / ROCr's Isa::IsCompatible.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "gk_internal.h"

enum { XNACK = 1, SRAMECC = 2 };

/* A processor: its EF_AMDGPU_MACH value, the target features a target ID
 * may set for it, and the generic target that covers it (if any). Generic
 * targets are rows too, with `generic` NULL and is_generic set. */
typedef struct proc {
  const char *name;
  unsigned mach;
  unsigned features;
  const char *generic;
  int is_generic;
} proc;

#define G9 "gfx9-generic"
#define G94 "gfx9-4-generic"
#define G101 "gfx10-1-generic"
#define G103 "gfx10-3-generic"
#define G11 "gfx11-generic"
#define G12 "gfx12-generic"

/* amdgcn processors of the EF_AMDGPU_MACH table (LLVM 20). A processor
 * that joined a generic family later would need a minimum generic version
 * here; every family member so far joined at version 1. */
static const proc procs[] = {
    {"gfx600", 0x20, 0, NULL, 0},       {"gfx601", 0x21, 0, NULL, 0},
    {"gfx602", 0x3a, 0, NULL, 0},       {"gfx700", 0x22, 0, NULL, 0},
    {"gfx701", 0x23, 0, NULL, 0},       {"gfx702", 0x24, 0, NULL, 0},
    {"gfx703", 0x25, 0, NULL, 0},       {"gfx704", 0x26, 0, NULL, 0},
    {"gfx705", 0x3b, 0, NULL, 0},       {"gfx801", 0x28, XNACK, NULL, 0},
    {"gfx802", 0x29, 0, NULL, 0},       {"gfx803", 0x2a, 0, NULL, 0},
    {"gfx805", 0x3c, 0, NULL, 0},       {"gfx810", 0x2b, XNACK, NULL, 0},
    {"gfx900", 0x2c, XNACK, G9, 0},     {"gfx902", 0x2d, XNACK, G9, 0},
    {"gfx904", 0x2e, XNACK, G9, 0},     {"gfx906", 0x2f, XNACK | SRAMECC, G9, 0},
    {"gfx908", 0x30, XNACK | SRAMECC, NULL, 0},
    {"gfx909", 0x31, XNACK, G9, 0},     {"gfx90a", 0x3f, XNACK | SRAMECC, NULL, 0},
    {"gfx90c", 0x32, XNACK, G9, 0},     {"gfx940", 0x40, XNACK | SRAMECC, G94, 0},
    {"gfx941", 0x4b, XNACK | SRAMECC, G94, 0},
    {"gfx942", 0x4c, XNACK | SRAMECC, G94, 0},
    {"gfx950", 0x4f, XNACK | SRAMECC, G94, 0},
    {"gfx1010", 0x33, XNACK, G101, 0},  {"gfx1011", 0x34, XNACK, G101, 0},
    {"gfx1012", 0x35, XNACK, G101, 0},  {"gfx1013", 0x42, XNACK, G101, 0},
    {"gfx1030", 0x36, 0, G103, 0},      {"gfx1031", 0x37, 0, G103, 0},
    {"gfx1032", 0x38, 0, G103, 0},      {"gfx1033", 0x39, 0, G103, 0},
    {"gfx1034", 0x3e, 0, G103, 0},      {"gfx1035", 0x3d, 0, G103, 0},
    {"gfx1036", 0x45, 0, G103, 0},      {"gfx1100", 0x41, 0, G11, 0},
    {"gfx1101", 0x46, 0, G11, 0},       {"gfx1102", 0x47, 0, G11, 0},
    {"gfx1103", 0x44, 0, G11, 0},       {"gfx1150", 0x43, 0, G11, 0},
    {"gfx1151", 0x4a, 0, G11, 0},       {"gfx1152", 0x55, 0, G11, 0},
    {"gfx1153", 0x58, 0, G11, 0},       {"gfx1200", 0x48, 0, G12, 0},
    {"gfx1201", 0x4e, 0, G12, 0},
    {G9, 0x51, XNACK, NULL, 1},         {G94, 0x5f, XNACK | SRAMECC, NULL, 1},
    {G101, 0x52, XNACK, NULL, 1},       {G103, 0x53, 0, NULL, 1},
    {G11, 0x54, 0, NULL, 1},            {G12, 0x59, 0, NULL, 1},
};

static const proc *find_proc(const char *name) {
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
    if (strcmp(procs[i].name, name) == 0) return &procs[i];
  return NULL;
}

static const proc *find_mach(unsigned mach) {
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
    if (procs[i].mach == mach) return &procs[i];
  return NULL;
}

/* The ISA name prefix HSA reports ("amdgcn-amd-amdhsa--gfx90a:xnack-"). */
static const char ISA_PREFIX[] = "amdgcn-amd-amdhsa--";

int gk__amd_parse(const char *id, gk__amd_target *t, char *why,
                  size_t why_size) {
  memset(t, 0, sizeof *t);
  const char *p = id;
  if (strncmp(p, ISA_PREFIX, sizeof ISA_PREFIX - 1) == 0)
    p += sizeof ISA_PREFIX - 1;
  size_t n = strcspn(p, ":");
  int ok = n > 3 && n < sizeof t->proc && strncmp(p, "gfx", 3) == 0;
  for (size_t i = 3; ok && i < n; i++)
    ok = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'z') ||
         (p[i] == '-' && i + 1 < n);
  if (!ok) {
    gk__say(why, why_size,
             "'%s' is not an AMD target ID like gfx90a or "
             "gfx90a:sramecc+:xnack-",
             id);
    return 0;
  }
  memcpy(t->proc, p, n);
  t->proc[n] = '\0';
  for (p += n; *p == ':';) {
    const char *f = ++p;
    size_t fl = strcspn(f, ":");
    char *slot = NULL;
    if (fl == 6 && strncmp(f, "xnack", 5) == 0) slot = &t->xnack;
    if (fl == 8 && strncmp(f, "sramecc", 7) == 0) slot = &t->sramecc;
    if (!slot || (f[fl - 1] != '+' && f[fl - 1] != '-') || *slot) {
      gk__say(why, why_size,
               "'%s' has %s feature '%.*s'; a target ID sets xnack and "
               "sramecc, each once, with + or -",
               id, slot && *slot ? "a repeated" : "an unknown", (int)fl, f);
      return 0;
    }
    *slot = f[fl - 1];
    p = f + fl;
  }
  return 1;
}

/* A device spec's arch is shaped like a target ID: "gfx90a", "gfx1030",
 * "gfx11-generic", then ":feature+" / ":feature-" settings as the device
 * reports them ("gfx90a:sramecc+:xnack-"). Which processors and features
 * a device may name is the selection's to judge (valid, below): a spec
 * only has to read as one. */
static int spec_arch(char *a, size_t size, const char *spec, char *why, size_t why_size) {
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
  gk__say(why, why_size,
          "rocm arch '%s' is not like gfx90a or gfx90a:sramecc+:xnack- "
          "(each feature ends in + or -)",
          a);
  return 0;
}

/* "xnack+" etc. of a feature setting, for messages. */
static const char *setting(const char *feature, char v, char *buf, size_t n) {
  if (v)
    snprintf(buf, n, "%s%c", feature, v);
  else
    snprintf(buf, n, "no %s setting", feature);
  return buf;
}

/* A device is a processor with the feature settings it runs with. */
static int valid(const gk_device *dev, char *why, size_t why_size) {
  gk__amd_target d;
  char text[128];
  if (!gk__amd_parse(dev->arch, &d, text, sizeof text)) {
    gk__say(why, why_size, "is not valid: %s", text);
    return 0;
  }
  const proc *pr = find_proc(d.proc);
  if (pr && pr->is_generic) {
    gk__say(why, why_size,
             "names the generic target %s; a device is a processor such as "
             "gfx1100",
             d.proc);
    return 0;
  }
  /* Unknown processors stay valid (newer hardware than this table): their
   * images still match by exact name. */
  if (pr && ((d.xnack && !(pr->features & XNACK)) ||
             (d.sramecc && !(pr->features & SRAMECC)))) {
    gk__say(why, why_size, "sets %s, which %s does not have",
             d.xnack && !(pr->features & XNACK) ? "xnack" : "sramecc", d.proc);
    return 0;
  }
  return 1;
}

/*
 * comgr's isCompatibleIsaName: the processor must be the device's (or, for
 * a generic image, a family the device belongs to), and every feature the
 * image sets with + or - must equal the device's setting; a feature the
 * image leaves out runs with either. Score: an exact processor beats a
 * generic target, and among each kind an image pinned to the device's
 * settings beats one built for "any".
 */
int gk__rocm_fits(const gk_device *dev, const gk_image_info *row,
                  unsigned flags, long *score, char *why, size_t why_size) {
  gk__amd_target d, im;
  char text[128], a[32], b[32];
  (void)flags; /* code objects are never JIT-compiled */
  if (!gk__amd_parse(row->target, &im, text, sizeof text)) {
    gk__say(why, why_size, "%s", text);
    return 0;
  }
  if (!gk__amd_parse(dev->arch, &d, text, sizeof text)) {
    gk__say(why, why_size, "%s", text);
    return 0;
  }
  long base;
  const proc *dp = find_proc(d.proc), *ip = find_proc(im.proc);
  if (strcmp(d.proc, im.proc) == 0) {
    base = 300;
  } else if (ip && ip->is_generic) {
    if (!dp || !dp->generic || strcmp(dp->generic, ip->name) != 0) {
      gk__say(why, why_size, "%s does not cover %s", im.proc, d.proc);
      return 0;
    }
    base = 100;
  } else {
    gk__say(why, why_size, "built for %s, device is %s", im.proc, d.proc);
    return 0;
  }
  if (im.xnack && im.xnack != d.xnack) {
    gk__say(why, why_size, "needs %s, device has %s",
             setting("xnack", im.xnack, a, sizeof a),
             setting("xnack", d.xnack, b, sizeof b));
    return 0;
  }
  if (im.sramecc && im.sramecc != d.sramecc) {
    gk__say(why, why_size, "needs %s, device has %s",
             setting("sramecc", im.sramecc, a, sizeof a),
             setting("sramecc", d.sramecc, b, sizeof b));
    return 0;
  }
  *score = base + 10 * ((im.xnack != 0) + (im.sramecc != 0));
  if (base == 100)
    gk__say(why, why_size, "generic %s covers %s", row->target, dev->arch);
  else
    gk__say(why, why_size, "%s runs on %s", row->target, dev->arch);
  return 1;
}

/* ---- ELF header ---------------------------------------------------------- */

enum {
  ELFOSABI_AMDGPU_HSA = 64,
  /* EI_ABIVERSION for HSA code objects: code object version - 2. */
  ABI_V3 = 1,
  ABI_V6 = 4,
  XNACK_V3 = 0x100,
  SRAMECC_V3 = 0x200,
  XNACK_V4 = 0x300, /* mask; values: 0 unsupported, 0x100 any, 0x200 off, 0x300 on */
  SRAMECC_V4 = 0xc00, /* mask; 0 unsupported, 0x400 any, 0x800 off, 0xc00 on */
  GENERIC_SHIFT = 24
};

/* Names a v4+ feature field (2 bits, 0 unsupported .. 3 on). */
static const char *field_name(unsigned v) {
  static const char *const names[] = {"unsupported", "any", "off", "on"};
  return names[v & 3];
}

/* What a v4+ feature field must hold for a row's setting: '+' on, '-' off,
 * unset "any" when the processor has the feature, else "unsupported". */
static unsigned want_field(char setting, int has) {
  return setting == '+' ? 3 : setting == '-' ? 2 : has ? 1 : 0;
}

/* An AMD code object's header fields (EI_OSABI, EI_ABIVERSION, e_flags)
 * against the row's target. 1, or 0 with why. */
static int amd_header(unsigned osabi, unsigned abiversion, uint32_t eflags, const char *target,
                      char *why, size_t why_size) {
  gk__amd_target t;
  char text[128];
  if (osabi != ELFOSABI_AMDGPU_HSA) {
    gk__say(why, why_size,
             "the image is not an HSA code object (EI_OSABI %u, not %d)", osabi,
             ELFOSABI_AMDGPU_HSA);
    return 0;
  }
  if (abiversion < ABI_V3 || abiversion > ABI_V6) {
    gk__say(why, why_size,
             "the image is AMD code object v%u; libgk reads v3 to v6",
             abiversion + 2);
    return 0;
  }
  if (!gk__amd_parse(target, &t, text, sizeof text)) {
    gk__say(why, why_size, "rocm target: %s", text);
    return 0;
  }
  const proc *want = find_proc(t.proc);
  if (!want) {
    gk__say(why, why_size,
             "libgk does not know the ELF machine of processor '%s'; a newer "
             "libgk can check it",
             t.proc);
    return 0;
  }
  unsigned mach = eflags & 0xff;
  if (mach != want->mach) {
    const proc *got = find_mach(mach);
    gk__say(why, why_size,
             "the code object is for %s (e_flags 0x%x), not %s",
             got ? got->name : "an unknown processor", (unsigned)eflags,
             t.proc);
    return 0;
  }
  unsigned gen = abiversion == ABI_V6 ? eflags >> GENERIC_SHIFT : 0;
  if (want->is_generic && gen == 0) {
    gk__say(why, why_size,
             "the code object has no generic version (code object v%u, "
             "e_flags 0x%x); %s needs code object v6",
             abiversion + 2, (unsigned)eflags, t.proc);
    return 0;
  }
  if (!want->is_generic && gen != 0) {
    gk__say(why, why_size,
             "the code object is marked generic (version %u), but %s is a "
             "processor",
             gen, t.proc);
    return 0;
  }
  if (abiversion == ABI_V3) {
    /* v3 has one bit per feature: set = on, clear = off or default. */
    struct { const char *name; char v; unsigned bit; } f[] = {
        {"xnack", t.xnack, XNACK_V3}, {"sramecc", t.sramecc, SRAMECC_V3}};
    for (int i = 0; i < 2; i++) {
      int on = (eflags & f[i].bit) != 0;
      if ((f[i].v == '+' && !on) || (f[i].v == '-' && on)) {
        gk__say(why, why_size, "the code object has %s %s, the row says %s",
                 f[i].name, on ? "on" : "off", target);
        return 0;
      }
    }
    return 1;
  }
  unsigned xn = (eflags & XNACK_V4) >> 8, sr = (eflags & SRAMECC_V4) >> 10;
  unsigned wxn = want_field(t.xnack, want->features & XNACK);
  unsigned wsr = want_field(t.sramecc, want->features & SRAMECC);
  if (xn != wxn || sr != wsr) {
    int x = xn != wxn;
    gk__say(why, why_size,
             "the code object has %s %s (e_flags 0x%x), the row's target %s "
             "means %s",
             x ? "xnack" : "sramecc", field_name(x ? xn : sr),
             (unsigned)eflags, target, field_name(x ? wxn : wsr));
    return 0;
  }
  return 1;
}

/* An hsaco image: an HSA code object of the row's processor, features and
 * generic version, which defines a kernel descriptor per entry. */
static int hsaco_check(const void *bytes, size_t size, const gk_image_info *row,
                       const gk__entries *e, char *why, size_t why_size) {
  gk__elf h;
  return gk__elf_read(bytes, size, GK__EM_AMDGPU, GK__ET_DYN, &h, why, why_size) &&
                 amd_header(h.osabi, h.abiversion, h.flags, row->target, why, why_size) &&
                 gk__elf_exports(&h, e, 1, why, why_size)
             ? GK_OK
             : GK_EFORMAT;
}

/* ---- the backend --------------------------------------------------------- */

const gk__backend gk__rocm_backend = {
    .id = GK_BACKEND_ROCM, .name = "rocm", .detect = gk__rocm_detect, /* rocm.c */
    .bare = "gfx", .arch = spec_arch,
    .valid = valid, .fits = gk__rocm_fits,
    .formats = {{"hsaco", hsaco_check}},
    .ops = &gk__rocm_ops, /* rocm.c */
};
