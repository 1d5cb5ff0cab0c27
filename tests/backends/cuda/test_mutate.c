/*
 * test_mutate.c ARCHIVE - the cubin and PTX checks (loader/cuda_arch.c, via
 * unpack.c's gk__image_check) on deterministic mutations of REAL nvcc images:
 * flipped bits, header and section-header fields set to extreme values,
 * truncations. Each answer must be GK_OK or GK_EFORMAT with a reason, and
 * under the sanitizer build (GK_SANITIZE) any out-of-bounds read fails the
 * test. The counts check that both answers occurred and that section-table
 * damage was reached, not only the header checks. Exit 77 (SKIP) without the
 * archive.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gk_internal.h"

static uint64_t state = 0x243f6a8885a308d3ull;
static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static unsigned rd16(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }

static void put(unsigned char *p, uint64_t v, int width) {
  for (int i = 0; i < width; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* An extreme or random value for a field. */
static uint64_t extreme(size_t size) {
  switch (next() % 6) {
  case 0: return 0;
  case 1: return ~(uint64_t)0;
  case 2: return size;
  case 3: return size - 1;
  case 4: return (uint64_t)1 << (next() % 64);
  default: return next();
  }
}

int main(int argc, char **argv) {
  gk_archive *ar;
  if (argc < 2 || access(argv[1], R_OK) != 0) {
    printf("SKIP: no archive of real cuda images (%s); the fixture needs nvcc\n",
           argc > 1 ? argv[1] : "none given");
    return 77;
  }
  if (gk_archive_open(argv[1], &ar) != GK_OK) {
    printf("FAIL: %s\n", gk_last_error());
    return 1;
  }
  /* A few images of each kind: cubins of both families of e_flags values
   * (sm_75, sm_90a with .nv.compat, sm_120) and the PTX. */
  const char *want[] = {"sm_75", "sm_90a", "sm_120", "compute_75"};
  size_t n = 0, ok = 0, refused = 0, deep = 0, tested = 0;
  gk_archive_count(ar, &n);
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    for (size_t i = 0; i < n; i++) {
      gk_image_info im;
      gk_archive_image(ar, i, &im);
      if (strcmp(im.backend, "cuda") || strcmp(im.kernel, "rmsnorm") || strcmp(im.target, want[w]))
        continue;
      void *bytes;
      size_t size;
      if (gk_archive_read(ar, i, &bytes, &size) != GK_OK) {
        printf("FAIL: %s\n", gk_archive_errmsg(ar));
        return 1;
      }
      const int ptx = strcmp(im.format, "ptx") == 0;
      unsigned char *b = malloc(size);
      char why[256];
      for (int iter = 0; iter < 4000; iter++) {
        memcpy(b, bytes, size);
        size_t len = size;
        const uint64_t shoff = ptx ? 0 : rd64(b + 40);
        const unsigned shnum = ptx ? 0 : rd16(b + 60);
        int kind = (int)(next() % 5);
        if (kind == 0) { /* bits anywhere */
          for (int k = 1 + (int)(next() % 8); k > 0; k--) b[next() % size] ^= 1u << (next() % 8);
        } else if (kind == 1 && !ptx) { /* an ELF header field */
          static const struct { int off, width; } f[] = {
              {4, 1}, {7, 1}, {8, 1}, {16, 2}, {18, 2}, {40, 8}, {48, 4},
              {52, 2}, {58, 2}, {60, 2}, {62, 2}, {32, 8}, {54, 2}, {56, 2}};
          int k = (int)(next() % (sizeof f / sizeof f[0]));
          put(b + f[k].off, extreme(size), f[k].width);
        } else if (kind == 2 && !ptx && shnum) { /* a section header field */
          unsigned s = (unsigned)(next() % shnum);
          static const int off[] = {0, 4, 24, 32};
          int o = off[next() % 4];
          put(b + shoff + (uint64_t)s * 64 + o, extreme(size), o >= 24 ? 8 : 4);
          deep++;
        } else if (kind == 3) { /* truncated */
          len = (size_t)(next() % size);
        } else { /* bytes inside a section's data (notes, .nv.compat, names) */
          size_t at = ptx ? next() % size : (size_t)(shoff > 64 ? next() % shoff : 0);
          b[at] = (unsigned char)next();
        }
        int rc = gk__image_check(b, len, &im, NULL, why, sizeof why);
        tested++;
        if (rc == GK_OK) {
          ok++;
        } else if (rc == GK_EFORMAT && why[0]) {
          refused++;
        } else {
          printf("FAIL: %s mutation %d: status %d, reason '%s'\n", im.target, iter, rc, why);
          return 1;
        }
      }
      free(b);
      gk_free(bytes);
    }
  }
  gk_archive_close(ar);
  printf("%zu mutations of real cuda images: %zu accepted, %zu refused (%zu in the section table)\n",
         tested, ok, refused, deep);
  if (tested < 4 * 4000 || !ok || !refused || !deep) {
    printf("FAIL: the mutations did not reach both answers and the section table\n");
    return 1;
  }
  return 0;
}
