/* cmd_matrix.c - gk matrix: kernels x targets, the question operators ask of
 * a release ("does it have sm_89?", "is anything PTX only?"), answered from
 * the index alone, as a terminal table, JSON, or one self-contained HTML
 * page that can be mailed or attached to a release. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "outfile.h"
#include "products.h"
#include "util.h"

static const char matrix_usage[] =
  "usage: gk matrix FILE [--json | --html OUT.html]\n"
  "\n"
  "Prints the support matrix of an archive: one line per kernel and variant,\n"
  "one column per backend target. A cell is\n"
  "  x  an image the device runs as it is (so, cubin, hsaco, ...)\n"
  "  p  PTX, beside native images of the same backend (a JIT fallback)\n"
  "  P  PTX only: the backend has nothing else for this kernel, so every\n"
  "     device JIT-compiles it and needs a driver as new as the toolkit\n"
  "  .  no image\n"
  "Below the grid: each target the build could not make and why (a whole\n"
  "backend, or one target its compiler cannot produce), the oldest driver\n"
  "each backend's images need, and the cards behind each GPU target (from\n"
  "NVIDIA's and AMD's lists; a generic target: the processors it runs on).\n"
  "Reads the index and metadata only; needs no device.\n"
  "\n"
  "  --json         {archive, columns: [{backend, target, products: [name],\n"
  "                 covers?: [processor]}], rows: [{kernel, variant, cells:\n"
  "                 [{state, format?, size?, sha256?}], ptx_only: [backend]}],\n"
  "                 counts, skipped: [{backend, target?, reason}], min_driver:\n"
  "                 {backend: version}} on stdout; state is present | ptx |\n"
  "                 ptx-only | absent\n"
  "  --html FILE    write the same grid as one self-contained HTML page (inline\n"
  "                 CSS, no script, nothing fetched); '-' for stdout\n";

typedef struct matrix_args {
  const char *path, *html;
  int json;
} matrix_args;

static const cli_option matrix_opts[] = {
  CLI_FLAG("--json", NULL, matrix_args, json),
  CLI_VALUE("--html", NULL, "FILE", matrix_args, html),
  CLI_END};
static const cli_command matrix_cmd = {
  .name = "matrix", .usage = matrix_usage, .opts = matrix_opts, CLI_ARCHIVE(matrix_args)};

typedef struct col {
  const char *backend, *target;
} col;

typedef struct line {
  const char *kernel, *variant;
} line;

enum { CELL_ABSENT, CELL_PRESENT, CELL_PTX, CELL_PTX_ONLY, NSTATES };
static const char *const state_name[NSTATES] = {"absent", "present", "ptx",
                                                "ptx-only"};
static const char state_char[NSTATES] = {'.', 'x', 'p', 'P'};

/* The grid: rows[] of the index, distinct lines and columns (sorted), and
 * for each cell the row it shows (-1: none). */
typedef struct grid {
  gk_image_info *rows;
  size_t n;
  col *cols;
  size_t nc;
  line *lines;
  size_t nl;
  long *cell;  /* nl * nc */
  int *state;  /* nl * nc */
  size_t count[NSTATES];
  size_t ptx_only_lines;
  json_t *skipped, *drivers; /* the archive's meta (cli_build_notes) */
} grid;

/* Numbers inside names compare by value, so that sm_90 comes before sm_100
 * and bits=8 before bits=16. */
static int natcmp(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      while (*a == '0') a++;
      while (*b == '0') b++;
      size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
      if (la != lb) return la < lb ? -1 : 1;
      int c = strncmp(a, b, la);
      if (c) return c;
      a += la;
      b += lb;
      continue;
    }
    if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    a++;
    b++;
  }
  return *a ? 1 : *b ? -1 : 0;
}

/* natcmp ties only on equal digit strings with different leading zeros
 * ("sm_090" vs "sm_90"): fall back to the bytes so distinct names never
 * merge into one column. */
static int namecmp(const char *a, const char *b) {
  int c = natcmp(a, b);
  return c ? c : strcmp(a, b);
}

static int col_cmp(const void *pa, const void *pb) {
  const col *a = pa, *b = pb;
  int c = namecmp(a->backend, b->backend);
  return c ? c : namecmp(a->target, b->target);
}

static int line_cmp(const void *pa, const void *pb) {
  const line *a = pa, *b = pb;
  int c = namecmp(a->kernel, b->kernel);
  return c ? c : namecmp(a->variant, b->variant);
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

static void grid_free(grid *g) {
  free(g->rows);
  free(g->cols);
  free(g->lines);
  free(g->cell);
  free(g->state);
  json_decref(g->skipped);
  json_decref(g->drivers);
}

static int is_ptx(const gk_image_info *im) { return strcmp(im->format, "ptx") == 0; }

/* Builds the grid from the index; -1 when out of memory. */
static int grid_build(gk_archive *ar, grid *g) {
  size_t n = 0, m;
  memset(g, 0, sizeof *g);
  gk_archive_count(ar, &n);
  m = n ? n : 1;
  g->n = n;
  g->rows = calloc(m, sizeof *g->rows);
  g->cols = calloc(m, sizeof *g->cols);
  g->lines = calloc(m, sizeof *g->lines);
  if (!g->rows || !g->cols || !g->lines) return -1;
  for (size_t i = 0; i < n; i++) {
    if (gk_archive_image(ar, i, &g->rows[i]) != GK_OK) return -1;
    g->cols[i] = (col){g->rows[i].backend, g->rows[i].target};
    g->lines[i] = (line){g->rows[i].kernel, g->rows[i].variant};
  }
  g->nc = uniq(g->cols, n, sizeof *g->cols, col_cmp);
  g->nl = uniq(g->lines, n, sizeof *g->lines, line_cmp);
  g->cell = malloc((g->nl * g->nc + 1) * sizeof *g->cell);
  g->state = calloc(g->nl * g->nc + 1, sizeof *g->state);
  if (!g->cell || !g->state) return -1;
  for (size_t c = 0; c < g->nl * g->nc; c++) g->cell[c] = -1;
  /* (kernel, backend, target, variant) is the index's key, so each cell
   * holds at most one row. */
  for (size_t i = 0; i < n; i++) {
    const line *l = bsearch(&(line){g->rows[i].kernel, g->rows[i].variant},
                            g->lines, g->nl, sizeof *g->lines, line_cmp);
    const col *c = bsearch(&(col){g->rows[i].backend, g->rows[i].target},
                           g->cols, g->nc, sizeof *g->cols, col_cmp);
    g->cell[(size_t)(l - g->lines) * g->nc + (size_t)(c - g->cols)] = (long)i;
  }
  /* A PTX cell is "only" when its backend has no native image on the line:
   * then every device of that backend depends on the JIT. */
  for (size_t l = 0; l < g->nl; l++) {
    int line_ptx_only = 0;
    for (size_t c = 0; c < g->nc; c++) {
      long r = g->cell[l * g->nc + c];
      int st = CELL_ABSENT;
      if (r >= 0 && !is_ptx(&g->rows[r])) {
        st = CELL_PRESENT;
      } else if (r >= 0) {
        st = CELL_PTX_ONLY;
        for (size_t d = 0; d < g->nc && st == CELL_PTX_ONLY; d++) {
          long q = g->cell[l * g->nc + d];
          if (q >= 0 && !strcmp(g->cols[d].backend, g->cols[c].backend) &&
              !is_ptx(&g->rows[q]))
            st = CELL_PTX;
        }
        line_ptx_only |= st == CELL_PTX_ONLY;
      }
      g->state[l * g->nc + c] = st;
      g->count[st]++;
    }
    g->ptx_only_lines += line_ptx_only;
  }
  return 0;
}

/* The backends whose images on line l are all PTX, as a JSON array. */
static json_t *ptx_only_backends(const grid *g, size_t l) {
  json_t *arr = json_array();
  for (size_t c = 0; c < g->nc; c++) {
    int seen = 0;
    if (g->state[l * g->nc + c] != CELL_PTX_ONLY) continue;
    for (size_t i = 0; i < json_array_size(arr) && !seen; i++)
      seen = !strcmp(json_string_value(json_array_get(arr, i)), g->cols[c].backend);
    if (!seen) json_array_append_new(arr, json_string(g->cols[c].backend));
  }
  return arr;
}

/* A column's products (cli/products.c), and a generic target's processors. */
static json_t *col_json(const col *c) {
  const char *names[64];
  const cli_target *t = cli_target_find(c->backend, c->target);
  size_t n = cli_target_products(t, names, 64);
  json_t *o = json_pack("{s:s, s:s, s:[]}", "backend", c->backend, "target", c->target,
                        "products");
  for (size_t i = 0; i < n && i < 64; i++)
    json_array_append_new(json_object_get(o, "products"), json_string(names[i]));
  if (t && t->covers) {
    json_t *cov = json_array();
    for (const char *const *p = t->covers; *p; p++) json_array_append_new(cov, json_string(*p));
    json_object_set_new(o, "covers", cov);
  }
  return o;
}

/* The columns whose targets name the same cards (sm_90, sm_90a and
 * compute_90) share one line of products: the first of them writes it,
 * with every target of the group in targets and the cards in names (a
 * generic target: the processors it runs on). 0 for the other columns of
 * the group and for a target without products. */
static int product_group(const grid *g, size_t c, char *targets, size_t tsize, char *names,
                         size_t nsize) {
  const cli_target *t = cli_target_find(g->cols[c].backend, g->cols[c].target);
  size_t len = 0;
  if (!t) return 0;
  for (size_t d = 0; d < c; d++)
    if (cli_target_find(g->cols[d].backend, g->cols[d].target) == t) return 0;
  for (size_t d = c; d < g->nc && len < tsize; d++)
    if (cli_target_find(g->cols[d].backend, g->cols[d].target) == t)
      len += (size_t)snprintf(targets + len, tsize - len, "%s%s", len ? " " : "",
                              g->cols[d].target);
  if (!t->covers) {
    cli_target_products_text(t, names, nsize);
    return 1;
  }
  len = (size_t)snprintf(names, nsize, "generic, runs on");
  for (const char *const *p = t->covers; *p && len < nsize; p++)
    len += (size_t)snprintf(names + len, nsize - len, "%s %s", p == t->covers ? "" : ",", *p);
  return 1;
}

static json_t *grid_json(const grid *g, const char *path) {
  json_t *cols = json_array(), *lines = json_array();
  for (size_t c = 0; c < g->nc; c++) json_array_append_new(cols, col_json(&g->cols[c]));
  for (size_t l = 0; l < g->nl; l++) {
    json_t *cells = json_array();
    for (size_t c = 0; c < g->nc; c++) {
      long r = g->cell[l * g->nc + c];
      int st = g->state[l * g->nc + c];
      if (r < 0) {
        json_array_append_new(cells, json_pack("{s:s}", "state", state_name[st]));
        continue;
      }
      char hex[65];
      cli_hex(g->rows[r].sha256, hex);
      json_array_append_new(cells, json_pack("{s:s, s:s, s:I, s:s}", "state",
                                             state_name[st], "format",
                                             g->rows[r].format, "size",
                                             (json_int_t)g->rows[r].raw_size,
                                             "sha256", hex));
    }
    json_array_append_new(lines, json_pack("{s:s, s:s, s:o, s:o}", "kernel",
                                           g->lines[l].kernel, "variant",
                                           g->lines[l].variant, "cells", cells,
                                           "ptx_only", ptx_only_backends(g, l)));
  }
  json_t *counts = json_pack(
      "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "images", (json_int_t)g->n,
      "rows", (json_int_t)g->nl, "columns", (json_int_t)g->nc, "present",
      (json_int_t)g->count[CELL_PRESENT], "ptx", (json_int_t)g->count[CELL_PTX],
      "ptx_only", (json_int_t)g->count[CELL_PTX_ONLY], "absent",
      (json_int_t)g->count[CELL_ABSENT], "ptx_only_rows",
      (json_int_t)g->ptx_only_lines);
  return json_pack("{s:s, s:o, s:o, s:o, s:O, s:O}", "archive", path, "columns", cols,
                   "rows", lines, "counts", counts, "skipped", g->skipped, "min_driver",
                   g->drivers);
}

/* What the grid cannot show: the targets the build skipped (no column
 * at all) and the driver the images need. */
static void notes_text(const grid *g) {
  const char *b;
  json_t *v;
  for (size_t i = 0; i < json_array_size(g->skipped); i++) {
    char line[1024];
    cli_skip_text(json_array_get(g->skipped, i), line, sizeof line);
    printf("%s\n", line);
  }
  json_object_foreach(g->drivers, b, v)
    if (json_is_string(v)) printf("%s: needs a driver >= %s\n", b, json_string_value(v));
  char targets[256], names[2048];
  for (size_t c = 0, head = 0; c < g->nc; c++) {
    if (!product_group(g, c, targets, sizeof targets, names, sizeof names)) continue;
    if (!head++) printf("products (%s):\n", cli_products_source);
    printf("  %s %s: %s\n", g->cols[c].backend, targets, names);
  }
}

static int first_of_backend(const grid *g, size_t c) {
  return c == 0 || strcmp(g->cols[c].backend, g->cols[c - 1].backend) != 0;
}

static void grid_text(const grid *g) {
  int kw = 6;
  int *w = calloc(g->nc + 1, sizeof *w);
  if (!w) return;
  for (size_t l = 0; l < g->nl; l++) {
    int n = (int)(strlen(g->lines[l].kernel) + 1 + strlen(g->lines[l].variant));
    if (n > kw) kw = n;
  }
  /* A column is as wide as its target, or its backend's name above it. */
  for (size_t c = 0; c < g->nc; c++) {
    w[c] = (int)strlen(g->cols[c].target);
    if (first_of_backend(g, c) && (int)strlen(g->cols[c].backend) > w[c])
      w[c] = (int)strlen(g->cols[c].backend);
  }
  /* Two header lines: the backend above the first of its columns, then the
   * targets. Padding only between cells: no trailing blanks in CI logs. */
  printf("%-*s", kw, "");
  for (size_t c = 0, pad = 0; c < g->nc; c++) {
    pad += 2;
    if (first_of_backend(g, c)) {
      printf("%*s%s", (int)pad, "", g->cols[c].backend);
      pad = (size_t)w[c] - strlen(g->cols[c].backend);
    } else {
      pad += (size_t)w[c];
    }
  }
  printf("\n%-*s", kw, "KERNEL");
  for (size_t c = 0; c < g->nc; c++)
    printf("  %-*s", c + 1 < g->nc ? w[c] : 0, g->cols[c].target);
  putchar('\n');
  for (size_t l = 0; l < g->nl; l++) {
    char name[512];
    snprintf(name, sizeof name, "%s%s%s", g->lines[l].kernel,
             *g->lines[l].variant ? " " : "", g->lines[l].variant);
    printf("%-*s", kw, name);
    for (size_t c = 0; c < g->nc; c++)
      printf("  %c%*s", state_char[g->state[l * g->nc + c]],
             c + 1 < g->nc ? w[c] - 1 : 0, "");
    putchar('\n');
  }
  free(w);
  if (g->count[CELL_PTX] || g->count[CELL_PTX_ONLY])
    printf("legend: x image, p PTX beside native images, P PTX only "
           "(JIT on every device), . none\n");
  printf("%zu images, %zu kernels/variants, %zu targets\n", g->n, g->nl, g->nc);
  if (g->ptx_only_lines)
    printf("%zu kernels/variants are PTX only on some backend\n", g->ptx_only_lines);
  notes_text(g);
}

/* Text from the archive goes into the page: escape everything HTML reads
 * as markup, so a hostile index cannot inject tags or scripts. */
static void html_text(FILE *f, const char *s) {
  for (; *s; s++) switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      if ((unsigned char)*s < 0x20) fputs("&#xFFFD;", f);
      else fputc(*s, f);
  }
}

static const char html_style[] =
  "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;"
  "margin:1.5em;color:#1a1a1a;background:#fff}\n"
  "h1{font-size:1.3em;margin:0 0 .3em}\n"
  "h2{font-size:1.1em;margin:1.2em 0 .3em}\n"
  "ul.skipped{margin:0;padding-left:1.2em}\n"
  "p.driver{margin:.8em 0 0}\n"
  "code{font-family:ui-monospace,monospace}\n"
  ".summary{margin:.2em 0 1em;color:#444}\n"
  "ul.legend{list-style:none;padding:0;margin:0 0 1em;display:flex;flex-wrap:wrap;gap:.5em 1.5em}\n"
  "ul.legend li{display:flex;align-items:center;gap:.4em}\n"
  ".swatch{display:inline-block;min-width:3.2em;padding:.1em .3em;text-align:center;"
  "border:1px solid #bbb;font-weight:600}\n"
  "table{border-collapse:collapse}\n"
  "th,td{border:1px solid #c8c8c8;padding:.3em .7em;text-align:center;white-space:nowrap}\n"
  "thead th{background:#f3f3f3}\n"
  "th.kernel,td.variant{text-align:left}\n"
  "tbody th{background:#fafafa;font-weight:600}\n"
  ".present{background:#2e7d32;color:#fff}\n"
  ".ptx{background:#fbc02d;color:#1a1a1a}\n"
  ".ptx-only{background:#d84315;color:#fff}\n"
  ".absent{background:#eeeeee;color:#8a8a8a}\n"
  "td.flag{color:#d84315;font-weight:600;text-align:left}\n"
  "ul.products{margin:0;padding-left:1.2em;max-width:80em}\n"
  "p.source{margin:0 0 .5em;color:#444}\n"
  "footer{margin-top:1em;color:#666;font-size:.9em}\n";

/* Text shown in a cell of each state: readable without colour, too. */
static const char *const state_cell[NSTATES] = {"&#8211;", "&#10003;", "PTX",
                                                "PTX only"};
static const char *const state_legend[NSTATES] = {
    "no image", "image present (runs as it is)",
    "PTX beside native images (JIT fallback)",
    "PTX only (every device JIT-compiles it)"};

static void grid_html(const grid *g, const char *path, FILE *f) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>Support matrix of ", f);
  html_text(f, base);
  fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>Support matrix of <code>",
          html_style);
  html_text(f, base);
  fprintf(f, "</code></h1>\n<p class=\"summary\"><span id=\"images\">%zu</span> images, "
             "<span id=\"rows\">%zu</span> kernels/variants, "
             "<span id=\"columns\">%zu</span> targets</p>\n<ul class=\"legend\">\n",
          g->n, g->nl, g->nc);
  static const int order[NSTATES] = {CELL_PRESENT, CELL_PTX, CELL_PTX_ONLY, CELL_ABSENT};
  for (int k = 0; k < NSTATES; k++) {
    int st = order[k];
    fprintf(f, "<li><span class=\"swatch %s\">%s</span> %s: <b id=\"count-%s\">%zu</b></li>\n",
            state_name[st], state_cell[st], state_legend[st], state_name[st],
            g->count[st]);
  }
  fputs("</ul>\n<table>\n<thead>\n<tr><th class=\"kernel\" rowspan=\"2\">kernel</th>"
        "<th rowspan=\"2\">variant</th>", f);
  for (size_t c = 0, span; c < g->nc; c += span) {
    for (span = 1; c + span < g->nc && !strcmp(g->cols[c + span].backend, g->cols[c].backend);)
      span++;
    fprintf(f, "<th class=\"backend\" colspan=\"%zu\">", span);
    html_text(f, g->cols[c].backend);
    fputs("</th>", f);
  }
  /* A note column only when a line needs one. */
  if (g->ptx_only_lines) fputs("<th rowspan=\"2\">note</th>", f);
  fputs("</tr>\n<tr>", f);
  for (size_t c = 0; c < g->nc; c++) {
    fputs("<th class=\"target\">", f);
    html_text(f, g->cols[c].target);
    fputs("</th>", f);
  }
  fputs("</tr>\n</thead>\n<tbody>\n", f);
  for (size_t l = 0; l < g->nl; l++) {
    fputs("<tr><th class=\"kernel\" scope=\"row\">", f);
    html_text(f, g->lines[l].kernel);
    fputs("</th><td class=\"variant\">", f);
    html_text(f, *g->lines[l].variant ? g->lines[l].variant : "-");
    fputs("</td>", f);
    for (size_t c = 0; c < g->nc; c++) {
      long r = g->cell[l * g->nc + c];
      int st = g->state[l * g->nc + c];
      fprintf(f, "<td class=\"cell %s\" data-state=\"%s\" title=\"", state_name[st],
              state_name[st]);
      html_text(f, g->cols[c].backend);
      fputc(' ', f);
      html_text(f, g->cols[c].target);
      if (r >= 0) {
        char hex[65];
        cli_hex(g->rows[r].sha256, hex);
        fputs(": ", f);
        html_text(f, g->rows[r].format);
        fprintf(f, ", %llu bytes, sha256 %.16s", (unsigned long long)g->rows[r].raw_size, hex);
      } else {
        fputs(": none", f);
      }
      fprintf(f, "\">%s</td>", state_cell[st]);
    }
    if (!g->ptx_only_lines) {
      fputs("</tr>\n", f);
      continue;
    }
    json_t *po = ptx_only_backends(g, l);
    fputs("<td class=\"flag\">", f);
    for (size_t i = 0; i < json_array_size(po); i++) {
      fputs(i ? ", " : "", f);
      html_text(f, json_string_value(json_array_get(po, i)));
      fputs(" PTX only", f);
    }
    json_decref(po);
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody>\n</table>\n", f);
  const char *db;
  json_t *dv;
  json_object_foreach(g->drivers, db, dv) {
    if (!json_is_string(dv)) continue;
    fputs("<p class=\"driver\">", f);
    html_text(f, db);
    fputs(": needs a driver &ge; ", f);
    html_text(f, json_string_value(dv));
    fputs("</p>\n", f);
  }
  char targets[256], names[2048];
  size_t head = 0;
  for (size_t c = 0; c < g->nc; c++) {
    if (!product_group(g, c, targets, sizeof targets, names, sizeof names)) continue;
    if (!head++)
      fprintf(f, "<h2>Products</h2>\n<p class=\"source\">The cards behind each target, from "
                 "%s.</p>\n<ul class=\"products\">\n", cli_products_source);
    fputs("<li><b>", f);
    html_text(f, g->cols[c].backend);
    fputc(' ', f);
    html_text(f, targets);
    fputs("</b>: ", f);
    html_text(f, names);
    fputs("</li>\n", f);
  }
  if (head) fputs("</ul>\n", f);
  if (json_array_size(g->skipped)) {
    fputs("<h2>Not built</h2>\n<ul class=\"skipped\">\n", f);
    for (size_t i = 0; i < json_array_size(g->skipped); i++) {
      json_t *e = json_array_get(g->skipped, i);
      const char *t = json_string_value(json_object_get(e, "target"));
      fputs("<li><b>", f);
      html_text(f, json_string_value(json_object_get(e, "backend")));
      if (t) fputc(' ', f), html_text(f, t);
      fputs("</b>: skipped, ", f);
      html_text(f, json_string_value(json_object_get(e, "reason")));
      fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
  }
  fprintf(f, "<footer>Written by gk %d.%d.%d from the archive's index "
             "(<code>gk matrix --html</code>).</footer>\n</body>\n</html>\n",
          GK_VERSION_MAJOR, GK_VERSION_MINOR, GK_VERSION_PATCH);
}

int cmd_matrix(int argc, char **argv) {
  matrix_args a = {0};
  int rc = EXIT_FAIL, st = cli_parse(&matrix_cmd, argc, argv, &a);
  if (st >= 0) return st;
  const char *path = a.path, *html = a.html;
  int json = a.json;
  if (!path) {
    cli_error("matrix", "needs an archive (see 'gk matrix --help')");
    return EXIT_USAGE;
  }
  if (json && html && !strcmp(html, "-")) {
    cli_error("matrix", "--json and --html - both want stdout; write the page to a file");
    return EXIT_USAGE;
  }
  gk_archive *ar = cli_open_archive("matrix", path, 0);
  if (!ar) return EXIT_FAIL;
  grid g;
  int built = grid_build(ar, &g);
  if (built == 0 && cli_build_notes("matrix", path, (void **)&g.skipped, (void **)&g.drivers))
    goto matrix_out;
  if (built != 0) {
    cli_error("matrix", "cannot read the index of '%s': %s", path,
              *gk_archive_errmsg(ar) ? gk_archive_errmsg(ar) : "out of memory");
    goto matrix_out;
  }
  if (html) {
    cli_out out;
    char err[1024];
    if (cli_out_open(&out, html, err, sizeof err) != 0) {
      cli_error("matrix", "%s", err);
      goto matrix_out;
    }
    grid_html(&g, path, out.f);
    if (cli_out_commit(&out, err, sizeof err) != 0) {
      cli_error("matrix", "%s", err);
      goto matrix_out;
    }
    if (strcmp(html, "-"))
      fprintf(stderr, "gk matrix: wrote '%s' (%zu images, %zu x %zu cells)\n", html,
              g.n, g.nl, g.nc);
  }
  if (json) {
    json_t *root = grid_json(&g, path);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
  } else if (!html) {
    grid_text(&g);
  }
  rc = EXIT_OK;
matrix_out:
  grid_free(&g);
  gk_archive_close(ar);
  return rc;
}
