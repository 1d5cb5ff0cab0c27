/*
 * embed_check.c - linked with the output of `gk embed` (C or .incbin form):
 * the symbols hold exactly the archive's bytes, 8-byte aligned, and libgk
 * opens them in place and reads every image.
 *   cc -DSYM=name embed_check.c name.c libgk.a ...; ./a.out ARCHIVE [--no-read]
 * --no-read: the images are not meant to verify (byte patterns as images),
 * only the bytes and the index are checked.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define STR2(a) #a
#define STR(a) STR2(a)

extern const unsigned char SYM[];
extern const size_t CAT(SYM, _size);

int main(int argc, char **argv) {
  /* Names that no tested symbol uses (a local named like SYM would hide it). */
  const unsigned char *gk_embedded_ = SYM;
  size_t gk_embedded_size_ = CAT(SYM, _size);
  if (argc < 2 || argc > 3) return 2;
  int read_images = argc == 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  unsigned char *want = malloc(gk_embedded_size_ + 1);
  size_t got = fread(want, 1, gk_embedded_size_ + 1, f);
  fclose(f);
  if (got != gk_embedded_size_ || memcmp(want, gk_embedded_, gk_embedded_size_) != 0) {
    printf("FAIL: %s holds %zu bytes, not the %zu of %s\n", STR(SYM), gk_embedded_size_, got, argv[1]);
    return 1;
  }
  if ((uintptr_t)gk_embedded_ % 8 != 0) {
    printf("FAIL: %s is not 8-byte aligned (%p)\n", STR(SYM), (const void *)gk_embedded_);
    return 1;
  }
  gk_archive *ar;
  size_t n = 0;
  if (gk_archive_open_memory(gk_embedded_, gk_embedded_size_, &ar) != GK_OK) {
    printf("FAIL: %s\n", gk_last_error());
    return 1;
  }
  gk_archive_count(ar, &n);
  for (size_t i = 0; read_images && i < n; i++) {
    void *img;
    size_t isz;
    if (gk_archive_read(ar, i, &img, &isz) != GK_OK) {
      printf("FAIL: image %zu: %s\n", i, gk_archive_errmsg(ar));
      return 1;
    }
    gk_free(img);
  }
  gk_archive_close(ar);
  printf("ok: %s, %zu bytes, %zu images read in place\n", STR(SYM), gk_embedded_size_, n);
  free(want);
  return 0;
}
