/*
 * leak_module.c - a test-only shared library that behaves like Mesa 22.3's
 * lavapipe driver: it keeps a realloc()ed block in a global of its own, so
 * the block is reachable only while the library is loaded. Once the helper
 * dlclose()s it, the block is a leak "allocated from <unknown module>".
 */
#include <stdlib.h>

static void *kept;

__attribute__((visibility("default"))) int leak_module_start(void) {
  kept = realloc(kept, 128);
  return kept != NULL;
}
