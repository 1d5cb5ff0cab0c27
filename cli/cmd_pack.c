/* cmd_pack.c - gk pack: a build output folder -> one fat archive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "gkpack.h"
#include "util.h"

static const char pack_usage[] =
  "usage: gk pack DIR -o FILE.gkfat [--level N]\n"
  "       gk pack --merge A.gkfat B.gkfat... -o FILE.gkfat [--level N]\n"
  "\n"
  "Bundles the images of a 'gk build --out DIR' folder (DIR/manifest.json) into\n"
  "one archive: a SQLite database indexing zstd-compressed images, each checked\n"
  "against the manifest's SHA-256. The file is written atomically; the same\n"
  "images always give the same bytes.\n"
  "\n"
  "With --merge, joins partial archives (from 'gk build --shard I/N' or from\n"
  "runners of other platforms) into one, equal to the archive a single build of\n"
  "everything would give. Identical rows in several parts are kept once; rows\n"
  "with the same kernel, backend, target and variant but other bytes (or other\n"
  "metadata) are a conflict: the merge fails and names them.\n"
  "\n"
  "  -o, --output FILE  archive to write (replaced atomically)\n"
  "  --level N          zstd level, 1..22 (default 19)\n"
  "  --merge            the arguments are archives to merge, not a build folder\n";

/* Each image of a build folder is checked as libgk will read it (header,
 * entry points) before it goes into an archive. */
static int check_image(const gkp_image *im, char *why, size_t why_size) {
  if (gk_backend_from_name(im->backend) == GK_BACKEND_NONE) return 0; /* no rule to check by */
  gk_image_info row = {0};
  row.kernel = im->kernel;
  row.backend = im->backend;
  row.target = im->target;
  row.variant = im->variant;
  row.format = im->format;
  row.entry = im->entry_json;
  row.launch = im->launch_json ? im->launch_json : "{}";
  row.toolchain = im->toolchain ? im->toolchain : "";
  return gk_image_check(im->data, im->size, &row, why, why_size) == GK_OK ? 0 : -1;
}

int cmd_pack(int argc, char **argv) {
  const char *dir = NULL, *out = NULL, *level_s = NULL;
  const char **inputs = calloc((size_t)argc, sizeof *inputs);
  size_t ninputs = 0;
  int bad = 0, level = GKP_DEFAULT_LEVEL, merge = 0, rc = EXIT_USAGE;
  char err[4096];

  if (!inputs) {
    cli_error("pack", "out of memory");
    return EXIT_FAIL;
  }
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--merge") == 0) merge = 1;
  for (int i = 1; i < argc && !bad; i++) {
    if (cli_is_help(argv[i])) {
      fputs(pack_usage, stdout);
      rc = EXIT_OK;
      goto pack_out;
    }
    if (strcmp(argv[i], "--merge") == 0 ||
        cli_opt(argc, argv, &i, "--output", "-o", &out, &bad, "pack") ||
        cli_opt(argc, argv, &i, "--level", NULL, &level_s, &bad, "pack"))
      continue;
    if (argv[i][0] == '-') {
      cli_error("pack", "unknown option '%s' (see 'gk pack --help')", argv[i]);
      goto pack_out;
    }
    if (merge) {
      inputs[ninputs++] = argv[i];
      continue;
    }
    if (dir) {
      cli_error("pack", "one folder only ('%s' and '%s'); to join archives use "
                        "--merge", dir, argv[i]);
      goto pack_out;
    }
    dir = argv[i];
  }
  if (bad) goto pack_out;
  if (merge && (ninputs == 0 || !out)) {
    cli_error("pack", "--merge needs archives to merge and -o FILE (see 'gk pack --help')");
    goto pack_out;
  }
  if (!merge && (!dir || !out)) {
    cli_error("pack", "needs a build folder and -o FILE (see 'gk pack --help')");
    goto pack_out;
  }
  for (size_t i = 0; merge && i < ninputs; i++)
    if (strcmp(inputs[i], out) == 0) {
      cli_error("pack", "'%s' is both an input and the output; write the merge elsewhere",
                out);
      goto pack_out;
    }
  if (level_s) {
    char *end;
    long l = strtol(level_s, &end, 10);
    if (*end || l < 1 || l > 22) {
      cli_error("pack", "--level '%s': give a zstd level from 1 to 22", level_s);
      goto pack_out;
    }
    level = (int)l;
  }
  if (merge ? gkp_merge(inputs, ninputs, out, level, err, sizeof err)
            : gkp_pack_dir(dir, out, level, check_image, err, sizeof err)) {
    cli_error("pack", "%s", err);
    rc = EXIT_FAIL;
    goto pack_out;
  }
  if (merge)
    fprintf(stderr, "gk pack: merged %zu archive%s into '%s'\n", ninputs,
            ninputs == 1 ? "" : "s", out);
  else
    fprintf(stderr, "gk pack: wrote '%s'\n", out);
  /* A signature signs the contents it was made for; the merge has others,
   * so the parts' signatures are not carried over. Say so rather than let a
   * signed input look like a signed output. */
  for (size_t i = 0; merge && i < ninputs; i++) {
    gk_archive *ar = NULL;
    size_t nsig = 0;
    if (gk_archive_open(inputs[i], &ar) == GK_OK &&
        gk_archive_signers(ar, NULL, 0, &nsig) == GK_OK && nsig)
      fprintf(stderr,
              "gk pack: '%s' was signed (%zu signature%s); the merged archive "
              "is not: sign '%s' with 'gk sign %s --key NAME.key'\n",
              inputs[i], nsig, nsig == 1 ? "" : "s", out, out);
    gk_archive_close(ar);
  }
  rc = EXIT_OK;
pack_out:
  free(inputs);
  return rc;
}
