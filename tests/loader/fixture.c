/*
 * fixture.c - a minimal archive writer written from docs/archive.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw */
#endif
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>
#include <sqlite3.h>
#include <zstd.h>

#include "fixture.h"
#include "gk.h"

/* ---- files --------------------------------------------------------------- */

static char tmpdir[256];

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static void rm_tmpdir(void) {
  if (tmpdir[0]) nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *fx_path(const char *name) {
  if (!tmpdir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gk-loader-test-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) fail_msg("mkdtemp %s failed", tmpdir);
    atexit(rm_tmpdir);
  }
  size_t n = strlen(tmpdir) + strlen(name) + 2;
  char *p = malloc(n);
  assert_non_null(p);
  snprintf(p, n, "%s/%s", tmpdir, name);
  return p;
}

void *fx_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(n ? (size_t)n : 1);
  assert_non_null(p);
  if (fread(p, 1, (size_t)n, f) != (size_t)n) fail_msg("cannot read %s", path);
  fclose(f);
  *size = (size_t)n;
  return p;
}

void fx_write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot create %s", path);
  if (size && fwrite(data, 1, size, f) != size)
    fail_msg("cannot write %s", path);
  if (fclose(f) != 0) fail_msg("cannot write %s", path);
}

void *fx_image_bytes(const char *path, size_t *size) {
  return fx_read_file(path, size);
}

void *fx_zstd(const void *src, size_t size, size_t *n) {
  size_t cap = ZSTD_compressBound(size);
  void *dst = malloc(cap);
  assert_non_null(dst);
  size_t r = ZSTD_compress(dst, cap, src, size, 3);
  if (ZSTD_isError(r)) fail_msg("zstd: %s", ZSTD_getErrorName(r));
  *n = r;
  return dst;
}

/* ---- archives ------------------------------------------------------------ */

static void sql_ok(sqlite3 *db, int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    fail_msg("fixture: %s: %s", what, sqlite3_errmsg(db));
}

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
    fail_msg("fixture: %s: %s", sql, err ? err : "?");
}

/* The schema of docs/archive.md, with the CHECK and REFERENCES constraints
 * and meta's PRIMARY KEY that format 4's first archives had: the document
 * says a loader reads an archive with or without them, and gk pack's own
 * archives (the cli and pipeline tests) are the case without. */
static const char schema[] =
    "CREATE TABLE meta (\n"
    "  key   TEXT PRIMARY KEY NOT NULL,\n"
    "  value TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE blob (\n"
    "  id       INTEGER PRIMARY KEY,\n"
    "  sha256   BLOB NOT NULL CHECK (length(sha256) = 32),\n"
    "  raw_size INTEGER NOT NULL CHECK (raw_size >= 0),\n"
    "  codec    TEXT NOT NULL,\n"
    "  base     INTEGER REFERENCES blob(id),\n"
    "  data_sha256 BLOB NOT NULL CHECK (length(data_sha256) = 32),\n"
    "  data     BLOB NOT NULL\n"
    ");\n"
    "CREATE TABLE spec (\n"
    "  id        INTEGER PRIMARY KEY,\n"
    "  format    TEXT NOT NULL,\n"
    "  entry     TEXT NOT NULL,\n"
    "  launch    TEXT NOT NULL,\n"
    "  toolchain TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE image (\n"
    "  kernel    TEXT NOT NULL,\n"
    "  backend   TEXT NOT NULL,\n"
    "  variant   TEXT NOT NULL,\n"
    "  target    TEXT NOT NULL,\n"
    "  spec      INTEGER NOT NULL REFERENCES spec(id),\n"
    "  blob      INTEGER NOT NULL REFERENCES blob(id),\n"
    "  raw_size  INTEGER NOT NULL CHECK (raw_size >= 0),\n"
    "  sha256    BLOB NOT NULL CHECK (length(sha256) = 32)\n"
    ");\n";

static int key_cmp(const void *a, const void *b) {
  const fx_image *x = a, *y = b;
  int c;
  if ((c = strcmp(x->kernel, y->kernel))) return c;
  if ((c = strcmp(x->backend, y->backend))) return c;
  if ((c = strcmp(x->variant, y->variant))) return c;
  return strcmp(x->target, y->target);
}

void fx_write(const char *path, const fx_image *images, size_t n) {
  if (sodium_init() < 0) fail_msg("sodium_init failed");
  fx_image *sorted = malloc((n ? n : 1) * sizeof *sorted);
  assert_non_null(sorted);
  if (n) memcpy(sorted, images, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, key_cmp);

  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  remove(tmp);
  sqlite3 *db;
  if (sqlite3_open(tmp, &db) != SQLITE_OK) fail_msg("fixture: open %s", tmp);
  exec(db, "PRAGMA page_size = 4096");
  exec(db, "PRAGMA journal_mode = OFF");
  exec(db, "PRAGMA application_id = 1735091809"); /* 0x676b6661 'gkfa' */
  char version[64];
  snprintf(version, sizeof version, "PRAGMA user_version = %d", GK_ARCHIVE_FORMAT);
  exec(db, version);
  exec(db, "BEGIN");
  exec(db, schema);
  exec(db, "INSERT INTO meta VALUES ('format', 'gllm-kernels-archive'), "
           "('generator', 'gk test-fixture')");

  /* One spec row per image (row i + 1), so a test can change one image's
   * entry points or launch data alone; one blob per distinct image. */
  sqlite3_stmt *blob, *spec, *row, *find;
  sql_ok(db,
         sqlite3_prepare_v2(
             db,
             "INSERT INTO blob (sha256, raw_size, codec, data, data_sha256) "
             "VALUES (?1, ?2, 'zstd', ?3, ?4)",
             -1, &blob, NULL),
         "prepare blob");
  sql_ok(db, sqlite3_prepare_v2(db, "SELECT id FROM blob WHERE sha256 = ?1", -1, &find, NULL),
         "prepare find");
  sql_ok(db, sqlite3_prepare_v2(db, "INSERT INTO spec VALUES (?1, ?2, ?3, ?4, ?5)", -1,
                                &spec, NULL),
         "prepare spec");
  sql_ok(
      db,
      sqlite3_prepare_v2(
          db,
          "INSERT INTO image (kernel, backend, variant, target, spec, blob, raw_size, "
          "sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
          -1, &row, NULL),
      "prepare image");
  for (size_t i = 0; i < n; i++) {
    const fx_image *im = &sorted[i];
    unsigned char sha[32];
    crypto_hash_sha256(sha, im->data, im->size);
    sqlite3_int64 blob_id;
    sqlite3_bind_blob(find, 1, sha, 32, SQLITE_TRANSIENT);
    if (sqlite3_step(find) == SQLITE_ROW) {
      blob_id = sqlite3_column_int64(find, 0);
    } else {
      size_t zn;
      void *z = fx_zstd(im->data, im->size, &zn);
      sqlite3_bind_blob(blob, 1, sha, 32, SQLITE_TRANSIENT);
      sqlite3_bind_int64(blob, 2, (sqlite3_int64)im->size);
      sqlite3_bind_blob(blob, 3, z, (int)zn, SQLITE_TRANSIENT);
      unsigned char zsha[32]; /* docs/archive.md: over sha256, then the bytes */
      crypto_hash_sha256_state hs;
      crypto_hash_sha256_init(&hs);
      crypto_hash_sha256_update(&hs, sha, 32);
      crypto_hash_sha256_update(&hs, z, zn);
      crypto_hash_sha256_final(&hs, zsha);
      sqlite3_bind_blob(blob, 4, zsha, 32, SQLITE_TRANSIENT);
      sql_ok(db, sqlite3_step(blob), "insert blob");
      sqlite3_reset(blob);
      free(z);
      blob_id = sqlite3_last_insert_rowid(db);
    }
    sqlite3_reset(find);

    /* Every test image exports qmatmul (image.c), and a read checks that a
     * shared object exports each entry its row lists. */
    char entry[256];
    snprintf(entry, sizeof entry, "[\"%s\"]",
             !im->format || !strcmp(im->format, "so") ? "qmatmul" : im->kernel);
    const char *text[] = {im->format ? im->format : "so", im->entry ? im->entry : entry,
                          im->launch ? im->launch : "{}",
                          im->toolchain ? im->toolchain : "cc test"};
    sqlite3_bind_int64(spec, 1, (sqlite3_int64)i + 1);
    for (int c = 0; c < 4; c++)
      sqlite3_bind_text(spec, c + 2, text[c], -1, SQLITE_TRANSIENT);
    sql_ok(db, sqlite3_step(spec), "insert spec");
    sqlite3_reset(spec);
    const char *key[] = {im->kernel, im->backend, im->variant, im->target};
    for (int c = 0; c < 4; c++)
      sqlite3_bind_text(row, c + 1, key[c], -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(row, 5, (sqlite3_int64)i + 1);
    sqlite3_bind_int64(row, 6, blob_id);
    sqlite3_bind_int64(row, 7, (sqlite3_int64)im->size);
    sqlite3_bind_blob(row, 8, sha, 32, SQLITE_TRANSIENT);
    sql_ok(db, sqlite3_step(row), "insert image");
    sqlite3_reset(row);
  }
  sqlite3_finalize(blob);
  sqlite3_finalize(find);
  sqlite3_finalize(spec);
  sqlite3_finalize(row);
  exec(db, "COMMIT");
  if (sqlite3_close(db) != SQLITE_OK) fail_msg("fixture: close %s", tmp);
  if (rename(tmp, path) != 0) fail_msg("fixture: rename %s", tmp);
  free(sorted);
}

/* gk_sha256(X, ...): SHA-256 of its arguments' bytes end to end, NULLs
 * skipped, for SQL that rewrites a blob's data and its data_sha256
 * together (gk_sha256(sha256, base's sha256, data): docs/archive.md). */
static void sql_sha256(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned char h[32];
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  for (int i = 0; i < argc; i++)
    if (sqlite3_value_type(argv[i]) != SQLITE_NULL)
      crypto_hash_sha256_update(&st, sqlite3_value_blob(argv[i]),
                                (unsigned long long)sqlite3_value_bytes(argv[i]));
  crypto_hash_sha256_final(&st, h);
  sqlite3_result_blob(ctx, h, 32, SQLITE_TRANSIENT);
}

void fx_exec(const char *path, const char *sql, const void *blob, size_t n) {
  sqlite3 *db;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    fail_msg("fixture: open %s", path);
  sqlite3_create_function(db, "gk_sha256", -1, SQLITE_UTF8, NULL, sql_sha256, NULL,
                          NULL);
  if (!blob) {
    exec(db, sql);
  } else {
    sqlite3_stmt *st;
    sql_ok(db, sqlite3_prepare_v2(db, sql, -1, &st, NULL), sql);
    sqlite3_bind_blob(st, 1, blob, (int)n, SQLITE_TRANSIENT);
    sql_ok(db, sqlite3_step(st), sql);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
}

void *fx_img_a, *fx_img_b;
size_t fx_img_a_size, fx_img_b_size;

int fx_load_images(void **state) {
  (void)state;
  fx_img_a = fx_image_bytes(GK_TEST_IMAGE_1, &fx_img_a_size);
  fx_img_b = fx_image_bytes(GK_TEST_IMAGE_2, &fx_img_b_size);
  return 0;
}

int fx_free_images(void **state) {
  (void)state;
  free(fx_img_a);
  free(fx_img_b);
  fx_img_a = fx_img_b = NULL;
  return 0;
}

char *fx_good_archive(const char *name) {
  char *path = fx_path(name);
  fx_image im[] = {
      {"qmatmul", "cpu", "x86-64-v4", "bits=4", .data = fx_img_b, .size = fx_img_b_size},
      {"qmatmul", "cpu", "x86-64-v3", "bits=4", .data = fx_img_a, .size = fx_img_a_size},
      {"softmax", "cpu", "x86-64", "", .data = fx_img_a, .size = fx_img_a_size,
       .entry = "[\"qmatmul\",\"gk_test_image_id\"]", .launch = "{\"block\":256}",
       .toolchain = "cc 12.2.0 x86_64-linux-gnu"},
  };
  fx_write(path, im, 3);
  return path;
}
