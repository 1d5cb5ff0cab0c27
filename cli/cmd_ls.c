/* cmd_ls.c - gk ls: the index of an archive, as a table or JSON. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "gkpack.h"
#include "util.h"

static const char ls_usage[] =
  "usage: gk ls FILE [--meta] [--json]\n"
  "\n"
  "Lists every image of an archive: kernel, backend, target, variant, format,\n"
  "size (raw and packed) and SHA-256. Reads the index only; needs no device.\n"
  "\n"
  "  --meta   show the archive's metadata instead (docs/archive.md): source\n"
  "           revision and dirty flag, toolchain versions, recipe hashes\n"
  "  --json   {count, images: [{kernel, backend, target, variant, format, size,\n"
  "           packed_size, sha256, entry, launch, toolchain}]} on stdout, in\n"
  "           index order; with --meta one object, key -> value (JSON values\n"
  "           embedded)\n";

typedef struct ls_args {
  const char *path;
  int meta, json;
} ls_args;

static const cli_option ls_opts[] = {
  CLI_FLAG("--meta", NULL, ls_args, meta),
  CLI_FLAG("--json", NULL, ls_args, json),
  CLI_END};
static const cli_command ls_cmd = {
  .name = "ls", .usage = ls_usage, .opts = ls_opts, CLI_ARCHIVE(ls_args)};

/* gk ls --meta: the meta table. Values that hold JSON (recipes, toolchains)
 * are embedded as JSON in --json output and listed one item a line in the
 * table. */
static int show_meta(const char *path, int json) {
  gkp_meta *m = NULL;
  size_t n = 0;
  gk_err err;
  if (gkp_read_meta(path, &m, &n, &err) != 0) {
    cli_error("ls", "%.1023s", err.msg); /* cut where it always was */
    return EXIT_FAIL;
  }
  json_t *obj = json_object();
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_loads(m[i].value, 0, NULL);
    if (v && !json_is_object(v) && !json_is_array(v)) json_decref(v), v = NULL;
    if (json) {
      json_object_set_new(obj, m[i].key, v ? v : json_string(m[i].value));
      continue;
    }
    if (!v) {
      printf("%-16s %s\n", m[i].key, m[i].value);
      continue;
    }
    size_t k, count = json_is_object(v) ? json_object_size(v) : json_array_size(v);
    const char *name;
    json_t *x;
    if (count == 0) printf("%-16s (none)\n", m[i].key);
    if (json_is_object(v)) {
      json_object_foreach(v, name, x)
        printf("%-16s %s %s\n", m[i].key, name, json_string_value(x) ? json_string_value(x) : "?");
    } else {
      json_array_foreach(v, k, x) {
        char line[1024];
        if (json_is_object(x)) cli_skip_text(x, line, sizeof line); /* "skipped" */
        printf("%-16s %s\n", m[i].key,
               json_is_object(x) ? line : json_string_value(x) ? json_string_value(x) : "?");
      }
    }
    json_decref(v);
  }
  if (json) {
    json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
    putchar('\n');
  }
  json_decref(obj);
  gkp_meta_free(m, n);
  return EXIT_OK;
}

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
  ls_args a = {0};
  int rc = EXIT_FAIL, st = cli_parse(&ls_cmd, argc, argv, &a);
  size_t n = 0;
  if (st >= 0) return st;
  if (!a.path) {
    cli_error("ls", "needs an archive (see 'gk ls --help')");
    return EXIT_USAGE;
  }
  if (a.meta) return show_meta(a.path, a.json);
  gk_archive *ar = cli_open_archive("ls", a.path, 0);
  if (!ar) return EXIT_FAIL;
  gk_archive_count(ar, &n);

  json_t *arr = a.json ? json_array() : NULL;
  if (!a.json)
    printf("%-18s %-7s %-12s %-10s %-6s %10s %10s  %s\n", "KERNEL", "BACKEND",
           "TARGET", "VARIANT", "FORMAT", "SIZE", "PACKED", "SHA256");
  for (size_t i = 0; i < n; i++) {
    gk_image_info im;
    char hex[65];
    if (gk_archive_image(ar, i, &im) != GK_OK) {
      cli_error("ls", "%s", gk_archive_errmsg(ar));
      goto ls_out;
    }
    if (a.json) {
      json_array_append_new(arr, row_json(&im));
      continue;
    }
    cli_hex(im.sha256, hex);
    printf("%-18s %-7s %-12s %-10s %-6s %10llu %10llu  %.16s\n", im.kernel,
           im.backend, im.target, *im.variant ? im.variant : "-", im.format,
           (unsigned long long)im.raw_size, (unsigned long long)im.packed_size,
           hex);
  }
  if (a.json) {
    /* An object, like every other --json: room for more than the rows. */
    json_t *root = json_pack("{s:I, s:O}", "count", (json_int_t)n, "images", arr);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
  }
  rc = EXIT_OK;
ls_out:
  json_decref(arr);
  gk_archive_close(ar);
  return rc;
}
