/*
 * test_hsa_real.c - the REAL HSA runtime, dlopen()ed by libgk as in
 * production (no resolver). On a machine without an AMD GPU, detection must
 * give a clean "no ROCm device" status naming hsa_init's answer (ROCr 5.2
 * returns HSA_STATUS_ERROR_OUT_OF_RESOURCES, 0x1008, without /dev/kfd), and
 * loading must fail the same way, never crash. On a machine with an AMD GPU
 * the detected device must be a well-formed target ID. Exit 77 (SKIP) when
 * libhsa-runtime64.so.1 is not installed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gk.h"

static int failures;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      failures++;                                         \
    }                                                     \
  } while (0)

int main(int argc, char **argv) {
  const char *archive = argc > 1 ? argv[1] : NULL;
  void *probe = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!probe) {
    printf("SKIP: libhsa-runtime64.so.1 is not installed (%s); apt-get install "
           "libhsa-runtime64-1\n", dlerror());
    return 77;
  }
  dlclose(probe);

  gk_device d;
  char why[512] = "";
  int rc = gk_device_detect_backend(GK_BACKEND_ROCM, &d, why, sizeof why);
  if (rc == GK_OK) {
    char text[160];
    gk_device_format(&d, text, sizeof text);
    printf("an AMD GPU is here: %s (%s)\n", text, d.name);
    CHECK(d.backend == GK_BACKEND_ROCM, "backend %d", (int)d.backend);
    CHECK(strncmp(d.arch, "gfx", 3) == 0, "arch '%s' is no target ID", d.arch);
    CHECK(gk_device_parse(text, &d, why, sizeof why) == GK_OK, "'%s' does not parse: %s",
          text, why);
  } else {
    printf("real libhsa-runtime64: %s: %s\n", gk_strerror(rc), why);
    CHECK(rc == GK_ENODEVICE, "status %s, expected GK_ENODEVICE", gk_strerror(rc));
    CHECK(strstr(why, "no ROCm device: hsa_init failed with HSA_STATUS_") != NULL,
          "reason '%s' does not name hsa_init's status", why);
    if (access("/dev/kfd", F_OK) != 0)
      CHECK(strstr(why, "/dev/kfd is not accessible") != NULL, "reason '%s' lacks the hint", why);
    /* The same answer twice: a failed hsa_init leaves nothing behind. */
    char again[512] = "";
    CHECK(gk_device_detect_backend(GK_BACKEND_ROCM, &d, again, sizeof again) == GK_ENODEVICE &&
              strcmp(why, again) == 0,
          "second detection differs: '%s'", again);
    /* Detection goes on to the next backend. */
    CHECK(gk_device_detect(&d) == GK_OK && d.backend != GK_BACKEND_ROCM,
          "gk_device_detect chose backend %d", (int)d.backend);
    /* Loading for a described device fails with the same reason (given
     * an archive of real images, from the rocm_archive fixture). */
    if (archive && access(archive, R_OK) == 0) {
      gk_archive *ar;
      gk_module *m = NULL;
      CHECK(gk_archive_open(archive, &ar) == GK_OK, "cannot open %s: %s", archive,
            gk_last_error());
      CHECK(gk_device_parse("rocm:gfx90a:sramecc+:xnack-", &d, NULL, 0) == GK_OK, "parse");
      rc = gk_module_load(ar, &d, "qmatmul", "bits=4", &m);
      printf("load on the real runtime: %s: %s\n", gk_strerror(rc), gk_archive_errmsg(ar));
      CHECK(rc == GK_ENODEVICE && m == NULL, "load gave %s", gk_strerror(rc));
      CHECK(strstr(gk_archive_errmsg(ar), "no ROCm device: hsa_init failed") != NULL,
            "load message '%s'", gk_archive_errmsg(ar));
      gk_archive_close(ar);
    } else {
      printf("(no archive of real images given: load not tried)\n");
    }
  }
  if (failures) return 1;
  printf("ok\n");
  return 0;
}
