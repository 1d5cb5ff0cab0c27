/*
 * test_archive.c - opening archives (file and memory) and the index,
 * against good and damaged files (reading images: test_read.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "fixture.h"
#include "gk.h"
#include "gk_internal.h"

/* Opens path, expecting `status` and a last-error text containing `msg`. */
static void expect_open_fails(const char *path, int status, const char *msg) {
  gk_archive *ar = (gk_archive *)1;
  int rc = gk_archive_open(path, &ar);
  if (rc != status)
    fail_msg("opening '%s': %s (%s), expected %s", path, gk_strerror(rc),
             gk_last_error(), gk_strerror(status));
  assert_null(ar);
  assert_contains(gk_last_error(), msg);
}

/* ---- opening: arguments and foreign files ----------------------------------
 */

static void open_bad_args(void **state) {
  (void)state;
  gk_archive *ar = (gk_archive *)1;
  assert_int_equal(gk_archive_open(NULL, &ar), GK_EINVAL);
  assert_null(ar);
  assert_contains(gk_last_error(), "path is NULL");
  assert_int_equal(gk_archive_open("x.gkfat", NULL), GK_EINVAL);
  assert_contains(gk_last_error(), "out is NULL");
  assert_int_equal(gk_archive_open("", &ar), GK_EINVAL);
  assert_contains(gk_last_error(), "path is empty");
  assert_int_equal(gk_archive_open_memory(NULL, 100, &ar), GK_EINVAL);
  assert_null(ar);
  assert_int_equal(gk_archive_open_memory("SQLite format 3", 16, NULL),
                   GK_EINVAL);
}

static void open_missing_file(void **state) {
  (void)state;
  char *path = fx_path("does-not-exist.gkfat");
  expect_open_fails(path, GK_EIO, "No such file or directory");
  assert_contains(gk_last_error(), path);
  free(path);
}

static void open_directory(void **state) {
  (void)state;
  char *path = fx_path("a-directory");
  assert_int_equal(mkdir(path, 0700), 0);
  expect_open_fails(path, GK_EIO, "Is a directory");
  free(path);
}

static void open_fifo(void **state) {
  (void)state;
  /* A FIFO with no writer must be refused, not block the open forever. */
  char *path = fx_path("a-fifo");
  assert_int_equal(mkfifo(path, 0600), 0);
  expect_open_fails(path, GK_ENOTARCHIVE, "not a regular file");
  free(path);
  expect_open_fails("/dev/null", GK_ENOTARCHIVE, "not a regular file");
}

static void open_text_file(void **state) {
  (void)state;
  char *path = fx_path("notes.txt");
  const char text[] = "these are not the kernels you are looking for\n";
  fx_write_file(path, text, sizeof text - 1);
  expect_open_fails(path, GK_ENOTARCHIVE, "not a SQLite database");
  assert_contains(gk_last_error(), path);
  free(path);
}

static void open_empty_file(void **state) {
  (void)state;
  /* SQLite itself would open an empty file as an empty database. */
  char *path = fx_path("empty.gkfat");
  fx_write_file(path, "", 0);
  expect_open_fails(path, GK_ENOTARCHIVE, "the file is empty");
  free(path);
}

static void open_random_bytes(void **state) {
  (void)state;
  char *path = fx_path("random.bin");
  unsigned char buf[8192];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof buf; i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (unsigned char)(x >> 16);
  }
  fx_write_file(path, buf, sizeof buf);
  expect_open_fails(path, GK_ENOTARCHIVE, "not a SQLite database");
  /* The same bytes behind a valid SQLite magic: SQLite must reject them. */
  memcpy(buf, "SQLite format 3", 16);
  fx_write_file(path, buf, sizeof buf);
  gk_archive *ar;
  int rc = gk_archive_open(path, &ar);
  if (rc != GK_ENOTARCHIVE && rc != GK_ECORRUPT)
    fail_msg("garbage with a SQLite magic: %s (%s)", gk_strerror(rc),
             gk_last_error());
  assert_contains(gk_last_error(), path);
  free(path);
}

static void open_foreign_sqlite(void **state) {
  (void)state;
  char *path = fx_path("foreign.db");
  fx_write_file(path, "", 0);
  fx_exec(path, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", NULL, 0);
  expect_open_fails(path, GK_ENOTARCHIVE,
                    "is a SQLite database but not a gllm-kernels archive");
  assert_contains(gk_last_error(), path);
  assert_contains(gk_last_error(), "application_id 0x00000000");
  /* Another application's id is as foreign. */
  fx_exec(path, "PRAGMA application_id = 1", NULL, 0);
  expect_open_fails(path, GK_ENOTARCHIVE, "application_id 0x00000001");
  free(path);
}

static void open_wrong_version(void **state) {
  (void)state;
  char *path = fx_good_archive("v4.gkfat");
  char sql[64], msg[64];
  /* A newer format: this libgk cannot know what changed. */
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", GK_ARCHIVE_FORMAT + 1);
  fx_exec(path, sql, NULL, 0);
  snprintf(msg, sizeof msg, "format version %d", GK_ARCHIVE_FORMAT + 1);
  expect_open_fails(path, GK_EVERSION, msg);
  snprintf(msg, sizeof msg, "reads version %d", GK_ARCHIVE_FORMAT);
  assert_contains(gk_last_error(), msg);
  assert_contains(gk_last_error(), "update libgk");
  assert_contains(gk_last_error(), path);
  /* Version 2 (deltas against one plain base: another prefix than today's
   * chains) and 1 (no deltas) are refused too, with what to do. */
  fx_exec(path, "PRAGMA user_version = 2", NULL, 0);
  expect_open_fails(path, GK_EVERSION, "format version 2");
  assert_contains(gk_last_error(), "pack it again");
  fx_exec(path, "PRAGMA user_version = 1", NULL, 0);
  expect_open_fails(path, GK_EVERSION, "format version 1");
  assert_contains(gk_last_error(), "pack it again");
  fx_exec(path, "PRAGMA user_version = 0", NULL, 0);
  expect_open_fails(path, GK_EVERSION, "format version 0");
  free(path);
}

/* ---- the lazy index ---------------------------------------------------------
 */

/* A selection reads its own rows only: a bad row of another kernel does not
 * stop it, and shows when the whole index is read. Rows written out of
 * gk pack's order are refused when read, by both ways. */
static void lazy_index(void **state) {
  (void)state;
  char *path = fx_good_archive("lazy.gkfat");
  fx_exec(path, "UPDATE spec SET entry = x'5b5d' "
                "WHERE id = (SELECT spec FROM image WHERE kernel = 'softmax')", NULL, 0);
  gk_archive *ar;
  gk_device dev;
  char why[128];
  size_t idx, n = 99;
  assert_int_equal(gk_device_parse("cpu:x86-64-v4", &dev, why, sizeof why), GK_OK);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx), GK_OK);
  assert_int_equal(idx, 1); /* x86-64-v4 sorts after x86-64-v3 */
  gk_image_info info;
  assert_int_equal(gk_archive_image(ar, idx, &info), GK_OK);
  assert_string_equal(info.target, "x86-64-v4");
  void *p;
  size_t size;
  assert_int_equal(gk_archive_read(ar, idx, &p, &size), GK_OK);
  assert_int_equal(size, fx_img_b_size);
  gk_free(p);
  assert_int_equal(gk_archive_count(ar, &n), GK_ECORRUPT);
  assert_int_equal(n, 0);
  assert_contains(gk_archive_errmsg(ar), "image row 3 has a bad 'entry'");
  /* Once the whole index failed, selections go its way and fail alike. */
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx), GK_ECORRUPT);
  gk_archive_close(ar);
  free(path);

  /* Two rows swapped in the table. */
  path = fx_good_archive("order.gkfat");
  fx_exec(path, "UPDATE image SET rowid = 10 WHERE rowid = 1; "
                "UPDATE image SET rowid = 1 WHERE rowid = 2; "
                "UPDATE image SET rowid = 2 WHERE rowid = 10", NULL, 0);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx), GK_ECORRUPT);
  assert_contains(gk_archive_errmsg(ar), "is out of order in the index");
  gk_archive_close(ar);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_count(ar, &n), GK_ECORRUPT);
  assert_contains(gk_archive_errmsg(ar), "is out of order in the index");
  gk_archive_close(ar);
  free(path);
}

/* ---- opening: schema damage ------------------------------------------------
 */

static void open_schema_damage(void **state) {
  (void)state;
#define SOFTMAX(col) " WHERE id = (SELECT " col " FROM image WHERE kernel = 'softmax')"
  /* read: the damage is in what the row names (its blob), which a
   * selection reading its own rows does not look at: the selection
   * succeeds and reading the image fails with this; the whole index says
   * `msg`. */
  static const struct {
    const char *sql, *msg, *read;
  } cases[] = {
      {"DROP TABLE blob", "it has no table 'blob'", NULL},
      {"DROP TABLE image", "it has no table 'image'", NULL},
      {"DROP TABLE spec", "it has no table 'spec'", NULL},
      {"ALTER TABLE spec DROP COLUMN launch",
       "table 'spec' has no column 'launch'", NULL},
      {"ALTER TABLE spec DROP COLUMN toolchain",
       "table 'spec' has no column 'toolchain'", NULL},
      {"ALTER TABLE image DROP COLUMN blob",
       "table 'image' has no column 'blob'", NULL},
      {"ALTER TABLE blob DROP COLUMN codec",
       "table 'blob' has no column 'codec'", NULL},
      {"ALTER TABLE image RENAME TO image0; "
       "CREATE VIEW image AS SELECT * FROM image0",
       "'image' is not an ordinary table", NULL},
      {"UPDATE image SET raw_size = 'big' WHERE kernel = 'softmax'", "has a bad 'raw_size'", NULL},
      {"UPDATE image SET raw_size = -1 WHERE kernel = 'softmax'", "has a bad 'raw_size'", NULL},
      {"UPDATE image SET sha256 = x'00' WHERE kernel = 'softmax'", "has a bad 'sha256'", NULL},
      {"UPDATE image SET sha256 = NULL WHERE kernel = 'softmax'", "has a bad 'sha256'", NULL},
      {"UPDATE blob SET sha256 = zeroblob(32)" SOFTMAX("blob"),
       "whose size or sha256 is another image's", "whose size or sha256 is another image's"},
      {"UPDATE blob SET raw_size = raw_size + 1" SOFTMAX("blob"),
       "whose size or sha256 is another image's", "but its blob says"},
      {"UPDATE image SET blob = 1 + blob % 2 WHERE kernel = 'softmax'",
       "whose size or sha256 is another image's", "another image's"},
      {"UPDATE image SET blob = 'x' WHERE kernel = 'softmax'", "has a bad 'blob'", NULL},
      {"DELETE FROM spec" SOFTMAX("spec"), "names a spec row that is not there", NULL},
      {"DELETE FROM blob" SOFTMAX("blob"), "names a blob row that is not there", "has no blob"},
      {"UPDATE image SET kernel = CAST(x'717500' AS TEXT) WHERE kernel = "
       "'softmax'",
       "has a bad 'kernel'", NULL},
      {"UPDATE image SET target = x'7633' WHERE kernel = 'softmax'",
       "has a bad 'target'", NULL},
      {"UPDATE spec SET entry = x'5b5d'" SOFTMAX("spec"), "has a bad 'entry'", NULL},
  };
#undef SOFTMAX
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *path = fx_good_archive("schema.gkfat");
    /* The fixture's schema has NOT NULL and CHECK constraints; damage
     * ignores them, as a hostile writer would. */
    char sql[512];
    snprintf(sql, sizeof sql, "PRAGMA ignore_check_constraints = ON; %s",
             cases[i].sql);
    if (strstr(cases[i].sql, "NULL")) {
      /* NOT NULL cannot be switched off: rebuild the table without it. */
      snprintf(sql, sizeof sql,
               "CREATE TABLE i2 AS SELECT rowid AS r, * FROM image; DROP TABLE image; "
               "CREATE TABLE image (kernel, backend, variant, target, spec, blob, raw_size, "
               "sha256); INSERT INTO image (rowid, kernel, backend, variant, target, spec, "
               "blob, raw_size, sha256) SELECT * FROM i2; DROP TABLE i2; %s",
               cases[i].sql);
    }
    fx_exec(path, sql, NULL, 0);
    gk_archive *ar;
    int rc = gk_archive_open(path, &ar);
    const char *msg = gk_last_error();
    /* The schema is checked by the open; rows when the index is read
     * (lazily: count, listing, or a selection that meets them). */
    if ((strstr(cases[i].msg, "has a bad") || strstr(cases[i].msg, "not there") ||
         strstr(cases[i].msg, "another image")) &&
        rc == GK_OK) {
      size_t n = 99, idx;
      gk_device dev;
      char why[128];
      assert_int_equal(gk_device_parse("cpu:x86-64-v4", &dev, why, sizeof why), GK_OK);
      rc = gk_archive_select(ar, &dev, "softmax", "", &idx);
      if (cases[i].read && rc == GK_OK) {
        void *p = (void *)1;
        size_t size;
        rc = gk_archive_read(ar, idx, &p, &size);
        assert_null(p);
        if (!strstr(gk_archive_errmsg(ar), cases[i].read))
          fail_msg("'%s': reading softmax said '%s', not '%s'", cases[i].sql,
                   gk_archive_errmsg(ar), cases[i].read);
      }
      if (rc != GK_ECORRUPT)
        fail_msg("'%s': selecting and reading softmax gave %s (%s), expected GK_ECORRUPT",
                 cases[i].sql, gk_strerror(rc), gk_archive_errmsg(ar));
      gk_archive_close(ar);
      assert_int_equal(gk_archive_open(path, &ar), GK_OK);
      rc = gk_archive_count(ar, &n);
      msg = gk_archive_errmsg(ar);
      assert_int_equal(n, 0); /* nothing half-read */
    } else {
      assert_null(ar);
    }
    if (rc != GK_ECORRUPT)
      fail_msg("'%s': %s (%s), expected GK_ECORRUPT", cases[i].sql,
               gk_strerror(rc), msg);
    if (!strstr(msg, cases[i].msg) || !strstr(msg, path))
      fail_msg("'%s': message '%s' lacks '%s' or the path", cases[i].sql, msg,
               cases[i].msg);
    gk_archive_close(ar);
    free(path);
  }
}

static void open_extra_columns_ok(void **state) {
  (void)state;
  /* Columns beyond the format's are tolerated. */
  char *path = fx_good_archive("extra.gkfat");
  fx_exec(path, "ALTER TABLE image ADD COLUMN note TEXT", NULL, 0);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  gk_archive_close(ar);
  free(path);
}

static void open_truncated(void **state) {
  (void)state;
  char *path = fx_good_archive("truncated.gkfat");
  size_t n;
  void *bytes = fx_read_file(path, &n);
  assert_true(n > 8192);
  fx_write_file(path, bytes, n / 2);
  free(bytes);
  /* Either the open or every read must fail: never silently good. */
  gk_archive *ar;
  int rc = gk_archive_open(path, &ar);
  if (rc == GK_OK) {
    size_t count, size;
    void *p;
    assert_int_equal(gk_archive_count(ar, &count), GK_OK);
    int all_ok = count == 3;
    for (size_t i = 0; i < count; i++) {
      int r = gk_archive_read(ar, i, &p, &size);
      all_ok &= r == GK_OK;
      gk_free(p);
    }
    assert_false(all_ok);
    gk_archive_close(ar);
  } else {
    assert_true(rc == GK_ECORRUPT || rc == GK_ENOTARCHIVE);
  }
  free(path);
}

/* ---- the index -------------------------------------------------------------
 */

static void index_rows(void **state) {
  (void)state;
  char *path = fx_good_archive("index.gkfat");
  gk_archive *ar = NULL;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_non_null(ar);
  assert_string_equal(gk_last_error(), "");
  assert_string_equal(gk_archive_errmsg(ar), "");
  size_t count = 0;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  assert_int_equal(count, 3);

  /* Index order: (kernel, backend, target, variant). */
  const char *targets[] = {"x86-64-v3", "x86-64-v4", "x86-64"};
  for (size_t i = 0; i < count; i++) {
    gk_image_info info;
    assert_int_equal(gk_archive_image(ar, i, &info), GK_OK);
    assert_string_equal(info.target, targets[i]);
    assert_string_equal(info.backend, "cpu");
    assert_string_equal(info.format, "so");
    assert_true(info.packed_size > 0 && info.packed_size < info.raw_size);
  }
  gk_image_info info;
  assert_int_equal(gk_archive_image(ar, 2, &info), GK_OK);
  assert_string_equal(info.kernel, "softmax");
  assert_string_equal(info.variant, "");
  assert_string_equal(info.entry, "[\"qmatmul\",\"gk_test_image_id\"]");
  assert_string_equal(info.launch, "{\"block\":256}");
  assert_string_equal(info.toolchain, "cc 12.2.0 x86_64-linux-gnu");
  assert_int_equal(info.raw_size, fx_img_a_size);
  unsigned char sha[32];
  crypto_hash_sha256(sha, fx_img_a, fx_img_a_size);
  assert_memory_equal(info.sha256, sha, 32);
  assert_int_equal(gk_archive_image(ar, 0, &info), GK_OK);
  assert_string_equal(info.kernel, "qmatmul");
  assert_string_equal(info.variant, "bits=4");
  assert_string_equal(info.entry, "[\"qmatmul\"]");
  assert_string_equal(info.launch, "{}");

  /* Out of range and NULL: statuses and messages, out untouched. */
  memset(&info, 0x33, sizeof info);
  gk_image_info copy = info;
  assert_int_equal(gk_archive_image(ar, 3, &info), GK_ERANGE);
  assert_memory_equal(&info, &copy, sizeof info);
  assert_contains(gk_archive_errmsg(ar), "has 3 images; there is no image 3");
  assert_contains(gk_archive_errmsg(ar), path);
  assert_int_equal(gk_archive_image(ar, SIZE_MAX, &info), GK_ERANGE);
  assert_int_equal(gk_archive_image(ar, 0, NULL), GK_EINVAL);
  assert_contains(gk_archive_errmsg(ar), "out is NULL");
  assert_int_equal(gk_archive_count(ar, NULL), GK_EINVAL);
  /* A successful call clears the message. */
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  assert_string_equal(gk_archive_errmsg(ar), "");
  gk_archive_close(ar);

  assert_int_equal(gk_archive_count(NULL, &count), GK_EINVAL);
  assert_int_equal(gk_archive_image(NULL, 0, &info), GK_EINVAL);
  assert_non_null(gk_archive_errmsg(NULL));
  gk_archive_close(NULL);
  gk_free(NULL);
  free(path);
}

static void index_empty_archive(void **state) {
  (void)state;
  char *path = fx_path("empty-index.gkfat");
  fx_write(path, NULL, 0);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  size_t count = 99;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  assert_int_equal(count, 0);
  void *p = (void *)1;
  size_t n;
  assert_int_equal(gk_archive_read(ar, 0, &p, &n), GK_ERANGE);
  assert_null(p);
  gk_archive_close(ar);
  free(path);
}

static void open_odd_paths(void **state) {
  (void)state;
  /* URI-special characters in a path must mean themselves. */
  const char *names[] = {"with space.gkfat",      "q?mark.gkfat",
                         "hash#.gkfat",           "pct%41.gkfat",
                         "amp&immutable=0.gkfat", "\xc3\xa9t\xc3\xa9.gkfat"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *path = fx_good_archive(names[i]);
    gk_archive *ar;
    int rc = gk_archive_open(path, &ar);
    if (rc != GK_OK) fail_msg("'%s': %s", path, gk_last_error());
    size_t count;
    assert_int_equal(gk_archive_count(ar, &count), GK_OK);
    assert_int_equal(count, 3);
    gk_archive_close(ar);
    free(path);
  }
  /* A relative path works too. */
  char *path = fx_good_archive("relative.gkfat");
  char *slash = strrchr(path, '/');
  *slash = '\0';
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(path), 0);
  gk_archive *ar;
  int rc = gk_archive_open("relative.gkfat", &ar);
  assert_int_equal(chdir(cwd), 0);
  if (rc != GK_OK) fail_msg("relative path: %s", gk_last_error());
  gk_archive_close(ar);
  free(path);
}

/* ---- memory ----------------------------------------------------------------
 */

static void memory_equals_file(void **state) {
  (void)state;
  char *path = fx_good_archive("memory.gkfat");
  size_t n;
  void *bytes = fx_read_file(path, &n);
  gk_archive *af, *am;
  assert_int_equal(gk_archive_open(path, &af), GK_OK);
  assert_int_equal(gk_archive_open_memory(bytes, n, &am), GK_OK);
  assert_string_equal(gk_last_error(), "");
  size_t cf, cm;
  assert_int_equal(gk_archive_count(af, &cf), GK_OK);
  assert_int_equal(gk_archive_count(am, &cm), GK_OK);
  assert_int_equal(cf, cm);
  for (size_t i = 0; i < cf; i++) {
    gk_image_info a, b;
    assert_int_equal(gk_archive_image(af, i, &a), GK_OK);
    assert_int_equal(gk_archive_image(am, i, &b), GK_OK);
    assert_string_equal(a.kernel, b.kernel);
    assert_string_equal(a.target, b.target);
    assert_string_equal(a.variant, b.variant);
    assert_string_equal(a.entry, b.entry);
    assert_int_equal(a.raw_size, b.raw_size);
    assert_int_equal(a.packed_size, b.packed_size);
    assert_memory_equal(a.sha256, b.sha256, 32);
    void *pf, *pm;
    size_t sf, sm;
    assert_int_equal(gk_archive_read(af, i, &pf, &sf), GK_OK);
    assert_int_equal(gk_archive_read(am, i, &pm, &sm), GK_OK);
    assert_int_equal(sf, sm);
    assert_memory_equal(pf, pm, sf);
    gk_free(pf);
    gk_free(pm);
  }
  /* Errors name the memory archive. */
  assert_int_equal(gk_archive_image(am, 9, &(gk_image_info){0}), GK_ERANGE);
  assert_contains(gk_archive_errmsg(am), "<memory,");
  gk_archive_close(af);
  gk_archive_close(am);

  /* The bytes are only borrowed: they are intact after use and close. */
  size_t n2;
  void *again = fx_read_file(path, &n2);
  assert_int_equal(n, n2);
  assert_memory_equal(bytes, again, n);
  free(again);
  free(bytes);
  free(path);
}

static void memory_bad(void **state) {
  (void)state;
  gk_archive *ar = (gk_archive *)1;
  assert_int_equal(gk_archive_open_memory("x", 0, &ar), GK_ENOTARCHIVE);
  assert_null(ar);
  assert_contains(gk_last_error(), "no bytes");
  const char text[] = "hello, this is text and not a database at all";
  assert_int_equal(gk_archive_open_memory(text, sizeof text, &ar),
                   GK_ENOTARCHIVE);
  assert_contains(gk_last_error(), "<memory,");
  /* A foreign database in memory. */
  char *path = fx_path("foreign-mem.db");
  fx_write_file(path, "", 0);
  fx_exec(path, "CREATE TABLE t (x)", NULL, 0);
  size_t n;
  void *bytes = fx_read_file(path, &n);
  assert_int_equal(gk_archive_open_memory(bytes, n, &ar), GK_ENOTARCHIVE);
  assert_contains(gk_last_error(),
                  "is a SQLite database but not a gllm-kernels");
  free(bytes);
  free(path);
  /* A good archive cut short in memory: header claims more pages. */
  path = fx_good_archive("cut.gkfat");
  bytes = fx_read_file(path, &n);
  int rc = gk_archive_open_memory(bytes, 4096, &ar);
  if (rc == GK_OK) {
    void *p;
    size_t size;
    int bad = 0;
    for (size_t i = 0; i < 3; i++) {
      bad |= gk_archive_read(ar, i, &p, &size) != GK_OK;
      gk_free(p);
    }
    assert_true(bad);
    gk_archive_close(ar);
  } else {
    assert_true(rc == GK_ECORRUPT || rc == GK_ENOTARCHIVE);
  }
  free(bytes);
  free(path);
}

/* gk_last_error is per thread. */
struct tls_case {
  const char *path;
  char seen[256];
};

static void *open_missing_in_thread(void *arg) {
  struct tls_case *c = arg;
  gk_archive *ar;
  gk_archive_open(c->path, &ar);
  snprintf(c->seen, sizeof c->seen, "%s", gk_last_error());
  return NULL;
}

static void last_error_is_thread_local(void **state) {
  (void)state;
  char *path = fx_good_archive("tls.gkfat");
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_string_equal(gk_last_error(), "");
  struct tls_case c = {"/nonexistent/x.gkfat", ""};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, open_missing_in_thread, &c), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_contains(c.seen, "cannot open archive '/nonexistent/x.gkfat'");
  assert_string_equal(gk_last_error(), ""); /* ours untouched */
  gk_archive_close(ar);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(open_bad_args),
      cmocka_unit_test(open_missing_file),
      cmocka_unit_test(open_directory),
      cmocka_unit_test(open_fifo),
      cmocka_unit_test(open_text_file),
      cmocka_unit_test(open_empty_file),
      cmocka_unit_test(open_random_bytes),
      cmocka_unit_test(open_foreign_sqlite),
      cmocka_unit_test(open_wrong_version),
      cmocka_unit_test(open_schema_damage),
      cmocka_unit_test(lazy_index),
      cmocka_unit_test(open_extra_columns_ok),
      cmocka_unit_test(open_truncated),
      cmocka_unit_test(open_odd_paths),
      cmocka_unit_test(index_rows),
      cmocka_unit_test(index_empty_archive),
      cmocka_unit_test(memory_equals_file),
      cmocka_unit_test(memory_bad),
      cmocka_unit_test(last_error_is_thread_local),
  };
  return cmocka_run_group_tests_name("loader.archive", tests, fx_load_images,
                                     fx_free_images);
}
