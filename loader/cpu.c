/*
 * cpu.c - the CPU backend: which x86-64 micro-architecture level this CPU
 * reaches, the rule and image check of cpu rows, and loading their shared
 * objects into the process.
 *
 * The levels are those of the x86-64 psABI (glibc-hwcaps, -march=x86-64-v3).
 * We read CPUID and XGETBV ourselves rather than __builtin_cpu_supports:
 * clang does not know the level names, and a level needs the OS half too -
 * AVX and AVX-512 instructions fault unless the kernel saves their register
 * state, which only XCR0 tells.
 *
 * CPU images are shared objects. They are loaded from memory: the bytes go
 * into an anonymous memfd and dlopen() opens "/proc/self/fd/N"; nothing is
 * written to any file system. The memfd stays open as long as the module is
 * loaded. glibc matches an already loaded object by the name it was opened
 * under, so if fd N were closed and reused by the next image while the
 * first is still loaded, dlopen("/proc/self/fd/N") would hand back the old
 * library. Holding the fd keeps every name unique among loaded modules.
 *
 * Without memfd_create (macOS, whose dlopen needs a path; or a build with
 * GK_PORTABLE_ONLY) the bytes go to a file created 0600 in $TMPDIR, which
 * is unlinked as soon as dlopen has mapped it. Its name holds this
 * process's id and a counter that never repeats, so no two loads in one
 * process ever use the same name and the name-matching problem above
 * cannot arise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* ---- modules: shared objects loaded from memory --------------------------- */

typedef struct so_module {
  void *dl;
  int fd;     /* the memfd; -1 for a temporary file (unlinked at load) */
  char *path; /* the name the dynamic linker knows it by */
} so_module;

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Refuses a cpu device that claims a level this CPU lacks, before any
 * selection: code built for it could die of SIGILL far from the cause. */
static int so_ready(gk_archive *ar, const gk_device *dev) {
  gk_device here;
  char why[256];
  int rc = gk__cpu_detect(&here, 1, why, sizeof why);
  if (rc != GK_OK)
    return gk__fail(ar, rc, "cannot load for device '%s': %s", GK__DEVICE(dev), why);
  int want = gk__x86_level_from_name(dev->arch);
  int have = gk__x86_level_from_name(here.arch);
  if (want > have)
    return gk__fail(ar, GK_ENODEVICE,
                    "device '%s' asks for more than this CPU has (%s, %s); its "
                    "code could stop on an illegal instruction",
                    GK__DEVICE(dev), here.arch, here.name);
  return GK_OK;
}

/* "kernel:target" for names: the strings come from the archive, an
 * untrusted file, so anything but [A-Za-z0-9._-] becomes '_' (no '/' can
 * lead a temporary file out of its folder). */
static void image_tag(const gk_image_info *row, char sep, char *out, size_t size) {
  snprintf(out, size, "%s%c%s", row->kernel, sep, row->target);
  for (char *p = out; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-' ||
          *p == sep))
      *p = '_';
}

#if GK_HAVE_MEMFD_CREATE
/* The image as an anonymous memfd, named by its /proc path; the module
 * keeps the fd (see the top of this file). */
static int write_image(gk_archive *ar, so_module *sm, const gk_image_info *row,
                       const void *bytes, size_t size) {
  char name[64], ebuf[128];
  /* The memfd's name shows in /proc/PID/maps next to the code. */
  image_tag(row, ':', name + 3, sizeof name - 3);
  memcpy(name, "gk:", 3);
  sm->fd = memfd_create(name, MFD_CLOEXEC);
  const char *step = sm->fd < 0                              ? "memfd_create"
                     : write_all(sm->fd, bytes, size) != 0 ? "writing the memfd"
                                                            : NULL;
  if (step) {
    const char *e = gk__errno_text(errno, ebuf, sizeof ebuf); /* before the row's words */
    return gk__fail(ar, GK_EDRIVER, "cannot load image %s: %s: %s", GK__WHAT(row), step, e);
  }
  char path[32];
  snprintf(path, sizeof path, "/proc/self/fd/%d", sm->fd);
  if (!(sm->path = strdup(path)))
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  return GK_OK;
}
#else
/* The image as a file of its own in $TMPDIR (mkstemp: mode 0600, O_EXCL),
 * closed and left for so_load to unlink once dlopen has mapped it. */
static int write_image(gk_archive *ar, so_module *sm, const gk_image_info *row,
                       const void *bytes, size_t size) {
  static atomic_ulong serial;
  char tag[64], ebuf[128];
  image_tag(row, '-', tag, sizeof tag);
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  size_t dlen = strlen(dir);
  while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
  size_t n = dlen + strlen(tag) + 80;
  if (!(sm->path = malloc(n)))
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  snprintf(sm->path, n, "%.*s/gk-%s-%ld-%lu-XXXXXX", (int)dlen, dir, tag,
           (long)getpid(), (unsigned long)atomic_fetch_add(&serial, 1));
  int fd = mkstemp(sm->path);
  if (fd < 0) {
    int e = errno;
    return gk__fail(ar, GK_EDRIVER,
                    "cannot load image %s: cannot create a temporary file in "
                    "'%.*s': %s (set TMPDIR to a writable folder)",
                    GK__WHAT(row), (int)dlen, dir, gk__errno_text(e, ebuf, sizeof ebuf));
  }
  int rc = write_all(fd, bytes, size);
  int e = errno;
  if (close(fd) != 0 && rc == 0) rc = -1, e = errno;
  if (rc != 0) {
    unlink(sm->path);
    return gk__fail(ar, GK_EDRIVER, "cannot load image %s: writing '%s': %s",
                    GK__WHAT(row), sm->path, gk__errno_text(e, ebuf, sizeof ebuf));
  }
  return GK_OK;
}
#endif

static void so_unload(void *state) {
  so_module *sm = state;
  /* dlclose before close: the fd must not be reused while its name still
   * identifies a loaded object. dlclose may also leave the object mapped
   * (it was linked -z nodelete, has STB_GNU_UNIQUE symbols, or the host
   * dlopen()ed the same name itself); then the fd is kept for the life of
   * the process, as the mapping itself is, so no later image can get its
   * number and be mistaken for it. */
  int keep_fd = 0;
  if (sm->dl) {
    dlclose(sm->dl);
    void *still = sm->fd >= 0 ? dlopen(sm->path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (still) {
      dlclose(still);
      keep_fd = 1;
    }
  }
  if (sm->fd >= 0 && !keep_fd) close(sm->fd);
  free(sm->path);
  free(sm);
}

/* The image bytes as a loaded library: written where the dynamic linker
 * can open it by name, then dlopen. On success the module owns the name
 * (and the memfd) and the handle; a temporary file is already gone. */
static int so_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                   const gk__entries *e, void *bytes, size_t size, void **state) {
  so_module *sm = calloc(1, sizeof *sm);
  if (!sm) {
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  }
  sm->fd = -1;
  int rc = write_image(ar, sm, row, bytes, size);
  free(bytes);
  if (rc == GK_OK) {
    dlerror(); /* drop a stale message */
    sm->dl = dlopen(sm->path, RTLD_NOW | RTLD_LOCAL);
    const char *e = sm->dl ? NULL : dlerror();
    char *msg = e ? strdup(e) : NULL; /* unlink may not touch it, but be sure */
    if (sm->fd < 0) unlink(sm->path); /* mapped (or failed): the file can go */
    if (!sm->dl)
      rc = gk__fail(ar, GK_EDRIVER, "cannot load image %s: dlopen: %s%s", GK__WHAT(row),
                    msg ? msg : "unknown error",
                    sm->fd < 0 ? " (it was written to $TMPDIR, which must allow "
                                 "running code: set TMPDIR to another folder if "
                                 "it is mounted noexec)"
                               : "");
    free(msg);
  }
  if (rc == GK_OK)
    *state = sm;
  else
    so_unload(sm);
  return rc;
}

static void *so_symbol(void *state, const char *name) {
  return dlsym(((so_module *)state)->dl, name);
}

static int so_kernel_info(void *state, const char *name, gk_kernel_info *out) {
  void *f = so_symbol(state, name);
  if (!f) return GK_ENOSYMBOL;
  memset(out, 0, sizeof *out);
  out->object = (uint64_t)(uintptr_t)f;
  return GK_OK;
}

/* A cpu module's entries are C functions to call: no launches. */
static const gk__ops so_ops = {.ready = so_ready, .load = so_load, .symbol = so_symbol,
                               .kernel_info = so_kernel_info, .unload = so_unload};

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
static int so_check(const void *bytes, size_t size, const gk_image_info *row,
                    const gk__entries *e, char *why, size_t why_size) {
  gk__elf h;
  if (!gk__elf_read(bytes, size, GK__EM_X86_64, GK__ET_DYN, &h, why, why_size))
    return GK_EFORMAT;
  if (!gk__x86_level_from_name(row->target)) {
    snprintf(why, why_size, "cpu target '%s' is not an x86-64 level (%s)", row->target,
             gk__x86_level_list());
    return GK_EFORMAT;
  }
  return gk__elf_exports(&h, e, 0, why, why_size) ? GK_OK : GK_EFORMAT;
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
    .ops = &so_ops,
};
