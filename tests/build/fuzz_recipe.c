/*
 * fuzz_recipe.c - fuzz target for the recipe engine: any bytes as a recipe
 * file. The engine must answer with a message and exit status 1, never
 * crash. The cc module is replaced (DIR/toolchains/cc.lua) by one whose
 * probe declines, so no compiler ever runs.
 *
 * With clang -fsanitize=fuzzer this is a libFuzzer target; otherwise main()
 * replays the files named on the command line (ctest runs the corpus in
 * tests/build/corpus/ that way).
 */
#define _GNU_SOURCE
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
  strcpy(root, "/tmp/gk-fuzz-recipe-XXXXXX");
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
  static const char cc[] =
    "return { backend = 'cpu', format = 'so', ext = 'so',\n"
    "  targets = { 'x86-64', 'x86-64-v2', 'x86-64-v3', 'x86-64-v4' },\n"
    "  probe = function() return nil, 'no compiler while fuzzing' end,\n"
    "  command = function(job, p) return { p.tool } end }\n";
  snprintf(p, sizeof p, "%s/recipes/toolchains/cc.lua", root);
  write_file(p, cc, sizeof cc - 1);
}

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

#ifndef GK_LIBFUZZER
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      perror(argv[i]);
      return 1;
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
  }
  printf("replayed %d input(s)\n", argc - 1);
  return 0;
}
#endif
