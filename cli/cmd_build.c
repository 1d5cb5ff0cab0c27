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
    "usage: gk build --recipes DIR --out DIR [--backend NAME]... [--cache DIR]\n"
    "                [-j N] [--json]\n"
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
    "  --out DIR        output folder, created if missing\n"
    "  --backend NAME   build only this backend (repeatable); fails if its\n"
    "                   toolchain is missing\n"
    "  --cache DIR      compile cache (default: $GK_CACHE_DIR, else\n"
    "                   $HOME/.gsc/gllm/kernels)\n"
    "  -j, --jobs N     compile N jobs at once (default: the number of CPUs)\n"
    "  --json           print a summary as JSON on stdout\n"
    "  -h, --help       show this help\n"
    "\n"
    "Progress and errors go to stderr. Exit status: 0 built, 1 failed, 2 usage.\n",
    f);
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
  int json = 0, bad = 0, status = EXIT_USAGE;
  if (!backends) {
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
    } else if (cli_opt(argc, argv, &i, "--recipes", NULL, &v, &bad, CMD)) {
      o.recipes_dir = v;
    } else if (cli_opt(argc, argv, &i, "--out", NULL, &v, &bad, CMD)) {
      o.out_dir = v;
    } else if (cli_opt(argc, argv, &i, "--cache", NULL, &v, &bad, CMD)) {
      o.cache_dir = v;
    } else if (cli_opt(argc, argv, &i, "--backend", NULL, &v, &bad, CMD)) {
      if (v) backends[o.nbackends++] = v;
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
  o.log = stderr;

  char *summary = NULL;
  status = gkr_build(&o, json ? &summary : NULL);
  if (json && summary) printf("%s\n", summary);
  free(summary);
out:
  free(backends);
  return status;
}
