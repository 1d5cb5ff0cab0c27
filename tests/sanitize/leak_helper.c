/*
 * leak_helper.c MODE [MODULE] - the programs behind sanitize.leaks
 * (test_leaks.sh): each mode first detects the device the way gk probe does
 * (every backend, Vulkan's drivers included), then:
 *   clean   exits: nothing of ours leaks, and the third-party drivers must
 *           not be reported either (keep_loaded.c, ci/sanitizers/keep.txt);
 *   main    leaks a block from this program: LeakSanitizer must report it;
 *   module  dlopen()s MODULE (leak_module.c), has it keep a block in its
 *           globals, dlclose()s it: the block then leaks from an unknown
 *           module, and the stage's suppressions must not hide that.
 * Exit 0 when the mode ran; a leak report makes LeakSanitizer's exit status.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"

static void *volatile leaked; /* cleared again, so the block is unreachable */

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: leak_helper clean|main|module [MODULE]\n");
    return 2;
  }
  gk_device dev;
  int rc = gk_device_detect(&dev);
  if (rc != GK_OK) {
    fprintf(stderr, "leak_helper: device detection failed: %s\n", gk_strerror(rc));
    return 1;
  }
  char name[128];
  gk_device_format(&dev, name, sizeof name);
  printf("device %s\n", name);
  if (strcmp(argv[1], "clean") == 0) return 0;
  if (strcmp(argv[1], "main") == 0) {
    leaked = malloc(48);
    memset(leaked, 1, 48);
    leaked = NULL;
    return 0;
  }
  if (strcmp(argv[1], "module") == 0 && argc == 3) {
    void *dl = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    int (*start)(void) = dl ? (int (*)(void))dlsym(dl, "leak_module_start") : NULL;
    if (!start || !start()) {
      fprintf(stderr, "leak_helper: cannot use '%s': %s\n", argv[2], dlerror());
      return 1;
    }
    dlclose(dl);
    return 0;
  }
  fprintf(stderr, "leak_helper: unknown mode '%s'\n", argv[1]);
  return 2;
}
