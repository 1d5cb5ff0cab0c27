/*
 * fuzz_recipe.c - fuzz target for the recipe engine: any bytes as a recipe
 * file. The engine must answer with a message and exit status 1, never
 * crash. Every toolchain module is replaced (DIR/toolchains/NAME.lua) by
 * one whose probe declines, so no compiler ever runs.
 *
 * With -DGK_FUZZ=ON (clang) tests/fuzz builds it as the libFuzzer binary
 * fuzz_recipe; otherwise tests/fuzz/replay.c gives it a main() that replays
 * the corpus (tests/recipes/corpus, tests/fuzz/corpus/recipe) under ctest.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gkrecipes.h"

static char root[64];

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

static void cleanup(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", root);
}

static void setup(void) {
  if (root[0]) return;
  /* tmpfs when there is one: each input writes the recipe and a cache,
   * and a disk shared with other jobs makes every write wait. */
  strcpy(root, access("/dev/shm", W_OK) == 0 ? "/dev/shm/gk-fuzz-recipe-XXXXXX"
                                             : "/tmp/gk-fuzz-recipe-XXXXXX");
  if (!mkdtemp(root)) abort();
  atexit(cleanup);
  char p[256];
  snprintf(p, sizeof p, "%s/recipes", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/recipes/toolchains", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/src", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/src/k.c", root);
  write_file(p, "int k;\n", 7);
  /* Every toolchain module is replaced by one whose probe declines: no
   * compiler runs, and no probe spawns one (the embedded modules' probes
   * ran nvcc, hipcc, ... for each input: 7 inputs a second). cc keeps a
   * target list, so a recipe's cpu targets are still checked; the others
   * accept any target, so their sections reach the probe. */
  static const struct { const char *name, *backend, *format, *targets; } tc[] = {
      {"cc", "cpu", "so", "targets = { 'x86-64', 'x86-64-v2', 'x86-64-v3', 'x86-64-v4' }"},
      {"nvcc", "cuda", "cubin", "targets = { 'any' }, check_target = function() return true end"},
      {"hipcc", "rocm", "hsaco", "targets = { 'any' }, check_target = function() return true end"},
      {"glslang", "vulkan", "spirv", "targets = { 'any' }, check_target = function() return true end"},
      {"wgsl", "wgsl", "wgsl", "targets = { 'any' }, check_target = function() return true end"},
      {"metal", "metal", "metallib", "targets = { 'any' }, check_target = function() return true end"},
  };
  for (size_t i = 0; i < sizeof tc / sizeof tc[0]; i++) {
    char mod[512];
    int n = snprintf(mod, sizeof mod,
                     "return { backend = '%s', format = '%s', ext = '%s', %s,\n"
                     "  probe = function() return nil, 'no compiler while fuzzing' end,\n"
                     "  command = function(job, p) return { p.tool } end }\n",
                     tc[i].backend, tc[i].format, tc[i].format, tc[i].targets);
    snprintf(p, sizeof p, "%s/recipes/toolchains/%s.lua", root, tc[i].name);
    write_file(p, mod, (size_t)n);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  char recipes[256], recipe[256], out[256], cache[256];
  snprintf(recipes, sizeof recipes, "%s/recipes", root);
  snprintf(recipe, sizeof recipe, "%s/recipes/r.lua", root);
  snprintf(out, sizeof out, "%s/out", root);
  snprintf(cache, sizeof cache, "%s/cache", root);
  write_file(recipe, data, size);
  FILE *log = fopen("/dev/null", "w");
  gkr_options o = {.recipes_dir = recipes, .out_dir = out, .cache_dir = cache,
                   .jobs = 1, .log = log};
  char *summary = NULL;
  int rc = gkr_build(&o, &summary);
  fclose(log);
  /* Whatever the input: a known status and a JSON summary. */
  if (rc != GKR_OK && rc != GKR_FAILED && rc != GKR_USAGE) abort();
  if (!summary) abort();
  free(summary);
  return 0;
}
