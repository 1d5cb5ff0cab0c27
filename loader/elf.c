/*
 * elf.c - does an image's ELF header fit the index row that names it?
 *
 * The SHA-256 proves the bytes are those the packager stored; this proves
 * the packager stored the right kind of bytes for the row (an x86-64 shared
 * object in a cpu row, not a cubin or an aarch64 build), before they reach
 * dlopen or a driver. The header is untrusted input: every field is decoded
 * byte by byte (little endian, no casts of the buffer) and every offset is
 * bounds-checked against the image size.
 *
 * Each (backend, format) has a rule: the ELF machine and type it must carry
 * and an optional check of the target against the header: CUDA cubins
 * (EM_CUDA, SM in e_flags, sections; cuda_arch.c) and AMD code objects
 * (EM_AMDGPU, processor in e_flags; rocm_isa.c) are checked by their
 * backends' files. PTX (text) is checked by cuda_arch.c too; SPIR-V by
 * vulkan_spirv.c, WGSL by wgsl.c and metallibs by metal_target.c, each
 * with the row's entry points.
 */
#include <stdio.h>
#include <string.h>

#include "gk_internal.h"

enum {
  EHDR_SIZE = 64, /* sizeof(Elf64_Ehdr) */
  PHDR_SIZE = 56, /* sizeof(Elf64_Phdr) */
  SHDR_SIZE = 64, /* sizeof(Elf64_Shdr) */
  ELFCLASS64_ = 2,
  ELFDATA2LSB_ = 1,
  EV_CURRENT_ = 1,
  ET_EXEC_ = 2,
  ET_DYN_ = 3,
  EM_X86_64_ = 62,
  EM_CUDA_ = 190,
  EM_AMDGPU_ = 224
};

static unsigned rd16(const unsigned char *p) {
  return p[0] | (unsigned)p[1] << 8;
}
static uint32_t rd32(const unsigned char *p) {
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) {
  return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* The fields we look at, decoded. */
typedef struct ehdr {
  unsigned osabi, abiversion; /* e_ident[EI_OSABI], e_ident[EI_ABIVERSION] */
  unsigned type, machine, ehsize, phentsize, phnum, shentsize, shnum;
  uint32_t version, flags;
  uint64_t phoff, shoff;
  const unsigned char *bytes; /* the image, for checks that read sections */
  size_t size;
} ehdr;

typedef int (*target_check)(const ehdr *h, const gk_image_info *row, char *why,
                            size_t size);

/* Whether the dynamic symbol table (SHT_DYNSYM and the string table its
 * sh_link names) defines `name` as a symbol others can bind to: global or
 * weak, default or protected visibility, in a section (not undefined), of
 * one of the types in `types` (a bit per STT_ value). -1 when the image has
 * no such table or it lies outside the image. */
static int dynsym_defines(const ehdr *h, const char *name, unsigned types) {
  const unsigned char *b = h->bytes;
  for (unsigned i = 0; i < h->shnum; i++) {
    const unsigned char *sh = b + h->shoff + (uint64_t)i * h->shentsize;
    if (rd32(sh + 4) != 11 /* SHT_DYNSYM */) continue;
    uint64_t off = rd64(sh + 24), sz = rd64(sh + 32), ent = rd64(sh + 56);
    uint32_t link = rd32(sh + 40);
    if (ent < 24 || off > h->size || sz > h->size - off || link >= h->shnum) return -1;
    const unsigned char *st = b + h->shoff + (uint64_t)link * h->shentsize;
    uint64_t soff = rd64(st + 24), ssz = rd64(st + 32);
    if (soff > h->size || ssz > h->size - soff) return -1;
    size_t nlen = strlen(name);
    for (uint64_t k = 0; k + ent <= sz; k += ent) {
      const unsigned char *sym = b + off + k;
      uint32_t sn = rd32(sym);
      unsigned info = sym[4], vis = sym[5] & 3, shndx = rd16(sym + 6);
      if (sn >= ssz || nlen >= ssz - sn || memcmp(b + soff + sn, name, nlen + 1) != 0)
        continue;
      if (shndx != 0 && (info >> 4 == 1 || info >> 4 == 2) && (vis == 0 || vis == 3) &&
          (types >> (info & 0xf) & 1))
        return 1;
    }
    return 0;
  }
  return -1;
}

/* Every entry point of the row must be in the image: a misspelt name in a
 * recipe would otherwise pack, verify and load, and fail only when a
 * program asks gk_module_symbol for it. Shared objects export functions
 * (STT_FUNC, STT_GNU_IFUNC); AMD code objects a kernel descriptor
 * NAME.kd (STT_OBJECT) per kernel, which is what HSA loads. */
static int entries_defined(const ehdr *h, const gk_image_info *row, int kd, char *why,
                           size_t size) {
  char names[16][GK__CUDA_NAME_MAX], sym[GK__CUDA_NAME_MAX + 4];
  int n = gk__cuda_entries(row->entry, names, 16);
  if (n < 0) {
    snprintf(why, size, "its entry list %s is not a JSON array of at most 16 names",
             row->entry);
    return 0;
  }
  for (int i = 0; i < n; i++) {
    snprintf(sym, sizeof sym, "%.63s%s", names[i], kd ? ".kd" : "");
    int got = dynsym_defines(h, sym, kd ? 1u << 1 /* STT_OBJECT */
                                        : 1u << 2 | 1u << 10 /* STT_FUNC, STT_GNU_IFUNC */);
    if (got == 1) continue;
    if (got < 0)
      snprintf(why, size, "entry '%s' cannot be found: the image has no dynamic symbol table",
               names[i]);
    else
      snprintf(why, size, "entry '%s' is not %s the image exports (its dynamic symbol table)",
               names[i], kd ? "a kernel (NAME.kd)" : "a function");
    return 0;
  }
  return 1;
}

static int cpu_target(const ehdr *h, const gk_image_info *row, char *why,
                      size_t size) {
  /* an x86-64 ELF does not record the level it was built for */
  if (!gk__x86_level_from_name(row->target)) {
    snprintf(why, size, "cpu target '%s' is not an x86-64 level (%s)",
             row->target, gk__x86_level_list());
    return 0;
  }
  return entries_defined(h, row, 0, why, size);
}

/* AMD code objects: processor, features and generic version against the
 * row's target ID (rocm_isa.c). */
static int rocm_target(const ehdr *h, const gk_image_info *row, char *why,
                       size_t size) {
  return gk__amd_elf_check(h->osabi, h->abiversion, h->flags, row->target, why,
                           size) &&
         entries_defined(h, row, 1, why, size);
}

/* CUDA cubins: SM (both e_flags layouts), 'a' (.nv.compat), exact target
 * and toolkit (.note.nv.tkinfo), entry points (cuda_arch.c). */
static int cuda_target(const ehdr *h, const gk_image_info *row, char *why,
                       size_t size) {
  return gk__cuda_cubin_check(h->bytes, h->size, row, why, size);
}

static const struct rule {
  const char *backend, *format;
  unsigned machine;
  unsigned type; /* 0: any */
  target_check target;
} rules[] = {
    {"cpu", "so", EM_X86_64_, ET_DYN_, cpu_target},
    {"cuda", "cubin", EM_CUDA_, ET_EXEC_, cuda_target},
    {"rocm", "hsaco", EM_AMDGPU_, ET_DYN_, rocm_target},
};

/* Formats that are not ELF and that gk__elf_check has no check of their own
 * for (PTX in a rocm row): the SHA-256 alone vouches for them. */
static const char *const not_elf[] = {"ptx", "spirv", "wgsl", "metallib"};

static const char *machine_name(unsigned m) {
  switch (m) {
  case EM_X86_64_: return "x86-64";
  case EM_CUDA_: return "CUDA";
  case EM_AMDGPU_: return "AMDGPU";
  case 3: return "i386";
  case 183: return "AArch64";
  case 243: return "RISC-V";
  default: return "another machine";
  }
}

/* Checks the parts every ELF we accept shares; fills *h. */
static int parse_header(const unsigned char *b, size_t size, ehdr *h, char *why,
                        size_t wsize) {
  if (size < 4 || memcmp(b, "\177ELF", 4) != 0) {
    snprintf(why, wsize, "the image is not an ELF file");
    return 0;
  }
  if (size < EHDR_SIZE) {
    snprintf(why, wsize, "the image is %zu bytes, too short for an ELF header",
             size);
    return 0;
  }
  if (b[4] != ELFCLASS64_ || b[5] != ELFDATA2LSB_ || b[6] != EV_CURRENT_) {
    snprintf(why, wsize,
             "the image is not a 64-bit little-endian ELF (class %u, data %u, "
             "version %u)",
             b[4], b[5], b[6]);
    return 0;
  }
  h->bytes = b;
  h->size = size;
  h->osabi = b[7];
  h->abiversion = b[8];
  h->type = rd16(b + 16);
  h->machine = rd16(b + 18);
  h->version = rd32(b + 20);
  h->phoff = rd64(b + 32);
  h->shoff = rd64(b + 40);
  h->flags = rd32(b + 48);
  h->ehsize = rd16(b + 52);
  h->phentsize = rd16(b + 54);
  h->phnum = rd16(b + 56);
  h->shentsize = rd16(b + 58);
  h->shnum = rd16(b + 60);
  if (h->version != EV_CURRENT_ || h->ehsize < EHDR_SIZE) {
    snprintf(why, wsize, "the ELF header is malformed (version %u, size %u)",
             (unsigned)h->version, h->ehsize);
    return 0;
  }
  /* Tables must lie inside the image. Offsets are 64-bit and counts 16-bit,
   * so off + n * entsize cannot overflow once off <= size. */
  if (h->phnum && (h->phentsize < PHDR_SIZE || h->phoff > size ||
                   (uint64_t)h->phnum * h->phentsize > size - h->phoff)) {
    snprintf(why, wsize, "the ELF program headers lie outside the image");
    return 0;
  }
  if (h->shnum && (h->shentsize < SHDR_SIZE || h->shoff > size ||
                   (uint64_t)h->shnum * h->shentsize > size - h->shoff)) {
    snprintf(why, wsize, "the ELF section headers lie outside the image");
    return 0;
  }
  return 1;
}

GK_API int gk_image_check(const void *bytes, size_t size, const gk_image_info *row,
                          char *why, size_t why_size) {
  if (!bytes || !row || !row->backend || !row->format || !row->target || !row->entry) {
    if (why && why_size) snprintf(why, why_size, "gk_image_check: no image or no row");
    return GK_EINVAL;
  }
  return gk__elf_check(bytes, size, row, why, why_size);
}

int gk__elf_check(const void *bytes, size_t size, const gk_image_info *row,
                  char *why, size_t why_size) {
  char tmp[256];
  if (!why || why_size == 0) {
    why = tmp;
    why_size = sizeof tmp;
  }
  why[0] = '\0';
  /* SPIR-V has a header of its own (vulkan_spirv.c); a vulkan row holds
   * nothing else. */
  if (strcmp(row->format, "spirv") == 0 || strcmp(row->backend, "vulkan") == 0) {
    if (strcmp(row->format, "spirv") != 0) {
      snprintf(why, why_size, "format '%s' is not one libgk knows for backend 'vulkan'",
               row->format);
      return GK_EFORMAT;
    }
    return gk__spirv_check(bytes, size, row, why, why_size);
  }
  if (strcmp(row->format, "wgsl") == 0) return gk__wgsl_check(bytes, size, row, why, why_size);
  if (strcmp(row->format, "metallib") == 0)
    return gk__metallib_check(bytes, size, row, why, why_size);
  /* PTX is text with directives of its own (cuda_arch.c). */
  if (strcmp(row->backend, "cuda") == 0 && strcmp(row->format, "ptx") == 0)
    return gk__cuda_ptx_check(bytes, size, row, why, why_size) ? GK_OK : GK_EFORMAT;
  for (size_t i = 0; i < sizeof not_elf / sizeof not_elf[0]; i++)
    if (strcmp(row->format, not_elf[i]) == 0) return GK_OK;

  const struct rule *r = NULL;
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (strcmp(rules[i].backend, row->backend) == 0 &&
        strcmp(rules[i].format, row->format) == 0)
      r = &rules[i];
  if (!r) {
    snprintf(why, why_size,
             "format '%s' is not one libgk knows for backend '%s'", row->format,
             row->backend);
    return GK_EFORMAT;
  }

  ehdr h;
  if (!parse_header(bytes, size, &h, why, why_size)) return GK_EFORMAT;
  if (h.machine != r->machine) {
    snprintf(why, why_size, "the image is built for %s (e_machine %u), not %s",
             machine_name(h.machine), h.machine, machine_name(r->machine));
    return GK_EFORMAT;
  }
  if (r->type && h.type != r->type) {
    snprintf(why, why_size, "the image has ELF type %u, not %s", h.type,
             r->type == ET_DYN_ ? "a shared object (ET_DYN)" : "an executable (ET_EXEC)");
    return GK_EFORMAT;
  }
  if (r->target && !r->target(&h, row, why, why_size)) return GK_EFORMAT;
  return GK_OK;
}
