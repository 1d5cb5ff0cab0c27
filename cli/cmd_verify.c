/* cmd_verify.c - gk verify: every image decompresses, hashes and parses as
 * its index row says. Needs no device: this is what a release check runs. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "util.h"

static const char verify_usage[] =
  "usage: gk verify FILE [--json]\n"
  "\n"
  "Checks every image of an archive: it decompresses to its recorded size, its\n"
  "SHA-256 matches the index, and its ELF header fits the row's backend and\n"
  "target. Exits 1 if any image fails.\n"
  "\n"
  "  --json   a JSON object {ok, images: [{kernel, backend, target, variant,\n"
  "           ok, error?}]} on stdout\n";

int cmd_verify(int argc, char **argv) {
  const char *path = NULL;
  int json = 0;
  size_t n = 0, bad = 0;

  int st = cli_archive_args(argc, argv, verify_usage, &path, &json);
  if (st >= 0) return st;
  gk_archive *ar = cli_open_archive("verify", path);
  if (!ar) return EXIT_FAIL;
  gk_archive_count(ar, &n);

  json_t *rows = json_array();
  for (size_t i = 0; i < n; i++) {
    gk_image_info im;
    void *bytes = NULL;
    size_t size = 0;
    gk_archive_image(ar, i, &im);
    int rc = gk_archive_read(ar, i, &bytes, &size);
    gk_free(bytes);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b}", "kernel", im.kernel,
                          "backend", im.backend, "target", im.target, "variant",
                          im.variant, "ok", rc == GK_OK);
    if (rc != GK_OK) {
      bad++;
      json_object_set_new(o, "error", json_string(gk_archive_errmsg(ar)));
      if (!json)
        printf("FAIL %s %s %s %s: %s\n", im.backend, im.kernel, im.target,
               im.variant, gk_archive_errmsg(ar));
    } else if (!json) {
      printf("ok   %s %s %s %s\n", im.backend, im.kernel, im.target, im.variant);
    }
    json_array_append_new(rows, o);
  }
  if (json) {
    json_t *root = json_pack("{s:b, s:o}", "ok", bad == 0, "images", rows);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
  } else {
    json_decref(rows);
    fprintf(stderr, "gk verify: %zu of %zu images ok\n", n - bad, n);
  }
  gk_archive_close(ar);
  return bad ? EXIT_FAIL : EXIT_OK;
}
