/*
 * elf.c - reading the ELF images of the cpu, cuda and rocm backends: the
 * header every one of them must have, and the dynamic symbols a shared
 * object or an AMD code object exports. Each backend's image check
 * (cpu.c's shared objects, cuda_arch.c's cubins, rocm_isa.c's code
 * objects, reached through its descriptor's formats) starts here and goes
 * on with what only it knows.
 *
 * The SHA-256 proves the bytes are those the packager stored; the checks
 * prove the packager stored the right kind of bytes for the row (an x86-64
 * shared object in a cpu row, not a cubin or an aarch64 build), before
 * they reach dlopen or a driver. The header is untrusted input: every
 * field is decoded byte by byte (little endian, no casts of the buffer)
 * and every offset is bounds-checked against the image size.
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
  EV_CURRENT_ = 1
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

/* Whether the dynamic symbol table (SHT_DYNSYM and the string table its
 * sh_link names) defines `name` as a symbol others can bind to: global or
 * weak, default or protected visibility, in a section (not undefined), of
 * one of the types in `types` (a bit per STT_ value). -1 when the image has
 * no such table or it lies outside the image. */
static int dynsym_defines(const gk__elf *h, const char *name, unsigned types) {
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

int gk__elf_exports(const gk__elf *h, const gk__entries *e, int kd, char *why,
                    size_t size) {
  char sym[GK__NAME_MAX + 4];
  for (int i = 0; i < e->n; i++) {
    snprintf(sym, sizeof sym, "%.63s%s", e->name[i], kd ? ".kd" : "");
    int got = dynsym_defines(h, sym, kd ? 1u << 1 /* STT_OBJECT */
                                        : 1u << 2 | 1u << 10 /* STT_FUNC, STT_GNU_IFUNC */);
    if (got == 1) continue;
    if (got < 0)
      snprintf(why, size, "entry '%s' cannot be found: the image has no dynamic symbol table",
               e->name[i]);
    else
      snprintf(why, size, "entry '%s' is not %s the image exports (its dynamic symbol table)",
               e->name[i], kd ? "a kernel (NAME.kd)" : "a function");
    return 0;
  }
  return 1;
}

static const char *machine_name(unsigned m) {
  switch (m) {
  case GK__EM_X86_64: return "x86-64";
  case GK__EM_CUDA: return "CUDA";
  case GK__EM_AMDGPU: return "AMDGPU";
  case 3: return "i386";
  case 183: return "AArch64";
  case 243: return "RISC-V";
  default: return "another machine";
  }
}

/* Checks the parts every ELF we accept shares; fills *h. */
static int parse_header(const unsigned char *b, size_t size, gk__elf *h, char *why,
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

int gk__elf_read(const void *bytes, size_t size, unsigned machine, unsigned type,
                 gk__elf *h, char *why, size_t why_size) {
  if (!parse_header(bytes, size, h, why, why_size)) return 0;
  if (h->machine != machine) {
    snprintf(why, why_size, "the image is built for %s (e_machine %u), not %s",
             machine_name(h->machine), h->machine, machine_name(machine));
    return 0;
  }
  if (h->type != type) {
    snprintf(why, why_size, "the image has ELF type %u, not %s", h->type,
             type == GK__ET_DYN ? "a shared object (ET_DYN)" : "an executable (ET_EXEC)");
    return 0;
  }
  return 1;
}
