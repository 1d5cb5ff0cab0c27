/* cmd_matrix.c - gk matrix: kernels x targets, the question operators ask of
 * a release ("does it have sm_89?"), answered from the index alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "util.h"

static const char matrix_usage[] =
  "usage: gk matrix FILE\n"
  "\n"
  "Prints the support matrix of an archive: one line per kernel and variant,\n"
  "one column per backend target; 'x' marks an image, '.' none.\n";

typedef struct col {
  const char *backend, *target;
} col;

typedef struct line {
  const char *kernel, *variant;
} line;

static int col_cmp(const void *pa, const void *pb) {
  const col *a = pa, *b = pb;
  int c = strcmp(a->backend, b->backend);
  return c ? c : strcmp(a->target, b->target);
}

static int line_cmp(const void *pa, const void *pb) {
  const line *a = pa, *b = pb;
  int c = strcmp(a->kernel, b->kernel);
  return c ? c : strcmp(a->variant, b->variant);
}

/* Sorts and removes duplicates; returns the new count. */
static size_t uniq(void *base, size_t n, size_t size,
                   int (*cmp)(const void *, const void *)) {
  char *p = base;
  size_t m = 0;
  qsort(base, n, size, cmp);
  for (size_t i = 0; i < n; i++)
    if (m == 0 || cmp(p + (m - 1) * size, p + i * size))
      memmove(p + m++ * size, p + i * size, size);
  return m;
}

int cmd_matrix(int argc, char **argv) {
  const char *path = NULL;
  size_t n = 0;
  int st = cli_archive_args(argc, argv, matrix_usage, &path, NULL);
  if (st >= 0) return st;
  gk_archive *ar = cli_open_archive("matrix", path);
  if (!ar) return EXIT_FAIL;
  gk_archive_count(ar, &n);
  gk_image_info *rows = calloc(n ? n : 1, sizeof *rows);
  col *cols = calloc(n ? n : 1, sizeof *cols);
  line *lines = calloc(n ? n : 1, sizeof *lines);
  if (!rows || !cols || !lines) {
    cli_error("matrix", "out of memory");
    gk_archive_close(ar);
    return EXIT_FAIL;
  }
  for (size_t i = 0; i < n; i++) {
    gk_archive_image(ar, i, &rows[i]);
    cols[i] = (col){rows[i].backend, rows[i].target};
    lines[i] = (line){rows[i].kernel, rows[i].variant};
  }
  size_t nc = uniq(cols, n, sizeof *cols, col_cmp);
  size_t nl = uniq(lines, n, sizeof *lines, line_cmp);

  int kw = 6;
  for (size_t l = 0; l < nl; l++) {
    int w = (int)(strlen(lines[l].kernel) + 1 + strlen(lines[l].variant));
    if (w > kw) kw = w;
  }
  /* Two header lines: the backend above the first of its columns, then the
   * targets. */
  printf("%-*s", kw, "");
  for (size_t c = 0; c < nc; c++)
    printf("  %-*s", (int)strlen(cols[c].target),
           c == 0 || strcmp(cols[c].backend, cols[c - 1].backend) ? cols[c].backend : "");
  printf("\n%-*s", kw, "KERNEL");
  for (size_t c = 0; c < nc; c++) printf("  %s", cols[c].target);
  putchar('\n');
  for (size_t l = 0; l < nl; l++) {
    char name[256];
    snprintf(name, sizeof name, "%s %s", lines[l].kernel, lines[l].variant);
    printf("%-*s", kw, name);
    for (size_t c = 0; c < nc; c++) {
      int has = 0;
      for (size_t i = 0; i < n && !has; i++)
        has = !line_cmp(&lines[l], &(line){rows[i].kernel, rows[i].variant}) &&
              !col_cmp(&cols[c], &(col){rows[i].backend, rows[i].target});
      printf("  %-*s", (int)strlen(cols[c].target), has ? "x" : ".");
    }
    putchar('\n');
  }
  printf("%zu images, %zu kernels/variants, %zu targets\n", n, nl, nc);
  free(rows);
  free(cols);
  free(lines);
  gk_archive_close(ar);
  return EXIT_OK;
}
