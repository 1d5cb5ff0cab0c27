/*
 * cmd_build.c - gk build: compiles the recipes' kernels into an output
 * folder (docs/manifest.md). The work is the recipe engine's (gkrecipes.h);
 * this file reads the command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "gkrecipes.h"
#include "util.h"

static const char *const CMD = "build";

static void usage(FILE *f) {
  fputs(
    "usage: gk build --recipes DIR --out DIR [--backend NAME]...\n"
    "                [--targets BACKEND=T1,T2]... [--cache DIR] [-j N] [--strict]\n"
    "                [--json] [--shard I/N] [--remote-cache URL] [--container]\n"
    "\n"
    "Compiles every kernel of the *.lua recipes directly in DIR, for every\n"
    "backend whose toolchain is present, into the output folder: images at\n"
    "OUT/BACKEND/KERNEL/TARGET[.VARIANT].EXT and OUT/manifest.json, written last.\n"
    "Jobs already in the cache are not compiled again. A failed build leaves\n"
    "the output folder as it was.\n"
    "\n"
    "options:\n"
    "  --recipes DIR    folder of recipes (*.lua); DIR/toolchains/NAME.lua adds or\n"
    "                   replaces the toolchain module NAME\n"
    "  -o, --out DIR    output folder, created if missing (--output too)\n"
    "  --kernel NAME    build only this kernel (repeatable); the manifest then\n"
    "                   lists only its images\n"
    "  --backend NAME   build only this backend (repeatable); fails if its\n"
    "                   toolchain is missing\n"
    "  --targets BACKEND=T1,T2\n"
    "                   build these targets of BACKEND instead of the lists in\n"
    "                   the recipes (repeatable, one per backend), e.g.\n"
    "                   --targets cuda=sm_80,sm_90\n"
    "  --cache DIR      compile cache (default: $GK_CACHE_DIR, else\n"
    "                   $HOME/.gsc/gllm/kernels)\n"
    "  -j, --jobs N     compile N jobs at once (default: the number of CPUs)\n"
    "  --strict         fail when a toolchain cannot produce a target the recipes\n"
    "                   ask for (default: skip that target, saying why)\n"
    "  --json           print a summary as JSON on stdout\n"
    "  -h, --help       show this help\n"
    "\n"
    "release pipeline (several runners, one archive):\n"
    "  --shard I/N      build only slice I of N of the jobs; slices are fixed by a\n"
    "                   hash of kernel, backend, target and variant, so every\n"
    "                   runner agrees and 'gk pack --merge' of all N equals one\n"
    "                   build of everything\n"
    "  --remote-cache URL\n"
    "                   also use a shared HTTP cache (bazel-remote layout: /ac/,\n"
    "                   /cas/; default: $GK_REMOTE_CACHE). A slow or dead one is\n"
    "                   skipped with one warning, never failing the build\n"
    "  --remote-cache-readonly\n"
    "                   download from the remote cache, never upload\n"
    "  --container      run every compile in the container image its toolchain\n"
    "                   module names (docker, else podman; $GK_CONTAINER_ENGINE):\n"
    "                   sources read-only, no network, only the output writable\n"
    "  --container-image MODULE=IMAGE\n"
    "                   use IMAGE for toolchain module MODULE (repeatable)\n"
    "  --container-mount PATH\n"
    "                   also mount host PATH read-only, at the same place\n"
    "\n"
    "Progress and errors go to stderr. Exit status: 0 built, 1 failed, 2 usage.\n",
    f);
}

/* What gk build checks each image with: libgk's own reader, so an image
 * that would not load never reaches a manifest (gkr_options.check_image). */
static int check_image(const void *bytes, size_t size, const gkr_image_row *r, char *why,
                       size_t why_size) {
  /* A backend libgk does not load (a toolchain module's own) has no rule
   * to check its images by. */
  if (gk_backend_from_name(r->backend) == GK_BACKEND_NONE) return 0;
  gk_image_info row = {0};
  row.backend = r->backend;
  row.target = r->target;
  row.format = r->format;
  row.entry = r->entry_json;
  row.launch = r->launch_json;
  row.toolchain = r->toolchain;
  row.kernel = row.variant = "";
  return gk_image_check(bytes, size, &row, why, why_size) == GK_OK ? 0 : -1;
}

/* -j N, -jN, --jobs N, --jobs=N */
static int parse_jobs(const char *v, int *jobs) {
  char *end;
  long n = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < 1 || n > 1024) return -1;
  *jobs = (int)n;
  return 0;
}

int cmd_build(int argc, char **argv) {
  gkr_options o = {0};
  const char **backends = calloc((size_t)argc, sizeof *backends);
  const char **targets = calloc((size_t)argc, sizeof *targets);
  const char **images = calloc((size_t)argc, sizeof *images);
  const char **mounts = calloc((size_t)argc, sizeof *mounts);
  const char **kernels = calloc((size_t)argc, sizeof *kernels);
  int json = 0, bad = 0, status = EXIT_USAGE;
  if (!backends || !targets || !images || !mounts || !kernels) {
    free(backends);
    free(kernels);
    free(targets);
    free(images);
    free(mounts);
    cli_error(CMD, "out of memory");
    return EXIT_FAIL;
  }
  for (int i = 1; i < argc && !bad; i++) {
    const char *a = argv[i], *v = NULL;
    if (cli_is_help(a)) {
      usage(stdout);
      status = EXIT_OK;
      goto out;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--strict") == 0) {
      o.strict = 1;
    } else if (strcmp(a, "--container") == 0) {
      o.container = 1;
    } else if (strcmp(a, "--remote-cache-readonly") == 0) {
      o.remote_readonly = 1;
    } else if (cli_opt(argc, argv, &i, "--shard", NULL, &v, &bad, CMD)) {
      o.shard = v;
    } else if (cli_opt(argc, argv, &i, "--remote-cache", NULL, &v, &bad, CMD)) {
      o.remote_cache = v;
    } else if (cli_opt(argc, argv, &i, "--container-image", NULL, &v, &bad, CMD)) {
      if (v) images[o.ncontainer_images++] = v;
    } else if (cli_opt(argc, argv, &i, "--container-mount", NULL, &v, &bad, CMD)) {
      if (v) mounts[o.ncontainer_mounts++] = v;
    } else if (cli_opt(argc, argv, &i, "--recipes", NULL, &v, &bad, CMD)) {
      o.recipes_dir = v;
    } else if (cli_opt(argc, argv, &i, "--out", NULL, &v, &bad, CMD)) {
      o.out_dir = v;
    } else if (cli_opt(argc, argv, &i, "--cache", NULL, &v, &bad, CMD)) {
      o.cache_dir = v;
    } else if (cli_opt(argc, argv, &i, "--kernel", NULL, &v, &bad, CMD)) {
      if (v) kernels[o.nkernels++] = v;
    } else if (cli_opt(argc, argv, &i, "--backend", NULL, &v, &bad, CMD)) {
      if (v) backends[o.nbackends++] = v;
    } else if (cli_opt(argc, argv, &i, "--targets", NULL, &v, &bad, CMD)) {
      if (v) targets[o.ntargets++] = v;
    } else if (strncmp(a, "-j", 2) == 0 && a[2] != '\0') {
      v = a + 2;
      if (parse_jobs(v, &o.jobs) != 0) {
        cli_error(CMD, "option '-j' needs a number of jobs from 1 to 1024, got '%s'", v);
        bad = 1;
      }
    } else if (cli_opt(argc, argv, &i, "--jobs", "-j", &v, &bad, CMD)) {
      if (v && parse_jobs(v, &o.jobs) != 0) {
        cli_error(CMD, "option '%s' needs a number of jobs from 1 to 1024, got '%s'", a, v);
        bad = 1;
      }
    } else if (a[0] == '-') {
      cli_error(CMD, "unknown option '%s' (see 'gk build --help')", a);
      bad = 1;
    } else {
      cli_error(CMD, "unexpected argument '%s'; the recipes folder is given with --recipes "
                     "(see 'gk build --help')", a);
      bad = 1;
    }
  }
  if (bad) goto out;
  if (!o.recipes_dir || !*o.recipes_dir) {
    cli_error(CMD, "missing --recipes DIR, the folder of *.lua recipes (see 'gk build --help')");
    goto out;
  }
  if (!o.out_dir || !*o.out_dir) {
    cli_error(CMD, "missing --out DIR, the output folder (see 'gk build --help')");
    goto out;
  }
  if (o.cache_dir && !*o.cache_dir) {
    cli_error(CMD, "option '--cache' needs a folder, got ''");
    goto out;
  }
  o.backends = backends;
  o.kernels = kernels;
  o.check_image = check_image;
  o.targets = targets;
  o.container_images = images;
  o.container_mounts = mounts;
  o.log = stderr;

  char *summary = NULL;
  status = gkr_build(&o, json ? &summary : NULL);
  if (json && summary) printf("%s\n", summary);
  free(summary);
out:
  free(backends);
  free(targets);
  free(images);
  free(mounts);
  free(kernels);
  return status;
}
