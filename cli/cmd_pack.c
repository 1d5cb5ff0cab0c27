/* cmd_pack.c - gk pack: a build output folder -> one fat archive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "gkpack.h"
#include "util.h"

static const char pack_usage[] =
  "usage: gk pack DIR -o FILE.gkfat [--level N]\n"
  "\n"
  "Bundles the images of a 'gk build --out DIR' folder (DIR/manifest.json) into\n"
  "one archive: a SQLite database indexing zstd-compressed images, each checked\n"
  "against the manifest's SHA-256. The file is written atomically; the same\n"
  "images always give the same bytes.\n"
  "\n"
  "  -o, --output FILE  archive to write (replaced atomically)\n"
  "  --level N          zstd level, 1..22 (default 19)\n";

int cmd_pack(int argc, char **argv) {
  const char *dir = NULL, *out = NULL, *level_s = NULL;
  int bad = 0, level = GKP_DEFAULT_LEVEL;
  char err[1024];

  for (int i = 1; i < argc && !bad; i++) {
    if (cli_is_help(argv[i])) {
      fputs(pack_usage, stdout);
      return EXIT_OK;
    }
    if (cli_opt(argc, argv, &i, "--output", "-o", &out, &bad, "pack") ||
        cli_opt(argc, argv, &i, "--level", NULL, &level_s, &bad, "pack"))
      continue;
    if (argv[i][0] == '-') {
      cli_error("pack", "unknown option '%s' (see 'gk pack --help')", argv[i]);
      return EXIT_USAGE;
    }
    if (dir) {
      cli_error("pack", "one folder only ('%s' and '%s')", dir, argv[i]);
      return EXIT_USAGE;
    }
    dir = argv[i];
  }
  if (bad) return EXIT_USAGE;
  if (!dir || !out) {
    cli_error("pack", "needs a build folder and -o FILE (see 'gk pack --help')");
    return EXIT_USAGE;
  }
  if (level_s) {
    char *end;
    long l = strtol(level_s, &end, 10);
    if (*end || l < 1 || l > 22) {
      cli_error("pack", "--level '%s': give a zstd level from 1 to 22", level_s);
      return EXIT_USAGE;
    }
    level = (int)l;
  }
  if (gkp_pack_dir(dir, out, level, err, sizeof err)) {
    cli_error("pack", "%s", err);
    return EXIT_FAIL;
  }
  fprintf(stderr, "gk pack: wrote '%s'\n", out);
  return EXIT_OK;
}
