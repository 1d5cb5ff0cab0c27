/*
 * merge.c - reads archives back on the build side: their metadata
 * (gk ls --meta) and their images, to merge partial archives made by
 * sharded or per-platform builds into one (gk pack --merge).
 *
 * A partial archive comes from another machine (a CI artifact), so it is
 * treated like a manifest: checked before use. Each image is decompressed
 * and re-hashed; the merged archive is then written by gkp_write_meta from
 * the raw images, exactly as a single build of everything would write it,
 * which is what makes "shards then merge" byte-identical to one build.
 */
#include "gkpack.h"

#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "gk.h" /* for the format constants only */
#include "pack_internal.h"

/* Opens an archive read-only and checks its identity, like the loader. */
static sqlite3 *open_archive(const char *path, char *err, size_t errsize) {
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;
  int app = 0, ver = -1;
  /* SQLite says only "unable to open database file": ask the system why. */
  FILE *probe = fopen(path, "rb");
  if (!probe) {
    gkp__seterr(err, errsize, "cannot open archive '%s': %s", path, strerror(errno));
    return NULL;
  }
  fclose(probe);
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    gkp__seterr(err, errsize, "cannot open archive '%s': %s", path,
                db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  if (sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &s, NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    app = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  s = NULL;
  if (app != (int)GK_ARCHIVE_APPLICATION_ID) {
    gkp__seterr(err, errsize, "'%s' is not a gllm-kernels archive (no 'gkfa' "
                "application id); give files written by 'gk pack'", path);
    sqlite3_close(db);
    return NULL;
  }
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    ver = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (ver != GK_ARCHIVE_FORMAT) {
    gkp__seterr(err, errsize, "archive '%s' has format version %d; this gk knows %d (%s)",
                path, ver, GK_ARCHIVE_FORMAT,
                ver > GK_ARCHIVE_FORMAT ? "update gk"
                                        : "an older gk wrote it; rebuild and repack it");
    sqlite3_close(db);
    return NULL;
  }
  return db;
}

static char *dup_col(sqlite3_stmt *s, int i) {
  const unsigned char *t = sqlite3_column_text(s, i);
  return strdup(t ? (const char *)t : "");
}

void gkp_meta_free(gkp_meta *meta, size_t n) {
  for (size_t i = 0; meta && i < n; i++) {
    free((char *)meta[i].key);
    free((char *)meta[i].value);
  }
  free(meta);
}

/* The meta rows of an open archive, sorted by key. */
static int read_meta_db(sqlite3 *db, const char *path, gkp_meta **out, size_t *n,
                        char *err, size_t errsize) {
  sqlite3_stmt *s = NULL;
  size_t cap = 16;
  *n = 0;
  *out = calloc(cap, sizeof **out);
  if (!*out ||
      sqlite3_prepare_v2(db, "SELECT key, value FROM meta ORDER BY key", -1, &s, NULL)) {
    gkp__seterr(err, errsize, "cannot read the metadata of '%s': %s", path,
                *out ? sqlite3_errmsg(db) : "out of memory");
    goto meta_fail;
  }
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (*n == cap) {
      gkp_meta *p = realloc(*out, 2 * cap * sizeof *p);
      if (!p) {
        gkp__seterr(err, errsize, "out of memory");
        goto meta_fail;
      }
      *out = p;
      cap *= 2;
    }
    (*out)[*n] = (gkp_meta){dup_col(s, 0), dup_col(s, 1)};
    if (!(*out)[(*n)++].value) {
      gkp__seterr(err, errsize, "out of memory");
      goto meta_fail;
    }
  }
  if (rc != SQLITE_DONE) {
    gkp__seterr(err, errsize, "cannot read the metadata of '%s': %s", path,
                sqlite3_errmsg(db));
    goto meta_fail;
  }
  sqlite3_finalize(s);
  return 0;
meta_fail:
  sqlite3_finalize(s);
  gkp_meta_free(*out, *n);
  *out = NULL;
  *n = 0;
  return -1;
}

int gkp_read_meta(const char *path, gkp_meta **out, size_t *n, char *err,
                  size_t errsize) {
  *out = NULL;
  *n = 0;
  sqlite3 *db = open_archive(path, err, errsize);
  if (!db) return -1;
  int rc = read_meta_db(db, path, out, n, err, errsize);
  sqlite3_close(db);
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
  size_t n, cap;
} rows;

static void rows_free(rows *r) {
  for (size_t i = 0; i < r->n; i++) {
    gkp_image *im = &r->v[i].im;
    free((char *)im->kernel), free((char *)im->backend), free((char *)im->target);
    free((char *)im->variant), free((char *)im->format), free((char *)im->entry_json);
    free((char *)im->launch_json), free((char *)im->toolchain), free((void *)im->data);
  }
  free(r->v);
}

/* Decompresses a frame that must declare exactly `raw` bytes into dst,
 * against `prefix` when pn > 0 (a 'zstd-delta' blob). 0 or -1. */
static int unframe(ZSTD_DCtx *dctx, void *dst, size_t raw, const void *z, size_t zn,
                   const void *prefix, size_t pn) {
  if (ZSTD_getFrameContentSize(z, zn) != (unsigned long long)raw) return -1;
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters);
  if (pn && ZSTD_isError(ZSTD_DCtx_refPrefix(dctx, prefix, pn))) return -1;
  size_t got = ZSTD_decompressDCtx(dctx, dst, raw, z, zn);
  return ZSTD_isError(got) || got != raw ? -1 : 0;
}

/* The prefix a delta whose base is blob `id` was coded against: the raw
 * bytes of that blob's chain, root first, end to end (docs/archive.md),
 * malloc'ed, its size in *n. NULL when a blob of the chain is missing, is
 * damaged, or the chain is longer than `depth` (which a loop also is). */
static unsigned char *read_chain(sqlite3_stmt *bs, ZSTD_DCtx *dctx, sqlite3_int64 id,
                                 int depth, size_t *n) {
  unsigned char *out = NULL, *pre = NULL;
  void *frame = NULL;
  size_t pn = 0, zn = 0;
  sqlite3_int64 raw = -1, base = 0;
  int delta = 0;
  if (depth <= 0) return NULL;
  sqlite3_reset(bs);
  sqlite3_bind_int64(bs, 1, id);
  if (sqlite3_step(bs) == SQLITE_ROW) {
    const char *codec = (const char *)sqlite3_column_text(bs, 0);
    delta = codec && strcmp(codec, "zstd-delta") == 0;
    zn = (size_t)sqlite3_column_bytes(bs, 1);
    raw = sqlite3_column_int64(bs, 2);
    base = sqlite3_column_int64(bs, 3);
    /* The statement is reused up the chain: keep the frame. */
    if (codec && (delta || strcmp(codec, "zstd") == 0) &&
        delta == (sqlite3_column_type(bs, 3) != SQLITE_NULL) && (frame = malloc(zn ? zn : 1)))
      memcpy(frame, sqlite3_column_blob(bs, 1), zn);
  }
  sqlite3_reset(bs);
  if (!frame || raw < 0 || (delta && !(pre = read_chain(bs, dctx, base, depth - 1, &pn))))
    goto chain_out;
  if ((out = malloc(pn + (size_t)raw + 1))) {
    if (pn) memcpy(out, pre, pn);
    if (unframe(dctx, out + pn, (size_t)raw, frame, zn, out, pn)) {
      free(out);
      out = NULL;
    }
  }
  *n = pn + (size_t)raw;
chain_out:
  free(frame);
  free(pre);
  return out;
}

/* Reads every image of one archive, decompressed and checked. */
static int read_rows(sqlite3 *db, const char *path, size_t from, rows *r, char *err,
                     size_t errsize) {
  static const char sql[] =
    "SELECT i.kernel, i.backend, i.target, i.variant, s.format, s.entry, s.launch,"
    " s.toolchain, i.raw_size, i.sha256, b.codec, b.data, b.raw_size, b.base"
    " FROM image i LEFT JOIN spec s ON s.id = i.spec LEFT JOIN blob b ON b.id = i.blob"
    " ORDER BY i.kernel, i.backend, i.variant, i.target";
  sqlite3_stmt *s = NULL, *bs = NULL;
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  if (!dctx) goto oom;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) ||
      sqlite3_prepare_v2(db, "SELECT codec, data, raw_size, base FROM blob WHERE id = ?",
                         -1, &bs, NULL)) {
    gkp__seterr(err, errsize, "cannot read the index of '%s': %s", path, sqlite3_errmsg(db));
    goto fail;
  }
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (r->n == r->cap) {
      size_t cap = r->cap ? 2 * r->cap : 64;
      row *p = realloc(r->v, cap * sizeof *p);
      if (!p) goto oom;
      r->v = p;
      r->cap = cap;
    }
    row *w = &r->v[r->n];
    memset(w, 0, sizeof *w);
    w->from = from;
    gkp_image *im = &w->im;
    im->kernel = dup_col(s, 0), im->backend = dup_col(s, 1), im->target = dup_col(s, 2);
    im->variant = dup_col(s, 3), im->format = dup_col(s, 4), im->entry_json = dup_col(s, 5);
    im->launch_json = dup_col(s, 6), im->toolchain = dup_col(s, 7);
    r->n++; /* owned from here on, freed by rows_free */
    if (sqlite3_column_type(s, 4) == SQLITE_NULL) {
      gkp__seterr(err, errsize, "'%s': image %s %s %s %s names a spec row that is missing; "
                  "rebuild that archive", path, im->kernel, im->backend,
                  im->target, im->variant);
      goto fail;
    }
    if (!im->kernel || !im->backend || !im->target || !im->variant || !im->format ||
        !im->entry_json || !im->launch_json || !im->toolchain)
      goto oom;
    sqlite3_int64 raw = sqlite3_column_int64(s, 8);
    const void *sha = sqlite3_column_blob(s, 9);
    const char *codec = (const char *)sqlite3_column_text(s, 10);
    int delta = codec && strcmp(codec, "zstd-delta") == 0;
    if (!sha || sqlite3_column_bytes(s, 9) != 32 || !codec ||
        (!delta && strcmp(codec, "zstd") != 0) ||
        delta != (sqlite3_column_type(s, 13) != SQLITE_NULL) ||
        raw < 0 || sqlite3_column_int64(s, 12) != raw) {
      gkp__seterr(err, errsize, "'%s': image %s %s %s %s has no valid blob (missing, "
                  "unknown codec or sizes that disagree); repack it with 'gk pack'",
                  path, im->kernel, im->backend, im->target, im->variant);
      goto fail;
    }
    memcpy(w->sha, sha, 32);
    void *data = malloc(raw ? (size_t)raw : 1), *base = NULL;
    if (!data) goto oom;
    im->data = data;
    im->size = (size_t)raw;
    size_t bn = 0;
    if (delta)
      base = read_chain(bs, dctx, sqlite3_column_int64(s, 13), GK_ARCHIVE_DELTA_DEPTH, &bn);
    unsigned char check[32];
    int bad = (delta && !base) ||
              unframe(dctx, data, (size_t)raw, sqlite3_column_blob(s, 11),
                      (size_t)sqlite3_column_bytes(s, 11), base, bn) ||
              (crypto_hash_sha256(check, data, (size_t)raw),
               memcmp(check, w->sha, 32) != 0);
    free(base);
    if (bad) {
      gkp__seterr(err, errsize, "'%s': image %s %s %s %s is damaged (it does not "
                  "decompress to its size and SHA-256); rebuild that archive",
                  path, im->kernel, im->backend, im->target, im->variant);
      goto fail;
    }
  }
  if (rc != SQLITE_DONE) {
    gkp__seterr(err, errsize, "cannot read the index of '%s': %s", path, sqlite3_errmsg(db));
    goto fail;
  }
  sqlite3_finalize(s);
  sqlite3_finalize(bs);
  ZSTD_freeDCtx(dctx);
  return 0;
oom:
  gkp__seterr(err, errsize, "out of memory reading '%s'", path);
fail:
  sqlite3_finalize(s);
  sqlite3_finalize(bs);
  ZSTD_freeDCtx(dctx);
  return -1;
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

/* Appends to a message buffer, keeping it NUL-terminated when full. */
static void addf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void addf(char *buf, size_t size, size_t *len, const char *fmt, ...) {
  if (!buf || *len + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
  if (k > 0) *len = *len + (size_t)k < size ? *len + (size_t)k : size - 1;
}

/* Merged metadata, key -> value, as a JSON object of strings (jansson
 * keeps the keys; the writer sorts the rows). */
static int merge_meta(json_t *acc, const gkp_meta *m, size_t n, const char *path,
                      const char *const *inputs, json_t *origin, size_t from, char *err,
                      size_t errsize) {
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
        gkp__seterr(err, errsize, "cannot merge: the 'skipped' metadata of '%s' or '%s' "
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
            gkp__seterr(err, errsize, "cannot merge: recipe '%s' differs between '%s' "
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
        gkp__seterr(err, errsize, "cannot merge: the 'recipes' metadata of '%s' or '%s' "
                    "is not a JSON object", first, path);
        return -1;
      }
      json_object_set_new(acc, k, json_string(t));
      free(t);
    } else if (strcmp(h, v) != 0) {
      gkp__seterr(err, errsize, "cannot merge: metadata '%s' is '%s' in '%s' but '%s' in "
                  "'%s'; merge only parts built from the same source revision",
                  k, h, first, v, path);
      return -1;
    }
  }
  return 0;
}

int gkp_merge(const char *const *inputs, size_t n, const char *path, int level,
              char *err, size_t errsize) {
  rows r = {0};
  json_t *meta = json_object(), *origin = json_object();
  gkp_image *ims = NULL;
  gkp_meta *out_meta = NULL;
  size_t nims = 0, nout = 0;
  int rc = -1;

  if (sodium_init() < 0) {
    gkp__seterr(err, errsize, "libsodium failed to initialize");
    goto merge_out;
  }
  if (n == 0) {
    gkp__seterr(err, errsize, "nothing to merge: give one archive or more");
    goto merge_out;
  }
  for (size_t a = 0; a < n; a++) {
    gkp_meta *m = NULL;
    size_t nm = 0;
    sqlite3 *db = open_archive(inputs[a], err, errsize);
    if (!db) goto merge_out;
    int bad = read_meta_db(db, inputs[a], &m, &nm, err, errsize) ||
              merge_meta(meta, m, nm, inputs[a], inputs, origin, a, err, errsize) ||
              read_rows(db, inputs[a], a, &r, err, errsize);
    gkp_meta_free(m, nm);
    sqlite3_close(db);
    if (bad) goto merge_out;
  }

  /* Sorted by key then input, equal keys are neighbours: identical rows
   * collapse into one, differing ones are all reported. */
  qsort(r.v, r.n, sizeof *r.v, row_cmp);
  ims = calloc(r.n ? r.n : 1, sizeof *ims);
  if (!ims) {
    gkp__seterr(err, errsize, "out of memory");
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
          addf(err, errsize, &len, "cannot merge: conflicting rows (same key, different %s):",
               col);
        addf(err, errsize, &len, "\n  %s %s %s %s: '%s' has sha256 %.16s, '%s' has %.16s%s%s",
             r.v[i].im.kernel, r.v[i].im.backend, r.v[i].im.target,
             *r.v[i].im.variant ? r.v[i].im.variant : "-", inputs[first->from], ha,
             inputs[r.v[i].from], hb, strcmp(col, "sha256") ? "; they differ in " : "",
             strcmp(col, "sha256") ? col : "");
      }
      continue;
    }
    ims[nims++] = r.v[i].im;
  }
  if (conflicts) {
    addf(err, errsize, &len, "\n(%zu conflicting row%s; rebuild the parts from one source "
         "and toolchain set)", conflicts, conflicts == 1 ? "" : "s");
    goto merge_out;
  }

  out_meta = calloc(json_object_size(meta) + 1, sizeof *out_meta);
  if (!out_meta) {
    gkp__seterr(err, errsize, "out of memory");
    goto merge_out;
  }
  const char *k;
  json_t *v;
  json_object_foreach(meta, k, v) out_meta[nout++] = (gkp_meta){k, json_string_value(v)};
  rc = gkp_write_meta(path, ims, nims, out_meta, nout, level, err, errsize);

merge_out:
  free(out_meta);
  free(ims);
  rows_free(&r);
  json_decref(meta);
  json_decref(origin);
  return rc;
}
