/* cmd_pack.c - gk pack: a build output folder -> one fat archive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
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

typedef struct pack_args {
  const char *dir, *out, *level;
  int merge;
  cli_list inputs; /* --merge: the archives */
} pack_args;

/* The arguments: one build folder, or with --merge (anywhere) archives. */
static int pack_arg(void *fields, const cli_arg *a) {
  pack_args *p = fields;
  if (p->merge) return cli_add(&p->inputs, a);
  if (p->dir) {
    cli_error(a->cmd, "one folder only ('%s' and '%s'); to join archives use --merge", p->dir,
              a->value);
    return -1;
  }
  p->dir = a->value;
  return 0;
}

static const cli_option pack_opts[] = {
  CLI_VALUE("--output", "-o", "FILE", pack_args, out),
  CLI_VALUE("--level", NULL, "N", pack_args, level),
  CLI_FLAG("--merge", NULL, pack_args, merge),
  CLI_END};
static const cli_command pack_cmd = {
  .name = "pack", .usage = pack_usage, .opts = pack_opts, .extra = pack_arg};

int cmd_pack(int argc, char **argv) {
  pack_args a = {0};
  int level = GKP_DEFAULT_LEVEL, rc = EXIT_USAGE;
  gk_err err;

  if (!(a.inputs.v = calloc((size_t)argc, sizeof *a.inputs.v))) {
    cli_error("pack", "out of memory");
    return EXIT_FAIL;
  }
  /* --merge anywhere makes every argument an archive (pack_arg). */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--merge") == 0) a.merge = 1;
  if ((rc = cli_parse(&pack_cmd, argc, argv, &a)) >= 0) goto pack_out;
  rc = EXIT_USAGE;
  const char *dir = a.dir, *out = a.out, *level_s = a.level, **inputs = a.inputs.v;
  size_t ninputs = a.inputs.n;
  int merge = a.merge;
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
  if (merge ? gkp_merge(inputs, ninputs, out, level, &err)
            : gkp_pack_dir(dir, out, level, check_image, &err)) {
    cli_error("pack", "%s", err.msg);
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
  free(a.inputs.v);
  return rc;
}
