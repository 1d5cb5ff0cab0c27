/*
 * mkarchive.c - writes a test archive with the real packager (gkp_write)
 * from rows given on the command line, including rows no toolchain here can
 * build (cuda, rocm) and names no recipe would use ("../x"): listing,
 * matrix, diff and extract must cope with any index an archive may carry.
 *
 *   gk_ops_mkarchive OUT ROW...
 *   ROW = kernel|backend|target|variant|format|DATA[|toolchain]
 *   DATA = @FILE (its bytes) or =TEXT (the text itself)
 *   or meta:KEY=VALUE, a row of the archive's meta table
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gkpack.h"

static void *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return b;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUT kernel|backend|target|variant|format|@FILE-or-=TEXT[|toolchain]...\n",
            argv[0]);
    return 2;
  }
  int n = 0, nmeta = 0;
  gkp_meta *meta = calloc((size_t)argc, sizeof *meta);
  gkp_image *ims = calloc((size_t)argc, sizeof *ims);
  char **entries = calloc((size_t)argc, sizeof *entries);
  char **rows = calloc((size_t)argc, sizeof *rows);
  void **files = calloc((size_t)argc, sizeof *files);
  for (int a = 2; a < argc; a++) {
    if (strncmp(argv[a], "meta:", 5) == 0) {
      char *kv = argv[a] + 5, *eq = strchr(kv, '=');
      if (!eq) {
        fprintf(stderr, "mkarchive: '%s' needs meta:KEY=VALUE\n", argv[a]);
        return 2;
      }
      *eq = '\0';
      meta[nmeta++] = (gkp_meta){kv, eq + 1};
      continue;
    }
    int i = n++;
    char *f[7] = {0};
    char *s = rows[i] = strdup(argv[a]);
    int k = 0;
    for (char *p = s; k < 7 && p; k++) {
      f[k] = p;
      p = strchr(p, '|');
      if (p) *p++ = '\0';
    }
    if (k < 6) {
      fprintf(stderr, "mkarchive: row '%s' has %d fields, needs 6 or 7\n", argv[a], k);
      return 2;
    }
    gkp_image *im = &ims[i];
    im->kernel = f[0];
    im->backend = f[1];
    im->target = f[2];
    im->variant = f[3];
    im->format = f[4];
    im->toolchain = f[6] ? f[6] : "test toolchain";
    entries[i] = malloc(strlen(f[0]) + 5);
    sprintf(entries[i], "[\"%s\"]", f[0]);
    im->entry_json = entries[i];
    im->launch_json = "{}";
    if (f[5][0] == '@') {
      im->data = files[i] = slurp(f[5] + 1, &im->size);
      if (!im->data) {
        perror(f[5] + 1);
        return 1;
      }
    } else if (f[5][0] == '=') {
      im->data = f[5] + 1;
      im->size = strlen(f[5] + 1);
    } else {
      fprintf(stderr, "mkarchive: DATA '%s' must start with @ or =\n", f[5]);
      return 2;
    }
  }
  gk_err err;
  int rc = gkp_write_meta(argv[1], ims, (size_t)n, meta, (size_t)nmeta, 3, &err);
  if (rc != 0) fprintf(stderr, "mkarchive: %s\n", err.msg);
  for (int i = 0; i < n; i++) {
    free(entries[i]);
    free(rows[i]);
    free(files[i]);
  }
  free(entries);
  free(rows);
  free(files);
  free(ims);
  free(meta);
  return rc ? 1 : 0;
}
