/*
 * cpu.c - which x86-64 micro-architecture level this CPU reaches.
 *
 * The levels are those of the x86-64 psABI (glibc-hwcaps, -march=x86-64-v3).
 * We read CPUID and XGETBV ourselves rather than __builtin_cpu_supports:
 * clang does not know the level names, and a level needs the OS half too -
 * AVX and AVX-512 instructions fault unless the kernel saves their register
 * state, which only XCR0 tells.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gk_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define GK__HAVE_CPUID 1
#endif

static const char *const level_names[GK__X86_LEVEL_MAX + 1] = {
    NULL, "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};

int gk__x86_level_from_name(const char *name) {
  if (!name) return 0;
  for (int i = 1; i <= GK__X86_LEVEL_MAX; i++)
    if (strcmp(name, level_names[i]) == 0) return i;
  return 0;
}

const char *gk__x86_level_name(int level) {
  return level >= 1 && level <= GK__X86_LEVEL_MAX ? level_names[level] : NULL;
}

const char *gk__x86_level_list(void) {
  return "x86-64, x86-64-v2, x86-64-v3, x86-64-v4";
}

/* Feature bits, named as in the Intel SDM. (Not an enum: bit 31 does not
 * fit the int an enumeration constant must be.) */
#define L1C_SSE3 (1u << 0)
#define L1C_SSSE3 (1u << 9)
#define L1C_FMA (1u << 12)
#define L1C_CX16 (1u << 13)
#define L1C_SSE41 (1u << 19)
#define L1C_SSE42 (1u << 20)
#define L1C_MOVBE (1u << 22)
#define L1C_POPCNT (1u << 23)
#define L1C_OSXSAVE (1u << 27)
#define L1C_AVX (1u << 28)
#define L1C_F16C (1u << 29)

#define L7B_BMI1 (1u << 3)
#define L7B_AVX2 (1u << 5)
#define L7B_BMI2 (1u << 8)
#define L7B_AVX512F (1u << 16)
#define L7B_AVX512DQ (1u << 17)
#define L7B_AVX512CD (1u << 28)
#define L7B_AVX512BW (1u << 30)
#define L7B_AVX512VL (1u << 31)

#define E1C_LAHF (1u << 0)
#define E1C_LZCNT (1u << 5)

/* XCR0: which register state the OS saves on a context switch. */
#define XCR0_SSE (1u << 1)
#define XCR0_AVX (1u << 2)
#define XCR0_OPMASK (1u << 5)
#define XCR0_ZMM_HI256 (1u << 6)
#define XCR0_HI16_ZMM (1u << 7)

static int has(uint64_t word, uint64_t bits) { return (word & bits) == bits; }

int gk__x86_level_of(const gk__x86_cpuid *c) {
  /* Level 1 is the x86-64 baseline itself: any CPU running this code. */
  if (!has(c->l1_ecx, L1C_SSE3 | L1C_SSSE3 | L1C_CX16 | L1C_SSE41 | L1C_SSE42 |
                          L1C_POPCNT) ||
      !has(c->e1_ecx, E1C_LAHF))
    return 1;
  if (!has(c->l1_ecx, L1C_AVX | L1C_F16C | L1C_FMA | L1C_MOVBE | L1C_OSXSAVE) ||
      !has(c->l7_ebx, L7B_AVX2 | L7B_BMI1 | L7B_BMI2) ||
      !has(c->e1_ecx, E1C_LZCNT) || !has(c->xcr0, XCR0_SSE | XCR0_AVX))
    return 2;
  if (!has(c->l7_ebx, L7B_AVX512F | L7B_AVX512BW | L7B_AVX512CD | L7B_AVX512DQ |
                          L7B_AVX512VL) ||
      !has(c->xcr0, XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM))
    return 3;
  return 4;
}

static atomic_int level_cap;

void gk__cpu_set_level_cap(int level) { atomic_store(&level_cap, level); }

#ifdef GK__HAVE_CPUID
static void read_cpuid(gk__x86_cpuid *c) {
  unsigned a, b, cx, d;
  memset(c, 0, sizeof *c);
  unsigned max = __get_cpuid_max(0, NULL);
  if (max >= 1 && __get_cpuid(1, &a, &b, &cx, &d)) c->l1_ecx = cx;
  if (max >= 7) {
    __cpuid_count(7, 0, a, b, cx, d);
    c->l7_ebx = b;
  }
  if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000001u &&
      __get_cpuid(0x80000001u, &a, &b, &cx, &d))
    c->e1_ecx = cx;
  /* XGETBV is an illegal instruction unless the OS enabled it (OSXSAVE). */
  if (c->l1_ecx & L1C_OSXSAVE) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    c->xcr0 = ((uint64_t)hi << 32) | lo;
  }
}

/* The brand string ("AMD EPYC 9554 64-Core Processor"), trimmed; the vendor
 * id when the CPU has no brand string. */
static void read_brand(char *name, size_t size) {
  unsigned r[12] = {0}, max = __get_cpuid_max(0x80000000u, NULL);
  char text[49] = {0};
  if (max >= 0x80000004u) {
    for (unsigned i = 0; i < 3; i++)
      __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2],
                  &r[4 * i + 3]);
    memcpy(text, r, 48);
  } else {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid(0, &a, &b, &c, &d);
    memcpy(text, &b, 4);
    memcpy(text + 4, &d, 4);
    memcpy(text + 8, &c, 4);
  }
  const char *s = text;
  while (*s == ' ') s++;
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == ' ') n--;
  snprintf(name, size, "%.*s", (int)n, n ? s : "x86-64 CPU");
}
#endif

int gk__cpu_detect(gk_device *out, int asked, char *why, size_t why_size) {
#ifdef GK__HAVE_CPUID
  gk__x86_cpuid c;
  read_cpuid(&c);
  int level = gk__x86_level_of(&c);
  int cap = atomic_load(&level_cap);
  if (cap >= 1 && cap < level) level = cap;
  gk_device d;
  memset(&d, 0, sizeof d);
  d.backend = GK_BACKEND_CPU;
  gk__strlcpy(d.arch, gk__x86_level_name(level), sizeof d.arch);
  read_brand(d.name, sizeof d.name);
  *out = d;
  return GK_OK;
#else
  if (why && why_size)
    snprintf(why, why_size, "libgk knows only x86-64 CPUs; this one is not");
  (void)out;
  return GK_ENODEVICE;
#endif
}

/* ---- the backend --------------------------------------------------------- */

/* The x86-64 rule: an image of level L runs on a CPU of level >= L; the
 * highest such level is the best. */
static int fits(const gk_device *dev, const gk_image_info *row, unsigned flags, long *score,
                char *why, size_t why_size) {
  int have = gk__x86_level_from_name(dev->arch);
  int need = gk__x86_level_from_name(row->target);
  if (need && need <= have) {
    *score = need;
    gk__say(why, why_size, "%s runs on %s", row->target, dev->arch);
    return 1;
  }
  if (need)
    gk__say(why, why_size, "needs %s, device is %s", row->target, dev->arch);
  else
    gk__say(why, why_size, "unknown x86-64 level '%s'", row->target);
  return 0;
}

/* A shared object for x86-64 that exports each entry; its target a level
 * (an ELF does not record the level it was built for). */
static int so_check(const void *bytes, size_t size, const gk_image_info *row, char *why,
                    size_t why_size) {
  gk__elf h;
  if (!gk__elf_read(bytes, size, GK__EM_X86_64, GK__ET_DYN, &h, why, why_size))
    return GK_EFORMAT;
  if (!gk__x86_level_from_name(row->target)) {
    snprintf(why, why_size, "cpu target '%s' is not an x86-64 level (%s)", row->target,
             gk__x86_level_list());
    return GK_EFORMAT;
  }
  return gk__elf_exports(&h, row, 0, why, why_size) ? GK_OK : GK_EFORMAT;
}

static int valid(const gk_device *dev, char *why, size_t why_size) {
  if (gk__x86_level_from_name(dev->arch)) return 1;
  gk__say(why, why_size, "has an unknown x86-64 level; valid: %s", gk__x86_level_list());
  return 0;
}

/* A device spec's arch is a level name. */
static int spec_arch(char *arch, size_t size, const char *spec, char *why, size_t why_size) {
  if (gk__x86_level_from_name(arch)) return 1;
  gk__say(why, why_size, "unknown cpu level '%s' in device spec '%s'; valid: %s", arch, spec,
          gk__x86_level_list());
  return 0;
}

const gk__backend gk__cpu_backend = {
    .id = GK_BACKEND_CPU, .name = "cpu", .detect = gk__cpu_detect,
    .bare = "x86-64", .arch = spec_arch,
    .valid = valid, .fits = fits,
    .formats = {{"so", so_check}},
};
