/*
 * keep_loaded.c - linked into every executable of a sanitizer tree
 * (cmake/sanitize.cmake, GK_SANITIZE=ON), never into libgk or a plain build.
 *
 * LeakSanitizer looks for leaks when the process exits, and it can name (and
 * ci/sanitizers/lsan.supp can suppress) only code whose library is still
 * mapped then. A library that is dlopen()ed and dlclose()d on the way loses
 * both: the Vulkan loader unloads its drivers at vkDestroyInstance, and
 * whatever a driver kept in its own globals becomes an unreferenced block
 * "allocated from <unknown module>" (Mesa 22.3.6's lavapipe: 128 bytes per
 * process that creates a Vulkan instance). Such a report cannot be told from
 * a real leak, nor suppressed by name.
 *
 * So before main, this dlopen()s each library named in GK_SANITIZE_KEEP (a
 * colon-separated list that ci/sanitizers/env.sh builds from keep.txt and
 * the Vulkan driver manifests) with RTLD_NODELETE: later dlclose() calls,
 * the loader's included, leave it mapped, its globals stay roots for the
 * leak scan, and any real leak in it is reported under its own name. A
 * name that cannot be opened is skipped: env.sh lists only what exists.
 * Without GK_SANITIZE_KEEP this does nothing.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void gk_sanitize_keep_loaded(void) {
  const char *list = getenv("GK_SANITIZE_KEEP");
  if (!list) return;
  char name[4096];
  while (*list) {
    size_t n = strcspn(list, ":");
    if (n > 0 && n < sizeof name) {
      memcpy(name, list, n);
      name[n] = '\0';
      /* The handle is dropped on purpose: NODELETE keeps the library. */
      (void)dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    }
    list += n;
    if (*list == ':') list++;
  }
}
