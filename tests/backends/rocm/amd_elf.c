/*
 * amd_elf.c - see amd_elf.h. Little-endian fields written and read byte by
 * byte; every read is bounds-checked (the reader also sees real images).
 */
#include "amd_elf.h"

#include <stdlib.h>
#include <string.h>

static void w16(unsigned char *p, unsigned v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
static void w32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void w64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static unsigned r16(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }
static uint32_t r32(const unsigned char *p) {
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t r64(const unsigned char *p) {
  return r32(p) | (uint64_t)r32(p + 4) << 32;
}

enum { EH = 64, SH = 64, SYM = 24, KD = 64, RODATA_ADDR = 0x1000 };
enum { SHT_PROGBITS = 1, SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_DYNSYM = 11 };

unsigned char *ae_make(unsigned abiversion, uint32_t flags,
                       const char *const *kernels, size_t *size) {
  size_t nk = 0, strsz = 1;
  for (; kernels[nk]; nk++) strsz += strlen(kernels[nk]) + 4; /* ".kd\0" */
  static const char shstr[] = "\0.dynstr\0.dynsym\0.rodata\0.shstrtab";
  /* Layout: header | dynstr | dynsym | rodata (aligned 64) | shstrtab |
   * section headers (aligned 8). */
  size_t off_str = EH, off_sym = off_str + strsz;
  off_sym = (off_sym + 7) & ~(size_t)7;
  size_t off_ro = (off_sym + (nk + 1) * SYM + 63) & ~(size_t)63;
  size_t off_shs = off_ro + nk * KD;
  size_t off_sh = (off_shs + sizeof shstr + 7) & ~(size_t)7;
  size_t n = off_sh + 5 * SH;
  unsigned char *b = calloc(1, n);
  if (!b) return NULL;

  memcpy(b, "\177ELF", 4);
  b[4] = 2; /* ELFCLASS64 */
  b[5] = 1; /* little endian */
  b[6] = 1; /* EV_CURRENT */
  b[7] = 64; /* ELFOSABI_AMDGPU_HSA */
  b[8] = (unsigned char)abiversion;
  w16(b + 16, 3);   /* ET_DYN */
  w16(b + 18, 224); /* EM_AMDGPU */
  w32(b + 20, 1);
  w64(b + 40, off_sh);
  w32(b + 48, flags);
  w16(b + 52, EH);
  w16(b + 54, 56);
  w16(b + 58, SH);
  w16(b + 60, 5); /* sections */
  w16(b + 62, 4); /* .shstrtab */

  size_t s = off_str + 1;
  for (size_t k = 0; k < nk; k++) {
    unsigned char *sym = b + off_sym + (k + 1) * SYM;
    size_t len = strlen(kernels[k]);
    w32(sym, (uint32_t)(s - off_str));
    sym[4] = 0x11; /* STB_GLOBAL, STT_OBJECT */
    w16(sym + 6, 3); /* in .rodata */
    w64(sym + 8, RODATA_ADDR + k * KD);
    w64(sym + 16, KD);
    memcpy(b + s, kernels[k], len);
    memcpy(b + s + len, ".kd", 3);
    s += len + 4;
    unsigned char *kd = b + off_ro + k * KD;
    w32(kd, AE_GROUP);
    w32(kd + 4, AE_PRIVATE);
    w32(kd + 8, AE_KERNARG);
  }
  memcpy(b + off_shs, shstr, sizeof shstr);

  /* name, type, addr, offset, size, link, entsize */
  const struct { unsigned name, type; uint64_t addr, off, size; unsigned link, ent; } sh[5] = {
      {0, 0, 0, 0, 0, 0, 0},
      {1, SHT_STRTAB, 0, off_str, strsz, 0, 0},
      {9, SHT_DYNSYM, 0, off_sym, (nk + 1) * SYM, 1, SYM},
      {17, SHT_PROGBITS, RODATA_ADDR, off_ro, nk * KD, 0, 0},
      {25, SHT_STRTAB, 0, off_shs, sizeof shstr, 0, 0},
  };
  for (int i = 0; i < 5; i++) {
    unsigned char *h = b + off_sh + (size_t)i * SH;
    w32(h, sh[i].name);
    w32(h + 4, sh[i].type);
    w64(h + 16, sh[i].addr);
    w64(h + 24, sh[i].off);
    w64(h + 32, sh[i].size);
    w32(h + 40, sh[i].link);
    w64(h + 56, sh[i].ent);
  }
  *size = n;
  return b;
}

int ae_header(const void *v, size_t size, unsigned *machine, unsigned *osabi,
              unsigned *abiversion, uint32_t *flags) {
  const unsigned char *p = v;
  if (size < EH || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 || p[5] != 1)
    return 0;
  *machine = r16(p + 18);
  *osabi = p[7];
  *abiversion = p[8];
  *flags = r32(p + 48);
  return 1;
}

/* Section i's header, or NULL when outside the image. */
static const unsigned char *shdr(const unsigned char *p, size_t size, unsigned i) {
  uint64_t off = r64(p + 40);
  unsigned n = r16(p + 60), ent = r16(p + 58);
  if (i >= n || ent < SH || off > size || (uint64_t)n * ent > size - off) return NULL;
  return p + off + (uint64_t)i * ent;
}

int ae_kernel(const void *v, size_t size, const char *name, uint64_t *value,
              uint32_t *group, uint32_t *priv, uint32_t *kernarg) {
  const unsigned char *p = v;
  unsigned m, o, a;
  uint32_t f;
  if (!ae_header(p, size, &m, &o, &a, &f)) return 0;
  for (unsigned i = 0; shdr(p, size, i); i++) {
    const unsigned char *h = shdr(p, size, i);
    unsigned type = r32(h + 4);
    if (type != SHT_DYNSYM && type != SHT_SYMTAB) continue;
    const unsigned char *strh = shdr(p, size, r32(h + 40));
    uint64_t so = r64(h + 24), ss = r64(h + 32);
    if (!strh || so > size || ss > size - so) continue;
    uint64_t stro = r64(strh + 24), strs = r64(strh + 32);
    if (stro > size || strs > size - stro) continue;
    for (uint64_t s = 0; s + SYM <= ss; s += SYM) {
      const unsigned char *sym = p + so + s;
      uint32_t nm = r32(sym);
      if (nm >= strs) continue;
      const char *sn = (const char *)p + stro + nm;
      if (strnlen(sn, strs - nm) == strs - nm || strcmp(sn, name) != 0) continue;
      uint64_t addr = r64(sym + 8);
      /* The descriptor's bytes: the section holding that address. */
      for (unsigned j = 0; shdr(p, size, j); j++) {
        const unsigned char *d = shdr(p, size, j);
        uint64_t da = r64(d + 16), doff = r64(d + 24), ds = r64(d + 32);
        if (r32(d + 4) != SHT_PROGBITS || addr < da || addr - da + KD > ds) continue;
        if (doff > size || addr - da + KD > size - doff) return 0;
        const unsigned char *kd = p + doff + (addr - da);
        *value = addr;
        *group = r32(kd);
        *priv = r32(kd + 4);
        *kernarg = r32(kd + 8);
        return 1;
      }
      return 0;
    }
  }
  return 0;
}
