/*
 * pack.c - writes the fat archive (docs/archive.md).
 *
 * The archive must be deterministic: the same images give the same bytes,
 * whatever order they come in and whoever runs the packer. SQLite writes the
 * same file for the same sequence of statements, so the work here is to fix
 * that sequence: rows sorted by their key, blobs coded in the order the
 * sorted rows first use them and inserted in an order fixed by their sizes
 * (pages.c), no time stamps, fixed page size.
 */
#include "gkpack.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "gk.h" /* for the format constants only */
#include "pack_internal.h"

static int nullcmp(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "");
}

static int image_cmp(const void *pa, const void *pb) {
  const gkp_image *a = *(const gkp_image *const *)pa;
  const gkp_image *b = *(const gkp_image *const *)pb;
  int c;
  if ((c = nullcmp(a->kernel, b->kernel))) return c;
  if ((c = nullcmp(a->backend, b->backend))) return c;
  if ((c = nullcmp(a->variant, b->variant))) return c;
  return nullcmp(a->target, b->target);
}

/* The index keeps names, three numbers and a hash per image: what the
 * images of one build step share (format, entry points, launch data,
 * toolchain: a few hundred bytes) is one `spec` row; the image's size and
 * sha256 are in both its row and its blob's, so that a selection reads its
 * rows alone and a damaged blob number cannot pair a name with another
 * image. Rows are in (kernel, backend, variant, target)
 * order, so one variant's images are one run (docs/archive.md, "Reading").
 * No CHECK or REFERENCES: SQLite parses the schema on every open, and
 * libgk checks every value it reads anyway (docs/archive.md, "Schema"). */
#define PAGE_SIZE 1024 /* docs/archive.md */
#define STR_(x) #x
#define STR(x) STR_(x)
static const char schema_sql[] =
  "PRAGMA page_size = " STR(PAGE_SIZE) ";"
  "PRAGMA journal_mode = OFF;"
  "PRAGMA synchronous = OFF;"
  "CREATE TABLE meta ("
  "  key TEXT NOT NULL,"
  "  value TEXT NOT NULL);"
  "CREATE TABLE blob ("
  "  id INTEGER PRIMARY KEY,"
  "  sha256 BLOB NOT NULL,"
  "  raw_size INTEGER NOT NULL,"
  "  codec TEXT NOT NULL,"
  "  base INTEGER,"
  "  data_sha256 BLOB NOT NULL,"
  "  data BLOB NOT NULL);"
  "CREATE TABLE spec ("
  "  id INTEGER PRIMARY KEY,"
  "  format TEXT NOT NULL, entry TEXT NOT NULL,"
  "  launch TEXT NOT NULL, toolchain TEXT NOT NULL);"
  "CREATE TABLE image ("
  "  kernel TEXT NOT NULL, backend TEXT NOT NULL, variant TEXT NOT NULL,"
  "  target TEXT NOT NULL,"
  "  spec INTEGER NOT NULL,"
  "  blob INTEGER NOT NULL,"
  "  raw_size INTEGER NOT NULL,"
  "  sha256 BLOB NOT NULL);";

typedef struct writer {
  sqlite3 *db;
  sqlite3_stmt *add_blob, *add_spec, *add_image;
  gkp__zbuf z;         /* the final frames */
  unsigned char *pbuf; /* a delta's prefix: its chain's raw bytes */
  size_t pcap;
  ZSTD_DCtx *dctx;     /* decodes each blob back (check_blob) */
  unsigned char *rbuf;
  size_t rcap;
  gk_err *err;
} writer;

static int db_fail(writer *w, const char *what) {
  return gk_err_set(w->err, "%s: %s", what, sqlite3_errmsg(w->db));
}

/* The prefix blob b is coded against: the raw bytes of its ancestors,
 * root first, end to end (a reader decoding the chain from its root builds
 * exactly this buffer). Its size in *pn; 0 for a plain blob. */
static int chain_prefix(writer *w, const gkp__blob *blobs, size_t b, size_t *pn) {
  long chain[GK_ARCHIVE_DELTA_DEPTH];
  int k = 0;
  size_t n = 0;
  for (long x = blobs[b].base; x >= 0; x = blobs[x].base) {
    if (k == GK_ARCHIVE_DELTA_DEPTH) { /* choose_bases never makes one */
      gk_err_set(w->err, "internal error: a delta chain deeper than %d",
                 GK_ARCHIVE_DELTA_DEPTH);
      return -1;
    }
    chain[k++] = x;
    n += blobs[x].im->size;
  }
  if (n > w->pcap) {
    unsigned char *p = realloc(w->pbuf, n);
    if (!p) return gk_err_set(w->err, "out of memory");
    w->pbuf = p;
    w->pcap = n;
  }
  *pn = 0;
  while (k--) {
    const gkp_image *a = blobs[chain[k]].im;
    if (a->size) memcpy(w->pbuf + *pn, a->data, a->size);
    *pn += a->size;
  }
  return 0;
}

/* Decodes the frame just made (w->z.buf, zn bytes) the way libgk will and
 * compares it with the image. libgk checks the SHA-256 of a blob's stored
 * bytes, not of what they decode to (docs/archive.md, "Reading"): that
 * they decode to the image is promised here. */
static int check_blob(writer *w, const gkp_image *im, size_t zn, size_t pn) {
  if (!w->dctx && !(w->dctx = ZSTD_createDCtx())) goto oom;
  if (im->size > w->rcap) {
    unsigned char *p = realloc(w->rbuf, im->size);
    if (!p) goto oom;
    w->rbuf = p;
    w->rcap = im->size;
  }
  ZSTD_DCtx_reset(w->dctx, ZSTD_reset_session_and_parameters);
  if (pn) ZSTD_DCtx_refPrefix(w->dctx, w->pbuf, pn);
  size_t got = ZSTD_decompressDCtx(w->dctx, w->rbuf, w->rcap, w->z.buf, zn);
  if (ZSTD_isError(got) || got != im->size ||
      (im->size && memcmp(w->rbuf, im->data, im->size) != 0)) {
    gk_err_set(w->err,
               "%s/%s/%s: its compressed blob does not decode to the image (%s): "
               "a bug in gk pack or libzstd; please report it",
               im->backend, im->kernel, im->target,
               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "other bytes");
    return -1;
  }
  return 0;
oom:
  gk_err_set(w->err, "out of memory checking %s/%s/%s", im->backend,
             im->kernel, im->target);
  return -1;
}

/* A blob's stored frame, made before any blob is written (their sizes
 * choose the ids: pages.c). */
typedef struct frame {
  unsigned char *data, data_sha[32];
  size_t n;
} frame;

/* Codes blob b as planned into f. */
static int code_blob(writer *w, const gkp__blob *blobs, size_t b, int level, frame *f) {
  const gkp_image *im = blobs[b].im;
  long base = blobs[b].base;
  size_t pn = 0;
  if (chain_prefix(w, blobs, b, &pn)) return -1;
  size_t zn = gkp__zcompress(&w->z, im->data, im->size, base >= 0 ? w->pbuf : NULL,
                             pn, level);
  if (ZSTD_isError(zn)) {
    gk_err_set(w->err, "cannot compress %s/%s/%s: %s", im->backend,
               im->kernel, im->target, ZSTD_getErrorName(zn));
    return -1;
  }
  if (check_blob(w, im, zn, base >= 0 ? pn : 0)) return -1;
  if (!(f->data = malloc(zn ? zn : 1))) return gk_err_set(w->err, "out of memory");
  memcpy(f->data, w->z.buf, zn);
  f->n = zn;
  /* data_sha256 (docs/archive.md) binds the stored bytes to the blob's
   * identity and, for a delta, to its base's. */
  crypto_hash_sha256_state h;
  crypto_hash_sha256_init(&h);
  crypto_hash_sha256_update(&h, blobs[b].sha, 32);
  if (base >= 0) crypto_hash_sha256_update(&h, blobs[base].sha, 32);
  crypto_hash_sha256_update(&h, f->data, zn);
  crypto_hash_sha256_final(&h, f->data_sha);
  return 0;
}

static const char *codec_of(const gkp__blob *b) { return b->base >= 0 ? "zstd-delta" : "zstd"; }

/* The bytes blob b's row takes in a leaf page (its columns as put_blob
 * binds them; the largest id stands for its own). */
static size_t blob_cell(const gkp__blob *blobs, size_t nb, size_t b, const frame *f) {
  gkp__column c[] = {
    {GKP__NULL, 0, 0}, /* id: the rowid */
    {GKP__BLOB, 0, 32},
    {GKP__INT, (long long)blobs[b].im->size, 0},
    {GKP__TEXT, 0, strlen(codec_of(&blobs[b]))},
    {blobs[b].base >= 0 ? GKP__INT : GKP__NULL, (long long)nb, 0},
    {GKP__BLOB, 0, 32},
    {GKP__BLOB, 0, f->n},
  };
  return gkp__cell_size((long long)nb, c, sizeof c / sizeof *c, PAGE_SIZE);
}

/* Writes blob b as row `id`, its base being row base_id. */
static int put_blob(writer *w, const gkp__blob *blobs, size_t b, const frame *f, size_t id,
                    size_t base_id) {
  sqlite3_stmt *s = w->add_blob;
  sqlite3_reset(s);
  sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
  sqlite3_bind_blob(s, 2, blobs[b].sha, 32, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)blobs[b].im->size);
  sqlite3_bind_text(s, 4, codec_of(&blobs[b]), -1, SQLITE_STATIC);
  if (blobs[b].base >= 0) sqlite3_bind_int64(s, 5, (sqlite3_int64)base_id);
  else sqlite3_bind_null(s, 5);
  sqlite3_bind_blob(s, 6, f->data_sha, 32, SQLITE_STATIC);
  sqlite3_bind_blob(s, 7, f->data, (int)f->n, SQLITE_STATIC);
  if (sqlite3_step(s) != SQLITE_DONE) return db_fail(w, "cannot insert blob");
  return 0;
}

/* Codes every blob, then writes them in an order that fills the pages
 * (pages.c); id_of[b] is blob b's row. The frames are held until then: a
 * fraction of the raw images, which the caller holds already. */
static int put_blobs(writer *w, const gkp__blob *blobs, size_t nb, int level, size_t *id_of) {
  frame *f = calloc(nb ? nb : 1, sizeof *f);
  size_t *cell = calloc(nb ? nb : 1, sizeof *cell), *order = calloc(nb ? nb : 1, sizeof *order);
  int rc = -1;
  if (!f || !cell || !order) {
    gk_err_set(w->err, "out of memory");
    goto blobs_out;
  }
  for (size_t b = 0; b < nb; b++) {
    if (code_blob(w, blobs, b, level, &f[b])) goto blobs_out;
    cell[b] = blob_cell(blobs, nb, b, &f[b]);
  }
  if (gkp__page_order(cell, nb, PAGE_SIZE, order)) {
    gk_err_set(w->err, "out of memory");
    goto blobs_out;
  }
  for (size_t k = 0; k < nb; k++) id_of[order[k]] = k + 1;
  for (size_t k = 0; k < nb; k++) {
    size_t b = order[k];
    if (put_blob(w, blobs, b, &f[b], k + 1, blobs[b].base >= 0 ? id_of[blobs[b].base] : 0))
      goto blobs_out;
  }
  rc = 0;
blobs_out:
  for (size_t b = 0; f && b < nb; b++) free(f[b].data);
  free(f), free(cell), free(order);
  return rc;
}

static int spec_same(const gkp_image *a, const gkp_image *b) {
  return nullcmp(a->format, b->format) == 0 && nullcmp(a->entry_json, b->entry_json) == 0 &&
         nullcmp(a->launch_json, b->launch_json) == 0 &&
         nullcmp(a->toolchain, b->toolchain) == 0;
}

/* Writes spec row `id` from image im. */
static int put_spec(writer *w, const gkp_image *im, size_t id) {
  sqlite3_stmt *s = w->add_spec;
  sqlite3_reset(s);
  sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
  sqlite3_bind_text(s, 2, im->format, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, im->entry_json ? im->entry_json : "[]", -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 4, im->launch_json ? im->launch_json : "{}", -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 5, im->toolchain ? im->toolchain : "", -1, SQLITE_STATIC);
  if (sqlite3_step(s) != SQLITE_DONE) return db_fail(w, "cannot insert spec row");
  return 0;
}

static int put_image(writer *w, const gkp_image *im, size_t spec, size_t blob,
                     const unsigned char *sha) {
  sqlite3_stmt *s = w->add_image;
  sqlite3_reset(s);
  sqlite3_bind_text(s, 1, im->kernel, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, im->backend, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, im->variant ? im->variant : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 4, im->target, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 5, (sqlite3_int64)spec);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)blob);
  sqlite3_bind_int64(s, 7, (sqlite3_int64)im->size);
  sqlite3_bind_blob(s, 8, sha, 32, SQLITE_STATIC);
  if (sqlite3_step(s) != SQLITE_DONE) return db_fail(w, "cannot insert index row");
  return 0;
}

static int check_image(const gkp_image *im, gk_err *err) {
  if (!im->kernel || !*im->kernel || !im->backend || !*im->backend ||
      !im->target || !*im->target || !im->format || !*im->format)
    return gk_err_set(err, "image with an empty kernel, backend, target or format");
  if (!im->data && im->size)
    return gk_err_set(err, "image %s/%s/%s has no bytes", im->backend, im->kernel,
                      im->target);
  return 0;
}

/* Inserts the meta rows in key order (rowids, hence bytes, follow the
 * order of insertion). */
static int put_meta(writer *w, const gkp_meta **meta, size_t n) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(w->db, "INSERT INTO meta VALUES (?, ?)", -1, &s, NULL))
    return db_fail(w, "cannot prepare statements");
  for (size_t i = 0; i < n; i++) {
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, meta[i]->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, meta[i]->value, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE) {
      sqlite3_finalize(s);
      return db_fail(w, "cannot write archive metadata");
    }
  }
  sqlite3_finalize(s);
  return 0;
}

/* The distinct images in the order the sorted rows first use them, and
 * for each row the index of its blob. */
static int list_blobs(writer *w, const gkp_image **sorted, size_t n, gkp__blob **out,
                      size_t *nb, size_t *row_blob) {
  gkp__blob *blobs = calloc(n ? n : 1, sizeof *blobs);
  if (!blobs) return gk_err_set(w->err, "out of memory");
  *nb = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char own[32];
    const unsigned char *sha = sorted[i]->sha256;
    if (!sha) crypto_hash_sha256(own, sorted[i]->data, sorted[i]->size), sha = own;
    size_t b = 0;
    while (b < *nb && memcmp(blobs[b].sha, sha, 32) != 0) b++;
    if (b == *nb) {
      blobs[b].im = sorted[i];
      memcpy(blobs[b].sha, sha, 32);
      blobs[b].base = -1;
      (*nb)++;
    }
    row_blob[i] = b;
  }
  *out = blobs;
  return 0;
}

static int write_db(writer *w, const char *tmp, const gkp_image **sorted,
                    size_t n, const gkp_meta **meta, size_t nmeta, int level) {
  char sql[256];
  gkp__blob *blobs = NULL;
  size_t nb = 0, nspec = 0, *row_blob = calloc(n ? n : 1, sizeof *row_blob);
  size_t *first_use = calloc(n ? n : 1, sizeof *first_use);
  size_t *id_of = calloc(n ? n : 1, sizeof *id_of); /* blob index -> row id */
  int rc = -1;
  if (!row_blob || !first_use || !id_of) {
    free(row_blob), free(first_use), free(id_of);
    return gk_err_set(w->err, "out of memory");
  }
  if (list_blobs(w, sorted, n, &blobs, &nb, row_blob) || gkp__plan_deltas(blobs, nb, w->err))
    goto db_out;
  if (sqlite3_open_v2(tmp, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      NULL) != SQLITE_OK) {
    db_fail(w, "cannot create archive");
    goto db_out;
  }
  if (sqlite3_exec(w->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
    db_fail(w, "cannot create schema");
    goto db_out;
  }
  snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d;",
           (int)GK_ARCHIVE_APPLICATION_ID, GK_ARCHIVE_FORMAT);
  if (sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
    db_fail(w, "cannot write archive header");
    goto db_out;
  }
  if (put_meta(w, meta, nmeta)) goto db_out;
  if (sqlite3_prepare_v2(w->db,
                         "INSERT INTO blob (id, sha256, raw_size, codec, base, "
                         "data_sha256, data) VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &w->add_blob,
                         NULL) ||
      sqlite3_prepare_v2(w->db, "INSERT INTO spec VALUES (?, ?, ?, ?, ?)", -1,
                         &w->add_spec, NULL) ||
      sqlite3_prepare_v2(w->db,
                         "INSERT INTO image (rowid, kernel, backend, variant, target, spec, "
                         "blob, raw_size, sha256) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &w->add_image, NULL)) {
    db_fail(w, "cannot prepare statements");
    goto db_out;
  }
  if (sqlite3_exec(w->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    db_fail(w, "cannot begin");
    goto db_out;
  }
  if (put_blobs(w, blobs, nb, level, id_of)) goto db_out;
  /* Specs are numbered 1, 2, ... in the order the sorted rows first use
   * them; first_use[k] is the row that introduced spec k + 1. */
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < nspec && !spec_same(sorted[first_use[k]], sorted[i])) k++;
    if (k == nspec) {
      first_use[nspec++] = i;
      if (put_spec(w, sorted[i], nspec)) goto db_out;
    }
    if (put_image(w, sorted[i], k + 1, id_of[row_blob[i]], blobs[row_blob[i]].sha))
      goto db_out;
  }
  if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    db_fail(w, "cannot commit");
    goto db_out;
  }
  rc = 0;
db_out:
  free(blobs);
  free(row_blob), free(first_use), free(id_of);
  return rc;
}

static void writer_close(writer *w) {
  sqlite3_finalize(w->add_blob);
  sqlite3_finalize(w->add_spec);
  sqlite3_finalize(w->add_image);
  sqlite3_close(w->db);
  gkp__zbuf_free(&w->z);
  ZSTD_freeDCtx(w->dctx);
  free(w->rbuf);
  free(w->pbuf);
  memset(w, 0, sizeof *w);
}

/* fsync a file, then its folder, so the rename that publishes it survives a
 * crash with the bytes behind it. */
static int sync_path(const char *path, int dir) {
  int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

static int meta_cmp(const void *pa, const void *pb) {
  return strcmp((*(const gkp_meta *const *)pa)->key, (*(const gkp_meta *const *)pb)->key);
}

static int str_cmp(const void *pa, const void *pb) {
  return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The meta value "toolchains": the distinct toolchain identities of the
 * images, sorted, as a compact JSON array. Derived from the rows, so that a
 * merge of partial archives gives what one build of everything would. */
static char *toolchains_json(const gkp_image **sorted, size_t n) {
  const char **ids = calloc(n ? n : 1, sizeof *ids);
  if (!ids) return NULL;
  for (size_t i = 0; i < n; i++) ids[i] = sorted[i]->toolchain ? sorted[i]->toolchain : "";
  qsort(ids, n, sizeof *ids, str_cmp);
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++)
    if (i == 0 || strcmp(ids[i], ids[i - 1]) != 0) json_array_append_new(arr, json_string(ids[i]));
  free(ids);
  char *text = json_dumps(arr, JSON_COMPACT);
  json_decref(arr);
  return text;
}

/* The meta value "min_driver": per backend, the oldest driver that loads
 * every image of it, as a compact JSON object ({"cuda":"13.0"}); NULL with
 * *none set when no backend has such a limit. Derived from the rows, like
 * "toolchains", so a merge recomputes it. CUDA's rules (docs/archive.md,
 * "cuda rows"): PTX needs a driver at least as new as the toolkit's
 * MAJOR.MINOR, a cubin one of at least MAJOR. */
static char *min_driver_json(const gkp_image **sorted, size_t n, int *none) {
  int best = -1; /* MAJOR * 1000 + MINOR * 10, as CUDA encodes versions */
  for (size_t i = 0; i < n; i++) {
    int major, minor;
    if (strcmp(sorted[i]->backend, "cuda") != 0 || !sorted[i]->toolchain ||
        sscanf(sorted[i]->toolchain, "nvcc %d.%d", &major, &minor) != 2)
      continue;
    int need = major * 1000 + (strcmp(sorted[i]->format, "ptx") == 0 ? minor * 10 : 0);
    if (need > best) best = need;
  }
  *none = best < 0;
  if (best < 0) return NULL;
  char text[64];
  snprintf(text, sizeof text, "{\"cuda\":\"%d.%d\"}", best / 1000, best % 1000 / 10);
  return strdup(text);
}

/* One entry of the meta value "skipped". */
typedef struct skip {
  const char *backend, *target, *reason; /* target "" for a whole backend */
} skip;

static int skip_cmp(const void *pa, const void *pb) {
  const skip *a = pa, *b = pb;
  int c = strcmp(a->backend, b->backend);
  if (!c) c = strcmp(a->target, b->target);
  return c ? c : strcmp(a->reason, b->reason);
}

/* The meta value "skipped" (what the build could not make and why:
 * docs/archive.md, "Metadata") in its one form: entries sorted by backend
 * then target, one per (backend, target), and none for what the rows hold
 * after all (a merge joins parts whose runners skipped different things:
 * what one part built, no other part's skip hides). *out is NULL when
 * nothing is left. -1 when the text is not such an array. */
static int skipped_json(const char *text, const gkp_image **sorted, size_t n, char **out,
                        gk_err *err) {
  json_t *arr = json_loads(text, 0, NULL), *res = NULL;
  size_t m = json_array_size(arr), k = 0;
  skip *v = calloc(m ? m : 1, sizeof *v);
  int rc = -1;
  *out = NULL;
  if (!json_is_array(arr) || !v) goto bad;
  for (size_t i = 0; i < m; i++) {
    json_t *o = json_array_get(arr, i), *t = json_object_get(o, "target");
    skip s = {json_string_value(json_object_get(o, "backend")),
              t ? json_string_value(t) : "", json_string_value(json_object_get(o, "reason"))};
    if (!json_is_object(o) || !s.backend || !s.target || !s.reason) goto bad;
    int built = 0;
    for (size_t r = 0; r < n && !built; r++)
      built = !strcmp(sorted[r]->backend, s.backend) &&
              (!*s.target || !strcmp(sorted[r]->target, s.target));
    if (!built) v[k++] = s;
  }
  qsort(v, k, sizeof *v, skip_cmp);
  res = json_array();
  for (size_t i = 0; i < k; i++) {
    if (i && !strcmp(v[i].backend, v[i - 1].backend) && !strcmp(v[i].target, v[i - 1].target))
      continue;
    json_t *o = json_pack("{s:s, s:s}", "backend", v[i].backend, "reason", v[i].reason);
    if (*v[i].target) json_object_set_new(o, "target", json_string(v[i].target));
    json_array_append_new(res, o);
  }
  rc = 0;
  if (json_array_size(res) && !(*out = json_dumps(res, JSON_COMPACT | JSON_SORT_KEYS))) {
    gk_err_set(err, "out of memory");
    rc = -1;
  }
  goto skipped_out;
bad:
  gk_err_set(err, "archive metadata 'skipped' must be a JSON array of "
             "{backend, target (optional), reason} strings; got '%.80s'", text);
skipped_out:
  json_decref(arr);
  json_decref(res);
  free(v);
  return rc;
}

int gkp_write(const char *path, const gkp_image *images, size_t n, int level, gk_err *err) {
  return gkp_write_meta(path, images, n, NULL, 0, level, err);
}

int gkp_write_meta(const char *path, const gkp_image *images, size_t n,
                   const gkp_meta *meta, size_t nmeta, int level, gk_err *err) {
  writer w = {0};
  const gkp_image **sorted = NULL;
  const gkp_meta **msorted = NULL;
  char *tmp = NULL, *dircopy = NULL, *toolchains = NULL, *drivers = NULL, *skipped = NULL;
  char generator[64];
  gkp_meta fixed[4], *given = NULL;
  size_t nfixed = 3, ngiven = 0;
  int rc = -1, fd, no_driver = 1;

  if (!path || (!images && n)) return gk_err_set(err, "no archive path or no images");
  if (sodium_init() < 0) return gk_err_set(err, "libsodium failed to initialize");
  sorted = calloc(n ? n : 1, sizeof *sorted);
  tmp = malloc(strlen(path) + 16);
  w.z.cctx = ZSTD_createCCtx();
  if (!sorted || !tmp || !w.z.cctx) {
    gk_err_set(err, "out of memory");
    goto pack_out;
  }
  for (size_t i = 0; i < n; i++) {
    if (check_image(&images[i], err)) goto pack_out;
    sorted[i] = &images[i];
  }
  qsort(sorted, n, sizeof *sorted, image_cmp);
  for (size_t i = 1; i < n; i++)
    if (image_cmp(&sorted[i - 1], &sorted[i]) == 0) {
      gk_err_set(err, "two images for %s %s %s %s", sorted[i]->kernel,
                 sorted[i]->backend, sorted[i]->target,
                 sorted[i]->variant ? sorted[i]->variant : "");
      goto pack_out;
    }

  /* The keys gk pack owns, then the caller's, all in key order. */
  snprintf(generator, sizeof generator, "gk %d.%d.%d", GK_VERSION_MAJOR,
           GK_VERSION_MINOR, GK_VERSION_PATCH);
  if (!(toolchains = toolchains_json(sorted, n))) {
    gk_err_set(err, "out of memory");
    goto pack_out;
  }
  drivers = min_driver_json(sorted, n, &no_driver);
  if (!drivers && !no_driver) {
    gk_err_set(err, "out of memory");
    goto pack_out;
  }
  fixed[0] = (gkp_meta){"format", "gllm-kernels-archive"};
  fixed[1] = (gkp_meta){"generator", generator};
  fixed[2] = (gkp_meta){"toolchains", toolchains};
  if (drivers) fixed[nfixed++] = (gkp_meta){"min_driver", drivers};
  if (!(msorted = calloc(nmeta + nfixed, sizeof *msorted)) ||
      !(given = calloc(nmeta + 1, sizeof *given))) {
    gk_err_set(err, "out of memory");
    goto pack_out;
  }
  for (size_t i = 0; i < nfixed; i++) msorted[i] = &fixed[i];
  for (size_t i = 0; i < nmeta; i++) {
    if (!meta[i].key || !*meta[i].key || !meta[i].value) {
      gk_err_set(err, "archive metadata with an empty key or no value");
      goto pack_out;
    }
    given[ngiven] = meta[i];
    /* "skipped" is kept in one form, whatever the parts said. */
    if (strcmp(meta[i].key, "skipped") == 0) {
      if (skipped) {
        gk_err_set(err, "archive metadata key 'skipped' given twice");
        goto pack_out;
      }
      if (skipped_json(meta[i].value, sorted, n, &skipped, err)) goto pack_out;
      if (!skipped) continue;
      given[ngiven].value = skipped;
    }
    msorted[nfixed + ngiven] = &given[ngiven];
    ngiven++;
  }
  qsort(msorted, ngiven + nfixed, sizeof *msorted, meta_cmp);
  for (size_t i = 1; i < ngiven + nfixed; i++)
    if (strcmp(msorted[i - 1]->key, msorted[i]->key) == 0) {
      gk_err_set(err, "archive metadata key '%s' given twice%s", msorted[i]->key,
                 strcmp(msorted[i]->key, "format") == 0 ||
                 strcmp(msorted[i]->key, "generator") == 0 ||
                 strcmp(msorted[i]->key, "min_driver") == 0 ||
                 strcmp(msorted[i]->key, "toolchains") == 0 ? " (gk pack writes it itself)" : "");
      goto pack_out;
    }

  /* The temporary file lives beside the target so that rename() is atomic. */
  sprintf(tmp, "%s.tmpXXXXXX", path);
  fd = mkstemp(tmp);
  if (fd < 0) {
    gk_err_set(err, "cannot write '%s' (temporary file beside it): %s", path,
               strerror(errno));
    goto pack_out;
  }
  close(fd);
  w.err = err;
  if (write_db(&w, tmp, sorted, n, msorted, ngiven + nfixed, level)) {
    /* SQLite's words ("database or disk is full") name no file: put it
     * before them, which keep their old 511-byte cut. */
    if (err && strlen(err->msg) > 511) err->msg[511] = '\0';
    gk_err_prefix(err, "cannot write '%s': ", path);
    goto pack_unlink;
  }
  writer_close(&w);
  /* mkstemp made the file 0600; an archive is meant to be shared. */
  chmod(tmp, 0644);
  if (sync_path(tmp, 0) || rename(tmp, path)) {
    gk_err_set(err, "cannot write '%s': %s", path, strerror(errno));
    goto pack_unlink;
  }
  dircopy = strdup(path);
  if (dircopy) sync_path(dirname(dircopy), 1);
  rc = 0;
  goto pack_out;

pack_unlink:
  writer_close(&w);
  unlink(tmp);
pack_out:
  writer_close(&w);
  free(sorted);
  free(msorted);
  free(toolchains);
  free(drivers);
  free(skipped);
  free(given);
  free(tmp);
  free(dircopy);
  return rc;
}
