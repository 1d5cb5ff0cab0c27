/* cmd_ls.c - gk ls: the index of an archive, as a table or JSON. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "util.h"

static const char ls_usage[] =
  "usage: gk ls FILE [--json]\n"
  "\n"
  "Lists every image of an archive: kernel, backend, target, variant, format,\n"
  "size (raw and packed) and SHA-256. Reads the index only; needs no device.\n"
  "\n"
  "  --json   a JSON array of objects (kernel, backend, target, variant, format,\n"
  "           size, packed_size, sha256, entry, launch, toolchain) on stdout\n";

/* One row as a JSON object; entry/launch are embedded as JSON, not strings. */
static json_t *row_json(const gk_image_info *im) {
  char hex[65];
  json_t *entry = json_loads(im->entry, 0, NULL);
  json_t *launch = json_loads(im->launch, 0, NULL);
  cli_hex(im->sha256, hex);
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:o, s:o, s:s}",
                   "kernel", im->kernel, "backend", im->backend, "target",
                   im->target, "variant", im->variant, "format", im->format,
                   "size", (json_int_t)im->raw_size, "packed_size",
                   (json_int_t)im->packed_size, "sha256", hex, "entry",
                   entry ? entry : json_array(), "launch",
                   launch ? launch : json_object(), "toolchain", im->toolchain);
}

int cmd_ls(int argc, char **argv) {
  const char *path = NULL;
  int json = 0, rc = EXIT_FAIL;
  size_t n = 0;

  int st = cli_archive_args(argc, argv, ls_usage, &path, &json);
  if (st >= 0) return st;
  gk_archive *ar = cli_open_archive("ls", path);
  if (!ar) return EXIT_FAIL;
  gk_archive_count(ar, &n);

  json_t *arr = json ? json_array() : NULL;
  if (!json)
    printf("%-18s %-7s %-12s %-10s %-6s %10s %10s  %s\n", "KERNEL", "BACKEND",
           "TARGET", "VARIANT", "FORMAT", "SIZE", "PACKED", "SHA256");
  for (size_t i = 0; i < n; i++) {
    gk_image_info im;
    char hex[65];
    if (gk_archive_image(ar, i, &im) != GK_OK) {
      cli_error("ls", "%s", gk_archive_errmsg(ar));
      goto ls_out;
    }
    if (json) {
      json_array_append_new(arr, row_json(&im));
      continue;
    }
    cli_hex(im.sha256, hex);
    printf("%-18s %-7s %-12s %-10s %-6s %10llu %10llu  %.16s\n", im.kernel,
           im.backend, im.target, *im.variant ? im.variant : "-", im.format,
           (unsigned long long)im.raw_size, (unsigned long long)im.packed_size,
           hex);
  }
  if (json) {
    json_dumpf(arr, stdout, JSON_INDENT(2));
    putchar('\n');
  }
  rc = EXIT_OK;
ls_out:
  json_decref(arr);
  gk_archive_close(ar);
  return rc;
}
