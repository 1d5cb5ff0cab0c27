/*
 * fuzz.c - one entry point for everything in libgk that parses untrusted
 * bytes: the bytes as an archive (open from memory, walk the index, read
 * and select every row) and as an ELF image (every backend's header rule).
 *
 * Used two ways: test_mutate.c feeds it deterministic mutations of a good
 * archive under ctest (and so under ASan/UBSan), and, with clang,
 * fuzz_loader links it to libFuzzer for open-ended runs:
 *   ninja fuzz_loader && ./fuzz_loader -malloc_limit_mb=2048 CORPUS_DIR
 */
#include <stdint.h>
#include <string.h>

#include "gk.h"
#include "gk_internal.h"

int gk_fuzz_one(const uint8_t *data, size_t size);

/* Returns 1 when the bytes opened as an archive, 0 otherwise. */
int gk_fuzz_one(const uint8_t *data, size_t size) {
  int opened = 0;
  gk_archive *ar;
  if (gk_archive_open_memory(data, size, &ar) == GK_OK) {
    opened = 1;
    size_t n = 0;
    gk_archive_count(ar, &n);
    for (size_t i = 0; i < n && i < 256; i++) {
      gk_image_info info;
      if (gk_archive_image(ar, i, &info) != GK_OK) continue;
      void *p;
      size_t len;
      if (gk_archive_read(ar, i, &p, &len) == GK_OK) gk_free(p);
      for (int level = 1; level <= GK__X86_LEVEL_MAX; level++) {
        gk_device dev;
        memset(&dev, 0, sizeof dev);
        dev.backend = GK_BACKEND_CPU;
        strcpy(dev.arch, gk__x86_level_name(level));
        size_t index;
        gk_archive_select(ar, &dev, info.kernel, info.variant, &index);
        gk_archive_select(ar, &dev, info.kernel, NULL, &index);
      }
      (void)strlen(gk_archive_errmsg(ar));
    }
    gk_archive_close(ar);
  } else {
    (void)strlen(gk_last_error());
  }

  static const gk_image_info rows[] = {
      {.kernel = "k",
       .backend = "cpu",
       .target = "x86-64-v3",
       .variant = "",
       .format = "so"},
      {.kernel = "k",
       .backend = "cuda",
       .target = "sm_90",
       .variant = "",
       .format = "cubin"},
      {.kernel = "k",
       .backend = "rocm",
       .target = "gfx90a",
       .variant = "",
       .format = "hsaco"},
  };
  char why[256];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    gk__elf_check(data, size, &rows[i], why, sizeof why);
  return opened;
}

#ifdef GK_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gk_fuzz_one(data, size);
  return 0;
}
#endif
