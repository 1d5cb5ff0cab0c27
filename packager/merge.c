/*
 * merge.c - reads archives back on the build side: their metadata
 * (gk ls --meta) and their images, to merge partial archives made by
 * sharded or per-platform builds into one (gk pack --merge).
 *
 * The format has one reader, libgk: archives are opened, listed and read
 * through it, and it checks what it reads (header, schema, rows, each
 * stored blob's and each image's SHA-256, the image's header against its
 * row). A partial archive comes from another machine (a CI artifact), so
 * every image is read that way before it is merged; the merged archive is
 * then written by gkp_write_meta from the raw images, exactly as a single
 * build of everything would write it, which is what makes "shards then
 * merge" byte-identical to one build.
 */
#include "gkpack.h"

#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"
#include "gk_compiler.h"
#include "gk_tools.h"
#include "pack_internal.h"

gk_archive *gkp_open_archive(const char *path, unsigned flags, gk_err *err) {
  gk_archive *ar = NULL;
  gk_open_options opts = {0};
  opts.flags = flags;
  int rc = gk_archive_open_ex(path, &opts, &ar);
  if (rc != GK_OK) {
    /* libgk's message reads "cannot open archive 'PATH': ..." for most
     * failures: say it once. */
    const char *why = gk_last_error();
    if (*why && strstr(why, path))
      gk_err_set(err, "%s", why);
    else
      gk_err_set(err, "cannot open archive '%s': %s", path,
                 *why ? why : gk_strerror(rc));
  }
  return ar;
}

void gkp_meta_free(gkp_meta *meta, size_t n) {
  for (size_t i = 0; meta && i < n; i++) {
    free((char *)meta[i].key);
    free((char *)meta[i].value);
  }
  free(meta);
}

typedef struct meta_list {
  gkp_meta *v;
  size_t n, cap;
} meta_list;

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static int add_meta(void *ctx, const char *k, size_t kn, const char *v, size_t vn) {
  meta_list *m = ctx;
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    gkp_meta *p = realloc(m->v, cap * sizeof *p);
    if (!p) return GK_ENOMEM;
    m->v = p;
    m->cap = cap;
  }
  gkp_meta *row = &m->v[m->n];
  *row = (gkp_meta){dup_n(k, kn), dup_n(v, vn)};
  m->n++; /* owned from here on, freed by gkp_meta_free */
  return row->key && row->value ? 0 : GK_ENOMEM;
}

/* The meta rows of an open archive, sorted by key (libgk's order). */
static int read_meta_ar(gk_archive *ar, const char *path, gkp_meta **out, size_t *n,
                        gk_err *err) {
  meta_list m = {0};
  int rc = gk__archive_meta(ar, add_meta, &m);
  *out = m.v;
  *n = m.n;
  if (rc == GK_OK) return 0;
  if (rc == GK_ENOMEM && !*gk_archive_errmsg(ar))
    gk_err_set(err, "out of memory reading '%s'", path);
  else
    gk_err_set(err, "%s", gk_archive_errmsg(ar));
  gkp_meta_free(m.v, m.n);
  *out = NULL;
  *n = 0;
  return -1;
}

int gkp_read_meta(const char *path, gkp_meta **out, size_t *n, gk_err *err) {
  *out = NULL;
  *n = 0;
  gk_archive *ar = gkp_open_archive(path, 0, err);
  if (!ar) return -1;
  int rc = read_meta_ar(ar, path, out, n, err);
  gk_archive_close(ar);
  return rc;
}

/* ---- merging ------------------------------------------------------------ */

/* An image read back from an input archive; strings and data owned. */
typedef struct row {
  gkp_image im;
  unsigned char sha[32];
  size_t from; /* index of the input archive */
} row;

typedef struct rows {
  row *v;
  size_t n;
} rows;

static void rows_free(rows *r) {
  for (size_t i = 0; i < r->n; i++) {
    gkp_image *im = &r->v[i].im;
    free((char *)im->kernel), free((char *)im->backend), free((char *)im->target);
    free((char *)im->variant), free((char *)im->format), free((char *)im->entry_json);
    free((char *)im->launch_json), free((char *)im->toolchain), gk_free((void *)im->data);
  }
  free(r->v);
}

/* Reads every image of one archive (opened with GK_OPEN_CHECK_IMAGES), each
 * checked by libgk as it is read. */
static int read_rows(gk_archive *ar, const char *path, size_t from, rows *r, gk_err *err) {
  size_t n = 0;
  if (gk_archive_count(ar, &n) != GK_OK) return gk_err_set(err, "%s", gk_archive_errmsg(ar));
  row *more = realloc(r->v, (r->n + n + 1) * sizeof *more);
  if (!more) goto oom;
  r->v = more;
  for (size_t i = 0; i < n; i++) {
    gk_image_info info;
    if (gk_archive_image(ar, i, &info) != GK_OK)
      return gk_err_set(err, "%s", gk_archive_errmsg(ar));
    row *w = &r->v[r->n];
    memset(w, 0, sizeof *w);
    w->from = from;
    memcpy(w->sha, info.sha256, 32);
    gkp_image *im = &w->im;
    im->kernel = strdup(info.kernel), im->backend = strdup(info.backend);
    im->target = strdup(info.target), im->variant = strdup(info.variant);
    im->format = strdup(info.format), im->entry_json = strdup(info.entry);
    im->launch_json = strdup(info.launch), im->toolchain = strdup(info.toolchain);
    r->n++; /* owned from here on, freed by rows_free */
    if (!im->kernel || !im->backend || !im->target || !im->variant || !im->format ||
        !im->entry_json || !im->launch_json || !im->toolchain)
      goto oom;
    void *data = NULL;
    int rc = gk_archive_read(ar, i, &data, &im->size);
    im->data = data;
    if (rc == GK_ENOMEM) goto oom;
    if (rc == GK_EHASH || rc == GK_ECORRUPT) {
      gk_err_set(err, "'%s': image %s %s %s %s is damaged (it does not "
                 "decompress to its size and SHA-256); rebuild that archive",
                 path, im->kernel, im->backend, im->target, im->variant);
      return -1;
    }
    if (rc != GK_OK) return gk_err_set(err, "%s", gk_archive_errmsg(ar));
  }
  return 0;
oom:
  return gk_err_set(err, "out of memory reading '%s'", path);
}

static int key_cmp(const gkp_image *a, const gkp_image *b) {
  int c;
  if ((c = strcmp(a->kernel, b->kernel))) return c;
  if ((c = strcmp(a->backend, b->backend))) return c;
  if ((c = strcmp(a->target, b->target))) return c;
  return strcmp(a->variant, b->variant);
}

static int row_cmp(const void *pa, const void *pb) {
  const row *a = pa, *b = pb;
  int c = key_cmp(&a->im, &b->im);
  if (c) return c;
  return a->from < b->from ? -1 : a->from > b->from;
}

/* Which column of two rows with one key differs; NULL when none. */
static const char *row_diff(const row *a, const row *b) {
  if (memcmp(a->sha, b->sha, 32) != 0) return "sha256";
  if (strcmp(a->im.format, b->im.format)) return "format";
  if (strcmp(a->im.entry_json, b->im.entry_json)) return "entry";
  if (strcmp(a->im.launch_json, b->im.launch_json)) return "launch";
  if (strcmp(a->im.toolchain, b->im.toolchain)) return "toolchain";
  return NULL;
}

/* Appends to err's sentence from byte *len on, keeping it NUL-terminated
 * when full. */
static void addf(gk_err *err, size_t *len, const char *fmt, ...) GK__PRINTF(3, 4);
static void addf(gk_err *err, size_t *len, const char *fmt, ...) {
  size_t size = sizeof err->msg;
  if (!err || *len + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(err->msg + *len, size - *len, fmt, ap);
  va_end(ap);
  if (k > 0) *len = *len + (size_t)k < size ? *len + (size_t)k : size - 1;
}

/* Merged metadata, key -> value, as a JSON object of strings (jansson
 * keeps the keys; the writer sorts the rows). */
static int merge_meta(json_t *acc, const gkp_meta *m, size_t n, const char *path,
                      const char *const *inputs, json_t *origin, size_t from, gk_err *err) {
  for (size_t i = 0; i < n; i++) {
    const char *k = m[i].key, *v = m[i].value;
    /* gk pack writes these itself for the merged archive. */
    if (!strcmp(k, "format") || !strcmp(k, "generator") || !strcmp(k, "toolchains") ||
        !strcmp(k, "min_driver"))
      continue;
    json_t *have = json_object_get(acc, k);
    if (!have) {
      json_object_set_new(acc, k, json_string(v));
      json_object_set_new(origin, k, json_integer((json_int_t)from));
      continue;
    }
    const char *h = json_string_value(have);
    const char *first = inputs[json_integer_value(json_object_get(origin, k))];
    if (!strcmp(k, "source_dirty")) {
      /* true wins, then unknown: a merge is clean only if every part is. */
      int rank_h = !strcmp(h, "true") ? 2 : strcmp(h, "false") ? 1 : 0;
      int rank_v = !strcmp(v, "true") ? 2 : strcmp(v, "false") ? 1 : 0;
      if (rank_v > rank_h) json_object_set_new(acc, k, json_string(v));
    } else if (!strcmp(k, "skipped")) {
      /* Joined; gkp_write_meta drops what another part built, sorts and
       * keeps one entry per target. */
      json_t *a = json_loads(h, 0, NULL), *b = json_loads(v, 0, NULL);
      char *t = json_is_array(a) && json_is_array(b) && !json_array_extend(a, b)
                    ? json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
      json_decref(a), json_decref(b);
      if (!t) {
        gk_err_set(err, "cannot merge: the 'skipped' metadata of '%s' or '%s' "
                   "is not a JSON array", first, path);
        return -1;
      }
      json_object_set_new(acc, k, json_string(t));
      free(t);
    } else if (!strcmp(k, "recipes")) {
      json_t *a = json_loads(h, 0, NULL), *b = json_loads(v, 0, NULL), *x;
      const char *name;
      int bad = !json_is_object(a) || !json_is_object(b);
      if (!bad) {
        json_object_foreach(b, name, x) {
          json_t *y = json_object_get(a, name);
          if (y && !json_equal(x, y)) {
            gk_err_set(err, "cannot merge: recipe '%s' differs between '%s' "
                       "(%s) and '%s' (%s); the parts come from different sources",
                       name, first, json_string_value(y) ? json_string_value(y) : "?",
                       path, json_string_value(x) ? json_string_value(x) : "?");
            json_decref(a), json_decref(b);
            return -1;
          }
          json_object_set(a, name, x);
        }
      }
      char *t = bad ? NULL : json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
      json_decref(a), json_decref(b);
      if (!t) {
        gk_err_set(err, "cannot merge: the 'recipes' metadata of '%s' or '%s' "
                   "is not a JSON object", first, path);
        return -1;
      }
      json_object_set_new(acc, k, json_string(t));
      free(t);
    } else if (strcmp(h, v) != 0) {
      gk_err_set(err, "cannot merge: metadata '%s' is '%s' in '%s' but '%s' in "
                 "'%s'; merge only parts built from the same source revision",
                 k, h, first, v, path);
      return -1;
    }
  }
  return 0;
}

int gkp_merge(const char *const *inputs, size_t n, const char *path, int level, gk_err *err) {
  rows r = {0};
  json_t *meta = json_object(), *origin = json_object();
  gkp_image *ims = NULL;
  gkp_meta *out_meta = NULL;
  size_t nims = 0, nout = 0;
  int rc = -1;

  if (n == 0) {
    gk_err_set(err, "nothing to merge: give one archive or more");
    goto merge_out;
  }
  for (size_t a = 0; a < n; a++) {
    gkp_meta *m = NULL;
    size_t nm = 0;
    gk_archive *ar = gkp_open_archive(inputs[a], GK_OPEN_CHECK_IMAGES, err);
    if (!ar) goto merge_out;
    int bad = read_meta_ar(ar, inputs[a], &m, &nm, err) ||
              merge_meta(meta, m, nm, inputs[a], inputs, origin, a, err) ||
              read_rows(ar, inputs[a], a, &r, err);
    gkp_meta_free(m, nm);
    gk_archive_close(ar);
    if (bad) goto merge_out;
  }

  /* Sorted by key then input, equal keys are neighbours: identical rows
   * collapse into one, differing ones are all reported. */
  qsort(r.v, r.n, sizeof *r.v, row_cmp);
  ims = calloc(r.n ? r.n : 1, sizeof *ims);
  if (!ims) {
    gk_err_set(err, "out of memory");
    goto merge_out;
  }
  size_t len = 0, conflicts = 0;
  for (size_t i = 0; i < r.n; i++) {
    if (nims > 0 && key_cmp(&r.v[i].im, &ims[nims - 1]) == 0) {
      const row *first = &r.v[i - 1];
      while (first > r.v && key_cmp(&(first - 1)->im, &r.v[i].im) == 0) first--;
      const char *col = row_diff(first, &r.v[i]);
      if (col) {
        char ha[65], hb[65];
        sodium_bin2hex(ha, sizeof ha, first->sha, 32);
        sodium_bin2hex(hb, sizeof hb, r.v[i].sha, 32);
        if (conflicts++ == 0)
          addf(err, &len, "cannot merge: conflicting rows (same key, different %s):", col);
        addf(err, &len, "\n  %s %s %s %s: '%s' has sha256 %.16s, '%s' has %.16s%s%s",
             r.v[i].im.kernel, r.v[i].im.backend, r.v[i].im.target,
             *r.v[i].im.variant ? r.v[i].im.variant : "-", inputs[first->from], ha,
             inputs[r.v[i].from], hb, strcmp(col, "sha256") ? "; they differ in " : "",
             strcmp(col, "sha256") ? col : "");
      }
      continue;
    }
    /* libgk checked the image against this SHA-256 as it read it. */
    ims[nims] = r.v[i].im;
    ims[nims++].sha256 = r.v[i].sha;
  }
  if (conflicts) {
    addf(err, &len, "\n(%zu conflicting row%s; rebuild the parts from one source "
         "and toolchain set)", conflicts, conflicts == 1 ? "" : "s");
    goto merge_out;
  }

  out_meta = calloc(json_object_size(meta) + 1, sizeof *out_meta);
  if (!out_meta) {
    gk_err_set(err, "out of memory");
    goto merge_out;
  }
  const char *k;
  json_t *v;
  json_object_foreach(meta, k, v) out_meta[nout++] = (gkp_meta){k, json_string_value(v)};
  rc = gkp_write_meta(path, ims, nims, out_meta, nout, level, err);

merge_out:
  free(out_meta);
  free(ims);
  rows_free(&r);
  json_decref(meta);
  json_decref(origin);
  return rc;
}
